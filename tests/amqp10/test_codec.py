"""The Part 1 type system and the composite tables: hand-written bytes, the bytes of a recorded
session with RabbitMQ 3.10, and proton's codec as the oracle (both directions)."""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embroker.amqp10 import (
    COMPOSITES,
    Accepted,
    Array,
    Attach,
    Begin,
    Byte,
    Char,
    Close,
    Decimal32,
    Decimal64,
    Decimal128,
    DecodeError,
    Described,
    Disposition,
    Float,
    Flow,
    FrameReader,
    Int,
    Open,
    SaslMechanisms,
    Short,
    Source,
    Symbol,
    Timestamp,
    Transfer,
    UByte,
    UInt,
    ULong,
    UShort,
    decode_value,
    encode_value,
    skip_value,
)
from tests.amqp10.helpers import reference_session


def enc(value: Any) -> bytes:
    return bytes(encode_value(value))


def dec(data: bytes) -> Any:
    value, end = decode_value(data)
    assert end == len(data)
    assert skip_value(data, 0) == len(data)
    return value


# -- primitives: every constructor of Part 1 section 1.6 -------------------------------------

@pytest.mark.parametrize(("data", "value"), [
    (b"\x40", None), (b"\x41", True), (b"\x42", False), (b"\x56\x01", True),
    (b"\x56\x00", False), (b"\x50\xff", UByte(255)), (b"\x60\x01\x02", UShort(258)),
    (b"\x70\x00\x00\x01\x00", UInt(256)), (b"\x52\x07", UInt(7)), (b"\x43", UInt(0)),
    (b"\x80" + (2**64 - 1).to_bytes(8, "big"), ULong(2**64 - 1)), (b"\x53\x09", ULong(9)),
    (b"\x44", ULong(0)), (b"\x51\xff", Byte(-1)), (b"\x61\xff\xfe", Short(-2)),
    (b"\x71\xff\xff\xff\xfd", Int(-3)), (b"\x54\xfc", Int(-4)),
    (b"\x81" + (-5).to_bytes(8, "big", signed=True), -5), (b"\x55\x7f", 127),
    (b"\x72\x3f\xc0\x00\x00", Float(1.5)), (b"\x82\x40\x04\x00\x00\x00\x00\x00\x00", 2.5),
    (b"\x74" + b"\x01" * 4, Decimal32(b"\x01" * 4)), (b"\x84" + b"\x02" * 8, Decimal64(b"\x02" * 8)),
    (b"\x94" + b"\x03" * 16, Decimal128(b"\x03" * 16)), (b"\x73\x00\x01\xf6\x00", Char("\U0001f600")),
    (b"\x83\x00\x00\x01\x8f\x00\x00\x00\x00", Timestamp(0x18F00000000)),
    (b"\x98" + bytes(range(16)), uuid.UUID(bytes=bytes(range(16)))),
    (b"\xa0\x02ab", b"ab"), (b"\xb0\x00\x00\x00\x02ab", b"ab"), (b"\xa1\x02\xc3\xa9", "é"),
    (b"\xb1\x00\x00\x00\x01x", "x"), (b"\xa3\x03sym", Symbol("sym")),
    (b"\xb3\x00\x00\x00\x01s", Symbol("s")), (b"\x45", []),
    (b"\xc0\x03\x02\x41\x42", [True, False]), (b"\xd0\x00\x00\x00\x05\x00\x00\x00\x01\x40", [None]),
    (b"\xc1\x05\x02\xa1\x01k\x41", {"k": True}),
    (b"\xd1\x00\x00\x00\x08\x00\x00\x00\x02\xa3\x01k\x43", {Symbol("k"): UInt(0)}),
    (b"\xe0\x04\x02\x50\x01\x02", Array(0x50, [UByte(1), UByte(2)])),
    (b"\xf0\x00\x00\x00\x07\x00\x00\x00\x02\x50\x01\x02", Array(0x50, [UByte(1), UByte(2)])),
    (b"\x00\xa3\x03foo\xa1\x01x", Described(Symbol("foo"), "x")),
    (b"\x00\x53\x99\x40", Described(ULong(0x99), None)),
])
def test_every_constructor_decodes(data: bytes, value: Any) -> None:
    got = dec(data)
    assert got == value
    assert type(got) is type(value)


