"""MQTT differential scenarios: what a raw MQTT client sees of embroker, compared with what it
saw of RabbitMQ 3.10.8's ``rabbitmq_mqtt`` plugin (golden files, recorded with
``python -m tests.mqtt.record``; see :mod:`tests.mqtt.differential`).

- Offline each scenario runs on embroker (``Server(broker, listeners={"mqtt": 0})``, with its
  management API and a node for ``rabbitmqctl``) and its lines are compared with the
  scenario's golden file.
- With ``EMBROKER_REFERENCE_URL`` each golden file is checked against a fresh RabbitMQ run too
  (its MQTT port: 1884 here, as a mosquitto holds 1883); without it those tests skip.
"""

from __future__ import annotations

import difflib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from embroker import Broker
from embroker.server import Server
from tests.conformance import golden

from . import wire
from .differential import RECORD_COMMAND, EmbrokerPeer, ReferencePeer, path
from .scenarios import SCENARIOS

pytestmark = pytest.mark.differential

REFERENCE_MQTT_PORT = 1884


@pytest.fixture(scope="module")
def reference() -> str:
    url = os.environ.get("EMBROKER_REFERENCE_URL")
    if not url:
        pytest.skip("EMBROKER_REFERENCE_URL is not set")
    host = ReferencePeer(url).host
    answer = b""
    try:
        with socket.create_connection((host, REFERENCE_MQTT_PORT), timeout=5) as sock:
            sock.sendall(wire.connect("embroker-probe"))
            answer = sock.recv(4)
    except OSError as exc:
        answer = repr(exc).encode()
    if answer != b"\x20\x02\x00\x00":
        pytest.fail(f"EMBROKER_REFERENCE_URL is set but {host}:{REFERENCE_MQTT_PORT} does not "
                    f"answer MQTT (CONNECT got {answer!r}): rabbitmq-plugins enable "
                    "rabbitmq_mqtt with mqtt.listeners.tcp.default = 1884 (or unset "
                    "EMBROKER_REFERENCE_URL to check the golden files alone)", pytrace=False)
    return url


@pytest.fixture(scope="module")
def embroker_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbrokerPeer]:
    from embroker.control._node import Node

    nodes = tmp_path_factory.mktemp("nodes")
    saved = os.environ.get("EMBROKER_NODES_DIR")
    os.environ["EMBROKER_NODES_DIR"] = str(nodes)
    name = f"mqtt-{os.getpid()}@localhost"
    broker = Broker()
    try:
        with Server(broker, listeners={"mqtt": 0}, management_port=0) as server, \
                Node(broker, server, name, data_dir=Path(nodes)):
            yield EmbrokerPeer(broker, server, name)
            assert server.errors == []
    finally:
        if saved is None:
            os.environ.pop("EMBROKER_NODES_DIR", None)
        else:
            os.environ["EMBROKER_NODES_DIR"] = saved
    broker._check()


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


def _compare(recorded: list[str], seen: list[str], name: str) -> None:
    known = KNOWN_DIFFERENCES.get(name, {})
    seen = [known.get(line, line) for line in seen]
    if seen != recorded:
        pytest.fail("embroker differs from RabbitMQ:\n" + "\n".join(difflib.unified_diff(
            recorded, seen, fromfile=f"RabbitMQ ({golden.relative(path(name))})",
            tofile="embroker", lineterm="", n=1)), pytrace=False)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_golden(name: str, embroker_peer: EmbrokerPeer) -> None:
    """embroker's observations equal RabbitMQ's, as recorded in the scenario's golden file."""
    recorded = golden.read(path(name))
    if recorded is None:
        pytest.fail(f"no golden file {golden.relative(path(name))}: record it with "
                    f"EMBROKER_REFERENCE_URL=amqp://guest:guest@127.0.0.1:5672/ "
                    f"{RECORD_COMMAND} {name}", pytrace=False)
    _compare(recorded, SCENARIOS[name](embroker_peer), name)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_golden_file_is_what_rabbitmq_does(name: str, reference: str) -> None:
    """With the reference, each golden file still holds what RabbitMQ does."""
    assert SCENARIOS[name](ReferencePeer(reference, REFERENCE_MQTT_PORT)) == \
        golden.read(path(name))


def test_every_golden_file_belongs_to_a_scenario() -> None:
    files = {p.stem for p in path("x").parent.glob("*.txt")}
    assert files == set(SCENARIOS)


def test_the_recorder_refuses_embroker() -> None:
    from .record import main

    for broker in (Broker(), Broker(as_rabbitmq="3.10.8")):
        with broker.serve() as server:
            with pytest.raises(SystemExit) as refused:
                main(["--url", server.url, "--check"])
            assert refused.value.code == 2
