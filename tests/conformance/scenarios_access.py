"""Scenarios: users and permissions (RabbitMQ's internal authorization backend).

Each scenario adds its own user (``rabbitmqctl add_user`` on RabbitMQ, ``Broker.add_user`` on
embroker), gives it permissions, connects as it and compares what it may and may not do; the user
is deleted when the scenario ends. Names carry the run's token, so a regular expression such as
``f"^{s.name('mine')}"`` grants only this run's resources (the transcript shows ``^mine``).

RabbitMQ caches a channel's recent successful checks until the channel is idle: after changing a
permission a scenario uses a new channel, as a client would have to.
"""

from __future__ import annotations

from .harness import ConnectionProxy, Err, QueueDeclareOk, Session, wire_only

PASSWORD = "s3cret"


def _refused(kind: str, name: str, vhost: str = "/", user: str = "alice") -> str:
    return f"ACCESS_REFUSED - access to {kind} '{name}' in vhost '{vhost}' refused for user '{user}'"


def _user(s: Session, configure: str | None, write: str = "", read: str = "") -> str:
    """Add this run's alice; with permissions on ``/`` unless ``configure`` is None."""
    alice = s.name("alice")
    s.admin("add_user", alice, PASSWORD)
    if configure is not None:
        s.admin("set_permissions", alice, configure, write, read, vhost="/")
    return alice


def _connect(s: Session, user: str) -> ConnectionProxy:
    conn = s.connect_as(user, PASSWORD)
    if isinstance(conn, Err):
        raise AssertionError(f"{user} could not connect: {conn}")
    return conn


def scenario_access_vhost_needs_a_permissions_entry(s: Session) -> None:
    alice = _user(s, None)
    s.expect_error(s.connect_as(alice, PASSWORD), 530,
                   "NOT_ALLOWED - access to vhost '/' refused for user 'alice'", scope="connection")
    s.admin("set_permissions", alice, "", "", "", vhost="/")
    conn = _connect(s, alice)  # an entry, even one that grants nothing, opens the vhost
    ch = conn.channel()
    s.expect(ch.exchange_declare("amq.direct", passive=True), None, "passive declares need nothing")
    s.expect_error(ch.queue_declare(s.name("q")), 403, _refused("queue", "q"), scope="channel")
    ch = conn.channel()
    s.expect_error(ch.basic_publish("", s.name("q"), b"x"), 403,
                   _refused("exchange", "amq.default"), scope="channel")


def scenario_access_configure_for_declare_and_delete(s: Session) -> None:
    admin = s.channel()
    admin.queue_declare(s.name("theirs"))
    admin.exchange_declare(s.name("their-x"), "fanout")
    alice = _user(s, f"^{s.name('mine')}", ".*", ".*")
    conn = _connect(s, alice)
    ch = conn.channel()
    s.expect(ch.queue_declare(s.name("mine-q")), QueueDeclareOk("mine-q", 0, 0))
    s.expect(ch.exchange_declare(s.name("mine-x"), "topic"), None)
    s.expect(ch.queue_declare(s.name("theirs"), passive=True), QueueDeclareOk("theirs", 0, 0))
    s.expect_error(ch.queue_declare(s.name("theirs")), 403, _refused("queue", "theirs"))
    ch = conn.channel()
    s.expect_error(ch.queue_declare(""), 403, _refused("queue", "amq.gen-1"),
                   what="a server-named queue needs configure on the name the server made")
    ch = conn.channel()
    s.expect_error(ch.exchange_declare(s.name("their-x"), "fanout"), 403,
                   _refused("exchange", "their-x"))
    ch = conn.channel()
    s.expect_error(ch.queue_delete(s.name("missing")), 403, _refused("queue", "missing"),
                   what="checked before the queue is looked up")
    ch = conn.channel()
    s.expect_error(ch.exchange_delete(s.name("their-x")), 403, _refused("exchange", "their-x"))
    ch = conn.channel()
    s.expect_error(ch.exchange_declare(s.name("their-x"), "nonsense"), 503,
                   "COMMAND_INVALID - unknown exchange type 'nonsense'", scope="connection",
                   what="an unknown type is refused before permissions")
    conn = _connect(s, alice)
    ch = conn.channel()
    s.expect_error(ch.exchange_delete("amq.direct"), 403,
                   "ACCESS_REFUSED - deletion of system exchange 'amq.direct' in vhost '/' not allowed")
    ch = conn.channel()
    s.expect(ch.queue_delete(s.name("mine-q")), 0)
    s.expect(ch.exchange_delete(s.name("mine-x")), None)


