"""Scenarios: single active consumer, direct reply-to, queue types (quorum essentials; streams
are refused by embroker, so only the declare errors both brokers share are compared).

Every scenario name starts with ``queue_types_`` so that ``-k queue_types`` selects them all.

- A single-active-consumer queue's *waiting* consumers get nothing: shown through the ready
  count with the active consumer at its prefetch limit, never by waiting for nothing.
- The active consumer's channel is closed by a **channel error** (an ack of an unknown tag), not
  by ``ch.close()``: pika's close cancels the channel's consumers first, and RabbitMQ 3.10 does
  not hand over a single-active-consumer queue at a cancel while embroker does (see
  RABBITMQ_NOTES.md, "Documented differences").
- The reply-to address a direct reply-to requester gets is opaque and its format differs
  (RabbitMQ: ``amq.rabbitmq.reply-to.<base64 pid>.<base64 key>``, embroker:
  ``amq.rabbitmq.reply-to.<token>.<token>``): those scenarios show it as
  ``amq.rabbitmq.reply-to.<address-1>``, ``<address-2>``... (:func:`_reply_addresses`).
- A quorum queue is asynchronous on RabbitMQ (Raft): messages are published with confirms and
  a queue is read only after ``wait_ready`` saw the count (which lags) reach what is expected.
"""

from __future__ import annotations

import re
from typing import Any

from .harness import ChannelProxy, Delivered, Msg, Normalizer, QueueDeclareOk, Session
from .scenarios_queue_deadletter import _death, _first
from .scenarios_queue_features import confirming, ready, wait_ready

SAC = {"x-single-active-consumer": True}
QUORUM = {"x-queue-type": "quorum"}
REPLY_TO = "amq.rabbitmq.reply-to"


def _seen(deliveries: Any) -> Any:
    """(consumer tag, delivery tag, body, redelivered) of each delivery, for expectations."""
    if not isinstance(deliveries, list):
        return deliveries
    return [(d.consumer_tag, d.delivery_tag, d.body, d.redelivered) for d in deliveries]


def _counts(ch: ChannelProxy, q: str) -> Any:
    """(ready messages, consumers) of queue ``q``."""
    r = ch.queue_declare(q, passive=True)
    return (r.message_count, r.consumer_count) if isinstance(r, QueueDeclareOk) else r


def _in(s: Session, q: str, arguments: dict[str, Any] | None = None) -> str:
    """Declare (on a channel of its own) queue ``q`` and return its unique name."""
    name = s.name(q)
    s.channel().queue_declare(name, durable=True, arguments=arguments)
    return name


# --------------------------------------------------------------------------------------------
# x-single-active-consumer


def scenario_queue_types_sac_first_consumer_active(s: Session) -> None:
    """The first consumer gets every message; the others get nothing, even with room and a
    higher priority; consumer_count counts them all; basic.get works as usual."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments=SAC)
    a, b, c = s.channel(), s.channel(), s.channel()
    a.basic_qos(prefetch_count=1)
    s.expect(a.basic_consume(q, consumer_tag=s.name("a")), "a")
    s.expect(b.basic_consume(q, consumer_tag=s.name("b")), "b")
    s.expect(c.basic_consume(q, consumer_tag=s.name("c"), arguments={"x-priority": 10}), "c")
    s.expect(_counts(ch, q), (0, 3), "consumer_count counts the waiting consumers too")
    for i in range(4):
        ch.basic_publish("", q, f"m{i}".encode())
    s.expect(_seen(a.wait_deliveries(1)), [("a", 1, b"m0", False)])
    s.expect(_counts(ch, q), (3, 3), "b and c have room but are not active")
    m = ch.basic_get(q)
    s.expect(m.body if isinstance(m, Msg) else m, b"m1", "basic.get works as usual")
    ch.basic_ack(1)
    a.basic_ack(1)
    s.expect(_seen(a.wait_deliveries(1)), [("a", 2, b"m2", False)], "the next one, to a again")
    s.expect(b.basic_cancel(s.name("b")), None)
    s.expect(_counts(ch, q), (1, 2), "cancelling a waiting consumer changes nothing")
    a.basic_ack(2)
    s.expect(_seen(a.wait_deliveries(1)), [("a", 3, b"m3", False)])
    a.basic_ack(3)
    s.expect(_counts(ch, q), (0, 2))


def scenario_queue_types_sac_exclusive_consume_refused(s: Session) -> None:
    """An exclusive consumer on a single-active-consumer queue: 403, even with no consumer."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments=SAC)
    in_use = "ACCESS_REFUSED - queue 'q' in vhost '/' in exclusive use"
    s.expect_error(s.channel().basic_consume(q, exclusive=True), 403, in_use, scope="channel",
                   what="no consumer yet")
    s.expect(_counts(ch, q), (0, 0))
    s.expect(ch.basic_consume(q, consumer_tag=s.name("a")), "a")
    s.expect_error(s.channel().basic_consume(q, exclusive=True), 403, in_use, scope="channel",
                   what="with a consumer")
    s.expect(_counts(ch, q), (0, 1))


