"""The listener's CPU per message on the TCP path, with no thread and no GIL contention: the
loop's turns are called from this thread, the client is a raw socket sending pika's frames.

Run: python benchmarks/listener_turns.py [--messages N] [--repeat R]

``benchmarks/loopback.py`` and ``benchmarks/memory.py`` measure the listener thread while pika
runs in another thread of the process: their server-CPU figures include the handoffs of the
interpreter lock between the two threads and drift with the load of the machine. Here the
listener is not started; this thread calls its loop's turn (``Server._turn``) whenever the
client has written, and counts only the CPU time spent in those turns
(``time.thread_time()``): epoll, recv, parse, route, enqueue, deliver, the writes. The client's
bytes are encoded once beforehand (what pika sends for the same calls), so the client costs
next to nothing and the figure is the server's own.

- publish: N ``basic.publish`` (100-byte bodies) written one message per write, a turn after
  each write (a paced publisher: the worst case for batching);
- confirms: the same on a confirming channel, the client reading each basic.ack before it sends
  the next publish (one round trip per message, as pika's BlockingConnection does);
- consume+ack: N messages queued beforehand, prefetch 100; the client reads what the turn
  wrote and answers every delivery it read with one ``basic.ack`` each, in one write.

Each line runs ``--repeat`` times; the smallest and the median figures are shown. The figures
include the two ``time.thread_time()`` calls around each turn (a system call on some virtual
machines); the line under the table says what an empty pair of them costs here, to subtract by
eye. Nothing is asserted.

The loop's batching pauses (``embroker._batching.BatchingPolicy(enabled=False)``) are off here,
the hold for a consumer's acks with them: every turn of this harness finds the client's bytes
waiting already, which the loop takes for a client that streams and pauses for, where a paced
client's bytes arrive while the loop waits in select (no pause). With them on, each turn here
would count a pause's system calls for one message.

A second table measures the machine with no broker: the part of the figures above, and of the
other benchmarks' server CPU, that no change to embroker's code can remove:

- round trip, system calls only: the confirms line's select, ``recv_into`` and ``send``, with
  nothing between them;
- wake-up across threads: a server thread that blocks in select until a client thread of the
  same process writes, then answers. The listener pays this each time it waits for a client
  in its own process, as with a test's pika on a paced or pipelined line;
- one ``time.sleep(0)``: the least each of the listener's pauses costs
  (``Server._hold``, ``Server._let_stream``).
"""

from __future__ import annotations

import argparse
import os
import selectors
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from processing import FRAME_MAX, HANDSHAKE, PUBLISH

import embroker._listener_loop as loop_module
from embroker import Broker
from embroker._batching import BatchingPolicy
from embroker.amqp091 import FrameParser, encode_method_frame, methods
from embroker.server import Server


