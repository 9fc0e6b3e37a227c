"""What every kind of connection gets, for STOMP's through the seams alone: the routing trace
and ``explain()``, settle, strict mode (``leaks``) and the vhost's connection limit."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from embroker import Broker
from embroker.server import Server
from embroker.stomp import Frame, FrameReader
from embroker.testing import leaks


@pytest.fixture
def served() -> Iterator[tuple[Broker, Server]]:
    broker = Broker()
    server = broker.serve(stomp_port=0)
    try:
        yield broker, server
    finally:
        server.stop()


def _session(server: Server) -> tuple[socket.socket, FrameReader]:
    sock = socket.create_connection(("127.0.0.1", server.stomp_port or 0), timeout=5)
    sock.sendall(b"CONNECT\naccept-version:1.2\nhost:/\nlogin:guest\npasscode:guest\n\n\x00")
    reader = FrameReader(1 << 20)
    assert _read(sock, reader).command == "CONNECTED"
    return sock, reader


def _read(sock: socket.socket, reader: FrameReader) -> Frame:
    while (frame := reader.next()) is None:
        data = sock.recv(65536)
        assert data, "closed"
        reader.feed(data)
    return frame


def test_the_trace_names_the_stomp_send_and_explains_its_routing(
        served: tuple[Broker, Server]) -> None:
    broker, server = served
    sock, reader = _session(server)
    sock.sendall(b"SEND\ndestination:/exchange/amq.direct/nobody\nreceipt:r\n\nlost\x00")
    assert _read(sock, reader).command == "RECEIPT"
    decision = broker.trace[-1]
    assert decision.origin == "STOMP SEND to '/exchange/amq.direct/nobody'"
    assert decision.outcome == "unroutable"
    assert "through STOMP SEND to '/exchange/amq.direct/nobody'" in decision.explain()
    sock.close()


def test_settle_and_strict_mode_see_a_stomp_subscriber_like_any_other(
        served: tuple[Broker, Server]) -> None:
    broker, server = served
    sock, reader = _session(server)
    sock.sendall(b"SUBSCRIBE\ndestination:/queue/jobs\nack:client-individual\nid:1\n\n\x00"
                 b"SEND\ndestination:/queue/jobs\n\nwork\x00")
    message = _read(sock, reader)
    broker.settle()
    found = leaks(broker)
    assert any("client connection left open" in p for p in found)
    assert any("1 unacknowledged deliver(ies)" in p and "'jobs'" in p for p in found)
    sock.sendall(f"ACK\nid:{message.header('ack')}\n\n\x00DISCONNECT\nreceipt:bye\n\n\x00"
                 .encode())
    assert _read(sock, reader).header("receipt-id") == "bye"
    sock.close()
    broker.settle()
    assert leaks(broker) == []


def test_the_vhost_connection_limit_counts_stomp_connections(
        served: tuple[Broker, Server]) -> None:
    broker, server = served
    sock, _ = _session(server)
    broker.set_vhost_limits({"max-connections": 1})
    second = socket.create_connection(("127.0.0.1", server.stomp_port or 0), timeout=5)
    second.sendall(b"CONNECT\nlogin:guest\npasscode:guest\n\n\x00")
    refused = _read(second, FrameReader(1 << 20))
    assert (refused.command, refused.body) == ("ERROR", b"Virtual host '/' access denied")
    second.close()
    sock.close()
