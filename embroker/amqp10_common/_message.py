"""AMQP 1.0 messages (Part 3 section 3.2) and their mapping to and from the broker's messages:
the one home of message conversion, for the AMQP 1.0 and stream surfaces alike (through the
names :mod:`embroker.amqp10` exports), keyed by the broker's RabbitMQ profile where RabbitMQ's
versions differ (:func:`from_stream`, :func:`to_stream`).

A transfer's payload is a sequence of sections: header, delivery-annotations,
message-annotations, then the *bare message* (properties, application-properties, the body:
data sections, amqp-sequence sections or one amqp-value, then a footer). :func:`parse_message`
splits it, reads header, properties and application-properties, and keeps the bytes from the
bare message on untouched, so a 1.0 consumer gets them back byte for byte (only the header and
the message annotations are the broker's to write).

The mapping to the model's (0-9-1) message is RabbitMQ 4's (``mc_amqpl``):

=========================  ==============================================================
AMQP 1.0                   0-9-1 property
=========================  ==============================================================
header.durable             delivery_mode 2 (else 1)
header.priority            priority
header.ttl                 expiration (milliseconds, as text)
properties.message-id      message_id: a string as is (over 255 bytes: header
                           ``x-message-id``), a uuid as ``urn:uuid:...``, a ulong in decimal,
                           binary in header ``x-message-id``
properties.correlation-id  correlation_id, the same way (``x-correlation-id``)
properties.user-id         user_id
properties.reply-to        reply_to
properties.content-type    content_type
content-encoding           content_encoding
properties.creation-time   timestamp (milliseconds to seconds)
properties.group-id        app_id
application-properties     headers (string keys); values as RabbitMQ maps them
message-annotations x-...  headers (``x-cc`` as ``CC``)
one or more data sections  the body, concatenated
any other body             the encoded sections, with type ``amqp-1.0``
=========================  ==============================================================

and back the other way for a message published over 0-9-1 (a ``urn:uuid:`` message id becomes
a uuid; headers whose names begin with ``x-`` become message annotations, the others
application properties; a body of type ``amqp-1.0`` is decoded back into its sections).
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from .. import fieldtypes
from ..model._deadletter import Death, death_entries
from ._definitions import (
    SECTION_AMQP_SEQUENCE,
    SECTION_AMQP_VALUE,
    SECTION_APPLICATION_PROPERTIES,
    SECTION_DATA,
    SECTION_DELIVERY_ANNOTATIONS,
    SECTION_FOOTER,
    SECTION_HEADER,
    SECTION_MESSAGE_ANNOTATIONS,
    SECTION_NAMES,
    SECTION_PROPERTIES,
    Header,
    Properties,
)
from ._errors import DecodeError
from ._types import (
    Array,
    Byte,
    Described,
    Float,
    Int,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
    decode_value,
    encode_value,
    skip_value,
)

if TYPE_CHECKING:
    from ..model import Message
    from ..model._profile import Profile

__all__ = ["AMQP10_TYPE", "Kept", "ParsedMessage", "encode_deaths", "from_stream", "parse_message",
           "to_amqp10", "to_model", "to_stream", "value_from_091", "value_to_091"]

#: The 0-9-1 ``type`` of a message whose body is AMQP 1.0 sections other than data.
AMQP10_TYPE: Final = "amqp-1.0"
_UTC = datetime.timezone.utc
_ORDER: Final = {SECTION_HEADER: 0, SECTION_DELIVERY_ANNOTATIONS: 1,
                 SECTION_MESSAGE_ANNOTATIONS: 2, SECTION_PROPERTIES: 3,
                 SECTION_APPLICATION_PROPERTIES: 4, SECTION_DATA: 5, SECTION_AMQP_SEQUENCE: 5,
                 SECTION_AMQP_VALUE: 5, SECTION_FOOTER: 6}


@dataclass(slots=True)
class ParsedMessage:
    """A message as a 1.0 sender transferred it.

    Attributes:
        header, properties: the sections (``None`` when left out).
        message_annotations, application_properties: the maps (empty when left out).
        body_kind: ``SECTION_DATA``, ``SECTION_AMQP_SEQUENCE`` or ``SECTION_AMQP_VALUE`` (0
            when the message has no body).
        data: for data sections, their bytes concatenated.
        bare: the bytes from the bare message on (properties to the footer).
        body: the bytes of the body sections and the footer.
    """

    header: Header | None = None
    properties: Properties | None = None
    message_annotations: dict[Any, Any] = field(default_factory=dict)
    application_properties: dict[Any, Any] = field(default_factory=dict)
    body_kind: int = 0
    data: bytes = b""
    bare: bytes = b""
    body: bytes = b""


def _section_code(descriptor: Any) -> int:
    if isinstance(descriptor, ULong):
        return int(descriptor)
    if isinstance(descriptor, Symbol):
        return SECTION_NAMES.get(descriptor, -1)
    return -1


def parse_message(payload: bytes) -> ParsedMessage:
    """Split a transfer payload into its sections (Part 3 section 3.2).

    Raises:
        DecodeError: not a sequence of message sections in the spec's order.
    """
    message = ParsedMessage()
    pos, end = 0, len(payload)
    last = -1
    bare_start = body_start = -1
    data = []
    while pos < end:
        if payload[pos] != 0x00:
            raise DecodeError("a message section must be a described value")
        if payload[pos + 1:pos + 2] == b"\x53" and pos + 3 <= end:
            descriptor = code = payload[pos + 2]  # the usual smallulong descriptor
            value_pos = pos + 3
        else:
            descriptor, value_pos = decode_value(payload, pos + 1)
            code = _section_code(descriptor)
        order = _ORDER.get(code)
        if order is None:
            raise DecodeError(f"unknown message section {descriptor!r}")
        if order < last or (order == last and order != 5):
            raise DecodeError("message sections out of order or repeated")
        if order == 5 and message.body_kind and (
                code != message.body_kind or code == SECTION_AMQP_VALUE):
            raise DecodeError("a body is data sections, amqp-sequence sections or one "
                              "amqp-value")
        if order >= 3 and bare_start < 0:
            bare_start = pos
        if order >= 5 and body_start < 0:
            body_start = pos
        last = order
        if code in (SECTION_HEADER, SECTION_PROPERTIES):
            value: Any
            if payload[value_pos:value_pos + 1] == b"\x45":  # empty, as proton often sends
                value, pos = (Header() if code == SECTION_HEADER else Properties()), value_pos + 1
            else:
                value, pos = decode_value(payload, pos)
            if code == SECTION_HEADER:
                message.header = value
            else:
                message.properties = value
            continue
        if code in (SECTION_MESSAGE_ANNOTATIONS, SECTION_APPLICATION_PROPERTIES):
            value, pos = decode_value(payload, value_pos)
            if value is not None and not isinstance(value, dict):
                raise DecodeError("annotations and application-properties must be maps")
            if code == SECTION_MESSAGE_ANNOTATIONS:
                message.message_annotations = value or {}
            else:
                message.application_properties = value or {}
            continue
        if code == SECTION_DATA:
            value, pos = decode_value(payload, value_pos)
            if not isinstance(value, bytes):
                raise DecodeError("a data section holds binary")
            data.append(value)
            message.body_kind = code
            continue
        pos = skip_value(payload, value_pos)
        if code in (SECTION_AMQP_SEQUENCE, SECTION_AMQP_VALUE):
            message.body_kind = code
    if bare_start >= 0:
        message.bare = payload[bare_start:]
    if body_start >= 0:
        message.body = payload[body_start:]
    message.data = b"".join(data)
    return message


# -- 1.0 -> model -------------------------------------------------------------------------------

def value_to_091(value: Any) -> Any:
    """An AMQP 1.0 value as a 0-9-1 header value, typed as RabbitMQ's ``to_091`` types it
    (a long stays a long, a uint an unsignedint...)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, Timestamp):
        seconds = value // 1000
        return datetime.datetime.fromtimestamp(seconds, _UTC) \
            if -62135596800 <= seconds <= 253402300799 else fieldtypes.Timestamp(seconds)
    if isinstance(value, int):
        kind = _TO_091_INTS.get(type(value))
        if kind is not None:
            return kind(value)
        return fieldtypes.Long(value) if -(2**63) <= value < 2**63 else str(value)
    if isinstance(value, Float):
        return fieldtypes.Float32(value)
    if isinstance(value, (float, bytes)):
        return float(value) if isinstance(value, float) else bytes(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, uuid.UUID):
        return f"urn:uuid:{value}"
    if isinstance(value, list):
        return [value_to_091(v) for v in value]
    if isinstance(value, dict):
        return {str(k): value_to_091(v) for k, v in value.items()}
    if isinstance(value, Described):
        return value_to_091(value.value)
    return str(value)  # pragma: no cover - every decoded type is handled above


