"""AMQP 1.0 receivers on a stream: the ``rabbitmq:stream-offset-spec`` source filter becomes
the consumer's ``x-stream-offset``, as RabbitMQ 3.10's 1.0 plugin maps it
(``rabbit_amqp1_0_outgoing_link:source_filters_to_consumer_args/1``, v3.10.8), and the reader
sees the same log as 0-9-1 consumers."""

from __future__ import annotations

from typing import Any

import pytest

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
from embroker.amqp10_common._types import Timestamp
from tests.amqp10.helpers import Client

SPEC = Symbol("rabbitmq:stream-offset-spec")


@pytest.fixture
def broker() -> Broker:
    b = Broker(clock=ManualClock())
    ch = b.connect().channel()
    ch.queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
    for i in range(4):
        ch.basic_publish("", "s", b"m%d" % i)
    return b


def receive(broker: Broker, spec: Any, credit: int = 10,
            source: Source | None = None) -> tuple[Attach, list[tuple[bytes, Any]]]:
    """Attach a receiver to stream ``s`` with the filter ``spec`` (none when ``None``), give it
    credit; returns the attach reply and (body, x-stream-offset annotation) of each transfer."""
    client = Client.opened(broker)
    if source is None:
        source = Source(address="/queues/s", filter={SPEC: spec} if spec is not None else None)
    (attach, *_rest) = client.attach_receiver("/queues/s", source=source)
    assert isinstance(attach, Attach), attach
    client.send_frame(Flow(next_incoming_id=UInt(0), incoming_window=UInt(100),
                           next_outgoing_id=UInt(0), outgoing_window=UInt(100),
                           handle=UInt(0), delivery_count=UInt(0), link_credit=UInt(credit)))
    got = []
    for frame in client.received():
        if isinstance(frame, Frame) and isinstance(frame.performative, Transfer):
            message = parse_message(frame.payload)
            body = message.body[3:]  # data or amqp-value section header; bodies are short
            got.append((body, message.message_annotations.get(Symbol("x-stream-offset"))))
    client.send_frame(Disposition(role=True, first=UInt(0), last=UInt(max(len(got) - 1, 0)),
                                  settled=True, state=None))
    return attach, got


@pytest.mark.parametrize(("spec", "offsets"), [
    ("first", [0, 1, 2, 3]), ("last", [3]), ("next", []), (None, []), (2, [2, 3]),
    ("1D", [0, 1, 2, 3]),
])
def test_the_offset_spec_filter_says_where_the_receiver_starts(
        broker: Broker, spec: Any, offsets: list[int]) -> None:
    attach, got = receive(broker, spec)
    assert [offset for _body, offset in got] == offsets
    assert all(body.endswith(b"m%d" % o) for body, o in got)
    if spec is not None:
        assert attach.source is not None
        assert attach.source.filter == {SPEC: spec}, "the applied filter is echoed"


def test_a_timestamp_spec_reads_from_that_second(broker: Broker) -> None:
    clock = broker.manual_clock
    clock.advance(10)
    broker.connect().channel().basic_publish("", "s", b"later")
    _attach, got = receive(broker, Timestamp(int((clock.time() - 1) * 1000)))
    assert [offset for _body, offset in got] == [4]


def test_credit_limits_what_a_stream_receiver_gets(broker: Broker) -> None:
    _attach, got = receive(broker, "first", credit=2)
    assert [offset for _body, offset in got] == [0, 1]
    assert broker.queues["s"].consumer_count == 1
    broker._check()


