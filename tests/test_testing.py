"""embroker.testing: queries, assertions and their failure messages, waiting."""

from __future__ import annotations

import asyncio
import re
import threading

import pytest

from embroker import Broker, ManualClock
from embroker.client import Channel
from embroker.errors import AccessRefused, DefinitionsError, NotFound
from embroker.testing import (
    Expectations,
    assert_dead_lettered,
    assert_no_leaks,
    assert_published,
    assert_returned,
    assert_routed,
    assert_routes,
    assert_unroutable,
    async_wait_until,
    key_matches,
    leaks,
    make_broker,
    published,
    queue_messages,
    route,
    wait_until,
)


@pytest.fixture
def ch(broker: Broker) -> Channel:
    ch = broker.connect().channel()
    ch.exchange_declare("events", "topic")
    for queue, key in (("audit", "order.*"), ("billing", "order.paid"), ("users", "user.#")):
        ch.queue_declare(queue)
        ch.queue_bind(queue, "events", key)
    return ch


@pytest.mark.parametrize(("pattern", "key", "hit"), [
    ("a.b", "a.b", True), ("a.b", "a.c", False), ("a.*", "a.b", True), ("a.*", "a", False),
    ("#", "", True), ("#", "a.b.c", True), ("a.#", "a", True), ("a.#.z", "a.z", True),
    ("*.b.#", "x.b", True), ("*", "a.b", False), (re.compile(r"a\.\d+"), "a.12", True),
])
def test_key_patterns_follow_topic_matching(pattern: str, key: str, hit: bool) -> None:
    assert key_matches(pattern, key) is hit


def test_published_filters_and_call_list(broker: Broker, ch: Channel) -> None:
    ch.basic_publish("events", "order.created", b"1", properties={"headers": {"v": 1}})
    ch.basic_publish("events", "order.paid", "2")
    ch.basic_publish("events", "nobody", b"3")
    assert published(broker, exchange="events").call_count == 3
    calls = published(broker, routing_key="order.*")
    assert calls.bodies == [b"1", b"2"]
    assert calls.last.queues == ("audit", "billing")
    assert published(broker, headers={"v": 1}).call_count == 1
    assert published(broker, outcome="unroutable").last.body == b"3"
    assert not published(broker, exchange="other").called
    with pytest.raises(IndexError):
        _ = published(broker, exchange="other").last
    assert_published(broker, exchange="events", routing_key="order.#", count=2, body=None)


def test_assert_published_failure_lists_similar_decisions(broker: Broker, ch: Channel) -> None:
    ch.basic_publish("events", "order.create", b"{}")
    ch.basic_publish("amq.topic", "order.created", b"{}")
    with pytest.raises(AssertionError) as failure:
        assert_published(broker, exchange="events", routing_key="order.created.v1")
    text = str(failure.value)
    assert text.startswith("expected at least one publish(es) with exchange='events' "
                           "routing_key='order.created.v1', found 0 (0 matching, 2 similar)")
    # each similar decision is explained: the bindings there were and why none matched
    assert "no match -> queue 'billing'" in text
    assert "differs in routing_key='order.created.v1'" in text


def test_assert_published_count(broker: Broker, ch: Channel) -> None:
    ch.basic_publish("events", "order.paid", b"")
    with pytest.raises(AssertionError, match="expected 2 publish"):
        assert_published(broker, routing_key="order.paid", count=2)
    with pytest.raises(AssertionError, match="No message was published"):
        assert_published(Broker(), exchange="x")


def test_assert_routed(broker: Broker, ch: Channel) -> None:
    ch.basic_publish("events", "order.paid", b"")
    assert assert_routed(broker, routing_key="order.paid", queues=["billing", "audit"]).routed
    assert_routed(broker, routing_key="order.paid", queues=["audit"], exact=False)
    with pytest.raises(AssertionError, match=r"routed to exactly \['audit'\], but none was"):
        assert_routed(broker, routing_key="order.paid", queues=["audit"])


