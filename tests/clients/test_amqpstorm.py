"""amqpstorm (thread-based, pamqp frames) against embroker's listener."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import amqpstorm
import pytest
from amqpstorm import AMQPChannelError, Message, UriConnection

from embroker import Broker
from embroker.server import Server

from .conftest import wait_until

TIMEOUT = 5


@pytest.fixture
def conn(server: Server, broker: Broker) -> Iterator[amqpstorm.Connection]:
    connection = amqpstorm.Connection("127.0.0.1", "guest", "guest", port=server.port,
                                      timeout=TIMEOUT)
    yield connection
    connection.close()
    wait_until(lambda: not broker.connections)


def consume_until(channel: amqpstorm.Channel, predicate, timeout: float = TIMEOUT) -> None:
    """Run the channel's consumer callbacks until ``predicate`` holds, failing after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        channel.process_data_events(auto_decode=False)


def test_uri_connection_handshake(server: Server, broker: Broker) -> None:
    with UriConnection(server.url + "%2F?heartbeat=30&timeout=5") as conn:
        assert conn.is_open
        assert conn.server_properties["product"] == "embroker"
        assert conn.max_frame_size == 131072
        assert conn.max_allowed_channels == 2047
        model = next(iter(broker.connections.values()))
        assert model.client_properties["product"] == "AMQPStorm"
    wait_until(lambda: not broker.connections)


def test_topic_routing_and_consume_with_manual_acks(conn: amqpstorm.Connection,
                                                    broker: Broker) -> None:
    channel = conn.channel(rpc_timeout=TIMEOUT)
    channel.exchange.declare("events", "topic")
    channel.queue.declare("audit")
    channel.queue.bind("audit", "events", "order.*")
    for i in range(3):
        Message.create(channel, b"%d" % i, {"content_type": "text/plain",
                                             "headers": {"n": i}}).publish("order.created",
                                                                            "events")
    Message.create(channel, b"x").publish("invoice.created", "events")
    channel.basic.qos(prefetch_count=1)

    seen: list[tuple[Any, Any, Any]] = []

    def on_message(message: Message) -> None:
        seen.append((message.body, message.delivery_tag, message.redelivered))
        assert message.properties["headers"] == {"n": len(seen) - 1}
        assert message.content_type == "text/plain"
        message.ack()

    tag = channel.basic.consume(on_message, "audit", no_ack=False)
    consume_until(channel, lambda: len(seen) == 3)
    channel.basic.cancel(tag)  # a round trip: the acks before it have been handled
    assert seen == [(b"0", 1, False), (b"1", 2, False), (b"2", 3, False)]
    assert broker.queues["audit"].message_count == 0
    assert broker.queues["audit"].unacked == 0
    assert broker.queues["audit"].consumer_count == 0
    trace = [d for d in broker.trace if d.exchange == "events"]
    assert [d.queues for d in trace] == [("audit",)] * 3 + [()]
    assert trace[-1].routing_key == "invoice.created"


def test_nack_with_requeue_redelivers(conn: amqpstorm.Connection, broker: Broker) -> None:
    channel = conn.channel(rpc_timeout=TIMEOUT)
    channel.queue.declare("work")
    Message.create(channel, b"job").publish("work")
    first = channel.basic.get("work", no_ack=False, auto_decode=False)
    assert (first.body, first.redelivered) == (b"job", False)
    assert broker.queues["work"].unacked == 1
    first.nack(requeue=True)
    second = channel.basic.get("work", no_ack=False, auto_decode=False)
    assert (second.body, second.redelivered, second.delivery_tag) == (b"job", True, 2)
    second.ack()
    channel.queue.declare("work", passive=True)  # a round trip after the ack
    assert (broker.queues["work"].unacked, broker.queues["work"].message_count) == (0, 0)


def test_basic_get_reports_message_count_and_empty_queue(conn: amqpstorm.Connection,
                                                         broker: Broker) -> None:
    channel = conn.channel(rpc_timeout=TIMEOUT)
    channel.queue.declare("q")
    for body in (b"a", b"b"):
        channel.basic.publish(body, "q")
    got = channel.basic.get("q", no_ack=True, auto_decode=False)
    assert got.body == b"a"
    assert got.method["message_count"] == 1
    assert [m.body for m in broker.queues["q"].messages] == [b"b"]
    got = channel.basic.get("q", no_ack=False, auto_decode=False)
    assert (got.body, got.method["message_count"]) == (b"b", 0)
    got.ack()
    assert channel.basic.get("q") is None  # basic.get-empty
    assert channel.queue.declare("q", passive=True)["message_count"] == 0
    assert broker.queues["q"].unacked == 0


def test_publisher_confirms_and_mandatory_return(conn: amqpstorm.Connection,
                                                 broker: Broker) -> None:
    channel = conn.channel(rpc_timeout=TIMEOUT)
    channel.queue.declare("confirmed")
    channel.confirm_deliveries()
    assert channel.confirming_deliveries
    assert channel.basic.publish(b"ok", "confirmed") is True
    assert [m.body for m in broker.queues["confirmed"].messages] == [b"ok"]
    with pytest.raises(amqpstorm.AMQPMessageError) as err:
        channel.basic.publish(b"lost", "nowhere", mandatory=True)
    assert err.value.error_code == 312
    assert "NO_ROUTE" in str(err.value)
    assert broker.trace[-1].routing_key == "nowhere"
    assert broker.trace[-1].queues == ()
    assert channel.is_open  # a return is not a channel error
    assert Message.create(channel, b"ok2").publish("confirmed") is True
    assert [m.body for m in broker.queues["confirmed"].messages] == [b"ok", b"ok2"]


