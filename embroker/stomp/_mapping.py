"""What a STOMP frame's headers are in AMQP terms and back, as RabbitMQ 3.10.8's
``rabbit_stomp_util`` maps them: the basic properties a SEND sets, the headers a MESSAGE
carries, the ``message-id`` (and 1.2's ``ack``) a delivery is acknowledged by, the destination
a delivery names, and the queue a durable subscription is kept in.

SEND → AMQP (``message_properties/1``)::

    content-type, content-encoding, correlation-id, reply-to, expiration, type, user-id,
    app-id                             the properties of those names (``amqp-message-id`` is
                                       ``message_id``)
    persistent:true                    delivery_mode 2 (anything else: none)
    priority, timestamp                integers (a value that is no integer is refused)
    any other header                   a long-string AMQP header, in the reverse of the frame's
                                       order (``receipt`` and ``transaction`` included, as
                                       RabbitMQ passes them on; ``destination`` never)

AMQP → MESSAGE (``headers/5``): ``subscription`` (a subscription's id), ``destination``,
``message-id``, ``redelivered``, ``ack`` (1.2's client modes), then the AMQP headers that
are long strings or 32- and 64-bit integers (the others are dropped), then the properties in
the reverse of the order above, ``persistent:true`` for delivery_mode 2 and a ``reply-to``
that names no destination written as ``/reply-queue/NAME``.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Final

from ..fieldtypes import Long, field_type
from ..kit import DESTINATION_PREFIXES
from ._frame import Frame

__all__ = ["HeaderError", "boolean", "delivery_headers", "destination_of", "header_arguments",
           "message_id", "message_properties", "parse_message_id", "queue_flags",
           "subscription_queue_name"]

#: The separator of a message-id's three parts (``?MESSAGE_ID_SEPARATOR``).
_SEPARATOR: Final = "@@"

#: The headers that are properties, each with its property name, in RabbitMQ's order
#: (``message_headers/1``: MESSAGE carries them in the reverse of it).
_PROPERTY_HEADERS: Final = (
    ("content-type", "content_type"), ("content-encoding", "content_encoding"),
    ("persistent", "delivery_mode"), ("priority", "priority"),
    ("correlation-id", "correlation_id"), ("reply-to", "reply_to"),
    ("expiration", "expiration"), ("amqp-message-id", "message_id"),
    ("timestamp", "timestamp"), ("type", "type"), ("user-id", "user_id"),
    ("app-id", "app_id"))
#: Headers that never become AMQP headers (``user_header/1``).
_NOT_USER_HEADERS: Final = frozenset({name for name, _ in _PROPERTY_HEADERS} | {"destination"})
#: The destination prefixes a reply-to may start with and be left as it is
#: (``rabbit_routing_util:dest_prefixes/0``: every one but ``/temp-queue/``).
_REPLY_PREFIXES: Final = tuple(p for p in DESTINATION_PREFIXES if p != "/temp-queue/")
#: The AMQP header types a MESSAGE carries (``adhoc_convert_headers/2``).
_CARRIED_TYPES: Final = frozenset({"longstr", "signedint", "long"})


class HeaderError(ValueError):
    """A header whose value cannot be what it names (an integer that is none)."""


def _integer(frame: Frame, name: str) -> int | None:
    value = frame.header(name)
    return None if value is None else _number(name, value)


def message_properties(frame: Frame) -> dict[str, Any]:
    """The basic properties a SEND's headers give (see the module's notes).

    Raises:
        HeaderError: ``priority`` or ``timestamp`` is no integer.
    """
    properties: dict[str, Any] = {}
    user: list[tuple[str, str]] = []
    for name, value in frame.headers:  # (each name once: the reader keeps the first)
        key = _PROPERTY_KEYS.get(name)
        if key is None:
            if name != "destination":
                user.append((name, value))
        elif key == "delivery_mode":
            if value in ("true", "True"):
                properties[key] = 2
        elif key in ("priority", "timestamp"):
            properties[key] = _number(name, value)
        else:
            properties[key] = value
    if user:
        properties["headers"] = {name: _longstr(value) for name, value in reversed(user)}
    return properties


_PROPERTY_KEYS: Final = dict(_PROPERTY_HEADERS)


def _number(name: str, value: str) -> int:
    # rabbit_stomp_frame:integer_header/2: list_to_integer(string:strip(Value)).
    text = value.strip(" ")
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isdigit() or not digits.isascii():
        raise HeaderError(f"'{name}' must be an integer, not {value!r}")
    return int(text)


def _longstr(value: str) -> str | bytes:
    # A value that is not UTF-8 (kept as surrogates) is a binary long string.
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogateescape")
    return value


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "surrogateescape")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(int(value))
    return None


def delivery_headers(properties: dict[str, Any]) -> list[tuple[str, str]]:
    """The headers a message's properties give a MESSAGE frame, after its delivery headers
    (see the module's notes)."""
    headers: list[tuple[str, str]] = []
    for name, value in (properties.get("headers") or {}).items():
        if field_type(value) in _CARRIED_TYPES:
            text = _text(value)
            if text is not None:
                headers.append((name, text))
    for name, key in reversed(_PROPERTY_HEADERS):
        value = properties.get(key)
        if value is None:
            continue
        if name == "persistent":
            if value == 2:
                headers.append((name, "true"))
            continue
        text = _text(value)
        if text is None:
            continue
        if name == "reply-to" and not text.startswith(_REPLY_PREFIXES):
            text = "/reply-queue/" + text
        headers.append((name, text))
    return headers


def _escape(name: str) -> str:
    # rabbit_stomp_util:escape/1: "/" and "%" and each byte under 32 or over 127 as %XX
    # (hex digits in upper case, as integer_to_list(_, 16) writes them).
    out = []
    for byte in name.encode("utf-8", "surrogateescape"):
        if byte == 0x2F:
            out.append("%2F")
        elif byte == 0x25:
            out.append("%25")
        elif byte < 32 or byte > 127:
            out.append(f"%{byte:X}")
        else:
            out.append(chr(byte))
    return "".join(out)


def destination_of(exchange: str, routing_key: str) -> str:
    """The ``destination`` header of a delivery of a message published to ``exchange`` with
    ``routing_key`` (``format_destination/2``; the last 1024 of short ones are remembered)."""
    if len(routing_key) <= 255:  # (an exchange's name is never longer)
        return _destination_of(exchange, routing_key)
    return _format_destination(exchange, routing_key)


def _format_destination(exchange: str, routing_key: str) -> str:
    if exchange == "":
        return "/queue/" + _escape(routing_key)
    if exchange == "amq.topic":
        return "/topic/" + _escape(routing_key)
    if routing_key == "":
        return "/exchange/" + _escape(exchange)
    return f"/exchange/{_escape(exchange)}/{_escape(routing_key)}"


_destination_of = lru_cache(maxsize=1024)(_format_destination)


def message_id(consumer_tag: str, session: str, delivery_tag: int) -> str:
    """A delivery's ``message-id`` (``create_message_id/3``)."""
    return f"{consumer_tag}{_SEPARATOR}{session}{_SEPARATOR}{delivery_tag}"


def parse_message_id(text: str) -> tuple[str, str, int] | None:
    """A ``message-id``'s consumer tag, session and delivery tag, or ``None``: it is none
    (``parse_message_id/1``)."""
    parts = text.split(_SEPARATOR)
    if len(parts) != 3:
        return None
    tag = parts[2]
    digits = tag[1:] if tag[:1] in "+-" else tag
    if not digits.isdigit() or not digits.isascii():
        return None
    return parts[0], parts[1], int(tag)


def _erlang_string(text: str) -> bytes:
    # term_to_binary of a string (a list of bytes): NIL_EXT, STRING_EXT, or LIST_EXT past 65535.
    data = text.encode("utf-8", "surrogateescape")
    if not data:
        return b"j"
    if len(data) <= 0xFFFF:
        return b"k" + struct.pack(">H", len(data)) + data
    return b"l" + struct.pack(">I", len(data)) + b"".join(b"a" + bytes([b]) for b in data) + b"j"


def _guid_string(guid: bytes, prefix: str) -> str:
    # rabbit_guid:string/2: the prefix, "-", the guid in URL-safe base64 without padding.
    return prefix + "-" + base64.urlsafe_b64encode(guid).decode().rstrip("=")


def subscription_queue_name(key: str, subscription_id: str | None,
                            queue_name: str | None = None) -> str:
    """The queue of a subscription to an exchange or a topic (``subscription_queue_name/3``):
    ``x-queue-name`` if given; else, for a durable one (``subscription_id``), a name derived
    from its key and id, the same on every connection (``stomp-subscription-`` and the MD5 of
    the Erlang term ``{Key, Id}``); else a name of its own.

    >>> subscription_queue_name("a.b", "s1")
    'stomp-subscription-tZkUyKxczL6C9kpilXdR9w'
    """
    if queue_name is not None:
        return queue_name
    if subscription_id is None:
        return _guid_string(os.urandom(16), "stomp-subscription")
    term = b"\x83h\x02" + _erlang_string(key) + _erlang_string(subscription_id)
    return _guid_string(hashlib.md5(term, usedforsecurity=False).digest(), "stomp-subscription")


def header_arguments(frame: Frame) -> dict[str, Any]:
    """The queue arguments a SUBSCRIBE (or SEND) names in its headers (``build_arguments/1``):
    ``x-dead-letter-exchange``, ``x-dead-letter-routing-key`` and ``x-queue-type`` as strings,
    ``x-expires``, ``x-max-length``, ``x-max-length-bytes``, ``x-max-priority`` and
    ``x-message-ttl`` as integers.

    Raises:
        HeaderError: an integer argument that is none.
    """
    arguments: dict[str, Any] = {}
    for name, value in frame.headers:
        if name in _STRING_ARGUMENTS:
            arguments[name] = value.strip(" ")
        elif name in _INTEGER_ARGUMENTS:
            number = _integer(frame, name)
            assert number is not None
            arguments[name] = Long(number)
    return arguments


_STRING_ARGUMENTS: Final = frozenset({"x-dead-letter-exchange", "x-dead-letter-routing-key",
                                      "x-queue-type"})
_INTEGER_ARGUMENTS: Final = frozenset({"x-expires", "x-max-length", "x-max-length-bytes",
                                       "x-max-priority", "x-message-ttl"})


def boolean(value: str | None) -> bool | None:
    """A boolean header's value (``rabbit_stomp_frame:boolean_header/2`` and
    ``string_to_boolean/1``: ``true``/``True``, ``false``/``False``), or ``None``."""
    if value in ("true", "True"):
        return True
    if value in ("false", "False"):
        return False
    return None


def queue_flags(frame: Frame, default: Sequence[tuple[str, bool]]) -> dict[str, bool]:
    """``durable``, ``auto_delete`` and ``exclusive`` as a frame's ``durable`` (or
    ``persistent``), ``auto-delete`` and ``exclusive`` headers set them over ``default``
    (``build_params/2``: the first of ``durable`` and ``persistent`` in the frame wins; a
    value that is no boolean leaves the flag as it was)."""
    flags: dict[str, bool] = dict(default)
    given: set[str] = set()
    for name, value in frame.headers:
        key = _FLAGS.get(name)
        if key is None or key in given:
            continue
        given.add(key)
        flag = boolean(value)
        if flag is not None:
            flags[key] = flag
    return flags


_FLAGS: Final = {"durable": "durable", "persistent": "durable", "auto-delete": "auto_delete",
                 "exclusive": "exclusive"}
