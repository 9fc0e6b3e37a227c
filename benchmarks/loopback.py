"""The same pika workload against embroker's loopback listener and against a reference RabbitMQ.

Run: python benchmarks/loopback.py [--messages N] [--repeat R] [--profile DIR]

The reference is ``EMBROKER_REFERENCE_URL`` (default ``amqp://guest:guest@127.0.0.1:5672/``); if
it does not answer, its column is skipped with a note. Each line uses a fresh embroker
``Broker().serve()`` (port 0) and, on RabbitMQ, a uniquely named queue that is deleted after.
The client is pika's ``BlockingConnection`` in this thread on both sides (the batched-confirms
line: its ``SelectConnection``, also in this thread); 100-byte bodies:

- publish: N ``basic_publish`` to the default exchange, no confirms, then one round trip
  (``queue_declare(passive=True)``) so that the broker has read them all;
- publish, confirms: N ``basic_publish`` on a ``confirm_delivery()`` channel (pika waits for
  each basic.ack: one by one); and the same with pika in another process (``spawn``), which
  shares no interpreter lock with the listener (its server CPU includes that client's
  connection and 100 untimed publishes);
- publish, confirms in windows of 100: N publishes, 100 at a time, each window waiting for all
  its basic.ack (or nack) before the next is published (see below for why this line uses pika's
  ``SelectConnection``);
- tx: N/100 transactions on a ``tx_select()`` channel, each 100 ``basic_publish`` then
  ``tx_commit()`` (one round trip per commit); shown as messages/s and, on the line under it,
  commits/s (the same runs);
- consume, prefetch P: N messages published beforehand (not timed), then
  ``basic_qos(prefetch_count=P)``, ``basic_consume`` and a ``basic_ack`` per message (from the
  delivery callback), then one round trip (acks handled); P = 1, 10, 100, 1000. Prefetch 1 is a
  round trip per message (the next delivery waits for the ack) and prefetch 10 close to one per
  few, so these two use N/4 messages, as basic.get does (to keep the default run short);
- basic.get: N/4 messages published beforehand, then ``basic_get(auto_ack=True)`` each;
- connect+declare+close: ``BlockingConnection``, ``channel()``, an exclusive server-named
  ``queue_declare``, ``close()``; the median of 50, in milliseconds;
- embroker start+stop: ``broker.serve()`` then ``.stop()``, the median of 100, in milliseconds.

Why batched confirms use ``SelectConnection``: on a ``BlockingConnection``,
``BlockingChannel.basic_publish`` on a confirming channel sends one message and then blocks until
its basic.ack arrives; pika has no public way to have several confirms outstanding there. With the
asynchronous ``SelectConnection`` (the engine ``BlockingConnection`` wraps: same frame codec,
same ioloop, minus the per-call waiting), ``basic_publish`` only queues the frames: a window's 100
publishes leave in one pass of the ioloop, and the confirm callback that empties the window
publishes the next. The broker thus sees 100 messages in flight and pays one round trip per 100,
as a real batching publisher would, and the line measures how fast it routes, enqueues and
confirms rather than pika's per-message wait (the one-by-one line measures that: a round trip,
a poll and a dispatch per message). Confirms are counted by delivery tag, honouring
``multiple=true`` (RabbitMQ coalesces acks; embroker sends one per publish). Connecting, the
queue declare and ``confirm.select`` happen before the clock starts, the close after it stops.

``--client-process``: every msg/s line runs its pika client in another process (``spawn``, one
worker for the whole run), as an application's process or a test runner's worker would: embroker
keeps its listener thread in this process, which no longer shares its interpreter lock with
pika; RabbitMQ is unchanged. The client's CPU is then the worker's, and embroker's server CPU
still its listener thread's.

Each msg/s line runs ``--repeat`` times (3) on each side, alternating, and shows the fastest
run, with the smallest CPU per message seen over the runs (other load on the machine only adds to
either). On a shared machine the absolute figures drift a lot; the ratio is the sturdier figure.

Server CPU per message (embroker only): the listener runs in this process, in its own thread
(named ``embroker:<port>``). Its CPU time is read before and after a timed section from that
thread's own CPU clock, ``time.clock_gettime(time.pthread_getcpuclockid(thread.ident))`` (the
per-thread clock behind ``time.thread_time()``, read for another thread; Linux and most Unixes).
Where that clock is missing, the fallback is the process's CPU time (``time.process_time()``)
minus this thread's (``time.thread_time()``): pika's ``BlockingConnection`` has no threads of
its own, so the difference is the listener's. Divided by N it is the server's CPU cost per
message, including its socket reads and writes. The client's CPU per message (``thread_time`` of
this thread) is shown too: pika, not the server, is often the bottleneck on both sides. Both
share one GIL here, as they do in a test suite; RabbitMQ runs in its own process on other cores.

``--profile DIR`` also runs the embroker listener thread under cProfile during the timed part of
the publish and consume (prefetch 100) lines and writes ``DIR/publish.prof`` / ``DIR/consume.prof``
(view with ``python -m pstats``); the timings of a profiled run are not meaningful.

Nothing here is asserted: it prints a table.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import multiprocessing
import multiprocessing.pool
import os
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pika
from pika.adapters.blocking_connection import BlockingChannel

from embroker import Broker
from embroker.amqp091._connection import ServerConnection
from embroker.server import Server

BODY = b"m" * 100
DEFAULT_REFERENCE = "amqp://guest:guest@127.0.0.1:5672/"
CONFIRM_WINDOW = 100  # publishes in flight on the batched-confirms line
TX_BATCH = 100  # publishes per tx.commit
PREFETCHES = (1, 10, 100, 1000)


# -- measuring --------------------------------------------------------------------------------


def _thread_cpu_clock(thread: threading.Thread) -> Callable[[], float]:
    """A function returning ``thread``'s CPU seconds (see the module docstring)."""
    try:
        clock_id = time.pthread_getcpuclockid(thread.ident)  # type: ignore[arg-type]
        time.clock_gettime(clock_id)
    except (AttributeError, OSError):
        return lambda: time.process_time() - time.thread_time()
    return lambda: time.clock_gettime(clock_id)


