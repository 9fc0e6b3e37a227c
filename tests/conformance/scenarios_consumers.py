"""Scenarios: consumers (basic.consume / cancel, exclusive consumers, prefetch, redelivery,
broker cancels, basic.recover, basic.qos).

Deliveries are recorded only by ``ch.wait_deliveries(n)``; whether a message is *not* delivered
is checked through the queue's ready count (passive declare), never by waiting for nothing.
"""

from __future__ import annotations

from typing import Any

from .harness import ChannelProxy, Delivered, QueueDeclareOk, Session

#: The first two server-generated consumer tags, as the transcript shows them.
C1, C2 = "amq.ctag-1", "amq.ctag-2"


def _queue_with(s: Session, ch: ChannelProxy, n: int, base: str = "q") -> str:
    q = s.name(base)
    ch.queue_declare(q)
    for i in range(n):
        ch.basic_publish("", q, f"m{i}".encode())
    return q


def _seen(deliveries: Any) -> Any:
    """(consumer tag, delivery tag, body, redelivered) of each delivery, for expectations."""
    if not isinstance(deliveries, list):
        return deliveries
    return [(d.consumer_tag, d.delivery_tag, d.body, d.redelivered) for d in deliveries]


def _ready(s: Session, ch: ChannelProxy, q: str) -> Any:
    """(ready messages, consumers) of queue ``q``."""
    r = ch.queue_declare(q, passive=True)
    return (r.message_count, r.consumer_count) if isinstance(r, QueueDeclareOk) else r


def scenario_consume_server_generated_tags(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 2)
    tag = ch.basic_consume(q)
    s.expect(tag, "amq.ctag-1")
    if isinstance(tag, str):
        s.expect(len(tag), len("amq.ctag-") + 22, "amq.ctag- and 22 characters")
    got = ch.wait_deliveries(2)
    s.expect(got, [Delivered(C1, 1, False, "", "q", {}, b"m0"),
                   Delivered(C1, 2, False, "", "q", {}, b"m1")])
    s.expect(ch.basic_consume(q), "amq.ctag-2", "a new tag for each consumer")
    s.expect(_ready(s, ch, q), (0, 2))
    s.expect(ch.basic_cancel(tag), None)
    s.expect(_ready(s, ch, q), (0, 1))
    ch.basic_ack(2, multiple=True)
    s.expect(_ready(s, ch, q), (0, 1), "acking after its consumer is cancelled is fine")


def scenario_consume_client_tags(s: Session) -> None:
    ch1, ch2 = s.channel(), s.channel()
    q = _queue_with(s, ch1, 2)
    tag = s.name("ctag")
    s.expect(ch1.basic_consume(q, consumer_tag=tag, auto_ack=True), "ctag")
    s.expect(_seen(ch1.wait_deliveries(2)), [("ctag", 1, b"m0", False), ("ctag", 2, b"m1", False)])
    s.expect(ch2.basic_consume(q, consumer_tag=tag), "ctag", "the same tag on another channel")
    ch1.basic_cancel(tag)
    ch1.basic_publish("", q, b"m2")
    s.expect(_seen(ch2.wait_deliveries(1)), [("ctag", 1, b"m2", False)],
             "delivery tags are per channel")
    s.expect_error(ch1.basic_ack(1), 406, "PRECONDITION_FAILED - unknown delivery tag 1",
                   what="auto-acked deliveries cannot be acked")


def scenario_consume_duplicate_tag(s: Session) -> None:
    c1 = s.connection()
    ch, other = c1.channel(), c1.channel()
    q = _queue_with(s, ch, 0)
    tag = s.name("dup")
    ch.basic_consume(q, consumer_tag=tag)
    r = ch.basic_consume(q, consumer_tag=tag)
    s.expect_error(r, 530, "NOT_ALLOWED - attempt to reuse consumer tag 'dup'", scope="connection")
    s.expect((ch.is_open, other.is_open, c1.is_open), (False, False, False))
    s.expect(_ready(s, s.connection().channel(), q), (0, 0), "the connection's consumer is gone")


def scenario_consume_missing_queue(s: Session) -> None:
    ch = s.channel()
    s.expect_error(ch.basic_consume(s.name("missing")), 404,
                   "NOT_FOUND - no queue 'missing' in vhost '/'", scope="channel")


def scenario_cancel_unknown_tag(s: Session) -> None:
    ch = s.channel()
    s.expect(ch.basic_cancel(s.name("never-used")), None, "cancel-ok for a tag never used")
    q = _queue_with(s, ch, 0)
    tag = ch.basic_consume(q)
    ch.basic_cancel(tag)
    s.expect(ch.basic_cancel(tag), None, "and for one already cancelled")
    s.expect(_ready(s, ch, q), (0, 0))