#: RabbitMQ's ``to_091`` for the integer types (a ulong travels as a long).
_TO_091_INTS: Final[dict[type[int], type[int]]] = {
    Byte: fieldtypes.Byte, UByte: fieldtypes.UnsignedByte, Short: fieldtypes.Short,
    UShort: fieldtypes.UnsignedShort, Int: int, UInt: fieldtypes.UnsignedInt,
    ULong: fieldtypes.Long,
}


def _id_to_091(value: Any, header: str, headers: dict[str, Any]) -> str | None:
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        return f"urn:uuid:{value}"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, bytes):
        headers[header] = value
        return None
    if len(value.encode("utf-8")) <= 255:
        return str(value)
    headers[header] = str(value)
    return None


#: Message annotations RabbitMQ keeps to itself rather than showing as 0-9-1 headers.
_INTERNAL_ANNOTATIONS: Final = frozenset({"x-exchange", "x-routing-key", "x-basic-type",
                                          "x-basic-delivery-mode", "x-basic-priority",
                                          "x-basic-expiration", "x-opt-deaths"})


def to_model(message: ParsedMessage) -> tuple[dict[str, Any], bytes]:
    """The 0-9-1 properties and body of a 1.0 message (see the module docstring)."""
    props: dict[str, Any] = {}
    headers: dict[str, Any] = {}
    annotations = message.message_annotations
    for key, value in annotations.items():
        if not isinstance(key, str) or not key.startswith("x-") or key in _INTERNAL_ANNOTATIONS:
            continue
        if len(key.encode()) > 255:
            continue
        headers["CC" if key == "x-cc" else key] = value_to_091(value)
    for key, value in message.application_properties.items():
        if isinstance(key, str) and len(key.encode()) <= 255:
            headers[key] = value_to_091(value)
    header = message.header
    if header is not None:
        props["delivery_mode"] = 2 if header.durable else 1
        if header.priority is not None:
            props["priority"] = int(header.priority)
        if header.ttl is not None:
            props["expiration"] = str(int(header.ttl))
    p = message.properties
    if p is not None:
        message_id = _id_to_091(p.message_id, "x-message-id", headers)
        if message_id is not None:
            props["message_id"] = message_id
        correlation_id = _id_to_091(p.correlation_id, "x-correlation-id", headers)
        if correlation_id is not None:
            props["correlation_id"] = correlation_id
        if p.user_id is not None:
            try:
                user = p.user_id.decode("utf-8")
            except UnicodeDecodeError:
                user = None
            if user is not None and len(p.user_id) <= 255:
                props["user_id"] = user
        if p.reply_to is not None and len(p.reply_to.encode()) <= 255:
            props["reply_to"] = p.reply_to
        if p.content_type is not None:
            props["content_type"] = str(p.content_type)[:255]
        if p.content_encoding is not None:
            props["content_encoding"] = str(p.content_encoding)[:255]
        if p.creation_time is not None:
            props["timestamp"] = max(0, int(p.creation_time) // 1000)
        if p.group_id is not None and len(p.group_id.encode()) <= 255:
            props["app_id"] = p.group_id
    if message.body_kind == SECTION_DATA:
        body = message.data
        basic_type = annotations.get("x-basic-type")
        if isinstance(basic_type, str):
            props["type"] = str(basic_type)
    else:
        body = message.body
        props["type"] = AMQP10_TYPE
    if headers:
        props["headers"] = headers
    return props, body


# -- model -> 1.0 -------------------------------------------------------------------------------

def value_from_091(value: Any) -> Any:
    """A 0-9-1 header value as an AMQP 1.0 value (RabbitMQ's ``from_091``)."""
    if isinstance(value, bool) or value is None or isinstance(value, bytes):
        return value
    if isinstance(value, fieldtypes.Timestamp):
        return Timestamp(int(value) * 1000)
    if isinstance(value, int):
        kind = _FROM_091_INTS.get(type(value))
        if kind is not None:
            return kind(value)
        return Int(value) if -(2**31) <= value < 2**31 else int(value)
    if isinstance(value, fieldtypes.Float32):
        return Float(value)
    if isinstance(value, (float, str)):
        return value
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_UTC)
        return Timestamp(int(value.timestamp()) * 1000)
    if isinstance(value, (list, tuple)):
        return [value_from_091(v) for v in value]
    if isinstance(value, dict):
        return {Symbol(k) if isinstance(k, str) and k.isascii() else str(k): value_from_091(v)
                for k, v in value.items()}
    return str(value)


