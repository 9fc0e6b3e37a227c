"""Field values, tables and arrays: every type letter, the Python type rules, the errors."""

from __future__ import annotations

import datetime
import decimal
import enum
import struct
from typing import Any

import pytest
from hypothesis import given, settings

from embroker.amqp091 import decode_table, encode_table
from embroker.amqp091._fields import (
    MAX_NESTING,
    decode_array,
    encode_array,
    encode_field_value,
)
from embroker.errors import SyntaxErrorAMQP
from embroker.fieldtypes import (
    Byte,
    Float32,
    Long,
    Short,
    Timestamp,
    UnsignedByte,
    UnsignedInt,
    UnsignedShort,
)
from tests.strategies import field_tables, field_values

_UTC = datetime.timezone.utc


def _table(key: bytes, typed_value: bytes) -> bytes:
    body = bytes([len(key)]) + key + typed_value
    return struct.pack(">I", len(body)) + body


@pytest.mark.parametrize(
    ("letter", "payload", "expected"),
    [
        (b"t", b"\x01", True),
        (b"t", b"\x00", False),
        (b"t", b"\x07", True),
        (b"b", b"\xff", Byte(-1)),
        (b"B", b"\xff", UnsignedByte(255)),
        (b"U", b"\xff\xff", Short(-1)),
        (b"u", b"\xff\xff", UnsignedShort(65535)),
        (b"s", b"\x80\x00", Short(-32768)),  # RabbitMQ's short, not the spec's short string
        (b"I", b"\xff\xff\xff\xfe", -2),
        (b"i", b"\xff\xff\xff\xfe", UnsignedInt(2**32 - 2)),
        (b"L", b"\xff" * 8, Long(-1)),
        (b"l", b"\xff" * 8, Long(-1)),  # signed, as RabbitMQ reads it (the spec says unsigned)
        (b"f", struct.pack(">f", 1.5), Float32(1.5)),
        (b"d", struct.pack(">d", 0.1), 0.1),
        (b"D", b"\x02\x00\x00\x01\x3b", decimal.Decimal("3.15")),
        (b"D", b"\x00\xff\xff\xff\xfb", decimal.Decimal(-5)),
        (b"S", b"\x00\x00\x00\x02hi", "hi"),
        (b"S", b"\x00\x00\x00\x02\xff\xfe", "\udcff\udcfe"),  # not UTF-8: surrogateescape
        (b"x", b"\x00\x00\x00\x02\xff\xfe", b"\xff\xfe"),
        (b"T", struct.pack(">Q", 1_700_000_000),
         datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=_UTC)),
        (b"T", struct.pack(">Q", 2**64 - 1), Timestamp(2**64 - 1)),
        (b"F", b"\x00\x00\x00\x03\x01aV", {"a": None}),
        (b"A", b"\x00\x00\x00\x01V", [None]),
        (b"A", b"\x00\x00\x00\x04Vt\x01V", [None, True, None]),
        (b"V", b"", None),
    ],
)
def test_each_field_type_decodes_to_its_python_value(letter: bytes, payload: bytes,
                                                      expected: Any) -> None:
    decoded = decode_table(_table(b"k", letter + payload))["k"]
    assert decoded == expected
    assert type(decoded) is type(expected)


def test_decoded_array_top_level() -> None:
    assert decode_array(b"\x00\x00\x00\x06I\x00\x00\x00\x01V") == [1, None]
    assert decode_array(encode_array(["a", 1, None])) == ["a", 1, None]


@pytest.mark.parametrize(
    ("value", "letter"),
    [
        (True, b"t"),
        (1, b"I"),
        (-(2**31), b"I"),
        (2**31, b"l"),
        (-(2**63), b"l"),
        (1.0, b"d"),
        (decimal.Decimal("1.5"), b"D"),
        (datetime.datetime(2020, 1, 1, tzinfo=_UTC), b"T"),
        (datetime.datetime(2020, 1, 1), b"T"),  # naive is UTC
        (Timestamp(7), b"T"),
        (Long(1), b"l"),
        (Short(1), b"s"),
        (Byte(1), b"b"),
        (UnsignedByte(1), b"B"),
        (UnsignedShort(1), b"u"),
        (UnsignedInt(1), b"i"),
        (Float32(1.0), b"f"),
        ("1", b"S"),
        (b"1", b"x"),
        (bytearray(b"1"), b"x"),
        (memoryview(b"1"), b"x"),
        ({"a": 1}, b"F"),
        ([1], b"A"),
        ((1,), b"A"),
        (None, b"V"),
    ],
)
def test_each_python_type_encodes_with_its_letter(value: Any, letter: bytes) -> None:
    assert encode_field_value(value)[:1] == letter


