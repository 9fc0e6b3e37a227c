"""One queue with many messages: memory per message, publish and get rates, mass expiry.

Run: python benchmarks/queues.py [--messages N]

For a classic queue, a queue with a message TTL and a priority queue: publish N messages of
100 bytes through the in-process model channel (no client layer), measure the memory they hold
(tracemalloc, after the publish, divided by N), then basic.get them all. Then N/10 messages
with a TTL expire in one ManualClock advance. Nothing is asserted: it prints a table.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc

from embroker import Broker, ManualClock


def _fill(kind: str, n: int) -> tuple[Broker, float]:
    broker = Broker(clock=ManualClock(), trace_limit=1)
    channel = broker.open_connection().open_channel(1)
    arguments = {"classic": {}, "ttl": {"x-message-ttl": 3_600_000},
                 "priority": {"x-max-priority": 10}}[kind]
    channel.queue_declare("q", arguments=arguments)
    body = b"m" * 100
    publish = channel.basic_publish
    start = time.perf_counter()
    for i in range(n):
        publish("", "q", body, {"priority": i % 10} if kind == "priority" else {})
    return broker, n / (time.perf_counter() - start)


def run(kind: str, n: int) -> tuple[float, float, float]:
    """Publish and get rates (untraced run), and memory per message (a traced run)."""
    broker, publish_rate = _fill(kind, n)
    channel = next(iter(broker.connections.values())).channels[1]
    start = time.perf_counter()
    for _ in range(n):
        channel.basic_get("q", no_ack=True)
    get_rate = n / (time.perf_counter() - start)
    del broker, channel
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    kept, _ = _fill(kind, n)  # kept alive while memory is read
    after, _ = tracemalloc.get_traced_memory()
    del kept
    tracemalloc.stop()
    return publish_rate, get_rate, (after - before) / n


def mass_expiry(n: int) -> float:
    clock = ManualClock()
    broker = Broker(clock=clock, trace_limit=1)
    channel = broker.open_connection().open_channel(1)
    channel.queue_declare("q", arguments={"x-message-ttl": 1000})
    for _ in range(n):
        channel.basic_publish("", "q", b"m" * 100, {})
    start = time.perf_counter()
    clock.advance(1)
    elapsed = time.perf_counter() - start
    assert broker.queues["q"].message_count == 0
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=1_000_000)
    n = parser.parse_args().messages
    print(f"{n:,} messages of 100 bytes in one queue (in-process model channel)")
    print(f"{'queue':12} {'publish/s':>12} {'get/s':>12} {'bytes/message':>14}")
    for kind in ("classic", "ttl", "priority"):
        publish_rate, get_rate, per_message = run(kind, n)
        print(f"{kind:12} {publish_rate:12,.0f} {get_rate:12,.0f} {per_message:14,.0f}")
    expiring = n // 10
    print(f"\n{expiring:,} messages expired by one ManualClock.advance: "
          f"{mass_expiry(expiring) * 1000:,.0f} ms")


if __name__ == "__main__":
    main()
