"""broker.settle(): a barrier instead of sleeps, with real clients over the listener."""

from __future__ import annotations

import asyncio
import threading
import time

import aio_pika
import pika
import pytest

from embroker import Broker
from embroker._settle import SettleTimeout
from embroker.faults import Faults
from embroker.server import Server

from ..clocks import SteppedClock


def test_publishes_are_routed_when_settle_returns(broker: Broker, server: Server) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(server.url))
    ch = conn.channel()
    ch.queue_declare("jobs")
    for round_ in range(20):
        ch.basic_publish("", "jobs", b"%d" % round_)  # no confirm: nothing to wait for
        broker.settle()
        assert broker.queues["jobs"].message_count == round_ + 1
    conn.close()


def test_deliveries_are_written_when_settle_returns(broker: Broker, server: Server) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(server.url))
    ch = conn.channel()
    ch.queue_declare("jobs")
    got: list[bytes] = []
    ch.basic_consume("jobs", lambda c, m, p, b: got.append(b), auto_ack=True)
    publisher = broker.connect().channel()
    for n in range(10):
        publisher.basic_publish("", "jobs", b"%d" % n)
    broker.settle()
    assert broker.queues["jobs"].message_count == 0
    deadline = time.monotonic() + 5
    while len(got) < 10 and time.monotonic() < deadline:
        conn.process_data_events(0.05)  # the frames are on the client's socket already
    assert len(got) == 10
    conn.close()


def test_settle_says_what_is_still_busy(broker: Broker, server: Server) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(server.url))
    conn.channel()
    broker.settle()
    Faults(broker, server).stall(2.0)
    with pytest.raises(SettleTimeout) as failure:
        broker.settle(timeout=0.1)
    assert "the broker did not settle within 0.1s; still busy:" in str(failure.value)
    assert "stalled by a fault" in str(failure.value)


def test_settle_runs_due_timers_when_no_listener_does() -> None:
    clock = SteppedClock()
    broker = Broker(clock=clock)
    ch = broker.connect().channel()
    ch.queue_declare("dead")
    ch.queue_declare("q", arguments={"x-message-ttl": 1000, "x-dead-letter-exchange": "",
                                     "x-dead-letter-routing-key": "dead"})
    ch.basic_publish("", "q", b"x")
    clock.now = 5.0  # due, and nothing ran it
    broker.settle()
    assert broker.queues["dead"].message_count == 1


def test_wait_until_drained_by_a_worker_thread(broker: Broker, server: Server) -> None:
    ch = broker.connect().channel()
    ch.queue_declare("jobs")
    for n in range(50):
        ch.basic_publish("", "jobs", b"%d" % n)
    done = threading.Event()

    def worker() -> None:
        conn = pika.BlockingConnection(pika.URLParameters(server.url))
        wch = conn.channel()
        wch.basic_qos(prefetch_count=5)
        wch.basic_consume("jobs", lambda c, m, p, b: c.basic_ack(m.delivery_tag))
        while not done.is_set():
            conn.process_data_events(0.01)
        conn.close()

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        broker.wait_until_drained("jobs", timeout=5)
        assert broker.queues["jobs"].message_count == broker.queues["jobs"].unacked == 0
        assert [e.kind for e in broker.trace[-1].history()] == ["delivered", "acked"]
    finally:
        done.set()
        thread.join(5)
    ch.queue_declare("other")
    ch.basic_publish("", "other", b"stays")
    with pytest.raises(SettleTimeout, match=r"queue 'other' was not drained within 0.05s"):
        broker.wait_until_drained("other", timeout=0.05)


def test_settle_async_with_aio_pika(broker: Broker, server: Server) -> None:
    async def main() -> None:
        connection = await aio_pika.connect(server.url)
        channel = await connection.channel()
        queue = await channel.declare_queue("jobs")
        seen: list[bytes] = []

        async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            async with message.process():
                seen.append(message.body)

        await queue.consume(on_message)
        for n in range(5):
            await channel.default_exchange.publish(aio_pika.Message(b"%d" % n), "jobs")
        await broker.wait_until_drained_async("jobs", timeout=5)
        await broker.settle_async()
        assert len(seen) == 5
        await connection.close()

    asyncio.run(main())
