"""paho-mqtt (2.x) against embroker's MQTT listener, for MQTT 3.1.1 and 3.1, end to end:
connecting (anonymous, with credentials, ``vhost:user``, refused), QoS 0 and 1 with wildcards,
QoS 2 taken as 1, retained messages, persistent sessions, wills, client-id takeover, keep-alive,
and 0-9-1 interop with pika both ways. The key ones run against the reference RabbitMQ 3.10.8's
MQTT plugin (127.0.0.1:1884) too when ``EMBROKER_REFERENCE_URL`` is set.

Each client runs paho's network thread (``loop_start``) with reconnection off; every step waits
for what says it is done (a CONNACK, a SUBACK, a PUBACK, a message, a PINGRESP), never for time.
Where a test shows that something did *not* arrive, it sends a marker after it and reads the
marker first."""

from __future__ import annotations

import os
import queue
import socket
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import paho.mqtt.client as mqtt
import pika
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.reasoncodes import ReasonCode

from embroker import Broker
from embroker.server import Server

from .conftest import wait_until

TIMEOUT = 5.0
REFERENCE_MQTT = 1884  # (a mosquitto holds 1883 on the reference's host)
PROTOCOLS = {"3.1.1": mqtt.MQTTv311, "3.1": mqtt.MQTTv31}


class Paho:
    """A paho client on its own network thread; what the broker sent, as queues to wait on
    (``packets``: the names of the packets paho logs as received)."""

    def __init__(self, port: int, client_id: str = "", *, protocol: str = "3.1.1",
                 clean_session: bool = True, user: str | None = None,
                 password: str | None = None, will: tuple[str, bytes, int, bool] | None = None,
                 keepalive: int = 60) -> None:
        self.port, self.keepalive = port, keepalive
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id,
                                  protocol=PROTOCOLS[protocol], clean_session=clean_session,
                                  reconnect_on_failure=False)
        self.connacks: queue.Queue[tuple[bool, ReasonCode]] = queue.Queue()
        self.subacks: queue.Queue[tuple[int, list[int]]] = queue.Queue()
        self.messages: queue.Queue[mqtt.MQTTMessage] = queue.Queue()
        self.disconnects: queue.Queue[ReasonCode] = queue.Queue()
        self.packets: queue.Queue[str] = queue.Queue()
        self.reason: ReasonCode | None = None  # (the last CONNACK's)
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = lambda _c, _u, message: self.messages.put(message)
        self.client.on_disconnect = self._on_disconnect
        self.client.on_log = self._on_log
        if user is not None:
            self.client.username_pw_set(user, password)
        if will is not None:
            topic, payload, qos, retain = will
            self.client.will_set(topic, payload, qos, retain)

    def _on_connect(self, _c: Any, _u: Any, flags: Any, reason: ReasonCode, _p: Any) -> None:
        self.connacks.put((flags.session_present, reason))

    def _on_subscribe(self, _c: Any, _u: Any, mid: int, reasons: list[ReasonCode],
                      _p: Any) -> None:
        self.subacks.put((mid, [reason.value for reason in reasons]))

    def _on_disconnect(self, _c: Any, _u: Any, _f: Any, reason: ReasonCode, _p: Any) -> None:
        self.disconnects.put(reason)

    def _on_log(self, _c: Any, _u: Any, _level: int, line: str) -> None:
        if line.startswith("Received "):
            self.packets.put(line.split()[1])

    def connect(self) -> tuple[bool, int]:
        """CONNECT; (session present, CONNACK's reason code: :attr:`reason` is paho's)."""
        self.client.connect("127.0.0.1", self.port, self.keepalive)
        self.client.loop_start()
        present, self.reason = self.connacks.get(timeout=TIMEOUT)
        return present, self.reason.value

    def subscribe(self, *filters: tuple[str, int]) -> list[int]:
        """SUBSCRIBE; the QoS granted to each filter."""
        _, mid = self.client.subscribe(list(filters))
        answered, granted = self.subacks.get(timeout=TIMEOUT)
        assert answered == mid
        return granted

    def publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False) -> None:
        """PUBLISH; back once it is sent (QoS 0) or acknowledged (QoS 1 and 2)."""
        info = self.client.publish(topic, payload, qos, retain)
        info.wait_for_publish(TIMEOUT)
        assert info.is_published()

    def next(self) -> mqtt.MQTTMessage:
        return self.messages.get(timeout=TIMEOUT)

    def wait_packet(self, name: str) -> None:
        """Until paho has received a packet of this name (others before it are dropped)."""
        while self.packets.get(timeout=TIMEOUT) != name:
            pass

    def disconnect(self) -> None:
        """DISCONNECT (a clean end: no will), then wait for paho to have closed."""
        self.client.disconnect()
        assert self.disconnects.get(timeout=TIMEOUT).value == 0  # Normal disconnection
        self.client.loop_stop()

    def vanish(self) -> None:
        """Close the socket without DISCONNECT (an abrupt end: the will goes)."""
        self.client.loop_stop()
        sock = self.client.socket()
        assert isinstance(sock, socket.socket)
        sock.close()


