"""``embroker serve`` beside a RabbitMQ (issue #34): a port the user named and cannot have gets
one clear line with the fix; a port only implied by a default never stops it from starting.

The defaults (5672, 15672) are replaced by ports each test holds or frees itself
(``serve_with_defaults``): no test binds RabbitMQ's ports or depends on who holds them."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pika

from tests.cli import interrupt, serve, serve_with_defaults


@contextmanager
def held() -> Iterator[int]:
    """A port a socket of the test listens on (taken, as RabbitMQ's would be)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def free() -> int:
    """A port nobody listens on (bound then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _started(proc: subprocess.Popen[str]) -> tuple[str, int, int]:
    """The startup line, and the AMQP and management ports it names."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(r"listening on amqp://\S+:(\d+)/ .*management API and console on "
                      r"http://127\.0\.0\.1:(\d+)/", line)
    assert found is not None, line + (proc.stderr.read() if proc.poll() is not None and
                                      proc.stderr is not None else "")
    return line, int(found[1]), int(found[2])


def _status(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/overview", timeout=5) as got:
            return int(got.status)
    except urllib.error.HTTPError as error:
        return error.code


def test_taken_default_ports_become_free_ones_and_serve_says_so() -> None:
    """``embroker serve`` beside a RabbitMQ (which holds 5672 and 15672) starts: each port
    only implied by a default is taken elsewhere, said on standard error, and the startup line
    names the ports served."""
    with held() as amqp, held() as management:
        proc = serve_with_defaults(amqp, management)
        try:
            _line, got_amqp, got_management = _started(proc)
            assert got_amqp not in (amqp, 0)
            assert got_management not in (management, 0)
            conn = pika.BlockingConnection(pika.URLParameters(
                f"amqp://guest:guest@127.0.0.1:{got_amqp}/"))
            conn.close()
            assert _status(got_management) == 401
        finally:
            _out, err = interrupt(proc)
    assert proc.returncode == 0, err
    notes = err.strip().splitlines()
    assert len(notes) == 2, err
    assert f"port {amqp} on 127.0.0.1 is in use" in notes[0]
    assert f"AMQP is served on port {got_amqp} instead" in notes[0]
    assert "--port N" in notes[0]
    assert f"port {management} on 127.0.0.1 is in use" in notes[1]
    assert f"the management API is served on port {got_management} instead" in notes[1]
    assert "--management-port N" in notes[1]


def test_the_default_ports_free_are_served() -> None:
    amqp, management = free(), free()
    proc = serve_with_defaults(amqp, management)
    try:
        _line, got_amqp, got_management = _started(proc)
        assert (got_amqp, got_management) == (amqp, management)
    finally:
        _out, err = interrupt(proc)
    assert err == ""


def test_another_amqp_port_implies_a_free_management_port() -> None:
    """``embroker serve --port 5673``, the natural way to run next to a RabbitMQ: the
    management API does not claim 15672 (free or not), it takes a free port."""
    management = free()
    proc = serve_with_defaults(free(), management, "--port", "0")
    try:
        _line, _amqp, got_management = _started(proc)
        assert got_management != management
        assert _status(got_management) == 401
    finally:
        _out, err = interrupt(proc)
    assert err == ""


def test_a_management_port_the_user_named_must_be_had() -> None:
    with held() as management:
        proc = serve_with_defaults(free(), free(), "--management-port", str(management))
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    (line,) = err.strip().splitlines()
    assert f"port {management} on 127.0.0.1 is in use" in line
    assert "--management-port 0" in line


def test_an_amqp_port_the_user_named_must_be_had_even_rabbitmq_s() -> None:
    with held() as amqp:
        proc = serve_with_defaults(amqp, free(), "--port", str(amqp))
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    (line,) = err.strip().splitlines()
    assert f"port {amqp} on 127.0.0.1 is in use" in line
    assert "--port 0" in line


def test_a_stream_or_amqp10_port_that_is_taken_names_its_own_option() -> None:
    for option in ("--stream-port", "--amqp10-port"):
        with held() as port:
            result = subprocess.run(
                [sys.executable, "-m", "embroker", "serve", "--host", "127.0.0.1", "--port",
                 "0", "--no-management", option, str(port)],
                capture_output=True, text=True, timeout=30, check=False)
        assert result.returncode == 1
        (line,) = result.stderr.strip().splitlines()
        assert f"port {port} on 127.0.0.1 is in use" in line
        assert f"choose another with {option} N, or {option} 0 for any free port" in line


def test_the_startup_line_names_users_but_no_password() -> None:
    proc = serve("--user", "app:s3cret", "--amqp10-port", "0", "--no-default-user")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "users: app;" in line
        assert "s3cret" not in line
        assert "amqp://app@127.0.0.1:" in line
    finally:
        out, err = interrupt(proc)
    assert "s3cret" not in out + err


def test_serve_takes_rabbitmqs_tls_options_and_names_a_file_it_cannot_use(
        tmp_path: Path) -> None:
    import ssl

    import trustme

    ca = trustme.CA()
    leaf = ca.issue_cert("localhost", "127.0.0.1")
    leaf.cert_chain_pems[0].write_to_path(str(tmp_path / "server.pem"))
    leaf.private_key_pem.write_to_path(str(tmp_path / "server.key"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    proc = serve("--no-management", "--tls-port", "0", "--certfile", str(tmp_path / "server.pem"),
                 "--keyfile", str(tmp_path / "server.key"), "--tls-version", "tlsv1.3")
    try:
        assert proc.stdout is not None
        found = re.search(r"amqps://guest:guest@127\.0\.0\.1:(\d+)/", proc.stdout.readline())
        assert found is not None
        context = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
        with socket.create_connection(("127.0.0.1", int(found[1])), timeout=5) as raw, \
                context.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version() == "TLSv1.3"
            tls.sendall(b"AMQP\x00\x00\x09\x01")
            assert tls.recv(7)[:1] == b"\x01"  # connection.start, over TLS
    finally:
        interrupt(proc)
    for args, says in ((("--tls-port", "0"), "a TLS port needs a certificate"),
                       (("--tls-port", "0", "--certfile", str(tmp_path / "none.pem")),
                        f"cannot use the TLS files {tmp_path / 'none.pem'}")):
        failed = serve("--no-management", *args)
        _out, err = failed.communicate(timeout=30)
        assert failed.returncode == 1
        (line,) = err.strip().splitlines()
        assert says in line
