"""pika's own BlockingConnection and SelectConnection over an in-memory link (embroker.memory)."""

from __future__ import annotations

import socket
import threading
from typing import Any

import pika
import pytest
from pika.exceptions import (
    AMQPHeartbeatTimeout,
    ChannelClosedByBroker,
    ConnectionClosedByBroker,
    NackError,
    ProbableAuthenticationError,
    StreamLostError,
    UnroutableError,
)

from embroker import Broker, ManualClock
from embroker.faults import Faults
from embroker.memory import Deadlock, MemoryConnection
from embroker.memory.pika import BlockingConnection, SelectConnection
from embroker.testing import advance


@pytest.fixture
def clocked() -> Broker:
    return Broker(clock=ManualClock())


@pytest.fixture
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any socket made during the test fails it (pika's own ioloop makes a socketpair)."""
    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("a socket was made")
    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "socketpair", refuse)


def named(name: str, **kwargs: Any) -> pika.ConnectionParameters:
    return pika.ConnectionParameters(client_properties={"connection_name": name}, **kwargs)


def redelivered(broker: Broker, queue: str) -> bool:
    with broker.pika_connection() as connection:
        method, _props, _body = connection.channel().basic_get(queue, auto_ack=True)
        return bool(method.redelivered)


def test_publish_and_get_without_a_socket_or_a_thread(clocked: Broker, no_sockets: None) -> None:
    threads = threading.active_count()
    connection = clocked.pika_connection()
    assert isinstance(connection, pika.BlockingConnection)
    channel = connection.channel()
    channel.queue_declare("jobs")
    channel.basic_publish("", "jobs", b"hello", pika.BasicProperties(content_type="text/plain"))
    assert [m.body for m in clocked.queues["jobs"].messages] == [b"hello"]
    method, properties, body = channel.basic_get("jobs", auto_ack=True)
    assert (method.routing_key, properties.content_type, body) == ("jobs", "text/plain", b"hello")
    assert threading.active_count() == threads
    connection.close()
    assert clocked.connections == {}
    assert clocked.memory_connections == []
    assert clocked.clock.monotonic() == 0.0  # nothing waited


def test_consume_and_ack(clocked: Broker) -> None:
    connection = clocked.pika_connection()
    channel = connection.channel()
    channel.queue_declare("jobs")
    channel.basic_qos(prefetch_count=2)
    for n in range(5):
        channel.basic_publish("", "jobs", str(n).encode())
    got: list[bytes] = []

    def on_message(ch: Any, method: Any, _props: Any, body: bytes) -> None:
        got.append(body)
        ch.basic_ack(method.delivery_tag)
        if len(got) == 5:
            ch.stop_consuming()

    channel.basic_consume("jobs", on_message)
    channel.start_consuming()
    assert got == [b"0", b"1", b"2", b"3", b"4"]
    assert clocked.queues["jobs"].message_count == 0
    assert clocked.queues["jobs"].unacked == 0
    connection.close()


def test_unacked_deliveries_go_back_when_the_connection_closes(clocked: Broker) -> None:
    connection = clocked.pika_connection()
    channel = connection.channel()
    channel.queue_declare("jobs")
    channel.queue_declare("", exclusive=True)
    channel.basic_publish("", "jobs", b"x")
    assert channel.basic_get("jobs")[2] == b"x"
    assert clocked.queues["jobs"].unacked == 1
    connection.close()
    assert clocked.queues["jobs"].unacked == 0
    assert redelivered(clocked, "jobs")
    assert list(clocked.vhost("/").queues) == ["jobs"]  # the exclusive queue went


