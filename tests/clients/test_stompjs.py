"""Node's @stomp/stompjs over embroker's Web-STOMP listener (ws://.../ws), with the ``ws`` package
as its WebSocket: connect, subscribe (client-individual acks), publish, receive, ack,
disconnect (``node/stompjs.js``). The packages are installed from npm into a temporary folder
for the session; without node and npm (or the network) the test skips. The script was checked
against the reference RabbitMQ 3.10.8's Web-STOMP plugin (15674) too, with the same output but
for the queue's name."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from embroker import Broker
from embroker.server import Server

from .conftest import wait_until

SCRIPT = Path(__file__).resolve().parent / "node" / "stompjs.js"


@pytest.fixture(scope="module")
def stompjs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("needs node and npm")
    where = tmp_path_factory.mktemp("stompjs")
    done = subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund",
                           "@stomp/stompjs@7", "ws@8"], cwd=where, capture_output=True,
                          text=True, timeout=180, check=False)
    if done.returncode != 0:
        pytest.skip(f"npm could not install @stomp/stompjs and ws: {done.stderr.strip()[-200:]}")
    shutil.copy(SCRIPT, where / SCRIPT.name)
    return where


def test_stompjs_subscribes_publishes_receives_and_acks_over_web_stomp(stompjs: Path) -> None:
    broker = Broker()
    with Server(broker, listeners={"web_stomp": 0}) as server:
        url = f"ws://127.0.0.1:{server.listener_port('web_stomp')}/ws"
        done = subprocess.run(["node", SCRIPT.name, url, "from-node"], cwd=stompjs,
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout.strip().splitlines()[-1]) == {
            "protocol": "v12.stomp", "version": "1.2", "server": "RabbitMQ/3.10.8",
            "body": "from stompjs", "acked": True,
            "headers": {"destination": "/queue/from-node", "subscription": "node-sub",
                        "content-type": "text/plain", "x-from": "node"}}
        queue = broker.queues["from-node"]
        wait_until(lambda: queue.consumer_count == 0)  # disconnected (unacked would be back)
        assert queue.message_count == 0
        assert server.errors == []
