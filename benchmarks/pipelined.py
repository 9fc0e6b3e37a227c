"""The in-process pipelined ratios against RabbitMQ (issue 26's target: at least 0.8x each).

Run: python benchmarks/pipelined.py [--messages N] [--repeat R] [--profile DIR]

pika in the same process as embroker's listener (one GIL, as in a test suite), on the lines where
the client pipelines, so that the broker's own CPU per message decides the rate:

- publish with confirms in windows of 100 (pika's ``SelectConnection``; see
  ``benchmarks/loopback.py`` for why);
- consume with acks at prefetch 10 and prefetch 100 (``BlockingConnection``);
- tx: transactions of 100 publishes and a commit (``BlockingConnection``).

Each line runs ``--repeat`` times on each side, alternating embroker (a fresh
``Broker().serve()``) and ``EMBROKER_REFERENCE_URL`` (default
``amqp://guest:guest@127.0.0.1:5672/``). The table shows the fastest run of each side and its
ratio (``best``), the ratio of the median runs (``median``), and the listener thread's CPU per
message (the smallest over the runs, and the median), measured as ``loopback.py`` does, how
many messages the listener served per turn of its loop and how many ``time.sleep`` calls its
pauses made per message (over all of embroker's runs). Below the table, what the machine costs
with no broker (``benchmarks/listener_turns.py``): a wake-up across threads, which the listener
pays when it waits for pika in its own process, and a ``time.sleep(0)``, the least each sleep
costs. Read the CPU per message against them. The workloads are those of
``benchmarks/loopback.py``.

``--profile DIR`` profiles the listener thread during one extra embroker run of each line
(``DIR/<line>.prof``, view with ``python -m pstats``); those runs are not in the table.

Nothing here is asserted: it prints a table.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import listener_turns
import loopback
from loopback import DEFAULT_REFERENCE, EmbrokerTarget, RabbitTarget, Sample, Target

Workload = Callable[[Target, int], Sample]


def _profile(label: str, workload: Workload, count: int, directory: str) -> None:
    """One extra embroker run of ``workload`` with the listener thread under cProfile."""
    target = EmbrokerTarget(directory)
    session = target.session

    def renamed(_label: str):  # type: ignore[no-untyped-def]
        return session("publish")  # loopback profiles its "publish" and "consume" sessions

    target.session = renamed  # type: ignore[method-assign]
    workload(target, count)
    published = os.path.join(directory, "publish.prof")
    if os.path.exists(published):
        os.replace(published, os.path.join(directory, f"{label}.prof"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", metavar="DIR")
    parser.add_argument("--only", help="run only the lines whose label contains this")
    args = parser.parse_args()
    n = args.messages
    n_tx = max(n // loopback.TX_BATCH, 1) * loopback.TX_BATCH
    reference_url = os.environ.get("EMBROKER_REFERENCE_URL", DEFAULT_REFERENCE)
    rabbit = RabbitTarget(reference_url)
    why_not = rabbit.available()
    if why_not is not None:
        print(f"the reference RabbitMQ at {reference_url} did not answer ({why_not}): "
              "no ratios to show")
        return
    embroker = EmbrokerTarget()
    lines: list[tuple[str, str, Workload, int]] = [
        ("confirms", f"confirms, window {loopback.CONFIRM_WINDOW}, {n:,}",
         loopback.publish_confirms_batched, n),
        ("prefetch10", f"consume+ack, prefetch 10, {n // 4:,}",
         functools.partial(loopback.consume, prefetch=10), n // 4),
        ("prefetch100", f"consume+ack, prefetch 100, {n:,}",
         functools.partial(loopback.consume, prefetch=100), n),
        ("tx", f"tx, {n_tx // loopback.TX_BATCH:,} x ({loopback.TX_BATCH} + commit)",
         loopback.publish_tx, n_tx),
    ]
    header = (f"{'workload':36} {'embroker':>9} {'RabbitMQ':>9} {'best':>6} {'median':>6} "
              f"{'srv µs':>7} {'srv µs':>7} {'msg per':>7} {'sleeps':>7}")
    print(header)
    print(f"{'':36} {'msg/s':>9} {'msg/s':>9} {'e/R':>6} {'e/R':>6} {'min':>7} {'median':>7} "
          f"{'turn':>7} {'per msg':>7}")
    print("-" * len(header))
    for key, label, workload, count in lines:
        if args.only and args.only not in key:
            continue
        runs: dict[str, list[Sample]] = {"embroker": [], "RabbitMQ": []}
        for _ in range(args.repeat):  # interleaved, so that drifting load hits both sides
            runs["embroker"].append(workload(embroker, count))
            runs["RabbitMQ"].append(workload(rabbit, count))
        e_rates = [s.rate for s in runs["embroker"]]
        r_rates = [s.rate for s in runs["RabbitMQ"]]
        cpus = [s.server_cpu / count * 1e6 for s in runs["embroker"] if s.server_cpu is not None]
        turns = sum(s.turns or 0 for s in runs["embroker"])
        sleeps = sum(s.sleeps or 0 for s in runs["embroker"])
        print(f"{label:36} {max(e_rates):9,.0f} {max(r_rates):9,.0f} "
              f"{max(e_rates) / max(r_rates):5.2f}x "
              f"{statistics.median(e_rates) / statistics.median(r_rates):5.2f}x "
              f"{min(cpus):7.1f} {statistics.median(cpus):7.1f} "
              f"{count * args.repeat / max(turns, 1):7.1f} {sleeps / (count * args.repeat):7.2f}")
        if args.profile:
            os.makedirs(args.profile, exist_ok=True)
            _profile(key, workload, count, args.profile)
    print("\nbest: fastest embroker run / fastest RabbitMQ run; median: the median runs' ratio; "
          "srv µs: the listener thread's CPU per message (smallest, median); msg per turn, "
          "sleeps per msg: over all of embroker's runs (the listener's loop turns, and the "
          "time.sleep calls of its pauses).")
    wake = statistics.median(listener_turns.wake_floor(5_000) for _ in range(3))
    sleep = statistics.median(listener_turns.sleep_floor(5_000) for _ in range(3))
    print(f"This machine, with no broker (benchmarks/listener_turns.py): a wake-up across threads "
          f"costs {wake * 1e6:.1f} µs of the waking thread's CPU, a time.sleep(0) "
          f"{sleep * 1e6:.1f} µs.")


if __name__ == "__main__":
    main()
