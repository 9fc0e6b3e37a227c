"""aio-pika and aiormq over an in-memory link driven by the test's event loop (embroker.memory.aio)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

import aio_pika
import aiormq
import pytest
from aio_pika.abc import AbstractIncomingMessage

from embroker import Broker, ManualClock
from embroker.faults import Faults
from embroker.memory import memory_url
from embroker.memory.aio import Connection, TransportFactory, connect
from embroker.testing import advance

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(coro, 20))


def test_publish_consume_and_settle_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    broker = Broker(clock=ManualClock())
    threads = threading.active_count()

    async def main() -> list[bytes]:
        def refuse(*_args: Any, **_kwargs: Any) -> None:
            raise AssertionError("a socket was made")
        monkeypatch.setattr(socket, "socket", refuse)  # (the loop's own self-pipe exists already)
        connection = await broker.aio_pika_connection()
        assert isinstance(connection, aio_pika.Connection)
        channel = await connection.channel()
        queue = await channel.declare_queue("jobs")
        got: list[bytes] = []

        async def on_message(message: AbstractIncomingMessage) -> None:
            async with message.process():
                got.append(message.body)

        await queue.consume(on_message)
        for n in range(10):
            await channel.default_exchange.publish(aio_pika.Message(str(n).encode()), "jobs")
        started = time.monotonic()
        await broker.settle_async()  # no sleeps: returns when nothing can run
        assert time.monotonic() - started < 1.0
        assert broker.queues["jobs"].unacked == 0
        assert threading.active_count() == threads
        await connection.close()
        return got

    assert run(main()) == [str(n).encode() for n in range(10)]
    assert broker.connections == {}
    assert broker.memory_connections == []


def test_settle_async_waits_for_the_application_s_tasks() -> None:
    broker = Broker(clock=ManualClock())

    async def main() -> list[str]:
        log: list[str] = []
        connection = await broker.aio_pika_connection()
        channel = await connection.channel()
        await channel.set_qos(prefetch_count=1)
        work = await channel.declare_queue("work")
        done = await channel.declare_queue("done")

        async def worker(message: AbstractIncomingMessage) -> None:
            async with message.process():
                for _ in range(3):
                    await asyncio.sleep(0)  # the handler yields a few times, as real code does
                log.append(message.body.decode())
                await channel.default_exchange.publish(
                    aio_pika.Message(message.body + b" done"), "done")

        await work.consume(worker)
        publisher = await connection.channel()
        for n in range(3):
            await publisher.default_exchange.publish(aio_pika.Message(f"job {n}".encode()), "work")
        await broker.settle_async()
        assert [m.body for m in broker.queues["done"].messages] == [
            b"job 0 done", b"job 1 done", b"job 2 done"]
        assert done.name == "done"
        await connection.close()
        return log

    assert run(main()) == ["job 0", "job 1", "job 2"]


def test_publisher_confirms_and_nacks() -> None:
    broker = Broker(clock=ManualClock())

    async def main() -> None:
        connection = await connect(broker)
        channel = await connection.channel(publisher_confirms=True)
        await channel.declare_queue("orders")
        await channel.default_exchange.publish(aio_pika.Message(b"1"), "orders")
        Faults(broker).nack_publishes(1, queue="orders")
        with pytest.raises(aio_pika.exceptions.DeliveryError):
            await channel.default_exchange.publish(aio_pika.Message(b"2"), "orders")
        await connection.close()

    run(main())
    assert [m.body for m in broker.queues["orders"].messages] == [b"1"]


def test_aiormq_with_the_transport_factory() -> None:
    broker = Broker()

    async def main() -> None:
        connection = aiormq.Connection(broker.memory_url, transport_factory=TransportFactory())
        await connection.connect()
        channel = await connection.channel()
        declared = await channel.queue_declare("raw")
        assert declared.queue == "raw"
        await channel.basic_publish(b"x", routing_key="raw")
        got = await channel.basic_get("raw", no_ack=True)
        assert got.body == b"x"
        await connection.close()

    run(main())


def test_connection_class_and_a_missing_broker() -> None:
    broker = Broker()

    async def main() -> None:
        connection = await aio_pika.connect(broker.memory_url, connection_class=Connection)
        channel = await connection.channel()
        await channel.declare_queue("via-connection-class")
        await connection.close()
        with pytest.raises(aiormq.exceptions.AMQPConnectionError, match="names no embroker"):
            await aio_pika.connect("amqp://guest:guest@embroker-memory-0/",
                                   connection_class=Connection)

    run(main())
    assert "via-connection-class" in broker.queues


def test_kill_and_a_robust_connection_reconnects() -> None:
    broker = Broker()

    async def main() -> None:
        connection = await broker.aio_pika_connection(robust=True, name="robust",
                                                      reconnect_interval=0.01)
        reconnected = asyncio.Event()
        connection.reconnect_callbacks.add(lambda *_: reconnected.set())
        channel = await connection.channel()
        await channel.declare_queue("durable-ish")
        Faults(broker).kill_connection("robust")
        await asyncio.wait_for(reconnected.wait(), 10)
        await channel.declare_queue("after-reconnect")
        await connection.close()

    run(main())
    assert {"durable-ish", "after-reconnect"} <= set(broker.queues)


def test_close_connection_fault_reaches_aio_pika() -> None:
    broker = Broker()

    async def main() -> None:
        connection = await broker.aio_pika_connection(name="victim")
        closed: list[BaseException | None] = []
        connection.close_callbacks.add(lambda _c, exc: closed.append(exc))
        Faults(broker).close_connection(320, "maintenance", name="victim")
        await broker.settle_async()
        assert len(closed) == 1
        assert "maintenance" in str(closed[0])
        assert broker.connections == {}

    run(main())


def scenario() -> list[str]:
    broker = Broker(clock=ManualClock())
    events: list[str] = []

    async def main() -> None:
        a = await broker.aio_pika_connection(name="a")
        b = await broker.aio_pika_connection(name="b")
        ch_a, ch_b = await a.channel(), await b.channel()
        queue = await ch_a.declare_queue("q")
        await ch_b.declare_queue("q")

        async def consumer(message: AbstractIncomingMessage) -> None:
            events.append(f"a got {message.body.decode()} #{message.delivery_tag}")
            await message.ack()
        await queue.consume(consumer)
        for n in range(5):
            await ch_b.default_exchange.publish(aio_pika.Message(f"m{n}".encode()), "q")
            events.append(f"b published m{n}")
        await broker.settle_async()
        await a.close()
        await b.close()
    run(main())
    events.extend(f"{d.routing_key} {d.outcome}" for d in broker.trace)
    return events


def test_the_same_test_twice_gives_the_same_event_order() -> None:
    first, second = scenario(), scenario()
    assert first == second
    assert sum(e.startswith("a got") for e in first) == 5


def test_the_memory_url_fixture(memory_url: str, broker: Broker) -> None:
    async def main() -> None:
        connection = await aio_pika.connect(memory_url, connection_class=Connection)
        await (await connection.channel()).declare_queue("from-fixture")
        await connection.close()

    run(main())
    assert "from-fixture" in broker.queues


def test_a_connection_with_heartbeats_survives_the_test_moving_the_clock() -> None:
    broker = Broker(clock=ManualClock())

    async def main() -> None:
        connection = await aio_pika.connect(memory_url(broker, heartbeat=10),
                                            connection_class=Connection)
        channel = await connection.channel()
        await channel.declare_queue("jobs")
        advance(broker, 3600)
        await channel.default_exchange.publish(aio_pika.Message(b"an hour later"), "jobs")
        await broker.settle_async()
        assert broker.queues["jobs"].message_count == 1
        await connection.close()

    run(main())
