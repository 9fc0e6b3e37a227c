"""Stream queues over the in-process client: declare rules, offsets, credit, retention.

The texts and behaviours are RabbitMQ 3.10.8's (asked with pika; ``rabbit_stream_queue.erl``
and ``rabbit_amqqueue.erl`` at v3.10.8 for the order of the checks); the conformance scenarios
``queue_types_stream_*`` compare the same against the reference's golden files.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

import pytest

from embroker import Broker
from embroker.client import Channel
from embroker.errors import (
    AccessRefused,
    InternalError,
    NotFound,
    NotImplementedAMQP,
    PreconditionFailed,
)
from embroker.model import ManualClock
from embroker.model._stream import StreamLog, max_age_ms, parse_offset_spec

STREAM = {"x-queue-type": "stream"}
Q = "queue 's' in vhost '/'"


def declare(ch: Channel, name: str = "s", **arguments: Any) -> None:
    """Declare stream ``name`` with ``arguments`` (given as ``**{"x-...": value}``)."""
    ch.queue_declare(name, durable=True, arguments={**STREAM, **arguments})


def consume(ch: Channel, offset: Any = None, *, prefetch: int = 100, name: str = "s",
            ack: bool = False) -> list[tuple[int, bytes, int]]:
    """Consume with ``x-stream-offset`` ``offset``; returns the list the deliveries fill:
    (delivery tag, body, x-stream-offset header)."""
    got: list[tuple[int, bytes, int]] = []

    def on_message(c: Channel, d: Any, props: dict[str, Any], body: bytes) -> None:
        got.append((d.delivery_tag, body, props["headers"]["x-stream-offset"]))
        assert d.redelivered is False
        if ack:
            c.basic_ack(d.delivery_tag)

    ch.basic_qos(prefetch_count=prefetch)
    args = {} if offset is None else {"x-stream-offset": offset}
    ch.basic_consume(name, on_message, arguments=args)
    ch.connection.process_data_events()
    return got


def publish(ch: Channel, *bodies: bytes, name: str = "s") -> None:
    for body in bodies:
        ch.basic_publish("", name, body)


@pytest.mark.parametrize(("kwargs", "text"), [
    ({}, "invalid property 'non-durable' for {}"),
    ({"durable": True, "exclusive": True}, "invalid property 'exclusive-owner' for {}"),
    ({"durable": True, "auto_delete": True}, "invalid property 'auto-delete' for {}"),
    ({"durable": True, "arguments": {"x-message-ttl": 1}},
     "invalid arg 'x-message-ttl' for {} of queue type rabbit_stream_queue"),
    ({"durable": True, "arguments": {"x-max-length": 1}},
     "invalid arg 'x-max-length' for {} of queue type rabbit_stream_queue"),
    ({"durable": True, "arguments": {"x-overflow": "drop-head"}},
     "invalid arg 'x-overflow' for {} of queue type rabbit_stream_queue"),
    ({"durable": True, "arguments": {"x-dead-letter-exchange": "x"}},
     "invalid arg 'x-dead-letter-exchange' for {} of queue type rabbit_stream_queue"),
    ({"durable": True, "arguments": {"x-max-priority": 3}},
     "invalid arg 'x-max-priority' for {} of queue type rabbit_stream_queue"),
    ({"durable": True, "arguments": {"x-single-active-consumer": True}},
     "invalid arg 'x-single-active-consumer' for {} of queue type rabbit_stream_queue"),
    ({"durable": True, "arguments": {"x-max-age": "1X"}},
     "invalid arg 'x-max-age' for {}: invalid_max_age"),
    ({"durable": True, "arguments": {"x-max-age": "0D"}},
     "invalid arg 'x-max-age' for {}: invalid_max_age"),
    ({"durable": True, "arguments": {"x-max-age": 5}},
     "invalid arg 'x-max-age' for {}: {{unacceptable_type,signedint}}"),
    ({"durable": True, "arguments": {"x-max-length-bytes": -1}},
     "invalid arg 'x-max-length-bytes' for {}: {{value_negative,-1}}"),
    ({"durable": True, "arguments": {"x-stream-max-segment-size-bytes": "a"}},
     "invalid arg 'x-stream-max-segment-size-bytes' for {}: \"expected integer, got longstr\""),
    ({"durable": True, "arguments": {"x-initial-cluster-size": 0}},
     "invalid arg 'x-initial-cluster-size' for {}: {{value_zero,0}}"),
    ({"durable": True, "arguments": {"x-initial-cluster-size": -1}},
     "invalid arg 'x-initial-cluster-size' for {}: {{value_negative,-1}}"),
])
def test_stream_declare_rules(ch: Channel, kwargs: dict[str, Any], text: str) -> None:
    arguments = {**STREAM, **kwargs.pop("arguments", {})}
    with pytest.raises(PreconditionFailed) as err:
        ch.queue_declare("s", arguments=arguments, **kwargs)
    assert err.value.reply_text == "PRECONDITION_FAILED - " + text.format(Q)


def test_stream_declare_ok_and_server_named_refused(broker: Broker, ch: Channel) -> None:
    r = ch.queue_declare("s", durable=True, arguments={
        **STREAM, "x-max-age": "10s", "x-initial-cluster-size": 5,
        "x-stream-max-segment-size-bytes": 1000, "x-max-length-bytes": 10_000})
    assert (r.message_count, r.consumer_count) == (0, 0)
    with pytest.raises(PreconditionFailed, match=r"server-named queue for type "
                                                 r"rabbit_stream_queue$"):
        broker.connect().channel().queue_declare("", durable=True, arguments=STREAM)


def test_stream_declare_ok_counts_no_messages(ch: Channel) -> None:
    """RabbitMQ 3.10 answers a passive declare of a stream with message_count 0."""
    declare(ch)
    publish(ch, b"a", b"b")
    assert ch.queue_declare("s", passive=True).message_count == 0


def test_stream_declare_ok_counts_no_consumers(broker: Broker, ch: Channel) -> None:
    """rabbit_stream_queue:stat/1 (v3.10.8) answers {ok, Messages, 0}: however many consumers
    read a stream, its declare-ok, passive or not, counts none (seen live on the reference
    cluster: tests/cluster/golden/stream_losing_its_leader.txt)."""
    declare(ch)
    consume(ch, "first")
    consume(broker.connect().channel(), "first")
    assert broker.queues["s"].consumer_count == 2
    assert ch.queue_declare("s", passive=True).consumer_count == 0
    assert ch.queue_declare("s", durable=True, arguments=STREAM).consumer_count == 0


@pytest.mark.parametrize(("offset", "expected"), [
    (None, []), ("next", []), ("first", [0, 1, 2, 3, 4]), ("last", [4]), (2, [2, 3, 4]),
    (99, []), (-1, [0, 1, 2, 3, 4]), ("1D", [0, 1, 2, 3, 4]), ("10s", [0, 1, 2, 3, 4]),
])
def test_stream_offsets(ch: Channel, offset: Any, expected: list[int]) -> None:
    declare(ch)
    publish(ch, *(f"m{i}".encode() for i in range(5)))
    got = consume(ch, offset)
    assert [o for _tag, _body, o in got] == expected
    assert [b for _tag, b, _o in got] == [f"m{o}".encode() for o in expected]
    assert [t for t, _b, _o in got] == list(range(1, len(expected) + 1))


def test_stream_timestamp_offsets() -> None:
    clock = ManualClock()
    broker = Broker(clock=clock)
    ch = broker.connect().channel()
    declare(ch)
    publish(ch, b"old")
    clock.advance(60)
    publish(ch, b"new")
    now = datetime.datetime.fromtimestamp(clock.time(), datetime.timezone.utc)
    assert [b for _t, b, _o in consume(ch, now - datetime.timedelta(seconds=30))] == [b"new"]
    ch2 = broker.connect().channel()
    assert [b for _t, b, _o in consume(ch2, "30s")] == [b"new"]
    ch3 = broker.connect().channel()
    assert consume(ch3, now + datetime.timedelta(seconds=5)) == []
    broker._check()


def test_next_gets_what_comes_later(ch: Channel) -> None:
    declare(ch)
    publish(ch, b"before")
    got = consume(ch, "next", ack=True)
    publish(ch, b"after")
    ch.connection.process_data_events()
    assert got == [(1, b"after", 1)]


def test_acks_only_move_credit(broker: Broker, ch: Channel) -> None:
    declare(ch)
    publish(ch, *(f"m{i}".encode() for i in range(5)))
    got = consume(ch, "first", prefetch=2)
    assert [o for _t, _b, o in got] == [0, 1]
    ch.basic_ack(2, multiple=True)
    ch.connection.process_data_events()
    assert [o for _t, _b, o in got] == [0, 1, 2, 3]
    assert len(broker.queues["s"].messages) == 5, "an ack removes nothing from the stream"


def test_many_consumers_read_the_same_messages(broker: Broker) -> None:
    a, b = broker.connect().channel(), broker.connect().channel()
    declare(a)
    publish(a, b"x", b"y")
    got_a, got_b = consume(a, "first"), consume(b, "first")
    publish(a, b"z")
    a.connection.process_data_events()
    b.connection.process_data_events()
    assert [m for _t, m, _o in got_a] == [m for _t, m, _o in got_b] == [b"x", b"y", b"z"]


def test_a_closed_channel_gives_nothing_back(broker: Broker) -> None:
    """A consumer's place survives nothing: a new consumer starts where its offset says."""
    a = broker.connect().channel()
    declare(a)
    publish(a, b"x")
    consume(a, "first")
    a.close()
    b = broker.connect().channel()
    assert [m for _t, m, _o in consume(b, "first")] == [b"x"]
    assert broker.queues["s"].unacked == 1  # b's delivery only


