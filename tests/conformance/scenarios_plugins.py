"""Scenarios: the exchange types of RabbitMQ's plugins (consistent-hash, modulus-hash, random,
recent-history), as the reference runs them with its plugins enabled (the embroker drivers
enable the same plugins: ``drivers.REFERENCE_PLUGINS``).

Where a hashing exchange sends each message is recorded message by message (a note per queue
with the bodies it got, in order), so the golden file pins RabbitMQ's choice for every key.
Routing keys and header values carry no per-run name: they are what is hashed. ``x-random``
is checked here only for what is deterministic (one queue per message, all of them with fewer
than two bindings); its distribution is compared statistically in
``test_random_distribution.py``.
"""

from __future__ import annotations

import datetime
from typing import Any

from .harness import ChannelProxy, Msg, Session

#: Routing keys to hash: varied lengths and characters.
KEYS = [f"key-{i}" for i in range(60)] + ["", "a", "order.created", "é-ü", "x" * 200,
                                          "user:42", "0", "-1"]


def _spread(s: Session, ch: ChannelProxy, queues: list[str]) -> None:
    """Drain each queue (unrecorded) and note the bodies it got, in order."""
    for q in queues:
        got: list[bytes] = []
        with s.quietly():
            while isinstance(m := ch.basic_get(q, auto_ack=True), Msg):
                got.append(m.body)
        s.note(f"bodies in {s.normalize(q)}", got)


def _publish_keys(s: Session, ch: ChannelProxy, exchange: str, keys: list[str],
                  properties: dict[str, Any] | None = None) -> None:
    with s.quietly():
        for i, key in enumerate(keys):
            ch.basic_publish(exchange, key, f"{i}".encode(), properties)
    s.note(f"published {len(keys)} messages to {s.normalize(exchange)}", True)


# -- x-consistent-hash --------------------------------------------------------------------------

def scenario_plugin_consistent_hash_routing_key(s: Session) -> None:
    """Four queues weighted 1, 2, 3, 4: each routing key lands where RabbitMQ's jump consistent
    hash of phash2(key) sends it."""
    ch = s.channel()
    x = s.name("chx")
    s.expect(ch.exchange_declare(x, "x-consistent-hash"), None)
    queues = [s.name(f"q{i}") for i in range(1, 5)]
    for weight, q in enumerate(queues, start=1):
        ch.queue_declare(q)
        ch.queue_bind(q, x, str(weight))
    _publish_keys(s, ch, x, KEYS)
    _spread(s, ch, queues)


def scenario_plugin_consistent_hash_only_the_first_routing_key(s: Session) -> None:
    """CC keys are routing keys too, but the plugin hashes the first one only."""
    ch = s.channel()
    x = s.name("chx")
    ch.exchange_declare(x, "x-consistent-hash")
    queues = [s.name(f"q{i}") for i in range(1, 4)]
    for q in queues:
        ch.queue_declare(q)
        ch.queue_bind(q, x, "10")
    with s.quietly():
        for i, key in enumerate(KEYS[:20]):
            ch.basic_publish(x, key, f"{i}".encode(), {"headers": {"CC": [f"cc-{i}", "z"]}})
    _spread(s, ch, queues)


def scenario_plugin_consistent_hash_weights_and_rebinding(s: Session) -> None:
    """A second binding to a destination adds no buckets; removing either binding of it removes
    all its buckets (the ring is keyed by destination), so the other binding routes nothing."""
    ch = s.channel()
    x = s.name("chx")
    ch.exchange_declare(x, "x-consistent-hash")
    a, b = s.name("qa"), s.name("qb")
    ch.queue_declare(a)
    ch.queue_declare(b)
    s.expect(ch.queue_bind(a, x, "3"), None)
    s.expect(ch.queue_bind(b, x, "1"), None)
    s.expect(ch.queue_bind(a, x, "50"), None, "a second binding of the same queue")
    _publish_keys(s, ch, x, KEYS[:30])
    _spread(s, ch, [a, b])
    s.expect(ch.queue_unbind(a, x, "50"), None)
    _publish_keys(s, ch, x, KEYS[:30])
    _spread(s, ch, [a, b])
    s.expect(ch.queue_bind(a, x, "2"), None, "a's buckets come back after b's")
    _publish_keys(s, ch, x, KEYS[:30])
    _spread(s, ch, [a, b])


