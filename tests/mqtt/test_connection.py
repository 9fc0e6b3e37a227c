"""The MQTT connection with hand-written packets and no socket: each behaviour as RabbitMQ
3.10.8's MQTT plugin (``rabbit_mqtt_processor``, ``rabbit_mqtt_reader``) has it."""

from __future__ import annotations

import pytest

from embroker.model import Broker, ManualClock
from embroker.mqtt import MqttSettings

from .wire import DISCONNECT, PINGREQ, Wire, connect, puback, publish, subscribe, unsubscribe


@pytest.fixture
def broker() -> Broker:
    return Broker()


@pytest.fixture
def wire(broker: Broker) -> Wire:
    w = Wire(broker)
    assert w.send(connect("c1")) == [("CONNACK", (False, 0))]
    return w


# -- CONNECT ---------------------------------------------------------------------------------


def test_an_anonymous_connect_logs_in_as_the_default_user(broker: Broker) -> None:
    w = Wire(broker)
    assert w.send(connect("c1")) == [("CONNACK", (False, 0))]
    assert w.conn.user == "guest"
    (model,) = broker.connections.values()
    assert model.kind.protocol == "MQTT 3.1.1"
    assert model.client_properties == {"product": "MQTT client", "client_id": "c1"}


def test_mqtt_3_1_is_listed_as_3_1_0(broker: Broker) -> None:
    Wire(broker).send(connect("c1", level=3))
    (model,) = broker.connections.values()
    assert model.kind.protocol == "MQTT 3.1.0"


def test_without_anonymous_logins_a_connect_without_credentials_is_bad_credentials(
        broker: Broker) -> None:
    w = Wire(broker, settings=MqttSettings(allow_anonymous=False))
    assert w.send(connect("c1")) == [("CONNACK", (False, 4))]
    assert w.conn.should_close


def test_a_user_name_without_a_password_is_bad_credentials(broker: Broker) -> None:
    assert Wire(broker).send(connect("c1", user="guest")) == [("CONNACK", (False, 4))]


def test_a_wrong_password_is_bad_credentials(broker: Broker) -> None:
    assert Wire(broker).send(connect("c1", user="guest", password="no")) == [
        ("CONNACK", (False, 4))]


def test_the_vhost_comes_from_the_user_name_split_at_its_last_colon(broker: Broker) -> None:
    broker.add_vhost("dev")
    broker.set_permissions("guest", ".*", ".*", ".*", vhost="dev")
    w = Wire(broker)
    assert w.send(connect("c1", user="dev:guest", password="guest")) == [
        ("CONNACK", (False, 0))]
    assert (w.conn.vhost, w.conn.user) == ("dev", "guest")


def test_a_missing_vhost_is_bad_credentials_and_no_access_is_not_authorised(
        broker: Broker) -> None:
    assert Wire(broker).send(connect("c1", user="nope:guest", password="guest")) == [
        ("CONNACK", (False, 4))]
    broker.add_user("nobody", "pw")  # (no permissions anywhere)
    assert Wire(broker).send(connect("c2", user="nobody", password="pw")) == [
        ("CONNACK", (False, 5))]


def test_the_port_picks_the_vhost_when_the_user_name_names_none(broker: Broker) -> None:
    broker.add_vhost("by-port")
    broker.set_permissions("guest", ".*", ".*", ".*", vhost="by-port")
    w = Wire(broker, settings=MqttSettings(port_to_vhost={"1883": "by-port"}))
    w.send(connect("c1"))
    assert w.conn.vhost == "by-port"


def test_guest_from_elsewhere_is_not_authorised(broker: Broker) -> None:
    w = Wire(broker, loopback=False, peer="10.0.0.5:40000")
    assert w.send(connect("c1")) == [("CONNACK", (False, 5))]
    assert not broker.connections


def test_an_empty_client_id_needs_a_clean_session(broker: Broker) -> None:
    assert Wire(broker).send(connect("", clean=False)) == [("CONNACK", (False, 2))]
    w = Wire(broker)
    assert w.send(connect("")) == [("CONNACK", (False, 0))]
    assert len(w.conn.client_id or "") == 22  # (a generated one)


def test_a_packet_before_connect_ends_the_connection(broker: Broker) -> None:
    w = Wire(broker)
    assert w.send(PINGREQ) == []
    assert w.conn.should_close


