"""Scenarios: stream queues (``x-queue-type: stream``) over AMQP 0-9-1, as RabbitMQ 3.10.8.

Every scenario name starts with ``stream_``. The texts and the order of the consume checks are
``rabbit_stream_queue:consume/3`` (v3.10.8). Messages are published with confirms, so on
RabbitMQ each is in the log (one chunk each: ``last`` is the last message) before a consumer
reads; a consumer's deliveries are waited for, never the absence of one: a consumer that should
get nothing is shown by what it gets after a later publish. Retention is not a scenario (see
RABBITMQ_NOTES.md): RabbitMQ applies it asynchronously.
"""

from __future__ import annotations

from typing import Any

from .harness import ChannelProxy, Delivered, QueueDeclareOk, Session
from .scenarios_queue_features import confirming

STREAM = {"x-queue-type": "stream"}


def _offsets(deliveries: Any) -> Any:
    """(delivery tag, body, x-stream-offset) of each delivery, for expectations."""
    if not isinstance(deliveries, list):
        return deliveries
    return [(d.delivery_tag, d.body, (d.properties.get("headers") or {}).get("x-stream-offset"))
            for d in deliveries if isinstance(d, Delivered)]


def _stream(s: Session, base: str, n: int, **arguments: Any) -> tuple[str, ChannelProxy]:
    """Declare stream ``base`` and publish ``m0``..``m{n-1}`` to it with confirms."""
    q = s.name(base)
    ch = confirming(s)
    s.expect(ch.queue_declare(q, durable=True, arguments={**STREAM, **arguments}),
             QueueDeclareOk(base, 0, 0))
    for i in range(n):
        ch.basic_publish("", q, f"m{i}".encode())
    return q, ch


def _reader(s: Session, q: str, offset: Any, prefetch: int = 10) -> ChannelProxy:
    """A consumer of ``q`` from ``offset``, on a connection of its own."""
    ch = s.connection().channel()
    ch.basic_qos(prefetch_count=prefetch)
    args = {} if offset is None else {"x-stream-offset": offset}
    ch.basic_consume(q, consumer_tag=s.name(f"c-{offset}"), arguments=args)
    return ch


def _declare_error(s: Session, q: str, text: str, **kw: Any) -> None:
    name = s.name(q) if q else ""
    r = s.channel().queue_declare(name, **kw)
    s.expect_error(r, 406, "PRECONDITION_FAILED - " + text.format(f"queue '{q}' in vhost '/'"),
                   scope="channel")


def scenario_stream_declare_errors(s: Session) -> None:
    """A stream is durable, neither exclusive nor auto-delete, named by the client; it takes
    x-max-age (a positive count of Y, M, D, h, m or s), x-max-length-bytes,
    x-stream-max-segment-size-bytes, x-initial-cluster-size (positive) and refuses the
    arguments of classic and quorum queues."""
    _declare_error(s, "p1", "invalid property 'non-durable' for {}", arguments=STREAM)
    _declare_error(s, "p2", "invalid property 'exclusive-owner' for {}", durable=True,
                   exclusive=True, arguments=STREAM)
    _declare_error(s, "p3", "invalid property 'auto-delete' for {}", durable=True,
                   auto_delete=True, arguments=STREAM)
    _declare_error(s, "", "Cannot declare a server-named queue for type rabbit_stream_queue",
                   durable=True, arguments=STREAM)
    for i, key in enumerate(("x-message-ttl", "x-expires", "x-max-length", "x-max-priority",
                             "x-dead-letter-exchange", "x-overflow", "x-queue-mode",
                             "x-single-active-consumer", "x-delivery-limit")):
        value = {"x-dead-letter-exchange": "dlx", "x-overflow": "drop-head",
                 "x-queue-mode": "lazy", "x-single-active-consumer": True}.get(key, 5)
        _declare_error(s, f"r{i}", f"invalid arg '{key}' for {{}} of queue type "
                       "rabbit_stream_queue", durable=True, arguments={**STREAM, key: value})
    for i, (key, value, reason) in enumerate((
            ("x-max-age", "1X", "invalid_max_age"),
            ("x-max-age", "0D", "invalid_max_age"),
            ("x-max-age", 5, "{{unacceptable_type,signedint}}"),
            ("x-max-length-bytes", -1, "{{value_negative,-1}}"),
            ("x-stream-max-segment-size-bytes", "a", '"expected integer, got longstr"'),
            ("x-initial-cluster-size", 0, "{{value_zero,0}}"),
            ("x-queue-leader-locator", "nearest", "invalid_queue_locator_arg"))):
        _declare_error(s, f"v{i}", f"invalid arg '{key}' for {{}}: {reason}", durable=True,
                       arguments={**STREAM, key: value})
    s.expect(s.channel().queue_declare(s.name("ok"), durable=True, arguments={
        **STREAM, "x-max-age": "7D", "x-max-length-bytes": 10_000_000,
        "x-stream-max-segment-size-bytes": 1_000_000, "x-initial-cluster-size": 1,
        "x-queue-leader-locator": "balanced"}), QueueDeclareOk("ok", 0, 0))


