"""A network partition between the nodes of a cluster, handled as RabbitMQ 3.10.8's default
``cluster_partition_handling = ignore`` handles it (:mod:`embroker.model._partition`). Each rule
is what a three-node RabbitMQ 3.10.8 cluster showed when one node was cut off from the two
others (``-kernel dist_auto_connect once`` and ``erlang:disconnect_node/1``) and connected
again (``net_kernel:connect_node/1``); rabbit_fifo.erl's ``{down, Pid, noconnection}`` and
``{nodeup, Node}`` clauses say what a quorum queue does with the consumers it cannot reach."""

from __future__ import annotations

from typing import Any

import pytest

from embroker.errors import InternalError, NotFound
from embroker.model import Broker, Cancelled, Delivered
from tests.model.conftest import channel_on

N1, N2, N3 = "embroker@localhost", "embroker-2@localhost", "embroker-3@localhost"


def _down(queue: str, node: str) -> str:
    return (f"NOT_FOUND - home node '{node}' of durable queue '{queue}' in vhost '/' is down or "
            "inaccessible")



@pytest.fixture
def broker() -> Broker:
    return Broker(nodes=3)


def _split(broker: Broker) -> None:
    broker.partition([broker.nodes[2]])  # node 3 alone; nodes 1 and 2 together


def test_each_side_sees_the_other_sides_classic_queues_down_and_its_own_up(
        broker: Broker) -> None:
    channel_on(broker, 2).queue_declare("c3", durable=True)
    channel_on(broker, 0).queue_declare("c1", durable=True)
    _split(broker)
    with pytest.raises(NotFound) as refused:
        channel_on(broker, 0).queue_declare("c3", passive=True)
    assert refused.value.reply_text == _down("c3", N3)
    with pytest.raises(NotFound) as refused:
        channel_on(broker, 2).queue_declare("c1", passive=True)
    assert refused.value.reply_text == _down("c1", N1)
    assert channel_on(broker, 2).queue_declare("c3", passive=True).message_count == 0
    assert channel_on(broker, 1).queue_declare("c1", passive=True).message_count == 0


def test_a_transient_queue_across_the_split_is_gone_for_the_other_side_only(
        broker: Broker) -> None:
    # (rabbit_amqqueue:on_node_down/1 deletes it from the majority's records; its own side
    # keeps it)
    channel_on(broker, 2).queue_declare("t3")
    _split(broker)
    with pytest.raises(NotFound) as refused:
        channel_on(broker, 0).queue_declare("t3", passive=True)
    assert refused.value.reply_text == "NOT_FOUND - no queue 't3' in vhost '/'"
    assert channel_on(broker, 2).queue_declare("t3", passive=True).message_count == 0


def test_classic_consumers_across_the_split_are_cancelled_and_their_deliveries_go_back(
        broker: Broker) -> None:
    channel_on(broker, 2).queue_declare("c3", durable=True)
    far = channel_on(broker, 0)
    events: list[Any] = []
    far.listener = events.append
    far.basic_qos(prefetch_count=10)
    far.basic_consume("c3", consumer_tag="far")
    near = channel_on(broker, 2)
    near.basic_publish("", "c3", b"before", {"delivery_mode": 2})
    assert [type(e) for e in events] == [Delivered]
    _split(broker)
    assert isinstance(events[-1], Cancelled)
    assert events[-1].consumer_tag == "far"
    got = near.basic_get("c3")
    assert (got.message.body, got.redelivered) == (b"before", True)
    far.basic_ack(1)  # (its delivery is no longer its own: the ack changes nothing)
    assert broker.vhosts["/"].queues["c3"].consumer_count == 0


def test_publishes_reach_what_the_publishers_side_sees(broker: Broker) -> None:
    channel_on(broker, 2).queue_declare("c3", durable=True)
    channel_on(broker, 0).queue_declare("c1", durable=True)
    _split(broker)
    a, c = channel_on(broker, 0), channel_on(broker, 2)
    a.confirm_select()
    c.confirm_select()
    returned = a.basic_publish("", "c3", b"m", {"delivery_mode": 2}, mandatory=True)
    assert (returned.returned, returned.accepted) == (True, True)
    assert c.basic_publish("", "c1", b"m", {}, mandatory=True).returned
    own = c.basic_publish("", "c3", b"m3", {"delivery_mode": 2}, mandatory=True)
    assert (own.returned, own.accepted) == (False, True)
    assert [m.body for m in broker.queues["c3"].messages] == [b"m3"]


