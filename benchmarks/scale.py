"""How embroker's costs grow with the work: topic bindings, queues, connections and a stream,
each at a few sizes, next to the reference RabbitMQ 3.10.8 where it can be measured here.

Run: python benchmarks/scale.py [--only bindings,queues,connections,stream] [--repeat R]
     [--bindings 1000,10000,100000] [--queues 1000,10000] [--connections 1000,10000]
     [--stream-mb 1024] [--no-reference] [--quick]

``--quick`` (smaller sizes, one run each) finishes in well under a minute. Each line runs
``--repeat`` times (3) and shows the fastest run: the machine is shared, so the fastest is the
one least disturbed. Nothing here is asserted: it prints tables.

- **bindings**: N topic bindings on one topic exchange, spread over 100 queues. In-process
  (the model channel, ``Broker(trace_limit=1)``, no socket, CPU time): µs per ``queue.bind``;
  µs per publish (publish + ``basic.get``) of a key matching one binding among N patterns
  ``k<i>.*.created`` (the ``*`` line) or ``#.k<i>`` (the ``#`` line); bytes per binding
  (tracemalloc). Then, on ``Broker()`` as it comes (a trace of 10,000 decisions), 200 rounds
  of a publish, or of a new binding then a publish: µs a round and the bytes each leaves kept
  (a publish after a change copies the exchange's N bindings for the trace). Over TCP
  (``embroker.Server`` in a process of its own, as RabbitMQ is, and the reference): the same
  N ``queue.bind`` sent pipelined with ``nowait`` then one round trip (µs per binding, wall
  clock); 10,000 confirmed publishes of a key matching one ``*`` binding (µs per publish,
  until the last confirm); the server's memory growth per binding.
- **queues**: N classic queues. In-process: µs per ``queue.declare``, bytes per queue, µs per
  publish through the default exchange to each queue in turn. Over TCP: N ``queue.declare``
  pipelined with ``nowait``, RSS growth per queue, 10,000 confirmed publishes spread over the
  N queues.
- **connections**: N AMQP connections (handshake done, one channel open; raw sockets from
  this process), the server's RSS growth per connection, the seconds to open them, then the
  µs per round trip (``basic.qos``) on one more connection while the N stay open, and the
  server's CPU while they idle (3 seconds, ``/proc/<pid>/stat``; heartbeats off): embroker's
  loop looks at every connection each half second (``_tick``), which shows here. The
  reference holds only as many as its file-descriptor limit lets it (``sockets_total`` of
  ``/api/nodes``, 832 of 1024 on the project's machine): fewer are opened there, and the
  table says how many.
- **stream**: ``--stream-mb`` (1024) megabytes appended to a new stream over the stream
  protocol (rstream, bodies of 4,000 bytes in batches of 100, until all are confirmed), then
  read back by a consumer from the middle offset and from ``first``; seconds, MB/s and the
  server's RSS after appending and after reading. The stream is deleted after, on both sides.
  The free disk space (``df``) is checked first; with too little, say a smaller
  ``--stream-mb``.

Memory is the server's resident set (``/proc/<pid>/status``), except RabbitMQ's for bindings
and queues: ``erlang:memory(total)`` (``rabbitmqctl eval``), since the RSS of its VM moves by
hundreds of MB as its allocators keep and return memory. Each reading waits a second first.
The reference is ``127.0.0.1:5672`` (5552 for streams), guest/guest; every name declared there
is unique and deleted after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TypeVar

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rates import Countdown, answers
from connections import open_connections

from embroker import Broker
from embroker.amqp091 import (
    PROTOCOL_HEADER,
    FrameParser,
    encode_message,
    encode_method_frame,
    methods,
)
from embroker.model import Channel

FRAME_MAX = 131072
BODY = b"m" * 100
#: How a line gets a server: a fresh embroker, or the reference.
Side = Callable[[], AbstractContextManager["Target"]]
REFERENCE = ("127.0.0.1", 5672)
REFERENCE_STREAM = ("127.0.0.1", 5552)
MANAGEMENT = "http://127.0.0.1:15672/api"
QUEUES_FOR_BINDINGS = 100
PUBLISHES = 10_000  # per publish line (--quick: 2,000)
SETTLE = 1.0  # seconds before each memory reading (--quick: 0.3)

SERVE = """
import resource, sys
from embroker import Broker
from embroker.model import Channel
from embroker.server import Server
_soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
with Server(Broker(), heartbeat=0, stream_port=0) as server:
    print(server.port, server.stream_port, flush=True)
    sys.stdin.read()