def scenario_queue_types_sac_handover_on_channel_error(s: Session) -> None:
    """The active consumer's channel closes (a channel error): its unacked messages come back
    (redelivered) first to the next active consumer, then the backlog. The next one is the
    waiting consumer with the highest x-priority, then the earliest registered."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments=SAC)
    a, b, c, d = s.channel(), s.channel(), s.channel(), s.channel()
    a.basic_qos(prefetch_count=2)
    a.basic_consume(q, consumer_tag=s.name("a"))
    b.basic_consume(q, consumer_tag=s.name("b"))
    c.basic_consume(q, consumer_tag=s.name("c"), arguments={"x-priority": 5})
    d.basic_consume(q, consumer_tag=s.name("d"), arguments={"x-priority": 5})
    for i in range(4):
        ch.basic_publish("", q, f"m{i}".encode())
    s.expect(_seen(a.wait_deliveries(2)), [("a", 1, b"m0", False), ("a", 2, b"m1", False)])
    s.expect(_counts(ch, q), (2, 4))
    s.expect_error(a.basic_ack(99), 406, "PRECONDITION_FAILED - unknown delivery tag 99",
                   scope="channel", what="closes a's channel")
    s.expect(_seen(c.wait_deliveries(4)), [("c", 1, b"m0", True), ("c", 2, b"m1", True),
                                           ("c", 3, b"m2", False), ("c", 4, b"m3", False)],
             "c: priority 5, registered before d")
    s.expect(_counts(ch, q), (0, 3))
    c.basic_ack(1)
    s.expect_error(c.basic_ack(99), 406, "PRECONDITION_FAILED - unknown delivery tag 99",
                   scope="channel")
    s.expect(_seen(d.wait_deliveries(3)), [("d", 1, b"m1", True), ("d", 2, b"m2", True),
                                           ("d", 3, b"m3", True)], "then d (priority 5)")
    ch.basic_publish("", q, b"m4")
    s.expect(_seen(d.wait_deliveries(1)), [("d", 4, b"m4", False)])
    s.expect_error(d.basic_ack(99), 406, "PRECONDITION_FAILED - unknown delivery tag 99",
                   scope="channel")
    s.expect(_seen(b.wait_deliveries(4)), [("b", 1, b"m1", True), ("b", 2, b"m2", True),
                                           ("b", 3, b"m3", True), ("b", 4, b"m4", True)],
             "then b, the last one")
    b.basic_ack(4, multiple=True)
    s.expect(_counts(ch, q), (0, 1))


def scenario_queue_types_sac_handover_on_connection_error(s: Session) -> None:
    """The active consumer's connection closes (a connection error): the same hand-over, to
    the earliest of equal priorities."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments=SAC)
    ca = s.connection()
    a = ca.channel()
    a.basic_consume(q, consumer_tag=s.name("a"))
    b, c = s.connection().channel(), s.connection().channel()
    b.basic_consume(q, consumer_tag=s.name("b"))
    c.basic_consume(q, consumer_tag=s.name("c"))
    for i in range(3):
        ch.basic_publish("", q, f"m{i}".encode())
    s.expect(_seen(a.wait_deliveries(3)), [("a", 1, b"m0", False), ("a", 2, b"m1", False),
                                           ("a", 3, b"m2", False)])
    a.basic_ack(2)
    ch.basic_publish("", q, b"m3")
    s.expect(_seen(a.wait_deliveries(1)), [("a", 4, b"m3", False)])
    s.expect_error(ca.channel().basic_qos(prefetch_size=1000), 540,
                   "NOT_IMPLEMENTED - prefetch_size!=0 (1000)", scope="connection")
    s.expect(_seen(b.wait_deliveries(3)), [("b", 1, b"m0", True), ("b", 2, b"m2", True),
                                           ("b", 3, b"m3", True)], "b: registered before c")
    s.expect(_counts(ch, q), (0, 2))


def scenario_queue_types_sac_argument_errors(s: Session) -> None:
    """x-single-active-consumer must be a bool; it is compared on re-declare."""
    def declare(name: str, value: Any, **kw: Any) -> Any:
        return s.channel().queue_declare(s.name(name), arguments=(
            {"x-single-active-consumer": value} if value is not None else None), **kw)

    s.expect_error(declare("q1", "true"), 406,
                   "PRECONDITION_FAILED - invalid arg 'x-single-active-consumer' for queue 'q1'"
                   " in vhost '/': {unacceptable_type,longstr}", scope="channel")
    s.expect_error(declare("q2", 1), 406,
                   "PRECONDITION_FAILED - invalid arg 'x-single-active-consumer' for queue 'q2'"
                   " in vhost '/': {unacceptable_type,signedint}", scope="channel")
    s.expect(s.queue_exists(s.name("q1")), False)
    s.expect(declare("q3", False), QueueDeclareOk("q3", 0, 0), "false is fine")
    s.expect(declare("q4", True), QueueDeclareOk("q4", 0, 0))
    s.expect(declare("q4", True), QueueDeclareOk("q4", 0, 0), "the same again")
    s.expect(declare("q4", True, passive=True), QueueDeclareOk("q4", 0, 0))
    s.expect(declare("q4", None, passive=True), QueueDeclareOk("q4", 0, 0),
             "passive ignores the arguments")
    s.expect_error(declare("q4", None), 406,
                   "PRECONDITION_FAILED - inequivalent arg 'x-single-active-consumer' for queue"
                   " 'q4' in vhost '/': received none but current is the value 'true' of type"
                   " 'bool'", scope="channel")
    s.expect_error(declare("q4", False), 406,
                   "PRECONDITION_FAILED - inequivalent arg 'x-single-active-consumer' for queue"
                   " 'q4' in vhost '/': received 'false' but current is 'true'", scope="channel")
    s.expect_error(declare("q3", True), 406,
                   "PRECONDITION_FAILED - inequivalent arg 'x-single-active-consumer' for queue"
                   " 'q3' in vhost '/': received 'true' but current is 'false'", scope="channel")
    s.expect_error(declare("q3", None), 406,
                   "PRECONDITION_FAILED - inequivalent arg 'x-single-active-consumer' for queue"
                   " 'q3' in vhost '/': received none but current is the value 'false' of type"
                   " 'bool'", scope="channel")


