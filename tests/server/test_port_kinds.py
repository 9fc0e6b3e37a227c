"""A new protocol is one registration (issue 45, item 5): a toy line-based protocol, written
here, is registered as a port kind and served by the listener (and an in-memory link) with its
login, its listing in ``server.connections`` and the management API's ``/api/connections``,
faults and alarm blocking, with no edit to the model or the listener.

The toy protocol: ``LOGIN user password name`` (answered ``OK``), ``ECHO text`` (answered
``text``); the broker says ``BLOCKED reason`` / ``UNBLOCKED`` under an alarm and ``CLOSE code
text`` when it closes the connection.
"""

from __future__ import annotations

import base64
import enum
import json
import socket
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from embroker._transport import (
    PORT_KINDS,
    Accepted,
    BrokerConnection,
    PortKind,
    port_kind,
    register_port_kind,
    unregister_port_kind,
)
from embroker.errors import ConnectionException, ConnectionForced, InternalError, error_for_code
from embroker.kit import Client, LoginRefused, login_password
from embroker.memory import MemoryLink
from embroker.model import Broker
from embroker.model import Connection as ModelConnection
from embroker.model._kinds import ConnectionKind
from embroker.server import Server, default_max_connections
from embroker.testing import wait_until

#: The toy protocol's model connections: counted against max-connections, held when they
#: publish under an alarm (as STOMP's and MQTT's are in RabbitMQ).
TOY = ConnectionKind("toy", "TOY 1.0", "toy")


class ToyState(enum.Enum):
    LOGIN = "login"
    OPEN = "open"
    CLOSED = "closed"


class ToyConnection:
    """A sans-IO line protocol over a model connection (a BrokerConnection)."""

    kind = TOY
    held_by_alarm = False
    stops_silently = False
    channel_numbers: tuple[int, ...] = ()
    failure: Exception | None = None

    def __init__(self, broker: Broker, peer: str = "",
                 on_output: Callable[[], None] | None = None, loopback: bool = True) -> None:
        self.broker = broker
        self.loopback = loopback
        self.peer = peer
        self.on_output = on_output
        self.state = ToyState.LOGIN
        self.user: str | None = None
        self.model: ModelConnection | None = None
        self.client_properties: dict[str, Any] = {}
        self.should_close = False
        self.blocked = False
        self._inbox = b""
        self._out = bytearray()

    # -- SansIOConnection
    def receive_data(self, data: bytes) -> None:
        if not data:
            self.should_close = True
            return
        self._inbox += data
        while b"\n" in self._inbox and not self.should_close:
            line, self._inbox = self._inbox.split(b"\n", 1)
            self._line(line.decode())

    def _line(self, line: str) -> None:
        command, _, rest = line.partition(" ")
        if command == "LOGIN" and self.state is ToyState.LOGIN:
            user, password, name = rest.split(" ")
            try:
                self.user = login_password(self.broker, user, password, Client("toy", loopback=self.loopback))
            except LoginRefused:
                self._refuse(403, "login refused")
                return
            self.client_properties = {"connection_name": name, "product": "toy"}
            self.model = self.broker.open_connection(
                "/", user=self.user, client_properties=self.client_properties,
                name=f"toy {self.peer}", kind=TOY)
            self.state = ToyState.OPEN
            self._send("OK")
        elif command == "ECHO" and self.state is ToyState.OPEN:
            self._send(rest)
        else:
            self._refuse(503, f"unexpected {command}")

    def _refuse(self, code: int, text: str) -> None:
        error = error_for_code(code, text)
        assert isinstance(error, ConnectionException)
        self.close(error)

    def _send(self, line: str) -> None:
        self._out += line.encode() + b"\n"

    def data_to_send(self) -> bytes:
        out, self._out = bytes(self._out), bytearray()
        return out

    @property
    def has_output(self) -> bool:
        return bool(self._out) or self.should_close

    def tick(self) -> float | None:
        return None

    def internal_error(self, error: InternalError) -> None:
        self.close(error)

    # -- BrokerConnection
    def close(self, error: ConnectionException) -> None:
        if self.state is not ToyState.CLOSED:
            self._send(f"CLOSE {error.reply_code} {error.reply_text}")
            self.state = ToyState.CLOSED
            self.should_close = True

    def publishers_blocked(self, reason: str) -> None:
        self._send(f"BLOCKED {reason}")
        self._notify()

    def publishers_unblocked(self) -> None:
        self._send("UNBLOCKED")
        self._notify()

    def on_restart(self) -> None:
        self.close(ConnectionForced("shutdown"))

    def killed(self, reason: str) -> None:
        """(Nothing to note.)"""

    def connection_lost(self) -> None:
        self.state = ToyState.CLOSED
        self.should_close = True
        if self.model is not None:
            self.model.close()
            self.model = None

    def _notify(self) -> None:
        if self.on_output is not None:
            self.on_output()


def _factory(accepted: Accepted) -> BrokerConnection:
    return ToyConnection(accepted.broker, accepted.peer, accepted.on_output, accepted.loopback)