"""


# -- the servers ------------------------------------------------------------------------------

@dataclass
class Target:
    name: str
    port: int
    stream_port: int
    pid: int | None  # whose RSS is read; None: not readable here
    #: KiB the server holds (bindings and queues): embroker's RSS; RabbitMQ's
    #: ``erlang:memory(total)`` when ``rabbitmqctl`` answers, else its RSS
    memory: Callable[[], int]


def rss_kib(pid: int | None) -> int:
    if pid is None:
        return 0
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int | None) -> float:
    """The user and system CPU seconds process ``pid`` has run (``/proc/<pid>/stat``)."""
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settled(target: Target) -> int:
    time.sleep(SETTLE)  # (RabbitMQ's processes grow lazily; embroker's loop ends its turn)
    return target.memory()


@contextmanager
def embroker() -> Iterator[Target]:
    """A fresh embroker server (AMQP and stream ports) in a process of its own."""
    process = subprocess.Popen([sys.executable, "-c", SERVE], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert process.stdout is not None
        words = process.stdout.readline().split()
        if len(words) != 2:
            raise RuntimeError(f"embroker did not start: {words!r}")
        yield Target("embroker", int(words[0]), int(words[1]), process.pid,
                     lambda: rss_kib(process.pid))
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(30)


def rabbitmq_pid() -> int | None:
    out = subprocess.run(["pgrep", "-f", "beam.smp.*rabbit"], capture_output=True, text=True,
                         check=False)
    pids = [int(p) for p in out.stdout.split()]
    return pids[0] if pids and os.access(f"/proc/{pids[0]}/status", os.R_OK) else None


def erlang_memory_kib() -> int:
    """RabbitMQ's ``erlang:memory(total)``, in KiB: what its VM holds allocated. Its RSS is no
    measure of a few MB more: the VM's allocators keep what earlier work freed and give it
    back in steps of their own, so the RSS moves by hundreds of MB either way."""
    out = subprocess.run(["rabbitmqctl", "eval", "erlang:memory(total)."], capture_output=True,
                         text=True, timeout=60, check=True)
    return int(out.stdout.split()[-1]) // 1024


def rabbitmq_memory() -> tuple[str, Callable[[], int]]:
    """How RabbitMQ's memory is read here (for bindings and queues), and the reading."""
    try:
        erlang_memory_kib()
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        pid = rabbitmq_pid()
        return "the RSS of its beam.smp", lambda: rss_kib(pid)
    return "erlang:memory(total), by rabbitmqctl eval", erlang_memory_kib


@contextmanager
def reference() -> Iterator[Target]:
    yield Target("RabbitMQ", REFERENCE[1], REFERENCE_STREAM[1], rabbitmq_pid(),
                 rabbitmq_memory()[1])


def node_status() -> dict[str, object]:
    request = urllib.request.Request(f"{MANAGEMENT}/nodes")
    request.add_header("Authorization", "Basic Z3Vlc3Q6Z3Vlc3Q=")  # guest:guest
    with urllib.request.urlopen(request, timeout=10) as response:
        return dict(json.load(response)[0])


# -- a raw AMQP 0-9-1 client: frames encoded beforehand, sent in bulk ---------------------------

