"""The broker's nodes (:mod:`embroker.model._node`): a broker is a cluster of one node, which
every connection is on and every surface names."""

from __future__ import annotations

from typing import Any

import pytest

from embroker.model import Broker
from embroker.model._queue_type import Placement


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


# -- a cluster of several nodes: where queues live (embroker/model/_queue_type.py) --------------


def _on(broker: Broker, index: int) -> Any:
    return broker.open_connection(node=broker.nodes[index]).open_channel(1)


def test_nodes_are_named_after_the_first_or_as_given() -> None:
    assert [n.name for n in Broker(nodes=3).nodes] == [
        "embroker@localhost", "embroker-2@localhost", "embroker-3@localhost"]
    assert [n.name for n in Broker(nodes=2, as_rabbitmq="3.10.8").nodes] == [
        "rabbit@embroker", "rabbit-2@embroker"]
    broker = Broker(nodes=["rabbit@a", "rabbit@b"])
    assert broker.node_named("rabbit@b") is broker.nodes[1]
    assert broker.node.name == "rabbit@a"
    with pytest.raises(ValueError, match="distinct"):
        Broker(nodes=["rabbit@a", "rabbit@a"])


def test_a_classic_queue_lives_on_the_node_that_declared_it() -> None:
    # rabbit_amqqueue:declare/6 passes node(): client-local without a locator
    broker = Broker(nodes=3)
    _on(broker, 1).queue_declare("q", durable=True)
    assert broker.queues["q"].placement == Placement(broker.nodes[1], (broker.nodes[1],))


def test_min_masters_homes_a_classic_queue_on_the_node_with_fewest() -> None:
    # rabbit_queue_master_location_misc: the argument, then the policy
    broker = Broker(nodes=3)
    first = _on(broker, 0)
    first.queue_declare("a")
    first.queue_declare("b", arguments={"x-queue-master-locator": "min-masters"})
    broker.set_policy("mm", "^c", {"queue-master-locator": "min-masters"})
    first.queue_declare("c")
    homes = [broker.queues[n].placement.leader for n in "abc"]
    assert homes == [broker.nodes[0], broker.nodes[1], broker.nodes[2]]


def test_an_exclusive_queue_lives_on_the_declaring_node_whatever_the_locator() -> None:
    broker = Broker(nodes=2)
    _on(broker, 0).queue_declare("a")
    _on(broker, 0).queue_declare("x", exclusive=True,
                                 arguments={"x-queue-master-locator": "min-masters"})
    assert broker.queues["x"].placement.leader is broker.nodes[0]


def test_a_quorum_queue_has_three_members_led_by_the_declaring_node() -> None:
    # rabbit_quorum_queue:declare/2 (quorum_cluster_size 3), rabbit_queue_location:
    # select_replicas/6: the local node first, then those with the fewest members, ties by name
    # ("embroker-2@..." before "embroker@...")
    broker = Broker(nodes=5)
    channel = _on(broker, 3)
    channel.queue_declare("q1", durable=True, arguments={"x-queue-type": "quorum"})
    channel.queue_declare("q2", durable=True, arguments={"x-queue-type": "quorum",
                                                        "x-quorum-initial-group-size": 2})
    nodes = broker.nodes
    assert broker.queues["q1"].placement == Placement(nodes[3], (nodes[3], nodes[1], nodes[2]))
    assert broker.queues["q2"].placement == Placement(nodes[3], (nodes[3], nodes[4]))


def test_a_group_as_large_as_the_cluster_is_every_node_the_leader_first() -> None:
    # select_replicas/6 takes every node in the cluster's order (the latest to join first, as
    # a 3-node RabbitMQ 3.10.8 listed them: declared on node 2, members [2, 3, 1])
    broker = Broker(nodes=3)
    _on(broker, 1).queue_declare("q", durable=True, arguments={"x-queue-type": "quorum"})
    nodes = broker.nodes
    assert broker.queues["q"].placement == Placement(nodes[1], (nodes[1], nodes[2], nodes[0]))


def test_a_stream_lives_on_every_node_unless_its_cluster_size_says_otherwise() -> None:
    # rabbit_stream_queue:declare/2: initial-cluster-size, the policy over the argument
    broker = Broker(nodes=3)
    channel = _on(broker, 2)
    channel.queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
    broker.set_policy("one", "^t", {"initial-cluster-size": 1}, apply_to="queues")
    channel.queue_declare("t", durable=True, arguments={"x-queue-type": "stream",
                                                       "x-initial-cluster-size": 3})
    assert broker.queues["s"].placement.members == (broker.nodes[2], broker.nodes[1],
                                                    broker.nodes[0])
    assert broker.queues["t"].placement == Placement(broker.nodes[2], (broker.nodes[2],))


def test_a_balanced_leader_is_the_member_leading_fewest() -> None:
    # rabbit_queue_location: queue-leader-locator balanced (policy over argument)
    broker = Broker(nodes=3)
    channel = _on(broker, 0)
    for name in ("q1", "q2", "q3"):
        channel.queue_declare(name, durable=True, arguments={
            "x-queue-type": "quorum", "x-queue-leader-locator": "balanced"})
    leaders = [broker.queues[n].placement.leader for n in ("q1", "q2", "q3")]
    assert leaders == broker.nodes


def test_one_node_holds_every_queue_as_before() -> None:
    broker = Broker()
    channel = broker.open_connection().open_channel(1)
    channel.queue_declare("q", durable=True, arguments={"x-queue-type": "quorum"})
    assert broker.queues["q"].placement == Placement(broker.nodes[0], (broker.nodes[0],))