def scenario_plugin_consistent_hash_exchange_destination(s: Session) -> None:
    """An exchange can be a destination on the ring; a single bucket takes everything."""
    ch = s.channel()
    x, inner = s.name("chx"), s.name("inner")
    ch.exchange_declare(x, "x-consistent-hash")
    ch.exchange_declare(inner, "fanout")
    q1, q2 = s.name("q1"), s.name("q2")
    ch.queue_declare(q1)
    ch.queue_declare(q2)
    ch.queue_bind(q2, inner)
    s.expect(ch.exchange_bind(inner, x, "2"), None)
    ch.queue_bind(q1, x, "2")
    _publish_keys(s, ch, x, KEYS[:30])
    _spread(s, ch, [q1, q2])
    ch.queue_unbind(q1, x, "2")
    _publish_keys(s, ch, x, KEYS[:5])
    _spread(s, ch, [q1, q2])


def scenario_plugin_consistent_hash_binding_keys(s: Session) -> None:
    """The binding key is a weight: an integer of at least 1 (Erlang's list_to_integer: a sign
    is fine, spaces and decimals are not)."""
    conn = s.connection()
    ch = conn.channel()
    x, q = s.name("chx"), s.name("q")
    ch.exchange_declare(x, "x-consistent-hash")
    ch.queue_declare(q)
    for key in ("abc", "", " 5", "5.0", "0", "-3", "1e3"):
        ch = conn.channel()
        s.expect_error(ch.queue_bind(q, x, key), 406, scope="channel")
    ch = conn.channel()
    s.expect(ch.queue_bind(q, x, "+7"), None)
    s.expect(ch.queue_bind(q, x, "007"), None)


def scenario_plugin_consistent_hash_arguments(s: Session) -> None:
    """hash-header and hash-property: not both, only correlation_id, message_id or timestamp,
    and a value that is no string crashes the plugin's validation (541, the connection)."""
    conn = s.connection()
    x = s.name("chx")
    ch = conn.channel()
    s.expect_error(ch.exchange_declare(x, "x-consistent-hash", arguments={
        "hash-header": "a", "hash-property": "message_id"}), 406,
        "PRECONDITION_FAILED - hash-header and hash-property are mutually exclusive")
    ch = conn.channel()
    s.expect_error(ch.exchange_declare(x, "x-consistent-hash", arguments={
        "hash-property": "app_id"}), 406, "PRECONDITION_FAILED - Unsupported property: app_id")
    ch = conn.channel()
    s.expect_error(ch.exchange_declare(x, "x-consistent-hash", arguments={"hash-header": 5}),
                   541, "INTERNAL_ERROR", scope="connection")
    ch = s.connection().channel()
    s.expect_error(ch.exchange_declare(x, "x-consistent-hash", arguments={
        "hash-property": True}), 541, "INTERNAL_ERROR", scope="connection")
    ch = s.connection().channel()
    s.expect(s.exchange_exists(x), False)
    s.expect(ch.exchange_declare(x, "x-consistent-hash", arguments={"hash-header": "h"}), None)
    s.expect(ch.exchange_declare(x, "x-consistent-hash", arguments={"hash-property": "x"}), None,
             "re-declare compares alternate-exchange only")


def scenario_plugin_consistent_hash_header(s: Session) -> None:
    """hash-header: the header's {Type, Value} is hashed (so 5 as a signedint and "5" as a
    string go their own ways); a missing header hashes ``undefined``."""
    ch = s.channel()
    x = s.name("chx")
    ch.exchange_declare(x, "x-consistent-hash", arguments={"hash-header": "user"})
    queues = [s.name(f"q{i}") for i in range(1, 6)]
    for q in queues:
        ch.queue_declare(q)
        ch.queue_bind(q, x, "7")
    values: list[Any] = [f"user-{i}" for i in range(20)] + [
        5, "5", -5, 2**40, True, False, 1.5, [1, "a"], {"k": "v"}, b"\x00\x01", "",
        datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)]
    with s.quietly():
        for i, value in enumerate(values):
            ch.basic_publish(x, "same-key", f"{i}".encode(), {"headers": {"user": value}})
        ch.basic_publish(x, "same-key", b"no header", {"headers": {"other": 1}})
        ch.basic_publish(x, "same-key", b"no headers at all")
    _spread(s, ch, queues)


