"""aiomqtt (2.x: asyncio over paho-mqtt) against embroker's MQTT listener, end to end, as an
application uses it: ``async with Client(...)``, ``subscribe``, ``publish`` and
``client.messages``. MQTT 3.1.1 under the default profile (RabbitMQ 3.10.8) and MQTT 5.0 under
the RabbitMQ 4 profile (``Broker(as_rabbitmq="4.0.5")``, as RabbitMQ 4.0.5 serves it): the steps
that mean the same at both levels run at both; the 3.1.1 ones run against the reference
RabbitMQ's MQTT plugin too (``EMBROKER_REFERENCE_URL``; its MQTT port
``EMBROKER_REFERENCE_MQTT_PORT``, 1884 by default), which has no MQTT 5 (3.10.8).

pytest-asyncio is not needed: each test runs its coroutine with ``asyncio.run`` under an overall
bound, aiomqtt bounds each CONNACK, SUBACK and PUBACK by its ``timeout``, and every message is
awaited through ``client.messages`` within :data:`TIMEOUT` (:func:`take`). Where a test shows
that something did *not* arrive, it sends a marker after it and reads the marker first."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiomqtt
import pika
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode
from paho.mqtt.subscribeoptions import SubscribeOptions

from embroker import Broker
from embroker.server import Server

from .conftest import wait_until

T = TypeVar("T")

TIMEOUT = 5.0
LEVELS = {"3.1.1": (aiomqtt.ProtocolVersion.V311, "3.10.8"),
          "5.0": (aiomqtt.ProtocolVersion.V5, "4.0.5")}


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` with an overall bound, so a lost reply fails the test instead of hanging it."""
    return asyncio.run(asyncio.wait_for(coro, 4 * TIMEOUT))


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def properties(packet: int, **values: Any) -> Properties:
    """paho's MQTT 5 properties for a packet type (``PacketTypes.PUBLISH``...)."""
    made = Properties(packet)
    for name, value in values.items():
        setattr(made, name, value)
    return made


def prop(message: aiomqtt.Message, name: str) -> Any:
    """A 5.0 property of a received message (paho's ``Properties`` declares none: read by
    name), or ``None``."""
    return getattr(message.properties, name, None)


async def take(client: aiomqtt.Client, count: int = 1) -> list[aiomqtt.Message]:
    """The next ``count`` messages, read as an application reads them (``async for message in
    client.messages``), within :data:`TIMEOUT`."""

    async def read() -> list[aiomqtt.Message]:
        got: list[aiomqtt.Message] = []
        async for message in client.messages:
            got.append(message)
            if len(got) == count:
                break
        return got

    return await asyncio.wait_for(read(), TIMEOUT)


async def vanish(client: aiomqtt.Client) -> None:
    """End the connection without DISCONNECT, as a process that dies would: a TCP shutdown of
    the socket under aiomqtt (paho's), then what aiomqtt shows for it: ``client.messages``
    stops with an error (its ``__aexit__`` then sends nothing)."""
    sock = client._client.socket()
    assert isinstance(sock, socket.socket)
    sock.shutdown(socket.SHUT_RDWR)
    with pytest.raises(aiomqtt.MqttError, match="Disconnected during message iteration"):
        await take(client)


@dataclass(frozen=True)
class Target:
    """A broker as the steps reach it: its MQTT port, its AMQP URL (for pika), the MQTT level,
    and (embroker's only) the broker, to wait on what crosses the listener's thread."""

    host: str
    port: int
    amqp_url: str
    level: str
    broker: Broker | None = None

    @property
    def v5(self) -> bool:
        return self.level == "5.0"

    def client(self, identifier: str | None = None, *, keep: bool = False,
               **options: Any) -> aiomqtt.Client:
        """An aiomqtt client (not connected yet); ``keep``: its session outlives the connection
        (3.1.1: ``clean_session=False``; 5.0: Clean Start 0 and a Session Expiry Interval).
        Without ``keep`` the session ends with the connection (5.0: aiomqtt's Clean Start on
        the first connection, no Session Expiry Interval)."""
        if keep and self.v5:
            options.update(clean_start=False, properties=properties(
                PacketTypes.CONNECT, SessionExpiryInterval=60))
        elif keep:
            options.update(clean_session=False)
        return aiomqtt.Client(self.host, self.port, identifier=identifier or unique("c"),
                              protocol=LEVELS[self.level][0], timeout=TIMEOUT, **options)

    def wait_closed(self, identifier: str) -> None:
        """Until embroker has closed the connection of this client id (against the reference,
        nothing to wait on: what a step shows after it holds there only as far as the
        reference has closed it by then)."""
        if self.broker is not None:
            broker = self.broker
            wait_until(lambda: identifier not in broker.client_ids, TIMEOUT)


