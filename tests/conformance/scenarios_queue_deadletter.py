"""Scenarios: dead-lettering (x-dead-letter-exchange, x-dead-letter-routing-key, the x-death
header, cycles).

The ``time`` of an x-death entry is the broker's wall clock: the transcript shows it as
``<time>`` (see ``Normalizer``). Waiting for time: see ``scenarios_queue_features``.

In RabbitMQ the queue a message dies in republishes it to the dead-letter queue on its own,
after the reject (or publish) that caused it has returned: a dead-lettered message is waited
for (``wait_ready``) before it is read.
"""

from __future__ import annotations

from typing import Any

from .harness import DEATH_TIME, ChannelProxy, Msg, QueueDeclareOk, Session
from .scenarios_queue_features import SHORT, bodies_of, ready, wait_ready


def _dead_letter_queue(s: Session, ch: ChannelProxy, exchange_type: str = "fanout",
                       key: str = "") -> tuple[str, str]:
    """A dead-letter exchange ``dlx`` with a queue ``dead`` bound to it (with ``key``)."""
    dlx, dead = s.name("dlx"), s.name("dead")
    ch.exchange_declare(dlx, exchange_type)
    ch.queue_declare(dead)
    ch.queue_bind(dead, dlx, key)
    return dlx, dead


def _death(reason: str, queue: str, exchange: str, keys: list[str], count: int = 1,
           original_expiration: str | None = None) -> dict[str, Any]:
    """An x-death entry as the transcript shows it (names without the run's prefix)."""
    entry: dict[str, Any] = {"count": count, "reason": reason, "queue": queue,
                             "time": DEATH_TIME, "exchange": exchange, "routing-keys": keys}
    if original_expiration is not None:
        entry["original-expiration"] = original_expiration
    return entry


def _first(reason: str, queue: str, exchange: str) -> dict[str, Any]:
    return {"x-first-death-reason": reason, "x-first-death-queue": queue,
            "x-first-death-exchange": exchange}


def _headers(m: Any) -> Any:
    """The headers of a Msg (normalized by ``s.expect``), or what came instead."""
    return m.properties.get("headers") if isinstance(m, Msg) else m


# --------------------------------------------------------------------------------------------
# Reasons


def scenario_dlx_rejected(s: Session) -> None:
    """reject / nack with requeue=false: the message goes to the dead-letter exchange with its
    original routing key, its properties, and x-death / x-first-death-* headers."""
    ch = s.channel()
    dlx, dead = _dead_letter_queue(s, ch)
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": dlx})
    props = {"content_type": "text/plain", "headers": {"h": "v"}, "delivery_mode": 2,
             "correlation_id": "c1", "message_id": "id1"}
    ch.basic_publish("", q, b"m0", props)
    ch.basic_publish("", q, b"m1")
    ch.basic_get(q)
    ch.basic_get(q)
    ch.basic_reject(1, requeue=False)
    ch.basic_nack(2, requeue=False)
    wait_ready(s, dead, 2)
    m0, m1 = ch.basic_get(dead, auto_ack=True), ch.basic_get(dead, auto_ack=True)
    death = {"x-death": [_death("rejected", "q", "", ["q"])], **_first("rejected", "q", "")}
    s.expect(m0, Msg("dlx", "q", False, 3, 1, {**props, "headers": {"h": "v", **death}}, b"m0"))
    s.expect(m1, Msg("dlx", "q", False, 4, 0, {"headers": death}, b"m1"))
    s.expect(ready(ch, q), 0)


def scenario_dlx_nack_multiple_from_consumer(s: Session) -> None:
    """A consumer's nack(multiple, requeue=false): each message dead-lettered, in order, to a
    consumer of the dead-letter queue."""
    ch = s.channel()
    dlx, dead = _dead_letter_queue(s, ch)
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": dlx})
    for i in range(3):
        ch.basic_publish("", q, f"m{i}".encode())
    ch.basic_consume(q, consumer_tag=s.name("c"))
    s.expect(bodies_of(ch.wait_deliveries(3)), [b"m0", b"m1", b"m2"])
    ch2 = s.channel()
    ch2.basic_consume(dead, consumer_tag=s.name("d"), auto_ack=True)
    ch.basic_nack(3, multiple=True, requeue=False)
    got = ch2.wait_deliveries(3)
    s.expect([(d.consumer_tag, d.routing_key, d.body) for d in got]
             if isinstance(got, list) else got,
             [("d", "q", b"m0"), ("d", "q", b"m1"), ("d", "q", b"m2")])