def test_consume_needs_qos_and_manual_ack(broker: Broker) -> None:
    ch = broker.connect().channel()
    declare(ch)
    with pytest.raises(PreconditionFailed) as err:
        ch.basic_consume("s", lambda *a: None)
    assert err.value.reply_text == ("PRECONDITION_FAILED - consumer prefetch count is not set "
                                    f"for '{Q}'")
    ch = broker.connect().channel()
    ch.basic_qos(prefetch_count=10)
    with pytest.raises(NotImplementedAMQP) as err2:
        ch.basic_consume("s", lambda *a: None, auto_ack=True)
    assert err2.value.reply_text == ("NOT_IMPLEMENTED - automatic acknowledgement not "
                                     f"supported by stream queues {Q}")
    ch = broker.connect().channel()
    ch.basic_qos(prefetch_count=10, global_qos=True)
    ch.basic_qos(prefetch_count=10)  # per consumer (lifts the global one, as RabbitMQ)
    ch.basic_qos(prefetch_count=5, global_qos=True)
    with pytest.raises(NotImplementedAMQP, match=f"{Q} does not support global qos"):
        ch.basic_consume("s", lambda *a: None)


def test_consumer_argument_errors(broker: Broker) -> None:
    ch = broker.connect().channel()
    declare(ch)
    ch.basic_qos(prefetch_count=1)
    with pytest.raises(PreconditionFailed, match="invalid arg 'x-priority' for queue 's' in "
                                                 "vhost '/' of queue type rabbit_stream_queue"):
        ch.basic_consume("s", lambda *a: None, arguments={"x-priority": 1})
    ch = broker.connect().channel()
    ch.basic_qos(prefetch_count=1)
    with pytest.raises(InternalError) as err:
        ch.basic_consume("s", lambda *a: None, arguments={"x-stream-offset": "foo"})
    assert err.value.reply_text == "INTERNAL_ERROR"
    assert broker.queues["s"].consumer_count == 0


