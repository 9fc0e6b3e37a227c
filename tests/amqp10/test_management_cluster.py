"""RabbitMQ 4's management node over AMQP 1.0 on a cluster (``Broker(nodes=3)``): a queue's
``leader`` and ``replicas`` from where it lives, as ``rabbit_amqp_management:queue_topology/1``
(RabbitMQ v4.0.5, deps/rabbit/src/rabbit_amqp_management.erl) finds them. There is no
RabbitMQ 4 cluster here: each test names the clause it pins. Nodes stop by :meth:`Node.stop
<embroker.model.Node.stop>`; a quorum queue whose leader is down (no majority left to elect
another, which the model does not reach yet) is made by marking its leader's node not
running."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from embroker import Broker
from embroker.server import Server

from .test_management_node import Request, open_node

pytest.importorskip("proton")

SECOND = "rabbit-2@embroker"


@pytest.fixture
def broker() -> Iterator[Broker]:
    """Three nodes; from a connection on the second, a classic queue, a quorum queue and a
    stream."""
    broker = Broker(as_rabbitmq="4.1.x", nodes=3)
    channel = broker.open_connection(node=broker.nodes[1]).open_channel(1)
    channel.queue_declare("c", durable=True)
    channel.queue_declare("qq", durable=True, arguments={"x-queue-type": "quorum"})
    channel.queue_declare("st", durable=True, arguments={"x-queue-type": "stream"})
    yield broker
    broker._check()


@pytest.fixture
def node(server: Server, proton_connect) -> Request:
    return open_node(proton_connect())


def _topology(node: Request, name: str) -> dict[str, object]:
    status, queue = node("GET", f"/queues/{name}")
    assert status == 200
    shown = [k for k in ("leader", "replicas") if k in queue]
    assert list(queue)[:len(shown)] == shown  # (first, in that order: encode_queue/3)
    return {key: queue[key] for key in ("leader", "replicas") if key in queue}


def test_a_classic_queues_leader_and_only_replica_is_its_home(node: Request) -> None:
    """queue_topology/1's last clause: node(Pid), [node(Pid)]."""
    assert _topology(node, "c") == {"leader": SECOND, "replicas": [SECOND]}


def test_a_quorum_queues_replicas_are_its_members_and_no_leader_while_it_is_down(
        broker: Broker, node: Request) -> None:
    """queue_topology/1 for rabbit_quorum_queue: info [leader, members]; a leader of ''
    (rabbit_quorum_queue:leader/1: its Ra server not alive) is undefined, and encode_queue/3
    leaves the key out; the replicas are every member, online or not, in the queue's
    order."""
    placement = broker.queues["qq"].placement
    members = [m.name for m in placement.members]
    assert _topology(node, "qq") == {"leader": SECOND, "replicas": members}
    placement.leader.running = False
    assert _topology(node, "qq") == {"replicas": members}


def test_a_streams_replicas_are_its_members_in_reverse_order_of_name(
        broker: Broker, node: Request) -> None:
    """queue_topology/1 for rabbit_stream_queue: the writer's node, and every member (online
    or not) folded from the coordinator's map of members onto a list: reverse order of
    name."""
    members = [m.name for m in broker.queues["st"].placement.members]
    broker.nodes[2].stop()
    assert _topology(node, "st") == {"leader": SECOND,
                                     "replicas": sorted(members, reverse=True)}