def test_confirms_acks_nacks_and_returns(clocked: Broker) -> None:
    connection = clocked.pika_connection()
    channel = connection.channel()
    channel.confirm_delivery()
    channel.queue_declare("orders")
    channel.basic_publish("", "orders", b"1")  # acked: returns
    Faults(clocked).nack_publishes(1, queue="orders")
    with pytest.raises(NackError):
        channel.basic_publish("", "orders", b"2")
    with pytest.raises(UnroutableError):
        channel.basic_publish("", "nowhere", b"3", mandatory=True)
    assert [m.body for m in clocked.queues["orders"].messages] == [b"1"]
    assert [d.outcome for d in clocked.trace][-3:] == ["routed", "nacked", "returned"]
    connection.close()


def test_channel_errors_are_pikas(clocked: Broker) -> None:
    connection = clocked.pika_connection()
    channel = connection.channel()
    with pytest.raises(ChannelClosedByBroker) as caught:
        channel.queue_declare("missing", passive=True)
    assert caught.value.reply_code == 404
    assert "no queue 'missing'" in caught.value.reply_text
    assert connection.is_open
    connection.close()


def test_wrong_password_is_refused_as_by_rabbitmq(clocked: Broker) -> None:
    with pytest.raises(ProbableAuthenticationError):
        clocked.pika_connection(pika.ConnectionParameters(
            credentials=pika.PlainCredentials("guest", "wrong")))
    assert clocked.connections == {}
    assert clocked.memory_connections == []


def test_heartbeats_run_on_the_virtual_clock(clocked: Broker) -> None:
    connection = clocked.pika_connection(heartbeat=10)
    channel = connection.channel()
    connection.sleep(300)  # pika reads and sends heartbeats meanwhile: no real time passes
    assert clocked.clock.monotonic() == 300.0
    assert connection.is_open
    channel.queue_declare("still-here")
    connection.close()


def test_an_idle_connection_survives_the_test_moving_the_clock(clocked: Broker) -> None:
    """The test moving the clock (``advance``) is not the client's silence: the connection is
    not running while the test does it, as no real time passes for it (issue 44)."""
    connection = clocked.pika_connection(heartbeat=10)
    channel = connection.channel()
    channel.queue_declare("jobs")
    advance(clocked, 3600)
    assert [c.connection_name for c in Faults(clocked).connections] == [None]
    channel.basic_publish("", "jobs", b"an hour later")
    assert clocked.queues["jobs"].message_count == 1
    connection.sleep(60)  # and its heartbeats go on as they did: pika's and the broker's
    assert connection.is_open
    connection.close()


def test_a_connection_idle_while_another_one_waits_survives(clocked: Broker) -> None:
    """Another client's wait moves the clock as ``advance`` does: it is not this one's
    silence either."""
    waiting = clocked.pika_connection(heartbeat=10)
    idle = clocked.pika_connection(heartbeat=10)
    idle_channel = idle.channel()
    waiting.sleep(300)
    idle_channel.queue_declare("still-here")
    waiting.close()
    idle.close()


def test_a_worker_thread_s_connection_survives_the_test_moving_the_clock(
        clocked: Broker) -> None:
    ready, done = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            connection = clocked.pika_connection(named("worker"), heartbeat=10)
            channel = connection.channel()
            ready.set()
            done.wait(10)
            channel.queue_declare("from-the-worker")
            connection.close()
        except BaseException as exc:  # (reported by the test's thread)
            errors.append(exc)
            ready.set()

    thread = threading.Thread(target=worker)
    thread.start()
    assert ready.wait(10)
    advance(clocked, 3600)
    done.set()
    thread.join(10)
    assert errors == []
    assert "from-the-worker" in clocked.queues


def test_time_limits_and_ttl_on_the_virtual_clock(clocked: Broker) -> None:
    connection = clocked.pika_connection()
    channel = connection.channel()
    channel.queue_declare("short", arguments={"x-message-ttl": 5000})
    channel.basic_publish("", "short", b"x")
    connection.process_data_events(time_limit=4.9)
    assert clocked.queues["short"].message_count == 1
    connection.process_data_events(time_limit=0.1)
    assert clocked.queues["short"].message_count == 0
    assert clocked.clock.monotonic() == pytest.approx(5.0)
    connection.close()


