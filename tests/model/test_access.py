"""Users and permissions as RabbitMQ 3.10 checks them (model/_access.py), through the in-process
client connected as a user. The same rules over the wire: tests/server/test_access.py; against
RabbitMQ: tests/conformance/scenarios_access.py."""

from __future__ import annotations

import base64
import hashlib
import ipaddress
from collections.abc import Callable
from typing import Any

import pytest

from embroker import Broker
from embroker.client import Channel, ConnectionClosed
from embroker.errors import (
    AccessControlError,
    AccessRefused,
    AMQPError,
    CommandInvalid,
    DefinitionsError,
    NotAllowed,
    NotFound,
)
from embroker.model import Channel as ModelChannel
from embroker.model import Permissions, TopicPermissions
from embroker.model._access import (
    MD5,
    NO_ITEM,
    SHA256,
    SHA512,
    HashedPassword,
    ManagementRefused,
    Rule,
    hash_password,
    is_loopback,
)


def refused(kind: str, name: str, user: str = "alice", vhost: str = "/") -> str:
    return f"403 ACCESS_REFUSED - access to {kind} '{name}' in vhost '{vhost}' refused for user '{user}'"


def as_user(broker: Broker, configure: str, write: str, read: str, *, user: str = "alice",
            vhost: str = "/") -> Channel:
    """A channel of a user with just these permissions."""
    if user not in broker.users:
        broker.add_user(user, "pw")
    broker.set_permissions(user, configure, write, read, vhost=vhost)
    return broker.connect(vhost, user=user).channel()


def error_of(call: Callable[[], object]) -> str:
    with pytest.raises(AMQPError) as caught:
        call()
    return str(caught.value)


# -- users and vhosts -------------------------------------------------------------------------------


def test_default_users_get_full_permissions_on_every_vhost_created() -> None:
    broker = Broker(vhosts=("/", "a"), users={"guest": "guest", "app": "pw"})
    broker.add_vhost("later")
    for vhost in ("/", "a", "later"):
        assert broker.list_permissions(vhost) == {"guest": Permissions(".*", ".*", ".*"),
                                                  "app": Permissions(".*", ".*", ".*")}
    broker.connect("later", user="app").channel().queue_declare("q")


def test_added_users_start_without_permissions(broker: Broker) -> None:
    broker.add_user("bob", "pw")
    assert "bob" not in broker.list_permissions()
    with pytest.raises(NotAllowed) as caught:
        broker.connect(user="bob")
    assert str(caught.value) == "530 NOT_ALLOWED - access to vhost '/' refused for user 'bob'"


def test_an_entry_that_grants_nothing_still_opens_the_vhost(broker: Broker) -> None:
    ch = as_user(broker, "", "", "")
    ch.exchange_declare("amq.direct", passive=True)  # passive declares check nothing
    assert error_of(lambda: ch.queue_declare("q")) == refused("queue", "q")


def test_unknown_users_and_missing_vhosts_are_refused_at_connect(broker: Broker) -> None:
    assert error_of(lambda: broker.connect(user="nobody")) == \
        "530 NOT_ALLOWED - access to vhost '/' refused for user 'nobody'"
    assert error_of(lambda: broker.connect("nope", user="guest")) == \
        "530 NOT_ALLOWED - vhost nope not found"


def test_setting_a_default_users_permissions_changes_that_vhost_only() -> None:
    broker = Broker(vhosts=("/", "other"))
    broker.set_permissions("guest", "^$", "^$", "^$")
    assert broker.list_permissions("other")["guest"] == Permissions(".*", ".*", ".*")
    broker.clear_permissions("guest", vhost="other")
    assert error_of(lambda: broker.connect("other", user="guest")) == \
        "530 NOT_ALLOWED - access to vhost 'other' refused for user 'guest'"
    assert error_of(lambda: broker.connect(user="guest").channel().queue_declare("q")) == \
        refused("queue", "q", "guest")


def test_a_plain_connect_is_not_checked(broker: Broker) -> None:
    broker.set_permissions("guest", "^$", "^$", "^$")
    ch = broker.connect().channel()  # a test's own connection: nothing is checked
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"x")
    assert ch.basic_get("q", auto_ack=True) is not None


