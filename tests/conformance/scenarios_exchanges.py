"""Scenarios: exchanges (declare, delete, auto-delete, internal, exchange-to-exchange, AE)."""

from __future__ import annotations

from .harness import QueueDeclareOk, Session

EXCHANGE_TYPES = ("direct", "fanout", "topic", "headers")


def scenario_exchange_declare_each_type(s: Session) -> None:
    ch = s.channel()
    for t in EXCHANGE_TYPES:
        x = s.name(f"x-{t}")
        s.expect(ch.exchange_declare(x, t), None)
        s.expect(ch.exchange_declare(x, t), None, "re-declare with the same arguments")
        s.expect(ch.exchange_declare(x, t, passive=True), None)
        x2 = s.name(f"x-{t}-full")
        s.expect(ch.exchange_declare(x2, t, durable=True, auto_delete=True, internal=True,
                                     arguments={"x-foo": "bar"}), None)
        s.expect(ch.exchange_declare(x2, t, durable=True, auto_delete=True, internal=True,
                                     arguments={"x-foo": "bar"}), None)


def scenario_exchange_methods_no_wait(s: Session) -> None:
    """exchange.declare, bind, unbind and delete with no-wait: done, and no reply sent; an
    error still closes the channel."""
    ch = s.channel()
    x, y, q = s.name("x"), s.name("y"), s.name("q")
    s.expect(ch.exchange_declare(x, "fanout", no_wait=True), None, "no declare-ok")
    ch.exchange_declare(y, "fanout", no_wait=True)
    s.expect(ch.exchange_bind(y, x, no_wait=True), None, "no bind-ok")
    ch.queue_declare(q)
    ch.queue_bind(q, y)
    ch.basic_publish(x, "", b"through x")
    s.expect(ch.exchange_unbind(y, x, no_wait=True), None, "no unbind-ok")
    ch.basic_publish(x, "", b"lost")
    s.expect_bodies(ch, q, [b"through x"])
    s.expect(ch.exchange_delete(y, no_wait=True), None, "no delete-ok")
    s.expect(s.exchange_exists(y), False)
    s.expect_error(ch.exchange_declare(x, "direct", no_wait=True), 406, scope="channel")


def _inequivalent(s: Session, first: dict, second: dict, text: str) -> None:
    ch = s.channel()
    x = s.name("x")
    ch.exchange_declare(x, **first)
    r = ch.exchange_declare(x, **second)
    s.expect_error(r, 406, text, scope="channel")
    s.expect(ch.is_open, False, "a channel error closes the channel")
    s.expect(s.exchange_exists(x), True, "the exchange is unchanged")


def scenario_exchange_redeclare_other_type(s: Session) -> None:
    _inequivalent(s, {"exchange_type": "direct"}, {"exchange_type": "fanout"},
                  "PRECONDITION_FAILED - inequivalent arg 'type' for exchange 'x' in vhost '/': "
                  "received 'fanout' but current is 'direct'")


def scenario_exchange_redeclare_other_durable(s: Session) -> None:
    _inequivalent(s, {"exchange_type": "topic"}, {"exchange_type": "topic", "durable": True},
                  "PRECONDITION_FAILED - inequivalent arg 'durable' for exchange 'x' in vhost '/':"
                  " received 'true' but current is 'false'")


def scenario_exchange_redeclare_other_auto_delete(s: Session) -> None:
    _inequivalent(s, {"exchange_type": "topic", "auto_delete": True}, {"exchange_type": "topic"},
                  "PRECONDITION_FAILED - inequivalent arg 'auto_delete' for exchange 'x' in vhost"
                  " '/': received 'false' but current is 'true'")


def scenario_exchange_redeclare_other_internal(s: Session) -> None:
    _inequivalent(s, {"exchange_type": "fanout"}, {"exchange_type": "fanout", "internal": True},
                  "PRECONDITION_FAILED - inequivalent arg 'internal' for exchange 'x' in vhost '/':"
                  " received 'true' but current is 'false'")


