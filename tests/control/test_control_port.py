"""The node's control interface as an attacker meets it: the handshake before anything else (each
side proves it knows the cookie, the node its name), the registry the user's alone, the
management API's bounds, and listings worked out in slices."""

from __future__ import annotations

import http.client
import json
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from embroker import Broker
from embroker.control._handshake import (
    GREETING,
    HANDSHAKE_TIMEOUT,
    HandshakeFailed,
    NodeHandshake,
    open_channel,
    proof,
)
from embroker.control._node import Node
from embroker.control._ops import LISTING_SLICE, OPERATIONS
from embroker.control._registry import NodeEntry, lookup, nodes_dir
from embroker.control._service import ControlService
from embroker.management._http import Request, Response
from embroker.server import Server


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Node]:
    monkeypatch.setenv("EMBROKER_NODES_DIR", str(tmp_path / "nodes"))
    broker = Broker()
    with Server(broker) as server, Node(broker, server, "rabbit@guarded") as running:
        yield running
        assert server.errors == []


def _entry() -> NodeEntry:
    entry = lookup("rabbit@guarded")
    assert entry is not None
    return entry


def _post(entry: NodeEntry, path: str, body: bytes = b"{}",
          headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """A request on a connection that passed the handshake (as the tools make one)."""
    connection = http.client.HTTPConnection("127.0.0.1", entry.control_port, timeout=5)
    connection.sock = open_channel("127.0.0.1", entry.control_port, entry.name, entry.cookie,
                                   timeout=5)
    try:
        connection.request("POST", path, body, {"host": "127.0.0.1", **(headers or {})})
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def _raw(port: int, data: bytes) -> bytes:
    """What the node answers ``data`` on a new connection, until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def test_without_the_cookie_nothing_is_done_and_nothing_is_said(node: Node) -> None:
    """A request without the handshake (as the tools once sent one, the cookie in a header),
    a greeting for another node, a proof made with another cookie: each is refused in one
    word, and nothing is run."""
    entry = _entry()
    body = json.dumps({"user": "intruder", "password": "x"}).encode()
    request = (b"POST /op/add_user HTTP/1.1\r\nhost: 127.0.0.1\r\nx-embroker-cookie: " +
               entry.cookie.encode() + b"\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
    assert _raw(entry.control_port, request) == b"-proof\n"
    nonce = b"0" * 32
    assert _raw(entry.control_port, b"%s rabbit@other %s\n" % (GREETING, nonce)) == b"-name\n"
    with socket.create_connection(("127.0.0.1", entry.control_port), timeout=5) as sock:
        sock.sendall(b"%s rabbit@guarded %s\n" % (GREETING, nonce))
        _plus, theirs, _their_proof = sock.recv(1024).split()
        forged = proof(b"a guessed cookie", b"tool", "rabbit@guarded", theirs, nonce)
        sock.sendall(b"+ " + forged + b"\n" + request.split(b"\r\n", 1)[0])
        assert sock.recv(1024) == b"-proof\n"
        assert sock.recv(1024) == b""
    # (a tool with another cookie cannot check the node's proof: it stops there, says nothing)
    with pytest.raises(HandshakeFailed, match="could not prove it is node rabbit@guarded"):
        open_channel("127.0.0.1", entry.control_port, entry.name, "a guessed cookie",
                     timeout=5)
    assert "intruder" not in node.broker.users


def test_with_the_cookie_the_operation_runs(node: Node) -> None:
    entry = _entry()
    body = json.dumps({"user": "allowed", "password": "x"}).encode()
    assert _post(entry, "/op/add_user", body) == (200, b'{"result":null}')
    assert "allowed" in node.broker.users
    assert _post(entry, "/op/no_such_operation")[0] == 404
    assert _post(entry, "/op/add_user", b"[1, 2]")[0] == 400


def test_a_page_of_another_site_is_refused_even_with_the_cookie(node: Node) -> None:
    """(DNS rebinding: the management API's host policy guards this port too.)"""
    status, _ = _post(_entry(), "/op/ping", headers={"host": "evil.example"})
    assert status == 403


def test_a_body_over_the_bound_is_refused_before_it_is_kept(node: Node) -> None:
    entry = _entry()
    huge = b'{"user": "' + b"x" * (64 * 1024 * 1024) + b'"}'
    connection = http.client.HTTPConnection("127.0.0.1", entry.control_port, timeout=5)
    connection.sock = open_channel("127.0.0.1", entry.control_port, entry.name, entry.cookie,
                                   timeout=5)
    try:
        connection.putrequest("POST", "/op/add_user", skip_host=True)
        connection.putheader("host", "127.0.0.1")
        connection.putheader("content-length", str(len(huge)))
        connection.endheaders()
        assert connection.getresponse().status == 413
    finally:
        connection.close()


def test_the_registry_is_the_users_alone(node: Node) -> None:
    folder = nodes_dir()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    (entry,) = folder.glob("*.json")
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert json.loads(entry.read_text())["pid"] == os.getpid()


def test_a_listing_is_worked_out_a_slice_per_step(node: Node) -> None:
    """The listener takes one step per turn of its loop: a listing of many queues never holds
    it for more than a slice."""
    assert isinstance(node.broker, Broker)  # (the public one: it has connect())
    channel = node.broker.connect().channel()
    for number in range(LISTING_SLICE * 3 + 1):
        channel.queue_declare(f"q{number}")
    service = ControlService(node, OPERATIONS)
    work = service(Request("POST", "/op/list", {}, {},
                           json.dumps({"kind": "queues", "columns": ["name"]}).encode()))
    assert not isinstance(work, Response)
    steps = 0
    while (answer := work.step()) is None:
        steps += 1
    assert steps == 4  # (301 queues: 4 slices)
    assert len(json.loads(answer.content())["result"]) == LISTING_SLICE * 3 + 1


# -- the handshake, sans-IO -----------------------------------------------------------------------

class _Inner:
    """What the node serves once the tool proved itself: it keeps what it is fed."""

    def __init__(self) -> None:
        self.fed = b""
        self.has_output = self.should_close = self.blocked = self.has_work = False
        self.failure: Exception | None = None

    def receive_data(self, data: bytes) -> None:
        self.fed += data

    def data_to_send(self) -> bytes:
        return b""


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _node_side(**kwargs: Any) -> tuple[NodeHandshake, list[_Inner], _Clock]:
    made: list[_Inner] = []
    clock = _Clock()

    def inner() -> _Inner:
        made.append(_Inner())
        return made[-1]

    return NodeHandshake("rabbit@n", "the cookie", inner, clock=clock, **kwargs), made, clock


def _greet(conn: NodeHandshake, nonce: bytes = b"a" * 32) -> tuple[bytes, bytes]:
    conn.receive_data(b"%s rabbit@n %s\n" % (GREETING, nonce))
    plus, theirs, their_proof = conn.data_to_send().split()
    assert plus == b"+"
    return theirs, their_proof


def test_the_node_proves_it_knows_the_cookie_and_its_name_first() -> None:
    """Its proof covers its name and both challenges: a tool checks it before it says a word
    more; the tool's proof, with another label, cannot be the node's reflected."""
    conn, made, _clock = _node_side()
    theirs, their_proof = _greet(conn)
    assert their_proof == proof(b"the cookie", b"node", "rabbit@n", b"a" * 32, theirs)
    assert their_proof != proof(b"the cookie", b"tool", "rabbit@n", theirs, b"a" * 32)
    assert not made
    assert not conn.authenticated
    conn.receive_data(b"+ " + their_proof + b"\n")  # (its own proof, sent back: refused)
    assert conn.data_to_send() == b"-proof\n"
    assert conn.should_close
    assert not made


def test_what_follows_the_tools_proof_goes_to_the_http_connection() -> None:
    conn, made, _clock = _node_side()
    theirs, _proof = _greet(conn)
    conn.receive_data(b"+ " + proof(b"the cookie", b"tool", "rabbit@n", theirs, b"a" * 32) +
                      b"\nPOST /op/ping")
    assert conn.data_to_send() == b"+ok\n"
    assert conn.authenticated
    assert [inner.fed for inner in made] == [b"POST /op/ping"]
    conn.receive_data(b" HTTP/1.1\r\n")
    assert made[0].fed == b"POST /op/ping HTTP/1.1\r\n"


def test_a_connection_that_does_not_prove_itself_in_time_is_dropped() -> None:
    """On the loop's clock: silent, or greeted and silent, it goes without a word after
    HANDSHAKE_TIMEOUT seconds; one that proved itself is the HTTP connection's to time out."""
    for greeted in (False, True):
        conn, _made, clock = _node_side()
        if greeted:
            _greet(conn)
        clock.now += HANDSHAKE_TIMEOUT - 0.01
        conn.tick()
        assert not conn.should_close
        clock.now += 0.01
        conn.tick()
        assert conn.should_close
        assert conn.data_to_send() == b""


def test_a_long_line_or_a_greeting_for_another_node_is_refused() -> None:
    conn, _made, _clock = _node_side()
    conn.receive_data(b"x" * 600)
    assert (conn.data_to_send(), conn.should_close) == (b"-proof\n", True)
    conn, _made, _clock = _node_side()
    conn.receive_data(b"%s rabbit@m %s\n" % (GREETING, b"a" * 32))
    assert (conn.data_to_send(), conn.should_close) == (b"-name\n", True)


def test_an_evicted_or_refused_tool_is_told_busy() -> None:
    """Dropped unauthenticated for newer connections, or beyond the tools the node holds: told
    -busy (nothing was run: the tool may try again)."""
    conn, made, _clock = _node_side()
    conn.evict()
    assert (conn.data_to_send(), conn.should_close) == (b"-busy\n", True)
    conn, made, _clock = _node_side(on_authenticated=lambda: False)
    theirs, _proof = _greet(conn)
    conn.receive_data(b"+ " + proof(b"the cookie", b"tool", "rabbit@n", theirs, b"a" * 32) +
                      b"\n")
    assert (conn.data_to_send(), conn.should_close, made) == (b"-busy\n", True, [])
