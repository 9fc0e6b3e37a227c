"""Real clients when the node they are connected to stops (:mod:`tests.cluster.client_recovery`):
pika with a list of addresses, aio-pika's robust connection, kombu's failover, on embroker's
served cluster (``broker.serve_nodes()``) always, and on the reference cluster (three RabbitMQ
3.10.8 nodes) when it is asked for (``EMBROKER_REFERENCE_URL`` and
``EMBROKER_REFERENCE_CLUSTER=1``), which rewrites the golden file with ``EMBROKER_RECORD=1``.

What the reference showed (tests/cluster/golden/clients/, /work/notes/clusterdiff/facts.md):

- a stopping node closes its AMQP 0-9-1 connections with 320 CONNECTION_FORCED and then resets
  their sockets (its listeners' ``{linger, {true, 0}}``): a client that writes before it reads
  meets the reset instead of the 320 (pika: ``StreamLostError`` on a publish with confirms;
  py-amqp under kombu: ``ConnectionResetError`` in ``ensure``'s errback), and that publish is
  neither confirmed nor enqueued;
- pika given every node's address connects again to the first that answers (node 2); kombu's
  round-robin failover goes on with node 2; aio-pika's robust connection retries its one URL
  until the node starts again, then restores its channel, its queues and its consumer with the
  same tag;
- the stopped node's exclusive and auto-delete queues are gone (404 elsewhere); an exclusive
  queue that aio-pika restores is declared again, on its new connection;
- a quorum queue led by the stopped node goes on under a new leader: the delivery the stopped
  node's consumer held comes back first (rabbit_fifo ``return_all``), redelivered, with
  ``x-delivery-count`` 1.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pika
import pytest

from embroker import Broker
from embroker.server import NodeServers

from .client_recovery import QUEUES, SCENARIOS, Nodes, run
from .reference_cluster import ReferenceCluster

GOLDEN = Path(__file__).resolve().parent / "golden" / "clients"


def _golden(name: str) -> list[str]:
    return (GOLDEN / f"{name}.txt").read_text().splitlines()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_clients_on_embroker_see_what_they_saw_on_the_reference_cluster(
        name: str, served_cluster: tuple[Broker, NodeServers]) -> None:
    broker, servers = served_cluster
    nodes = Nodes(servers.urls, lambda index: servers.stop_node(broker.nodes[index]),
                  lambda index: servers.start_node(broker.nodes[index]))
    assert run(SCENARIOS[name], nodes, [node.name for node in broker.nodes]) == _golden(name)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_clients_on_the_reference_cluster_still_see_it(
        name: str, reference_cluster: ReferenceCluster) -> None:
    nodes = Nodes([node.url for node in reference_cluster.nodes], reference_cluster.stop_app,
                  reference_cluster.start_app, f"rec-{uuid.uuid4().hex[:6]}-")
    try:
        lines = run(SCENARIOS[name], nodes, [node.name for node in reference_cluster.nodes])
    finally:
        reference_cluster.restore()
        connection = pika.BlockingConnection(pika.URLParameters(reference_cluster.node(0).url))
        for queue in QUEUES[name]:
            connection.channel().queue_delete(nodes.q(queue))
        connection.close()
    if os.environ.get("EMBROKER_RECORD") == "1":
        GOLDEN.mkdir(exist_ok=True)
        (GOLDEN / f"{name}.txt").write_text("\n".join(lines) + "\n")
    assert lines == _golden(name)


def test_every_client_golden_file_has_its_scenario() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.txt")) == sorted(SCENARIOS)