_FROM_091_INTS: Final[dict[type[int], type[int]]] = {
    fieldtypes.Byte: Byte, fieldtypes.UnsignedByte: UByte, fieldtypes.Short: Short,
    fieldtypes.UnsignedShort: UShort, fieldtypes.UnsignedInt: UInt, fieldtypes.Long: int,
}


def _id_from_091(value: str | None) -> Any:
    if value is None:
        return None
    if value.startswith("urn:uuid:"):
        try:
            return uuid.UUID(value[9:])
        except ValueError:
            return value
    return value


@dataclass(slots=True)
class Kept:
    """What a 1.0 publish leaves on the model's message: the annotations and the bytes of the
    bare message, valid while the message keeps the properties dict it was published with."""

    properties: dict[str, Any]
    message_annotations: dict[Any, Any]
    bare: bytes


def to_amqp10(message: Message, *, first_acquirer: bool, delivery_count: int,
              annotations: dict[Any, Any]) -> bytes:
    """The transfer payload that delivers ``message`` to a 1.0 receiver.

    Args:
        message: the model's message.
        first_acquirer: whether this is the message's first delivery.
        delivery_count: how many failed deliveries it had before.
        annotations: message annotations the broker adds (``x-exchange``, ``x-routing-key``).
    """
    props = message.properties
    priority = props.get("priority")
    expiration = props.get("expiration")
    durable = props.get("delivery_mode") == 2
    if priority is None and expiration is None and not delivery_count:
        # The usual header, without the tables: durable, priority, ttl, first-acquirer.
        out = bytearray(_SHORT_HEADERS[durable, first_acquirer])
    else:
        out = bytearray()
        ttl = None
        if isinstance(expiration, str) and expiration.isdigit():
            ttl = UInt(min(int(expiration), 0xFFFFFFFF))
        Header(durable=durable,
               priority=UByte(priority) if isinstance(priority, int) and 0 <= priority < 256
               else None, ttl=ttl, first_acquirer=first_acquirer,
               delivery_count=UInt(delivery_count)).encode_into(out)
    kept = message.native
    if isinstance(kept, Kept) and kept.properties is not props:
        offset = _stream_offset(kept.properties, props)
        if offset is None:
            kept = None
        else:  # read from a stream: the message as kept, with its offset
            annotations = {**annotations, Symbol("x-stream-offset"): ULong(offset)}
    if isinstance(kept, Kept):
        if kept.message_annotations:
            out += b"\x00\x53\x72"
            encode_value(_annotation_keys({**kept.message_annotations, **annotations}), out)
        elif annotations:
            out += _encode_annotations(annotations)
        out += kept.bare
        return bytes(out)
    headers = props.get("headers") or {}
    mapped: dict[Any, Any] = {}
    app: dict[Any, Any] = {}
    for key, value in headers.items():
        if key == "x-death":
            continue  # the broker's history travels as x-opt-deaths (mc_amqpl:is_internal_header)
        if key == "x-stream-offset" and isinstance(value, int):
            mapped[Symbol(key)] = ULong(value)  # a stream's offset: a ulong, as RabbitMQ 3.10.8
        elif key.startswith("x-"):
            mapped[Symbol(key) if key.isascii() else key] = value_from_091(value)
        elif key == "CC" and isinstance(value, list):
            mapped[Symbol("x-cc")] = value_from_091(value)
        elif not isinstance(value, (list, tuple, dict)):
            app[key] = value_from_091(value)
    basic_type = props.get("type")
    if isinstance(basic_type, str) and basic_type != AMQP10_TYPE:
        mapped[Symbol("x-basic-type")] = basic_type
    mapped.update(_annotation_keys(annotations))
    if mapped:
        out += b"\x00\x53\x72"
        encode_value(mapped, out)
    timestamp = props.get("timestamp")
    if isinstance(timestamp, datetime.datetime):
        timestamp = int(timestamp.replace(tzinfo=timestamp.tzinfo or _UTC).timestamp())
    user_id = props.get("user_id")
    content_type = props.get("content_type")
    content_encoding = props.get("content_encoding")
    Properties(
        message_id=_id_from_091(props.get("message_id")),
        user_id=user_id.encode("utf-8", "surrogateescape") if isinstance(user_id, str)
        else None,
        reply_to=props.get("reply_to"),
        correlation_id=_id_from_091(props.get("correlation_id")),
        content_type=Symbol(content_type) if isinstance(content_type, str)
        and content_type.isascii() else None,
        content_encoding=Symbol(content_encoding) if isinstance(content_encoding, str)
        and content_encoding.isascii() else None,
        creation_time=Timestamp(timestamp * 1000) if isinstance(timestamp, int) else None,
        group_id=props.get("app_id"),
    ).encode_into(out)
    if app:
        out += b"\x00\x53\x74"
        encode_value(app, out)
    if basic_type == AMQP10_TYPE and _is_sections(message.body):
        out += message.body
    else:
        out += b"\x00\x53\x75"
        encode_value(message.body, out)
    return bytes(out)


