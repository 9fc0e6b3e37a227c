"""STOMP differential scenarios: what a raw STOMP client sees of embroker, compared with what
it saw of RabbitMQ 3.10.8's ``rabbitmq_stomp`` plugin (golden files, recorded with
``python -m tests.stomp.record``; see :mod:`tests.stomp.differential`).

- Offline each scenario runs on embroker (``Server(broker, listeners={"stomp": 0})``) and its
  lines are compared with the scenario's golden file.
- With ``EMBROKER_REFERENCE_URL`` each golden file is checked against a fresh RabbitMQ run too
  (its STOMP port: 61613); without it those tests skip.
"""

from __future__ import annotations

import difflib
import os
import socket
from collections.abc import Iterator

import pytest

from embroker import Broker
from embroker.server import Server
from tests.conformance import golden

from .differential import RECORD_COMMAND, EmbrokerPeer, ReferencePeer, path
from .scenarios import SCENARIOS

pytestmark = pytest.mark.differential

REFERENCE_STOMP_PORT = 61613


@pytest.fixture(scope="module")
def reference() -> str:
    url = os.environ.get("EMBROKER_REFERENCE_URL")
    if not url:
        pytest.skip("EMBROKER_REFERENCE_URL is not set")
    host = ReferencePeer(url).host
    try:
        socket.create_connection((host, REFERENCE_STOMP_PORT), timeout=5).close()
    except OSError as exc:
        pytest.fail(f"EMBROKER_REFERENCE_URL is set but {host}:{REFERENCE_STOMP_PORT} does not "
                    f"answer STOMP ({exc!r}): rabbitmq-plugins enable rabbitmq_stomp (or unset "
                    "EMBROKER_REFERENCE_URL to check the golden files alone)", pytrace=False)
    return url


@pytest.fixture(scope="module")
def embroker_peer() -> Iterator[EmbrokerPeer]:
    broker = Broker()
    with Server(broker, listeners={"stomp": 0}) as server:
        yield EmbrokerPeer(broker, server)
        assert server.errors == []
    broker._check()


#: Where embroker differs from RabbitMQ on purpose, by scenario: the line embroker shows in
#: place of RabbitMQ's. A frame that cannot be parsed: RabbitMQ 3.10.8's reader closes the
#: socket without a word (rabbit_stomp_reader:process_received_bytes/2 logs the reason and
#: stops); embroker sends an ERROR frame saying why first, as issue 46 asks ("a
#: garbage-sending socket gets an ERROR frame"), then closes the same way.
KNOWN_DIFFERENCES: dict[str, dict[str, str]] = {
    "header_escaping": {
        f"unknown escape {version}: <- ERROR ['content-length:38', 'content-type:text/plain', "
        "'message:Invalid frame', 'version:1.0,1.1,1.2'] b'Could not parse frame: "
        "bad_escape: \\\\t\\n'": f"unknown escape {version}: <- closed"
        for version in ("1.0", "1.2")},
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
    assert SCENARIOS[name](ReferencePeer(reference, REFERENCE_STOMP_PORT)) == \
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