# --------------------------------------------------------------------------------------------
# Direct reply-to

#: RabbitMQ: <base64 of the channel pid>.<base64 key>; embroker: <token>.<token>.
_REPLY_ADDRESS = re.compile(r"amq\.rabbitmq\.reply-to\.[A-Za-z0-9+/=_\-]+\.[A-Za-z0-9+/=_\-]+")


class _ReplyToNormalizer(Normalizer):
    """Also shows each reply-to address as ``amq.rabbitmq.reply-to.<address-N>``."""

    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.addresses: dict[str, str] = {}

    def _address(self, match: re.Match[str]) -> str:
        raw = match.group(0)
        if raw not in self.addresses:
            self.addresses[raw] = f"{REPLY_TO}.<address-{len(self.addresses) + 1}>"
        return self.addresses[raw]

    def text(self, value: str) -> str:
        return _REPLY_ADDRESS.sub(self._address, super().text(value))


def _reply_addresses(s: Session) -> None:
    """Make the session's transcript show reply-to addresses as placeholders (first thing in a
    scenario, before anything is recorded)."""
    s.normalize = _ReplyToNormalizer(s.token)


def _address_of(m: Any) -> str | None:
    """The reply_to property of a Msg (the address the requester's channel got)."""
    return m.properties.get("reply_to") if isinstance(m, Msg) else None


def scenario_queue_types_reply_to_consume_errors(s: Session) -> None:
    """The reply consumer must be no-ack and alone on its channel; publishing with reply_to
    amq.rabbitmq.reply-to needs one on the publishing channel itself."""
    _reply_addresses(s)
    s.expect_error(s.channel().basic_consume(REPLY_TO), 406,
                   "PRECONDITION_FAILED - reply consumer cannot acknowledge", scope="channel")
    ch = s.channel()
    s.expect(ch.basic_consume(REPLY_TO, auto_ack=True, consumer_tag=s.name("r")), "r")
    s.expect_error(ch.basic_consume(REPLY_TO, auto_ack=True), 406,
                   "PRECONDITION_FAILED - reply consumer already set", scope="channel")
    sibling = s.channel()
    tag = sibling.basic_consume(REPLY_TO, auto_ack=True, exclusive=True)
    s.expect(tag, "amq.ctag-1",
             "another channel of the connection may have one (exclusive is accepted)")
    s.expect_error(s.channel().basic_publish("", s.name("rpc"), b"req",
                                             {"reply_to": REPLY_TO}), 406,
                   "PRECONDITION_FAILED - fast reply consumer does not exist", scope="channel",
                   what="a sibling's reply consumer does not count")
    sibling.basic_cancel(tag)
    s.expect_error(sibling.basic_publish("", s.name("rpc"), b"req", {"reply_to": REPLY_TO}),
                   406, "PRECONDITION_FAILED - fast reply consumer does not exist",
                   scope="channel", what="nor a cancelled one")
    other = s.channel()
    s.expect(other.basic_publish("", s.name("rpc"), b"req",
                                 {"reply_to": f"{REPLY_TO}.foo"}), None,
             "any other reply_to is left alone")


def _rpc_setup(s: Session) -> tuple[ChannelProxy, ChannelProxy, str]:
    """A requester channel with a reply consumer ``replies`` (connection c1) and a server
    channel (connection c2) with the request queue ``rpc``."""
    requester = s.connection().channel()
    server = s.connection().channel()
    rpc = s.name("rpc")
    server.queue_declare(rpc)
    s.expect(requester.basic_consume(REPLY_TO, auto_ack=True, consumer_tag=s.name("replies")),
             "replies")
    return requester, server, rpc


def _request(s: Session, requester: ChannelProxy, server: ChannelProxy, rpc: str,
             body: bytes = b"req") -> Any:
    """The requester publishes a request with reply_to amq.rabbitmq.reply-to; the server
    takes it (basic.get); returns its reply_to (the address), or what came instead."""
    requester.basic_publish("", rpc, body, {"reply_to": REPLY_TO, "correlation_id": "c1"})
    m = server.basic_get(rpc, auto_ack=True)
    s.expect(m, Msg("", "rpc", False, 1, 0,
                    {"reply_to": f"{REPLY_TO}.<address-1>", "correlation_id": "c1"}, body),
             "reply_to rewritten to the requester's address")
    return _address_of(m)