def _stream_offset(kept: dict[str, Any], props: dict[str, Any]) -> int | None:
    """The ``x-stream-offset`` a stream's delivery added to the properties a 1.0 publish left
    (the only change), else ``None``."""
    headers = props.get("headers")
    if not isinstance(headers, dict) or "x-stream-offset" not in headers:
        return None
    rest = {k: v for k, v in headers.items() if k != "x-stream-offset"}
    if rest != (kept.get("headers") or {}) or {**kept, "headers": None} != {
            **props, "headers": None}:
        return None
    offset = headers["x-stream-offset"]
    return int(offset) if isinstance(offset, int) else None


_SHORT_HEADERS: Final = {(durable, first): Header(durable=durable, first_acquirer=first).encode()
                         for durable in (False, True) for first in (False, True)}


def encode_deaths(deaths: Sequence[Death]) -> Array:
    """A message's death history as the ``x-opt-deaths`` message annotation: an array of maps,
    newest first, typed as RabbitMQ 4 types them (v4.1.4 ``mc_amqp:encode_deaths/1``)."""
    maps = []
    for entry in death_entries(deaths):
        typed: dict[Any, Any] = {}
        if "ttl" in entry:
            typed[Symbol("ttl")] = UInt(entry["ttl"])
        typed.update({
            Symbol("queue"): entry["queue"], Symbol("reason"): Symbol(entry["reason"]),
            Symbol("count"): ULong(entry["count"]),
            Symbol("first-time"): Timestamp(entry["first-time"]),
            Symbol("last-time"): Timestamp(entry["last-time"]),
            Symbol("exchange"): entry["exchange"],
            Symbol("routing-keys"): Array(0xA1, entry["routing-keys"])})
        maps.append(typed)
    return Array(0xD1, maps)


