"""Scenarios: RabbitMQ's queue features (message TTL, queue expiry, length limits, priority
queues, consumer priorities). Dead-lettering is in ``scenarios_queue_deadletter``.

Time is real on every broker. A state that comes with time is waited for with
``s.wait_until`` (bounded polling, recorded once); "a TTL has run out" is shown with a *clock
queue*: a queue with that TTL and one message, polled until it is empty, so the broker itself
says the time has passed. TTLs that must not run out during a scenario are 60 s or more, those
that must run out 10-50 ms: no race between them.

Messages whose expiry is waited for are published in confirm mode: RabbitMQ answers a passive
queue.declare ahead of deliveries still in the queue's mailbox (``stat`` is a prioritised call),
so "the queue holds 0" right after a publish could mean "not there yet". A confirmed message is
in its queue, with its deadline set; a clock message published after it expires after it.
"""

from __future__ import annotations

from typing import Any

from .harness import ChannelProxy, Delivered, Msg, QueueDeclareOk, Session

#: A TTL (ms) that never runs out during a scenario, and short ones that do.
LONG = 60_000
SHORT = 20

NO_QUEUE = "NOT_FOUND - no queue '{}' in vhost '/'"


# --------------------------------------------------------------------------------------------
# Helpers shared with the dead-letter scenarios


def ready(ch: ChannelProxy, q: str) -> Any:
    """The ready count of ``q`` (passive declare), or the error."""
    r = ch.queue_declare(q, passive=True)
    return r.message_count if isinstance(r, QueueDeclareOk) else r


def bodies_of(got: Any) -> Any:
    """The bodies of a list of deliveries / gets (``None`` for an empty get)."""
    if not isinstance(got, list):
        return got
    return [m.body if isinstance(m, (Msg, Delivered)) else m for m in got]


class Prober:
    """Observes a queue without recording (for ``wait_until``), on a channel of its own that
    is replaced when an error closed it."""

    def __init__(self, s: Session) -> None:
        self.s = s
        self.ch: ChannelProxy | None = None

    def declare(self, q: str) -> Any:
        if self.ch is None or not self.ch.is_open:
            self.ch = self.s.channel()
        return self.ch.queue_declare(q, passive=True)


def wait_ready(s: Session, q: str, n: int) -> Any:
    """Wait until ``q`` holds ``n`` ready messages; record and return the declare-ok."""
    p = Prober(s)
    return s.wait_until(f"{s.normalize(q)} holds {n}", lambda: p.declare(q),
                        lambda r: isinstance(r, QueueDeclareOk) and r.message_count == n)


def confirming(s: Session) -> ChannelProxy:
    """A channel in confirm mode: each publish returns once its queues have the message."""
    ch = s.channel()
    ch.confirm_delivery()
    return ch


def elapse(s: Session, ms: int, base: str = "clock") -> None:
    """Return once ``ms`` milliseconds have passed on the broker (and its expiry timers ran):
    a message with that TTL, published now, has been removed from a queue of its own. Every
    message confirmed before with a TTL of at most ``ms`` has run out too."""
    q = s.name(base)
    ch = confirming(s)
    ch.queue_declare(q, arguments={"x-message-ttl": ms})
    ch.basic_publish("", q, b"tick")
    s.expect(wait_ready(s, q, 0), QueueDeclareOk(base, 0, 0), f"{ms} ms passed")
    ch.close()


def wait_gone(s: Session, q: str) -> Any:
    """Wait until queue ``q`` no longer exists, without touching it (a passive declare would
    renew an ``x-expires`` lease, a publish does not): a mandatory publish to it comes back
    (312 NO_ROUTE). Returns True once it is gone, False on timeout."""
    ch = s.channel()

    def probe() -> bool:
        before = len(ch.returned)
        ch.basic_publish("", q, b"probe", mandatory=True)
        return len(ch.returned) > before

    return s.wait_until(f"{s.normalize(q)} is gone", probe, bool)


# --------------------------------------------------------------------------------------------
# Message TTL