def scenario_queue_types_reply_to_rpc(s: Session) -> None:
    """A round trip: the reply, published to the default exchange with the address as routing
    key, reaches the reply consumer with exchange '' and the address as routing key; it shows
    the channel's next delivery tag without using it."""
    _reply_addresses(s)
    requester, server, rpc = _rpc_setup(s)
    address = _request(s, requester, server, rpc)
    if address is None:
        return
    server.basic_publish("", address, b"rep1", {"correlation_id": "c1"})
    server.basic_publish("", address, b"rep2")
    got = requester.wait_deliveries(2)
    s.expect(got, [Delivered("replies", 1, False, "", f"{REPLY_TO}.<address-1>",
                             {"correlation_id": "c1"}, b"rep1"),
                   Delivered("replies", 1, False, "", f"{REPLY_TO}.<address-1>", {}, b"rep2")],
             "both show tag 1: a reply does not use a delivery tag")
    work = s.name("work")
    requester.queue_declare(work)
    requester.basic_publish("", work, b"w")
    m = requester.basic_get(work)
    s.expect(m.delivery_tag if isinstance(m, Msg) else m, 1, "tag 1 is still free")
    requester.basic_ack(1)
    requester.basic_publish("", address, b"rep3", {"correlation_id": "c3"})
    s.expect(_seen(requester.wait_deliveries(1)), [("replies", 2, b"rep3", False)],
             "from its own channel too; the next tag is now 2")
    s.expect(s.channel().queue_declare(address, passive=True),
             QueueDeclareOk(f"{REPLY_TO}.<address-1>", 0, 1), "a live address")
    server.basic_publish("amq.direct", address, b"via amq.direct")
    server.basic_publish("", REPLY_TO, b"to the bare name")
    requester.basic_publish("", address, b"rep4")
    s.expect(_seen(requester.wait_deliveries(1)), [("replies", 2, b"rep4", False)],
             "only via the default exchange and the full address")


def scenario_queue_types_reply_to_mandatory(s: Session) -> None:
    """A mandatory reply is delivered and also returned 312 NO_ROUTE (no queue took it); in
    confirm mode the ack follows."""
    _reply_addresses(s)
    requester, server, rpc = _rpc_setup(s)
    address = _request(s, requester, server, rpc)
    if address is None:
        return
    server.basic_publish("", address, b"rep1", {"correlation_id": "c1"}, mandatory=True)
    s.expect([(r.reply_code, r.reply_text, r.exchange, r.body) for r in server.returned],
             [(312, "NO_ROUTE", "", b"rep1")])
    s.expect(_seen(requester.wait_deliveries(1)), [("replies", 1, b"rep1", False)])
    server.confirm_delivery()
    server.basic_publish("", address, b"rep2", mandatory=True)
    s.expect(server.confirms, [(1, False, True)])
    s.expect(_seen(requester.wait_deliveries(1)), [("replies", 1, b"rep2", False)])


def scenario_queue_types_reply_to_requester_gone(s: Session) -> None:
    """A reply to a requester whose reply consumer was cancelled or whose channel closed is
    dropped (returned 312 when mandatory); the publisher's channel stays open."""
    _reply_addresses(s)
    requester, server, rpc = _rpc_setup(s)
    address = _request(s, requester, server, rpc)
    if address is None:
        return
    requester.close()
    server.basic_publish("", address, b"late")
    server.basic_publish("", address, b"late, mandatory", mandatory=True)
    s.expect([(r.reply_code, r.reply_text, r.routing_key, r.body) for r in server.returned],
             [(312, "NO_ROUTE", f"{REPLY_TO}.<address-1>", b"late, mandatory")])
    s.expect_error(s.channel().queue_declare(address, passive=True), 404,
                   f"NOT_FOUND - no queue '{REPLY_TO}.<address-1>' in vhost '/'",
                   scope="channel", what="a dead address")
    s.expect(server.is_open, True)
    # A cancelled reply consumer: its address is dead too.
    ch = s.channel()
    ch.basic_consume(REPLY_TO, auto_ack=True, consumer_tag=s.name("r2"))
    ch.basic_publish("", rpc, b"req2", {"reply_to": REPLY_TO})
    m = server.basic_get(rpc, auto_ack=True)
    second = _address_of(m)
    s.expect(second, f"{REPLY_TO}.<address-2>")
    if second is None:
        return
    ch.basic_cancel(s.name("r2"))
    server.basic_publish("", second, b"late 2", mandatory=True)
    s.expect([r.body for r in server.returned], [b"late, mandatory", b"late 2"])
    s.expect(server.is_open, True)


def scenario_queue_types_reply_to_pseudo_queue(s: Session) -> None:
    """amq.rabbitmq.reply-to can be declared (passive or not, no amq. refusal): declare-ok
    with 0 messages and 1 consumer; basic.get is 404."""
    _reply_addresses(s)
    s.expect(s.channel().queue_declare(REPLY_TO, passive=True), QueueDeclareOk(REPLY_TO, 0, 1))
    s.expect(s.channel().queue_declare(REPLY_TO), QueueDeclareOk(REPLY_TO, 0, 1))
    s.expect_error(s.channel().basic_get(REPLY_TO), 404,
                   f"NOT_FOUND - no queue '{REPLY_TO}' in vhost '/'", scope="channel")
    s.expect_error(s.channel().queue_declare(f"{REPLY_TO}.garbage", passive=True), 404,
                   f"NOT_FOUND - no queue '{REPLY_TO}.garbage' in vhost '/'",
                   scope="channel")