def scenario_plugin_consistent_hash_property(s: Session) -> None:
    """hash-property: message_id, correlation_id, or the timestamp's decimal digits; absent:
    ``undefined``."""
    ch = s.channel()
    queues = [s.name(f"q{i}") for i in range(1, 5)]
    for q in queues:
        ch.queue_declare(q)
    for prop in ("message_id", "correlation_id", "timestamp"):
        x = s.name(f"by-{prop}")
        ch.exchange_declare(x, "x-consistent-hash", arguments={"hash-property": prop})
        for q in queues:
            ch.queue_bind(q, x, "4")
        with s.quietly():
            for i in range(25):
                value: Any = 1_700_000_000 + i * 7919 if prop == "timestamp" else f"id-{i}"
                ch.basic_publish(x, "k", f"{prop}-{i}".encode(), {prop: value})
            ch.basic_publish(x, "k", f"{prop}-absent".encode())
        _spread(s, ch, queues)


# -- x-modulus-hash -----------------------------------------------------------------------------

def scenario_plugin_modulus_hash_routing_keys(s: Session) -> None:
    """phash2 of the list of routing keys, modulo the bindings in route-table order (by
    binding key, then destination: exchanges before queues, then name)."""
    ch = s.channel()
    x, inner = s.name("mh"), s.name("inner")
    ch.exchange_declare(x, "x-modulus-hash")
    ch.exchange_declare(inner, "fanout")
    queues = [s.name(n) for n in ("qc", "qa", "qb", "qd")]
    for q in queues:
        ch.queue_declare(q)
    q_inner = s.name("q-inner")
    ch.queue_declare(q_inner)
    ch.queue_bind(q_inner, inner)
    # Binding keys out of order, one queue twice, an exchange under the same key as a queue.
    ch.queue_bind(queues[0], x, "b")
    ch.queue_bind(queues[1], x, "b")
    ch.queue_bind(queues[2], x, "a")
    ch.queue_bind(queues[3], x, "")
    ch.queue_bind(queues[1], x, "z")
    ch.exchange_bind(inner, x, "b")
    _publish_keys(s, ch, x, KEYS)
    with s.quietly():
        for i, key in enumerate(KEYS[:20]):
            ch.basic_publish(x, key, f"cc-{i}".encode(), {"headers": {"CC": ["c1", f"c{i}"]}})
            ch.basic_publish(x, key, f"bcc-{i}".encode(), {"headers": {"BCC": [f"b{i}"]}})
    _spread(s, ch, [*queues, q_inner])


def scenario_plugin_modulus_hash_no_bindings(s: Session) -> None:
    """With no binding the message goes nowhere (a mandatory one comes back)."""
    ch = s.channel()
    x = s.name("mh")
    s.expect(ch.exchange_declare(x, "x-modulus-hash", arguments={"any": "thing"}), None)
    ch.basic_publish(x, "k", b"lost", mandatory=True)
    q = s.name("q")
    ch.queue_declare(q)
    ch.queue_bind(q, x, "whatever")
    ch.basic_publish(x, "k", b"one binding takes all", mandatory=True)
    s.expect_bodies(ch, q, [b"one binding takes all"])


# -- x-random -----------------------------------------------------------------------------------

def scenario_plugin_random_one_queue_each(s: Session) -> None:
    """Every message reaches exactly one of the bindings (which one is random: counted in
    test_random_distribution.py); with one binding, always that one; with none, nowhere."""
    ch = s.channel()
    x = s.name("rnd")
    s.expect(ch.exchange_declare(x, "x-random"), None)
    ch.basic_publish(x, "k", b"nowhere", mandatory=True)
    queues = [s.name(f"q{i}") for i in range(1, 4)]
    for q in queues:
        ch.queue_declare(q)
    ch.queue_bind(queues[0], x, "ignored")
    ch.basic_publish(x, "k", b"only one", mandatory=True)
    s.expect_bodies(ch, queues[0], [b"only one"])
    for q in queues[1:]:
        ch.queue_bind(q, x, "")
    with s.quietly():
        for i in range(30):
            ch.basic_publish(x, "k", f"{i}".encode())
    total = []
    with s.quietly():
        for q in queues:
            while isinstance(m := ch.basic_get(q, auto_ack=True), Msg):
                total.append(m.body)
    s.note("each message in exactly one queue", sorted(total, key=int) ==
           [f"{i}".encode() for i in range(30)])


# -- x-recent-history ---------------------------------------------------------------------------

