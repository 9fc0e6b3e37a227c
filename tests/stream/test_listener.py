"""The stream port on the selector loop: hostile bytes close their own connection only, and a
closed connection leaves nothing behind in the model."""

from __future__ import annotations

import socket
import time

from embroker import Broker, ManualClock
from embroker.stream import Key, Writer
from tests.stream.interop import SCRIPTS, run
from tests.stream.test_connection import Peer


def _wait(predicate: object, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.01)
    return False


def test_garbage_closes_one_connection_and_the_listener_goes_on() -> None:
    broker = Broker()
    with broker.serve(stream_port=0) as server:
        assert server.stream_port is not None
        bad = [socket.create_connection(("127.0.0.1", server.stream_port)) for _ in range(3)]
        bad[0].sendall(b"\xff" * 64)                                     # a huge frame size
        bad[1].sendall(b"\x00\x00\x00\x02\x00")                          # too short a frame
        bad[2].sendall(Writer(Key.PUBLISH).uint8(0).int32(10).frame())  # out of place
        for sock in bad:
            sock.settimeout(5)
            data = b""
            while chunk := sock.recv(4096):
                data += chunk
            assert data[4:6] == b"\x00\x16", "a Close frame, then the socket closes"
            sock.close()
        assert run(SCRIPTS["deduplication"], "127.0.0.1", server.stream_port, server.url)[0] \
            == ("sequence", 4)
        assert _wait(lambda: not broker.connections), broker.connections
        assert not server.errors, server.errors


def test_heartbeats_go_out_when_nothing_else_did() -> None:
    clock = ManualClock()
    broker = Broker(clock=clock)
    p = Peer(broker)
    p.open()  # (the peer tuned heartbeats off: tune again on a fresh peer)
    p.conn.heartbeat = 60
    p.conn.tick()
    assert p.received() == []
    clock.advance(60)
    p.conn.tick()
    assert [k for k, _ in p.received()] == [Key.HEARTBEAT]