@pytest.mark.parametrize(("value", "data"), [
    (UInt(0), b"\x43"), (UInt(255), b"\x52\xff"), (UInt(256), b"\x70\x00\x00\x01\x00"),
    (ULong(0), b"\x44"), (ULong(3), b"\x53\x03"), (Int(5), b"\x54\x05"), (7, b"\x55\x07"),
    (1000, b"\x81" + (1000).to_bytes(8, "big")), ("a" * 255, b"\xa1\xff" + b"a" * 255),
    ("a" * 256, b"\xb1\x00\x00\x01\x00" + b"a" * 256), ([], b"\x45"),
    ({}, b"\xc1\x01\x00"), (Array(None, [Symbol("a"), Symbol("b")]),
                            b"\xe0\x0c\x02\xb3\x00\x00\x00\x01a\x00\x00\x00\x01b"),
])
def test_encoding_is_compact(value: Any, data: bytes) -> None:
    assert enc(value) == data


@pytest.mark.parametrize(("data", "error"), [
    (b"\x56\x02", "boolean octet"), (b"\xa1\x05abc", "past the end"), (b"\xa1\x01\xff", "UTF-8"),
    (b"\xa3\x01\xff", "not ASCII"), (b"\x73\x00\x11\x00\x00", "code point"),
    (b"\xc1\x02\x01\x40", "odd number"), (b"\xc0\x02\x09\x40", "claims 9 elements"),
    (b"\xe0\x04\x01\x00\x40\x00", "described twice"), (b"\xf0\x00\x00\x00\x05\xff\xff\xff\xff\x40",
                                              "claims"),
    (b"\x01", "invalid constructor"), (b"\xc1\x03\x02\x45\x41", "map key"),
    (b"\xc0\x03\x01\x40\x40", "does not match"), (b"", "past the end"),
    (b"\xc0\x00\x00", "smaller"),
])
def test_bad_bytes_are_decode_errors(data: bytes, error: str) -> None:
    with pytest.raises(DecodeError, match=error):
        decode_value(data)


def test_nesting_is_bounded() -> None:
    data = b"\x40"
    for _ in range(200):
        data = b"\xd0" + (len(data) + 4).to_bytes(4, "big") + (1).to_bytes(4, "big") + data
    with pytest.raises(DecodeError, match="nested"):
        decode_value(data)


def test_arrays_of_empty_elements_are_bounded() -> None:
    assert len(dec(b"\xe0\x02\x03\x40")) == 3  # three nulls in two bytes is fine
    with pytest.raises(DecodeError, match="claims"):
        decode_value(b"\xf0\x00\x00\x00\x05\x7f\xff\xff\xff\x40")


# -- composites ---------------------------------------------------------------------------------

def test_each_composite_is_known_by_code_and_by_name() -> None:
    classes = set(COMPOSITES.values())
    assert len(COMPOSITES) == 2 * len(classes)
    assert COMPOSITES[Symbol("amqp:open:list")] is COMPOSITES[ULong(0x10)] is Open
    assert COMPOSITES[Symbol("amqp:declare:list")].CODE == 0x31
    symbolic = b"\x00\xa3\x0eamqp:open:list\xc0\x03\x01\xa1\x00"
    assert dec(symbolic) == Open(container_id="")


def test_trailing_fields_left_out_take_their_defaults() -> None:
    # RabbitMQ pads close with a null; proton leaves the list empty.
    assert dec(b"\x00\x53\x18\xc0\x02\x01\x40") == dec(b"\x00\x53\x18\x45") == Close()
    flow = dec(b"\x00\x53\x13\xc0\x07\x04\x43\x52\x05\x43\x52\x05")
    assert (flow.drain, flow.echo, flow.handle, flow.incoming_window) == (False, False, None, 5)


