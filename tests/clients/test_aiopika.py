"""aio-pika (over aiormq) against embroker's listener.

pytest-asyncio is not a dependency: each test runs its coroutine with ``asyncio.run`` and every
wait on the broker is bounded by ``asyncio.wait_for``/``async_wait_until``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import aio_pika
import aiormq
import pytest
from aio_pika.abc import AbstractIncomingMessage

from embroker import Broker
from embroker.server import Server

from .conftest import wait_until

T = TypeVar("T")

TIMEOUT = 5.0


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` with an overall bound, so a lost reply fails the test instead of hanging it."""
    return asyncio.run(asyncio.wait_for(coro, 4 * TIMEOUT))


async def async_wait_until(predicate: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(0.001)


async def bounded(awaitable: Awaitable[T]) -> T:
    return await asyncio.wait_for(awaitable, TIMEOUT)


async def connect(server: Server) -> aio_pika.abc.AbstractConnection:
    return await aio_pika.connect(server.url, timeout=TIMEOUT)


def test_topic_routing_and_consume_with_manual_acks(server: Server, broker: Broker) -> None:
    async def scenario() -> list[tuple[bytes, int, bool, str | None]]:
        conn = await connect(server)
        ch = await conn.channel()
        exchange = await ch.declare_exchange("events", aio_pika.ExchangeType.TOPIC)
        queue = await ch.declare_queue("audit")
        await queue.bind(exchange, "order.*")
        for i in range(3):
            await exchange.publish(aio_pika.Message(b"%d" % i, content_type="text/plain",
                                                    headers={"n": i}), "order.created")
        await exchange.publish(aio_pika.Message(b"not routed"), "invoice.created")
        assert broker.trace[-1].queues == ()  # confirmed, so already routed (nowhere)
        assert [m.body for m in broker.queues["audit"].messages] == [b"0", b"1", b"2"]

        await ch.set_qos(prefetch_count=1)
        seen: list[tuple[bytes, int, bool, str | None]] = []
        done = asyncio.Event()

        async def on_message(message: AbstractIncomingMessage) -> None:
            seen.append((message.body, message.delivery_tag or 0, message.redelivered or False,
                         message.content_type))
            assert message.headers == {"n": len(seen) - 1}
            await message.ack()
            if len(seen) == 3:
                done.set()

        tag = await queue.consume(on_message, no_ack=False)
        await bounded(done.wait())
        await queue.cancel(tag)
        # basic.ack has no reply: wait for the broker to have seen the last one.
        await async_wait_until(lambda: broker.queues["audit"].unacked == 0)
        assert broker.queues["audit"].message_count == 0
        await conn.close()
        return seen

    seen = run(scenario())
    assert seen == [(b"0", 1, False, "text/plain"), (b"1", 2, False, "text/plain"),
                    (b"2", 3, False, "text/plain")]
    assert broker.trace[-1].exchange == "events"
    assert broker.trace[-1].routing_key == "invoice.created"
    wait_until(lambda: not broker.connections)


def test_unacked_message_is_redelivered_after_nack_with_requeue(server: Server,
                                                                broker: Broker) -> None:
    async def scenario() -> None:
        conn = await connect(server)
        ch = await conn.channel()
        queue = await ch.declare_queue("work")
        await ch.default_exchange.publish(aio_pika.Message(b"job"), "work")
        first = await bounded(queue.get(no_ack=False))
        assert (first.body, first.redelivered) == (b"job", False)
        assert broker.queues["work"].unacked == 1
        await first.nack(requeue=True)
        second = await bounded(queue.get(no_ack=False))
        assert (second.body, second.redelivered, second.delivery_tag) == (b"job", True, 2)
        await second.ack()
        await bounded(queue.declare())  # a round trip after the ack
        assert (broker.queues["work"].unacked, broker.queues["work"].message_count) == (0, 0)
        await conn.close()

    run(scenario())


def test_basic_get_reports_message_count_and_empty_queue(server: Server, broker: Broker) -> None:
    async def scenario() -> None:
        conn = await connect(server)
        ch = await conn.channel()
        queue = await ch.declare_queue("q")
        for body in (b"a", b"b"):
            await ch.default_exchange.publish(aio_pika.Message(body), "q")
        got = await bounded(queue.get(no_ack=True))
        assert got.body == b"a"
        assert got.message_count == 1  # what basic.get-ok said was left
        assert [m.body for m in broker.queues["q"].messages] == [b"b"]
        got = await bounded(queue.get(no_ack=False))
        assert (got.body, got.message_count) == (b"b", 0)
        await got.ack()
        assert await bounded(queue.get(fail=False)) is None  # basic.get-empty
        with pytest.raises(aio_pika.exceptions.QueueEmpty):
            await bounded(queue.get())
        await conn.close()

    run(scenario())
    assert broker.queues["q"].message_count == 0
    assert broker.queues["q"].unacked == 0


def test_publisher_confirms_ack_and_mandatory_return(server: Server, broker: Broker) -> None:
    async def scenario() -> None:
        conn = await connect(server)
        ch = await conn.channel(publisher_confirms=True, on_return_raises=True)
        await ch.declare_queue("confirmed")
        confirmation = await bounded(ch.default_exchange.publish(aio_pika.Message(b"ok"),
                                                                 "confirmed"))
        assert isinstance(confirmation, aiormq.spec.Basic.Ack)
        assert confirmation.delivery_tag == 1
        with pytest.raises(aiormq.exceptions.PublishError) as err:
            await bounded(ch.default_exchange.publish(aio_pika.Message(b"lost"), "nowhere",
                                                      mandatory=True))
        assert err.value.message.delivery.reply_code == 312
        assert err.value.message.delivery.reply_text == "NO_ROUTE"
        assert err.value.message.body == b"lost"
        confirmation = await bounded(ch.default_exchange.publish(aio_pika.Message(b"ok2"),
                                                                 "confirmed"))
        assert confirmation.delivery_tag == 3
        await conn.close()

    run(scenario())
    assert [m.body for m in broker.queues["confirmed"].messages] == [b"ok", b"ok2"]
    assert broker.trace[-1].queues == ("confirmed",)


def test_transaction_commit_and_rollback(server: Server, broker: Broker) -> None:
    async def scenario() -> None:
        conn = await connect(server)
        ch = await conn.channel(publisher_confirms=False)
        queue = await ch.declare_queue("tx")
        tx = ch.transaction()
        await bounded(tx.select())
        await ch.default_exchange.publish(aio_pika.Message(b"rolled back"), "tx")
        await bounded(tx.rollback())
        assert broker.queues["tx"].message_count == 0
        await ch.default_exchange.publish(aio_pika.Message(b"committed"), "tx")
        await bounded(queue.declare())  # the publish has been handled, and is held
        assert broker.queues["tx"].message_count == 0
        await bounded(tx.commit())
        assert [m.body for m in broker.queues["tx"].messages] == [b"committed"]
        await conn.close()

    run(scenario())


def test_404_and_406_close_only_the_channel(server: Server, broker: Broker) -> None:
    async def scenario() -> None:
        conn = await connect(server)
        ch = await conn.channel()
        with pytest.raises(aiormq.exceptions.ChannelNotFoundEntity) as not_found:
            await bounded(ch.declare_queue("missing", passive=True))
        # aiormq picks the class by reply code (404 here) and keeps the reply text.
        assert not_found.value.args == ("NOT_FOUND - no queue 'missing' in vhost '/'",)
        assert ch.is_closed

        ch = await conn.channel()
        await ch.declare_exchange("x", aio_pika.ExchangeType.DIRECT)
        with pytest.raises(aiormq.exceptions.ChannelPreconditionFailed) as failed:
            await bounded(ch.declare_exchange("x", aio_pika.ExchangeType.FANOUT))
        assert failed.value.args == (  # 406
            "PRECONDITION_FAILED - inequivalent arg 'type' for exchange 'x' in vhost '/': "
            "received 'fanout' but current is 'direct'",)
        assert ch.is_closed

        ch = await conn.channel()  # the connection carries on
        queue = await ch.declare_queue("after")
        await ch.default_exchange.publish(aio_pika.Message(b"still works"), "after")
        got = await bounded(queue.get(no_ack=True))
        assert got.body == b"still works"
        assert not conn.is_closed
        await conn.close()

    run(scenario())
    assert broker.exchanges["x"].type == "direct"
    wait_until(lambda: not broker.connections)


def test_close_releases_unacked_messages_and_exclusive_queues(server: Server,
                                                              broker: Broker) -> None:
    async def scenario() -> None:
        conn = await connect(server)
        ch = await conn.channel()
        queue = await ch.declare_queue("jobs")
        mine = await ch.declare_queue("", exclusive=True)
        assert mine.name.startswith("amq.gen-")
        assert broker.queues[mine.name].exclusive
        await ch.default_exchange.publish(aio_pika.Message(b"held"), "jobs")
        got = await bounded(queue.get(no_ack=False))
        assert got.body == b"held"
        assert broker.queues["jobs"].unacked == 1
        await conn.close()
        assert conn.is_closed

    run(scenario())
    wait_until(lambda: not broker.connections)
    assert [q for q in broker.queues if q.startswith("amq.gen-")] == []
    entries = broker.queues["jobs"].entries
    assert [(e.message.body, e.redelivered) for e in entries] == [(b"held", True)]
    assert broker.queues["jobs"].unacked == 0


def test_robust_connection_connects_and_closes(server: Server, broker: Broker) -> None:
    async def scenario() -> None:
        conn = await aio_pika.connect_robust(server.url, timeout=TIMEOUT)
        ch = await conn.channel()
        queue = await ch.declare_queue("robust", auto_delete=True)
        async with queue.iterator() as messages:
            await ch.default_exchange.publish(aio_pika.Message(b"via iterator"), "robust")
            message = await bounded(messages.__anext__())
            async with message.process():
                assert message.body == b"via iterator"
        await conn.close()

    run(scenario())
    wait_until(lambda: not broker.connections)
    assert "robust" not in broker.queues  # auto-delete: its only consumer went away


def test_all_properties_and_header_types_round_trip(server: Server, broker: Broker) -> None:
    import datetime
    import decimal

    headers: dict[str, Any] = {"str": "s", "int": -7, "big": 2**40, "bool": True, "float": 1.5,
               "decimal": decimal.Decimal("3.14"), "bytes": bytearray(b"\x00\xff"), "none": None,
               "list": [1, "two", [3]], "table": {"nested": {"deep": 1}},
               "time": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)}
    sent = aio_pika.Message(
        b"body", headers=headers, content_type="application/json", content_encoding="utf-8",
        delivery_mode=aio_pika.DeliveryMode.PERSISTENT, priority=5, correlation_id="corr",
        reply_to="replies", expiration=60, message_id="mid",
        timestamp=datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc),
        type="kind", user_id="guest", app_id="app")

    async def scenario() -> AbstractIncomingMessage:
        conn = await connect(server)
        ch = await conn.channel()
        queue = await ch.declare_queue("props")
        await ch.default_exchange.publish(sent, "props")
        got = await bounded(queue.get(no_ack=True))
        await conn.close()
        return got

    got = run(scenario())
    assert got.body == b"body"
    assert got.headers == headers
    assert (got.content_type, got.content_encoding, got.delivery_mode, got.priority) == (
        "application/json", "utf-8", aio_pika.DeliveryMode.PERSISTENT, 5)
    assert (got.correlation_id, got.reply_to, got.message_id, got.type, got.user_id,
            got.app_id) == ("corr", "replies", "mid", "kind", "guest", "app")
    assert got.expiration == 60
    assert got.timestamp == datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)
    decision = broker.trace[-1]
    assert decision.queues == ("props",)


