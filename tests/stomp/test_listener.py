"""STOMP and Web-STOMP served by the listener, through the seams every protocol plugs into:
the port kinds, the management API's listing, alarms, faults and the WebSocket carrier."""

from __future__ import annotations

import base64
import json
import socket
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import wsproto
from wsproto.events import AcceptConnection, BytesMessage, Request, TextMessage

from embroker.model import Broker
from embroker.server import Server
from embroker.stomp import Frame, FrameReader

CONNECT = b"CONNECT\naccept-version:1.2\nhost:/\nlogin:guest\npasscode:guest\n\n\x00"


class Client:
    """A blocking STOMP client over a socket, for these tests."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.reader = FrameReader(1 << 24)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read(self) -> Frame | None:
        """The next frame; ``None`` when the server closed the socket."""
        while (frame := self.reader.next()) is None:
            data = self.sock.recv(65536)
            if not data:
                return None
            self.reader.feed(data)
        return frame

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def served() -> Iterator[tuple[Broker, Server]]:
    broker = Broker()
    with Server(broker, listeners={"stomp": 0, "web_stomp": 0}, management_port=0) as server:
        yield broker, server


def _connected(server: Server) -> Client:
    client = Client(server.listener_port("stomp") or 0)
    client.send(CONNECT)
    frame = client.read()
    assert frame is not None
    assert frame.command == "CONNECTED"
    return client


def test_rabbitmq_diagnostics_names_the_stomp_listeners(served: tuple[Broker, Server]) -> None:
    _, server = served
    protocols = [protocol for protocol, _ in server.listeners()]
    assert "stomp" in protocols
    assert "http/web-stomp" in protocols


def test_the_management_api_lists_a_stomp_connection_as_rabbitmq_does(
        served: tuple[Broker, Server]) -> None:
    _, server = served
    client = _connected(server)
    request = urllib.request.Request(server.management_url + "api/connections", headers={
        "Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()})
    (listed,) = json.load(urllib.request.urlopen(request))
    # (RabbitMQ 3.10.8's STOMP connection is a direct one: rabbit_direct's keys, checked live)
    assert sorted(listed) == [
        "channel_max", "channels", "client_properties", "connected_at", "frame_max", "host",
        "name", "node", "peer_host", "peer_port", "port", "protocol", "ssl", "type", "user",
        "user_who_performed_action", "vhost"]
    assert (listed["protocol"], listed["type"], listed["channels"], listed["channel_max"]) == (
        "STOMP 1.2", "direct", 1, 1)
    assert listed["client_properties"] == {"product": "STOMP client"}
    client.close()


def test_a_stomp_publisher_is_held_under_an_alarm_and_goes_on_after_it(
        served: tuple[Broker, Server]) -> None:
    broker, server = served
    consumer = _connected(server)
    consumer.send(b"SUBSCRIBE\ndestination:/queue/q\nreceipt:s\n\n\x00")
    assert consumer.read() is not None
    publisher = _connected(server)
    broker.block_publishers("low on memory")
    publisher.send(b"SEND\ndestination:/queue/q\n\none\x00")
    first = consumer.read()
    assert first is not None
    assert first.body == b"one"  # (the SEND that found the alarm is handled; then not read)
    publisher.send(b"SEND\ndestination:/queue/q\n\ntwo\x00")
    consumer.sock.settimeout(0.3)
    with pytest.raises(TimeoutError):
        consumer.read()
    broker.unblock_publishers()
    consumer.sock.settimeout(5)
    second = consumer.read()
    assert second is not None
    assert second.body == b"two"


def test_a_fault_closes_a_stomp_connection_as_its_channel_dying(
        served: tuple[Broker, Server]) -> None:
    broker, server = served
    client = _connected(server)
    (listed,) = server.connections
    assert listed.protocol == "STOMP"
    listed.close(320, "test fault")
    error = client.read()
    assert error is not None
    assert (error.command, error.header("message"), error.body) == (
        "ERROR", "AMQP channel died", b'Reason: {shutdown,\n            {connection_closing,'
        b'{server_initiated_close,320,"test fault"}}}')
    assert client.read() is None
    assert not broker.connections


def _websocket(server: Server, subprotocols: list[str]) -> tuple[socket.socket,
                                                                  wsproto.WSConnection, str]:
    sock = socket.create_connection(("127.0.0.1", server.listener_port("web_stomp") or 0),
                                    timeout=5)
    ws = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    sock.sendall(ws.send(Request(host="127.0.0.1", target="/ws", subprotocols=subprotocols)))
    accepted = _events(sock, ws)[0]
    assert isinstance(accepted, AcceptConnection)
    return sock, ws, accepted.subprotocol or ""


def _events(sock: socket.socket, ws: wsproto.WSConnection) -> list[Any]:
    while True:
        ws.receive_data(sock.recv(65536))
        found = list(ws.events())
        if found:
            return found


def test_web_stomp_prefers_the_highest_version_and_answers_in_text_frames(
        served: tuple[Broker, Server]) -> None:
    broker, server = served
    sock, ws, subprotocol = _websocket(server, ["v10.stomp", "v12.stomp", "v11.stomp"])
    assert subprotocol == "v12.stomp"
    sock.sendall(ws.send(BytesMessage(CONNECT)))  # (binary frames are read too)
    (connected,) = _events(sock, ws)
    assert isinstance(connected, TextMessage)
    assert connected.data.startswith("CONNECTED\n")
    sock.sendall(ws.send(TextMessage("SUBSCRIBE\ndestination:/topic/x\nid:1\n\n\x00"
                                     "SEND\ndestination:/topic/x\n\nhello\x00")))
    (message,) = _events(sock, ws)
    assert isinstance(message, TextMessage)
    assert message.data.endswith("\n\nhello\x00\n")
    assert [c.kind.protocol for c in broker.connections.values()] == ["Web STOMP 1.2"]
    sock.close()


def test_web_stomp_never_connects_implicitly(served: tuple[Broker, Server]) -> None:
    _, server = served
    sock, ws, _ = _websocket(server, ["v12.stomp"])
    sock.sendall(ws.send(TextMessage("SEND\ndestination:/queue/q\n\nx\x00")))
    (error,) = _events(sock, ws)
    assert isinstance(error, TextMessage)
    assert error.data.startswith("ERROR\nmessage:Illegal command\n")
    sock.close()


def test_garbage_gets_an_error_frame_and_the_listener_goes_on(
        served: tuple[Broker, Server]) -> None:
    _, server = served
    client = Client(server.listener_port("stomp") or 0)
    client.send(b"\x16\x03\x01\x02\x00GARBAGE\r\x01\n\n\x00")
    error = client.read()
    assert error is not None
    assert error.header("message") == "Invalid frame"
    assert client.read() is None
    _connected(server).close()
    assert not server.errors


def test_rabbitmqctl_lists_the_stomp_channel_but_not_the_connection(tmp_path: Any,
                                                                    monkeypatch: Any) -> None:
    """As RabbitMQ 3.10.8 (checked live): a STOMP connection is a direct one, which
    ``list_connections`` leaves out (``list_stomp_connections`` is the plugin's own listing);
    its channel is a channel like any other."""
    import io

    from embroker.control._ctl import run
    from embroker.control._node import Node

    monkeypatch.setenv("EMBROKER_NODES_DIR", str(tmp_path / "nodes"))
    broker = Broker()
    with Server(broker, listeners={"stomp": 0}) as server, \
            Node(broker, server, f"stomp-{id(tmp_path)}@localhost"):
        client = _connected(server)

        def ctl(*argv: str) -> str:
            out = io.StringIO()
            assert run("rabbitmqctl", ["-n", f"stomp-{id(tmp_path)}@localhost", *argv],
                       out=out, err=io.StringIO()) == 0
            return out.getvalue()

        assert ctl("list_connections", "user", "-s").strip() == ""
        (row,) = ctl("list_channels", "number", "user", "vhost", "-s").splitlines()
        assert row.split("\t") == ["1", "guest", "/"]
        client.close()
