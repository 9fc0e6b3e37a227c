"""What keeping the statistics' history costs (embroker/management/_samples.py): the sampler
reads every object each 5 s of the broker's clock, outside the publish path.

Run: python benchmarks/samples.py [--queues N] [--connections C] [--messages M] [--repeat R]

- one tick (``Sampler.sample``) on a broker of N queues (10 messages each) and C connections
  with a channel each, idle (each tick stamped 5 s after the one before, as the timer stamps
  them): µs per tick, and per object sampled;
- the history's memory per queue (tracemalloc), idle and changing at every tick, after 20
  minutes of ticks (the 5 s bucket full);
- a ranged read: ``GET /api/queues/%2F/q?lengths_age=60&lengths_incr=5&msg_rates_age=60&...``
  and ``GET /api/overview?...`` on the same broker after two minutes of ticks, in-process;
- publish CPU per message (``benchmarks/processing.py``'s publish line: one ``basic.publish``
  per read into a ``ServerConnection``, no socket) on a ManualClock broker in three conditions,
  taken in turn: statistics off (no management API); on, the clock still (the publish path
  alone); on, the clock advanced 5 s every 1,000 messages (a tick each 1,000 publishes: far
  more often than a real 5 s at these rates), the ticks' time included.

Times are this process's CPU time (``time.process_time``: other processes on the machine
count less than in wall time). Each figure is the smallest and the median of ``--repeat``
runs. Timings only: nothing is
asserted. (Named samples.py: a statistics.py here would hide the standard library's module
from the other scripts of this folder.)
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
import tracemalloc
from collections.abc import Callable

from processing import FRAME_MAX, HANDSHAKE, PUBLISH  # (this folder, as the scripts run)

from embroker import Broker, ManualClock
from embroker.amqp091 import FrameParser
from embroker.amqp091._connection import ServerConnection
from embroker.management import ManagementAPI
from embroker.management._http import Request

AUTH = {"authorization": "Basic Z3Vlc3Q6Z3Vlc3Q="}
RANGES = {f"{kind}_{part}": value for kind in ("lengths", "msg_rates", "data_rates",
                                               "node_stats")
          for part, value in (("age", "60"), ("incr", "5"))}


def populated(queues: int, connections: int) -> tuple[Broker, ManagementAPI]:
    broker = Broker(clock=ManualClock())
    api = ManagementAPI(broker)
    channel = broker.connect().channel()
    for i in range(queues):
        channel.queue_declare(f"q{i}")
        for _ in range(10):
            channel.basic_publish("", f"q{i}", b"x" * 10)
    for _ in range(connections):
        broker.connect().channel()
    return broker, api


def tick(queues: int, connections: int, repeat: int) -> tuple[list[float], int]:
    broker, api = populated(queues, connections)
    sampler = api.sampler
    runs = []
    stamp = sampler.sample(broker)
    for _ in range(repeat):
        stamp += round(sampler.interval * 1000)
        start = time.process_time()
        sampler.sample(broker, at=stamp)
        runs.append(time.process_time() - start)
    return runs, len(sampler)


def memory_per_queue(queues: int, changing: bool) -> float:
    """Bytes the sampler's module holds per queue after 20 minutes of ticks."""
    broker = Broker(clock=ManualClock())
    api = ManagementAPI(broker)
    channel = broker.connect().channel()
    for i in range(queues):
        channel.queue_declare(f"q{i}")
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for _ in range(240):
        if changing:
            for i in range(queues):
                channel.basic_publish("", f"q{i}", b"")
        broker.clock.advance(5)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    held = sum(stat.size_diff for stat in after.compare_to(before, "filename")
               if stat.traceback[0].filename.endswith("_samples.py"))
    api.close()
    return held / queues


def ranged_reads(queues: int, connections: int, repeat: int) -> dict[str, list[float]]:
    broker, api = populated(queues, connections)
    broker.clock.advance(120)
    found: dict[str, list[float]] = {}
    for label, path in (("GET /api/queues/%2F/q0 (ranges)", "/api/queues/%2F/q0"),
                        ("GET /api/overview (ranges)", "/api/overview")):
        runs = []
        for _ in range(repeat):
            start = time.process_time()
            answer = api(Request("GET", path, dict(RANGES), dict(AUTH)))
            json.loads(answer.content())
            runs.append(time.process_time() - start)
        found[label] = runs
    return found


def _client(broker: Broker) -> ServerConnection:
    connection = ServerConnection(broker, peer="127.0.0.1:1", loopback=True)
    parser = FrameParser(max_frame_size=FRAME_MAX)
    for data, _reply in HANDSHAKE:
        connection.receive_data(data)
        parser.feed(connection.data_to_send())
    return connection


def publish(n: int, *, management: bool, tick_every: int | None) -> float:
    clock = ManualClock()
    broker = Broker(clock=clock)
    api = ManagementAPI(broker) if management else None
    connection = _client(broker)
    receive, take = connection.receive_data, connection.data_to_send
    start = time.process_time()
    if tick_every is None:
        for _ in range(n):
            receive(PUBLISH)
            take()
    else:
        for i in range(n):
            receive(PUBLISH)
            take()
            if i % tick_every == tick_every - 1:
                clock.advance(5)
    spent = time.process_time() - start
    assert broker.queues["q"].message_count == n
    if api is not None:
        api.close()
    return spent / n


CONDITIONS: list[tuple[str, Callable[[int], float]]] = [
    ("publish, statistics off", lambda n: publish(n, management=False, tick_every=None)),
    ("publish, statistics on, clock still",
     lambda n: publish(n, management=True, tick_every=None)),
    ("publish, statistics on, a tick / 1,000",
     lambda n: publish(n, management=True, tick_every=1000)),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'line':48} {'min':>10} {'median':>10}")
    for queues in (1_000, args.queues):
        runs, objects = tick(queues, args.connections, args.repeat)
        print(f"{f'tick, {queues} queues, {args.connections} connections (ms)':48} "
              f"{min(runs) * 1e3:10.2f} {statistics.median(runs) * 1e3:10.2f}")
        print(f"{f'  per object, {objects} objects (us)':48} "
              f"{min(runs) / objects * 1e6:10.2f} {statistics.median(runs) / objects * 1e6:10.2f}")
    for changing in (False, True):
        label = f"memory per queue, {'changing' if changing else 'idle'} (bytes)"
        print(f"{label:48} {memory_per_queue(1_000, changing):10.0f}")
    for label, runs in ranged_reads(args.queues, args.connections, args.repeat).items():
        print(f"{label + ' (ms)':48} {min(runs) * 1e3:10.2f} {statistics.median(runs) * 1e3:10.2f}")
    results: dict[str, list[float]] = {label: [] for label, _ in CONDITIONS}
    for _ in range(args.repeat):  # taken in turn
        for label, workload in CONDITIONS:
            results[label].append(workload(args.messages))
    for label, runs in results.items():
        print(f"{label + ' (us/msg)':48} {min(runs) * 1e6:10.2f} "
              f"{statistics.median(runs) * 1e6:10.2f}")


if __name__ == "__main__":
    main()