def test_the_user_api_refuses_what_rabbitmqctl_refuses(broker: Broker) -> None:
    broker.add_user("bob", "pw")
    with pytest.raises(AccessControlError, match="user 'bob' already exists"):
        broker.add_user("bob", "other")
    with pytest.raises(AccessControlError, match="no user 'carol'"):
        broker.set_permissions("carol", ".*", ".*", ".*")
    with pytest.raises(AccessControlError, match="no vhost 'v'"):
        broker.set_permissions("bob", ".*", ".*", ".*", vhost="v")
    with pytest.raises(AccessControlError, match="invalid regular expression '\\('"):
        broker.set_permissions("bob", "(", ".*", ".*")
    with pytest.raises(AccessControlError, match="invalid regular expression"):
        broker.set_topic_permissions("bob", "x", "[", ".*")
    with pytest.raises(AccessControlError, match="no user 'carol'"):
        broker.delete_user("carol")
    assert "bob" not in broker.list_permissions()


def test_users_is_a_read_only_snapshot_of_names_and_passwords(broker: Broker) -> None:
    broker.add_user("bob", "pw")
    assert broker.users == {"guest": "guest", "bob": "pw"}
    with pytest.raises(TypeError):
        broker.users["eve"] = "x"  # type: ignore[index]
    broker.change_password("bob", "new")
    assert broker.users["bob"] == "new"


def test_deleting_a_user_closes_its_connections_and_forgets_its_permissions(broker: Broker) -> None:
    ch = as_user(broker, ".*", ".*", ".*")
    broker.set_topic_permissions("alice", "x", ".*", ".*")
    unchecked = broker.connect().channel()
    broker.delete_user("alice")
    with pytest.raises(ConnectionClosed) as caught:
        ch.queue_declare("q")
    assert str(caught.value.reason) == "320 CONNECTION_FORCED - user 'alice' is deleted"
    unchecked.queue_declare("q")  # other connections go on
    broker.add_user("alice", "pw")
    assert "alice" not in broker.list_permissions()
    assert broker.list_topic_permissions() == {}


def test_cleared_permissions_leave_the_connection_open_and_refuse_each_operation(broker: Broker) -> None:
    ch = as_user(broker, ".*", ".*", ".*")
    ch.queue_declare("q")
    broker.clear_permissions("alice")
    ch.queue_declare("q", passive=True)
    assert error_of(lambda: ch.basic_publish("", "q", b"x")) == refused("exchange", "amq.default")


# -- logging in -----------------------------------------------------------------------------------


def salted(algorithm: Callable[[bytes], Any], password: str, salt: bytes = b"\x0a\x0b\x0c\x0d") -> str:
    return base64.b64encode(salt + algorithm(salt + password.encode()).digest()).decode()


@pytest.mark.parametrize(("name", "algorithm", "function"), [
    ("sha256", SHA256, hashlib.sha256), ("sha512", SHA512, hashlib.sha512), ("md5", MD5, hashlib.md5)])
def test_password_hashes_are_checked_with_their_algorithm(name: str, algorithm: str,
                                                          function: Callable[[bytes], Any]) -> None:
    stored = HashedPassword(salted(function, "s3cret"), algorithm)
    assert stored == "s3cret"
    assert stored != "S3cret"
    assert hash_password("s3cret", b"\x0a\x0b\x0c\x0d", algorithm) == str(stored)
    # The same hash under another algorithm checks nothing.
    other = SHA256 if algorithm != SHA256 else MD5
    assert HashedPassword(str(stored), other) != "s3cret"


@pytest.mark.parametrize(("user", "password", "loopback", "ok"), [
    ("guest", "guest", True, True),
    ("guest", "guest", False, False),      # loopback_users: guest only from 127.0.0.1 / ::1
    ("guest", "wrong", True, False),
    ("app", "pw", False, True),            # other users from anywhere
    ("app", "", True, False),              # blank passwords are refused outright
    ("blank", "", True, False),            # ...even the one a user has
    ("hashed", "s3cret", False, True),
    ("hashed", "wrong", False, False),
    ("nopassword", "", True, False),       # password_hash "": no password logs in
    ("nopassword", "x", True, False),
    ("nobody", "pw", True, False),
])
def test_login(user: str, password: str, loopback: bool, ok: bool) -> None:
    broker = Broker(users={"guest": "guest", "app": "pw", "blank": ""})
    broker.add_user("hashed", HashedPassword(hash_password("s3cret", algorithm=SHA512), SHA512))
    broker.add_user("nopassword", HashedPassword(""))
    assert broker.access.login(user, password, loopback=loopback) is ok