def test_unroutable_returned(broker: Broker, ch: Channel) -> None:
    ch.basic_publish("events", "user", b"")  # "user.#" matches "user"
    with pytest.raises(AssertionError, match="to be unroutable"):
        assert_unroutable(broker, exchange="events")
    ch.basic_publish("events", "nothing.here", b"")
    assert assert_unroutable(broker, exchange="events").routing_key == "nothing.here"
    with pytest.raises(AssertionError, match="returned to its publisher"):
        assert_returned(broker, routing_key="nothing.here")
    ch.basic_publish("events", "nothing.here", b"", mandatory=True)
    assert_returned(broker, routing_key="nothing.here")


def test_dead_lettered(broker: Broker) -> None:
    clock = ManualClock()
    broker = Broker(clock=clock)
    ch = broker.connect().channel()
    ch.exchange_declare("dlx", "fanout")
    ch.queue_declare("dead")
    ch.queue_bind("dead", "dlx")
    ch.queue_declare("work", arguments={"x-dead-letter-exchange": "dlx", "x-message-ttl": 100})
    ch.basic_publish("", "work", b"job")
    with pytest.raises(AssertionError, match="expected a message dead-lettered"):
        assert_dead_lettered(broker, queue="work")
    clock.advance(0.2)
    decision = assert_dead_lettered(broker, queue="work", reason="expired", to=["dead"])
    assert decision.body == b"job"
    assert [m.body for m in queue_messages(broker, "dead")] == [b"job"]
    assert not published(broker, exchange="dlx").called  # broker republishes are apart
    assert published(broker, exchange="dlx", dead_letters=True).called


def test_a_dead_letter_failure_says_nothing_was_dead_lettered_or_what_was() -> None:
    """(issue 44: it said "differs in queue='work'" of a publish into 'work' itself, when
    nothing had been dead-lettered.)"""
    broker = Broker(clock=ManualClock())
    ch = broker.connect().channel()
    ch.exchange_declare("dlx", "fanout")
    ch.queue_declare("dead")
    ch.queue_bind("dead", "dlx")
    ch.queue_declare("work", arguments={"x-dead-letter-exchange": "dlx", "x-message-ttl": 30_000})
    ch.queue_declare("other", arguments={"x-dead-letter-exchange": "dlx"})
    ch.basic_publish("", "work", b"job")
    with pytest.raises(AssertionError) as refused:
        assert_dead_lettered(broker, queue="work", reason="expired", to=["dead"])
    message = str(refused.value)
    assert message.splitlines()[0] == (
        "expected a message dead-lettered from queue 'work' for 'expired' reaching exactly "
        "['dead'], and nothing was dead-lettered (1 routing decision(s), none a dead-letter)")
    assert "differs in queue=" not in message
    assert "What reached queue 'work':" in message
    assert "now: queue 'work': ready, waiting for a consumer" in message
    # Something else was dead-lettered: from where, why and to where.
    ch.basic_publish("", "other", b"poison")
    delivery = ch.basic_get("other")
    assert delivery is not None
    ch.basic_reject(delivery.delivery_tag, requeue=False)
    with pytest.raises(AssertionError) as refused:
        assert_dead_lettered(broker, queue="work", reason="expired")
    lines = str(refused.value).splitlines()
    assert lines[0] == ("expected a message dead-lettered from queue 'work' for 'expired' "
                        "(0 matching among 1 dead-lettered message(s))")
    assert lines[2] == ("- dead-lettered from queue 'other' (rejected) to ['dead']: "
                        "<RoutingDecision exchange='dlx' routing_key='other' -> queues "
                        "['dead']>  (differs in queue, reason)")
    with pytest.raises(AssertionError) as refused:
        assert_dead_lettered(broker, queue="work", to=iter(["dead"]))  # (any iterable)
    assert str(refused.value).splitlines()[2].endswith("(differs in queue)")


def test_queue_messages_does_not_consume(broker: Broker, ch: Channel) -> None:
    ch.basic_publish("events", "order.paid", b"x")
    assert [m.body for m in queue_messages(broker, "billing")] == [b"x"]
    assert broker.queues["billing"].message_count == 1
    with pytest.raises(AssertionError, match=r"no queue 'bill' in vhost '/'; the queues are"):
        queue_messages(broker, "bill")