def scenario_consume_exclusive(s: Session) -> None:
    ch1 = s.channel()
    q = _queue_with(s, ch1, 0)
    s.expect(ch1.basic_consume(q, exclusive=True, consumer_tag=s.name("only")), "only")
    in_use = "ACCESS_REFUSED - queue 'q' in vhost '/' in exclusive use"
    s.expect_error(s.channel().basic_consume(q), 403, in_use, scope="channel",
                   what="another channel of the same connection")
    s.expect_error(s.connection().channel().basic_consume(q), 403, in_use, scope="channel",
                   what="another connection")
    ch = s.channel()
    s.expect(_ready(s, ch, q), (0, 1))
    ch.basic_publish("", q, b"m")
    s.expect(_seen(ch1.wait_deliveries(1)), [("only", 1, b"m", False)])
    s.expect(ch.basic_get(q), None, "basic.get is not consuming: allowed")
    s.expect_error(ch1.basic_consume(q), 403, in_use, scope="channel",
                   what="even on the exclusive consumer's own channel")
    s.expect(_ready(s, ch, q), (1, 0), "the channel error cancelled the exclusive consumer too")


def scenario_consume_exclusive_on_queue_with_consumers(s: Session) -> None:
    ch1 = s.channel()
    q = _queue_with(s, ch1, 0)
    tag = ch1.basic_consume(q)
    ch2 = s.channel()
    s.expect_error(ch2.basic_consume(q, exclusive=True), 403,
                   "ACCESS_REFUSED - queue 'q' in vhost '/' in exclusive use", scope="channel")
    ch1.basic_cancel(tag)
    ch3 = s.channel()
    s.expect(ch3.basic_consume(q, exclusive=True), "amq.ctag-2", "no consumers left: allowed")


def scenario_consume_exclusive_queue_of_other_connection(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, exclusive=True)
    r = s.connection().channel().basic_consume(q)
    s.expect_error(r, 405, scope="channel")
    s.expect(ch.basic_consume(q), "amq.ctag-1", "the owner may consume")


def scenario_consume_prefetch_one_acks_one_by_one(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 3)
    ch.basic_qos(prefetch_count=1)
    ch.basic_consume(q)
    s.expect(_seen(ch.wait_deliveries(1)), [(C1, 1, b"m0", False)])
    s.expect(_ready(s, ch, q), (2, 1), "one message out at a time")
    ch.basic_reject(1)  # requeued, at the head
    s.expect(_seen(ch.wait_deliveries(1)), [(C1, 2, b"m0", True)])
    ch.basic_ack(2)
    s.expect(_seen(ch.wait_deliveries(1)), [(C1, 3, b"m1", False)])
    ch.basic_nack(3)
    s.expect(_seen(ch.wait_deliveries(1)), [(C1, 4, b"m1", True)])
    ch.basic_ack(4)
    s.expect(_seen(ch.wait_deliveries(1)), [(C1, 5, b"m2", False)])
    s.expect(_ready(s, ch, q), (0, 1))
    ch.basic_ack(5)
    ch.basic_publish("", q, b"m3")
    s.expect(_seen(ch.wait_deliveries(1)), [(C1, 6, b"m3", False)])


def scenario_consume_prefetch_round_robin(s: Session) -> None:
    ch1, ch2 = s.channel(), s.channel()
    q = _queue_with(s, ch1, 4)
    for ch in (ch1, ch2):
        ch.basic_qos(prefetch_count=1)
    ch1.basic_consume(q, consumer_tag=s.name("a"))
    s.expect(_seen(ch1.wait_deliveries(1)), [("a", 1, b"m0", False)])
    ch2.basic_consume(q, consumer_tag=s.name("b"))
    s.expect(_seen(ch2.wait_deliveries(1)), [("b", 1, b"m1", False)])
    s.expect(_ready(s, ch1, q), (2, 2))
    ch2.basic_ack(1)
    s.expect(_seen(ch2.wait_deliveries(1)), [("b", 2, b"m2", False)])
    ch1.basic_ack(1)
    s.expect(_seen(ch1.wait_deliveries(1)), [("a", 2, b"m3", False)])
    s.expect(_ready(s, ch1, q), (0, 2))


