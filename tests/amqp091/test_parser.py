"""The incremental frame parser: chunking, buffering, and every frame-level validation rule."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embroker.amqp091 import (
    FRAME_MIN_SIZE,
    BodyFrame,
    Frame,
    FrameParser,
    HeaderFrame,
    HeartbeatFrame,
    MethodFrame,
    encode_method_frame,
)
from embroker.amqp091._frames import (
    HEARTBEAT_FRAME,
    decode_method,
    encode_frame,
    encode_header_frame,
)
from embroker.amqp091.methods import (
    BasicAck,
    BasicPublish,
    BasicQos,
    ChannelOpen,
    ConnectionBlocked,
    ConnectionStartOk,
    ConnectionTune,
    QueueDeclare,
)
from embroker.errors import (
    ChannelError,
    CommandInvalid,
    FrameError,
    SyntaxErrorAMQP,
    UnexpectedFrame,
)
from tests.strategies import frame_streams


def frame(frame_type: int, channel: int, payload: bytes) -> bytes:
    return struct.pack(">BHI", frame_type, channel, len(payload)) + payload + b"\xce"


def parse(data: bytes, max_frame_size: int = 0) -> list[Frame]:
    return list(FrameParser(max_frame_size).feed(data))


def parse_bytewise(data: bytes, max_frame_size: int = 0) -> list[Frame]:
    parser = FrameParser(max_frame_size)
    frames: list[Frame] = []
    for i in range(len(data)):
        frames += parser.feed(data[i:i + 1])
    return frames


PUBLISH = encode_method_frame(1, BasicPublish(exchange="x", routing_key="k"))
QOS = encode_method_frame(1, BasicQos(prefetch_count=10))


# -- chunking ---------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(stream=frame_streams(), cuts=st.lists(st.integers(0, 50_000), max_size=20))
def test_any_chunking_gives_the_same_frames(stream: tuple[bytes, list[Any]],
                                            cuts: list[int]) -> None:
    data, _ = stream
    whole = parse(data, FRAME_MIN_SIZE)
    parser = FrameParser(FRAME_MIN_SIZE)
    chunked: list[Frame] = []
    start = 0
    for cut in [*sorted({c % (len(data) + 1) for c in cuts}), len(data)]:
        chunked += parser.feed(data[start:cut])
        start = cut
    assert chunked == whole
    assert parser.buffered == 0


@settings(max_examples=40, deadline=None)
@given(stream=frame_streams(max_commands=3))
def test_byte_at_a_time_equals_whole_buffer(stream: tuple[bytes, list[Any]]) -> None:
    data, commands = stream
    whole = parse(data, FRAME_MIN_SIZE)
    assert parse_bytewise(data, FRAME_MIN_SIZE) == whole
    assert sum(isinstance(f, HeartbeatFrame) for f in whole) == commands.count(("heartbeat",))


def test_big_frame_fed_one_byte_at_a_time_is_linear() -> None:
    """A 1 MiB body frame fed byte by byte: no quadratic re-joining of the buffer."""
    body = bytes(1 << 20)
    data = frame(3, 1, body)
    parser = FrameParser(0)
    for i in range(len(data) - 1):
        assert not list(parser.feed(data[i:i + 1]))
    assert parser.buffered == len(data) - 1
    assert list(parser.feed(data[-1:])) == [BodyFrame(1, body)]
    assert parser.buffered == 0


def test_partial_frame_stays_buffered() -> None:
    parser = FrameParser()
    assert list(parser.feed(PUBLISH + QOS[:10])) == [MethodFrame(1, decode_method(PUBLISH[7:-1]))]
    assert parser.buffered == 10
    assert list(parser.feed(QOS[10:])) == [MethodFrame(1, BasicQos(prefetch_count=10))]


def test_frames_not_iterated_stay_buffered_for_the_next_feed() -> None:
    parser = FrameParser()
    frames = parser.feed(PUBLISH + QOS)
    assert next(frames).channel == 1
    del frames
    assert [type(f.method) for f in parser.feed(b"") if isinstance(f, MethodFrame)] == [BasicQos]


def test_feeding_twice_before_iterating_loses_nothing() -> None:
    parser = FrameParser()
    first = parser.feed(PUBLISH[:20])
    second = parser.feed(PUBLISH[20:] + QOS)
    assert [*first, *second] == parse(PUBLISH + QOS)


def test_bytearray_and_memoryview_input() -> None:
    assert list(FrameParser().feed(bytearray(QOS))) == list(FrameParser().feed(memoryview(QOS)))


def test_frame_max_zero_means_no_limit() -> None:
    assert parse(frame(3, 1, bytes(1 << 20)), max_frame_size=0) == [BodyFrame(1, bytes(1 << 20))]


def test_frame_max_can_be_raised_after_tune() -> None:
    parser = FrameParser()
    assert parser.frame_max == FRAME_MIN_SIZE
    parser.frame_max = 131072
    assert list(parser.feed(frame(3, 1, bytes(131064)))) == [BodyFrame(1, bytes(131064))]
    with pytest.raises(ValueError, match="positive"):
        parser.frame_max = -1


# -- frame-level errors -----------------------------------------------------------------------


def test_bad_frame_end_is_frame_error_showing_the_frame() -> None:
    """RabbitMQ 3.10's text, payload included."""
    with pytest.raises(FrameError) as caught:
        parse(QOS[:-1] + b"\x00")
    assert caught.value.text == ("type 1, all octets = <<0,60,0,10,0,0,0,0,0,10,0>>: "
                                 "{invalid_frame_end_marker,0}")


