"""The byte-exact examples of the wire-format guide (shared/seeds/amqp091-wire-format.txt)."""

from __future__ import annotations

import pytest

from embroker.amqp091 import (
    PROTOCOL_HEADER,
    BodyFrame,
    Command,
    FrameParser,
    HeaderFrame,
    HeartbeatFrame,
    MethodFrame,
    ProtocolHeaderKind,
    encode_message,
    encode_method_frame,
    parse_protocol_header,
)
from embroker.amqp091._assembly import ContentAssembler
from embroker.amqp091._frames import (
    HEARTBEAT_FRAME,
    decode_method,
    encode_body_frames,
    encode_header_frame,
    encode_header_frame_raw,
)
from embroker.amqp091._properties import decode_properties, encode_properties
from embroker.amqp091.methods import BasicDeliver, BasicPublish, QueueDeclare

#: "Publishing a message to exchange events with routing key order.created, mandatory=False,
#: immediate=False" -- "Total frame: 7 (header) + 28 (payload) + 1 (frame-end) = 36 bytes."
PUBLISH_FRAME = bytes.fromhex(
    "01"            # METHOD
    "0001"          # channel 1
    "0000001c"      # size 28
    "003c"          # class 60 basic
    "0028"          # method 40 publish
    "0000"          # reserved short
) + b"\x06events" + b"\x0dorder.created" + b"\x00" + b"\xce"

#: "Flags: 0b1001000000000000 = 0x9000 ... content-type: 0x10 'application/json' (shortstr),
#: delivery-mode: 0x02 (octet). Total content header payload: 2+2+8+2+17+1 = 32 bytes."
HEADER_PAYLOAD_0X9000 = (bytes.fromhex("003c" "0000" "0000000000000018" "9000")
                         + b"\x10application/json" + b"\x02")
JSON_BODY = b'{"order_id":"123"}      '  # the guide's 24-byte body


def test_basic_publish_frame_is_36_bytes_exactly() -> None:
    method = BasicPublish(exchange="events", routing_key="order.created")
    assert len(PUBLISH_FRAME) == 36
    assert encode_method_frame(1, method) == PUBLISH_FRAME
    assert method.encode_frame(1) == PUBLISH_FRAME


def test_basic_publish_frame_decodes_to_the_method() -> None:
    (frame,) = FrameParser().feed(PUBLISH_FRAME)
    assert frame == MethodFrame(1, BasicPublish(exchange="events", routing_key="order.created"))
    assert decode_method(PUBLISH_FRAME[7:-1]) == frame.method


def test_content_header_with_flags_0x9000() -> None:
    properties = {"content_type": "application/json", "delivery_mode": 2}
    assert len(HEADER_PAYLOAD_0X9000) == 32
    assert encode_properties(properties) == HEADER_PAYLOAD_0X9000[12:]
    assert decode_properties(HEADER_PAYLOAD_0X9000[12:]) == properties
    frame = b"\x02\x00\x01\x00\x00\x00\x20" + HEADER_PAYLOAD_0X9000 + b"\xce"
    assert encode_header_frame(1, 60, 24, properties) == frame
    assert encode_header_frame_raw(1, 60, 24, HEADER_PAYLOAD_0X9000[12:]) == frame
    (decoded,) = FrameParser().feed(frame)
    assert decoded == HeaderFrame(1, 60, 0, 24, properties, HEADER_PAYLOAD_0X9000[12:])


def test_content_header_flags_follow_spec_order_whatever_the_dict_order() -> None:
    assert (encode_properties({"delivery_mode": 2, "content_type": "application/json"})
            == HEADER_PAYLOAD_0X9000[12:])


def test_heartbeat_frame_is_8_bytes() -> None:
    assert bytes([8, 0, 0, 0, 0, 0, 0, 0xCE]) == HEARTBEAT_FRAME
    assert list(FrameParser().feed(HEARTBEAT_FRAME)) == [HeartbeatFrame()]


def test_500000_byte_body_at_frame_max_131072_makes_four_body_frames() -> None:
    body = bytes(range(256)) * 1953 + bytes(range(32))
    assert len(body) == 500_000
    frames = encode_body_frames(1, body, 131072)
    assert [len(frame) - 8 for frame in frames] == [131064, 131064, 131064, 106808]
    assert all(frame[:1] == b"\x03" and frame[1:3] == b"\x00\x01" for frame in frames)
    assert all(frame[-1:] == b"\xce" for frame in frames)
    # "Consumer receives all body bytes concatenated = 500000 bytes."
    parser = FrameParser(max_frame_size=131072)
    received = [f for f in parser.feed(b"".join(frames)) if isinstance(f, BodyFrame)]
    assert b"".join(f.data for f in received) == body


def test_1024_byte_body_is_one_1032_byte_frame() -> None:
    (frame,) = encode_body_frames(1, bytes(1024), 131072)
    assert len(frame) == 1032


