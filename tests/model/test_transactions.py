"""The model's transaction object: publishes and settlements of a connection's channels held in
order until commit, several open at once, not tied to a channel's mode (what AMQP 1.0's
transactions and STOMP's named ones use); AMQP 0-9-1's modal tx runs on one of them."""

from __future__ import annotations

import pytest

from embroker import Broker
from embroker.errors import PreconditionFailed
from embroker.model import Channel, ChannelEvent, Confirmed, Transaction
from embroker.model._tx import HeldPublish


def _channel(broker: Broker, number: int = 1) -> Channel:
    connection = broker.connections.get(1) or broker.open_connection("/")
    return connection.open_channel(number)


def _got(channel: Channel, queue: str) -> int:
    delivery = channel.basic_get(queue)
    assert delivery is not None
    return delivery.delivery_tag


def _bodies(broker: Broker, queue: str) -> list[bytes]:
    return [entry.message.body for entry in broker.queues[queue].entries]


def test_several_transactions_of_one_connection_are_independent(broker: Broker) -> None:
    ch = _channel(broker)
    other = _channel(broker, 2)
    ch.queue_declare("q")
    first, second = ch.transaction(), other.transaction()
    ch.basic_publish("", "q", b"first", transaction=first)
    other.basic_publish("", "q", b"second", transaction=second)
    ch.basic_publish("", "q", b"now")  # in no transaction: at once
    assert _bodies(broker, "q") == [b"now"]
    assert (len(first), len(second)) == (1, 1)
    second.commit()
    first.rollback()
    assert _bodies(broker, "q") == [b"now", b"second"]
    assert (len(first), len(second)) == (0, 0)
    broker._check()


def test_a_transaction_commits_its_records_in_the_order_they_were_given(broker: Broker) -> None:
    # A reject dead-letters to the queue the transaction also publishes to: the order of the
    # two in that queue is the order they were given in.
    ch = _channel(broker)
    ch.queue_declare("dlq")
    ch.queue_declare("q", arguments={"x-dead-letter-exchange": "",
                                     "x-dead-letter-routing-key": "dlq"})
    ch.basic_publish("", "q", b"a")
    ch.basic_publish("", "q", b"b")
    a, b = _got(ch, "q"), _got(ch, "q")
    txn = ch.transaction()
    ch.basic_publish("", "dlq", b"published", transaction=txn)
    ch.basic_reject(a, requeue=False, transaction=txn)
    ch.basic_ack(b, transaction=txn)
    ch.basic_publish("", "dlq", b"published last", transaction=txn)
    assert _bodies(broker, "dlq") == []
    assert broker.queues["q"].unacked == 2  # held: not settled yet
    txn.commit()
    assert _bodies(broker, "dlq") == [b"published", b"a", b"published last"]
    assert broker.queues["q"].unacked == 0
    broker._check()


def _one_delivery_each(broker: Broker) -> tuple[Channel, Channel, int, int]:
    """Two channels of one connection, each holding one delivery of queue ``q``."""
    ch, other = _channel(broker), _channel(broker, 2)
    ch.queue_declare("q")
    for body in (b"1", b"2"):
        ch.basic_publish("", "q", body)
    return ch, other, _got(ch, "q"), _got(other, "q")

def test_a_transaction_holds_settlements_of_several_channels(broker: Broker) -> None:
    ch, other, one, two = _one_delivery_each(broker)
    txn = ch.transaction()
    ch.basic_ack(one, transaction=txn)
    other.basic_nack(two, requeue=True, transaction=txn)
    assert ch.unacked_tags == other.unacked_tags == []
    assert [len(ch.outstanding()), len(other.outstanding())] == [1, 1]
    broker._check()  # held deliveries are still outstanding
    txn.commit()
    assert _bodies(broker, "q") == [b"2"]
    assert broker.queues["q"].entries[0].redelivered


