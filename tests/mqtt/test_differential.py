"""MQTT differential scenarios: what a raw MQTT client sees of embroker, compared with what it
saw of RabbitMQ 3.10.8's ``rabbitmq_mqtt`` plugin (golden files, recorded with
``python -m tests.mqtt.record``; see :mod:`tests.mqtt.differential`).

- Offline each scenario runs on embroker (``Server(broker, listeners={"mqtt": 0})``, with its
  management API and a node for ``rabbitmqctl``) and its lines are compared with the
  scenario's golden file.
- With ``EMBROKER_REFERENCE_URL`` each golden file is checked against a fresh RabbitMQ run too
  (its MQTT port: 1884 here, as a mosquitto holds 1883); without it those tests skip.

The tests themselves are :class:`tests.conformance.differential_kit.GoldenFileTests`'.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from embroker.server import Server
from tests.conformance import differential_kit as kit

from . import wire
from .differential import GOLDEN, EmbrokerPeer, ReferencePeer
from .scenarios import SCENARIOS

pytestmark = pytest.mark.differential

def _mqtt_problem(url: str) -> str | None:
    """Why the reference at ``url`` cannot be used for MQTT (None: it can)."""
    peer = ReferencePeer(url)
    answer = b""
    try:
        with socket.create_connection((peer.host, peer.mqtt_port), timeout=5) as sock:
            sock.sendall(wire.connect("embroker-probe"))
            answer = sock.recv(4)
    except OSError as exc:
        answer = repr(exc).encode()
    if answer != b"\x20\x02\x00\x00":
        return (f"EMBROKER_REFERENCE_URL is set but {peer.host}:{peer.mqtt_port} does not "
                f"answer MQTT (CONNECT got {answer!r}): rabbitmq-plugins enable "
                "rabbitmq_mqtt with mqtt.listeners.tcp.default = 1884 (or unset "
                "EMBROKER_REFERENCE_URL to check the golden files alone)")
    return None


@pytest.fixture(scope="module")
def reference() -> str:
    return kit.reference_url(_mqtt_problem)


@pytest.fixture(scope="module")
def embroker_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbrokerPeer]:
    from embroker.control._node import Node

    nodes = tmp_path_factory.mktemp("nodes")
    saved = os.environ.get("EMBROKER_NODES_DIR")
    os.environ["EMBROKER_NODES_DIR"] = str(nodes)
    name = f"mqtt-{os.getpid()}@localhost"
    try:
        with kit.served(lambda broker: Server(broker, listeners={"mqtt": 0},
                                              management_port=0)) as (broker, server), \
                Node(broker, server, name, data_dir=Path(nodes)):
            yield EmbrokerPeer(broker, server, name)
    finally:
        if saved is None:
            os.environ.pop("EMBROKER_NODES_DIR", None)
        else:
            os.environ["EMBROKER_NODES_DIR"] = saved


#: Where embroker differs from RabbitMQ on purpose, by scenario: the line embroker shows in
#: place of RabbitMQ's. A packet RabbitMQ 3.10.8's parser has no clause for (a reserved type,
#: PUBREC, PUBREL), or a remaining length past four bytes: its reader waits for more bytes
#: forever (rabbit_mqtt_frame:parse_frame/3's catch-all asks for more), holding the socket and
#: everything sent after; embroker closes the connection at once (every buffer has a bound).
KNOWN_DIFFERENCES: dict[str, dict[str, str]] = {
    "malformed_packets": {
        f"{case}: {step}<- closed": f"{case}: {step}<- timeout"
        for case in ("reserved type 0", "reserved type 15", "five-byte remaining length",
                     "PUBREL", "PUBREC")
        for step in ("", "state ")},
}


class TestGoldenFiles(kit.GoldenFileTests):
    files = GOLDEN
    scenarios = SCENARIOS
    known_differences = KNOWN_DIFFERENCES
    reference_peer = ReferencePeer
