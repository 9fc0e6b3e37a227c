"""``embroker serve``'s plugin protocol ports, STOMP's (issue 46) and MQTT's (issue 47), one
table (``embroker._listener_plugins.PROTOCOLS``): RabbitMQ's 61613 and 15674 (1883 and
15675) by default, taken only if free (or when the user named them), as 15672 is; over TLS
when asked for. The defaults are replaced by ports each test holds or frees itself
(``serve_with_defaults``): no test binds RabbitMQ's ports (nor the mosquitto's 1883)."""

from __future__ import annotations

import re
import socket
import ssl
import subprocess
from pathlib import Path

import pytest

from embroker._listener_plugins import PROTOCOLS, ListenerPlugin
from tests.cli import interrupt, serve, serve_with_defaults

from .test_cli_ports import free, held

#: What each protocol's client says first, and how its server's answer starts.
HELLO = {
    "stomp": (b"CONNECT\nlogin:guest\npasscode:guest\n\n\x00", b"CONNECTED\n"),
    # CONNECT: MQTT 3.1.1, clean session, keep-alive 60 s, client id "t", no credentials
    # (mqtt.allow_anonymous: guest); CONNACK, accepted.
    "mqtt": (b"\x10\x0d\x00\x04MQTT\x04\x02\x00\x3c\x00\x01t", b"\x20\x02\x00\x00"),
}
#: The WebSocket subprotocol each Web- plugin answers with.
SUBPROTOCOL = {"stomp": "v12.stomp", "mqtt": "mqtt"}

each = pytest.mark.parametrize("p", PROTOCOLS, ids=[p.kind for p in PROTOCOLS])


def _ports(p: ListenerPlugin, line: str) -> tuple[int, int]:
    found = re.search(rf"; {p.title} on {p.scheme}://127\.0\.0\.1:(\d+), {p.web_title} on "
                      rf"ws://127\.0\.0\.1:(\d+)/ws[;)]", line)
    assert found is not None, line
    return int(found[1]), int(found[2])


def _line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "listening on" in line, line + (proc.stderr.read() if proc.poll() is not None and
                                           proc.stderr is not None else "")
    return line


def _hello(p: ListenerPlugin, sock: socket.socket | ssl.SSLSocket) -> None:
    """The protocol's first exchange, end to end."""
    ask, answer = HELLO[p.kind]
    sock.sendall(ask)
    got = b""
    while len(got) < len(answer):
        chunk = sock.recv(4096)
        assert chunk, got
        got += chunk
    assert got.startswith(answer), got


def _websocket(port: int, subprotocol: str) -> None:
    """A WebSocket handshake at /ws asking for ``subprotocol``: answered 101 with it."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {subprotocol}\r\n"
                     "\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            assert chunk, head
            head += chunk
    lines = head.decode().lower().split("\r\n")
    assert lines[0].startswith("http/1.1 101"), head
    assert f"sec-websocket-protocol: {subprotocol}" in lines, head


@each
def test_the_default_ports_free_are_served_end_to_end(p: ListenerPlugin) -> None:
    plain, web = free(), free()
    proc = serve_with_defaults(free(), free(), **{p.kind: plain, p.web_kind: web})
    try:
        assert _ports(p, _line(proc)) == (plain, web)
        with socket.create_connection(("127.0.0.1", plain), timeout=5) as sock:
            _hello(p, sock)
        _websocket(web, SUBPROTOCOL[p.kind])
    finally:
        _out, err = interrupt(proc)
    assert err == ""


@each
def test_taken_default_ports_become_free_ones_and_serve_says_so(p: ListenerPlugin) -> None:
    with held() as plain, held() as web:
        proc = serve_with_defaults(free(), free(), **{p.kind: plain, p.web_kind: web})
        try:
            got_plain, got_web = _ports(p, _line(proc))
            assert got_plain not in (plain, 0)
            assert got_web not in (web, 0)
            with socket.create_connection(("127.0.0.1", got_plain), timeout=5) as sock:
                _hello(p, sock)
        finally:
            _out, err = interrupt(proc)
    option, web_option = f"--{p.kind}-port", f"--{p.web_kind.replace('_', '-')}-port"
    assert err.strip().splitlines() == [
        f"embroker: port {plain} on 127.0.0.1 is in use (another broker, perhaps RabbitMQ, is "
        f"listening there): {p.title} is served on port {got_plain} instead ({option} N "
        "chooses)",
        f"embroker: port {web} on 127.0.0.1 is in use (another broker, perhaps RabbitMQ, "
        f"is listening there): {p.web_title} is served on port {got_web} instead "
        f"({web_option} N chooses)"]


@each
def test_another_amqp_port_implies_free_ports(p: ListenerPlugin) -> None:
    plain, web = free(), free()
    proc = serve_with_defaults(free(), free(), "--port", "0", **{p.kind: plain, p.web_kind: web})
    try:
        got_plain, got_web = _ports(p, _line(proc))
        assert got_plain != plain
        assert got_web != web
    finally:
        _out, err = interrupt(proc)
    assert err == ""


@pytest.mark.parametrize("option", [f"--{kind.replace('_', '-')}-port"
                                    for p in PROTOCOLS for kind in (p.kind, p.web_kind)])
def test_a_port_the_user_named_must_be_had(option: str) -> None:
    with held() as port:
        proc = serve_with_defaults(free(), free(), option, str(port))
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    (line,) = err.strip().splitlines()
    assert f"port {port} on 127.0.0.1 is in use" in line
    assert f"choose another with {option} N, {option} 0 for any free port, or --no-" in line


@each
def test_no_x_and_no_web_x_serve_neither(p: ListenerPlugin) -> None:
    web = p.web_kind.replace("_", "-")
    proc = serve("--no-management", f"--no-{p.kind}", f"--no-{web}")
    try:
        line = _line(proc)
    finally:
        interrupt(proc)
    assert f"{p.title} on" not in line
    assert f"{p.web_title} on" not in line
    others = [q for q in PROTOCOLS if q is not p]
    assert all(f"; {q.title} on" in line for q in others), line  # (the others still are)


@each
def test_over_tls_end_to_end(p: ListenerPlugin, tmp_path: Path) -> None:
    import trustme

    ca = trustme.CA()
    leaf = ca.issue_cert("localhost", "127.0.0.1")
    leaf.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "server.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    tls_option = f"--{p.kind}-tls-port"
    web_tls_option = f"--{p.web_kind.replace('_', '-')}-tls-port"
    proc = serve("--no-management", tls_option, "0", web_tls_option, "0",
                 "--certfile", str(tmp_path / "server.pem"))
    try:
        line = _line(proc)
        found = re.search(rf"{p.title} over TLS on {re.escape(p.tls_scheme)}://127\.0\.0\.1:"
                          rf"(\d+), {p.web_title} on ws://\S+/ws, {p.web_title} over TLS on "
                          r"wss://127\.0\.0\.1:(\d+)/ws[;)]", line)
        assert found is not None, line
        context = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
        with socket.create_connection(("127.0.0.1", int(found[1])), timeout=5) as raw, \
                context.wrap_socket(raw, server_hostname="localhost") as tls:
            _hello(p, tls)  # over TLS, end to end
        with socket.create_connection(("127.0.0.1", int(found[2])), timeout=5) as raw, \
                context.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version() is not None  # the wss handshake, on the server's certificate
    finally:
        interrupt(proc)
    for option in (tls_option, web_tls_option):
        failed = serve("--no-management", option, "0")
        _out, err = failed.communicate(timeout=30)
        assert failed.returncode == 1
        (said,) = err.strip().splitlines()
        assert "a TLS port needs a certificate" in said
