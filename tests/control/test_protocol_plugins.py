"""``rabbitmq-plugins enable rabbitmq_stomp`` / ``rabbitmq_web_stomp`` (issue 46),
``rabbitmq_mqtt`` / ``rabbitmq_web_mqtt`` (issue 47) on a running node: the protocol's
listeners (its Web- ones) open on their configured ports at once, over TLS too when
configured, ``rabbitmq-diagnostics listeners`` names them as RabbitMQ 3.10.8 does (``stomp``:
STOMP, ``stomp/ssl``, ``http/web-stomp``, ``https/web-stomp``; ``mqtt``: MQTT, ``mqtt/ssl``,
``http/web-mqtt``: MQTT over WebSockets, ``https/web-mqtt``), and ``disable`` closes them;
the Web- plugin brings the protocol's, which it depends on. Ports 0 here (any free port)."""

from __future__ import annotations

import io
import os
import socket
from pathlib import Path

import pytest
import trustme

from embroker import Broker
from embroker._listener_plugins import PROTOCOLS, ListenerPlugin
from embroker.control._node import Node
from embroker.control._plugins_cli import main as plugins
from embroker.server import Server
from embroker.tls import TLSOptions

from .test_ctl import NODE, ctl

ALL_ZERO = {plugin: 0 for p in PROTOCOLS for plugin in (p.plugin, p.web_plugin)}
each = pytest.mark.parametrize("p", PROTOCOLS, ids=[p.kind for p in PROTOCOLS])


@pytest.fixture(autouse=True)
def _nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBROKER_NODES_DIR", str(tmp_path / "nodes"))
    monkeypatch.setenv("RABBITMQ_NODENAME", NODE)