def served(broker: Broker, level: str) -> Iterator[Target]:
    """embroker's MQTT listener on a free port, as a :class:`Target` (for a fixture)."""
    with Server(broker, listeners={"mqtt": 0}) as server:
        port = server.listener_port("mqtt")
        assert port is not None
        yield Target("127.0.0.1", port, server.url, level, broker)
    assert server.errors == []
    broker._check()


@pytest.fixture(params=list(LEVELS))
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """embroker at each level: 3.1.1 (the default profile) and 5.0 (the RabbitMQ 4 one)."""
    level = str(request.param)
    yield from served(Broker(as_rabbitmq=LEVELS[level][1]), level)


@pytest.fixture
def target5() -> Iterator[Target]:
    yield from served(Broker(as_rabbitmq=LEVELS["5.0"][1]), "5.0")


@pytest.fixture
def reference() -> Target:
    url = os.environ.get("EMBROKER_REFERENCE_URL")
    if not url:
        pytest.skip("needs EMBROKER_REFERENCE_URL (the reference RabbitMQ)")
    host = urlsplit(url).hostname or "127.0.0.1"
    port = int(os.environ.get("EMBROKER_REFERENCE_MQTT_PORT") or 1884)
    try:
        socket.create_connection((host, port), timeout=1).close()
    except OSError:
        pytest.skip(f"the reference's MQTT plugin does not answer on {port}")
    return Target(host, port, url, "3.1.1")


# -- the steps, run against embroker (both levels) and the reference (3.1.1) ----------------------


async def async_with_connects_disconnects_and_reconnects(target: Target) -> None:
    identifier, topic = unique("hello"), unique("hello")
    client = target.client(identifier)
    for _ in range(2):  # (an aiomqtt client is reusable: a second ``async with`` connects again)
        async with client:
            await client.subscribe(topic, 1)
            await client.publish(topic, b"hi", qos=1)
            (got,) = await take(client)
            assert (got.topic.value, got.payload, got.qos) == (topic, b"hi", 1)
        target.wait_closed(identifier)


async def wildcards_at_qos_0_and_1(target: Target) -> None:
    root = unique("wild")
    async with target.client() as client:
        granted = await client.subscribe([(f"{root}/+/temp", 1), (f"{root}/kitchen/#", 0)])
        assert [code.value for code in granted] == [1, 0]
        await client.publish(f"{root}/hall/temp", b"one", qos=1)  # the first filter only
        (got,) = await take(client)
        assert (got.topic.value, got.payload, got.qos, got.retain) == (
            f"{root}/hall/temp", b"one", 1, False)
        assert got.topic.matches(f"{root}/+/temp")
        await client.publish(f"{root}/kitchen/light/on", b"two", qos=0)  # the second only
        (got,) = await take(client)
        assert (got.topic.value, got.payload, got.qos) == (f"{root}/kitchen/light/on", b"two", 0)
        await client.publish(f"{root}/kitchen/temp", b"both", qos=1)  # a queue per QoS: both
        assert sorted((m.payload, m.qos) for m in await take(client, 2)) == [
            (b"both", 0), (b"both", 1)]
        await client.publish(f"{root}/hall/temp/extra", b"none", qos=1)  # '+' is one level
        await client.publish(f"{root}/hall/temp", b"marker", qos=0)
        assert [m.payload for m in await take(client)] == [b"marker"]


async def retained_message_for_the_exact_topic_and_cleared(target: Target) -> None:
    topic = unique("retained")
    async with target.client() as publisher, target.client() as late:
        await publisher.publish(f"{topic}/state", b"on", qos=1, retain=True)
        await late.subscribe(f"{topic}/state", 1)  # the exact topic: the retained message
        (got,) = await take(late)
        assert (got.topic.value, got.payload, got.retain, got.qos) == (
            f"{topic}/state", b"on", True, 1)
        await late.subscribe(f"{topic}/+", 1)  # a wildcard: none (RabbitMQ matches names only)
        await publisher.publish(f"{topic}/state", b"", qos=1, retain=True)  # clears it (and is
        (got,) = await take(late)  # delivered once: both filters are on the one QoS 1 queue)
        assert (got.payload, got.retain) == (b"", False)
        async with target.client() as later:
            await later.subscribe(f"{topic}/state", 1)
            await publisher.publish(f"{topic}/state", b"marker", qos=1)
            (got,) = await take(later)
            assert (got.payload, got.retain) == (b"marker", False)