def scenario_ttl_queue_expires_messages(s: Session) -> None:
    """x-message-ttl: a message no consumer took is removed when its TTL runs out, by the queue
    itself (no basic.get or consumer needed to notice)."""
    ch = confirming(s)
    q, keep = s.name("q"), s.name("keep")
    ch.queue_declare(q, arguments={"x-message-ttl": SHORT})
    ch.queue_declare(keep, arguments={"x-message-ttl": LONG})
    ch.basic_publish("", q, b"m0")
    ch.basic_publish("", q, b"m1")
    ch.basic_publish("", keep, b"k0")
    s.expect(wait_ready(s, q, 0), QueueDeclareOk("q", 0, 0))
    s.expect(ch.basic_get(q), None)
    m = ch.basic_get(keep, auto_ack=True)
    s.expect(bodies_of([m]), [b"k0"], "a long TTL has not run out")
    if isinstance(m, Msg):
        s.expect(m.properties, {}, "a queue TTL sets no property")


def scenario_ttl_per_message(s: Session) -> None:
    """The expiration property (ms, as a string): the message goes when it runs out; the
    others stay. A delivered message keeps its expiration property."""
    ch = confirming(s)
    q = s.name("q")
    ch.queue_declare(q)
    ch.basic_publish("", q, b"short", {"expiration": str(SHORT)})
    ch.basic_publish("", q, b"forever")
    ch.basic_publish("", q, b"long", {"expiration": str(LONG)})
    s.expect(wait_ready(s, q, 2), QueueDeclareOk("q", 2, 0))
    got = [ch.basic_get(q, auto_ack=True) for _ in range(3)]
    s.expect(bodies_of(got), [b"forever", b"long", None])
    s.expect(got[1].properties if isinstance(got[1], Msg) else got[1], {"expiration": "60000"})


def scenario_ttl_smaller_of_queue_and_message(s: Session) -> None:
    """Queue TTL and expiration property together: the smaller one counts."""
    ch = confirming(s)
    q1, q2, q3 = s.name("q1"), s.name("q2"), s.name("q3")
    ch.queue_declare(q1, arguments={"x-message-ttl": LONG})
    ch.queue_declare(q2, arguments={"x-message-ttl": SHORT})
    ch.queue_declare(q3, arguments={"x-message-ttl": LONG})
    ch.basic_publish("", q1, b"message ttl shorter", {"expiration": str(SHORT)})
    ch.basic_publish("", q2, b"queue ttl shorter", {"expiration": str(LONG)})
    ch.basic_publish("", q3, b"both long", {"expiration": str(LONG)})
    s.expect(wait_ready(s, q1, 0), QueueDeclareOk("q1", 0, 0))
    s.expect(wait_ready(s, q2, 0), QueueDeclareOk("q2", 0, 0))
    s.expect(bodies_of([ch.basic_get(q3, auto_ack=True)]), [b"both long"])


def scenario_ttl_removed_at_the_head_only(s: Session) -> None:
    """An expired message behind a live one stays (and is counted) until it reaches the head;
    then it goes before anyone sees it."""
    ch = confirming(s)
    q = s.name("q")
    ch.queue_declare(q)
    ch.basic_publish("", q, b"long", {"expiration": str(LONG)})
    ch.basic_publish("", q, b"short", {"expiration": str(SHORT)})
    ch.basic_publish("", q, b"plain")
    elapse(s, SHORT)
    s.expect(ready(ch, q), 3, "'short' has run out but is behind 'long'")
    m = ch.basic_get(q, auto_ack=True)
    s.expect(bodies_of([m]), [b"long"])
    s.expect(m.message_count if isinstance(m, Msg) else m, 1,
             "get-ok counts after 'short', now at the head, is removed")
    s.expect(ready(ch, q), 1)
    s.expect(bodies_of([ch.basic_get(q, auto_ack=True)]), [b"plain"])


def scenario_ttl_expired_head_not_counted(s: Session) -> None:
    """Once a message's TTL has run out it is not counted any more, though nobody read the
    queue: RabbitMQ removes an expired head on a timer, and a passive declare drops it too."""
    ch = confirming(s)
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-message-ttl": SHORT})
    ch.basic_publish("", q, b"m0")
    s.expect(ready(ch, q), 1)
    elapse(s, SHORT)
    s.expect(ready(ch, q), 0, "the TTL ran out before the clock's")