def end_session(port: int, client_id: str, protocol: str) -> None:
    """Connect with a clean session and leave: the client id's kept session is gone."""
    cleaner = Paho(port, client_id, protocol=protocol)
    cleaner.connect()
    cleaner.disconnect()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def mqtt_server(broker: Broker) -> Iterator[Server]:
    with Server(broker, listeners={"mqtt": 0}) as server:
        yield server
    assert server.errors == []
    broker._check()


@pytest.fixture
def port(mqtt_server: Server) -> int:
    number = mqtt_server.listener_port("mqtt")
    assert number is not None
    return number


@pytest.fixture(params=list(PROTOCOLS))
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def mqtt_connections(broker: Broker) -> list[Any]:
    return [c for c in broker.connections.values() if c.kind.name == "MQTT"]


# -- the steps, run against embroker and (some) against the reference --------------------------


def refused_with_a_wrong_password(port: int, protocol: str) -> ReasonCode:
    client = Paho(port, unique("refused"), protocol=protocol, user="guest", password="wrong")
    assert client.connect() == (False, 134)
    client.disconnects.get(timeout=TIMEOUT)  # (the broker closes it after the CONNACK)
    client.client.loop_stop()
    assert client.reason is not None
    return client.reason


def wildcards_at_qos_0_and_1(port: int, protocol: str) -> None:
    root = unique("wild")
    client = Paho(port, unique("c"), protocol=protocol)
    assert client.connect()[1] == 0
    assert client.subscribe((f"{root}/+/temp", 1), (f"{root}/kitchen/#", 0)) == [1, 0]
    client.publish(f"{root}/hall/temp", b"one", qos=1)  # the first filter only
    got = client.next()
    assert (got.topic, got.payload, got.qos, got.retain) == (f"{root}/hall/temp", b"one", 1,
                                                            False)
    client.publish(f"{root}/kitchen/light/on", b"two", qos=0)  # the second only
    got = client.next()
    assert (got.topic, got.payload, got.qos) == (f"{root}/kitchen/light/on", b"two", 0)
    client.publish(f"{root}/kitchen/temp", b"both", qos=1)  # one queue per QoS: both
    assert sorted((m.payload, m.qos) for m in (client.next(), client.next())) == [
        (b"both", 0), (b"both", 1)]
    client.publish(f"{root}/hall/temp/extra", b"none", qos=1)  # neither ('+' is one level)
    client.publish(f"{root}/hall/temp", b"marker", qos=0)
    assert client.next().payload == b"marker"
    client.disconnect()


def qos_2_is_taken_as_1(port: int, protocol: str) -> None:
    topic = unique("qos2")
    client = Paho(port, unique("c"), protocol=protocol)
    client.connect()
    assert client.subscribe((topic, 2)) == [1]  # granted QoS 1
    client.publish(topic, b"exactly once?", qos=2)  # paho counts PUBACK as done, too
    got = client.next()
    assert (got.payload, got.qos) == (b"exactly once?", 1)
    client.disconnect()
    received = []
    while not client.packets.empty():
        received.append(client.packets.get())
    assert "PUBACK" in received  # (what answered the QoS 2 PUBLISH)
    assert not {"PUBREC", "PUBCOMP"} & set(received)


