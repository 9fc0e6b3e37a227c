"""Every node of a cluster has its own listeners (``Broker(nodes=3)``, ``broker.serve_nodes()``,
``broker.serve(node=...)``): a client connects to a node, and a client's list of addresses is a
list of nodes. A node's ``stop_app`` stops that node alone, as ``rabbitmqctl -n NODE stop_app``
on a RabbitMQ 3.10.8 cluster does: its listeners close (connecting is refused), its clients are
closed with 320, the others' listeners serve on and their clients see its queues down
(tests/model/test_node_stop.py has the model's side). Real clients over TCP, free ports."""

from __future__ import annotations

import socket

import pika
import pytest
from pika.exceptions import ChannelClosedByBroker, ConnectionClosedByBroker

from embroker import Broker
from embroker.model import AMQP_091, AMQP_10, STREAM
from embroker.server import NodeServers, node_ports
from embroker.stream import Code, Fields, Key, response_key
from embroker.testing import wait_until
from tests.mqtt import wire as mqtt_wire
from tests.mqtt.client import RawMqtt
from tests.stomp.client import RawStomp
from tests.stream.test_raw_frames import RawClient

SHUTDOWN = "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'"
DOWN = ("NOT_FOUND - home node 'embroker-2@localhost' of durable queue 'orders' in vhost '/' "
        "is down or inaccessible")


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


def _connect(url: str) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(url))


def _closed_by_broker(conn: pika.BlockingConnection) -> tuple[int, str]:
    with pytest.raises(ConnectionClosedByBroker) as closed:
        wait_until(lambda: conn.process_data_events(0.01) and False)
    return closed.value.reply_code, closed.value.reply_text


# -- a listener per node ------------------------------------------------------------------------

def test_each_node_has_its_own_port_and_its_clients_connect_to_it(
        served_cluster: tuple[Broker, NodeServers]) -> None:
    broker, servers = served_cluster
    assert [s.node for s in servers] == broker.nodes
    assert len({s.port for s in servers}) == 3
    connections = [_connect(url) for url in servers.urls]
    assert [len(node.connections) for node in broker.nodes] == [1, 1, 1]
    assert [node.connections[0].node for node in broker.nodes] == broker.nodes
    for conn in connections:
        conn.close()


def test_serve_takes_the_node_it_serves_by_name_or_node() -> None:
    broker = Broker(nodes=2)
    with broker.serve(node="embroker-2@localhost") as server:
        assert server.node is broker.nodes[1]
        _connect(server.url).close()
    with pytest.raises(ValueError, match="no node of this broker; its nodes are "
                                         "embroker@localhost, embroker-2@localhost"):
        broker.serve(node="embroker-3@localhost")
    with broker.serve() as first:  # (by default: the first node, as a broker of one node)
        assert first.node is broker.nodes[0]


def test_every_protocol_opens_its_connection_on_the_node_its_listener_serves() -> None:
    """AMQP 0-9-1 and 1.0 (the sniffing port), the stream protocol, STOMP and MQTT (the
    direct connection of RabbitMQ 3.10's plugins): each client's connection is the listener's
    node's."""
    proton_utils = pytest.importorskip("proton.utils")
    broker = Broker(nodes=3)
    third = broker.nodes[2]
    with broker.serve(node=third, stream_port=0, stomp_port=0, mqtt_port=0) as server:
        amqp = _connect(server.url)
        amqp10 = proton_utils.BlockingConnection(server.amqp10_url, timeout=5)
        assert server.stream_port is not None
        assert server.stomp_port is not None
        assert server.mqtt_port is not None
        stream = RawClient("127.0.0.1", server.stream_port)
        stream.open()
        stomp = RawStomp("127.0.0.1", server.stomp_port)
        assert not isinstance(stomp.connect(), str)
        mqtt = RawMqtt("127.0.0.1", server.mqtt_port)
        mqtt.send(mqtt_wire.connect("on-third", user="guest", password="guest"))
        assert not isinstance(mqtt.read(), str)
        opened = wait_until(lambda: len(third.connections) == 5 and third.connections)
        assert {c.kind for c in opened} >= {AMQP_091, AMQP_10, STREAM}
        assert broker.nodes[0].connections == broker.nodes[1].connections == []
        assert server.stream_advertised_host == third.identity.host
        amqp.close()
        amqp10.close()
        for raw in (stream.sock, stomp, mqtt):
            raw.close()
    assert server.errors == []


