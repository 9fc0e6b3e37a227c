"""The 14 basic properties of a content header: property flags, then the values present.

A content header (section 4.2.6.1 of the spec) ends with one or more 16-bit *property flag* words
and the values of the properties whose flag is set, in flag order. Bit 15 of the first word is the
first property, bit 2 the fourteenth; bit 0 of every word says another word follows (the
"continuation" flag). The basic class defines 14 properties, so senders need one word; a receiver
still accepts continuation words, as long as they announce no property it does not know.

Properties decode to a ``dict`` holding only the properties present, keyed by the spec names in
snake_case:

==================  ===========  ========================================================
key                 wire type    Python value
==================  ===========  ========================================================
content_type        shortstr     ``str``
content_encoding    shortstr     ``str``
headers             table        ``dict[str, Any]`` (see ``_fields`` for the value types)
delivery_mode       octet        ``int`` (1 transient, 2 persistent)
priority            octet        ``int``
correlation_id      shortstr     ``str``
reply_to            shortstr     ``str``
expiration          shortstr     ``str`` (milliseconds, as text)
message_id          shortstr     ``str``
timestamp           timestamp    ``int``, seconds since the epoch, as pika gives it
type                shortstr     ``str``
user_id             shortstr     ``str``
app_id              shortstr     ``str``
cluster_id          shortstr     ``str`` (deprecated, kept as sent)
==================  ===========  ========================================================

Encoding takes the same mapping; a key whose value is ``None`` counts as absent (an empty string
is present, and sent). ``timestamp`` also accepts a ``datetime`` (naive means UTC).
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Mapping
from typing import Any, Final

from embroker.amqp091._fields import _LEN8, FieldTable, encode_table, read_table
from embroker.errors import SyntaxErrorAMQP

__all__ = [
    "PROPERTY_FLAGS",
    "PROPERTY_NAMES",
    "PROPERTY_TYPES",
    "decode_properties",
    "encode_properties",
    "read_properties",
]

#: The basic properties in wire order, with their types.
PROPERTY_TYPES: Final = {
    "content_type": "shortstr",
    "content_encoding": "shortstr",
    "headers": "table",
    "delivery_mode": "octet",
    "priority": "octet",
    "correlation_id": "shortstr",
    "reply_to": "shortstr",
    "expiration": "shortstr",
    "message_id": "shortstr",
    "timestamp": "timestamp",
    "type": "shortstr",
    "user_id": "shortstr",
    "app_id": "shortstr",
    "cluster_id": "shortstr",
}
PROPERTY_NAMES: Final = tuple(PROPERTY_TYPES)
#: Each property's flag bit: ``content_type`` is ``0x8000``, ``cluster_id`` ``0x0004``.
PROPERTY_FLAGS: Final = {name: 1 << (15 - i) for i, name in enumerate(PROPERTY_NAMES)}

_SHORTSTR, _OCTET, _TABLE, _TIMESTAMP = 0, 1, 2, 3
_KINDS = {"shortstr": _SHORTSTR, "octet": _OCTET, "table": _TABLE, "timestamp": _TIMESTAMP}
#: name -> (flag bit, kind)
_BY_NAME: Final = {name: (PROPERTY_FLAGS[name], _KINDS[kind])
                   for name, kind in PROPERTY_TYPES.items()}
#: Flag bits of the first word that no basic property uses (bit 1), besides continuation (bit 0).
_UNKNOWN_BITS: Final = 0x0002

_U16 = struct.Struct(">H")
_U64 = struct.Struct(">Q")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_ONE_SECOND = datetime.timedelta(seconds=1)

# flags word -> the (name, kind) pairs present, in wire order; filled on first use.
_PLANS: dict[int, tuple[tuple[str, int], ...]] = {}


def _plan(flags: int) -> tuple[tuple[str, int], ...]:
    plan = tuple((name, kind) for name, (bit, kind) in _BY_NAME.items() if flags & bit)
    _PLANS[flags] = plan
    return plan


def read_properties(p: bytes, o: int) -> dict[str, Any]:
    """Decode the property flags and values from ``p[o:]`` to the end of ``p``.

    Raises:
        SyntaxErrorAMQP: unknown property flags, values truncated or followed by extra bytes.
    """
    try:
        (flags,) = _U16.unpack_from(p, o)
        o += 2
        if flags & 0x0003:
            if flags & _UNKNOWN_BITS:
                raise SyntaxErrorAMQP("content header sets property flag bit 1, "
                                      "which no basic property uses")
            more = flags
            while more & 1:
                (more,) = _U16.unpack_from(p, o)
                o += 2
                if more & 0xFFFE:
                    raise SyntaxErrorAMQP(f"content header property flags 0x{more:04x} "
                                          "announce properties the basic class does not have")
            flags &= 0xFFFC
        if not flags:
            props: dict[str, Any] = {}
        else:
            props = {}
            for name, kind in _PLANS.get(flags) or _plan(flags):
                if kind == _SHORTSTR:
                    e = o + 1 + p[o]
                    props[name] = p[o + 1:e].decode("utf-8", "surrogateescape")
                    o = e
                elif kind == _OCTET:
                    props[name] = p[o]
                    o += 1
                elif kind == _TABLE:
                    props[name], o = read_table(p, o)
                else:
                    props[name] = _U64.unpack_from(p, o)[0]
                    o += 8
    except (struct.error, IndexError):
        raise SyntaxErrorAMQP("content header properties truncated") from None
    if o != len(p):
        if o > len(p):
            raise SyntaxErrorAMQP("content header properties truncated")
        raise SyntaxErrorAMQP(f"{len(p) - o} unexpected bytes after the content header "
                              "properties")
    return props


def decode_properties(data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Decode encoded properties (flags, then values) to a dict of the properties present.

    Raises:
        SyntaxErrorAMQP: malformed (see :func:`read_properties`).

    >>> decode_properties(b"\\x90\\x00\\x10application/json\\x02")
    {'content_type': 'application/json', 'delivery_mode': 2}
    """
    return read_properties(bytes(data), 0)


