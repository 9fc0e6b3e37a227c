"""Routing analytics at scale: `embroker analyze` end to end over 1M, 10M and 100M synthetic
messages, on `local[2]` and on a two-worker Spark standalone cluster, with the driver's memory
measured.

    python benchmarks/analytics.py                                   # 1M, 10M, 100M; both engines
    python benchmarks/analytics.py --messages 1000000 --engines local
    python benchmarks/analytics.py --messages 10000000 --python-messages 1000000

The topology: a topic exchange `events` (alternate exchange `unrouted`, a fanout to one queue)
with 1,000 distinct bindings to 200 queues: 45 % exact keys, 36 % with one `*`, 19 % with `#`.
The traffic: 4-5 word keys drawn from 2,000 distinct keys with a Zipf-like skew (real traffic
has few distinct keys), body sizes 100 B - 10 KB, times over one week. It is generated **in
executors** (`spark.range` and SQL expressions, written as Parquet by Spark): the driver never
holds it.

Each run is `python -m embroker analyze` in a process of its own, as a user runs it; a thread
reads the high-water marks of its memory (VmHWM in /proc) for the driver's Python process and
its JVM. On `local[2]` that JVM is the executors too; on the cluster the driver JVM is the
driver alone (1 GB heap) and the executors are the workers' children. CPU time is the whole
tree's (driver, JVM, Python workers; on the cluster also the master, workers and executors),
and the load average is printed: on a shared machine, wall time measures the neighbours too.

Correctness: every engine's per-queue counts are compared with an oracle that needs no join:
the traffic's messages per distinct routing key (counted by Spark: 2,000 rows), each key routed
once in plain Python with the same model, multiplied out.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORDS = ["orders", "users", "billing", "audit", "eu", "us", "asia", "created", "updated",
         "deleted", "shipped", "paid", "refund", "v1", "v2", "internal", "batch", "retry"]


def topology(rng: Any) -> dict[str, object]:
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


def routing_keys(rng: Any) -> list[str]:
    return sorted({".".join(str(w) for w in rng.choice(WORDS, size=int(rng.integers(4, 6))))
                   for _ in range(2500)})[:2000]


def generate(spark: Any, path: str, count: int, keys: list[str]) -> None:
    """``count`` messages written by Spark's executors: key ``k`` (0-based) with a Zipf-like
    probability (the inverse of a continuous power law's distribution, s = 1.1), from a hash
    of the message's number, so the same count gives the same traffic."""
    import pyspark.sql.functions as F

    n, s = len(keys), 1.1
    uniform = F.pmod(F.xxhash64("id", F.lit(7)), F.lit(1 << 31)) / F.lit(float(1 << 31))
    rank = F.floor(F.pow(uniform * F.lit(n ** (1 - s) - 1) + F.lit(1.0), F.lit(1 / (1 - s)))) - 1
    index = F.least(F.greatest(rank, F.lit(0)), F.lit(n - 1)).cast("int") + 1
    start = 1767571200 * 1_000_000  # 2026-01-05T00:00:00Z
    week = 7 * 86400 * 1_000_000
    partitions = max(2, count // 2_000_000)
    (spark.range(0, count, numPartitions=partitions)
     .select(F.lit("events").alias("exchange"),
             F.element_at(F.array(*[F.lit(k) for k in keys]), index).alias("routing_key"),
             (F.lit(100) + F.pmod(F.xxhash64("id", F.lit(11)), F.lit(9900))).alias("size"),
             F.timestamp_micros(F.lit(start) + F.col("id") * F.lit(week // count)).alias("published_at"))
     .write.mode("overwrite").parquet(path))


def oracle(spark: Any, path: str, defs: Path) -> dict[str, int]:
    """Messages per queue without Spark's join: per-key counts (2,000 rows) routed in Python."""
    from embroker.analytics import Router, Topology

    router = Router(Topology.load(defs))
    per_queue: dict[str, int] = {}
    for row in spark.read.parquet(path).groupBy("exchange", "routing_key").count().collect():
        for queue in router.route("/", row["exchange"], (row["routing_key"],), None).queues:
            per_queue[queue] = per_queue.get(queue, 0) + row["count"]
    return per_queue


def _proc_children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry))
    return children


def tree(pid: int) -> list[int]:
    children, out, todo = _proc_children(), [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime + cutime + cstime of these processes (children they waited for
    included)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(fields[i]) for i in (11, 12, 13, 14)) / ticks
    return total


def high_water_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Watch(threading.Thread):
    """Samples the driver's Python and JVM memory high-water marks and the tree's CPU time."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.python_kb = 0
        self.jvm_kb = 0
        self.cpu = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.python_kb = max(self.python_kb, high_water_kb(self.pid))
            pids = tree(self.pid)
            for pid in pids[1:]:
                try:
                    exe = os.readlink(f"/proc/{pid}/exe")
                except OSError:
                    continue
                if exe.endswith("/java"):
                    self.jvm_kb = max(self.jvm_kb, high_water_kb(pid))
            self.cpu = max(self.cpu, cpu_seconds(pids))
            self.done.wait(0.5)


def run_analyze(defs: Path, traffic: str, out: str, master: str, conf: dict[str, str],
                env: dict[str, str], extra_cpu: list[int]) -> dict[str, Any]:
    command = [sys.executable, "-m", "embroker", "analyze", "--definitions", str(defs),
               "--traffic", traffic, "--out", out, "--master", master]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    load0 = os.getloadavg()[0]
    extra0 = cpu_seconds([p for pid in extra_cpu for p in tree(pid)])
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env)
    watch = Watch(process.pid)
    watch.start()
    stdout, stderr = process.communicate()
    wall = time.perf_counter() - start
    watch.done.set()
    watch.join()
    extra = cpu_seconds([p for pid in extra_cpu for p in tree(pid)]) - extra0
    if process.returncode != 0:
        raise RuntimeError(f"analyze failed ({process.returncode}):\n{stderr[-5000:]}")
    phases = re.findall(r"^\[\s*([\d.]+)s\] (.*)$", stderr, re.MULTILINE)
    return {"wall": wall, "cpu": watch.cpu + extra, "python_mb": watch.python_kb / 1024,
            "jvm_mb": watch.jvm_kb / 1024, "load": (load0, os.getloadavg()[0]),
            "stdout": stdout.strip(), "phases": [(float(t), m) for t, m in phases]}


def per_queue(spark: Any, out: str) -> dict[str, int]:
    return {r["queue"]: r["messages"] for r in spark.read.parquet(f"{out}/queues.parquet").collect()
            if r["messages"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, nargs="+",
                        default=[1_000_000, 10_000_000, 100_000_000])
    parser.add_argument("--engines", nargs="+", default=["local", "cluster"],
                        choices=["local", "cluster"])
    parser.add_argument("--python-messages", type=int, default=0,
                        help="also route this many messages one by one in plain Python")
    parser.add_argument("--work", metavar="DIR", help="work in DIR (kept); default: a temporary folder")
    args = parser.parse_args()

    import numpy as np

    from embroker.analytics._spark import session
    from tests.analytics.cluster import StandaloneCluster, clean_environment, executor_python

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="embroker-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261121)
    defs = work / "definitions.json"
    defs.write_text(json.dumps(topology(rng)))
    keys = routing_keys(rng)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    print(f"machine: {os.cpu_count()} cores, {memory:.0f} GiB; load average now {os.getloadavg()[0]:.1f}")

    helper = session(master="local[2]", progress=False, app_name="embroker benchmark",
                     conf={"spark.driver.memory": "2g"})
    data: dict[int, str] = {}
    truth: dict[int, dict[str, int]] = {}
    for count in args.messages:
        path = (work / f"traffic-{count}").as_uri()
        t0 = time.perf_counter()
        generate(helper, path, count, keys)
        truth[count] = oracle(helper, path, defs)
        data[count] = path
        size = sum(f.stat().st_size for f in (work / f"traffic-{count}").glob("*.parquet"))
        print(f"generated {count:,} messages in executors in {time.perf_counter() - t0:.1f} s "
              f"({size / 1e6:,.0f} MB Parquet); oracle: {sum(truth[count].values()):,} deliveries")

    env = clean_environment()
    results: list[tuple[str, int, dict[str, Any]]] = []
    cluster = None
    try:
        for engine in args.engines:
            if engine == "local":
                master = "local[2]"
                conf = {"spark.driver.memory": "4g"}
                extra: list[int] = []
            else:
                python = executor_python(work / "executor")
                cluster = StandaloneCluster(work / "cluster", workers=2, cores=1, memory="5g").start()
                master = cluster.url
                conf = {"spark.driver.memory": "1g", "spark.executor.memory": "4g",
                        "spark.pyspark.python": str(python), "spark.sql.shuffle.partitions": "16"}
                extra = [p.pid for p in cluster.processes]
            for count in args.messages:
                out = (work / f"out-{engine}-{count}").as_uri()
                result = run_analyze(defs, data[count], out, master, conf, env, extra)
                same = per_queue(helper, out) == truth[count]
                results.append((engine, count, result))
                print(f"\n{engine} ({master}), {count:,} messages: {result['wall']:.1f} s wall, "
                      f"{count / result['wall']:,.0f} messages/s; CPU {result['cpu']:.0f} s; "
                      f"driver peak RSS: Python {result['python_mb']:.0f} MB, JVM {result['jvm_mb']:.0f} MB"
                      f"{' (driver and executors)' if engine == 'local' else ' (driver only)'}; "
                      f"load average {result['load'][0]:.1f} -> {result['load'][1]:.1f}; "
                      f"per-queue counts equal to the oracle: {same}")
                print(f"  {result['stdout']}")
                ends = [t for t, _m in result["phases"][1:]] + [result["wall"]]
                for (start, message), end in zip(result["phases"], ends, strict=True):
                    print(f"    {end - start:6.1f} s  {message}")
            if cluster is not None:
                cluster.stop()
                cluster = None
    finally:
        if cluster is not None:
            cluster.stop()

    if args.python_messages:
        import pyarrow.parquet as pq

        from embroker.analytics import Router, Topology

        router = Router(Topology.load(defs))
        first = sorted((work / f"traffic-{args.messages[0]}").glob("*.parquet"))
        t0, c0, routed = time.perf_counter(), time.process_time(), 0
        for file in first:
            for batch in pq.ParquetFile(file).iter_batches(columns=["exchange", "routing_key"]):
                for exchange, key in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(),
                                         strict=True):
                    router.route("/", exchange, (key,), None)
                    routed += 1
                if routed >= args.python_messages:
                    break
            if routed >= args.python_messages:
                break
        elapsed = time.perf_counter() - t0
        print(f"\nplain Python, one process, message by message: {routed:,} in {elapsed:.1f} s "
              f"({time.process_time() - c0:.1f} s CPU), {routed / elapsed:,.0f} messages/s")

    print("\nsummary (wall s, messages/s, driver Python peak MB, driver JVM peak MB, CPU s, load):")
    for engine, count, r in results:
        print(f"  {engine:8} {count:>12,}  {r['wall']:7.1f}  {count / r['wall']:>10,.0f}  "
              f"{r['python_mb']:6.0f}  {r['jvm_mb']:6.0f}  {r['cpu']:7.0f}  "
              f"{r['load'][0]:.1f}->{r['load'][1]:.1f}")
    helper.stop()
    if not args.work:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
