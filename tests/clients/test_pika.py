"""pika (BlockingConnection and SelectConnection) against embroker's listener."""

from __future__ import annotations

import socket
import threading
import time

import pika
import pytest
from pika.exceptions import (
    ChannelClosedByBroker,
    ConnectionClosedByBroker,
    ProbableAccessDeniedError,
    ProbableAuthenticationError,
)

from embroker import Broker
from embroker.server import Server

from .conftest import raw_amqp_socket, wait_until


def connect(server: Server, **kwargs: object) -> pika.BlockingConnection:
    params = pika.URLParameters(server.url)
    for key, value in kwargs.items():
        setattr(params, key, value)
    return pika.BlockingConnection(params)


def test_declare_publish_get_consume_ack(server: Server, broker: Broker) -> None:
    conn = connect(server)
    ch = conn.channel()
    ch.exchange_declare("events", "topic")
    ch.queue_declare("audit")
    ch.queue_bind("audit", "events", "order.*")
    props = pika.BasicProperties(content_type="application/json", headers={"n": 1, "s": "x"},
                                 delivery_mode=2, priority=3, correlation_id="c", reply_to="r",
                                 message_id="m", timestamp=1700000000, type="t", app_id="a")
    for i in range(3):
        ch.basic_publish("events", "order.created", b"%d" % i, props)
    method, got_props, body = ch.basic_get("audit")
    assert (method.delivery_tag, method.message_count, body) == (1, 2, b"0")
    assert got_props.headers == {"n": 1, "s": "x"}
    assert (got_props.content_type, got_props.timestamp, got_props.priority) == (
        "application/json", 1700000000, 3)
    ch.basic_ack(method.delivery_tag)
    seen: list[bytes] = []

    def on_message(channel, deliver, properties, body):
        seen.append(body)
        channel.basic_ack(deliver.delivery_tag)
        if len(seen) == 2:
            channel.stop_consuming()

    ch.basic_qos(prefetch_count=1)
    ch.basic_consume("audit", on_message)
    ch.start_consuming()
    assert seen == [b"1", b"2"]
    conn.close()
    assert broker.trace[-1].queues == ("audit",)
    assert broker.queues["audit"].message_count == 0


def test_publisher_confirms_and_mandatory_returns(server: Server) -> None:
    conn = connect(server)
    ch = conn.channel()
    ch.confirm_delivery()
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"ok")  # BlockingChannel raises if not acked
    with pytest.raises(pika.exceptions.UnroutableError):
        ch.basic_publish("", "nowhere", b"lost", mandatory=True)
    conn.close()


def test_transaction_commit_and_rollback(server: Server, broker: Broker) -> None:
    conn = connect(server)
    ch = conn.channel()
    ch.queue_declare("q")
    ch.tx_select()
    ch.basic_publish("", "q", b"1")
    ch.tx_rollback()
    ch.basic_publish("", "q", b"2")
    ch.tx_commit()
    assert [m.body for m in broker.queues["q"].messages] == [b"2"]
    conn.close()


def test_channel_errors_close_only_their_channel(server: Server) -> None:
    conn = connect(server)
    ch = conn.channel()
    with pytest.raises(ChannelClosedByBroker) as err:
        ch.queue_declare("missing", passive=True)
    assert (err.value.reply_code, err.value.reply_text) == (
        404, "NOT_FOUND - no queue 'missing' in vhost '/'")
    ch = conn.channel()
    ch.exchange_declare("x", "direct")
    with pytest.raises(ChannelClosedByBroker) as err:
        ch.exchange_declare("x", "fanout")
    assert err.value.reply_code == 406
    ch = conn.channel()
    ch.queue_declare("q")  # the connection carries on
    conn.close()


def test_connection_error_closes_the_connection(server: Server) -> None:
    conn = connect(server)
    ch = conn.channel()
    with pytest.raises(ConnectionClosedByBroker) as err:
        ch.exchange_declare("x", "no-such-type")
    assert err.value.reply_code == 503
    assert not conn.is_open
    connect(server).close()  # and the broker goes on


def test_bad_password_is_access_refused(server: Server) -> None:
    params = pika.URLParameters(server.url.replace("guest:guest", "guest:wrong"))
    with pytest.raises(ProbableAuthenticationError) as err:
        pika.BlockingConnection(params)
    assert "ACCESS_REFUSED" in str(err.value)


def test_unknown_vhost_is_not_allowed(server: Server) -> None:
    with pytest.raises(ProbableAccessDeniedError) as err:
        pika.BlockingConnection(pika.URLParameters(server.url + "nope"))
    assert "(530) 'NOT_ALLOWED - vhost nope not found'" in str(err.value)


def test_large_message_is_split_by_frame_max(server: Server) -> None:
    conn = connect(server, frame_max=4096)
    ch = conn.channel()
    ch.queue_declare("big")
    body = bytes(range(256)) * 2000
    ch.basic_publish("", "big", body)
    _, _, got = ch.basic_get("big", auto_ack=True)
    assert got == body
    conn.close()


def test_select_connection(server: Server) -> None:
    received: list[bytes] = []

    def on_open(connection):
        connection.channel(on_open_callback=on_channel)

    def on_channel(channel):
        def on_declared(_frame):
            channel.basic_consume("sq", on_message)
            channel.basic_publish("", "sq", b"async")

        def on_message(ch, deliver, props, body):
            received.append(body)
            ch.basic_ack(deliver.delivery_tag)
            ch.connection.close()

        channel.queue_declare("sq", callback=on_declared)

    conn = pika.SelectConnection(pika.URLParameters(server.url), on_open_callback=on_open,
                                 on_close_callback=lambda c, _reason: c.ioloop.stop())
    timer = threading.Timer(5, conn.ioloop.stop)
    timer.start()
    try:
        conn.ioloop.start()
    finally:
        timer.cancel()
    assert received == [b"async"]