def scenario_access_write_and_read(s: Session) -> None:
    admin = s.channel()
    for q in ("q1", "q2"):
        admin.queue_declare(s.name(q))
    admin.exchange_declare(s.name("x1"), "direct")
    admin.exchange_declare(s.name("x2"), "fanout")
    admin.basic_publish("", s.name("q1"), b"for alice")
    admin.basic_publish("", s.name("q2"), b"theirs")
    alice = _user(s, "^$", f"^{s.name('')}(q1|x1)$", f"^{s.name('')}(q1|x2)$")
    conn = _connect(s, alice)
    ch = conn.channel()
    s.expect(ch.queue_bind(s.name("q1"), s.name("x2"), "k"), None, "write q1, read x2")
    s.expect(ch.exchange_bind(s.name("x1"), s.name("x2"), "k"), None, "write x1, read x2")
    s.expect(ch.basic_publish(s.name("x1"), "k", b"a"), None)
    s.expect_error(ch.basic_publish(s.name("x2"), "k", b"b"), 403, _refused("exchange", "x2"))
    ch = conn.channel()
    s.expect_error(ch.queue_bind(s.name("q2"), s.name("x2"), "k"), 403, _refused("queue", "q2"))
    ch = conn.channel()
    s.expect_error(ch.queue_bind(s.name("q1"), s.name("x1"), "k"), 403, _refused("exchange", "x1"))
    ch = conn.channel()
    s.expect_error(ch.exchange_bind(s.name("x2"), s.name("x1"), "k"), 403, _refused("exchange", "x2"))
    ch = conn.channel()
    s.expect_error(ch.basic_publish("", s.name("q1"), b"c"), 403, _refused("exchange", "amq.default"))
    ch = conn.channel()
    s.expect_error(ch.basic_publish(s.name("missing"), "k", b"d"), 403, _refused("exchange", "missing"),
                   what="write is checked before the exchange is looked up")
    ch = conn.channel()
    s.expect_error(ch.basic_get(s.name("q2")), 403, _refused("queue", "q2"))
    ch = conn.channel()
    s.expect_error(ch.basic_consume(s.name("q2")), 403, _refused("queue", "q2"))
    ch = conn.channel()
    s.expect_error(ch.queue_purge(s.name("q2")), 403, _refused("queue", "q2"))
    ch = conn.channel()
    s.expect_error(ch.queue_purge(s.name("missing")), 403, _refused("queue", "missing"))
    ch = conn.channel()
    s.expect(ch.queue_unbind(s.name("q1"), s.name("x2"), "k"), None)
    s.expect(ch.exchange_unbind(s.name("x1"), s.name("x2"), "k"), None)
    tag = ch.basic_consume(s.name("q1"), auto_ack=True)
    s.expect(isinstance(tag, str), True, "read q1: consume")
    ch.wait_deliveries(1)
    s.expect(ch.basic_get(s.name("q1")), None)
    ch = conn.channel()
    s.expect_error(ch.queue_unbind(s.name("q2"), s.name("x2"), "k"), 403, _refused("queue", "q2"),
                   what="unbind needs what bind needs")