def scenario_ttl_zero(s: Session) -> None:
    """TTL 0: delivered if a consumer can take the message at once, otherwise expired."""
    ch = confirming(s)
    q, p = s.name("q"), s.name("p")
    ch.queue_declare(q, arguments={"x-message-ttl": 0})
    ch.queue_declare(p)
    ch.basic_publish("", q, b"nobody waiting")
    ch.basic_publish("", p, b"nobody waiting either", {"expiration": "0"})
    s.expect((ready(ch, q), ready(ch, p)), (0, 0), "expired at once")
    ch2 = s.channel()
    ch2.basic_qos(prefetch_count=1)
    ch2.basic_consume(q, consumer_tag=s.name("cq"))
    ch2.basic_consume(p, consumer_tag=s.name("cp"))
    ch.basic_publish("", q, b"q taken")
    ch.basic_publish("", p, b"p taken", {"expiration": "0"})
    got = ch2.wait_deliveries(2)
    s.expect([(d.consumer_tag, d.body) for d in got] if isinstance(got, list) else got,
             [("cq", b"q taken"), ("cp", b"p taken")])
    ch.basic_publish("", q, b"consumer full")
    ch.basic_publish("", p, b"consumer full too", {"expiration": "0"})
    s.expect((ready(ch, q), ready(ch, p)), (0, 0), "the consumers have no room: expired")
    ch2.basic_ack(0, multiple=True)
    ch.basic_publish("", q, b"room again")
    s.expect(bodies_of(ch2.wait_deliveries(1)), [b"room again"])


def scenario_ttl_invalid_expiration(s: Session) -> None:
    """An expiration that is not a number of milliseconds is a channel error at publish."""
    q = s.name("q")
    s.channel().queue_declare(q)
    for value, reason in (
        ("soon", "no_integer"),
        ("", "no_integer"),
        (" 5", "no_integer"),
        ("-1", "{value_negative,-1}"),
        ("10ms", '{leftover_string,"ms"}'),
        ("1.5", '{leftover_string,".5"}'),
        ("315360000001", "{value_too_large,315360000001}"),
        # Erlang's ~p breaks a term that would pass column 78 after its first comma, aligning
        # the rest under it (measured: 78 columns fit, 79 do not).
        ("-" + "9" * 18, "{value_negative,-999999999999999999}"),
        ("-" + "9" * 19, "{value_negative,\n" + " " * 44 + "-" + "9" * 19 + "}"),
        ("9" * 19, "{value_too_large,\n" + " " * 43 + "9" * 19 + "}"),
        ("9" * 20, "{value_too_large,\n" + " " * 44 + "9" * 20 + "}"),
        ("1" + "a" * 17, '{leftover_string,"' + "a" * 17 + '"}'),
        ("12" + "a" * 17, '{leftover_string,\n' + " " * 43 + '"' + "a" * 17 + '"}'),
        ('1a"b\\', '{leftover_string,"a\\"b\\\\"}'),
    ):
        ch = s.channel()
        s.expect_error(ch.basic_publish("", q, b"m", {"expiration": value}), 406,
                       f"PRECONDITION_FAILED - invalid expiration '{value}': {reason}",
                       scope="channel")
    # A reply text over 255 bytes is cut to 252 and "...".
    ch = s.channel()
    value = "1" + "a" * 200
    s.expect_error(ch.basic_publish("", q, b"m", {"expiration": value}), 406,
                   f"PRECONDITION_FAILED - invalid expiration '{value}': {{leftover_string,"[:252]
                   + "...", scope="channel")
    s.expect(ready(s.channel(), q), 0)


def scenario_ttl_expiration_accepted_forms(s: Session) -> None:
    """What RabbitMQ accepts as an expiration: a sign, leading zeros, up to 315360000000 (ten
    years; more than 32 bits)."""
    q = s.name("q")
    s.channel().queue_declare(q)
    for value in ("315360000000", "4294967296", "+60000", "0060000", "-0"):
        ch = confirming(s)  # a refusal closes only its own channel
        s.expect_ok(ch.basic_publish("", q, value.encode(), {"expiration": value}), value)
    ch = s.channel()
    s.expect(ready(ch, q), 5, "all accepted and queued")
    got = [ch.basic_get(q, auto_ack=True) for _ in range(5)]
    s.expect(bodies_of(got), [b"315360000000", b"4294967296", b"+60000", b"0060000", None],
             "'-0' is 0: expired at the head")


