"""RabbitMQ 3.13+'s stream filtering, behind the RabbitMQ 4 profile (``as_rabbitmq="4.1.x"``).

From RabbitMQ's source at v4.1.4: ``deps/rabbit/src/rabbit_stream_queue.erl``
(``stream_message/1``: an AMQP message's ``x-stream-filter-value`` header is its filter value;
``filter_spec/1``: the consumer arguments ``x-stream-filter``, a string or an array of strings,
and ``x-stream-match-unfiltered``) and ``deps/rabbitmq_stream/src/rabbit_stream_reader.erl``
(Publish version 2 carries a filter value per message; Subscribe's ``filter.N`` and
``match-unfiltered`` properties; ExchangeCommandVersions). The broker sends whole chunks that
hold a wanted value (osiris' Bloom filters; embroker's have no false positives), or, with
match-unfiltered, a message without one; the client filters the messages of a chunk itself.
Under the default (3.10) profile none of it exists: the arguments mean nothing and
ExchangeCommandVersions is an unknown frame.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from rstream import (
    AMQPMessage,
    Consumer,
    ConsumerOffsetSpecification,
    FilterConfiguration,
    MessageContext,
    OffsetType,
    Producer,
    amqp_decoder,
)

from embroker import Broker
from embroker.client import Channel
from embroker.stream import Key, Writer
from embroker.stream._connection import COMMAND_VERSIONS
from tests.stream.test_connection import Peer

STREAM = {"x-queue-type": "stream"}


def publish(ch: Channel, body: bytes, value: str | None) -> None:
    headers = {"x-stream-filter-value": value} if value is not None else {}
    ch.basic_publish("", "s", body, properties={"headers": headers})


def consume(broker: Broker, arguments: dict[str, Any]) -> list[bytes]:
    ch = broker.connect().channel()
    ch.basic_qos(prefetch_count=100)
    got: list[bytes] = []
    ch.basic_consume("s", lambda _c, _d, _p, body: got.append(body),
                     arguments={"x-stream-offset": "first", **arguments})
    ch.connection.process_data_events()
    return got


@pytest.fixture
def broker4() -> Broker:
    broker = Broker(as_rabbitmq="4.1.x")
    ch = broker.connect().channel()
    ch.queue_declare("s", durable=True, arguments=STREAM)
    for body, value in ((b"eu1", "eu"), (b"us1", "us"), (b"none", None), (b"eu2", "eu")):
        publish(ch, body, value)
    return broker


@pytest.mark.parametrize(("arguments", "bodies"), [
    ({}, [b"eu1", b"us1", b"none", b"eu2"]),
    ({"x-stream-filter": "eu"}, [b"eu1", b"eu2"]),
    ({"x-stream-filter": ["us", "eu"]}, [b"eu1", b"us1", b"eu2"]),
    ({"x-stream-filter": "eu", "x-stream-match-unfiltered": True}, [b"eu1", b"none", b"eu2"]),
    ({"x-stream-filter": "asia"}, []),
])
def test_amqp_consumers_get_the_chunks_that_match(broker4: Broker, arguments: dict[str, Any],
                                                  bodies: list[bytes]) -> None:
    assert consume(broker4, arguments) == bodies
    broker4._check()


def test_the_310_profile_has_no_filtering() -> None:
    broker = Broker()
    ch = broker.connect().channel()
    ch.queue_declare("s", durable=True, arguments=STREAM)
    publish(ch, b"eu1", "eu")
    publish(ch, b"us1", "us")
    assert consume(broker, {"x-stream-filter": "eu"}) == [b"eu1", b"us1"]


def test_exchange_command_versions_only_with_the_4_profile() -> None:
    old = Peer(Broker())
    old.open()
    ((key, f),) = old.send(old.request(Key.EXCHANGE_COMMAND_VERSIONS).int32(0).frame())
    assert key == Key.CLOSE
    f.uint32()
    assert (f.uint16(), f.string()) == (0x0D, "unknown frame")
    new = Peer(Broker(as_rabbitmq="4.1.x"))
    new.open()
    ((key, f),) = new.send(new.request(Key.EXCHANGE_COMMAND_VERSIONS).int32(1).uint16(2)
                           .uint16(1).uint16(2).frame())
    f.uint32()
    assert f.uint16() == 1
    versions = [(f.uint16(), f.uint16(), f.uint16()) for _ in range(f.count())]
    # RabbitMQ 4.1.0's list as it is (rabbit_stream_utils:command_versions/0): the commands a
    # client sends, in that order; rstream reads Publish's at index key - 1, which it is there.
    assert versions == [(int(k), lo, hi) for k, lo, hi in COMMAND_VERSIONS]
    assert [Key(k).name for k, _lo, _hi in versions] == [
        "DECLARE_PUBLISHER", "PUBLISH", "QUERY_PUBLISHER_SEQUENCE", "DELETE_PUBLISHER",
        "SUBSCRIBE", "CREDIT", "STORE_OFFSET", "QUERY_OFFSET", "UNSUBSCRIBE", "CREATE", "DELETE",
        "METADATA", "CLOSE", "HEARTBEAT", "ROUTE", "PARTITIONS", "STREAM_STATS",
        "CREATE_SUPER_STREAM", "DELETE_SUPER_STREAM"]
    assert versions[Key.PUBLISH - 1] == (Key.PUBLISH, 1, 2)


def test_publish_v2_filter_values_and_subscription_filters() -> None:
    broker = Broker(as_rabbitmq="4.1.x")
    broker.connect().channel().queue_declare("s", durable=True, arguments=STREAM)
    p = Peer(broker)
    p.open()
    p.send(p.request(Key.DECLARE_PUBLISHER).uint8(0).string("").string("s").frame())
    for pid, value in enumerate(("eu", "us", "eu"), 1):  # a chunk each
        w = Writer(Key.PUBLISH, version=2).uint8(0).int32(1).uint64(pid).string(value)
        p.send(w.bytes_(b"\x00\x53\x75\xa0\x01" + value[0].encode()).frame())
    replies = p.send(p.request(Key.SUBSCRIBE).uint8(1).string("s").uint16(1).uint16(10)
                     .properties({"filter.0": "eu"}).frame())
    assert [k for k, _ in replies] == [0x8007, Key.DELIVER, Key.DELIVER]
    assert consume(broker, {"x-stream-filter": "us"}) == [b"u"], "an AMQP reader sees them too"


def test_rstream_filtering_against_the_4_profile() -> None:
    async def script(port: int) -> list[Any]:
        async with Producer("127.0.0.1", port=port, username="guest", password="guest",
                            filter_value_extractor=_region) as producer:
            await producer.create_stream("regions")
            for region in ("eu", "us", "eu"):
                await producer.send_wait("regions", AMQPMessage(
                    body=region.encode(), application_properties={"region": region}))
        got: list[Any] = []
        done = asyncio.Event()

        async def on_message(msg: AMQPMessage, ctx: MessageContext) -> None:
            got.append((ctx.offset, bytes(msg.body)))
            if len(got) == 2:
                done.set()

        consumer = Consumer("127.0.0.1", port=port, username="guest", password="guest")
        await consumer.start()
        await consumer.subscribe("regions", on_message, decoder=amqp_decoder,
                                 offset_specification=ConsumerOffsetSpecification(
                                     OffsetType.FIRST, None),
                                 filter_input=FilterConfiguration(["eu"]))
        await asyncio.wait_for(done.wait(), 10)
        await consumer.close()
        return got

    broker = Broker(as_rabbitmq="4.1.x")
    with broker.serve(stream_port=0) as server:
        assert server.stream_port is not None
        got = asyncio.run(asyncio.wait_for(script(server.stream_port), 30))
        assert not server.errors
    assert got == [(0, b"eu"), (2, b"eu")]


async def _region(message: AMQPMessage) -> str:
    properties = message.application_properties or {}
    return str(properties.get(b"region", properties.get("region")))
