"""Every read the docs show is safe from the test's thread while the listener serves clients,
without the caller taking a lock (issue #10: iterating ``broker.trace`` under load raised
"deque mutated during iteration" hundreds of times in 30 s)."""

from __future__ import annotations

import threading
import time

import pika

from embroker import Broker, MessageEvent
from embroker.server import Server
from embroker.testing import SettleTimeout, published, queue_messages

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


# -- every documented read while clients publish, consume, ack, reject and close ------------------

PUBLISHERS = 2
PER_PUBLISHER = 300
RECONNECT_EVERY = 100  # each publisher closes its connection and opens another this often
KINDS = {"delivered", "got", "acked", "rejected", "requeued", "dead_lettered", "expired",
         "evicted", "delivery_limit", "refused", "purged", "deleted", "lost", "returned",
         "confirm_nack", "truncated"}


def _publisher(url: str, number: int) -> None:
    """Publishes PER_PUBLISHER messages, on a new connection every RECONNECT_EVERY; publisher 0
    waits for a confirm of each."""
    connection = None
    for n in range(PER_PUBLISHER):
        if n % RECONNECT_EVERY == 0:
            if connection is not None:
                connection.close()
            connection = pika.BlockingConnection(pika.URLParameters(url))
            channel = connection.channel()
            if number == 0:
                channel.confirm_delivery()
        channel.basic_publish("events", f"order.{n % 5}", f"{number}-{n}".encode())
    assert connection is not None
    connection.close()


def _consumer(url: str, stop: threading.Event, processed: list[bytes]) -> None:
    """Acks four messages in five and rejects the fifth (dead-lettered), each exactly once."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.basic_qos(prefetch_count=20)

    def on_message(ch, method, _properties, body) -> None:
        processed.append(body)
        if int(body.split(b"-")[1]) % 5:
            ch.basic_ack(method.delivery_tag)
        else:
            ch.basic_reject(method.delivery_tag, requeue=False)

    channel.basic_consume("audit", on_message)
    while not stop.is_set():
        connection.process_data_events(0.01)
    connection.close()


def _deserter(url: str, publishers_done: threading.Event) -> None:
    """Takes up to 10 deliveries, acknowledges none and closes: they go back to the queue."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.basic_qos(prefetch_count=10)
    held: list[int] = []
    channel.basic_consume("audit", lambda _ch, method, _p, _b: held.append(method.delivery_tag))
    while len(held) < 10 and not publishers_done.is_set():
        connection.process_data_events(0.01)
    connection.close()


BOUNCES = 150  # a message nacked back to its queue this many times: its history is truncated


