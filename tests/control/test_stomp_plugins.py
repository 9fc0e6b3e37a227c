"""``rabbitmq-plugins enable rabbitmq_stomp`` / ``rabbitmq_web_stomp`` on a running node
(issue 46): the STOMP (Web-STOMP) listeners open on their configured ports at once, over TLS
too when configured, ``rabbitmq-diagnostics listeners`` names them as RabbitMQ 3.10.8 does
(``stomp``: STOMP, ``stomp/ssl``, ``http/web-stomp``, ``https/web-stomp``), and ``disable``
closes them; Web-STOMP brings STOMP, which it depends on. Ports 0 here (any free port)."""

from __future__ import annotations

import io
import os
import socket
from pathlib import Path

import pytest
import trustme

from embroker import Broker
from embroker.control._node import Node
from embroker.control._plugins_cli import main as plugins
from embroker.server import Server
from embroker.tls import TLSOptions

from .test_ctl import NODE, ctl

ALL_ZERO = {"rabbitmq_stomp": 0, "rabbitmq_web_stomp": 0}


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


def test_enabling_stomp_and_web_stomp_opens_their_listeners_and_disable_closes_them(
        tmp_path: Path, environ: dict[str, str]) -> None:
    broker = Broker()
    path = Path(environ["RABBITMQ_ENABLED_PLUGINS_FILE"])
    with Server(broker) as server, Node(broker, server, NODE, enabled_plugins_file=path,
                                        plugin_ports=ALL_ZERO):
        assert (server.stomp_port, server.web_stomp_port) == (None, None)
        code, out, _err = _plugins(environ, "enable", "rabbitmq_web_stomp")
        assert code == 0
        # (Web-STOMP depends on STOMP: RabbitMQ starts both)
        assert out.endswith("  rabbitmq_stomp\n  rabbitmq_web_stomp\n\nstarted 2 plugins.\n")
        assert server.stomp_port is not None
        assert server.web_stomp_port is not None
        listed = _listeners()
        assert listed["stomp"] == (server.stomp_port, "STOMP")
        assert listed["http/web-stomp"] == (server.web_stomp_port, "STOMP over WebSockets")
        for port in (server.stomp_port, server.web_stomp_port):
            with socket.socket() as sock, pytest.raises(OSError, match="in use"):
                sock.bind(("127.0.0.1", port))
        assert "[E*] rabbitmq_web_stomp" in ctl("list", tool="rabbitmq-plugins")[1]
        code, out, _err = _plugins(environ, "disable", "rabbitmq_web_stomp")
        assert code == 0
        assert server.web_stomp_port is None
        assert "http/web-stomp" not in _listeners()
        assert _plugins(environ, "disable", "rabbitmq_stomp")[0] == 0
        assert server.stomp_port is None
        assert "stomp" not in _listeners()
        assert server.errors == []


def test_stomp_and_web_stomp_over_tls_are_listed_as_rabbitmq_lists_them(
        tmp_path: Path, environ: dict[str, str]) -> None:
    ca = trustme.CA()
    ca.issue_cert("localhost").private_key_and_cert_chain_pem.write_to_path(
        str(tmp_path / "server.pem"))
    broker = Broker()
    path = Path(environ["RABBITMQ_ENABLED_PLUGINS_FILE"])
    with Server(broker, tls=TLSOptions(certfile=str(tmp_path / "server.pem"))) as server, \
            Node(broker, server, NODE, enabled_plugins_file=path, plugin_ports=ALL_ZERO,
                 plugin_tls_ports=ALL_ZERO):
        assert _plugins(environ, "enable", "rabbitmq_stomp", "rabbitmq_web_stomp")[0] == 0
        listed = _listeners()
        assert listed["stomp/ssl"] == (server.stomp_tls_port, "STOMP over TLS")
        assert listed["https/web-stomp"] == (server.web_stomp_tls_port,
                                             "STOMP over WebSockets and TLS (HTTPS)")
        assert _plugins(environ, "disable", "rabbitmq_stomp", "rabbitmq_web_stomp")[0] == 0
        assert (server.stomp_tls_port, server.web_stomp_tls_port) == (None, None)


def test_a_stomp_port_that_is_taken_is_refused_and_nothing_opens(
        environ: dict[str, str]) -> None:
    broker = Broker()
    path = Path(environ["RABBITMQ_ENABLED_PLUGINS_FILE"])
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        with Server(broker) as server, Node(broker, server, NODE, enabled_plugins_file=path,
                                            plugin_ports={"rabbitmq_stomp": taken,
                                                          "rabbitmq_web_stomp": 0}):
            code, _out, err = _plugins(environ, "enable", "rabbitmq_web_stomp")
            assert code == 70
            assert err.startswith("{:case_clause, {:could_not_start, :rabbitmq_stomp, ")
            assert f"{{:listen_error, {{:acceptor, {{127, 0, 0, 1}}, {taken}}}, :eaddrinuse}}" \
                in err
            assert (server.stomp_port, server.web_stomp_port) == (None, None)
            assert path.read_text() == "[].\n"