def scenario_ttl_argument_limits(s: Session) -> None:
    """x-message-ttl and x-expires: 0..315360000000 ms (x-expires not 0)."""
    for arg, value in (("x-message-ttl", 0), ("x-message-ttl", 4294967296),
                       ("x-message-ttl", 315360000000), ("x-expires", 4294967296),
                       ("x-expires", 315360000000)):
        ch = s.channel()
        s.expect_ok(ch.queue_declare(s.name(f"{arg}-{value}"), arguments={arg: value}),
                    f"{arg}={value}")
    bad: tuple[tuple[str, Any, str], ...] = (
        ("x-message-ttl", 315360000001, "{value_too_large,315360000001}"),
        ("x-message-ttl", -1, "{value_negative,-1}"),
        ("x-message-ttl", 1.5, '"expected integer, got double"'),
        ("x-expires", 315360000001, "{value_too_large,315360000001}"),
        ("x-expires", 0, "{value_zero,0}"),
        ("x-expires", -1, "{value_negative,-1}"),
        ("x-expires", "10", '"expected integer, got longstr"'),
    )
    for arg, value, reason in bad:
        name = f"bad-{arg}"
        ch = s.channel()
        s.expect_error(ch.queue_declare(s.name(name), arguments={arg: value}), 406,
                       f"PRECONDITION_FAILED - invalid arg '{arg}' for queue '{name}' in vhost"
                       f" '/': {reason}", scope="channel")


def scenario_ttl_unacked_message_does_not_expire(s: Session) -> None:
    """A delivered, unacknowledged message is out of the queue: its TTL does not remove it.
    (The consumer is there first: a message that is delivered at once never waits.)"""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-message-ttl": SHORT})
    ch.basic_consume(q, consumer_tag=s.name("c"))
    ch.basic_publish("", q, b"m0")
    s.expect(bodies_of(ch.wait_deliveries(1)), [b"m0"])
    elapse(s, SHORT)
    s.expect(ch.basic_ack(1), None, "still acknowledgeable")
    s.expect(ready(ch, q), 0)