# --------------------------------------------------------------------------------------------
# x-queue-type


def _declare_error(s: Session, q: str, text: str, what: str = "", **kw: Any) -> None:
    """queue.declare of ``q`` (its own channel) is 406 with ``text``; ``{}`` in the text is
    the queue's shown name; the queue does not exist afterwards."""
    name = s.name(q) if q else ""
    r = s.channel().queue_declare(name, **kw)
    s.expect_error(r, 406, "PRECONDITION_FAILED - " + text.format(f"queue '{q}' in vhost '/'"),
                   scope="channel", what=what)
    if q:
        s.expect(s.queue_exists(name), False)


def scenario_queue_types_quorum_property_errors(s: Session) -> None:
    """A quorum queue must be durable, not exclusive, not auto-delete, and named by the
    client; it refuses x-max-priority."""
    _declare_error(s, "q1", "invalid property 'non-durable' for {}", arguments=QUORUM)
    _declare_error(s, "q2", "invalid property 'exclusive-owner' for {}", durable=True,
                   exclusive=True, arguments=QUORUM)
    _declare_error(s, "q3", "invalid property 'auto-delete' for {}", durable=True,
                   auto_delete=True, arguments=QUORUM)
    _declare_error(s, "", "Cannot declare a server-named queue for type rabbit_quorum_queue",
                   durable=True, arguments=QUORUM)
    _declare_error(s, "q4", "invalid arg 'x-max-priority' for {} of queue type "
                   "rabbit_quorum_queue", durable=True,
                   arguments={**QUORUM, "x-max-priority": 5})
    s.expect(s.channel().queue_declare(s.name("q5"), durable=True, arguments=QUORUM),
             QueueDeclareOk("q5", 0, 0))


def scenario_queue_types_quorum_refuses_other_types_arguments(s: Session) -> None:
    """A quorum queue takes its own arguments only (x-queue-version, x-queue-mode, the stream
    ones are refused); the values of those it takes are checked first, and the checks of
    the arguments it does not take come before its properties'."""
    for i, (key, value) in enumerate((("x-queue-version", 2), ("x-queue-mode", "lazy"),
                                      ("x-max-age", "1D"), ("x-initial-cluster-size", 1),
                                      ("x-queue-master-locator", "min-masters"))):
        _declare_error(s, f"q{i}", f"invalid arg '{key}' for {{}} of queue type "
                       "rabbit_quorum_queue", durable=True, arguments={**QUORUM, key: value})
    _declare_error(s, "v1", "invalid arg 'x-message-ttl' for {}: {{value_negative,-1}}",
                   durable=True, arguments={**QUORUM, "x-max-priority": 5, "x-message-ttl": -1})
    _declare_error(s, "v2", "invalid arg 'x-max-priority' for {} of queue type "
                   "rabbit_quorum_queue", arguments={**QUORUM, "x-max-priority": 5})
    for i, (key, value, reason) in enumerate((
            ("x-quorum-initial-group-size", 0, "{{value_zero,0}}"),
            ("x-quorum-initial-group-size", "x", '"expected integer, got longstr"'),
            ("x-queue-leader-locator", "nearest", "invalid_queue_locator_arg"),
            ("x-dead-letter-strategy", "bad", "invalid_dlx_strategy"),
            ("x-max-in-memory-length", -1, "{{value_negative,-1}}"))):
        _declare_error(s, f"w{i}", f"invalid arg '{key}' for {{}}: {reason}", durable=True,
                       arguments={**QUORUM, key: value})
    s.expect(s.channel().queue_declare(s.name("ok"), durable=True, arguments={
        **QUORUM, "x-delivery-limit": 5, "x-queue-leader-locator": "balanced",
        "x-dead-letter-strategy": "at-most-once", "x-foo": 1}), QueueDeclareOk("ok", 0, 0))


def scenario_queue_types_type_argument_errors(s: Session) -> None:
    """An unknown x-queue-type, or one that is not a string; a non-durable stream (the same
    text as for quorum)."""
    _declare_error(s, "q1", "invalid arg 'x-queue-type' for {}: \"unsupported queue type "
                   "'foo'\"", durable=True, arguments={"x-queue-type": "foo"})
    _declare_error(s, "q2", "invalid arg 'x-queue-type' for {}: {{unacceptable_type,"
                   "signedint}}", durable=True, arguments={"x-queue-type": 1})
    _declare_error(s, "q3", "invalid property 'non-durable' for {}",
                   arguments={"x-queue-type": "stream"})


