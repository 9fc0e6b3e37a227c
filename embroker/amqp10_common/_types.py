"""The AMQP 1.0 type system (Part 1): every primitive and compound type, described types, arrays.

Decoding (constructor byte -> Python value):

==========================================  ==========================================================
``40`` null                                 ``None``
``56`` ``41`` ``42`` boolean                ``bool``
``50`` ubyte, ``60`` ushort                 :class:`UByte`, :class:`UShort` (``int`` subclasses)
``70`` ``52`` ``43`` uint                   :class:`UInt`
``80`` ``53`` ``44`` ulong                  :class:`ULong`
``51`` byte, ``61`` short                   :class:`Byte`, :class:`Short`
``71`` ``54`` int                           :class:`Int`
``81`` ``55`` long                          ``int``
``72`` float, ``82`` double                 :class:`Float` (a ``float`` subclass), ``float``
``74`` ``84`` ``94`` decimal32/64/128       :class:`Decimal32` / ``64`` / ``128`` (the raw bytes)
``73`` char                                 :class:`Char` (a one-character ``str``)
``83`` timestamp                            :class:`Timestamp` (an ``int``, ms since the epoch)
``98`` uuid                                 ``uuid.UUID``
``a0`` ``b0`` binary                        ``bytes``
``a1`` ``b1`` string                        ``str``
``a3`` ``b3`` symbol                        :class:`Symbol` (a ``str`` subclass)
``45`` ``c0`` ``d0`` list                   ``list``
``c1`` ``d1`` map                           ``dict``
``e0`` ``f0`` array                         :class:`Array` (a ``list`` with its element type)
``00`` described                            a composite class from ``_definitions`` when the
                                            descriptor is known, else :class:`Described`
==========================================  ==========================================================

Encoding chooses the most compact form (``43`` for a zero uint, ``52`` for a small one, ``a1``
for short strings, ``45`` for an empty list...). A plain ``int`` is a long, a plain ``float`` a
double, a ``str`` a string; the subclasses above keep their AMQP type across a round trip.

Errors: bytes that do not decode raise :class:`DecodeError` (``amqp:decode-error``); encoding a
value that has no AMQP type is a ``TypeError`` (a bug of the caller, never the peer's fault).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any, Final, final

from ._errors import DecodeError

__all__ = [
    "MAX_NESTING",
    "Array",
    "Byte",
    "Char",
    "Decimal32",
    "Decimal64",
    "Decimal128",
    "Described",
    "Float",
    "Int",
    "Short",
    "Symbol",
    "Timestamp",
    "UByte",
    "UInt",
    "ULong",
    "UShort",
    "decode_value",
    "encode_value",
    "skip_value",
]

#: How deep lists, maps, arrays and described values may nest before decoding gives up.
MAX_NESTING: Final = 64
#: Arrays of zero-width elements (``null``, ``true``, ``uint0``...) longer than this are refused:
#: they cost no bytes on the wire, so a few bytes could otherwise ask for billions of elements.
MAX_EMPTY_ELEMENTS: Final = 65536


class UByte(int):
    """ubyte: 8-bit unsigned."""

    __slots__ = ()


class UShort(int):
    """ushort: 16-bit unsigned."""

    __slots__ = ()


class UInt(int):
    """uint: 32-bit unsigned."""

    __slots__ = ()


class ULong(int):
    """ulong: 64-bit unsigned."""

    __slots__ = ()


class Byte(int):
    """byte: 8-bit signed."""

    __slots__ = ()


class Short(int):
    """short: 16-bit signed."""

    __slots__ = ()


class Int(int):
    """int: 32-bit signed (a plain Python ``int`` encodes as a 64-bit long)."""

    __slots__ = ()


class Timestamp(int):
    """timestamp: milliseconds since the Unix epoch (64-bit signed)."""

    __slots__ = ()


class Float(float):
    """float: 32-bit IEEE 754 (a plain Python ``float`` encodes as a double)."""

    __slots__ = ()


class Char(str):
    """char: one Unicode code point (UTF-32BE on the wire)."""

    __slots__ = ()


class Symbol(str):
    """symbol: ASCII names, as in descriptors, capabilities and annotation keys."""

    __slots__ = ()


class Decimal32(bytes):
    """decimal32, kept as its 4 raw bytes (IEEE 754 decimal; a broker has no arithmetic to do)."""


class Decimal64(bytes):
    """decimal64, kept as its 8 raw bytes."""


class Decimal128(bytes):
    """decimal128, kept as its 16 raw bytes."""


@final
class Array(list[Any]):
    """array: values of one type, sharing one constructor.

    Args:
        code: the element constructor's type code (``0xb3`` for symbols...); ``None`` lets
            encoding choose it from the first element.
        items: the elements.
        descriptor: for an array of described values, their common descriptor.
    """

    __slots__ = ("code", "descriptor")

    def __init__(self, code: int | None = None, items: Any = (), descriptor: Any = None) -> None:
        super().__init__(items)
        self.code = code
        self.descriptor = descriptor

    def __repr__(self) -> str:
        return f"Array(0x{self.code or 0:02x}, {list(self)!r})"


@final
class Described:
    """A described value whose descriptor has no class of its own here."""

    __slots__ = ("descriptor", "value")

    def __init__(self, descriptor: Any, value: Any) -> None:
        self.descriptor = descriptor
        self.value = value

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Described) and self.descriptor == other.descriptor
                and self.value == other.value)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Described({self.descriptor!r}, {self.value!r})"


# -- decoding ----------------------------------------------------------------------------------

_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_F32 = struct.Struct(">f")
_F64 = struct.Struct(">d")

_Buffer = bytes | bytearray | memoryview
_Reader = Callable[[_Buffer, int, int], tuple[Any, int]]

#: Resolves a described value (descriptor, value) to a composite object; _definitions sets
#: the one that knows the composite types.
_DESCRIBER: list[Callable[[Any, Any], Any]] = [Described]


def _describe(descriptor: Any, value: Any) -> Any:
    return _DESCRIBER[0](descriptor, value)


def _need(data: _Buffer, end: int) -> None:
    if end > len(data):
        raise DecodeError("value runs past the end of its frame")


def _fixed(struct_: struct.Struct, cls: type[Any]) -> _Reader:
    size = struct_.size
    unpack = struct_.unpack_from

    def read(data: _Buffer, pos: int, depth: int) -> tuple[Any, int]:
        end = pos + size
        if end > len(data):
            raise DecodeError("value runs past the end of its frame")
        return cls(unpack(data, pos)[0]), end
    return read


def _constant(value: Any) -> _Reader:
    def read(data: _Buffer, pos: int, depth: int) -> tuple[Any, int]:
        return value, pos
    return read


def _read_boolean(data: _Buffer, pos: int, depth: int) -> tuple[Any, int]:
    _need(data, pos + 1)
    octet = data[pos]
    if octet > 1:
        raise DecodeError(f"boolean octet 0x{octet:02x} is neither 0x00 nor 0x01")
    return octet == 1, pos + 1


def _read_char(data: _Buffer, pos: int, depth: int) -> tuple[Any, int]:
    _need(data, pos + 4)
    code = _U32.unpack_from(data, pos)[0]
    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        raise DecodeError(f"char 0x{code:x} is not a Unicode code point")
    return Char(chr(code)), pos + 4


def _read_uuid(data: _Buffer, pos: int, depth: int) -> tuple[Any, int]:
    _need(data, pos + 16)
    return uuid.UUID(bytes=bytes(data[pos:pos + 16])), pos + 16


def _raw(width: int, cls: type[Any]) -> _Reader:
    def read(data: _Buffer, pos: int, depth: int) -> tuple[Any, int]:
        end = pos + width
        _need(data, end)
        return cls(data[pos:end]), end
    return read


def _variable(prefix: struct.Struct, convert: Callable[[bytes], Any]) -> _Reader:
    size = prefix.size
    unpack = prefix.unpack_from

    def read(data: _Buffer, pos: int, depth: int) -> tuple[Any, int]:
        _need(data, pos + size)
        start = pos + size
        end = start + unpack(data, pos)[0]
        _need(data, end)
        return convert(bytes(data[start:end])), end
    return read


def _utf8(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"string is not valid UTF-8: {exc.reason}") from None


def _symbol(raw: bytes) -> Symbol:
    try:
        return Symbol(raw.decode("ascii"))
    except UnicodeDecodeError:
        raise DecodeError("symbol is not ASCII") from None


def _compound(prefix: struct.Struct, is_map: bool) -> _Reader:
    size = prefix.size
    unpack = prefix.unpack_from

    def read(data: _Buffer, pos: int, depth: int) -> tuple[Any, int]:
        _need(data, pos + 2 * size)
        length, count = unpack(data, pos)[0], unpack(data, pos + size)[0]
        start = pos + 2 * size
        end = pos + size + length
        if length < size:
            raise DecodeError("compound size smaller than its count field")
        _need(data, end)
        if count > end - start:
            raise DecodeError(f"compound claims {count} elements in {end - start} bytes")
        if depth >= MAX_NESTING:
            raise DecodeError(f"values nested deeper than {MAX_NESTING}")
        items, after = _read_items(data[:end] if end < len(data) else data, start, count,
                                   depth + 1)
        if after != end:
            raise DecodeError("compound size does not match its elements")
        if not is_map:
            return items, end
        if count % 2:
            raise DecodeError("map with an odd number of elements")
        result: dict[Any, Any] = {}
        for i in range(0, count, 2):
            key = items[i]
            try:
                result[key] = items[i + 1]
            except TypeError:
                raise DecodeError(f"map key of type {type(key).__name__} is not supported") \
                    from None
        return result, end
    return read


def _read_items(data: _Buffer, pos: int, count: int, depth: int) -> tuple[list[Any], int]:
    items: list[Any] = []
    append = items.append
    readers = _READERS
    for _ in range(count):
        if pos >= len(data):
            raise DecodeError("value runs past the end of its frame")
        reader = readers[data[pos]]
        value, pos = reader(data, pos + 1, depth)
        append(value)
    return items, pos


def _array(prefix: struct.Struct) -> _Reader:
    size = prefix.size
    unpack = prefix.unpack_from

    def read(data: _Buffer, pos: int, depth: int) -> tuple[Any, int]:
        _need(data, pos + 2 * size)
        length, count = unpack(data, pos)[0], unpack(data, pos + size)[0]
        end = pos + size + length
        if length < size:
            raise DecodeError("array size smaller than its count field")
        _need(data, end)
        if depth >= MAX_NESTING:
            raise DecodeError(f"values nested deeper than {MAX_NESTING}")
        view = data[:end] if end < len(data) else data
        pos += 2 * size
        descriptor = None
        _need(view, pos + 1)
        code = view[pos]
        if code == 0x00:
            descriptor, pos = decode_value(view, pos + 1, depth + 1)
            _need(view, pos + 1)
            code = view[pos]
            if code == 0x00:
                raise DecodeError("array element constructor is described twice")
        pos += 1
        reader = _READERS[code]
        if reader is _invalid or code in _ARRAY_INVALID:
            raise DecodeError(f"invalid array element constructor 0x{code:02x}")
        if count > end - pos and ((code in _ZERO_WIDTH and count > MAX_EMPTY_ELEMENTS)
                                  or code not in _ZERO_WIDTH):
            raise DecodeError(f"array claims {count} elements in {end - pos} bytes")
        items = []
        for _ in range(count):
            value, pos = reader(view, pos, depth + 1)
            items.append(value if descriptor is None else _describe(descriptor, value))
        if pos != end:
            raise DecodeError("array size does not match its elements")
        return Array(code, items, descriptor), end
    return read


def _read_described(data: _Buffer, pos: int, depth: int) -> tuple[Any, int]:
    if depth >= MAX_NESTING:
        raise DecodeError(f"values nested deeper than {MAX_NESTING}")
    descriptor, pos = decode_value(data, pos, depth + 1)
    value, pos = decode_value(data, pos, depth + 1)
    return _describe(descriptor, value), pos


def _invalid(data: _Buffer, pos: int, depth: int) -> tuple[Any, int]:
    raise DecodeError(f"invalid constructor 0x{data[pos - 1]:02x}")


_READERS: list[_Reader] = [_invalid] * 256
_READERS[0x00] = _read_described
_READERS[0x40] = _constant(None)
_READERS[0x56] = _read_boolean
_READERS[0x41] = _constant(True)
_READERS[0x42] = _constant(False)
_READERS[0x50] = _fixed(_U8, UByte)
_READERS[0x60] = _fixed(_U16, UShort)
_READERS[0x70] = _fixed(_U32, UInt)
_READERS[0x52] = _fixed(_U8, UInt)
_READERS[0x43] = _constant(UInt(0))
_READERS[0x80] = _fixed(_U64, ULong)
_READERS[0x53] = _fixed(_U8, ULong)
_READERS[0x44] = _constant(ULong(0))
_READERS[0x51] = _fixed(_I8, Byte)
_READERS[0x61] = _fixed(_I16, Short)
_READERS[0x71] = _fixed(_I32, Int)
_READERS[0x54] = _fixed(_I8, Int)
_READERS[0x81] = _fixed(_I64, int)
_READERS[0x55] = _fixed(_I8, int)
_READERS[0x72] = _fixed(_F32, Float)
_READERS[0x82] = _fixed(_F64, float)
_READERS[0x74] = _raw(4, Decimal32)
_READERS[0x84] = _raw(8, Decimal64)
_READERS[0x94] = _raw(16, Decimal128)
_READERS[0x73] = _read_char
_READERS[0x83] = _fixed(_I64, Timestamp)
_READERS[0x98] = _read_uuid
_READERS[0xA0] = _variable(_U8, bytes)
_READERS[0xB0] = _variable(_U32, bytes)
_READERS[0xA1] = _variable(_U8, _utf8)
_READERS[0xB1] = _variable(_U32, _utf8)
_READERS[0xA3] = _variable(_U8, _symbol)
_READERS[0xB3] = _variable(_U32, _symbol)
_READERS[0x45] = _constant([])
_READERS[0xC0] = _compound(_U8, is_map=False)
_READERS[0xD0] = _compound(_U32, is_map=False)
_READERS[0xC1] = _compound(_U8, is_map=True)
_READERS[0xD1] = _compound(_U32, is_map=True)
_READERS[0xE0] = _array(_U8)
_READERS[0xF0] = _array(_U32)

#: Element constructors whose values take no bytes (see MAX_EMPTY_ELEMENTS).
_ZERO_WIDTH: Final = frozenset({0x40, 0x41, 0x42, 0x43, 0x44, 0x45})
#: Constructors that cannot stand for array elements (the element type is fixed by them).
_ARRAY_INVALID: Final = frozenset({0x00})


def _fresh_empty_list(data: _Buffer, pos: int, depth: int) -> tuple[Any, int]:
    return [], pos


_READERS[0x45] = _fresh_empty_list  # a new list each time: callers may change it


def decode_value(data: _Buffer, pos: int = 0, depth: int = 0) -> tuple[Any, int]:
    """Decode one value starting at ``data[pos]``.

    Returns:
        the value and the position just after it.

    Raises:
        DecodeError: the bytes are not an AMQP value (or run past the end of ``data``).

    >>> decode_value(b"\\xa1\\x05hello")
    ('hello', 7)
    """
    if pos >= len(data):
        raise DecodeError("value runs past the end of its frame")
    try:
        return _READERS[data[pos]](data, pos + 1, depth)
    except RecursionError:  # pragma: no cover - MAX_NESTING keeps well below the limit
        raise DecodeError("values nested too deeply") from None


def skip_value(data: _Buffer, pos: int) -> int:
    """The position just after the value at ``data[pos]``, without building fixed-size and
    variable-size values (used to find section boundaries quickly).

    Raises:
        DecodeError: as :func:`decode_value`.
    """
    if pos >= len(data):
        raise DecodeError("value runs past the end of its frame")
    code = data[pos]
    width = _WIDTH.get(code)
    if width is not None:
        end = pos + 1 + width
        _need(data, end)
        return end
    prefix = _PREFIX.get(code)
    if prefix is not None:
        _need(data, pos + 1 + prefix.size)
        stop: int = pos + 1 + prefix.size + prefix.unpack_from(data, pos + 1)[0]
        _need(data, stop)
        return stop
    if code == 0x00:
        return skip_value(data, skip_value(data, pos + 1))
    return decode_value(data, pos)[1]


_WIDTH: Final = {
    0x40: 0, 0x41: 0, 0x42: 0, 0x43: 0, 0x44: 0, 0x45: 0,
    0x50: 1, 0x51: 1, 0x52: 1, 0x53: 1, 0x54: 1, 0x55: 1, 0x56: 1,
    0x60: 2, 0x61: 2,
    0x70: 4, 0x71: 4, 0x72: 4, 0x73: 4, 0x74: 4,
    0x80: 8, 0x81: 8, 0x82: 8, 0x83: 8, 0x84: 8,
    0x94: 16, 0x98: 16,
}
_PREFIX: Final = {
    0xA0: _U8, 0xA1: _U8, 0xA3: _U8, 0xC0: _U8, 0xC1: _U8, 0xE0: _U8,
    0xB0: _U32, 0xB1: _U32, 0xB3: _U32, 0xD0: _U32, 0xD1: _U32, 0xF0: _U32,
}


# -- encoding ----------------------------------------------------------------------------------

_Writer = Callable[[Any, bytearray], None]


def _w_null(value: Any, out: bytearray) -> None:
    out.append(0x40)


def _w_bool(value: bool, out: bytearray) -> None:
    out.append(0x41 if value else 0x42)


def _w_ubyte(value: int, out: bytearray) -> None:
    out += b"\x50" + _U8.pack(value)


def _w_ushort(value: int, out: bytearray) -> None:
    out += b"\x60" + _U16.pack(value)


def _w_uint(value: int, out: bytearray) -> None:
    if value == 0:
        out.append(0x43)
    elif value < 256:
        out += b"\x52" + _U8.pack(value)
    else:
        out += b"\x70" + _U32.pack(value)


def _w_ulong(value: int, out: bytearray) -> None:
    if value == 0:
        out.append(0x44)
    elif value < 256:
        out += b"\x53" + _U8.pack(value)
    else:
        out += b"\x80" + _U64.pack(value)


def _w_byte(value: int, out: bytearray) -> None:
    out += b"\x51" + _I8.pack(value)


def _w_short(value: int, out: bytearray) -> None:
    out += b"\x61" + _I16.pack(value)


def _w_int(value: int, out: bytearray) -> None:
    if -128 <= value <= 127:
        out += b"\x54" + _I8.pack(value)
    else:
        out += b"\x71" + _I32.pack(value)


def _w_long(value: int, out: bytearray) -> None:
    if -128 <= value <= 127:
        out += b"\x55" + _I8.pack(value)
    else:
        out += b"\x81" + _I64.pack(value)


def _w_timestamp(value: int, out: bytearray) -> None:
    out += b"\x83" + _I64.pack(value)


def _w_float(value: float, out: bytearray) -> None:
    out += b"\x72" + _F32.pack(value)


def _w_double(value: float, out: bytearray) -> None:
    out += b"\x82" + _F64.pack(value)


def _w_decimal(code: int, width: int) -> _Writer:
    def write(value: bytes, out: bytearray) -> None:
        if len(value) != width:
            raise ValueError(f"a decimal of this type is {width} bytes, not {len(value)}")
        out.append(code)
        out += value
    return write


def _w_char(value: str, out: bytearray) -> None:
    if len(value) != 1:
        raise ValueError("a char is one code point")
    out += b"\x73" + _U32.pack(ord(value))


def _w_uuid(value: uuid.UUID, out: bytearray) -> None:
    out += b"\x98" + value.bytes


def _w_variable(raw: bytes, code8: bytes, code32: bytes, out: bytearray) -> None:
    """A variable-width value (binary, string, symbol): its one-byte size form when it fits."""
    size = len(raw)
    if size < 256:
        out += code8 + _U8.pack(size)
    else:
        out += code32 + _U32.pack(size)
    out += raw


def _w_binary(value: bytes, out: bytearray) -> None:
    _w_variable(value, b"\xa0", b"\xb0", out)


# A string or symbol is written as the bytes it holds: one that came from another protocol's
# client may hold bytes that are no UTF-8 (``surrogateescape``, embroker._untrusted), which
# RabbitMQ 3.10's AMQP 1.0 plugin passes on unchecked ({utf8, Bin}, {symbol, Bin}).

def _w_string(value: str, out: bytearray) -> None:
    _w_variable(value.encode("utf-8", "surrogateescape"), b"\xa1", b"\xb1", out)


def _w_symbol(value: str, out: bytearray) -> None:
    _w_variable(value.encode("utf-8", "surrogateescape"), b"\xa3", b"\xb3", out)


def _w_compound(code8: int, code32: int, count: int, body: bytes | bytearray,
                out: bytearray) -> None:
    if len(body) + 1 < 256 and count < 256:
        out += bytes((code8, len(body) + 1, count))
    else:
        out.append(code32)
        out += _U32.pack(len(body) + 4) + _U32.pack(count)
    out += body


def _w_list(value: list[Any] | tuple[Any, ...], out: bytearray) -> None:
    if not value:
        out.append(0x45)
        return
    body = bytearray()
    for item in value:
        encode_value(item, body)
    _w_compound(0xC0, 0xD0, len(value), body, out)


def _w_map(value: dict[Any, Any], out: bytearray) -> None:
    body = bytearray()
    for key, item in value.items():
        encode_value(key, body)
        encode_value(item, body)
    _w_compound(0xC1, 0xD1, 2 * len(value), body, out)


#: For each scalar type an array can hold: its one fixed-width constructor (arrays cannot use
#: the compact forms, whose width depends on each value).
_ARRAY_ELEMENT: Final[dict[type[Any], tuple[int, Callable[[Any], bytes]]]] = {
    bool: (0x56, lambda v: b"\x01" if v else b"\x00"),
    UByte: (0x50, _U8.pack), UShort: (0x60, _U16.pack), UInt: (0x70, _U32.pack),
    ULong: (0x80, _U64.pack), Byte: (0x51, _I8.pack), Short: (0x61, _I16.pack),
    Int: (0x71, _I32.pack), int: (0x81, _I64.pack), Timestamp: (0x83, _I64.pack),
    Float: (0x72, _F32.pack), float: (0x82, _F64.pack),
    Char: (0x73, lambda v: _U32.pack(ord(v))),
    uuid.UUID: (0x98, lambda v: v.bytes),
    Decimal32: (0x74, bytes), Decimal64: (0x84, bytes), Decimal128: (0x94, bytes),
}


def _w_array(value: Array, out: bytearray) -> None:
    body = bytearray()
    if value.descriptor is not None:
        body.append(0x00)
        encode_value(value.descriptor, body)
        items = [getattr(item, "value", item) for item in value]
    else:
        items = list(value)
    kind: type[Any] = type(items[0]) if items else Symbol
    if kind in (Symbol, str, bytes):
        body.append(0xB3 if kind is Symbol else 0xB1 if kind is str else 0xB0)
        for item in items:
            raw = item if isinstance(item, bytes) else item.encode("utf-8", "surrogateescape")
            body += _U32.pack(len(raw)) + raw
    elif kind in _ARRAY_ELEMENT:
        code, pack = _ARRAY_ELEMENT[kind]
        body.append(code)
        for item in items:
            body += pack(item)
    elif kind in (list, dict, Array):
        # Lists, maps and arrays take their 32-bit forms inside an array (one constructor).
        body.append(0xD0 if kind is list else 0xD1 if kind is dict else 0xF0)
        for item in items:
            body += _widen(encode_value(item))
    elif items and all(item is None for item in items):
        body.append(0x40)
    else:
        raise TypeError(f"no AMQP array of {kind.__name__}")
    count = len(items)
    if len(body) + 1 < 256 and count < 256:
        out += bytes((0xE0, len(body) + 1, count))
    else:
        out += b"\xf0" + _U32.pack(len(body) + 4) + _U32.pack(count)
    out += body


def _widen(encoded: bytearray) -> bytes:
    # A list/map/array encoded compactly, re-written in its 32-bit form without the constructor.
    code = encoded[0]
    if code == 0x45:
        return _U32.pack(4) + _U32.pack(0)
    if code in (0xC0, 0xC1, 0xE0):
        size, count = encoded[1], encoded[2]
        return _U32.pack(size + 3) + _U32.pack(count) + bytes(encoded[3:])
    return bytes(encoded[1:])


def _w_described(value: Described, out: bytearray) -> None:
    out.append(0x00)
    encode_value(value.descriptor, out)
    encode_value(value.value, out)


_WRITERS: dict[type[Any], _Writer] = {
    type(None): _w_null, bool: _w_bool, UByte: _w_ubyte, UShort: _w_ushort, UInt: _w_uint,
    ULong: _w_ulong, Byte: _w_byte, Short: _w_short, Int: _w_int, int: _w_long,
    Timestamp: _w_timestamp, Float: _w_float, float: _w_double,
    Decimal32: _w_decimal(0x74, 4), Decimal64: _w_decimal(0x84, 8),
    Decimal128: _w_decimal(0x94, 16), Char: _w_char, uuid.UUID: _w_uuid, bytes: _w_binary,
    bytearray: _w_binary, str: _w_string, Symbol: _w_symbol, list: _w_list, tuple: _w_list,
    dict: _w_map, Array: _w_array, Described: _w_described,
}


def encode_value(value: Any, out: bytearray | None = None) -> bytearray:
    """Encode ``value`` (appending to ``out`` when given) in its most compact form.

    Composite objects (``Open``, ``Source``, ``Accepted``...) encode as described lists.

    Raises:
        TypeError: ``value`` has no AMQP type.
        ValueError: it does not fit its type (a ``Char`` of two characters...).

    >>> bytes(encode_value(UInt(7)))
    b'R\\x07'
    """
    if out is None:
        out = bytearray()
    writer = _WRITERS.get(type(value))
    if writer is None:
        encode = getattr(value, "encode_into", None)
        if encode is not None:
            encode(out)
            return out
        raise TypeError(f"no AMQP type for {type(value).__name__}: {value!r}")
    writer(value, out)
    return out


def set_describer(describe: Callable[[Any, Any], Any]) -> None:
    """Let ``_definitions`` turn known described values into composite objects."""
    _DESCRIBER[0] = describe