def scenario_dlx_routing_key(s: Session) -> None:
    """x-dead-letter-routing-key replaces the routing key; the x-death entry keeps the
    original exchange and key."""
    ch = s.channel()
    dlx, dead = _dead_letter_queue(s, ch, "direct", s.name("dk"))
    other = s.name("other")
    ch.queue_declare(other)
    ch.queue_bind(other, dlx, s.name("k"))
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": dlx,
                                   "x-dead-letter-routing-key": s.name("dk")})
    ch.queue_bind(q, "amq.direct", s.name("k"))
    ch.basic_publish("amq.direct", s.name("k"), b"m0")
    ch.basic_get(q)
    ch.basic_reject(1, requeue=False)
    wait_ready(s, dead, 1)
    m = ch.basic_get(dead, auto_ack=True)
    s.expect(m, Msg("dlx", "dk", False, 2, 0, {"headers": {
        "x-death": [_death("rejected", "q", "amq.direct", ["k"])],
        **_first("rejected", "q", "amq.direct")}}, b"m0"))
    s.expect(ready(ch, other), 0, "not routed with the original key")
    ch.queue_unbind(q, "amq.direct", s.name("k"))


def scenario_dlx_expired_per_message(s: Session) -> None:
    """reason expired; the expiration property is removed and kept in the entry as
    original-expiration."""
    ch = s.channel()
    dlx, dead = _dead_letter_queue(s, ch)
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": dlx})
    ch.basic_publish("", q, b"m0", {"expiration": str(SHORT), "app_id": "a"})
    s.expect(wait_ready(s, dead, 1), QueueDeclareOk("dead", 1, 0))
    s.expect(ch.basic_get(dead, auto_ack=True), Msg("dlx", "q", False, 1, 0, {
        "app_id": "a", "headers": {
            "x-death": [_death("expired", "q", "", ["q"], original_expiration="20")],
            **_first("expired", "q", "")}}, b"m0"))
    s.expect(ready(ch, q), 0)


def scenario_dlx_expired_queue_ttl(s: Session) -> None:
    """reason expired through x-message-ttl: no original-expiration."""
    ch = s.channel()
    dlx, dead = _dead_letter_queue(s, ch)
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": dlx, "x-message-ttl": SHORT})
    ch.basic_publish("", q, b"m0")
    ch.basic_publish("", q, b"m1")
    s.expect(wait_ready(s, dead, 2), QueueDeclareOk("dead", 2, 0))
    m = ch.basic_get(dead, auto_ack=True)
    s.expect(bodies_of([m]), [b"m0"])
    s.expect(_headers(m), {"x-death": [_death("expired", "q", "", ["q"])],
                           **_first("expired", "q", "")})


def scenario_dlx_maxlen_drop_head(s: Session) -> None:
    ch = s.channel()
    dlx, dead = _dead_letter_queue(s, ch)
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": dlx, "x-max-length": 1})
    ch.basic_publish("", q, b"m0")
    ch.basic_publish("", q, b"m1")
    wait_ready(s, dead, 1)
    m = ch.basic_get(dead, auto_ack=True)
    s.expect(bodies_of([m]), [b"m0"])
    s.expect(_headers(m), {"x-death": [_death("maxlen", "q", "", ["q"])],
                           **_first("maxlen", "q", "")})
    s.expect(ch.drain(q), [b"m1"])


