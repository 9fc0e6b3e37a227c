"""paho-mqtt 2.x with ``protocol=MQTTv5`` against embroker's MQTT listener under the RabbitMQ 4
profile, end to end: CONNACK's properties, user properties round-trip, a request/response
exchange, PUBACK "no matching subscribers", SUBACK codes."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from embroker import Broker
from embroker.server import Server

TIMEOUT = 5.0


class Paho5:
    def __init__(self, port: int, client_id: str) -> None:
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id,
                                  protocol=mqtt.MQTTv5, reconnect_on_failure=False)
        self.connacks: queue.Queue[tuple[Any, Any]] = queue.Queue()
        self.subacks: queue.Queue[list[Any]] = queue.Queue()
        self.pubacks: queue.Queue[tuple[int, Any]] = queue.Queue()
        self.messages: queue.Queue[mqtt.MQTTMessage] = queue.Queue()
        self.client.on_connect = lambda _c, _u, _f, rc, props: self.connacks.put((rc, props))
        self.client.on_subscribe = lambda _c, _u, _m, codes, _p: self.subacks.put(codes)
        self.client.on_publish = lambda _c, _u, mid, rc, _p: self.pubacks.put((mid, rc))
        self.client.on_message = lambda _c, _u, message: self.messages.put(message)
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        rc, self.connack_properties = self.connacks.get(timeout=TIMEOUT)
        assert rc == 0

    def subscribe(self, topic: str, qos: int = 0) -> list[Any]:
        self.client.subscribe(topic, qos)
        return self.subacks.get(timeout=TIMEOUT)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def port() -> Iterator[int]:
    broker = Broker(as_rabbitmq="4.0.5")
    with Server(broker, listeners={"mqtt": 0}) as server:
        number = server.listener_port("mqtt")
        assert number is not None
        yield number
    assert server.errors == []


def test_connack_properties(port: int) -> None:
    client = Paho5(port, "p1")
    try:
        props = client.connack_properties
        assert props.MaximumQoS == 1
        assert props.TopicAliasMaximum == 16
        assert props.SharedSubscriptionAvailable == 0
    finally:
        client.close()


def test_user_properties_and_request_response(port: int) -> None:
    server, requester = Paho5(port, "server"), Paho5(port, "requester")
    try:
        assert [c.value for c in server.subscribe("service/+", 1)] == [1]
        assert [c.value for c in requester.subscribe("replies/requester", 1)] == [1]
        request = Properties(PacketTypes.PUBLISH)
        request.ResponseTopic = "replies/requester"
        request.CorrelationData = b"id-1"
        request.UserProperty = [("trace", "t1")]
        request.ContentType = "text/plain"
        requester.client.publish("service/echo", b"ping", qos=1, properties=request)
        got = server.messages.get(timeout=TIMEOUT)
        assert got.payload == b"ping"
        assert got.properties.ResponseTopic == "replies/requester"
        assert got.properties.CorrelationData == b"id-1"
        assert ("trace", "t1") in got.properties.UserProperty
        assert got.properties.ContentType == "text/plain"
        reply = Properties(PacketTypes.PUBLISH)
        reply.CorrelationData = got.properties.CorrelationData
        server.client.publish(got.properties.ResponseTopic, b"pong", qos=1, properties=reply)
        answer = requester.messages.get(timeout=TIMEOUT)
        assert (answer.topic, answer.payload) == ("replies/requester", b"pong")
        assert answer.properties.CorrelationData == b"id-1"
    finally:
        server.close()
        requester.close()


def test_a_publish_no_queue_takes_is_acked_no_matching_subscribers(port: int) -> None:
    client = Paho5(port, "lonely")
    try:
        info = client.client.publish("nobody/here", b"x", qos=1)
        mid, rc = client.pubacks.get(timeout=TIMEOUT)
        assert mid == info.mid
        assert rc.value == 0x10
    finally:
        client.close()
