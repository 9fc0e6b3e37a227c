"""Scenarios: basic.get, delivery tags, redelivered, ack / nack / reject, properties."""

from __future__ import annotations

from .harness import ChannelProxy, Msg, Session


def _queue_with(s: Session, ch: ChannelProxy, n: int, base: str = "q") -> str:
    q = s.name(base)
    ch.queue_declare(q)
    for i in range(n):
        ch.basic_publish("", q, f"m{i}".encode())
    return q


def _tags(results: list) -> list:
    return [(m.delivery_tag, m.body, m.redelivered, m.message_count) if isinstance(m, Msg) else m
            for m in results]


def scenario_get_counts_and_tags(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 3)
    got = [ch.basic_get(q), ch.basic_get(q, auto_ack=True), ch.basic_get(q), ch.basic_get(q)]
    s.expect(_tags(got), [(1, b"m0", False, 2), (2, b"m1", False, 1), (3, b"m2", False, 0), None])
    ch2 = s.channel()
    ch2.basic_publish("", q, b"other channel")
    s.expect(_tags([ch2.basic_get(q)]), [(1, b"other channel", False, 0)],
             "delivery tags are per channel")


def scenario_get_missing_queue(s: Session) -> None:
    ch = s.channel()
    s.expect_error(ch.basic_get(s.name("missing")), 404, "NOT_FOUND - no queue 'missing' in vhost"
                   " '/'")


