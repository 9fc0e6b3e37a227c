"""Request bodies: JSON read as RabbitMQ's management API reads it, and one schema per resource.

Theory of operation
-------------------
:func:`decode` is ``rabbit_mgmt_util:decode/1``: an empty body, ``null`` and ``undefined`` are
``{}``; a JSON object is the body; a JSON string is refused with RabbitMQ's text about
double-encoded JSON; anything else, and JSON that is not JSON (``1e400`` and ``NaN`` included:
Erlang's decoder refuses both), is ``not_json``.

A :class:`Schema` then reads the object field by field: each :class:`Field` has a reader that
turns the JSON value into what the handler uses, or raises :class:`~._routes.HttpError` 400
with RabbitMQ's reason (``["not_boolean", "yes"]``, ``"payload_not_string"``...). Keys a schema
does not name are ignored, as RabbitMQ ignores them. A field that is absent takes its default;
a required one is listed in RabbitMQ's ``[{key_missing,routing_key},...]`` reason. Where
RabbitMQ itself crashes on a value (a password that is a number: a 500 with no body), the
schema refuses it with 400 and says why; those cases are pinned in
``tests/management/golden/bad_bodies.json``.

Nothing a client sends gets past a schema unread: a handler sees only the values its schema
made, of the types it declared, so no body can make a handler raise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, final

from .._untrusted import json_loads
from ._routes import bad_request

__all__ = ["ABSENT", "Field", "Schema", "anything", "boolean", "decode", "integer", "json_object", "optional",
           "table", "text", "text_or_list", "text_or_number"]

_MISSING: Final = object()
#: A :class:`Field`'s default that leaves an absent key out of what :meth:`Schema.read`
#: returns (where RabbitMQ tells an absent key from any value: ``maps:is_key``).
ABSENT: Final = object()
Reader = Callable[[Any], Any]


def _not_json(_text: str) -> Any:
    raise ValueError("not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: Erlang's JSON decoder refuses it
        raise ValueError(text)
    return value


def decode(raw: bytes) -> dict[str, Any]:
    """The body as ``rabbit_mgmt_util:decode/1`` reads it (see the module's documentation).

    Raises:
        HttpError: 400 ``not_json``, or RabbitMQ's text for a JSON string.
    """
    text = raw.strip()
    if text in (b"", b"null", b"undefined"):
        return {}
    try:
        found = json_loads(text, parse_constant=_not_json, parse_float=_finite)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise bad_request("not_json") from None
    if isinstance(found, dict):
        return found
    if isinstance(found, bool) or found is None:  # (an Erlang atom: true, false, null)
        return {}
    if isinstance(found, str):
        raise bad_request("invalid payload: the request body JSON-decoded to a string. "
                          "Is the input doubly-JSON-encoded?")
    raise bad_request("not_json")


@final
@dataclass(frozen=True)
class Field:
    """One key of a body: how to read its value, and what an absent one is (``required``:
    refused, listed as ``{key_missing,NAME}``)."""

    read: Reader
    default: Any = None
    required: bool = False


@final
class Schema:
    """What a resource's body holds: ``fields`` by key, read in order.

    Args:
        fields: the keys read (others are ignored).
        missing_separator: how RabbitMQ's ``~p`` joins the missing keys of a long list
            (``","``; ``",\\n "`` where it wraps).
    """

    __slots__ = ("fields", "missing_separator", "whole")

    def __init__(self, fields: Mapping[str, Field], *, missing_separator: str = ",",
                 whole: bool = False) -> None:
        self.fields = dict(fields)
        self.missing_separator = missing_separator
        #: Whether the body is a document the handler hands on unread (a definitions file,
        #: which the model reads and refuses itself: ``request.body``): :meth:`read` reads
        #: nothing of it.
        self.whole = whole

    def read(self, raw: bytes) -> dict[str, Any]:
        """The body's values, each as its field read it; absent ones their default.

        Raises:
            HttpError: 400 with RabbitMQ's reason.
        """
        if self.whole:
            return {}
        body = decode(raw)
        missing = [key for key, f in self.fields.items() if f.required and key not in body]
        if missing:
            raise bad_request("[" + self.missing_separator.join(
                f"{{key_missing,{key}}}" for key in missing) + "]")
        out: dict[str, Any] = {}
        for key, f in self.fields.items():
            value = body.get(key, _MISSING)
            if value is not _MISSING:
                out[key] = f.read(value)
            elif f.default is not ABSENT:
                out[key] = f.default
        return out


# -- readers ------------------------------------------------------------------------------------

def boolean(value: Any) -> bool:
    """``rabbit_misc:parse_bool``: ``true``/``false``, as JSON or as text."""
    if value is True or value == "true":
        return True
    if value is False or value == "false":
        return False
    raise bad_request(["not_boolean", value])


def integer(value: Any) -> int:
    """``rabbit_misc:parse_int``: a JSON integer, or text that is one (a float is
    truncated)."""
    if isinstance(value, bool):
        raise bad_request(["not_integer", value])
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise bad_request(["not_integer", value])


def text(value: Any) -> str:
    """A JSON string (RabbitMQ's binaries); a number or anything else is refused."""
    if isinstance(value, str):
        return value
    raise bad_request(["not_a_string", value])


def text_or_number(value: Any) -> str:
    """A routing key or an exchange type: a JSON string, or a number as its digits (RabbitMQ
    takes a number so)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise bad_request(["not_a_string", value])
    return value if isinstance(value, str) else str(value)


def text_or_list(value: Any) -> list[str]:
    """Tags and the like: ``"a,b"`` or ``["a", "b"]`` (an item that is a number is its text,
    as RabbitMQ makes an atom of it)."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list) and all(
            isinstance(item, (str, int)) and not isinstance(item, bool) for item in value):
        return [str(item) for item in value if str(item)]
    raise bad_request(["not_a_list", value])


def json_object(value: Any) -> dict[str, Any]:
    """A JSON object (``null``: none)."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    raise bad_request(["not_an_object", value])


def table(value: Any) -> dict[str, Any]:
    """An AMQP table's JSON (``arguments``): an object (``null``, ``""`` and ``[]``, Erlang's
    empty proplist: none)."""
    if value is None or value in ("", []):
        return {}
    if isinstance(value, dict):
        return value
    raise bad_request(["not_a_table", value])


def anything(value: Any) -> Any:
    """Any JSON value, handed to a model operation that checks it itself (a policy's
    pattern and definition: ``rabbit_policy``'s validation texts are the model's)."""
    return value


def optional(read: Reader) -> Reader:
    """``read``, with ``null`` read as ``None``."""
    def reader(value: Any) -> Any:
        return None if value is None else read(value)
    return reader
