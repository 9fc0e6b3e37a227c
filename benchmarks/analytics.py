"""Routing analytics at scale: replay 10 million synthetic messages through a topology of 1,000
bindings on Spark (local[2]), end to end as `embroker analyze` runs, then route the same traffic
message by message in one Python process with the same model.

    python benchmarks/analytics.py                       # 10M messages
    python benchmarks/analytics.py --messages 1000000 --python-messages 1000000

The topology: a topic exchange `events` (alternate exchange `unrouted`, a fanout to one queue)
with 1,000 distinct bindings to 200 queues: 45 % exact keys, 36 % with one `*`, 19 % with `#`.
The traffic: 4-5 word keys drawn from 2,000 distinct keys with a Zipf-like skew (real traffic
has few distinct keys), body sizes 100 B - 10 KB, times over one week; Parquet.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WORDS = ["orders", "users", "billing", "audit", "eu", "us", "asia", "created", "updated",
         "deleted", "shipped", "paid", "refund", "v1", "v2", "internal", "batch", "retry"]


def topology(rng: object) -> dict[str, object]:
    import numpy as np

    assert isinstance(rng, np.random.Generator)
    bindings: set[str] = set()
    while len(bindings) < 1000:
        words = [str(w) for w in rng.choice(WORDS, size=int(rng.integers(3, 6)))]
        roll = rng.random()
        if roll < 0.36:
            words[int(rng.integers(len(words)))] = "*"
        elif roll < 0.55:
            words = [*words[:2], "#"] if rng.random() < 0.5 else [words[0], "#", words[-1]]
        bindings.add(".".join(words))
    patterns = sorted(bindings)
    queues = [f"q{n:03d}" for n in range(200)]
    return {
        "exchanges": [{"name": "events", "type": "topic", "arguments": {"alternate-exchange": "unrouted"}},
                      {"name": "unrouted", "type": "fanout"}],
        "queues": [{"name": q} for q in [*queues, "unrouted-q"]],
        "bindings": [{"source": "events", "destination": queues[i % 200], "destination_type": "queue",
                      "routing_key": p} for i, p in enumerate(patterns)]
        + [{"source": "unrouted", "destination": "unrouted-q", "destination_type": "queue",
            "routing_key": ""}],
    }


def traffic(path: Path, count: int, rng: object) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    assert isinstance(rng, np.random.Generator)
    keys = sorted({".".join(str(w) for w in rng.choice(WORDS, size=int(rng.integers(4, 6))))
                   for _ in range(2500)})[:2000]
    weights = 1.0 / np.arange(1, len(keys) + 1) ** 1.1
    weights /= weights.sum()
    start = np.datetime64("2026-01-05T00:00:00", "us").astype("int64")
    week = 7 * 86400 * 1_000_000
    with pq.ParquetWriter(str(path), pa.schema([
            ("exchange", pa.string()), ("routing_key", pa.string()), ("size", pa.int64()),
            ("published_at", pa.timestamp("us", tz="UTC"))])) as writer:
        done = 0
        while done < count:
            n = min(1_000_000, count - done)
            index = rng.choice(len(keys), size=n, p=weights)
            writer.write_table(pa.table({
                "exchange": pa.array(["events"] * n, pa.string()),
                "routing_key": pa.DictionaryArray.from_arrays(pa.array(index, pa.int32()),
                                                              pa.array(keys)).cast(pa.string()),
                "size": pa.array(rng.integers(100, 10_000, size=n), pa.int64()),
                "published_at": pa.array(np.sort(start + rng.integers(0, week, size=n)),
                                         pa.timestamp("us", tz="UTC")),
            }))
            done += n


def tree_cpu_seconds() -> float:
    """CPU seconds used so far by this process and every process under it (the Spark JVM and
    its Python workers, counting finished ones): on a shared machine, wall time measures the
    neighbours too, CPU time much less so."""
    ticks = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry)] = fields
        children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        fields = stats.get(pid)
        if fields is not None:  # utime stime cutime cstime
            total += sum(int(fields[i]) for i in (11, 12, 13, 14)) / ticks
        todo.extend(children.get(pid, []))
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=10_000_000)
    parser.add_argument("--python-messages", type=int, default=None,
                        help="how many to route in plain Python (default: all)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep the files")
    args = parser.parse_args()

    import numpy as np
    import pyarrow.parquet as pq

    from embroker.analytics import Router, Topology
    from embroker.analytics._analyze import analyze

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="embroker-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261121)
    defs = work / "definitions.json"
    defs.write_text(json.dumps(topology(rng)))
    data = work / "traffic.parquet"
    t0 = time.perf_counter()
    traffic(data, args.messages, rng)
    print(f"generated {args.messages:,} messages in {time.perf_counter() - t0:.1f} s "
          f"({data.stat().st_size / 1e6:.0f} MB Parquet), 1,000 bindings, 200 queues")

    phases: list[tuple[str, float]] = []
    cpu0 = tree_cpu_seconds()
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()

    def progress(message: str) -> None:
        phases.append((message, time.perf_counter() - t0))

    summary = analyze(defs, data, work / "out", master=args.master, progress=progress,
                      conf={"spark.driver.memory": "4g"})
    wall = time.perf_counter() - t0
    cpu = tree_cpu_seconds() - cpu0
    print(f"load average before/after: {load0:.1f} / {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores;"
          f" CPU used by the run (driver, JVM, Python workers): {cpu:.1f} s")
    print(f"Spark {args.master}, end to end (start, read, route, analyses, routes.jsonl, report): "
          f"{wall:.1f} s, {args.messages / wall:,.0f} messages/s; "
          f"{summary['inputs']:,} distinct routing inputs, "
          f"{summary['unroutable']:,} unroutable, {summary['via_alternate']:,} via the AE")
    ends = [t for _m, t in phases[1:]] + [wall]
    for (message, start), end in zip(phases, ends, strict=True):
        print(f"  {end - start:6.1f} s  {message}")
    print(f"  routes.jsonl: {(work / 'out' / 'routes.jsonl').stat().st_size / 1e6:,.0f} MB")

    router = Router(Topology.load(defs))
    limit = args.python_messages or args.messages
    t0 = time.perf_counter()
    c0 = time.process_time()
    routed = 0
    per_queue: dict[str, int] = {}
    for batch in pq.ParquetFile(data).iter_batches(batch_size=100_000, columns=["exchange", "routing_key"]):
        for exchange, key in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
            for queue in router.route("/", exchange, (key,), None).queues:
                per_queue[queue] = per_queue.get(queue, 0) + 1
            routed += 1
            if routed >= limit:
                break
        if routed >= limit:
            break
    elapsed = time.perf_counter() - t0
    used = time.process_time() - c0
    print(f"plain Python, one process, the same model message by message: {routed:,} messages in "
          f"{elapsed:.1f} s ({used:.1f} s CPU), {routed / elapsed:,.0f} messages/s"
          + (f" (10M would take ~{10_000_000 / routed * elapsed:.0f} s)" if routed < 10_000_000 else ""))
    if routed == args.messages:
        table = pq.read_table(work / "out" / "queues.parquet").to_pylist()
        spark_queues = {r["queue"]: r["messages"] for r in table if r["messages"]}
        print("per-queue counts equal between Spark and plain Python:", spark_queues == per_queue)
    if not args.keep:
        import shutil

        shutil.rmtree(work)
    print(f"machine: {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
