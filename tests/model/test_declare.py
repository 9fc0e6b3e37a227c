"""Declaring, deleting and binding, with RabbitMQ's checks and reply texts."""

from __future__ import annotations

import pytest

from embroker import Broker
from embroker.client import Channel, ChannelClosed
from embroker.errors import (
    AccessRefused,
    CommandInvalid,
    NotFound,
    PreconditionFailed,
    ResourceLocked,
)


def test_vhost_has_the_standard_exchanges(broker: Broker) -> None:
    assert {name: x.type for name, x in broker.exchanges.items()} == {
        "": "direct", "amq.direct": "direct", "amq.fanout": "fanout", "amq.topic": "topic",
        "amq.headers": "headers", "amq.match": "headers", "amq.rabbitmq.trace": "topic"}


def test_exchange_redeclare_with_same_arguments_is_ok(ch: Channel) -> None:
    ch.exchange_declare("x", "topic", durable=True, arguments={"alternate-exchange": "ae"})
    ch.exchange_declare("x", "topic", durable=True, arguments={"alternate-exchange": "ae"})
    ch.exchange_declare("amq.direct", "direct", durable=True)  # existing amq.* names are fine


@pytest.mark.parametrize(("kwargs", "text"), [
    ({"exchange_type": "fanout"},
     "inequivalent arg 'type' for exchange 'x' in vhost '/': received 'fanout' but current is 'direct'"),
    ({"durable": True},
     "inequivalent arg 'durable' for exchange 'x' in vhost '/': received 'true' but current is 'false'"),
    ({"auto_delete": True},
     "inequivalent arg 'auto_delete' for exchange 'x' in vhost '/': received 'true' but current is 'false'"),
    ({"internal": True},
     "inequivalent arg 'internal' for exchange 'x' in vhost '/': received 'true' but current is 'false'"),
    ({"arguments": {"alternate-exchange": "ae"}},
     "inequivalent arg 'alternate-exchange' for exchange 'x' in vhost '/': "
     "received the value 'ae' of type 'longstr' but current is none"),
])
def test_exchange_redeclare_not_equivalent_is_precondition_failed(
        broker: Broker, kwargs: dict[str, object], text: str) -> None:
    ch = broker.connect().channel()
    ch.exchange_declare("x", "direct")
    with pytest.raises(PreconditionFailed) as err:
        ch.exchange_declare("x", **kwargs)  # type: ignore[arg-type]
    assert err.value.reply_text == f"PRECONDITION_FAILED - {text}"
    assert ch.is_closed
    with pytest.raises(ChannelClosed):
        ch.queue_declare("q")


def test_exchange_other_arguments_are_not_compared(ch: Channel) -> None:
    ch.exchange_declare("x", "direct", arguments={"foo": 1})
    ch.exchange_declare("x", "direct", arguments={"foo": 2})


def test_passive_exchange_declare(ch: Channel, broker: Broker) -> None:
    ch.exchange_declare("x", "fanout")
    ch.exchange_declare("x", "direct", passive=True)  # passive ignores the type, as RabbitMQ
    with pytest.raises(NotFound) as err:
        ch.exchange_declare("nope", passive=True)
    assert err.value.reply_text == "NOT_FOUND - no exchange 'nope' in vhost '/'"


def test_amq_prefix_is_reserved(ch: Channel) -> None:
    with pytest.raises(AccessRefused) as err:
        ch.exchange_declare("amq.mine", "direct")
    assert err.value.reply_text == ("ACCESS_REFUSED - exchange name 'amq.mine' contains reserved "
                                    "prefix 'amq.*'")


def test_unknown_exchange_type_closes_the_connection(broker: Broker) -> None:
    conn = broker.connect()
    ch = conn.channel()
    with pytest.raises(CommandInvalid) as err:
        ch.exchange_declare("x", "x-nonsense")
    assert err.value.reply_code == 503
    assert err.value.reply_text == "COMMAND_INVALID - unknown exchange type 'x-nonsense'"
    assert not conn.is_open
    assert broker.connections == {}


