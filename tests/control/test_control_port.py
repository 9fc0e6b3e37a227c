"""The node's control interface as an attacker meets it: the cookie before anything else, the
registry the user's alone, the management API's bounds, and listings worked out in slices."""

from __future__ import annotations

import http.client
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from embroker import Broker
from embroker.control._node import Node
from embroker.control._ops import LISTING_SLICE, OPERATIONS
from embroker.control._protocol import COOKIE_HEADER
from embroker.control._registry import lookup, nodes_dir
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


def _post(port: int, path: str, body: bytes = b"{}",
          headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("POST", path, body, {"host": "127.0.0.1", **(headers or {})})
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def test_without_the_cookie_nothing_is_done_and_nothing_is_said(node: Node) -> None:
    port = node.control_port
    assert port is not None
    body = json.dumps({"user": "intruder", "password": "x"}).encode()
    for headers in ({}, {COOKIE_HEADER: "guess"}, {COOKIE_HEADER: ""}):
        status, answer = _post(port, "/op/add_user", body, headers)
        assert status == 403
        assert b"intruder" not in answer
    # (permission before existence: an unknown operation is refused the same way)
    assert _post(port, "/op/no_such_operation")[0] == 403
    assert "intruder" not in node.broker.users


def test_with_the_cookie_the_operation_runs(node: Node) -> None:
    entry = lookup("rabbit@guarded")
    assert entry is not None
    port = entry.control_port
    body = json.dumps({"user": "allowed", "password": "x"}).encode()
    cookie = {COOKIE_HEADER: entry.cookie}
    assert _post(port, "/op/add_user", body, cookie) == (200, b'{"result":null}')
    assert "allowed" in node.broker.users
    assert _post(port, "/op/no_such_operation", headers=cookie)[0] == 404
    assert _post(port, "/op/add_user", b"[1, 2]", cookie)[0] == 400


def test_a_page_of_another_site_is_refused_even_with_the_cookie(node: Node) -> None:
    """(DNS rebinding: the management API's host policy guards this port too.)"""
    entry = lookup("rabbit@guarded")
    assert entry is not None
    status, _ = _post(entry.control_port, "/op/ping",
                      headers={"host": "evil.example", COOKIE_HEADER: entry.cookie})
    assert status == 403


def test_a_body_over_the_bound_is_refused_before_it_is_kept(node: Node) -> None:
    entry = lookup("rabbit@guarded")
    assert entry is not None
    huge = b'{"user": "' + b"x" * (64 * 1024 * 1024) + b'"}'
    connection = http.client.HTTPConnection("127.0.0.1", entry.control_port, timeout=5)
    try:
        connection.putrequest("POST", "/op/add_user", skip_host=True)
        connection.putheader("host", "127.0.0.1")
        connection.putheader(COOKIE_HEADER, entry.cookie)
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
    service = ControlService(node, "c", OPERATIONS)
    work = service(Request("POST", "/op/list", {}, {COOKIE_HEADER: "c"},
                           json.dumps({"kind": "queues", "columns": ["name"]}).encode()))
    assert not isinstance(work, Response)
    steps = 0
    while (answer := work.step()) is None:
        steps += 1
    assert steps == 4  # (301 queues: 4 slices)
    assert len(json.loads(answer.content())["result"]) == LISTING_SLICE * 3 + 1