def test_a_header_1_and_a_header_string_1_stay_different() -> None:
    table = decode_table(encode_table({"int": 1, "str": "1", "bool": True, "bytes": b"1"}))
    assert table == {"int": 1, "str": "1", "bool": True, "bytes": b"1"}
    assert [type(v) for v in table.values()] == [int, str, bool, bytes]


def test_int_and_str_subclasses_encode_as_their_base_type() -> None:
    class Colour(enum.IntEnum):
        RED = 1

    class Name(str):
        pass

    assert decode_table(encode_table({"c": Colour.RED, "n": Name("x")})) == {"c": 1, "n": "x"}


def test_naive_datetime_is_utc_and_sub_second_parts_are_dropped() -> None:
    naive = datetime.datetime(2021, 5, 6, 7, 8, 9, 999_999)
    assert decode_table(encode_table({"t": naive})) == {
        "t": datetime.datetime(2021, 5, 6, 7, 8, 9, tzinfo=_UTC)}


def test_aware_datetime_in_another_zone_is_converted_to_utc() -> None:
    paris = datetime.timezone(datetime.timedelta(hours=1))
    value = datetime.datetime(2021, 1, 1, 1, 0, 0, tzinfo=paris)
    assert decode_table(encode_table({"t": value})) == {"t": datetime.datetime(2021, 1, 1,
                                                                               tzinfo=_UTC)}


def test_last_datetime_second_is_a_datetime_and_the_next_a_timestamp() -> None:
    last = 253402300799
    assert decode_table(_table(b"t", b"T" + struct.pack(">Q", last)))["t"] == datetime.datetime(
        9999, 12, 31, 23, 59, 59, tzinfo=_UTC)
    after = decode_table(_table(b"t", b"T" + struct.pack(">Q", last + 1)))["t"]
    assert after == Timestamp(last + 1)
    assert repr(after) == f"Timestamp({last + 1})"
    assert encode_field_value(after) == b"T" + struct.pack(">Q", last + 1)


def test_decimal_keeps_its_scale_and_ignores_the_decimal_context() -> None:
    with decimal.localcontext() as context:
        context.prec = 2
        value = decode_table(_table(b"d", b"D\x03\x00\x01\xe2\x40"))["d"]
    assert value == decimal.Decimal("123.456")
    assert str(value) == "123.456"
    assert encode_field_value(decimal.Decimal("123.456")) == b"D\x03\x00\x01\xe2\x40"
    assert encode_field_value(decimal.Decimal("1E+3")) == b"D\x00\x00\x00\x03\xe8"


@settings(max_examples=150, deadline=None)
@given(table=field_tables())
def test_tables_round_trip(table: dict[str, Any]) -> None:
    assert decode_table(encode_table(table)) == table


@settings(max_examples=200, deadline=None)
@given(value=field_values())
def test_values_round_trip_with_their_type(value: Any) -> None:
    decoded = decode_table(encode_table({"v": value}))["v"]
    assert decoded == value
    assert type(decoded) is type(value) or isinstance(value, (tuple, bytearray, memoryview))


def test_a_plain_int_beyond_32_bits_travels_as_a_long_and_comes_back_one() -> None:
    """An int that does not fit the signed 32-bit 'I' is sent as 'l' (as RabbitMQ's clients
    do), which decodes as a Long: equal to the int, typed so that it is sent back as 'l'."""
    for value in (2**31, -(2**31) - 1, 2**63 - 1):
        decoded = decode_table(encode_table({"v": value}))["v"]
        assert (decoded, type(decoded)) == (value, Long)
    assert type(decode_table(encode_table({"v": 2**31 - 1}))["v"]) is int


def test_empty_and_none_tables_encode_as_four_zero_bytes() -> None:
    assert encode_table({}) == encode_table(None) == b"\x00\x00\x00\x00"