def scenario_stream_redeclare(s: Session) -> None:
    """A stream's arguments must be given again; passive ignores them; the declare-ok of a
    stream counts no messages."""
    q, ch = _stream(s, "s", 2, **{"x-max-age": "1D"})
    s.expect(ch.queue_declare(q, passive=True), QueueDeclareOk("s", 0, 0))
    s.expect(ch.queue_declare(q, durable=True, arguments={**STREAM, "x-max-age": "1D"}),
             QueueDeclareOk("s", 0, 0))
    r = s.channel().queue_declare(q, durable=True, arguments=STREAM)
    s.expect_error(r, 406, "PRECONDITION_FAILED - inequivalent arg 'x-max-age' for queue "
                   "'s' in vhost '/': received none but current is the value '1D' of type "
                   "'longstr'", scope="channel")
    r = s.channel().queue_declare(q, durable=True, arguments={"x-max-age": "1D"})
    s.expect_error(r, 406, "PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue "
                   "'s' in vhost '/': received none but current is the value 'stream' of type "
                   "'longstr'", scope="channel")


def scenario_stream_offsets(s: Session) -> None:
    """Consumers read from first, last (the last chunk: one message each here), an offset,
    an offset before the first (first), an interval (1D: everything), next and none (next);
    every delivery carries x-stream-offset; each consumer reads the same messages."""
    q, ch = _stream(s, "s", 5)
    first = _reader(s, q, "first")
    s.expect(_offsets(first.wait_deliveries(5)), [
        (1, b"m0", 0), (2, b"m1", 1), (3, b"m2", 2), (4, b"m3", 3), (5, b"m4", 4)])
    last = _reader(s, q, "last")
    s.expect(_offsets(last.wait_deliveries(1)), [(1, b"m4", 4)])
    two = _reader(s, q, 2)
    s.expect(_offsets(two.wait_deliveries(3)), [(1, b"m2", 2), (2, b"m3", 3), (3, b"m4", 4)])
    before = _reader(s, q, -1)
    s.expect(_offsets(before.wait_deliveries(5))[:1], [(1, b"m0", 0)])
    day = _reader(s, q, "1D")
    s.expect(_offsets(day.wait_deliveries(5))[4:], [(5, b"m4", 4)])
    nxt = _reader(s, q, "next")
    none = _reader(s, q, None)
    ch.basic_publish("", q, b"m5")
    s.expect(_offsets(nxt.wait_deliveries(1)), [(1, b"m5", 5)], "next: only what came after")
    s.expect(_offsets(none.wait_deliveries(1)), [(1, b"m5", 5)])
    s.expect(_offsets(first.wait_deliveries(1)), [(6, b"m5", 5)])


