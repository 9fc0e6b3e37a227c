"""RabbitMQ 4's AMQP 1.0 filter expressions on stream receivers, over the wire: the property
filters of 4.1 (``rabbit_amqp_filter_prop``, 4.1.4's ``rabbit_amqp_filtex``), the SQL filter
of 4.2 (``rabbit_amqp_filter_sql``), how ``rabbit_amqp_session:parse_filters/2`` (v4.2.9)
combines them with each other and with the stream filters, and what it echoes. Each test names
the function whose rule it pins."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embroker import Broker, ManualClock
from embroker.amqp10 import (
    Attach,
    Disposition,
    Flow,
    Frame,
    Source,
    Symbol,
    Transfer,
    UInt,
    parse_message,
)
from embroker.amqp10_common._definitions import Properties
from embroker.amqp10_common._message import Kept
from embroker.amqp10_common._types import Described, Timestamp, ULong
from tests.amqp10.helpers import Client

PROPS = Symbol("amqp:properties-filter")
APP = Symbol("amqp:application-properties-filter")
SQL = Symbol("amqp:sql-filter")
OFFSET = Described(Symbol("rabbitmq:stream-offset-spec"), "first")


def make_broker(version: str | None = "4.2.x") -> Broker:
    """A stream ``s`` with six messages published over 0-9-1: subjects come from 1.0
    publishes below, so these carry headers (application properties) and 0-9-1 properties."""
    broker = Broker(as_rabbitmq=version, clock=ManualClock()) if version else Broker(
        clock=ManualClock())
    ch = broker.connect().channel()
    ch.queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
    for i in range(6):
        ch.basic_publish("", "s", b"m%d" % i, properties={
            "headers": {"n": i, "colour": "red" if i % 2 else "blue",
                        **({"x-stream-filter-value": "eu"} if i < 3 else {})},
            "message_id": f"id-{i}", "app_id": f"group-{i % 3}",
            "priority": i, "reply_to": "&odd" if i == 5 else "r"})
    return broker


def receive(broker: Broker, source_filter: dict[Any, Any], address: str = "/queues/s",
            credit: int = 20) -> tuple[Attach, list[bytes]]:
    """Attach a receiver with ``source_filter`` (the offset spec first added), give it credit;
    the attach reply and the bodies received."""
    client = Client.opened(broker)
    filters = {Symbol("offset"): OFFSET, **source_filter}
    (attach, *_rest) = client.attach_receiver(address, source=Source(address=address,
                                                                      filter=filters))
    assert isinstance(attach, Attach), attach
    client.send_frame(Flow(next_incoming_id=UInt(0), incoming_window=UInt(100),
                           next_outgoing_id=UInt(0), outgoing_window=UInt(100),
                           handle=UInt(0), delivery_count=UInt(0), link_credit=UInt(credit)))
    got = []
    for frame in client.received():
        if isinstance(frame, Frame) and isinstance(frame.performative, Transfer):
            got.append(parse_message(frame.payload).data)
    if got:
        client.send_frame(Disposition(role=True, first=UInt(0), last=UInt(len(got) - 1),
                                      settled=True, state=None))
    broker._check()
    return attach, got


def echoed(attach: Attach) -> set[Any]:
    assert attach.source is not None
    return set(attach.source.filter or {}) - {Symbol("offset")}


def bodies(*numbers: int) -> list[bytes]:
    return [b"m%d" % i for i in numbers]


# -- property filters (RabbitMQ 4.1+) ------------------------------------------------------------

@pytest.mark.parametrize(("fields", "expected"), [
    ({"colour": "red"}, [1, 3, 5]),
    ({"colour": "red", "n": 3}, [3]),
    ({"n": 3.0}, [3]),                # numbers equal as floats (match_simple_type/2, ==)
    ({"colour": "&p:bl"}, [0, 2, 4]),  # prefix
    ({"colour": "&s:ed"}, [1, 3, 5]),  # suffix
    ({"colour": None}, [0, 1, 2, 3, 4, 5]),  # null matches any value of a present key
    ({"missing": None}, []),          # but the key must be there
    ({"n": "3"}, []),                 # a string is not a number
    ({"n": True}, []),                # nor a boolean
])
def test_application_properties_filter(fields: dict[str, Any], expected: list[int]) -> None:
    """rabbit_amqp_filter_prop:filter/2 (application_properties) and match_simple_type/2."""
    attach, got = receive(make_broker(), {Symbol("f"): Described(APP, fields)})
    assert got == bodies(*expected)
    assert echoed(attach) == {Symbol("f")}, "an applied filter is echoed"


@pytest.mark.parametrize(("fields", "expected"), [
    ({Symbol("message-id"): "id-2"}, [2]),
    ({Symbol("group-id"): "&p:group-1"}, [1, 4]),
    ({Symbol("message-id"): "&s:-4", Symbol("group-id"): "group-1"}, [4]),
    ({Symbol("reply-to"): "&&odd"}, [5]),   # && stands for a leading &
    ({Symbol("subject"): "&p:"}, []),       # a missing property matches nothing
])
def test_properties_filter(fields: dict[Any, Any], expected: list[int]) -> None:
    """rabbit_amqp_filter_prop:filter/2 (properties): every field must match."""
    attach, got = receive(make_broker(), {Symbol("p"): Described(PROPS, fields)})
    assert got == bodies(*expected)
    assert echoed(attach) == {Symbol("p")}


@pytest.mark.parametrize("value", [
    Described(PROPS, {}),                                    # empty
    Described(PROPS, {Symbol(f"k{i}"): "v" for i in range(17)}),  # over 16 fields
    Described(PROPS, {Symbol("subject"): Symbol("a")}),      # subject is a string, not a symbol
    Described(PROPS, {Symbol("content-type"): "text/plain"}),  # content-type is a symbol
    Described(PROPS, {Symbol("message-id"): 5}),             # a long is not a message-id
    Described(PROPS, {Symbol("durable"): True}),             # not a property
    Described(PROPS, {"subject": "a"}),                      # keys are symbols
    Described(APP, {Symbol("colour"): "red"}),               # keys are strings
    Described(APP, {"colour": "&x:red"}),                    # a lone & starts no modifier
    Described(Symbol("amqp:other-filter"), {"colour": "red"}),
    "colour = 'red'",
])
def test_a_filter_that_does_not_parse_is_ignored_and_not_echoed(value: Any) -> None:
    """rabbit_amqp_filter_prop:parse/1 returns error; parse_filters/2 keeps the accumulator:
    the attach succeeds, the filter is left out of the reply, every message is delivered."""
    attach, got = receive(make_broker(), {Symbol("f"): value})
    assert got == bodies(0, 1, 2, 3, 4, 5)
    assert echoed(attach) == set()


def test_descriptor_codes_are_accepted() -> None:
    """amqp10_filter.hrl: 0x173 (properties), 0x174 (application properties), 0x120 (SQL)."""
    _, got = receive(make_broker(), {Symbol("f"): Described(ULong(0x174), {"n": 1})})
    assert got == bodies(1)
    _, got = receive(make_broker(), {Symbol("sql-filter"): Described(ULong(0x120), "n = 2")})
    assert got == bodies(2)


def test_one_filter_per_section_the_last_one_wins() -> None:
    """parse_filters/2 folds from the right (lists:foldr): a second filter of a section already
    taken is ignored, so the last in the filter set applies; properties and application
    properties filters combine (a message must pass both)."""
    attach, got = receive(make_broker(), {
        Symbol("a1"): Described(APP, {"colour": "red"}),
        Symbol("a2"): Described(APP, {"colour": "blue"}),
        Symbol("p"): Described(PROPS, {Symbol("group-id"): "group-1"}),
    })
    assert got == bodies(4)
    assert echoed(attach) == {Symbol("a2"), Symbol("p")}


def test_expressions_combine_with_the_bloom_filter() -> None:
    """rabbit_stream_queue: the stream filter chooses chunks (x-stream-filter-value), then
    entry_to_msg/6 evaluates the expression on each message of them."""
    broker = make_broker()
    attach, got = receive(broker, {
        Symbol("bloom"): Described(Symbol("rabbitmq:stream-filter"), ["eu"]),
        Symbol("f"): Described(APP, {"colour": "red"}),
    })
    # each 0-9-1 publish is a chunk of its own: the eu chunks are m0..m2, m1 the red one
    assert got == bodies(1)
    assert echoed(attach) == {Symbol("bloom"), Symbol("f")}


def test_filtered_out_messages_take_no_credit() -> None:
    """The reader skips a message the filter refuses (entry_to_msg/6 returns none): credit
    counts delivered messages only."""
    _, got = receive(make_broker(), {Symbol("f"): Described(APP, {"colour": "red"})}, credit=2)
    assert got == bodies(1, 3)


def _publish_10(broker: Broker, properties: Properties,
                app: dict[str, Any] | None = None) -> None:
    """A 1.0 publish to ``s`` through a connection: the properties travel as sent."""
    client = Client.opened(broker, peer="pub")
    client.attach_sender("/queues/s")
    out = bytearray()
    properties.encode_into(out)
    if app:
        from embroker.amqp10_common._types import encode_value
        out += b"\x00\x53\x74"
        encode_value(app, out)
    out += b"\x00\x53\x75\xa0\x02hi"
    client.send_frame(Transfer(handle=UInt(0), delivery_id=UInt(0), delivery_tag=b"t",
                               settled=True, message_format=UInt(0)), payload=bytes(out))
    client.received()


def test_properties_of_every_type_compare_as_rabbitmq_does() -> None:
    """parse_props/2 types: a uuid message-id equals the same uuid, a ulong the same number,
    absolute-expiry-time a timestamp, content-type a symbol; a string message-id takes the
    modifiers."""
    broker = make_broker()
    ident = uuid.UUID(int=7)
    _publish_10(broker, Properties(message_id=ident, subject="order.created",
                                   content_type=Symbol("application/json"),
                                   absolute_expiry_time=Timestamp(5000),
                                   group_sequence=UInt(9), user_id=b"guest"))
    assert isinstance(broker.queues["s"].messages[-1].native, Kept)
    for fields in ({Symbol("message-id"): ident}, {Symbol("subject"): "&s:.created"},
                   {Symbol("content-type"): Symbol("application/json")},
                   {Symbol("absolute-expiry-time"): Timestamp(5000)},
                   {Symbol("group-sequence"): UInt(9)}, {Symbol("user-id"): b"guest"}):
        _, got = receive(broker, {Symbol("p"): Described(PROPS, fields)})
        assert got == [b"hi"], fields


# -- SQL filter (RabbitMQ 4.2+) ------------------------------------------------------------------

@pytest.mark.parametrize(("sql", "expected"), [
    ("colour = 'red' AND n > 1", [3, 5]),
    ("n IN (1, 2, 9)", [1, 2]),
    ("NOT n IN (1, 2)", [0, 3, 4, 5]),
    ("p.group_id LIKE 'group-_'", [0, 1, 2, 3, 4, 5]),
    ("properties.message_id LIKE '%-3'", [3]),
    ("header.priority >= 4", [4, 5]),
    ("h.priority + n = 6", [3]),
    ("n % 2 = 1 OR missing = 1", [1, 3, 5]),   # unknown OR true is true
    ("NOT missing = 1", []),                  # NOT unknown is unknown
    ("missing IS NULL AND [colour] = 'blue'", [0, 2, 4]),
    ("n / 2 = 1.5", [3]),                     # / divides as floats
    ("colour = 0x726564", [1, 3, 5]),         # a binary equals the same bytes
    ("n", []),                                # a number is not true
    ("UTC() > 0 AND n = 0", [0]),
])
def test_sql_filter(sql: str, expected: list[int]) -> None:
    """rabbit_amqp_filter_sql:eval/2: a message passes when the expression is true."""
    attach, got = receive(make_broker(), {Symbol("sql-filter"): Described(SQL, sql)})
    assert got == bodies(*expected)
    assert echoed(attach) == {Symbol("sql-filter")}


@pytest.mark.parametrize("value", [
    Described(SQL, "colour = 'red' and n > 1"),    # keywords are capitals
    Described(SQL, "n = "),
    Described(SQL, "x" * 4097),
    Described(SQL, " OR ".join(["n = 1"] * 67)),   # 201 tokens
    Described(SQL, "p.durable = TRUE"),
    Described(APP, {"colour": "red"}),             # under the key sql-filter: SQL only
    Described(Symbol("amqp:other"), "n = 1"),
])
def test_a_bad_sql_filter_is_ignored(value: Any) -> None:
    """rabbit_amqp_filter_sql:parse/1 returns error (logged in RabbitMQ): parse_filters/2
    leaves the filter out and the attach succeeds."""
    attach, got = receive(make_broker(), {Symbol("sql-filter"): value})
    assert got == bodies(0, 1, 2, 3, 4, 5)
    assert echoed(attach) == set()


def test_sql_under_another_key_is_not_sql() -> None:
    """Only the key sql-filter is read as SQL; under another it is a property filter that
    does not parse."""
    attach, got = receive(make_broker(), {Symbol("mine"): Described(SQL, "n = 1")})
    assert len(got) == 6
    assert echoed(attach) == set()


def test_sql_and_property_filters_exclude_each_other() -> None:
    """parse_filters/2: SQL and property filter expressions are mutually exclusive; folding
    from the right, the last one asked for applies."""
    attach, got = receive(make_broker(), {
        Symbol("f"): Described(APP, {"colour": "red"}),
        Symbol("sql-filter"): Described(SQL, "n < 2"),
    })
    assert got == bodies(0, 1)
    assert echoed(attach) == {Symbol("sql-filter")}
    attach, got = receive(make_broker(), {
        Symbol("sql-filter"): Described(SQL, "n < 2"),
        Symbol("f"): Described(APP, {"colour": "red"}),
    })
    assert got == bodies(1, 3, 5)
    assert echoed(attach) == {Symbol("f")}


# -- profiles ------------------------------------------------------------------------------------

def test_rabbitmq_4_1_has_property_filters_but_no_sql() -> None:
    """4.1.4's parse_filters/2 has no sql-filter clause: the SQL filter falls to
    rabbit_amqp_filtex:validate/1, which does not take it."""
    broker = make_broker("4.1.x")
    attach, got = receive(broker, {Symbol("sql-filter"): Described(SQL, "n = 1")})
    assert len(got) == 6
    assert echoed(attach) == set()
    attach, got = receive(broker, {Symbol("f"): Described(APP, {"n": 1})})
    assert got == bodies(1)
    assert echoed(attach) == {Symbol("f")}


@pytest.mark.parametrize("version", [None, "4.0.x"])
def test_before_rabbitmq_4_1_no_expression_applies(version: str | None) -> None:
    """RabbitMQ 3.10's 1.0 plugin and 4.0 know none of these filters: not applied, not
    echoed."""
    broker = make_broker(version)
    for key, value in ((Symbol("f"), Described(APP, {"n": 1})),
                       (Symbol("sql-filter"), Described(SQL, "n = 1"))):
        client = Client.opened(broker)
        (attach, *_rest) = client.attach_receiver("/queues/s", source=Source(
            address="/queues/s", filter={key: value}))
        assert isinstance(attach, Attach)
        assert attach.source is not None
        assert not attach.source.filter


def test_on_a_classic_queue_the_filter_is_echoed_but_not_applied() -> None:
    """RabbitMQ 4.2.9: parse_filters/2 runs for every queue type and echoes the filter, but
    only rabbit_stream_queue reads the consumer's filter: a classic queue delivers all."""
    broker = Broker(as_rabbitmq="4.2.x", clock=ManualClock())
    ch = broker.connect().channel()
    ch.queue_declare("q")
    for i in range(3):
        ch.basic_publish("", "q", b"m%d" % i, properties={"headers": {"n": i}})
    client = Client.opened(broker)
    (attach, *_rest) = client.attach_receiver("/queues/q", source=Source(
        address="/queues/q", filter={Symbol("f"): Described(APP, {"n": 1})}))
    assert isinstance(attach, Attach)
    assert attach.source is not None
    assert set(attach.source.filter or {}) == {Symbol("f")}
    client.send_frame(Flow(next_incoming_id=UInt(0), incoming_window=UInt(100),
                           next_outgoing_id=UInt(0), outgoing_window=UInt(100),
                           handle=UInt(0), delivery_count=UInt(0), link_credit=UInt(10)))
    transfers = [f for f in client.received()
                 if isinstance(f, Frame) and isinstance(f.performative, Transfer)]
    assert len(transfers) == 3


