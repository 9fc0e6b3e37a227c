"""Fixtures shared by the test folders: a broker, and a listener on it."""

import os
from collections.abc import Iterator

import pytest

from embroker import Broker
from embroker.server import NodeServers, Server


@pytest.fixture
def broker() -> Broker:
    return Broker()


@pytest.fixture
def server(broker: Broker) -> Iterator[Server]:
    with broker.serve() as server:
        yield server
    assert server.errors == []
    broker._check()


@pytest.fixture
def served_cluster() -> Iterator[tuple[Broker, NodeServers]]:
    """A broker of three nodes and a listener per node (``broker.serve_nodes()``); raises the
    listeners' errors after the test."""
    broker = Broker(nodes=3)
    with broker.serve_nodes() as servers:
        yield broker, servers
    for server in servers:
        assert server.errors == []


@pytest.fixture(autouse=True, scope="session")
def _node_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The nodes the tests start (``embroker serve`` in a subprocess, rabbitmq-server, a
    ``Node``) register in a folder of the session's, not in the user's registry."""
    previous = os.environ.get("EMBROKER_NODES_DIR")
    os.environ["EMBROKER_NODES_DIR"] = str(tmp_path_factory.mktemp("nodes"))
    yield
    if previous is None:
        del os.environ["EMBROKER_NODES_DIR"]
    else:
        os.environ["EMBROKER_NODES_DIR"] = previous