def _server_thread(server: Server) -> threading.Thread:
    name = f"embroker:{server.port}"
    return next(t for t in threading.enumerate() if t.name == name)


@dataclass
class Sample:
    seconds: float
    count: int
    server_cpu: float | None = None  # seconds, embroker only
    client_cpu: float | None = None
    turns: int | None = None  # the listener loop's turns, embroker only
    sleeps: int | None = None  # the listener's pauses' time.sleep calls, embroker only

    @property
    def rate(self) -> float:
        return self.count / self.seconds


class Probe:
    """What a workload can observe of the server: its CPU clock, and a profiler switch."""

    def __init__(self, cpu: Callable[[], float] | None = None) -> None:
        self.cpu = cpu
        self.profiling = False  # read by the listener thread (see _profiled)
        #: The URL of the broker under test, for a client in another process.
        self.url: str | None = None
        #: The listener's turns and sleeps so far (see _counted), embroker only.
        self.counts: Callable[[], tuple[int, int]] | None = None

    def server_cpu(self) -> float:
        return self.cpu() if self.cpu is not None else 0.0


class Target:
    """Where a workload runs: embroker (fresh per workload) or the reference RabbitMQ."""

    name = ""

    @contextlib.contextmanager
    def session(self, label: str) -> Iterator[tuple[pika.URLParameters, Probe]]:
        raise NotImplementedError
        yield  # pragma: no cover

    def queue_name(self, label: str) -> str:
        return f"embroker-bench-{label}-{uuid.uuid4().hex[:8]}"


class EmbrokerTarget(Target):
    name = "embroker"

    def __init__(self, profile_dir: str | None = None) -> None:
        self.profile_dir = profile_dir

    @contextlib.contextmanager
    def session(self, label: str) -> Iterator[tuple[pika.URLParameters, Probe]]:
        broker = Broker()
        probe = Probe()
        profiler = None
        if self.profile_dir and label in ("publish", "consume"):
            profiler = cProfile.Profile()
        with _profiled(profiler, probe), broker.serve() as server, _counted(server, probe):
            probe.cpu = _thread_cpu_clock(_server_thread(server))
            probe.url = server.url
            yield pika.URLParameters(server.url), probe
        if server.errors:
            print(f"  !! embroker server errors during {label}: {server.errors!r}")
        if profiler is not None:
            path = os.path.join(self.profile_dir or ".", f"{label}.prof")
            profiler.dump_stats(path)
            print(f"  (profile of the listener thread during the timed {label}: {path})")


