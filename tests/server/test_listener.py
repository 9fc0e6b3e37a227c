"""The listener: start, stop, addresses, and the command line."""

from __future__ import annotations

import socket
import subprocess
import sys

import pika
import pytest
from pika.exceptions import ConnectionClosedByBroker

from embroker import Broker
from embroker.server import PortInUse, Server
from tests.cli import interrupt, serve


def test_stop_closes_clients_with_connection_forced_and_frees_the_port(broker: Broker) -> None:
    server = broker.serve()
    conn = pika.BlockingConnection(pika.URLParameters(server.url))
    port = server.port
    server.stop()
    with pytest.raises(ConnectionClosedByBroker) as err:
        conn.process_data_events(1)
    assert err.value.reply_code == 320
    assert err.value.reply_text == (
        "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'")
    assert broker.connections == {}
    with socket.socket() as sock:  # the port is free again
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
    assert server.errors == []


def test_servers_can_start_and_stop_many_times(broker: Broker) -> None:
    for _ in range(20):
        with broker.serve() as server:
            assert server.port > 0
    assert len(broker.transports) == 0


def test_port_in_use_is_reported(broker: Broker) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(PortInUse) as err:
            Server(broker, "127.0.0.1", port)
    assert str(err.value) == f"port {port} on 127.0.0.1 is in use"


def test_a_server_that_cannot_have_a_later_port_frees_the_ones_it_opened(broker: Broker) -> None:
    """All or nothing at construction: a taken management port closes the AMQP port opened
    before it (which is free again at once)."""
    with socket.socket() as taken, socket.socket() as probe:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
        probe.close()
        with pytest.raises(PortInUse):
            Server(broker, "127.0.0.1", free, management_port=taken.getsockname()[1])
        with socket.socket() as again:
            again.bind(("127.0.0.1", free))


def test_a_server_stopped_before_it_serves_never_serves(broker: Broker) -> None:
    """A SIGTERM between rabbitmq-server's banner and its loop (a job that starts a node and
    stops it at once) stops the server before serve_forever: serve_forever then returns at
    once (it raised on the closed sockets), and start serves nothing either."""
    server = Server(broker)
    server.stop()
    server.serve_forever()
    assert not server.running
    assert server.start() is server
    assert not server.running
    server.stop()