async def will_on_an_abrupt_close_not_on_disconnect(target: Target) -> None:
    topic = unique("will")
    extra = properties(PacketTypes.WILLMESSAGE, UserProperty=[("why", "gone")]) \
        if target.v5 else None
    async with target.client() as watcher:
        await watcher.subscribe(topic, 1)
        polite = target.client(unique("polite"), will=aiomqtt.Will(topic, b"polite", 1))
        async with polite:
            pass
        target.wait_closed(polite.identifier)  # (gone, without its will)
        rude = target.client(unique("rude"), will=aiomqtt.Will(topic, b"rude", 1, False, extra))
        async with rude:
            await vanish(rude)
        (got,) = await take(watcher)
        assert (got.topic.value, got.payload, got.qos) == (topic, b"rude", 1)
        if target.v5:  # (the will's properties travel with it)
            assert prop(got, "UserProperty") == [("why", "gone")]


async def persistent_session_gets_what_came_while_away(target: Target) -> None:
    topic, identifier = unique("session"), unique("keeper")
    async with target.client(identifier, keep=True) as keeper:
        await keeper.subscribe(f"{topic}/#", 1)
    target.wait_closed(identifier)
    async with target.client() as publisher:
        await publisher.publish(f"{topic}/a", b"while away 1", qos=1)
        await publisher.publish(f"{topic}/b", b"while away 0", qos=0)
    async with target.client(identifier, keep=True) as keeper:  # no SUBSCRIBE again
        got = [(m.topic.value, m.payload, m.qos) for m in await take(keeper, 2)]
        assert got == [(f"{topic}/a", b"while away 1", 1), (f"{topic}/b", b"while away 0", 0)]
    target.wait_closed(identifier)
    async with target.client(identifier) as cleaner:  # a clean session ends the kept one
        await cleaner.publish(f"{topic}/a", b"nobody keeps this", qos=1)
    target.wait_closed(identifier)
    async with target.client(identifier, keep=True) as again:  # (nothing kept: no messages)
        await again.subscribe(f"{topic}/marker", 1)
        await again.publish(f"{topic}/marker", b"marker", qos=1)
        assert [m.payload for m in await take(again)] == [b"marker"]
    async with target.client(identifier):  # (ends the session: nothing left on the broker)
        pass


async def wrong_password_is_mqtt_code_error_134(target: Target) -> None:
    with pytest.raises(aiomqtt.MqttCodeError) as refused:
        async with target.client(unique("refused"), username="guest", password="wrong"):
            pass
    # 3.1.1: CONNACK return code 4, which paho (and so aiomqtt) names as 5.0's 0x86
    assert isinstance(refused.value.rc, ReasonCode)
    assert (refused.value.rc.value, str(refused.value)) == (
        134, "[code:134] Bad user name or password")


async def second_client_id_ends_the_first(target: Target) -> None:
    identifier, topic = unique("twin"), unique("twin")
    async with target.client(identifier) as first, target.client(identifier) as second:
        with pytest.raises(aiomqtt.MqttError,
                           match="Disconnected during message iteration") as ended:
            await take(first)
        await second.subscribe(topic, 1)
        await second.publish(topic, b"still here", qos=1)
        assert [m.payload for m in await take(second)] == [b"still here"]
    cause = ended.value.__cause__
    assert isinstance(cause, aiomqtt.MqttCodeError)
    # 3.1.1: the socket closes (paho's "Unspecified error", 128); 5.0: DISCONNECT 0x8E
    assert str(cause) == ("[code:142] Session taken over" if target.v5
                          else "[code:128] Unspecified error")


async def read_with_pika(target: Target) -> list[tuple[Any, ...]]:
    """Two publishes (QoS 0 and 1; at 5.0 with properties) read by a 0-9-1 consumer: each
    message's routing key, body, delivery mode, headers, correlation id and content type."""
    root = unique("sensors")
    amqp = pika.BlockingConnection(pika.URLParameters(target.amqp_url))
    try:
        channel = amqp.channel()
        name = channel.queue_declare("", exclusive=True).method.queue
        channel.queue_bind(name, "amq.topic", f"{root}.#")
        extra = properties(PacketTypes.PUBLISH, UserProperty=[("trace", "t1")],
                           ResponseTopic=f"{root}/replies", CorrelationData=b"id-1",
                           ContentType="text/plain") if target.v5 else None
        async with target.client() as client:
            await client.publish(f"{root}/hall/light", b"off", qos=0)
            await client.publish(f"{root}/hall/temp", b"21.5", qos=1, properties=extra)
        got = []
        for method, props, body in channel.consume(name, auto_ack=True,
                                                   inactivity_timeout=TIMEOUT):
            assert method is not None, f"no message within {TIMEOUT}s"
            headers = {k: v.replace(root, "~") if isinstance(v, str) else v
                       for k, v in (props.headers or {}).items()}
            got.append((method.exchange, method.routing_key.replace(root, "~"), body,
                        props.delivery_mode, headers, props.correlation_id,
                        props.content_type))
            if len(got) == 2:
                break
        channel.cancel()
    finally:
        amqp.close()
    return sorted(got, key=repr)