def scenario_exchange_redeclare_other_alternate_exchange(s: Session) -> None:
    ae1, ae2 = s.name("ae1"), s.name("ae2")
    _inequivalent(s, {"exchange_type": "direct", "arguments": {"alternate-exchange": ae1}},
                  {"exchange_type": "direct", "arguments": {"alternate-exchange": ae2}},
                  "PRECONDITION_FAILED - inequivalent arg 'alternate-exchange' for exchange 'x' in"
                  " vhost '/': received 'ae2' but current is 'ae1'")


def scenario_exchange_redeclare_adding_alternate_exchange(s: Session) -> None:
    _inequivalent(s, {"exchange_type": "direct"},
                  {"exchange_type": "direct", "arguments": {"alternate-exchange": s.name("ae")}},
                  "PRECONDITION_FAILED - inequivalent arg 'alternate-exchange' for exchange 'x' in"
                  " vhost '/': received the value 'ae' of type 'longstr' but current is none")


def scenario_exchange_redeclare_other_unchecked_arguments(s: Session) -> None:
    """Arguments other than alternate-exchange are not compared on re-declare."""
    ch = s.channel()
    x = s.name("x")
    s.expect(ch.exchange_declare(x, "direct", arguments={"x-foo": "bar"}), None)
    s.expect(ch.exchange_declare(x, "direct", arguments={"x-foo": "baz", "other": 1}), None)
    s.expect(ch.exchange_declare(x, "direct"), None)


def scenario_exchange_passive(s: Session) -> None:
    ch = s.channel()
    x = s.name("x")
    r = ch.exchange_declare(x, "direct", passive=True)
    s.expect_error(r, 404, "NOT_FOUND - no exchange 'x' in vhost '/'", scope="channel")
    ch = s.channel()
    ch.exchange_declare(x, "direct")
    for t in ("direct", "fanout", "topic", "headers"):
        s.expect(ch.exchange_declare(x, t, passive=True), None, "passive ignores the type")
    s.expect(ch.exchange_declare(x, "direct", passive=True, durable=True, auto_delete=True,
                                 internal=True, arguments={"alternate-exchange": "y"}), None,
             "passive ignores every other field")
    s.expect(ch.exchange_declare(x, "no-such-type", passive=True), None,
             "passive ignores even an unknown type")
    s.expect(ch.exchange_declare("amq.topic", "direct", passive=True), None)
    s.expect(ch.exchange_declare("amq.fanout", "fanout", passive=True), None)


def scenario_exchange_passive_default_exchange(s: Session) -> None:
    ch = s.channel()
    r = ch.exchange_declare("", "direct", passive=True)
    s.expect_error(r, 403, "ACCESS_REFUSED - operation not permitted on the default exchange")


def scenario_exchange_predeclared(s: Session) -> None:
    """The amq.* exchanges exist with their types; amq.match/amq.headers are headers exchanges."""
    ch = s.channel()
    for x, t in (("amq.direct", "direct"), ("amq.fanout", "fanout"), ("amq.topic", "topic"),
                 ("amq.headers", "headers"), ("amq.match", "headers")):
        s.expect(ch.exchange_declare(x, t, durable=True), None, f"{x} is a durable {t}")
    s.expect(ch.exchange_declare("amq.rabbitmq.trace", "topic", durable=True, internal=True),
             None, "amq.rabbitmq.trace is a durable internal topic")


def scenario_exchange_declare_reserved_prefix(s: Session) -> None:
    ch = s.channel()
    name = "amq." + s.name("x")
    r = ch.exchange_declare(name, "direct")
    s.expect_error(r, 403, "ACCESS_REFUSED - exchange name 'amq.x' contains reserved prefix"
                   " 'amq.*'", scope="channel")
    ch = s.channel()
    s.expect_error(ch.exchange_declare(name, "direct", passive=True), 404)
    ch = s.channel()
    s.expect(ch.exchange_declare("amq.direct", "direct", durable=True), None,
             "re-declaring an existing amq.* exchange equivalently is fine")
    r = ch.exchange_declare("amq.direct", "fanout", durable=True)
    s.expect_error(r, 406)
    ch = s.channel()
    r = ch.exchange_declare("amq.direct", "direct")
    s.expect_error(r, 406, "PRECONDITION_FAILED - inequivalent arg 'durable' for exchange"
                   " 'amq.direct' in vhost '/': received 'false' but current is 'true'")
    ch = s.channel()
    name = "AMQ." + s.name("upper")
    s.expect(ch.exchange_declare(name, "direct"), None, "the reserved prefix is case-sensitive")


