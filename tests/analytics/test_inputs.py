"""Reading traffic: tracing-plugin lines, plain lines, typed headers, embroker's own trace."""

from __future__ import annotations

import datetime
import decimal
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embroker import Broker, fieldtypes
from embroker.amqp091 import decode_table, encode_table
from embroker.analytics import TrafficError, dump_headers, export_trace, load_headers
from embroker.analytics._capture import firehose_row
from embroker.analytics._inputs import parse_line, read_json_lines

pytest.importorskip("pyarrow", reason="pyarrow is not installed (the spark extra)")

_TRACING_LINE = {
    "channel": 1, "connection": "127.0.0.1:1 -> 127.0.0.1:5672", "exchange": "events",
    "node": "rabbit@localhost", "payload": "aGVsbG8=", "queue": "none",
    "properties": {"headers": {"CC": ["b.c"], "v": "undefined", "raw": "Not UTF-8, base64 is: /wA=",
                               "nested": {"a": [1, "undefined"]}}},
    "routed_queues": ["q1"], "routing_keys": ["a.b", "b.c", "bcc.key"],
    "timestamp": "2026-11-23T09:40:36.960+00:00", "type": "published", "user": "guest", "vhost": "v",
}


def test_a_tracing_plugin_line_becomes_a_message_with_every_routing_key() -> None:
    row = parse_line(_TRACING_LINE, 7, "/", "log:7")
    assert row is not None
    assert row["line"] == 7
    assert (row["vhost"], row["exchange"], row["routing_key"]) == ("v", "events", "a.b")
    assert row["routing_keys"] == ["a.b", "b.c", "bcc.key"]  # BCC kept in routing_keys
    assert load_headers(row["headers"]) == {"CC": ["b.c"], "v": None, "raw": b"\xff\x00",
                                            "nested": {"a": [1, None]}}
    assert row["size"] == 5
    assert row["published_at"] == datetime.datetime(2026, 11, 23, 9, 40, 36, 960000,
                                                    tzinfo=datetime.timezone.utc)
    assert row["routed_queues"] == ["q1"]


def test_a_received_line_is_a_delivery_not_a_message() -> None:
    assert parse_line({**_TRACING_LINE, "type": "received", "routed_queues": "none"}, 1, "/", "x") is None


def test_a_plain_line_adds_cc_and_bcc_keys_and_drops_bcc_as_a_publish_does() -> None:
    row = parse_line({"exchange": "x", "routing_key": "k", "headers": {"CC": ["c"], "BCC": ["b"],
                                                                       "n": 1}}, 3, "/v", "f:3")
    assert row is not None
    assert row["routing_keys"] == ["k", "c", "b"]
    assert json.loads(row["headers"]) == {"CC": ["c"], "n": 1}
    assert row["vhost"] == "/v"
    assert row["routed_queues"] is None


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "traffic.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_bad_json_line_is_named_by_its_number(tmp_path: Path) -> None:
    path = _write(tmp_path, ['{"exchange": "x", "routing_key": "k"}', "", '{"exchange": "x",'])
    with pytest.raises(TrafficError, match=r"traffic.jsonl:3: not JSON"):
        list(read_json_lines(path))


def test_a_line_that_is_no_message_says_what_was_expected(tmp_path: Path) -> None:
    path = _write(tmp_path, ['{"routing_key": "k"}'])
    with pytest.raises(TrafficError, match=r":1: no 'exchange' \(expected a rabbitmq_tracing"):
        list(read_json_lines(path))
    path = _write(tmp_path, ['{"exchange": "x", "routing_key": 5}'])
    with pytest.raises(TrafficError, match=r":1: 'routing_key' must be a string"):
        list(read_json_lines(path))


def test_a_missing_traffic_file_is_clear(tmp_path: Path) -> None:
    with pytest.raises(TrafficError, match="no such traffic file"):
        list(read_json_lines(tmp_path / "nope.log"))


def test_lines_are_numbered_as_in_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, [json.dumps(_TRACING_LINE), json.dumps({**_TRACING_LINE, "type": "received"}),
                             "", json.dumps(_TRACING_LINE)])
    rows = [r for b in read_json_lines(path) for r in b.to_pylist()]
    assert [r["line"] for r in rows] == [1, 4]