def test_get_purge_nack_reject_refused(broker: Broker) -> None:
    ch = broker.connect().channel()
    declare(ch)
    publish(ch, b"x")
    with pytest.raises(NotImplementedAMQP, match=re.escape(f"- basic.get not supported by stream queues "
                                                           f"{Q}")):
        ch.basic_get("s")
    ch = broker.connect().channel()
    with pytest.raises(NotImplementedAMQP, match=r"queue\.purge not supported by stream queues"):
        ch.queue_purge("s")
    for settle in ("nack", "reject"):
        ch = broker.connect().channel()
        consume(ch, "first")
        with pytest.raises(NotImplementedAMQP, match=re.escape("basic.nack and basic.reject not "
                                                               f"supported by stream queues {Q}")):
            getattr(ch, f"basic_{settle}")(1)


def test_redeclare_needs_the_same_arguments(ch: Channel) -> None:
    declare(ch)
    with pytest.raises(PreconditionFailed, match=r"inequivalent arg 'x-max-age' .* received the "
                                                 "value '1D' of type 'longstr' but current is "
                                                 "none"):
        declare(ch.connection.channel(), "s", **{"x-max-age": "1D"})


# -- retention -------------------------------------------------------------------------------

def test_retention_by_segment_is_seen_through_first(broker: Broker, ch: Channel) -> None:
    """x-max-length-bytes removes whole segments, the oldest first, when a new one opens;
    never the one being written. Each segment after the first starts with osiris' tracking
    snapshot (the channel is a writer it tracks), which takes an offset."""
    declare(ch, "s", **{"x-stream-max-segment-size-bytes": 200, "x-max-length-bytes": 450})
    publish(ch, *(b"x" * 100 for _ in range(10)))
    log = broker.queues["s"].stream
    assert log is not None
    # 197 bytes a chunk (48 + 4 + 100 body + 1 routing key byte... as counted, and a 44-byte
    # trailer: the channel's writer id and sequence), two in the first segment; then a snapshot
    # and a chunk in each
    assert [[c.kind for c in seg] for seg in log.segments] == [[2, 0], [2, 0]]
    assert log.first_offset == 14
    # (RabbitMQ 3.10.8 counts a message as its AMQP 1.0 encoding, a chunk fills a segment:
    # the same publishes leave it one message, at offset 18)
    assert [o for _t, _b, o in consume(ch, "first")] == [15, 17]
    assert [o for _t, _b, o in consume(ch.connection.channel(), 0)] == [15, 17]


