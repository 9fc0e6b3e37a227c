"""How RabbitMQ prints Erlang terms in its reply texts, measured on RabbitMQ 3.10.

RabbitMQ formats many reply texts with ``io_lib:format``: ``~w`` writes a term flat, ``~p``
"pretty prints" it, which can break it over lines when it would pass the 80th column of the
line it starts on. The reply texts embroker copies follow the same rules, so that a client sees
the same text byte for byte:

- a list of bytes (``~p``): a quoted string when every byte is printable latin-1, else a list of
  integers;
- a binary (``~p``): ``<<"...">>`` when printable, else ``<<1,2,3>>`` filled line by line, the
  continuation lines indented to just after ``<<``;
- a two-element tuple ``{atom,Value}`` (``~p``): on one line when it fits, else broken after the
  comma with the value under the first element.

Used by the model (argument and expiration errors) and the protocol layer (frame errors).
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any

from .fieldtypes import field_type

__all__ = ["binary", "binary_w", "field_value", "pair", "string"]

#: How ``~p`` escapes the control characters it still counts as printable.
_ESCAPES = {0x22: '\\"', 0x5C: "\\\\", 0x0A: "\\n", 0x09: "\\t", 0x0D: "\\r", 0x0C: "\\f",
            0x08: "\\b", 0x0B: "\\v", 0x1B: "\\e"}


def _printable(data: bytes) -> bool:
    return all(32 <= b <= 126 or b >= 160 or b in _ESCAPES for b in data)


def _quoted(data: bytes) -> str:
    # Bytes 160-255 go out as they are (RabbitMQ writes them raw into the text): kept as
    # surrogate escapes here, so that encoding the text with surrogateescape gives them back.
    return '"' + "".join(_ESCAPES.get(b, chr(b) if b < 128 else chr(0xDC00 + b))
                         for b in data) + '"'


def string(data: bytes) -> str:
    """``~p`` of a list of bytes (what ``binary_to_list`` makes of a binary).

    >>> string(b"ms"), string(b"a\\x01")
    ('"ms"', '[97,1]')
    """
    if _printable(data):
        return _quoted(data)
    return "[" + ",".join(map(str, data)) + "]"


def binary_w(data: bytes) -> str:
    """``~w`` of a binary: always its bytes as integers, on one line.

    >>> binary_w(b"ab")
    '<<97,98>>'
    """
    return "<<" + ",".join(map(str, data)) + ">>"


def binary(data: bytes, column: int) -> str:
    """``~p`` of a binary starting at ``column`` of its line (0-based).

    >>> binary(b"abc", 0), binary(b"", 0)
    ('<<"abc">>', '<<>>')
    >>> print(binary(bytes([150] * 16), 21))
    <<150,150,150,150,150,150,150,150,150,150,150,150,150,150,
                           150,150>>
    """
    if not data:
        return "<<>>"
    if _printable(data):
        return "<<" + _quoted(data) + ">>"
    # Filled: an element goes on the line if it ends by column 78 with its comma, or (the last
    # one) by column 79 before its ">>"; measured on RabbitMQ 3.10.
    indent = column + 2
    parts = ["<<"]
    col = indent
    items = [str(b) for b in data]
    for i, item in enumerate(items):
        last = i == len(items) - 1
        end = col + len(item) + (0 if last else 1)
        if col > indent and end > 79:
            parts.append("\n" + " " * indent)
            col = indent
        parts.append(item + (">>" if last else ","))
        col += len(item) + (2 if last else 1)
    return "".join(parts)


def field_value(value: Any) -> str:
    """``~p`` of an AMQP field value as RabbitMQ holds it (flat): strings and byte arrays are
    binaries, arrays lists of ``{type,Value}``, tables lists of ``{<<"key">>,type,Value}``.

    >>> field_value(["a", 1]), field_value({"k": True}), field_value(None)
    ('[{longstr,<<"a">>},{signedint,1}]', '[{<<"k">>,bool,true}]', 'undefined')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "undefined"
    if isinstance(value, str):
        return binary(value.encode("utf-8", "surrogateescape"), 0)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return binary(bytes(value), 0)
    if isinstance(value, dict):
        return "[" + ",".join(
            f"{{{binary(str(k).encode('utf-8', 'surrogateescape'), 0)},{field_type(v)},"
            f"{field_value(v)}}}" for k, v in value.items()) + "]"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(f"{{{field_type(v)},{field_value(v)}}}" for v in value) + "]"
    if isinstance(value, datetime.datetime):
        return str(int(value.timestamp()))
    if isinstance(value, decimal.Decimal):
        sign, digits, exponent = value.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        return f"{{{-int(exponent)},{unscaled}}}"
    return repr(int(value)) if isinstance(value, int) else repr(float(value))


def pair(atom: str, value: str, column: int) -> str:
    """``~p`` of the tuple ``{atom,Value}`` (``value`` already printed) starting at ``column``:
    on one line when it ends by column 78, else broken after the comma with the value aligned
    under the first element (measured: 78 columns fit, 79 do not).

    >>> pair("value_negative", "-1", 23)
    '{value_negative,-1}'
    >>> print(pair("value_too_large", "9" * 20, 43))
    {value_too_large,
                                                99999999999999999999}
    """
    flat = f"{{{atom},{value}}}"
    if column + len(flat) <= 78:
        return flat
    return f"{{{atom},\n{' ' * (column + 1)}{value}}}"