def test_a_consumer_that_waits_for_ever_is_told(clocked: Broker) -> None:
    connection = clocked.pika_connection()
    channel = connection.channel()
    channel.queue_declare("empty")
    channel.basic_consume("empty", lambda *_: None)
    with pytest.raises(Deadlock, match="nothing but heartbeats"):
        channel.start_consuming()


def test_connection_blocked_and_unblocked(clocked: Broker) -> None:
    events: list[str] = []
    connection = clocked.pika_connection()
    connection.add_on_connection_blocked_callback(lambda _c, m: events.append(m.method.reason))
    connection.add_on_connection_unblocked_callback(lambda _c, _m: events.append("unblocked"))
    channel = connection.channel()
    channel.queue_declare("q")
    clocked.block_publishers("low on memory")
    connection.process_data_events()
    assert events == []  # (told as it publishes, as RabbitMQ's reader)
    channel.basic_publish("", "q", b"held")
    connection.process_data_events()
    assert clocked.queues["q"].message_count == 0
    clocked.unblock_publishers()
    connection.process_data_events()
    assert events == ["low on memory", "unblocked"]
    assert clocked.queues["q"].message_count == 1
    connection.close()


def test_select_connection_on_its_ioloop(clocked: Broker, no_sockets: None) -> None:
    log: list[str] = []

    def on_open(connection: Any) -> None:
        log.append("open")
        connection.channel(on_open_callback=on_channel)

    def on_channel(channel: Any) -> None:
        log.append("channel")
        channel.queue_declare("q", callback=lambda _f: on_declared(channel))

    def on_declared(channel: Any) -> None:
        log.append("declared")
        channel.basic_publish("", "q", b"m")
        channel.basic_consume("q", lambda ch, method, _p, body: on_message(ch, method, body))

    def on_message(channel: Any, method: Any, body: bytes) -> None:
        log.append(f"got {body.decode()}")
        channel.basic_ack(method.delivery_tag)
        channel.connection.close()

    def on_closed(connection: Any, _reason: BaseException) -> None:
        log.append("closed")
        connection.ioloop.stop()

    connection = SelectConnection(clocked, pika.ConnectionParameters(), on_open_callback=on_open,
                                  on_close_callback=on_closed)
    assert isinstance(connection, pika.SelectConnection)
    connection.ioloop.start()
    assert log == ["open", "channel", "declared", "got m", "closed"]
    assert clocked.queues["q"].message_count == 0
    assert clocked.connections == {}


def test_settle_reads_what_a_select_client_wrote(clocked: Broker) -> None:
    opened: list[Any] = []
    connection = SelectConnection(clocked, on_open_callback=opened.append)
    while not opened:
        connection.ioloop.poll()
    channel = connection.channel()
    connection.ioloop.poll()
    connection.ioloop.poll()
    channel.basic_publish("", "", b"nobody reads this")  # written, not read by the broker yet
    assert len(clocked.trace) == 0
    clocked.settle()  # the broker side runs here: the publish is routed
    assert len(clocked.trace) == 1
    connection.close()
    connection.ioloop.poll()


def scenario(broker: Broker) -> list[str]:
    """One run of a small application: its event order, as the client and the broker saw it."""
    events: list[str] = []
    connection = broker.pika_connection(named("worker"), heartbeat=5)
    channel = connection.channel()
    channel.confirm_delivery()
    channel.queue_declare("work", arguments={"x-dead-letter-exchange": "",
                                             "x-dead-letter-routing-key": "dead"})
    channel.queue_declare("dead")
    for n in range(4):
        channel.basic_publish("", "work", f"job {n}".encode())

    def on_message(ch: Any, method: Any, _props: Any, body: bytes) -> None:
        events.append(f"client: {body.decode()} tag {method.delivery_tag} at "
                      f"{broker.clock.monotonic():g}")
        if body == b"job 2":
            ch.basic_nack(method.delivery_tag, requeue=False)
        else:
            ch.basic_ack(method.delivery_tag)
        if method.delivery_tag == 4:
            ch.stop_consuming()

    channel.basic_qos(prefetch_count=1)
    channel.basic_consume("work", on_message)
    connection.sleep(12)
    channel.start_consuming()
    connection.close()
    for decision in broker.trace:
        events.append(f"broker: {decision.routing_key} -> {decision.queues} {decision.outcome}")
    for message in broker.queues["dead"].messages:
        events.extend(f"history: {event}" for event in broker.history(message))
    return events


