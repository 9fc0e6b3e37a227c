"""The 14 basic properties: flag bits, wire order, continuation words, errors."""

from __future__ import annotations

import datetime
import struct
from typing import Any

import pytest
from hypothesis import given, settings

from embroker.amqp091._properties import (
    PROPERTY_FLAGS,
    PROPERTY_NAMES,
    decode_properties,
    encode_properties,
)
from embroker.errors import SyntaxErrorAMQP
from tests.strategies import properties

ALL = {
    "content_type": "text/plain",
    "content_encoding": "gzip",
    "headers": {"a": 1},
    "delivery_mode": 2,
    "priority": 9,
    "correlation_id": "c",
    "reply_to": "r",
    "expiration": "60000",
    "message_id": "m",
    "timestamp": 1_700_000_000,
    "type": "t",
    "user_id": "guest",
    "app_id": "app",
    "cluster_id": "cl",
}


def test_fourteen_properties_in_spec_order_with_bits_15_to_2() -> None:
    assert tuple(ALL) == PROPERTY_NAMES
    assert [PROPERTY_FLAGS[name] for name in PROPERTY_NAMES] == [1 << b for b in range(15, 1, -1)]


def test_all_properties_round_trip() -> None:
    encoded = encode_properties(ALL)
    assert encoded[:2] == b"\xff\xfc"
    assert decode_properties(encoded) == ALL


@pytest.mark.parametrize("name", PROPERTY_NAMES)
def test_each_property_alone_sets_only_its_flag(name: str) -> None:
    encoded = encode_properties({name: ALL[name]})
    assert struct.unpack(">H", encoded[:2])[0] == PROPERTY_FLAGS[name]
    assert decode_properties(encoded) == {name: ALL[name]}


@settings(max_examples=150, deadline=None)
@given(props=properties())
def test_properties_round_trip(props: dict[str, Any]) -> None:
    assert decode_properties(encode_properties(props)) == props


def test_no_properties_is_a_zero_flag_word() -> None:
    assert encode_properties({}) == encode_properties(None) == b"\x00\x00"
    assert decode_properties(b"\x00\x00") == {}


def test_none_values_are_absent_and_empty_strings_present() -> None:
    assert encode_properties({"content_type": None, "app_id": ""}) == b"\x00\x08\x00"
    assert decode_properties(b"\x00\x08\x00") == {"app_id": ""}


def test_timestamp_is_int_seconds_and_a_datetime_is_accepted() -> None:
    when = datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.timezone.utc)
    assert encode_properties({"timestamp": when}) == encode_properties(
        {"timestamp": 1_700_000_000})
    assert decode_properties(encode_properties({"timestamp": when})) == {
        "timestamp": 1_700_000_000}


def test_continuation_flag_word_is_accepted() -> None:
    """"If the last bit (0) is set, this indicates that a further property flags field
    follows." A second word announcing nothing is harmless."""
    data = b"\x80\x01" + b"\x00\x01" + b"\x00\x00" + b"\x04text"
    assert decode_properties(data) == {"content_type": "text"}


def test_continuation_word_announcing_unknown_properties_is_a_syntax_error() -> None:
    with pytest.raises(SyntaxErrorAMQP, match="announce properties"):
        decode_properties(b"\x00\x01\x80\x00\x00")


def test_unused_flag_bit_1_is_a_syntax_error() -> None:
    with pytest.raises(SyntaxErrorAMQP, match="bit 1"):
        decode_properties(b"\x00\x02")


def test_truncated_property_values_are_a_syntax_error() -> None:
    with pytest.raises(SyntaxErrorAMQP, match="truncated"):
        decode_properties(b"\x80\x00\x05ab")
    with pytest.raises(SyntaxErrorAMQP, match="truncated"):
        decode_properties(b"\x00\x40\x00\x00")
    with pytest.raises(SyntaxErrorAMQP, match="truncated"):
        decode_properties(b"\x80")


def test_bytes_after_the_properties_are_a_syntax_error() -> None:
    with pytest.raises(SyntaxErrorAMQP, match="unexpected bytes"):
        decode_properties(b"\x00\x00\x01")


def test_properties_encode_in_wire_order_whatever_the_dict_order() -> None:
    reverse = dict(reversed(list(ALL.items())))
    assert encode_properties(reverse) == encode_properties(ALL)


@pytest.mark.parametrize(
    ("props", "error"),
    [
        ({"colour": "red"}, ValueError),
        ({"content_type": "x" * 256}, ValueError),
        ({"content_type": "é" * 128}, ValueError),
        ({"delivery_mode": 256}, ValueError),
        ({"delivery_mode": -1}, ValueError),
        ({"priority": "high"}, TypeError),
        ({"priority": True}, TypeError),
        ({"content_type": b"text"}, TypeError),
        ({"headers": [1]}, TypeError),
        ({"timestamp": -1}, ValueError),
        ({"timestamp": 2**64}, ValueError),
        ({"timestamp": "now"}, TypeError),
    ],
)
def test_bad_property_values_are_refused(props: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        encode_properties(props)