def test_nested_tables_and_arrays_like_x_death() -> None:
    x_death = {"x-death": [{"count": 1, "reason": "rejected", "queue": "q",
                            "time": datetime.datetime(2024, 1, 1, tzinfo=_UTC),
                            "exchange": "", "routing-keys": ["q"]}]}
    assert decode_table(encode_table(x_death)) == x_death


# -- decoding errors ------------------------------------------------------------------------------


def test_unknown_field_value_type_is_a_syntax_error() -> None:
    with pytest.raises(SyntaxErrorAMQP, match=r"unknown field value type 'Z' \(0x5a\)"):
        decode_table(_table(b"k", b"Z"))


def test_long_string_running_past_the_frame_is_a_syntax_error() -> None:
    with pytest.raises(SyntaxErrorAMQP, match="runs past the end of the frame"):
        decode_table(_table(b"k", b"S\x00\x00\xff\xffabc"))


def test_byte_array_running_past_the_frame_is_a_syntax_error() -> None:
    with pytest.raises(SyntaxErrorAMQP, match="runs past the end of the frame"):
        decode_table(_table(b"k", b"x\xff\xff\xff\xffabc"))


def test_table_length_beyond_the_frame_is_a_syntax_error() -> None:
    with pytest.raises(SyntaxErrorAMQP, match="runs past the end of the frame"):
        decode_table(b"\x00\x00\x10\x00\x01kV")


def test_truncated_value_is_a_syntax_error() -> None:
    with pytest.raises(SyntaxErrorAMQP, match="truncated"):
        decode_table(b"\x00\x00\x00\x04\x01kI\x00")


def test_value_overrunning_the_table_length_is_a_syntax_error() -> None:
    # the table says 4 bytes, its entry takes 7: the rest would belong to the next argument
    with pytest.raises(SyntaxErrorAMQP):
        decode_table(b"\x00\x00\x00\x04\x01kI\x00\x00\x00\x01")


def test_key_without_value_is_a_syntax_error() -> None:
    with pytest.raises(SyntaxErrorAMQP, match="has no value"):
        decode_table(b"\x00\x00\x00\x02\x01k")


def test_trailing_bytes_after_a_table_are_a_syntax_error() -> None:
    with pytest.raises(SyntaxErrorAMQP, match="after the field table"):
        decode_table(b"\x00\x00\x00\x00\x00")


def test_deep_nesting_is_a_syntax_error_not_a_recursion_error() -> None:
    table = b"\x00\x00\x00\x00"
    for _ in range(5000):
        table = _table(b"", b"F" + table)
    with pytest.raises(SyntaxErrorAMQP, match="nested"):
        decode_table(table)
    array = b"\x00\x00\x00\x00"
    for _ in range(5000):
        array = struct.pack(">I", len(array) + 1) + b"A" + array
    with pytest.raises(SyntaxErrorAMQP, match="nested"):
        decode_array(array)


def test_nesting_up_to_the_limit_is_fine() -> None:
    value: Any = {}
    for _ in range(MAX_NESTING):
        value = {"n": value}
    assert decode_table(encode_table(value)) == value


# -- encoding errors ------------------------------------------------------------------------------


def test_unencodable_value_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="cannot encode object"):
        encode_table({"k": object()})
    with pytest.raises(TypeError, match="keys must be str"):
        encode_table({1: "x"})  # type: ignore[dict-item]


@pytest.mark.parametrize(
    "value",
    [2**63, -(2**63) - 1, decimal.Decimal("NaN"), decimal.Decimal("Infinity"),
     decimal.Decimal(2**31), decimal.Decimal("1E-256"),
     datetime.datetime(1969, 12, 31, tzinfo=_UTC), Timestamp(2**64), Timestamp(-1)],
)
def test_out_of_range_value_is_a_value_error(value: Any) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the message names the value
        encode_field_value(value)


def test_key_over_255_bytes_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="over 255 bytes"):
        encode_table({"k" * 256: 1})


def test_self_referencing_table_is_a_value_error_not_a_recursion_error() -> None:
    table: dict[str, Any] = {}
    table["self"] = table
    with pytest.raises(ValueError, match="nested"):
        encode_table(table)
