"""The listener's look at heartbeats leaves an idle AMQP 0-9-1 connection alone until its
connection's ``tick()`` said something falls due (issue 49, scale: before, every connection was
ticked every half second, 6.7% of a core at 10,000 idle connections).

The loop is driven from the test's thread (``Server._turn``, ``Server._tick``), as
``benchmarks/listener_turns.py`` does, on a clock the test moves that is not a ManualClock
(a ManualClock makes the loop look at every connection, as a test moves the time)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from embroker import Broker
from embroker._batching import BatchingPolicy
from embroker.amqp091 import PROTOCOL_HEADER, encode_method_frame
from embroker.amqp091._connection import ServerConnection
from embroker.amqp091.methods import ConnectionOpen, ConnectionStartOk, ConnectionTuneOk
from embroker.errors import ConnectionForced
from embroker.server import Server

from ..clocks import SteppedClock

HEARTBEAT_FRAME = b"\x08\x00\x00\x00\x00\x00\x00\xce"


class Rig:
    def __init__(self, heartbeat: int) -> None:
        self.clock = SteppedClock()
        self.clock.now = 1000.0
        self.broker = Broker(clock=self.clock)
        self.server = Server(self.broker, batching=BatchingPolicy(enabled=False))
        self.server._prepare()
        self.server._loop_ident = threading.get_ident()
        self.sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
        self.turn()  # accept
        self.send(PROTOCOL_HEADER)
        self.read()
        self.send(encode_method_frame(0, ConnectionStartOk(
            client_properties={}, mechanism="PLAIN", response="\0guest\0guest",
            locale="en_US")))
        self.read()
        self.send(encode_method_frame(0, ConnectionTuneOk(
            channel_max=10, frame_max=131072, heartbeat=heartbeat)) + encode_method_frame(
            0, ConnectionOpen(virtual_host="/")))
        self.read()
        (self.client,) = self.server._clients.values()

    def turn(self) -> None:
        self.server._turn(time.monotonic() + 3600)  # (no look at heartbeats of the turn's own)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)
        self.turn()

    def read(self) -> bytes:
        self.sock.settimeout(5)
        return self.sock.recv(65536)

    def close(self) -> None:
        self.sock.close()
        self.server._running = False
        self.server._shutdown()


@pytest.fixture
def ticks(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The broker clock's time at each AMQP 0-9-1 connection's ``tick()``."""
    seen: list[float] = []
    tick = ServerConnection.tick

    def counted(self: ServerConnection) -> float | None:
        seen.append(self.broker.clock.monotonic())
        return tick(self)
    monkeypatch.setattr(ServerConnection, "tick", counted)
    return seen


@pytest.fixture
def rig(request: pytest.FixtureRequest) -> Iterator[Rig]:
    made = Rig(request.param)
    yield made
    made.close()


@pytest.mark.parametrize("rig", [0], indirect=True)
def test_a_connection_without_heartbeats_is_looked_at_again_only_once_it_reads(
        rig: Rig, ticks: list[float]) -> None:
    rig.server._tick()
    assert len(ticks) == 1  # (nothing due: its tick said None)
    for _ in range(5):
        rig.clock.now += 3600
        rig.server._tick()
    assert len(ticks) == 1
    rig.send(HEARTBEAT_FRAME)  # a read: what it sent may change what falls due
    rig.server._tick()
    assert len(ticks) == 2


@pytest.mark.parametrize("rig", [10], indirect=True)
def test_a_connection_with_heartbeats_is_looked_at_when_its_heartbeat_falls_due(
        rig: Rig, ticks: list[float]) -> None:
    rig.server._tick()
    assert len(ticks) == 1
    due = rig.client.tick_at
    assert due == rig.clock.now + 5  # (half the interval after what it was last sent)
    rig.clock.now = due - 0.1
    rig.server._tick()
    assert len(ticks) == 1
    rig.clock.now = due
    rig.server._tick()
    rig.server._flush()
    assert len(ticks) == 2
    assert rig.read() == HEARTBEAT_FRAME  # the look that found it due wrote the heartbeat


@pytest.mark.parametrize("rig", [1], indirect=True)
def test_a_silent_client_is_still_dropped_at_two_intervals(rig: Rig) -> None:
    start = rig.clock.now
    while rig.server._clients and rig.clock.now < start + 10:
        rig.clock.now += 0.25
        rig.server._tick()
        rig.server._flush()
    assert not rig.server._clients
    assert rig.clock.now == start + 2.25  # (more than two intervals: 2 s of silence, then
    # the first look after)


@pytest.mark.parametrize("rig", [0], indirect=True)
def test_output_the_broker_gives_an_idle_connection_brings_it_back_to_each_look(
        rig: Rig, ticks: list[float]) -> None:
    rig.server._tick()
    assert rig.client.tick_at == float("inf")
    (connection,) = rig.broker.connections.values()
    with rig.broker.locked():
        assert rig.server.close_connection(connection, ConnectionForced("bye"))
    rig.server._flush()
    assert rig.client.tick_at == 0.0  # (it wrote its connection.close: closing has a timeout)
    rig.server._tick()
    assert len(ticks) == 2