@contextlib.contextmanager
def _profiled(profiler: cProfile.Profile | None, probe: Probe) -> Iterator[None]:
    """Profile the listener thread while ``probe.profiling`` is set.

    A profiler can only be switched on and off from the thread it profiles, so the switch is
    made at the top of ``ServerConnection.receive_data`` (the loop thread calls it for every
    read): the profile covers the timed section from its first read to the first read after it.
    """
    if profiler is None:
        yield
        return
    original = ServerConnection.receive_data
    enabled = False

    def receive_data(self: ServerConnection, data: bytes) -> None:
        nonlocal enabled
        if probe.profiling != enabled:
            enabled = probe.profiling
            profiler.enable() if enabled else profiler.disable()
        original(self, data)

    ServerConnection.receive_data = receive_data  # type: ignore[method-assign]
    try:
        yield
    finally:
        ServerConnection.receive_data = original  # type: ignore[method-assign]


@contextlib.contextmanager
def _counted(server: Server, probe: Probe) -> Iterator[None]:
    """Count the listener's turns and the sleeps of its batching pauses into ``probe.counts``:
    the listener's policy gets a pacer whose ``sleep`` counts (embroker._batching.Pacer)."""
    counts = [0, 0]
    turn = server._turn
    pacer = server.batching.pacer

    def counted_turn(next_tick: float) -> float:
        counts[0] += 1
        return turn(next_tick)

    class CountingPacer:
        perf_counter = staticmethod(pacer.perf_counter)
        sched_yield = staticmethod(pacer.sched_yield)

        @staticmethod
        def sleep(seconds: float) -> None:
            counts[1] += 1
            pacer.sleep(seconds)

    server._turn = counted_turn  # type: ignore[method-assign]
    server.batching.pacer = CountingPacer()
    probe.counts = lambda: (counts[0], counts[1])
    try:
        yield
    finally:
        server.batching.pacer = pacer


class RemoteTarget(Target):
    """In a worker process (``--client-process``): the broker another process serves, by its
    URL; the queues a workload names are deleted after it (on RabbitMQ: shared state)."""

    def __init__(self, name: str, url: str) -> None:
        self.name = name
        self.url = url
        self.created: list[str] = []

    @contextlib.contextmanager
    def session(self, label: str) -> Iterator[tuple[pika.URLParameters, Probe]]:
        probe = Probe()
        probe.url = self.url
        try:
            yield pika.URLParameters(self.url), probe
        finally:
            if self.created:
                conn = pika.BlockingConnection(pika.URLParameters(self.url))
                for name in self.created:
                    conn.channel().queue_delete(name)
                conn.close()
                self.created.clear()

    def queue_name(self, label: str) -> str:
        name = super().queue_name(label)
        self.created.append(name)
        return name


def _in_worker(workload: Callable[[Target, int], Sample], name: str, url: str,
               count: int) -> tuple[float, float | None]:
    """A worker process's part of :func:`elsewhere`: the workload against ``url``; its timed
    seconds and the worker's CPU seconds meanwhile."""
    sample = workload(RemoteTarget(name, url), count)
    return sample.seconds, sample.client_cpu


def elsewhere(pool: multiprocessing.pool.Pool, workload: Callable[[Target, int], Sample],
              target: Target, count: int) -> Sample:
    """``workload`` with pika in the worker of ``pool`` (``--client-process``); the server's
    CPU (embroker's listener thread) is read around the worker's whole run, its connection and
    untimed set-up included."""
    with target.session("elsewhere") as (params, probe):
        url = probe.url or target_url(params)
        server_before = probe.server_cpu()
        seconds, client_cpu = pool.apply(_in_worker, (workload, target.name, url, count))
        server_cpu = probe.server_cpu() - server_before if probe.cpu is not None else None
        return Sample(seconds, count, server_cpu, client_cpu)


class RabbitTarget(Target):
    name = "RabbitMQ"

    def __init__(self, url: str) -> None:
        self.url = url
        self.params = pika.URLParameters(url)
        self.created: list[str] = []

    def available(self) -> str | None:
        """None when the reference answers, else why not."""
        probe = pika.URLParameters(self.url)
        probe.connection_attempts, probe.socket_timeout = 1, 3
        try:
            conn = pika.BlockingConnection(probe)
        except pika.exceptions.AMQPError as exc:
            return repr(exc)
        conn.close()
        return None

    @contextlib.contextmanager
    def session(self, label: str) -> Iterator[tuple[pika.URLParameters, Probe]]:
        try:
            probe = Probe()
            probe.url = self.url
            yield self.params, probe
        finally:
            self.cleanup()

    def queue_name(self, label: str) -> str:
        name = super().queue_name(label)
        self.created.append(name)
        return name

    def cleanup(self) -> None:
        if not self.created:
            return
        conn = pika.BlockingConnection(self.params)
        for name in self.created:
            ch = conn.channel()
            ch.queue_delete(name)
            ch.close()
        conn.close()
        self.created.clear()


