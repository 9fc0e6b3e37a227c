"""In-process publish -> route -> get throughput, next to kombu's memory:// transport.

Run: python benchmarks/routing.py [--messages N] [--no-events]

Each line is one round trip per message: publish through an exchange, route, basic.get with
auto-ack. Printed as messages/s (best of 3 runs, in CPU time). Nothing here is asserted: see the
figures.
"""

from __future__ import annotations

import argparse
import functools
import time
from collections import deque
from collections.abc import Callable

from embroker import Broker

#: Options for every broker made here (``--no-events``: without lifecycle events).
BROKER_OPTIONS: dict[str, bool] = {}


def best_rate(setup: Callable[[], Callable[[int], None]], n: int, repeat: int = 3) -> float:
    """Messages/s of the fastest of ``repeat`` runs; the setup (declaring, binding) is not timed.
    Timed in the process's CPU time: other processes on a shared machine do not count."""
    best = float("inf")
    for _ in range(repeat):
        run = setup()
        start = time.process_time()
        run(n)
        best = min(best, time.process_time() - start)
    return n / best


def embroker_direct() -> Callable[[int], None]:
    ch = Broker(trace_limit=1000, **BROKER_OPTIONS).connect().channel()
    ch.exchange_declare("x", "direct")
    ch.queue_declare("q")
    ch.queue_bind("q", "x", "k")
    publish, get = ch.basic_publish, ch.basic_get

    def run(n: int) -> None:
        for _ in range(n):
            publish("x", "k", b"m" * 100)
            get("q", auto_ack=True)
    return run


def embroker_topic(bindings: int = 100) -> Callable[[int], None]:
    ch = Broker(trace_limit=1000, **BROKER_OPTIONS).connect().channel()
    ch.exchange_declare("x", "topic")
    ch.queue_declare("q")
    ch.queue_declare("other")
    for i in range(bindings - 1):
        ch.queue_bind("other", "x", f"region{i}.*.created")
    ch.queue_bind("q", "x", "order.*.created")
    publish, get = ch.basic_publish, ch.basic_get

    def run(n: int) -> None:
        for _ in range(n):
            publish("x", "order.eu.created", b"m" * 100)
            get("q", auto_ack=True)
    return run


def embroker_headers(bindings: int = 10) -> Callable[[int], None]:
    ch = Broker(trace_limit=1000, **BROKER_OPTIONS).connect().channel()
    ch.exchange_declare("x", "headers")
    ch.queue_declare("q")
    ch.queue_declare("other")
    for i in range(bindings - 1):
        ch.queue_bind("other", "x", "", {"x-match": "all", "region": f"r{i}", "kind": "order"})
    ch.queue_bind("q", "x", "", {"x-match": "all", "region": "eu", "kind": "order"})
    publish, get = ch.basic_publish, ch.basic_get
    props = {"headers": {"region": "eu", "kind": "order"}}

    def run(n: int) -> None:
        for _ in range(n):
            publish("x", "", b"m" * 100, props)
            get("q", auto_ack=True)
    return run


def kombu_direct() -> Callable[[int], None]:
    from kombu import Connection, Exchange, Queue

    conn = Connection("memory://")
    exchange = Exchange("x", "direct")
    queue = Queue("q", exchange, "k")
    producer = conn.Producer(serializer="raw")
    simple = conn.SimpleQueue(queue)
    body = "m" * 100

    def run(n: int) -> None:
        for _ in range(n):
            producer.publish(body, exchange=exchange, routing_key="k", declare=[queue])
            simple.get_nowait().ack()
    return run


def bare_loop() -> Callable[[int], None]:
    queues: dict[str, deque[bytes]] = {"q": deque()}
    bindings = {"k": ["q"]}

    def run(n: int) -> None:
        for _ in range(n):
            for name in bindings["k"]:
                queues[name].append(b"m" * 100)
            queues["q"].popleft()
    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--no-events", action="store_true",
                        help="brokers that record no lifecycle events (trace_events=False)")
    args = parser.parse_args()
    n = args.messages
    if args.no_events:
        BROKER_OPTIONS["trace_events"] = False
    rows = [
        ("embroker direct", embroker_direct, n),
        ("embroker topic (100 bindings)", embroker_topic, n),
        ("embroker topic (10,000 bindings)", functools.partial(embroker_topic, bindings=10_000), n),
        ("embroker headers (10 bindings)", embroker_headers, n),
        ("kombu memory:// direct", kombu_direct, max(n // 10, 1000)),
        ("bare dict+deque loop", bare_loop, n),
    ]
    print(f"{'publish -> route -> get round trip':40} {'messages/s':>12}")
    print("(topic: one matching binding among N that cannot match)")
    rates = {}
    for name, run, count in rows:
        rates[name] = best_rate(run, count)
        print(f"{name:40} {rates[name]:12,.0f}")
    ratio = rates["embroker direct"] / rates["kombu memory:// direct"]
    print(f"\nembroker direct / kombu memory:// = {ratio:.1f}x")


if __name__ == "__main__":
    main()