class Raw:
    """One AMQP 0-9-1 connection with channel 1 open. What it sends is encoded beforehand and
    sent in bulk; a thread reads what comes back (confirms, ``basic.qos-ok``, a close)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.parser = FrameParser(max_frame_size=FRAME_MAX)
        self._expect(PROTOCOL_HEADER, methods.ConnectionStart)
        self._expect(encode_method_frame(0, methods.ConnectionStartOk(
            client_properties={}, mechanism="PLAIN", response="\0guest\0guest",
            locale="en_US")), methods.ConnectionTune)
        self._expect(encode_method_frame(0, methods.ConnectionTuneOk(
            channel_max=10, frame_max=FRAME_MAX, heartbeat=0))
            + encode_method_frame(0, methods.ConnectionOpen(virtual_host="/"))
            + encode_method_frame(1, methods.ChannelOpen()), methods.ChannelOpenOk)
        self.sock.settimeout(None)
        self.cond = threading.Condition()
        self.acked = 0
        self.qos_ok = 0
        self.closed: str | None = None
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _expect(self, data: bytes, reply: type) -> None:
        self.sock.sendall(data)
        while True:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError(f"closed while waiting for {reply.__name__}")
            for frame in self.parser.feed(chunk):
                method = getattr(frame, "method", None)
                if isinstance(method, (methods.ConnectionClose, methods.ChannelClose)):
                    raise RuntimeError(f"{method.reply_code} {method.reply_text}")
                if isinstance(method, reply):
                    return

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(1 << 20)
            except OSError:
                data = b""
            with self.cond:
                if not data:
                    self.closed = self.closed or "the connection closed"
                    self.cond.notify_all()
                    return
                for frame in self.parser.feed(data):
                    method = getattr(frame, "method", None)
                    if isinstance(method, methods.BasicAck):
                        self.acked = max(self.acked, method.delivery_tag)
                    elif isinstance(method, methods.BasicQosOk):
                        self.qos_ok += 1
                    elif isinstance(method, (methods.ConnectionClose, methods.ChannelClose)):
                        self.closed = f"{method.reply_code} {method.reply_text}"
                self.cond.notify_all()

    def _wait(self, done: Callable[[], bool]) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: done() or self.closed is not None, 600):
                raise RuntimeError("no answer in 600 s")
            if self.closed is not None and not done():
                raise RuntimeError(self.closed)

    def send(self, frames: Sequence[bytes]) -> None:
        for i in range(0, len(frames), 1000):
            self.sock.sendall(b"".join(frames[i:i + 1000]))

    def sync(self) -> None:
        """One round trip: every frame sent before has been handled."""
        with self.cond:
            target = self.qos_ok + 1
        self.sock.sendall(QOS)
        self._wait(lambda: self.qos_ok >= target)

    def select_confirms(self) -> None:
        self.sock.sendall(encode_method_frame(1, methods.ConfirmSelect(no_wait=True)))

    def until_acked(self, tag: int) -> None:
        self._wait(lambda: self.acked >= tag)

    def send_and_sync(self, frames: Sequence[bytes]) -> None:
        self.send(frames)
        self.sync()

    def send_until_acked(self, frames: Sequence[bytes]) -> None:
        """Send confirmed publishes (the first ``len(frames)`` of the channel) and wait for the
        last one's confirm."""
        self.send(frames)
        self.until_acked(len(frames))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # (wakes the reader's recv)
        self.sock.close()
        self.reader.join(5)


QOS = encode_method_frame(1, methods.BasicQos(prefetch_count=0))


def declare(queue: str, nowait: bool = True) -> bytes:
    return encode_method_frame(1, methods.QueueDeclare(queue=queue, no_wait=nowait))


def bind(queue: str, exchange: str, key: str) -> bytes:
    return encode_method_frame(1, methods.QueueBind(queue=queue, exchange=exchange,
                                                    routing_key=key, no_wait=True))


def publish(exchange: str, key: str) -> bytes:
    return encode_message(1, methods.BasicPublish(exchange=exchange, routing_key=key), BODY,
                          FRAME_MAX)


def timed(body: Callable[[], object]) -> float:
    start = time.perf_counter()
    body()
    return time.perf_counter() - start


def cpu_timed(body: Callable[[], object]) -> float:
    start = time.process_time()
    body()
    return time.process_time() - start