def test_loopback_users_can_be_changed() -> None:
    assert Broker(loopback_users=()).access.login("guest", "guest", loopback=False)
    strict = Broker(users={"guest": "guest", "ops": "pw"}, loopback_users=("guest", "ops"))
    assert not strict.access.login("ops", "pw", loopback=False)


@pytest.mark.parametrize(("address", "loopback"), [
    ("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("::ffff:127.0.0.1", True),
    ("192.0.2.1", False), ("::ffff:192.0.2.1", False), ("fe80::1", False), ("0.0.0.0", False)])
def test_loopback_addresses_as_rabbitmq_counts_them(address: str, loopback: bool) -> None:
    assert is_loopback(ipaddress.ip_address(address)) is loopback


# -- configure, write, read -------------------------------------------------------------------------

#: Each operation, the permission it needs on which resource (with the user lacking just that
#: one), and what must not have happened when it is refused.
OPERATIONS: list[tuple[str, Callable[[Channel], object], tuple[str, str, str], Callable[[Broker], bool]]] = [
    ("exchange.declare", lambda ch: ch.exchange_declare("x", "fanout"),
     ("configure", "exchange", "x"), lambda b: "x" not in b.exchanges),
    ("exchange.delete", lambda ch: ch.exchange_delete("old-x"),
     ("configure", "exchange", "old-x"), lambda b: "old-x" in b.exchanges),
    ("queue.declare", lambda ch: ch.queue_declare("q"),
     ("configure", "queue", "q"), lambda b: "q" not in b.queues),
    ("queue.delete", lambda ch: ch.queue_delete("old-q"),
     ("configure", "queue", "old-q"), lambda b: "old-q" in b.queues),
    ("queue.bind (destination)", lambda ch: ch.queue_bind("old-q", "old-x", "k"),
     ("write", "queue", "old-q"), lambda b: not b.exchanges["old-x"].bindings),
    ("queue.bind (source)", lambda ch: ch.queue_bind("old-q", "old-x", "k"),
     ("read", "exchange", "old-x"), lambda b: not b.exchanges["old-x"].bindings),
    ("exchange.bind (destination)", lambda ch: ch.exchange_bind("old-x", "amq.fanout", "k"),
     ("write", "exchange", "old-x"), lambda b: not b.exchanges["amq.fanout"].bindings),
    ("exchange.bind (source)", lambda ch: ch.exchange_bind("old-x", "amq.fanout", "k"),
     ("read", "exchange", "amq.fanout"), lambda b: not b.exchanges["amq.fanout"].bindings),
    ("queue.unbind", lambda ch: ch.queue_unbind("old-q", "amq.direct", "bound"),
     ("write", "queue", "old-q"), lambda b: bool(b.queues["old-q"].bindings)),
    ("basic.publish", lambda ch: ch.basic_publish("old-x", "k", b"m"),
     ("write", "exchange", "old-x"), lambda b: b.trace[-1].error is not None),
    ("basic.publish (default exchange)", lambda ch: ch.basic_publish("", "old-q", b"m"),
     ("write", "exchange", "amq.default"), lambda b: b.queues["old-q"].message_count == 1),
    ("basic.get", lambda ch: ch.basic_get("old-q"),
     ("read", "queue", "old-q"), lambda b: b.queues["old-q"].message_count == 1),
    ("basic.consume", lambda ch: ch.basic_consume("old-q", lambda *a: None),
     ("read", "queue", "old-q"), lambda b: b.queues["old-q"].consumer_count == 0),
    ("queue.purge", lambda ch: ch.queue_purge("old-q"),
     ("read", "queue", "old-q"), lambda b: b.queues["old-q"].message_count == 1),
]


@pytest.mark.parametrize(("operation", "call", "needs", "unchanged"), OPERATIONS,
                         ids=[o[0] for o in OPERATIONS])
def test_each_operation_needs_its_permission(operation: str, call: Callable[[Channel], object],
                                             needs: tuple[str, str, str],
                                             unchanged: Callable[[Broker], bool]) -> None:
    broker = Broker()
    setup = broker.connect().channel()
    setup.exchange_declare("old-x", "direct")
    setup.queue_declare("old-q")
    setup.queue_bind("old-q", "amq.direct", "bound")
    setup.basic_publish("", "old-q", b"waiting")
    broker.trace.clear()
    permission, kind, name = needs
    # Everything but the one permission on the one resource.
    expressions = dict.fromkeys(("configure", "write", "read"), ".*")
    expressions[permission] = f"^(?!{name}$)"
    ch = as_user(broker, **expressions)
    assert error_of(lambda: call(ch)) == refused(kind, name)
    assert unchanged(broker), f"{operation} changed the broker though refused"
    # With the permission, the operation goes through.
    allowed = as_user(broker, ".*", ".*", ".*")
    call(allowed)


def test_server_named_queues_need_configure_on_the_name_the_server_makes(broker: Broker) -> None:
    ch = as_user(broker, "^mine", ".*", ".*")
    message = error_of(lambda: ch.queue_declare(""))
    assert message.startswith("403 ACCESS_REFUSED - access to queue 'amq.gen-")
    assert not broker.queues
    ch = as_user(broker, r"^amq\.gen-", ".*", ".*")
    assert ch.queue_declare("").queue.startswith("amq.gen-")


def test_passive_declares_and_other_methods_need_nothing(broker: Broker) -> None:
    setup = broker.connect().channel()
    setup.queue_declare("q")
    ch = as_user(broker, "^$", "^$", "^$")
    ch.queue_declare("q", passive=True)
    ch.exchange_declare("amq.topic", passive=True)
    ch.basic_qos(prefetch_count=5)
    ch.confirm_delivery()
    ch.basic_recover()


def test_refusals_come_in_rabbitmqs_order(broker: Broker) -> None:
    ch = as_user(broker, "^$", "^$", "^$")
    # An unknown exchange type, the default exchange, system exchanges: refused before
    # permissions are looked at.
    assert error_of(lambda: ch.exchange_declare("x", "nonsense")) == \
        "503 COMMAND_INVALID - unknown exchange type 'nonsense'"
    ch = broker.connect(user="alice").channel()
    assert error_of(lambda: ch.exchange_declare("", "direct")) == \
        "403 ACCESS_REFUSED - operation not permitted on the default exchange"
    ch = broker.connect(user="alice").channel()
    assert "deletion of system exchange 'amq.direct'" in error_of(lambda: ch.exchange_delete("amq.direct"))
    ch = broker.connect(user="alice").channel()
    assert error_of(lambda: ch.queue_bind("q", "", "k")) == refused("queue", "q"), \
        "write on the destination comes before the default-exchange check"
    # Permissions come before existence...
    ch = broker.connect(user="alice").channel()
    assert error_of(lambda: ch.basic_publish("missing", "k", b"")) == refused("exchange", "missing")
    ch = broker.connect(user="alice").channel()
    assert error_of(lambda: ch.queue_delete("missing")) == refused("queue", "missing")
    # ...and before the reserved names of new resources.
    ch = broker.connect(user="alice").channel()
    assert error_of(lambda: ch.queue_declare("amq.q")) == \
        "403 ACCESS_REFUSED - queue name 'amq.q' contains reserved prefix 'amq.*'"
    ch = broker.connect(user="alice").channel()
    assert error_of(lambda: ch.exchange_declare("amq.x", "direct")) == refused("exchange", "amq.x")
    # With the permissions, the existence checks.
    ch = as_user(broker, ".*", ".*", ".*")
    with pytest.raises(NotFound):
        ch.basic_publish("missing", "k", b"")


def test_an_existing_queue_needs_only_configure_and_a_new_one_with_a_dlx_more(broker: Broker) -> None:
    broker.connect().channel().queue_declare("q", arguments={"x-dead-letter-exchange": "dlx"})
    ch = as_user(broker, ".*", "^$", "^$")
    ch.queue_declare("q", arguments={"x-dead-letter-exchange": "dlx"})  # exists: configure only
    assert error_of(lambda: ch.queue_declare("new", arguments={"x-dead-letter-exchange": "dlx"})) \
        == refused("queue", "new")
    ch = as_user(broker, ".*", "^$", ".*")
    assert error_of(lambda: ch.queue_declare("new", arguments={"x-dead-letter-exchange": ""})) \
        == refused("exchange", "amq.default")
    ch = as_user(broker, ".*", "^$", ".*")
    with pytest.raises(AMQPError, match="invalid type 'signedint' for arg 'x-dead-letter-exchange'"):
        ch.queue_declare("new", arguments={"x-dead-letter-exchange": 5})
    assert "new" not in broker.queues


def test_a_new_exchange_with_an_alternate_needs_read_on_it_and_write_on_the_alternate(broker: Broker) -> None:
    ch = as_user(broker, ".*", ".*", "^$")
    assert error_of(lambda: ch.exchange_declare("x", "direct", arguments={"alternate-exchange": "ae"})) \
        == refused("exchange", "x")
    ch = as_user(broker, ".*", "^(?!ae$)", ".*")
    assert error_of(lambda: ch.exchange_declare("x", "direct", arguments={"alternate-exchange": "ae"})) \
        == refused("exchange", "ae")
    assert "x" not in broker.exchanges


def test_expressions_match_anywhere_over_utf8_bytes(broker: Broker) -> None:
    ch = as_user(broker, "b", ".*", ".*")
    ch.queue_declare("abc")  # a match anywhere, as re:run
    ch = as_user(broker, "^(.|..)$", ".*", ".*")
    ch.queue_declare("é")  # two bytes
    assert error_of(lambda: ch.queue_declare("€")) == refused("queue", "€")  # three
    ch = as_user(broker, "", ".*", ".*")
    assert error_of(lambda: ch.queue_declare("q")) == refused("queue", "q"), '"" means ^$'


# -- topic permissions ------------------------------------------------------------------------------


def test_topic_permissions_check_routing_keys_on_topic_exchanges(broker: Broker) -> None:
    setup = broker.connect().channel()
    setup.exchange_declare("events", "topic")
    setup.exchange_declare("plain", "direct")
    setup.queue_declare("q")
    ch = as_user(broker, "^$", ".*", ".*")
    broker.set_topic_permissions("alice", "events", r"^{username}\.", r"^{vhost}public\.")
    ch.basic_publish("events", "alice.created", b"")
    ch.basic_publish("amq.topic", "anything", b"")  # no entry for amq.topic: any key
    ch.basic_publish("plain", "anything", b"")      # not a topic exchange
    ch.queue_bind("q", "events", "/public.#")
    assert error_of(lambda: ch.basic_publish("events", "bob.created", b"")) == (
        "403 ACCESS_REFUSED - access to topic 'bob.created' in exchange 'events' in vhost '/' "
        "refused for user 'alice'")
    ch = broker.connect(user="alice").channel()
    assert "access to topic 'secret.#'" in error_of(lambda: ch.queue_bind("q", "events", "secret.#"))
    assert broker.list_topic_permissions() == {
        "alice": [TopicPermissions("events", r"^{username}\.", r"^{vhost}public\.")]}
    broker.clear_topic_permissions("alice", "events")
    broker.connect(user="alice").channel().basic_publish("events", "bob.created", b"")


def test_topic_variables_expand_username_first(broker: Broker) -> None:
    broker.connect().channel().exchange_declare("t", "topic")
    broker.add_user("a{vhost}", "pw")
    broker.set_permissions("a{vhost}", ".*", ".*", ".*")
    broker.set_topic_permissions("a{vhost}", "t", "^{username}$", "")
    ch = broker.connect(user="a{vhost}").channel()
    ch.basic_publish("t", "a/", b"")  # {username} -> a{vhost} -> a/


def test_topic_variables_are_a_map_a_protocol_adds_to(broker: Broker) -> None:
    """MQTT's ``{client_id}`` (rabbit_mqtt_processor's variable_map, v3.10.8) beside
    ``{username}`` and ``{vhost}``: a connection opened with ``topic_variables`` has its topic
    permissions expanded with them, and the fold runs in the map's key order (client_id,
    username, vhost), so a client id naming ``{username}`` is expanded again."""
    broker.connect().channel().exchange_declare("t", "topic")
    broker.add_user("alice", "pw")
    broker.set_permissions("alice", ".*", ".*", ".*")
    broker.set_topic_permissions("alice", "t", r"^{client_id}\.", "")

    def publisher(client_id: str) -> ModelChannel:
        connection = broker.open_connection(user="alice", topic_variables={"client_id": client_id})
        return connection.open_channel(1)

    publisher("sensor-1").basic_publish("t", "sensor-1.temperature", b"")
    assert error_of(lambda: publisher("sensor-1").basic_publish("t", "sensor-2.x", b"")) == (
        "403 ACCESS_REFUSED - access to topic 'sensor-2.x' in exchange 't' in vhost '/' "
        "refused for user 'alice'")
    publisher("{username}").basic_publish("t", "alice.x", b"")  # client_id, then username
    assert "access to topic 'x.y'" in error_of(
        lambda: broker.connect(user="alice").channel().basic_publish("t", "x.y", b"")), \
        "without a client id, {client_id} stays as written and matches nothing"


# -- definitions ------------------------------------------------------------------------------------


def test_definitions_load_users_permissions_and_topic_permissions() -> None:
    broker = Broker()
    broker.load_definitions({
        "rabbit_version": "3.10.8",
        "vhosts": [{"name": "/"}, {"name": "app"}],
        "users": [
            {"name": "alice", "password_hash": hash_password("a-pw", algorithm=SHA512),
             "hashing_algorithm": SHA512, "tags": ["monitoring"]},
            {"name": "legacy", "password_hash": hash_password("l-pw", algorithm=MD5), "tags": ""},
            {"name": "cert-only", "password_hash": "", "tags": []},
            {"name": "plain", "password": "p-pw", "tags": "a,b"},
        ],
        "permissions": [{"user": "alice", "vhost": "app", "configure": "^alice-",
                         "write": ".*", "read": ".*"}],
        "topic_permissions": [{"user": "alice", "vhost": "app", "exchange": "amq.topic",
                               "write": "^alice", "read": ".*"}],
    })
    access = broker.access
    assert access.login("alice", "a-pw", loopback=False)
    assert not access.login("legacy", "l-pw", loopback=False), \
        "a 3.6+ export without hashing_algorithm means SHA-256"
    assert not access.login("cert-only", "", loopback=True)
    assert access.login("plain", "p-pw", loopback=False)
    assert broker.list_permissions("app")["alice"] == Permissions("^alice-", ".*", ".*")
    assert "alice" not in broker.list_permissions("/")
    assert broker.list_permissions("app")["guest"] == Permissions(".*", ".*", ".*"), \
        "a vhost the definitions create is created by the default users"
    ch = broker.connect("app", user="alice").channel()
    assert error_of(lambda: ch.basic_publish("amq.topic", "bob", b"")).startswith(
        "403 ACCESS_REFUSED - access to topic 'bob' in exchange 'amq.topic' in vhost 'app'")


def test_definitions_before_3_6_hash_with_md5() -> None:
    broker = Broker()
    broker.load_definitions({"rabbit_version": "3.5.7", "users": [
        {"name": "old", "password_hash": hash_password("pw", algorithm=MD5), "tags": ""}]})
    assert broker.access.login("old", "pw", loopback=False)


def test_definitions_export_what_they_load() -> None:
    broker = Broker(vhosts=("/", "app"))
    broker.add_user("alice", "pw", tags=["monitoring"])
    broker.set_permissions("alice", "^a", "^b", "^c", vhost="app")
    broker.set_topic_permissions("alice", "amq.topic", "^w", "^r", vhost="app")
    broker.set_permissions("guest", "^$", ".*", ".*")
    document = broker.definitions()
    assert {"user": "alice", "vhost": "app", "configure": "^a", "write": "^b", "read": "^c"} \
        in document["permissions"]
    assert {"user": "guest", "vhost": "/", "configure": "^$", "write": ".*", "read": ".*"} \
        in document["permissions"]
    assert document["topic_permissions"] == [
        {"user": "alice", "vhost": "app", "exchange": "amq.topic", "write": "^w", "read": "^r"}]
    again = Broker(vhosts=(), users={})
    again.load_definitions(document)
    def strip(items: list[dict[str, Any]]) -> list[str]:
        return sorted(str({k: v for k, v in i.items() if k != "password_hash"}) for i in items)

    for section in ("users", "permissions", "topic_permissions"):
        assert strip(again.definitions()[section]) == strip(document[section]), section
    assert again.access.login("alice", "pw", loopback=False)


@pytest.mark.parametrize(("document", "message"), [
    ({"users": [{"name": "a", "password": "x", "password_hash": "eHh4eA==", "tags": ""}]},
     "both password"),
    ({"users": [{"name": "a", "password_hash": "not base64!", "tags": ""}]}, "not base64"),
    ({"users": [{"name": "a", "password_hash": "eHh4eA==", "hashing_algorithm": "rot13",
                 "tags": ""}]},
     "unknown hashing_algorithm"),
    ({"users": [{"name": "a", "password": "x"}]}, r"users\[0\] \('a'\) has no 'tags'"),
    ({"permissions": [{"user": "nobody", "vhost": "/", "configure": "", "write": "", "read": ""}]},
     "User 'nobody' does not exist"),
    ({"permissions": [{"user": "guest", "vhost": "nope", "configure": "", "write": "", "read": ""}]},
     'Please create virtual host "nope"'),
    ({"permissions": [{"user": "guest", "vhost": "/", "configure": "(", "write": "", "read": ""}]},
     "invalid regular expression"),
])
def test_definitions_refuse_what_rabbitmq_refuses(document: dict[str, Any], message: str) -> None:
    with pytest.raises(DefinitionsError, match=message):
        Broker().load_definitions(document)


def test_an_unknown_exchange_type_is_still_503_for_a_user_with_no_rights(broker: Broker) -> None:
    ch = as_user(broker, "^$", "^$", "^$")
    with pytest.raises(CommandInvalid):
        ch.exchange_declare("x", "")
    with pytest.raises(AccessRefused):
        broker.connect(user="alice").channel().exchange_declare("x", "topic")


def test_only_impersonators_publish_with_another_user_id(broker: Broker) -> None:
    broker.connect().channel().queue_declare("q")
    ch = as_user(broker, ".*", ".*", ".*")
    earlier = ch.connection
    assert error_of(lambda: ch.basic_publish("", "q", b"", properties={"user_id": "bob"})) == (
        "406 PRECONDITION_FAILED - user_id property set to 'bob' but authenticated user was 'alice'")
    broker.set_user_tags("alice", "impersonator")
    with pytest.raises(AMQPError, match="user_id property set to 'bob'"):  # tags are read at login
        earlier.channel().basic_publish("", "q", b"", properties={"user_id": "bob"})
    broker.connect(user="alice").channel().basic_publish("", "q", b"", properties={"user_id": "bob"})
    assert broker.queues["q"].messages[0].properties["user_id"] == "bob"


def test_a_reused_consumer_tag_is_refused_before_read_permission_and_the_queue(broker: Broker) -> None:
    broker.connect().channel().queue_declare("q")
    broker.add_user("alice", "pw")
    broker.set_permissions("alice", ".*", ".*", "^q$")
    ch = broker.connect(user="alice").channel()
    ch.basic_consume("q", lambda *a: None, consumer_tag="t")
    assert error_of(lambda: ch.basic_consume("other", lambda *a: None, consumer_tag="t")) == \
        "530 NOT_ALLOWED - attempt to reuse consumer tag 't'"


# -- the management API's rules (rabbit_mgmt_util:is_authorized_*) -------------------------------

_TAGGED = {"plain": [], "mgmt": ["management"], "monitor": ["monitoring"],
           "policy": ["policymaker"], "admin": ["administrator"]}


@pytest.fixture
def tagged() -> Broker:
    """A user per tag, with permissions in vhost "mine" (none in "/"), and a vhost "theirs"
    nobody but the default users may use."""
    broker = Broker(vhosts=("/", "mine", "theirs"))
    for name, tags in _TAGGED.items():
        broker.add_user(name, "pw", tags=tags)
        broker.set_permissions(name, ".*", ".*", ".*", vhost="mine")
    return broker


#: (rule, vhost named by the path) -> the users it lets through (RabbitMQ 3.10.8's
#: rabbit_mgmt_util; a vhost that does not exist lets everyone through, for the route's 404).
_RULES: list[tuple[Rule, str | None, set[str]]] = [
    (Rule.ANY, None, {"plain", "mgmt", "monitor", "policy", "admin"}),
    (Rule.ADMIN, "mine", {"admin"}),
    (Rule.MONITOR, None, {"monitor", "admin"}),
    (Rule.VHOST, "mine", {"plain", "mgmt", "monitor", "policy", "admin"}),
    (Rule.VHOST, "theirs", {"admin"}),
    (Rule.VHOST, "nowhere", {"plain", "mgmt", "monitor", "policy", "admin"}),
    (Rule.VHOST, None, {"plain", "mgmt", "monitor", "policy", "admin"}),
    (Rule.VHOST_VISIBLE, "theirs", {"monitor", "admin"}),
    (Rule.POLICIES, "mine", {"policy", "admin"}),
    (Rule.POLICIES, "theirs", {"admin"}),
    (Rule.POLICIES, None, {"policy", "admin"}),
    (Rule.GLOBAL_PARAMETERS, None, {"policy", "admin"}),
]


@pytest.mark.parametrize(("rule", "vhost", "allowed"), _RULES)
def test_each_management_rule_lets_through_whom_rabbitmqs_does(
        tagged: Broker, rule: Rule, vhost: str | None, allowed: set[str]) -> None:
    passed = set()
    for name in _TAGGED:
        try:
            tagged.access.authorize(name, rule, vhost=vhost, vhosts=tagged.vhosts)
        except ManagementRefused:
            continue
        passed.add(name)
    assert passed == allowed


@pytest.mark.parametrize(("delete", "allowed"), [(False, {"monitor", "admin", "mgmt"}),
                                                 (True, {"admin", "mgmt"})])
def test_an_items_owner_reads_and_deletes_it_monitors_read_administrators_delete(
        tagged: Broker, delete: bool, allowed: set[str]) -> None:
    """is_authorized_user: a DELETE is for administrators and the owner, a GET for monitors
    and the owner; an item that does not exist is refused to the others as another's is."""
    for owner, expected in (("mgmt", allowed), (NO_ITEM, allowed - {"mgmt"})):
        reasons = {}
        for name in _TAGGED:
            try:
                tagged.access.authorize(name, Rule.OWNER, owner=owner, delete=delete)
            except ManagementRefused as refused:
                reasons[name] = refused.reason
        assert set(_TAGGED) - set(reasons) == expected
        assert set(reasons.values()) == {"User not authorised to access object"}


def test_management_login_refuses_in_rabbitmqs_order(tagged: Broker) -> None:
    access = tagged.access
    with pytest.raises(ManagementRefused, match="Login failed") as failed:
        access.management_login("admin", "wrong", loopback=True)
    assert failed.value.challenge
    with pytest.raises(ManagementRefused, match="Not management user"):
        access.management_login("plain", "pw", loopback=True)
    access.loopback_users.add("admin")
    with pytest.raises(ManagementRefused, match="User can only log in via localhost"):
        access.management_login("admin", "pw", loopback=False)


def test_listings_show_vhosts_as_rabbitmqs_filters_do(tagged: Broker) -> None:
    """list_visible_vhosts (monitors see every vhost exists), filter_vhost (only administrators
    list what is in vhosts they have no permissions in) and filter_user."""
    access, every = tagged.access, list(tagged.vhosts)
    assert access.visible_vhosts("monitor", every) == every
    assert access.visible_vhosts("mgmt", every) == ["mine"]
    assert access.listed_vhosts("monitor", every) == ["mine"]
    assert access.listed_vhosts("admin", every) == every
    assert access.sees_items_of("monitor", "admin")
    assert not access.sees_items_of("mgmt", "admin")


def test_what_a_message_carried_is_seen_by_administrators_and_who_could_get_it(
        tagged: Broker) -> None:
    access = tagged.access
    tagged.set_permissions("mgmt", ".*", ".*", "^mine-", vhost="mine")
    assert access.sees_message("admin", "theirs", ["q"])  # no permissions there: still
    assert access.sees_message("mgmt", "mine", ["other", "mine-q"])
    assert not access.sees_message("mgmt", "mine", ["other"])
    assert not access.sees_message("monitor", "theirs", ["q"])  # monitoring is not reading
    assert not access.sees_message("mgmt", "mine", [])


def test_the_creator_of_a_vhost_gets_full_permissions_on_it(tagged: Broker) -> None:
    tagged.add_vhost("new", created_by="admin")
    assert tagged.access.permissions("admin", "new") == Permissions(".*", ".*", ".*")
    assert tagged.access.permissions("mgmt", "new") is None


def test_user_limits_are_rabbitmqs_two_integers(tagged: Broker) -> None:
    tagged.set_user_limits("mgmt", {"max-connections": 5, "max-channels": 0})
    assert tagged.access.users["mgmt"].limits == {"max-connections": 5, "max-channels": 0}
    for bad in ({"max-connections": "x"}, {"max-queues": 1}, {"max-channels": True}):
        with pytest.raises(AccessControlError, match=r"should be a number|Unrecognised terms"):
            tagged.set_user_limits("mgmt", bad)


def test_a_permission_expression_is_matched_in_linear_time_or_by_re_for_lookarounds(
        broker: Broker) -> None:
    """Expressions are searched in every name a user's operations meet: ^(a+)+$ against a
    name of 40 a's and a "!" would be 2^40 steps of re's backtracking (embroker._regex:
    linear); a lookaround, which RabbitMQ's PCRE takes, still works (re)."""
    broker.add_user("u", "pw")
    broker.set_permissions("u", "^(a+)+$", "^(?!amq\\.).*", ".*")
    channel = broker.connect(user="u").channel()
    with pytest.raises(AccessRefused):
        channel.queue_declare("a" * 40 + "!")
    channel = broker.connect(user="u").channel()
    channel.queue_declare("aaaa")
    with pytest.raises(AccessRefused, match=r"amq\.default"):  # write: the lookahead refuses
        channel.basic_publish("", "aaaa", b"m")