def test_wire_and_in_process_share_the_model(server: Server, broker: Broker) -> None:
    conn = connect(server)
    ch = conn.channel()
    local = broker.connect().channel()
    local.queue_declare("shared")
    ch.basic_publish("", "shared", b"from pika")
    conn.process_data_events(0)
    ch.queue_declare("shared", passive=True)  # a round trip: the publish has been handled
    assert local.basic_get("shared", auto_ack=True).body == b"from pika"
    got: list[bytes] = []
    ch.basic_consume("shared", lambda c, m, p, b: got.append(b), auto_ack=True)
    local.basic_publish("", "shared", b"from the test")
    deadline = time.monotonic() + 5
    while not got and time.monotonic() < deadline:
        conn.process_data_events(0.05)
    assert got == [b"from the test"]
    conn.close()


@pytest.mark.parametrize("payload", [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"AMQP\x00\x00\x08\x00",
    b"AMQP\x00\x00\x09\x01" + b"\x01\x00\x00\xff\xff\xff\xff" + b"x" * 20,
    b"AMQP\x00\x00\x09\x01" + bytes(range(256)) * 4,
])
def test_hostile_bytes_close_only_that_connection(server: Server, payload: bytes) -> None:
    other = connect(server)
    with socket.create_connection(("127.0.0.1", server.port), timeout=2) as sock:
        sock.sendall(payload)
        answer = b""
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
        assert time.monotonic() < deadline, "the server did not close the socket within 2 s"
    if not payload.startswith(b"AMQP\x00\x00\x09\x01"):
        assert answer == b"AMQP\x00\x00\x09\x01"
    other.channel().queue_declare("still-works")
    other.close()


def test_client_killed_mid_message_loses_only_that_message(server: Server, broker: Broker) -> None:
    conn = connect(server)
    ch = conn.channel()
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"complete")
    ch.queue_declare("q", passive=True)
    # Publish half a message by hand on a raw connection, then drop it.
    from embroker import amqp091 as a

    with raw_amqp_socket(server.port) as sock:
        wait_until(lambda: len(broker.connections) == 2)
        whole = a.encode_message(1, a.methods.BasicPublish(exchange="", routing_key="q"), b"0123456789",
                                 131072)
        sock.sendall(whole[:-5])
    wait_until(lambda: len(broker.connections) == 1)
    ch.queue_declare("q", passive=True)
    assert [m.body for m in broker.queues["q"].messages] == [b"complete"]
    conn.close()


def test_two_hundred_connections_at_once(server: Server, broker: Broker) -> None:
    conns = [connect(server) for _ in range(200)]
    for i, conn in enumerate(conns):
        conn.channel().queue_declare(f"q{i}", exclusive=True)
    assert len(broker.connections) == 200
    for conn in conns:
        conn.close()
    wait_until(lambda: not broker.connections)
    assert not [q for q in broker.queues if q.startswith("q")]


def test_direct_reply_to_rpc_over_the_wire(server: Server) -> None:
    client = connect(server)
    replies: list[bytes] = []
    ch = client.channel()
    ch.basic_consume("amq.rabbitmq.reply-to", lambda c, m, p, body: replies.append(body),
                     auto_ack=True)
    worker = connect(server)
    wch = worker.channel()
    wch.queue_declare("rpc")
    ch.basic_publish("", "rpc", b"2+2", pika.BasicProperties(reply_to="amq.rabbitmq.reply-to",
                                                             correlation_id="c1"))
    wait_until(lambda: wch.queue_declare("rpc", passive=True).method.message_count == 1)
    _, props, body = wch.basic_get("rpc", auto_ack=True)
    assert body == b"2+2"
    wch.basic_publish("", props.reply_to, b"4", pika.BasicProperties(correlation_id="c1"))
    deadline = time.monotonic() + 5
    while not replies and time.monotonic() < deadline:
        client.process_data_events(0.01)
    assert replies == [b"4"]
    client.close()
    worker.close()


def test_blocked_publishers_are_told_when_they_publish_and_held(server: Server,
                                                                broker: Broker) -> None:
    """As RabbitMQ 3.10.8 (live): under an alarm a connection is told connection.blocked when
    it publishes, and neither that publish nor what follows is read until the alarm clears."""
    conn = connect(server)
    events: list[str] = []
    conn.add_on_connection_blocked_callback(lambda _c, frame: events.append(frame.method.reason))
    conn.add_on_connection_unblocked_callback(lambda _c, _frame: events.append("unblocked"))
    ch = conn.channel()
    ch.queue_declare("q")
    broker.block_publishers("low on memory")
    ch.basic_publish("", "q", b"held back")
    wait_until(lambda: conn.process_data_events(0) or events == ["low on memory"])
    ch.basic_publish("", "q", b"waits")
    assert broker.queues["q"].message_count == 0
    broker.unblock_publishers()
    wait_until(lambda: (conn.process_data_events(0.01), broker.queues["q"].message_count == 2)[1])
    assert events == ["low on memory", "unblocked"]
    assert [m.body for m in broker.queues["q"].messages] == [b"held back", b"waits"]
    conn.close()
