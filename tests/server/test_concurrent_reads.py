"""Every read the docs show is safe from the test's thread while the listener serves clients,
without the caller taking a lock (issue #10: iterating ``broker.trace`` under load raised
"deque mutated during iteration" hundreds of times in 30 s)."""

from __future__ import annotations

import threading
import time

import pika

from embroker import Broker
from embroker.server import Server
from embroker.testing import published, queue_messages

READ_FOR = 1.5  # seconds of reads while the clients publish, consume and ack


def publish_until(url: str, stop: threading.Event, sent: list[int]) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    n = 0
    while not stop.is_set():
        channel.basic_publish("events", f"order.{n % 7}", b"x" * (n % 50),
                              pika.BasicProperties(headers={"n": n}))
        n += 1
        if n % 100 == 0:
            connection.process_data_events(0)
    sent.append(n)
    connection.close()


def consume_until(url: str, stop: threading.Event, acked: list[int]) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.basic_qos(prefetch_count=20)
    count = 0

    def on_message(ch, method, _properties, _body) -> None:
        nonlocal count
        count += 1
        if count % 3:
            ch.basic_ack(method.delivery_tag)
        else:
            ch.basic_nack(method.delivery_tag, requeue=count % 2 == 0)

    channel.basic_consume("audit", on_message)
    while not stop.is_set():
        connection.process_data_events(0.01)
    acked.append(count)
    connection.close()


def test_reads_from_the_test_thread_during_wire_traffic(broker: Broker, server: Server) -> None:
    ch = broker.connect().channel()
    ch.exchange_declare("events", "topic")
    ch.queue_declare("audit", arguments={"x-max-length": 500})
    ch.queue_declare("prio", arguments={"x-max-priority": 5, "x-max-length": 300})
    ch.queue_bind("audit", "events", "order.*")
    ch.queue_bind("prio", "events", "order.1")
    stop = threading.Event()
    sent: list[int] = []
    consumed: list[int] = []
    threads = [threading.Thread(target=publish_until, args=(server.url, stop, sent)),
               threading.Thread(target=consume_until, args=(server.url, stop, consumed))]
    for thread in threads:
        thread.start()
    reads = 0
    seen: list[int] = []
    try:
        deadline = time.monotonic() + READ_FOR
        while time.monotonic() < deadline:
            routed = sum(1 for decision in broker.trace if decision.queues)  # the live trace
            if len(broker.trace):
                last = broker.trace[-1]
                assert last.explain().startswith("Published to exchange 'events'")
                assert all(e.kind for e in last.history())
                assert all(f.state for f in last.fate())
                assert repr(last).startswith("<RoutingDecision")
            ready = 0
            for name, queue in broker.queues.items():
                ready += len(queue.messages) + len(queue.entries)
                ready += len(queue_messages(broker, name))
            seen.append(routed + ready + len(list(reversed(broker.trace))))
            seen.append(published(broker, exchange="events", routing_key="order.1").call_count)
            reads += 1
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    assert reads > 10
    assert max(seen) > 0
    assert sent
    assert sent[0] > 100
    assert consumed
    assert consumed[0] > 10