def scenario_dlx_reject_publish_dlx(s: Session) -> None:
    """x-overflow reject-publish-dlx: the refused message is nacked and dead-lettered
    (reason maxlen); with reject-publish it is not dead-lettered."""
    ch = s.channel()
    dlx, dead = _dead_letter_queue(s, ch)
    q, r = s.name("q"), s.name("r")
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": dlx, "x-max-length": 1,
                                   "x-overflow": "reject-publish-dlx"})
    ch.queue_declare(r, arguments={"x-dead-letter-exchange": dlx, "x-max-length": 1,
                                   "x-overflow": "reject-publish"})
    ch.confirm_delivery()
    ch.basic_publish("", q, b"q0")
    ch.basic_publish("", q, b"q1")
    ch.basic_publish("", r, b"r0")
    ch.basic_publish("", r, b"r1")
    s.expect([(c.delivery_tag, c.ack) for c in ch.confirms],
             [(1, True), (2, False), (3, True), (4, False)])
    wait_ready(s, dead, 1)
    m = ch.basic_get(dead, auto_ack=True)
    s.expect(bodies_of([m]), [b"q1"])
    s.expect(_headers(m), {"x-death": [_death("maxlen", "q", "", ["q"])],
                           **_first("maxlen", "q", "")})
    s.expect(ready(ch, dead), 0, "r1 was not dead-lettered")
    s.expect((ch.drain(q), ch.drain(r)), ([b"q0"], [b"r0"]))


# --------------------------------------------------------------------------------------------
# Where dead letters go


def scenario_dlx_missing_exchange(s: Session) -> None:
    """A dead-letter exchange that does not exist: the message is dropped, no error. It is
    looked up when a message dies: declaring it later works."""
    ch = s.channel()
    q, dead, dlx = s.name("q"), s.name("dead"), s.name("dlx")
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": dlx})
    ch.basic_publish("", q, b"m0")
    ch.basic_publish("", q, b"m1")
    ch.basic_get(q)
    s.expect(ch.basic_reject(1, requeue=False), None)
    ch.exchange_declare(dlx, "fanout")
    ch.queue_declare(dead)
    ch.queue_bind(dead, dlx)
    s.expect(ready(ch, dead), 0, "m0 was dropped")
    ch.basic_get(q)
    ch.basic_reject(2, requeue=False)
    wait_ready(s, dead, 1)
    s.expect(ch.drain(dead), [b"m1"])


def scenario_dlx_internal_exchange(s: Session) -> None:
    """An internal exchange works as a dead-letter exchange."""
    ch = s.channel()
    dlx, dead = s.name("dlx"), s.name("dead")
    ch.exchange_declare(dlx, "fanout", internal=True)
    ch.queue_declare(dead)
    ch.queue_bind(dead, dlx)
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": dlx})
    ch.basic_publish("", q, b"m0")
    ch.basic_get(q)
    ch.basic_reject(1, requeue=False)
    wait_ready(s, dead, 1)
    s.expect(ch.drain(dead), [b"m0"])


def scenario_dlx_default_exchange(s: Session) -> None:
    """x-dead-letter-exchange '' (the default exchange) with a routing key naming a queue."""
    ch = s.channel()
    q, dead = s.name("q"), s.name("dead")
    ch.queue_declare(dead)
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": "",
                                   "x-dead-letter-routing-key": dead})
    ch.basic_publish("", q, b"m0")
    ch.basic_get(q)
    ch.basic_reject(1, requeue=False)
    wait_ready(s, dead, 1)
    m = ch.basic_get(dead, auto_ack=True)
    s.expect(m, Msg("", "dead", False, 2, 0, {"headers": {
        "x-death": [_death("rejected", "q", "", ["q"])], **_first("rejected", "q", "")}},
        b"m0"))


