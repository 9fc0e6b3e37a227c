"""In-memory transports vs the TCP listener vs RabbitMQ: the same client workloads, one
alternated run.

Run: python benchmarks/memory.py [--messages N] [--repeat R] [--profile DIR]

Columns, per workload (each run ``--repeat`` times, alternating the three targets; the fastest
run is shown, with the smallest CPU per message seen):

- ``memory``: embroker through the in-memory transport of the client library (no socket, no
  thread: the broker's side runs inside the client's calls);
- ``tcp``: embroker's loopback listener (``broker.serve()``, its own thread, in this process: the
  client and the listener share one GIL, as in a test suite);
- ``RabbitMQ``: ``EMBROKER_REFERENCE_URL`` (default ``amqp://guest:guest@127.0.0.1:5672/``),
  skipped when it does not answer.

Server CPU per message (µs): for ``tcp`` the listener thread's CPU clock over the timed part
(as ``benchmarks/loopback.py`` measures it); for ``memory`` the CPU time spent inside the
broker's side of the links (``MemoryLink.pump`` and the output it collects unasked), read with
``time.thread_time()`` around each call (the measuring itself adds well under 1 µs a call).

The pika workloads are those of ``benchmarks/loopback.py`` (publish, confirms one by one,
confirms in windows of 100 on a ``SelectConnection``, consume with prefetch 100 and acks); the
``memory`` column runs them on ``embroker.memory.pika``'s classes. aio-pika: publish N then
consume N with acks (one connection); kombu: ``Producer.publish`` N then drain them with a
``Consumer`` and acks.

``--profile DIR`` writes cProfile output of the ``memory`` runs of the pika publish, confirms
and consume lines (the whole client+broker thread: ``DIR/memory-<line>.prof``).

Nothing here is asserted: it prints a table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import functools
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pika

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import loopback
from loopback import (
    BODY,
    DEFAULT_REFERENCE,
    EmbrokerTarget,
    Probe,
    RabbitTarget,
    Sample,
    Target,
    _best,
    _timed,
    _us_per,
)

from embroker import Broker
from embroker.memory import MemoryLink
from embroker.memory import pika as memory_pika


@contextlib.contextmanager
def _broker_side_cpu() -> Iterator[Callable[[], float]]:
    """Count the CPU time spent in the broker's side of in-memory links."""
    spent = [0.0]
    pump, output_ready = MemoryLink.pump, MemoryLink._output_ready

    def timed_pump(self: MemoryLink) -> bool:
        start = time.thread_time()
        try:
            return pump(self)
        finally:
            spent[0] += time.thread_time() - start

    def timed_output_ready(self: MemoryLink) -> None:
        start = time.thread_time()
        try:
            output_ready(self)
        finally:
            spent[0] += time.thread_time() - start

    MemoryLink.pump = timed_pump  # type: ignore[method-assign]
    MemoryLink._output_ready = timed_output_ready  # type: ignore[method-assign]
    try:
        yield lambda: spent[0]
    finally:
        MemoryLink.pump = pump  # type: ignore[method-assign]
        MemoryLink._output_ready = output_ready  # type: ignore[method-assign]


class MemoryTarget(Target):
    """embroker through the in-memory transports: the pika workloads of loopback.py get
    ``embroker.memory.pika``'s classes in place of pika's (for the session only)."""

    name = "memory"

    def __init__(self, profile_dir: str | None = None) -> None:
        self.profile_dir = profile_dir
        self.broker: Broker | None = None

    @contextlib.contextmanager
    def session(self, label: str) -> Iterator[tuple[pika.URLParameters, Probe]]:
        broker = self.broker = Broker()
        blocking, select = pika.BlockingConnection, pika.SelectConnection
        pika.BlockingConnection = lambda params=None: memory_pika.BlockingConnection(  # type: ignore[misc]
            broker, params)
        pika.SelectConnection = functools.partial(memory_pika.SelectConnection, broker)  # type: ignore[misc]
        profiler = cProfile.Profile() if self.profile_dir and label in (
            "publish", "confirms", "consume") else None
        try:
            with _broker_side_cpu() as cpu:
                probe = _ProfiledProbe(cpu, profiler)
                yield pika.URLParameters("amqp://guest:guest@memory/"), probe
        finally:
            pika.BlockingConnection, pika.SelectConnection = blocking, select  # type: ignore[misc]
        if profiler is not None:
            path = os.path.join(self.profile_dir or ".", f"memory-{label}.prof")
            profiler.dump_stats(path)


class _ProfiledProbe(Probe):
    """A probe that profiles this thread while the timed part runs."""

    def __init__(self, cpu: Callable[[], float], profiler: cProfile.Profile | None) -> None:
        self._profiler = profiler
        self._profiling = False
        super().__init__(cpu)

    @property  # type: ignore[override]
    def profiling(self) -> bool:
        return self._profiling

    @profiling.setter
    def profiling(self, on: bool) -> None:
        self._profiling = on
        if self._profiler is not None:
            self._profiler.enable() if on else self._profiler.disable()


# -- aio-pika and kombu ---------------------------------------------------------------------------


