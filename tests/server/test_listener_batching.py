"""The loop's pause for a streaming client: when a select finds a client's bytes waiting already
(it returned at once), the loop sleeps ``_BATCH_PAUSE`` before reading, so that a client in the
same process, which hands over the interpreter lock at every send(), gets to write many frames
for one read (benchmarks/loopback.py shows what it is worth). The loop's turns are driven from
this thread; which selects count as quick is set by hand, so nothing here depends on timing."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

import embroker.server as server_module
from embroker import Broker
from embroker.amqp091 import PROTOCOL_HEADER
from embroker.server import Server


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Server, socket.socket, list[float]]]:
    pauses: list[float] = []
    sleep = time.sleep

    def recording_sleep(seconds: float) -> None:
        if threading.get_ident() == server._loop_ident:
            pauses.append(seconds)
        sleep(seconds)

    server = Server(Broker())
    server._prepare()
    server._loop_ident = threading.get_ident()
    monkeypatch.setattr(time, "sleep", recording_sleep)  # (the loop calls time.sleep)
    client = socket.create_connection(("127.0.0.1", server.port))
    server._turn(time.monotonic() + 5)  # the accept
    yield server, client, pauses
    client.close()
    server.stop()


def _turn(server: Server) -> None:
    server._turn(time.monotonic() + 5)


def test_a_client_whose_bytes_were_waiting_gets_a_pause_before_the_read(
        rig: tuple[Server, socket.socket, list[float]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    server, client, pauses = rig
    monkeypatch.setattr(server_module, "_STREAMING", 3600.0)  # every select counts as quick
    client.sendall(PROTOCOL_HEADER)
    _turn(server)
    assert pauses == [server_module._BATCH_PAUSE]
    assert client.recv(4096).startswith(b"\x01\x00\x00")  # and the read was served: start


def test_no_pause_when_the_loop_had_to_wait_for_the_bytes(
        rig: tuple[Server, socket.socket, list[float]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    server, client, pauses = rig
    monkeypatch.setattr(server_module, "_STREAMING", 0.0)  # no select counts as quick
    client.sendall(PROTOCOL_HEADER)
    _turn(server)
    assert pauses == []
    assert client.recv(4096).startswith(b"\x01\x00\x00")


def test_no_pause_for_what_is_not_a_client_or_when_the_pause_is_off(
        rig: tuple[Server, socket.socket, list[float]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    server, client, pauses = rig
    monkeypatch.setattr(server_module, "_STREAMING", 3600.0)
    second = socket.create_connection(("127.0.0.1", server.port))  # the listening socket
    _turn(server)
    server._wake()  # the loop's own wake-up socket
    _turn(server)
    assert pauses == []
    monkeypatch.setattr(server_module, "_BATCH_PAUSE", 0.0)
    client.sendall(PROTOCOL_HEADER)
    _turn(server)
    assert pauses == []
    second.close()
