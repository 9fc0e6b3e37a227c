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
from collections.abc import Mapping
from typing import Any, ClassVar, final

from ._untrusted import json_dumps, json_text, utf8_safe

__all__ = [
    "Byte", "Float32", "Long", "Short", "Timestamp", "UnsignedByte", "UnsignedInt",
    "UnsignedShort", "field_type", "json_value", "shown",
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


def json_value(value: Any) -> Any:
    """An AMQP field value as RabbitMQ's management API writes it in JSON
    (``rabbit_misc:amqp_table``), and its UI shows it: tables as objects, arrays as lists,
    every integer type as a number, a timestamp as its seconds since the epoch, void as
    ``"undefined"``, a string or bytes as text, or ``"Not UTF-8, base64 is: ..."`` when they
    are not UTF-8 (:func:`embroker._untrusted.utf8_safe`, the one rule for what a client's
    string becomes in JSON; a key's bytes that are no UTF-8 are U+FFFD, as RabbitMQ's).

    A decimal is its number (RabbitMQ 3.10 writes decimal ``1.25``, scale 2 and value 125, as
    ``2.125``: embroker does not copy that).

    >>> json_value({"n": Long(7), "t": datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc),
    ...             "v": None, "b": b"\\xff", "a": [Short(1), "x"]})
    {'n': 7, 't': 1767312000, 'v': 'undefined', 'b': 'Not UTF-8, base64 is: /w==', 'a': [1, 'x']}
    """
    if type(value) in (int, float, bool):
        return value
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        return utf8_safe(value)
    if isinstance(value, Mapping):
        return {json_text(str(k)): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if value is None:
        return "undefined"
    if isinstance(value, int):  # (a typed one: Long, Short...)
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, datetime.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
        return int(moment.timestamp())
    if isinstance(value, decimal.Decimal):
        return float(value) if value.is_finite() else str(value)
    return str(value)


def shown(value: Any) -> str:
    """A field value (a header, a table) as a person reads it in embroker's explanations and
    its console: :func:`json_value`'s JSON (what a client chose and is no UTF-8 written as
    there), not a Python ``repr``.

    >>> shown({"x-retry": Long(1), "kind": "paid"})
    '{"x-retry": 1, "kind": "paid"}'
    """
    return json_dumps(json_value(value), ensure_ascii=False)
