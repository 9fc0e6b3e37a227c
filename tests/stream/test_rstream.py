"""rstream, the Python stream client, against embroker's stream listener; with
``EMBROKER_REFERENCE_URL`` set, the same scripts against RabbitMQ's (127.0.0.1:5552) and the
transcripts compared."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from embroker import Broker
from embroker.server import Server
from tests.stream.interop import SCRIPTS, run

REFERENCE_STREAM_PORT = 5552


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    broker = Broker()
    with broker.serve(stream_port=0) as srv:
        yield srv
    assert not srv.errors, srv.errors


EXPECTED: dict[str, list[Any]] = {
    "produce_and_consume": [
        ("exists", True),
        ("first", [(i, b"m%d" % i, {"i": i}) for i in range(5)]),
        ("offset 2", [(i, b"m%d" % i, {"i": i}) for i in range(2, 5)]),
        ("last", [(4, b"m4", {"i": 4})]),
        ("next", [(5, b"later", {})]),
        ("query before store", "OffsetNotFound"),
        ("query after store", 3),
        ("exists after delete", False),
    ],
    "deduplication": [
        ("sequence", 4), ("unknown sequence", 0),
        ("read", [(0, b"a1"), (1, b"a2"), (2, b"a3"), (3, b"b4")]),
    ],
    "sub_entry_batching": [
        ("confirmed", [True, True, True]),
        ("first", [(0, b"n1"), (1, b"n2"), (2, b"n3"), (3, b"g1"), (4, b"g2"), (5, b"last")]),
        ("offset 4", [(4, b"g2"), (5, b"last")]),
    ],
    "super_stream": [
        ("partitions", ["-0", "-1", "-2"]),
        ("route 0", ["-0"]), ("route 2", ["-2"]), ("route 9", []),
        ("read", [("-0", 0, b"0"), ("-1", 0, b"1"), ("-2", 0, b"2")]),
    ],
}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_rstream_against_embroker(server: Server, name: str) -> None:
    assert server.stream_port is not None
    assert run(SCRIPTS[name], "127.0.0.1", server.stream_port, server.url) == EXPECTED[name]
    assert not server.errors, server.errors


@pytest.mark.skipif(not os.environ.get("EMBROKER_REFERENCE_URL"),
                    reason="EMBROKER_REFERENCE_URL is not set")
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_rstream_against_the_reference(name: str) -> None:
    """The same script on RabbitMQ 3.10.8's stream plugin sees what embroker shows."""
    if name == "super_stream":
        pytest.skip("RabbitMQ 3.10.8 answers Partitions and Route with the keys 0x0019 and "
                    "0x0018, without the response bit (test_raw_frames.py shows it), which "
                    "rstream cannot decode; embroker answers 0x8019/0x8018 as PROTOCOL.adoc "
                    "says")
    url = os.environ["EMBROKER_REFERENCE_URL"]
    host = urllib.parse.urlsplit(url).hostname or "127.0.0.1"
    assert run(SCRIPTS[name], host, REFERENCE_STREAM_PORT, url) == EXPECTED[name]
