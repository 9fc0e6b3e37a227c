"""TLS: handshakes per second, and pika's publish and consume rates over amqps, on embroker and
on a RabbitMQ node with the same certificates (tests/server/tls_node.py starts one of its own:
the shared reference is left alone), in one alternated run.

Run: python benchmarks/tls.py [--handshakes N] [--messages N] [--repeat R]

embroker runs as ``python -m embroker serve --tls-port 0`` in a process of its own. Lines:

- handshakes: N TLS handshakes (TLS 1.3, a client that trusts the authority), each on a new
  TCP connection, closed at once: handshakes per second;
- connections: N pika connections over amqps opened and closed (TLS and the AMQP handshake);
- publish: N messages of 100 bytes with pika, publisher confirms off, then a round trip;
- consume: the same N messages consumed with prefetch 100, acked one by one.

Each line runs ``--repeat`` times (3) on each side, alternating; the fastest run shows. Nothing
here is asserted: it prints a table.
"""

from __future__ import annotations

import argparse
import re
import socket
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pika

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.server.tls_node import Pki, available, tls_node


@contextmanager
def embroker_server(pki: Pki) -> Iterator[int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "embroker", "serve", "--port", "0", "--host", "127.0.0.1",
         "--no-management", "--tls-port", "0", "--certfile", pki.certfile, "--keyfile",
         pki.keyfile, "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"amqps://[^@]*@[^:]*:(\d+)/", line)
        if match is None:
            raise RuntimeError(f"embroker did not start: {line!r}")
        yield int(match.group(1))
    finally:
        proc.send_signal(2)
        proc.communicate(timeout=10)


def handshakes(port: int, context: ssl.SSLContext, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        with socket.create_connection(("127.0.0.1", port)) as raw, \
                context.wrap_socket(raw, server_hostname="localhost"):
            pass
    return count / (time.perf_counter() - started)


def parameters(port: int, context: ssl.SSLContext) -> pika.ConnectionParameters:
    return pika.ConnectionParameters("localhost", port,
                                     ssl_options=pika.SSLOptions(context, "localhost"))


def connections(port: int, context: ssl.SSLContext, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        pika.BlockingConnection(parameters(port, context)).close()
    return count / (time.perf_counter() - started)


def publish_consume(port: int, context: ssl.SSLContext, count: int) -> tuple[float, float]:
    connection = pika.BlockingConnection(parameters(port, context))
    channel = connection.channel()
    queue = f"embroker-bench-tls-{uuid.uuid4().hex[:8]}"
    channel.queue_declare(queue)
    body = b"x" * 100
    started = time.perf_counter()
    for _ in range(count):
        channel.basic_publish("", queue, body)
    channel.queue_declare(queue, passive=True)  # (a round trip: every publish is in)
    publish = count / (time.perf_counter() - started)
    channel.basic_qos(prefetch_count=100)
    started = time.perf_counter()
    for got, (method, _props, _body) in enumerate(
            channel.consume(queue, inactivity_timeout=10), 1):
        assert method is not None, "a message went missing"
        channel.basic_ack(method.delivery_tag)
        if got == count:
            break
    consume = count / (time.perf_counter() - started)
    channel.cancel()
    channel.queue_delete(queue)
    connection.close()
    return publish, consume


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--handshakes", type=int, default=300)
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    pki = Pki()
    context = pki.client()
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    try:
        with embroker_server(pki) as ours, tls_node(pki) as node:
            sides: dict[str, int | None] = {"embroker": ours,
                                            "RabbitMQ": node[1] if node else None}
            runs: dict[tuple[str, ...], Callable[[int], tuple[float, ...]]] = {
                ("handshakes",): lambda p: (handshakes(p, context, args.handshakes),),
                ("connections",): lambda p: (connections(p, context, args.connections),),
                ("publish", "consume"): lambda p: publish_consume(p, context, args.messages),
            }
            best: dict[tuple[str, str], float] = {}
            for _ in range(args.repeat):
                for names, run in runs.items():
                    for side, port in sides.items():
                        if port is not None:
                            for line, rate in zip(names, run(port), strict=True):
                                best[line, side] = max(best.get((line, side), 0.0), rate)
    finally:
        pki.remove()
    print(f"TLS 1.3, fastest of {args.repeat} (per second); {args.handshakes} handshakes, "
          f"{args.connections} pika connections, {args.messages} messages of 100 bytes")
    print(f"{'':14}{'embroker':>12}{'RabbitMQ':>12}{'ratio':>8}")
    for line in ("handshakes", "connections", "publish", "consume"):
        ours_rate = best.get((line, "embroker"), 0.0)
        theirs = best.get((line, "RabbitMQ"))
        print(f"{line:14}{ours_rate:12,.0f}" + (
            f"{theirs:12,.0f}{ours_rate / theirs:8.2f}" if theirs
            else f"{'(no node)' if not available() else '(no start)':>12}"))


if __name__ == "__main__":
    main()
