"""A consumer's capacity given as credit (what an AMQP 1.0 receiving link grants) instead of
qos: it takes as many messages as it has credit, whatever it holds unacknowledged."""

from __future__ import annotations

from embroker import Broker


def test_credit_limits_a_consumer_and_more_credit_releases_ready_messages() -> None:
    broker = Broker()
    ch = broker.open_connection("/").open_channel(1)
    ch.queue_declare("q")
    tag = ch.basic_consume("q", "c")
    consumer = ch.consumers[tag]
    consumer.credit = 0
    for i in range(5):
        ch.basic_publish("", "q", b"%d" % i)
    queue = broker.queues["q"]
    assert (queue.message_count, queue.unacked) == (5, 0)
    consumer.set_credit(2)
    assert (queue.message_count, queue.unacked, consumer.credit) == (3, 2, 0)
    ch.basic_ack(0, multiple=True)  # acks give no room: only credit does
    assert queue.message_count == 3
    consumer.set_credit(10)
    assert (queue.message_count, consumer.credit) == (0, 7)
    broker._check()


def test_a_consumer_without_credit_keeps_its_qos() -> None:
    broker = Broker()
    ch = broker.open_connection("/").open_channel(1)
    ch.queue_declare("q")
    ch.basic_qos(prefetch_count=1)
    tag = ch.basic_consume("q", "c")
    assert ch.consumers[tag].credit is None
    ch.basic_publish("", "q", b"1")
    ch.basic_publish("", "q", b"2")
    assert broker.queues["q"].unacked == 1
