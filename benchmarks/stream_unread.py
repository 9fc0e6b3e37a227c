"""What one stream connection that reads nothing costs: 20 subscriptions from the first offset
of a 4 MiB stream (64 chunks of 64 KiB), credit for all of it, and a client that never reads.

Run: python benchmarks/stream_unread.py [--subscriptions N] [--chunks C]

Two lines (``tracemalloc``: the memory Python allocated from before the subscriptions until
the output stops growing, in MiB; "held": the bytes waiting for the client):

- ``listener``: embroker's stream listener in this process (``broker.serve(stream_port=0)``)
  and a raw socket client with a 64 KiB receive buffer: what the listener holds for it
  (its ``wbuf``). The listener must report what it wrote (``StreamConnection.written``) for
  the bound to apply there;
- ``sans-IO``: a ``StreamConnection`` driven as the listener drives it (data_to_send, then
  ``written`` with what the socket did not take: here nothing), no socket.

Nothing here is asserted: it prints a table.
"""

from __future__ import annotations

import argparse
import gc
import socket
import time
import tracemalloc
from collections.abc import Callable

from embroker import Broker
from embroker.stream import FrameReader, Key, StreamConnection, Writer

CHUNK_BODY = 64 * 1024


def stream_of(broker: Broker, chunks: int) -> None:
    with broker.connect() as client:
        channel = client.channel()
        channel.queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
        for i in range(chunks):
            channel.basic_publish("", "s", bytes([i % 256]) * CHUNK_BODY)


def _frames(subscriptions: int) -> list[bytes]:
    """The opening and the subscriptions, as a client sends them."""
    out = [Writer(Key.PEER_PROPERTIES).uint32(1).properties({}).frame(),
           Writer(Key.SASL_HANDSHAKE).uint32(2).frame(),
           Writer(Key.SASL_AUTHENTICATE).uint32(3).string("PLAIN").bytes_(b"\0guest\0guest")
           .frame(),
           Writer(Key.TUNE).uint32(1_048_576).uint32(0).frame(),
           Writer(Key.OPEN).uint32(4).string("/").frame()]
    return out + [Writer(Key.SUBSCRIBE).uint32(10 + i).uint8(i).string("s").uint16(1)
                  .uint16(1000).properties({}).frame() for i in range(subscriptions)]


def _settled(measure: Callable[[], int], timeout: float = 20.0) -> int:
    """``measure()`` once it stops changing for half a second."""
    deadline = time.monotonic() + timeout
    last, since = measure(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = measure()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= 0.5:
            break
    return last


def listener_line(subscriptions: int, chunks: int) -> tuple[float, int]:
    broker = Broker()
    stream_of(broker, chunks)
    with broker.serve(stream_port=0) as server:
        assert server.stream_port is not None
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.connect(("127.0.0.1", server.stream_port))
        opening, subscribes = _frames(subscriptions)[:5], _frames(subscriptions)[5:]
        reader = FrameReader(0)
        for frame in opening:  # (read the opening's answers; then nothing more)
            sock.sendall(frame)
            while reader.next_frame() is None:
                reader.feed(sock.recv(65536))
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        sock.sendall(b"".join(subscribes))

        def held() -> int:
            return sum(len(c.wbuf) for c in list(server._http_clients.values()))

        waiting = _settled(held)
        grown = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        sock.close()
    return grown / 2**20, waiting


def sans_io_line(subscriptions: int, chunks: int) -> tuple[float, int]:
    broker = Broker()
    stream_of(broker, chunks)
    conn = StreamConnection(broker, peer="bench")
    wbuf = bytearray()
    more = [True]

    def write() -> None:  # (the listener's _write, with a socket that takes nothing)
        more[0] = True
        while more[0]:
            more[0] = False
            wbuf.extend(conn.data_to_send())
            conn.written(len(wbuf))

    conn.on_output = lambda: more.__setitem__(0, True)
    frames = _frames(subscriptions)
    for frame in frames[:5]:
        conn.receive_data(frame)
        write()
    wbuf.clear()
    conn.written(0)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for frame in frames[5:]:
        conn.receive_data(frame)
        write()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return grown / 2**20, len(wbuf)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--subscriptions", type=int, default=20)
    parser.add_argument("--chunks", type=int, default=64)
    args = parser.parse_args()
    size = args.chunks * CHUNK_BODY / 2**20
    print(f"{args.subscriptions} subscriptions on a {size:.0f} MiB stream, reading nothing")
    print(f"{'line':10} {'tracemalloc MiB':>16} {'held bytes':>12}")
    for label, line in (("listener", listener_line), ("sans-IO", sans_io_line)):
        grown, held = line(args.subscriptions, args.chunks)
        print(f"{label:10} {grown:16.1f} {held:12,}")


if __name__ == "__main__":
    main()