def test_a_quorum_queue_goes_on_with_the_majority_and_refuses_the_minority(
        broker: Broker) -> None:
    quorum = {"x-queue-type": "quorum"}
    channel_on(broker, 2).queue_declare("qq3", durable=True, arguments=quorum)
    assert broker.queues["qq3"].placement.leader is broker.nodes[2]
    _split(broker)
    assert broker.queues["qq3"].placement.leader in broker.nodes[:2]  # (re-elected)
    a, c = channel_on(broker, 0), channel_on(broker, 2)
    a.confirm_select()
    c.confirm_select()
    assert a.basic_publish("", "qq3", b"m-major", {}).accepted
    assert not c.basic_publish("", "qq3", b"m-minor", {}).accepted  # nacked, not enqueued
    assert [m.body for m in broker.queues["qq3"].messages] == [b"m-major"]
    with pytest.raises(InternalError):
        channel_on(broker, 2).basic_get("qq3")
    with pytest.raises(InternalError, match="cluster_not_formed"):
        channel_on(broker, 2).queue_declare("qqnew3", durable=True, arguments=quorum)
    channel_on(broker, 0).queue_declare("qqnew1", durable=True, arguments=quorum)


def test_a_quorum_consumer_on_the_minority_side_is_suspected_not_cancelled(
        broker: Broker) -> None:
    # rabbit_fifo {down, Pid, noconnection}: its deliveries go back (delivery count + 1) to
    # the live consumers; {nodeup, Node}: it is served again
    quorum = {"x-queue-type": "quorum"}
    channel_on(broker, 0).queue_declare("qq1", durable=True, arguments=quorum)
    minor = channel_on(broker, 2)
    seen: list[Any] = []
    minor.listener = seen.append
    minor.basic_qos(prefetch_count=10)
    minor.basic_consume("qq1", consumer_tag="minor")
    channel_on(broker, 0).basic_publish("", "qq1", b"one", {})
    assert [e.message.body for e in seen if isinstance(e, Delivered)] == [b"one"]
    _split(broker)
    assert not any(isinstance(e, Cancelled) for e in seen)
    got = channel_on(broker, 0).basic_get("qq1", no_ack=True)
    assert (got.message.body, got.redelivered) == (b"one", True)
    assert got.message.headers["x-delivery-count"] == 1
    channel_on(broker, 0).basic_publish("", "qq1", b"two", {})
    assert [e.message.body for e in seen if isinstance(e, Delivered)] == [b"one"]
    broker.heal()
    assert [e.message.body for e in seen if isinstance(e, Delivered)] == [b"one", b"two"]


def test_healed_the_partition_stays_for_classic_queues_and_goes_for_quorum_ones(
        broker: Broker) -> None:
    # ignore: mnesia stays partitioned after the network is back, listed as partitions, until
    # the node of the other side restarts; Raft heals on its own
    channel_on(broker, 2).queue_declare("c3", durable=True)
    channel_on(broker, 2).queue_declare("qq3", durable=True, arguments={"x-queue-type": "quorum"})
    _split(broker)
    broker.heal()
    assert [n.name for n in broker.nodes[0].partitions] == [N3]
    assert [n.name for n in broker.nodes[2].partitions] == [N1, N2]
    with pytest.raises(NotFound):
        channel_on(broker, 0).queue_declare("c3", passive=True)
    c = channel_on(broker, 2)
    c.confirm_select()
    assert c.basic_publish("", "qq3", b"after-heal", {}).accepted
    broker.nodes[2].stop()
    broker.nodes[2].start()
    assert [n.partitions for n in broker.nodes] == [[], [], []]
    assert channel_on(broker, 0).queue_declare("c3", passive=True).message_count == 0


def test_the_restarted_minority_keeps_what_its_classic_queues_took_during_the_split(
        broker: Broker) -> None:
    c = channel_on(broker, 2)
    c.queue_declare("c3", durable=True)
    c.basic_publish("", "c3", b"before", {"delivery_mode": 2})
    _split(broker)
    channel_on(broker, 2).basic_publish("", "c3", b"m3", {"delivery_mode": 2})
    broker.heal()
    broker.nodes[2].stop()
    broker.nodes[2].start()
    assert [m.body for m in broker.queues["c3"].messages] == [b"before", b"m3"]


def test_a_partition_names_known_nodes_and_heal_without_one_does_nothing(broker: Broker) -> None:
    broker.heal()
    assert [n.partitions for n in broker.nodes] == [[], [], []]
    with pytest.raises(ValueError, match="not a node"):
        broker.partition(["rabbit@elsewhere"])
    with pytest.raises(ValueError, match="every node"):
        broker.partition(broker.nodes)
