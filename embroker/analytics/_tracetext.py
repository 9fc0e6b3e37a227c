"""The tracing plugin's ``text`` format, read back into canonical traffic rows.

Theory of operation
-------------------
``rabbitmq_tracing`` with ``"format": "text"`` writes one record per message, each opening with
a line of 80 ``=`` (:data:`SEPARATOR`, which Spark's text reader takes as its record
delimiter), then a heading line, ``Name: value`` fields and the payload::

    ================================================================================
    2026-11-24T09:03:07.057+00:00: Message published

    Node:         rabbit@localhost
    Connection:   127.0.0.1:57150 -> 127.0.0.1:5672
    Virtual host: my-vhost
    User:         guest
    Channel:      1
    Exchange:     events
    Routing keys: [<<"billing.eu.invoice">>]
    Routed queues: [<<"audit-critical">>,<<"audit-eu">>,<<"eu">>]
    Properties:   [{<<"message_id">>,longstr,<<"m3">>},
                   {<<"headers">>,table,
                    [{<<"critical">>,bool,true},
                     {<<"level">>,byte,3}]}]
    Payload:
    body of billing.eu.invoice

Unlike the JSON format, the properties are Erlang terms that keep each header's AMQP type
(``byte``, ``short``, ``signedint``, ``long``, ``float``, ``double``, ``decimal``,
``timestamp``, ``longstr``, ``binary``, ``bool``, ``void``, ``table``, ``array``...), so headers
come back exactly as embroker's codec decodes them from the wire. The payload is printed as
text: ``size`` counts its UTF-8 bytes as printed (a binary payload is not exact). "Message
received" records are deliveries, not messages.
"""

from __future__ import annotations

import datetime
import decimal
import re
from typing import Any

from .. import fieldtypes
from . import _headers

__all__ = ["SEPARATOR", "ErlangTermError", "parse_record", "parse_term", "properties_headers"]

#: What separates two records (and opens the file).
SEPARATOR = "\n" + "=" * 80 + "\n"

_HEADING = re.compile(r"^(\S+): Message (published|received)$")
_TOKEN = re.compile(r"""\s*(?:(?P<open><<|[\[{])|(?P<close>>>|[\]}])|(?P<comma>,)
    |(?P<string>"(?:[^"\\]|\\.)*")(?P<utf8>/utf8)?
    |(?P<number>-?\d+(?:\.\d+(?:[eE][+-]?\d+)?)?(?:[eE][+-]?\d+)?)
    |(?P<atom>[a-z][A-Za-z0-9_@]*|'(?:[^'\\]|\\.)*'))""", re.VERBOSE)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "s": " ", "e": "\x1b", "v": "\v", "b": "\b",
            "f": "\f", "d": "\x7f", "\\": "\\", '"': '"', "'": "'"}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MAX_DATETIME = 253402300799


class ErlangTermError(ValueError):
    """Text that is not the Erlang term the tracing plugin prints."""


class Binary(bytes):
    """An Erlang binary (``<<"abc">>``, ``<<255,0>>``)."""


class Atom(str):
    """An Erlang atom (``longstr``, ``true``, ``undefined``)."""


def _unescape(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1:i + 2]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt.isdigit():  # octal, up to three digits
            digits = re.match(r"[0-7]{1,3}", body[i + 1:])
            assert digits is not None
            out.append(chr(int(digits[0], 8)))
            i += 1 + len(digits[0])
        elif nxt == "x":
            found = re.match(r"x\{([0-9A-Fa-f]+)\}|x([0-9A-Fa-f]{2})", body[i + 1:])
            if found is None:
                raise ErlangTermError(f"bad escape in {body!r}")
            out.append(chr(int(found[1] or found[2], 16)))
            i += 1 + len(found[0])
        else:
            raise ErlangTermError(f"bad escape in {body!r}")
    return "".join(out)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def token(self) -> re.Match[str]:
        found = _TOKEN.match(self.text, self.pos)
        if found is None or found.end() == self.pos:
            raise ErlangTermError(f"unexpected {self.text[self.pos:self.pos + 20]!r} at {self.pos}")
        self.pos = found.end()
        return found

    def value(self) -> Any:
        tok = self.token()
        if tok["open"] == "[":
            return self.sequence("]", list)
        if tok["open"] == "{":
            return tuple(self.sequence("}", list))
        if tok["open"] == "<<":
            return self.binary()
        if tok["number"] is not None:
            text = tok["number"]
            return float(text) if "." in text or "e" in text.lower() else int(text)
        if tok["atom"] is not None:
            atom = tok["atom"]
            return Atom(_unescape(atom[1:-1]) if atom.startswith("'") else atom)
        raise ErlangTermError(f"unexpected {tok[0].strip()!r} at {tok.start()}")

    def sequence(self, close: str, kind: type[list[Any]]) -> list[Any]:
        items: list[Any] = []
        if self.peek_close(close):
            return items
        while True:
            items.append(self.value())
            tok = self.token()
            if tok["close"] == close:
                return items
            if tok["comma"] is None:
                raise ErlangTermError(f"expected ',' or {close!r} at {tok.start()}")

    def peek_close(self, close: str) -> bool:
        found = _TOKEN.match(self.text, self.pos)
        if found is not None and found["close"] == close:
            self.pos = found.end()
            return True
        return False

    def binary(self) -> Binary:
        data = bytearray()
        if self.peek_close(">>"):
            return Binary(data)
        while True:
            tok = self.token()
            if tok["string"] is not None:
                text = _unescape(tok["string"][1:-1])
                data += text.encode("utf-8") if tok["utf8"] else text.encode("latin-1")
            elif tok["number"] is not None and "." not in tok["number"]:
                data.append(int(tok["number"]) & 0xFF)
            else:
                raise ErlangTermError(f"unexpected {tok[0].strip()!r} in a binary")
            tok = self.token()
            if tok["close"] == ">>":
                return Binary(data)
            if tok["comma"] is None:
                raise ErlangTermError("expected ',' or '>>' in a binary")