def test_exchange_delete_if_unused(ch: Channel, broker: Broker) -> None:
    ch.exchange_declare("x", "fanout")
    ch.queue_declare("q")
    ch.queue_bind("q", "x")
    with pytest.raises(PreconditionFailed) as err:
        ch.exchange_delete("x", if_unused=True)
    assert err.value.reply_text == "PRECONDITION_FAILED - exchange 'x' in vhost '/' in use"
    ch = broker.connect().channel()
    ch.exchange_delete("x")
    assert "x" not in broker.exchanges
    assert broker.queues["q"].bindings == {}
    ch.exchange_delete("x")  # a missing exchange is fine


def test_auto_delete_exchange_goes_with_its_last_binding(ch: Channel, broker: Broker) -> None:
    ch.exchange_declare("x", "fanout", auto_delete=True)
    ch.queue_declare("q1")
    ch.queue_declare("q2")
    ch.queue_bind("q1", "x")
    ch.queue_bind("q2", "x")
    ch.queue_unbind("q1", "x")
    assert "x" in broker.exchanges
    ch.queue_delete("q2")
    assert "x" not in broker.exchanges


def test_auto_delete_exchange_without_bindings_stays(ch: Channel, broker: Broker) -> None:
    ch.exchange_declare("x", "fanout", auto_delete=True)
    assert "x" in broker.exchanges


def test_server_named_queue(ch: Channel, broker: Broker) -> None:
    ok = ch.queue_declare("")
    assert ok.queue.startswith("amq.gen-")
    assert len(ok.queue) == len("amq.gen-") + 22
    assert (ok.message_count, ok.consumer_count) == (0, 0)
    ch.queue_bind("", "amq.fanout", "")  # '' means the last queue declared on this channel
    assert ok.queue in {b.destination.name for b in broker.exchanges["amq.fanout"].bindings.values()}


def test_empty_queue_name_without_declared_queue_is_not_found(ch: Channel) -> None:
    with pytest.raises(NotFound):
        ch.queue_purge("")


def test_queue_declare_counts(ch: Channel) -> None:
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"1")
    ch.basic_publish("", "q", b"2")
    ch.basic_consume("q", lambda *a: None)
    ok = ch.queue_declare("q", passive=True)
    assert (ok.message_count, ok.consumer_count) == (0, 1)


@pytest.mark.parametrize(("kwargs", "text"), [
    ({"durable": True},
     "inequivalent arg 'durable' for queue 'q' in vhost '/': received 'true' but current is 'false'"),
    ({"auto_delete": True},
     "inequivalent arg 'auto_delete' for queue 'q' in vhost '/': received 'true' but current is 'false'"),
    ({"arguments": {"x-message-ttl": 100}},
     "inequivalent arg 'x-message-ttl' for queue 'q' in vhost '/': "
     "received the value '100' of type 'signedint' but current is none"),
])
def test_queue_redeclare_not_equivalent(broker: Broker, kwargs: dict[str, object], text: str) -> None:
    ch = broker.connect().channel()
    ch.queue_declare("q")
    with pytest.raises(PreconditionFailed) as err:
        ch.queue_declare("q", **kwargs)  # type: ignore[arg-type]
    assert err.value.reply_text == f"PRECONDITION_FAILED - {text}"


def test_queue_unknown_arguments_are_not_compared(ch: Channel) -> None:
    ch.queue_declare("q", arguments={"my-arg": 1})
    ch.queue_declare("q", arguments={"my-arg": 2})


def test_exclusive_queue_is_locked_to_its_connection(broker: Broker) -> None:
    owner = broker.connect()
    owner.channel().queue_declare("ex", exclusive=True)
    other = broker.connect().channel()
    for action in (lambda c: c.queue_declare("ex", passive=True),
                   lambda c: c.queue_declare("ex", exclusive=True),
                   lambda c: c.basic_get("ex"),
                   lambda c: c.queue_purge("ex"),
                   lambda c: c.queue_delete("ex"),
                   lambda c: c.queue_bind("ex", "amq.fanout", "")):
        with pytest.raises(ResourceLocked) as err:
            action(other)
        assert err.value.reply_text.startswith(
            "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'ex' in vhost '/'")
        other = broker.connect().channel()
    owner.close()
    assert "ex" not in broker.queues