def test_the_stream_protocols_metadata_names_each_nodes_own_listener() -> None:
    """rabbit_stream_reader's Metadata asks each node of a stream for its endpoint
    (``rabbit_stream:host/0``, ``port/0``): each node's own stream listener; a stopped node is
    left out (tests/stream/test_cluster.py has the rules, on one connection)."""
    broker = Broker(nodes=3)
    broker.connect(node=broker.nodes[1]).channel().queue_declare(
        "st", durable=True, arguments={"x-queue-type": "stream"})  # (led by node 2, on all)
    with broker.serve_nodes(stream_port=0) as servers:
        ports = [s.stream_port or 0 for s in servers]
        assert 0 not in ports

        def metadata() -> tuple[list[tuple[str, int]], int, list[int]]:
            client = RawClient("127.0.0.1", ports[0])
            client.open()
            key, body = client.exchange(client.request(Key.METADATA).strings(["st"]).frame())
            client.sock.close()
            assert key == response_key(Key.METADATA)
            f = Fields(body)
            f.uint32()
            brokers = [(f.uint16(), f.string(), f.uint32())[1:] for _ in range(f.count())]
            assert (f.count(), f.string(), f.uint16()) == (1, "st", Code.OK)
            return brokers, f.uint16(), [f.uint16() for _ in range(f.count())]

        brokers, leader, replicas = metadata()
        assert brokers == sorted(("localhost", port) for port in ports)
        assert brokers[leader] == ("localhost", ports[1])
        assert sorted(brokers[r][1] for r in replicas) == sorted([ports[0], ports[2]])
        servers.stop_node("embroker-3@localhost")
        brokers, leader, replicas = metadata()
        assert brokers == sorted(("localhost", port) for port in ports[:2])
        assert brokers[leader] == ("localhost", ports[1])
        assert [brokers[r] for r in replicas] == [("localhost", ports[0])]
    assert all(s.errors == [] for s in servers)


def test_in_process_clients_choose_their_node() -> None:
    broker = Broker(nodes=2)
    broker.connect(node="embroker-2@localhost").channel().queue_declare("here")
    assert broker.queues["here"].placement.leader is broker.nodes[1]
    assert broker.connect(node=broker.nodes[0]).channel().queue_declare("there").queue \
        == "there"
    assert broker.queues["there"].placement.leader is broker.nodes[0]


def test_the_next_nodes_take_the_ports_after_the_first_nodes() -> None:
    settings = {"port": 5672, "management": 15672, "stomp_port": 0, "mqtt_port": None,
                "heartbeat": 30, "listeners": {"stomp": 61613, "mqtt": 0}}
    assert node_ports(settings, 2) == {
        "port": 5674, "management": 15674, "stomp_port": 0, "mqtt_port": None,
        "heartbeat": 30, "listeners": {"stomp": 61615, "mqtt": 0}}
    assert node_ports({"management": True}, 1) == {"management": True}  # (any free port)


def test_servers_are_found_by_node_and_a_node_not_served_is_named() -> None:
    broker = Broker(nodes=2)
    with broker.serve_nodes(management=True) as servers:
        assert servers.server("embroker-2@localhost") is servers[1]
        assert servers.server(broker.nodes[0]) is servers[0]
        assert servers[0].management_port != servers[1].management_port
        with pytest.raises(LookupError, match="no listener serves node rabbit@elsewhere; the "
                                              "nodes served are embroker@localhost, "
                                              "embroker-2@localhost"):
            servers.server("rabbit@elsewhere")
        with pytest.raises(ValueError, match="serves every node"):
            broker.serve_nodes(node="embroker@localhost")
    assert not any(s.running for s in servers)


# -- a node stops and starts -------------------------------------------------------------------

def test_a_stopped_nodes_listener_refuses_connections_and_the_others_serve_on(
        served_cluster: tuple[Broker, NodeServers]) -> None:
    broker, servers = served_cluster
    on_second, on_first = _connect(servers.urls[1]), _connect(servers.urls[0])
    servers.stop_node("embroker-2@localhost")
    assert _closed_by_broker(on_second) == (320, SHUTDOWN)
    assert not servers[1].app_running
    assert not broker.nodes[1].running
    assert _refused(servers[1].port)
    assert not _refused(servers[0].port)
    assert not _refused(servers[2].port)
    assert on_first.is_open
    on_first.channel().queue_declare("still-served")
    _connect(servers.urls[2]).close()
    servers.start_node("embroker-2@localhost")
    assert broker.nodes[1].running
    assert not _refused(servers[1].port)
    again = _connect(servers.urls[1])
    assert broker.nodes[1].connections[0].node is broker.nodes[1]
    again.close()
    on_first.close()