@pytest.fixture
def environ(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "enabled_plugins"
    path.write_text("[].\n")
    return {**os.environ, "RABBITMQ_ENABLED_PLUGINS_FILE": str(path)}


def _plugins(environ: dict[str, str], *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = plugins(list(argv), out=out, err=err, environ=environ)
    return code, out.getvalue(), err.getvalue()


def _listeners() -> dict[str, tuple[int, str]]:
    """``rabbitmq-diagnostics -q listeners``: protocol -> (port, purpose)."""
    code, out, _err = ctl("-q", "listeners", tool="rabbitmq-diagnostics")
    assert code == 0
    found = {}
    for line in out.splitlines():
        fields = dict(part.split(": ", 1) for part in line.split(", ", 3))
        found[fields["protocol"]] = (int(fields["port"]), fields["purpose"])
    return found


def _ports(server: Server, p: ListenerPlugin) -> tuple[int | None, ...]:
    """The protocol's ports: plain, TLS, Web-, Web- over TLS."""
    return tuple(server.listener_port(kind, tls=tls) for _key, kind, tls in p.kinds)


@each
def test_enabling_the_plugins_opens_their_listeners_and_disable_closes_them(
        tmp_path: Path, environ: dict[str, str], p: ListenerPlugin) -> None:
    broker = Broker()
    path = Path(environ["RABBITMQ_ENABLED_PLUGINS_FILE"])
    with Server(broker) as server, Node(broker, server, NODE, enabled_plugins_file=path,
                                        plugin_ports=ALL_ZERO):
        assert _ports(server, p) == (None,) * 4
        code, out, _err = _plugins(environ, "enable", p.web_plugin)
        assert code == 0
        # (the Web- plugin depends on the protocol's: RabbitMQ starts both)
        assert out.endswith(f"  {p.plugin}\n  {p.web_plugin}\n\nstarted 2 plugins.\n")
        plain, _tls, web, _web_tls = _ports(server, p)
        assert plain is not None
        assert web is not None
        listed = _listeners()
        assert listed[p.protocols[0]] == (plain, p.purposes[0])
        assert listed[p.protocols[2]] == (web, p.purposes[2])
        for port in (plain, web):
            with socket.socket() as sock, pytest.raises(OSError, match="in use"):
                sock.bind(("127.0.0.1", port))
        assert f"[E*] {p.web_plugin}" in ctl("list", tool="rabbitmq-plugins")[1]
        code, out, _err = _plugins(environ, "disable", p.web_plugin)
        assert code == 0
        assert server.listener_port(p.web_kind) is None
        assert p.protocols[2] not in _listeners()
        assert _plugins(environ, "disable", p.plugin)[0] == 0
        assert server.listener_port(p.kind) is None
        assert p.protocols[0] not in _listeners()
        assert server.errors == []


def test_the_mqtt_listeners_as_rabbitmq_names_them(environ: dict[str, str]) -> None:
    """The reference's ``rabbitmq-diagnostics -q listeners`` with its MQTT plugins on:
    ``protocol: mqtt, purpose: MQTT`` and ``protocol: http/web-mqtt, purpose: MQTT over
    WebSockets`` (RabbitMQ 3.10.8, seen on the reference)."""
    broker = Broker()
    path = Path(environ["RABBITMQ_ENABLED_PLUGINS_FILE"])
    with Server(broker) as server, Node(broker, server, NODE, enabled_plugins_file=path,
                                        plugin_ports=ALL_ZERO):
        assert _plugins(environ, "enable", "rabbitmq_mqtt", "rabbitmq_web_mqtt")[0] == 0
        listed = _listeners()
        assert listed["mqtt"] == (server.mqtt_port, "MQTT")
        assert listed["http/web-mqtt"] == (server.web_mqtt_port, "MQTT over WebSockets")


@each
def test_over_tls_they_are_listed_as_rabbitmq_lists_them(
        tmp_path: Path, environ: dict[str, str], p: ListenerPlugin) -> None:
    ca = trustme.CA()
    ca.issue_cert("localhost").private_key_and_cert_chain_pem.write_to_path(
        str(tmp_path / "server.pem"))
    broker = Broker()
    path = Path(environ["RABBITMQ_ENABLED_PLUGINS_FILE"])
    with Server(broker, tls=TLSOptions(certfile=str(tmp_path / "server.pem"))) as server, \
            Node(broker, server, NODE, enabled_plugins_file=path, plugin_ports=ALL_ZERO,
                 plugin_tls_ports=ALL_ZERO):
        assert _plugins(environ, "enable", p.plugin, p.web_plugin)[0] == 0
        _plain, tls, _web, web_tls = _ports(server, p)
        listed = _listeners()
        assert listed[p.protocols[1]] == (tls, p.purposes[1])
        assert listed[p.protocols[3]] == (web_tls, p.purposes[3])
        assert p.purposes[1] == f"{p.title} over TLS"
        assert _plugins(environ, "disable", p.plugin, p.web_plugin)[0] == 0
        assert _ports(server, p) == (None,) * 4


@each
def test_a_port_that_is_taken_is_refused_and_nothing_opens(
        environ: dict[str, str], p: ListenerPlugin) -> None:
    """(As the reference's rabbitmq_mqtt on 1883 when a mosquitto holds it.)"""
    broker = Broker()
    path = Path(environ["RABBITMQ_ENABLED_PLUGINS_FILE"])
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        with Server(broker) as server, Node(broker, server, NODE, enabled_plugins_file=path,
                                            plugin_ports={p.plugin: taken, p.web_plugin: 0}):
            code, _out, err = _plugins(environ, "enable", p.web_plugin)
            assert code == 70
            assert err.startswith(f"{{:case_clause, {{:could_not_start, :{p.plugin}, ")
            assert f"{{:listen_error, {{:acceptor, {{127, 0, 0, 1}}, {taken}}}, :eaddrinuse}}" \
                in err
            assert f"{{:{p.application}, :start, [:normal, []]}}" in err
            assert _ports(server, p) == (None,) * 4
            assert path.read_text() == "[].\n"