def scenario_exchange_declare_default_exchange(s: Session) -> None:
    ch = s.channel()
    r = ch.exchange_declare("", "direct")
    s.expect_error(r, 403, "ACCESS_REFUSED - operation not permitted on the default exchange")


def scenario_exchange_declare_unknown_type(s: Session) -> None:
    c = s.connection()
    ch = c.channel()
    r = ch.exchange_declare(s.name("x"), "no-such-type")
    s.expect_error(r, 503, "COMMAND_INVALID - unknown exchange type 'no-such-type'",
                   scope="connection")
    s.expect(c.is_open, False, "a connection error closes the connection")
    s.expect(s.exchange_exists(s.name("x")), False)


def scenario_exchange_declare_unknown_type_existing(s: Session) -> None:
    """The type is checked before the exchange is looked up."""
    ch = s.channel()
    x = s.name("x")
    ch.exchange_declare(x, "direct")
    c = s.connection()
    r = c.channel().exchange_declare(x, "no-such-type")
    s.expect_error(r, 503, None, scope="connection")


def scenario_exchange_delete(s: Session) -> None:
    ch = s.channel()
    x = s.name("x")
    ch.exchange_declare(x, "fanout")
    s.expect(ch.exchange_delete(x), None)
    s.expect(s.exchange_exists(x), False)
    s.expect(ch.exchange_delete(x), None, "deleting a missing exchange is ok in 3.10")
    s.expect(ch.exchange_delete(s.name("never")), None)
    s.expect(ch.exchange_delete(s.name("never"), if_unused=True), None)
    s.expect(ch.is_open, True)


def scenario_exchange_delete_removes_bindings(s: Session) -> None:
    ch = s.channel()
    x, q = s.name("x"), s.name("q")
    ch.exchange_declare(x, "fanout")
    ch.queue_declare(q)
    ch.queue_bind(q, x, "")
    ch.exchange_delete(x)
    ch.exchange_declare(x, "fanout")
    ch.basic_publish(x, "", b"after re-declare")
    s.expect_bodies(ch, q, [])


def scenario_exchange_delete_if_unused(s: Session) -> None:
    ch = s.channel()
    x, q = s.name("x"), s.name("q")
    ch.exchange_declare(x, "direct")
    ch.queue_declare(q)
    ch.queue_bind(q, x, "k")
    r = ch.exchange_delete(x, if_unused=True)
    s.expect_error(r, 406, "PRECONDITION_FAILED - exchange 'x' in vhost '/' in use")
    ch = s.channel()
    s.expect(s.exchange_exists(x), True)
    ch.queue_unbind(q, x, "k")
    s.expect(ch.exchange_delete(x, if_unused=True), None)
    s.expect(s.exchange_exists(x), False)


def scenario_exchange_delete_if_unused_exchange_bindings(s: Session) -> None:
    """if-unused looks at bindings where the exchange is the source only."""
    ch = s.channel()
    src, dst = s.name("src"), s.name("dst")
    ch.exchange_declare(src, "fanout")
    ch.exchange_declare(dst, "fanout")
    ch.exchange_bind(dst, src, "")
    s.expect(ch.exchange_delete(dst, if_unused=True), None, "being a destination is not 'used'")
    s.expect(s.exchange_exists(dst), False)
    ch.exchange_declare(dst, "fanout")
    ch.exchange_bind(dst, src, "")
    r = ch.exchange_delete(src, if_unused=True)
    s.expect_error(r, 406)


def scenario_exchange_delete_predeclared(s: Session) -> None:
    ch = s.channel()
    r = ch.exchange_delete("amq.direct")
    s.expect_error(r, 403, "ACCESS_REFUSED - deletion of system exchange 'amq.direct' in vhost"
                   " '/' not allowed")
    ch = s.channel()
    r = ch.exchange_delete("")
    s.expect_error(r, 403, "ACCESS_REFUSED - operation not permitted on the default exchange")
    s.expect(s.exchange_exists("amq.direct"), True)


