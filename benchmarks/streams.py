"""Streams: rstream publishing to and consuming from embroker's stream listener and the
reference RabbitMQ's stream plugin (127.0.0.1:5552).

Run: python benchmarks/streams.py [--messages N] [--repeat R]

embroker runs as ``python -m embroker serve --port 0 --stream-port 0 --no-management`` in a
process of its own (as RabbitMQ does: in-process, the listener and the client would share one
GIL). Each run uses a fresh, uniquely named stream, deleted after; 100-byte bodies:

- publish: N messages with ``Producer.send_batch`` in batches of 100 (one Publish frame, so
  one chunk, each), until every message is confirmed;
- consume: a consumer from ``first`` (credit 10 chunks) until it has the N messages.

Each line runs ``--repeat`` times (3) on each side, alternating, and shows the fastest run in
messages per second, with rstream's own CPU per message (this process runs only the client)
and the rate that alone allows: no broker is read faster than its client works. If the
reference does not answer on 5552 its column says so. Nothing here is asserted: it prints a
table.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rstream import (
    AMQPMessage,
    Consumer,
    ConsumerOffsetSpecification,
    MessageContext,
    OffsetType,
    Producer,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # (benchmarks/, as the others)
from _rates import Countdown

BODY = b"x" * 100
BATCH = 100
REFERENCE = ("127.0.0.1", 5552)


@contextmanager
def embroker_server() -> Iterator[tuple[str, int]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "embroker", "serve", "--port", "0", "--host", "127.0.0.1",
         "--no-management", "--stream-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"the stream protocol on rabbitmq-stream://[^/]*:(\d+)/", line)
        if match is None:
            raise RuntimeError(f"embroker did not start: {line!r}")
        yield "127.0.0.1", int(match.group(1))
    finally:
        proc.send_signal(2)
        proc.communicate(timeout=10)


async def one_run(host: str, port: int, n: int) -> tuple[float, float, float, float]:
    """Seconds to publish N (confirmed) and to consume N, and the client's CPU seconds for
    each (this process runs only the client)."""
    stream = f"embroker-bench-{uuid.uuid4().hex[:8]}"
    async with Producer(host, port=port, username="guest", password="guest") as producer:
        await producer.create_stream(stream)
        confirmed = Countdown(n)
        start, cpu = time.perf_counter(), time.process_time()
        for i in range(0, n, BATCH):
            await producer.send_batch(stream, [AMQPMessage(body=BODY)
                                               for _ in range(min(BATCH, n - i))],
                                      on_publish_confirm=confirmed)
        await asyncio.wait_for(confirmed.done.wait(), 120)
        published, published_cpu = time.perf_counter() - start, time.process_time() - cpu
        done = asyncio.Event()
        count = 0

        async def on_message(_msg: bytes, _ctx: MessageContext) -> None:
            nonlocal count
            count += 1
            if count >= n:
                done.set()

        consumer = Consumer(host, port=port, username="guest", password="guest")
        await consumer.start()
        start, cpu = time.perf_counter(), time.process_time()
        await consumer.subscribe(stream, on_message, offset_specification=(
            ConsumerOffsetSpecification(OffsetType.FIRST, None)))
        await asyncio.wait_for(done.wait(), 120)
        consumed, consumed_cpu = time.perf_counter() - start, time.process_time() - cpu
        await consumer.close()
        await producer.delete_stream(stream)
    return published, consumed, published_cpu, consumed_cpu


def reference_answers() -> bool:
    import socket

    try:
        socket.create_connection(REFERENCE, timeout=1).close()
    except OSError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.messages
    results: dict[str, list[tuple[float, float, float, float]]] = {"embroker": [],
                                                                   "RabbitMQ": []}
    with_reference = reference_answers()
    with embroker_server() as (host, port):
        for _ in range(args.repeat):
            results["embroker"].append(asyncio.run(one_run(host, port, n)))
            if with_reference:
                results["RabbitMQ"].append(asyncio.run(one_run(*REFERENCE, n)))
    print(f"rstream, {n} messages of {len(BODY)} bytes, batches of {BATCH}, fastest of "
          f"{args.repeat} (messages per second)")
    print(f"{'':10}{'embroker':>14}{'RabbitMQ 5552':>16}{'client µs/msg':>15}"
          f"{'client bound':>14}")
    for i, what in enumerate(("publish", "consume")):
        mine = n / min(r[i] for r in results["embroker"])
        theirs = (f"{n / min(r[i] for r in results['RabbitMQ']):16,.0f}"
                  if results["RabbitMQ"] else f"{'(not answering)':>16}")
        # rstream's own CPU per message (the least over the runs, either broker): no broker
        # can be read faster than the client works, so this bounds both columns.
        client = min(r[i + 2] for runs in results.values() for r in runs) / n
        print(f"{what:10}{mine:14,.0f}{theirs}{client * 1e6:15.2f}{1 / client:14,.0f}")


if __name__ == "__main__":
    main()