def scenario_stream_acks_move_credit(s: Session) -> None:
    """With prefetch 2 a consumer gets two messages; acks give credit back and remove
    nothing (another consumer still reads them all); nack and reject close the connection."""
    q, _ch = _stream(s, "s", 5)
    ch = _reader(s, q, "first", prefetch=2)
    s.expect(_offsets(ch.wait_deliveries(2)), [(1, b"m0", 0), (2, b"m1", 1)])
    ch.basic_ack(2, multiple=True)
    s.expect(_offsets(ch.wait_deliveries(2)), [(3, b"m2", 2), (4, b"m3", 3)])
    ch.basic_ack(3)
    s.expect(_offsets(ch.wait_deliveries(1)), [(5, b"m4", 4)])
    other = _reader(s, q, "first")
    s.expect(len(other.wait_deliveries(5)), 5, "acks removed nothing")
    s.expect_error(ch.basic_nack(4), 540, "NOT_IMPLEMENTED - basic.nack and basic.reject not "
                   "supported by stream queues queue 's' in vhost '/'", scope="connection")
    r = _reader(s, q, "first", prefetch=1)
    r.wait_deliveries(1)
    s.expect_error(r.basic_reject(1, requeue=False), 540, "NOT_IMPLEMENTED - basic.nack and "
                   "basic.reject not supported by stream queues queue 's' in vhost '/'",
                   scope="connection")


def scenario_stream_consume_errors(s: Session) -> None:
    """A stream consumer needs basic.qos (406) and manual acks (540), no global qos (540),
    no x-priority (406); a bad x-stream-offset is 541 INTERNAL_ERROR; basic.get and
    queue.purge are 540."""
    q, _ch = _stream(s, "s", 1)
    where = "queue 's' in vhost '/'"
    s.expect_error(s.connection().channel().basic_consume(q), 406, "PRECONDITION_FAILED - consumer "
                   f"prefetch count is not set for '{where}'", scope="channel")
    ch = s.connection().channel()
    ch.basic_qos(prefetch_count=10)
    s.expect_error(ch.basic_consume(q, auto_ack=True), 540, "NOT_IMPLEMENTED - automatic "
                   f"acknowledgement not supported by stream queues {where}",
                   scope="connection")
    ch = s.connection().channel()
    ch.basic_qos(prefetch_count=10)
    ch.basic_qos(prefetch_count=3, global_qos=True)
    s.expect_error(ch.basic_consume(q), 540, f"NOT_IMPLEMENTED - {where} does not support "
                   "global qos", scope="connection")
    ch = s.connection().channel()
    ch.basic_qos(prefetch_count=10)
    s.expect_error(ch.basic_consume(q, arguments={"x-priority": 1}), 406, "PRECONDITION_FAILED"
                   f" - invalid arg 'x-priority' for {where} of queue type rabbit_stream_queue",
                   scope="channel")
    ch = s.connection().channel()
    ch.basic_qos(prefetch_count=10)
    s.expect_error(ch.basic_consume(q, arguments={"x-stream-offset": "foo"}), 541,
                   "INTERNAL_ERROR", scope="connection")
    s.expect_error(s.connection().channel().basic_get(q), 540, "NOT_IMPLEMENTED - basic.get not supported "
                   f"by stream queues {where}", scope="connection")
    s.expect_error(s.connection().channel().queue_purge(q), 540, "NOT_IMPLEMENTED - queue.purge not "
                   f"supported by stream queues {where}", scope="connection")
    ch = s.connection().channel()
    ch.basic_qos(prefetch_count=10)
    ch.basic_consume(q, consumer_tag=s.name("ok"), arguments={"x-stream-offset": "first"},
                     exclusive=True)
    s.expect(_offsets(ch.wait_deliveries(1)), [(1, b"m0", 0)], "an exclusive consumer is fine")