def test_a_node_stopped_in_the_model_closes_its_listener_and_started_opens_it(
        served_cluster: tuple[Broker, NodeServers]) -> None:
    """``Node.stop()`` called directly (a test's model-level fault, the fault API) is the same
    stop as ``stop_app``: its listener refuses connections until ``Node.start()``."""
    broker, servers = served_cluster
    on_second = _connect(servers.urls[1])
    broker.nodes[1].stop()
    assert _closed_by_broker(on_second) == (320, SHUTDOWN)
    wait_until(lambda: not servers[1].app_running)
    assert _refused(servers[1].port)
    assert not _refused(servers[0].port)
    broker.nodes[1].start()
    wait_until(lambda: servers[1].app_running)
    again = _connect(servers.urls[1])
    assert [c.node for c in broker.nodes[1].connections] == [broker.nodes[1]]
    again.close()


def test_pika_walks_its_address_list_to_the_next_node_when_one_is_stopped(
        served_cluster: tuple[Broker, NodeServers]) -> None:
    broker, servers = served_cluster
    servers.stop_node(broker.nodes[0])
    addresses = [pika.URLParameters(url) for url in servers.urls]
    conn = pika.BlockingConnection(addresses)  # (node 1 refuses: pika tries node 2)
    assert [len(node.connections) for node in broker.nodes] == [0, 1, 0]
    conn.close()


def test_a_durable_classic_queue_homed_on_a_stopped_node_is_down_for_the_other_nodes_clients(
        served_cluster: tuple[Broker, NodeServers]) -> None:
    """RabbitMQ 3.10.8's 404 for every operation on it while its home node is stopped; back
    with its persistent messages once the node starts."""
    broker, servers = served_cluster
    declaring = _connect(servers.urls[1])
    ch = declaring.channel()
    ch.confirm_delivery()
    ch.queue_declare("orders", durable=True)
    ch.basic_publish("", "orders", b"kept", pika.BasicProperties(delivery_mode=2))
    assert broker.queues["orders"].placement.leader is broker.nodes[1]
    servers.stop_node("embroker-2@localhost")
    _closed_by_broker(declaring)
    client = _connect(servers.urls[0])
    with pytest.raises(ChannelClosedByBroker) as refused:
        client.channel().queue_declare("orders", durable=True)
    assert (refused.value.reply_code, refused.value.reply_text) == (404, DOWN)
    with pytest.raises(ChannelClosedByBroker) as refused:
        client.channel().basic_get("orders")
    assert (refused.value.reply_code, refused.value.reply_text) == (404, DOWN)
    servers.start_node("embroker-2@localhost")
    ch = client.channel()
    assert ch.queue_declare("orders", durable=True, passive=True).method.message_count == 1
    method, _properties, body = ch.basic_get("orders", auto_ack=True)
    assert method is not None
    assert body == b"kept"
    client.close()


def test_the_last_node_stopping_is_the_clusters_restart(
        served_cluster: tuple[Broker, NodeServers]) -> None:
    broker, servers = served_cluster
    conn = _connect(servers.urls[0])
    conn.channel().queue_declare("transient")
    for node in broker.nodes:
        servers.stop_node(node)
    assert all(_refused(s.port) for s in servers)
    servers.start_node("embroker-3@localhost")
    assert "transient" not in broker.queues
    _connect(servers.urls[2]).close()


def test_a_nodes_alarm_is_its_own_and_ends_when_it_stops(
        served_cluster: tuple[Broker, NodeServers]) -> None:
    """Each node's memory monitor raises and clears its own alarm; any node's blocks the
    cluster's publishers (rabbit_alarm), and a node that stops takes its alarms with it."""
    broker, servers = served_cluster
    servers[1].set_vm_memory_high_watermark(0)  # (measured now: node 2 is over its limit)
    assert broker.alarms == ["memory"]
    servers[0].set_vm_memory_high_watermark(1)  # (node 1 is not: node 2's alarm stays)
    assert broker.alarms == ["memory"]
    assert broker.publishers_blocked
    servers.stop_node("embroker-2@localhost")
    assert broker.alarms == []
    assert not broker.publishers_blocked


def test_a_broker_of_one_node_stops_its_application_as_before() -> None:
    """One node: stop_app is the restart it always was (its node never shows stopped)."""
    broker = Broker()
    with broker.serve() as server:
        conn = _connect(server.url)
        conn.channel().queue_declare("gone")
        server.stop_app()
        assert _closed_by_broker(conn) == (320, SHUTDOWN)
        assert broker.nodes[0].running
        assert "gone" not in broker.queues
        server.start_app()
        _connect(server.url).close()
    assert server.errors == []