@pytest.mark.parametrize("frame_type", [0, 4, 5, 6, 7, 9, 65, 255])
def test_unknown_frame_type_is_frame_error(frame_type: int) -> None:
    with pytest.raises(FrameError) as caught:
        parse(frame(frame_type, 1, b"xx"))
    assert caught.value.text == f'type {frame_type}, all octets = <<"xx">>: unknown_frame'


def test_payloads_over_16_bytes_show_their_first_16() -> None:
    with pytest.raises(FrameError) as caught:
        parse(frame(9, 1, b"0123456789abcdefXYZ"))
    assert caught.value.text == 'type 9, first 16 octets = <<"0123456789abcdef">>: unknown_frame'


def test_oversized_frame_is_frame_error() -> None:
    """"A peer that receives an oversized frame MUST signal a connection exception with reply
    code 501 (frame error)." RabbitMQ's text counts frame-max minus the 8 bytes around the
    payload."""
    with pytest.raises(FrameError) as caught:
        parse(frame(3, 1, bytes(FRAME_MIN_SIZE + 1)), FRAME_MIN_SIZE)
    assert caught.value.text == "type 3, all octets = <<>>: {frame_too_large,4097,4088}"


def test_frame_within_rabbitmq_fudge_is_accepted() -> None:
    """frame-max counts header and frame end, so the largest payload is frame-max - 8; RabbitMQ
    lets 8 more bytes through ("off-by 1 or 8 are typical"), and so does embroker."""
    assert parse(frame(3, 1, bytes(FRAME_MIN_SIZE)), FRAME_MIN_SIZE) == [
        BodyFrame(1, bytes(FRAME_MIN_SIZE))]


@pytest.mark.parametrize("frame_type", [1, 2, 3, 5])
def test_oversized_frame_is_refused_before_its_payload_arrives(frame_type: int) -> None:
    parser = FrameParser()
    with pytest.raises(FrameError, match="frame_too_large,4294967295,"):
        list(parser.feed(bytes([frame_type]) + b"\x00\x01\xff\xff\xff\xff"))


def test_heartbeat_on_a_non_zero_channel_is_unexpected_frame() -> None:
    """4.2.7 says 501; RabbitMQ 3.10 answers 505 UNEXPECTED_FRAME, and so does embroker."""
    with pytest.raises(UnexpectedFrame) as caught:
        parse(frame(8, 1, b""))
    assert caught.value.text == "type 8, all octets = <<>>"


def test_heartbeat_with_a_payload_is_frame_error() -> None:
    with pytest.raises(FrameError) as caught:
        parse(frame(8, 0, b"\x01"))
    assert caught.value.text == "type 8, all octets = <<1>>: unknown_frame"


