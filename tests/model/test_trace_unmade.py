"""A routed publish's decision is made when the trace is first read after it (issue #49: the
publish path keeps only its fields): what a reader sees is the decision it would have seen had
it been made at once, in order, with the message's history, within the trace's bounds."""

from __future__ import annotations

from embroker import Broker
from embroker.model import RoutingDecision


def test_a_decision_read_after_its_publish_is_whole() -> None:
    broker = Broker()
    ch = broker.connect().channel()
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"one", mandatory=True)
    decision = broker.trace[-1]
    assert isinstance(decision, RoutingDecision)
    assert (decision.vhost, decision.exchange, decision.keys, decision.queues,
            decision.mandatory, decision.body) == ("/", "", ("q",), ("q",), True, b"one")
    assert decision.outcome == "routed"
    assert broker.trace[-1] is decision  # made once


def test_the_history_recorded_before_the_read_is_the_decisions() -> None:
    broker = Broker()
    ch = broker.connect().channel()
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"one")
    assert ch.basic_get("q", auto_ack=True) is not None  # an event before any read
    assert [event.kind for event in broker.trace[-1].history()] == ["got"]


def test_decisions_made_late_keep_their_order_among_those_made_at_once() -> None:
    broker = Broker(trace_limit=50)
    ch = broker.connect().channel()
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"a")
    ch.basic_publish("", "nowhere", b"b")  # unroutable: the general path records it at once
    ch.basic_publish("", "q", b"c")
    ch.basic_publish("", "q", b"x" * 5000)  # the byte budget counts it: recorded at once
    ch.basic_publish("", "q", b"e")
    assert [d.body[:1] for d in broker.trace] == [b"a", b"b", b"c", b"x", b"e"]
    assert broker.trace.total == 5
    broker.trace._check()


def test_decisions_not_yet_made_go_by_count_like_the_others() -> None:
    broker = Broker(trace_limit=3)
    ch = broker.connect().channel()
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"x" * 5000)  # counted by the budget, then pushed out by count
    for body in (b"1", b"2", b"3", b"4"):
        ch.basic_publish("", "q", body)
    assert broker.trace.kept_bytes == 0
    assert [d.body for d in broker.trace] == [b"2", b"3", b"4"]
    assert len(broker.trace) == 3
    assert broker.trace.total == 5
    broker.trace._check()


def test_pop_and_clear_see_the_decisions_not_yet_made() -> None:
    broker = Broker()
    ch = broker.connect().channel()
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"1")
    ch.basic_publish("", "q", b"2")
    assert broker.trace.pop().body == b"2"
    assert [d.body for d in broker.trace] == [b"1"]
    ch.basic_publish("", "q", b"3")
    broker.trace.clear()
    assert len(broker.trace) == 0
    assert list(broker.trace) == []
    ch.basic_publish("", "q", b"4")
    assert [d.body for d in broker.trace] == [b"4"]