def test_another_protocol_name_ends_the_connection_without_connack(broker: Broker) -> None:
    w = Wire(broker)
    assert w.send(connect("c1", level=5)) == []  # (MQTT 5: protocol_header_corrupt in 3.10)
    assert w.conn.should_close


def test_a_second_connection_with_the_same_client_id_closes_the_first(broker: Broker) -> None:
    first = Wire(broker)
    first.send(connect("same"))
    second = Wire(broker)
    assert second.send(connect("same")) == [("CONNACK", (False, 0))]
    assert first.conn.should_close
    assert broker.client_ids.owner("same") is second.conn


# -- sessions --------------------------------------------------------------------------------


def test_a_persistent_session_keeps_its_queue_and_says_session_present(broker: Broker) -> None:
    first = Wire(broker)
    first.send(connect("s1", clean=False))
    first.send(subscribe(1, ("t/1", 1)))
    queue = broker.queues["mqtt-subscription-s1qos1"]
    assert (queue.durable, queue.auto_delete, queue.arguments) == (
        True, False, {"x-expires": 86_400_000})
    first.send(DISCONNECT)
    publisher = Wire(broker)
    publisher.send(connect("p"))
    publisher.send(publish("t/1", b"while away", qos=1, packet_id=3))
    second = Wire(broker)
    frames = second.send(connect("s1", clean=False))
    assert frames[0] == ("CONNACK", (True, 0))
    assert frames[1][0] == "PUBLISH"
    assert frames[1][1][:3] == ("t/1", b"while away", 1)


def test_a_clean_session_deletes_the_persistent_sessions_queue(broker: Broker) -> None:
    first = Wire(broker)
    first.send(connect("s1", clean=False))
    first.send(subscribe(1, ("t/1", 1)))
    first.send(DISCONNECT)
    assert Wire(broker).send(connect("s1")) == [("CONNACK", (False, 0))]
    assert "mqtt-subscription-s1qos1" not in broker.queues


# -- publish and subscribe -------------------------------------------------------------------


def test_topics_are_routing_keys_on_amq_topic_and_back(wire: Wire, broker: Broker) -> None:
    assert wire.send(subscribe(1, ("sensors/+/temp", 0), ("alerts/#", 1))) == [
        ("SUBACK", (1, [0, 1]))]
    keys = sorted(b.routing_key for b in broker.vhost("/").exchanges["amq.topic"].bindings.values())
    assert keys == ["alerts.#", "sensors.*.temp"]
    frames = wire.send(publish("sensors/kitchen/temp", b"21"))
    assert frames == [("PUBLISH", ("sensors/kitchen/temp", b"21", 0, False, False, None))]


def test_qos_2_is_granted_and_published_as_qos_1(wire: Wire) -> None:
    assert wire.send(subscribe(1, ("a", 2))) == [("SUBACK", (1, [1]))]
    frames = wire.send(publish("a", b"x", qos=2, packet_id=9))
    assert ("PUBACK", 9) in frames
    (delivered,) = [f for f in frames if f[0] == "PUBLISH"]
    assert delivered[1][2] == 1


def test_amqp_consumers_see_the_mqtt_headers(wire: Wire, broker: Broker) -> None:
    channel = broker.open_connection().open_channel(1)
    channel.queue_declare("q")
    channel.queue_bind("q", "amq.topic", "a.b")
    wire.send(publish("a/b", b"x", qos=1, packet_id=2))
    (message,) = broker.queues["q"].messages
    assert message.properties == {"headers": {"x-mqtt-publish-qos": 1, "x-mqtt-dup": False},
                                  "delivery_mode": 2}


def test_a_qos_1_delivery_is_acknowledged_by_puback(wire: Wire, broker: Broker) -> None:
    wire.send(subscribe(1, ("a", 1)))
    (delivered,) = [f for f in wire.send(publish("a", b"x", qos=1, packet_id=5))
                    if f[0] == "PUBLISH"]
    packet_id = delivered[1][5]
    assert broker.queues["mqtt-subscription-c1qos1"].unacked == 1
    wire.send(puback(packet_id))
    assert broker.queues["mqtt-subscription-c1qos1"].unacked == 0


