"""Scenarios: queues (declare, exclusive, bind/unbind, purge, delete)."""

from __future__ import annotations

from typing import Any

from .harness import QueueDeclareOk, Session

LOCKED = ("RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'q' in vhost '/'."
          " It could be originally declared on another connection or the exclusive property"
          " value does not match that of the original declaration.")


def scenario_queue_server_named(s: Session) -> None:
    ch = s.channel()
    r1 = ch.queue_declare("", exclusive=True)
    r2 = ch.queue_declare("")
    s.expect(r1, QueueDeclareOk("amq.gen-1", 0, 0))
    s.expect(r2, QueueDeclareOk("amq.gen-2", 0, 0))
    if isinstance(r1, QueueDeclareOk):
        s.expect(len(r1.queue), len("amq.gen-") + 22, "amq.gen- and 22 characters")
        ch.basic_publish("", r1.queue, b"by name")
        s.expect_bodies(ch, r1.queue, [b"by name"])
        s.expect(ch.queue_declare(r1.queue, passive=True), QueueDeclareOk("amq.gen-1", 0, 0))


def scenario_queue_declare_reserved_prefix(s: Session) -> None:
    ch = s.channel()
    r = ch.queue_declare("amq." + s.name("q"))
    s.expect_error(r, 403, "ACCESS_REFUSED - queue name 'amq.q' contains reserved prefix 'amq.*'")


def scenario_queue_passive(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    r = ch.queue_declare(q, passive=True)
    s.expect_error(r, 404, "NOT_FOUND - no queue 'q' in vhost '/'", scope="channel")
    ch = s.channel()
    ch.queue_declare(q, durable=False)
    s.expect(ch.queue_declare(q, passive=True, durable=True, exclusive=True, auto_delete=True,
                              arguments={"x-message-ttl": 5}), QueueDeclareOk("q", 0, 0),
             "passive ignores every other field")


def _inequivalent(s: Session, first: dict, second: dict, code: int, text: str) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, **first)
    r = ch.queue_declare(q, **second)
    s.expect_error(r, code, text, scope="channel")
    s.expect(s.queue_exists(q), True)


def scenario_queue_redeclare_other_durable(s: Session) -> None:
    _inequivalent(s, {}, {"durable": True}, 406,
                  "PRECONDITION_FAILED - inequivalent arg 'durable' for queue 'q' in vhost '/': "
                  "received 'true' but current is 'false'")


def scenario_queue_redeclare_other_auto_delete(s: Session) -> None:
    _inequivalent(s, {"auto_delete": True}, {}, 406,
                  "PRECONDITION_FAILED - inequivalent arg 'auto_delete' for queue 'q' in vhost "
                  "'/': received 'false' but current is 'true'")


def scenario_queue_redeclare_other_exclusive(s: Session) -> None:
    _inequivalent(s, {}, {"exclusive": True}, 405,
                  "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'q' in vhost"
                  " '/'. It could be originally declared on another connection or the exclusive"
                  " property value does not match that of the original declaration.")


def scenario_queue_redeclare_exclusive_as_not_exclusive(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, exclusive=True)
    s.expect_error(ch.queue_declare(q), 405, LOCKED, what="same connection, exclusive=False")


def scenario_queue_redeclare_other_arguments(s: Session) -> None:
    _inequivalent(s, {"arguments": {"x-message-ttl": 1000}}, {"arguments": {"x-message-ttl": 2000}},
                  406, "PRECONDITION_FAILED - inequivalent arg 'x-message-ttl' for queue 'q' in"
                  " vhost '/': received '2000' but current is '1000'")


def scenario_queue_redeclare_adding_argument(s: Session) -> None:
    _inequivalent(s, {}, {"arguments": {"x-max-length": 10}},
                  406, "PRECONDITION_FAILED - inequivalent arg 'x-max-length' for queue 'q' in"
                  " vhost '/': received the value '10' of type 'signedint' but current is none")