def scenario_exchange_auto_delete_never_bound(s: Session) -> None:
    ch = s.channel()
    x = s.name("x")
    ch.exchange_declare(x, "fanout", auto_delete=True)
    s.expect(s.exchange_exists(x), True, "an auto-delete exchange that never had a binding stays")
    q = s.name("q")
    ch.queue_declare(q)
    ch.queue_bind(q, x, "")
    ch.queue_bind(q, x, "other")
    ch.queue_unbind(q, x, "")
    s.expect(s.exchange_exists(x), True, "one binding remains")
    ch.queue_unbind(q, x, "other")
    s.expect(s.exchange_exists(x), False, "gone with its last binding")


def scenario_exchange_auto_delete_when_queue_deleted(s: Session) -> None:
    ch = s.channel()
    x, q1, q2 = s.name("x"), s.name("q1"), s.name("q2")
    ch.exchange_declare(x, "direct", auto_delete=True)
    ch.queue_declare(q1)
    ch.queue_declare(q2)
    ch.queue_bind(q1, x, "a")
    ch.queue_bind(q2, x, "b")
    ch.queue_delete(q1)
    s.expect(s.exchange_exists(x), True)
    ch.queue_delete(q2)
    s.expect(s.exchange_exists(x), False, "the last queue's deletion removed its bindings")


def scenario_exchange_auto_delete_exchange_binding_source(s: Session) -> None:
    ch = s.channel()
    src, dst = s.name("src"), s.name("dst")
    ch.exchange_declare(src, "fanout", auto_delete=True)
    ch.exchange_declare(dst, "fanout", auto_delete=True)
    ch.exchange_bind(dst, src, "")
    ch.exchange_unbind(dst, src, "")
    s.expect(s.exchange_exists(src), False, "source loses its last binding")
    s.expect(s.exchange_exists(dst), True, "an auto-delete exchange that was only a destination")


def scenario_exchange_auto_delete_destination_deleted(s: Session) -> None:
    ch = s.channel()
    src, dst = s.name("src"), s.name("dst")
    ch.exchange_declare(src, "fanout", auto_delete=True)
    ch.exchange_declare(dst, "fanout")
    ch.exchange_bind(dst, src, "")
    ch.exchange_delete(dst)
    s.expect(s.exchange_exists(src), False, "deleting the destination removed src's last binding")


def scenario_exchange_auto_delete_cascade(s: Session) -> None:
    """a -> b -> q, both auto-delete: deleting q deletes b, which removes a's last binding."""
    ch = s.channel()
    a, b, q = s.name("a"), s.name("b"), s.name("q")
    ch.exchange_declare(a, "fanout", auto_delete=True)
    ch.exchange_declare(b, "fanout", auto_delete=True)
    ch.queue_declare(q)
    ch.exchange_bind(b, a, "")  # a -> b
    ch.queue_bind(q, b, "")  # b -> q
    ch.queue_delete(q)
    s.expect(s.exchange_exists(b), False, "b lost its last binding")
    s.expect(s.exchange_exists(a), False, "a lost its last binding when b went")


def scenario_exchange_internal(s: Session) -> None:
    ch = s.channel()
    x, inner, q = s.name("x"), s.name("inner"), s.name("q")
    ch.exchange_declare(x, "fanout")
    ch.exchange_declare(inner, "fanout", internal=True)
    ch.queue_declare(q)
    ch.queue_bind(q, inner, "")
    ch.exchange_bind(inner, x, "")
    ch.basic_publish(x, "k", b"via x")
    r = ch.basic_publish(inner, "k", b"direct to internal")
    s.expect_error(r, 403, "ACCESS_REFUSED - cannot publish to internal exchange 'inner' in"
                   " vhost '/'")
    ch = s.channel()
    s.expect_bodies(ch, q, [b"via x"])
    r = ch.basic_publish("amq.rabbitmq.trace", "k", b"x")
    s.expect_error(r, 403)


def scenario_exchange_publish_missing(s: Session) -> None:
    ch = s.channel()
    r = ch.basic_publish(s.name("nope"), "k", b"body")
    s.expect_error(r, 404, "NOT_FOUND - no exchange 'nope' in vhost '/'", scope="channel")
    ch = s.channel()
    r = ch.basic_publish(s.name("nope"), "k", b"body", mandatory=True)
    s.expect_error(r, 404)
    s.expect(ch.returned, [], "no basic.return for a missing exchange")


