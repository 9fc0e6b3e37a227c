"""Node's @stomp/stompjs over embroker's Web-STOMP listener (ws://.../ws), with the ``ws`` package
as its WebSocket: connect, subscribe (client-individual acks), publish, receive, ack,
disconnect (``node/stompjs.js``). The packages are installed from npm into a temporary folder
for the session; without node and npm (or the network) the test skips. The script was checked
against the reference RabbitMQ 3.10.8's Web-STOMP plugin (15674) too, with the same output but
for the queue's name."""

from __future__ import annotations

from pathlib import Path

import pytest

from embroker import Broker
from embroker.server import Server

from .conftest import node_packages, run_node, wait_until

SCRIPT = Path(__file__).resolve().parent / "node" / "stompjs.js"


@pytest.fixture(scope="module")
def stompjs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return node_packages(tmp_path_factory.mktemp("stompjs"), SCRIPT, "@stomp/stompjs@7", "ws@8")


def test_stompjs_subscribes_publishes_receives_and_acks_over_web_stomp(stompjs: Path) -> None:
    broker = Broker()
    with Server(broker, listeners={"web_stomp": 0}) as server:
        url = f"ws://127.0.0.1:{server.listener_port('web_stomp')}/ws"
        assert run_node(stompjs, SCRIPT, url, "from-node") == {
            "protocol": "v12.stomp", "version": "1.2", "server": "RabbitMQ/3.10.8",
            "body": "from stompjs", "acked": True,
            "headers": {"destination": "/queue/from-node", "subscription": "node-sub",
                        "content-type": "text/plain", "x-from": "node"}}
        queue = broker.queues["from-node"]
        wait_until(lambda: queue.consumer_count == 0)  # disconnected (unacked would be back)
        assert queue.message_count == 0
        assert server.errors == []