def traced_bytes(build: Callable[[], object]) -> float:
    """Bytes that what ``build()`` returns holds (tracemalloc, kept alive while read)."""
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    kept = build()
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return after - before


R = TypeVar("R")


def runs_on(make: Side, repeat: int, measure: Callable[[Target], R],
            settle: float = 0.0) -> tuple[str, list[R]]:
    """``measure`` run ``repeat`` times, each on a fresh target of ``make`` (``settle`` seconds
    after each): the target's name and the results in order."""
    name, results = "", []
    for _ in range(repeat):
        with make() as target:
            name = target.name
            results.append(measure(target))
        if settle:
            time.sleep(settle)
    return name, results


def row(cells: Sequence[tuple[str, int]]) -> None:
    print("".join(f"{text:>{width}}" for text, width in cells), flush=True)


def us(seconds: float, n: int) -> str:
    return f"{seconds / n * 1e6:,.1f}"


# -- bindings --------------------------------------------------------------------------------

def _topic_broker(n: int, pattern: str) -> tuple[Broker, Callable[[], None]]:
    """A broker with a topic exchange 'x' and n bindings of ``pattern.format(i)``, and the
    binding (timed separately)."""
    broker = Broker(trace_limit=1)
    channel = broker.open_connection().open_channel(1)
    channel.exchange_declare("x", "topic")
    for q in range(QUEUES_FOR_BINDINGS):
        channel.queue_declare(f"q{q}")
    queue_bind = channel.queue_bind

    def bind_all() -> None:
        for i in range(n):
            queue_bind(f"q{i % QUEUES_FOR_BINDINGS}", "x", pattern.format(i))
    return broker, bind_all


def _route_time(broker: Broker, key: str, queue: str, m: int) -> float:
    channel = next(iter(broker.connections.values())).channels[1]
    publish_, get = channel.basic_publish, channel.basic_get

    def run() -> None:
        for _ in range(m):
            publish_("x", key, BODY, {})
            if get(queue, no_ack=True) is None:
                raise AssertionError(f"{key!r} was not routed to {queue}")
    return cpu_timed(run)


def bindings_in_process(n: int, repeat: int, m: int) -> tuple[float, float, float, float]:
    """µs-seconds totals: bind n, route m (``*``), route m (``#``); bytes per binding."""
    binds, star, hashed = [], [], []
    target = 7 % n
    for _ in range(repeat):
        broker, bind_all = _topic_broker(n, "k{}.*.created")
        binds.append(cpu_timed(bind_all))
        star.append(_route_time(broker, f"k{target}.eu.created", f"q{target % 100}", m))
        del broker
        broker, bind_all = _topic_broker(n, "#.k{}")
        bind_all()
        hashed.append(_route_time(broker, f"eu.created.k{target}", f"q{target % 100}", m))
        del broker

    def build() -> Broker:
        broker, bind_all = _topic_broker(n, "k{}.*.created")
        bind_all()
        return broker
    empty = traced_bytes(lambda: _topic_broker(0, "")[0])
    full = traced_bytes(build)
    return min(binds), min(star), min(hashed), (full - empty) / n


def bindings_tcp(target: Target, n: int, m: int) -> tuple[float, float, float]:
    """Seconds to bind n (pipelined) and to publish m confirmed; KiB of RSS per binding."""
    tag = uuid.uuid4().hex[:8]
    exchange = f"scale-{tag}"
    queues = [f"scale-{tag}-{q}" for q in range(QUEUES_FOR_BINDINGS)]
    client = Raw(target.port)
    try:
        client.send([encode_method_frame(1, methods.ExchangeDeclare(
            exchange=exchange, type="topic", no_wait=True))] + [declare(q) for q in queues])
        client.sync()
        frames = [bind(queues[i % QUEUES_FOR_BINDINGS], exchange, f"k{i}.*.created")
                  for i in range(n)]
        before = settled(target)
        bound = timed(lambda: client.send_and_sync(frames))
        after = settled(target)
        client.select_confirms()
        message = publish(exchange, f"k{7 % n}.eu.created")
        published = timed(lambda: client.send_until_acked([message] * m))
    finally:
        cleanup = Raw(target.port)
        cleanup.send([encode_method_frame(1, methods.ExchangeDelete(exchange=exchange,
                                                                    no_wait=True))]
                     + [encode_method_frame(1, methods.QueueDelete(queue=q, no_wait=True))
                        for q in queues])
        cleanup.sync()
        cleanup.close()
        client.close()
    return bound, published, (after - before) / n


