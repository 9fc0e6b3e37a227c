"""AMQP field value types that plain Python values cannot tell apart.

A header ``5`` may travel as a signed 32-bit integer (``I``), a 64-bit one (``l``, what Java's
``Long`` sends), a short, a byte... RabbitMQ keeps the type of every value, and clients with typed
decoders (Go, Java, .NET) see it. embroker does too: decoding gives an ``int`` subclass for each
integer type but the default one, and encoding writes it back with its own type, so headers the
broker rewrites (dead-lettering, ``x-delivery-count``) keep their types, and headers-exchange
matching of nested tables tells ``I`` from ``l`` where RabbitMQ does.

Plain values encode as before: ``int`` as ``I`` when it fits 32 bits, else ``l``; ``float`` as
``d``. Use these types to publish a value of another type from the in-process client::

    ch.basic_publish("", "q", b"", {"headers": {"count": Long(5)}})

>>> Long(5) == 5, f"{Long(5)}", field_type(Long(5)), field_type(5), field_type(2**40)
(True, '5', 'long', 'signedint', 'long')
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any, ClassVar, final

__all__ = [
    "Byte", "Float32", "Long", "Short", "Timestamp", "UnsignedByte", "UnsignedInt",
    "UnsignedShort", "field_type",
]


class _TypedInt(int):
    #: RabbitMQ's name for the type (``rabbit_framing`` atoms).
    TYPE: ClassVar[str]
    #: The type letter on the wire.
    LETTER: ClassVar[bytes]

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({int(self)})"

    def __str__(self) -> str:  # the number, as a plain int prints
        return int.__repr__(self)


@final
class Long(_TypedInt):
    """A signed 64-bit integer (``l``), whatever its value."""

    TYPE, LETTER = "long", b"l"
    __slots__ = ()


@final
class Short(_TypedInt):
    """A signed 16-bit integer (``s`` in RabbitMQ, ``U`` in the spec)."""

    TYPE, LETTER = "short", b"s"
    __slots__ = ()


@final
class Byte(_TypedInt):
    """A signed 8-bit integer (``b``)."""

    TYPE, LETTER = "byte", b"b"
    __slots__ = ()


@final
class UnsignedByte(_TypedInt):
    """An unsigned 8-bit integer (``B``)."""

    TYPE, LETTER = "unsignedbyte", b"B"
    __slots__ = ()


@final
class UnsignedShort(_TypedInt):
    """An unsigned 16-bit integer (``u``)."""

    TYPE, LETTER = "unsignedshort", b"u"
    __slots__ = ()


@final
class UnsignedInt(_TypedInt):
    """An unsigned 32-bit integer (``i``)."""

    TYPE, LETTER = "unsignedint", b"i"
    __slots__ = ()


@final
class Timestamp(_TypedInt):
    """An AMQP timestamp (``T``, seconds since the Unix epoch) kept as an ``int``: what a
    timestamp too large for ``datetime`` decodes to."""

    TYPE, LETTER = "timestamp", b"T"
    __slots__ = ()


@final
class Float32(float):
    """A 32-bit float (``f``); a plain ``float`` travels as a double (``d``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Float32({float(self)!r})"

    def __str__(self) -> str:
        return float.__repr__(self)


_INT32 = range(-(2**31), 2**31)


def field_type(value: Any) -> str:
    """RabbitMQ's name for the AMQP type ``value`` travels as (``signedint``, ``long``,
    ``longstr``, ``table``...): what its reply texts and headers matching go by."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, _TypedInt):
        return value.TYPE
    if isinstance(value, int):
        return "signedint" if value in _INT32 else "long"
    if isinstance(value, Float32):
        return "float"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "longstr"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "binary"
    if isinstance(value, dict):
        return "table"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, datetime.datetime):
        return "timestamp"
    if isinstance(value, decimal.Decimal):
        return "decimal"
    return "void" if value is None else type(value).__name__
