"""Routing as RabbitMQ routes: every exchange type, e2e bindings, alternate exchanges, CC/BCC."""

from __future__ import annotations

import datetime
import decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embroker import Broker
from embroker.client import Channel
from embroker.errors import AccessRefused, NotFound, PreconditionFailed

from ..oracles import topic_matches
from .conftest import bodies


def routed(broker: Broker) -> tuple[str, ...]:
    return broker.trace[-1].queues


def test_direct_exchange_routes_on_equal_key(broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("x", "direct")
    for q in ("a", "b"):
        ch.queue_declare(q)
    ch.queue_bind("a", "x", "k1")
    ch.queue_bind("b", "x", "k2")
    ch.basic_publish("x", "k1", b"1")
    assert routed(broker) == ("a",)
    ch.basic_publish("x", "k3", b"3")
    assert routed(broker) == ()
    assert broker.trace[-1].outcome == "unroutable"


def test_fanout_ignores_the_routing_key(broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("x", "fanout")
    for q in ("b", "a"):
        ch.queue_declare(q)
        ch.queue_bind(q, "x", "whatever")
    ch.basic_publish("x", "other", b"m")
    assert routed(broker) == ("a", "b")  # RabbitMQ delivers in queue-name order (usort)


def test_default_exchange_routes_to_the_queue_named_by_the_key(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("jobs")
    ch.basic_publish("", "jobs", b"m")
    assert bodies(ch, "jobs") == [b"m"]


def test_default_exchange_to_missing_queue_drops_or_returns(broker: Broker, ch: Channel) -> None:
    ch.basic_publish("", "nowhere", b"m")
    assert broker.trace[-1].outcome == "unroutable"
    assert ch.returned == []
    ch.basic_publish("", "nowhere", b"m", mandatory=True)
    returned_decision = broker.trace[-1]
    assert returned_decision.outcome == "returned"
    (returned,) = ch.returned
    assert (returned.reply_code, returned.reply_text, returned.routing_key) == (312, "NO_ROUTE", "nowhere")


def test_message_reaches_a_queue_once_through_several_matching_bindings(
        broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("t", "topic")
    ch.queue_declare("q")
    for pattern in ("a.*", "#", "a.b", "*.b", "#.#"):
        ch.queue_bind("q", "t", pattern)
    ch.basic_publish("t", "a.b", b"m")
    assert bodies(ch, "q") == [b"m"]
    assert len(broker.trace[-1].matched) == 5


@pytest.mark.parametrize(("pattern", "key", "matches"), [
    ("a.*", "a.b", True),
    ("a.*", "a", False),
    ("a.*", "a.", True),        # '*' matches an empty word
    ("*", "", False),            # '' has no words at all
    ("#", "", True),
    ("", "", True),
    ("#.a", "a", True),
    ("a.#", "a", True),
    ("a.#.b", "a.b", True),
    ("a.#.b", "a.x.y.b", True),
    ("#.#", "a.b.c", True),
    ("a..b", "a..b", True),
    ("a.*.b", "a..b", True),
    ("*.*", ".", True),
    ("#.*", "", False),
    ("*.#.*", "a", False),
    ("*.#.*", "a.b", True),
])
def test_topic_wildcards(pattern: str, key: str, matches: bool) -> None:
    broker = Broker()
    ch = broker.connect().channel()
    ch.exchange_declare("t", "topic")
    ch.queue_declare("q")
    ch.queue_bind("q", "t", pattern)
    ch.basic_publish("t", key, b"m")
    assert (routed(broker) == ("q",)) is matches


words = st.sampled_from(["a", "b", ""])
patterns = st.lists(st.sampled_from(["a", "b", "", "*", "#"]), max_size=5).map(".".join)
keys = st.lists(words, max_size=5).map(".".join)


@settings(max_examples=300, deadline=None)
@given(patterns=st.lists(patterns, min_size=1, max_size=8, unique=True), key=keys)
def test_topic_trie_agrees_with_pattern_matching(patterns: list[str], key: str) -> None:
    """The trie (what routes) agrees with the reference matcher of the tests."""
    broker = Broker()
    ch = broker.connect().channel()
    ch.exchange_declare("t", "topic")
    for i, pattern in enumerate(patterns):
        ch.queue_declare(f"q{i}")
        ch.queue_bind(f"q{i}", "t", pattern)
    ch.basic_publish("t", key, b"m")
    expected = {f"q{i}" for i, p in enumerate(patterns)
                if topic_matches(p, key)}
    assert set(routed(broker)) == expected


def test_topic_unbind_prunes_and_keeps_others(broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("t", "topic")
    ch.queue_declare("q")
    ch.queue_bind("q", "t", "a.b.c")
    ch.queue_bind("q", "t", "a.#")
    ch.queue_unbind("q", "t", "a.b.c")
    ch.basic_publish("t", "a.b.c", b"m")
    assert routed(broker) == ("q",)
    ch.queue_unbind("q", "t", "a.#")
    ch.basic_publish("t", "a.b.c", b"m")
    assert routed(broker) == ()
    assert broker.exchanges["t"]._trie._root.children == {}  # type: ignore[attr-defined]


# -- headers ---------------------------------------------------------------------------------


def _headers_route(binding: dict[str, object], headers: dict[str, object] | None) -> bool:
    broker = Broker()
    ch = broker.connect().channel()
    ch.exchange_declare("h", "headers")
    ch.queue_declare("q")
    ch.queue_bind("q", "h", "", binding)
    ch.basic_publish("h", "", b"m", {"headers": headers} if headers is not None else None)
    return routed(broker) == ("q",)


@pytest.mark.parametrize(("binding", "headers", "matches"), [
    ({"x-match": "all", "a": 1, "b": "x"}, {"a": 1, "b": "x"}, True),
    ({"x-match": "all", "a": 1, "b": "x"}, {"a": 1}, False),
    ({"x-match": "any", "a": 1, "b": "x"}, {"a": 1}, True),
    ({"x-match": "any", "a": 1, "b": "x"}, {"c": 1}, False),
    ({"a": 1}, {"a": 1, "c": 2}, True),                      # all is the default
    ({"x-match": "all"}, {}, True),                          # no patterns: all matches
    ({"x-match": "any"}, {"a": 1}, False),                   # no patterns: any never does
    ({"x-match": "all"}, None, True),
    ({"x-match": "all", "a": 1}, None, False),
    ({"x-match": "all", "x-foo": "bar"}, {}, True),          # x- arguments are ignored...
    ({"x-match": "all-with-x", "x-foo": "bar"}, {}, False),  # ...unless -with-x
    ({"x-match": "all-with-x", "x-foo": "bar"}, {"x-foo": "bar"}, True),
    ({"x-match": "any-with-x", "x-foo": "bar", "a": 1}, {"x-foo": "bar"}, True),
    ({"x-match": "all", "a": None}, {"a": "anything"}, True),  # void: presence only
    ({"x-match": "all", "a": None}, {}, False),
])
def test_headers_matching(binding: dict[str, object], headers: dict[str, object] | None,
                          matches: bool) -> None:
    assert _headers_route(binding, headers) is matches


@pytest.mark.parametrize(("want", "have", "matches"), [
    (1, 1, True),
    (1, "1", False),            # a header 1 and "1" differ
    (1, 1.0, True),             # numbers compare by value, as Erlang's ==
    (True, 1, False),           # booleans are not numbers
    (True, True, True),
    ("abc", b"abc", True),      # longstr and byte array are both binaries
    (5, datetime.datetime.fromtimestamp(5, datetime.timezone.utc), True),  # timestamps are ints
    (decimal.Decimal("1.0"), decimal.Decimal("1.00"), False),  # scale matters
    (decimal.Decimal("1.5"), decimal.Decimal("1.5"), True),
    ([1, "a"], [1, "a"], True),
])
def test_headers_typed_comparison(want: object, have: object, matches: bool) -> None:
    assert _headers_route({"x-match": "all", "k": want}, {"k": have}) is matches


def test_headers_binding_with_bad_x_match_is_refused(ch: Channel) -> None:
    ch.exchange_declare("h", "headers")
    ch.queue_declare("q")
    with pytest.raises(PreconditionFailed, match="Invalid x-match field value"):
        ch.queue_bind("q", "h", "", {"x-match": "some"})
    assert ch.is_closed


@pytest.mark.parametrize(("x_match", "shown"), [
    (1000.0, "double (value 1.0e3)"),
    (0.5, "double (value 0.5)"),
    ([1.5, 2e20], "array (value [{double,1.5},{double,2.0e20}])"),
])
def test_bad_x_match_type_prints_floats_as_erlang(
        ch: Channel, x_match: object, shown: str) -> None:
    # Measured on RabbitMQ 3.10.8 with py-amqp (pika cannot send doubles).
    ch.exchange_declare("h", "headers")
    ch.queue_declare("q")
    with pytest.raises(PreconditionFailed) as refused:
        ch.queue_bind("q", "h", "", {"x-match": x_match})
    assert refused.value.reply_text == (
        f"PRECONDITION_FAILED - Invalid x-match field type {shown}; expected longstr")


# -- exchange-to-exchange and alternate exchanges ----------------------------------------------


def test_exchange_to_exchange_binding_routes_through(broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("up", "topic")
    ch.exchange_declare("down", "direct")
    ch.exchange_bind("down", "up", "orders.#")
    ch.queue_declare("q")
    ch.queue_bind("q", "down", "orders.eu")
    ch.basic_publish("up", "orders.eu", b"m")
    assert routed(broker) == ("q",)
    assert [b.source.name for b in broker.trace[-1].matched] == ["up", "down"]
    ch.exchange_unbind("down", "up", "orders.#")
    ch.basic_publish("up", "orders.eu", b"m")
    assert routed(broker) == ()


def test_exchange_cycle_delivers_once(broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("a", "fanout")
    ch.exchange_declare("b", "fanout")
    ch.exchange_bind("b", "a")
    ch.exchange_bind("a", "b")
    ch.queue_declare("q")
    ch.queue_bind("q", "a")
    ch.queue_bind("q", "b")
    ch.basic_publish("b", "", b"m")
    assert bodies(ch, "q") == [b"m"]


def test_alternate_exchange_takes_unmatched_messages(broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("ae", "fanout")
    ch.queue_declare("unrouted")
    ch.queue_bind("unrouted", "ae")
    ch.exchange_declare("x", "direct", arguments={"alternate-exchange": "ae"})
    ch.queue_declare("q")
    ch.queue_bind("q", "x", "k")
    ch.basic_publish("x", "k", b"1")
    ch.basic_publish("x", "other", b"2", mandatory=True)
    assert bodies(ch, "q") == [b"1"]
    assert bodies(ch, "unrouted") == [b"2"]
    assert ch.returned == []  # the alternate exchange routed it: not returned
    assert broker.trace[-1].alternate_exchanges == ("x",)


def test_alternate_exchanges_chain(broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("ae2", "fanout")
    ch.exchange_declare("ae1", "direct", arguments={"alternate-exchange": "ae2"})
    ch.exchange_declare("x", "direct", arguments={"alternate-exchange": "ae1"})
    ch.queue_declare("last")
    ch.queue_bind("last", "ae2")
    ch.basic_publish("x", "k", b"m")
    assert routed(broker) == ("last",)


def test_alternate_exchange_partway_along_an_exchange_path(broker: Broker, ch: Channel) -> None:
    # 'up' matches (to 'mid'), so its own AE is not used; 'mid' matches nothing, so its AE is.
    ch.exchange_declare("up-ae", "fanout")
    ch.exchange_declare("mid-ae", "fanout")
    ch.exchange_declare("up", "fanout", arguments={"alternate-exchange": "up-ae"})
    ch.exchange_declare("mid", "direct", arguments={"alternate-exchange": "mid-ae"})
    ch.exchange_bind("mid", "up")
    for q, x in (("from-up-ae", "up-ae"), ("from-mid-ae", "mid-ae")):
        ch.queue_declare(q)
        ch.queue_bind(q, x)
    ch.basic_publish("up", "k", b"m")
    assert routed(broker) == ("from-mid-ae",)


def test_missing_alternate_exchange_drops(broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("x", "direct", arguments={"alternate-exchange": "nope"})
    ch.basic_publish("x", "k", b"m", mandatory=True)
    assert routed(broker) == ()
    assert len(ch.returned) == 1


# -- sender-selected distribution ------------------------------------------------------------


def test_cc_and_bcc_add_routing_keys_and_bcc_is_removed(broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("x", "direct")
    for q in ("main", "cc", "bcc"):
        ch.queue_declare(q)
        ch.queue_bind(q, "x", q)
    ch.basic_publish("x", "main", b"m", {"headers": {"CC": ["cc"], "BCC": ["bcc"], "n": 1}})
    assert routed(broker) == ("bcc", "cc", "main")
    for q in ("main", "cc", "bcc"):
        got = ch.basic_get(q, auto_ack=True)
        assert got is not None
        assert got.properties["headers"] == {"CC": ["cc"], "n": 1}
        assert got.routing_key == "main"


def test_cc_that_is_not_an_array_is_refused(ch: Channel) -> None:
    ch.exchange_declare("x", "direct")
    with pytest.raises(PreconditionFailed) as err:
        ch.basic_publish("x", "k", b"m", {"headers": {"CC": "q"}})
    assert "unacceptable_type_in_header" in err.value.reply_text


def test_publish_to_missing_exchange_is_not_found(broker: Broker, ch: Channel) -> None:
    with pytest.raises(NotFound) as err:
        ch.basic_publish("nope", "k", b"m")
    assert err.value.reply_text == "NOT_FOUND - no exchange 'nope' in vhost '/'"
    assert broker.trace[-1].outcome == "refused"


def test_publish_to_internal_exchange_is_refused(ch: Channel) -> None:
    ch.exchange_declare("i", "fanout", internal=True)
    with pytest.raises(AccessRefused) as err:
        ch.basic_publish("i", "", b"m")
    assert err.value.reply_text == "ACCESS_REFUSED - cannot publish to internal exchange 'i' in vhost '/'"
