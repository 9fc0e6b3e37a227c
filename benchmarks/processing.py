"""The broker's processing per message with no socket and no loop: the bytes a client sends go
straight into one ``ServerConnection`` (``receive_data``) and what it queues is taken back
(``data_to_send``), all in this thread.

Run: python benchmarks/processing.py [--messages N] [--repeat R] [--profile LINE]

``benchmarks/listener_turns.py`` adds the listener's system calls (epoll, recv, send) to this;
``benchmarks/pipelined.py`` and ``benchmarks/memory.py`` add a real client in another thread.
What is left here is parse → route → enqueue → deliver → encode, the part a faster
implementation of the model and codec would shorten. The client's bytes are encoded once
beforehand, so the client costs next to nothing.

- publish: one ``basic.publish`` (100-byte body) per read;
- publish+confirm: the same on a confirming channel; each read's basic.ack is taken back;
- ack+deliver, prefetch 10: ten messages acknowledged per read (one ``basic.ack`` each), which
  lets ten more be delivered (a consumer at prefetch 10 in steady state);
- publish, deliver, ack (kombu): ``benchmarks/memory.py``'s kombu line, a consumer with no
  prefetch limit: one publish per read (with the properties kombu sends: content type and
  encoding, an empty header table, persistent, priority 0), each delivered at once, then one
  ``basic.ack`` per read.

Each line runs ``--repeat`` times; the smallest and the median µs per message are shown.
``--profile LINE`` (a line's number, 1 to 4) runs that line once under cProfile and prints the
functions by own time. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections.abc import Callable

from embroker import Broker
from embroker.amqp091 import (
    PROTOCOL_HEADER,
    FrameParser,
    encode_message,
    encode_method_frame,
    methods,
)
from embroker.amqp091._connection import ServerConnection

BODY = b"m" * 100
FRAME_MAX = 131072


#: What a client sends to have channel 1 open and queue ``q`` declared, in order, each with the
#: method it waits for (``None``: nothing is answered). ``listener_turns.py`` sends it too.
HANDSHAKE: list[tuple[bytes, type | None]] = [
    (PROTOCOL_HEADER, methods.ConnectionStart),
    (encode_method_frame(0, methods.ConnectionStartOk(
        client_properties={}, mechanism="PLAIN", response="\0guest\0guest", locale="en_US")),
     methods.ConnectionTune),
    (encode_method_frame(0, methods.ConnectionTuneOk(channel_max=10, frame_max=FRAME_MAX,
                                                     heartbeat=0)), None),
    (encode_method_frame(0, methods.ConnectionOpen(virtual_host="/")), methods.ConnectionOpenOk),
    (encode_method_frame(1, methods.ChannelOpen()), methods.ChannelOpenOk),
    (encode_method_frame(1, methods.QueueDeclare(queue="q")), methods.QueueDeclareOk),
]


class Client:
    """One ``ServerConnection`` with channel 1 open and queue ``q`` declared."""

    def __init__(self) -> None:
        self.broker = Broker()
        self.connection = ServerConnection(self.broker, peer="127.0.0.1:1", loopback=True)
        self.parser = FrameParser(max_frame_size=FRAME_MAX)
        for data, reply in HANDSHAKE:
            if reply is None:
                self.connection.receive_data(data)
            else:
                self.call(data, reply)

    def call(self, data: bytes, reply: type) -> list[object]:
        """Send ``data``; the methods that came back, the last of them a ``reply``."""
        self.connection.receive_data(data)
        found = [getattr(frame, "method", None)
                 for frame in self.parser.feed(self.connection.data_to_send())]
        if not found or not isinstance(found[-1], reply):
            raise AssertionError(f"expected {reply.__name__}, got {found}")
        return found

    def delivery_tags(self, data: bytes) -> list[int]:
        return [method.delivery_tag for method in (getattr(frame, "method", None)
                                                   for frame in self.parser.feed(data))
                if isinstance(method, methods.BasicDeliver)]


PUBLISH = encode_message(1, methods.BasicPublish(routing_key="q"), BODY, FRAME_MAX)
#: What kombu's ``Producer.publish(body, routing_key=...)`` sends (its default properties).
KOMBU_PUBLISH = encode_message(1, methods.BasicPublish(routing_key="q"), BODY, FRAME_MAX, {
    "content_type": "application/data", "content_encoding": "binary", "headers": {},
    "delivery_mode": 2, "priority": 0})


def _ack(tag: int) -> bytes:
    return encode_method_frame(1, methods.BasicAck(delivery_tag=tag))


def publish(n: int) -> float:
    client = Client()
    receive, take = client.connection.receive_data, client.connection.data_to_send
    start = time.perf_counter()
    for _ in range(n):
        receive(PUBLISH)
        take()
    spent = time.perf_counter() - start
    assert client.broker.queues["q"].message_count == n
    return spent / n


def confirms(n: int) -> float:
    client = Client()
    client.call(encode_method_frame(1, methods.ConfirmSelect()), methods.ConfirmSelectOk)
    receive, take = client.connection.receive_data, client.connection.data_to_send
    start = time.perf_counter()
    for _ in range(n):
        receive(PUBLISH)
        if not take():
            raise AssertionError("no basic.ack")
    return (time.perf_counter() - start) / n


def prefetch10(n: int) -> float:
    client = Client()
    receive, take = client.connection.receive_data, client.connection.data_to_send
    for _ in range(n + 10):
        receive(PUBLISH)
    client.call(encode_method_frame(1, methods.BasicQos(prefetch_count=10)),
                methods.BasicQosOk)
    receive(encode_method_frame(1, methods.BasicConsume(queue="q", consumer_tag="c")))
    tags = client.delivery_tags(take())
    acks = {tag: _ack(tag) for tag in range(1, n + 11)}  # encoded beforehand
    start = time.perf_counter()
    for first in range(1, n + 1, 10):
        receive(b"".join([acks[tag] for tag in range(first, first + 10)]))
        take()
    spent = time.perf_counter() - start
    assert tags == list(range(1, 11))
    assert client.broker.queues["q"].message_count == 0
    return spent / n


def kombu(n: int) -> float:
    client = Client()
    receive, take = client.connection.receive_data, client.connection.data_to_send
    receive(encode_method_frame(1, methods.BasicConsume(queue="q", consumer_tag="c")))
    take()
    acks = [_ack(tag) for tag in range(1, n + 1)]  # encoded beforehand
    start = time.perf_counter()
    for _ in range(n):
        receive(KOMBU_PUBLISH)
        take()
    for ack in acks:
        receive(ack)
        take()
    spent = time.perf_counter() - start
    assert client.broker.queues["q"].message_count == 0
    return spent / n


LINES: list[tuple[str, Callable[[int], float]]] = [
    ("publish", publish),
    ("publish+confirm", confirms),
    ("ack+deliver, prefetch 10", prefetch10),
    ("publish, deliver, ack (kombu)", kombu),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", type=int, metavar="LINE", choices=range(1, len(LINES) + 1))
    args = parser.parse_args()
    if args.profile:
        label, workload = LINES[args.profile - 1]
        profiler = cProfile.Profile()
        profiler.runcall(workload, args.messages)
        print(f"{label}: {args.messages} messages")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        return
    print(f"{'workload':32} {'us/msg':>8} {'median':>8}")
    for label, workload in LINES:
        runs = [workload(args.messages) for _ in range(args.repeat)]
        print(f"{label:32} {min(runs) * 1e6:8.2f} {statistics.median(runs) * 1e6:8.2f}")


if __name__ == "__main__":
    main()