def test_connection_method_on_a_non_zero_channel_is_command_invalid() -> None:
    """4.2.3: "... A peer that receives a non-zero channel number for one of these frames MUST
    signal a connection exception with reply code 503 (command invalid)." RabbitMQ's text."""
    with pytest.raises(CommandInvalid, match=r"COMMAND_INVALID - unimplemented method$") as caught:
        parse(encode_method_frame(1, ConnectionBlocked(reason="x")))
    assert (caught.value.class_id, caught.value.method_id) == (10, 60)


def test_other_method_on_channel_zero_is_channel_error() -> None:
    """RabbitMQ: ``CHANNEL_ERROR - unexpected method in connection state running`` (504)."""
    with pytest.raises(ChannelError, match="unexpected method in connection state running") as caught:
        parse(encode_method_frame(0, BasicQos()))
    assert (caught.value.class_id, caught.value.method_id) == (60, 10)


def test_content_header_on_channel_zero_is_unexpected_frame() -> None:
    """4.2.6.1 says 504 (channel error); RabbitMQ 3.10 answers 505, and so does embroker."""
    with pytest.raises(UnexpectedFrame) as caught:
        parse(encode_header_frame(0, 60, 0, {}))
    assert caught.value.text == "type 2, all octets = <<0,60,0,0,0,0,0,0,0,0,0,0,0,0>>"


def test_content_body_on_channel_zero_is_unexpected_frame() -> None:
    with pytest.raises(UnexpectedFrame) as caught:
        parse(frame(3, 0, b"body"))
    assert caught.value.text == 'type 3, all octets = <<"body">>'


def test_long_binaries_break_over_lines_as_erlang_prints_them() -> None:
    with pytest.raises(UnexpectedFrame) as caught:
        parse(frame(3, 0, bytes([150] * 16)))
    assert caught.value.text == ("type 3, all octets = <<150,150,150,150,150,150,150,150,150,"
                                 "150,150,150,150,150,\n" + " " * 23 + "150,150>>")


def test_unknown_method_is_command_invalid() -> None:
    """RabbitMQ 3.10 drops the connection without a word; embroker says 503."""
    with pytest.raises(CommandInvalid, match="unknown method: class 60, method 999") as caught:
        parse(frame(1, 1, struct.pack(">HH", 60, 999)))
    assert (caught.value.class_id, caught.value.method_id) == (60, 999)
    with pytest.raises(CommandInvalid, match="unknown method: class 99, method 10"):
        decode_method(struct.pack(">HH", 99, 10))


def test_method_frame_without_class_and_method_id_is_frame_error() -> None:
    with pytest.raises(FrameError) as caught:
        parse(frame(1, 1, b"\x00\x3c\x00"))
    assert caught.value.text == "type 1, all octets = <<0,60,0>>: unknown_frame"
    with pytest.raises(FrameError, match="has no class and method id"):
        decode_method(b"\x00")


# -- malformed arguments: RabbitMQ's 501 "cannot decode" ----------------------------------------


def test_truncated_method_arguments_cannot_be_decoded() -> None:
    """The spec says 502 SYNTAX_ERROR; RabbitMQ 3.10 answers 501 with the argument bytes."""
    with pytest.raises(FrameError) as caught:
        parse(frame(1, 1, PUBLISH[7:-2]))
    fields = PUBLISH[11:-2]
    assert caught.value.text == "cannot decode <<" + ",".join(map(str, fields)) + ">>"
    assert (caught.value.class_id, caught.value.method_id) == (60, 40)


def test_trailing_bytes_after_method_arguments_cannot_be_decoded() -> None:
    with pytest.raises(FrameError, match=r"cannot decode <<.*,0>>"):
        parse(frame(1, 1, PUBLISH[7:-1] + b"\x00"))
    with pytest.raises(FrameError, match=r"FRAME_ERROR - cannot decode <<0>>$"):
        parse(frame(1, 1, b"\x00\x5a\x00\x0a\x00"))


