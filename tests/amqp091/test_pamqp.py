"""pamqp as the oracle: the method table, and round trips in both directions.

What embroker encodes, pamqp decodes to the same values, and the reverse, for every method, for
field tables with every type and for property sets. Where the encoding is canonical (no field
table involved: pamqp sorts table keys and picks the smallest integer type) the bytes must be
identical too.

pamqp is not RabbitMQ, and where they differ embroker follows RabbitMQ; the strategies keep the
round trips to the values pamqp handles faithfully (``pamqp_compatible=True``), and the tests at
the end of this module say what pamqp does differently and what embroker does instead.
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import pamqp.base
import pamqp.body
import pamqp.commands
import pamqp.decode
import pamqp.encode
import pamqp.frame
import pamqp.header
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embroker.amqp091 import (
    BodyFrame,
    Command,
    FrameParser,
    HeaderFrame,
    Method,
    MethodFrame,
    Timestamp,
    decode_table,
    encode_message,
    encode_method_frame,
    encode_table,
)
from embroker.amqp091._assembly import ContentAssembler
from embroker.amqp091._fields import encode_field_value
from embroker.amqp091._frames import encode_header_frame
from embroker.amqp091._methods import METHOD_CLASSES
from embroker.amqp091._properties import encode_properties
from embroker.amqp091._spec import METHODS as METHOD_SPECS
from embroker.amqp091._spec import MethodSpec
from embroker.amqp091.methods import BasicDeliver
from embroker.errors import SyntaxErrorAMQP
from tests.strategies import field_tables, method_for, properties

# pamqp warns on every basic.recover-async it builds
pytestmark = pytest.mark.filterwarnings("ignore:This command is deprecated:DeprecationWarning")

_UTC = datetime.timezone.utc
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=_UTC)

# -- helpers -------------------------------------------------------------------------------------


def _pamqp_class(spec: MethodSpec) -> type[pamqp.base.Frame]:
    return pamqp.commands.INDEX_MAPPING[spec.index]


def _pamqp_name(spec: MethodSpec) -> str:
    """``basic.get-ok`` -> ``Basic.GetOk``, pamqp's spelling."""
    klass, method = spec.name.split(".")
    return f"{klass.capitalize()}.{''.join(p.capitalize() for p in method.split('-'))}"


def _values(method: Method) -> list[Any]:
    return [getattr(method, argument.attribute) for argument in method.ARGUMENTS]


def _pamqp_values(frame: pamqp.base.Frame) -> list[Any]:
    return [getattr(frame, attribute) for attribute in frame.__slots__]


@contextmanager
def _no_validation(cls: type[Any]) -> Iterator[None]:
    """pamqp validates names (exchange regex, reserved fields) that the wire allows: skip it."""
    with mock.patch.object(cls, "validate", return_value=None):
        yield


def _to_pamqp(method: Method) -> pamqp.base.Frame:
    cls = _pamqp_class(next(s for s in METHOD_SPECS if s.index == method.INDEX))
    frame = cls.__new__(cls)
    for attribute, value in zip(frame.__slots__, _values(method), strict=True):
        setattr(frame, attribute, value)
    return frame


def _pamqp_properties(props: dict[str, Any]) -> pamqp.commands.Basic.Properties:
    result = pamqp.commands.Basic.Properties.__new__(pamqp.commands.Basic.Properties)
    for slot in result.__slots__:
        setattr(result, slot, None)
    for name, value in props.items():
        if name == "timestamp":
            value = _EPOCH + datetime.timedelta(seconds=value)
        setattr(result, "message_type" if name == "type" else name, value)
    return result


def _from_pamqp_properties(props: pamqp.commands.Basic.Properties) -> dict[str, Any]:
    result = {}
    for slot in props.__slots__:
        value = getattr(props, slot)
        if value is None or (slot == "cluster_id" and value == ""):
            continue
        if slot == "timestamp":
            value = (value - _EPOCH) // datetime.timedelta(seconds=1)
        result["type" if slot == "message_type" else slot] = value
    return result


def _only(data: bytes) -> Any:
    consumed, _channel, frame = pamqp.frame.unmarshal(data)
    assert consumed == len(data)
    return frame


# -- the method table ----------------------------------------------------------------------------


def test_every_pamqp_method_is_in_the_table_and_no_other() -> None:
    assert {spec.index for spec in METHOD_SPECS} == set(pamqp.commands.INDEX_MAPPING)