# -- the workloads ------------------------------------------------------------------------------


def _timed(work: Callable[[], None], probe: Probe, count: int) -> Sample:
    probe.profiling = True
    counts_before = probe.counts() if probe.counts is not None else (0, 0)
    server_before, client_before = probe.server_cpu(), time.thread_time()
    start = time.perf_counter()
    work()
    seconds = time.perf_counter() - start
    server_after, client_after = probe.server_cpu(), time.thread_time()
    counts_after = probe.counts() if probe.counts is not None else (0, 0)
    probe.profiling = False
    sample = Sample(seconds, count,
                    server_after - server_before if probe.cpu is not None else None,
                    client_after - client_before)
    if probe.counts is not None:
        sample.turns = counts_after[0] - counts_before[0]
        sample.sleeps = counts_after[1] - counts_before[1]
    return sample


def _fill(ch: BlockingChannel, queue: str, n: int) -> None:
    for _ in range(n):
        ch.basic_publish("", queue, BODY)
    ch.queue_declare(queue, passive=True)


def _wait_ready(ch: BlockingChannel, queue: str, n: int, timeout: float = 30.0) -> None:
    """RabbitMQ's queues count asynchronously: wait until all ``n`` are there (not timed)."""
    deadline = time.monotonic() + timeout
    while ch.queue_declare(queue, passive=True).method.message_count < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{queue}: fewer than {n} messages after {timeout}s")
        time.sleep(0.01)


def publish(target: Target, n: int) -> Sample:
    with target.session("publish") as (params, probe):
        conn = pika.BlockingConnection(params)
        ch = conn.channel()
        queue = target.queue_name("publish")
        ch.queue_declare(queue)

        def work() -> None:
            for _ in range(n):
                ch.basic_publish("", queue, BODY)
            ch.queue_declare(queue, passive=True)

        sample = _timed(work, probe, n)
        conn.close()
        return sample


def publish_confirms(target: Target, n: int) -> Sample:
    with target.session("confirms") as (params, probe):
        conn = pika.BlockingConnection(params)
        ch = conn.channel()
        queue = target.queue_name("confirms")
        ch.queue_declare(queue)
        ch.confirm_delivery()

        def work() -> None:
            for _ in range(n):
                ch.basic_publish("", queue, BODY)

        sample = _timed(work, probe, n)
        conn.close()
        return sample


def _confirms_in_child(url: str, queue: str, n: int) -> tuple[float, float]:
    """In a process of its own: pika declares ``queue``, publishes 100 messages with confirms
    (not timed), then ``n`` more, each waiting for its basic.ack. Returns the seconds of those
    ``n`` and the process's CPU seconds meanwhile."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.queue_declare(queue)
    ch.confirm_delivery()
    for _ in range(100):
        ch.basic_publish("", queue, BODY)
    cpu, start = time.thread_time(), time.perf_counter()
    for _ in range(n):
        ch.basic_publish("", queue, BODY)
    seconds, cpu = time.perf_counter() - start, time.thread_time() - cpu
    conn.close()
    return seconds, cpu


def publish_confirms_elsewhere(target: Target, n: int) -> Sample:
    """``publish_confirms`` with pika in another process (``_confirms_in_child``): the round
    trip of a client that does not share the listener's interpreter lock, as an application's
    process or a test runner's worker. The server's CPU covers the child's connection and its
    100 untimed publishes too."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool, target.session("confirms-elsewhere") as (params, probe):
        queue = target.queue_name("confirms-elsewhere")
        url = probe.url or target_url(params)
        server_before = probe.server_cpu()
        seconds, client_cpu = pool.apply(_confirms_in_child, (url, queue, n))
        server_cpu = probe.server_cpu() - server_before if probe.cpu is not None else None
        return Sample(seconds, n, server_cpu, client_cpu)


def target_url(params: pika.URLParameters) -> str:
    """An AMQP URL for ``params`` (guest's credentials, as every target here uses)."""
    return f"amqp://guest:guest@{params.host}:{params.port}/"