def retained_messages(port: int, protocol: str) -> None:
    topic = unique("retained")
    publisher = Paho(port, unique("p"), protocol=protocol)
    publisher.connect()
    publisher.publish(f"{topic}/state", b"on", qos=1, retain=True)
    late = Paho(port, unique("late"), protocol=protocol)
    late.connect()
    late.subscribe((f"{topic}/state", 1))  # the exact topic: the retained message
    got = late.next()
    assert (got.topic, got.payload, got.retain, got.qos) == (f"{topic}/state", b"on", True, 1)
    late.subscribe((f"{topic}/+", 1))  # a wildcard: no retained message (only exact names)
    publisher.publish(f"{topic}/state", b"", qos=1, retain=True)  # clears it (delivered too,
    got = late.next()  # once: both filters are bound to the one QoS 1 queue)
    assert (got.payload, got.retain) == (b"", False)
    later = Paho(port, unique("later"), protocol=protocol)
    later.connect()
    later.subscribe((f"{topic}/state", 1))
    publisher.publish(f"{topic}/state", b"marker", qos=1)
    got = later.next()
    assert (got.payload, got.retain) == (b"marker", False)
    for client in (publisher, late, later):
        client.disconnect()


def persistent_session(port: int, protocol: str) -> None:
    topic, client_id = unique("session"), unique("keeper")
    keeper = Paho(port, client_id, protocol=protocol, clean_session=False)
    assert keeper.connect() == (False, 0)
    keeper.subscribe((f"{topic}/#", 1))
    keeper.disconnect()
    publisher = Paho(port, unique("p"), protocol=protocol)
    publisher.connect()
    publisher.publish(f"{topic}/a", b"while away 1", qos=1)
    publisher.publish(f"{topic}/b", b"while away 0", qos=0)
    publisher.disconnect()
    keeper = Paho(port, client_id, protocol=protocol, clean_session=False)
    assert keeper.connect() == (True, 0)  # session present; no SUBSCRIBE again
    assert [(m.topic, m.payload, m.qos) for m in (keeper.next(), keeper.next())] == [
        (f"{topic}/a", b"while away 1", 1), (f"{topic}/b", b"while away 0", 0)]
    keeper.disconnect()
    cleaner = Paho(port, client_id, protocol=protocol, clean_session=True)
    assert cleaner.connect() == (False, 0)  # a clean session ends the kept one
    cleaner.disconnect()
    again = Paho(port, client_id, protocol=protocol, clean_session=False)
    assert again.connect() == (False, 0)
    again.disconnect()
    end_session(port, client_id, protocol)


def qos_0_only_session_is_not_kept(port: int, protocol: str) -> None:
    topic, client_id = unique("session0"), unique("keeper0")
    keeper = Paho(port, client_id, protocol=protocol, clean_session=False)
    keeper.connect()
    keeper.subscribe((topic, 0))
    keeper.disconnect()
    publisher = Paho(port, unique("p"), protocol=protocol)
    publisher.connect()
    publisher.publish(topic, b"lost", qos=1)
    publisher.disconnect()
    keeper = Paho(port, client_id, protocol=protocol, clean_session=False)
    # (RabbitMQ 3.10.8: only the QoS 1 subscriptions' queue outlives the connection)
    assert keeper.connect() == (False, 0)
    keeper.subscribe((topic, 1))
    keeper.publish(topic, b"marker", qos=1)
    assert keeper.next().payload == b"marker"
    keeper.disconnect()
    end_session(port, client_id, protocol)


def second_client_id_kicks_the_first(port: int, protocol: str) -> None:
    client_id, topic = unique("twin"), unique("twin")
    first = Paho(port, client_id, protocol=protocol)
    first.connect()
    second = Paho(port, client_id, protocol=protocol)
    assert second.connect() == (False, 0)
    assert first.disconnects.get(timeout=TIMEOUT).value != 0  # closed by the broker
    first.client.loop_stop()
    second.subscribe((topic, 1))
    second.publish(topic, b"still here", qos=1)
    assert second.next().payload == b"still here"
    second.disconnect()


# -- connecting -------------------------------------------------------------------------------


