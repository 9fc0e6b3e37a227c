"""kombu with the py-amqp transport (``amqp://`` URLs) against embroker's listener."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import amqp
import pytest
from kombu import Connection, Consumer, Exchange, Producer, Queue

from embroker import Broker
from embroker.server import Server

from .conftest import wait_until

TIMEOUT = 5.0


@pytest.fixture
def conn(server: Server) -> Iterator[Connection]:
    connection = Connection(server.url, connect_timeout=TIMEOUT)
    connection.connect()
    yield connection
    connection.release()


def drain_until(conn: Connection, predicate, timeout: float = TIMEOUT) -> None:
    """Read frames (deliveries, returns...) until ``predicate`` holds, failing after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"condition not met within {timeout}s")
        with contextlib.suppress(TimeoutError):
            conn.drain_events(timeout=min(remaining, 0.5))


def test_amqp_url_uses_the_py_amqp_transport(conn: Connection, broker: Broker) -> None:
    assert conn.transport.driver_name == "py-amqp"
    assert isinstance(conn.connection, amqp.Connection)
    assert conn.connection.server_properties["product"] == "embroker"
    assert len(broker.connections) == 1
    model = next(iter(broker.connections.values()))
    assert model.client_properties["product"] == "py-amqp"


def test_topic_routing_and_consume_with_manual_acks(conn: Connection, broker: Broker) -> None:
    events = Exchange("events", type="topic", durable=False)
    audit = Queue("audit", events, routing_key="order.*", durable=False)
    channel = conn.channel()
    audit(channel).declare()  # exchange.declare, queue.declare, queue.bind
    assert broker.exchanges["events"].type == "topic"
    assert [b.routing_key for b in broker.queues["audit"].bindings.values()] == ["order.*"]

    producer = Producer(channel, exchange=events)
    for i in range(3):
        producer.publish({"n": i}, routing_key="order.created", serializer="json",
                         headers={"seq": i})
    producer.publish({"n": 99}, routing_key="invoice.created", serializer="json")

    seen: list[tuple[object, int, bool]] = []

    def on_message(body, message) -> None:
        seen.append((body, message.delivery_tag, message.delivery_info["redelivered"]))
        assert message.headers == {"seq": len(seen) - 1}
        assert message.content_type == "application/json"
        message.ack()

    with Consumer(channel, queues=[audit], callbacks=[on_message], accept=["json"],
                  prefetch_count=1):
        drain_until(conn, lambda: len(seen) == 3)
        channel.basic_qos(0, 1, False)  # a round trip: the last ack has been handled
    assert seen == [({"n": 0}, 1, False), ({"n": 1}, 2, False), ({"n": 2}, 3, False)]
    assert broker.queues["audit"].message_count == 0
    assert broker.queues["audit"].unacked == 0
    assert broker.queues["audit"].consumer_count == 0  # the consumer was cancelled on exit
    trace = [d for d in broker.trace if d.exchange == "events"]
    assert [d.queues for d in trace] == [("audit",)] * 3 + [()]
    assert trace[-1].routing_key == "invoice.created"


def test_reject_with_requeue_redelivers(conn: Connection, broker: Broker) -> None:
    channel = conn.channel()
    queue = Queue("work", durable=False, channel=channel)
    queue.declare()
    Producer(channel).publish(b"job", routing_key="work", content_type="application/octet-stream",
                              content_encoding="binary")
    first = queue.get(no_ack=False)
    assert (first.body, first.delivery_info["redelivered"]) == (b"job", False)
    assert broker.queues["work"].unacked == 1
    first.reject(requeue=True)
    second = queue.get(no_ack=False)
    assert (second.body, second.delivery_info["redelivered"], second.delivery_tag) == (
        b"job", True, 2)
    second.ack()
    queue.queue_declare(passive=True)  # a round trip after the ack
    assert (broker.queues["work"].unacked, broker.queues["work"].message_count) == (0, 0)