def scenario_plugin_recent_history_replay(s: Session) -> None:
    """The last x-recent-history-length messages go to each new binding: a queue oldest first,
    an exchange newest first; x-recent-history-no-store keeps one out; the same binding made
    again replays nothing, another binding of the same queue replays again."""
    ch = s.channel()
    x = s.name("rh")
    s.expect(ch.exchange_declare(x, "x-recent-history",
                                 arguments={"x-recent-history-length": 3}), None)
    for i in range(5):
        headers = {"x-recent-history-no-store": True} if i == 3 else {"n": i}
        ch.basic_publish(x, f"k{i}", f"m{i}".encode(), {"headers": headers})
    q = s.name("q")
    ch.queue_declare(q)
    s.expect(ch.queue_bind(q, x, "any"), None)
    s.expect_bodies(ch, q, [b"m1", b"m2", b"m4"])
    ch.queue_bind(q, x, "any")
    s.expect_bodies(ch, q, [])
    ch.queue_bind(q, x, "other")
    s.expect_bodies(ch, q, [b"m1", b"m2", b"m4"])
    ch.basic_publish(x, "k5", b"m5")
    s.expect(ch.drain(q), [b"m5"], "one copy per queue, however many bindings")
    inner, q2 = s.name("inner"), s.name("q2")
    ch.exchange_declare(inner, "fanout")
    ch.queue_declare(q2)
    ch.queue_bind(q2, inner)
    s.expect(ch.exchange_bind(inner, x, "e2e"), None)
    s.expect_bodies(ch, q2, [b"m5", b"m4", b"m2"])


def scenario_plugin_recent_history_defaults_and_properties(s: Session) -> None:
    """Without x-recent-history-length the last 20 are kept; a replayed message keeps its
    routing key, exchange and properties."""
    ch = s.channel()
    x = s.name("rh")
    ch.exchange_declare(x, "x-recent-history")
    for i in range(25):
        ch.basic_publish(x, f"k{i}", f"{i}".encode(), {"content_type": "text/plain",
                                                       "headers": {"i": i}})
    q = s.name("q")
    ch.queue_declare(q)
    ch.queue_bind(q, x)
    first = ch.basic_get(q, auto_ack=True)
    s.expect(isinstance(first, Msg), True)
    s.expect_bodies(ch, q, [f"{i}".encode() for i in range(6, 25)])


def scenario_plugin_recent_history_to_an_exchange_that_routes_nowhere(s: Session) -> None:
    """Replaying to an exchange that routes a kept message nowhere fails the binding with 541
    INTERNAL_ERROR (the connection closes) and the binding is not made."""
    conn = s.connection()
    ch = conn.channel()
    x, empty = s.name("rh"), s.name("empty")
    ch.exchange_declare(x, "x-recent-history")
    ch.exchange_declare(empty, "fanout")
    s.expect(ch.exchange_bind(empty, x, "before"), None, "nothing kept yet: fine")
    ch.basic_publish(x, "k", b"kept")
    s.expect_error(ch.exchange_bind(empty, x, "after"), 541, "INTERNAL_ERROR",
                   scope="connection")
    ch = s.connection().channel()
    q = s.name("q")
    ch.queue_declare(q)
    ch.queue_bind(q, empty)
    ch.basic_publish(x, "k", b"through the first binding only")
    s.expect_bodies(ch, q, [b"through the first binding only"])


def scenario_plugin_recent_history_length_argument(s: Session) -> None:
    """x-recent-history-length is a byte, short, signedint or long above 0."""
    conn = s.connection()
    x = s.name("rh")
    for value in ("abc", 0, -1, True, 2.5, "5"):
        ch = conn.channel()
        r = ch.exchange_declare(x, "x-recent-history",
                                arguments={"x-recent-history-length": value})
        s.expect_error(r, 406, scope="channel")
    ch = conn.channel()
    s.expect(ch.exchange_declare(x, "x-recent-history",
                                 arguments={"x-recent-history-length": 2**40}), None)


# -- without the plugin -------------------------------------------------------------------------

def scenario_plugin_delayed_message_is_not_enabled_on_the_reference(s: Session) -> None:
    """The reference has no delayed-message plugin: RabbitMQ's own error, as embroker gives it
    without ``plugins=["rabbitmq_delayed_message_exchange"]``."""
    ch = s.channel()
    r = ch.exchange_declare(s.name("d"), "x-delayed-message",
                            arguments={"x-delayed-type": "direct"})
    s.expect_error(r, 503, "COMMAND_INVALID - unknown exchange type 'x-delayed-message'",
                   scope="connection")
