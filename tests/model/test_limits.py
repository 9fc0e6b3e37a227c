"""Queue length limits: x-max-length, x-max-length-bytes and x-overflow (ready messages only)."""

from __future__ import annotations

import pytest

from embroker import Broker
from embroker.client import Channel
from embroker.errors import NackError

from .conftest import bodies


def test_drop_head_keeps_the_newest(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q", arguments={"x-max-length": 2})
    for i in range(3):
        ch.basic_publish("", "q", b"%d" % i)
    assert bodies(ch, "q") == [b"1", b"2"]


def test_byte_limit_counts_bodies_of_ready_messages(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q", arguments={"x-max-length-bytes": 5})
    for body in (b"aa", b"bbb", b"c"):
        ch.basic_publish("", "q", body)
    assert broker.queues["q"].message_bytes == 4
    assert bodies(ch, "q") == [b"bbb", b"c"]


def test_unacked_messages_do_not_count(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q", arguments={"x-max-length": 1})
    ch.basic_publish("", "q", b"0")
    assert ch.basic_get("q") is not None
    ch.basic_publish("", "q", b"1")
    assert broker.queues["q"].message_count == 1


def test_requeue_over_the_limit_drops_from_the_head(broker: Broker, ch: Channel) -> None:
    """Checked against RabbitMQ 3.10: the requeued message is the one dropped."""
    ch.queue_declare("q", arguments={"x-max-length": 2})
    for i in range(3):
        ch.basic_publish("", "q", b"%d" % i)
    first = ch.basic_get("q")
    assert first is not None
    ch.basic_publish("", "q", b"3")
    ch.basic_nack(first.delivery_tag)
    assert bodies(ch, "q") == [b"2", b"3"]


def test_zero_length_queue_still_feeds_a_waiting_consumer(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q", arguments={"x-max-length": 0})
    got: list[bytes] = []
    tag = ch.basic_consume("q", lambda c, d, p, body: got.append(body), auto_ack=True)
    ch.basic_publish("", "q", b"direct")
    ch.basic_cancel(tag)
    ch.basic_publish("", "q", b"dropped")
    assert got == [b"direct"]
    assert broker.queues["q"].message_count == 0


def test_reject_publish_nacks_the_publisher(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q", arguments={"x-max-length": 1, "x-overflow": "reject-publish"})
    ch.queue_declare("other")
    ch.queue_bind("q", "amq.fanout", "")
    ch.queue_bind("other", "amq.fanout", "")
    ch.confirm_delivery()
    ch.basic_publish("amq.fanout", "", b"0")
    with pytest.raises(NackError):  # (as pika's BlockingChannel)
        ch.basic_publish("amq.fanout", "", b"1")
    # RabbitMQ nacks with multiple=true when nothing else is unconfirmed.
    assert ch.confirms == [(1, False, True), (2, True, False)]
    assert bodies(ch, "q") == [b"0"]
    assert bodies(ch, "other") == [b"0", b"1"]  # the other queue still took it


def test_reject_publish_without_confirms_drops(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q", arguments={"x-max-length": 1, "x-overflow": "reject-publish"})
    ch.basic_publish("", "q", b"0")
    ch.basic_publish("", "q", b"1")
    assert bodies(ch, "q") == [b"0"]


def test_a_queue_counts_its_persistent_ready_messages_as_they_come_and_go() -> None:
    """What the management API shows as messages_persistent, kept without a look at each
    message (a listing of a queue of a million durable messages must not walk them)."""
    broker = Broker()
    ch = broker.connect().channel()
    ch.queue_declare("q", durable=True)
    for body, mode in ((b"aa", 2), (b"b", 1), (b"ccc", 2), (b"d", None)):
        ch.basic_publish("", "q", body, properties={"delivery_mode": mode} if mode else {})
    queue = broker.queues["q"]
    assert queue.persistent == (2, 5)
    got = ch.basic_get("q")
    assert got is not None
    assert queue.persistent == (1, 3)
    ch.basic_nack(got.delivery_tag, requeue=True)
    assert queue.persistent == (2, 5)
    broker.restart()
    assert (broker.queues["q"].message_count, broker.queues["q"].persistent) == (2, (2, 5))
    broker.connect().channel().queue_purge("q")
    assert broker.queues["q"].persistent == (0, 0)
    broker._check()