def test_strings_and_tables_running_past_the_frame_cannot_be_decoded() -> None:
    shortstr = b"\x00\x3c\x00\x28\x00\x00" + b"\xff" + b"abc"
    longstr = b"\x00\x0a\x00\x15" + b"\xff\xff\xff\xff" + b"abc"
    table = QueueDeclare(queue="q").encode()[:-4] + b"\x00\x00\x00\x10"
    for channel, payload in ((1, shortstr), (0, longstr), (1, table)):
        with pytest.raises(FrameError, match="FRAME_ERROR - cannot decode <<"):
            parse(frame(1, channel, payload))


def test_unknown_field_type_cannot_be_decoded() -> None:
    """RabbitMQ 3.10 drops the socket here; embroker answers as for any malformed arguments."""
    payload = QueueDeclare(queue="q").encode()[:-4] + b"\x00\x00\x00\x03\x01aZ"
    with pytest.raises(FrameError, match="FRAME_ERROR - cannot decode <<") as caught:
        parse(frame(1, 1, payload))
    assert (caught.value.class_id, caught.value.method_id) == (50, 10)


def test_content_header_shorter_than_its_fixed_part_is_frame_error() -> None:
    with pytest.raises(FrameError) as caught:
        parse(frame(2, 1, b"\x00\x3c\x00\x00"))
    assert caught.value.text == "type 2, all octets = <<0,60,0,0>>: unknown_frame"


def test_malformed_properties_are_syntax_error() -> None:
    header = b"\x00\x3c\x00\x00" + bytes(8) + b"\x80\x00" + b"\x09abc"
    with pytest.raises(SyntaxErrorAMQP, match="properties truncated"):
        parse(frame(2, 1, header))


# -- after an error ---------------------------------------------------------------------------


def test_frames_before_a_bad_frame_are_delivered_first() -> None:
    parser = FrameParser()
    frames = parser.feed(PUBLISH + HEARTBEAT_FRAME + frame(9, 1, b""))
    assert isinstance(next(frames), MethodFrame)
    assert next(frames) == HeartbeatFrame()
    with pytest.raises(FrameError):
        next(frames)


def test_errors_are_sticky() -> None:
    parser = FrameParser()
    with pytest.raises(FrameError) as first:
        list(parser.feed(frame(9, 1, b"")))
    with pytest.raises(FrameError) as second:
        list(parser.feed(HEARTBEAT_FRAME))
    assert second.value is first.value


@pytest.mark.parametrize(
    "method",
    [ConnectionStartOk(client_properties={"product": "x"}, response="\0guest\0guest"),
     ConnectionTune(channel_max=2047, frame_max=131072, heartbeat=60)],
)
def test_connection_methods_on_channel_zero(method: Any) -> None:
    assert parse(encode_method_frame(0, method)) == [MethodFrame(0, method)]


def test_channel_methods_on_channel_n() -> None:
    data = encode_method_frame(7, ChannelOpen()) + encode_method_frame(7, BasicAck(3, True))
    assert parse(data) == [MethodFrame(7, ChannelOpen()), MethodFrame(7, BasicAck(3, True))]


def test_header_frame_keeps_the_raw_properties() -> None:
    (header,) = parse(encode_header_frame(1, 60, 10, {"priority": 3, "headers": {"b": 1}}))
    assert isinstance(header, HeaderFrame)
    assert header.properties == {"priority": 3, "headers": {"b": 1}}
    table = b"\x00\x00\x00\x07\x01bI\x00\x00\x00\x01"
    assert header.raw_properties == b"\x28\x00" + table + b"\x03"  # headers, then priority


def test_encode_frame_builds_any_frame() -> None:
    assert encode_frame(3, 2, b"abc") == b"\x03\x00\x02\x00\x00\x00\x03abc\xce"


def test_frame_max_set_between_two_frames_of_one_chunk_applies_to_the_next() -> None:
    """A client may send tune-ok and the next frames in one segment: the new frame-max counts
    from the frame after tune-ok."""
    parser = FrameParser()
    frames = parser.feed(encode_method_frame(0, ConnectionTune(frame_max=131072))
                         + frame(3, 1, bytes(10_000)))
    assert isinstance(next(frames), MethodFrame)
    parser.frame_max = 131072
    assert next(frames) == BodyFrame(1, bytes(10_000))