def test_a_stream_delivers_a_1_0_message_as_published() -> None:
    """RabbitMQ 4 keeps an AMQP 1.0 message whole in a stream (mc_amqp, read back by
    rabbit_stream_queue:entry_to_msg/6): a 1.0 receiver gets its subject and the other
    properties 0-9-1 has no room for, with x-stream-offset added as a message annotation."""
    broker = make_broker()
    _publish_10(broker, Properties(subject="order.created", to="/queues/s",
                                   group_sequence=UInt(3)), {"k": "v"})
    client = Client.opened(broker)
    client.attach_receiver("/queues/s", source=Source(address="/queues/s", filter={
        Symbol("offset"): Described(Symbol("rabbitmq:stream-offset-spec"), 6)}))
    client.send_frame(Flow(next_incoming_id=UInt(0), incoming_window=UInt(100),
                           next_outgoing_id=UInt(0), outgoing_window=UInt(100),
                           handle=UInt(0), delivery_count=UInt(0), link_credit=UInt(5)))
    (transfer,) = [f for f in client.received()
                   if isinstance(f, Frame) and isinstance(f.performative, Transfer)]
    message = parse_message(transfer.payload)
    assert message.properties is not None
    assert (message.properties.subject, message.properties.to) == ("order.created", "/queues/s")
    assert message.properties.group_sequence == 3
    assert message.application_properties == {"k": "v"}
    offset = message.message_annotations[Symbol("x-stream-offset")]
    assert (type(offset), offset) == (ULong, 6)