def test_the_same_test_twice_gives_the_same_event_order() -> None:
    first = scenario(Broker(clock=ManualClock()))
    second = scenario(Broker(clock=ManualClock()))
    assert first == second
    assert any(e.startswith("client: job 3 tag 4") for e in first)
    assert any("dead" in e for e in first if e.startswith("broker"))


def test_faults_on_an_in_memory_connection(clocked: Broker) -> None:
    faults = Faults(clocked)
    a = clocked.pika_connection(named("a"))
    b = clocked.pika_connection(named("b"))
    channel_a = a.channel()
    channel_a.queue_declare("jobs")
    channel_a.basic_publish("", "jobs", b"x")
    channel_a.basic_get("jobs")
    listed = faults.connections
    assert [c.connection_name for c in listed] == ["a", "b"]
    assert all(isinstance(c, MemoryConnection) for c in listed)
    assert listed[0].channels == [1]
    # kill: no connection.close; the delivery goes back to the queue
    faults.kill_connection("a")
    assert clocked.queues["jobs"].message_count == 1
    assert clocked.queues["jobs"].unacked == 0
    with pytest.raises(StreamLostError):
        a.process_data_events()
    # close a channel, then the connection, from the broker's side
    channel_b = b.channel()
    faults.close_channel(1, 406, "boom", name="b")
    with pytest.raises(ChannelClosedByBroker, match="boom"):
        channel_b.queue_declare("jobs", passive=True)
    faults.close_connection(320, "maintenance", name="b")
    with pytest.raises(ConnectionClosedByBroker, match="maintenance"):
        b.channel()
    assert clocked.connections == {}


def test_stall_holds_the_broker_output_on_its_clock(clocked: Broker) -> None:
    connection = clocked.pika_connection(named("slow"), heartbeat=10)
    channel = connection.channel()
    Faults(clocked).stall(60, name="slow")
    # pika hears nothing for 60 s of the broker's clock: its heartbeat check gives up.
    with pytest.raises(AMQPHeartbeatTimeout):
        channel.queue_declare("q")
    assert clocked.clock.monotonic() < 60


def test_tcp_and_in_memory_clients_on_one_broker() -> None:
    broker = Broker()
    with broker.serve() as server:
        tcp = pika.BlockingConnection(pika.URLParameters(server.url))
        memory = broker.pika_connection()
        memory_channel = memory.channel()
        memory_channel.queue_declare("shared")
        tcp.channel().basic_publish("", "shared", b"from tcp")
        broker.settle()
        got: list[bytes] = []

        def on_message(ch: Any, method: Any, _p: Any, body: bytes) -> None:
            got.append(body)
            ch.basic_ack(method.delivery_tag)
            ch.stop_consuming()

        memory_channel.basic_consume("shared", on_message)
        memory_channel.start_consuming()
        assert got == [b"from tcp"]
        assert len(server.connections) == 1
        assert len(broker.memory_connections) == 1
        tcp.close()
        memory.close()


def test_the_memory_pika_fixture(memory_pika: pika.BlockingConnection, broker: Broker) -> None:
    memory_pika.channel().queue_declare("from-fixture")
    assert "from-fixture" in broker.queues