def _aio_workload(url: str, connection_class: Any, queue_name: str, n: int,
                  probe: Probe) -> Sample:
    import aio_pika

    async def main() -> Sample:
        connection = await aio_pika.connect(url, connection_class=connection_class)
        channel = await connection.channel()
        queue = await channel.declare_queue(queue_name)
        done = asyncio.Event()
        received = 0

        async def on_message(message: Any) -> None:
            nonlocal received
            await message.ack()
            received += 1
            if received == n:
                done.set()

        async def work() -> None:
            for _ in range(n):
                await channel.default_exchange.publish(aio_pika.Message(BODY), queue_name)
            tag = await queue.consume(on_message)
            await asyncio.wait_for(done.wait(), 120)
            await queue.cancel(tag)

        probe.profiling = True
        server_before, client_before = probe.server_cpu(), time.thread_time()
        start = time.perf_counter()
        await work()
        seconds = time.perf_counter() - start
        server_after, client_after = probe.server_cpu(), time.thread_time()
        probe.profiling = False
        await queue.delete(if_unused=False, if_empty=False)
        await connection.close()
        return Sample(seconds, 2 * n, server_after - server_before if probe.cpu else None,
                      client_after - client_before)

    return asyncio.run(main())


def _kombu_workload(url: str, queue_name: str, n: int, probe: Probe) -> Sample:
    import kombu

    with kombu.Connection(url) as connection:
        queue = kombu.Queue(queue_name)
        received = 0

        def on_message(_body: Any, message: Any) -> None:
            nonlocal received
            message.ack()
            received += 1

        with connection.Consumer([queue], callbacks=[on_message]):
            producer = connection.Producer()

            def work() -> None:
                for _ in range(n):
                    producer.publish(BODY, routing_key=queue_name)
                deadline = time.monotonic() + 120
                while received < n and time.monotonic() < deadline:
                    with contextlib.suppress(TimeoutError):
                        connection.drain_events(timeout=1)

            sample = _timed(work, probe, 2 * n)
        queue(connection.default_channel).delete()
    return sample


def aio_pika_line(target: Target, n: int) -> Sample:
    from embroker.memory.aio import Connection as MemoryAioConnection

    with _client_session(target, "aio") as (url, probe, memory):
        import aio_pika

        return _aio_workload(url, MemoryAioConnection if memory else aio_pika.Connection,
                             target.queue_name("aio"), n, probe)


def kombu_line(target: Target, n: int) -> Sample:
    with _client_session(target, "kombu") as (url, probe, _memory):
        return _kombu_workload(url, target.queue_name("kombu"), n, probe)


@contextlib.contextmanager
def _client_session(target: Target, label: str) -> Iterator[tuple[str, Probe, bool]]:
    if isinstance(target, MemoryTarget):
        broker = Broker()
        with _broker_side_cpu() as cpu:
            url = broker.kombu_url if label == "kombu" else broker.memory_url
            yield url, Probe(cpu), True
        return
    with target.session(label) as (params, probe):
        host = params.host
        port = params.port
        yield f"amqp://guest:guest@{host}:{port}/", probe, False


# -- the table ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", metavar="DIR")
    parser.add_argument("--only", help="run only the lines whose label contains this")
    args = parser.parse_args()
    n = args.messages
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    memory = MemoryTarget(args.profile)
    tcp = EmbrokerTarget()
    tcp.name = "tcp"
    reference_url = os.environ.get("EMBROKER_REFERENCE_URL", DEFAULT_REFERENCE)
    rabbit: RabbitTarget | None = RabbitTarget(reference_url)
    why_not = rabbit.available()
    if why_not is not None:
        print(f"note: the reference RabbitMQ at {reference_url} did not answer ({why_not})")
        rabbit = None
    targets: list[Target] = [memory, tcp] + ([rabbit] if rabbit else [])

    def consume(target: Target, count: int) -> Sample:
        return loopback.consume(target, count, prefetch=100)

    lines: list[tuple[str, Callable[[Target, int], Sample], int]] = [
        (f"pika publish {n:,}", loopback.publish, n),
        (f"pika confirms one by one {n // 4:,}", loopback.publish_confirms, n // 4),
        (f"pika select, confirms window 100 {n:,}", loopback.publish_confirms_batched, n),
        (f"pika consume {n:,}, prefetch 100, acks", consume, n),
        (f"aio-pika publish+consume {n // 2:,}", aio_pika_line, n // 2),
        (f"kombu publish+consume {n // 2:,}", kombu_line, n // 2),
    ]
    header = (f"{'workload':40} {'memory':>9} {'tcp':>9} {'RabbitMQ':>9} {'mem/R':>6} "
              f"{'tcp/R':>6} {'srv µs':>7} {'srv µs':>7}")
    print(header)
    print(f"{'':40} {'msg/s':>9} {'msg/s':>9} {'msg/s':>9} {'':>6} {'':>6} {'memory':>7} "
          f"{'tcp':>7}")
    print("-" * len(header))
    for label, workload, count in lines:
        if args.only and args.only not in label:
            continue
        runs: dict[str, list[Sample]] = {t.name: [] for t in targets}
        for _ in range(args.repeat):
            for target in targets:
                runs[target.name].append(workload(target, count))
        best = {name: _best(samples) for name, samples in runs.items()}
        m, t, r = best["memory"], best["tcp"], best.get("RabbitMQ")
        per = m.count
        print(f"{label:40} {m.rate:9,.0f} {t.rate:9,.0f} "
              f"{(f'{r.rate:9,.0f}' if r else 'skipped'):>9} "
              f"{(f'{m.rate / r.rate:5.2f}x' if r else ''):>6} "
              f"{(f'{t.rate / r.rate:5.2f}x' if r else ''):>6} "
              f"{_us_per(m.server_cpu, per):>7} {_us_per(t.server_cpu, per):>7}")
    print("\nmsg/s: messages per second (publish+consume lines count both); mem/R, tcp/R: "
          "the ratio to RabbitMQ; srv µs: the broker side's CPU per message.")


if __name__ == "__main__":
    main()