def parse_term(text: str) -> Any:
    """One Erlang term as the tracing plugin prints it (lists, tuples, binaries, integers,
    floats, atoms).

    Raises:
        ErlangTermError: anything else.
    """
    parser = _Parser(text)
    value = parser.value()
    if text[parser.pos:].strip():
        raise ErlangTermError(f"unexpected {text[parser.pos:parser.pos + 20]!r} after the term")
    return value


def _text(value: Binary) -> str:
    return bytes(value).decode("utf-8", "surrogateescape")


def _field(kind: str, value: Any) -> Any:
    """A typed field value (``{Name, Type, Value}``'s last two) as embroker's codec gives it."""
    if kind == "longstr":
        return _text(value)
    if kind == "signedint":
        return int(value)
    if kind == "bool":
        return value == "true"
    if kind == "long":
        return fieldtypes.Long(value)
    if kind == "table":
        return _table(value)
    if kind == "array":
        return [_field(str(k), v) for k, v in value]
    if kind == "timestamp":
        return _EPOCH + datetime.timedelta(seconds=value) if value <= _MAX_DATETIME \
            else fieldtypes.Timestamp(value)
    if kind == "binary":
        return bytes(value)
    if kind == "void":
        return None
    if kind == "byte":
        return fieldtypes.Byte(value)
    if kind == "unsignedbyte":
        return fieldtypes.UnsignedByte(value)
    if kind == "short":
        return fieldtypes.Short(value)
    if kind == "unsignedshort":
        return fieldtypes.UnsignedShort(value)
    if kind == "unsignedint":
        return fieldtypes.UnsignedInt(value)
    if kind == "double":
        return float(value)
    if kind == "float":
        return fieldtypes.Float32(value)
    if kind == "decimal":
        scale, mantissa = value
        return decimal.Decimal(f"{mantissa}E-{scale}")
    raise ErlangTermError(f"unknown field type {kind!r}")


def _table(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        raise ErlangTermError(f"a table is a list, not {items!r}")
    table: dict[str, Any] = {}
    for item in items:
        if not (isinstance(item, tuple) and len(item) == 3 and isinstance(item[0], Binary)):
            raise ErlangTermError(f"a table entry is {{Name, Type, Value}}, not {item!r}")
        table[_text(item[0])] = _field(str(item[1]), item[2])
    return table


def properties_headers(properties: Any) -> dict[str, Any] | None:
    """The ``headers`` table of a printed property list, typed (``None`` when absent)."""
    table = _table(properties)
    headers = table.get("headers")
    if headers is not None and not isinstance(headers, dict):
        raise ErlangTermError("the headers property is not a table")
    return headers


def _strings(value: Any, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, Binary) for v in value):
        raise ErlangTermError(f"'{field}' is not a list of binaries")
    return [_text(v) for v in value]


def parse_record(record: str, line: int, default_vhost: str, where: str) -> dict[str, Any] | None:
    """One record (the text between two separators) to a canonical traffic row (``None`` for
    a delivery, or for the empty text before the file's first separator).

    Raises:
        TrafficError: not a record of the text format.
    """
    from ._inputs import TrafficError

    if not record.strip():
        return None
    heading, _sep, rest = record.lstrip("\n").partition("\n")
    found = _HEADING.match(heading)
    if found is None:
        raise TrafficError(f"{where}: not a record of the tracing plugin's text format "
                           f"(expected 'TIME: Message published', got {heading[:80]!r})")
    if found[2] != "published":
        return None
    head, marker, payload = rest.partition("\nPayload: \n")
    if not marker:
        head, marker, payload = rest.partition("\nPayload:\n")
    if not marker:
        raise TrafficError(f"{where}: no 'Payload:' line")
    fields: dict[str, str] = {}
    name = None
    for text in head.split("\n"):
        if not text.strip():
            continue
        if text[0].isspace() and name is not None:  # a term continued on the next line
            fields[name] += "\n" + text
            continue
        name, sep, value = text.partition(":")
        if not sep:
            raise TrafficError(f"{where}: expected 'Name: value', got {text[:80]!r}")
        fields[name] = value.strip(" ")
    try:
        keys = _strings(parse_term(fields["Routing keys"]), "Routing keys")
        routed = (_strings(parse_term(fields["Routed queues"]), "Routed queues")
                  if "Routed queues" in fields else None)
        headers = properties_headers(parse_term(fields.get("Properties", "[]")))
    except KeyError as exc:
        raise TrafficError(f"{where}: no '{exc.args[0]}' field") from None
    except ErlangTermError as exc:
        raise TrafficError(f"{where}: {exc}") from None
    if not keys:
        raise TrafficError(f"{where}: 'Routing keys' is empty")
    try:
        when = datetime.datetime.fromisoformat(found[1].replace("Z", "+00:00"))
    except ValueError:
        raise TrafficError(f"{where}: {found[1]!r} is not an ISO 8601 time") from None
    if payload.endswith("\n"):
        payload = payload[:-1]
    return {"line": line, "vhost": fields.get("Virtual host") or default_vhost,
            "exchange": fields.get("Exchange", ""), "routing_key": keys[0], "routing_keys": keys,
            "headers": _headers.dumps(headers) if headers is not None else None,
            "size": len(payload.encode("utf-8", "surrogateescape")),
            "published_at": when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc),
            "routed_queues": routed, "mandatory": None}