def scenario_dlx_cc_and_bcc(s: Session) -> None:
    """The x-death routing-keys are the routing key and the CC keys (not BCC). Without a
    dead-letter routing key the message is dead-lettered with all its keys, BCC included
    (CC kept); with one, CC is removed."""
    ch = s.channel()
    dlx = s.name("dlx")
    ch.exchange_declare(dlx, "direct")
    got = {}
    for base in ("k", "c", "b", "dk"):
        name = s.name(f"dead-{base}")
        ch.queue_declare(name)
        ch.queue_bind(name, dlx, s.name(base))
        got[base] = name
    q1, q2 = s.name("q1"), s.name("q2")
    ch.queue_declare(q1, arguments={"x-dead-letter-exchange": dlx})
    ch.queue_declare(q2, arguments={"x-dead-letter-exchange": dlx,
                                    "x-dead-letter-routing-key": s.name("dk")})
    x = s.name("x")
    ch.exchange_declare(x, "fanout")
    ch.queue_bind(q1, x)
    ch.queue_bind(q2, x)
    ch.basic_publish(x, s.name("k"), b"m0", {"headers": {"CC": [s.name("c")],
                                                           "BCC": [s.name("b")]}})
    ch.basic_get(q1)
    ch.basic_get(q2)
    ch.basic_nack(2, multiple=True, requeue=False)
    counts = {base: wait_ready(s, name, 1) for base, name in got.items()}
    s.expect({base: r.message_count if isinstance(r, QueueDeclareOk) else r
              for base, r in counts.items()}, {"k": 1, "c": 1, "b": 1, "dk": 1})
    death1 = _death("rejected", "q1", "x", ["k", "c"])
    m = ch.basic_get(got["k"], auto_ack=True)
    s.expect(_headers(m), {"CC": ["c"], "x-death": [death1], **_first("rejected", "q1", "x")})
    m = ch.basic_get(got["dk"], auto_ack=True)
    s.expect(_headers(m), {"x-death": [_death("rejected", "q2", "x", ["k", "c"])],
                           **_first("rejected", "q2", "x")})
    if isinstance(m, Msg):
        s.expect(m.routing_key, "dk")


def scenario_dlx_not_on_purge_delete_or_requeue(s: Session) -> None:
    """Purged, deleted and requeued messages are not dead-lettered; nor those of a closed
    channel."""
    ch = s.channel()
    dlx, dead = _dead_letter_queue(s, ch)
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": dlx})
    for i in range(3):
        ch.basic_publish("", q, f"m{i}".encode())
    ch.basic_get(q)
    ch.basic_nack(1, requeue=True)
    ch2 = s.channel()
    ch2.basic_get(q)
    ch2.close()
    s.expect(ch.queue_purge(q), 3)
    ch.basic_publish("", q, b"m3")
    s.expect(ch.queue_delete(q), 1)
    s.expect(ready(ch, dead), 0)


def scenario_dlx_invalid_arguments(s: Session) -> None:
    ch = s.channel()
    s.expect_error(ch.queue_declare(s.name("q"), arguments={"x-dead-letter-exchange": 1}), 406,
                   "PRECONDITION_FAILED - invalid type 'signedint' for arg"
                   " 'x-dead-letter-exchange' in queue 'q' in vhost '/'", scope="channel")
    ch = s.channel()
    s.expect_error(ch.queue_declare(s.name("q"), arguments={"x-dead-letter-routing-key": "k"}),
                   406, "PRECONDITION_FAILED - invalid arg 'x-dead-letter-routing-key' for queue"
                   " 'q' in vhost '/': routing_key_but_no_dlx_defined", scope="channel")
    ch = s.channel()
    s.expect_error(ch.queue_declare(s.name("q"), arguments={
        "x-dead-letter-exchange": "x", "x-dead-letter-routing-key": 1}), 406,
        "PRECONDITION_FAILED - invalid arg 'x-dead-letter-routing-key' for queue 'q' in vhost"
        " '/': {unacceptable_type,signedint}", scope="channel")


# --------------------------------------------------------------------------------------------
# Repeated deaths and cycles