def scenario_exchange_bind_missing(s: Session) -> None:
    ch = s.channel()
    x, q, missing = s.name("x"), s.name("q"), s.name("missing")
    ch.exchange_declare(x, "direct")
    ch.queue_declare(q)
    s.expect_error(ch.queue_bind(q, missing, "k"), 404,
                   "NOT_FOUND - no exchange 'missing' in vhost '/'")
    ch = s.channel()
    s.expect_error(ch.queue_bind(missing, x, "k"), 404, "NOT_FOUND - no queue 'missing' in vhost"
                   " '/'")
    ch = s.channel()
    s.expect_error(ch.queue_bind(s.name("mq"), s.name("mx"), "k"), 404,
                   "NOT_FOUND - no exchange 'mx' in vhost '/'", what="the exchange is looked up first")
    ch = s.channel()
    s.expect_error(ch.exchange_bind(missing, x, "k"), 404, "NOT_FOUND - no exchange 'missing' in"
                   " vhost '/'")
    ch = s.channel()
    s.expect_error(ch.exchange_bind(x, missing, "k"), 404)
    ch = s.channel()
    s.expect_error(ch.exchange_bind(s.name("md"), s.name("ms"), "k"), 404,
                   "NOT_FOUND - no exchange 'ms' in vhost '/'", what="the source is looked up first")


def scenario_exchange_unbind_missing(s: Session) -> None:
    ch = s.channel()
    x, y, q = s.name("x"), s.name("y"), s.name("q")
    ch.exchange_declare(x, "direct")
    ch.exchange_declare(y, "direct")
    ch.queue_declare(q)
    s.expect(ch.queue_unbind(q, x, "never-bound"), None, "unbinding a missing binding is ok")
    s.expect(ch.exchange_unbind(y, x, "never-bound"), None)
    # RabbitMQ 3.10 answers unbind-ok even when the exchange or the queue does not exist.
    # (A fresh channel for each, so that one difference does not hide the next.)
    s.expect(s.channel().queue_unbind(q, s.name("mx"), "k"), None, "from a missing exchange")
    s.expect(s.channel().queue_unbind(s.name("mq"), x, "k"), None, "of a missing queue")
    s.expect(s.channel().exchange_unbind(s.name("md"), x, "k"), None, "missing destination")
    s.expect(s.channel().exchange_unbind(x, s.name("ms"), "k"), None, "missing source")
    s.expect(s.channel().exchange_unbind(s.name("md"), s.name("ms"), "k"), None, "both missing")


def scenario_exchange_to_exchange(s: Session) -> None:
    ch = s.channel()
    x, y, z, q1, q2 = (s.name(n) for n in ("x", "y", "z", "q1", "q2"))
    ch.exchange_declare(x, "topic")
    ch.exchange_declare(y, "direct")
    ch.exchange_declare(z, "fanout")
    ch.queue_declare(q1)
    ch.queue_declare(q2)
    s.expect(ch.exchange_bind(y, x, "a.*"), None)
    s.expect(ch.exchange_bind(y, x, "a.*"), None, "binding twice is ok")
    ch.exchange_bind(z, x, "#")
    ch.queue_bind(q1, y, "a.b")  # the routing key is kept along the path
    ch.queue_bind(q2, z, "ignored")
    for rk in ("a.b", "a.c", "b"):
        ch.basic_publish(x, rk, rk.encode())
    s.expect_bodies(ch, q1, [b"a.b"])
    s.expect_bodies(ch, q2, [b"a.b", b"a.c", b"b"])
    s.expect(ch.exchange_unbind(y, x, "a.*"), None)
    ch.basic_publish(x, "a.b", b"after unbind")
    s.expect_bodies(ch, q1, [])
    s.expect_bodies(ch, q2, [b"after unbind"])
    m_ch = s.channel()
    r = m_ch.exchange_bind(q1, x, "#")  # a queue is not an exchange
    s.expect_error(r, 404, "NOT_FOUND - no exchange 'q1' in vhost '/'")


