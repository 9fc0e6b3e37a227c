"""Codec speed: embroker vs pamqp, in frames per second (never asserted on).

Two workloads, each a message of three frames (method, content header, 100-byte body) with the
properties a typical publisher sets (``content_type``, ``delivery_mode``):

* decode a ``basic.publish``: bytes in, the method, its properties and its body out. embroker runs
  ``CommandReader`` (the server's path: frames checked and assembled into one command), and also
  the two layers it fuses, ``FrameParser`` alone (frames, like pamqp) and ``FrameParser`` +
  ``ContentAssembler``; pamqp runs ``pamqp.frame.unmarshal`` on each frame. All are fed one
  message per call (pamqp slices its input, so big buffers would be unfair to it); embroker's
  reader is also measured fed with 64 KiB batches, as a socket read gives them.
* encode a ``basic.deliver``: method, properties and body in, the bytes of the three frames out.
  embroker runs ``encode_message`` from a properties dict (and, as the server does when a message's
  properties did not change, from the encoded properties); pamqp runs ``pamqp.frame.marshal`` on
  the three frames.

Usage: ``python benchmarks/codec.py [--seconds 0.5] [--repeat 7]``; the best of the repeats is
reported, the workloads taking turns so that machine noise falls on all of them.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pamqp.body
import pamqp.commands
import pamqp.frame
import pamqp.header

from embroker.amqp091 import CommandReader, FrameParser, encode_message
from embroker.amqp091._assembly import ContentAssembler
from embroker.amqp091._properties import encode_properties
from embroker.amqp091.methods import BasicDeliver, BasicPublish

FRAMES_PER_MESSAGE = 3
BODY = bytes(range(100))
PROPERTIES = {"content_type": "application/json", "delivery_mode": 2}
FRAME_MAX = 131072


def publish_bytes() -> bytes:
    method = BasicPublish(exchange="events", routing_key="order.created")
    return encode_message(1, method, BODY, FRAME_MAX, properties=PROPERTIES)


def calibrate(run: Callable[[int], int], seconds: float) -> int:
    """How many messages make a run of about ``seconds``."""
    n = 1
    while True:
        start = time.perf_counter()
        run(n)
        elapsed = time.perf_counter() - start
        if elapsed > seconds / 5:
            return max(1, int(n * seconds / elapsed))
        n *= 4


def best_rates(runs: list[Callable[[int], int]], seconds: float, repeat: int) -> list[float]:
    """Messages per second of each ``run(n) -> messages done``, best of ``repeat`` rounds.

    The rounds interleave the workloads, so that a noisy neighbour on the machine slows them
    all alike rather than one of them.
    """
    sizes = [calibrate(run, seconds) for run in runs]
    best = [0.0] * len(runs)
    for _ in range(repeat):
        for i, (run, n) in enumerate(zip(runs, sizes, strict=True)):
            start = time.perf_counter()
            done = run(n)
            best[i] = max(best[i], done / (time.perf_counter() - start))
    return best


# -- decode ------------------------------------------------------------------------------------


def embroker_read(data: bytes) -> Callable[[int], int]:
    def run(n: int) -> int:
        feed = CommandReader(FRAME_MAX).feed
        done = 0
        for _ in range(n):
            for command in feed(data):
                assert command.body is not None
                done += 1
        return done
    return run


def embroker_read_batched(message: bytes) -> Callable[[int], int]:
    per_batch = max(1, 65536 // len(message))
    batch = message * per_batch

    def run(n: int) -> int:
        feed = CommandReader(FRAME_MAX).feed
        done = 0
        for _ in range(max(1, n // per_batch)):
            for _command in feed(batch):
                done += 1
        return done
    return run


def embroker_parse(data: bytes) -> Callable[[int], int]:
    def run(n: int) -> int:
        feed = FrameParser(FRAME_MAX).feed
        for _ in range(n):
            _method, _header, _body = feed(data)
        return n
    return run


def embroker_parse_assemble(data: bytes) -> Callable[[int], int]:
    def run(n: int) -> int:
        feed = FrameParser(FRAME_MAX).feed
        add = ContentAssembler().add
        done = 0
        for _ in range(n):
            for frame in feed(data):
                if add(frame) is not None:
                    done += 1
        return done
    return run


def pamqp_decode(data: bytes) -> Callable[[int], int]:
    unmarshal = pamqp.frame.unmarshal

    def run(n: int) -> int:
        done = 0
        for _ in range(n):
            rest = data
            frames = []
            while rest:
                consumed, _channel, frame = unmarshal(rest)
                frames.append(frame)
                rest = rest[consumed:]
            _method, header, body = frames
            assert body.value == BODY
            assert header.properties.delivery_mode == 2
            done += 1
        return done
    return run


# -- encode ------------------------------------------------------------------------------------


def deliver() -> BasicDeliver:
    return BasicDeliver(consumer_tag="amq.ctag-Ab3dE6fG8hJk", delivery_tag=42, redelivered=False,
                        exchange="events", routing_key="order.created")


def embroker_encode() -> Callable[[int], int]:
    def run(n: int) -> int:
        for tag in range(n):
            method = BasicDeliver("amq.ctag-Ab3dE6fG8hJk", tag, False, "events", "order.created")
            encode_message(1, method, BODY, FRAME_MAX, properties=PROPERTIES)
        return n
    return run


def embroker_encode_raw() -> Callable[[int], int]:
    raw = encode_properties(PROPERTIES)

    def run(n: int) -> int:
        for tag in range(n):
            method = BasicDeliver("amq.ctag-Ab3dE6fG8hJk", tag, False, "events", "order.created")
            encode_message(1, method, BODY, FRAME_MAX, raw_properties=raw)
        return n
    return run


def pamqp_encode() -> Callable[[int], int]:
    marshal = pamqp.frame.marshal
    Deliver = pamqp.commands.Basic.Deliver
    Properties = pamqp.commands.Basic.Properties
    ContentHeader = pamqp.header.ContentHeader
    ContentBody = pamqp.body.ContentBody

    def run(n: int) -> int:
        for tag in range(n):
            method = Deliver("amq.ctag-Ab3dE6fG8hJk", tag, False, "events", "order.created")
            props = Properties(**PROPERTIES)
            b"".join((marshal(method, 1),
                      marshal(ContentHeader(0, len(BODY), props), 1),
                      marshal(ContentBody(BODY), 1)))
        return n
    return run


def check_same_bytes() -> None:
    """Both libraries produce the same bytes for the benchmarked deliver."""
    ours = encode_message(1, deliver(), BODY, FRAME_MAX, properties=PROPERTIES)
    method = pamqp.commands.Basic.Deliver("amq.ctag-Ab3dE6fG8hJk", 42, False, "events",
                                          "order.created")
    theirs = b"".join((pamqp.frame.marshal(method, 1),
                       pamqp.frame.marshal(pamqp.header.ContentHeader(
                           0, len(BODY), pamqp.commands.Basic.Properties(**PROPERTIES)), 1),
                       pamqp.frame.marshal(pamqp.body.ContentBody(BODY), 1)))
    assert ours == theirs, "embroker and pamqp disagree on the deliver bytes"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="length of one timed run")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs, best is kept")
    args = parser.parse_args()
    check_same_bytes()
    message = publish_bytes()
    rows = [
        ("decode publish", "embroker CommandReader", embroker_read(message)),
        ("decode publish", "  same, 64 KiB reads", embroker_read_batched(message)),
        ("decode publish", "embroker FrameParser", embroker_parse(message)),
        ("decode publish", "  + ContentAssembler", embroker_parse_assemble(message)),
        ("decode publish", "pamqp", pamqp_decode(message)),
        ("encode deliver", "embroker", embroker_encode()),
        ("encode deliver", "  same, encoded props", embroker_encode_raw()),
        ("encode deliver", "pamqp", pamqp_encode()),
    ]
    print(f"Python {platform.python_version()} ({platform.python_implementation()}), "
          f"{len(message)}-byte publish / 100-byte body, {FRAMES_PER_MESSAGE} frames per message")
    print(f"{'workload':<16} {'codec':<26} {'frames/s':>12} {'messages/s':>12} {'vs pamqp':>9}")
    measured = best_rates([run for _, _, run in rows], args.seconds, args.repeat)
    rates = {(workload, codec): rate for (workload, codec, _), rate in zip(rows, measured,
                                                                             strict=True)}
    for workload, codec, _ in rows:
        rate = rates[workload, codec]
        ratio = rate / rates[workload, "pamqp"]
        print(f"{workload:<16} {codec:<26} {rate * FRAMES_PER_MESSAGE:>12,.0f} {rate:>12,.0f} "
              f"{ratio:>8.1f}x")


if __name__ == "__main__":
    main()
