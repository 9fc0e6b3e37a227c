"""A protocol served over WebSocket on a port of its own, by registration alone (issue 45, item
5): RabbitMQ's Web-STOMP and Web-MQTT serve STOMP and MQTT at ``/ws`` on ports of their own
(``rabbitmq_web_stomp``, listener ``http/web-stomp``). Here the toy line protocol of
``test_port_kinds`` and AMQP 0-9-1 are carried, with no edit to the listener or the protocol:
their connections are listed, faulted and told of alarms through the carrier."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import wsproto
import wsproto.events as ws

from embroker._transport import port_kind, register_port_kind, unregister_port_kind
from embroker._websocket import WebSocketOptions, websocket_port_kind
from embroker.amqp091 import PROTOCOL_HEADER
from embroker.model import Broker
from embroker.server import Server
from embroker.testing import wait_until

from .test_port_kinds import TOY_PORT

WEB_TOY = websocket_port_kind(TOY_PORT, "web-toy", WebSocketOptions(
    path="/ws", subprotocols=("toy",), frame="text"), protocol="http/web-toy")


@pytest.fixture
def kinds() -> Iterator[None]:
    register_port_kind(TOY_PORT)
    register_port_kind(WEB_TOY)
    register_port_kind(websocket_port_kind(port_kind("amqp"), "web-amqp", WebSocketOptions(
        path="/ws", subprotocols=("amqp",))))
    yield
    for name in ("web-amqp", "web-toy", "toy"):
        unregister_port_kind(name)


@pytest.fixture
def served(broker: Broker, kinds: None) -> Iterator[Server]:
    with Server(broker, listeners={"web-toy": 0, "web-amqp": 0}) as server:
        yield server


class _WebSocketPeer:
    """A WebSocket client over a socket (wsproto's client side)."""

    def __init__(self, port: int, subprotocol: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.ws = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
        self.events: list[ws.Event] = []
        self.sock.sendall(self.ws.send(ws.Request(host="localhost", target="/ws",
                                                  subprotocols=[subprotocol])))
        accepted = self.next()
        assert isinstance(accepted, ws.AcceptConnection), accepted
        self.subprotocol = accepted.subprotocol

    def next(self) -> ws.Event:
        while not self.events:
            data = self.sock.recv(65536)
            self.ws.receive_data(data or None)
            self.events.extend(self.ws.events())
            if not data and not self.events:
                raise EOFError
        return self.events.pop(0)

    def send(self, data: bytes | str) -> None:
        message = ws.TextMessage(data=data) if isinstance(data, str) else ws.BytesMessage(data=data)
        self.sock.sendall(self.ws.send(message))

    def message(self) -> bytes | str:
        event = self.next()
        if isinstance(event, ws.TextMessage):
            return event.data
        assert isinstance(event, ws.BytesMessage), event
        return bytes(event.data)


def _toy(server: Server, name: str) -> _WebSocketPeer:
    port = server.listener_port("web-toy")
    assert port is not None
    peer = _WebSocketPeer(port, "toy")
    peer.send(f"LOGIN guest guest {name}\n")
    assert peer.message() == "OK\n"
    return peer


def test_a_registered_kind_is_served_over_websocket_and_listed(served: Server) -> None:
    peer = _toy(served, "ws-1")
    assert peer.subprotocol == "toy"
    peer.send("ECHO hello\n")
    assert peer.message() == "hello\n"
    assert served.connection("ws-1").user == "guest"
    assert ("http/web-toy", served.listener_port("web-toy")) in served.listeners()


def test_faults_and_alarms_reach_a_connection_through_its_websocket(served: Server) -> None:
    peer = _toy(served, "ws-alarm")
    served.broker.block_publishers("low on memory")
    assert peer.message() == "BLOCKED low on memory\n"
    served.broker.unblock_publishers()
    assert peer.message() == "UNBLOCKED\n"
    served.connection("ws-alarm").close(320, "bye")
    assert peer.message() == "CLOSE 320 CONNECTION_FORCED - bye\n"
    closed = peer.next()
    assert isinstance(closed, ws.CloseConnection)
    assert closed.code == 1000
    wait_until(lambda: not served.connections)


def test_a_socket_before_its_handshake_is_no_connection_yet(served: Server) -> None:
    port = served.listener_port("web-toy")
    assert port is not None
    with socket.create_connection(("127.0.0.1", port), timeout=5) as waiting:
        waiting.sendall(b"GET /ws HTTP/1.1\r\n")  # (half a request)
        peer = _toy(served, "ws-2")
        served.broker.block_publishers("low on disk")  # (told to the open one only)
        assert peer.message() == "BLOCKED low on disk\n"
        served.broker.unblock_publishers()
        assert peer.message() == "UNBLOCKED\n"
        assert [c.connection_name for c in served.connections] == ["ws-2"]
        served.stop_app()  # (a restart tells broker connections only)
        assert peer.message() == "CLOSE 320 CONNECTION_FORCED - shutdown\n"
        served.start_app()
    assert not served.errors, served.errors.traceback()


def test_amqp_0_9_1_is_carried_in_binary_messages(served: Server) -> None:
    port = served.listener_port("web-amqp")
    assert port is not None
    peer = _WebSocketPeer(port, "amqp")
    peer.send(PROTOCOL_HEADER)
    start = peer.message()
    assert isinstance(start, bytes)
    assert (start[:1], start[7:11]) == (b"\x01", b"\x00\x0a\x00\x0a")  # a connection.start

