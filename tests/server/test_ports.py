"""Each port on its own (issue #34): a port at its connection limit, or whose accept() fails for
lack of descriptors, stops accepting alone; the other ports go on."""

from __future__ import annotations

import errno
import json
import os
import resource
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pika
import pytest

from embroker import Broker
from embroker._listener import _Port
from embroker.errors import PortInUse
from embroker.server import Server, default_max_connections, stranger_budget
from embroker.testing import wait_until


def _port(server: Server, number: int | None) -> _Port:
    (port,) = [p for p in server._ports if p.number == number]
    return port


def _selected(server: Server, number: int | None) -> bool:
    """Whether the loop selects that port's sockets for reading (accepts on it), asked on the
    loop's own thread."""
    port = _port(server, number)

    def look() -> bool:
        keys = server._selector.get_map()
        return all(sock.fileno() in keys for sock in port.sockets)
    return bool(server._on_loop(look))


def _answer(sock: socket.socket) -> bytes:
    sock.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


GET = b"GET /api/overview HTTP/1.1\r\nHost: localhost\r\n\r\n"


def test_the_default_limits_are_rabbitmq_s_within_a_share_of_the_descriptors() -> None:
    limits = default_max_connections()
    assert limits["amqp"] is None  # connection_max = infinity
    assert limits["management"] is not None
    assert 1 <= limits["management"] <= 10 * 1024  # ranch: 1024 a supervisor, 10 of them
    # The stream listener's is connection_max (infinity), but, as the management port's, never
    # more than a quarter of the descriptors: the port a stranger reaches before any login.
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert limits["stream"] == (None if soft == resource.RLIM_INFINITY else max(1, soft // 4))


def test_max_connections_names_kinds_of_port_and_limits_of_one_or_more(broker: Broker) -> None:
    with pytest.raises(ValueError, match="no port is 'http'"):
        Server(broker, max_connections={"http": 5})
    with pytest.raises(ValueError, match="one connection or more"):
        Server(broker, max_connections={"amqp": 0})


def test_a_port_at_its_limit_accepts_no_more_until_one_closes_and_the_others_go_on(
        broker: Broker) -> None:
    with broker.serve(management=True, max_connections={"management": 2}) as server:
        port = server.management_port
        assert port is not None
        assert server.max_connections["management"] == 2
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        wait_until(lambda: _port(server, port).open == 2)
        assert not _selected(server, port)  # full: not accepting
        waiting = socket.create_connection(("127.0.0.1", port))  # queued by the kernel
        waiting.sendall(GET)
        conn = pika.BlockingConnection(pika.URLParameters(server.url))  # AMQP goes on
        conn.channel().queue_declare("q")
        assert _selected(server, server.port)
        assert _port(server, port).open == 2
        held[0].close()  # one leaves: the one that waited is accepted and answered
        assert _answer(waiting).startswith(b"HTTP/1.1 401 ")
        conn.close()
        for sock in [*held, waiting]:
            sock.close()
        wait_until(lambda: _port(server, port).open == 0)
        assert _selected(server, port)
    assert server.errors == []


def test_an_amqp_port_at_its_limit_leaves_the_management_port_accepting(broker: Broker) -> None:
    with broker.serve(management=True, max_connections={"amqp": 1}) as server:
        first = pika.BlockingConnection(pika.URLParameters(server.url))
        wait_until(lambda: not _selected(server, server.port))
        assert server.management_port is not None
        with socket.create_connection(("127.0.0.1", server.management_port)) as http:
            http.sendall(GET)
            assert _answer(http).startswith(b"HTTP/1.1 401 ")
        first.close()
        second = pika.BlockingConnection(pika.URLParameters(server.url))
        second.close()
    assert server.errors == []


@pytest.fixture
def accept_fails_on() -> Iterator[set[int]]:
    """Descriptors of listening sockets whose accept() fails with EMFILE (too many open files)
    while they are in the set."""
    failing: set[int] = set()
    accept = socket.socket.accept

    def patched(self: socket.socket) -> Any:
        if self.fileno() in failing:
            raise OSError(errno.EMFILE, "Too many open files")
        return accept(self)

    socket.socket.accept = patched  # type: ignore[method-assign]
    try:
        yield failing
    finally:
        socket.socket.accept = accept  # type: ignore[method-assign]


def test_accept_failing_on_one_port_pauses_that_port_alone(
        broker: Broker, accept_fails_on: set[int]) -> None:
    with broker.serve(management=True) as server:
        management = _port(server, server.management_port)
        accept_fails_on.update(sock.fileno() for sock in management.sockets)
        assert server.management_port is not None
        http = socket.create_connection(("127.0.0.1", server.management_port))
        http.sendall(GET)
        wait_until(lambda: server._on_loop(lambda: management.backoff > 0.05))
        assert _selected(server, server.port)  # the AMQP port accepts on
        conn = pika.BlockingConnection(pika.URLParameters(server.url))
        conn.channel().queue_declare("q")
        conn.close()
        accept_fails_on.clear()  # descriptors again: the paused port takes its client
        assert _answer(http).startswith(b"HTTP/1.1 401 ")
        http.close()
    assert server.errors == []


#: A server under ``ulimit -n 200`` in a process of its own: SERVE is its ``Broker().serve``
#: arguments; it prints its AMQP port and then the ports of the kinds it serves.
_FD_LIMITED = textwrap.dedent("""
    import json, resource, sys
    import trustme
    from embroker import Broker
    from embroker.tls import TLSOptions
    resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200))
    ca = trustme.CA()
    leaf = ca.issue_cert("localhost", "127.0.0.1")
    leaf.cert_chain_pems[0].write_to_path(sys.argv[1] + "/server.pem")
    leaf.private_key_pem.write_to_path(sys.argv[1] + "/server.key")
    tls = TLSOptions(certfile=sys.argv[1] + "/server.pem", keyfile=sys.argv[1] + "/server.key")
    server = Broker().serve(tls=tls, **json.loads(sys.argv[2]))
    ports = [server.management_port, server.management_tls_port, server.stream_port,
             server.stream_tls_port]
    print(server.port, *[p for p in ports if p is not None], flush=True)
    sys.stdin.read()          # until the test closes our stdin
    server.stop()
""")


def _amqp_connects_while(tmp_path: Path, serve: dict[str, Any],
                         hold: Callable[[list[int]], list[socket.socket]]) -> None:
    """Start :data:`_FD_LIMITED` with ``serve``, have ``hold`` open its sockets on the other
    ports, and see 20 AMQP clients connect one after the other meanwhile."""
    proc = subprocess.Popen([sys.executable, "-c", _FD_LIMITED, str(tmp_path), json.dumps(serve)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    socks: list[socket.socket] = []
    try:
        assert proc.stdout is not None
        assert proc.stdin is not None
        amqp, *others = (int(n) for n in proc.stdout.readline().split())
        socks = hold(others)
        url = f"amqp://guest:guest@127.0.0.1:{amqp}/?stack_timeout=5"
        for _ in range(20):
            conn = pika.BlockingConnection(pika.URLParameters(url))
            conn.channel().queue_declare("", exclusive=True)
            conn.close()
    finally:
        for sock in socks:
            sock.close()
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(10)
    stderr = proc.stderr.read() if proc.stderr is not None else ""
    assert "Traceback" not in stderr


def _connections(port: int, count: int, first: bytes = b"") -> list[socket.socket]:
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        if first:
            sock.sendall(first)
        socks.append(sock)
    return socks


@pytest.mark.skipif(sys.platform != "linux", reason="needs RLIMIT_NOFILE semantics of Linux")
def test_half_sent_http_requests_cannot_take_the_descriptors_amqp_clients_need(
        tmp_path: Path) -> None:
    """With ``ulimit -n 200``, 220 HTTP clients that send half a request each took every
    descriptor and stopped AMQP accepts; the management port now holds at most a quarter of
    them (50), the rest wait in the kernel's queue, and AMQP clients connect."""
    _amqp_connects_while(tmp_path, {"management": True}, lambda ports: _connections(
        ports[0], 220, b"PUT /api/definitions HTTP/1.1\r\nHost: localhost\r\n"))


@pytest.mark.skipif(sys.platform != "linux", reason="needs RLIMIT_NOFILE semantics of Linux")
def test_idle_stream_sockets_cannot_take_the_descriptors_amqp_clients_need(
        tmp_path: Path) -> None:
    """With ``ulimit -n 200``, 220 idle sockets on the stream port took every descriptor and
    stopped AMQP accepts; the stream port now holds at most a quarter of them (50), as the
    management port, the rest wait in the kernel's queue, and AMQP clients connect."""
    _amqp_connects_while(tmp_path, {"stream_port": 0},
                         lambda ports: _connections(ports[0], 220))


@pytest.mark.skipif(sys.platform != "linux", reason="needs RLIMIT_NOFILE semantics of Linux")
def test_the_http_and_stream_ports_together_hold_at_most_half_the_descriptors(
        tmp_path: Path) -> None:
    """With ``ulimit -n 200`` and the HTTP, HTTPS, stream and stream TLS ports open, each may
    hold a quarter of the descriptors (50): 60 idle sockets on each of them took 200 between
    them and stopped AMQP accepts (issue 44, left by the per-port caps). Together they hold at
    most half (100); the rest wait in the kernel's queue and AMQP clients connect."""
    _amqp_connects_while(
        tmp_path, {"management": True, "management_tls_port": 0, "stream_port": 0,
                   "stream_tls_port": 0},
        lambda ports: [sock for port in ports for sock in _connections(port, 60)])


def test_the_quarter_is_the_limit_of_each_and_half_of_all(broker: Broker) -> None:
    """What the subprocess tests above rely on, read in this process: each port's limit is a
    quarter of the descriptors, their shared budget a half."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        pytest.skip("no descriptor limit here")
    limits = default_max_connections()
    assert limits["stream"] == soft // 4
    assert limits["management"] == min(10_240, soft // 4)
    assert stranger_budget() == soft // 2


@pytest.mark.parametrize("kind", ["management", "stream"])
def test_a_listener_that_cannot_open_leaves_every_other_port_serving(broker: Broker,
                                                                      kind: str) -> None:
    """``open_listener`` on a taken port (``rabbitmq-plugins enable`` on a running node) raises
    PortInUse and changes nothing else: the AMQP port and a node's control port go on
    accepting (issue 44: every listening socket was closed, the loop kept running), and the
    listener opens on a free port after."""
    with broker.serve() as server, socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        control = server.serve_control(lambda request: None,  # type: ignore[arg-type,return-value]
                                       lambda request: None, name="rabbit@test", cookie="c")
        listeners = [sock.getsockname() for sock in server._listeners]
        with pytest.raises(PortInUse):
            server.open_listener(kind, taken)
        assert [sock.getsockname() for sock in server._listeners] == listeners
        assert (server.management_port, server.stream_port) == (None, None)
        assert _selected(server, server.port)
        assert _selected(server, control)
        connection = pika.BlockingConnection(pika.URLParameters(server.url))
        connection.channel().queue_declare("after")
        connection.close()
        socket.create_connection(("127.0.0.1", control), timeout=5).close()
        opened = server.open_listener(kind, 0)
        assert _selected(server, opened)
    assert server.errors == []


def test_the_budget_is_shared_and_given_back(broker: Broker) -> None:
    """The HTTP and stream ports count against one budget: when it is spent, neither accepts
    (a newcomer waits in the kernel's queue; the AMQP port goes on), and a connection that
    closes on one of them frees a place on the other."""
    with broker.serve(management=True, stream_port=0) as server:
        assert server._strangers.limit == stranger_budget()
        server._on_loop(lambda: setattr(server._strangers, "limit", 2))
        assert server.management_port is not None
        assert server.stream_port is not None
        opened = server._on_loop(lambda: (_port(server, server.management_port).open,
                                          _port(server, server.stream_port).open))
        held = [socket.create_connection(("127.0.0.1", server.stream_port)) for _ in range(2)]
        try:
            wait_until(lambda: server._on_loop(lambda: server._strangers.open) == 2)
            held.append(socket.create_connection(("127.0.0.1", server.management_port)))
            with pika.BlockingConnection(pika.URLParameters(server.url)):
                pass  # (the AMQP port accepts meanwhile)
            assert server._on_loop(lambda: _port(server, server.management_port).open) == \
                opened[0]
            assert _selected(server, server.port)
            held.pop(0).close()
            wait_until(lambda: server._on_loop(
                lambda: _port(server, server.management_port).open) == opened[0] + 1)
            assert server._on_loop(lambda: server._strangers.open) == 2
        finally:
            for sock in held:
                sock.close()