CHURN = 200


def churn_in_process(n: int, repeat: int, changing: bool) -> tuple[float, float]:
    """On ``Broker()`` as it comes (a trace of 10,000 decisions) with n topic bindings: 200
    rounds of (a new binding when ``changing``, then) a publish and a ``basic.get``. CPU
    seconds for the rounds (fastest of ``repeat``), and the bytes each round leaves held."""

    def setup() -> tuple[Broker, Callable[[], None]]:
        broker = Broker()
        channel = broker.open_connection().open_channel(1)
        channel.exchange_declare("x", "topic")
        for q in range(QUEUES_FOR_BINDINGS):
            channel.queue_declare(f"q{q}")
        for i in range(n):
            channel.queue_bind(f"q{i % QUEUES_FOR_BINDINGS}", "x", f"k{i}.*.created")
        key, queue = f"k{7 % n}.eu.created", f"q{7 % n % QUEUES_FOR_BINDINGS}"

        def rounds() -> None:
            for r in range(CHURN):
                if changing:
                    channel.queue_bind("q0", "x", f"new{r}.*.created")
                channel.basic_publish("x", key, BODY, {})
                channel.basic_get(queue, no_ack=True)
        return broker, rounds

    seconds = []
    for _ in range(repeat):
        broker, rounds = setup()
        seconds.append(cpu_timed(rounds))
        del broker, rounds
    broker, rounds = setup()
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    rounds()
    gc.collect()
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del broker, rounds
    return min(seconds), (after - before) / CHURN


def run_bindings(sizes: Sequence[int], repeat: int, targets: Sequence[Side]
                 ) -> None:
    m = PUBLISHES
    print(f"\n== topic bindings: N bindings on one topic exchange over {QUEUES_FOR_BINDINGS} "
          f"queues; publishes match one of them (fastest of {repeat})")
    print("in-process (model channel, CPU time):")
    row([("N", 9), ("bind µs", 10), ("publish µs (*)", 16), ("publish µs (#)", 16),
         ("bytes/binding", 15)])
    for n in sizes:
        bound, star, hashed, per = bindings_in_process(n, repeat, m)
        row([(f"{n:,}", 9), (us(bound, n), 10), (us(star, m), 16), (us(hashed, m), 16),
             (f"{per:,.0f}", 15)])
    print(f"bindings changing between publishes (in-process, Broker() as it comes: a trace of "
          f"10,000 decisions; {CHURN} rounds):")
    row([("N", 9), ("publish µs", 12), ("bytes kept", 12), ("bind+publish µs", 17),
         ("bytes kept", 12)])
    for n in sizes:
        steady, steady_kept = churn_in_process(n, repeat, changing=False)
        churned, churned_kept = churn_in_process(n, repeat, changing=True)
        row([(f"{n:,}", 9), (us(steady, CHURN), 12), (f"{steady_kept:,.0f}", 12),
             (us(churned, CHURN), 17), (f"{churned_kept:,.0f}", 12)])
    print(f"over TCP (bind pipelined with nowait; {m:,} confirmed publishes; wall clock):")
    row([("N", 9), ("server", 10), ("bind µs", 10), ("publish µs", 12), ("KiB/binding", 13)])
    for n in sizes:
        for make in targets:
            name, runs = runs_on(make, repeat, functools.partial(bindings_tcp, n=n, m=m))
            row([(f"{n:,}", 9), (name, 10), (us(min(r[0] for r in runs), n), 10),
                 (us(min(r[1] for r in runs), m), 12), (f"{min(r[2] for r in runs):,.2f}", 13)])


# -- queues ----------------------------------------------------------------------------------