def _shortstr(name: str, value: Any) -> bytes:
    if type(value) is not str and not isinstance(value, str):
        raise TypeError(f"property {name} must be str, not {type(value).__name__}")
    data = value.encode("utf-8", "surrogateescape")
    if len(data) > 255:
        raise ValueError(f"property {name} is {len(data)} bytes long, over the 255-byte "
                         "shortstr limit")
    return _LEN8[len(data)] + data


def _encode_value(name: str, kind: int, value: Any) -> bytes:
    if kind == _SHORTSTR:
        return _shortstr(name, value)
    if kind == _OCTET:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"property {name} must be int, not {type(value).__name__}")
        if not 0 <= value <= 255:
            raise ValueError(f"property {name} must be an octet (0..255), not {value}")
        return _LEN8[value]
    if kind == _TABLE:
        if not isinstance(value, Mapping):
            raise TypeError(f"property {name} must be a mapping, not {type(value).__name__}")
        table: FieldTable | Mapping[str, Any] = value
        return encode_table(table)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        value = (value - _EPOCH) // _ONE_SECOND
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"property {name} must be int seconds, not {type(value).__name__}")
    if not 0 <= value <= 0xFFFFFFFFFFFFFFFF:
        raise ValueError(f"property {name} must fit an unsigned 64-bit integer, not {value}")
    return _U64.pack(value)


def encode_properties(properties: Mapping[str, Any] | None) -> bytes:
    """Encode properties to the property flags and the values present, in wire order.

    Runtime: O(number of properties present).

    Raises:
        ValueError: an unknown property name, or a value out of range.
        TypeError: a value of the wrong type.

    >>> encode_properties({"delivery_mode": 2, "content_type": "application/json"})
    b'\\x90\\x00\\x10application/json\\x02'
    """
    if not properties:
        return b"\x00\x00"
    flags = 0
    last = 0x10000
    in_order = True
    parts: list[tuple[int, bytes]] = []
    for name, value in properties.items():
        if value is None:
            continue
        try:
            bit, kind = _BY_NAME[name]
        except KeyError:
            raise ValueError(f"unknown basic property {name!r}; the properties are "
                             f"{', '.join(PROPERTY_NAMES)}") from None
        if bit > last:
            in_order = False
        last = bit
        flags |= bit
        if kind == _SHORTSTR and type(value) is str:
            data = value.encode("utf-8", "surrogateescape")
            if len(data) > 255:
                raise ValueError(f"property {name} is {len(data)} bytes long, over the "
                                 "255-byte shortstr limit")
            parts.append((bit, _LEN8[len(data)] + data))
        elif kind == _OCTET and type(value) is int and 0 <= value <= 255:
            parts.append((bit, _LEN8[value]))
        else:
            parts.append((bit, _encode_value(name, kind, value)))
    if not in_order:
        parts.sort(reverse=True)
    return _U16.pack(flags) + b"".join([data for _, data in parts])