def test_retention_never_drops_the_segment_being_written(broker: Broker, ch: Channel) -> None:
    declare(ch, "s", **{"x-max-length-bytes": 1})
    publish(ch, b"a", b"b")
    assert [o for _t, _b, o in consume(ch, "first")] == [0, 1]


def test_max_age_expires_on_the_clock() -> None:
    clock = ManualClock()
    broker = Broker(clock=clock)
    ch = broker.connect().channel()
    declare(ch, "s", **{"x-max-age": "10s", "x-stream-max-segment-size-bytes": 1})
    publish(ch, b"a")
    clock.advance(5)
    publish(ch, b"b")  # a new segment: "a" is 5s old, kept
    publish(ch, b"c")
    queue = broker.queues["s"]
    assert queue.stream is not None
    assert queue.stream.first_offset == 0
    clock.advance(5.5)  # "a" is 10.5 s old: its segment goes
    assert queue.stream.first_offset == 1  # (the next starts with a tracking snapshot)
    clock.advance(100)  # "b"'s segment too; "c"'s is being written
    assert queue.stream.first_offset == 3
    assert [b for _t, b, _o in consume(ch, "first")] == [b"c"]
    broker._check()


def test_a_reader_behind_the_first_offset_goes_on_from_it(broker: Broker) -> None:
    ch = broker.connect().channel()
    declare(ch, "s", **{"x-stream-max-segment-size-bytes": 1, "x-max-length-bytes": 1})
    got = consume(ch, "first", prefetch=1)
    publish(ch, b"a", b"b", b"c")
    assert [b for _t, b, _o in got] == [b"a"]
    ch.basic_ack(1)
    ch.connection.process_data_events()
    assert [b for _t, b, _o in got] == [b"a", b"c"], "b's segment went while it waited"


def test_delete_stops_the_age_timer() -> None:
    clock = ManualClock()
    broker = Broker(clock=clock)
    ch = broker.connect().channel()
    declare(ch, "s", **{"x-max-age": "1s", "x-stream-max-segment-size-bytes": 1})
    publish(ch, b"a", b"b")
    ch.queue_delete("s")
    clock.advance(10)
    assert "s" not in broker.queues