def _declare_all(channel: Channel, names: Sequence[str]) -> None:
    queue_declare = channel.queue_declare
    for name in names:
        queue_declare(name)


def _publish_each(channel: Channel, names: Sequence[str], m: int) -> None:
    publish_, n = channel.basic_publish, len(names)
    for i in range(m):
        publish_("", names[i % n], BODY, {})


def queues_in_process(n: int, repeat: int, m: int) -> tuple[float, float, float]:
    declares, publishes = [], []
    names = [f"q{i}" for i in range(n)]
    for _ in range(repeat):
        broker = Broker(trace_limit=1)
        channel = broker.open_connection().open_channel(1)
        declares.append(cpu_timed(functools.partial(_declare_all, channel, names)))
        publishes.append(cpu_timed(functools.partial(_publish_each, channel, names, m)))
        del broker, channel

    def build() -> Broker:
        broker = Broker(trace_limit=1)
        channel = broker.open_connection().open_channel(1)
        for name in names:
            channel.queue_declare(name)
        return broker

    def empty() -> Broker:
        broker = Broker(trace_limit=1)
        broker.open_connection().open_channel(1)
        return broker
    per = (traced_bytes(build) - traced_bytes(empty)) / n
    return min(declares), min(publishes), per


def queues_tcp(target: Target, n: int, m: int) -> tuple[float, float, float]:
    tag = uuid.uuid4().hex[:8]
    names = [f"scale-{tag}-{i}" for i in range(n)]
    client = Raw(target.port)
    try:
        frames = [declare(name) for name in names]
        before = settled(target)
        declared = timed(lambda: client.send_and_sync(frames))
        after = settled(target)
        client.select_confirms()
        messages = [publish("", names[i % n]) for i in range(m)]
        published = timed(lambda: client.send_until_acked(messages))
    finally:
        cleanup = Raw(target.port)
        cleanup.send([encode_method_frame(1, methods.QueueDelete(queue=name, no_wait=True))
                      for name in names])
        cleanup.sync()
        cleanup.close()
        client.close()
    return declared, published, (after - before) / n


def run_queues(sizes: Sequence[int], repeat: int, targets: Sequence[Side]
               ) -> None:
    m = PUBLISHES
    print(f"\n== queues: N classic queues; {m:,} publishes through the default exchange, to "
          f"each queue in turn (fastest of {repeat})")
    print("in-process (model channel, CPU time):")
    row([("N", 9), ("declare µs", 12), ("publish µs", 12), ("bytes/queue", 13)])
    for n in sizes:
        declared, published, per = queues_in_process(n, repeat, m)
        row([(f"{n:,}", 9), (us(declared, n), 12), (us(published, m), 12), (f"{per:,.0f}", 13)])
    print("over TCP (declare pipelined with nowait; confirmed publishes; wall clock):")
    row([("N", 9), ("server", 10), ("declare µs", 12), ("publish µs", 12), ("KiB/queue", 11)])
    for n in sizes:
        for make in targets:
            name, runs = runs_on(make, repeat, functools.partial(queues_tcp, n=n, m=m))
            row([(f"{n:,}", 9), (name, 10), (us(min(r[0] for r in runs), n), 12),
                 (us(min(r[1] for r in runs), m), 12), (f"{min(r[2] for r in runs):,.1f}", 11)])


# -- connections -----------------------------------------------------------------------------

def round_trip_us(port: int, k: int = 300) -> float:
    client = Raw(port)
    try:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(k):
                client.sync()
            best = min(best, (time.perf_counter() - start) / k)
    finally:
        client.close()
    return best * 1e6


IDLE = 3.0  # seconds the idle CPU is measured over (--quick: 1)


