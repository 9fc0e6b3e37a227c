"""The STOMP frame reader and writer: hand-written bytes for each rule of RabbitMQ 3.10.8's
``rabbit_stomp_frame``, Hypothesis for the rest (any split, any bytes, in every state of a
connection)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embroker.model import Broker
from embroker.stomp import Frame, FrameError, FrameReader, StompConnection, encode_frame
from embroker.stomp._frame import MAX_HEADERS


def _read(data: bytes, max_frame: int = 1 << 20) -> list[Frame]:
    reader = FrameReader(max_frame)
    reader.feed(data)
    frames = []
    while (frame := reader.next()) is not None:
        frames.append(frame)
    return frames


def test_heart_beats_and_nuls_between_frames_are_skipped() -> None:
    frames = _read(b"\n\r\n\x00\nSEND\n\nx\x00\n\n")
    assert frames == [Frame("SEND", [], b"x")]


def test_lines_may_end_in_cr_lf() -> None:
    assert _read(b"SEND\r\na:b\r\n\r\nx\x00") == [Frame("SEND", [("a", "b")], b"x")]


@pytest.mark.parametrize(("data", "reason"), [
    (b"SE\rND\n\n\x00", "unexpected_chars_in_command"),
    (b"SEND\na:b\rc\n\n\x00", "unexpected_chars_in_header"),
    (b"\rX", "unexpected_chars_between_frames"),
    (b"SEND\nnovalue\n\n\x00", "header_no_value"),
    (b"SEND\na:\\t\n\n\x00", "bad_escape"),
])
def test_malformed_frames_are_refused_with_rabbitmqs_reason(data: bytes, reason: str) -> None:
    with pytest.raises(FrameError) as raised:
        _read(data)
    assert raised.value.reason == reason


def test_escapes_are_read_in_names_and_values_and_the_first_header_wins() -> None:
    (frame,) = _read(b"SEND\na\\cb:c\\nd\\\\\\r\na\\cb:second\n\n\x00")
    assert frame.headers == [("a:b", "c\nd\\\r")]


def test_only_the_first_colon_splits_a_header() -> None:
    assert _read(b"SEND\na:b:c\n\n\x00")[0].headers == [("a", "b:c")]


def test_a_send_body_of_content_length_may_hold_nuls() -> None:
    (frame,) = _read(b"SEND\ncontent-length:3\n\na\x00b\x00")
    assert frame.body == b"a\x00b"


def test_content_length_is_read_on_send_only() -> None:
    (frame,) = _read(b"MESSAGE\ncontent-length:3\n\na\x00")
    assert frame.body == b"a"


def test_a_send_body_not_followed_by_nul_is_refused() -> None:
    with pytest.raises(FrameError):
        _read(b"SEND\ncontent-length:1\n\nab\x00")


def test_bytes_that_are_not_utf8_go_back_out_unchanged() -> None:
    (frame,) = _read(b"SEND\nk:\xff\xfe\n\n\x00")
    assert encode_frame("SEND", frame.headers).startswith(b"SEND\nk:\xff\xfe\n")


def test_a_frame_is_written_with_escapes_content_length_and_a_trailing_line_feed() -> None:
    assert encode_frame("MESSAGE", [("a:b", "c\nd"), ("content-length", "9")], b"xy") == \
        b"MESSAGE\na\\cb:c\\nd\ncontent-length:2\n\nxy\x00\n"
    assert encode_frame("RECEIPT", [("receipt-id", "r")], trailing_lf=False) == \
        b"RECEIPT\nreceipt-id:r\n\n\x00"


def test_a_frame_over_the_bound_is_refused_as_soon_as_it_is_known() -> None:
    reader = FrameReader(100)
    reader.feed(b"SEND\ncontent-length:1000\n\n")
    with pytest.raises(FrameError) as raised:
        reader.next()
    assert raised.value.reason == "frame_too_large"
    reader = FrameReader(100)
    reader.feed(b"SEND\n\n" + b"x" * 200)
    with pytest.raises(FrameError):
        reader.next()
    with pytest.raises(FrameError):  # (and for good)
        reader.next()


def test_too_many_headers_are_refused() -> None:
    head = b"".join(b"h%d:v\n" % i for i in range(MAX_HEADERS + 1))
    with pytest.raises(FrameError) as raised:
        _read(b"SEND\n" + head + b"\n\x00")
    assert raised.value.reason == "too_many_headers"


_names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)
_frames = st.builds(
    lambda command, headers, body: Frame(command, list(dict(headers).items()), body),
    st.sampled_from(["SEND", "MESSAGE", "ERROR", "RECEIPT"]),
    st.lists(st.tuples(_names, st.text(st.characters(blacklist_categories=("Cs",)),
                                         max_size=12)), max_size=5),
    st.binary(max_size=40).map(lambda b: b.replace(b"\x00", b"")))


@given(st.lists(_frames, min_size=1, max_size=4), st.data())
def test_written_frames_read_back_whatever_the_split(frames: list[Frame], data: st.DataObject
                                                      ) -> None:
    wire = b"".join(encode_frame(f.command, f.headers, f.body) for f in frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=6)))
    reader = FrameReader(1 << 20)
    got: list[Frame] = []
    for start, end in zip([0, *cuts], [*cuts, len(wire)], strict=True):
        reader.feed(wire[start:end])
        while (frame := reader.next()) is not None:
            got.append(frame)
    expected = [Frame(f.command, [(k, v) for k, v in f.headers if k != "content-length"]
                      + ([("content-length", str(len(f.body)))] if f.body else []), f.body)
                for f in frames]
    # (a written content-length is the body's: read back as a header of its own)
    assert [(f.command, f.body) for f in got] == [(f.command, f.body) for f in expected]


@given(st.binary(max_size=300))
def test_any_bytes_give_frames_or_a_frame_error(data: bytes) -> None:
    reader = FrameReader(1000)
    reader.feed(data)
    try:
        while reader.next() is not None:
            pass
    except FrameError:
        pass


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=150)
@given(st.sampled_from(["fresh", "connected", "subscribed"]), st.binary(max_size=200))
def test_any_bytes_in_any_state_leave_the_broker_whole(state: str, data: bytes) -> None:
    """Garbage never raises out of the connection and never leaves a half-open model
    connection behind once it closes."""
    broker = Broker()
    conn = StompConnection(broker, peer="127.0.0.1:1", local="127.0.0.1:2")
    if state != "fresh":
        conn.receive_data(b"CONNECT\nlogin:guest\npasscode:guest\n\n\x00")
    if state == "subscribed":
        conn.receive_data(b"SUBSCRIBE\ndestination:/queue/q\nack:client\n\n\x00"
                          b"SEND\ndestination:/queue/q\n\nx\x00")
    conn.data_to_send()
    conn.receive_data(data)
    out = conn.data_to_send()
    assert isinstance(out, bytes)
    if conn.should_close:
        conn.connection_lost()
        assert not broker.connections
