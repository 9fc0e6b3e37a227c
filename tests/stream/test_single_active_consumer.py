"""Single active consumer over the stream protocol (RabbitMQ 3.11+, so behind the RabbitMQ 4
profile), as v4.1.4's rabbit_stream_reader.erl and rabbit_stream_sac_coordinator.erl do for a
stream (not a super stream's partitions): subscriptions with ``single-active-consumer`` and
the same ``name`` form a group; the first is active and is asked where to start
(ConsumerUpdate, its client answers an offset specification); the others wait without
deliveries; when the active one goes, the next is activated and asked in turn."""

from __future__ import annotations

import asyncio
from typing import Any

from rstream import (
    AMQPMessage,
    Consumer,
    ConsumerOffsetSpecification,
    MessageContext,
    OffsetType,
    Producer,
    amqp_decoder,
)
from rstream.schema import OffsetSpecification

from embroker import Broker
from embroker.stream import Code, Key, Writer, response_key
from tests.stream.test_connection import Peer

SAC = {"single-active-consumer": "true", "name": "group"}


def subscribe(p: Peer, properties: dict[str, str]) -> list[Any]:
    return p.send(p.request(Key.SUBSCRIBE).uint8(1).string("s").uint16(1).uint16(10)
                  .properties(properties).frame())


def answer(p: Peer, update: Any, offset_type: int) -> list[Any]:
    key, f = update
    assert key == Key.CONSUMER_UPDATE
    correlation, subscription, active = f.uint32(), f.uint8(), f.uint8()
    assert (subscription, active) == (1, 1)
    return p.send(Writer(response_key(Key.CONSUMER_UPDATE)).uint32(correlation).uint16(Code.OK)
                  .uint16(offset_type).uint64(0).frame())


def test_the_first_is_active_the_next_takes_over() -> None:
    broker = Broker(as_rabbitmq="4.1.x")
    ch = broker.connect().channel()
    ch.queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
    ch.basic_publish("", "s", b"m0")
    a, b = Peer(broker), Peer(broker)
    a.open()
    b.open()
    ok, update = subscribe(a, SAC)
    assert ok[0] == response_key(Key.SUBSCRIBE)
    assert [k for k, _ in answer(a, update, 1)] == [Key.DELIVER], "from first, as it answered"
    assert [k for k, _ in subscribe(b, SAC)] == [response_key(Key.SUBSCRIBE)], "b waits"
    ch.basic_publish("", "s", b"m1")
    assert [k for k, _ in a.received()] == [Key.DELIVER]
    assert b.received() == []
    a.send(a.request(Key.UNSUBSCRIBE).uint8(1).frame())
    (update,) = b.received()
    assert [k for k, _ in answer(b, update, 3)] == [], "next: nothing yet"
    ch.basic_publish("", "s", b"m2")
    assert [k for k, _ in b.received()] == [Key.DELIVER]


def test_a_group_needs_a_name_and_the_310_profile_has_none() -> None:
    broker = Broker(as_rabbitmq="4.1.x")
    broker.connect().channel().queue_declare("s", durable=True,
                                             arguments={"x-queue-type": "stream"})
    p = Peer(broker)
    p.open()
    ((_key, f),) = subscribe(p, {"single-active-consumer": "true"})
    f.uint32()
    assert f.uint16() == Code.PRECONDITION_FAILED
    old = Broker()
    old.connect().channel().queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
    q = Peer(old)
    q.open()
    assert [k for k, _ in subscribe(q, SAC)] == [response_key(Key.SUBSCRIBE)]


def test_rstream_single_active_consumer() -> None:
    async def script(port: int) -> list[Any]:
        async with Producer("127.0.0.1", port=port, username="guest",
                            password="guest") as producer:
            await producer.create_stream("sac")
            for i in range(3):
                await producer.send_wait("sac", AMQPMessage(body=b"m%d" % i))
        got: list[Any] = []
        first_done, second_done = asyncio.Event(), asyncio.Event()

        def reader(who: str, done: asyncio.Event, n: int) -> Any:
            async def on_message(msg: AMQPMessage, ctx: MessageContext) -> None:
                got.append((who, ctx.offset, bytes(msg.body)))
                if sum(1 for g in got if g[0] == who) >= n:
                    done.set()
            return on_message

        async def from_first(active: bool, _context: Any) -> OffsetSpecification:
            return OffsetSpecification(OffsetType.FIRST, 0)

        async def from_two(active: bool, _context: Any) -> OffsetSpecification:
            return OffsetSpecification(OffsetType.OFFSET, 2)

        spec = ConsumerOffsetSpecification(OffsetType.FIRST, None)
        one = Consumer("127.0.0.1", port=port, username="guest", password="guest")
        two = Consumer("127.0.0.1", port=port, username="guest", password="guest")
        await one.start()
        await two.start()
        await one.subscribe("sac", reader("one", first_done, 3), decoder=amqp_decoder,
                            offset_specification=spec, properties=dict(SAC),
                            consumer_update_listener=from_first)
        await asyncio.wait_for(first_done.wait(), 10)
        await two.subscribe("sac", reader("two", second_done, 1), decoder=amqp_decoder,
                            offset_specification=spec, properties=dict(SAC),
                            consumer_update_listener=from_two)
        # (that two waits meanwhile is shown byte by byte above: no sleeping here)
        await one.close()
        await asyncio.wait_for(second_done.wait(), 10)
        await two.close()
        return got

    broker = Broker(as_rabbitmq="4.1.x")
    with broker.serve(stream_port=0) as server:
        assert server.stream_port is not None
        got = asyncio.run(asyncio.wait_for(script(server.stream_port), 30))
        assert not server.errors
    assert got == [("one", 0, b"m0"), ("one", 1, b"m1"), ("one", 2, b"m2"), ("two", 2, b"m2")]