def connections_run(target: Target, n: int) -> tuple[int, float, float, float, float]:
    time.sleep(SETTLE)
    before = rss_kib(target.pid)
    socks: list[socket.socket] = []
    try:
        seconds = timed(lambda: socks.extend(open_connections(target.port, n)))
        time.sleep(SETTLE)
        after = rss_kib(target.pid)
        cpu = cpu_seconds(target.pid)
        time.sleep(IDLE)
        idle = (cpu_seconds(target.pid) - cpu) / IDLE
        trip = round_trip_us(target.port)
    finally:
        for sock in socks:
            sock.close()
    return len(socks), seconds, (after - before) / max(len(socks), 1), trip, idle


def run_connections(sizes: Sequence[int], repeat: int, with_reference: bool) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    print(f"\n== connections: N AMQP connections, each with a channel open (fastest of {repeat};"
          f" this process may hold {hard:,} file descriptors)")
    room = None
    if with_reference:
        try:
            status = node_status()
            room = int(status["sockets_total"]) - int(status["sockets_used"]) - 10  # type: ignore[call-overload]
            print(f"(RabbitMQ: sockets_total {status['sockets_total']} (its file-descriptor "
                  f"limit {status['fd_total']}), {status['sockets_used']} in use: at most "
                  f"{room} more are opened there)")
        except OSError as error:
            print(f"(RabbitMQ's management API does not answer: {error})")
    row([("N", 9), ("server", 10), ("held", 8), ("open s", 9), ("KiB/conn", 10),
         ("round trip µs", 15), ("idle CPU %", 12)])
    for n in sizes:
        sides: list[tuple[Side, int]] = [(embroker, n)]
        if with_reference and room is not None:
            sides.append((reference, min(n, room)))
        for make, count in sides:
            # (settled after each: RabbitMQ closes the last ones' processes)
            name, runs = runs_on(make, repeat, functools.partial(connections_run, n=count),
                                 settle=SETTLE)
            row([(f"{n:,}", 9), (name, 10), (f"{min(r[0] for r in runs):,}", 8),
                 (f"{min(r[1] for r in runs):,.1f}", 9), (f"{min(r[2] for r in runs):,.1f}", 10),
                 (f"{min(r[3] for r in runs):,.0f}", 15),
                 (f"{min(r[4] for r in runs) * 100:,.1f}", 12)])


# -- a stream --------------------------------------------------------------------------------

STREAM_BODY = 4000
STREAM_BATCH = 100