def _encode_annotations(annotations: dict[Any, Any]) -> bytes:
    # A map of symbols to strings (x-exchange, x-routing-key), built directly.
    body = bytearray()
    for key, value in annotations.items():
        if not isinstance(value, str) or not isinstance(key, str):
            return b"\x00\x53\x72" + bytes(encode_value(_annotation_keys(annotations)))
        raw_key = key.encode("utf-8", "surrogateescape")  # (as _types writes them)
        raw = value.encode("utf-8", "surrogateescape")
        body += b"\xa3" + bytes((len(raw_key),)) + raw_key
        body += (b"\xa1" + bytes((len(raw),)) if len(raw) < 256
                 else b"\xb1" + len(raw).to_bytes(4, "big")) + raw
    count = 2 * len(annotations)
    if len(body) + 1 < 256:
        return b"\x00\x53\x72\xc1" + bytes((len(body) + 1, count)) + body
    return (b"\x00\x53\x72\xd1" + (len(body) + 4).to_bytes(4, "big")
            + count.to_bytes(4, "big") + bytes(body))


def _annotation_keys(annotations: dict[Any, Any]) -> dict[Any, Any]:
    return {Symbol(k) if isinstance(k, str) and not isinstance(k, Symbol) and k.isascii()
            else k: v for k, v in annotations.items()}


