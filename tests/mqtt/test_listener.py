"""MQTT and Web-MQTT served by the listener, through the seams every protocol plugs into:
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
from wsproto.events import AcceptConnection, BytesMessage, Request

from embroker.model import Broker
from embroker.server import Server

from .wire import connect, parse, publish, subscribe


@pytest.fixture
def served() -> Iterator[tuple[Broker, Server]]:
    broker = Broker()
    with Server(broker, listeners={"mqtt": 0, "web_mqtt": 0}, management_port=0) as server:
        yield broker, server


def _client(server: Server, client_id: str = "c1") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.listener_port("mqtt") or 0), timeout=5)
    sock.sendall(connect(client_id))
    assert sock.recv(4) == b"\x20\x02\x00\x00"
    return sock


def _read(sock: socket.socket) -> list[tuple[str, Any]]:
    data = sock.recv(65536)
    return parse(data) if data else [("closed", None)]


def test_rabbitmq_diagnostics_names_the_mqtt_listeners(served: tuple[Broker, Server]) -> None:
    _, server = served
    protocols = [protocol for protocol, _ in server.listeners()]
    assert "mqtt" in protocols
    assert "http/web-mqtt" in protocols


def test_the_management_api_lists_an_mqtt_connection_as_a_direct_one(
        served: tuple[Broker, Server]) -> None:
    _, server = served
    sock = _client(server, "listed")
    request = urllib.request.Request(server.management_url + "api/connections", headers={
        "Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()})
    (listed,) = json.load(urllib.request.urlopen(request))
    assert (listed["protocol"], listed["type"], listed["channels"]) == ("MQTT 3.1.1", "direct", 1)
    assert listed["client_properties"] == {"product": "MQTT client", "client_id": "listed"}
    sock.close()


def test_an_alarm_stops_reading_mqtt_connections_until_it_clears(
        served: tuple[Broker, Server]) -> None:
    broker, server = served
    subscriber = _client(server, "sub")
    subscriber.sendall(subscribe(1, ("a", 0)))
    assert _read(subscriber) == [("SUBACK", (1, [0]))]
    publisher = _client(server, "pub")
    broker.set_alarm("memory")
    publisher.sendall(publish("a", b"held"))
    subscriber.settimeout(0.3)
    with pytest.raises(TimeoutError):
        subscriber.recv(100)
    broker.clear_alarm("memory")
    subscriber.settimeout(5)
    assert _read(subscriber) == [("PUBLISH", ("a", b"held", 0, False, False, None))]


def test_a_fault_ends_an_mqtt_connection_without_a_packet(served: tuple[Broker, Server]) -> None:
    broker, server = served
    sock = _client(server)
    (listed,) = server.connections
    listed.close(320, "test fault")
    assert sock.recv(10) == b""
    assert not broker.connections
    assert "c1" not in broker.client_ids


def test_web_mqtt_speaks_binary_frames_with_subprotocol_mqtt(
        served: tuple[Broker, Server]) -> None:
    broker, server = served
    sock = socket.create_connection(("127.0.0.1", server.listener_port("web_mqtt") or 0),
                                    timeout=5)
    ws = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    sock.sendall(ws.send(Request(host="127.0.0.1", target="/ws", subprotocols=["mqtt"])))

    def events() -> list[Any]:
        while True:
            ws.receive_data(sock.recv(65536))
            found = list(ws.events())
            if found:
                return found

    (accepted,) = events()
    assert isinstance(accepted, AcceptConnection)
    assert accepted.subprotocol == "mqtt"
    sock.sendall(ws.send(BytesMessage(connect("web"))))
    (connack,) = events()
    assert isinstance(connack, BytesMessage)
    assert bytes(connack.data) == b"\x20\x02\x00\x00"
    assert [c.kind.protocol for c in broker.connections.values()] == ["Web MQTT 3.1.1"]
    sock.close()
