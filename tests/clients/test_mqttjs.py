"""Node's mqtt.js (the ``mqtt`` package, 5.x) against embroker's MQTT listener
(mqtt://HOST:PORT) and its Web-MQTT listener (ws://HOST:PORT/ws, subprotocol ``mqtt``, with the
``ws`` package as the WebSocket):

- ``node/mqttjs.js``: connect (clean session), subscribe at QoS 1, publish at QoS 1, receive,
  end; at MQTT 3.1.1, and at 5.0 under the RabbitMQ 4 profile.

The packages are installed from npm into a temporary folder for the module; without node and
npm (or the network) the tests skip. Each script waits for what says a step is done (a CONNACK,
a SUBACK, a PUBACK, a message), never for time."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from embroker import Broker
from embroker.server import Server

from .conftest import node_packages, run_node, wait_until

NODE = Path(__file__).resolve().parent / "node"
SCRIPT = NODE / "mqttjs.js"
#: 4: MQTT 3.1.1; 5: MQTT 5.0, which embroker serves under the RabbitMQ 4 profile only.
VERSIONS = {"3.1.1": ("4", None), "5.0": ("5", "4.0.5")}


@pytest.fixture(scope="module")
def mqttjs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return node_packages(tmp_path_factory.mktemp("mqttjs"), SCRIPT, "mqtt@5", "ws@8")


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
