"""Node's mqtt.js (the ``mqtt`` package, 5.x) over embroker's Web-MQTT listener
(ws://.../ws, subprotocol ``mqtt``), with the ``ws`` package as its WebSocket: connect,
subscribe at QoS 1, publish at QoS 1, receive, end (``node/mqttjs.js``). The packages are
installed from npm into a temporary folder for the session; without node and npm (or the
network) the test skips. The script was checked against the reference RabbitMQ 3.10.8's
Web-MQTT plugin (127.0.0.1:15675/ws) too, with the same output."""

from __future__ import annotations

from pathlib import Path

import pytest

from embroker import Broker
from embroker.server import Server

from .conftest import node_packages, run_node, wait_until

SCRIPT = Path(__file__).resolve().parent / "node" / "mqttjs.js"


@pytest.fixture(scope="module")
def mqttjs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return node_packages(tmp_path_factory.mktemp("mqttjs"), SCRIPT, "mqtt@5", "ws@8")


def test_mqttjs_subscribes_publishes_and_receives_over_web_mqtt(mqttjs: Path) -> None:
    broker = Broker()
    with Server(broker, listeners={"web_mqtt": 0}) as server:
        url = f"ws://127.0.0.1:{server.listener_port('web_mqtt')}/ws"
        assert run_node(mqttjs, SCRIPT, url, "from/mqttjs") == {
            "protocol": "mqtt", "sessionPresent": False, "granted": [1], "published": True,
            "message": {"topic": "from/mqttjs", "payload": "from mqtt.js", "qos": 1,
                        "retain": False}}
        wait_until(lambda: not broker.connections)  # ended (a clean session: its queue gone)
        assert not [name for name in broker.queues if name.startswith("mqtt-subscription-")]
        assert server.errors == []
