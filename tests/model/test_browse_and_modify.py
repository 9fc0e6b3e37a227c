"""The model operations the AMQP 1.0 layer reads and settles through: ``Channel.browse`` (checked
as basic.consume is), ``Channel.check_publish`` (what a link to an exchange is checked for when it
attaches) and ``Channel.modify`` with the failed deliveries it counts."""

from __future__ import annotations

import pytest

from embroker import Broker
from embroker.errors import AccessRefused, NotFound, PreconditionFailed, ResourceLocked
from embroker.model import Channel, Delivered
from embroker.model._events import ChannelEvent


def model_channel(broker: Broker, user: str | None = None) -> Channel:
    return broker.open_connection("/", user=user).open_channel(1)


def user(broker: Broker, name: str, configure: str, write: str, read: str) -> Channel:
    broker.add_user(name, "pw")
    broker.set_permissions(name, configure, write, read)
    return model_channel(broker, name)


@pytest.fixture
def broker() -> Broker:
    broker = Broker()
    ch = broker.connect().channel()
    ch.queue_declare("q")
    for body in (b"m0", b"m1", b"m2"):
        ch.basic_publish("", "q", body)
    return broker


# -- browse ---------------------------------------------------------------------------------------

def test_browse_shows_each_ready_message_once_without_taking_it(broker: Broker) -> None:
    browser = model_channel(broker).browse("q")
    assert [e.message.body for e in browser.take(2)] == [b"m0", b"m1"]
    assert [e.message.body for e in browser.take(5)] == [b"m2"]
    assert browser.take(5) == []
    broker.connect().channel().basic_publish("", "q", b"m3")
    assert [e.message.body for e in browser.take(5)] == [b"m3"]
    assert broker.queues["q"].message_count == 4


def test_browse_passes_over_what_its_selector_refuses_for_good(broker: Broker) -> None:
    browser = model_channel(broker).browse("q")
    assert [e.message.body for e in browser.take(5, lambda m: m.body != b"m1")] == [b"m0", b"m2"]
    assert browser.take(5) == []


