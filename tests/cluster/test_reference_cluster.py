"""Smoke tests of the reference cluster (conftest.py): its three nodes form one cluster, and a
node's app stops and starts through rabbitmqctl. Skipped unless opted in (see conftest.py)."""

from __future__ import annotations

import json

import pika

from .reference_cluster import ReferenceCluster


def test_the_three_nodes_form_one_cluster(reference_cluster: ReferenceCluster) -> None:
    names = sorted(node.name for node in reference_cluster.nodes)
    assert len(set(names)) == 3
    for index in range(3):
        status = json.loads(reference_cluster.ctl(index, "cluster_status", "--formatter", "json").stdout)
        assert sorted(status["disk_nodes"]) == names
        assert sorted(status["running_nodes"]) == names
        assert reference_cluster.running_nodes(index) == names
    assert reference_cluster.version.startswith("3.")


def test_a_queue_declared_on_one_node_is_seen_from_another(reference_cluster: ReferenceCluster) -> None:
    first = pika.BlockingConnection(pika.URLParameters(reference_cluster.node(0).url))
    second = pika.BlockingConnection(pika.URLParameters(reference_cluster.node(2).url))
    try:
        first.channel().queue_declare("smoke.q")
        reply = second.channel().queue_declare("smoke.q", passive=True)
        assert reply.method.queue == "smoke.q"
        assert reference_cluster.api(2, "/queues/%2F/smoke.q")["node"] == reference_cluster.node(0).name
    finally:
        first.channel().queue_delete("smoke.q")
        first.close()
        second.close()


def test_a_node_app_stops_and_starts(reference_cluster: ReferenceCluster) -> None:
    stopped = reference_cluster.node(1)
    reference_cluster.stop_app(1)
    assert not stopped.listening()
    assert stopped.name not in reference_cluster.running_nodes(0)
    reference_cluster.start_app(1)
    assert stopped.listening()
    assert stopped.name in reference_cluster.running_nodes(0)
