"""In-memory transports reach each node of a cluster (``broker.memory_urls``,
``broker.kombu_urls``): a client's list of addresses is a list of nodes, and a stopped node
refuses its clients as its closed port would, so that each library's own failover runs with
no socket (tests/clients/test_cluster_failover.py has the same clients over TCP)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import kombu
import pika
import pika.exceptions
import pytest

import embroker.memory.aio
from embroker import Broker, ManualClock
from embroker.memory import MemoryLink

SHUTDOWN = "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'"


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Broker:
    real = socket.socket

    def no_network(family: int = socket.AF_INET, *args: Any, **kwargs: Any) -> Any:
        if family in (socket.AF_INET, socket.AF_INET6):  # (an event loop's self-pipe is no
            raise AssertionError("a socket was made")     # network: AF_UNIX passes)
        return real(family, *args, **kwargs)
    monkeypatch.setattr(socket, "socket", no_network)
    return Broker(nodes=3, clock=ManualClock())


def test_each_node_has_a_memory_url_and_its_clients_open_there(cluster: Broker) -> None:
    urls = cluster.memory_urls
    assert urls[0] == cluster.memory_url
    assert [u.split("@")[1].split(":")[0].rsplit("-", 1)[-1] for u in urls[1:]] == [
        "node2", "node3"]
    for index, url in enumerate(urls):
        conn = cluster.pika_connection(pika.URLParameters(url))
        assert [c.node for c in cluster.nodes[index].connections] == [cluster.nodes[index]]
        conn.close()


def test_a_stopped_node_refuses_a_link_as_its_closed_port_would(cluster: Broker) -> None:
    cluster.nodes[1].stop()
    with pytest.raises(ConnectionRefusedError, match="node embroker-2@localhost is stopped"):
        MemoryLink(cluster, node=cluster.nodes[1])
    assert cluster.connections == {}


def test_pika_walks_its_list_of_memory_urls_to_a_running_node(cluster: Broker) -> None:
    cluster.nodes[0].stop()
    addresses = [pika.URLParameters(url) for url in cluster.memory_urls]
    conn = cluster.pika_connection(addresses)
    assert [len(node.connections) for node in cluster.nodes] == [0, 1, 0]
    conn.close()
    cluster.nodes[1].stop()
    cluster.nodes[2].stop()
    with pytest.raises(pika.exceptions.AMQPConnectionError):
        cluster.pika_connection(addresses)


def test_pika_on_a_node_that_stops_is_closed_and_reconnects_to_the_next(
        cluster: Broker) -> None:
    addresses = [pika.URLParameters(url) for url in cluster.memory_urls]
    conn = cluster.pika_connection(addresses)
    conn.channel().queue_declare("jobs", durable=True, arguments={"x-queue-type": "quorum"})
    cluster.nodes[0].stop()
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
        conn.process_data_events(0)
    assert (closed.value.reply_code, closed.value.reply_text) == (320, SHUTDOWN)
    again = cluster.pika_connection(addresses)
    channel = again.channel()
    channel.confirm_delivery()
    channel.basic_publish("", "jobs", b"after", pika.BasicProperties(delivery_mode=2))
    assert [m.body for m in cluster.queues["jobs"].messages] == [b"after"]
    assert cluster.queues["jobs"].placement.leader is not cluster.nodes[0]
    again.close()


def test_kombu_fails_over_along_its_memory_urls(cluster: Broker) -> None:
    cluster.nodes[0].stop()
    with kombu.Connection(";".join(cluster.kombu_urls), failover_strategy="round-robin",
                          connect_timeout=1) as connection:
        connection.ensure_connection(max_retries=3, interval_start=0, interval_step=0)
        queue = connection.SimpleQueue("jobs")
        queue.put({"n": 1})
        assert [len(node.connections) for node in cluster.nodes] == [0, 1, 0]
        assert queue.get(timeout=1).payload == {"n": 1}
        queue.close()


def test_aio_pika_robust_connection_retries_its_node_until_it_starts(
        cluster: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    refusals: list[str] = []

    def counted(*args: Any, **kwargs: Any) -> MemoryLink:
        try:
            return MemoryLink(*args, **kwargs)
        except ConnectionRefusedError as refused:
            refusals.append(str(refused.strerror))
            raise
    monkeypatch.setattr(embroker.memory.aio, "MemoryLink", counted)

    async def scenario() -> list[str]:
        second = cluster.nodes[1]
        connection = await cluster.aio_pika_connection(robust=True, node=second,
                                                       reconnect_interval=0.001)
        reconnected = asyncio.Event()
        connection.reconnect_callbacks.add(lambda *_: reconnected.set())
        second.stop()
        while len(refusals) < 2:  # (bounded by the scenario's own timeout)
            await asyncio.sleep(0.001)
        second.start()
        await asyncio.wait_for(reconnected.wait(), 5)
        channel = await connection.channel()
        await channel.declare_queue("back")
        nodes = [c.node.name for c in cluster.connections.values()]
        await connection.close()
        return nodes

    assert asyncio.run(asyncio.wait_for(scenario(), 10)) == ["embroker-2@localhost"]
    assert set(refusals) == {"Connection refused: node embroker-2@localhost is stopped"}
