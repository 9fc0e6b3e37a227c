"""kombu's embroker:// transport: py-amqp's protocol code over an in-memory link."""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any

import kombu
import pytest
from kombu import Exchange, Queue

from embroker import Broker, ManualClock
from embroker.faults import Faults
from embroker.memory import Deadlock
from embroker.testing import advance


@pytest.fixture
def clocked() -> Broker:
    return Broker(clock=ManualClock())


def test_simple_queue_round_trip_without_a_socket(clocked: Broker,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("a socket was made")
    monkeypatch.setattr(socket, "socket", refuse)
    threads = threading.active_count()
    with kombu.Connection(clocked.kombu_url) as connection:
        assert connection.transport.driver_name == "embroker"
        queue = connection.SimpleQueue("jobs")
        queue.put({"n": 1})
        # read by the broker as it was written (the producer never reads)
        assert [m.body for m in clocked.queues["jobs"].messages] == [b'{"n": 1}']
        message = queue.get(timeout=1)
        assert message.payload == {"n": 1}
        message.ack()
        with pytest.raises(queue.Empty):
            queue.get(timeout=1)  # at once: the broker's clock is virtual and nothing is there
        queue.close()
    assert threading.active_count() == threads
    assert clocked.connections == {}
    assert clocked.clock.monotonic() == 0.0


def test_consumer_drain_events_and_topic_routing(clocked: Broker) -> None:
    events = Exchange("events", type="topic")
    audit = Queue("audit", events, routing_key="order.*")
    got: list[Any] = []

    def on_message(body: Any, message: Any) -> None:
        got.append(body)
        message.ack()

    with kombu.Connection(clocked.kombu_url) as connection, \
            connection.Consumer([audit], callbacks=[on_message]):
        producer = connection.Producer()
        producer.publish({"id": 1}, exchange=events, routing_key="order.created")
        producer.publish({"id": 2}, exchange=events, routing_key="user.created")
        # (py-amqp reads what came in as it publishes: the delivery is handled already)
        with contextlib.suppress(TimeoutError):
            connection.drain_events(timeout=1)
        with pytest.raises(TimeoutError):
            connection.drain_events(timeout=1)
    assert got == [{"id": 1}]
    assert [d.outcome for d in clocked.trace] == ["routed", "unroutable"]


def test_waiting_for_ever_is_told(clocked: Broker) -> None:
    with kombu.Connection(clocked.kombu_url) as connection, \
            connection.Consumer([Queue("empty")]), pytest.raises(Deadlock):
        connection.drain_events()


def test_a_killed_connection_is_a_connection_error(clocked: Broker) -> None:
    connection = kombu.Connection(clocked.kombu_url)
    connection.connect()
    queue = connection.SimpleQueue("q")
    queue.put("x")
    Faults(clocked).kill_connection()
    with pytest.raises(connection.connection_errors):
        queue.get(timeout=1)
    connection.release()
    assert clocked.connections == {}


def test_an_unknown_broker_is_refused() -> None:
    broker = Broker()
    url = broker.kombu_url.replace("embroker-memory-", "embroker-memory-0")
    with pytest.raises(OSError, match="names no embroker broker"):
        kombu.Connection(url).transport.establish_connection()  # (no retries)


def kombu_scenario() -> list[str]:
    broker = Broker(clock=ManualClock())
    events: list[str] = []
    with kombu.Connection(broker.kombu_url) as connection:
        queue = Queue("work", queue_arguments={"x-message-ttl": 10_000})

        def on_message(body: Any, message: Any) -> None:
            events.append(f"got {body} at {broker.clock.monotonic():g}")
            message.ack()

        producer = connection.Producer()
        with connection.Consumer([queue], callbacks=[on_message]):
            for n in range(3):
                producer.publish(n, routing_key="work")
                with contextlib.suppress(TimeoutError):
                    connection.drain_events(timeout=1)
        producer.publish("late", routing_key="work")
        broker.manual_clock.advance(10)  # expires unread
    events.extend(f"{d.routing_key} {d.outcome}" for d in broker.trace)
    events.extend(f"{q.name}: {q.message_count}" for q in broker.queues.values())
    return events


def test_the_same_test_twice_gives_the_same_event_order() -> None:
    first, second = kombu_scenario(), kombu_scenario()
    assert first == second
    assert first[:3] == ["got 0 at 0", "got 1 at 0", "got 2 at 0"]
    assert first[-1] == "work: 0"


def test_waiting_for_ever_is_told_while_unrelated_threads_run(clocked: Broker) -> None:
    """Threads that run no in-memory client of the broker (a Spark session's, a library's
    timer) cannot give the waiting client anything: the wait is still a deadlock (it used to
    count every thread and wait for ever when another one ran)."""
    stop = threading.Event()
    unrelated = threading.Thread(target=stop.wait, daemon=True)
    unrelated.start()
    try:
        with kombu.Connection(clocked.kombu_url) as connection, \
                connection.Consumer([Queue("empty")]), pytest.raises(Deadlock):
            connection.drain_events()
    finally:
        stop.set()
        unrelated.join()


def test_a_connection_with_heartbeats_survives_the_test_moving_the_clock(
        clocked: Broker) -> None:
    with kombu.Connection(clocked.kombu_url, heartbeat=10) as connection:
        queue = connection.SimpleQueue("jobs")
        queue.put({"n": 1})
        assert connection.connection.heartbeat == 10
        advance(clocked, 3600)
        queue.put({"n": 2})
        assert clocked.queues["jobs"].message_count == 2
        queue.close()


def test_a_client_that_reads_and_never_sends_heartbeats_is_dropped(clocked: Broker) -> None:
    """py-amqp sends heartbeats only when the application calls ``heartbeat_check`` (on real
    time): a consumer that keeps reading while the broker's clock passes two intervals, and
    sends nothing, is dropped as RabbitMQ drops it."""
    def read_for_a_while(connection: kombu.Connection) -> None:
        for _ in range(10):
            advance(clocked, 5)
            with contextlib.suppress(TimeoutError):
                connection.drain_events(timeout=1)

    with kombu.Connection(clocked.kombu_url, heartbeat=10) as connection, \
            connection.Consumer([Queue("empty")]):
        with pytest.raises(connection.connection_errors,
                           match="501 FRAME_ERROR - missed heartbeats from client, "
                                 "timeout: 10s"):
            read_for_a_while(connection)
        assert clocked.clock.monotonic() == 25
    assert clocked.connections == {}