_scalars = (st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
            | st.integers(-(2**63), 2**63 - 1).map(fieldtypes.Long)
            | st.integers(-(2**15), 2**15 - 1).map(fieldtypes.Short)
            | st.integers(-128, 127).map(fieldtypes.Byte)
            | st.integers(0, 2**32 - 1).map(fieldtypes.UnsignedInt)
            | st.floats(width=32, allow_nan=False).map(fieldtypes.Float32)
            | st.floats(allow_nan=False) | st.text(max_size=8) | st.binary(max_size=8)
            | st.decimals(places=2, allow_nan=False, allow_infinity=False,
                          min_value=-(10**6), max_value=10**6)
            | st.datetimes(min_value=datetime.datetime(1970, 1, 2), max_value=datetime.datetime(9999, 1, 1))
            .map(lambda d: d.replace(microsecond=0, tzinfo=datetime.timezone.utc)))
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.sampled_from(["a", "$bytes", "$decimal", "x"]), inner,
                                         max_size=2), max_leaves=6)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _values, max_size=4))
def test_typed_json_keeps_every_amqp_type(headers: dict[str, Any]) -> None:
    """dump_headers/load_headers round-trip what embroker's codec decodes from the wire, with
    the types (integer widths, 32-bit floats) and tag-like table keys."""
    wire = decode_table(encode_table(headers))
    assert repr(load_headers(dump_headers(wire))) == repr(wire)


def test_typed_json_spells_the_types_json_lacks() -> None:
    text = dump_headers({"d": decimal.Decimal("1.25"), "raw": b"\x00",
                         "ts": datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc),
                         "n": 3, "f": 3.0, "s": "3", "l": fieldtypes.Long(3),
                         "b": fieldtypes.Byte(3), "f32": fieldtypes.Float32(1.5)})
    assert text is not None
    assert json.loads(text) == {"d": {"$decimal": "1.25"}, "raw": {"$bytes": "AA=="},
                                "ts": {"$timestamp": 1704067200}, "n": 3, "f": 3.0, "s": "3",
                                "l": {"$long": 3}, "b": {"$byte": 3}, "f32": {"$float32": 1.5}}
    assert '"f":3.0' in text