def scenario_ttl_requeued_after_expiry(s: Session) -> None:
    """A message requeued after its TTL ran out keeps its deadline: it expires at once and is
    not delivered again (the next delivery shows it)."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-message-ttl": SHORT})
    ch.basic_qos(prefetch_count=1)
    ch.basic_consume(q, consumer_tag=s.name("c"))
    ch.basic_publish("", q, b"m0")
    s.expect(bodies_of(ch.wait_deliveries(1)), [b"m0"])
    elapse(s, SHORT)
    ch.basic_nack(1, requeue=True)
    ch.basic_publish("", q, b"m1")
    got = ch.wait_deliveries(1)
    s.expect([(d.delivery_tag, d.redelivered, d.body) for d in got]
             if isinstance(got, list) else got, [(2, False, b"m1")])
    s.expect(ready(ch, q), 0)


def scenario_ttl_waiting_message_expires_before_delivery(s: Session) -> None:
    """A message waiting for a consumer with no room expires meanwhile; it is never
    delivered (the next delivery tag shows it)."""
    ch = confirming(s)
    q = s.name("q")
    ch.queue_declare(q)
    ch.basic_qos(prefetch_count=1)
    ch.basic_consume(q, consumer_tag=s.name("c"))
    ch.basic_publish("", q, b"m0")
    ch.basic_publish("", q, b"m1", {"expiration": str(SHORT)})
    s.expect(bodies_of(ch.wait_deliveries(1)), [b"m0"])
    s.expect(wait_ready(s, q, 0), QueueDeclareOk("q", 0, 1))
    ch.basic_ack(1)
    ch.basic_publish("", q, b"m2")
    got = ch.wait_deliveries(1)
    s.expect([(d.delivery_tag, d.body) for d in got] if isinstance(got, list) else got,
             [(2, b"m2")])


# --------------------------------------------------------------------------------------------
# Queue expiry (x-expires)


def scenario_queue_expires_when_unused(s: Session) -> None:
    """x-expires: a queue without consumers, not declared or read from for that long, is
    deleted, messages and all (they are not dead-lettered)."""
    ch = s.channel()
    q, dead = s.name("q"), s.name("dead")
    ch.queue_declare(dead)
    ch.queue_declare(q, arguments={"x-expires": 30, "x-dead-letter-exchange": "",
                                   "x-dead-letter-routing-key": dead})
    ch.basic_publish("", q, b"m0")
    s.expect(wait_gone(s, q), True)
    s.expect_error(s.channel().queue_declare(q, passive=True), 404, NO_QUEUE.format("q"))
    s.expect(ready(ch, dead), 0)


def scenario_queue_expires_not_while_consumed(s: Session) -> None:
    """A queue with a consumer does not expire; once the last consumer is cancelled the
    countdown starts. (100 ms: time enough to start consuming after the declare.)"""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-expires": 100})
    tag = ch.basic_consume(q, consumer_tag=s.name("c"))
    elapse(s, 150)
    s.expect(ch.queue_declare(q, passive=True), QueueDeclareOk("q", 0, 1))
    ch.basic_cancel(tag)
    s.expect(wait_gone(s, q), True)
    s.expect_error(ch.queue_declare(q, passive=True), 404, NO_QUEUE.format("q"))


# --------------------------------------------------------------------------------------------
# Length limits


def scenario_max_length_drop_head(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-max-length": 2})
    for i in range(4):
        ch.basic_publish("", q, f"m{i}".encode())
    s.expect(ready(ch, q), 2)
    s.expect(ch.drain(q), [b"m2", b"m3"], "the oldest went")


def scenario_max_length_bytes_drop_head(s: Session) -> None:
    """x-max-length-bytes counts body bytes; a message larger than the limit alone is dropped
    itself (it was the head)."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-max-length-bytes": 10})
    for body in (b"aaaa", b"bbbb", b"cc", b"dddd"):
        ch.basic_publish("", q, body, {"headers": {"big": "headers do not count" * 10}})
    s.expect(ready(ch, q), 3)
    ch.basic_publish("", q, b"x" * 11)
    s.expect(ready(ch, q), 0, "over the limit on its own: everything goes")
    ch.basic_publish("", q, b"x" * 10)
    s.expect(ready(ch, q), 1, "exactly the limit fits")


def scenario_max_length_counts_ready_only(s: Session) -> None:
    """Unacked messages do not count; a requeue over the limit drops from the head (the
    requeued message, back at the head)."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-max-length": 1})
    ch.basic_publish("", q, b"m0")
    ch.basic_get(q)
    ch.basic_publish("", q, b"m1")
    s.expect(ready(ch, q), 1, "m0 is unacked: not counted")
    ch.basic_nack(1, requeue=True)
    s.expect(ready(ch, q), 1)
    s.expect(ch.drain(q), [b"m1"])


def scenario_max_length_zero(s: Session) -> None:
    """x-max-length 0 with drop-head: a consumer that can take the message gets it, else it is
    dropped. With reject-publish the message is refused even with a consumer waiting."""
    ch = s.channel()
    q, r = s.name("q"), s.name("r")
    ch.queue_declare(q, arguments={"x-max-length": 0})
    ch.queue_declare(r, arguments={"x-max-length": 0, "x-overflow": "reject-publish"})
    ch.basic_publish("", q, b"dropped")
    s.expect(ready(ch, q), 0)
    ch2 = s.channel()
    ch2.basic_consume(q, consumer_tag=s.name("cq"), auto_ack=True)
    ch2.basic_consume(r, consumer_tag=s.name("cr"), auto_ack=True)
    ch.confirm_delivery()
    ch.basic_publish("", q, b"to the consumer")
    ch.basic_publish("", r, b"refused")
    ch.basic_publish("", q, b"to the consumer too")
    got = ch2.wait_deliveries(2)
    s.expect([(d.consumer_tag, d.body) for d in got] if isinstance(got, list) else got,
             [("cq", b"to the consumer"), ("cq", b"to the consumer too")])


def scenario_max_length_reject_publish(s: Session) -> None:
    """reject-publish: a full queue refuses new messages (silently without confirms, nack with
    them; a mandatory message is not returned: it was routed)."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-max-length": 2, "x-overflow": "reject-publish"})
    for i in range(3):
        ch.basic_publish("", q, f"m{i}".encode())
    s.expect(ready(ch, q), 2)
    ch.confirm_delivery()
    ch.basic_publish("", q, b"m3", mandatory=True)
    ch.basic_get(q)
    ch.basic_publish("", q, b"m4")
    s.expect([(c.delivery_tag, c.multiple, c.ack) for c in ch.confirms],
             [(1, True, False), (2, False, True)], "refused: a nack (multiple=true)")
    s.expect(ch.returned, [], "refused is not unroutable")
    s.expect(ch.drain(q), [b"m1", b"m4"])