def scenario_exchange_to_exchange_delivered_message(s: Session) -> None:
    """What the consumer sees for a message that went through exchange bindings."""
    ch = s.channel()
    x, y, q = s.name("x"), s.name("y"), s.name("q")
    ch.exchange_declare(x, "fanout")
    ch.exchange_declare(y, "fanout")
    ch.queue_declare(q)
    ch.exchange_bind(y, x, "")
    ch.queue_bind(q, y, "")
    ch.basic_publish(x, "rk", b"m", {"message_id": "1"})
    m = ch.basic_get(q, auto_ack=True)
    s.expect(getattr(m, "exchange", None), "x", "exchange is where it was published")
    s.expect(getattr(m, "routing_key", None), "rk")


def scenario_exchange_to_exchange_cycle(s: Session) -> None:
    ch = s.channel()
    x, y, qx, qy = s.name("x"), s.name("y"), s.name("qx"), s.name("qy")
    ch.exchange_declare(x, "fanout")
    ch.exchange_declare(y, "fanout")
    ch.queue_declare(qx)
    ch.queue_declare(qy)
    ch.exchange_bind(y, x, "")
    ch.exchange_bind(x, y, "")
    ch.queue_bind(qx, x, "")
    ch.queue_bind(qy, y, "")
    ch.queue_bind(qx, y, "")  # qx reachable twice
    ch.basic_publish(x, "", b"from x")
    ch.basic_publish(y, "", b"from y")
    s.expect_bodies(ch, qx, [b"from x", b"from y"])
    s.expect_bodies(ch, qy, [b"from x", b"from y"])


def scenario_exchange_self_binding(s: Session) -> None:
    ch = s.channel()
    x, q = s.name("x"), s.name("q")
    ch.exchange_declare(x, "fanout")
    ch.queue_declare(q)
    s.expect(ch.exchange_bind(x, x, ""), None, "an exchange may be bound to itself")
    ch.queue_bind(q, x, "")
    ch.basic_publish(x, "", b"once")
    s.expect_bodies(ch, q, [b"once"])


def scenario_exchange_diamond(s: Session) -> None:
    """x -> a -> q and x -> b -> q: the queue gets the message once."""
    ch = s.channel()
    x, a, b, q = (s.name(n) for n in ("x", "a", "b", "q"))
    ch.exchange_declare(x, "fanout")
    ch.exchange_declare(a, "direct")
    ch.exchange_declare(b, "topic")
    ch.queue_declare(q)
    ch.exchange_bind(a, x, "")
    ch.exchange_bind(b, x, "")
    ch.queue_bind(q, a, "k")
    ch.queue_bind(q, b, "#")
    ch.queue_bind(q, x, "")
    ch.basic_publish(x, "k", b"one")
    s.expect_bodies(ch, q, [b"one"])


def scenario_alternate_exchange(s: Session) -> None:
    ch = s.channel()
    x, ae, q, qae = s.name("x"), s.name("ae"), s.name("q"), s.name("qae")
    ch.exchange_declare(ae, "fanout")
    ch.exchange_declare(x, "direct", arguments={"alternate-exchange": ae})
    ch.queue_declare(q)
    ch.queue_declare(qae)
    ch.queue_bind(q, x, "k")
    ch.queue_bind(qae, ae, "")
    ch.basic_publish(x, "k", b"matched")
    ch.basic_publish(x, "other", b"unmatched", mandatory=True)
    s.expect(ch.returned, [], "routed through the AE: not returned")
    s.expect_bodies(ch, q, [b"matched"])
    ch.basic_publish(x, "other", b"m2", {"headers": {"h": 1}})
    m = ch.basic_get(qae, auto_ack=True)
    s.expect(getattr(m, "body", None), b"unmatched")
    m = ch.basic_get(qae, auto_ack=True)
    s.expect(getattr(m, "exchange", None), "x", "exchange is the one published to")
    s.expect(getattr(m, "routing_key", None), "other")