def test_embroker_trace_exports_as_traffic(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    broker = Broker()
    ch = broker.connect().channel()
    ch.exchange_declare("x", "topic")
    ch.queue_declare("q")
    ch.queue_bind("q", "x", "a.*")
    ch.basic_publish("x", "a.b", b"12345", properties={"headers": {"BCC": ["a.c"], "n": 3}})
    ch.basic_publish("x", "zzz", b"", mandatory=True)
    count = export_trace(broker.trace, tmp_path / "t.parquet")
    rows = pq.read_table(tmp_path / "t.parquet").to_pylist()
    assert count == 2
    assert [(r["exchange"], r["routing_keys"], r["routed_queues"], r["size"], r["mandatory"])
            for r in rows] == [("x", ["a.b", "a.c"], ["q"], 5, False), ("x", ["zzz"], [], 0, True)]
    assert load_headers(rows[0]["headers"]) == {"n": 3}  # BCC removed, as routed


class _Deliver:
    routing_key = "publish.events"


class _Command:
    method = _Deliver()
    body = b"hello"
    properties: ClassVar[dict[str, Any]] = {"headers": {
        "exchange_name": "events", "routing_keys": ["a.b", "cc"], "routed_queues": ["q1", "q2"],
        "vhost": "v", "connection": "c", "channel": 1, "user": "guest", "node": "rabbit@n",
        "properties": {"headers": {"n": 300, "d": decimal.Decimal("1.5"), "raw": b"\xff"},
                       "message_id": "m1"}}}


def test_a_firehose_message_becomes_a_row_with_typed_headers() -> None:
    now = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    row = firehose_row(_Command(), 1, now)
    assert row is not None
    assert (row["exchange"], row["routing_keys"], row["routed_queues"], row["size"]) == (
        "events", ["a.b", "cc"], ["q1", "q2"], 5)
    assert load_headers(row["headers"]) == {"n": 300, "d": decimal.Decimal("1.5"), "raw": b"\xff"}
    assert json.loads(row["properties"]) == {"message_id": "m1"}
    assert row["published_at"] == now


def test_erlang_terms_read_as_the_tracing_plugin_prints_them() -> None:
    from embroker.analytics._tracetext import Atom, Binary, parse_term

    value = parse_term('[{<<"a">>,byte,3},\n  {<<255,0>>,decimal,{2,1250}}, <<"x\\"y\\\\z"/utf8>>, '
                       "<<>>, 1.0e3, -5, 'quoted atom', true]")
    assert value == [(b"a", "byte", 3), (b"\xff\x00", "decimal", (2, 1250)), b'x"y\\z',
                     b"", 1000.0, -5, "quoted atom", "true"]
    assert isinstance(value[0][0], Binary)
    assert isinstance(value[0][1], Atom)
    assert parse_term('<<"é"/utf8>>') == "é".encode()
    assert parse_term('<<"\\351">>') == b"\xe9"  # latin-1, as Erlang prints a non-UTF-8 binary


def test_a_bad_erlang_term_is_refused() -> None:
    from embroker.analytics._tracetext import ErlangTermError, parse_term

    for text in ("[1,2", "{<<\"a\">>,}", "<<1.5>>", "[1] x"):
        with pytest.raises(ErlangTermError):
            parse_term(text)


_TEXT_RECORD = """2026-11-24T09:03:07.057+00:00: Message published

Node:         rabbit@localhost
Connection:   127.0.0.1:57150 -> 127.0.0.1:5672
Virtual host: v
User:         guest
Channel:      1
Exchange:     events
Routing keys: [<<"billing.eu.invoice">>,
               <<"cc.key">>]
Routed queues: [<<"audit-critical">>,<<"eu">>]
Properties:   [{<<"message_id">>,longstr,<<"m3">>},
               {<<"headers">>,table,
                [{<<"critical">>,bool,true},
                 {<<"level">>,byte,3},
                 {<<"n">>,signedint,300},
                 {<<"big">>,long,1099511627776},
                 {<<"f">>,float,1.5},
                 {<<"d">>,double,2.5},
                 {<<"amount">>,decimal,{2,1250}},
                 {<<"raw">>,binary,<<255,0>>},
                 {<<"ts">>,timestamp,1704164645},
                 {<<"v">>,void,undefined},
                 {<<"nested">>,table,[{<<"a">>,array,[{byte,1},{longstr,<<"x">>}]}]}]}]
Payload:
body of billing.eu.invoice
""".replace("Payload:", "Payload: ")  # as the plugin writes it


def test_a_text_format_record_becomes_a_message_with_typed_headers() -> None:
    from embroker.analytics._tracetext import parse_record

    row = parse_record(_TEXT_RECORD, 4, "/", "log:4")
    assert row is not None
    assert (row["line"], row["vhost"], row["exchange"]) == (4, "v", "events")
    assert row["routing_keys"] == ["billing.eu.invoice", "cc.key"]
    assert row["routed_queues"] == ["audit-critical", "eu"]
    assert row["size"] == len(b"body of billing.eu.invoice")
    assert row["published_at"] == datetime.datetime(2026, 11, 24, 9, 3, 7, 57000,
                                                    tzinfo=datetime.timezone.utc)
    assert repr(load_headers(row["headers"])) == repr({
        "critical": True, "level": fieldtypes.Byte(3), "n": 300,
        "big": fieldtypes.Long(1099511627776), "f": fieldtypes.Float32(1.5), "d": 2.5,
        "amount": decimal.Decimal("12.50"), "raw": b"\xff\x00",
        "ts": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc), "v": None,
        "nested": {"a": [fieldtypes.Byte(1), "x"]}})


def test_a_received_record_is_a_delivery_and_a_stray_one_is_named() -> None:
    from embroker.analytics._tracetext import parse_record

    received = _TEXT_RECORD.replace("Message published", "Message received")
    assert parse_record(received, 1, "/", "x") is None
    assert parse_record("", 1, "/", "x") is None
    with pytest.raises(TrafficError, match=r"^log:9: not a record of the tracing plugin's text format"):
        parse_record("hello\nworld\n", 9, "/", "log:9")
    with pytest.raises(TrafficError, match=r"^log:2: no 'Routing keys' field"):
        parse_record(_TEXT_RECORD.replace("Routing keys", "Routing kyes"), 2, "/", "log:2")


def test_the_text_format_keeps_the_header_types_the_firehose_capture_has() -> None:
    """The text log and the firehose capture of the same recording (tests/analytics/data):
    every message's exchange, routing keys, recorded queues and typed headers are equal."""
    import pyarrow.parquet as pq

    from embroker.analytics._tracetext import SEPARATOR, parse_record

    from .conftest import DATA

    records = (DATA / "tracing-text.log").read_text(encoding="utf-8").split(SEPARATOR)
    rows = [r for n, text in enumerate(records) if (r := parse_record(text, n, "/", str(n)))]
    captured = pq.read_table(DATA / "capture.parquet").to_pylist()
    assert len(rows) == len(captured) == 35
    for row, firehose in zip(rows, captured, strict=True):
        for field in ("vhost", "exchange", "routing_keys", "routed_queues", "headers"):
            assert row[field] == firehose[field], (field, row, firehose)
