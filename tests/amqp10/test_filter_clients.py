"""Stream filter expressions from real clients against ``Broker(as_rabbitmq="4.2.x")``: proton
with hand-built filter sets, and RabbitMQ's own ``rabbitmq-amqp-python-client`` with its
``StreamFilterOptions`` (message properties, application properties, SQL), the same flows as
that client's ``test_stream_filter_*`` tests. The rules are those of
``rabbit_amqp_session:parse_filters/2`` and ``rabbit_amqp_filter_prop``/``_sql`` (v4.2.9)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from embroker import Broker
from embroker.server import Server


@pytest.fixture
def broker() -> Iterator[Broker]:
    broker = Broker(as_rabbitmq="4.2.x")
    yield broker
    broker._check()


def _declare_stream(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})


def test_proton_sql_filter(broker: Broker, server: Server) -> None:
    """A proton receiver with an amqp:sql-filter under the key sql-filter gets the matching
    messages only; the attach reply echoes the filter (parse_filters/2)."""
    pytest.importorskip("proton")
    from proton import Described, Message, symbol
    from proton.reactor import Filter
    from proton.utils import BlockingConnection

    _declare_stream(broker)
    connection = BlockingConnection(server.amqp10_url, timeout=5,
                                    allowed_mechs="PLAIN ANONYMOUS")
    try:
        sender = connection.create_sender("/queues/s")
        for i in range(6):
            sender.send(Message(body=f"m{i}", subject=f"order.{i}",
                                properties={"n": i}))
        receiver = connection.create_receiver("/queues/s", options=Filter({
            symbol("offset"): Described(symbol("rabbitmq:stream-offset-spec"), "first"),
            symbol("sql-filter"): Described(symbol("amqp:sql-filter"),
                                            "p.subject LIKE 'order.%' AND n % 2 = 0"),
        }), credit=10)
        got = [receiver.receive(timeout=5) for _ in range(3)]
        assert [m.body for m in got] == ["m0", "m2", "m4"]
        assert [m.subject for m in got] == ["order.0", "order.2", "order.4"]
        data = receiver.link.remote_source.filter
        data.rewind()
        data.next()
        echoed = data.get_dict()
        assert set(echoed) == {symbol("offset"), symbol("sql-filter")}
        for _ in got:
            receiver.accept()
    finally:
        connection.close()


def test_the_deepest_sql_filter_rabbitmq_takes_is_applied(broker: Broker, server: Server) -> None:
    """97 nested parentheses: 199 tokens, one under rabbit_amqp_filter_sql's limit of 200,
    which RabbitMQ's LALR parser takes; embroker's recursive descent parses it on the listener's
    stack without running out of it (issue 44: a client's expression costs what a bound allows,
    never an amqp:internal-error)."""
    pytest.importorskip("proton")
    from proton import Described, Message, symbol
    from proton.reactor import Filter
    from proton.utils import BlockingConnection

    from embroker.amqp10._filters import MAX_TOKENS, _tokenize

    sql = "(" * 97 + "n % 2 = 0" + ")" * 97
    assert len(_tokenize(sql)) == MAX_TOKENS - 1
    _declare_stream(broker)
    connection = BlockingConnection(server.amqp10_url, timeout=5,
                                    allowed_mechs="PLAIN ANONYMOUS")
    try:
        sender = connection.create_sender("/queues/s")
        for i in range(4):
            sender.send(Message(body=f"m{i}", properties={"n": i}))
        receiver = connection.create_receiver("/queues/s", options=Filter({
            symbol("offset"): Described(symbol("rabbitmq:stream-offset-spec"), "first"),
            symbol("sql-filter"): Described(symbol("amqp:sql-filter"), sql),
        }), credit=10)
        assert [receiver.receive(timeout=5).body for _ in range(2)] == ["m0", "m2"]
        receiver.accept()
    finally:
        connection.close()
    assert server.errors == []


client = pytest.importorskip("rabbitmq_amqp_python_client")
from rabbitmq_amqp_python_client import (  # noqa: E402
    AddressHelper,
    Converter,
    Message,
    MessageProperties,
    OffsetSpecification,
    StreamConsumerOptions,
    StreamFilterOptions,
    StreamSpecification,
)

from .rabbitmq_client import consume  # noqa: E402


def _read(connection: Any, name: str, count: int, options: StreamFilterOptions) -> list[Any]:
    return consume(connection, AddressHelper.queue_address(name), count,
                   options=StreamConsumerOptions(offset_specification=OffsetSpecification.first,
                                                 filter_options=options)).messages


def _fill(connection: Any, name: str) -> None:
    connection.management().declare_queue(StreamSpecification(name=name))
    publisher = connection.publisher(AddressHelper.queue_address(name))
    for i in range(10):
        publisher.publish(Message(
            body=Converter.string_to_bytes(f"m{i}"), subject=f"important_{i}",
            group_id=f"group_{i % 2}", reply_to="the_reply_to" if i == 7 else None,
            application_properties={"key": f"value_{i}", "n": i}))
    publisher.close()


def test_client_message_properties_filter(connection: Any) -> None:
    """MessageProperties becomes an amqp:properties-filter (rabbit_amqp_filter_prop)."""
    _fill(connection, "props")
    got = _read(connection, "props", 1, StreamFilterOptions(
        message_properties=MessageProperties(subject="important_5", group_id="group_1")))
    assert (got[0].body, got[0].subject, got[0].group_id) == (b"m5", "important_5", "group_1")


def test_client_application_properties_filter(connection: Any) -> None:
    """application_properties becomes an amqp:application-properties-filter."""
    _fill(connection, "app")
    got = _read(connection, "app", 2, StreamFilterOptions(
        application_properties={"key": "&p:value_"},
        message_properties=MessageProperties(group_id="group_0")))
    assert [m.body for m in got] == [b"m0", b"m2"]


def test_client_sql_filter(connection: Any) -> None:
    """sql becomes an amqp:sql-filter under sql-filter (rabbit_amqp_filter_sql, 4.2)."""
    _fill(connection, "sql")
    got = _read(connection, "sql", 1, StreamFilterOptions(
        sql="properties.subject LIKE '%_7' AND properties.reply_to = 'the_reply_to' "
            "AND n > 6"))
    assert (got[0].body, got[0].application_properties) == (b"m7", {"key": "value_7", "n": 7})