class _WindowedPublisher:
    """A ``SelectConnection`` publisher with confirms: ``window`` publishes, then all their acks.

    :meth:`open` and :meth:`close` and :meth:`publish` each run the ioloop until their step is
    done (the callbacks stop it), so that only :meth:`publish` is timed.
    """

    def __init__(self, params: pika.URLParameters, queue: str) -> None:
        self.queue = queue
        self.error: str | None = None
        self.closing = False
        self.channel: pika.channel.Channel | None = None
        self.outstanding: set[int] = set()  # delivery tags of the window not yet confirmed
        self.last_tag = 0
        self.remaining = 0
        self.window = CONFIRM_WINDOW
        self.nacked = 0
        self.conn = pika.SelectConnection(params, on_open_callback=self._on_open,
                                          on_open_error_callback=self._on_open_error,
                                          on_close_callback=self._on_closed)

    def _run(self, step: str, timeout: float = 120.0) -> None:
        ioloop = self.conn.ioloop
        timer = ioloop.call_later(timeout, lambda: self._fail(f"{step}: no end after {timeout}s"))
        ioloop.start()
        ioloop.remove_timeout(timer)
        if self.error is not None:
            raise RuntimeError(f"{self.queue}: {self.error}")

    def _fail(self, why: str) -> None:
        if self.error is None:
            self.error = why
        self.conn.ioloop.stop()

    def _on_open(self, conn: pika.SelectConnection) -> None:
        conn.channel(on_open_callback=self._on_channel)

    def _on_open_error(self, _conn: pika.SelectConnection, exc: BaseException | str) -> None:
        self._fail(f"connection failed: {exc!r}")

    def _on_closed(self, _conn: pika.SelectConnection, reason: BaseException) -> None:
        if self.closing:
            self.conn.ioloop.stop()
        else:
            self._fail(f"connection closed: {reason!r}")

    def _on_channel(self, ch: pika.channel.Channel) -> None:
        self.channel = ch
        ch.add_on_close_callback(
            lambda _ch, reason: None if self.closing else self._fail(f"channel closed: {reason!r}"))
        ch.queue_declare(self.queue, callback=lambda _frame: ch.confirm_delivery(
            self._on_confirm, callback=lambda _frame: self.conn.ioloop.stop()))

    def open(self) -> None:
        self._run("open")

    def publish(self, n: int, window: int = CONFIRM_WINDOW) -> None:
        self.remaining, self.window = n, window
        self._publish_window()
        self._run("publish")

    def _publish_window(self) -> None:
        ch, queue = self.channel, self.queue
        assert ch is not None
        count = min(self.window, self.remaining)
        self.remaining -= count
        first = self.last_tag + 1
        self.last_tag += count
        self.outstanding.update(range(first, self.last_tag + 1))
        for _ in range(count):
            ch.basic_publish("", queue, BODY)

    def _on_confirm(self, frame: pika.frame.Method) -> None:
        method = frame.method
        if isinstance(method, pika.spec.Basic.Nack):
            self.nacked += 1
        tag = method.delivery_tag
        if method.multiple:
            self.outstanding = {t for t in self.outstanding if t > tag}
        else:
            self.outstanding.discard(tag)
        if not self.outstanding:
            if self.remaining:
                self._publish_window()
            else:
                self.conn.ioloop.stop()

    def close(self) -> None:
        self.closing = True
        if self.conn.is_open:
            self.conn.close()
            self._run("close")
        self.conn.ioloop.close()


def publish_confirms_batched(target: Target, n: int) -> Sample:
    with target.session("confirms-batched") as (params, probe):
        publisher = _WindowedPublisher(params, target.queue_name("confirms-batched"))
        try:
            publisher.open()
            sample = _timed(lambda: publisher.publish(n, CONFIRM_WINDOW), probe, n)
        finally:
            publisher.close()
        if publisher.nacked:
            print(f"  !! {target.name}: {publisher.nacked} basic.nack on the batched confirms")
        return sample