@pytest.mark.parametrize("spec", METHOD_SPECS, ids=lambda spec: spec.name)
def test_method_table_row_matches_pamqp(spec: MethodSpec) -> None:
    """Ids, name, argument types in order, synchronous flag and replies agree with pamqp.

    Argument *names* follow the 0-9-1 spec (``no_wait``, ``reserved_1``, ``type``) where pamqp
    follows RabbitMQ's JSON (``nowait``, ``ticket``, ``exchange_type``).
    """
    theirs = _pamqp_class(spec)
    assert theirs.name == _pamqp_name(spec)
    assert [a.type for a in spec.arguments] == [theirs.amqp_type(a) for a in theirs.__slots__]
    assert spec.synchronous == theirs.synchronous
    assert [_pamqp_name(next(s for s in METHOD_SPECS if s.name == reply))
            for reply in spec.replies] == theirs.valid_responses
    ours = METHOD_CLASSES[spec.index]
    expected = (spec.class_id, spec.method_id, spec.name)
    assert expected == (ours.CLASS_ID, ours.METHOD_ID, ours.NAME)


def test_content_methods_are_publish_return_deliver_get_ok() -> None:
    assert sorted(s.name for s in METHOD_SPECS if s.content) == [
        "basic.deliver", "basic.get-ok", "basic.publish", "basic.return"]


# -- methods, both directions ------------------------------------------------------------------


@pytest.mark.parametrize("spec", METHOD_SPECS, ids=lambda spec: spec.name)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_embroker_encodes_what_pamqp_decodes(spec: MethodSpec, data: st.DataObject) -> None:
    method = data.draw(method_for(spec, pamqp_compatible=True))
    channel = data.draw(st.integers(0, 65535))
    encoded = encode_method_frame(channel, method)
    consumed, their_channel, theirs = pamqp.frame.unmarshal(encoded)
    assert (consumed, their_channel) == (len(encoded), channel)
    assert isinstance(theirs, pamqp.base.Frame)
    assert theirs.name == _pamqp_name(spec)
    assert _pamqp_values(theirs) == _values(method)
    if not any(a.type == "table" for a in spec.arguments):
        with _no_validation(type(theirs)):
            assert pamqp.frame.marshal(_to_pamqp(method), channel) == encoded


@pytest.mark.parametrize("spec", METHOD_SPECS, ids=lambda spec: spec.name)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_pamqp_encodes_what_embroker_decodes(spec: MethodSpec, data: st.DataObject) -> None:
    method = data.draw(method_for(spec, pamqp_compatible=True))
    theirs = _to_pamqp(method)
    channel = 0 if spec.class_id == 10 else data.draw(st.integers(1, 65535))
    with _no_validation(type(theirs)):
        encoded = pamqp.frame.marshal(theirs, channel)
    (frame,) = FrameParser(max_frame_size=0).feed(encoded)
    assert frame == MethodFrame(channel, method)


# -- tables and properties ---------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(table=field_tables(pamqp_compatible=True))
def test_tables_both_directions(table: dict[str, Any]) -> None:
    ours = encode_table(table)
    assert pamqp.decode.field_table(ours) == (len(ours), table)
    theirs = pamqp.encode.field_table(table)
    assert decode_table(theirs) == table


@settings(max_examples=150, deadline=None)
@given(props=properties(pamqp_compatible=True))
def test_properties_both_directions(props: dict[str, Any]) -> None:
    theirs = _only(encode_header_frame(1, 60, 0, props))
    assert isinstance(theirs, pamqp.header.ContentHeader)
    assert (theirs.class_id, theirs.weight, theirs.body_size) == (60, 0, 0)  # type: ignore[comparison-overlap]  # pamqp types class_id as None
    assert _from_pamqp_properties(theirs.properties) == props
    their_header = pamqp.frame.marshal(
        pamqp.header.ContentHeader(0, 5, _pamqp_properties(props)), 3)
    (frame,) = FrameParser(max_frame_size=0).feed(their_header)
    assert isinstance(frame, HeaderFrame)
    assert (frame.channel, frame.class_id, frame.body_size, frame.properties) == (3, 60, 5, props)
    if "headers" not in props:
        assert frame.raw_properties == encode_properties(props)


@settings(max_examples=100, deadline=None)
@given(props=properties(pamqp_compatible=True), body=st.binary(max_size=300),
       frame_max=st.sampled_from([0, 4096, 4096 + 8 + 100]))
def test_whole_deliver_matches_pamqp_frames(props: dict[str, Any], body: bytes,
                                            frame_max: int) -> None:
    deliver = BasicDeliver(consumer_tag="ctag", delivery_tag=7, exchange="x", routing_key="k")
    ours = encode_message(5, deliver, body, frame_max, properties=props)
    theirs = [pamqp.frame.marshal(_to_pamqp(deliver), 5),
              pamqp.frame.marshal(pamqp.header.ContentHeader(0, len(body),
                                                             _pamqp_properties(props)), 5)]
    chunk = frame_max - 8 if frame_max else len(body) or 1
    theirs += [pamqp.frame.marshal(pamqp.body.ContentBody(body[i:i + chunk]), 5)
               for i in range(0, len(body), chunk)]
    if "headers" not in props:
        assert ours == b"".join(theirs)
    commands = list(ContentAssembler().feed(FrameParser(0).feed(b"".join(theirs))))
    assert len(commands) == 1
    assert commands[0] == Command(5, deliver, props, commands[0].raw_properties, body)