def test_missing_mandatory_fields_and_wrong_types_are_errors() -> None:
    from embroker.amqp10 import ConnectionError10
    with pytest.raises(ConnectionError10, match="'next-outgoing-id' is missing"):
        decode_value(b"\x00\x53\x11\x45")
    with pytest.raises(DecodeError, match="'handle' must be a 32-bit unsigned integer"):
        decode_value(b"\x00\x53\x16\xc0\x03\x01\xa1\x00")


def test_composites_encode_trimmed_and_decode_back() -> None:
    transfer = Transfer(handle=UInt(1), delivery_id=UInt(2), delivery_tag=b"t",
                        message_format=UInt(0), settled=True)
    assert transfer.encode() == b"\x00\x53\x14\xc0\x0a\x05\x52\x01\x52\x02\xa0\x01t\x43\x41"
    assert dec(transfer.encode()) == transfer
    disposition = Disposition(role=True, first=UInt(0), last=UInt(2), settled=True,
                              state=Accepted())
    assert dec(disposition.encode()) == disposition
    mechanisms = SaslMechanisms((Symbol("PLAIN"), Symbol("ANONYMOUS")))
    assert dec(mechanisms.encode()) == mechanisms


def test_the_reference_session_decodes_frame_by_frame() -> None:
    session = reference_session()
    for direction in ("C->S", "S->C"):
        for what, data in session[direction]:
            if what == "header":
                continue
            reader = FrameReader(1 << 20)
            reader.feed(data)
            frame = reader.next_frame()
            assert frame is not None
            assert frame.performative is not None
            assert what == COMPOSITES[ULong(frame.performative.CODE)].NAME
            assert reader.buffered == 0
    attach = _frame(session["S->C"], "attach", 1).performative
    assert isinstance(attach, Attach)
    assert isinstance(attach.source, Source)
    assert attach.source.outcomes == ("amqp:accepted:list", "amqp:rejected:list",
                                      "amqp:released:list")
    open_ = _frame(session["S->C"], "open", 0).performative
    assert open_.properties[Symbol("product")] == "RabbitMQ"
    flow = _frame(session["C->S"], "flow", 2).performative
    assert isinstance(flow, Flow)
    assert (flow.delivery_count, flow.link_credit) == (3, 9)


def test_our_encoding_of_the_reference_performatives_decodes_the_same() -> None:
    for direction in ("C->S", "S->C"):
        for what, data in reference_session()[direction]:
            if what in ("header", "transfer"):
                continue
            performative = _decode(data)
            assert _decode(b"\x00" * 8 + performative.encode()) == performative


def test_proton_trims_as_we_do() -> None:
    begin = _decode(_frame_bytes("C->S", "begin"))
    assert isinstance(begin, Begin)
    ours = begin.encode()
    assert ours == _frame_bytes("C->S", "begin")[8:]


def _decode(data: bytes) -> Any:
    return dec(data[8:])


def _frame_bytes(direction: str, what: str) -> bytes:
    return next(d for w, d in reference_session()[direction] if w == what)


def _frame(frames: list[tuple[str, bytes]], what: str, index: int) -> Any:
    data = [d for w, d in frames if w == what][index]
    reader = FrameReader(1 << 20)
    reader.feed(data)
    return reader.next_frame()


# -- proton's codec as the oracle --------------------------------------------------------------

proton = pytest.importorskip("proton")


def _scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(), st.booleans(), st.integers(0, 255).map(UByte), st.integers(0, 2**16 - 1).map(UShort),
        st.integers(0, 2**32 - 1).map(UInt), st.integers(0, 2**64 - 1).map(ULong),
        st.integers(-128, 127).map(Byte), st.integers(-(2**15), 2**15 - 1).map(Short),
        st.integers(-(2**31), 2**31 - 1).map(Int), st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=False, width=32).map(Float), st.floats(allow_nan=False),
        st.integers(-(2**63), 2**63 - 1).map(Timestamp),
        st.uuids(), st.binary(max_size=300), st.text(max_size=300),
        st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40).map(Symbol),
        st.characters(max_codepoint=0xD7FF).map(Char),
    )