def test_browse_of_a_priority_queue_shows_every_message_once(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.queue_declare("p", arguments={"x-max-priority": 5})
    ch.basic_publish("", "p", b"low", properties={"priority": 1})
    ch.basic_publish("", "p", b"high", properties={"priority": 5})
    browser = model_channel(broker).browse("p")
    assert [e.message.body for e in browser.take(1)] == [b"high"]
    ch.basic_publish("", "p", b"higher-later", properties={"priority": 5})
    assert [e.message.body for e in browser.take(5)] == [b"higher-later", b"low"]


def test_browse_needs_read_permission(broker: Broker) -> None:
    ch = user(broker, "alice", ".*", ".*", "")
    with pytest.raises(AccessRefused) as refused:
        ch.browse("q")
    assert refused.value.text == "access to queue 'q' in vhost '/' refused for user 'alice'"


def test_browse_of_another_connections_exclusive_queue_is_locked(broker: Broker) -> None:
    owner = model_channel(broker)
    owner.queue_declare("mine", exclusive=True)
    with pytest.raises(ResourceLocked):
        model_channel(broker).browse("mine")
    assert owner.browse("mine").take(1) == []


def test_browse_checks_read_permission_before_existence(broker: Broker) -> None:
    """basic.consume's order (RabbitMQ: the tag, read permission, then the queue)."""
    ch = user(broker, "alice", ".*", ".*", "^q$")
    with pytest.raises(AccessRefused):
        ch.browse("missing")
    with pytest.raises(NotFound):
        model_channel(broker).browse("missing")


# -- check_publish --------------------------------------------------------------------------------

def test_check_publish_needs_write_permission_then_an_existing_public_exchange(
        broker: Broker) -> None:
    ch = user(broker, "bob", ".*", "^amq\\.default$", ".*")
    ch.check_publish("")
    with pytest.raises(AccessRefused) as refused:
        ch.check_publish("amq.topic")
    assert refused.value.text == ("access to exchange 'amq.topic' in vhost '/' refused for user "
                                  "'bob'")
    guest = model_channel(broker)
    with pytest.raises(NotFound) as missing:
        guest.check_publish("nowhere")
    assert missing.value.text == "no exchange 'nowhere' in vhost '/'"
    with pytest.raises(AccessRefused) as internal:
        guest.check_publish("amq.rabbitmq.trace")
    assert internal.value.text == ("cannot publish to internal exchange 'amq.rabbitmq.trace' "
                                   "in vhost '/'")
    assert len(broker.trace) == 3  # the fixture's publishes: nothing more


# -- modify ---------------------------------------------------------------------------------------

def deliveries(ch: Channel) -> list[Delivered]:
    seen: list[Delivered] = []

    def listen(event: ChannelEvent) -> None:
        if isinstance(event, Delivered):
            seen.append(event)
    ch.listener = listen
    return seen


def test_modified_delivery_failed_counts_a_failed_delivery_and_requeues(broker: Broker) -> None:
    ch = model_channel(broker)
    seen = deliveries(ch)
    ch.basic_qos(prefetch_count=1)
    ch.start_consumer(ch.basic_consume("q", "c"))
    assert (seen[-1].message.body, seen[-1].failures) == (b"m0", 0)
    ch.modify(seen[-1].delivery_tag, delivery_failed=True)
    assert (seen[-1].message.body, seen[-1].redelivered, seen[-1].failures) == (b"m0", True, 1)
    ch.modify(seen[-1].delivery_tag, delivery_failed=True)
    assert seen[-1].failures == 2
    ch.modify(seen[-1].delivery_tag)  # not failed: requeued, not counted
    assert (seen[-1].message.body, seen[-1].failures) == (b"m0", 2)
    ch.basic_reject(seen[-1].delivery_tag, requeue=True)  # a plain requeue: not counted
    assert (seen[-1].message.body, seen[-1].failures) == (b"m0", 2)


def test_rejections_count_a_failed_delivery_carried_to_the_dead_letter_copy(
        broker: Broker) -> None:
    """RabbitMQ 4 counts a discard as a failed delivery (rabbit_fifo's ``#discard{}`` settles
    with delivery-failed true) and carries the count to the dead-letter queue (4.3's classic
    queues: "CQ: Propagate delivery-count to DLQs"); ``modified`` with undeliverable-here
    counts only when delivery-failed is set too."""
    setup = broker.connect().channel()
    setup.queue_declare("dead")
    setup.queue_declare("dl", arguments={"x-dead-letter-exchange": "",
                                         "x-dead-letter-routing-key": "dead"})
    for body in (b"a", b"b", b"c"):
        setup.basic_publish("", "dl", body)
    ch = model_channel(broker)
    seen = deliveries(ch)
    ch.start_consumer(ch.basic_consume("dl", "c"))
    a, b, c = seen
    ch.modify(a.delivery_tag, delivery_failed=True)  # requeued with one failure
    again = seen[-1]
    ch.basic_reject(again.delivery_tag, requeue=False)  # and a second, dead-lettered
    ch.modify(b.delivery_tag, undeliverable_here=True)  # discarded, not counted
    ch.modify(c.delivery_tag, delivery_failed=True, undeliverable_here=True)
    reader = model_channel(broker)
    got = deliveries(reader)
    reader.start_consumer(reader.basic_consume("dead", "r"))
    assert [(d.message.body, d.failures) for d in got] == [(b"a", 2), (b"b", 0), (b"c", 1)]


def test_modify_of_an_unknown_tag_is_406(broker: Broker) -> None:
    with pytest.raises(PreconditionFailed, match="unknown delivery tag 7"):
        model_channel(broker).modify(7, delivery_failed=True)