def test_rollback_discards_publishes_and_leaves_settled_deliveries_unacked(
        broker: Broker) -> None:
    # AMQP 0-9-1's tx.rollback (RabbitMQ 3.10's rabbit_channel): acks are forgotten, their
    # messages unacknowledged again on the channel, not requeued.
    ch = _channel(broker)
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"1")
    tag = _got(ch, "q")
    txn = ch.transaction()
    ch.basic_publish("", "q", b"2", transaction=txn)
    ch.basic_ack(tag, transaction=txn)
    txn.rollback()
    queue = broker.queues["q"]
    assert (queue.message_count, queue.unacked, ch.unacked_tags) == (0, 1, [tag])
    ch.basic_ack(tag)
    assert queue.unacked == 0


def test_rollback_with_requeue_releases_the_settled_deliveries(broker: Broker) -> None:
    # AMQP 1.0's discharge with fail: the acquired deliveries go back to their queue.
    ch = _channel(broker)
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"1")
    tag = _got(ch, "q")
    txn = ch.transaction()
    ch.basic_publish("", "q", b"2", transaction=txn)
    ch.basic_ack(tag, transaction=txn)
    txn.rollback(requeue=True)
    queue = broker.queues["q"]
    assert (_bodies(broker, "q"), queue.unacked, ch.unacked_tags) == ([b"1"], 0, [])
    assert queue.entries[0].redelivered


def test_rollback_with_requeue_keeps_a_streams_deliveries_unacknowledged(
        broker: Broker) -> None:
    # A stream takes no requeue (RabbitMQ 3.10.8 rabbit_stream_queue:settle/5): its rolled-back
    # delivery stays unacknowledged, while a classic queue's goes back (the test above).
    ch = _channel(broker)
    ch.queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
    ch.basic_qos(prefetch_count=10)
    ch.basic_consume("s", "c")
    ch.basic_publish("", "s", b"1")
    [tag] = ch.unacked_tags
    txn = ch.transaction()
    ch.basic_ack(tag, transaction=txn)
    assert ch.unacked_tags == []
    txn.rollback(requeue=True)
    assert (ch.unacked_tags, broker.queues["s"].unacked) == ([tag], 1)
    ch.basic_ack(tag)
    assert broker.queues["s"].unacked == 0


def test_a_channel_in_confirm_mode_publishes_in_a_transaction(broker: Broker) -> None:
    ch = _channel(broker)
    events: list[ChannelEvent] = []
    ch.listener = events.append
    ch.queue_declare("q")
    ch.confirm_select()
    txn = ch.transaction()
    assert ch.basic_publish("", "q", b"held", transaction=txn).held
    assert ch.basic_publish("", "q", b"confirmed").seq == 1
    assert [type(e) for e in events] == [Confirmed]
    txn.commit()
    assert _bodies(broker, "q") == [b"confirmed", b"held"]
    # 0-9-1's modal rule stays: tx.select after confirm.select is a 406.
    with pytest.raises(PreconditionFailed, match="cannot switch from confirm to tx mode"):
        ch.tx_select()


def test_tx_select_runs_on_a_transaction_of_the_channel(broker: Broker) -> None:
    ch = _channel(broker)
    ch.queue_declare("q")
    ch.tx_select()
    ch.basic_publish("", "q", b"1")
    (held,) = list(ch._transactions)
    assert isinstance(held, Transaction)
    assert [record.message.body for record in held.records
            if isinstance(record, HeldPublish)] == [b"1"]
    ch.tx_commit()
    assert _bodies(broker, "q") == [b"1"]
    with pytest.raises(PreconditionFailed, match="cannot switch from tx to confirm mode"):
        ch.confirm_select()


def test_a_closing_channel_takes_its_held_deliveries_back(broker: Broker) -> None:
    ch, other, one, two = _one_delivery_each(broker)
    txn = ch.transaction()
    ch.basic_ack(one, transaction=txn)
    other.basic_ack(two, transaction=txn)
    ch.basic_publish("", "q", b"3", transaction=txn)
    ch.close()
    assert _bodies(broker, "q") == [b"1"]  # requeued, as with its other unacked ones
    assert len(txn) == 2  # the other channel's ack, and the publish
    txn.commit()
    assert _bodies(broker, "q") == [b"1", b"3"]
    assert broker.queues["q"].unacked == 0
    broker._check()