def _bouncer(url: str, stop: threading.Event) -> None:
    """Nacks the one message of queue 'bounce' back to it BOUNCES times, then acks it."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.basic_qos(prefetch_count=1)
    bounced = 0

    def on_message(ch, method, _properties, _body) -> None:
        nonlocal bounced
        if bounced < BOUNCES:
            bounced += 1
            ch.basic_nack(method.delivery_tag, requeue=True)
        else:
            ch.basic_ack(method.delivery_tag)
            stop_bouncing.set()

    stop_bouncing = threading.Event()
    channel.basic_consume("bounce", on_message)
    while not stop_bouncing.is_set() and not stop.is_set():
        connection.process_data_events(0.01)
    connection.close()


def _recorded(events: list[MessageEvent]) -> int:
    """How many events a message ever recorded: those it keeps, and those a truncation let go."""
    if events and events[0].kind == "truncated":
        return len(events) - 1 + (events[0].dropped or 0)
    return len(events)


def _well_formed(text: str) -> bool:
    first, *rest = text.splitlines()
    return first.startswith(("Published to exchange 'events'",
                             "Published to exchange '' (the default exchange)",
                             "Dead-lettered from queue 'audit' (rejected)")) and all(
        line.startswith("  ") for line in rest)


def test_every_documented_read_while_clients_publish_consume_and_close(
        broker: Broker, server: Server) -> None:
    """A test thread reads every accessor the docs show, without holding the broker, while real
    clients publish (with confirms, reconnecting), consume, ack, reject (dead-lettering), nack
    one message back to its queue until its history is truncated many times, and close with
    deliveries unacknowledged: no read fails, counts never go backwards, and every explanation
    is well formed (issue #20). Ends when the work is done, not after a fixed time."""
    ch = broker.connect().channel()
    ch.exchange_declare("events", "topic")
    ch.queue_declare("dead")
    ch.queue_declare("audit", arguments={"x-dead-letter-exchange": "",
                                         "x-dead-letter-routing-key": "dead"})
    ch.queue_bind("audit", "events", "order.*")
    ch.queue_declare("bounce")
    ch.basic_publish("", "bounce", b"again")
    bounce = broker.trace[-1]
    stop, publishers_done, done = threading.Event(), threading.Event(), threading.Event()
    processed: list[bytes] = []
    failures: list[BaseException] = []

    def work() -> None:
        try:
            publishers = [threading.Thread(target=_publisher, args=(server.url, number))
                          for number in range(PUBLISHERS)]
            helpers = [threading.Thread(target=_consumer, args=(server.url, stop, processed)),
                       threading.Thread(target=_deserter, args=(server.url, publishers_done)),
                       threading.Thread(target=_bouncer, args=(server.url, stop))]
            for thread in [*helpers, *publishers]:
                thread.start()
            for thread in publishers:
                thread.join(30)
            publishers_done.set()
            for queue in ("audit", "bounce"):
                deadline = time.monotonic() + 30
                while not stop.is_set():  # (the reader sets it if it fails)
                    try:
                        broker.wait_until_drained(queue, timeout=0.5)
                        break
                    except SettleTimeout:
                        if time.monotonic() > deadline:
                            raise
            stop.set()
            for thread in helpers:
                thread.join(30)
        except BaseException as exc:
            failures.append(exc)
        finally:
            stop.set()
            done.set()

    coordinator = threading.Thread(target=work)
    coordinator.start()
    reads = 0
    last_total = last_published = last_connections_seen = 0
    first_history = bounced = 0
    first = None
    try:
        while not done.is_set() or reads < 5:
            total = broker.trace.total
            assert total >= last_total
            last_total = total
            recorded = _recorded(bounce.history())
            assert recorded >= bounced  # a truncation never shows half-way
            bounced = recorded
            recent = broker.trace[-5:]
            assert len(recent) <= 5
            assert len(broker.trace) >= len(recent)
            for decision in recent:
                assert _well_formed(decision.explain()), decision.explain()
                assert {e.kind for e in decision.history()} <= KINDS
                assert all(fate.state for fate in decision.fate())
                assert repr(decision).startswith("<RoutingDecision")
                assert decision.outcome in ("routed", "unroutable")
            if first is None:
                first = next((d for d in broker.trace if d.exchange == "events"), None)
            if first is not None:
                events = _recorded(first.history())
                assert events >= first_history
                first_history = events
            assert sum(1 for _ in reversed(broker.trace)) <= len(broker.trace)
            for name, queue in broker.queues.items():
                messages = queue.messages
                assert len(queue_messages(broker, name)) >= 0
                with broker.locked():  # several reads that agree
                    assert [e.message for e in queue.entries] == queue.messages
                    assert queue.message_count == len(queue.messages)
                for message in messages[:3]:
                    assert {e.kind for e in broker.history(message)} <= KINDS
                    found = broker.decision_of(message)
                    assert found is None or found.message is message
            count = published(broker, exchange="events").call_count
            assert count >= last_published
            last_published = count
            connections = server.connections
            last_connections_seen = max(last_connections_seen, len(connections))
            for connection in connections:
                assert repr(connection).startswith("<ClientConnection")
                assert isinstance(connection.channels, list)
            assert list(server.errors) == []
            assert server.errors.total == 0
            reads += 1
            # Let go of the GIL once a round: a thread that never does, while it takes the
            # broker's lock over and over, starves the listener (a convoy: the loop wakes for
            # the lock when this thread holds it again).
            time.sleep(0)
    finally:
        stop.set()
        coordinator.join(60)
    assert failures == []
    assert not coordinator.is_alive()
    every = sorted(f"{p}-{n}".encode() for p in range(PUBLISHERS) for n in range(PER_PUBLISHER))
    assert sorted(processed) == every  # each message processed once, deserted ones included
    assert published(broker, exchange="events").call_count == len(every)
    assert broker.queues["dead"].message_count == len(every) // 5
    assert reads >= 5
    assert first_history >= 1
    assert last_connections_seen >= 2
    assert bounced == 3 * BOUNCES + 2  # delivered, rejected, requeued; then delivered, acked