# -- Hypothesis: application-properties filters against a plain reading of the Erlang -----------

_SIMPLE = st.one_of(st.none(), st.booleans(), st.integers(-3, 3),
                    st.floats(-3, 3, allow_nan=False), st.text("&ps:ab", max_size=5))


def _reference(ref: Any, present: bool, value: Any) -> bool | None:
    """match_simple_type/2 after parse_app_props/2, from the Erlang clauses: ``None`` when the
    filter does not parse (a string starting with & and no known modifier)."""
    if isinstance(ref, str) and ref.startswith("&") and not ref.startswith(("&s:", "&p:", "&&")):
        return None
    if not present:
        return False
    if ref is None:
        return True
    raw = value.encode() if isinstance(value, str) else value
    if isinstance(ref, str) and ref.startswith(("&s:", "&p:")):
        if not isinstance(raw, bytes):
            return False
        affix = ref[3:].encode()
        return raw.startswith(affix) if ref.startswith("&p:") else raw.endswith(affix)
    want = ref[1:].encode() if isinstance(ref, str) and ref.startswith("&&") else (
        ref.encode() if isinstance(ref, str) else ref)
    if isinstance(want, bool) or isinstance(raw, bool):
        return isinstance(want, bool) and isinstance(raw, bool) and want == raw
    return want == raw and type(want) is not type(None) and raw is not None


@settings(max_examples=300, deadline=None)
@given(ref=_SIMPLE, present=st.booleans(), value=_SIMPLE)
def test_application_property_matching_agrees_with_the_erlang(ref: Any, present: bool,
                                                              value: Any) -> None:
    from embroker.amqp10._filters import FilterView, parse_property_filter
    from embroker.amqp10._filters import property_filters_match as match

    parsed = parse_property_filter(Described(APP, {"k": ref}))
    expected = _reference(ref, present, value)
    if expected is None:
        assert parsed is None
        return
    assert parsed is not None
    app = {b"k": value.encode() if isinstance(value, str) else value} if present else {}
    assert match([parsed], FilterView(None, app, None)) is expected