async def stream_run(target: Target, megabytes: int) -> dict[str, float]:
    from rstream import Consumer, ConsumerOffsetSpecification, OffsetType, Producer

    n = megabytes * 1_000_000 // STREAM_BODY
    body = b"s" * STREAM_BODY
    stream = f"scale-{uuid.uuid4().hex[:8]}"
    figures: dict[str, float] = {"messages": n}
    async with Producer("127.0.0.1", port=target.stream_port, username="guest",
                        password="guest") as producer:
        await producer.create_stream(stream)
        try:
            confirmed = Countdown(n)
            figures["rss_before"] = rss_kib(target.pid)
            start = time.perf_counter()
            batch = [body] * STREAM_BATCH
            for i in range(0, n, STREAM_BATCH):
                await producer.send_batch(stream, batch[:min(STREAM_BATCH, n - i)],
                                          on_publish_confirm=confirmed)
            await asyncio.wait_for(confirmed.done.wait(), 3600)
            figures["append"] = time.perf_counter() - start
            await asyncio.sleep(1.0)
            figures["rss_appended"] = rss_kib(target.pid)
            for label, spec, want in (
                    ("middle", ConsumerOffsetSpecification(OffsetType.OFFSET, n // 2), n - n // 2),
                    ("first", ConsumerOffsetSpecification(OffsetType.FIRST, None), n)):
                count = 0
                done = asyncio.Event()

                async def on_message(_msg: object, _ctx: object, want: int = want,
                                     finished: asyncio.Event = done) -> None:
                    nonlocal count
                    count += 1
                    if count >= want:
                        finished.set()

                consumer = Consumer("127.0.0.1", port=target.stream_port, username="guest",
                                    password="guest")
                await consumer.start()
                start = time.perf_counter()
                await consumer.subscribe(stream, on_message, offset_specification=spec)
                await asyncio.wait_for(done.wait(), 3600)
                figures[label] = time.perf_counter() - start
                figures[f"rss_{label}"] = rss_kib(target.pid)
                await consumer.close()
        finally:
            await producer.delete_stream(stream)
    return figures


def run_stream(megabytes: int, repeat: int, targets: Sequence[Side]) -> None:
    free = shutil.disk_usage("/").free // 1_000_000
    print(f"\n== a stream of {megabytes:,} MB ({STREAM_BODY}-byte bodies, batches of "
          f"{STREAM_BATCH}) over the stream protocol (rstream); fastest of {repeat}; "
          f"{free:,} MB free on disk")
    if free < 3 * megabytes:
        print(f"(not run: less than {3 * megabytes:,} MB free; give a smaller --stream-mb)")
        return
    row([("server", 10), ("append s", 10), ("MB/s", 8), ("read half s", 13), ("MB/s", 8),
         ("read all s", 12), ("MB/s", 8), ("RSS MiB: before", 17), ("appended", 10),
         ("read", 8)])
    for make in targets:
        name, runs = runs_on(make, repeat,
                             lambda target: asyncio.run(stream_run(target, megabytes)))
        best = {key: min(r[key] for r in runs) for key in ("append", "middle", "first")}
        last = runs[-1]
        mb = last["messages"] * STREAM_BODY / 1e6
        row([(name, 10), (f"{best['append']:,.1f}", 10), (f"{mb / best['append']:,.0f}", 8),
             (f"{best['middle']:,.1f}", 13), (f"{mb / 2 / best['middle']:,.0f}", 8),
             (f"{best['first']:,.1f}", 12), (f"{mb / best['first']:,.0f}", 8),
             (f"{last['rss_before'] / 1024:,.0f}", 17), (f"{last['rss_appended'] / 1024:,.0f}", 10),
             (f"{max(last['rss_middle'], last['rss_first']) / 1024:,.0f}", 8)])


# -- the command line ------------------------------------------------------------------------

def sizes(text: str) -> list[int]:
    return [int(word) for word in text.split(",") if word]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="bindings,queues,connections,stream")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bindings", type=sizes, default=[1000, 10_000, 100_000])
    parser.add_argument("--queues", type=sizes, default=[1000, 10_000])
    parser.add_argument("--connections", type=sizes, default=[1000, 10_000])
    parser.add_argument("--stream-mb", type=int, default=1024)
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--quick", action="store_true",
                        help="1,000 and 3,000 bindings, 100 and 1,000 queues, 100 and 300 "
                             "connections, a 10 MB stream, 2,000 publishes a line; once each")
    args = parser.parse_args()
    if args.quick:
        global PUBLISHES, SETTLE, IDLE
        args.bindings, args.queues, args.connections = [1000, 3000], [100, 1000], [100, 300]
        args.stream_mb, args.repeat, PUBLISHES, SETTLE, IDLE = 10, 1, 2000, 0.3, 1.0
    only = set(args.only.split(","))
    with_reference = not args.no_reference and answers(REFERENCE)
    if not args.no_reference and not with_reference:
        print("(the reference RabbitMQ does not answer on 5672: its lines are skipped)")
    targets: list[Side] = [embroker]
    if with_reference:
        targets.append(reference)
    if with_reference:
        print(f"(memory: embroker's RSS; RabbitMQ's {rabbitmq_memory()[0]} for bindings and "
              "queues, the RSS of its beam.smp for connections and the stream)")
        if rabbitmq_pid() is None:
            print("(RabbitMQ's beam.smp is not readable here: its RSS shows as 0)")
    if "bindings" in only:
        run_bindings(args.bindings, args.repeat, targets)
    if "queues" in only:
        run_queues(args.queues, args.repeat, targets)
    if "connections" in only:
        run_connections(args.connections, args.repeat, with_reference)
    if "stream" in only:
        stream_targets: list[Side] = [embroker]
        if with_reference and answers(REFERENCE_STREAM):
            stream_targets.append(reference)
        run_stream(args.stream_mb, args.repeat, stream_targets)


if __name__ == "__main__":
    main()
