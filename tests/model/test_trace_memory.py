"""The trace stays within its byte budget, large header tables included (issue #10: 1,500
messages with 10,000-entry headers, long gone from every queue, left 1.8 GB resident)."""

from __future__ import annotations

import gc
import tracemalloc

from embroker import Broker

BUDGET = 2 * 1024 * 1024


def held_by_trace(broker: Broker, publish_and_consume: int, entries: int) -> int:
    ch = broker.connect().channel()
    ch.queue_declare("q")
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(publish_and_consume):
            headers = {f"key-{n}": f"value-{i}-{n}" for n in range(entries)}
            ch.basic_publish("", "q", b"x", properties={"headers": headers})
            assert ch.basic_get("q", auto_ack=True) is not None  # gone from every queue
            del headers
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_large_header_tables_stay_within_the_byte_budget() -> None:
    broker = Broker(trace_bytes=BUDGET)
    held = held_by_trace(broker, 60, 2_000)  # ~260 KB of headers each: ~15 MB unbounded
    assert len(broker.trace) == 60  # every decision is kept...
    assert broker.trace.kept_bytes <= BUDGET
    assert held <= BUDGET + 512 * 1024  # ...and what the trace holds is within its budget
    kept = [d for d in broker.trace if d.headers]
    assert 1 <= len(kept) < 60
    dropped = broker.trace[0]
    assert dropped.headers_dropped
    assert dropped.headers == {}
    assert dropped.routing_key == "q"
    assert "(the trace let this message's body and headers go to stay within its byte budget)" in (
        dropped.explain())
    assert [e.kind for e in dropped.history()] == ["got"]  # the history stays
    assert broker.trace[-1].headers["key-0"] == "value-59-0"  # the newest is whole


def test_the_budget_counts_what_is_kept_when_decisions_go_by_count() -> None:
    broker = Broker(trace_limit=5, trace_bytes=BUDGET)
    held_by_trace(broker, 20, 1_000)
    assert len(broker.trace) == 5
    assert broker.trace.kept_bytes == sum(d._size for d in broker.trace)
    assert all(d.headers for d in broker.trace)  # five fit in the budget: none let go


def test_small_headers_cost_nothing_against_the_budget() -> None:
    broker = Broker()
    ch = broker.connect().channel()
    ch.basic_publish("amq.topic", "k", b"x", properties={"headers": {"a": 1, "b": "two"}})
    assert broker.trace.kept_bytes == 0


def test_one_large_header_value_counts() -> None:
    broker = Broker()
    ch = broker.connect().channel()
    ch.basic_publish("amq.topic", "k", b"x", properties={"headers": {"blob": "x" * 100_000}})
    assert broker.trace.kept_bytes >= 100_000
    ch.basic_publish("amq.topic", "k", b"x", properties={"headers": {"rows": [1] * 10_000}})
    assert broker.trace.kept_bytes >= 100_000 + 80_000