def scenario_queue_types_redeclare(s: Session) -> None:
    """A classic queue may be re-declared with or without x-queue-type classic, not as
    quorum; a quorum queue's type must be given again; passive ignores it."""
    ch = s.channel()
    c1, c2, qq = s.name("c1"), s.name("c2"), s.name("qq")
    classic = {"x-queue-type": "classic"}
    ch.queue_declare(c1, durable=True)
    s.expect(ch.queue_declare(c1, durable=True, arguments=classic), QueueDeclareOk("c1", 0, 0))
    ch.queue_declare(c2, durable=True, arguments=classic)
    s.expect(ch.queue_declare(c2, durable=True), QueueDeclareOk("c2", 0, 0))
    ch.queue_declare(qq, durable=True, arguments=QUORUM)
    s.expect(ch.queue_declare(qq, durable=True, arguments=QUORUM), QueueDeclareOk("qq", 0, 0))
    s.expect(ch.queue_declare(qq, passive=True), QueueDeclareOk("qq", 0, 0))
    inequivalent = "PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue '{}' in " \
                   "vhost '/': {}"
    s.expect_error(s.channel().queue_declare(c1, durable=True, arguments=QUORUM), 406,
                   inequivalent.format("c1", "received the value 'quorum' of type 'longstr' "
                                             "but current is none"), scope="channel")
    s.expect_error(s.channel().queue_declare(c2, durable=True, arguments=QUORUM), 406,
                   inequivalent.format("c2", "received 'quorum' but current is 'classic'"),
                   scope="channel")
    s.expect_error(s.channel().queue_declare(qq, durable=True, arguments=classic), 406,
                   inequivalent.format("qq", "received 'classic' but current is 'quorum'"),
                   scope="channel")
    s.expect_error(s.channel().queue_declare(qq, durable=True), 406,
                   inequivalent.format("qq", "received none but current is the value 'quorum' "
                                             "of type 'longstr'"), scope="channel")


def _get(ch: ChannelProxy, q: str) -> Any:
    """basic.get; (body, redelivered, headers) of the message, or what came instead."""
    m = ch.basic_get(q)
    return (m.body, m.redelivered, m.properties.get("headers")) if isinstance(m, Msg) else m


def scenario_queue_types_quorum_delivery_count(s: Session) -> None:
    """x-delivery-count counts the returns (reject / nack with requeue, channel close). A
    basic.get shows it from the first time (0); a consumer's first delivery has no such
    header. With a delivery limit a returned message comes back before the ones behind it."""
    pub = confirming(s)
    q = _in(s, "q", {**QUORUM, "x-delivery-limit": 10})
    pub.basic_publish("", q, b"m0", {"headers": {"h": "v"}})
    pub.basic_publish("", q, b"m1")
    wait_ready(s, q, 2)
    ch = s.channel()
    s.expect(_get(ch, q), (b"m0", False, {"h": "v", "x-delivery-count": 0}))
    ch.basic_reject(1)
    wait_ready(s, q, 2)
    s.expect(_get(ch, q), (b"m0", True, {"h": "v", "x-delivery-count": 1}))
    ch.basic_nack(2)
    wait_ready(s, q, 2)
    s.expect(_get(ch, q), (b"m0", True, {"h": "v", "x-delivery-count": 2}))
    ch.basic_ack(3)
    c = s.channel()
    c.basic_qos(prefetch_count=1)
    c.basic_consume(q, consumer_tag=s.name("c"))
    s.expect(c.wait_deliveries(1), [Delivered("c", 1, False, "", "q", {}, b"m1")],
             "no x-delivery-count on a consumer's first delivery")
    c.close()
    c2 = s.channel()
    c2.basic_consume(q, consumer_tag=s.name("c2"))
    s.expect(c2.wait_deliveries(1), [Delivered("c2", 1, True, "", "q",
                                               {"headers": {"x-delivery-count": 1}}, b"m1")],
             "a channel close counts")
    c2.basic_ack(1)
    s.expect(wait_ready(s, q, 0), QueueDeclareOk("q", 0, 1))


def _quorum_of_three(s: Session) -> str:
    """Quorum queue ``q`` holding m0, m1, m2 (published with confirms, seen ready)."""
    pub = confirming(s)
    q = _in(s, "q", QUORUM)
    for i in range(3):
        pub.basic_publish("", q, f"m{i}".encode())
    wait_ready(s, q, 3)
    return q


def scenario_queue_types_quorum_return_without_limit(s: Session) -> None:
    """Without x-delivery-limit, a message returned to a quorum queue goes to its back (with a
    limit it comes back first: see quorum_delivery_count)."""
    q = _quorum_of_three(s)
    c = s.channel()
    c.basic_qos(prefetch_count=2)
    c.basic_consume(q, consumer_tag=s.name("c"))
    s.expect(_seen(c.wait_deliveries(2)), [("c", 1, b"m0", False), ("c", 2, b"m1", False)])
    c.basic_cancel(s.name("c"))
    c.basic_reject(1)
    c.basic_nack(2)
    wait_ready(s, q, 3)
    ch = s.channel()
    s.expect([_get(ch, q) for _ in range(3)],
             [(b"m2", False, {"x-delivery-count": 0}), (b"m0", True, {"x-delivery-count": 1}),
              (b"m1", True, {"x-delivery-count": 1})])
    ch.basic_ack(3, multiple=True)