def _is_sections(body: bytes) -> bool:
    try:
        parsed = parse_message(body)
    except DecodeError:
        return False
    return bool(parsed.body_kind)


def encode_body_value(value: Any) -> bytes:
    """An amqp-value section holding ``value`` (for tests and tools)."""
    out = bytearray(b"\x00\x53\x77")
    encode_value(value, out)
    return bytes(out)



# -- stream messages ----------------------------------------------------------------------------

def from_stream(data: bytes, profile: Profile) -> tuple[dict[str, Any], bytes]:
    """The 0-9-1 properties and body of a message published over the stream protocol, as
    AMQP 0-9-1 and 1.0 consumers get it: RabbitMQ 3.10's mapping (:func:`_model_310`), or
    RabbitMQ 4's (:func:`to_model`) under its profile. Bytes that are not an AMQP 1.0 message
    (osiris takes any) are the body, with no properties."""
    try:
        parsed = parse_message(data)
        return to_model(parsed) if profile.rabbitmq4 else _model_310(parsed)
    except DecodeError:
        return {}, data


def to_stream(message: Message, profile: Profile) -> bytes:
    """The AMQP 1.0 bytes a stream reader gets for a message published over AMQP, with its
    exchange and routing key as annotations: RabbitMQ 3.10's ``rabbit_msg_record``
    (:func:`_record_310`), or RabbitMQ 4's message container under its profile."""
    if not profile.rabbitmq4:
        return _record_310(message)
    return to_amqp10(message, first_acquirer=False, delivery_count=0,
                     annotations={Symbol("x-exchange"): message.exchange,
                                  Symbol("x-routing-key"): message.routing_key})


