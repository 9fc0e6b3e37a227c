"""Applying policies to many queues: how long set_policy / clear_policy take.

Run: python benchmarks/policies.py [--queues N]

N queues (10,000 by default) are declared in one vhost, with a few exchanges; then each step is
timed (best of 3, each on a fresh broker), printed in milliseconds and microseconds per queue:

- set a policy that matches every queue (max-length, message-ttl, dead-letter-exchange);
- change it (a new max-length), then clear it;
- set a policy that matches no queue (the cost of looking: one regex search per resource);
- set an operator policy on top of the policy;
- lower max-length under queues that each hold 5 messages (drop-head drops 3 of each, to a
  dead-letter exchange with no queue);
- declare N queues while a policy is set (the cost a policy adds to queue.declare).

Nothing is asserted: see the figures.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from embroker import Broker

POLICY = {"max-length": 1000, "message-ttl": 60000, "dead-letter-exchange": "dlx"}


def make(n: int, messages: int = 0) -> Broker:
    broker = Broker(trace_limit=1)
    channel = broker.open_connection().open_channel(1)
    for i in range(n):
        channel.queue_declare(f"orders.{i}")
        for m in range(messages):
            channel.basic_publish("", f"orders.{i}", b"m%d" % m, {})
    for i in range(10):
        channel.exchange_declare(f"events.{i}", "topic")
    return broker


def best(setup: Callable[[], Callable[[], object]], repeat: int = 3) -> float:
    """Seconds of the fastest of ``repeat`` runs; the setup is not timed."""
    fastest = float("inf")
    for _ in range(repeat):
        run = setup()
        start = time.perf_counter()
        run()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest


def steps(n: int) -> dict[str, float]:
    def set_all() -> Callable[[], object]:
        broker = make(n)
        return lambda: broker.set_policy("p", "^orders\\.", POLICY, apply_to="queues")

    def change() -> Callable[[], object]:
        broker = make(n)
        broker.set_policy("p", "^orders\\.", POLICY, apply_to="queues")
        return lambda: broker.set_policy("p", "^orders\\.", {**POLICY, "max-length": 500},
                                         apply_to="queues")

    def clear() -> Callable[[], object]:
        broker = make(n)
        broker.set_policy("p", "^orders\\.", POLICY, apply_to="queues")
        return lambda: broker.clear_policy("p")

    def set_none() -> Callable[[], object]:
        broker = make(n)
        return lambda: broker.set_policy("p", "^invoices\\.", POLICY)

    def operator() -> Callable[[], object]:
        broker = make(n)
        broker.set_policy("p", "^orders\\.", POLICY, apply_to="queues")
        return lambda: broker.set_operator_policy("cap", ".*", {"max-length": 100})

    def lower_with_messages() -> Callable[[], object]:
        broker = make(n, messages=5)
        return lambda: broker.set_policy("p", "^orders\\.", {"max-length": 2,
                                                             "dead-letter-exchange": "dlx"})

    def declare_under_policy() -> Callable[[], object]:
        broker = make(0)
        broker.set_policy("p", "^orders\\.", POLICY, apply_to="queues")
        channel = broker.open_connection().open_channel(1)

        def run() -> None:
            for i in range(n):
                channel.queue_declare(f"orders.{i}")
        return run

    def declare_without_policy() -> Callable[[], object]:
        channel = make(0).open_connection().open_channel(1)

        def run() -> None:
            for i in range(n):
                channel.queue_declare(f"orders.{i}")
        return run

    return {
        "set a policy matching every queue": best(set_all),
        "change it (new max-length)": best(change),
        "clear it": best(clear),
        "set a policy matching no queue": best(set_none),
        "set an operator policy on top": best(operator),
        "lower max-length, 5 messages per queue": best(lower_with_messages),
        "declare the queues under a policy": best(declare_under_policy),
        "declare the queues, no policy": best(declare_without_policy),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queues", type=int, default=10_000)
    args = parser.parse_args()
    n = args.queues
    print(f"{n:,} queues and 10 exchanges in one vhost (best of 3)")
    print(f"{'step':42} {'ms':>9} {'us/queue':>9}")
    for name, seconds in steps(n).items():
        print(f"{name:42} {seconds * 1000:9.1f} {seconds / n * 1e6:9.2f}")


if __name__ == "__main__":
    main()
