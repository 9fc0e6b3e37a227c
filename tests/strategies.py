"""Hypothesis strategies shared by the test suites: AMQP field values, tables, methods, properties.

Two flavours of most strategies:

* the full embroker domain (``field_values()``, ``methods()``...): every value embroker can
  encode and decode back unchanged, including the corners (unsigned 64-bit delivery tags, any
  bytes in a string via ``surrogateescape``, timestamps past the year 9999, nested tables);
* ``pamqp_compatible=True``: the subset that pamqp, the test oracle, also round-trips faithfully
  (see ``tests/amqp091/test_pamqp.py`` for why each restriction exists).
"""

from __future__ import annotations

import datetime
import decimal
import functools
from typing import Any

from hypothesis import strategies as st

from embroker._untrusted import erlang_utf8
from embroker.amqp091 import FRAME_MIN_SIZE, Method, Timestamp
from embroker.amqp091._methods import METHOD_CLASSES
from embroker.amqp091._properties import PROPERTY_NAMES
from embroker.amqp091._spec import METHODS as METHOD_SPECS
from embroker.amqp091._spec import MethodSpec
from embroker.fieldtypes import Long

__all__ = [
    "decimals",
    "field_tables",
    "field_values",
    "frame_max_values",
    "frame_streams",
    "method_for",
    "methods",
    "properties",
    "shortstrs",
    "texts",
]

_UTC = datetime.timezone.utc
_MAX_DATETIME_SECONDS = 253402300799
_PAMQP_MAX_SECONDS = 0xFFFFFFFF  # pamqp reads larger T values as milliseconds


@functools.cache
def texts(*, max_size: int = 40, pamqp_compatible: bool = False) -> st.SearchStrategy[str]:
    """Strings as embroker decodes them: any text, or any bytes through surrogateescape."""
    text = st.text(st.characters(exclude_categories=["Cs"]), max_size=max_size)
    if pamqp_compatible:
        return text
    raw = st.binary(max_size=max_size).map(lambda b: b.decode("utf-8", "surrogateescape"))
    return st.one_of(text, raw)


@functools.cache
def shortstrs(*, pamqp_compatible: bool = False, max_bytes: int = 255) -> st.SearchStrategy[str]:
    """Strings whose UTF-8 encoding fits a shortstr (255 bytes)."""
    base = texts(max_size=60, pamqp_compatible=pamqp_compatible)
    long = st.text(st.characters(max_codepoint=0x7F), min_size=max_bytes - 55, max_size=max_bytes)
    return st.one_of(base, long).filter(
        lambda s: len(s.encode("utf-8", "surrogateescape")) <= max_bytes)


def decimals() -> st.SearchStrategy[decimal.Decimal]:
    """Decimals that fit an AMQP decimal: a scale octet and a signed 32-bit mantissa."""
    return st.builds(lambda mantissa, scale: decimal.Decimal(f"{mantissa}E-{scale}"),
                     st.integers(-(2**31), 2**31 - 1), st.integers(0, 255))


def _datetimes(max_seconds: int) -> st.SearchStrategy[datetime.datetime]:
    epoch = datetime.datetime(1970, 1, 1, tzinfo=_UTC)
    return st.integers(0, max_seconds).map(lambda s: epoch + datetime.timedelta(seconds=s))


def _scalars(pamqp_compatible: bool) -> st.SearchStrategy[Any]:
    common = [
        st.booleans(),
        # A plain int travels as a signed 32-bit 'I' when it fits and as a 64-bit 'l' when it
        # does not, which decodes as a Long (its type kept): so a 64-bit value is a Long here.
        st.integers(-(2**63), 2**63 - 1).map(Long),
        st.integers(-(2**31), 2**31 - 1),
        decimals(),
        st.none(),
    ]
    if pamqp_compatible:
        return st.one_of(
            *common,
            # pamqp encodes every float as a 32-bit 'f': only those survive its round trip.
            st.floats(width=32, allow_nan=False),
            texts(pamqp_compatible=True),
            st.binary(max_size=20).map(bytearray),  # pamqp sends only bytearray as 'x'
            _datetimes(_PAMQP_MAX_SECONDS),
        )
    return st.one_of(
        *common,
        st.floats(allow_nan=False),
        texts(),
        st.binary(max_size=20),
        _datetimes(_MAX_DATETIME_SECONDS),
        st.integers(_MAX_DATETIME_SECONDS + 1, 2**64 - 1).map(Timestamp),
    )


@functools.cache
def field_values(*, pamqp_compatible: bool = False) -> st.SearchStrategy[Any]:
    """Any field value, nested tables and arrays included, as embroker decodes it."""
    keys = _keys(pamqp_compatible)
    return st.recursive(
        _scalars(pamqp_compatible),
        lambda children: st.one_of(st.lists(children, max_size=4),
                                   st.dictionaries(keys, children, max_size=4)),
        max_leaves=12,
    )


def _keys(pamqp_compatible: bool) -> st.SearchStrategy[str]:
    # pamqp truncates keys to 128 bytes; the wire allows 255
    return shortstrs(pamqp_compatible=pamqp_compatible, max_bytes=128 if pamqp_compatible else 255)


@functools.cache
def field_tables(*, pamqp_compatible: bool = False,
                 max_size: int = 6) -> st.SearchStrategy[dict[str, Any]]:
    """Field tables (``dict[str, value]``) with every value type."""
    return st.dictionaries(_keys(pamqp_compatible), field_values(pamqp_compatible=pamqp_compatible),
                           max_size=max_size)


