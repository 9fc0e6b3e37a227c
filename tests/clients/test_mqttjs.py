"""Node's mqtt.js (the ``mqtt`` package, 5.x) against embroker's MQTT listener
(mqtt://HOST:PORT) and its Web-MQTT listener (ws://HOST:PORT/ws, subprotocol ``mqtt``, with the
``ws`` package as the WebSocket):

- ``node/mqttjs.js``: connect (clean session), subscribe at QoS 1, publish at QoS 1, receive,
  end; at MQTT 3.1.1, and at 5.0 under the RabbitMQ 4 profile;
- ``node/mqttjs5.js``: MQTT 5.0 under the RabbitMQ 4 profile (RabbitMQ 4.0.5's plugin): CONNACK's
  properties, a publish's user properties, response topic, correlation data, content type,
  payload format indicator and expiry as the subscriber gets them, its Subscription
  Identifier, topic aliases both ways, PUBACK 0x10 (no matching subscribers);
- with ``EMBROKER_REFERENCE_URL`` set, ``node/mqttjs.js`` at 3.1.1 against the reference
  RabbitMQ 3.10.8 too (its MQTT plugin on ``EMBROKER_REFERENCE_MQTT_PORT``, else 1883, and its
  Web-MQTT plugin on 15675), whose output must be embroker's.

The packages are installed from npm into a temporary folder for the module; without node and
npm (or the network) the tests skip. Each script waits for what says a step is done (a CONNACK,
a SUBACK, a PUBACK, a message), never for time."""

from __future__ import annotations

import os
import shutil
import socket
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from embroker import Broker, ManualClock
from embroker.server import Server

from .conftest import node_packages, run_node, wait_until

NODE = Path(__file__).resolve().parent / "node"
SCRIPT = NODE / "mqttjs.js"
SCRIPT5 = NODE / "mqttjs5.js"
#: The reference's Web-MQTT port (its MQTT port is EMBROKER_REFERENCE_MQTT_PORT's, else 1883).
REFERENCE_WEB_MQTT = 15675
#: 4: MQTT 3.1.1; 5: MQTT 5.0, which embroker serves under the RabbitMQ 4 profile only.
VERSIONS = {"3.1.1": ("4", None), "5.0": ("5", "4.0.5")}


@pytest.fixture(scope="module")
def mqttjs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = node_packages(tmp_path_factory.mktemp("mqttjs"), SCRIPT, "mqtt@5", "ws@8")
    shutil.copy(SCRIPT5, where / SCRIPT5.name)
    return where


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def url(listener: str, host: str, port: int) -> str:
    return f"mqtt://{host}:{port}" if listener == "mqtt" else f"ws://{host}:{port}/ws"


def served(server: Server, listener: str) -> str:
    port = server.listener_port(listener)
    assert port is not None
    return url(listener, "127.0.0.1", port)


def basic(listener: str, topic: str) -> dict[str, Any]:
    """What ``node/mqttjs.js`` prints (``protocol``: the WebSocket subprotocol)."""
    seen: dict[str, Any] = {
        "sessionPresent": False, "granted": [1], "published": True,
        "message": {"topic": topic, "payload": "from mqtt.js", "qos": 1, "retain": False}}
    if listener == "web_mqtt":
        seen["protocol"] = "mqtt"
    return seen


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("listener", ["mqtt", "web_mqtt"])
def test_mqttjs_subscribes_publishes_and_receives(mqttjs: Path, listener: str,
                                                  version: str) -> None:
    level, as_rabbitmq = VERSIONS[version]
    broker = Broker(as_rabbitmq=as_rabbitmq)
    with Server(broker, listeners={listener: 0}) as server:
        assert run_node(mqttjs, SCRIPT, served(server, listener), "from/mqttjs",
                        unique("mqttjs"), level) == basic(listener, "from/mqttjs")
        wait_until(lambda: not broker.connections)  # ended (a clean session: its queue gone)
        assert not [name for name in broker.queues if name.startswith("mqtt-subscription-")]
        assert server.errors == []