def scenario_alternate_exchange_chain(s: Session) -> None:
    ch = s.channel()
    x, ae1, ae2, q1, q2 = (s.name(n) for n in ("x", "ae1", "ae2", "q1", "q2"))
    ch.exchange_declare(ae2, "fanout")
    ch.exchange_declare(ae1, "direct", arguments={"alternate-exchange": ae2})
    ch.exchange_declare(x, "direct", arguments={"alternate-exchange": ae1})
    ch.queue_declare(q1)
    ch.queue_declare(q2)
    ch.queue_bind(q1, ae1, "k1")
    ch.queue_bind(q2, ae2, "")
    ch.basic_publish(x, "k1", b"to ae1")
    ch.basic_publish(x, "k2", b"to ae2")
    s.expect_bodies(ch, q1, [b"to ae1"])
    s.expect_bodies(ch, q2, [b"to ae2"])


def scenario_alternate_exchange_cycle(s: Session) -> None:
    ch = s.channel()
    a, b = s.name("a"), s.name("b")
    ch.exchange_declare(a, "direct", arguments={"alternate-exchange": b})
    ch.exchange_declare(b, "direct", arguments={"alternate-exchange": a})
    ch.basic_publish(a, "k", b"loops", mandatory=True)
    s.expect([r.reply_code for r in ch.returned], [312])
    x = s.name("self")
    ch.exchange_declare(x, "direct", arguments={"alternate-exchange": x})
    ch.basic_publish(x, "k", b"self", mandatory=True)
    s.expect([r.reply_code for r in ch.returned], [312, 312])


def scenario_alternate_exchange_missing(s: Session) -> None:
    ch = s.channel()
    x, q = s.name("x"), s.name("q")
    s.expect(ch.exchange_declare(x, "direct", arguments={"alternate-exchange": s.name("nope")}),
             None, "the AE need not exist")
    ch.queue_declare(q)
    ch.queue_bind(q, x, "k")
    ch.basic_publish(x, "other", b"dropped")
    ch.basic_publish(x, "other", b"returned", mandatory=True)
    s.expect([r.reply_code for r in ch.returned], [312])
    s.expect_bodies(ch, q, [])
    # The AE appears later: it is looked up at publish time.
    ch.exchange_declare(s.name("nope"), "fanout")
    ch.queue_bind(q, s.name("nope"), "")
    ch.basic_publish(x, "other", b"now routed")
    s.expect_bodies(ch, q, [b"now routed"])


def scenario_alternate_exchange_on_fanout_and_topic(s: Session) -> None:
    ch = s.channel()
    f, t, ae, qae = s.name("f"), s.name("t"), s.name("ae"), s.name("qae")
    ch.exchange_declare(ae, "fanout")
    ch.queue_declare(qae)
    ch.queue_bind(qae, ae, "")
    ch.exchange_declare(f, "fanout", arguments={"alternate-exchange": ae})
    ch.exchange_declare(t, "topic", arguments={"alternate-exchange": ae})
    ch.basic_publish(f, "k", b"fanout without bindings")
    q = s.name("q")
    ch.queue_declare(q)
    ch.queue_bind(q, t, "a.#")
    ch.basic_publish(t, "a.b", b"topic matched")
    ch.basic_publish(t, "b.a", b"topic unmatched")
    s.expect_bodies(ch, qae, [b"fanout without bindings", b"topic unmatched"])


def scenario_alternate_exchange_partway(s: Session) -> None:
    """x -> y (exchange binding); y has an AE. A message y does not route goes to y's AE."""
    ch = s.channel()
    x, y, ae, qy, qae, qx = (s.name(n) for n in ("x", "y", "ae", "qy", "qae", "qx"))
    ch.exchange_declare(ae, "fanout")
    ch.exchange_declare(y, "direct", arguments={"alternate-exchange": ae})
    ch.exchange_declare(x, "fanout")
    for q in (qy, qae, qx):
        ch.queue_declare(q)
    ch.exchange_bind(y, x, "")
    ch.queue_bind(qy, y, "k")
    ch.queue_bind(qae, ae, "")
    ch.basic_publish(x, "k", b"y routes")
    ch.basic_publish(x, "other", b"y does not route", mandatory=True)
    s.expect(ch.returned, [], "routed by y's AE")
    s.expect_bodies(ch, qy, [b"y routes"])
    s.expect_bodies(ch, qae, [b"y does not route"])
    # x itself also routes to a queue: y's AE still applies (each exchange on the path decides).
    ch.queue_bind(qx, x, "")
    ch.basic_publish(x, "other", b"x routes to qx too")
    s.expect_bodies(ch, qx, [b"x routes to qx too"])
    s.expect_bodies(ch, qae, [b"x routes to qx too"])