# -- the log and the offset arguments alone --------------------------------------------------

def test_max_age_units() -> None:
    assert max_age_ms("1Y") == 365 * 86_400_000
    assert max_age_ms("2M") == 60 * 86_400_000
    assert [max_age_ms(v) for v in ("1h", "1m", "s", "", "-1s", "1 s")] == [
        3_600_000, 60_000, None, None, None, None]


def test_offset_spec_values() -> None:
    assert parse_offset_spec(None, 0) == "next"
    assert parse_offset_spec(b"first", 0) == "first"
    assert parse_offset_spec("1s", 5000) == ("timestamp", 4000)
    assert parse_offset_spec(7, 0) == 7
    for bad in ("5", 1.5, True, [1]):
        with pytest.raises(InternalError):
            parse_offset_spec(bad, 0)


def test_log_start_offsets() -> None:
    log = StreamLog(ManualClock())
    assert [log.start_offset(s) for s in ("first", "last", "next", 3)] == [0, 0, 0, 0]
    from embroker.model._message import Message
    log.append([Message("", "k", {}, b"1"), Message("", "k", {}, b"2")])
    log.append([Message("", "k", {}, b"3")])
    assert [log.start_offset(s) for s in ("first", "last", "next", 1, 9, -4)] == [
        0, 2, 3, 1, 3, 0]
    second = log.read(1)
    assert second is not None
    assert second.body == b"2"
    assert log.read(3) is None
    log._check()


def test_the_retention_example_of_docs_streams_md() -> None:
    clock = ManualClock()
    broker = Broker(clock=clock)
    ch = broker.connect().channel()
    ch.queue_declare("s", durable=True, arguments={
        "x-queue-type": "stream", "x-max-age": "10s", "x-stream-max-segment-size-bytes": 1})
    ch.basic_publish("", "s", b"old")
    ch.basic_publish("", "s", b"new")  # a segment each (1-byte segments)
    clock.advance(11)
    assert [m.body for m in broker.queues["s"].messages] == [b"new"]


# -- policies ----------------------------------------------------------------------------------

def test_a_policy_with_keys_streams_refuse_does_not_apply_to_them() -> None:
    """rabbit_stream_queue:capabilities/0 (v3.10.8): expires, message-ttl, max-length,
    dead-lettering... are unsupported policies; such a policy applies to no stream (RabbitMQ
    3.10.8: `rabbitmqctl list_queues name policy` shows none for it, and the retention
    policy of the next test)."""
    clock = ManualClock()
    broker = Broker(clock=clock)
    ch = broker.connect().channel()
    declare(ch)
    broker.set_policy("short", "^s$", {"expires": 1000, "max-length-bytes": 1})
    assert broker.queues["s"].policy is None
    clock.advance(5)
    assert "s" in broker.queues


def test_retention_keys_of_a_policy_apply_the_lowest_wins(broker: Broker, ch: Channel) -> None:
    """max-length-bytes, max-age and stream-max-segment-size-bytes from a policy: the lowest of
    the argument's and the policies' (v3.10.8 rabbit_stream_queue:update_stream_conf/2)."""
    declare(ch, "s", **{"x-max-length-bytes": 10_000})
    publish(ch, *(b"x" * 100 for _ in range(6)))
    log = broker.queues["s"].stream
    assert log is not None
    assert log.first_offset == 0
    broker.set_policy("ret", "^s$", {"max-length-bytes": 450,
                                     "stream-max-segment-size-bytes": 200})
    assert broker.queues["s"].policy is not None
    assert (log.max_bytes, log.segment_size) == (450, 200)
    publish(ch, *(b"x" * 100 for _ in range(4)))
    assert log.first_offset > 0, "segments over the limit went"
    broker.clear_policy("ret")
    assert (log.max_bytes, log.segment_size) == (10_000, 500_000_000)