def test_a_qos_0_publish_reaches_a_qos_1_subscription_as_qos_0(wire: Wire, broker: Broker) -> None:
    wire.send(subscribe(1, ("a", 1)))
    (delivered,) = wire.send(publish("a", b"x"))
    assert delivered[1][2] == 0
    assert broker.queues["mqtt-subscription-c1qos1"].unacked == 0


def test_unsubscribe_unbinds_the_filter(wire: Wire, broker: Broker) -> None:
    wire.send(subscribe(1, ("a/#", 0)))
    assert wire.send(unsubscribe(2, "a/#")) == [("UNSUBACK", 2)]
    assert wire.send(publish("a/b", b"x")) == []


def test_a_retained_message_is_sent_to_a_subscription_naming_its_topic(
        wire: Wire, broker: Broker) -> None:
    wire.send(publish("status/door", b"open", qos=1, retain=True, packet_id=4))
    other = Wire(broker)
    other.send(connect("c2"))
    assert other.send(subscribe(7, ("status/door", 1))) == [
        ("SUBACK", (7, [1])), ("PUBLISH", ("status/door", b"open", 1, True, False, 7))]
    assert other.send(subscribe(8, ("status/#", 1))) == [("SUBACK", (8, [1]))]  # (exact only)
    wire.send(publish("status/door", b"", retain=True))
    assert broker.vhost("/").retained.fetch("status/door") is None


def test_a_topic_permission_refusal_ends_the_connection(broker: Broker) -> None:
    broker.set_topic_permissions("guest", "amq.topic", "^devices\\.{client_id}\\..*", ".*")
    w = Wire(broker)
    w.send(connect("d1"))
    w.send(publish("devices/d1/temp", b"ok", qos=1, packet_id=1))
    assert w.received() == []
    assert not w.conn.should_close
    assert w.send(publish("devices/d2/temp", b"no", qos=1, packet_id=2)) == []
    assert w.conn.should_close


def test_pingreq_is_answered(wire: Wire) -> None:
    assert wire.send(PINGREQ) == [("PINGRESP", None)]


# -- the will, keep-alive, alarms ------------------------------------------------------------


def test_the_will_goes_out_when_the_client_vanishes_not_when_it_disconnects(
        broker: Broker) -> None:
    watcher = Wire(broker)
    watcher.send(connect("w"))
    watcher.send(subscribe(1, ("last/will", 0)))
    leaving = Wire(broker)
    leaving.send(connect("l1", will=("last/will", b"gone", 0, False)))
    leaving.send(DISCONNECT)
    assert watcher.received() == []
    vanishing = Wire(broker)
    vanishing.send(connect("l2", will=("last/will", b"gone", 0, True)))
    vanishing.conn.receive_data(b"")
    assert watcher.received() == [("PUBLISH", ("last/will", b"gone", 0, False, False, None))]
    assert broker.vhost("/").retained.fetch("last/will") is not None


def test_the_keep_alive_runs_on_the_broker_clock_and_sends_the_will() -> None:
    clock = ManualClock()
    broker = Broker(clock=clock)
    w = Wire(broker)
    w.send(connect("k", keep_alive=10, will=("gone", b"k", 0, True)))
    clock.advance(19.9)
    w.conn.tick()
    assert not w.conn.should_close
    clock.advance(0.1)
    w.conn.tick()
    assert w.conn.should_close
    assert broker.vhost("/").retained.fetch("gone") is not None


def test_an_mqtt_connection_is_not_read_while_an_alarm_lasts(wire: Wire) -> None:
    assert wire.conn.kind.alarm_blocking.value == "reading"
    wire.conn.held_by_alarm = True
    assert wire.conn.blocked


def test_a_connection_that_never_sends_connect_is_dropped_at_the_login_timeout() -> None:
    clock = ManualClock()
    w = Wire(Broker(clock=clock))
    clock.advance(10)
    w.conn.tick()
    assert w.conn.should_close


def test_the_global_port_to_vhost_mapping_is_read_at_each_login(broker: Broker) -> None:
    broker.add_vhost("mapped")
    broker.set_permissions("guest", ".*", ".*", ".*", vhost="mapped")
    broker.set_global_parameter("mqtt_port_to_vhost_mapping", {"1883": "mapped"})
    w = Wire(broker)
    w.send(connect("c1"))
    assert w.conn.vhost == "mapped"
    named = Wire(broker)
    named.send(connect("c2", user="/:guest", password="guest"))  # (the user name's first)
    assert named.conn.vhost == "/"
