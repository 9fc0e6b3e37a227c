"""``Channel.basic_publish`` returns what the publish came to (:class:`PublishOutcome`): the
confirm sequence number, the queues it reached in order, whether a queue refused it, whether it
was returned, whether a transaction holds it. AMQP 1.0's outcomes and the management API's
``routed`` are read from it; direct reply-to's "routed or returned" is decided by the model
alone, by the broker's profile."""

from __future__ import annotations

from embroker import Broker
from embroker.faults import Faults
from embroker.model import Channel, PublishOutcome, Returned


def _channel(broker: Broker) -> Channel:
    return broker.open_connection("/").open_channel(1)


def test_a_publish_outside_confirm_mode_names_the_queues_it_reached_in_routing_order() -> None:
    broker = Broker()
    ch = _channel(broker)
    ch.exchange_declare("fan", "fanout")
    for name in ("b", "a", "c"):
        ch.queue_declare(name)
        ch.queue_bind(name, "fan")
    outcome = ch.basic_publish("fan", "", b"m")
    assert outcome == PublishOutcome(0, ("a", "b", "c"))
    assert outcome.routed == broker.trace[-1].queues


def test_a_confirmed_publish_carries_its_sequence_number() -> None:
    broker = Broker()
    ch = _channel(broker)
    ch.queue_declare("q")
    ch.confirm_select()
    assert [ch.basic_publish("", "q", b"m").seq for _ in range(3)] == [1, 2, 3]
    assert ch.basic_publish("", "nowhere", b"m").seq == 4


def test_an_unroutable_publish_reaches_nothing_and_is_returned_only_when_mandatory() -> None:
    broker = Broker()
    ch = _channel(broker)
    events: list[object] = []
    ch.listener = events.append
    dropped = ch.basic_publish("amq.direct", "none", b"m")
    assert (dropped.routed, dropped.returned, dropped.accepted) == ((), False, True)
    returned = ch.basic_publish("amq.direct", "none", b"m", mandatory=True)
    assert (returned.routed, returned.returned, returned.accepted) == ((), True, True)
    assert [type(event) for event in events] == [Returned]  # the return is still sent


def test_a_message_a_full_queue_refuses_is_routed_but_not_accepted() -> None:
    broker = Broker()
    ch = _channel(broker)
    ch.queue_declare("full", arguments={"x-max-length": 0, "x-overflow": "reject-publish"})
    ch.confirm_select()
    outcome = ch.basic_publish("", "full", b"m")
    assert (outcome.seq, outcome.routed, outcome.accepted) == (1, ("full",), False)


def test_an_injected_nack_is_not_accepted() -> None:
    broker = Broker()
    ch = _channel(broker)
    ch.queue_declare("q")
    ch.confirm_select()
    Faults(broker).nack_publishes(1)
    assert ch.basic_publish("", "q", b"m").accepted is False
    assert ch.basic_publish("", "q", b"m").accepted is True


def test_a_transactional_publish_is_held_and_routes_nothing_yet() -> None:
    broker = Broker()
    ch = _channel(broker)
    ch.queue_declare("q")
    ch.tx_select()
    assert ch.basic_publish("", "q", b"m") == PublishOutcome(held=True)
    assert broker.queues["q"].message_count == 0


def _reply_address(broker: Broker) -> tuple[Channel, str]:
    requester = _channel(broker)
    requester.basic_consume("amq.rabbitmq.reply-to", no_ack=True)
    requester.queue_declare("rpc")
    requester.basic_publish("", "rpc", b"ask", {"reply_to": "amq.rabbitmq.reply-to"})
    address = broker.queues["rpc"].messages[0].properties["reply_to"]
    return requester, address


def test_a_mandatory_reply_is_returned_as_rabbitmq_3_10_returns_it() -> None:
    """rabbit_exchange:route/2 (v3.10.8) delivers a reply beside routing: it reaches its
    requester, and no queue, so a mandatory one comes back too."""
    broker = Broker()
    _requester, address = _reply_address(broker)
    outcome = _channel(broker).basic_publish("", address, b"answer", mandatory=True)
    assert (outcome.routed, outcome.returned) == ((), True)


def test_a_reply_is_routed_to_its_volatile_queue_as_rabbitmq_4_2_routes_it() -> None:
    """RabbitMQ 4.2 (v4.2.0 release notes): a reply address is a volatile queue; a reply counts
    as routed there, whether or not the requester is still there, and is not returned."""
    broker = Broker(as_rabbitmq="4.2.x")
    requester, address = _reply_address(broker)
    responder = _channel(broker)
    outcome = responder.basic_publish("", address, b"answer", mandatory=True)
    assert (outcome.routed, outcome.returned) == ((address,), False)
    requester.close()
    assert responder.basic_publish("", address, b"late", mandatory=True).routed == (address,)


def test_excluded_queues_are_taken_from_the_routed_ones_before_the_outcome() -> None:
    # (MQTT 5's No Local: RabbitMQ's drop_local/2 filters the routed queues, so a publish that
    # reached only excluded queues reached nothing, in confirm mode and in a transaction too)
    broker = Broker()
    ch = _channel(broker)
    ch.exchange_declare("fan", "fanout")
    for name in ("a", "b"):
        ch.queue_declare(name)
        ch.queue_bind(name, "fan")
    ch.confirm_select()
    assert ch.basic_publish("fan", "", b"m", exclude=("a",)).routed == ("b",)
    assert ch.basic_publish("fan", "", b"m", exclude={"a", "b"}).routed == ()
    tx = _channel(broker)
    tx.tx_select()
    tx.basic_publish("fan", "", b"t", exclude=("b",))
    tx.tx_commit()
    assert [broker.queues[n].message_count for n in ("a", "b")] == [1, 1]