def scenario_dlx_rejected_back_into_same_queue(s: Session) -> None:
    """Dead-lettering into the queue the message died in is fine when it was rejected; the
    entry's count goes up, x-first-death-* stay."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": ""})  # the original key: q
    ch.basic_publish("", q, b"m0")
    for tag in (1, 2):
        ch.basic_get(q)
        ch.basic_reject(tag, requeue=False)
        wait_ready(s, q, 1)
    m = ch.basic_get(q, auto_ack=True)
    s.expect(m, Msg("", "q", False, 3, 0, {"headers": {
        "x-death": [_death("rejected", "q", "", ["q"], count=2)],
        **_first("rejected", "q", "")}}, b"m0"))


def scenario_dlx_repeated_deaths_between_two_queues(s: Session) -> None:
    """q1 and q2 dead-letter into each other: one x-death entry per (queue, reason), the one
    that just happened first, its count incremented; the entries keep their first exchange and
    routing keys."""
    ch = s.channel()
    q1, q2 = s.name("q1"), s.name("q2")
    ch.queue_declare(q1, arguments={"x-dead-letter-exchange": "",
                                    "x-dead-letter-routing-key": q2})
    ch.queue_declare(q2, arguments={"x-dead-letter-exchange": "",
                                    "x-dead-letter-routing-key": q1})
    ch.basic_publish("", q1, b"m0", {"headers": {"n": 1}})
    for tag, (queue, then) in enumerate(((q1, q2), (q2, q1), (q1, q2)), start=1):
        ch.basic_get(queue)
        ch.basic_reject(tag, requeue=False)
        wait_ready(s, then, 1)
    m = ch.basic_get(q2, auto_ack=True)
    s.expect(m, Msg("", "q2", False, 4, 0, {"headers": {
        "n": 1,
        "x-death": [_death("rejected", "q1", "", ["q1"], count=2),
                    _death("rejected", "q2", "", ["q2"])],
        **_first("rejected", "q1", "")}}, b"m0"))


def scenario_dlx_expiry_cycle_dropped(s: Session) -> None:
    """A message that would be dead-lettered into a queue it already died in, with no
    rejection on the way, is dropped for that queue (other queues still get it)."""
    ch = s.channel()
    dlx, dead = _dead_letter_queue(s, ch)
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": dlx, "x-message-ttl": SHORT})
    ch.queue_bind(q, dlx)
    ch.basic_publish("", q, b"m0")
    s.expect(wait_ready(s, dead, 1), QueueDeclareOk("dead", 1, 0))
    s.expect(ready(ch, q), 0, "not back in q: dropped there")
    m = ch.basic_get(dead, auto_ack=True)
    s.expect(_headers(m), {"x-death": [_death("expired", "q", "", ["q"])],
                           **_first("expired", "q", "")})
    ch.queue_unbind(q, dlx)


def scenario_dlx_cycle_through_a_rejection(s: Session) -> None:
    """q1 expires into q2, q2 rejects back into q1: a cycle with a rejection in it goes on
    (the counts show the rounds)."""
    ch = s.channel()
    q1, q2 = s.name("q1"), s.name("q2")
    ch.queue_declare(q1, arguments={"x-dead-letter-exchange": "",
                                    "x-dead-letter-routing-key": q2, "x-message-ttl": SHORT})
    ch.queue_declare(q2, arguments={"x-dead-letter-exchange": "",
                                    "x-dead-letter-routing-key": q1})
    ch.basic_publish("", q1, b"m0")
    s.expect(wait_ready(s, q2, 1), QueueDeclareOk("q2", 1, 0))
    ch.basic_get(q2)
    ch.basic_reject(1, requeue=False)
    s.expect(wait_ready(s, q2, 1), QueueDeclareOk("q2", 1, 0))
    m = ch.basic_get(q2, auto_ack=True)
    s.expect(_headers(m), {"x-death": [_death("expired", "q1", "", ["q1"], count=2),
                                       _death("rejected", "q2", "", ["q2"])],
                           **_first("expired", "q1", "")})


def scenario_dlx_expiry_cycle_between_two_queues(s: Session) -> None:
    """q1 and q2 expire into each other: the message dies in q1, then in q2, and is dropped
    before it reaches q1 again. A witness queue beside q1 shows the last death."""
    ch = s.channel()
    q1, q2, witness = s.name("q1"), s.name("q2"), s.name("witness")
    back = s.name("back")
    ch.exchange_declare(back, "fanout")
    ch.queue_declare(witness)
    ch.queue_declare(q1, arguments={"x-dead-letter-exchange": "",
                                    "x-dead-letter-routing-key": q2, "x-message-ttl": SHORT})
    ch.queue_declare(q2, arguments={"x-dead-letter-exchange": back, "x-message-ttl": SHORT})
    ch.queue_bind(q1, back)
    ch.queue_bind(witness, back)
    ch.basic_publish("", q1, b"m0")
    s.expect(wait_ready(s, witness, 1), QueueDeclareOk("witness", 1, 0))
    s.expect((ready(ch, q1), ready(ch, q2)), (0, 0), "dropped for q1 when q2 dead-lettered it")
    m = ch.basic_get(witness, auto_ack=True)
    s.expect(_headers(m), {"x-death": [_death("expired", "q2", "", ["q2"]),
                                       _death("expired", "q1", "", ["q1"])],
                           **_first("expired", "q1", "")})


def scenario_dlx_client_supplied_x_death(s: Session) -> None:
    """A message that arrives with an x-death header of its own (republished by a client): a
    matching entry is incremented; x-first-death-* are set only when the message has no
    x-death at all."""
    ch = s.channel()
    dlx, dead = _dead_letter_queue(s, ch)
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": dlx})
    earlier = {"count": 5, "reason": "rejected", "queue": q, "exchange": "e",
               "routing-keys": ["old"]}
    other = {"count": 1, "reason": "expired", "queue": "elsewhere"}
    ch.basic_publish("", q, b"m0", {"headers": {"x-death": [other, earlier]}})
    ch.basic_publish("", q, b"m1", {"headers": {"x-death": "not an array"}})
    ch.basic_get(q)
    ch.basic_get(q)
    ch.basic_nack(2, multiple=True, requeue=False)
    wait_ready(s, dead, 2)
    m0, m1 = ch.basic_get(dead, auto_ack=True), ch.basic_get(dead, auto_ack=True)
    s.expect(_headers(m0), {"x-death": [{**earlier, "count": 6, "queue": "q"}, other]})
    s.expect(_headers(m1), {"x-death": [_death("rejected", "q", "", ["q"])]})


def scenario_dlx_untrusted_x_death_shapes(s: Session) -> None:
    """x-death headers a client made up, in every shape RabbitMQ 3.10 handles without crashing
    the queue: counts missing, negative or at the 64-bit limit (it wraps), duplicated entries
    (grouped: the first of each (queue, reason) stays, with the group's size as a missing
    count), more than one other entry (their order reversed), an empty array, a queue that is
    no string, x-first-death-* headers without an x-death (replaced)."""
    ch = s.channel()
    dlx, dead = _dead_letter_queue(s, ch)
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": dlx})

    def entry(queue: str, reason: str, count: int | None = None) -> dict[str, Any]:
        return {"queue": queue, "reason": reason, **({} if count is None else {"count": count})}

    a, b = s.name("a"), s.name("b")
    shapes = [
        [entry(q, "rejected")],                                         # count missing
        [entry(q, "rejected", -5)],
        [entry(q, "rejected", 2**63 - 1)],                              # wraps to -2**63
        [entry(a, "expired", 1), entry(a, "expired", 2), entry(b, "expired", 5)],
        [entry(a, "expired"), entry(a, "expired")],                     # a group of two, no count
        [entry(a, "expired", 1), entry(q, "rejected", 4), entry(b, "maxlen", 1)],
        [],
        [{"queue": 5, "reason": "rejected", "count": 3}],
    ]
    for i, shape in enumerate(shapes):
        ch.basic_publish("", q, f"m{i}".encode(), {"headers": {"x-death": shape}})
    ch.basic_publish("", q, b"first", {"headers": {"x-first-death-queue": "made up",
                                                   "x-first-death-reason": 7}})
    for _ in range(len(shapes) + 1):
        ch.basic_get(q)
    ch.basic_nack(0, multiple=True, requeue=False)
    wait_ready(s, dead, len(shapes) + 1)
    got = [_headers(ch.basic_get(dead, auto_ack=True)) for _ in range(len(shapes) + 1)]
    fresh = _death("rejected", "q", "", ["q"])
    s.expect(got[0], {"x-death": [{"count": 1, "queue": "q", "reason": "rejected"}]})
    s.expect(got[1], {"x-death": [{"count": -4, "queue": "q", "reason": "rejected"}]})
    s.expect(got[2], {"x-death": [{"count": -2**63, "queue": "q", "reason": "rejected"}]})
    s.expect(got[3], {"x-death": [fresh, entry("b", "expired", 5), entry("a", "expired", 1)]})
    s.expect(got[4], {"x-death": [fresh, entry("a", "expired", 2)]})
    s.expect(got[5], {"x-death": [{"count": 5, "queue": "q", "reason": "rejected"},
                                  entry("b", "maxlen", 1), entry("a", "expired", 1)]})
    s.expect(got[6], {"x-death": [fresh]})
    s.expect(got[7], {"x-death": [fresh, {"queue": 5, "reason": "rejected", "count": 3}]})
    s.expect(got[8], {"x-death": [fresh], **_first("rejected", "q", "")})
