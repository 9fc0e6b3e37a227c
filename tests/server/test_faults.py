"""Faults one connection at a time (embroker.faults), seen by real pika clients."""

from __future__ import annotations

import time

import amqpstorm
import pika
import pytest
from pika.exceptions import (
    AMQPConnectionError,
    ChannelClosedByBroker,
    ConnectionClosedByBroker,
    NackError,
)

from embroker import Broker
from embroker.faults import Faults
from embroker.server import Server


def connect(server: Server, name: str, heartbeat: int | None = None) -> pika.BlockingConnection:
    params = pika.URLParameters(server.url)
    params.client_properties = {"connection_name": name}
    if heartbeat is not None:
        params.heartbeat = heartbeat
    return pika.BlockingConnection(params)


def pump(connection: pika.BlockingConnection, seconds: float) -> None:
    """Let pika read for up to ``seconds`` (it raises when the connection drops)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        connection.process_data_events(0.05)


def test_connections_are_listed_with_what_the_client_said(broker: Broker, server: Server) -> None:
    a = connect(server, "billing-worker")
    b = connect(server, "web")
    broker.settle()
    names = [c.connection_name for c in server.connections]
    assert names == ["billing-worker", "web"]
    billing = server.connection("billing-worker")
    assert billing.product == "Pika Python Client Library"
    assert billing.client_properties["connection_name"] == "billing-worker"
    assert (billing.user, billing.vhost, billing.state.name) == ("guest", "/", "OPEN")
    b.channel()
    assert server.connection("web").channels == [1]
    assert repr(billing).startswith("<ClientConnection 'billing-worker' from 127.0.0.1:")
    with pytest.raises(LookupError, match=r"no connection named 'nope'; the connections are "
                                          r"\['billing-worker', 'web'\]"):
        server.connection("nope")
    with pytest.raises(LookupError, match="2 open connections"):
        server.connection()
    a.close()
    b.close()


def test_kill_drops_the_socket_and_requeues_what_was_unacked(broker: Broker,
                                                            server: Server) -> None:
    conn = connect(server, "worker")
    ch = conn.channel()
    ch.queue_declare("jobs")
    ch.basic_publish("", "jobs", b"job")
    method, _props, _body = ch.basic_get("jobs")
    assert method is not None
    Faults(broker, server).kill_connection("worker")
    with pytest.raises(AMQPConnectionError):
        pump(conn, 10)
    assert broker.queues["jobs"].message_count == 1
    events = broker.trace[-1].history()
    assert [e.kind for e in events] == ["got", "requeued"]
    assert events[-1].cause == "connection closed"
    assert server.connections == []


def test_close_connection_with_a_chosen_code(broker: Broker, server: Server) -> None:
    conn = connect(server, "app")
    Faults(broker, server).close_connection(320, "node is going down for maintenance")
    with pytest.raises(ConnectionClosedByBroker) as err:
        pump(conn, 10)
    assert err.value.reply_code == 320
    assert err.value.reply_text == "CONNECTION_FORCED - node is going down for maintenance"
    with pytest.raises(ValueError, match="channel exception"):
        Faults(broker, server).close_connection(404, "x")


def test_close_one_channel_with_a_channel_error(broker: Broker, server: Server) -> None:
    conn = connect(server, "app")
    one, two = conn.channel(), conn.channel()
    Faults(broker, server).close_channel(1, 406, "PRECONDITION_FAILED - simulated")
    with pytest.raises(ChannelClosedByBroker) as err:
        one.queue_declare("q")
    assert err.value.reply_code == 406
    assert err.value.reply_text == "PRECONDITION_FAILED - PRECONDITION_FAILED - simulated"
    two.queue_declare("q")  # the other channel goes on
    with pytest.raises(LookupError, match="no open channel 7"):
        Faults(broker, server).close_channel(7)
    conn.close()


def test_cancel_a_consumer_from_the_broker(broker: Broker, server: Server) -> None:
    conn = connect(server, "app")
    ch = conn.channel()
    ch.queue_declare("jobs")
    cancelled = []
    tag = ch.basic_consume("jobs", lambda *a: None)
    ch.add_on_cancel_callback(lambda frame: cancelled.append(frame.method.consumer_tag))
    assert Faults(broker, server).cancel_consumer(queue="jobs") == [tag]
    deadline = time.monotonic() + 10
    while not cancelled and time.monotonic() < deadline:
        conn.process_data_events(0.05)
    assert cancelled == [tag]
    assert broker.queues["jobs"].consumer_count == 0
    with pytest.raises(LookupError, match="no consumer matched"):
        Faults(broker, server).cancel_consumer("nope")
    conn.close()


def test_nack_the_next_publishes(broker: Broker, server: Server) -> None:
    conn = connect(server, "publisher")
    ch = conn.channel()
    ch.queue_declare("orders")
    ch.confirm_delivery()
    fault = Faults(broker, server).nack_publishes(1, queue="orders")
    with pytest.raises(NackError):
        ch.basic_publish("", "orders", b"first")
    ch.basic_publish("", "orders", b"again")  # the fault is spent: acked
    assert fault.nacked == 1
    assert [m.body for m in broker.queues["orders"].messages] == [b"again"]
    first = broker.trace[-2]
    assert first.outcome == "nacked"
    assert first.nacked
    assert "refused by queue 'orders': a nack injected by a test" in first.explain()
    conn.close()


def test_stall_lets_the_clients_heartbeat_time_out(broker: Broker, server: Server) -> None:
    # amqpstorm checks for the broker's heartbeats every interval (pika only every 5 s more)
    conn = amqpstorm.Connection("127.0.0.1", "guest", "guest", port=server.port, heartbeat=1,
                                client_properties={"connection_name": "slow"})
    broker.settle()
    Faults(broker, server).stall(3.0, "slow")
    started = time.monotonic()

    def poll() -> None:
        while time.monotonic() - started < 3:
            conn.check_for_errors()
            time.sleep(0.05)

    with pytest.raises(amqpstorm.AMQPConnectionError, match="no heartbeat or data received"):
        poll()
    conn.close()


def test_drop_on_delivery_is_a_consumer_that_crashes_mid_message(broker: Broker,
                                                                  server: Server) -> None:
    crashing = connect(server, "crashing")
    ch = crashing.channel()
    ch.queue_declare("jobs")
    ch.basic_qos(prefetch_count=1)
    got: list[bytes] = []
    ch.basic_consume("jobs", lambda c, m, p, b: got.append(b))
    Faults(broker, server).drop_on_delivery(lambda message: message.body == b"poison")
    ch.basic_publish("", "jobs", b"poison")
    with pytest.raises(AMQPConnectionError):
        pump(crashing, 10)
    assert got in ([], [b"poison"])  # it may or may not have read it before the drop
    healthy = connect(server, "healthy")
    method, _props, body = healthy.channel().basic_get("jobs", auto_ack=True)
    assert body == b"poison"
    assert method.redelivered
    history = broker.trace[-1].history()
    assert [e.kind for e in history] == ["delivered", "requeued", "got"]
    healthy.close()