def scenario_queue_redeclare_dropping_argument(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-max-length": 10})
    s.expect_error(ch.queue_declare(q), 406, "PRECONDITION_FAILED - inequivalent arg"
                   " 'x-max-length' for queue 'q' in vhost '/': received none but current is the"
                   " value '10' of type 'signedint'", what="re-declare without the argument")


def scenario_queue_redeclare_argument_other_type(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-max-length": 10})
    s.expect_error(ch.queue_declare(q, arguments={"x-max-length": 2**40}), 406,
                   "PRECONDITION_FAILED - inequivalent arg 'x-max-length' for queue 'q' in vhost"
                   " '/': received '1099511627776' but current is '10'")
    ch = s.channel()
    s.expect(ch.queue_declare(q, arguments={"x-max-length": 10}), QueueDeclareOk("q", 0, 0),
             "int encoded the same way")
    s.expect_error(ch.queue_declare(q, arguments={"x-max-length": "10"}), 406,
                   "PRECONDITION_FAILED - inequivalent arg 'x-max-length' for queue 'q' in vhost"
                   " '/': received '10' but current is '10'", what="a string is not the int 10")


def scenario_queue_redeclare_unchecked_arguments(s: Session) -> None:
    """Arguments RabbitMQ does not know are not compared."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-foo": "a", "bar": 1})
    s.expect(ch.queue_declare(q, arguments={"x-foo": "b"}), QueueDeclareOk("q", 0, 0))
    s.expect(ch.queue_declare(q), QueueDeclareOk("q", 0, 0))


#: The arguments RabbitMQ compares when a classic queue is declared again, each with two values.
COMPARED_ARGUMENTS: tuple[tuple[str, Any, Any], ...] = (
    ("x-expires", 10_000, 20_000), ("x-message-ttl", 1000, 2000),
    ("x-dead-letter-exchange", "a", "b"), ("x-max-length", 10, 20),
    ("x-max-length-bytes", 1000, 2000), ("x-max-priority", 5, 10),
    ("x-overflow", "drop-head", "reject-publish"), ("x-queue-mode", "default", "lazy"),
    ("x-single-active-consumer", True, False), ("x-queue-type", "classic", "quorum"),
)


def scenario_queue_redeclare_each_compared_argument(s: Session) -> None:
    """Every argument RabbitMQ compares on a classic queue's re-declare: another value is a 406
    (the same value is fine)."""
    for i, (key, first, second) in enumerate(COMPARED_ARGUMENTS):
        ch = s.channel()
        q = s.name(f"q{i}")
        ch.queue_declare(q, arguments={key: first})
        s.expect(ch.queue_declare(q, arguments={key: first}), QueueDeclareOk(f"q{i}", 0, 0))
        s.expect_error(ch.queue_declare(q, arguments={key: second}), 406, scope="channel",
                       what=f"{key} {first!r} then {second!r}")
    ch = s.channel()
    q = s.name("dl")
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": "x", "x-dead-letter-routing-key": "k1"})
    s.expect_error(ch.queue_declare(q, arguments={"x-dead-letter-exchange": "x",
                                                  "x-dead-letter-routing-key": "k2"}), 406)


#: Arguments of quorum queues and streams only.
OTHER_TYPES_ARGUMENTS: tuple[tuple[str, Any], ...] = (
    ("x-max-in-memory-length", 10), ("x-max-in-memory-bytes", 1000),
    ("x-quorum-initial-group-size", 1), ("x-delivery-limit", 1), ("x-max-age", "1D"),
    ("x-stream-max-segment-size-bytes", 1000), ("x-initial-cluster-size", 1),
    ("x-queue-leader-locator", "client-local"),
)


def scenario_queue_declare_classic_refuses_other_types_arguments(s: Session) -> None:
    """A classic queue refuses the arguments of quorum queues and streams: 406 "invalid arg
    'x-delivery-limit' for queue 'q3' in vhost '/' of queue type rabbit_classic_queue". (No
    expectations: embroker accepts them, a known divergence, see test_conformance.py.)"""
    for i, (key, value) in enumerate(OTHER_TYPES_ARGUMENTS):
        s.channel().queue_declare(s.name(f"q{i}"), arguments={key: value})


def scenario_queue_declare_invalid_argument(s: Session) -> None:
    ch = s.channel()
    r = ch.queue_declare(s.name("q"), arguments={"x-message-ttl": "soon"})
    s.expect_error(r, 406, "PRECONDITION_FAILED - invalid arg 'x-message-ttl' for queue 'q' in"
                   " vhost '/': \"expected integer, got longstr\"")
    ch = s.channel()
    r = ch.queue_declare(s.name("q2"), arguments={"x-max-length": -1})
    s.expect_error(r, 406, "PRECONDITION_FAILED - invalid arg 'x-max-length' for queue 'q2' in"
                   " vhost '/': {value_negative,-1}")
    s.expect(s.queue_exists(s.name("q")), False)


def scenario_queue_exclusive_other_connection(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, exclusive=True)
    ch.basic_publish("", q, b"m1")
    c2 = s.connection()
    s.expect_error(c2.channel().queue_declare(q, passive=True), 405, LOCKED, scope="channel")
    s.expect_error(c2.channel().queue_declare(q, exclusive=True), 405, LOCKED)
    s.expect_error(c2.channel().queue_declare(q), 405, LOCKED)
    s.expect_error(c2.channel().queue_bind(q, "amq.fanout", s.name("k")), 405, LOCKED)
    s.expect_error(c2.channel().basic_get(q), 405, LOCKED)
    s.expect_error(c2.channel().queue_purge(q), 405, LOCKED)
    s.expect_error(c2.channel().queue_delete(q), 405, LOCKED)
    s.expect(c2.channel().queue_unbind(q, "amq.fanout", s.name("k")), None,
             "unbinding a binding that does not exist is ok, even here")
    ch.queue_bind(q, "amq.direct", s.name("k"))
    s.expect_error(c2.channel().queue_unbind(q, "amq.direct", s.name("k")), 405, LOCKED,
                   what="unbinding an existing binding from another connection")
    ch2 = c2.channel()
    s.expect(ch2.basic_publish("", q, b"m2"), None, "anyone may publish to it")
    s.expect(ch.drain(q), [b"m1", b"m2"])
    s.expect(ch2.is_open, True)
    # The owner's other channels may use it.
    ch3 = s.channel()
    s.expect(ch3.queue_declare(q, exclusive=True), QueueDeclareOk("q", 0, 0))
    s.conn.close()
    r = s.connection().channel().queue_declare(q, passive=True)
    s.expect_error(r, 404, "NOT_FOUND - no queue 'q' in vhost '/'",
                   what="the exclusive queue went with its connection")


def scenario_queue_exclusive_closed_channel_keeps_it(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, exclusive=True)
    ch.close()
    s.expect(s.channel().queue_declare(q, passive=True), QueueDeclareOk("q", 0, 0),
             "exclusive belongs to the connection, not the channel")


def scenario_queue_auto_delete_without_consumers(s: Session) -> None:
    """An auto-delete queue that never had a consumer is not deleted (nothing to trigger it)."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, auto_delete=True)
    ch.basic_publish("", q, b"m")
    ch.basic_get(q, auto_ack=True)
    ch.close()
    s.expect(s.queue_exists(q), True)


def scenario_queue_declare_counts(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    s.expect(ch.queue_declare(q), QueueDeclareOk("q", 0, 0))
    for i in range(3):
        ch.basic_publish("", q, f"m{i}".encode())
    s.expect(ch.queue_declare(q), QueueDeclareOk("q", 3, 0))
    s.expect(ch.queue_declare(q, passive=True), QueueDeclareOk("q", 3, 0))
    ch.basic_get(q)
    s.expect(ch.queue_declare(q, passive=True), QueueDeclareOk("q", 2, 0),
             "unacked messages are not counted")
    ch.basic_get(q, auto_ack=True)
    s.expect(ch.queue_declare(q, passive=True), QueueDeclareOk("q", 1, 0))
    ch.close()
    s.expect(s.channel().queue_declare(q, passive=True), QueueDeclareOk("q", 2, 0),
             "closing the channel requeued its unacked message")


def scenario_queue_bind_unbind(s: Session) -> None:
    ch = s.channel()
    x, q = s.name("x"), s.name("q")
    ch.exchange_declare(x, "direct")
    ch.queue_declare(q)
    s.expect(ch.queue_bind(q, x, "a"), None)
    s.expect(ch.queue_bind(q, x, "a"), None, "binding twice is ok")
    ch.queue_bind(q, x, "b")
    ch.basic_publish(x, "a", b"1")
    ch.basic_publish(x, "b", b"2")
    ch.basic_publish(x, "c", b"3")
    s.expect_bodies(ch, q, [b"1", b"2"])
    s.expect(ch.queue_unbind(q, x, "a"), None)
    s.expect(ch.queue_unbind(q, x, "a"), None, "unbinding twice is ok")
    ch.basic_publish(x, "a", b"4")
    ch.basic_publish(x, "b", b"5")
    s.expect_bodies(ch, q, [b"5"])


def scenario_queue_bind_arguments_distinguish_bindings(s: Session) -> None:
    """Bindings are (source, destination, key, arguments): other arguments make another one."""
    ch = s.channel()
    x, q = s.name("x"), s.name("q")
    ch.exchange_declare(x, "direct")
    ch.queue_declare(q)
    ch.queue_bind(q, x, "k", arguments={"a": 1})
    ch.queue_bind(q, x, "k", arguments={"a": 2})
    ch.queue_unbind(q, x, "k", arguments={"a": 1})
    ch.basic_publish(x, "k", b"still bound via a=2")
    s.expect_bodies(ch, q, [b"still bound via a=2"])
    ch.queue_unbind(q, x, "k")
    ch.basic_publish(x, "k", b"unbind without arguments does not match a=2")
    s.expect_bodies(ch, q, [b"unbind without arguments does not match a=2"])
    ch.queue_unbind(q, x, "k", arguments={"a": 2})
    ch.basic_publish(x, "k", b"gone")
    s.expect_bodies(ch, q, [])


def scenario_queue_bind_default_exchange(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    r = ch.queue_bind(q, "", q)
    s.expect_error(r, 403, "ACCESS_REFUSED - operation not permitted on the default exchange")
    ch = s.channel()
    r = ch.queue_unbind(q, "", q)
    s.expect_error(r, 403, "ACCESS_REFUSED - operation not permitted on the default exchange")
    ch = s.channel()
    ch.exchange_declare(s.name("x"), "fanout")
    r = ch.exchange_bind(s.name("x"), "", "k")
    s.expect_error(r, 403, "ACCESS_REFUSED - operation not permitted on the default exchange",
                   what="the default exchange as source")
    ch = s.channel()
    r = ch.exchange_bind("", s.name("x"), "k")
    s.expect_error(r, 403, "ACCESS_REFUSED - operation not permitted on the default exchange",
                   what="the default exchange as destination")
    ch = s.channel()
    r = ch.exchange_bind(s.name("q"), "", "k")
    s.expect_error(r, 403, what="a missing destination: the default exchange is checked first")


def scenario_queue_bind_empty_names(s: Session) -> None:
    """queue '' means the channel's last declared queue; so does an empty routing key."""
    ch = s.channel()
    x, q = s.name("x"), s.name("q")
    ch.exchange_declare(x, "direct")
    r = ch.queue_bind("", x, "k")
    s.expect_error(r, 404, "NOT_FOUND - no previously declared queue",
                   what="queue '' before any declare on this channel")
    ch = s.channel()
    ch.queue_declare(q)
    s.expect(ch.queue_bind("", x, "k"), None)
    s.expect(ch.queue_bind("", x, ""), None)
    ch.basic_publish(x, "k", b"via k")
    ch.basic_publish(x, "other", b"other key")
    ch.basic_publish(x, q, b"routing key = the queue name")
    ch.basic_publish(x, "", b"empty routing key")
    s.expect_bodies(ch, q, [b"via k", b"routing key = the queue name"])
    ch.basic_publish("", q, b"m1")
    ch.basic_publish("", q, b"m2")
    s.expect(getattr(ch.basic_get("", auto_ack=True), "body", None), b"m1",
             "basic_get('') gets from the channel's last declared queue")
    s.expect(ch.queue_purge(""), 1, "queue_purge('') too")
    ch.basic_publish("", q, b"m3")
    s.expect(ch.queue_delete(""), 1, "queue_delete('') too")
    s.expect_error(ch.queue_declare("", passive=True), 404, "NOT_FOUND - no queue '' in vhost '/'",
                   what="but a passive declare of '' does not use the last queue")


def scenario_queue_purge(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    s.expect(ch.queue_purge(q), 0)
    for i in range(4):
        ch.basic_publish("", q, f"m{i}".encode())
    m = ch.basic_get(q)
    s.expect(ch.queue_purge(q), 2 + 1, "ready messages only")
    s.expect(ch.queue_declare(q, passive=True), QueueDeclareOk("q", 0, 0))
    s.expect(ch.basic_ack(m.delivery_tag), None, "an unacked message survives the purge")
    r = ch.queue_purge(s.name("missing"))
    s.expect_error(r, 404, "NOT_FOUND - no queue 'missing' in vhost '/'")


def scenario_queue_purge_then_requeue(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    ch.basic_publish("", q, b"a")
    ch.basic_publish("", q, b"b")
    m = ch.basic_get(q)
    ch.queue_purge(q)
    ch.basic_reject(m.delivery_tag)
    s.expect_bodies(ch, q, [b"a"])


def scenario_queue_methods_no_wait(s: Session) -> None:
    """queue.declare, bind, purge and delete with no-wait: done, and no reply sent; an error
    still closes the channel."""
    ch = s.channel()
    q, x = s.name("q"), s.name("x")
    ch.exchange_declare(x, "fanout")
    s.expect(ch.queue_declare(q, no_wait=True), None, "no declare-ok")
    s.expect(ch.queue_bind(q, x, no_wait=True), None, "no bind-ok")
    ch.basic_publish(x, "", b"m1")
    ch.basic_publish(x, "", b"m2")
    s.expect(ch.queue_declare(q, passive=True), QueueDeclareOk("q", 2, 0), "declared and bound")
    s.expect(ch.queue_purge(q, no_wait=True), None, "no purge-ok")
    s.expect(ch.queue_declare(q, passive=True), QueueDeclareOk("q", 0, 0), "purged")
    s.expect(ch.queue_delete(q, no_wait=True), None, "no delete-ok")
    s.expect(s.queue_exists(q), False)
    s.expect_error(ch.queue_purge(s.name("missing"), no_wait=True), 404,
                   "NOT_FOUND - no queue 'missing' in vhost '/'", scope="channel")


def scenario_queue_delete(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    for i in range(3):
        ch.basic_publish("", q, f"m{i}".encode())
    s.expect(ch.queue_delete(q), 3)
    s.expect(s.queue_exists(q), False)
    s.expect(ch.queue_delete(q), 0, "deleting a missing queue is ok in 3.10")
    s.expect(ch.queue_delete(q, if_empty=True, if_unused=True), 0)
    ch.queue_declare(q)
    ch.basic_publish("", q, b"a")
    ch.basic_publish("", q, b"b")
    ch.basic_get(q)
    s.expect(ch.queue_delete(q), 1, "the count excludes unacked messages")


def scenario_queue_delete_if_empty(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    ch.basic_publish("", q, b"m")
    r = ch.queue_delete(q, if_empty=True)
    s.expect_error(r, 406, "PRECONDITION_FAILED - queue 'q' in vhost '/' not empty")
    ch = s.channel()
    s.expect(s.queue_exists(q), True)
    m = ch.basic_get(q)
    s.expect(ch.queue_delete(q, if_empty=True), 0, "only an unacked message: empty")
    s.expect(s.queue_exists(q), False)
    s.expect(ch.basic_ack(m.delivery_tag), None, "ack after the queue was deleted")


def scenario_queue_delete_if_unused_without_consumers(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    ch.basic_publish("", q, b"m")
    s.expect(ch.queue_delete(q, if_unused=True), 1, "no consumers: unused")


def scenario_queue_delete_removes_bindings(s: Session) -> None:
    ch = s.channel()
    x, q = s.name("x"), s.name("q")
    ch.exchange_declare(x, "fanout")
    ch.queue_declare(q)
    ch.queue_bind(q, x, "")
    ch.queue_delete(q)
    ch.queue_declare(q)
    ch.basic_publish(x, "", b"not routed to the new queue")
    s.expect_bodies(ch, q, [])


def scenario_queue_delete_unacked_then_ack(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    ch.basic_publish("", q, b"m")
    m = ch.basic_get(q)
    s.expect(ch.queue_delete(q), 0)
    s.expect(ch.basic_ack(m.delivery_tag), None, "ack of a message whose queue is gone")
    s.expect_error(ch.basic_ack(m.delivery_tag), 406,
                   "PRECONDITION_FAILED - unknown delivery tag 1", what="a second ack")