@pytest.mark.parametrize("listener", ["mqtt", "web_mqtt"])
def test_mqttjs_at_mqtt_5_gets_properties_subscription_identifiers_aliases_and_puback_0x10(
        mqttjs: Path, listener: str) -> None:
    broker = Broker(as_rabbitmq="4.0.5", clock=ManualClock())  # (no time passes: expiry 60)
    with Server(broker, listeners={listener: 0}) as server:
        assert run_node(mqttjs, SCRIPT5, served(server, listener), "to/mqttjs", "to/nobody",
                        unique("mqttjs5")) == {
            "connack": {"sessionPresent": False, "reasonCode": 0, "properties": {
                "sessionExpiryInterval": 0, "topicAliasMaximum": 16, "maximumQoS": 1,
                "maximumPacketSize": 268435455, "sharedSubscriptionAvailable": False}},
            "granted": [1],
            # mqtt.js's own aliases (autoAssignTopicAlias): the second publish to the topic
            # names no topic, the broker routes it by the alias
            "sent": [{"topic": "to/mqttjs", "topicAlias": 1}, {"topic": "", "topicAlias": 1},
                     {"topic": "to/nobody", "topicAlias": 2}],
            "first": {
                "wire": {"topic": "to/mqttjs", "topicAlias": 1},
                "topic": "to/mqttjs", "payload": "first", "qos": 1, "retain": False,
                "properties": {
                    "payloadFormatIndicator": True, "messageExpiryInterval": 60,
                    "contentType": "text/plain", "responseTopic": "embroker/replies",
                    "correlationData": "request-1", "subscriptionIdentifier": 7,
                    "topicAlias": 1,
                    "userProperties": {"x-from": "mqtt.js", "twice": ["one", "two"]}}},
            # the broker's alias for the topic (the client's Topic Alias Maximum is 4): no
            # topic on the wire, mqtt.js puts it back
            "second": {
                "wire": {"topic": "", "topicAlias": 1},
                "topic": "to/mqttjs", "payload": "second", "qos": 1, "retain": False,
                "properties": {"subscriptionIdentifier": 7, "topicAlias": 1}},
            # the third PUBACK is 0x10 (no matching subscribers); mqtt.js takes it as
            # success: its publish callback has no error and the PUBLISH it sent, no code
            "pubacks": [0, 0, 16],
            "nowhere": {"callback": "publish"}}
        wait_until(lambda: not broker.connections)
        assert not [name for name in broker.queues if name.startswith("mqtt-subscription-")]
        assert server.errors == []


# -- the reference RabbitMQ 3.10.8 --------------------------------------------------------------


@pytest.fixture
def reference() -> tuple[str, dict[str, int]]:
    """The reference's host and its MQTT and Web-MQTT ports (skips without the reference)."""
    if not os.environ.get("EMBROKER_REFERENCE_URL"):
        pytest.skip("needs EMBROKER_REFERENCE_URL (the reference RabbitMQ)")
    host = urlsplit(os.environ["EMBROKER_REFERENCE_URL"]).hostname or "127.0.0.1"
    ports = {"mqtt": int(os.environ.get("EMBROKER_REFERENCE_MQTT_PORT", "1883")),
             "web_mqtt": REFERENCE_WEB_MQTT}
    for name, port in ports.items():
        try:
            socket.create_connection((host, port), timeout=1).close()
        except OSError:
            pytest.skip(f"the reference's {name} listener does not answer on {host}:{port}")
    return host, ports


def _gone_on_reference(queue: str) -> bool:
    import pika
    import pika.exceptions

    connection = pika.BlockingConnection(pika.URLParameters(os.environ["EMBROKER_REFERENCE_URL"]))
    try:
        connection.channel().queue_declare(queue, passive=True)
    except pika.exceptions.ChannelClosedByBroker as closed:
        if closed.reply_code != 404:
            raise
        return True
    finally:
        if connection.is_open:
            connection.close()
    return False


@pytest.mark.parametrize("listener", ["mqtt", "web_mqtt"])
def test_mqttjs_sees_embroker_as_the_reference_rabbitmq(
        mqttjs: Path, reference: tuple[str, dict[str, int]], listener: str) -> None:
    host, ports = reference
    topic = unique("embroker/mqttjs")  # (one per run: nothing else on the reference gets it)
    on_reference_id = unique("mqttjs")
    on_reference = run_node(mqttjs, SCRIPT, url(listener, host, ports[listener]), topic,
                            on_reference_id, "4")
    # a clean session: the reference deleted its queue as the connection ended
    wait_until(lambda: _gone_on_reference(f"mqtt-subscription-{on_reference_id}qos1"))
    broker = Broker()
    with Server(broker, listeners={listener: 0}) as server:
        on_embroker = run_node(mqttjs, SCRIPT, served(server, listener), topic,
                               unique("mqttjs"), "4")
        assert server.errors == []
    assert on_embroker == on_reference == basic(listener, topic)