def test_redeclaring_an_exclusive_queue_as_shared_is_locked(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.queue_declare("ex", exclusive=True)
    with pytest.raises(ResourceLocked):
        ch.queue_declare("ex")


def test_exclusive_queue_is_never_durable(ch: Channel, broker: Broker) -> None:
    ch.queue_declare("ex", exclusive=True, durable=True)
    assert not broker.queues["ex"].durable


def test_queue_delete_conditions_and_count(ch: Channel, broker: Broker) -> None:
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"1")
    with pytest.raises(PreconditionFailed) as err:
        ch.queue_delete("q", if_empty=True)
    assert err.value.reply_text == "PRECONDITION_FAILED - queue 'q' in vhost '/' not empty"
    ch = broker.connect().channel()
    ch.basic_qos(prefetch_count=1)
    ch.basic_consume("q", lambda *a: None, auto_ack=False)
    other = broker.connect().channel()
    with pytest.raises(PreconditionFailed) as err:
        other.queue_delete("q", if_unused=True)
    assert err.value.reply_text == "PRECONDITION_FAILED - queue 'q' in vhost '/' in use"
    other = broker.connect().channel()
    other.basic_publish("", "q", b"2")
    assert other.queue_delete("q") == 1  # one ready; the other is unacknowledged
    assert other.queue_delete("q") == 0  # deleting a missing queue is fine


def test_queue_purge_returns_count_and_keeps_unacked(ch: Channel, broker: Broker) -> None:
    ch.queue_declare("q")
    for i in range(3):
        ch.basic_publish("", "q", b"%d" % i)
    got = ch.basic_get("q")
    assert ch.queue_purge("q") == 2
    assert got is not None
    ch.basic_nack(got.delivery_tag)
    assert broker.queues["q"].message_count == 1


def test_bind_errors(ch: Channel, broker: Broker) -> None:
    ch.queue_declare("q")
    with pytest.raises(NotFound) as err:
        ch.queue_bind("q", "nope", "k")
    assert err.value.reply_text == "NOT_FOUND - no exchange 'nope' in vhost '/'"
    ch = broker.connect().channel()
    with pytest.raises(NotFound) as err:
        ch.queue_bind("nope", "amq.direct", "k")
    assert err.value.reply_text == "NOT_FOUND - no queue 'nope' in vhost '/'"
    ch = broker.connect().channel()
    with pytest.raises(AccessRefused) as refused:
        ch.queue_bind("q", "", "k")
    assert refused.value.reply_text == "ACCESS_REFUSED - operation not permitted on the default exchange"


def test_unbinding_a_missing_binding_is_ok(ch: Channel) -> None:
    ch.queue_declare("q")
    ch.queue_unbind("q", "amq.direct", "never-bound")
    assert ch.is_open


def test_binding_twice_is_one_binding(ch: Channel, broker: Broker) -> None:
    ch.queue_declare("q")
    ch.queue_bind("q", "amq.direct", "k")
    ch.queue_bind("q", "amq.direct", "k")
    assert len(broker.exchanges["amq.direct"].bindings) == 1


def test_unbind_never_fails_for_missing_things(ch: Channel) -> None:
    """RabbitMQ 3.10 answers unbind-ok for a missing binding, exchange or queue."""
    ch.queue_unbind("no-queue", "amq.direct", "k")
    ch.queue_unbind("no-queue", "no-exchange", "k")
    ch.exchange_unbind("no-dest", "no-source", "k")
    assert ch.is_open


def test_unbinding_another_connections_exclusive_queue(broker: Broker) -> None:
    owner = broker.connect().channel()
    owner.queue_declare("ex", exclusive=True)
    owner.queue_bind("ex", "amq.direct", "k")
    other = broker.connect().channel()
    other.queue_unbind("ex", "amq.direct", "not-bound")  # nothing to unbind: ok
    with pytest.raises(ResourceLocked):
        other.queue_unbind("ex", "amq.direct", "k")
