"""Message headers as JSON text that keeps their AMQP types.

Headers are typed in AMQP, and RabbitMQ's headers exchange compares them by type: ``3`` and
``"3"`` differ, a byte array equals the string with the same bytes, a timestamp compares as its
seconds. Traffic tables keep headers as one JSON text column (never ``map<string,string>``, which
would turn ``3`` into ``"3"``): JSON's own types stand for themselves (string, boolean, integer,
float — ``3.0`` stays a float —, null for void, arrays, tables), and the AMQP types JSON
lacks are one-key objects::

    {"$bytes": "AP9hYg=="}       byte array (base64)
    {"$decimal": "1.25"}         decimal
    {"$timestamp": 1704164645}   timestamp (seconds)
    {"$long": 5}                 an integer of another type than the default signed 32-bit one
                                 ($long, $short, $byte, $unsignedbyte, $unsignedshort,
                                 $unsignedint: :mod:`embroker.fieldtypes`, as the codec decodes
                                 them; RabbitMQ tells them apart inside nested tables)
    {"$float32": 1.5}            a 32-bit float (a plain JSON float is a double)

A real table with exactly one key that is one of these tags is written with an extra
``"$table": 1`` member, which reading removes.

>>> text = dumps({"level": 3, "d": decimal.Decimal("1.25"), "raw": b"\\x00"})
>>> text
'{"level":3,"d":{"$decimal":"1.25"},"raw":{"$bytes":"AA=="}}'
>>> loads(text) == {"level": 3, "d": decimal.Decimal("1.25"), "raw": b"\\x00"}
True
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
from collections.abc import Mapping
from typing import Any

from .. import fieldtypes
from ..fieldtypes import field_type

__all__ = ["dumps", "loads", "to_json_value"]

#: The typed integers, by tag.
_INTS: dict[str, type[int]] = {f"${cls.TYPE}": cls for cls in (
    fieldtypes.Long, fieldtypes.Short, fieldtypes.Byte, fieldtypes.UnsignedByte,
    fieldtypes.UnsignedShort, fieldtypes.UnsignedInt)}
_TAGS = frozenset({"$bytes", "$decimal", "$timestamp", "$float32", *_INTS})
_MARK = "$table"
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MAX_DATETIME = 253402300799  # 9999-12-31T23:59:59Z


def to_json_value(value: Any) -> Any:
    """A header value as plain JSON data in the typed form above."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return {"$timestamp": int((value - _EPOCH).total_seconds())}
    if isinstance(value, int):
        if isinstance(value, fieldtypes.Timestamp):
            return {"$timestamp": int(value)}
        if type(value) is not int:
            return {f"${field_type(value)}": int(value)}
        return value
    if isinstance(value, fieldtypes.Float32):
        return {"$float32": float(value)}
    if isinstance(value, float):
        return value
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        table = {str(k): to_json_value(v) for k, v in value.items()}
        if len(table) == 1 and next(iter(table)) in _TAGS:
            table[_MARK] = 1
        return table
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    raise TypeError(f"cannot keep {type(value).__name__} {value!r} as a header value")


def dumps(headers: Mapping[str, Any] | None) -> str | None:
    """Headers as typed JSON text (``None`` for no headers)."""
    if headers is None:
        return None
    return json.dumps(to_json_value(headers), separators=(",", ":"), ensure_ascii=False,
                      allow_nan=True)


def _hook(obj: dict[str, Any]) -> Any:
    if len(obj) == 1:
        ((key, value),) = obj.items()
        if key == "$bytes":
            return base64.b64decode(value)
        if key == "$decimal":
            return decimal.Decimal(value)
        if key == "$timestamp":
            if int(value) > _MAX_DATETIME:
                return fieldtypes.Timestamp(value)
            return _EPOCH + datetime.timedelta(seconds=int(value))
        if key == "$float32":
            return fieldtypes.Float32(value)
        cls = _INTS.get(key)
        if cls is not None:
            return cls(value)
    elif _MARK in obj and len(obj) == 2:
        return {k: v for k, v in obj.items() if k != _MARK}
    return obj


def loads(text: str | None) -> dict[str, Any] | None:
    """Typed JSON text back to header values (``bytes``, ``Decimal``, ``datetime`` for the tags).

    Raises:
        ValueError: not JSON, or not a JSON object.
    """
    if text is None or text == "":
        return None
    value = json.loads(text, object_hook=_hook)
    if not isinstance(value, dict):
        raise ValueError(f"headers must be a JSON object, not {type(value).__name__}")
    return value
