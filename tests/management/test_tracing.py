"""The tracing plugin's API (``/api/traces``, ``/api/trace-files``) on embroker's firehose. Its
statuses, errors and JSON shapes are the ``tracing`` differential scenario; here the log files
themselves: a ``text`` trace's records are RabbitMQ 3.10.8's byte for byte once the values
that are per node and per moment are masked (golden/tracing_text.log, recorded from it with
``python -m tests.management.record tracing_text``); a ``json`` trace reads back through
``embroker analyze``'s reader of RabbitMQ's logs; a trace's consumer and firehose come and go
with it."""

from __future__ import annotations

import base64
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from embroker import Broker, Server

from .differential import GOLDEN
from .record import SETTLE_SECONDS, reference_base

REFERENCE = os.environ.get("EMBROKER_REFERENCE_URL")
TEXT_GOLDEN = GOLDEN / "tracing_text.log"
AUTH = "Basic " + base64.b64encode(b"guest:guest").decode()


def call(base: str, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
    request = urllib.request.Request(
        base + path, method=method, data=json.dumps(body).encode() if body is not None else None,
        headers={"authorization": AUTH, "content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


#: What the text trace records: a publish with properties of every kind, one whose properties
#: do not fit on a line, an unroutable one, and a basic.get (a "received" record).
PUBLISHES = [
    {"properties": {"headers": {"h": 1, "s": "x", "f": True, "list": [1, "a"],
                                "table": {"k": "v"}},
                    "content_type": "text/plain", "delivery_mode": 2, "priority": 3},
     "routing_key": "q", "payload": "hello world", "payload_encoding": "string"},
    {"properties": {"message_id": "a-rather-long-message-identifier-0123456789",
                    "correlation_id": "another-long-identifier-abcdefghijklmnop",
                    "app_id": "tracing-test"},
     "routing_key": "q", "payload": "second", "payload_encoding": "string"},
    {"properties": {}, "routing_key": "nowhere", "payload": "lost",
     "payload_encoding": "string"},
]


def traced_text(base: str, settle: float = 0.0) -> str:
    """Run the publishes through a ``text`` trace in a vhost of their own; the log, masked."""
    vhost = f"tracing-text-{uuid.uuid4().hex[:8]}"
    q = urllib.parse.quote
    try:
        assert call(base, "PUT", f"/vhosts/{q(vhost, safe='')}", {})[0] == 201
        assert call(base, "PUT", f"/traces/{q(vhost, safe='')}/{vhost}",
                    {"format": "text", "pattern": "#"})[0] == 201
        assert call(base, "PUT", f"/queues/{q(vhost, safe='')}/q", {})[0] == 201
        for publish in PUBLISHES:
            assert call(base, "POST", f"/exchanges/{q(vhost, safe='')}/amq.default/publish",
                        publish)[0] == 200
        assert call(base, "POST", f"/queues/{q(vhost, safe='')}/q/get",
                    {"count": 1, "ackmode": "ack_requeue_false", "encoding": "auto"})[0] == 200
        time.sleep(settle)  # RabbitMQ's tracer writes when its mailbox is empty
        status, text = call(base, "GET", f"/trace-files/{vhost}.log")
        assert status == 200, text
    finally:
        call(base, "DELETE", f"/traces/{q(vhost, safe='')}/{vhost}")
        call(base, "DELETE", f"/trace-files/{vhost}.log")
        call(base, "DELETE", f"/vhosts/{q(vhost, safe='')}")
    return mask(text.decode("utf-8"), vhost)


def mask(text: str, vhost: str) -> str:
    """The log without what is per node and per moment: times, node and connection names."""
    text = re.sub(r"^\d{4}-\d\d-\d\dT[\d:.]+[+-]\d\d:\d\d: ", "TIME: ", text, flags=re.M)
    text = re.sub(r"^(Node|Connection): +.*$", r"\1: ...", text, flags=re.M)
    return text.replace(vhost, "{vhost}")


@pytest.mark.differential
def test_a_text_trace_is_rabbitmqs_log(served_broker: tuple[Broker, Server]) -> None:
    _broker, server = served_broker
    got = traced_text(server.management_url + "api")
    assert got == TEXT_GOLDEN.read_text(encoding="utf-8")


@pytest.mark.differential
@pytest.mark.skipif(not REFERENCE, reason="needs a reference RabbitMQ (EMBROKER_REFERENCE_URL)")
def test_the_text_golden_file_is_what_rabbitmq_logs() -> None:
    assert REFERENCE is not None
    assert traced_text(reference_base(REFERENCE), 1.0) == TEXT_GOLDEN.read_text(
        encoding="utf-8")


def record_text(url: str) -> None:
    """Record golden/tracing_text.log from the reference (tests.management.record)."""
    TEXT_GOLDEN.write_text(traced_text(reference_base(url), SETTLE_SECONDS / 6),
                           encoding="utf-8")


def test_a_trace_comes_and_goes_with_its_consumer_and_the_vhosts_firehose(
        served_broker: tuple[Broker, Server], tmp_path: Path) -> None:
    broker, server = served_broker
    base = server.management_url + "api"
    channel = broker.connect().channel()
    channel.queue_declare("q")
    assert not broker.vhost().tracing
    assert call(base, "PUT", "/traces/%2F/audit", {"format": "json", "pattern": "#"})[0] == 201
    assert call(base, "PUT", "/traces/%2F/audit", {"format": "json", "pattern": "#"})[0] == 400
    assert broker.vhost().tracing
    (trace,) = json.loads(call(base, "GET", "/traces")[1])
    queue = trace["queue"]["name"]
    assert broker.queues[queue].consumer_count == 1
    assert broker.queues[queue].exclusive
    channel.basic_publish("", "q", b"one", {"headers": {"n": 1}})
    channel.basic_get("q", auto_ack=True)
    # Every record is written when the publish returns: the file is complete at once.
    lines = [json.loads(line) for line in call(
        base, "GET", "/trace-files/audit.log")[1].decode().splitlines()]
    assert [(r["type"], r["queue"], r["routed_queues"]) for r in lines] == [
        ("published", "none", ["q"]), ("received", "q", "none")]
    assert base64.b64decode(lines[0]["payload"]) == b"one"
    assert call(base, "DELETE", "/traces/%2F/audit")[0] == 204
    assert queue not in broker.queues
    assert not broker.vhost().tracing  # its last trace gone, the firehose is off
    channel.basic_publish("", "q", b"two")
    files = json.loads(call(base, "GET", "/trace-files")[1])
    assert files == [{"name": "audit.log", "size": len(call(
        base, "GET", "/trace-files/audit.log")[1])}]
    assert call(base, "GET", "/trace-files/..%2F..%2Fetc%2Fpasswd")[0] == 404
    assert call(base, "PUT", "/traces/%2F/..", {"format": "json", "pattern": "#"})[0] == 400
    assert call(base, "PUT", "/traces/nowhere/t", {"format": "json", "pattern": "#"})[0] == 404


def test_a_json_trace_reads_back_as_rabbitmqs_log_does(served_broker: tuple[Broker, Server],
                                                      tmp_path: Path) -> None:
    """``embroker analyze`` reads RabbitMQ's JSON tracing logs: embroker's read the same."""
    pytest.importorskip("pyarrow")
    from embroker.analytics._inputs import read_json_lines

    broker, server = served_broker
    base = server.management_url + "api"
    channel = broker.connect().channel()
    channel.exchange_declare("events", "topic")
    channel.queue_declare("audit")
    channel.queue_bind("audit", "events", "order.*")
    assert call(base, "PUT", "/traces/%2F/t", {"format": "json", "pattern": "publish.#"})[0] \
        == 201
    channel.basic_publish("events", "order.created", b"{}", {"headers": {"tenant": "a"}})
    log = tmp_path / "t.log"
    log.write_bytes(call(base, "GET", "/trace-files/t.log")[1])
    rows = [row for batch in read_json_lines(log) for row in batch.to_pylist()]
    assert [(r["exchange"], r["routing_key"], r["routed_queues"]) for r in rows] == [
        ("events", "order.created", ["audit"])]


def test_the_traces_stop_with_the_listener_and_a_temporary_directory_goes() -> None:
    broker = Broker()
    with broker.serve(management=True) as server:
        base = server.management_url + "api"
        assert call(base, "PUT", "/traces/%2F/t", {"format": "text", "pattern": "#"})[0] == 201
        assert server.management is not None
        directory = server.management.tracing.directory
        assert (directory / "t.log").is_file()
    assert not directory.exists()
    assert not broker.vhost().tracing
    assert [c for c in broker.connections.values() if c.name == "tracer t"] == []


def test_serve_keeps_the_logs_in_the_directory_it_is_given(tmp_path: Path) -> None:
    from embroker.management._tracing import Tracing

    broker = Broker()
    with broker.serve(management=True) as server:
        assert server.management is not None
        server.management.tracing = Tracing(broker, tmp_path / "logs")
        base = server.management_url + "api"
        assert call(base, "PUT", "/traces/%2F/kept", {"format": "text", "pattern": "#"})[0] \
            == 201
        broker.connect().channel().basic_publish("", "nowhere", b"x")
    assert "Message published" in (tmp_path / "logs" / "kept.log").read_text()


def test_a_text_trace_reads_back_through_analyzes_reader_of_rabbitmqs(
        served_broker: tuple[Broker, Server]) -> None:
    """``embroker analyze`` reads RabbitMQ's text logs too: embroker's text logs read the same,
    headers with their AMQP types."""
    from embroker.analytics import _headers
    from embroker.analytics._tracetext import SEPARATOR, parse_record
    from embroker.fieldtypes import Byte, Long, Timestamp

    broker, server = served_broker
    base = server.management_url + "api"
    channel = broker.connect().channel()
    channel.exchange_declare("events", "topic")
    channel.queue_declare("audit")
    channel.queue_bind("audit", "events", "order.*")
    assert call(base, "PUT", "/traces/%2F/t", {"format": "text", "pattern": "#"})[0] == 201
    headers = {"level": Byte(3), "big": Long(2**40), "at": Timestamp(1_700_000_000),
               "tags": ["a", 1], "nested": {"ok": True}}
    channel.basic_publish("events", "order.created", b"{}", {"headers": headers})
    channel.basic_publish("events", "user.created", b"x" * 300)
    channel.basic_get("audit", auto_ack=True)
    text = call(base, "GET", "/trace-files/t.log")[1].decode()
    rows = [row for i, record in enumerate(text.split(SEPARATOR))
            if (row := parse_record(record, i, "/", f"record {i}")) is not None]
    assert [(r["exchange"], r["routing_key"], r["routed_queues"], r["size"]) for r in rows] == [
        ("events", "order.created", ["audit"], 2), ("events", "user.created", [], 300)]
    assert rows[0]["headers"] == _headers.dumps(headers)
