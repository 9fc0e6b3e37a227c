"""The broker's nodes (:mod:`embroker.model._node`): a broker is a cluster of one node, which
every connection is on and every surface names."""

from __future__ import annotations

from embroker.model import Broker


def test_a_broker_is_a_cluster_of_one_node_that_every_connection_is_on() -> None:
    broker = Broker()
    [node] = broker.nodes
    assert node.identity is broker.node
    first = broker.open_connection()
    second = broker.open_connection()
    assert first.node is node
    assert node.connections == [first, second]
    first.close()
    assert node.connections == [second]


def test_naming_the_node_names_the_first_node() -> None:
    broker = Broker()
    broker.name_node("rabbit@box")
    assert broker.nodes[0].name == broker.node.name == "rabbit@box"
    assert str(broker.nodes[0]) == "rabbit@box"
