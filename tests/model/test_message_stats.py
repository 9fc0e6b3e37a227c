"""Message statistics are counted where RabbitMQ 3.10.8's channel counts them
(``rabbit_channel``: ``deliver_to_queues``, ``record_sent``, ``incr_queue_stats``,
``send_confirms_and_nacks``), on the object, current when read (issue #50, part 3; the
management API's view of them is pinned against the reference in
tests/management/test_message_stats.py)."""

from __future__ import annotations

import pytest

from embroker.errors import NotFound
from embroker.model import Broker, Channel


def _channel(broker: Broker) -> Channel:
    return broker.open_connection("/").open_channel(1)


def test_a_publish_counts_on_its_channel_exchange_queues_and_vhost() -> None:
    broker = Broker()
    ch = _channel(broker)
    for name in ("a", "b"):
        ch.queue_declare(name)
        ch.queue_bind(name, "amq.fanout", "")
    ch.confirm_select()
    ch.basic_publish("amq.fanout", "", b"x")
    vhost = broker.vhosts["/"]
    exchange = vhost.exchanges["amq.fanout"]
    assert (ch.stats.publish, ch.stats.confirm) == (1, 1)
    assert (exchange.stats.publish_in, exchange.stats.publish_out) == (1, 2)
    assert [broker.queues[name].stats.publish for name in ("a", "b")] == [1, 1]
    assert (vhost.stats.publish, vhost.stats.confirm) == (1, 1)


def test_unroutable_publishes_count_as_returned_or_dropped() -> None:
    broker = Broker()
    ch = _channel(broker)
    ch.basic_publish("amq.direct", "nowhere", b"x", mandatory=True)
    ch.basic_publish("amq.direct", "nowhere", b"y")
    exchange = broker.vhosts["/"].exchanges["amq.direct"]
    assert (ch.stats.publish, ch.stats.return_unroutable, ch.stats.drop_unroutable) == (2, 1, 1)
    assert (exchange.stats.publish_in, exchange.stats.publish_out) == (2, 0)


def test_a_refused_publish_counts_nothing() -> None:
    broker = Broker()
    ch = _channel(broker)
    with pytest.raises(NotFound):
        ch.basic_publish("no-such-exchange", "k", b"x")
    assert not ch.stats.published
    assert broker.vhosts["/"].stats.publish == 0


def test_deliveries_gets_redeliveries_and_acks_count_on_channel_queue_and_vhost() -> None:
    broker = Broker()
    ch = _channel(broker)
    ch.queue_declare("q")
    for body in (b"1", b"2", b"3"):
        ch.basic_publish("", "q", body)
    assert ch.basic_get("q", no_ack=True) is not None
    got = ch.basic_get("q")
    assert got is not None
    ch.basic_nack(got.delivery_tag, requeue=True)
    ch.start_consumer(ch.basic_consume("q", "c"))
    ch.basic_ack(0, multiple=True)
    assert ch.basic_get("q") is None
    q, vhost = broker.queues["q"], broker.vhosts["/"]
    for stats in (ch.stats, q.stats, vhost.stats):
        assert (stats.get_no_ack, stats.get, stats.deliver, stats.redeliver, stats.ack,
                stats.get_empty, stats.deliver_get) == (1, 1, 2, 1, 2, 1, 4)
    assert ch.stats.took


def test_a_publish_in_a_transaction_counts_at_commit() -> None:
    """(RabbitMQ 3.10.8, checked live: no message_stats on the channel before tx.commit, a
    publish of 1 after it.)"""
    broker = Broker()
    ch = _channel(broker)
    ch.queue_declare("q")
    ch.tx_select()
    ch.basic_publish("", "q", b"x")
    assert not ch.stats.published
    ch.tx_commit()
    assert (ch.stats.publish, broker.queues["q"].stats.publish) == (1, 1)