def _argument(wire_type: str, pamqp_compatible: bool,
              checked: bool = False) -> st.SearchStrategy[Any]:
    if wire_type == "bit":
        return st.booleans()
    if wire_type == "octet":
        return st.integers(0, 255)
    if wire_type == "short":
        return st.integers(0, 2**16 - 1)
    if wire_type == "long":
        return st.integers(0, 2**32 - 1)
    if wire_type in ("longlong", "timestamp"):
        # pamqp reads and writes long-longs as signed; RabbitMQ (and embroker) as unsigned
        return st.integers(0, 2**63 - 1 if pamqp_compatible else 2**64 - 1)
    if wire_type == "shortstr":
        short = shortstrs(pamqp_compatible=pamqp_compatible)
        # (a method without content has its short strings checked as RabbitMQ checks them)
        return short.filter(_erlang_reads) if checked else short
    if wire_type == "longstr":
        return texts(max_size=300, pamqp_compatible=pamqp_compatible)
    assert wire_type == "table", wire_type
    return field_tables(pamqp_compatible=pamqp_compatible)


@functools.cache
def method_for(spec: MethodSpec, *, pamqp_compatible: bool = False) -> st.SearchStrategy[Method]:
    """Instances of one method class, every argument drawn over its whole wire range."""
    cls = METHOD_CLASSES[spec.index]
    return st.builds(cls, **{argument.attribute: _argument(argument.type, pamqp_compatible,
                                                           checked=not spec.content)
                             for argument in spec.arguments})


def _erlang_reads(text: str) -> bool:
    """Whether RabbitMQ reads ``text``'s bytes as UTF-8 (a short string of a method without
    content must be: ``checked_shortstr``)."""
    return erlang_utf8(text.encode("utf-8", "surrogateescape"))


@functools.cache
def methods(*, pamqp_compatible: bool = False,
            content: bool | None = None) -> st.SearchStrategy[Method]:
    """Instances of any method class (only content methods, or none, if ``content`` says so)."""
    return st.one_of([method_for(spec, pamqp_compatible=pamqp_compatible)
                      for spec in METHOD_SPECS if content is None or spec.content == content])


@functools.cache
def properties(*, pamqp_compatible: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """Basic properties as embroker decodes them: only the properties present."""
    short = shortstrs(pamqp_compatible=pamqp_compatible)
    if pamqp_compatible:
        # pamqp drops empty strings from the properties it sends
        short = short.filter(bool)
    types: dict[str, st.SearchStrategy[Any]] = {
        "content_type": short,
        "content_encoding": short,
        "headers": field_tables(pamqp_compatible=pamqp_compatible),
        "delivery_mode": st.integers(0, 255),
        "priority": st.integers(0, 255),
        "correlation_id": short,
        "reply_to": short,
        "expiration": short,
        "message_id": short,
        "timestamp": st.integers(0, _PAMQP_MAX_SECONDS if pamqp_compatible else 2**64 - 1),
        "type": short,
        "user_id": short,
        "app_id": short,
        "cluster_id": short,
    }
    assert tuple(types) == PROPERTY_NAMES
    return st.fixed_dictionaries({}, optional=types)


def frame_max_values() -> st.SearchStrategy[int]:
    """Negotiable frame-max values: 0 (no limit) or at least the spec's minimum."""
    return st.one_of(st.just(0), st.integers(FRAME_MIN_SIZE, 1 << 18))


@st.composite
def frame_streams(draw: st.DrawFn, *, frame_max: int = FRAME_MIN_SIZE,
                  max_commands: int = 6) -> tuple[bytes, list[tuple[Any, ...]]]:
    """A valid byte stream of frames, and what it carries.

    Returns ``(data, commands)`` where ``commands`` lists ``("heartbeat",)``,
    ``("method", channel, method)`` and ``("content", channel, method, properties, body)`` in
    order. Connection methods go on channel 0, the others on channels 1..3; bodies are split at
    ``frame_max``.
    """
    from embroker.amqp091 import encode_message, encode_method_frame
    from embroker.amqp091._frames import HEARTBEAT_FRAME, encode_header_frame

    parts: list[bytes] = []
    commands: list[tuple[Any, ...]] = []
    for _ in range(draw(st.integers(0, max_commands))):
        kind = draw(st.sampled_from(["heartbeat", "method", "content"]))
        if kind == "heartbeat":
            parts.append(HEARTBEAT_FRAME)
            commands.append(("heartbeat",))
            continue
        if kind == "method":
            method = draw(methods(content=False))
            channel = 0 if method.CLASS_ID == 10 else draw(st.integers(1, 3))
            encoded = encode_method_frame(channel, method)
            if len(encoded) > frame_max > 0:
                continue
            parts.append(encoded)
            commands.append(("method", channel, method))
            continue
        method = draw(methods(content=True))
        channel = draw(st.integers(1, 3))
        props = draw(properties())
        body = draw(st.binary(max_size=3 * frame_max if frame_max else 10_000))
        if frame_max and max(len(encode_method_frame(channel, method)),
                             len(encode_header_frame(channel, 60, len(body), props))) > frame_max:
            continue  # a method or header too big for this frame-max: not a valid stream
        encoded = encode_message(channel, method, body, frame_max, properties=props)
        parts.append(encoded)
        commands.append(("content", channel, method, props, body))
    return b"".join(parts), commands