def scenario_consume_prefetch_counts_per_consumer(s: Session) -> None:
    """global=false (RabbitMQ's meaning): each new consumer gets its own limit."""
    ch = s.channel()
    q1, q2 = _queue_with(s, ch, 3, "q1"), _queue_with(s, ch, 3, "q2")
    ch.basic_qos(prefetch_count=2)
    ch.basic_consume(q1)
    ch.wait_deliveries(2)
    ch.basic_consume(q2)
    ch.wait_deliveries(2)
    s.expect((_ready(s, ch, q1), _ready(s, ch, q2)), ((1, 1), (1, 1)))


def scenario_consume_prefetch_global(s: Session) -> None:
    """global=true: one limit for all the channel's consumers together."""
    ch = s.channel()
    q1, q2 = _queue_with(s, ch, 1, "q1"), _queue_with(s, ch, 1, "q2")
    ch.basic_qos(prefetch_count=1, global_qos=True)
    ch.basic_consume(q1)
    s.expect(_seen(ch.wait_deliveries(1)), [(C1, 1, b"m0", False)])
    ch.basic_consume(q2)
    s.expect(_ready(s, ch, q2), (1, 1), "the channel's one slot is taken")
    ch.basic_ack(1)
    s.expect(_seen(ch.wait_deliveries(1)), [(C2, 2, b"m0", False)])


def scenario_consume_qos_prefetch_size(s: Session) -> None:
    ch = s.channel()
    r = ch.basic_qos(prefetch_size=1000)
    s.expect_error(r, 540, "NOT_IMPLEMENTED - prefetch_size!=0 (1000)", scope="connection")


def scenario_consume_auto_ack_ignores_prefetch(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 3)
    ch.basic_qos(prefetch_count=1)
    ch.basic_consume(q, auto_ack=True)
    s.expect(_seen(ch.wait_deliveries(3)),
             [(C1, 1, b"m0", False), (C1, 2, b"m1", False), (C1, 3, b"m2", False)])
    s.expect(_ready(s, ch, q), (0, 1))


def scenario_consume_after_get_continues_delivery_tags(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 3)
    ch.basic_get(q)
    ch.basic_consume(q)
    s.expect(_seen(ch.wait_deliveries(2)), [(C1, 2, b"m1", False), (C1, 3, b"m2", False)])
    ch.basic_ack(3, multiple=True)
    s.expect(_ready(s, ch, q), (0, 1))


def scenario_queue_delete_if_unused_with_consumer(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 1)
    ch.basic_consume(q)
    ch.wait_deliveries(1)
    r = s.channel().queue_delete(q, if_unused=True)
    s.expect_error(r, 406, "PRECONDITION_FAILED - queue 'q' in vhost '/' in use", scope="channel")
    s.expect(_ready(s, ch, q), (0, 1))


def scenario_queue_delete_cancels_consumers(s: Session) -> None:
    """Deleting a queue cancels its consumers: basic.cancel from the broker."""
    c1, c2 = s.connection(), s.connection()
    ch1, ch2 = c1.channel(), c2.channel()
    q = _queue_with(s, ch1, 2)
    ch1.basic_consume(q)
    ch1.wait_deliveries(2)
    b = ch2.basic_consume(q)
    other = _queue_with(s, ch2, 0, "other")
    kept = ch2.basic_consume(other)
    s.expect(ch2.queue_delete(q), 0, "delete-ok counts ready messages only")
    s.expect(ch1.wait_cancels(1), [C1], "a consumer on another connection")
    s.expect(ch2.wait_cancels(1), [C2], "a consumer on the deleting channel")
    s.expect(ch1.basic_ack(2, multiple=True), None, "deliveries of a deleted queue can be acked")
    s.expect(_ready(s, ch2, other), (0, 1), "other consumers are not cancelled")
    s.expect(ch2.basic_cancel(kept), None)
    s.expect(ch2.basic_cancel(b), None, "cancelling a cancelled consumer is fine")


def scenario_consume_channel_close_requeues_to_other_consumer(s: Session) -> None:
    ch1, ch2 = s.channel(), s.channel()
    q = _queue_with(s, ch1, 2)
    for ch in (ch1, ch2):
        ch.basic_qos(prefetch_count=1)
    ch1.basic_consume(q)
    s.expect(_seen(ch1.wait_deliveries(1)), [(C1, 1, b"m0", False)])
    ch2.basic_consume(q)
    s.expect(_seen(ch2.wait_deliveries(1)), [(C2, 1, b"m1", False)])
    ch1.close()
    s.expect(_ready(s, ch2, q), (1, 1), "m0 is back, ch2 is full")
    ch2.basic_ack(1)
    s.expect(_seen(ch2.wait_deliveries(1)), [(C2, 2, b"m0", True)])
    ch2.basic_ack(2)
    s.expect(_ready(s, ch2, q), (0, 1))