def test_blocking_connection_is_pikas_own(clocked: Broker) -> None:
    connection = BlockingConnection(clocked, [named("listed")])
    assert isinstance(connection, pika.BlockingConnection)
    assert clocked.memory_connections[0].connection_name == "listed"
    assert connection.link.conn.client_properties["product"] == "Pika Python Client Library"
    connection.close()


def test_strict_mode_sees_an_in_memory_connection_left_open(clocked: Broker) -> None:
    from embroker.testing import leaks

    connection = clocked.pika_connection(named("forgotten"))
    channel = connection.channel()
    channel.queue_declare("jobs")
    channel.basic_publish("", "jobs", b"x")
    channel.basic_get("jobs")  # not acknowledged
    found = leaks(clocked)
    assert any("in-memory client connection left open" in p and "forgotten" in p for p in found)
    assert any("1 unacknowledged deliver" in p for p in found)
    connection.close()
    assert leaks(clocked) == []


def test_drop_on_delivery_ends_the_stream_after_the_delivery(clocked: Broker) -> None:
    crashing = clocked.pika_connection(named("crashing"))
    channel = crashing.channel()
    channel.queue_declare("jobs")
    for body in (b"ok", b"poison"):
        channel.basic_publish("", "jobs", body)
    Faults(clocked).drop_on_delivery(lambda m: m.body == b"poison")
    seen: list[bytes] = []

    def on_message(ch: Any, method: Any, _p: Any, body: bytes) -> None:
        seen.append(body)
        if body == b"ok":
            ch.basic_ack(method.delivery_tag)

    channel.basic_qos(prefetch_count=1)  # "ok" is acknowledged before "poison" comes
    channel.basic_consume("jobs", on_message)
    with pytest.raises(StreamLostError, match="after a delivery"):
        channel.start_consuming()
    assert seen == [b"ok", b"poison"]  # the poison message was read before the drop
    assert clocked.queues["jobs"].message_count == 1  # and went back to the queue
    survivor = clocked.pika_connection()
    method, _props, body = survivor.channel().basic_get("jobs", auto_ack=True)
    assert (body, method.redelivered) == (b"poison", True)
    survivor.close()


def test_consume_inactivity_timeout_on_the_virtual_clock(clocked: Broker) -> None:
    connection = clocked.pika_connection(heartbeat=0)
    channel = connection.channel()
    channel.queue_declare("work")
    channel.queue_declare("retry", arguments={"x-message-ttl": 30_000,
                                              "x-dead-letter-exchange": "",
                                              "x-dead-letter-routing-key": "work"})
    channel.basic_publish("", "retry", b"again")
    seen: list[tuple[bytes | None, float]] = []
    for method, _props, body in channel.consume("work", inactivity_timeout=60):
        seen.append((body, clocked.clock.monotonic()))
        if method is None:
            break
        channel.basic_ack(method.delivery_tag)
    channel.cancel()
    # dead-lettered back to "work" at t=30, then 60 s of nothing
    assert seen == [(b"again", 30.0), (None, 90.0)]
    connection.close()


def test_a_worker_thread_waits_for_the_test_to_move_the_clock(clocked: Broker) -> None:
    with clocked.connect() as setup:
        setup.channel().queue_declare("jobs")
    connection = clocked.pika_connection()
    channel = connection.channel()
    got: list[tuple[bytes, float]] = []

    def on_message(ch: Any, method: Any, _p: Any, body: bytes) -> None:
        got.append((body, clocked.clock.monotonic()))
        ch.basic_ack(method.delivery_tag)
        ch.stop_consuming()

    channel.basic_consume("jobs", on_message)
    worker = threading.Thread(target=channel.start_consuming)
    worker.start()
    clocked.manual_clock.advance(7)  # the test moves time; the worker does not
    clocked.connect().channel().basic_publish("", "jobs", b"from the test")
    worker.join(10)
    assert not worker.is_alive()
    assert got == [(b"from the test", 7.0)]
    connection.close()