def scenario_max_length_several_queues_one_refuses(s: Session) -> None:
    """A message routed to two queues, one of them full with reject-publish: nacked, though the
    other queue took it."""
    ch = s.channel()
    full, free = s.name("full"), s.name("free")
    ch.queue_declare(full, arguments={"x-max-length": 0, "x-overflow": "reject-publish"})
    ch.queue_declare(free)
    ch.queue_bind(full, "amq.fanout")
    ch.queue_bind(free, "amq.fanout")
    ch.confirm_delivery()
    ch.basic_publish("amq.fanout", "", b"m0")
    s.expect([(c.delivery_tag, c.ack) for c in ch.confirms], [(1, False)])
    s.expect((ready(ch, full), ready(ch, free)), (0, 1))
    ch.queue_unbind(full, "amq.fanout")
    ch.queue_unbind(free, "amq.fanout")


def scenario_max_length_invalid_overflow(s: Session) -> None:
    for value, reason in (("drop", "invalid_overflow"), (1, "{unacceptable_type,signedint}")):
        ch = s.channel()
        s.expect_error(ch.queue_declare(s.name("q"), arguments={"x-overflow": value}), 406,
                       f"PRECONDITION_FAILED - invalid arg 'x-overflow' for queue 'q' in vhost"
                       f" '/': {reason}", scope="channel")
    ch = s.channel()
    s.expect_error(ch.queue_declare(s.name("q"), arguments={"x-max-length-bytes": -5}), 406,
                   "PRECONDITION_FAILED - invalid arg 'x-max-length-bytes' for queue 'q' in vhost"
                   " '/': {value_negative,-5}")


# --------------------------------------------------------------------------------------------
# Priority queues


def scenario_priority_queue_order(s: Session) -> None:
    """x-max-priority: highest priority first, FIFO within a priority; no priority is 0."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-max-priority": 5})
    for body, priority in ((b"none", None), (b"p1", 1), (b"p5a", 5), (b"p3", 3), (b"p5b", 5),
                           (b"p0", 0), (b"p1b", 1)):
        ch.basic_publish("", q, body, {"priority": priority} if priority is not None else None)
    s.expect(ready(ch, q), 7)
    s.expect(ch.drain(q), [b"p5a", b"p5b", b"p3", b"p1", b"p1b", b"none", b"p0"])


def scenario_priority_above_max(s: Session) -> None:
    """A priority above x-max-priority counts as the maximum (FIFO with it); the property is
    delivered unchanged."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-max-priority": 3})
    for body, priority in ((b"p2", 2), (b"p9", 9), (b"p3", 3), (b"p200", 200)):
        ch.basic_publish("", q, body, {"priority": priority})
    got = [ch.basic_get(q, auto_ack=True) for _ in range(4)]
    s.expect(bodies_of(got), [b"p9", b"p3", b"p200", b"p2"])
    s.expect([m.properties.get("priority") for m in got if isinstance(m, Msg)], [9, 3, 200, 2])