def scenario_consume_connection_close_requeues_to_other_consumer(s: Session) -> None:
    c1 = s.connection()
    ch1 = c1.channel()
    q = _queue_with(s, ch1, 3)
    a = ch1.basic_consume(q)
    s.expect(len(ch1.wait_deliveries(3)), 3)
    ch2 = s.connection().channel()
    b = ch2.basic_consume(q)
    c1.close()
    s.expect(_seen(ch2.wait_deliveries(3)),
             [(C2, 1, b"m0", True), (C2, 2, b"m1", True), (C2, 3, b"m2", True)])
    s.expect(a != b, True)


def scenario_consume_cancel_keeps_unacked(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 2)
    tag = ch.basic_consume(q)
    ch.wait_deliveries(2)
    ch.basic_cancel(tag)
    s.expect(_ready(s, ch, q), (0, 0), "cancel does not requeue")
    ch.basic_reject(1)
    s.expect(_ready(s, ch, q), (1, 0))
    ch.basic_ack(2)
    m = ch.basic_get(q)
    s.expect((getattr(m, "delivery_tag", None), getattr(m, "body", None),
              getattr(m, "redelivered", None)), (3, b"m0", True))


def scenario_consume_cancel_no_wait(s: Session) -> None:
    """basic.cancel with no-wait: the consumer goes, no cancel-ok comes."""
    ch = s.channel()
    q = _queue_with(s, ch, 0)
    tag = ch.basic_consume(q, consumer_tag="k")
    s.expect(ch.basic_cancel(tag, no_wait=True), None, "no cancel-ok")
    ch.basic_publish("", q, b"m0")
    s.expect(_ready(s, ch, q), (1, 0), "no consumer left")
    s.expect(ch.basic_cancel("unknown", no_wait=True), None, "an unknown tag: no reply either")


def scenario_basic_recover_requeue(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 3)
    ch.basic_consume(q)
    s.expect(_seen(ch.wait_deliveries(3)),
             [(C1, 1, b"m0", False), (C1, 2, b"m1", False), (C1, 3, b"m2", False)])
    ch.basic_ack(2)
    s.expect(ch.basic_recover(requeue=True), None)
    s.expect(_seen(ch.wait_deliveries(2)), [(C1, 4, b"m0", True), (C1, 5, b"m2", True)],
             "the unacked ones come again, redelivered, with new tags")
    s.expect_error(ch.basic_ack(1), 406, "PRECONDITION_FAILED - unknown delivery tag 1",
                   what="the old tags are gone")


def scenario_basic_recover_requeue_gets(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 2)
    ch.basic_get(q)
    ch.basic_get(q)
    s.expect(ch.basic_recover(requeue=True), None)
    s.expect(_ready(s, ch, q), (2, 0))
    m = ch.basic_get(q)
    s.expect((getattr(m, "delivery_tag", None), getattr(m, "body", None),
              getattr(m, "redelivered", None)), (3, b"m0", True))


def scenario_basic_recover_no_requeue(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 1)
    ch.basic_get(q)
    s.expect_error(ch.basic_recover(requeue=False), 540, "NOT_IMPLEMENTED - requeue=false",
                   scope="connection")
    ch = s.connection().channel()
    m = ch.basic_get(q)
    s.expect(getattr(m, "redelivered", None), True, "the closed connection requeued it")


def scenario_consume_auto_delete_queue_goes_with_last_consumer(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, auto_delete=True)
    t1, t2 = ch.basic_consume(q), ch.basic_consume(q)
    ch.basic_cancel(t1)
    s.expect(_ready(s, ch, q), (0, 1), "one consumer left")
    ch.basic_cancel(t2)
    s.expect_error(ch.queue_declare(q, passive=True), 404, "NOT_FOUND - no queue 'q' in vhost '/'")


def scenario_consume_empty_queue_name_is_last_declared(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 1)
    s.expect(ch.basic_consume(""), C1, "'' is the queue last declared on this channel")
    s.expect(_seen(ch.wait_deliveries(1)), [(C1, 1, b"m0", False)])
    s.expect_error(s.channel().basic_consume(""), 404, "NOT_FOUND - no previously declared queue",
                   scope="channel", what="a channel that declared nothing")
    s.expect(_ready(s, ch, q), (0, 1))


def scenario_consume_redeclare_counts_consumers(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 3)
    ch.basic_qos(prefetch_count=1)
    ch.basic_consume(q)
    ch.basic_consume(q)
    ch.wait_deliveries(2)
    s.expect(ch.queue_declare(q), QueueDeclareOk("q", 1, 2),
             "declare-ok counts ready messages and consumers")