def scenario_queue_types_quorum_closed_channel_returns_first(s: Session) -> None:
    """Without x-delivery-limit, the deliveries of a consumer whose channel closes come back
    *before* the ready messages (rabbit_fifo 3.10.8: the consumer is down, handle_down ->
    return_all puts them in its returns, served first), unlike a nack or reject, which sends
    them to the back (quorum_return_without_limit)."""
    q = _quorum_of_three(s)
    c = s.channel()
    c.basic_qos(prefetch_count=1)
    c.basic_consume(q, consumer_tag=s.name("c"))
    s.expect(_seen(c.wait_deliveries(1)), [("c", 1, b"m0", False)])
    c.close()
    wait_ready(s, q, 3)
    ch = s.channel()
    s.expect([_get(ch, q) for _ in range(3)],
             [(b"m0", True, {"x-delivery-count": 1}), (b"m1", False, {"x-delivery-count": 0}),
              (b"m2", False, {"x-delivery-count": 0})])
    ch.basic_ack(3, multiple=True)


def scenario_queue_types_quorum_delivery_limit(s: Session) -> None:
    """x-delivery-limit N: N+1 deliveries, then the return dead-letters the message with
    reason delivery_limit (x-delivery-count removed)."""
    pub = confirming(s)
    dlx, dead = s.name("dlx"), s.name("dead")
    pub.exchange_declare(dlx, "fanout")
    pub.queue_declare(dead)
    pub.queue_bind(dead, dlx)
    q = _in(s, "q", {**QUORUM, "x-delivery-limit": 2, "x-dead-letter-exchange": dlx})
    pub.basic_publish("", q, b"m0", {"headers": {"h": "v"}, "message_id": "id0"})
    pub.basic_publish("", q, b"m1")
    wait_ready(s, q, 2)
    ch = s.channel()
    for n in range(3):
        s.expect(_get(ch, q), (b"m0", n > 0, {"h": "v", "x-delivery-count": n}))
        ch.basic_reject(n + 1)
        if n < 2:
            wait_ready(s, q, 2)
    s.expect(wait_ready(s, dead, 1), QueueDeclareOk("dead", 1, 0))
    s.expect(ch.basic_get(dead, auto_ack=True), Msg("dlx", "q", False, 4, 0, {
        "message_id": "id0", "headers": {
            "h": "v", "x-death": [_death("delivery_limit", "q", "", ["q"])],
            **_first("delivery_limit", "q", "")}}, b"m0"))
    s.expect(wait_ready(s, q, 1), QueueDeclareOk("q", 1, 0))
    s.expect(_get(ch, q), (b"m1", False, {"x-delivery-count": 0}))
    ch.basic_ack(5)


def scenario_queue_types_quorum_delivery_limit_zero(s: Session) -> None:
    """x-delivery-limit 0: one delivery; the first return dead-letters it (delivery_limit),
    a reject without requeue is still reason rejected."""
    pub = confirming(s)
    dlx, dead = s.name("dlx"), s.name("dead")
    pub.exchange_declare(dlx, "fanout")
    pub.queue_declare(dead)
    pub.queue_bind(dead, dlx)
    q = _in(s, "q", {**QUORUM, "x-delivery-limit": 0, "x-dead-letter-exchange": dlx})
    pub.basic_publish("", q, b"m0")
    pub.basic_publish("", q, b"m1")
    wait_ready(s, q, 2)
    ch = s.channel()
    s.expect(_get(ch, q), (b"m0", False, {"x-delivery-count": 0}))
    ch.basic_nack(1)
    s.expect(wait_ready(s, dead, 1), QueueDeclareOk("dead", 1, 0))
    s.expect(_get(ch, q), (b"m1", False, {"x-delivery-count": 0}))
    ch.basic_reject(2, requeue=False)
    s.expect(wait_ready(s, dead, 2), QueueDeclareOk("dead", 2, 0))
    got = [ch.basic_get(dead, auto_ack=True) for _ in range(2)]
    s.expect([(m.body, m.properties.get("headers", {}).get("x-first-death-reason"))
              if isinstance(m, Msg) else m for m in got],
             [(b"m0", "delivery_limit"), (b"m1", "rejected")])
    s.expect(ready(ch, q), 0)


# --------------------------------------------------------------------------------------------
# Quorum queues' length limits (RabbitMQ 3.10's rabbit_fifo: evaluate_limit/5, is_over_limit/1,
# is_below_soft_limit/1 with ?LOW_LIMIT 0.8; rabbit_fifo_client: register_enqueuer and the
# queue_status reject_publish / go messages). Each publish waits for its confirm, so RabbitMQ's
# asynchronous "blocked" message reaches the channel before the next publish.


def _confirmed(s: Session, ch: ChannelProxy, q: str, bodies: list[bytes]) -> list[bool]:
    """Publish each body (confirm mode) and return whether each was acked."""
    outcomes = []
    for body in bodies:
        before = len(ch.confirms)
        ch.basic_publish("", q, body)
        confirm = ch.confirms[before:]
        outcomes.append(bool(confirm) and confirm[-1].ack)
    return outcomes