def test_anonymous_connect_logs_in_as_the_default_user(
        port: int, broker: Broker, protocol: str) -> None:
    client = Paho(port, unique("anon"), protocol=protocol)
    assert client.connect() == (False, 0)
    (connection,) = mqtt_connections(broker)
    assert (connection.user, connection.vhost.name) == ("guest", "/")
    assert connection.kind.protocol == f"MQTT {'3.1.1' if protocol == '3.1.1' else '3.1.0'}"
    client.disconnect()
    wait_until(lambda: not mqtt_connections(broker))


@pytest.mark.parametrize("user", ["guest", "/:guest"])
def test_credentials_and_vhost_in_the_user_name(
        port: int, broker: Broker, protocol: str, user: str) -> None:
    client = Paho(port, unique("cred"), protocol=protocol, user=user, password="guest")
    assert client.connect() == (False, 0)
    client.disconnect()


def test_vhost_user_names_another_vhost(port: int, broker: Broker, protocol: str) -> None:
    broker.add_vhost("mqtt-vh")
    broker.add_user("sensor", "s3cret")
    broker.set_permissions("sensor", ".*", ".*", ".*", vhost="mqtt-vh")
    client = Paho(port, unique("vh"), protocol=protocol, user="mqtt-vh:sensor",
                  password="s3cret")
    assert client.connect() == (False, 0)
    (connection,) = mqtt_connections(broker)
    assert (connection.user, connection.vhost.name) == ("sensor", "mqtt-vh")
    client.subscribe(("vh/t", 1))
    client.publish("vh/t", b"in mqtt-vh", qos=1)
    assert client.next().payload == b"in mqtt-vh"
    client.disconnect()


def test_wrong_password_is_refused(port: int, protocol: str) -> None:
    reason = refused_with_a_wrong_password(port, protocol)
    # CONNACK return code 4, which paho names as MQTT 5's 134
    assert (reason.value, str(reason)) == (134, "Bad user name or password")


# -- publish and subscribe --------------------------------------------------------------------


def test_wildcards_at_qos_0_and_1(port: int, protocol: str) -> None:
    wildcards_at_qos_0_and_1(port, protocol)


def test_qos_2_is_granted_and_acknowledged_as_qos_1(port: int, protocol: str) -> None:
    qos_2_is_taken_as_1(port, protocol)


def test_retained_message_for_the_exact_topic_and_cleared(port: int, protocol: str) -> None:
    retained_messages(port, protocol)


def test_persistent_session_keeps_messages_while_away(port: int, protocol: str) -> None:
    persistent_session(port, protocol)


def test_session_with_qos_0_subscriptions_only_is_not_kept(port: int, protocol: str) -> None:
    qos_0_only_session_is_not_kept(port, protocol)


# -- the end of a connection ------------------------------------------------------------------


def test_will_on_an_abrupt_close_not_on_disconnect(
        port: int, broker: Broker, protocol: str) -> None:
    topic = unique("will")
    watcher = Paho(port, unique("watcher"), protocol=protocol)
    watcher.connect()
    watcher.subscribe((topic, 1))
    polite = Paho(port, unique("polite"), protocol=protocol, will=(topic, b"polite", 1, False))
    polite.connect()
    polite.disconnect()
    wait_until(lambda: len(mqtt_connections(broker)) == 1)  # (gone, and no will sent)
    rude = Paho(port, unique("rude"), protocol=protocol, will=(topic, b"rude", 1, False))
    rude.connect()
    rude.vanish()
    got = watcher.next()
    assert (got.topic, got.payload, got.qos) == (topic, b"rude", 1)
    watcher.disconnect()


def test_second_client_with_the_same_id_kicks_the_first(port: int, protocol: str) -> None:
    second_client_id_kicks_the_first(port, protocol)


def test_keep_alive_pings_are_answered(port: int, protocol: str) -> None:
    client = Paho(port, unique("pinger"), protocol=protocol, keepalive=1)
    client.connect()
    for _ in range(2):  # (paho pings after a second without sending)
        client.wait_packet("PINGRESP")
    assert client.client.is_connected()
    client.disconnect()


# -- interop with AMQP 0-9-1 (pika) -----------------------------------------------------------


