"""The mapping between AMQP 1.0 messages and the broker's (0-9-1) messages, as RabbitMQ 4's
``mc_amqpl``: header and properties, typed application properties, ids, timestamps, bodies."""

from __future__ import annotations

import datetime
import uuid

import pytest

from embroker import fieldtypes
from embroker.amqp10 import (
    AMQP10_TYPE,
    Byte,
    DecodeError,
    Header,
    Properties,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    encode_value,
    parse_message,
    to_amqp10,
    to_model,
)
from embroker.amqp10_common._message import Kept
from embroker.model import Message


def sections(*parts: object) -> bytes:
    out = bytearray()
    for part in parts:
        if isinstance(part, tuple):
            code, value = part
            out += b"\x00\x53" + bytes((code,)) + encode_value(value)
        else:
            out += part.encode()  # type: ignore[attr-defined]
    return bytes(out)


def test_header_and_properties_map_to_basic_properties() -> None:
    created = 1_700_000_000_123
    payload = sections(
        Header(durable=True, priority=UByte(7), ttl=UInt(60000)),
        Properties(message_id=uuid.UUID(int=1), user_id=b"guest", reply_to="/queues/r",
                   correlation_id=ULong(42), content_type=Symbol("text/plain"),
                   content_encoding=Symbol("gzip"), creation_time=Timestamp(created),
                   group_id="app"),
        (0x74, {"n": ULong(5), "b": Byte(-1), "u": UInt(7), "s": "x"}),
        (0x75, b"body"))
    props, body = to_model(parse_message(payload))
    assert body == b"body"
    assert props == {
        "delivery_mode": 2, "priority": 7, "expiration": "60000",
        "message_id": "urn:uuid:00000000-0000-0000-0000-000000000001", "user_id": "guest",
        "reply_to": "/queues/r", "correlation_id": "42", "content_type": "text/plain",
        "content_encoding": "gzip", "timestamp": created // 1000, "app_id": "app",
        "headers": {"n": 5, "b": -1, "u": 7, "s": "x"}}
    headers = props["headers"]
    assert (type(headers["n"]), type(headers["b"]), type(headers["u"])) == (
        fieldtypes.Long, fieldtypes.Byte, fieldtypes.UnsignedInt)


def test_ids_that_are_not_short_strings_go_to_headers() -> None:
    payload = sections(Properties(message_id=b"\x00bin", correlation_id="c" * 300),
                       (0x77, "v"))
    props, body = to_model(parse_message(payload))
    assert "message_id" not in props
    assert "correlation_id" not in props
    assert props["headers"] == {"x-message-id": b"\x00bin", "x-correlation-id": "c" * 300}
    assert props["type"] == AMQP10_TYPE
    assert body == b"\x00\x53\x77\xa1\x01v"  # the body sections, whole


def test_x_annotations_become_headers_and_cc_its_name() -> None:
    payload = sections((0x72, {Symbol("x-opt-a"): "1", Symbol("x-cc"): ["k"],
                               Symbol("x-exchange"): "skipped", Symbol("other"): "no"}),
                       (0x75, b""))
    props, _body = to_model(parse_message(payload))
    assert props["headers"] == {"x-opt-a": "1", "CC": ["k"]}


def test_a_091_message_renders_as_10() -> None:
    stamp = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    message = Message("", "q", {
        "delivery_mode": 2, "priority": 3, "expiration": "1000",
        "message_id": "urn:uuid:00000000-0000-0000-0000-000000000002",
        "correlation_id": "c", "content_type": "application/json", "timestamp": stamp,
        "app_id": "app", "type": "t",
        "headers": {"k": fieldtypes.Long(1), "x-h": "v", "when": stamp, "tab": {"a": 1}}},
        b"{}")
    parsed = parse_message(to_amqp10(message, first_acquirer=False, delivery_count=2,
                                     annotations={"x-routing-key": "q"}))
    assert parsed.header == Header(durable=True, priority=3, ttl=1000, first_acquirer=False,
                                   delivery_count=2)
    p = parsed.properties
    assert p is not None
    assert (p.message_id, p.correlation_id, p.content_type, p.group_id) == (
        uuid.UUID(int=2), "c", "application/json", "app")
    assert p.creation_time == int(stamp.timestamp()) * 1000
    assert parsed.application_properties == {"k": 1, "when": int(stamp.timestamp()) * 1000}
    assert isinstance(parsed.application_properties["when"], Timestamp)
    assert parsed.message_annotations == {"x-h": "v", "x-basic-type": "t", "x-routing-key": "q"}
    assert parsed.data == b"{}"


def test_a_10_message_is_delivered_with_its_bare_message_intact() -> None:
    bare = sections(Properties(message_id="m", to="/queues/q"), (0x74, {"a": 1}),
                    (0x77, [1, "two", {"three": 3.0}]))
    payload = sections(Header(durable=True), (0x72, {Symbol("x-opt-keep"): 1})) + bare
    parsed = parse_message(payload)
    props, body = to_model(parsed)
    message = Message("", "q", props, body)
    message.native = Kept(props, parsed.message_annotations, parsed.bare)
    out = to_amqp10(message, first_acquirer=True, delivery_count=0,
                    annotations={"x-exchange": ""})
    assert out.endswith(bare)
    again = parse_message(out)
    assert again.message_annotations == {"x-opt-keep": 1, "x-exchange": ""}
    assert again.header is not None
    assert again.header.durable


@pytest.mark.parametrize("payload", [
    b"\x00\x53\x77\xa1\x01x\x00\x53\x77\xa1\x01y",  # two amqp-value sections
    b"\x00\x53\x75\xa0\x00\x00\x53\x77\x40",          # data then amqp-value
    b"\x00\x53\x73\x45\x00\x53\x70\x45",              # properties before header
    b"\x00\x53\x99\x45",                              # not a section
    b"\xa1\x01x",                                     # not described
    b"\x00\x53\x75\xa1\x01x",                         # a data section of a string
])
def test_malformed_messages_are_decode_errors(payload: bytes) -> None:
    with pytest.raises(DecodeError):
        parse_message(payload)
