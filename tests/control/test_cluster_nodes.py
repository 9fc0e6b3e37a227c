"""RabbitMQ's tools reach each node of a cluster (``Broker(nodes=3)``): a control node per
model node, each registered under its own name, so that ``rabbitmqctl -n NODE stop_app`` and
``start_app`` stop and start that node alone, as on a RabbitMQ 3.10.8 cluster: its listeners
refuse connections while the other nodes' serve on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pika
import pytest

from embroker import Broker
from embroker.control._node import Node
from embroker.server import NodeServers
from tests.control.test_ctl import ctl
from tests.server.test_node_listeners import _refused

NAMES = ["rabbit@localhost", "rabbit-2@localhost", "rabbit-3@localhost"]


@pytest.fixture(autouse=True)
def _nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBROKER_NODES_DIR", str(tmp_path / "nodes"))
    monkeypatch.setenv("RABBITMQ_NODENAME", NAMES[0])


@pytest.fixture
def cluster() -> Iterator[tuple[Broker, NodeServers]]:
    broker = Broker(nodes=3)
    with broker.serve_nodes() as servers, ExitStack() as nodes:
        for server, name in zip(servers, NAMES, strict=True):
            nodes.enter_context(Node(broker, server, name))
        yield broker, servers
    for server in servers:
        assert server.errors == []


def test_each_control_node_names_its_own_node_of_the_cluster(
        cluster: tuple[Broker, NodeServers]) -> None:
    broker, _servers = cluster
    assert [node.name for node in broker.nodes] == NAMES
    assert broker.node.name == NAMES[0]
    for name in NAMES:
        code, out, _err = ctl("-n", name, "status", "--formatter", "json")
        assert code == 0
        assert f'"node":"{name}"' in out.replace(" ", "")


def test_stop_app_on_one_node_stops_that_node_and_the_others_serve_on(
        cluster: tuple[Broker, NodeServers]) -> None:
    broker, servers = cluster
    assert ctl("-n", NAMES[1], "stop_app") == (
        0, f"Stopping rabbit application on node {NAMES[1]} ...\n", "")
    assert [node.running for node in broker.nodes] == [True, False, True]
    assert [s.app_running for s in servers] == [True, False, True]
    assert _refused(servers[1].port)
    for url in (servers.urls[0], servers.urls[2]):
        pika.BlockingConnection(pika.URLParameters(url)).close()
    assert ctl("-n", NAMES[0], "stop_app")[0] == 0  # (another node: the third still serves)
    pika.BlockingConnection(pika.URLParameters(servers.urls[2])).close()
    assert ctl("-n", NAMES[1], "start_app") == (
        0, f"Starting node {NAMES[1]} ...\n", "")
    assert [node.running for node in broker.nodes] == [False, True, True]
    pika.BlockingConnection(pika.URLParameters(servers.urls[1])).close()
    assert ctl("-n", NAMES[0], "start_app")[0] == 0
    assert all(node.running for node in broker.nodes)