def test_a_policys_lower_retention_removes_old_segments_at_once(broker: Broker,
                                                                 ch: Channel) -> None:
    """A policy's lower max-length-bytes applies when the policy does, not at the next segment
    (v3.10.8 rabbit_stream_queue:policy_changed/1, then the coordinator's
    update_retention action on the stream's writer)."""
    declare(ch, "s", **{"x-stream-max-segment-size-bytes": 200})
    publish(ch, *(b"x" * 100 for _ in range(10)))
    log = broker.queues["s"].stream
    assert log is not None
    assert log.first_offset == 0
    broker.set_policy("ret", "^s$", {"max-length-bytes": 450})
    assert log.first_offset > 0


def test_definitions_keep_a_stream_and_routing_explains_it(broker: Broker, ch: Channel) -> None:
    declare(ch, "s", **{"x-max-age": "1D"})
    ch.queue_bind("s", "amq.fanout")
    ch.basic_publish("amq.fanout", "", b"x")
    assert "'s'" in broker.trace[-1].explain()
    other = Broker()
    other.load_definitions(broker.definitions())
    queue = other.queues["s"]
    assert queue.stream is not None
    assert queue.arguments == {"x-queue-type": "stream", "x-max-age": "1D"}
    assert queue.stream.max_age == 86_400_000


def test_a_super_stream_routes_through_its_exchange_type_and_lists_partitions_in_order(
        broker: Broker, ch: Channel) -> None:
    """rabbit_stream_manager:route/3 routes the key as a publish would (a topic exchange's
    patterns too), keeping the queues that are streams; partitions/2 orders the bindings by
    x-stream-partition-order. A missing exchange is 404, naming what is missing (for "did you mean")."""
    ch.exchange_declare("orders", "topic", durable=True)
    for order, (name, pattern) in enumerate([("s-eu", "eu.#"), ("s-us", "us.*"),
                                             ("s-all", "#")]):
        declare(ch, name)
        ch.queue_bind(name, "orders", pattern, {"x-stream-partition-order": 2 - order})
    ch.queue_declare("classic", durable=True)
    ch.queue_bind("classic", "orders", "#")
    model = broker.open_connection("/").open_channel(1)
    assert model.super_stream_route("orders", "eu.paris.new") == ["s-all", "s-eu"]
    assert model.super_stream_route("orders", "us.ny.new") == ["s-all"]
    assert model.super_stream_partitions("orders") == ["s-all", "s-us", "s-eu"]
    with pytest.raises(NotFound) as missing:
        model.super_stream_route("order", "eu")
    assert missing.value.reply_text == "NOT_FOUND - no exchange 'order' in vhost '/'"
    assert missing.value.missing == ("exchange", "order")  # (what "did you mean" goes by)


def test_stream_publish_batch_deduplicates_a_publisher_reference_in_the_model() -> None:
    """A stream-protocol Publish is one model operation: with a reference, an id not above the
    last written for it is confirmed and not written again (osiris' writer tracking)."""
    broker = Broker()
    ch = broker.connect().channel()
    declare(ch)
    model = ch.model

    def decode(data: bytes) -> tuple[dict[str, Any], bytes]:
        return {}, data

    assert model.stream_publish_batch("s", [(1, None, b"a"), (2, None, b"b")], decode,
                                      reference="p") == [1, 2]
    assert model.stream_publish_batch("s", [(2, None, b"b"), (3, None, b"c")], decode,
                                      reference="p") == [2, 3]
    assert model.stream_publisher_sequence("s", "p") == 3
    assert [m.body for m in broker.queues["s"].messages] == [b"a", b"b", b"c"]
    # without a reference nothing is a duplicate
    assert model.stream_publish_batch("s", [(1, None, b"d")], decode) == [1]
    assert len(broker.queues["s"].messages) == 4


def test_stream_publish_batch_checks_write_permission_before_the_stream_exists() -> None:
    broker = Broker()
    broker.add_user("reader", "pw")
    broker.set_permissions("reader", "", "", ".*")
    ch = broker.connect(user="reader").channel()
    with pytest.raises(AccessRefused):
        ch.model.stream_publish_batch("missing", [(1, None, b"a")], lambda d: ({}, d))