def scenario_access_topic_permissions(s: Session) -> None:
    admin = s.channel()
    x, direct = s.name("events"), s.name("direct")
    admin.exchange_declare(x, "topic")
    admin.exchange_declare(direct, "direct")
    admin.queue_declare(s.name("q"))
    alice = _user(s, "^$", ".*", ".*")
    s.admin("set_topic_permissions", alice, x, "^{username}\\.", "^public\\.", vhost="/")
    conn = _connect(s, alice)
    ch = conn.channel()
    s.expect(ch.basic_publish(x, f"{alice}.created", b"a"), None, "{username} expands")
    s.expect(ch.basic_publish("amq.topic", "anything", b"b"), None, "no entry: any key")
    s.expect(ch.basic_publish(direct, "anything", b"c"), None, "only topic exchanges")
    s.expect(ch.queue_bind(s.name("q"), x, "public.#"), None)
    s.expect_error(ch.basic_publish(x, "bob.created", b"d"), 403,
                   "ACCESS_REFUSED - access to topic 'bob.created' in exchange 'events' in vhost '/' "
                   "refused for user 'alice'")
    ch = conn.channel()
    s.expect_error(ch.queue_bind(s.name("q"), x, "private.#"), 403,
                   "ACCESS_REFUSED - access to topic 'private.#' in exchange 'events' in vhost '/' "
                   "refused for user 'alice'")
    ch = conn.channel()
    ch.tx_select()
    s.expect_error(ch.basic_publish(x, "private.x", b"e"), 403,
                   "ACCESS_REFUSED - access to topic 'private.x' in exchange 'events' in vhost '/' "
                   "refused for user 'alice'", what="checked at publish, not at commit")
    s.admin("set_topic_permissions", alice, x, "^{vhost}$", "", vhost="/")
    ch = conn.channel()
    s.expect(ch.basic_publish(x, "/", b"f"), None, "{vhost} expands")
    s.expect(ch.exchange_bind(direct, x, ""), None, "an empty expression allows the empty key")
    s.expect_error(ch.exchange_bind(direct, x, "k"), 403,
                   "ACCESS_REFUSED - access to topic 'k' in exchange 'events' in vhost '/' "
                   "refused for user 'alice'", what="...and no other")


def scenario_access_dead_letter_and_alternate_exchanges(s: Session) -> None:
    alice = _user(s, ".*", f"^{s.name('')}(ok|q.*)$", "^$")
    conn = _connect(s, alice)
    ch = conn.channel()
    dlx = {"x-dead-letter-exchange": s.name("dlx")}
    s.expect_error(ch.queue_declare(s.name("q1"), arguments=dlx), 403, _refused("queue", "q1"),
                   what="a new queue with a DLX needs read on itself")
    s.admin("set_permissions", alice, ".*", f"^{s.name('')}(ok|q.*)$", ".*", vhost="/")
    ch = conn.channel()
    s.expect_error(ch.queue_declare(s.name("q1"), arguments=dlx), 403, _refused("exchange", "dlx"),
                   what="...and write on the DLX")
    ch = conn.channel()
    s.expect(ch.queue_declare(s.name("q2"), arguments={"x-dead-letter-exchange": s.name("ok")}),
             QueueDeclareOk("q2", 0, 0))
    s.expect(ch.queue_declare(s.name("q2"), arguments={"x-dead-letter-exchange": s.name("ok")}),
             QueueDeclareOk("q2", 0, 0), "an existing queue: configure only")
    s.expect_error(ch.exchange_declare(s.name("x"), "fanout",
                                       arguments={"alternate-exchange": s.name("ae")}),
                   403, _refused("exchange", "ae"), what="a new exchange with an AE: write on the AE")
    ch = conn.channel()
    s.expect(ch.exchange_declare(s.name("x"), "fanout",
                                 arguments={"alternate-exchange": s.name("ok")}), None)
    ch.exchange_delete(s.name("x"))