def publish_tx(target: Target, n: int) -> Sample:
    """``n // TX_BATCH`` transactions of ``TX_BATCH`` publishes each (the count is rounded down)."""
    commits = max(n // TX_BATCH, 1)
    with target.session("tx") as (params, probe):
        conn = pika.BlockingConnection(params)
        ch = conn.channel()
        queue = target.queue_name("tx")
        ch.queue_declare(queue)
        ch.tx_select()

        def work() -> None:
            for _ in range(commits):
                for _ in range(TX_BATCH):
                    ch.basic_publish("", queue, BODY)
                ch.tx_commit()

        sample = _timed(work, probe, commits * TX_BATCH)
        conn.close()
        return sample


def consume(target: Target, n: int, prefetch: int = 100) -> Sample:
    label = "consume" if prefetch == 100 else f"consume-p{prefetch}"
    with target.session(label) as (params, probe):
        conn = pika.BlockingConnection(params)
        ch = conn.channel()
        queue = target.queue_name(label)
        ch.queue_declare(queue)
        _fill(ch, queue, n)
        _wait_ready(ch, queue, n)
        ch.basic_qos(prefetch_count=prefetch)
        received = 0

        def on_message(channel: BlockingChannel, method: pika.spec.Basic.Deliver,
                       _properties: pika.BasicProperties, _body: bytes) -> None:
            nonlocal received
            channel.basic_ack(method.delivery_tag)
            received += 1

        def work() -> None:
            tag = ch.basic_consume(queue, on_message)
            deadline = time.monotonic() + 120
            while received < n and time.monotonic() < deadline:
                conn.process_data_events(time_limit=1)
            ch.basic_cancel(tag)  # a round trip: every ack has been handled
            if received < n:
                print(f"  !! {target.name}: consumed only {received} of {n} (prefetch {prefetch})")

        sample = _timed(work, probe, n)
        conn.close()
        return sample


def basic_get(target: Target, n: int) -> Sample:
    with target.session("get") as (params, probe):
        conn = pika.BlockingConnection(params)
        ch = conn.channel()
        queue = target.queue_name("get")
        ch.queue_declare(queue)
        _fill(ch, queue, n)
        _wait_ready(ch, queue, n)

        def work() -> None:
            for _ in range(n):
                ch.basic_get(queue, auto_ack=True)

        sample = _timed(work, probe, n)
        conn.close()
        return sample


def connect_declare_close(target: Target, times: int) -> float:
    """The median milliseconds of a connect + channel + queue.declare + close."""
    with target.session("connect") as (params, _probe):
        samples = []
        for _ in range(times):
            start = time.perf_counter()
            conn = pika.BlockingConnection(params)
            conn.channel().queue_declare("", exclusive=True)
            conn.close()
            samples.append(time.perf_counter() - start)
        return statistics.median(samples) * 1000


def start_stop(times: int) -> float:
    """The median milliseconds of ``broker.serve()`` + ``.stop()``."""
    broker = Broker()
    samples = []
    for _ in range(times):
        start = time.perf_counter()
        broker.serve().stop()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


# -- the table ------------------------------------------------------------------------------------


def _best(samples: list[Sample]) -> Sample:
    """The fastest run, with the smallest CPU times seen over all runs (noise only adds)."""
    best = max(samples, key=lambda s: s.rate)
    servers = [s.server_cpu for s in samples if s.server_cpu is not None]
    clients = [s.client_cpu for s in samples if s.client_cpu is not None]
    return Sample(best.seconds, best.count, min(servers) if servers else None,
                  min(clients) if clients else None)


def _us_per(cpu: float | None, count: int) -> str:
    return "" if cpu is None else f"{cpu / count * 1e6:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=20_000,
                        help="messages per publish/tx/consume line (basic.get and consume at "
                             "prefetch 1 and 10 use a quarter)")
    parser.add_argument("--connects", type=int, default=50)
    parser.add_argument("--starts", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each msg/s line; the best is shown")
    parser.add_argument("--profile", metavar="DIR",
                        help="cProfile the listener thread during publish and consume")
    parser.add_argument("--client-process", action="store_true",
                        help="run pika in another process on every msg/s line")
    args = parser.parse_args()
    n, n_get = args.messages, max(args.messages // 4, 1)
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)

    embroker = EmbrokerTarget(args.profile)
    reference_url = os.environ.get("EMBROKER_REFERENCE_URL", DEFAULT_REFERENCE)
    reference = RabbitTarget(reference_url)
    why_not = reference.available()
    rabbit: RabbitTarget | None = reference
    if why_not is not None:
        print(f"note: the reference RabbitMQ at {reference_url} did not answer ({why_not}); "
              "its column is skipped")
        rabbit = None
    targets: list[Target] = [embroker] + ([rabbit] if rabbit else [])

    n_tx = max(n // TX_BATCH, 1) * TX_BATCH
    rate_lines: list[tuple[str, Callable[[Target, int], Sample], int]] = [
        (f"publish {n:,} x 100 B, no confirms", publish, n),
        (f"publish {n:,}, confirms one by one", publish_confirms, n),
        *([] if args.client_process else
          [("  the same, pika in another process", publish_confirms_elsewhere, n)]),
        (f"publish {n:,}, confirms, window {CONFIRM_WINDOW}", publish_confirms_batched, n),
        (f"tx {n_tx // TX_BATCH:,} x ({TX_BATCH} publishes + commit)", publish_tx, n_tx),
    ]
    for prefetch in PREFETCHES:
        count = n_get if prefetch <= 10 else n  # round-trip bound: a quarter, as basic.get
        rate_lines.append((f"consume {count:,}, prefetch {prefetch}, acks",
                           functools.partial(consume, prefetch=prefetch), count))
    rate_lines.append((f"basic.get {n_get:,}, auto-ack", basic_get, n_get))
    pool = multiprocessing.get_context("spawn").Pool(1) if args.client_process else None
    if pool is not None:
        print("pika runs in another process on every msg/s line")
        rate_lines = [(label, functools.partial(elsewhere, pool, workload), count)
                      for label, workload, count in rate_lines]
    header = (f"{'workload':40} {'embroker':>11} {'RabbitMQ':>11} {'ratio':>7} "
              f"{'srv CPU':>8} {'cli CPU':>8} {'cli CPU':>8}")
    print(header)
    print(f"{'':40} {'msg/s':>11} {'msg/s':>11} {'e/R':>7} {'us/msg':>8} "
          f"{'us/msg e':>8} {'us/msg R':>8}")
    print("-" * len(header))
    for label, workload, count in rate_lines:
        runs: dict[str, list[Sample]] = {t.name: [] for t in targets}
        for _ in range(args.repeat):  # interleaved, so that drifting load hits both sides
            for t in targets:
                runs[t.name].append(workload(t, count))
        results = {name: _best(samples) for name, samples in runs.items()}
        e, r = results["embroker"], results.get("RabbitMQ")
        print(f"{label:40} {e.rate:11,.0f} {(f'{r.rate:11,.0f}' if r else 'skipped'):>11} "
              f"{(f'{e.rate / r.rate:6.2f}x' if r else ''):>7} {_us_per(e.server_cpu, count):>8} "
              f"{_us_per(e.client_cpu, count):>8} "
              f"{(_us_per(r.client_cpu, count) if r else ''):>8}")
        if "tx " in label:  # the same runs, counted in commits
            e_c, r_c = e.rate / TX_BATCH, (r.rate / TX_BATCH if r else None)
            print(f"{'  the same, commits/s':40} {e_c:11,.0f} "
                  f"{(f'{r_c:11,.0f}' if r_c else 'skipped'):>11} "
                  f"{(f'{e_c / r_c:6.2f}x' if r_c else ''):>7} "
                  f"{_us_per(e.server_cpu, count // TX_BATCH):>8} "
                  f"{_us_per(e.client_cpu, count // TX_BATCH):>8} "
                  f"{(_us_per(r.client_cpu, count // TX_BATCH) if r else ''):>8}")
    if pool is not None:
        pool.close()
        pool.join()
    ms = {t.name: connect_declare_close(t, args.connects) for t in targets}
    e_ms, r_ms = ms["embroker"], ms.get("RabbitMQ")
    print(f"{'connect+declare+close, median ms':40} {e_ms:11.2f} "
          f"{(f'{r_ms:11.2f}' if r_ms else 'skipped'):>11} "
          f"{(f'{r_ms / e_ms:6.2f}x' if r_ms else ''):>7}")
    print(f"{'embroker serve()+stop(), median ms':40} {start_stop(args.starts):11.2f}")
    print("\nratio e/R: how many times faster embroker is (rates: embroker/RabbitMQ; "
          "the ms line: RabbitMQ/embroker).")
    print("srv CPU: the embroker listener thread's CPU time per message; cli CPU: pika's "
          "(this thread, or the worker's with --client-process) against embroker (e) and "
          "RabbitMQ (R).")
    print("The commits/s line shows CPU per commit (per message x 100); the batched-confirms "
          "line runs pika's SelectConnection, all others its BlockingConnection.")


if __name__ == "__main__":
    main()
