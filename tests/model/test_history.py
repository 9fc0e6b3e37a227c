"""The trace tells the truth: refused publishes, and each message's life after routing."""

from __future__ import annotations

import pytest

from embroker import Broker, ManualClock
from embroker.client import Channel
from embroker.errors import NackError
from embroker.model._history import LIMIT


def kinds(broker: Broker, index: int = -1) -> list[str]:
    return [e.kind for e in broker.trace.snapshot()[index].history()]


def states(decision) -> list[tuple[str, str]]:
    return [(f.queue, f.state) for f in decision.fate()]


# -- refused by a full queue ---------------------------------------------------------------------

def test_a_queue_that_refuses_a_publish_is_not_listed_as_reached(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("tiny", arguments={"x-max-length": 1, "x-overflow": "reject-publish"})
    ch.confirm_delivery()
    ch.basic_publish("", "tiny", b"1")
    with pytest.raises(NackError):  # (as pika's BlockingChannel)
        ch.basic_publish("", "tiny", b"2")
    decision = broker.trace[-1]
    assert decision.queues == ()
    assert decision.refused == (("tiny", "reject-publish"),)
    assert decision.outcome == "overflow"
    assert decision.nacked
    assert ch.confirms[-1] == (2, True, False)  # what the client saw: a nack
    text = decision.explain()
    assert "reached queues, but every one refused it" in text
    assert "refused by queue 'tiny': full (x-overflow reject-publish)" in text
    assert "the publisher's confirm was a nack" in text
    assert "routed to" not in text
    assert repr(decision) == ("<RoutingDecision exchange='' routing_key='tiny' -> overflow, "
                              "refused by 'tiny' (reject-publish)>")
    assert broker.trace[-2].outcome == "routed"
    assert not broker.trace[-2].nacked


def test_one_full_queue_among_several(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("ok")
    ch.queue_declare("full", arguments={"x-max-length": 0, "x-overflow": "reject-publish-dlx"})
    ch.queue_bind("ok", "amq.fanout")
    ch.queue_bind("full", "amq.fanout")
    ch.basic_publish("amq.fanout", "", b"x")
    decision = broker.trace[-1]
    assert decision.queues == ("ok",)
    assert decision.refused == (("full", "reject-publish-dlx"),)
    assert decision.outcome == "routed"
    assert "routed to 1 queue(s): 'ok'" in decision.explain()
    assert states(decision) == [("full", "refused"), ("ok", "ready")]


def test_drop_head_eviction_is_recorded_and_followed_to_the_dead_letter_queue(
        broker: Broker, ch: Channel) -> None:
    ch.queue_declare("evicted")
    ch.queue_declare("q", arguments={"x-max-length": 1, "x-dead-letter-exchange": "",
                                     "x-dead-letter-routing-key": "evicted"})
    ch.basic_publish("", "q", b"first")
    first = broker.trace[-1]
    ch.basic_publish("", "q", b"second")
    assert [e.kind for e in first.history()] == ["evicted", "dead_lettered"]
    dead = first.history()[-1]
    assert (dead.queue, dead.reason, dead.exchange) == ("q", "maxlen", "")
    assert dead.decision is not None
    assert dead.decision.queues == ("evicted",)
    text = first.explain()
    assert text.splitlines()[-2:] == [
        "  now: queue 'q': dead-lettered (maxlen) to exchange '', reaching 'evicted'",
        "       then queue 'evicted': ready, waiting for a consumer"]


def test_drop_head_without_dead_letter_exchange(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q", arguments={"x-max-length": 1})
    ch.basic_publish("", "q", b"first")
    first = broker.trace[-1]
    ch.basic_publish("", "q", b"second")
    assert states(first) == [("q", "evicted")]
    assert "pushed out by the queue's length limit (drop-head) and dropped" in first.explain()


# -- consumers and acknowledgements --------------------------------------------------------------

def test_delivery_ack_and_the_fate_in_between(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("jobs")
    held = []
    tag = ch.basic_consume("jobs", lambda c, d, p, b: held.append(d), consumer_tag="worker")
    ch.basic_publish("", "jobs", b"x")
    decision = broker.trace[-1]
    (delivered,) = decision.history()
    assert delivered.kind == "delivered"
    assert (delivered.queue, delivered.consumer_tag, delivered.channel) == ("jobs", tag, 1)
    assert delivered.connection == ch.connection.model.name
    assert (delivered.delivery_tag, delivered.redelivered, delivered.auto_ack) == (1, False, False)
    assert states(decision) == [("jobs", "unacked")]
    assert decision.explain().endswith(
        f"now: queue 'jobs': delivered to consumer 'worker' on {ch.connection.model.name}, "
        "channel 1 (delivery tag 1, not acknowledged yet)")
    ch.basic_ack(held[0].delivery_tag)
    assert kinds(broker) == ["delivered", "acked"]
    assert states(decision) == [("jobs", "acked")]


def test_nack_with_requeue_then_redelivery(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("jobs")
    ch.basic_publish("", "jobs", b"x")
    first = ch.basic_get("jobs")
    ch.basic_nack(first.delivery_tag, requeue=True)
    assert states(broker.trace[-1]) == [("jobs", "ready")]
    second = ch.basic_get("jobs")
    ch.basic_reject(second.delivery_tag, requeue=False)
    events = broker.trace[-1].history()
    assert [e.kind for e in events] == ["got", "rejected", "requeued", "got", "rejected"]
    assert events[1].cause == "basic.nack"
    assert events[1].requeue
    assert events[2].cause == "basic.nack"
    assert events[3].redelivered
    assert events[4].cause == "basic.reject"
    assert events[4].requeue is False
    assert states(broker.trace[-1]) == [("jobs", "rejected")]
    assert str(events[4]).startswith("rejected in queue 'jobs' by basic.reject without requeue")


def test_requeue_causes(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q")
    for body in (b"a", b"b", b"c"):
        ch.basic_publish("", "q", body)
    a, b, c = broker.trace.snapshot()[-3:]
    ch.basic_get("q")
    ch.basic_recover(requeue=True)
    assert a.history()[-1].cause == "basic.recover"
    other = broker.connect().channel()
    other.basic_get("q")
    other.basic_get("q")  # a and b
    other.close()
    assert a.history()[-1].cause == b.history()[-1].cause == "channel closed"
    third = broker.connect()
    third.channel().basic_get("q")
    third.close()
    assert a.history()[-1].cause == "connection closed"
    assert c.history() == []


def test_auto_ack_consumer_means_consumed(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q")
    ch.basic_consume("q", lambda *a: None, auto_ack=True)
    ch.basic_publish("", "q", b"x")
    (fate,) = broker.trace[-1].fate()
    assert fate.state == "consumed"
    assert "auto-ack, so done with" in str(fate)


def test_acks_in_a_transaction_count_at_commit(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"x")
    ch.tx_select()
    delivery = ch.basic_get("q")
    ch.basic_ack(delivery.delivery_tag)
    assert kinds(broker) == ["got"]
    ch.tx_commit()
    assert kinds(broker) == ["got", "acked"]


# -- leaving a queue without a client ------------------------------------------------------------

def test_expiry_and_dead_lettering_with_a_manual_clock() -> None:
    clock = ManualClock()
    broker = Broker(clock=clock)
    ch = broker.connect().channel()
    ch.queue_declare("dead")
    ch.queue_declare("q", arguments={"x-message-ttl": 5000, "x-dead-letter-exchange": "",
                                     "x-dead-letter-routing-key": "dead"})
    ch.basic_publish("", "q", b"x")
    decision = broker.trace[-1]
    clock.advance(5)
    expired, dead = decision.history()
    assert (expired.kind, expired.queue, expired.time) == ("expired", "q", 5.0)
    assert (dead.kind, dead.reason) == ("dead_lettered", "expired")
    assert dead.decision is broker.trace[-1]
    assert broker.trace[-1].dead_letter == ("q", "expired")
    ch.basic_get("dead", auto_ack=True)
    assert decision.explain().splitlines()[-1].startswith(
        "       then queue 'dead': taken by basic.get on ")


def test_purge_delete_restart_and_delivery_limit(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("p")
    ch.basic_publish("", "p", b"x")
    ch.queue_purge("p")
    assert states(broker.trace[-1]) == [("p", "purged")]
    ch.basic_publish("", "p", b"y")
    ch.queue_delete("p")
    assert states(broker.trace[-1]) == [("p", "deleted")]
    ch.queue_declare("durable", durable=True)
    ch.basic_publish("", "durable", b"kept", properties={"delivery_mode": 2})
    ch.basic_publish("", "durable", b"lost")
    broker.restart()
    assert states(broker.trace[-2]) == [("durable", "ready")]
    assert states(broker.trace[-1]) == [("durable", "lost")]
    ch = broker.connect().channel()
    ch.queue_declare("qq", durable=True, arguments={"x-queue-type": "quorum",
                                                     "x-delivery-limit": 0})
    ch.basic_publish("", "qq", b"z")
    ch.basic_nack(ch.basic_get("qq").delivery_tag, requeue=True)
    assert kinds(broker) == ["got", "rejected", "requeued", "delivery_limit"]
    assert states(broker.trace[-1]) == [("qq", "delivery_limit")]


def test_returned_and_direct_reply_to(broker: Broker, ch: Channel) -> None:
    ch.basic_publish("", "nowhere", b"x", mandatory=True)
    assert kinds(broker) == ["returned"]
    assert broker.trace[-1].fate() == []
    replies = []
    ch.basic_consume("amq.rabbitmq.reply-to", lambda c, d, p, b: replies.append(b), auto_ack=True)
    ch.queue_declare("rpc")
    ch.basic_publish("", "rpc", b"ask", properties={"reply_to": "amq.rabbitmq.reply-to"})
    address = ch.basic_get("rpc", auto_ack=True).properties["reply_to"]
    ch.basic_publish("", address, b"answer")
    assert replies == [b"answer"]
    assert states(broker.trace[-1]) == [("amq.rabbitmq.reply-to", "consumed")]


# -- bounded, and switched off -------------------------------------------------------------------

def test_a_message_keeps_a_bounded_number_of_events(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"x")
    for _ in range(LIMIT * 3):
        ch.basic_nack(ch.basic_get("q").delivery_tag, requeue=True)
    events = broker.trace[-1].history()
    assert len(events) <= LIMIT
    assert events[0].kind == "truncated"
    assert events[0].dropped is not None
    assert events[0].dropped + len(events) - 1 == LIMIT * 3 * 3
    assert events[-1].kind == "requeued"
    assert states(broker.trace[-1]) == [("q", "ready")]


def test_events_can_be_switched_off() -> None:
    broker = Broker(trace_events=False)
    ch = broker.connect().channel()
    ch.queue_declare("q", arguments={"x-max-length": 0, "x-overflow": "reject-publish"})
    ch.basic_publish("", "q", b"x")
    decision = broker.trace[-1]
    assert decision.history() == []
    assert decision.fate() == [("q", "ready", None)]
    assert decision.queues == ("q",)  # without events the refusal is not known


# -- reading -------------------------------------------------------------------------------------

def test_explanation_displays_as_text_in_the_repl(broker: Broker, ch: Channel) -> None:
    ch.basic_publish("amq.topic", "a.b", b"x")
    text = broker.trace[-1].explain()
    assert isinstance(text, str)
    assert repr(text) == str(text) == text
    assert "\n" in repr(text)


def test_decision_json(broker: Broker, ch: Channel) -> None:
    ch.basic_publish("amq.topic", "a", b'{"order":1}')
    assert broker.trace[-1].json() == {"order": 1}
    ch.basic_publish("amq.topic", "a", b"not json")
    with pytest.raises(ValueError, match="the body is not JSON"):
        broker.trace[-1].json()


def test_history_of_a_message_found_in_a_queue(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"x")
    (message,) = broker.queues["q"].messages
    assert broker.decision_of(message) is broker.trace[-1]
    delivery = ch.basic_get("q")
    assert broker.decision_of(delivery.message) is broker.trace[-1]
    assert [e.kind for e in broker.history(delivery.message)] == ["got"]


# -- the policies behind a limit -----------------------------------------------------------------

def test_events_name_the_policies_behind_the_limit_that_acted() -> None:
    clock = ManualClock()
    broker = Broker(clock=clock)
    broker.set_policy("short", "^q$", {"message-ttl": 100})
    broker.set_operator_policy("cap", "^q$", {"max-length": 1})
    broker.set_policy("full", "^r$", {"max-length": 0, "overflow": "reject-publish"})
    ch = broker.connect().channel()
    ch.queue_declare("q")
    ch.queue_declare("r")
    ch.basic_publish("", "q", b"evicted")
    ch.basic_publish("", "q", b"expired")
    ch.basic_publish("", "r", b"refused")
    clock.advance(0.1)
    evicted, expired, refused = (broker.trace[i].history()[-1] for i in range(3))
    assert (evicted.kind, evicted.cause) == ("evicted", "max-length 1 from operator policy 'cap'")
    assert str(evicted) == ("evicted in queue 'q' (x-max-length, drop-head, max-length 1 from "
                            "operator policy 'cap')")
    assert (expired.kind, expired.cause) == ("expired", "message-ttl 100 ms from policy 'short'")
    assert str(refused) == ("refused in queue 'r': the queue was full (x-overflow reject-publish, "
                            "max-length 0 from policy 'full', overflow reject-publish from "
                            "policy 'full')")
    assert str(broker.trace[1].fate()[0]) == (
        "queue 'q': expired (TTL, message-ttl 100 ms from policy 'short') and dropped")


def test_a_limit_from_the_queues_own_arguments_names_no_policy(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q", arguments={"x-max-length": 1})
    ch.basic_publish("", "q", b"1")
    ch.basic_publish("", "q", b"2")
    evicted = broker.trace[0].history()[-1]
    assert (evicted.kind, evicted.cause) == ("evicted", None)
    assert str(evicted) == "evicted in queue 'q' (x-max-length, drop-head)"