def scenario_alternate_exchange_partway_first_hop(s: Session) -> None:
    """x (with an AE) routes only to an exchange y that routes nowhere: x's AE is not used
    (x's own match was not empty), and the message is unroutable."""
    ch = s.channel()
    x, y, ae, qae = s.name("x"), s.name("y"), s.name("ae"), s.name("qae")
    ch.exchange_declare(ae, "fanout")
    ch.exchange_declare(x, "direct", arguments={"alternate-exchange": ae})
    ch.exchange_declare(y, "direct")
    ch.queue_declare(qae)
    ch.queue_bind(qae, ae, "")
    ch.exchange_bind(y, x, "k")
    ch.basic_publish(x, "k", b"x matches the exchange binding only", mandatory=True)
    s.expect([(r.reply_code, r.reply_text) for r in ch.returned], [(312, "NO_ROUTE")])
    s.expect_bodies(ch, qae, [])


def scenario_alternate_exchange_internal_and_non_string(s: Session) -> None:
    ch = s.channel()
    x, ae, qae = s.name("x"), s.name("ae"), s.name("qae")
    ch.exchange_declare(ae, "fanout", internal=True)
    ch.exchange_declare(x, "direct", arguments={"alternate-exchange": ae})
    ch.queue_declare(qae)
    ch.queue_bind(qae, ae, "")
    ch.basic_publish(x, "k", b"to an internal AE")
    s.expect_bodies(ch, qae, [b"to an internal AE"])
    r = ch.exchange_declare(s.name("x2"), "direct", arguments={"alternate-exchange": 42})
    s.expect_error(r, 406, "PRECONDITION_FAILED - invalid type 'signedint' for arg"
                   " 'alternate-exchange' in exchange 'x2' in vhost '/'")
    s.expect(s.exchange_exists(s.name("x2")), False)


def scenario_exchange_declare_empty_type(s: Session) -> None:
    c = s.connection()
    r = c.channel().exchange_declare(s.name("x"), "")
    s.expect_error(r, 503, "COMMAND_INVALID - invalid exchange type ''", scope="connection",
                   what="'' is 'invalid', not 'unknown'")


def scenario_channel_error_is_isolated(s: Session) -> None:
    """A channel error closes that channel only; the connection and its other channels go on."""
    ch1, ch2 = s.channel(), s.channel()
    q = s.name("q")
    ch2.queue_declare(q)
    s.expect_error(ch1.queue_declare(s.name("missing"), passive=True), 404)
    s.expect((ch1.is_open, ch2.is_open, s.conn.is_open), (False, True, True))
    s.expect(ch2.basic_publish("", q, b"m"), None)
    s.expect_bodies(ch2, q, [b"m"])
    ch3 = s.channel()
    s.expect(ch3.queue_declare(q, passive=True), QueueDeclareOk("q", 0, 0))


def scenario_connection_error_is_isolated(s: Session) -> None:
    """A connection error closes every channel of that connection, and its exclusive queues."""
    c1, c2 = s.connection(), s.connection()
    a, b = c1.channel(), c1.channel()
    q, qx = s.name("q"), s.name("qx")
    a.queue_declare(q)
    a.queue_declare(qx, exclusive=True)
    a.basic_publish("", q, b"m0")
    a.basic_publish("", q, b"m1")
    a.basic_get(q)
    s.expect_error(b.exchange_declare(s.name("x"), "no-such-type"), 503, scope="connection")
    s.expect((a.is_open, b.is_open, c1.is_open), (False, False, False))
    ch = c2.channel()
    s.expect(ch.queue_declare(q, passive=True), QueueDeclareOk("q", 2, 0),
             "the unacked message was requeued")
    s.expect(getattr(ch.basic_get(q), "redelivered", None), True)
    s.expect_error(ch.queue_declare(qx, passive=True), 404, what="exclusive queue gone")
