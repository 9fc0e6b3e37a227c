"""Content assembly: method + header + bodies into one command, and the 4.2.6 errors."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embroker.amqp091 import (
    BodyFrame,
    Command,
    CommandReader,
    Frame,
    FrameParser,
    HeaderFrame,
    HeartbeatFrame,
    MethodFrame,
    encode_message,
)
from embroker.amqp091._assembly import ContentAssembler
from embroker.amqp091._properties import encode_properties
from embroker.amqp091.methods import (
    BasicAck,
    BasicDeliver,
    BasicGetOk,
    BasicPublish,
    BasicQos,
)
from embroker.errors import ChannelError, FrameError, SyntaxErrorAMQP, UnexpectedFrame
from tests.strategies import frame_streams

PUBLISH = BasicPublish(exchange="x", routing_key="k")
NO_PROPS = b"\x00\x00"


def header(channel: int, size: int, class_id: int = 60, weight: int = 0,
           props: dict[str, Any] | None = None) -> HeaderFrame:
    props = props or {}
    return HeaderFrame(channel, class_id, weight, size, props, encode_properties(props))


def test_method_without_content_completes_at_once() -> None:
    assert ContentAssembler().add(MethodFrame(3, BasicQos(prefetch_count=1))) == Command(
        3, BasicQos(prefetch_count=1))


def test_publish_completes_after_header_and_all_bodies() -> None:
    assembler = ContentAssembler()
    assert assembler.add(MethodFrame(1, PUBLISH)) is None
    assert assembler.pending(1) == PUBLISH
    assert assembler.add(header(1, 6, props={"priority": 1})) is None
    assert assembler.add(BodyFrame(1, b"ab")) is None
    assert assembler.add(BodyFrame(1, b"")) is None
    assert assembler.add(BodyFrame(1, b"cd")) is None
    command = assembler.add(BodyFrame(1, b"ef"))
    assert command == Command(1, PUBLISH, {"priority": 1}, b"\x08\x00\x01", b"abcdef")
    assert command is not None
    assert command.has_content
    assert assembler.pending(1) is None


def test_empty_body_completes_at_the_header() -> None:
    assembler = ContentAssembler()
    assembler.add(MethodFrame(1, PUBLISH))
    assert assembler.add(header(1, 0)) == Command(1, PUBLISH, {}, NO_PROPS, b"")


def test_channels_interleave() -> None:
    assembler = ContentAssembler()
    deliver = BasicDeliver(consumer_tag="c", delivery_tag=1)
    get_ok = BasicGetOk(delivery_tag=2)
    frames: list[Frame] = [MethodFrame(1, deliver), MethodFrame(2, get_ok), header(2, 1), header(1, 2),
              MethodFrame(3, BasicAck(1)), BodyFrame(1, b"a"), HeartbeatFrame(),
              BodyFrame(2, b"b"), BodyFrame(1, b"c")]
    assert list(assembler.feed(frames)) == [
        Command(3, BasicAck(1)),
        Command(2, get_ok, {}, NO_PROPS, b"b"),
        Command(1, deliver, {}, NO_PROPS, b"ac"),
    ]


def test_heartbeat_in_the_middle_of_content_is_fine() -> None:
    assembler = ContentAssembler()
    assembler.add(MethodFrame(1, PUBLISH))
    assert assembler.add(HeartbeatFrame()) is None
    assembler.add(header(1, 1))
    assert assembler.add(HeartbeatFrame()) is None
    assert assembler.add(BodyFrame(1, b"x")) == Command(1, PUBLISH, {}, NO_PROPS, b"x")


def test_forget_drops_half_received_content() -> None:
    assembler = ContentAssembler()
    assembler.add(MethodFrame(1, PUBLISH))
    assembler.forget(1)
    assert assembler.add(MethodFrame(1, BasicAck(1))) == Command(1, BasicAck(1))


# -- 505 UNEXPECTED_FRAME -----------------------------------------------------------------------


def test_body_frame_without_header_is_unexpected_frame() -> None:
    with pytest.raises(UnexpectedFrame, match="expected method frame, got non method frame"):
        ContentAssembler().add(BodyFrame(1, b"x"))


def test_body_frame_before_the_header_is_unexpected_frame() -> None:
    assembler = ContentAssembler()
    assembler.add(MethodFrame(1, PUBLISH))
    with pytest.raises(UnexpectedFrame, match="expected content header for class 60, got non "
                                              "content header frame instead") as caught:
        assembler.add(BodyFrame(1, b"x"))
    assert (caught.value.class_id, caught.value.method_id) == (60, 40)


def test_header_frame_without_content_method_is_unexpected_frame() -> None:
    with pytest.raises(UnexpectedFrame, match="expected method frame, got non method frame"):
        ContentAssembler().add(header(1, 1))
    assembler = ContentAssembler()
    assembler.add(MethodFrame(1, BasicQos()))
    with pytest.raises(UnexpectedFrame):
        assembler.add(header(1, 0))


def test_method_before_the_header_is_unexpected_frame() -> None:
    assembler = ContentAssembler()
    assembler.add(MethodFrame(1, PUBLISH))
    with pytest.raises(UnexpectedFrame, match="expected content header for class 60"):
        assembler.add(MethodFrame(1, BasicAck(1)))


def test_method_in_the_middle_of_content_is_unexpected_frame() -> None:
    """RabbitMQ: "expected content body, got non content body frame instead"."""
    assembler = ContentAssembler()
    assembler.add(MethodFrame(1, PUBLISH))
    assembler.add(header(1, 4))
    assembler.add(BodyFrame(1, b"ab"))
    with pytest.raises(UnexpectedFrame, match="expected content body, got non content body"):
        assembler.add(MethodFrame(1, PUBLISH))


def test_second_header_is_unexpected_frame() -> None:
    assembler = ContentAssembler()
    assembler.add(MethodFrame(1, PUBLISH))
    assembler.add(header(1, 4))
    with pytest.raises(UnexpectedFrame, match="expected content body"):
        assembler.add(header(1, 4))


def test_header_class_id_mismatch_is_unexpected_frame() -> None:
    """4.2.6: "...badly-formatted content MUST raise a connection exception with reply code 505
    (unexpected frame). This includes ... wrong class IDs in content headers". (4.2.6.1 says 501;
    RabbitMQ says 505 with this text.)"""
    assembler = ContentAssembler()
    assembler.add(MethodFrame(1, PUBLISH))
    with pytest.raises(UnexpectedFrame, match="expected content header for class 60, got one "
                                              "for class 61 instead"):
        assembler.add(header(1, 0, class_id=61))


def test_header_weight_not_zero_is_unexpected_frame() -> None:
    """"The weight field is unused and must be zero"; RabbitMQ answers 505 too."""
    assembler = ContentAssembler()
    assembler.add(MethodFrame(1, PUBLISH))
    with pytest.raises(UnexpectedFrame, match="expected content header for class 60, got non"):
        assembler.add(header(1, 0, weight=1))


def test_bodies_beyond_the_header_size_are_unexpected_frame() -> None:
    """4.2.6 (badly-formatted content): 505. RabbitMQ 3.10 waits forever, recent versions 501."""
    assembler = ContentAssembler()
    assembler.add(MethodFrame(1, PUBLISH))
    assembler.add(header(1, 2))
    with pytest.raises(UnexpectedFrame, match="exceeds remaining content size"):
        assembler.add(BodyFrame(1, b"abc"))


# -- 504 and 501 ------------------------------------------------------------------------------


def test_content_header_on_channel_zero_is_unexpected_frame() -> None:
    """As RabbitMQ 3.10 (505; the spec says 504)."""
    with pytest.raises(UnexpectedFrame, match="content header frame on channel 0"):
        ContentAssembler().add(header(0, 0))


def test_content_body_on_channel_zero_is_unexpected_frame() -> None:
    with pytest.raises(UnexpectedFrame, match="content body frame on channel 0"):
        ContentAssembler().add(BodyFrame(0, b""))


def test_body_size_over_the_maximum_is_frame_error() -> None:
    assembler = ContentAssembler(max_body_size=10)
    assembler.add(MethodFrame(1, PUBLISH))
    with pytest.raises(FrameError, match="content body size 11 exceeds maximum allowed size 10"):
        assembler.add(header(1, 11))


# -- with the parser ----------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(stream=frame_streams(), frame_max=st.just(4096))
def test_parser_and_assembler_give_back_what_was_encoded(stream: tuple[bytes, list[Any]],
                                                         frame_max: int) -> None:
    data, commands = stream
    got = list(ContentAssembler().feed(FrameParser(frame_max).feed(data)))
    expected = []
    for command in commands:
        if command[0] == "method":
            expected.append(Command(command[1], command[2]))
        elif command[0] == "content":
            _, channel, method, props, body = command
            expected.append(Command(channel, method, props, encode_properties(props), body))
    assert got == expected


@settings(max_examples=100, deadline=None)
@given(stream=frame_streams(), cuts=st.lists(st.integers(0, 50_000), max_size=10))
def test_command_reader_equals_parser_and_assembler(stream: tuple[bytes, list[Any]],
                                                    cuts: list[int]) -> None:
    data, _ = stream
    layered = list(ContentAssembler().feed(FrameParser(4096).feed(data)))
    reader = CommandReader(4096)
    fused: list[Command] = []
    start = 0
    for cut in [*sorted({c % (len(data) + 1) for c in cuts}), len(data)]:
        fused += reader.feed(data[start:cut])
        start = cut
    assert fused == layered
    assert reader.buffered == 0


def test_command_reader_pending_and_forget() -> None:
    reader = CommandReader()
    assert not list(reader.feed(PUBLISH.encode_frame(1)))
    assert reader.pending(1) == PUBLISH
    reader.forget(1)
    assert reader.pending(1) is None
    assert list(reader.feed(BasicAck(1).encode_frame(1))) == [Command(1, BasicAck(1))]


def test_command_reader_frame_max_is_settable() -> None:
    reader = CommandReader()
    body = bytes(10_000)
    data = encode_message(1, PUBLISH, body, 131072)
    reader.frame_max = 131072
    assert [c.body for c in reader.feed(data)] == [body]


def test_command_reader_frame_max_set_between_commands_of_one_chunk() -> None:
    reader = CommandReader()
    body = bytes(10_000)
    commands = reader.feed(BasicQos().encode_frame(1) + encode_message(1, PUBLISH, body, 0))
    assert next(commands) == Command(1, BasicQos())
    reader.frame_max = 131072
    assert next(commands).body == body


def test_the_same_publish_again_is_decoded_once() -> None:
    reader = CommandReader(4096)
    data = encode_message(1, PUBLISH, b"a", 4096) + encode_message(2, PUBLISH, b"b", 4096)
    first, second = reader.feed(data)
    assert first.method is second.method  # (a method is not changed once decoded)
    for other in (BasicPublish(exchange="x", routing_key="k", mandatory=True),  # one bit
                  BasicPublish(exchange="x", routing_key="other")):
        (third,) = reader.feed(encode_message(1, other, b"c", 4096))
        assert third.method == other
    assert [first, second] == [Command(1, PUBLISH, {}, NO_PROPS, b"a"),
                               Command(2, PUBLISH, {}, NO_PROPS, b"b")]


def test_the_same_publish_again_on_channel_zero_is_still_refused() -> None:
    reader = CommandReader(4096)
    assert [c.body for c in reader.feed(encode_message(1, PUBLISH, b"a", 4096))] == [b"a"]
    with pytest.raises(ChannelError, match="unexpected method in connection state running"):
        list(reader.feed(PUBLISH.encode_frame(0)))


@pytest.mark.parametrize("extra", [b"", b"\x00", b"\x00" * 5])
def test_a_header_with_no_properties_is_read_as_the_general_path_reads_it(extra: bytes) -> None:
    """(The reader takes a header whose flag word is 0 and holds nothing else without a
    property reader; anything after the flag word is the general path's error.)"""
    method = PUBLISH.encode_frame(1)
    payload = struct.pack(">HHQ", 60, 0, 1) + b"\x00\x00" + extra
    header_frame = struct.pack(">BHI", 2, 1, len(payload)) + payload + b"\xce"
    body = struct.pack(">BHI", 3, 1, 1) + b"x\xce"
    data = method + header_frame + body
    layered = ContentAssembler().feed(FrameParser(4096).feed(data))
    if extra:
        with pytest.raises(SyntaxErrorAMQP, match="unexpected bytes after the content header"):
            list(layered)
        with pytest.raises(SyntaxErrorAMQP, match="unexpected bytes after the content header"):
            list(CommandReader(4096).feed(data))
    else:
        assert list(CommandReader(4096).feed(data)) == list(layered) == [
            Command(1, PUBLISH, {}, NO_PROPS, b"x")]
