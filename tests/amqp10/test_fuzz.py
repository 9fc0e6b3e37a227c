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
    connection = ServerConnection(broker, loopback=True, peer="fuzz")
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


# -- well-formed frames in any order: the state machine, not the codec ------------------------

def _performatives() -> st.SearchStrategy[Any]:
    from embroker.amqp10 import (
        Accepted,
        Attach,
        Begin,
        Close,
        Coordinator,
        Declare,
        Detach,
        Discharge,
        Disposition,
        End,
        Flow,
        Modified,
        Rejected,
        Released,
        Source,
        Target,
        TransactionalState,
        Transfer,
        UInt,
    )
    small = st.integers(0, 4).map(UInt)
    ids = st.integers(0, 8).map(UInt)
    addresses = st.sampled_from(["/queues/q", "/queues/missing", "/exchanges/amq.fanout",
                                 "/topic/a.b", None, "bogus"])
    states = st.sampled_from([None, Accepted(), Rejected(), Released(),
                              Modified(delivery_failed=True), Modified(undeliverable_here=True),
                              TransactionalState(b"\x00\x00\x00\x01", Accepted())])
    payloads = st.sampled_from([b"\x00Sw\xa1\x01x", b"", b"\x00Sw", b"\x00Su\xa0\x02hi",
                                b"\x00Sw\x00S1E", b"\x00Sw\x00S2\xc0\x07\x01\xa0\x04\x00\x00\x00\x01"])
    return st.one_of(
        st.builds(lambda ch: (ch, Begin(next_outgoing_id=UInt(0), incoming_window=UInt(3),
                                        outgoing_window=UInt(9)), b""), st.integers(0, 1)),
        st.builds(lambda h, role, a, snd, copy: (0, Attach(
            name=f"l{h}", handle=h, role=role,
            snd_settle_mode=snd, source=Source(address=a,
                                               distribution_mode="copy" if copy else None),
            target=Target(address=a) if h != 4 else Coordinator(),
            initial_delivery_count=UInt(0)), b""),
            small, st.booleans(), addresses, st.sampled_from([0, 1, 2]), st.booleans()),
        st.builds(lambda h, dc, credit, drain, echo, nin: (0, Flow(
            next_incoming_id=nin, incoming_window=UInt(2), next_outgoing_id=UInt(0),
            outgoing_window=UInt(9), handle=h, delivery_count=dc, link_credit=credit,
            drain=drain, echo=echo), b""),
            st.one_of(st.none(), small), st.one_of(st.none(), ids), st.one_of(st.none(), ids),
            st.booleans(), st.booleans(), st.one_of(st.none(), ids)),
        st.builds(lambda h, i, more, settled, aborted, state, payload: (0, Transfer(
            handle=h, delivery_id=i, delivery_tag=b"t", more=more, settled=settled,
            aborted=aborted, state=state if isinstance(state, TransactionalState) else None),
            payload), small, st.one_of(st.none(), ids), st.booleans(),
            st.one_of(st.none(), st.booleans()), st.booleans(), states, payloads),
        st.builds(lambda first, last, settled, state, role: (0, Disposition(
            role=role, first=first, last=last, settled=settled, state=state), b""),
            ids, st.one_of(st.none(), ids), st.booleans(), states, st.booleans()),
        st.builds(lambda h, closed: (0, Detach(handle=h, closed=closed), b""),
                  small, st.booleans()),
        st.builds(lambda ch: (ch, End(), b""), st.integers(0, 1)),
        st.just((0, Close(), b"")),
        st.just((0, Transfer(handle=UInt(4), delivery_id=UInt(0), delivery_tag=b"d"),
                 b"\x00Sw" + bytes(_encode(Declare())))),
        st.just((0, Transfer(handle=UInt(4), delivery_id=UInt(1), delivery_tag=b"e"),
                 b"\x00Sw" + bytes(_encode(Discharge(txn_id=b"\x00\x00\x00\x01"))))),
    )


def _encode(value: Any) -> bytes:
    from embroker.amqp10 import encode_value
    return bytes(encode_value(value))


@settings(max_examples=max(100, EXAMPLES // 2), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(_performatives(), max_size=25), st.booleans())
def test_any_sequence_of_well_formed_frames_keeps_the_broker_consistent(
        frames: list[Any], drop_at_end: bool) -> None:
    from embroker.amqp10 import encode_frame

    broker = Broker()
    admin = broker.connect().channel()
    admin.queue_declare("q")
    for i in range(3):
        admin.basic_publish("", "q", b"%d" % i)
    before = len(broker.connections)
    connection = ServerConnection(broker, loopback=True, peer="fuzz")
    prefix = b"".join(d for _w, d in _SESSION[:5])  # SASL, AMQP header, open, begin
    connection.receive_data(prefix)
    for channel, performative, payload in frames:
        connection.receive_data(encode_frame(channel, performative, payload))
        connection.data_to_send()
        broker._check()
        admin.basic_publish("", "q", b"more")
    if drop_at_end:
        connection.receive_data(b"")
        broker._check()
        assert len(broker.connections) == before
        assert broker.queues["q"].unacked == 0