def test_many_outstanding_confirms_are_all_acked(server: Server, broker: Broker) -> None:
    async def scenario() -> list[object]:
        conn = await connect(server)
        ch = await conn.channel(publisher_confirms=True)
        await ch.declare_queue("bulk")
        results = await bounded(asyncio.gather(*(
            ch.default_exchange.publish(aio_pika.Message(b"%d" % i), "bulk")
            for i in range(500))))
        await conn.close()
        return results

    results = run(scenario())
    assert all(isinstance(r, aiormq.spec.Basic.Ack) for r in results)
    assert broker.queues["bulk"].message_count == 500
    assert [m.body for m in broker.queues["bulk"].messages[:3]] == [b"0", b"1", b"2"]


def test_prefetch_limits_unacked_deliveries(server: Server, broker: Broker) -> None:
    async def scenario() -> None:
        conn = await connect(server)
        ch = await conn.channel()
        await ch.set_qos(prefetch_count=2)
        queue = await ch.declare_queue("limited")
        for i in range(5):
            await ch.default_exchange.publish(aio_pika.Message(b"%d" % i), "limited")
        held: list[AbstractIncomingMessage] = []
        got_two = asyncio.Event()

        async def on_message(message: AbstractIncomingMessage) -> None:
            held.append(message)
            if len(held) == 2:
                got_two.set()

        await queue.consume(on_message)
        await bounded(got_two.wait())
        await bounded(queue.declare())  # a round trip: nothing more was sent
        assert len(held) == 2
        assert (broker.queues["limited"].unacked, broker.queues["limited"].message_count) == (2, 3)
        await held[0].ack()
        await async_wait_until(lambda: len(held) == 3)
        assert [m.body for m in held] == [b"0", b"1", b"2"]
        await conn.close()

    run(scenario())