async def read_over_mqtt(target: Target) -> list[tuple[Any, ...]]:
    """A 0-9-1 publish (persistent, with a header, a correlation id and a content type) read
    by a client whose two subscriptions (QoS 1 and 0) both match: topic, payload, QoS and (5.0)
    the properties, of each delivery."""
    root = unique("sensors")
    async with target.client() as client:
        await client.subscribe([(f"{root}/+/temp", 1), (f"{root}/#", 0)])
        amqp = pika.BlockingConnection(pika.URLParameters(target.amqp_url))
        try:
            amqp.channel().basic_publish(
                "amq.topic", f"{root}.kitchen.temp", b"from pika",
                pika.BasicProperties(delivery_mode=2, headers={"x-a": "b"},
                                     correlation_id="c-1", content_type="text/plain"))
        finally:
            amqp.close()
        got = await take(client, 2)
    return sorted(((m.topic.value.replace(root, "~"), m.payload, m.qos,
                    m.properties and (prop(m, "UserProperty"), prop(m, "CorrelationData"),
                                      prop(m, "ContentType")))
                   for m in got), key=repr)


async def mqtt_publish_is_read_with_pika(target: Target) -> None:
    got = await read_with_pika(target)
    if target.v5:  # mc_mqtt:convert_to(mc_amqpl): user properties as headers, Response Topic
        # as x-reply-to-topic, Correlation Data as correlation_id; no x-mqtt-* headers
        assert got == [
            ("amq.topic", "~.hall.light", b"off", 1, {}, None, None),
            ("amq.topic", "~.hall.temp", b"21.5", 2,
             {"trace": "t1", "x-reply-to-topic": "~.replies"}, "id-1", "text/plain")]
    else:  # as RabbitMQ 3.10.8 publishes them: QoS 1 persistent, the QoS and DUP as headers
        assert got == [
            ("amq.topic", "~.hall.light", b"off", 1, {"x-mqtt-publish-qos": 0,
                                                      "x-mqtt-dup": False}, None, None),
            ("amq.topic", "~.hall.temp", b"21.5", 2, {"x-mqtt-publish-qos": 1,
                                                      "x-mqtt-dup": False}, None, None)]


async def pika_publish_is_read_over_mqtt(target: Target) -> None:
    got = await read_over_mqtt(target)
    # the routing key's '.' as '/'; each subscription's QoS (delivery mode 2: up to QoS 1);
    # 5.0: mc_mqtt:convert_from(mc_amqpl), the headers as user properties
    props = ([("x-a", "b")], b"c-1", "text/plain") if target.v5 else None
    assert got == [("~/kitchen/temp", b"from pika", 0, props),
                   ("~/kitchen/temp", b"from pika", 1, props)]


# -- embroker, both levels, and the reference --------------------------------------------------

STEPS = [async_with_connects_disconnects_and_reconnects, wildcards_at_qos_0_and_1,
         retained_message_for_the_exact_topic_and_cleared,
         will_on_an_abrupt_close_not_on_disconnect, persistent_session_gets_what_came_while_away,
         wrong_password_is_mqtt_code_error_134, second_client_id_ends_the_first,
         mqtt_publish_is_read_with_pika, pika_publish_is_read_over_mqtt]


@pytest.mark.parametrize("step", STEPS, ids=lambda step: step.__name__)
def test_embroker(target: Target, step: Any) -> None:
    run(step(target))


@pytest.mark.parametrize("step", STEPS, ids=lambda step: step.__name__)
def test_reference_rabbitmq_alike(reference: Target, step: Any) -> None:
    run(step(reference))


# -- embroker, MQTT 5.0 (the RabbitMQ 4 profile) ----------------------------------------------