def scenario_access_cleared_permissions(s: Session) -> None:
    alice = _user(s, ".*", ".*", ".*")
    conn = _connect(s, alice)
    ch = conn.channel()
    s.expect(ch.queue_declare(s.name("q")), QueueDeclareOk("q", 0, 0))
    s.admin("clear_permissions", alice, vhost="/")
    ch = conn.channel()
    s.expect(ch.queue_declare(s.name("q"), passive=True), QueueDeclareOk("q", 0, 0),
             "the connection stays open")
    s.expect_error(ch.basic_publish("", s.name("q"), b"x"), 403, _refused("exchange", "amq.default"))
    s.expect_error(s.connect_as(alice, PASSWORD), 530,
                   "NOT_ALLOWED - access to vhost '/' refused for user 'alice'")


def scenario_access_deleted_user_is_disconnected(s: Session) -> None:
    alice = _user(s, ".*", ".*", ".*")
    conn = _connect(s, alice)
    ch = conn.channel()
    s.expect(ch.queue_declare(s.name("q")), QueueDeclareOk("q", 0, 0))
    s.admin("delete_user", alice)
    result = s.wait_until("alice's connection is closed",
                          lambda: ch.exchange_declare("amq.direct", passive=True),
                          lambda r: isinstance(r, Err))
    s.expect_error(result, 320, "CONNECTION_FORCED - user 'alice' is deleted", scope="connection")


@wire_only("the in-process client does not authenticate: it has no password to get wrong")
def scenario_access_login_refused(s: Session) -> None:
    alice = _user(s, ".*", ".*", ".*")
    refused = ("ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. For "
               "details see the broker logfile.")
    s.expect_error(s.connect_as(alice, "wrong"), 403, refused, scope="connection")
    s.expect_error(s.connect_as(s.name("nobody"), PASSWORD), 403, refused, scope="connection")
    s.expect_ok(s.connect_as(alice, PASSWORD))
    s.admin("clear_password", alice)
    s.expect_error(s.connect_as(alice, PASSWORD), 403, refused, scope="connection",
                   what="a user without a password cannot log in with one")


def scenario_access_expressions_match_utf8_bytes(s: Session) -> None:
    alice = _user(s, f"^{s.name('')}(.|..)$", "", "")
    ch = _connect(s, alice).channel()
    s.expect(ch.queue_declare(s.name("é")), QueueDeclareOk("é", 0, 0), "é is two bytes: '..'")
    s.expect_error(ch.queue_declare(s.name("€")), 403, _refused("queue", "€"), what="€ is three")


def scenario_access_impersonators_may_publish_as_another_user(s: Session) -> None:
    s.channel().queue_declare(s.name("q"))
    alice = _user(s, ".*", ".*", ".*")
    conn = _connect(s, alice)
    ch = conn.channel()
    s.expect_error(ch.basic_publish("", s.name("q"), b"a", properties={"user_id": "bob"}), 406,
                   "PRECONDITION_FAILED - user_id property set to 'bob' but authenticated user "
                   "was 'alice'")
    s.admin("set_user_tags", alice, "impersonator")
    conn = _connect(s, alice)  # tags are read at login
    ch = conn.channel()
    ch.basic_publish("", s.name("q"), b"b", properties={"user_id": "bob"})
    got = ch.basic_get(s.name("q"), auto_ack=True)
    s.expect(getattr(got, "properties", None), {"user_id": "bob"})


def scenario_access_reused_consumer_tag_comes_first(s: Session) -> None:
    """basic.consume checks the tag, then read permission, then the queue."""
    ch = s.channel()
    ch.queue_declare(s.name("q"))
    ch.basic_consume(s.name("q"), consumer_tag="t")
    s.expect_error(ch.basic_consume(s.name("missing"), consumer_tag="t"), 530,
                   "NOT_ALLOWED - attempt to reuse consumer tag 't'", scope="connection")