TOY_PORT = PortKind("toy", _factory, protocol="toy", tls_protocol="toy/ssl", limit="toy",
                    locked=True, broker=True, listed=True)


@pytest.fixture
def toy() -> Iterator[PortKind]:
    register_port_kind(TOY_PORT)
    yield TOY_PORT
    unregister_port_kind("toy")


@pytest.fixture
def served(broker: Broker, toy: PortKind) -> Iterator[Server]:
    with Server(broker, listeners={"toy": 0}, management_port=0) as server:
        yield server


class _Peer:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buffer = b""

    def send(self, line: str) -> None:
        self.sock.sendall(line.encode() + b"\n")

    def line(self) -> str:
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise EOFError(self.buffer)
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    def ended(self) -> bytes:
        """What is left before the end of the stream."""
        rest = self.buffer
        while chunk := self.sock.recv(4096):
            rest += chunk
        return rest

    def close(self) -> None:
        self.sock.close()


def _open(server: Server, name: str) -> _Peer:
    port = server.listener_port("toy")
    assert port is not None
    peer = _Peer(port)
    peer.send(f"LOGIN guest guest {name}")
    assert peer.line() == "OK"
    return peer


def test_a_registered_kind_is_served_and_listed_with_no_edit_to_the_listener(
        served: Server) -> None:
    peer = _open(served, "toy-1")
    peer.send("ECHO hello")
    assert peer.line() == "hello"
    connection = served.connection("toy-1")
    assert connection.protocol == "toy"
    assert connection.user == "guest"
    assert connection.product == "toy"
    assert connection.is_open
    assert connection.channels == []
    assert ("toy", served.listener_port("toy")) in served.listeners()
    request = urllib.request.Request(served.management_url + "api/connections", headers={
        "Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()})
    with urllib.request.urlopen(request, timeout=5) as answer:
        listed = json.loads(answer.read())
    (toy,) = [c for c in listed if c["protocol"] == "TOY 1.0"]
    assert toy["user"] == "guest"
    assert toy["client_properties"]["connection_name"] == "toy-1"
    peer.close()


def test_faults_close_and_kill_a_registered_kind_s_connections(served: Server) -> None:
    first, second = _open(served, "toy-close"), _open(served, "toy-kill")
    served.connection("toy-close").close(320, "bye")
    assert first.line() == "CLOSE 320 CONNECTION_FORCED - bye"
    assert first.ended() == b""
    served.connection("toy-kill").kill()
    assert second.ended() == b""  # (no close: the socket ends)
    wait_until(lambda: not served.connections)
    assert not served.broker.connections


def test_a_registered_kind_is_told_of_alarms_and_restarts(served: Server) -> None:
    peer = _open(served, "toy-alarm")
    served.broker.block_publishers("low on memory")
    assert peer.line() == "BLOCKED low on memory"
    served.broker.unblock_publishers()
    assert peer.line() == "UNBLOCKED"
    served.stop_app()
    assert peer.line() == "CLOSE 320 CONNECTION_FORCED - shutdown"
    served.start_app()


def test_open_listener_and_close_listener_serve_a_registered_kind(broker: Broker,
                                                                   toy: PortKind) -> None:
    with Server(broker) as server:
        assert server.listener_port("toy") is None
        port = server.open_listener("toy", 0)
        assert server.listener_port("toy") == port
        peer = _open(server, "toy-late")
        server.close_listener("toy")
        assert peer.ended() == b""
        assert server.listener_port("toy") is None
        with pytest.raises(ValueError, match="not 'amqp'"):
            server.open_listener("amqp", 0)


def test_a_registered_kind_has_its_limit_and_counts_as_a_kind_of_port(toy: PortKind) -> None:
    assert "toy" in PORT_KINDS
    assert default_max_connections()["toy"] is None
    assert port_kind("toy") is toy
    with pytest.raises(ValueError, match="no port is 'tyo'"):
        Server(Broker(), max_connections={"tyo": 1})


def test_an_in_memory_link_carries_any_connection_factory(broker: Broker) -> None:
    def make(broker: Broker, *, peer: str, on_output: Callable[[], None],
             heartbeat: int) -> BrokerConnection:
        return ToyConnection(broker, peer, on_output)

    link = MemoryLink(broker, connection=make)
    link.send(b"LOGIN guest guest memory-toy\nECHO hi\n")
    link.pump()
    assert link.receive() == b"OK\nhi\n"
    assert [c.kind for c in broker.connections.values()] == [TOY]
    broker.block_publishers()
    assert link.receive() == b"BLOCKED low on memory\n"
    broker.unblock_publishers()
    link.close()
    assert not broker.connections


def test_the_listener_s_amqp_defaults_are_amqp_0_9_1_s() -> None:
    from embroker import server
    from embroker.amqp091 import _connection, _frames

    assert (server.FRAME_MAX, server.CHANNEL_MAX, server.FRAME_MAX_LIMIT) == (
        _connection.FRAME_MAX, _connection.CHANNEL_MAX, _frames.FRAME_MAX_LIMIT)
