"""AMQP 1.0: proton against embroker's listener and against the reference RabbitMQ's 1.0 plugin.

Run: python benchmarks/amqp10.py [--messages N] [--repeat R]

The reference is ``EMBROKER_REFERENCE_URL`` (default ``amqp://guest:guest@127.0.0.1:5672/``) with
the ``rabbitmq_amqp1_0`` plugin enabled (``rabbitmq-plugins enable rabbitmq_amqp1_0``); if it
does not answer AMQP 1.0, its column is skipped with a note. Each run uses a fresh embroker
``Broker().serve()`` and, on both sides, a uniquely named queue declared over 0-9-1 (pika) and
deleted after; the links use the address ``/amq/queue/NAME``, which both understand. The client
is proton's event-driven ``Container`` in this thread; 100-byte bodies (data sections):

- send: N messages on one unsettled link (the broker's credit paces it), until every one is
  settled ``accepted``;
- receive, credit 100: N messages published beforehand (not timed), then a receiver that keeps
  100 credits out (proton's ``prefetch``) and accepts each message;
- send + receive: both links at once on one connection, until the receiver has N.

embroker runs as ``python -m embroker serve --port 0`` in a process of its own, as RabbitMQ
does (in-process, the listener and proton would share one GIL, and the figure would be the sum
of the two). Each line runs ``--repeat`` times (3) on each side, alternating, and shows the
fastest run and the smallest server CPU per message. Server CPU (embroker only) is the CPU time
of the server process's threads over the timed part (``/proc/PID/task/*/schedstat``, in
nanoseconds; Linux), divided by N. The last line gives the same figure for AMQP 0-9-1 on the
same kind of server (pika publishing N messages, then consuming them with prefetch 100 and an
ack each), to compare the cost of the two protocols.

Nothing here is asserted: it prints a table.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pika
from _rates import process_cpu
from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

BODY = b"x" * 100


@dataclass
class Run:
    seconds: float
    server_cpu: float | None = None


@contextlib.contextmanager
def _embroker() -> Iterator[tuple[str, str, Callable[[], float]]]:
    """An embroker server in its own process: (0-9-1 URL, 1.0 URL, its CPU clock)."""
    process = subprocess.Popen([sys.executable, "-m", "embroker", "serve", "--port", "0",
                                "--host", "127.0.0.1", "--quiet"], stdout=subprocess.PIPE,
                               text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = line.split("listening on ")[1].split(" ")[0]
        yield url, url.rstrip("/"), process_cpu(process.pid)
    finally:
        process.terminate()
        process.wait(10)


class _Workload(MessagingHandler):  # type: ignore[misc]
    def __init__(self, url: str, address: str, *, send: int, receive: int,
                 prefetch: int = 100) -> None:
        super().__init__(prefetch=prefetch if receive else 0, auto_accept=True)
        self.url, self.address = url, address
        self.to_send, self.to_receive = send, receive
        self.sent = self.accepted = self.received = 0
        self.started = self.finished = 0.0

    def on_start(self, event):  # type: ignore[no-untyped-def]
        self.conn = event.container.connect(self.url, allowed_mechs="PLAIN")
        self.started = time.perf_counter()
        if self.to_send:
            event.container.create_sender(self.conn, self.address)
        if self.to_receive:
            event.container.create_receiver(self.conn, self.address)

    def on_sendable(self, event):  # type: ignore[no-untyped-def]
        sender = event.sender
        while sender.credit and self.sent < self.to_send:
            sender.send(Message(body=BODY, inferred=True))
            self.sent += 1

    def on_accepted(self, event):  # type: ignore[no-untyped-def]
        self.accepted += 1
        self._maybe_done()

    def on_message(self, event):  # type: ignore[no-untyped-def]
        self.received += 1
        self._maybe_done()

    def _maybe_done(self) -> None:
        if self.accepted >= self.to_send and self.received >= self.to_receive:
            self.finished = time.perf_counter()
            self.conn.close()


def _proton(url: str, address: str, *, send: int, receive: int) -> float:
    handler = _Workload(url, address, send=send, receive=receive)
    Container(handler).run()
    return handler.finished - handler.started


def _fill(url: str, address: str, n: int) -> None:
    _proton(url, address, send=n, receive=0)


@dataclass
class Side:
    url091: str
    url10: str
    cpu: Callable[[], float] | None = None


def _with_queue(side: Side, work: Callable[[str], float]) -> Run:
    name = f"embroker-bench-amqp10-{uuid.uuid4().hex[:8]}"
    admin = pika.BlockingConnection(pika.URLParameters(side.url091))
    try:
        admin.channel().queue_declare(name)
        before = side.cpu() if side.cpu else 0.0
        seconds = work(f"/amq/queue/{name}")
        cpu = side.cpu() - before if side.cpu else None
        return Run(seconds, cpu)
    finally:
        admin.channel().queue_delete(name)
        admin.close()


def workloads(n: int) -> dict[str, Callable[[Side], Run]]:
    def send(side: Side) -> Run:
        return _with_queue(side, lambda a: _proton(side.url10, a, send=n, receive=0))

    def receive(side: Side) -> Run:
        def work(address: str) -> float:
            _fill(side.url10, address, n)
            cpu = side.cpu() if side.cpu else 0.0
            seconds = _proton(side.url10, address, send=0, receive=n)
            work.cpu_offset = (side.cpu() - cpu) if side.cpu else None  # type: ignore[attr-defined]
            return seconds
        run = _with_queue(side, work)
        run.server_cpu = getattr(work, "cpu_offset", None)
        return run

    def both(side: Side) -> Run:
        return _with_queue(side, lambda a: _proton(side.url10, a, send=n, receive=n))

    return {"send (unsettled)": send, "receive, credit 100": receive,
            "send + receive": both}


def _reference_10(url: str) -> str | None:
    from proton.utils import BlockingConnection
    try:
        BlockingConnection(url.rstrip("/"), timeout=3, allowed_mechs="PLAIN").close()
    except Exception:
        return None
    return url.rstrip("/")


def _amqp091_cpu(side: Side, n: int) -> tuple[float, float]:
    """Server CPU per message for pika publishing N, then consuming N with prefetch 100."""
    name = f"embroker-bench-091-{uuid.uuid4().hex[:8]}"
    conn = pika.BlockingConnection(pika.URLParameters(side.url091))
    ch = conn.channel()
    ch.queue_declare(name)
    assert side.cpu is not None
    before = side.cpu()
    for _ in range(n):
        ch.basic_publish("", name, BODY)
    ch.queue_declare(name, passive=True)
    publish = side.cpu() - before
    ch.basic_qos(prefetch_count=100)
    got = [0]

    def on_message(channel, method, _props, _body):  # type: ignore[no-untyped-def]
        channel.basic_ack(method.delivery_tag)
        got[0] += 1
        if got[0] == n:
            channel.stop_consuming()

    before = side.cpu()
    ch.basic_consume(name, on_message)
    ch.start_consuming()
    ch.queue_declare(name, passive=True)
    consume = side.cpu() - before
    ch.queue_delete(name)
    conn.close()
    return publish / n, consume / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.messages
    ref_url091 = os.environ.get("EMBROKER_REFERENCE_URL", "amqp://guest:guest@127.0.0.1:5672/")
    reference = _reference_10(ref_url091)
    print(f"AMQP 1.0, proton Container, {n} messages of {len(BODY)} bytes, best of "
          f"{args.repeat}")
    if reference is None:
        print("(the reference RabbitMQ does not answer AMQP 1.0: its column is skipped)")
    print(f"{'workload':<22}{'embroker msg/s':>16}{'RabbitMQ msg/s':>16}{'ratio':>8}"
          f"{'server CPU/msg':>16}")
    for label, workload in workloads(n).items():
        ours: list[Run] = []
        theirs: list[Run] = []
        for _ in range(args.repeat):
            with _embroker() as (url091, url10, cpu):
                ours.append(workload(Side(url091, url10, cpu)))
            if reference is not None:
                theirs.append(workload(Side(ref_url091, reference)))
        best = min(r.seconds for r in ours)
        rate = n / best
        cpu_per = min(r.server_cpu for r in ours if r.server_cpu is not None) / n
        if theirs:
            their_rate = n / min(r.seconds for r in theirs)
            print(f"{label:<22}{rate:>16,.0f}{their_rate:>16,.0f}{rate / their_rate:>8.2f}"
                  f"{cpu_per * 1e6:>13.1f} us")
        else:
            print(f"{label:<22}{rate:>16,.0f}{'-':>16}{'-':>8}{cpu_per * 1e6:>13.1f} us")
    costs = []
    for _ in range(args.repeat):
        with _embroker() as (url091, url10, cpu):
            costs.append(_amqp091_cpu(Side(url091, url10, cpu), n))
    print(f"AMQP 0-9-1 (pika) on the same server, CPU/msg: publish "
          f"{min(c[0] for c in costs) * 1e6:.1f} us, consume (prefetch 100, ack each) "
          f"{min(c[1] for c in costs) * 1e6:.1f} us")


if __name__ == "__main__":
    main()
