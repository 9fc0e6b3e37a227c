"""The adapter kit's destinations: RabbitMQ 3.10's ``rabbit_routing_util`` grammar
(``parse_endpoint/2``) and the subscription made over a model channel (``ensure_endpoint/5``,
``ensure_binding/3``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embroker import Broker
from embroker.errors import AccessRefused, NotFound
from embroker.kit import (
    DESTINATION_PREFIXES,
    Destination,
    DestinationError,
    DestinationErrorKind,
    DestinationType,
    ensure_binding,
    ensure_endpoint,
    parse_destination,
    private_queue,
    subscribe,
)
from embroker.model import Channel

E, Q, AQ = DestinationType.EXCHANGE, DestinationType.QUEUE, DestinationType.AMQQUEUE
T, TQ, RQ = DestinationType.TOPIC, DestinationType.TEMP_QUEUE, DestinationType.REPLY_QUEUE


# -- the grammar ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("jobs", Destination(Q, "jobs")),
    ("", Destination(Q, "")),
    ("a%2Fb", Destination(Q, "a/b")),
    ("/queue/jobs", Destination(Q, "jobs")),
    ("/queue/a%2Fb", Destination(Q, "a/b")),
    ("/amq/queue/jobs", Destination(AQ, "jobs")),
    ("/topic/a.*.c", Destination(T, "a.*.c")),
    ("/topic/a%2Fb", Destination(T, "a/b")),
    ("/exchange/x", Destination(E, "x", None)),
    ("/exchange/x/", Destination(E, "x", "")),
    ("/exchange/x/k", Destination(E, "x", "k")),
    ("/exchange/a%2Fb/c%2Fd", Destination(E, "a/b", "c/d")),
    ("/temp-queue/replies", Destination(TQ, "replies")),
    ("/reply-queue/amq.gen-1", Destination(RQ, "amq.gen-1")),
    ("/reply-queue/a/b%2Fc", Destination(RQ, "a/b/c")),
])
def test_each_form_of_the_grammar_parses_to_its_destination(text: str,
                                                            expected: Destination) -> None:
    assert parse_destination(text) == expected


def test_only_an_upper_case_percent_2f_is_decoded() -> None:
    """rabbit_routing_util:unescape/1 decodes ``%2F`` and nothing else: no escape is bad."""
    assert parse_destination("/queue/a%2fb%20c%").name == "a%2fb%20c%"


def test_the_anonymous_queue_is_a_destination_only_when_allowed() -> None:
    assert parse_destination("/queue", allow_anonymous_queue=True) == Destination(Q, None)
    with pytest.raises(DestinationError) as refused:
        parse_destination("/queue")
    assert (refused.value.kind, refused.value.type, refused.value.rest) == (
        DestinationErrorKind.MISSING_NAME, Q, "")


@pytest.mark.parametrize(("text", "kind", "type_", "rest"), [
    ("/nowhere/x", DestinationErrorKind.UNKNOWN_PREFIX, None, ""),
    ("no/such/form", DestinationErrorKind.UNKNOWN_PREFIX, None, ""),
    ("/amq/exchange/x", DestinationErrorKind.UNKNOWN_PREFIX, None, ""),
    ("/reply-queue", DestinationErrorKind.UNKNOWN_PREFIX, None, ""),
    ("/", DestinationErrorKind.UNKNOWN_PREFIX, None, ""),
    ("/exchange", DestinationErrorKind.MISSING_NAME, E, ""),
    ("/topic", DestinationErrorKind.MISSING_NAME, T, ""),
    ("/amq/queue", DestinationErrorKind.MISSING_NAME, AQ, ""),
    ("/temp-queue", DestinationErrorKind.MISSING_NAME, TQ, ""),
    ("/exchange/", DestinationErrorKind.EMPTY_NAME, E, "/"),
    ("/exchange//k", DestinationErrorKind.EMPTY_NAME, E, "//k"),
    ("/queue/", DestinationErrorKind.EMPTY_NAME, Q, "/"),
    ("/reply-queue/", DestinationErrorKind.EMPTY_NAME, RQ, "/"),
    ("/queue/a/b", DestinationErrorKind.EXTRA_SEGMENTS, Q, "/a/b"),
    ("/queue//", DestinationErrorKind.EXTRA_SEGMENTS, Q, "//"),
    ("/topic/a/b", DestinationErrorKind.EXTRA_SEGMENTS, T, "/a/b"),
    ("/exchange/x/k/z", DestinationErrorKind.EXTRA_SEGMENTS, E, "/x/k/z"),
])
def test_each_refusal_says_its_kind_type_and_what_followed_the_prefix(
        text: str, kind: DestinationErrorKind, type_: DestinationType | None, rest: str) -> None:
    with pytest.raises(DestinationError) as refused:
        parse_destination(text, allow_anonymous_queue=True)
    error = refused.value
    assert (error.kind, error.type, error.rest, error.destination) == (kind, type_, rest, text)
    assert error.invalid == (kind is not DestinationErrorKind.UNKNOWN_PREFIX)


def test_the_routing_of_each_form_is_parse_routing() -> None:
    assert [parse_destination(d).routing for d in (
        "/exchange/x", "/exchange/x/k", "/topic/t", "/queue/q", "/amq/queue/q",
        "/reply-queue/r")] == [("x", ""), ("x", "k"), ("amq.topic", "t"), ("", "q"),
                               ("", "q"), ("", "r")]


@pytest.mark.parametrize("destination", [Destination(Q, ""), Destination(E, "", "k"),
                                         Destination(Q, "a%2Fb"), Destination(E, "x", "%2F"),
                                         Destination(Q, "q", "k")])
def test_a_name_the_grammar_cannot_carry_is_not_rendered(destination: Destination) -> None:
    with pytest.raises(DestinationError) as refused:
        destination.render()
    assert refused.value.kind is DestinationErrorKind.UNREPRESENTABLE


def test_the_prefixes_are_rabbitmqs() -> None:
    assert set(DESTINATION_PREFIXES) == {"/exchange/", "/queue/", "/amq/queue/", "/topic/",
                                         "/temp-queue/", "/reply-queue/"}


_names = st.text(min_size=1).filter(lambda name: "%2F" not in name)


@st.composite
def destinations(draw: st.DrawFn) -> Destination:
    kind = draw(st.sampled_from(DestinationType))
    if kind is Q and draw(st.booleans()):
        return Destination(Q, None)
    key = draw(st.none() | st.text().filter(lambda k: "%2F" not in k)) if kind is E else None
    return Destination(kind, draw(_names), key)


@settings(max_examples=300, deadline=None)
@given(destinations())
def test_a_rendered_destination_parses_back_to_itself(destination: Destination) -> None:
    assert parse_destination(destination.render(),
                             allow_anonymous_queue=True) == destination


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["/", "%", "2", "F", "a", "", "queue", "exchange", "amq",
                                  "topic", "temp-queue", "reply-queue"])).map("".join)
       | st.text(), st.booleans())
def test_any_text_parses_or_raises_the_typed_error(text: str, anonymous: bool) -> None:
    error: DestinationError | None = None
    try:
        parsed = parse_destination(text, allow_anonymous_queue=anonymous)
    except DestinationError as refused:
        error = refused
    if error is None:
        assert parsed.name is not None or (parsed.type is Q and anonymous)
    else:
        assert error.kind in (DestinationErrorKind.UNKNOWN_PREFIX,
                              DestinationErrorKind.MISSING_NAME,
                              DestinationErrorKind.EMPTY_NAME,
                              DestinationErrorKind.EXTRA_SEGMENTS)
        assert error.destination == text


# -- queues, bindings and subscriptions over a model channel ---------------------------------------

def _channel(broker: Broker, user: str | None = None) -> Channel:
    return broker.open_connection("/", user=user).open_channel(1)


def test_a_subscription_to_an_exchange_is_a_private_queue_bound_and_consumed_then_gone(
        broker: Broker) -> None:
    channel = _channel(broker)
    subscription = subscribe(channel, parse_destination("/exchange/amq.topic/a.*"),
                             check_exchange=True)
    name = subscription.queue
    queue = broker.queues[name]
    assert name.startswith("amq.gen-")
    assert subscription.own_queue
    assert (queue.exclusive_owner, queue.auto_delete, queue.durable) == (
        channel.connection, True, False)
    assert [(b.source.name, b.routing_key) for b in queue.bindings.values()] == [
        ("amq.topic", "a.*")]
    tag = subscription.consume(no_ack=True)
    assert broker.queues[name].consumer_count == 1
    assert channel.consumers[tag].queue is queue
    channel.basic_publish("amq.topic", "a.b", b"hello")
    assert list(broker.trace[-1].queues) == [name]
    subscription.close()
    assert name not in broker.queues
    assert tag not in channel.consumers
    assert not [b for b in broker.vhosts["/"].exchanges["amq.topic"].bindings.values()
                if b.destination.name == name]
    subscription.close()  # twice: nothing more


def test_a_subscription_not_auto_delete_is_deleted_by_close_with_no_consumer(
        broker: Broker) -> None:
    channel = _channel(broker)
    subscription = subscribe(channel, parse_destination("/topic/x.#"), exclusive=True,
                             auto_delete=False)
    assert not broker.queues[subscription.queue].auto_delete
    subscription.close()
    assert subscription.queue not in broker.queues


def test_a_private_queue_is_unbound_and_goes_with_close(broker: Broker) -> None:
    channel = _channel(broker)
    subscription = private_queue(channel, exclusive=True, auto_delete=False)
    queue = broker.queues[subscription.queue]
    assert queue.exclusive_owner is channel.connection
    assert not queue.auto_delete
    subscription.close()
    assert subscription.queue not in broker.queues


def test_a_subscription_to_a_queue_declares_it_and_close_leaves_it(broker: Broker) -> None:
    channel = _channel(broker)
    subscription = subscribe(channel, parse_destination("/queue/kit-jobs"))
    assert (subscription.queue, subscription.own_queue) == ("kit-jobs", False)
    assert broker.queues["kit-jobs"].durable
    subscription.consume("c1")
    subscription.close()
    assert "kit-jobs" in broker.queues
    assert "c1" not in channel.consumers


def test_a_missing_exchange_is_the_channels_not_found_before_any_queue(
        broker: Broker) -> None:
    channel = _channel(broker)
    with pytest.raises(NotFound, match="no exchange 'kit-missing' in vhost '/'"):
        subscribe(channel, parse_destination("/exchange/kit-missing/k"), check_exchange=True)
    assert not [name for name in broker.queues if name.startswith("amq.gen-")]


def test_a_refused_binding_surfaces_the_models_error_and_leaves_no_queue(
        broker: Broker) -> None:
    broker.add_user("kit-noread", "pw")
    broker.set_permissions("kit-noread", ".*", ".*", "^amq\\.gen-")
    channel = _channel(broker, "kit-noread")
    with pytest.raises(AccessRefused, match=r"access to exchange 'amq\.topic' in vhost '/' "
                                            "refused for user 'kit-noread'"):
        subscribe(channel, parse_destination("/topic/a.#"))
    assert not [name for name in broker.queues if name.startswith("amq.gen-")]


def test_a_refused_private_queue_surfaces_the_models_error(broker: Broker) -> None:
    broker.add_user("kit-noconf", "pw")
    broker.set_permissions("kit-noconf", "", ".*", ".*")
    channel = _channel(broker, "kit-noconf")
    with pytest.raises(AccessRefused, match=r"access to queue 'amq\.gen-.*' in vhost '/' "
                                            "refused for user 'kit-noconf'"):
        subscribe(channel, parse_destination("/exchange/amq.fanout"))
    assert not [name for name in broker.queues if name.startswith("amq.gen-")]


def test_a_refused_consume_surfaces_the_models_error(broker: Broker) -> None:
    broker.add_user("kit-noread-q", "pw")
    broker.set_permissions("kit-noread-q", ".*", ".*", "^amq\\.topic$")
    channel = _channel(broker, "kit-noread-q")
    subscription = subscribe(channel, parse_destination("/topic/k"))
    with pytest.raises(AccessRefused, match=r"access to queue 'amq\.gen-.*' in vhost '/' "
                                            "refused for user 'kit-noread-q'"):
        subscription.consume()
    subscription.close()
    assert subscription.queue not in broker.queues


def test_ensure_endpoint_declares_only_what_a_form_needs(broker: Broker) -> None:
    channel = _channel(broker)
    assert ensure_endpoint(channel, parse_destination("/exchange/amq.direct/k"), "dest",
                           check_exchange=True) is None
    assert ensure_endpoint(channel, parse_destination("/topic/k"), "dest") is None
    assert ensure_endpoint(channel, parse_destination("/queue", allow_anonymous_queue=True),
                           "dest") is None
    assert ensure_endpoint(channel, parse_destination("/amq/queue/kit-absent")) == "kit-absent"
    assert "kit-absent" not in broker.queues
    assert ensure_endpoint(channel, parse_destination("/queue/kit-q"), durable=False,
                           exclusive=False, auto_delete=False) == "kit-q"
    queue = broker.queues["kit-q"]
    assert (queue.durable, queue.exclusive_owner, queue.auto_delete) == (False, None, False)
    with pytest.raises(DestinationError) as refused:
        ensure_endpoint(channel, parse_destination("/temp-queue/t"))
    assert refused.value.kind is DestinationErrorKind.INVALID_ENDPOINT


def test_ensure_binding_to_the_default_exchange_binds_nothing(broker: Broker) -> None:
    channel = _channel(broker)
    channel.queue_declare("kit-b")
    ensure_binding(channel, "kit-b", "", "kit-b")
    ensure_binding(channel, "kit-b", "amq.direct", "k")
    assert [(b.source.name, b.routing_key) for b in broker.queues["kit-b"].bindings.values()] == [
        ("amq.direct", "k")]