def test_route_and_assert_routes_publish_nothing(broker: Broker, ch: Channel) -> None:
    assert route(broker, "events", "order.paid").queues == ("audit", "billing")
    assert len(broker.trace) == 0
    assert broker.queues["audit"].message_count == 0
    assert_routes(broker, "events", {"order.paid": ["audit", "billing"], "x": []})
    with pytest.raises(AssertionError) as failure:
        assert_routes(broker, "events", {"user.created": ["audit"], "order.new": ["audit"]})
    text = str(failure.value)
    assert "1 of 2 routing key(s) of exchange 'events' go elsewhere" in text
    assert "no match -> queue 'audit': " in text


def test_route_refuses_an_internal_or_missing_exchange_as_a_publish_would(
        broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("inner", "fanout", internal=True)
    with pytest.raises(AccessRefused, match="cannot publish to internal exchange 'inner'"):
        route(broker, "inner", "k")
    with pytest.raises(NotFound, match="no exchange 'nope' in vhost '/'"):
        route(broker, "nope", "k")
    assert len(broker.trace) == 0


def test_wait_until_across_threads(broker: Broker, ch: Channel) -> None:
    def later() -> None:
        broker.connect().channel().basic_publish("events", "order.paid", b"")

    timer = threading.Timer(0.02, later)
    timer.start()
    decision = wait_until(lambda: assert_routed(broker, routing_key="order.paid",
                                                queues=["audit", "billing"]), timeout=2)
    assert decision.routed
    with pytest.raises(AssertionError, match=r"not met within 0\.05s; it last failed with:\nexpected"):
        wait_until(lambda: assert_published(broker, exchange="nope"), timeout=0.05)
    with pytest.raises(AssertionError, match="it last returned 0"):
        wait_until(lambda: 0, timeout=0.01)


def test_async_wait_until() -> None:
    async def main() -> None:
        box: list[int] = []
        asyncio.get_running_loop().call_later(0.01, box.append, 1)
        assert await async_wait_until(lambda: box, timeout=1) == [1]

        async def check() -> bool:
            return bool(box)
        assert await async_wait_until(check) is True

    asyncio.run(main())


# -- matchers ------------------------------------------------------------------------------------

def test_json_predicate_and_header_matchers(broker: Broker, ch: Channel) -> None:
    ch.basic_publish("events", "order.created", b'{"order":1,"lines":[1,2]}',
                     properties={"headers": {"attempt": 3, "tenant": "acme"}})
    ch.basic_publish("events", "order.created", b"not json")
    assert published(broker, json={"lines": [1, 2], "order": 1}).call_count == 1
    assert published(broker, json=None).call_count == 0  # JSON null is not "no JSON"
    assert published(broker, headers={"attempt": lambda n: n > 2}).call_count == 1
    assert published(broker, headers={"attempt": lambda n: n > 3}).call_count == 0
    assert published(broker, where=lambda d: d.body.startswith(b"not")).bodies == [b"not json"]
    assert_routed(broker, json={"order": 1, "lines": [1, 2]}, queues=["audit"])
    assert assert_published(broker, json={"order": 1, "lines": [1, 2]}).last.json()["order"] == 1
    with pytest.raises(AssertionError) as failure:
        assert_published(broker, exchange="events", json={"order": 2})
    assert "json={'order': 2}" in str(failure.value)


# -- strict expectations -------------------------------------------------------------------------

def test_expectations_cover_every_publish(broker: Broker, ch: Channel) -> None:
    ch.basic_publish("events", "before", b"")  # made before the block: not counted
    with Expectations(broker) as expect:
        expect.published(routing_key="order.*", count=2)
        expect.published(exchange="events", json={"id": 1}, queues=["users"])
        ch.basic_publish("events", "order.created", b"")
        ch.basic_publish("events", "user.created", b'{"id": 1}')
        ch.basic_publish("events", "order.paid", b"")


def test_expectations_fail_on_unexpected_unmet_and_order(broker: Broker, ch: Channel) -> None:
    expect = Expectations(broker, ordered=True)
    paid = expect.published(routing_key="order.paid")
    expect.published(routing_key="order.created")
    expect.published(routing_key="never")
    ch.basic_publish("events", "order.created", b"")
    ch.basic_publish("events", "order.paid", b"")
    ch.basic_publish("events", "surprise", b"")
    with pytest.raises(AssertionError) as failure:
        expect.verify()
    text = str(failure.value)
    assert text.startswith("3 problem(s) with the expected publishes:")
    assert "- expected at least once, seen 0: routing_key='never'" in text
    assert "- 1 publish(es) no expectation covers:" in text
    assert "<RoutingDecision exchange='events' routing_key='surprise' -> unroutable>" in text
    assert ("- the expectations were first met in another order: routing_key='order.created', "
            "routing_key='order.paid'") in text
    assert paid.calls.last.routing_key == "order.paid"
    Expectations(broker, allow_unexpected=True).verify()


# -- strict mode ---------------------------------------------------------------------------------

def test_leaks_lists_unacked_deliveries(broker: Broker, ch: Channel) -> None:
    assert leaks(broker) == []
    ch.basic_publish("events", "order.paid", b"")
    ch.basic_get("audit")
    ch.basic_publish("events", "nobody.cares", b"")
    (problem,) = leaks(broker)
    assert problem.startswith("1 unacknowledged deliver(ies) on connection ")
    assert problem.endswith(", channel 1 (from 'audit')")
    assert "unroutable publish: <RoutingDecision exchange='events' routing_key='nobody.cares'" in (
        leaks(broker, unroutable=True)[-1])
    with pytest.raises(AssertionError, match=r"the test left 1 thing\(s\) behind \(strict mode\)"):
        assert_no_leaks(broker)


def test_leaks_lists_open_client_connections(broker: Broker) -> None:
    import pika

    with broker.serve() as server:
        params = pika.URLParameters(server.url)
        params.client_properties = {"connection_name": "forgotten"}
        conn = pika.BlockingConnection(params)
        (problem,) = leaks(broker)
        assert problem.startswith("client connection left open: <ClientConnection 'forgotten'")
        conn.close()
        assert leaks(broker) == []


# -- a shared broker -----------------------------------------------------------------------------

def test_reset_returns_to_the_baseline(broker: Broker, ch: Channel) -> None:
    consumed: list[bytes] = []
    worker = broker.connect().channel()
    worker.basic_consume("billing", lambda c, d, p, b: consumed.append(b), auto_ack=True)
    broker.mark_baseline()
    ch.basic_publish("events", "order.paid", b"1")  # audit keeps it; billing's worker takes it
    ch.queue_declare("scratch")
    ch.exchange_declare("tmp", "fanout")
    ch.queue_bind("audit", "events", "extra.#")
    ch.queue_unbind("users", "events", "user.#")
    ch.queue_delete("billing")  # the worker's consumer goes with it
    broker.reset()
    assert len(broker.trace) == 0
    assert sorted(broker.queues) == ["audit", "billing", "users"]
    assert "tmp" not in broker.exchanges
    assert broker.queues["audit"].message_count == 0
    assert_routes(broker, "events", {"order.paid": ["audit", "billing"], "user.x": ["users"],
                                     "extra.y": []})
    broker.reset()  # again: the queue declared anew is now the baseline's
    assert sorted(broker.queues) == ["audit", "billing", "users"]


# -- errors that say what to do ------------------------------------------------------------------

def test_a_missing_topology_file_names_the_paths_tried(tmp_path) -> None:
    with pytest.raises(DefinitionsError) as failure:
        make_broker(topology="defs.json", base=tmp_path)
    assert str(tmp_path / "defs.json") in str(failure.value)
    assert str(failure.value).startswith("topology file 'defs.json' not found: tried ")


def test_manual_clock_accessor() -> None:
    broker = make_broker(clock=True)
    broker.manual_clock.advance(1)
    assert broker.clock.monotonic() == 1
    with pytest.raises(TypeError, match="not a ManualClock"):
        _ = make_broker().manual_clock