class Rig:
    """A listener driven from this thread, and one raw client with channel 1 open."""

    def __init__(self) -> None:
        self.broker = Broker()
        # (no batching pauses: see the module's docstring)
        self.server = Server(self.broker, batching=BatchingPolicy(enabled=False))
        self.server._prepare()
        self.server._loop_ident = threading.get_ident()  # this thread is the loop's
        self.next_tick = time.monotonic() + 3600  # no heartbeat ticks in the timed part
        self.cpu = 0.0
        self.sock = socket.create_connection(("127.0.0.1", self.server.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.parser = FrameParser(max_frame_size=FRAME_MAX)
        self.turn()  # accept
        for data, reply in HANDSHAKE:
            self.send(data)
            if reply is not None:
                self.expect(reply)

    def turn(self) -> None:
        start = time.thread_time()
        self.server._turn(self.next_tick)
        self.cpu += time.thread_time() - start

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)
        self.turn()

    def frames(self) -> list[object]:
        """What the server wrote (turning until something came)."""
        self.sock.setblocking(False)
        try:
            while True:
                try:
                    data = self.sock.recv(1 << 20)
                except BlockingIOError:
                    self.turn()
                    continue
                found = list(self.parser.feed(data))
                if found:
                    return found
        finally:
            self.sock.setblocking(True)

    def expect(self, kind: type) -> object:
        for frame in self.frames():
            if isinstance(getattr(frame, "method", None), kind):
                return frame
        raise AssertionError(f"expected {kind.__name__}")

    def close(self) -> None:
        self.sock.close()
        self.server._running = False
        self.server._shutdown()


def publish(n: int) -> float:
    rig = Rig()
    rig.cpu = 0.0
    for _ in range(n):
        rig.send(PUBLISH)
    cpu = rig.cpu
    assert rig.broker.queues["q"].message_count == n
    rig.close()
    return cpu / n


def confirms(n: int) -> float:
    rig = Rig()
    rig.send(encode_method_frame(1, methods.ConfirmSelect()))
    rig.expect(methods.ConfirmSelectOk)
    rig.cpu = 0.0
    for _ in range(n):
        rig.send(PUBLISH)
        rig.expect(methods.BasicAck)
    cpu = rig.cpu
    rig.close()
    return cpu / n


def consume(n: int) -> float:
    rig = Rig()
    for _ in range(n):
        rig.send(PUBLISH)
    rig.send(encode_method_frame(1, methods.BasicQos(prefetch_count=100)))
    rig.expect(methods.BasicQosOk)
    rig.cpu = 0.0
    rig.send(encode_method_frame(1, methods.BasicConsume(queue="q", consumer_tag="c")))
    acked = 0
    while acked < n:
        tags = [f.method.delivery_tag for f in rig.frames()  # type: ignore[attr-defined]
                if isinstance(getattr(f, "method", None), methods.BasicDeliver)]
        if tags:
            rig.send(b"".join(encode_method_frame(1, methods.BasicAck(delivery_tag=t))
                              for t in tags))
            acked += len(tags)
    cpu = rig.cpu
    rig.close()
    return cpu / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    lines: list[tuple[str, Callable[[int], float]]] = [
        ("publish, one message per write", publish),
        ("confirms, one round trip per message", confirms),
        ("consume+ack, prefetch 100", consume),
    ]
    print(f"{'workload':40} {'server CPU us/msg':>18} {'median':>8}")
    for label, workload in lines:
        runs = [workload(args.messages) for _ in range(args.repeat)]
        print(f"{label:40} {min(runs) * 1e6:18.1f} {statistics.median(runs) * 1e6:8.1f}")
    print(f"(each turn's CPU clock reads cost about {_clock_cost() * 1e6:.1f} us, counted in "
          "the figures once per turn)")
    print()
    print(f"{'the machine, with no broker':40} {'CPU us':>18} {'median':>8}")
    for label, floor in FLOORS:
        runs = [floor(args.messages) for _ in range(args.repeat)]
        print(f"{label:40} {min(runs) * 1e6:18.1f} {statistics.median(runs) * 1e6:8.1f}")


# -- what the machine costs ----------------------------------------------------------------------
#
# The same system calls as a turn, with no broker between them: the part of each figure above
# that no change to embroker's code can remove. They depend on the machine's kernel and
# hypervisor, not on Python: read the figures above against them.


def _pair() -> tuple[socket.socket, socket.socket]:
    """A loopback TCP connection, both ends with TCP_NODELAY: (client, server)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    for sock in (client, server):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    server.setblocking(False)
    return client, server


def round_trip_floor(n: int) -> float:
    """The confirms line's system calls alone: the server's select (the listener's selector),
    ``recv_into`` and a 21-byte ``send`` per message, the client sending the same publish and
    reading the answer, in this thread (the server's CPU per message)."""
    client, server = _pair()
    poller = selectors.DefaultSelector()
    poller.register(server, selectors.EVENT_READ)
    buffer = bytearray(loop_module._READ_SIZE)
    answer = encode_method_frame(1, methods.BasicAck(delivery_tag=1))
    cpu = 0.0
    try:
        for _ in range(n):
            client.sendall(PUBLISH)
            start = time.thread_time()
            poller.select(1.0)
            size = server.recv_into(buffer)
            server.send(answer)
            cpu += time.thread_time() - start
            assert size == len(PUBLISH), size
            assert client.recv(64) == answer
    finally:
        poller.close()
        client.close()
        server.close()
    return cpu / n


def wake_floor(n: int) -> float:
    """A server thread that blocks in select until a client thread of the same process writes,
    then answers it (one byte each way): the server thread's CPU per round trip. What the
    listener pays each time it waits for a client in its own process (a test's pika): the
    wake-up and the hand-over of the interpreter lock, twice."""
    client, server = _pair()
    poller = selectors.DefaultSelector()
    poller.register(server, selectors.EVENT_READ)
    spent = [0.0]

    def serve() -> None:
        start = time.thread_time()
        for _ in range(n):
            poller.select()
            server.recv(1)
            server.send(b"a")
        spent[0] = time.thread_time() - start

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        for _ in range(n):
            client.sendall(b"p")
            assert client.recv(1) == b"a"
    finally:
        thread.join()
        poller.close()
        client.close()
        server.close()
    return spent[0] / n


def sleep_floor(n: int) -> float:
    """The CPU time of ``time.sleep(0)``: the least each of the listener's pauses
    (``Server._hold``, ``Server._let_stream``) costs, however short."""
    start = time.thread_time()
    for _ in range(n):
        time.sleep(0)
    return (time.thread_time() - start) / n


FLOORS: list[tuple[str, Callable[[int], float]]] = [
    ("round trip, system calls only", round_trip_floor),
    ("wake-up across threads, one each way", wake_floor),
    ("one time.sleep(0)", sleep_floor),
]


def _clock_cost(times: int = 20_000) -> float:
    """CPU seconds of an empty measured section (``Rig.turn`` around nothing)."""
    spent = 0.0
    for _ in range(times):
        start = time.thread_time()
        spent += time.thread_time() - start
    return spent / times


if __name__ == "__main__":
    main()