def test_transaction_commit_and_rollback(conn: amqpstorm.Connection, broker: Broker) -> None:
    channel = conn.channel(rpc_timeout=TIMEOUT)
    channel.queue.declare("tx")
    channel.tx.select()
    channel.basic.publish(b"rolled back", "tx")
    channel.tx.rollback()
    assert broker.queues["tx"].message_count == 0
    channel.basic.publish(b"committed", "tx")
    channel.queue.declare("tx", passive=True)  # the publish has been handled, and is held
    assert broker.queues["tx"].message_count == 0
    channel.tx.commit()
    assert [m.body for m in broker.queues["tx"].messages] == [b"committed"]
    with channel.tx:  # the context manager: select ... commit
        channel.basic.publish(b"in a block", "tx")
    assert [m.body for m in broker.queues["tx"].messages] == [b"committed", b"in a block"]


def test_404_and_406_close_only_the_channel(conn: amqpstorm.Connection, broker: Broker) -> None:
    channel = conn.channel(rpc_timeout=TIMEOUT)
    with pytest.raises(AMQPChannelError) as not_found:
        channel.queue.declare("missing", passive=True)
    assert not_found.value.error_code == 404
    assert "NOT_FOUND - no queue 'missing' in vhost '/'" in str(not_found.value)
    assert channel.is_closed

    channel = conn.channel(rpc_timeout=TIMEOUT)
    channel.exchange.declare("x", "direct")
    with pytest.raises(AMQPChannelError) as failed:
        channel.exchange.declare("x", "fanout")
    assert failed.value.error_code == 406
    assert ("PRECONDITION_FAILED - inequivalent arg 'type' for exchange 'x' in vhost '/': "
            "received 'fanout' but current is 'direct'") in str(failed.value)
    assert channel.is_closed

    channel = conn.channel(rpc_timeout=TIMEOUT)  # the connection carries on
    channel.queue.declare("after")
    channel.basic.publish(b"still works", "after")
    assert channel.basic.get("after", no_ack=True, auto_decode=False).body == b"still works"
    assert conn.is_open
    assert broker.exchanges["x"].type == "direct"
    model = next(iter(broker.connections.values()))
    assert len(model.channels) == 1


def test_close_requeues_unacked_and_deletes_exclusive_queues(server: Server,
                                                             broker: Broker) -> None:
    conn = amqpstorm.Connection("127.0.0.1", "guest", "guest", port=server.port, timeout=TIMEOUT)
    channel = conn.channel(rpc_timeout=TIMEOUT)
    channel.queue.declare("jobs")
    mine = channel.queue.declare("", exclusive=True)["queue"]
    assert mine.startswith("amq.gen-")
    channel.basic.publish(b"held", "jobs")
    assert channel.basic.get("jobs", no_ack=False, auto_decode=False).body == b"held"
    assert broker.queues["jobs"].unacked == 1
    conn.close()
    assert conn.is_closed
    wait_until(lambda: not broker.connections)
    assert mine not in broker.queues
    entries = broker.queues["jobs"].entries
    assert [(e.message.body, e.redelivered) for e in entries] == [(b"held", True)]


def test_large_message_and_recover(conn: amqpstorm.Connection, broker: Broker) -> None:
    channel = conn.channel(rpc_timeout=TIMEOUT)
    channel.queue.declare("big")
    body = bytes(range(256)) * 4096  # 1 MiB: split by the negotiated frame_max
    channel.basic.publish(body, "big")
    channel.queue.declare("big", passive=True)
    assert broker.queues["big"].messages[0].body == body
    got = channel.basic.get("big", no_ack=False, auto_decode=False)
    assert got.body == body
    assert broker.queues["big"].unacked == 1
    channel.basic.recover(requeue=True)  # basic.recover-ok: the message is back, redelivered
    assert [e.redelivered for e in broker.queues["big"].entries] == [True]
    again = channel.basic.get("big", no_ack=True, auto_decode=False)
    assert (again.body == body, again.redelivered) == (True, True)


def test_server_cancel_notification_removes_the_consumer(conn: amqpstorm.Connection,
                                                         broker: Broker) -> None:
    channel = conn.channel(rpc_timeout=TIMEOUT)
    channel.queue.declare("doomed")
    tag = channel.basic.consume(lambda message: None, "doomed")
    assert channel.consumer_tags == [tag]
    assert broker.queues["doomed"].consumer_count == 1
    conn.channel(rpc_timeout=TIMEOUT).queue.delete("doomed")
    wait_until(lambda: channel.consumer_tags == [])
    assert channel.is_open
    assert "doomed" not in broker.queues


def test_publish_to_a_full_reject_publish_queue_is_nacked(conn: amqpstorm.Connection,
                                                          broker: Broker) -> None:
    channel = conn.channel(rpc_timeout=TIMEOUT)
    channel.queue.declare("capped", arguments={"x-max-length": 1, "x-overflow": "reject-publish"})
    channel.confirm_deliveries()
    assert channel.basic.publish(b"kept", "capped") is True
    assert channel.basic.publish(b"refused", "capped") is False  # basic.nack, as RabbitMQ
    assert [m.body for m in broker.queues["capped"].messages] == [b"kept"]