def test_basic_get_reports_message_count_and_empty_queue(conn: Connection,
                                                         broker: Broker) -> None:
    channel = conn.channel()
    queue = Queue("q", durable=False, channel=channel)
    queue.declare()
    producer = Producer(channel)
    for body in (b"a", b"b"):
        producer.publish(body, routing_key="q")
    got = queue.get(no_ack=True)
    assert got.body == b"a"
    assert got.delivery_info["message_count"] == 1
    assert [m.body for m in broker.queues["q"].messages] == [b"b"]
    got = queue.get(no_ack=False)
    assert (got.body, got.delivery_info["message_count"]) == (b"b", 0)
    got.ack()
    assert queue.get() is None  # basic.get-empty
    assert queue.queue_declare(passive=True).message_count == 0
    assert broker.queues["q"].unacked == 0


def test_publisher_confirms_and_mandatory_return(server: Server, broker: Broker) -> None:
    with Connection(server.url, transport_options={"confirm_publish": True}) as conn:
        channel = conn.channel()
        Queue("confirmed", durable=False, channel=channel).declare()
        returned: list[tuple[int, str, str]] = []

        def on_return(exc, exchange, routing_key, message) -> None:
            returned.append((exc.reply_code, exc.reply_text, routing_key))

        producer = Producer(channel, on_return=on_return)
        producer.publish(b"ok", routing_key="confirmed")  # waits for basic.ack
        assert channel._confirm_selected
        assert [m.body for m in broker.queues["confirmed"].messages] == [b"ok"]
        producer.publish(b"lost", routing_key="nowhere", mandatory=True)
        # basic.return comes before the basic.ack the publish waited for.
        assert returned == [(312, "NO_ROUTE", "nowhere")]
        assert broker.trace[-1].queues == ()
        assert broker.trace[-1].routing_key == "nowhere"
        model = next(iter(broker.connections.values()))
        assert any(ch.confirm_mode for ch in model.channels.values())


def test_transaction_commit_and_rollback(conn: Connection, broker: Broker) -> None:
    channel = conn.channel()
    Queue("tx", durable=False, channel=channel).declare()
    producer = Producer(channel)
    channel.tx_select()
    producer.publish(b"rolled back", routing_key="tx")
    channel.tx_rollback()
    assert broker.queues["tx"].message_count == 0
    producer.publish(b"committed", routing_key="tx")
    channel.queue_declare("tx", passive=True)  # the publish has been handled, and is held
    assert broker.queues["tx"].message_count == 0
    channel.tx_commit()
    assert [m.body for m in broker.queues["tx"].messages] == [b"committed"]


def test_404_and_406_close_only_the_channel(conn: Connection, broker: Broker) -> None:
    channel = conn.channel()
    with pytest.raises(amqp.exceptions.NotFound) as not_found:
        Queue("missing", channel=channel).queue_declare(passive=True)
    assert not_found.value.reply_code == 404
    assert not_found.value.reply_text == "NOT_FOUND - no queue 'missing' in vhost '/'"
    # py-amqp answers channel.close with close-ok and at once reopens the same channel number.
    assert channel.is_open
    assert channel.queue_declare("revived").queue == "revived"

    channel = conn.channel()
    Exchange("x", type="direct", durable=False, channel=channel).declare()
    with pytest.raises(amqp.exceptions.PreconditionFailed) as failed:
        Exchange("x", type="fanout", durable=False, channel=channel).declare()
    assert failed.value.reply_code == 406
    assert failed.value.reply_text == (
        "PRECONDITION_FAILED - inequivalent arg 'type' for exchange 'x' in vhost '/': "
        "received 'fanout' but current is 'direct'")

    channel = conn.channel()  # the connection carries on
    queue = Queue("after", durable=False, channel=channel)
    queue.declare()
    Producer(channel).publish(b"still works", routing_key="after")
    assert queue.get(no_ack=True).body == b"still works"
    assert conn.connected
    assert broker.exchanges["x"].type == "direct"
    model = next(iter(broker.connections.values()))
    assert len(model.channels) == 3  # the first two, revived, and the new one


