"""Node's mqtt.js (the ``mqtt`` package, 5.x) against embroker's MQTT listener
(mqtt://HOST:PORT) and its Web-MQTT listener (ws://HOST:PORT/ws, subprotocol ``mqtt``, with the
``ws`` package as the WebSocket):

- ``node/mqttjs.js``: connect (clean session), subscribe at QoS 1, publish at QoS 1, receive,
  end; at MQTT 3.1.1, and at 5.0 under the RabbitMQ 4 profile;
- ``node/mqttjs5.js``: MQTT 5.0 under the RabbitMQ 4 profile (RabbitMQ 4.0.5's plugin): CONNACK's
  properties, a publish's user properties, response topic, correlation data, content type,
  payload format indicator and expiry as the subscriber gets them, its Subscription
  Identifier, topic aliases both ways, PUBACK 0x10 (no matching subscribers);

The packages are installed from npm into a temporary folder for the module; without node and
npm (or the network) the tests skip. Each script waits for what says a step is done (a CONNACK,
a SUBACK, a PUBACK, a message), never for time."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from embroker import Broker, ManualClock
from embroker.server import Server

from .conftest import node_packages, run_node, wait_until

NODE = Path(__file__).resolve().parent / "node"
SCRIPT = NODE / "mqttjs.js"
SCRIPT5 = NODE / "mqttjs5.js"
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