_values = st.recursive(
    _scalars(),
    lambda inner: st.one_of(
        st.lists(inner, max_size=8),
        st.dictionaries(st.text(st.characters(max_codepoint=127), max_size=10).map(Symbol),
                        inner, max_size=6)),
    max_leaves=30)


def _to_proton(value: Any) -> Any:
    p = proton
    kinds = {UByte: p.ubyte, UShort: p.ushort, UInt: p.uint, ULong: p.ulong, Byte: p.byte,
             Short: p.short, Int: p.int32, Float: p.float32, Timestamp: p.timestamp,
             Symbol: p.symbol, Char: p.char}
    if type(value) in kinds:
        return kinds[type(value)](value)
    if isinstance(value, list):
        return [_to_proton(v) for v in value]
    if isinstance(value, dict):
        return {_to_proton(k): _to_proton(v) for k, v in value.items()}
    return value


def _same(ours: Any, theirs: Any) -> bool:
    if isinstance(ours, float) and math.isnan(ours):
        return isinstance(theirs, float) and math.isnan(theirs)
    if isinstance(ours, list):
        return isinstance(theirs, list) and len(ours) == len(theirs) and all(
            _same(a, b) for a, b in zip(ours, theirs, strict=True))
    if isinstance(ours, dict):
        return isinstance(theirs, dict) and len(ours) == len(theirs) and all(
            _same(v, theirs[k]) for k, v in ours.items())
    if isinstance(theirs, memoryview):
        theirs = bytes(theirs)
    return bool(ours == theirs)


@settings(max_examples=200, deadline=None)
@given(_values)
def test_proton_decodes_what_we_encode(value: Any) -> None:
    data = proton.Data()
    data.decode(enc(value))
    data.rewind()
    data.next()
    assert _same(value, data.get_object())


@settings(max_examples=200, deadline=None)
@given(_values)
def test_we_decode_what_proton_encodes(value: Any) -> None:
    data = proton.Data()
    data.put_object(_to_proton(value))
    ours = dec(data.encode())
    assert _same(ours, value)
    assert type(ours) is type(value) or isinstance(value, (list, dict))


def test_proton_messages_decode_into_sections() -> None:
    from embroker.amqp10 import parse_message
    m = proton.Message(body="hello", id="m-1", subject="s", durable=True, priority=7,
                       properties={"a": 1}, annotations={"x-opt-k": "v"})
    parsed = parse_message(bytes(m.encode()))
    assert parsed.header is not None
    assert parsed.header.durable
    assert parsed.header.priority == 7
    assert parsed.properties is not None
    assert parsed.properties.message_id == "m-1"
    assert parsed.application_properties == {"a": 1}
    assert parsed.message_annotations == {"x-opt-k": "v"}
    assert parsed.bare.startswith(b"\x00Ss")
    assert parsed.body == b"\x00Sw\xa1\x05hello"


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.one_of(st.none(), st.integers(0, 2**32 - 1)),
       st.one_of(st.none(), st.binary(max_size=32)), st.one_of(st.none(), st.integers(0, 9)),
       st.one_of(st.none(), st.booleans()), st.booleans(), st.binary(max_size=20))
def test_the_transfer_fast_path_reads_what_the_tables_read(
        handle: int, delivery_id: int | None, tag: bytes | None, message_format: int | None,
        settled: bool | None, more: bool, payload: bytes) -> None:
    from embroker.amqp10 import encode_frame
    from embroker.amqp10_common._frames import _fast_transfer
    transfer = Transfer(handle=UInt(handle),
                        delivery_id=None if delivery_id is None else UInt(delivery_id),
                        delivery_tag=tag, message_format=None if message_format is None
                        else UInt(message_format), settled=settled, more=more)
    frame = encode_frame(0, transfer, payload)
    reader = FrameReader(1 << 20)
    reader.feed(frame)
    got = reader.next_frame()
    assert got is not None
    assert (got.performative, got.payload) == (transfer, payload)
    generic, end = decode_value(frame[8:])
    assert generic == transfer
    fast = _fast_transfer(frame[8:])
    assert fast is None or fast == (transfer, end)