def _model_310(message: ParsedMessage) -> tuple[dict[str, Any], bytes]:
    """A message published over the stream protocol as RabbitMQ 3.10.8's AMQP 0-9-1
    consumers get it (``rabbit_msg_record:to_amqp091/1``): the 1.0 properties as basic
    properties, ``x-basic-type`` and ``x-basic-app-id`` of the application properties as
    type and app-id and the others as headers, ``x-basic-priority``,
    ``x-basic-delivery-mode`` and ``x-basic-expiration`` of the message annotations (the
    others are dropped); the body is the data section's bytes."""
    props: dict[str, Any] = {}
    p = message.properties
    if p is not None:
        for key, value in (("message_id", p.message_id), ("correlation_id", p.correlation_id),
                           ("reply_to", p.reply_to), ("content_type", p.content_type),
                           ("content_encoding", p.content_encoding)):
            if isinstance(value, str):
                props[key] = str(value)
        if isinstance(p.user_id, bytes):
            props["user_id"] = p.user_id.decode("utf-8", "replace")
        if isinstance(p.creation_time, int):
            props["timestamp"] = fieldtypes.Timestamp(int(p.creation_time) // 1000)
    headers: dict[str, Any] = {}
    for key, value in message.application_properties.items():
        if key == "x-basic-type" and isinstance(value, str):
            props["type"] = str(value)
        elif key == "x-basic-app-id" and isinstance(value, str):
            props["app_id"] = str(value)
        elif isinstance(key, str) and len(key.encode()) <= 255:
            headers[str(key)] = value_to_091(value)
    if headers:
        props["headers"] = headers
    annotations = message.message_annotations
    for key, prop in (("x-basic-priority", "priority"),
                      ("x-basic-delivery-mode", "delivery_mode")):
        value = annotations.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 256:
            props[prop] = int(value)
    expiration = annotations.get("x-basic-expiration")
    if isinstance(expiration, str):
        props["expiration"] = str(expiration)
    if message.body_kind == SECTION_DATA:
        return props, message.data
    return props, message.body


def _record_310(message: Message) -> bytes:
    """An AMQP 0-9-1 message as RabbitMQ 3.10.8 writes it to a stream
    (``rabbit_msg_record:from_amqp091/2``, then ``add_message_annotations`` with the exchange
    and routing key): no header; properties; message annotations ``x-routing-key``,
    ``x-exchange``, ``x-basic-priority``, ``x-basic-delivery-mode``, ``x-basic-expiration``;
    application properties ``x-basic-type``, ``x-basic-app-id`` then the headers; the body as
    one data section."""
    props = message.properties
    timestamp = props.get("timestamp")
    if isinstance(timestamp, datetime.datetime):
        timestamp = int(timestamp.replace(tzinfo=timestamp.tzinfo or datetime.timezone.utc)
                        .timestamp())
    user_id = props.get("user_id")
    out = bytearray()

    def text(key: str) -> str | None:
        value = props.get(key)
        return value if isinstance(value, str) else None

    content_type, content_encoding = text("content_type"), text("content_encoding")
    Properties(
        message_id=text("message_id"),
        user_id=user_id.encode() if isinstance(user_id, str) else None,
        reply_to=text("reply_to"), correlation_id=text("correlation_id"),
        content_type=Symbol(content_type) if content_type is not None else None,
        content_encoding=Symbol(content_encoding) if content_encoding is not None else None,
        creation_time=Timestamp(timestamp * 1000) if isinstance(timestamp, int) else None,
    ).encode_into(out)
    annotations: dict[Any, Any] = {Symbol("x-routing-key"): message.routing_key,
                                   Symbol("x-exchange"): message.exchange}
    for key, prop in (("x-basic-priority", "priority"),
                      ("x-basic-delivery-mode", "delivery_mode")):
        value = props.get(prop)
        if isinstance(value, int):
            annotations[Symbol(key)] = UByte(value & 0xFF)
    if text("expiration") is not None:
        annotations[Symbol("x-basic-expiration")] = text("expiration")
    application: dict[Any, Any] = {}
    for key, prop in (("x-basic-type", "type"), ("x-basic-app-id", "app_id")):
        if text(prop) is not None:
            application[key] = text(prop)
    for key, value in (props.get("headers") or {}).items():
        if not isinstance(value, list | tuple | dict):  # (unsupported_header_value_type)
            application[key] = value_from_091(value)
    record = bytearray(b"\x00\x53\x72")  # message annotations, then the properties
    encode_value(annotations, record)
    record += out
    if application:
        record += b"\x00\x53\x74"
        encode_value(application, record)
    record += b"\x00\x53\x75"  # data
    encode_value(message.body, record)
    return bytes(record)
