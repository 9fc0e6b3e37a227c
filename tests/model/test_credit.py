"""Credit and drain as a consumer operation of the channel (``Channel.basic_credit``, RabbitMQ's
``rabbit_amqqueue:credit/5`` for an AMQP 1.0 link's flow), and the channels the broker opens
for itself on a connection (no 0-9-1 channel number)."""

from __future__ import annotations

from embroker import Broker
from embroker.model import Channel, Credited


def _consumer(broker: Broker, messages: int) -> Channel:
    ch = broker.open_connection("/").open_channel(1)
    ch.queue_declare("q")
    for i in range(messages):
        ch.basic_publish("", "q", b"%d" % i)
    ch.basic_consume("q", "c", link_credit=True)
    return ch


def test_a_link_credit_consumer_takes_nothing_until_given_credit(broker: Broker) -> None:
    ch = _consumer(broker, 2)
    ch.start_consumer("c")
    assert (broker.queues["q"].message_count, ch.consumers["c"].credit) == (2, 0)


def test_credit_delivers_what_the_queue_has_and_keeps_the_rest(broker: Broker) -> None:
    ch = _consumer(broker, 3)
    assert ch.basic_credit("c", 2) == Credited(delivered=2, drained=0, credit=0)
    assert ch.basic_credit("c", 5) == Credited(delivered=1, drained=0, credit=4)
    ch.basic_publish("", "q", b"later")
    assert (broker.queues["q"].message_count, ch.consumers["c"].credit) == (0, 3)
    assert broker.queues["q"].unacked == 4


def test_drain_uses_up_the_credit_the_queue_cannot_fill(broker: Broker) -> None:
    ch = _consumer(broker, 1)
    assert ch.basic_credit("c", 5, drain=True) == Credited(delivered=1, drained=4, credit=0)
    ch.basic_publish("", "q", b"later")
    assert broker.queues["q"].message_count == 1  # no credit left for it


def test_drain_with_enough_messages_drains_nothing(broker: Broker) -> None:
    ch = _consumer(broker, 3)
    assert ch.basic_credit("c", 2, drain=True) == Credited(delivered=2, drained=0, credit=0)
    assert broker.queues["q"].message_count == 1


def test_credit_for_an_unknown_consumer_does_nothing(broker: Broker) -> None:
    ch = _consumer(broker, 1)
    assert ch.basic_credit("gone", 3, drain=True) == Credited(0, 0, 0)


def test_an_internal_channel_has_no_0_9_1_number(broker: Broker) -> None:
    connection = broker.open_connection("/")
    client = connection.open_channel(1)
    first, second = connection.open_internal_channel(), connection.open_internal_channel()
    assert not client.internal
    assert [first.internal, second.internal] == [True, True]
    assert 0xFFFF < first.number < second.number  # past channel-max
    assert connection.channels[first.number] is first
    first.close()
    assert first.number not in connection.channels
    connection.close()
    assert not second.is_open
