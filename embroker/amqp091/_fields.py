"""Field values, field tables and field arrays (section 4.2.5.5 of the spec, RabbitMQ's types).

Field tables carry method arguments (``x-message-ttl``...), client and server properties and
message headers. This module decodes them to Python values and encodes them back, keeping every
value's AMQP type (RabbitMQ keeps it, and typed clients see it).

Decoding (wire type letter -> Python; the types of :mod:`embroker.fieldtypes` are subclasses
of ``int`` or ``float`` that compare equal to plain ones):

======================================  ===========================================================
``t`` boolean                           ``bool``
``I`` signed 32-bit                     ``int``
``l`` ``L`` signed 64-bit               :class:`~embroker.fieldtypes.Long` (RabbitMQ reads ``L``,
                                        the spec's unsigned 64-bit, as signed too)
``b`` ``B`` ``s`` ``U`` ``u`` ``i``     :class:`~embroker.fieldtypes.Byte`, ``UnsignedByte``,
                                        ``Short`` (RabbitMQ's ``s``, the spec's ``U``),
                                        ``UnsignedShort``, ``UnsignedInt``
``d`` double, ``f`` float               ``float``, :class:`~embroker.fieldtypes.Float32`
``D`` decimal                           ``decimal.Decimal`` (scale octet + signed int32 mantissa)
``S`` long string                       ``str``, decoded from UTF-8 with ``errors="surrogateescape"``
                                        so that any bytes survive a round trip
``x`` byte array (RabbitMQ)             ``bytes``
``T`` timestamp                         ``datetime.datetime``, timezone-aware UTC, for seconds up to
                                        9999-12-31T23:59:59Z; a larger value (milliseconds, say)
                                        decodes to :class:`~embroker.fieldtypes.Timestamp`
``F`` nested table                      ``dict[str, Any]``
``A`` array                             ``list[Any]``
``V`` void                              ``None``
======================================  ===========================================================

Encoding (Python -> wire type letter), checked in this order:

``bool`` -> ``t``; the types of :mod:`embroker.fieldtypes` -> their own letter; ``int`` -> ``I``
when it fits a signed 32-bit integer, else ``l`` (``ValueError`` beyond signed 64-bit);
``float`` -> ``d``; ``decimal.Decimal`` -> ``D``; ``datetime.datetime`` -> ``T`` (a naive
datetime is taken as UTC; sub-second parts are dropped); ``str`` -> ``S``;
``bytes``/``bytearray``/``memoryview`` -> ``x``; any mapping -> ``F``; ``list``/``tuple`` -> ``A``;
``None`` -> ``V``. Anything else is a ``TypeError``.

So ``encode(decode(table))`` gives the same bytes for any table (but the spec's ``U`` and ``L``,
which come back as RabbitMQ's ``s`` and ``l``), and a header ``1`` stays different from a header
``"1"``.

Errors: a malformed table (a length running past the frame, an unknown type letter, tables
nested deeper than :data:`MAX_NESTING`) raises :class:`~embroker.errors.SyntaxErrorAMQP` (502).
Encoding an unsupported value raises ``TypeError``, and a value out of range (a key or shortstr
over 255 bytes, an integer too large for its type, a decimal that does not fit) raises
``ValueError``: those are bugs in the caller, never the peer's fault.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from embroker.errors import SyntaxErrorAMQP
from embroker.fieldtypes import (
    Byte,
    Float32,
    Long,
    Short,
    Timestamp,
    UnsignedByte,
    UnsignedInt,
    UnsignedShort,
)

__all__ = [
    "MAX_NESTING",
    "FieldTable",
    "decode_array",
    "decode_table",
    "encode_array",
    "encode_field_value",
    "encode_longstr",
    "encode_shortstr",
    "encode_table",
    "read_array",
    "read_table",
]

#: A decoded field table: names to Python values.
FieldTable: TypeAlias = dict[str, Any]

#: How deep tables and arrays may nest (RabbitMQ's ``x-death`` needs 3).
MAX_NESTING: Final = 100

_UTC = datetime.timezone.utc
_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=_UTC)
_ONE_SECOND: Final = datetime.timedelta(seconds=1)
#: 9999-12-31T23:59:59Z, the last second ``datetime`` can hold.
_MAX_DATETIME_SECONDS: Final = 253402300799

_U8 = struct.Struct(">B")
_I8 = struct.Struct(">b")
_U16 = struct.Struct(">H")
_I16 = struct.Struct(">h")
_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")
_U64 = struct.Struct(">Q")
_I64 = struct.Struct(">q")
_F32 = struct.Struct(">f")
_F64 = struct.Struct(">d")
_DECIMAL = struct.Struct(">Bi")

#: One-byte length prefixes, ``_LEN8[n] == bytes([n])``: faster than packing.
_LEN8: Final = tuple(bytes((n,)) for n in range(256))

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


# -- shared primitive encoders ---------------------------------------------------------------


def encode_shortstr(value: str) -> bytes:
    """Encode a shortstr: a length octet and at most 255 bytes of UTF-8.

    Raises:
        ValueError: the UTF-8 encoding is longer than 255 bytes.
        TypeError: ``value`` is not a ``str``.
    """
    if not isinstance(value, str):
        raise TypeError(f"shortstr must be str, not {type(value).__name__}")
    data = value.encode("utf-8", "surrogateescape")
    if len(data) > 255:
        raise ValueError(f"shortstr is {len(data)} bytes long, over the 255-byte limit: "
                         f"{value[:40]!r}...")
    return _LEN8[len(data)] + data


def encode_longstr(value: str | bytes | bytearray | memoryview) -> bytes:
    """Encode a longstr: a 32-bit length and the bytes (``str`` is encoded as UTF-8).

    Raises:
        TypeError: ``value`` is neither text nor bytes.
        ValueError: longer than 4 GiB.
    """
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogateescape")
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    else:
        raise TypeError(f"longstr must be str or bytes, not {type(value).__name__}")
    if len(data) > 0xFFFFFFFF:
        raise ValueError("longstr over 4 GiB")
    return _U32.pack(len(data)) + data


# -- decoding ------------------------------------------------------------------------------------


def _syntax(text: str) -> SyntaxErrorAMQP:
    return SyntaxErrorAMQP(text)


def _timestamp(seconds: int) -> datetime.datetime | Timestamp:
    if seconds <= _MAX_DATETIME_SECONDS:
        return _EPOCH + datetime.timedelta(seconds=seconds)
    return Timestamp(seconds)


def _decimal(scale: int, mantissa: int) -> decimal.Decimal:
    # Built from a string so that the current decimal context cannot round it.
    return decimal.Decimal(f"{mantissa}E-{scale}")


def _read_value(p: bytes, o: int, depth: int) -> tuple[Any, int]:
    """Decode one field value (type letter at ``p[o]``); return it and the next offset."""
    t = p[o]
    o += 1
    if t == 0x53:  # S
        (n,) = _U32.unpack_from(p, o)
        o += 4
        e = o + n
        if e > len(p):
            raise _syntax(f"long string of {n} bytes runs past the end of the frame")
        return p[o:e].decode("utf-8", "surrogateescape"), e
    if t == 0x49:  # I
        return _I32.unpack_from(p, o)[0], o + 4
    if t == 0x74:  # t
        return p[o] != 0, o + 1
    if t == 0x6C or t == 0x4C:  # l L: signed 64, as RabbitMQ reads both  # noqa: PLR1714
        return Long(_I64.unpack_from(p, o)[0]), o + 8
    if t == 0x46:  # F
        return read_table(p, o, depth + 1)
    if t == 0x41:  # A
        return read_array(p, o, depth + 1)
    if t == 0x54:  # T
        return _timestamp(_U64.unpack_from(p, o)[0]), o + 8
    if t == 0x78:  # x
        (n,) = _U32.unpack_from(p, o)
        o += 4
        e = o + n
        if e > len(p):
            raise _syntax(f"byte array of {n} bytes runs past the end of the frame")
        return p[o:e], e
    if t == 0x56:  # V
        return None, o
    if t == 0x62:  # b
        return Byte(_I8.unpack_from(p, o)[0]), o + 1
    if t == 0x42:  # B
        return UnsignedByte(p[o]), o + 1
    if t == 0x73 or t == 0x55:  # s (RabbitMQ) U (spec): signed 16  # noqa: PLR1714
        return Short(_I16.unpack_from(p, o)[0]), o + 2
    if t == 0x75:  # u
        return UnsignedShort(_U16.unpack_from(p, o)[0]), o + 2
    if t == 0x69:  # i
        return UnsignedInt(_U32.unpack_from(p, o)[0]), o + 4
    if t == 0x64:  # d
        return _F64.unpack_from(p, o)[0], o + 8
    if t == 0x66:  # f
        return Float32(_F32.unpack_from(p, o)[0]), o + 4
    if t == 0x44:  # D
        scale, mantissa = _DECIMAL.unpack_from(p, o)
        return _decimal(scale, mantissa), o + 5
    raise _syntax(f"unknown field value type {chr(t)!r} (0x{t:02x})")


def read_table(p: bytes, o: int, depth: int = 0) -> tuple[FieldTable, int]:
    """Decode the field table whose 32-bit length is at ``p[o]``; return it and the next offset.

    ``p`` must end where the frame payload ends, so that nothing past the frame is read.

    Raises:
        SyntaxErrorAMQP: the table is malformed (see the module docstring).
    """
    if depth > MAX_NESTING:
        raise _syntax(f"field tables nested more than {MAX_NESTING} deep")
    try:
        (n,) = _U32.unpack_from(p, o)
        o += 4
        end = o + n
        if end > len(p):
            raise _syntax(f"field table of {n} bytes runs past the end of the frame")
        table: FieldTable = {}
        while o < end:
            k = p[o] + o + 1
            key = p[o + 1:k].decode("utf-8", "surrogateescape")
            if k >= end:
                raise _syntax(f"field table entry {key!r} has no value")
            table[key], o = _read_value(p, k, depth)
    except (struct.error, IndexError):
        raise _syntax("field table truncated") from None
    if o != end:
        raise _syntax(f"field table entries overrun its length by {o - end} bytes")
    return table, o


def read_array(p: bytes, o: int, depth: int = 0) -> tuple[list[Any], int]:
    """Decode the field array whose 32-bit length is at ``p[o]``; see :func:`read_table`."""
    if depth > MAX_NESTING:
        raise _syntax(f"field arrays nested more than {MAX_NESTING} deep")
    try:
        (n,) = _U32.unpack_from(p, o)
        o += 4
        end = o + n
        if end > len(p):
            raise _syntax(f"field array of {n} bytes runs past the end of the frame")
        values: list[Any] = []
        while o < end:
            value, o = _read_value(p, o, depth)
            values.append(value)
    except (struct.error, IndexError):
        raise _syntax("field array truncated") from None
    if o != end:
        raise _syntax(f"field array values overrun its length by {o - end} bytes")
    return values, o


def decode_table(data: bytes | bytearray | memoryview) -> FieldTable:
    """Decode an encoded field table (32-bit length, then the entries) to a ``dict``.

    Raises:
        SyntaxErrorAMQP: malformed, or ``data`` holds more than the table.

    >>> decode_table(b"\\x00\\x00\\x00\\x07\\x01aS\\x00\\x00\\x00\\x00")
    {'a': ''}
    """
    p = bytes(data)
    table, o = read_table(p, 0)
    if o != len(p):
        raise _syntax(f"{len(p) - o} bytes after the field table")
    return table


def decode_array(data: bytes | bytearray | memoryview) -> list[Any]:
    """Decode an encoded field array (32-bit length, then the values) to a ``list``.

    Raises:
        SyntaxErrorAMQP: malformed, or ``data`` holds more than the array.
    """
    p = bytes(data)
    values, o = read_array(p, 0)
    if o != len(p):
        raise _syntax(f"{len(p) - o} bytes after the field array")
    return values


# -- encoding ------------------------------------------------------------------------------------


def _encode_int(value: int) -> bytes:
    if _INT32_MIN <= value <= _INT32_MAX:
        return b"I" + _I32.pack(value)
    if _INT64_MIN <= value <= _INT64_MAX:
        return b"l" + _I64.pack(value)
    raise ValueError(f"integer {value} does not fit a signed 64-bit field value")


def _encode_decimal(value: decimal.Decimal) -> bytes:
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"cannot encode {value} as an AMQP decimal")
    if exponent > 0:
        scale, mantissa = 0, int(value)
    else:
        scale = -exponent
        mantissa = int("".join(map(str, digits)) or "0")
        if sign:
            mantissa = -mantissa
    if scale > 255 or not _INT32_MIN <= mantissa <= _INT32_MAX:
        raise ValueError(f"decimal {value} does not fit an AMQP decimal "
                         "(scale 0..255, signed 32-bit mantissa)")
    return b"D" + _DECIMAL.pack(scale, mantissa)


def _encode_datetime(value: datetime.datetime) -> bytes:
    if value.tzinfo is None or value.utcoffset() is None:
        value = value.replace(tzinfo=_UTC)
    seconds = (value - _EPOCH) // _ONE_SECOND
    if seconds < 0:
        raise ValueError(f"timestamp {value} is before 1970, AMQP timestamps are unsigned")
    return b"T" + _U64.pack(seconds)


def _typed(packer: struct.Struct, letter: bytes, low: int, high: int,
           ) -> Callable[[int], bytes]:
    def encode(value: int) -> bytes:
        if not low <= value <= high:
            raise ValueError(f"{type(value).__name__} {int(value)} does not fit its AMQP type "
                             f"({low}..{high})")
        return letter + packer.pack(value)
    return encode


#: The integer types that keep their letter, and how each is written.
_TYPED_INTS: Final[dict[type, Callable[[int], bytes]]] = {
    Long: _typed(_I64, b"l", _INT64_MIN, _INT64_MAX),
    Short: _typed(_I16, b"s", -(2**15), 2**15 - 1),
    Byte: _typed(_I8, b"b", -128, 127),
    UnsignedByte: _typed(_U8, b"B", 0, 255),
    UnsignedShort: _typed(_U16, b"u", 0, 2**16 - 1),
    UnsignedInt: _typed(_U32, b"i", 0, 2**32 - 1),
    Timestamp: _typed(_U64, b"T", 0, 2**64 - 1),
}


def _encode_bytes(value: bytes | bytearray | memoryview) -> bytes:
    data = bytes(value)
    return b"x" + _U32.pack(len(data)) + data


def _encode_value(value: Any, depth: int) -> bytes:
    kind = type(value)
    if kind is str:
        data: bytes = value.encode("utf-8", "surrogateescape")
        return b"S" + _U32.pack(len(data)) + data
    if kind is int:
        if _INT32_MIN <= value <= _INT32_MAX:
            return b"I" + _I32.pack(value)
        return _encode_int(value)
    if kind is bool:
        return b"t\x01" if value else b"t\x00"
    if kind is dict:
        return b"F" + _encode_table(value, depth + 1)
    if value is None:
        return b"V"
    typed = _TYPED_INTS.get(kind)
    if typed is not None:
        return typed(value)
    # Subclasses and the rarer types, in the documented order.
    if isinstance(value, bool):
        return b"t\x01" if value else b"t\x00"
    if isinstance(value, int):
        return _encode_int(int(value))
    if kind is Float32:
        return b"f" + _F32.pack(value)
    if isinstance(value, float):
        return b"d" + _F64.pack(value)
    if isinstance(value, decimal.Decimal):
        return _encode_decimal(value)
    if isinstance(value, datetime.datetime):
        return _encode_datetime(value)
    if isinstance(value, str):
        data = str(value).encode("utf-8", "surrogateescape")
        return b"S" + _U32.pack(len(data)) + data
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _encode_bytes(value)
    if isinstance(value, Mapping):
        return b"F" + _encode_table(value, depth + 1)
    if isinstance(value, (list, tuple)):
        return b"A" + _encode_array(value, depth + 1)
    raise TypeError(f"cannot encode {type(value).__name__} {value!r} as an AMQP field value")


def _encode_table(table: Mapping[str, Any], depth: int) -> bytes:
    if depth > MAX_NESTING:
        raise ValueError(f"field tables nested more than {MAX_NESTING} deep")
    parts = []
    for key, value in table.items():
        if not isinstance(key, str):
            raise TypeError(f"field table keys must be str, not {type(key).__name__}")
        data = key.encode("utf-8", "surrogateescape")
        if len(data) > 255:
            raise ValueError(f"field table key over 255 bytes: {key[:40]!r}...")
        parts.append(_LEN8[len(data)])
        parts.append(data)
        parts.append(_encode_value(value, depth))
    body = b"".join(parts)
    return _U32.pack(len(body)) + body


def _encode_array(values: list[Any] | tuple[Any, ...], depth: int) -> bytes:
    if depth > MAX_NESTING:
        raise ValueError(f"field arrays nested more than {MAX_NESTING} deep")
    body = b"".join([_encode_value(value, depth) for value in values])
    return _U32.pack(len(body)) + body


def encode_table(table: Mapping[str, Any] | None) -> bytes:
    """Encode a field table: a 32-bit length, then each name and typed value, in dict order.

    ``None`` encodes as the empty table. Value types follow the module docstring.

    Raises:
        TypeError: a key is not a ``str`` or a value has no AMQP type.
        ValueError: a key over 255 bytes, or a value out of range.

    >>> encode_table({"a": 1})
    b'\\x00\\x00\\x00\\x07\\x01aI\\x00\\x00\\x00\\x01'
    """
    if not table:
        return b"\x00\x00\x00\x00"
    if not isinstance(table, Mapping):
        raise TypeError(f"field table must be a mapping, not {type(table).__name__}")
    return _encode_table(table, 0)


def encode_array(values: list[Any] | tuple[Any, ...]) -> bytes:
    """Encode a field array: a 32-bit length, then each typed value.

    Raises:
        TypeError, ValueError: as :func:`encode_table`.
    """
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"field array must be a list or tuple, not {type(values).__name__}")
    return _encode_array(values, 0)


def encode_field_value(value: Any) -> bytes:
    """Encode one field value with its type letter, following the module docstring.

    Raises:
        TypeError, ValueError: as :func:`encode_table`.

    >>> encode_field_value("1"), encode_field_value(1)
    (b'S\\x00\\x00\\x00\\x011', b'I\\x00\\x00\\x00\\x01')
    """
    return _encode_value(value, 0)
