"""The delayed-message exchange over the wire (pika), on a ManualClock: the listener's loop runs
the timers with the real clock, and the test moves the virtual one (``advance`` holds the
broker's lock)."""

from __future__ import annotations

import pika
import pika.exceptions
import pytest

from embroker import Broker, ManualClock
from embroker.testing import advance, held_messages

DELAYED = "rabbitmq_delayed_message_exchange"


@pytest.fixture
def broker() -> Broker:
    broker = Broker(plugins=[DELAYED], clock=ManualClock())
    ch = broker.connect().channel()
    ch.exchange_declare("later", "x-delayed-message", durable=True,
                        arguments={"x-delayed-type": "direct"})
    ch.queue_declare("q", durable=True)
    ch.queue_bind("q", "later", "k")
    return broker


def test_confirmed_at_once_and_a_mandatory_one_returned(broker: Broker) -> None:
    """With publisher confirms: the ack comes when the message is held; a mandatory one is
    returned (pika raises UnroutableError), and both are delivered when due."""
    with broker.serve() as server:
        conn = pika.BlockingConnection(pika.URLParameters(server.url))
        ch = conn.channel()
        ch.confirm_delivery()
        ch.basic_publish("later", "k", b"plain",
                         pika.BasicProperties(headers={"x-delay": 1000}))
        with pytest.raises(pika.exceptions.UnroutableError):
            ch.basic_publish("later", "k", b"mandatory",
                             pika.BasicProperties(headers={"x-delay": 1000}), mandatory=True)
        assert [h.message.body for h in held_messages(broker)] == [b"plain", b"mandatory"]
        assert ch.queue_declare("q", passive=True, durable=True).method.message_count == 0
        advance(broker, 1)
        got = [ch.basic_get("q", auto_ack=True) for _ in range(2)]
        assert [body for _m, _p, body in got] == [b"plain", b"mandatory"]
        assert got[0][1].headers == {"x-delay": -1000}
        conn.close()


def test_held_messages_survive_a_restart(broker: Broker) -> None:
    """The restart fault closes every connection (320); the held message is still delivered
    when due, to the durable queue, though it was not persistent."""
    with broker.serve() as server:
        conn = pika.BlockingConnection(pika.URLParameters(server.url))
        conn.channel().basic_publish("later", "k", b"m",
                                     pika.BasicProperties(headers={"x-delay": 5000}))
        broker.settle()
        broker.restart()
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker):
            conn.channel()
        advance(broker, 5)
        conn = pika.BlockingConnection(pika.URLParameters(server.url))
        _m, _p, body = conn.channel().basic_get("q", auto_ack=True)
        assert body == b"m"
        conn.close()


def test_with_the_real_clock_the_listener_delivers_when_due() -> None:
    """With the system clock, the listener's loop runs the delayed message's timer: the test
    waits for the message (it asserts nothing about time)."""
    from embroker.testing import wait_until

    broker = Broker(plugins=[DELAYED])
    ch = broker.connect().channel()
    ch.exchange_declare("later", "x-delayed-message", arguments={"x-delayed-type": "fanout"})
    ch.queue_declare("q")
    ch.queue_bind("q", "later")
    with broker.serve() as server:
        conn = pika.BlockingConnection(pika.URLParameters(server.url))
        conn.channel().basic_publish("later", "", b"soon",
                                     pika.BasicProperties(headers={"x-delay": 50}))
        wait_until(lambda: broker.queues["q"].message_count == 1)
        assert held_messages(broker) == []
        conn.close()