def test_simple_queue_round_trip(conn: Connection, broker: Broker) -> None:
    with conn.SimpleQueue("simple", queue_opts={"durable": False},
                          exchange_opts={"durable": False}) as sq:
        sq.put({"hello": "world"}, serializer="json")
        message = sq.get(block=True, timeout=TIMEOUT)
        assert message.payload == {"hello": "world"}
        message.ack()
        assert sq.qsize() == 0
    assert broker.queues["simple"].unacked == 0


def test_release_closes_the_connection_and_requeues(server: Server, broker: Broker) -> None:
    conn = Connection(server.url)
    channel = conn.channel()
    queue = Queue("jobs", durable=False, channel=channel)
    queue.declare()
    exclusive = Queue("", exclusive=True, channel=channel)
    exclusive.declare()
    assert exclusive.name.startswith("amq.gen-")
    Producer(channel).publish(b"held", routing_key="jobs")
    assert queue.get(no_ack=False).body == b"held"
    assert broker.queues["jobs"].unacked == 1
    conn.release()
    wait_until(lambda: not broker.connections)
    assert exclusive.name not in broker.queues
    entries = broker.queues["jobs"].entries
    assert [(e.message.body, e.redelivered) for e in entries] == [(b"held", True)]
    assert broker.queues["jobs"].unacked == 0


def test_large_message_is_split_into_body_frames(conn: Connection, broker: Broker) -> None:
    channel = conn.channel()
    queue = Queue("big", durable=False, channel=channel)
    queue.declare()
    body = bytes(range(256)) * 4096  # 1 MiB: eight frames at the negotiated frame_max
    assert conn.connection.frame_max == 131072
    Producer(channel).publish(body, routing_key="big")
    queue.queue_declare(passive=True)  # a round trip: the publish has been handled
    assert broker.queues["big"].messages[0].body == body
    assert queue.get(no_ack=True).body == body


def test_server_cancel_notification_reaches_the_consumer(conn: Connection,
                                                         broker: Broker) -> None:
    channel = conn.channel()
    channel.queue_declare("doomed")
    cancelled: list[str] = []
    channel.basic_consume("doomed", consumer_tag="ctag", callback=lambda message: None,
                          on_cancel=cancelled.append)
    assert broker.queues["doomed"].consumer_count == 1
    conn.channel().queue_delete("doomed")
    drain_until(conn, lambda: cancelled == ["ctag"])
    assert "ctag" not in channel.callbacks
    assert "doomed" not in broker.queues


def test_rejected_message_is_dead_lettered_with_x_death(conn: Connection, broker: Broker) -> None:
    channel = conn.channel()
    dlx = Exchange("dlx", type="fanout", durable=False, channel=channel)
    dlx.declare()
    dead = Queue("dead", dlx, durable=False, channel=channel)
    dead.declare()
    work = Queue("work", durable=False, channel=channel,
                 queue_arguments={"x-dead-letter-exchange": "dlx"})
    work.declare()
    Producer(channel).publish(b"bad", routing_key="work", headers={"h": 1})
    work.get(no_ack=False).reject(requeue=False)
    # RabbitMQ dead-letters asynchronously (its queue process republishes, within
    # milliseconds): poll, for at most a second.
    deadline = time.monotonic() + 1.0
    while (got := dead.get(no_ack=True)) is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert got is not None, "the rejected message did not reach the dead-letter queue"
    assert got.body == b"bad"
    assert got.delivery_info["exchange"] == "dlx"
    assert got.delivery_info["routing_key"] == "work"
    death = got.headers["x-death"][0]
    assert {k: death[k] for k in ("count", "reason", "queue", "exchange", "routing-keys")} == {
        "count": 1, "reason": "rejected", "queue": "work", "exchange": "", "routing-keys": ["work"]}
    assert got.headers["h"] == 1
    assert (got.headers["x-first-death-reason"], got.headers["x-first-death-queue"],
            got.headers["x-first-death-exchange"]) == ("rejected", "work", "")
    assert broker.queues["work"].message_count == 0