def _answer_to(port: int, header: bytes) -> bytes:
    """What the listener sends back to ``header``, until it closes the socket."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(header)
        answer = b""
        while chunk := sock.recv(64):
            answer += chunk
        return answer


def test_amqp10_off_answers_a_10_header_as_an_unknown_protocol(broker: Broker) -> None:
    """Without RabbitMQ's rabbitmq_amqp1_0 plugin (``amqp10=False``), an AMQP 1.0 header
    (SASL or plain) gets the 0-9-1 header back and the socket closes, as RabbitMQ 3.10.8
    refuses it (checked live: ``AMQP 0 0 9 1``, then the connection closes); 0-9-1 clients go
    on, and turning it on serves 1.0 to the next connection."""
    with Server(broker, amqp10=False) as server:
        assert not server.amqp10
        assert _answer_to(server.port, b"AMQP\x03\x01\x00\x00") == b"AMQP\x00\x00\x09\x01"
        assert _answer_to(server.port, b"AMQP\x00\x01\x00\x00") == b"AMQP\x00\x00\x09\x01"
        pika.BlockingConnection(pika.URLParameters(server.url)).close()
        server.amqp10 = True
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(b"AMQP\x03\x01\x00\x00")
            assert sock.recv(8) == b"AMQP\x03\x01\x00\x00"  # (then its SASL mechanisms)
    assert server.errors == []
    assert Server(broker).amqp10  # (on by default: embroker serve serves 1.0)


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6 on this machine")
def test_localhost_listens_on_ipv4_and_ipv6(broker: Broker) -> None:
    try:
        server = broker.serve("localhost")
    except OSError as exc:  # pragma: no cover - a machine without ::1
        pytest.skip(f"cannot listen on localhost: {exc}")
    with server:
        families = {s.family for s in server._listeners}
        if socket.AF_INET6 not in families:
            pytest.skip("::1 is not available here")
        for host in ("127.0.0.1", "::1"):
            with socket.create_connection((host, server.port), timeout=2) as sock:
                sock.sendall(b"AMQP\x00\x00\x09\x01")
                assert sock.recv(7)[:1] == b"\x01"  # connection.start, a method frame
        assert server.url.startswith("amqp://guest:guest@localhost:")


def test_cli_says_in_one_line_that_the_port_is_taken() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "embroker", "serve", "--host", "127.0.0.1", "--port", str(port)],
            capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"port {port} on 127.0.0.1 is in use" in lines[0]
    assert "--port 0" in lines[0]
    assert "Traceback" not in result.stderr


def test_cli_says_which_option_moves_a_taken_management_port() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "embroker", "serve", "--host", "127.0.0.1", "--port", "0",
             "--management-port", str(port)],
            capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"port {port} on 127.0.0.1 is in use" in lines[0]
    assert "--management-port 0" in lines[0]
    assert "--no-management" in lines[0]


def _serve(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = serve(*args)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, line


def _stop(proc: subprocess.Popen[str]) -> None:
    out, err = interrupt(proc)
    assert proc.returncode == 0, err
    assert "embroker stopped" in out
    assert "Traceback" not in err


def test_cli_serves_until_interrupted() -> None:
    proc, line = _serve("--vhost", "/", "--vhost", "other", "--user", "app:secret",
                        "--as-rabbitmq", "3.10.8", "--server-property", "cluster_name=ci")
    try:
        url = line.split("listening on ")[1].split(" ")[0]
        assert url.startswith("amqp://app@127.0.0.1:")  # no password: the line goes to logs
        assert "secret" not in line
        assert "vhosts: /, other; users: guest, app; node " in line  # (then: Ctrl-C stops)
        url = url.replace("amqp://app@", "amqp://app:secret@")
        conn = pika.BlockingConnection(pika.URLParameters(url + "other"))
        conn.channel().queue_declare("q")
        properties = conn._impl.server_properties
        assert (properties["product"], properties["version"], properties["cluster_name"]) == (
            "RabbitMQ", "3.10.8", "ci")
        conn.close()
        guest = pika.BlockingConnection(pika.URLParameters(  # the defaults stay
            url.replace("app:secret", "guest:guest")))
        guest.close()
    finally:
        _stop(proc)


def test_cli_without_the_defaults_prints_a_url_that_works() -> None:
    proc, line = _serve("--no-default-vhost", "--vhost", "staging", "--no-default-user",
                        "--user", "app:s3cret")
    try:
        url = line.split("listening on ")[1].split(" ")[0]
        assert url.startswith("amqp://app@127.0.0.1:")
        assert url.endswith("/staging")
        assert "s3cret" not in line
        assert "vhosts: staging; users: app; node " in line
        url = url.replace("amqp://app@", "amqp://app:s3cret@")
        pika.BlockingConnection(pika.URLParameters(url)).close()
        with pytest.raises(pika.exceptions.ProbableAuthenticationError):
            pika.BlockingConnection(pika.URLParameters(url.replace("app:s3cret", "guest:guest")))
    finally:
        _stop(proc)


def test_cli_help_names_the_program_embroker() -> None:
    result = subprocess.run([sys.executable, "-m", "embroker", "--help"], capture_output=True,
                            text=True, timeout=30, check=True)
    assert result.stdout.startswith("usage: embroker ")
    result = subprocess.run([sys.executable, "-m", "embroker", "serve", "--help"],
                            capture_output=True, text=True, timeout=30, check=True)
    assert result.stdout.startswith("usage: embroker serve ")
    assert "--no-default-user" in result.stdout
    user_help = " ".join(result.stdout.split("--user NAME:PASSWORD  ")[1].split(
        "--no-default-vhost")[0].split())
    assert user_help.startswith("an administrator (tag administrator")


@pytest.mark.parametrize(("value", "says"), [
    ("amqp", "expected KIND=N with KIND one of amqp, management, stream"),
    ("smtp=5", "expected KIND=N with KIND one of amqp, management, stream"),
    ("stream=0", "expected a number of connections (1 or more) or infinity"),
    ("management=lots", "expected a number of connections (1 or more) or infinity")])
def test_a_max_connections_the_command_cannot_read_is_a_usage_error(
        value: str, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    from embroker.__main__ import main

    with pytest.raises(SystemExit) as stopped:
        main(["serve", "--max-connections", value])
    assert stopped.value.code == 2
    assert says in capsys.readouterr().err


def test_restart_drops_wire_clients_and_they_can_reconnect(broker: Broker) -> None:
    with broker.serve() as server:
        conn = pika.BlockingConnection(pika.URLParameters(server.url))
        conn.channel().queue_declare("jobs", durable=True)
        broker.restart()
        with pytest.raises(ConnectionClosedByBroker) as err:
            conn.process_data_events(1)
        assert err.value.reply_code == 320
        again = pika.BlockingConnection(pika.URLParameters(server.url))
        again.channel().queue_declare("jobs", durable=True, passive=True)
        again.close()
    assert server.errors == []