# -- where pamqp differs from RabbitMQ, embroker follows RabbitMQ -------------------------------


def test_floats_are_doubles_like_rabbitmq_where_pamqp_sends_32_bit_floats() -> None:
    """pamqp encodes every ``float`` as ``f`` (32 bits, lossy); RabbitMQ's own writer and
    embroker use ``d``, so 0.1 survives the round trip."""
    assert pamqp.encode.encode_table_value(0.1)[:1] == b"f"
    assert encode_field_value(0.1) == b"d" + struct.pack(">d", 0.1)
    assert decode_table(encode_table({"x": 0.1})) == {"x": 0.1}


def test_capital_u_short_is_decoded_where_pamqp_refuses_it() -> None:
    """The spec's ``U`` (signed 16-bit): pamqp has no decoder for it; embroker reads it."""
    table = b"\x00\x00\x00\x05\x01uU\xff\xfe"
    with pytest.raises(ValueError, match="Unknown type"):
        pamqp.decode.field_table(table)
    assert decode_table(table) == {"u": -2}


def test_timestamp_values_stay_seconds_where_pamqp_guesses_milliseconds() -> None:
    """pamqp reads a ``T`` above 2**32 as milliseconds; RabbitMQ reads ``T`` as seconds."""
    seconds = 2**32 + 10
    table = b"\x00\x00\x00\x0b\x01tT" + struct.pack(">Q", seconds)
    _, theirs = pamqp.decode.field_table(table)
    assert theirs["t"].year == 1970
    assert decode_table(table) == {"t": _EPOCH + datetime.timedelta(seconds=seconds)}
    assert decode_table(encode_table({"t": Timestamp(2**64 - 1)})) == {"t": 2**64 - 1}


def test_delivery_tags_are_unsigned_64_bit_where_pamqp_uses_signed() -> None:
    """RabbitMQ's long-long is unsigned; pamqp refuses tags over 2**63 - 1."""
    method = BasicDeliver(delivery_tag=2**64 - 1)
    with pytest.raises(TypeError):
        _to_pamqp(method).marshal()
    (frame,) = FrameParser(0).feed(encode_method_frame(1, method))
    assert isinstance(frame, MethodFrame)
    assert isinstance(frame.method, BasicDeliver)
    assert frame.method.delivery_tag == 2**64 - 1


def test_nul_field_type_is_refused_like_rabbitmq_where_pamqp_reads_void() -> None:
    """pamqp reads the undocumented type ``\\x00`` as void; RabbitMQ has no such type."""
    table = b"\x00\x00\x00\x03\x01n\x00"
    assert pamqp.decode.field_table(table) == (7, {"n": None})
    with pytest.raises(SyntaxErrorAMQP):
        decode_table(table)


def test_empty_string_properties_are_sent_where_pamqp_drops_them() -> None:
    """An empty ``content_type`` is a present property for RabbitMQ (an empty binary)."""
    assert pamqp.commands.Basic.Properties(content_type="").marshal() == b"\x00\x00"
    assert encode_properties({"content_type": ""}) == b"\x80\x00\x00"


def test_table_keys_keep_their_order_where_pamqp_sorts_them() -> None:
    table = {"b": 1, "a": 2}
    assert list(decode_table(encode_table(table))) == ["b", "a"]
    _, theirs = pamqp.decode.field_table(pamqp.encode.field_table(table))  # type: ignore[arg-type]  # pamqp's FieldTable is a narrower alias
    assert list(theirs) == ["a", "b"]


def test_frames_from_pamqp_body_marshalling_reassemble() -> None:
    body = bytes(range(200))
    frames = [pamqp.frame.marshal(pamqp.commands.Basic.Publish(exchange="x", routing_key="k"), 1)]
    frames.append(pamqp.frame.marshal(pamqp.header.ContentHeader(0, len(body)), 1))
    frames += [pamqp.frame.marshal(pamqp.body.ContentBody(body[i:i + 64]), 1)
               for i in range(0, 200, 64)]
    parsed = list(FrameParser(0).feed(b"".join(frames)))
    assert [type(f) for f in parsed] == [MethodFrame, HeaderFrame] + [BodyFrame] * 4
    (command,) = ContentAssembler().feed(parsed)
    assert command.body == body