def scenario_priority_requeue_and_consumer(s: Session) -> None:
    """A requeued message goes back first among its priority; a consumer gets the waiting
    messages by priority."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-max-priority": 10})
    for body, priority in ((b"a5", 5), (b"b5", 5), (b"c1", 1), (b"d9", 9)):
        ch.basic_publish("", q, body, {"priority": priority})
    s.expect(bodies_of([ch.basic_get(q), ch.basic_get(q)]), [b"d9", b"a5"])
    ch.basic_nack(0, multiple=True, requeue=True)
    ch2 = s.channel()
    ch2.basic_qos(prefetch_count=1)
    ch2.basic_consume(q, consumer_tag=s.name("c"))
    s.expect(bodies_of(ch2.wait_deliveries(1)), [b"d9"])
    ch.basic_publish("", q, b"e7", {"priority": 7})
    ch2.basic_ack(1)
    s.expect(bodies_of(ch2.wait_deliveries(1)), [b"e7"])
    ch2.basic_cancel(s.name("c"))
    got = [ch2.basic_get(q, auto_ack=True) for _ in range(4)]
    s.expect([(m.body, m.redelivered) for m in got if isinstance(m, Msg)],
             [(b"a5", True), (b"b5", False), (b"c1", False)])


def scenario_priority_ignored_without_max(s: Session) -> None:
    """Without x-max-priority (or with 0) the priority property changes nothing."""
    ch = s.channel()
    for base, args in (("plain", None), ("zero", {"x-max-priority": 0})):
        q = s.name(base)
        ch.queue_declare(q, arguments=args)
        for body, priority in ((b"p1", 1), (b"p9", 9), (b"p5", 5)):
            ch.basic_publish("", q, body, {"priority": priority})
        s.expect(ch.drain(q), [b"p1", b"p9", b"p5"], base)


def scenario_priority_invalid_max(s: Session) -> None:
    for value, reason in ((256, "{max_value_exceeded,256}"), (-1, "{value_negative,-1}"),
                          ("5", '"expected integer, got longstr"')):
        ch = s.channel()
        s.expect_error(ch.queue_declare(s.name("q"), arguments={"x-max-priority": value}), 406,
                       f"PRECONDITION_FAILED - invalid arg 'x-max-priority' for queue 'q' in"
                       f" vhost '/': {reason}", scope="channel")
    s.expect_ok(s.channel().queue_declare(s.name("q"), arguments={"x-max-priority": 255}))


def scenario_priority_with_max_length(s: Session) -> None:
    """drop-head in a priority queue drops the head: the highest priority's oldest message."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-max-priority": 5, "x-max-length": 2})
    for body, priority in ((b"low", 1), (b"high", 5), (b"mid", 3)):
        ch.basic_publish("", q, body, {"priority": priority})
    s.expect(ch.drain(q), [b"mid", b"low"])


# --------------------------------------------------------------------------------------------
# Consumer priorities (x-priority)


def scenario_consumer_priority_order(s: Session) -> None:
    """Consumers of the highest priority that have room get the messages, taking turns among
    themselves; a negative priority is below the default 0."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    ch.basic_qos(prefetch_count=2)
    ch.basic_consume(q, consumer_tag=s.name("neg"), arguments={"x-priority": -5})
    ch.basic_consume(q, consumer_tag=s.name("default"))
    ch.basic_consume(q, consumer_tag=s.name("high1"), arguments={"x-priority": 3})
    ch.basic_consume(q, consumer_tag=s.name("high2"), arguments={"x-priority": 3})
    for i in range(8):
        ch.basic_publish("", q, f"m{i}".encode())
    got = ch.wait_deliveries(8)
    s.expect([(d.consumer_tag, d.body) for d in got] if isinstance(got, list) else got,
             [("high1", b"m0"), ("high2", b"m1"), ("high1", b"m2"), ("high2", b"m3"),
              ("default", b"m4"), ("default", b"m5"), ("neg", b"m6"), ("neg", b"m7")])
    ch.basic_ack(1)
    ch.basic_publish("", q, b"m8")
    got = ch.wait_deliveries(1)
    s.expect([(d.consumer_tag, d.body) for d in got] if isinstance(got, list) else got,
             [("high1", b"m8")], "room again at the top")


def scenario_consumer_priority_invalid(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    s.expect_error(ch.basic_consume(q, arguments={"x-priority": "high"}), 406,
                   "PRECONDITION_FAILED - invalid arg 'x-priority' for queue 'q' in vhost '/':"
                   " \"expected integer, got longstr\"", scope="channel")
