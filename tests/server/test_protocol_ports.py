"""The listener's part of issue 46: ports of registered kinds over TLS (``tls_listeners=``,
``open_listener(kind, port, tls=True)``), the settings each kind reads by its name
(``Server.port_settings``), and the STOMP and Web-STOMP ports' numbers, URLs and listings
(``stomp``, ``stomp/ssl``, ``http/web-stomp``, ``https/web-stomp``), through ``Server`` and
``Broker.serve``, and MQTT's (issue 47: ``mqtt``, ``mqtt/ssl``, ``http/web-mqtt``,
``https/web-mqtt``) alike. A tiny kind of the test's own says what its connections were given; the
STOMP kinds' own ports are checked to listen (their protocol is tested in tests/stomp)."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from embroker import Broker
from embroker._listener_plugins import PROTOCOLS, ListenerPlugin
from embroker._transport import Accepted, PortKind, register_port_kind, unregister_port_kind
from embroker.errors import InternalError
from embroker.mqtt import MqttSettings
from embroker.server import Server
from embroker.stomp._settings import StompSettings
from embroker.tls import TLSOptions


class Told:
    """A connection that answers its first bytes with what it was given: the settings of
    its kind (``port_settings["told"]``) and whether it came over TLS."""

    blocked = False
    failure: BaseException | None = None

    def __init__(self, accepted: Accepted) -> None:
        settings = accepted.listener.port_settings.get("told")
        self._answer = f"{settings!r} tls={accepted.tls is not None}\n".encode()
        self._out = b""
        self.should_close = False

    def receive_data(self, data: bytes) -> None:
        if not data:
            self.should_close = True
        elif self._answer:
            self._out, self._answer = self._answer, b""

    def data_to_send(self) -> bytes:
        out, self._out = self._out, b""
        return out

    @property
    def has_output(self) -> bool:
        return bool(self._out) or self.should_close

    def tick(self) -> float | None:
        return None

    def internal_error(self, error: InternalError) -> None:
        self.should_close = True

    def connection_lost(self) -> None:
        self.should_close = True


TOLD = PortKind("told", Told, protocol="told", tls_protocol="told/ssl", plugin="told_plugin")


@pytest.fixture
def told() -> Iterator[None]:
    register_port_kind(TOLD)
    yield
    unregister_port_kind("told")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[TLSOptions, ssl.SSLContext]:
    where: Path = tmp_path_factory.mktemp("stomp-tls")
    ca = trustme.CA()
    leaf = ca.issue_cert("localhost", "127.0.0.1")
    leaf.private_key_and_cert_chain_pem.write_to_path(str(where / "server.pem"))
    ca.cert_pem.write_to_path(str(where / "ca.pem"))
    return (TLSOptions(certfile=str(where / "server.pem")),
            ssl.create_default_context(cafile=str(where / "ca.pem")))


def _listened_on(port: int) -> None:
    """Someone listens on ``port``: it cannot be bound (no connection is made: the STOMP
    connection's own tests connect)."""
    with socket.socket() as sock, pytest.raises(OSError, match="in use"):
        sock.bind(("127.0.0.1", port))


def _ask(port: int, context: ssl.SSLContext | None = None) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        sock: Any = raw if context is None else context.wrap_socket(raw,
                                                                    server_hostname="localhost")
        sock.sendall(b"?")
        answer = b""
        while not answer.endswith(b"\n"):
            chunk = sock.recv(1024)
            assert chunk, answer
            answer += chunk
        return answer.decode().strip()


def test_a_registered_kind_serves_tls_ports_and_reads_its_settings_by_name(
        told: None, pki: tuple[TLSOptions, ssl.SSLContext]) -> None:
    options, client = pki
    with Server(Broker(), listeners={"told": 0}, tls_listeners={"told": 0}, tls=options,
                port_settings={"told": "settings of told"}) as server:
        plain, secure = server.listener_port("told"), server.listener_port("told", tls=True)
        assert plain is not None
        assert secure is not None
        assert plain != secure
        assert _ask(plain) == "'settings of told' tls=False"
        assert _ask(secure, client) == "'settings of told' tls=True"
        server.port_settings["told"] = "changed"  # (read as each connection is accepted)
        assert _ask(secure, client) == "'changed' tls=True"
        assert ("told", plain) in server.listeners()
        assert ("told/ssl", secure) in server.listeners()
        server.close_listener("told")
        assert server.listener_port("told") is server.listener_port("told", tls=True) is None
        again = server.open_listener("told", 0, tls=True)
        assert _ask(again, client) == "'changed' tls=True"
        assert server.errors == []


def test_a_tls_port_of_a_registered_kind_needs_tls_settings_and_a_kind(told: None) -> None:
    with pytest.raises(ValueError, match="TLS settings"):
        Server(Broker(), tls_listeners={"told": 0})
    with pytest.raises(ValueError, match="tls_listeners: 'nothing' is no kind of port"):
        Server(Broker(), tls_listeners={"nothing": 0})
    with pytest.raises(ValueError, match="tls_listeners: 'amqp' is no kind of port"):
        Server(Broker(), tls_listeners={"amqp": 0})
    server = Server(Broker())
    assert server.port_settings == {}
    server.stop()


#: A setting of each plugin protocol other than its default, by port kind.
SETTINGS: dict[str, Any] = {"stomp": StompSettings(default_user=None),
                            "mqtt": MqttSettings(default_user=None)}
each = pytest.mark.parametrize("p", PROTOCOLS, ids=[p.kind for p in PROTOCOLS])


def _serve(**given: Any) -> Server:
    """``Broker().serve(...)``, the ports named by key (``mqtt_tls_port=0``)."""
    return Broker().serve(**given)


@each
def test_broker_serve_opens_the_protocols_ports_and_names_them(
        p: ListenerPlugin, pki: tuple[TLSOptions, ssl.SSLContext]) -> None:
    options, client = pki
    settings = SETTINGS[p.kind]
    with _serve(tls=options, **{f"{key}_port": 0 for key, _k, _t in p.kinds},
                        port_settings={p.kind: settings}) as server:
        ports = tuple(getattr(server, f"{key}_port") for key, _k, _t in p.kinds)
        assert None not in ports
        assert len(set(ports)) == 4
        assert ports == tuple(server.listener_port(kind, tls=tls) for _key, kind, tls in p.kinds)
        plain, secure, web, web_secure = ports
        urls = tuple(getattr(server, f"{key}_url") for key, _k, _t in p.kinds)
        assert urls == (f"{p.scheme}://127.0.0.1:{plain}", f"{p.tls_scheme}://127.0.0.1:{secure}",
                        f"ws://127.0.0.1:{web}/ws", f"wss://127.0.0.1:{web_secure}/ws")
        assert server.port_settings[p.kind] is settings
        listed = dict(server.listeners())
        assert tuple(listed[name] for name in p.protocols) == ports
        for port in ports:
            _listened_on(port)
        with socket.create_connection(("127.0.0.1", web_secure), timeout=5) as raw, \
                client.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version() is not None  # wss: TLS first, the WebSocket inside
    assert server.errors == []


def test_the_mqtt_names() -> None:
    with Broker().serve(mqtt_port=0, web_mqtt_port=0) as server:
        assert server.mqtt_url == f"mqtt://127.0.0.1:{server.mqtt_port}"
        assert server.web_mqtt_url == f"ws://127.0.0.1:{server.web_mqtt_port}/ws"
        assert (server.mqtt_tls_url, server.web_mqtt_tls_url) == (None, None)
        assert server.stomp_port is None


@each
def test_no_port_of_a_protocol_unless_asked_for(p: ListenerPlugin) -> None:
    with Broker().serve() as server:
        assert tuple(getattr(server, f"{key}_port") for key, _k, _t in p.kinds) == (None,) * 4
        assert tuple(getattr(server, f"{key}_url") for key, _k, _t in p.kinds) == (None,) * 4
        opened = server.open_listener(p.kind, 0)
        assert getattr(server, f"{p.kind}_port") == opened
        assert getattr(server, f"{p.kind}_url") == f"{p.scheme}://127.0.0.1:{opened}"


@each
def test_the_protocols_ports_count_in_max_connections(p: ListenerPlugin) -> None:
    with _serve(**{f"{p.kind}_port": 0, f"{p.web_kind}_port": 0},
                        max_connections={p.kind: 3, p.web_kind: 2}) as server:
        assert server.max_connections[p.kind] == 3
        assert server.max_connections[p.web_kind] == 2


def test_stop_app_and_start_app_reopen_a_kinds_tls_port_on_its_number(
        told: None, pki: tuple[TLSOptions, ssl.SSLContext]) -> None:
    options, client = pki
    with Server(Broker(), tls_listeners={"told": 0}, tls=options,
                port_settings={"told": 1}) as server:
        secure = server.listener_port("told", tls=True)
        assert secure is not None
        server.stop_app()
        with pytest.raises(ConnectionRefusedError):
            _ask(secure, client)
        server.start_app()
        assert server.listener_port("told", tls=True) == secure
        assert _ask(secure, client) == "1 tls=True"
