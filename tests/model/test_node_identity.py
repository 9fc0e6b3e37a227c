"""One node identity (embroker.model.NodeIdentity, ``broker.node``): every place that reports
the node's name, host or cluster name reads it, over a Broker and over a served node named by
the tools, as RabbitMQ reports ``node()`` (rabbitmqctl status, /api/nodes, the event exchange's
and the firehose's ``node``, RabbitMQ 4's AMQP 1.0 ``node``, the stream protocol's advertised
host: rabbit_stream:host/0, v3.10.8)."""

from __future__ import annotations

import base64
import json
import urllib.request
from typing import Any

import pytest

from embroker import Broker, Server
from embroker.control._node import Node
from embroker.management import views
from embroker.model import Delivery
from embroker.model._node import NodeIdentity

from ..stream.test_raw_frames import advertised

EVENTS = "rabbitmq_event_exchange"


def _headers(broker: Broker) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``node`` an event (connection.created) and a firehose copy carry."""
    ch = broker.connect().channel()
    events = ch.queue_declare("", exclusive=True).queue
    ch.queue_bind(events, "amq.rabbitmq.event", "connection.created")
    traced = ch.queue_declare("", exclusive=True).queue
    ch.queue_bind(traced, "amq.rabbitmq.trace", "publish.#")
    broker.open_connection("/", user="guest", details={"peer_host": "127.0.0.1"})
    broker.vhost("/").tracing = True
    try:
        ch.basic_publish("", "nowhere", b"x")
    finally:
        broker.vhost("/").tracing = False
    event, trace = ch.basic_get(events, auto_ack=True), ch.basic_get(traced, auto_ack=True)
    assert isinstance(event, Delivery)
    assert isinstance(trace, Delivery)
    return event.properties["headers"], trace.properties["headers"]


def _reported(broker: Broker) -> set[str]:
    """Every node name the broker reports, in-process."""
    event, trace = _headers(broker)
    broker.connect().channel().queue_declare("node-q", durable=True, arguments={"x-queue-type": "quorum"})
    with broker.locked():
        queue = views.queue_info(broker.vhost("/").queues["node-q"])
    return {event["node"], trace["node"], queue["node"], queue["leader"],
            broker.node.name}


def test_an_unnamed_broker_reports_one_name_everywhere() -> None:
    broker = Broker(plugins=[EVENTS])
    assert broker.node == NodeIdentity("embroker@localhost", "localhost", "embroker")
    assert _reported(broker) == {"embroker@localhost"}


def test_a_broker_presenting_itself_as_rabbitmq_is_the_node_its_cluster_is_named_after() -> None:
    broker = Broker(plugins=[EVENTS], as_rabbitmq="4.1.x")
    assert broker.node.name == broker.node.cluster_name == broker.cluster_name == \
        "rabbit@embroker"
    assert _reported(broker) == {"rabbit@embroker"}


def test_naming_the_node_renames_it_everywhere_and_keeps_its_cluster_name() -> None:
    broker = Broker(plugins=[EVENTS])
    broker.name_node("rabbit@somehost")
    assert broker.node == NodeIdentity("rabbit@somehost", "somehost", "embroker")
    assert _reported(broker) == {"rabbit@somehost"}
    ch = broker.connect().channel()
    assert broker.plugins.events is not None
    assert broker.plugins.events.pid(ch).startswith("<rabbit@somehost.")


def test_a_name_without_a_host_is_at_localhost_and_names_its_cluster() -> None:
    assert NodeIdentity.named("rabbit") == NodeIdentity("rabbit", "localhost", "rabbit")


def _get(server: Server, path: str) -> Any:
    request = urllib.request.Request(server.management_url + "api" + path, headers={
        "authorization": "Basic " + base64.b64encode(b"guest:guest").decode()})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_a_node_the_tools_name_reports_that_name_on_every_surface() -> None:
    proton = pytest.importorskip("proton.utils")
    broker = Broker(plugins=[EVENTS], as_rabbitmq="4.1.x")
    with Server(broker, management_port=0, stream_port=0) as server:
        node = Node(broker, server, "rabbit@localhost")
        assert broker.node.name == node.name == "rabbit@localhost"
        assert node.status()["node"] == "rabbit@localhost"
        assert [n["name"] for n in _get(server, "/nodes")] == ["rabbit@localhost"]
        assert _get(server, "/overview")["node"] == "rabbit@localhost"
        assert _reported(broker) == {"rabbit@localhost"}
        c = proton.BlockingConnection(server.amqp10_url, timeout=5, allowed_mechs="PLAIN")
        try:
            assert c.conn.remote_properties["node"] == "rabbit@localhost"
            assert c.conn.remote_container == broker.cluster_name == "rabbit@embroker"
        finally:
            c.close()
        assert server.stream_port is not None
        properties, brokers = advertised("127.0.0.1", server.stream_port)
        assert properties["advertised_host"] == "localhost" == broker.node.host
        assert brokers[0][1] == "localhost"
