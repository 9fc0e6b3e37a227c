"""What the client-rate benchmarks (stomp_rates.py, mqtt_rates.py) share: embroker in a process
of its own with one protocol listener, the server's CPU time, the alternated table (embroker
against the reference RabbitMQ, fastest run of each, their ratio, embroker's server CPU per
message) and the command line that prints it (amqp10.py takes the CPU time). Imported as
``_rates``: the scripts run from this folder, and tests/test_benchmarks.py puts it on
``sys.path``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import glob
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

REFERENCE_AMQP = "amqp://guest:guest@127.0.0.1:5672/"

_SERVE = """
import sys
from embroker import Broker
from embroker.server import Server
with Server(Broker(), listeners={{"{kind}": 0}}) as server:
    print(server.url, server.listener_port("{kind}"), flush=True)
    sys.stdin.read()
"""


class Countdown:
    """A callback that counts its calls and sets :attr:`done` at the ``n``-th (rstream's
    publish confirms, in the stream benchmarks)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.count = 0
        self.done = asyncio.Event()

    def __call__(self, *_args: object) -> None:
        self.count += 1
        if self.count >= self.n:
            self.done.set()


@dataclass
class Side:
    port: int  # the protocol's
    amqp_url: str  # for declaring and deleting queues over 0-9-1
    cpu: Callable[[], float] | None = None  # the server's CPU seconds, embroker only


@dataclass
class Run:
    seconds: float
    count: int
    server_cpu: float | None = None


def process_cpu(pid: int) -> Callable[[], float]:
    """The CPU seconds the threads of process ``pid`` have run (Linux schedstat)."""
    def read() -> float:
        total = 0
        for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
            with contextlib.suppress(OSError), open(path) as f:
                total += int(f.read().split()[0])
        return total / 1e9
    return read


@contextlib.contextmanager
def embroker_server(kind: str) -> Iterator[Side]:
    """An embroker server with one listener of ``kind`` (``stomp``, ``mqtt``) in its own
    process (as RabbitMQ is: in-process, the listener and the client would share one GIL, and
    the figure would be the sum of the two)."""
    process = subprocess.Popen([sys.executable, "-c", _SERVE.format(kind=kind)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        words = process.stdout.readline().split()
        if len(words) != 2:
            raise RuntimeError(f"embroker did not start: {words!r}")
        yield Side(int(words[1]), words[0], process_cpu(process.pid))
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(10)


def answers(address: tuple[str, int]) -> bool:
    try:
        socket.create_connection(address, timeout=1).close()
    except OSError:
        return False
    return True


def timed(side: Side, n: int, setup: Callable[[], None], body: Callable[[], None]) -> Run:
    """``setup()`` (not timed), then ``body()``: its time and the server's CPU meanwhile."""
    setup()
    cpu = side.cpu() if side.cpu else None
    start = time.perf_counter()
    body()
    seconds = time.perf_counter() - start
    server_cpu = side.cpu() - cpu if side.cpu and cpu is not None else None
    return Run(seconds, n, server_cpu)


def table(lines: Sequence[tuple[str, Callable[[Side, int], Run]]], *, kind: str,
          reference: tuple[str, int], n: int, repeat: int) -> None:
    """Each line ``repeat`` times on each side, alternating (a fresh embroker each run), then
    its fastest rates, their ratio and embroker's smallest server CPU per message."""
    with_reference = answers(reference)
    if not with_reference:
        print(f"(the reference RabbitMQ does not answer on {reference[1]}: its column is "
              "skipped)")
    width = max(len(label) for label, _ in lines) + 2
    print(f"{'workload':<{width}}{'embroker':>10}{'RabbitMQ':>10}{'ratio':>7}"
          f"{'server CPU/msg':>16}")
    for label, workload in lines:
        ours: list[Run] = []
        theirs: list[Run] = []
        for _ in range(repeat):
            with embroker_server(kind) as side:
                ours.append(workload(side, n))
            if with_reference:
                theirs.append(workload(Side(reference[1], REFERENCE_AMQP), n))
        rate = max(r.count / r.seconds for r in ours)
        cpu = min(r.server_cpu / r.count for r in ours if r.server_cpu is not None)
        if theirs:
            their_rate = max(r.count / r.seconds for r in theirs)
            print(f"{label:<{width}}{rate:>10,.0f}{their_rate:>10,.0f}{rate / their_rate:>7.2f}"
                  f"{cpu * 1e6:>13.1f} us")
        else:
            print(f"{label:<{width}}{rate:>10,.0f}{'-':>10}{'-':>7}{cpu * 1e6:>13.1f} us")


def main(description: str, lines: Sequence[tuple[str, Callable[[Side, int], Run]]], *,
         kind: str, reference: tuple[str, int], client: str, size: int) -> None:
    """A benchmark's command line (``--messages N``, ``--repeat R``, ``--quick``: 2,000
    messages, once), then its :func:`table` under a heading naming the ``client`` and the
    messages' ``size`` in bytes."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2,000 messages, once")
    args = parser.parse_args()
    n, repeat = (2000, 1) if args.quick else (args.messages, args.repeat)
    print(f"{client}, {n} messages of {size} bytes, fastest of {repeat} (messages per second)")
    table(lines, kind=kind, reference=reference, n=n, repeat=repeat)