def scenario_consume_qos_change_applies_to_new_consumers(s: Session) -> None:
    """global=false: a later basic.qos does not change the limit of existing consumers."""
    ch = s.channel()
    q1, q2 = _queue_with(s, ch, 3, "q1"), _queue_with(s, ch, 3, "q2")
    ch.basic_qos(prefetch_count=1)
    ch.basic_consume(q1)
    s.expect(_seen(ch.wait_deliveries(1)), [(C1, 1, b"m0", False)])
    ch.basic_qos(prefetch_count=2)
    ch.basic_consume(q2)
    s.expect(_seen(ch.wait_deliveries(2)), [(C2, 2, b"m0", False), (C2, 3, b"m1", False)])
    s.expect((_ready(s, ch, q1), _ready(s, ch, q2)), ((2, 1), (1, 1)),
             "the first consumer keeps its limit of 1")


def scenario_consume_global_qos_raised_releases_deliveries(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 3)
    ch.basic_qos(prefetch_count=1, global_qos=True)
    ch.basic_consume(q)
    s.expect(_seen(ch.wait_deliveries(1)), [(C1, 1, b"m0", False)])
    ch.basic_qos(prefetch_count=3, global_qos=True)
    s.expect(_seen(ch.wait_deliveries(2)), [(C1, 2, b"m1", False), (C1, 3, b"m2", False)],
             "raising the channel-wide limit lets the waiting messages through")


def scenario_consume_prefetch_two_ack_multiple(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 5)
    ch.basic_qos(prefetch_count=2)
    ch.basic_consume(q)
    s.expect(_seen(ch.wait_deliveries(2)), [(C1, 1, b"m0", False), (C1, 2, b"m1", False)])
    ch.basic_ack(2, multiple=True)
    s.expect(_seen(ch.wait_deliveries(2)), [(C1, 3, b"m2", False), (C1, 4, b"m3", False)])
    ch.basic_nack(4, multiple=True, requeue=False)
    s.expect(_seen(ch.wait_deliveries(1)), [(C1, 5, b"m4", False)])
    s.expect(_ready(s, ch, q), (0, 1), "m2 and m3 were dropped")


def scenario_consume_auto_delete_queue_goes_with_channel(s: Session) -> None:
    ch1 = s.channel()
    q = s.name("q")
    ch1.queue_declare(q, auto_delete=True)
    ch1.basic_publish("", q, b"m0")
    ch1.basic_consume(q)
    ch1.wait_deliveries(1)
    ch1.close()
    s.expect_error(s.channel().queue_declare(q, passive=True), 404,
                   "NOT_FOUND - no queue 'q' in vhost '/'",
                   what="closing the last consumer's channel deleted it, unacked message and all")


def scenario_consume_tx_publish_delivered_at_commit(s: Session) -> None:
    ch1, ch2 = s.channel(), s.channel()
    q = _queue_with(s, ch1, 0)
    ch2.basic_consume(q)
    ch1.tx_select()
    ch1.basic_publish("", q, b"m0")
    s.expect(_ready(s, ch1, q), (0, 1), "not routed before the commit")
    ch1.tx_commit()
    s.expect(_seen(ch2.wait_deliveries(1)), [(C1, 1, b"m0", False)])


def scenario_consume_exclusive_same_channel_twice(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 0)
    ch.basic_consume(q)
    s.expect_error(ch.basic_consume(q, exclusive=True), 403,
                   "ACCESS_REFUSED - queue 'q' in vhost '/' in exclusive use", scope="channel",
                   what="its own channel's consumer counts too")
    s.expect(_ready(s, s.channel(), q), (0, 0), "and the channel error cancelled that consumer")


def scenario_consume_priority(s: Session) -> None:
    """Consumer priorities (x-priority): the higher one gets the messages while it can take them."""
    ch1, ch2 = s.channel(), s.channel()
    q = _queue_with(s, ch1, 0)
    ch2.basic_qos(prefetch_count=2)
    ch1.basic_consume(q, consumer_tag=s.name("low"))
    ch2.basic_consume(q, consumer_tag=s.name("high"), arguments={"x-priority": 10})
    for i in range(3):
        ch1.basic_publish("", q, f"m{i}".encode())
    s.expect(_seen(ch2.wait_deliveries(2)), [("high", 1, b"m0", False), ("high", 2, b"m1", False)])
    s.expect(_seen(ch1.wait_deliveries(1)), [("low", 1, b"m2", False)],
             "the high-priority consumer is full: the next one goes to the low one")
