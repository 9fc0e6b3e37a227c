"""Fuzzing (h11's invariant): any bytes either parse or raise the codec's own errors
(``ProtocolError`` subclasses), never anything else, whatever the chunking; a server connection
fed any bytes never raises at all and leaves the broker consistent.

CI runs a few hundred examples; ``EMBROKER_FUZZ_EXAMPLES`` raises the count for a longer run.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embroker import Broker
from embroker.amqp10 import FrameReader, ProtocolError, ServerConnection
from tests.amqp10.helpers import reference_session

EXAMPLES = int(os.environ.get("EMBROKER_FUZZ_EXAMPLES", "400"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_SESSION = reference_session()["C->S"]
_STREAM = b"".join(data for _what, data in _SESSION)
_AFTER_HEADERS = b"".join(data for what, data in _SESSION if what != "header")


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def reader_outcome(chunks: list[bytes]) -> tuple[list[Any], str | None]:
    reader = FrameReader(4096)
    frames: list[Any] = []
    try:
        for chunk in chunks:
            reader.feed(chunk)
            while (frame := reader.next_frame()) is not None:
                frames.append((frame.type, frame.channel, frame.performative, frame.payload))
    except ProtocolError as exc:
        return frames, f"{exc.condition}: {exc.description}"
    return frames, None


@FUZZ
@given(st.binary(max_size=600), st.lists(st.integers(0, 600), max_size=8))
def test_the_frame_reader_parses_or_raises_protocol_errors_in_any_chunking(
        data: bytes, cuts: list[int]) -> None:
    assert reader_outcome([data]) == reader_outcome(_chunks(data, cuts))


@FUZZ
@given(st.data())
def test_mutated_reference_frames_parse_or_raise_protocol_errors(data: st.DataObject) -> None:
    stream = bytearray(_AFTER_HEADERS)
    for _ in range(data.draw(st.integers(1, 6))):
        pos = data.draw(st.integers(0, len(stream) - 1))
        stream[pos] = data.draw(st.integers(0, 255))
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=6))
    assert reader_outcome([bytes(stream)]) == reader_outcome(_chunks(bytes(stream), cuts))


def _feed(chunks: list[bytes]) -> Broker:
    broker = Broker()
    broker.connect().channel().queue_declare("embroker-amqp10-trace")
    before = len(broker.connections)
    connection = ServerConnection(broker, peer="fuzz")
    for chunk in chunks:
        connection.receive_data(chunk)  # must never raise
        connection.data_to_send()
        connection.tick()
    connection.receive_data(b"")
    broker._check()
    assert len(broker.connections) == before  # the socket is gone: so is its model connection
    queue = broker.queues.get("embroker-amqp10-trace")
    assert queue is None or queue.unacked == 0  # whatever it held went back
    return broker


@FUZZ
@given(st.data())
def test_a_connection_fed_a_mutated_session_never_raises(data: st.DataObject) -> None:
    stream = bytearray(_STREAM)
    for _ in range(data.draw(st.integers(0, 8))):
        pos = data.draw(st.integers(0, len(stream) - 1))
        stream[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        cut = data.draw(st.integers(0, len(stream)))
        stream[cut:cut] = data.draw(st.binary(max_size=64))
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=10))
    _feed(_chunks(bytes(stream), cuts))


@FUZZ
@given(st.binary(max_size=400), st.lists(st.integers(0, 400), max_size=5))
def test_a_connection_fed_any_bytes_after_the_handshake_never_raises(
        tail: bytes, cuts: list[int]) -> None:
    prefix = b"".join(d for w, d in _SESSION[:5])  # SASL, AMQP header, open, begin
    _feed([prefix, *_chunks(tail, cuts)])
