"""STOMP differential scenarios: what a raw STOMP client sees of embroker, compared with what
it saw of RabbitMQ 3.10.8's ``rabbitmq_stomp`` plugin (golden files, recorded with
``python -m tests.stomp.record``; see :mod:`tests.stomp.differential`).

- Offline each scenario runs on embroker (``Server(broker, listeners={"stomp": 0})``) and its
  lines are compared with the scenario's golden file.
- With ``EMBROKER_REFERENCE_URL`` each golden file is checked against a fresh RabbitMQ run too
  (its STOMP port: 61613); without it those tests skip.

The tests themselves are :class:`tests.conformance.differential_kit.GoldenFileTests`'.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from embroker.server import Server
from tests.conformance import differential_kit as kit

from .differential import GOLDEN, EmbrokerPeer, ReferencePeer
from .scenarios import SCENARIOS

pytestmark = pytest.mark.differential

def _stomp_problem(url: str) -> str | None:
    """Why the reference at ``url`` cannot be used for STOMP (None: it can)."""
    peer = ReferencePeer(url)
    try:
        socket.create_connection((peer.host, peer.stomp_port), timeout=5).close()
    except OSError as exc:
        return (f"EMBROKER_REFERENCE_URL is set but {peer.host}:{peer.stomp_port} does not "
                f"answer STOMP ({exc!r}): rabbitmq-plugins enable rabbitmq_stomp (or unset "
                "EMBROKER_REFERENCE_URL to check the golden files alone)")
    return None


@pytest.fixture(scope="module")
def reference() -> str:
    return kit.reference_url(_stomp_problem)


@pytest.fixture(scope="module")
def embroker_peer() -> Iterator[EmbrokerPeer]:
    with kit.served(lambda broker: Server(broker, listeners={"stomp": 0})) as (broker, server):
        yield EmbrokerPeer(broker, server)


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


class TestGoldenFiles(kit.GoldenFileTests):
    files = GOLDEN
    scenarios = SCENARIOS
    known_differences = KNOWN_DIFFERENCES
    reference_peer = ReferencePeer
