"""Routing decisions and their explanations."""

from __future__ import annotations

import contextlib
import datetime

from embroker import Broker
from embroker.client import Channel
from embroker.errors import NotFound
from embroker.fieldtypes import Long, Short


def test_explain_names_the_binding_that_differs_by_one_word(broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("events", "topic")
    ch.queue_declare("audit")
    ch.queue_bind("audit", "events", "order.*.created")
    ch.basic_publish("events", "order.eu.create", b"{}")
    decision = broker.trace[-1]
    assert decision.outcome == "unroutable"
    text = decision.explain()
    assert "reached no queue: dropped" in text
    assert "no match -> queue 'audit'" in text
    assert "word 3 is 'create', the pattern wants 'created'" in text


def test_explain_headers_mismatch(broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("h", "headers")
    ch.queue_declare("q")
    ch.queue_bind("q", "h", "", {"x-match": "all", "kind": "order", "region": "eu"})
    ch.basic_publish("h", "", b"", {"headers": {"kind": "order", "region": "us"}})
    assert 'header \'region\' is "us", the binding wants "eu"' in broker.trace[-1].explain()


def test_explain_shows_headers_as_json_not_python_reprs(broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("h", "headers")
    ch.queue_declare("q")
    ch.queue_bind("q", "h", "", {"x-match": "all", "retries": "1", "t": {"a": Short(1)}})
    sent = datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)
    ch.basic_publish("h", "", b"", {"headers": {"retries": Long(1), "sent": sent,
                                                "t": {"a": Long(1)}}})
    text = str(broker.trace[-1].explain())
    assert 'headers {"retries": 1, "sent": 1767312000, "t": {"a": 1}}' in text
    assert 'header \'retries\' is 1, the binding wants "1"' in text
    # Equal as JSON, apart as AMQP types (inside a table RabbitMQ compares types too): the
    # types say why.
    assert """header 't' is {"a": 1 (long)}, the binding wants {"a": 1 (short)}""" in text


def test_explain_default_exchange_and_missing_queue(broker: Broker, ch: Channel) -> None:
    ch.basic_publish("", "jobs", b"", mandatory=True)
    text = broker.trace[-1].explain()
    assert "returned to the publisher" in text
    assert "there is no queue 'jobs'" in text


def test_explain_alternate_exchange_path(broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("ae", "fanout")
    ch.exchange_declare("x", "direct", arguments={"alternate-exchange": "ae"})
    ch.queue_declare("lost")
    ch.queue_bind("lost", "ae")
    ch.basic_publish("x", "k", b"")
    text = broker.trace[-1].explain()
    assert "passed on to its alternate exchange 'ae'" in text
    assert "routed to 1 queue(s): 'lost'" in text


def test_explanation_keeps_the_bindings_of_the_moment(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q")
    ch.queue_bind("q", "amq.direct", "k")
    ch.basic_publish("amq.direct", "k", b"")
    ch.queue_unbind("q", "amq.direct", "k")
    assert "matched  -> queue 'q'" in broker.trace[-1].explain()


def test_refused_publish_is_traced(broker: Broker, ch: Channel) -> None:
    with contextlib.suppress(NotFound):
        ch.basic_publish("missing", "k", b"")
    assert broker.trace[-1].outcome == "refused"
    assert "NOT_FOUND - no exchange 'missing'" in broker.trace[-1].explain()


def test_trace_is_bounded() -> None:
    broker = Broker(trace_limit=3)
    ch = broker.connect().channel()
    for i in range(5):
        ch.basic_publish("", f"k{i}", b"")
    assert [d.routing_key for d in broker.trace] == ["k2", "k3", "k4"]


def test_reprs_are_readable(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q", durable=True)
    ch.queue_bind("q", "amq.topic", "a.*")
    ch.basic_publish("amq.topic", "a.b", b"x")
    assert repr(broker.queues["q"]) == "<queue 'q' in vhost '/' durable: 1 ready, 0 unacked, 0 consumers>"
    assert repr(broker.trace[-1]) == (
        "<RoutingDecision exchange='amq.topic' routing_key='a.b' -> queues ['q']>")
    (binding,) = broker.exchanges["amq.topic"].bindings.values()
    assert repr(binding) == "<Binding exchange 'amq.topic' -> queue 'q' with key 'a.*'>"


def test_trace_lets_old_large_bodies_go_past_its_byte_budget() -> None:
    broker = Broker(trace_bytes=10_000)
    ch = broker.connect().channel()
    for i in range(5):
        ch.basic_publish("", f"k{i}", b"x" * 4096)
    assert len(broker.trace) == 5  # every decision stays...
    assert broker.trace.body_bytes == 8192
    assert [d.body_dropped for d in broker.trace] == [True, True, True, False, False]
    assert broker.trace[0].body == b""  # ...but the oldest large bodies went
    assert broker.trace[0].routing_key == "k0"
    ch.basic_publish("", "nowhere", b"x" * 50_000)  # the newest is always kept
    assert broker.trace[-1].body == b"x" * 50_000


def test_trace_offers_no_deque_method_that_bypasses_the_lock_or_the_budget() -> None:
    """The trace wraps its storage: what is left is reading (under the broker's lock) and the
    two removals that give the byte budget back (``pop``, ``clear``)."""
    trace = Broker().trace
    unsafe = ["append", "appendleft", "extend", "extendleft", "popleft", "remove", "rotate",
              "insert", "reverse", "__setitem__", "__delitem__", "__iadd__", "__imul__"]
    assert [name for name in unsafe if hasattr(trace, name)] == []


def test_trace_slices_are_lists_of_decisions() -> None:
    broker = Broker()
    ch = broker.connect().channel()
    for i in range(4):
        ch.basic_publish("", f"k{i}", b"")
    assert [d.routing_key for d in broker.trace[-2:]] == ["k2", "k3"]
    assert [d.routing_key for d in broker.trace[::-2]] == ["k3", "k1"]
    assert broker.trace[1].routing_key == "k1"
    assert broker.trace.index(broker.trace[2]) == 2
    assert broker.trace[-1] in broker.trace


def test_trace_pop_and_clear_give_the_byte_budget_back() -> None:
    broker = Broker(trace_bytes=100_000)
    ch = broker.connect().channel()
    for i in range(3):
        ch.basic_publish("", f"k{i}", b"x" * 5000)
    ch.basic_publish("", "small", b"x")
    assert broker.trace.kept_bytes == 15_000
    assert broker.trace.pop().routing_key == "small"  # a small one: nothing counted
    assert broker.trace.kept_bytes == 15_000
    assert broker.trace.pop().routing_key == "k2"
    assert broker.trace.kept_bytes == 10_000
    broker.trace._check()
    broker.trace.clear()
    assert broker.trace.kept_bytes == 0
    assert len(broker.trace) == 0
    broker.trace._check()
    ch.basic_publish("", "again", b"x" * 5000)
    assert broker.trace.kept_bytes == 5000
    broker._check()
