"""Encoding whole messages: body splitting at frame-max, encoded properties, errors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embroker.amqp091 import (
    BodyFrame,
    Command,
    CommandReader,
    FrameParser,
    HeaderFrame,
    MethodFrame,
    encode_message,
    encode_method_frame,
)
from embroker.amqp091._frames import encode_body_frames, encode_header_frame, encode_header_frame_raw
from embroker.amqp091._properties import encode_properties
from embroker.amqp091.methods import BasicDeliver, BasicGetOk, BasicReturn
from tests.strategies import frame_max_values, properties

DELIVER = BasicDeliver(consumer_tag="c", delivery_tag=1, exchange="x", routing_key="k")


@pytest.mark.parametrize(("size", "frames"), [(0, 0), (1, 1), (4088, 1), (4089, 2), (8176, 2),
                                              (8177, 3)])
def test_body_is_split_at_frame_max_minus_8(size: int, frames: int) -> None:
    body = bytes(range(256)) * (size // 256) + bytes(size % 256)
    data = encode_message(1, DELIVER, body, 4096)
    parsed = list(FrameParser(4096).feed(data))
    bodies = [f for f in parsed if isinstance(f, BodyFrame)]
    assert len(bodies) == frames
    assert all(len(f.data) <= 4088 for f in bodies)
    assert b"".join(f.data for f in bodies) == body
    assert data.endswith(b"".join(encode_body_frames(1, body, 4096)))


def _bodies() -> st.SearchStrategy[bytes]:
    """Bodies up to 20 kB, cheap to draw: a length and a pattern."""
    return st.builds(lambda n, step: bytes((i * step) & 0xFF for i in range(n)),
                     st.integers(0, 20_000), st.integers(1, 255))


@settings(max_examples=100, deadline=None)
@given(props=properties(), body=_bodies(), frame_max=frame_max_values(),
       method=st.sampled_from([DELIVER, BasicGetOk(delivery_tag=2, message_count=3),
                               BasicReturn(reply_code=312, reply_text="NO_ROUTE")]))
def test_messages_read_back_whatever_the_frame_max(props: dict[str, Any], body: bytes,
                                                   frame_max: int, method: Any) -> None:
    if frame_max and len(encode_header_frame(1, 60, len(body), props)) > frame_max:
        return  # a header too big for this frame-max: not a valid message
    data = encode_message(7, method, body, frame_max, properties=props)
    raw = encode_properties(props)
    assert data == encode_message(7, method, body, frame_max, raw_properties=raw)
    assert list(CommandReader(frame_max).feed(data)) == [Command(7, method, props, raw, body)]


def test_message_from_encoded_properties_sends_them_unchanged() -> None:
    """Forwarding the encoded properties sends the bytes that came in."""
    raw = b"\x20\x00" + b"\x00\x00\x00\x04\x01nb\x01"
    (header,) = FrameParser().feed(encode_header_frame_raw(1, 60, 0, raw))
    assert isinstance(header, HeaderFrame)
    data = encode_message(1, DELIVER, b"", 4096, raw_properties=header.raw_properties)
    assert raw in data


def test_decoded_properties_keep_their_field_types_for_reencoding() -> None:
    """A header ``b`` 1 decodes to ``Byte(1)`` (equal to 1), which encodes as ``b`` again: the
    headers the broker rewrites keep their types, as RabbitMQ's do."""
    raw = b"\x20\x00" + b"\x00\x00\x00\x22" + b"\x01nb\x01" + b"\x01lL" + bytes(7) + b"\x05" \
        + b"\x01su\x00\x07" + b"\x01ff\x3f\x80\x00\x00" + b"\x01iI\x00\x00\x00\x02"
    (header,) = FrameParser().feed(encode_header_frame_raw(1, 60, 0, raw))
    assert isinstance(header, HeaderFrame)
    headers = header.properties["headers"]
    assert headers == {"n": 1, "l": 5, "s": 7, "f": 1.0, "i": 2}
    assert [type(v).__name__ for v in headers.values()] == [
        "Byte", "Long", "UnsignedShort", "Float32", "int"]
    expected = raw.replace(b"\x01lL", b"\x01ll")  # the spec's L goes out as RabbitMQ's l
    assert encode_properties(header.properties) == expected


def test_method_frame_and_encode_frame_agree() -> None:
    assert encode_method_frame(3, DELIVER) == DELIVER.encode_frame(3)
    (frame,) = FrameParser().feed(DELIVER.encode_frame(3))
    assert frame == MethodFrame(3, DELIVER)


def test_frame_max_without_room_for_a_body_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="leaves no room"):
        encode_message(1, DELIVER, b"x", 8)
    with pytest.raises(ValueError, match="leaves no room"):
        encode_body_frames(1, b"x", 8)


def test_bad_properties_are_refused_when_encoding_a_message() -> None:
    with pytest.raises(ValueError, match="unknown basic property 'colour'"):
        encode_message(1, DELIVER, b"", 4096, properties={"colour": "red"})