def test_empty_body_has_no_body_frame() -> None:
    assert encode_body_frames(1, b"", 131072) == []


def test_complete_publish_sequence() -> None:
    """The guide's three-frame publish: method, header (size 32), body (size 24)."""
    method = BasicPublish(exchange="", routing_key="orders")
    properties = {"content_type": "application/json", "delivery_mode": 2}
    data = encode_message(1, method, JSON_BODY, 131072, properties=properties)
    method_frame = encode_method_frame(1, method)
    header_frame = data[len(method_frame):len(method_frame) + 40]
    assert data.startswith(method_frame)
    assert header_frame == b"\x02\x00\x01\x00\x00\x00\x20" + HEADER_PAYLOAD_0X9000 + b"\xce"
    assert data[len(method_frame) + 40:] == b"\x03\x00\x01\x00\x00\x00\x18" + JSON_BODY + b"\xce"
    assembler = ContentAssembler()
    commands = list(assembler.feed(FrameParser(131072).feed(data)))
    assert commands == [Command(1, method, properties, HEADER_PAYLOAD_0X9000[12:], JSON_BODY)]


def test_deliver_sequence_is_the_same_with_basic_deliver() -> None:
    """"When consumed, the broker sends the same three-frame sequence but with a basic.deliver"."""
    deliver = BasicDeliver(consumer_tag="ctag", delivery_tag=1, exchange="", routing_key="orders")
    properties = {"content_type": "application/json", "delivery_mode": 2}
    data = encode_message(1, deliver, JSON_BODY, 131072, properties=properties)
    publish = BasicPublish(routing_key="orders")
    published = encode_message(1, publish, JSON_BODY, 131072, properties=properties)
    content = published[len(encode_method_frame(1, publish)):]
    assert data == encode_method_frame(1, deliver) + content


def test_bit_arguments_pack_low_bit_first() -> None:
    """"passive(1) durable(1) exclusive(1) auto-delete(1) no-wait(1) -> 0b00011111"."""
    method = QueueDeclare(queue="q", passive=True, durable=True, exclusive=True,
                          auto_delete=True, no_wait=True)
    payload = method.encode()
    assert payload[-5] == 0b00011111
    assert QueueDeclare(queue="q", durable=True).encode()[-5] == 0b00000010
    assert decode_method(payload) == method


@pytest.mark.parametrize(
    ("data", "kind", "protocol_id", "version"),
    [
        (PROTOCOL_HEADER, ProtocolHeaderKind.AMQP_0_9_1, 0, (0, 9, 1)),
        (b"AMQP\x00\x01\x00\x00", ProtocolHeaderKind.AMQP_1_0, 0, (1, 0, 0)),
        (b"AMQP\x02\x01\x00\x00", ProtocolHeaderKind.AMQP_1_0, 2, (1, 0, 0)),
        (b"AMQP\x03\x01\x00\x00", ProtocolHeaderKind.AMQP_1_0, 3, (1, 0, 0)),
        (b"AMQP\x01\x01\x00\x09", ProtocolHeaderKind.OTHER_AMQP_VERSION, 1, (1, 0, 9)),
        (b"AMQP\x01\x01\x08\x00", ProtocolHeaderKind.OTHER_AMQP_VERSION, 1, (1, 8, 0)),
        (b"AMQP\x00\x00\x0a\x00", ProtocolHeaderKind.OTHER_AMQP_VERSION, 0, (0, 10, 0)),
        (b"AMQP\x00\x00\x09\x00", ProtocolHeaderKind.OTHER_AMQP_VERSION, 0, (0, 9, 0)),
        (b"GET / HTTP/1.1\r\n", ProtocolHeaderKind.NOT_AMQP, 0, (0, 0, 0)),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01", ProtocolHeaderKind.NOT_AMQP, 0, (0, 0, 0)),
    ],
)
def test_protocol_header_is_recognised(data: bytes, kind: ProtocolHeaderKind, protocol_id: int,
                                       version: tuple[int, int, int]) -> None:
    header = parse_protocol_header(data)
    assert header is not None
    assert (header.kind, header.protocol_id, header.version) == (kind, protocol_id, version)


def test_protocol_header_waits_for_eight_bytes_one_at_a_time() -> None:
    for n in range(8):
        assert parse_protocol_header(PROTOCOL_HEADER[:n]) is None
    header = parse_protocol_header(PROTOCOL_HEADER)
    assert header is not None
    assert header.kind is ProtocolHeaderKind.AMQP_0_9_1
    assert header.data == PROTOCOL_HEADER


def test_non_amqp_is_refused_from_the_first_wrong_byte() -> None:
    header = parse_protocol_header(b"G")
    assert header is not None
    assert header.kind is ProtocolHeaderKind.NOT_AMQP
    header = parse_protocol_header(b"AMQX")
    assert header is not None
    assert header.kind is ProtocolHeaderKind.NOT_AMQP