def scenario_queue_types_quorum_reject_publish_admits_one_over(s: Session) -> None:
    """reject-publish on a quorum queue refuses a publish only once the queue is *over* its
    limit: x-max-length 2 takes 3 of 4 (a classic queue 2), x-max-length 0 takes 1, and
    x-max-length-bytes 4 with 2-byte bodies takes 3."""
    ch = confirming(s)
    for base, limits, body in (("len-2", {"x-max-length": 2}, b"m"),
                               ("len-0", {"x-max-length": 0}, b"m"),
                               ("bytes-4", {"x-max-length-bytes": 4}, b"mm")):
        q = _in(s, base, {**QUORUM, **limits, "x-overflow": "reject-publish"})
        s.expect(_confirmed(s, ch, q, [body] * 4),
                 {"len-2": [True, True, True, False], "len-0": [True, False, False, False],
                  "bytes-4": [True, True, True, False]}[base], base)
        s.expect(wait_ready(s, q, 1 if base == "len-0" else 3).message_count,
                 1 if base == "len-0" else 3)
    classic = s.name("classic")
    ch.queue_declare(classic, arguments={"x-max-length": 2, "x-overflow": "reject-publish"})
    s.expect(_confirmed(s, ch, classic, [b"m"] * 4), [True, True, False, False],
             "a classic queue refuses at the limit")


def scenario_queue_types_quorum_reject_publish_lets_go_at_80_percent(s: Session) -> None:
    """A blocked publisher stays blocked until the queue is back at 80% of its limit (8 of 10),
    while a publisher new to the queue is refused only while the queue is over the limit."""
    ch = confirming(s)
    q = _in(s, "q", {**QUORUM, "x-max-length": 10, "x-overflow": "reject-publish"})
    s.expect(_confirmed(s, ch, q, [b"m"] * 12), [True] * 11 + [False])
    wait_ready(s, q, 11)
    getter = s.channel()
    for ready_after_get in (10, 9, 8):
        getter.basic_get(q, auto_ack=True)
        wait_ready(s, q, ready_after_get)
        s.expect(_confirmed(s, ch, q, [b"again"]), [ready_after_get == 8],
                 f"{ready_after_get} ready")
    wait_ready(s, q, 9)
    other = confirming(s)
    s.expect(_confirmed(s, other, q, [b"new", b"new"]), [True, True],
             "a new publisher at 9 of 10: taken, and the queue is at 11")
    s.expect(_confirmed(s, ch, q, [b"blocked"]), [False], "over the limit again: blocked")
    s.expect(wait_ready(s, q, 11).message_count, 11)


def scenario_queue_types_quorum_overflow_drop_head(s: Session) -> None:
    """drop-head (the default) on a quorum queue keeps the newest messages and dead-letters the
    oldest (reason maxlen); reject-publish-dlx is not a quorum overflow: such a queue drops its
    head too (rabbit_quorum_queue:overflow/3)."""
    ch = confirming(s)
    dlx, dead = s.name("dlx"), s.name("dead")
    ch.exchange_declare(dlx, "fanout")
    ch.queue_declare(dead)
    ch.queue_bind(dead, dlx)
    for base, overflow in (("default", {}), ("rp-dlx", {"x-overflow": "reject-publish-dlx"})):
        q = _in(s, base, {**QUORUM, "x-max-length": 2, "x-dead-letter-exchange": dlx,
                          **overflow})
        s.expect(_confirmed(s, ch, q, [b"a", b"b", b"c", b"d"]), [True] * 4, base)
        s.expect(wait_ready(s, q, 2).message_count, 2)
        s.expect(ch.drain(q), [b"c", b"d"])
    s.expect(wait_ready(s, dead, 4).message_count, 4)
    got = [ch.basic_get(dead, auto_ack=True) for _ in range(4)]
    s.expect([(m.body, m.properties["headers"]["x-first-death-reason"])
              if isinstance(m, Msg) else m for m in got],
             [(b"a", "maxlen"), (b"b", "maxlen"), (b"a", "maxlen"), (b"b", "maxlen")])


# --------------------------------------------------------------------------------------------
# what each queue type refuses


def scenario_queue_types_each_type_refuses_what_it_does_not_take(s: Session) -> None:
    """What a queue type does not take, as RabbitMQ 3.10.8 refuses it: a consumer argument of
    another type (``x-stream-offset`` on a classic or quorum queue: rabbit_queue_type's
    ``capabilities/0`` consumer_arguments, checked by rabbit_amqqueue:check_consume_arguments),
    a redeclare naming an argument the queue was declared without (``x-delivery-limit`` on a
    quorum queue, ``x-queue-master-locator`` on a classic one: each type's equivalence keys,
    rabbit_amqqueue:assert_args_equivalence/2), and a consumer of a quorum queue on a channel
    with global qos (rabbit_quorum_queue:consume/3: 540, which closes the connection)."""
    classic = _in(s, "classic")
    quorum = _in(s, "quorum", QUORUM)
    for q, label in ((classic, "classic"), (quorum, "quorum")):
        s.expect_error(s.channel().basic_consume(q, arguments={"x-stream-offset": "first"}),
                       406, scope="channel", what=f"x-stream-offset on a {label} queue")
    s.expect_error(s.channel().queue_declare(quorum, durable=True, arguments={
        **QUORUM, "x-delivery-limit": 5}), 406, scope="channel")
    s.expect_error(s.channel().queue_declare(classic, durable=True, arguments={
        "x-queue-master-locator": "random"}), 406, scope="channel")
    ch = s.channel()
    ch.basic_qos(prefetch_count=10, global_qos=True)
    s.expect_error(ch.basic_consume(quorum), 540, scope="connection")
    again = s.connection().channel()
    s.expect(_counts(again, quorum), (0, 0), "the refused consumer is not there")
    again.queue_delete(quorum)
    again.queue_delete(classic)