def _proton_read(amqp_url: str, host_port: str, spec: Any, n: int) -> list[tuple[int, str, bytes]]:
    """Publish m0..m2 to a new stream over 0-9-1, read ``n`` with proton through the
    ``rabbitmq:stream-offset-spec`` filter ``spec``; (x-stream-offset annotation, its AMQP
    type name, body) of each."""
    import uuid

    import pika
    from proton import symbol
    from proton.handlers import MessagingHandler
    from proton.reactor import Container, Filter

    name = "embroker-test-s10-" + uuid.uuid4().hex[:8]
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    ch = conn.channel()
    ch.confirm_delivery()
    ch.queue_declare(name, durable=True, arguments={"x-queue-type": "stream"})
    for i in range(3):
        ch.basic_publish("", name, b"m%d" % i)
    got: list[tuple[int, str, bytes]] = []

    class Reader(MessagingHandler):
        def __init__(self) -> None:
            super().__init__(prefetch=10)

        def on_start(self, event: Any) -> None:
            connection = event.container.connect(host_port, user="guest", password="guest")
            event.container.create_receiver(connection, f"/amq/queue/{name}", options=Filter(
                {symbol("rabbitmq:stream-offset-spec"): spec}))

        def on_message(self, event: Any) -> None:
            offset = event.message.annotations.get("x-stream-offset")
            got.append((int(offset), type(offset).__name__, bytes(event.message.body)))
            if len(got) == n:
                event.connection.close()

    try:
        Container(Reader()).run()
    finally:
        ch.queue_delete(name)
        conn.close()
    return got


PROTON_CASES = [("first", 3, [(0, "ulong", b"m0"), (1, "ulong", b"m1"), (2, "ulong", b"m2")]),
                ("last", 1, [(2, "ulong", b"m2")]),
                (1, 2, [(1, "ulong", b"m1"), (2, "ulong", b"m2")])]


@pytest.mark.parametrize(("spec", "n", "expected"), PROTON_CASES)
def test_proton_reads_a_stream_from_embroker(spec: Any, n: int, expected: list[Any]) -> None:
    broker = Broker()
    with broker.serve() as server:
        assert _proton_read(server.url, f"127.0.0.1:{server.port}", spec, n) == expected
        assert not server.errors


@pytest.mark.skipif(not __import__("os").environ.get("EMBROKER_REFERENCE_URL"),
                    reason="EMBROKER_REFERENCE_URL is not set")
@pytest.mark.parametrize(("spec", "n", "expected"), PROTON_CASES)
def test_proton_reads_a_stream_from_the_reference(spec: Any, n: int,
                                                   expected: list[Any]) -> None:
    """RabbitMQ 3.10.8's 1.0 plugin: the same reads, the offset annotation a ulong."""
    import os

    url = os.environ["EMBROKER_REFERENCE_URL"]
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    host_port = f"{parts.hostname or '127.0.0.1'}:{parts.port or 5672}"
    assert _proton_read(url, host_port, spec, n) == expected


def test_rabbitmq_4_filters_are_known_by_their_descriptor() -> None:
    """RabbitMQ 4.1.4 (rabbit_amqp_session:parse_filters/2): described values under any key;
    rabbitmq:stream-filter and rabbitmq:stream-match-unfiltered choose chunks by filter value
    (x-stream-filter-value), as 0-9-1 consumers' arguments do."""
    from embroker.amqp10_common._types import Described

    broker = Broker(as_rabbitmq="4.1.x", clock=ManualClock())
    ch = broker.connect().channel()
    ch.queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
    for body, value in ((b"eu", "eu"), (b"us", "us"), (b"none", None)):
        headers = {"x-stream-filter-value": value} if value else {}
        ch.basic_publish("", "s", body, properties={"headers": headers})
    source_filter = {
        Symbol("offset"): Described(SPEC, "first"),
        Symbol("regions"): Described(Symbol("rabbitmq:stream-filter"), ["eu"]),
        Symbol("also"): Described(Symbol("rabbitmq:stream-match-unfiltered"), True),
    }
    attach, got = receive(broker, None, source=Source(address="/queues/s", filter=source_filter))
    assert [offset for _body, offset in got] == [0, 2]
    assert attach.source is not None
    assert attach.source.filter == source_filter
