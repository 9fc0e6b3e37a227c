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
import functools
import struct
from collections.abc import Callable, Mapping
from typing import Any, Final

from embroker.amqp091._fields import _LEN8, FieldTable, encode_table, read_table
from embroker.errors import SyntaxErrorAMQP

__all__ = [
    "PROPERTY_FLAGS",
    "PROPERTY_NAMES",
    "PROPERTY_READERS",
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

# Decoding. Each flags word gets its own reader function, generated on first use from the
# property table (as ``collections.namedtuple`` does): no loop and no type dispatch per message.
# A few flag words cover nearly all traffic; past _MAX_READERS distinct words, the generic loop
# serves the rest, so a peer cannot make the cache grow without bound.
_Reader = Callable[[bytes, int], dict[str, Any]]
_READERS: dict[int, _Reader] = {}
#: The reader of each flags word seen so far (the frame parser's fast path looks here first).
PROPERTY_READERS: Final = _READERS
_MAX_READERS: Final = 256


def _reader_source(flags: int) -> str:
    lines = ["def read(p, o):"]
    names = []
    for name, (bit, kind) in _BY_NAME.items():
        if not flags & bit:
            continue
        names.append(name)
        if kind == _SHORTSTR:
            lines += ["    e = o + 1 + p[o]",
                      f'    {name} = p[o + 1:e].decode("utf-8", "surrogateescape")', "    o = e"]
        elif kind == _OCTET:
            lines += [f"    {name} = p[o]", "    o += 1"]
        elif kind == _TABLE:
            lines += [f"    {name}, o = read_table(p, o)"]
        else:
            lines += [f"    ({name},) = _U64.unpack_from(p, o)", "    o += 8"]
    lines += ["    if o != len(p):", "        raise _bad_end(p, o)",
              f"    return {{{', '.join(f'{n!r}: {n}' for n in names)}}}"]
    return "\n".join(lines)


def _reader(flags: int) -> _Reader:
    """The reader of the property values announced by ``flags`` (continuation bits cleared)."""
    if len(_READERS) >= _MAX_READERS:
        return functools.partial(_read_generic, flags)
    namespace: dict[str, Any] = {"read_table": read_table, "_U64": _U64, "_bad_end": _bad_end}
    exec(_reader_source(flags), namespace)  # the source is built from the table above
    reader: _Reader = namespace["read"]
    _READERS[flags] = reader
    return reader


def _bad_end(p: bytes, o: int) -> SyntaxErrorAMQP:
    if o > len(p):
        return SyntaxErrorAMQP("content header properties truncated")
    return SyntaxErrorAMQP(f"{len(p) - o} unexpected bytes after the content header properties")


def _read_generic(flags: int, p: bytes, o: int) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for name, (bit, kind) in _BY_NAME.items():
        if not flags & bit:
            continue
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
    if o != len(p):
        raise _bad_end(p, o)
    return props


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
        reader = _READERS.get(flags)
        if reader is None:
            reader = _reader(flags)
        return reader(p, o)
    except (struct.error, IndexError):
        raise SyntaxErrorAMQP("content header properties truncated") from None


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


# Encoding. Each set of keys (in the caller's order) gets its own writer, generated on first use
# like the readers: it takes the values in wire order and checks their types inline; anything
# unusual (None values, subclasses, out-of-range or unknown values) goes to the generic encoder,
# which gives the exact error.
_Writer = Callable[[Mapping[str, Any]], bytes]
_WRITERS: dict[tuple[str, ...], _Writer] = {}
_MAX_WRITERS: Final = 256


def _writer_source(keys: tuple[str, ...]) -> str:
    ordered = sorted(keys, key=lambda name: -PROPERTY_FLAGS[name])
    flags = sum(PROPERTY_FLAGS[name] for name in keys)
    lines = ["def write(d):"]
    checks = []
    parts = [repr(_U16.pack(flags))]
    for i, name in enumerate(ordered):
        kind = _BY_NAME[name][1]
        lines.append(f"    v{i} = d[{name!r}]")
        if kind == _SHORTSTR:
            checks.append(f"type(v{i}) is not str")
        elif kind == _OCTET:
            checks.append(f"type(v{i}) is not int or not 0 <= v{i} <= 255")
        elif kind == _TABLE:
            checks.append(f"type(v{i}) is not dict")
        else:
            checks.append(f"type(v{i}) is not int or not 0 <= v{i} <= 0xFFFFFFFFFFFFFFFF")
    lines.append(f"    if {' or '.join(f'({c})' for c in checks)}:")
    lines.append("        return _generic(d)")
    for i, name in enumerate(ordered):
        kind = _BY_NAME[name][1]
        if kind == _SHORTSTR:
            lines += [f'    b{i} = v{i}.encode("utf-8", "surrogateescape")',
                      f"    if len(b{i}) > 255:", "        return _generic(d)"]
            parts += [f"_LEN8[len(b{i})]", f"b{i}"]
        elif kind == _OCTET:
            parts.append(f"_LEN8[v{i}]")
        elif kind == _TABLE:
            parts.append(f"encode_table(v{i})")
        else:
            parts.append(f"_U64.pack(v{i})")
    lines.append(f"    return b''.join(({', '.join(parts)},))")
    return "\n".join(lines)


def _writer(keys: tuple[str, ...]) -> _Writer:
    if len(_WRITERS) >= _MAX_WRITERS or not all(key in _BY_NAME for key in keys):
        return _encode_generic
    namespace: dict[str, Any] = {"_generic": _encode_generic, "_LEN8": _LEN8, "_U64": _U64,
                                 "encode_table": encode_table}
    exec(_writer_source(keys), namespace)  # the source is built from the table above
    writer: _Writer = namespace["write"]
    _WRITERS[keys] = writer
    return writer


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
    keys = tuple(properties)
    writer = _WRITERS.get(keys)
    if writer is None:
        writer = _writer(keys)
    return writer(properties)


def _encode_generic(properties: Mapping[str, Any]) -> bytes:
    flags = 0
    parts: list[tuple[int, bytes]] = []
    for name, value in properties.items():
        if value is None:
            continue
        try:
            bit, kind = _BY_NAME[name]
        except KeyError:
            raise ValueError(f"unknown basic property {name!r}; the properties are "
                             f"{', '.join(PROPERTY_NAMES)}") from None
        flags |= bit
        parts.append((bit, _encode_value(name, kind, value)))
    parts.sort(reverse=True)
    return _U16.pack(flags) + b"".join([data for _, data in parts])