def scenario_properties_round_trip(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    props = {"content_type": "application/json", "content_encoding": "gzip",
             "headers": {"s": "text", "i": 7, "neg": -3, "big": 2**40, "t": True, "f": False,
                         "n": None, "l": [1, "a", [2]], "d": {"k": "v"}, "b": b"\xff\x00",
                         "fl": 1.5, "u": "h\u00e9"},
             "delivery_mode": 2, "priority": 9, "correlation_id": "corr", "reply_to": "amq.rabbit",
             "expiration": "100000", "message_id": "id-1", "timestamp": 1_700_000_000,
             "type": "kind", "user_id": "guest", "app_id": "app", "cluster_id": "cluster"}
    ch.basic_publish("", q, b"\x00\x01binary", props)
    ch.basic_publish("", q, b"", {})
    ch.basic_publish("", q, b"x" * 300_000, {"delivery_mode": 1})
    m1, m2, m3 = ch.basic_get(q), ch.basic_get(q), ch.basic_get(q)
    s.expect(getattr(m1, "properties", None), props)
    s.expect(getattr(m2, "properties", None), {})
    s.expect(len(getattr(m3, "body", b"")), 300_000)


def scenario_ack(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 3)
    for _ in range(3):
        ch.basic_get(q)
    s.expect(ch.basic_ack(2), None)
    s.expect(ch.queue_declare(q, passive=True).message_count, 0)
    ch.close()
    ch = s.channel()
    s.expect(_tags([ch.basic_get(q), ch.basic_get(q), ch.basic_get(q)]),
             [(1, b"m0", True, 1), (2, b"m2", True, 0), None],
             "closing the channel requeued the unacked ones in their original order")


def scenario_ack_multiple(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 5)
    for _ in range(5):
        ch.basic_get(q)
    ch.basic_ack(2)
    s.expect(ch.basic_ack(4, multiple=True), None, "acks 1, 3 and 4; 2 is already acked")
    ch.close()
    ch = s.channel()
    s.expect(ch.drain(q), [b"m4"])


def scenario_ack_zero_multiple(s: Session) -> None:
    """delivery tag 0 with multiple: every outstanding message."""
    ch = s.channel()
    q = _queue_with(s, ch, 3)
    for _ in range(3):
        ch.basic_get(q)
    s.expect(ch.basic_ack(0, multiple=True), None)
    ch.close()
    s.expect(s.channel().drain(q), [])


def scenario_ack_zero_multiple_nothing_outstanding(s: Session) -> None:
    ch = s.channel()
    s.expect(ch.basic_ack(0, multiple=True), None, "nothing outstanding: ok")


def scenario_ack_zero_single(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 1)
    ch.basic_get(q)
    s.expect_error(ch.basic_ack(0), 406, "PRECONDITION_FAILED - unknown delivery tag 0")


def scenario_ack_unknown_tag(s: Session) -> None:
    ch = s.channel()
    r = ch.basic_ack(1)
    s.expect_error(r, 406, "PRECONDITION_FAILED - unknown delivery tag 1", scope="channel")
    ch = s.channel()
    q = _queue_with(s, ch, 2)
    ch.basic_get(q)
    s.expect_error(ch.basic_ack(5, multiple=True), 406,
                   "PRECONDITION_FAILED - unknown delivery tag 5")
    ch = s.channel()
    s.expect(ch.drain(q), [b"m0", b"m1"], "the failed channel's message was requeued")


def scenario_ack_double(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 2)
    ch.basic_get(q)
    ch.basic_get(q)
    s.expect(ch.basic_ack(1), None)
    s.expect_error(ch.basic_ack(1), 406, "PRECONDITION_FAILED - unknown delivery tag 1")
    ch = s.channel()
    s.expect(ch.drain(q), [b"m1"], "the closed channel's unacked message came back")


def scenario_ack_auto_acked(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 1)
    ch.basic_get(q, auto_ack=True)
    s.expect_error(ch.basic_ack(1), 406, "PRECONDITION_FAILED - unknown delivery tag 1",
                   what="an auto-acked message cannot be acked")


def scenario_ack_other_channel(s: Session) -> None:
    ch1, ch2 = s.channel(), s.channel()
    q = _queue_with(s, ch1, 1)
    ch1.basic_get(q)
    s.expect_error(ch2.basic_ack(1), 406, "PRECONDITION_FAILED - unknown delivery tag 1")
    s.expect(ch1.basic_ack(1), None)


def scenario_reject_requeue_position(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 4)
    ch.basic_get(q)  # 1 m0
    ch.basic_get(q)  # 2 m1
    ch.basic_reject(2)
    got = [ch.basic_get(q) for _ in range(4)]
    s.expect(_tags(got), [(3, b"m1", True, 2), (4, b"m2", False, 1), (5, b"m3", False, 0), None],
             "m1 is back at the head, before m2")
    ch.basic_reject(1)
    s.expect(_tags([ch.basic_get(q)]), [(6, b"m0", True, 0)])


def scenario_reject_requeue_order_of_several(s: Session) -> None:
    """Requeued messages go back in the order of their original position, not of the rejects."""
    ch = s.channel()
    q = _queue_with(s, ch, 5)
    for _ in range(4):
        ch.basic_get(q)
    ch.basic_reject(3)
    ch.basic_reject(1)
    ch.basic_nack(4)
    ch.basic_reject(2)
    s.expect(ch.drain(q), [b"m0", b"m1", b"m2", b"m3", b"m4"])


def scenario_reject_no_requeue(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 2)
    ch.basic_get(q)
    s.expect(ch.basic_reject(1, requeue=False), None)
    s.expect(ch.drain(q), [b"m1"], "dropped (no dead-letter exchange)")


def scenario_reject_unknown_and_double(s: Session) -> None:
    ch = s.channel()
    s.expect_error(ch.basic_reject(7), 406, "PRECONDITION_FAILED - unknown delivery tag 7")
    ch = s.channel()
    q = _queue_with(s, ch, 1)
    ch.basic_get(q)
    ch.basic_reject(1)
    s.expect_error(ch.basic_reject(1), 406, "PRECONDITION_FAILED - unknown delivery tag 1")


def scenario_nack_multiple(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 5)
    for _ in range(4):
        ch.basic_get(q)
    ch.basic_ack(2)
    s.expect(ch.basic_nack(3, multiple=True), None, "requeues 1 and 3")
    got = [ch.basic_get(q) for _ in range(4)]
    s.expect(_tags(got), [(5, b"m0", True, 2), (6, b"m2", True, 1), (7, b"m4", False, 0), None])
    s.expect(ch.basic_nack(0, multiple=True, requeue=False), None, "drops all 4 outstanding")
    ch.close()
    s.expect(s.channel().drain(q), [], "m3 (tag 4) was dropped too")


def scenario_nack_zero_multiple(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 3)
    for _ in range(3):
        ch.basic_get(q)
    s.expect(ch.basic_nack(0, multiple=True), None)
    s.expect(_tags([ch.basic_get(q) for _ in range(3)]),
             [(4, b"m0", True, 2), (5, b"m1", True, 1), (6, b"m2", True, 0)])


def scenario_nack_unknown(s: Session) -> None:
    ch = s.channel()
    s.expect_error(ch.basic_nack(3), 406, "PRECONDITION_FAILED - unknown delivery tag 3")
    ch = s.channel()
    s.expect(ch.basic_nack(0, multiple=True), None, "nothing outstanding: ok")


def scenario_nack_no_requeue_multiple(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 3)
    for _ in range(3):
        ch.basic_get(q)
    ch.basic_nack(2, multiple=True, requeue=False)
    ch.basic_nack(3)
    s.expect(_tags([ch.basic_get(q), ch.basic_get(q)]), [(4, b"m2", True, 0), None])


def scenario_redelivered_after_connection_close(s: Session) -> None:
    c1 = s.connection()
    ch = c1.channel()
    q = _queue_with(s, ch, 2)
    ch.basic_get(q)
    c1.close()
    ch = s.channel()
    s.expect(_tags([ch.basic_get(q), ch.basic_get(q)]), [(1, b"m0", True, 1), (2, b"m1", False, 0)])


def scenario_redelivered_after_channel_error(s: Session) -> None:
    ch = s.channel()
    q = _queue_with(s, ch, 1)
    ch.basic_get(q)
    ch.queue_declare(s.name("missing"), passive=True)
    ch = s.channel()
    s.expect(_tags([ch.basic_get(q)]), [(1, b"m0", True, 0)])


def scenario_messages_to_two_queues_are_independent(s: Session) -> None:
    ch = s.channel()
    x, q1, q2 = s.name("x"), s.name("q1"), s.name("q2")
    ch.exchange_declare(x, "fanout")
    ch.queue_declare(q1)
    ch.queue_declare(q2)
    ch.queue_bind(q1, x, "")
    ch.queue_bind(q2, x, "")
    ch.basic_publish(x, "", b"m")
    ch.basic_get(q1)
    ch.basic_reject(1)
    s.expect(_tags([ch.basic_get(q1), ch.basic_get(q2)]), [(2, b"m", True, 0), (3, b"m", False, 0)])