def test_mqtt_publish_is_read_with_pika(mqtt_server: Server, port: int, protocol: str) -> None:
    amqp = pika.BlockingConnection(pika.URLParameters(mqtt_server.url))
    channel = amqp.channel()
    name = channel.queue_declare("", exclusive=True).method.queue
    channel.queue_bind(name, "amq.topic", "sensors.#")
    client = Paho(port, unique("c"), protocol=protocol)
    client.connect()
    client.publish("sensors/hall/temp", b"21.5", qos=1)
    client.publish("sensors/hall/light", b"off", qos=0)
    client.disconnect()
    got = []
    for _ in range(2):
        method, props, body = channel.basic_get(name, auto_ack=True)
        assert method is not None
        got.append((method.exchange, method.routing_key, body, props.delivery_mode,
                    props.headers))
    # as RabbitMQ 3.10.8 publishes them (checked on the reference): '/' as '.', QoS 1
    # persistent, the QoS and DUP flag as headers
    assert got == [
        ("amq.topic", "sensors.hall.temp", b"21.5", 2, {"x-mqtt-publish-qos": 1,
                                                       "x-mqtt-dup": False}),
        ("amq.topic", "sensors.hall.light", b"off", 1, {"x-mqtt-publish-qos": 0,
                                                       "x-mqtt-dup": False})]
    amqp.close()


def test_pika_publish_is_read_over_mqtt(mqtt_server: Server, port: int, protocol: str) -> None:
    client = Paho(port, unique("c"), protocol=protocol)
    client.connect()
    assert client.subscribe(("sensors/+/temp", 1), ("sensors/#", 0)) == [1, 0]
    amqp = pika.BlockingConnection(pika.URLParameters(mqtt_server.url))
    channel = amqp.channel()
    channel.basic_publish("amq.topic", "sensors.kitchen.temp", b"from pika",
                          pika.BasicProperties(delivery_mode=2, headers={"x-a": "b"}))
    got = sorted((m.topic, m.payload, m.qos) for m in (client.next(), client.next()))
    # the routing key's '.' as '/'; each subscription's QoS (checked on the reference)
    assert got == [("sensors/kitchen/temp", b"from pika", 0),
                   ("sensors/kitchen/temp", b"from pika", 1)]
    channel.basic_publish("amq.topic", "sensors.kitchen.humidity", b"transient")
    got_one = client.next()
    assert (got_one.topic, got_one.payload, got_one.qos) == ("sensors/kitchen/humidity",
                                                             b"transient", 0)
    amqp.close()
    client.disconnect()


# -- the reference RabbitMQ -------------------------------------------------------------------


@pytest.fixture
def reference_port() -> int:
    if not os.environ.get("EMBROKER_REFERENCE_URL"):
        pytest.skip("needs EMBROKER_REFERENCE_URL (the reference RabbitMQ)")
    host = urlsplit(os.environ["EMBROKER_REFERENCE_URL"]).hostname or "127.0.0.1"
    try:
        socket.create_connection((host, REFERENCE_MQTT), timeout=1).close()
    except OSError:
        pytest.skip(f"the reference's MQTT plugin does not answer on {REFERENCE_MQTT}")
    # RabbitMQ grants QoS 1 for 2 (a mosquitto would grant 2): this is the plugin
    probe = Paho(REFERENCE_MQTT, unique("probe"))
    probe.connect()
    assert probe.subscribe((unique("probe"), 2)) == [1], "not RabbitMQ's MQTT plugin"
    probe.disconnect()
    return REFERENCE_MQTT


@pytest.mark.parametrize("step", [wildcards_at_qos_0_and_1, qos_2_is_taken_as_1,
                                  retained_messages, persistent_session,
                                  qos_0_only_session_is_not_kept,
                                  second_client_id_kicks_the_first])
def test_reference_rabbitmq_alike(reference_port: int, protocol: str, step: Any) -> None:
    step(reference_port, protocol)


def test_reference_rabbitmq_refuses_a_wrong_password_alike(reference_port: int) -> None:
    reason = refused_with_a_wrong_password(reference_port, "3.1.1")
    assert str(reason) == "Bad user name or password"