def test_server_cancels_consumer_when_its_queue_is_deleted(server: Server,
                                                           broker: Broker) -> None:
    async def scenario() -> None:
        conn = await connect(server)
        ch = await conn.channel()
        queue = await ch.declare_queue("doomed")
        async def ignore(message: AbstractIncomingMessage) -> None:
            pass

        await queue.consume(ignore, consumer_tag="ctag")
        underlay = await ch.get_underlay_channel()
        assert "ctag" in underlay.consumers
        other = await conn.channel()
        await other.queue_delete("doomed")
        # basic.cancel from the server (consumer_cancel_notify): aiormq forgets the consumer.
        await async_wait_until(lambda: "ctag" not in underlay.consumers)
        assert not ch.is_closed
        await conn.close()

    run(scenario())
    assert "doomed" not in broker.queues


def test_expired_message_at_the_head_is_not_delivered() -> None:
    from embroker import ManualClock

    clock = ManualClock()
    broker = Broker(clock=clock)

    async def scenario(server: Server) -> list[bytes]:
        conn = await connect(server)
        ch = await conn.channel()
        queue = await ch.declare_queue("ttl")
        await ch.default_exchange.publish(aio_pika.Message(b"short", expiration=0.05), "ttl")
        await ch.default_exchange.publish(aio_pika.Message(b"long"), "ttl")
        assert broker.queues["ttl"].messages[0].properties["expiration"] == "50"
        clock.advance(1)  # "short" has expired; "long" has no expiration
        broker.tick()
        got = [(await bounded(queue.get(no_ack=True))).body]
        got.append(b"" if await bounded(queue.get(no_ack=True, fail=False)) is None else b"more")
        await conn.close()
        return got

    with broker.serve() as server:
        assert run(scenario(server)) == [b"long", b""]
    assert server.errors == []