def test_v5_user_properties_and_request_response_round_trip(target5: Target) -> None:
    async def scenario() -> None:
        root = unique("rpc")
        async with target5.client() as service, target5.client() as requester:
            await service.subscribe(f"{root}/service/+", 1)
            await requester.subscribe(f"{root}/replies", 1)
            await requester.publish(f"{root}/service/echo", b"ping", qos=1, properties=properties(
                PacketTypes.PUBLISH, ResponseTopic=f"{root}/replies", CorrelationData=b"id-1",
                UserProperty=[("trace", "t1"), ("tenant", "a")], ContentType="text/plain"))
            (request,) = await take(service)
            reply_to, correlation = prop(request, "ResponseTopic"), prop(request,
                                                                        "CorrelationData")
            assert (request.payload, reply_to, correlation, prop(request, "ContentType")) == (
                b"ping", f"{root}/replies", b"id-1", "text/plain")
            # (RabbitMQ 4 passes the MQTT message on as published: the user properties too)
            assert prop(request, "UserProperty") == [("trace", "t1"), ("tenant", "a")]
            await service.publish(reply_to, b"pong", qos=1, properties=properties(
                PacketTypes.PUBLISH, CorrelationData=correlation))
            (answer,) = await take(requester)
            assert (answer.topic.value, answer.payload, prop(answer, "CorrelationData")) == (
                f"{root}/replies", b"pong", b"id-1")

    run(scenario())


def test_v5_puback_no_matching_subscribers_is_not_surfaced_by_aiomqtt(target5: Target) -> None:
    # The broker answers PUBACK 0x10 (tests/mqtt/test_v5_paho.py reads it with paho); aiomqtt's
    # publish() waits for the PUBACK and drops its reason code: the publish just returns.
    async def scenario() -> None:
        async with target5.client() as client:
            await client.publish(unique("nobody/here"), b"x", qos=1)

    run(scenario())
    assert target5.broker is not None
    assert target5.broker.trace[-1].queues == ()  # (routed nowhere)


def test_v5_subscribe_options_no_local_and_retain_as_published(target5: Target) -> None:
    async def scenario() -> None:
        topic = unique("options")
        async with target5.client() as me, target5.client() as other:
            await me.subscribe(topic, options=SubscribeOptions(
                qos=1, noLocal=True, retainAsPublished=True))
            await me.publish(topic, b"my own", qos=1)  # (No Local: not sent back to me)
            await other.publish(topic, b"kept", qos=1, retain=True)
            (got,) = await take(me)
            # Retain As Published: the live delivery keeps the RETAIN flag it was published with
            assert (got.payload, got.retain) == (b"kept", True)
            await other.publish(topic, b"", qos=1, retain=True)  # (nothing left retained)
            assert [(m.payload, m.retain) for m in await take(me)] == [(b"", True)]

    run(scenario())


async def subscribe_with_id(client: aiomqtt.Client, topic: str, qos: int,
                            identifier: int) -> None:
    """SUBSCRIBE with a Subscription Identifier."""
    await client.subscribe(topic, qos, properties=properties(
        PacketTypes.SUBSCRIBE, SubscriptionIdentifier=identifier))


def test_v5_subscription_identifiers_come_with_deliveries(target5: Target) -> None:
    async def scenario() -> None:
        root = unique("ids")
        async with target5.client() as client:
            await subscribe_with_id(client, f"{root}/+", 1, 3)
            await subscribe_with_id(client, f"{root}/#", 1, 4)
            await client.subscribe(f"{root}/x/y", 1)  # (no identifier)
            await client.publish(f"{root}/x", b"two filters", qos=1)
            await client.publish(f"{root}/x/y", b"one with, one without", qos=1)
            first, second = await take(client, 2)
            # (one QoS 1 queue: one delivery each, with the ids of every filter that matched)
            assert sorted(prop(first, "SubscriptionIdentifier")) == [3, 4]
            assert prop(second, "SubscriptionIdentifier") == [4]

    run(scenario())


def test_v5_a_delivery_carries_the_identifiers_of_its_own_queue_s_filters(
        target5: Target) -> None:
    async def scenario() -> list[tuple[int, list[int]]]:
        root = unique("ids")
        async with target5.client() as client:
            await subscribe_with_id(client, f"{root}/+", 0, 7)
            await subscribe_with_id(client, f"{root}/#", 1, 9)
            await client.publish(f"{root}/x", b"both", qos=1)
            got = await take(client, 2)
        return sorted((m.qos, prop(m, "SubscriptionIdentifier")) for m in got)

    # (RabbitMQ 3.13+: maybe_publish_to_client/4 sends the ids of the filters bound to the
    # queue that delivers: the QoS 0 queue has the first filter, the QoS 1 queue the second)
    assert run(scenario()) == [(0, [7]), (1, [9])]
