"""``embroker serve --nodes 3``: a cluster of nodes in one process, each with its own listeners
(the next nodes on the ports after the first's, as RabbitMQ's guide to a local cluster numbers
them, each a free port when a default one is taken), each reached by RabbitMQ's tools under its
own name; the startup lines name every node's URLs. RabbitMQ's ports themselves are never bound
here (``serve_with_defaults`` replaces them)."""

from __future__ import annotations

import re
import socket
import subprocess
from pathlib import Path

import pika
import pytest

from embroker.testing import wait_until
from tests.cli import interrupt, serve, serve_with_defaults
from tests.control.test_ctl import ctl
from tests.server.test_node_listeners import _refused

_NODE = re.compile(r"^  node (\S+) listening on amqp://\S+:(\d+)/ \(AMQP 0-9-1 and 1\.0"
                   r"(?:; management API and console on http://127\.0\.0\.1:(\d+)/)?")


def _two_free_ports() -> int:
    """A port that is free, and the one after it too (bound then let go)."""
    while True:
        with socket.socket() as first, socket.socket() as second:
            first.bind(("127.0.0.1", 0))
            port: int = first.getsockname()[1]
            try:
                second.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port


def _nodes(proc: subprocess.Popen[str], count: int) -> list[tuple[str, int, int | None]]:
    """The startup lines: each node's name, AMQP port and management port."""
    assert proc.stdout is not None
    head = proc.stdout.readline()
    assert f"a cluster of {count} nodes" in head, head + (
        proc.stderr.read() if proc.poll() is not None and proc.stderr is not None else "")
    found = []
    for _ in range(count):
        line = proc.stdout.readline()
        match = _NODE.match(line)
        assert match is not None, line
        found.append((match[1], int(match[2]), int(match[3]) if match[3] else None))
    return found


@pytest.fixture(autouse=True)
def _registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBROKER_NODES_DIR", str(tmp_path / "nodes"))
    monkeypatch.setenv("RABBITMQ_NODENAME", "cli@localhost")


def test_serve_nodes_runs_a_node_per_listener_each_reached_by_its_name() -> None:
    proc = serve("--nodes", "3", "--no-management")
    try:
        nodes = _nodes(proc, 3)
        assert [name for name, _port, _m in nodes] == [
            "cli@localhost", "cli-2@localhost", "cli-3@localhost"]
        assert len({port for _name, port, _m in nodes}) == 3
        assert ctl("-n", "cli-2@localhost", "stop_app")[0] == 0
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", nodes[1][1]), timeout=1)
        for _name, port, _m in (nodes[0], nodes[2]):
            pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port)).close()
        assert ctl("-n", "cli-2@localhost", "start_app")[0] == 0
        pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", nodes[1][1])).close()
        assert ctl("-n", "cli-3@localhost", "stop")[0] == 0  # (that node alone)
        wait_until(lambda: _refused(nodes[2][1]))
        assert proc.poll() is None
        pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", nodes[0][1])).close()
    finally:
        out, err = interrupt(proc)
    assert proc.returncode == 0, err
    assert out.endswith("embroker stopped\n")


def test_the_next_nodes_take_the_default_ports_after_the_first_nodes() -> None:
    amqp, management = _two_free_ports(), _two_free_ports()
    proc = serve_with_defaults(amqp, management, "--nodes", "2")
    try:
        nodes = _nodes(proc, 2)
        assert [(port, m) for _name, port, m in nodes] == [
            (amqp, management), (amqp + 1, management + 1)]
    finally:
        _out, err = interrupt(proc)
    # (nothing moved; a control port implied by an AMQP port + 20000 may have, when another
    # process of the machine holds that number)
    assert [line for line in err.splitlines() if "Erlang distribution" not in line] == []


def test_a_next_nodes_default_port_taken_becomes_a_free_one_and_serve_says_so() -> None:
    amqp, management = _two_free_ports(), _two_free_ports()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", amqp + 1))
        holder.listen()
        proc = serve_with_defaults(amqp, management, "--nodes", "2")
        try:
            nodes = _nodes(proc, 2)
            assert nodes[0][1] == amqp
            assert nodes[1][1] not in (amqp + 1, 0)
            assert nodes[1][2] == management + 1
        finally:
            _out, err = interrupt(proc)
    # (one line for the AMQP port; another would say a control port implied moved: taken by
    # another process of the machine's)
    (note,) = [line for line in err.splitlines() if "is served on port" in line]
    assert f"port {amqp + 1} on 127.0.0.1 is in use" in note
    assert f"AMQP is served on port {nodes[1][1]} instead" in note


def test_serve_refuses_a_cluster_of_no_node() -> None:
    proc = serve("--nodes", "0")
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert err == "embroker: nodes: at least 1, not 0\n"
