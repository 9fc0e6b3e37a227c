"""``embroker serve``'s STOMP and Web-STOMP ports (issue 46): RabbitMQ's 61613 and 15674 by
default, taken only if free (or when the user named them), as 15672 is; STOMP over TLS and
Web-STOMP over TLS when asked for. The defaults are replaced by ports each test holds or frees
itself (``serve_with_defaults``): no test binds RabbitMQ's ports."""

from __future__ import annotations

import re
import socket
import ssl
import subprocess
from pathlib import Path

import pytest

from tests.cli import interrupt, serve, serve_with_defaults

from .test_cli_ports import free, held

_STOMP = re.compile(r"; STOMP on stomp://127\.0\.0\.1:(\d+), Web-STOMP on "
                    r"ws://127\.0\.0\.1:(\d+)/ws;")


def _line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "listening on" in line, line + (proc.stderr.read() if proc.poll() is not None and
                                           proc.stderr is not None else "")
    return line


def _accepts(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass


def test_the_default_stomp_ports_free_are_served() -> None:
    stomp, web_stomp = free(), free()
    proc = serve_with_defaults(free(), free(), stomp=stomp, web_stomp=web_stomp)
    try:
        found = _STOMP.search(_line(proc))
        assert found is not None
        assert (int(found[1]), int(found[2])) == (stomp, web_stomp)
        _accepts(stomp)
        _accepts(web_stomp)
    finally:
        _out, err = interrupt(proc)
    assert err == ""


def test_taken_default_stomp_ports_become_free_ones_and_serve_says_so() -> None:
    with held() as stomp, held() as web_stomp:
        proc = serve_with_defaults(free(), free(), stomp=stomp, web_stomp=web_stomp)
        try:
            found = _STOMP.search(_line(proc))
            assert found is not None
            got_stomp, got_web_stomp = int(found[1]), int(found[2])
            assert got_stomp not in (stomp, 0)
            assert got_web_stomp not in (web_stomp, 0)
            _accepts(got_stomp)
        finally:
            _out, err = interrupt(proc)
    assert err.strip().splitlines() == [
        f"embroker: port {stomp} on 127.0.0.1 is in use (another broker, perhaps RabbitMQ, is "
        f"listening there): STOMP is served on port {got_stomp} instead (--stomp-port N "
        "chooses)",
        f"embroker: port {web_stomp} on 127.0.0.1 is in use (another broker, perhaps RabbitMQ, "
        f"is listening there): Web-STOMP is served on port {got_web_stomp} instead "
        "(--web-stomp-port N chooses)"]


def test_another_amqp_port_implies_free_stomp_ports() -> None:
    stomp, web_stomp = free(), free()
    proc = serve_with_defaults(free(), free(), "--port", "0", stomp=stomp, web_stomp=web_stomp)
    try:
        found = _STOMP.search(_line(proc))
        assert found is not None
        assert int(found[1]) != stomp
        assert int(found[2]) != web_stomp
    finally:
        _out, err = interrupt(proc)
    assert err == ""


@pytest.mark.parametrize("option", ["--stomp-port", "--web-stomp-port"])
def test_a_stomp_port_the_user_named_must_be_had(option: str) -> None:
    with held() as port:
        proc = serve_with_defaults(free(), free(), option, str(port))
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    (line,) = err.strip().splitlines()
    assert f"port {port} on 127.0.0.1 is in use" in line
    assert f"choose another with {option} N, {option} 0 for any free port, or --no-" in line


def test_no_stomp_and_no_web_stomp_serve_neither() -> None:
    proc = serve("--no-management", "--no-stomp", "--no-web-stomp")
    try:
        line = _line(proc)
    finally:
        interrupt(proc)
    assert "STOMP" not in line


def test_stomp_and_web_stomp_over_tls(tmp_path: Path) -> None:
    import trustme

    ca = trustme.CA()
    leaf = ca.issue_cert("localhost", "127.0.0.1")
    leaf.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "server.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    proc = serve("--no-management", "--stomp-tls-port", "0", "--web-stomp-tls-port", "0",
                 "--certfile", str(tmp_path / "server.pem"))
    try:
        line = _line(proc)
        found = re.search(r"STOMP over TLS on stomp\+ssl://127\.0\.0\.1:(\d+), Web-STOMP on "
                          r"ws://\S+/ws, Web-STOMP over TLS on wss://127\.0\.0\.1:(\d+)/ws;", line)
        assert found is not None, line
        context = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
        with socket.create_connection(("127.0.0.1", int(found[1])), timeout=5) as raw, \
                context.wrap_socket(raw, server_hostname="localhost") as tls:
            tls.sendall(b"CONNECT\nlogin:guest\npasscode:guest\n\n\x00")
            assert tls.recv(4096).startswith(b"CONNECTED\n")  # STOMP over TLS, end to end
        with socket.create_connection(("127.0.0.1", int(found[2])), timeout=5) as raw, \
                context.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version() is not None  # the wss handshake, on the server's certificate
    finally:
        interrupt(proc)
    for option in ("--stomp-tls-port", "--web-stomp-tls-port"):
        failed = serve("--no-management", option, "0")
        _out, err = failed.communicate(timeout=30)
        assert failed.returncode == 1
        (said,) = err.strip().splitlines()
        assert "a TLS port needs a certificate" in said
