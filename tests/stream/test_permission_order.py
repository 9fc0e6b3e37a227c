"""What a user learns of the streams it may not touch (issue #34): each stream command checks
the permission it needs on the stream's queue resource before it looks for the stream, as
RabbitMQ 3.10.8's stream plugin does (``rabbit_stream_reader``, ``rabbit_stream_manager``),
so a user without it gets ACCESS_REFUSED whether the stream exists or not.

The answers are tables here, each entry what RabbitMQ 3.10.8 answers (checked live on the
reference, port 5552): the tests against embroker's stream listener pin them without a
reference; with ``EMBROKER_REFERENCE_URL`` set the same cases run against RabbitMQ and must
give the same tables. Each case uses a user whose permissions refuse one of configure, write and
read (``^$``) and grant the others, on a stream that exists and on one that does not.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from embroker import Broker
from embroker.stream import Code, Fields, FrameReader, Key, Writer

#: RabbitMQ's stream port on the reference's host.
REFERENCE_STREAM_PORT = 5552

OK, NX, AE, AR, PF = (Code.OK, Code.STREAM_DOES_NOT_EXIST, Code.STREAM_ALREADY_EXISTS,
                      Code.ACCESS_REFUSED, Code.PRECONDITION_FAILED)
NO_OFFSET, NOT_AVAILABLE = Code.NO_OFFSET, Code.STREAM_NOT_AVAILABLE

#: The user's permissions (configure, write, read) for each permission refused.
PERMISSIONS = {"none": (".*", ".*", ".*"), "configure": ("^$", ".*", ".*"),
               "write": (".*", "^$", ".*"), "read": (".*", ".*", "^$")}

#: What RabbitMQ 3.10.8 answers (checked live), by command and permission refused: (on a stream
#: that exists, on one that does not). StoreOffset has no answer: its entry is what QueryOffset
#: then tells a user who may read (OK: the offset was stored). Metadata, Route and Partitions
#: check no permission at all, in RabbitMQ as here.
ANSWERS: dict[str, dict[str, tuple[Code, Code]]] = {
    "create": {"none": (AE, OK), "configure": (AR, AR), "write": (AE, OK), "read": (AE, OK)},
    "delete": {"none": (OK, NX), "configure": (AR, AR), "write": (OK, NX), "read": (OK, NX)},
    "metadata": {"none": (OK, NX), "configure": (OK, NX), "write": (OK, NX), "read": (OK, NX)},
    "query_offset": {"none": (NO_OFFSET, NX), "configure": (NO_OFFSET, NX),
                     "write": (NO_OFFSET, NX), "read": (AR, AR)},
    "store_offset": {"none": (OK, NX), "configure": (OK, NX), "write": (NO_OFFSET, NX),
                     "read": (OK, NX)},
    "query_publisher_sequence": {"none": (OK, NX), "configure": (OK, NX), "write": (OK, NX),
                                 "read": (AR, AR)},
    "declare_publisher": {"none": (OK, NX), "configure": (OK, NX), "write": (AR, AR),
                          "read": (OK, NX)},
    "subscribe": {"none": (OK, NX), "configure": (OK, NX), "write": (OK, NX), "read": (AR, AR)},
    "route": {"none": (OK, NX), "configure": (OK, NX), "write": (OK, NX), "read": (OK, NX)},
    "partitions": {"none": (OK, NX), "configure": (OK, NX), "write": (OK, NX), "read": (OK, NX)},
}


class Client:
    """A stream-protocol client of raw frames, opened as ``user``."""

    def __init__(self, host: str, port: int, user: str = "guest",
                 password: str = "guest") -> None:
        self.sock = socket.create_connection((host, port), timeout=5)
        self.reader = FrameReader(0)
        self.correlation = 0
        self.request(Key.PEER_PROPERTIES, lambda w: w.properties({}))
        self.request(Key.SASL_HANDSHAKE)
        authenticated = self.request(Key.SASL_AUTHENTICATE, lambda w: w.string("PLAIN")
                                     .bytes_(f"\0{user}\0{password}".encode()))
        assert code_of(authenticated) == OK
        assert self.next()[0] == Key.TUNE
        self.sock.sendall(Writer(Key.TUNE).uint32(1_048_576).uint32(0).frame())
        assert code_of(self.request(Key.OPEN, lambda w: w.string("/"))) == OK

    def request(self, key: int, fill: Callable[[Writer], Any] = lambda w: w,
                ) -> tuple[int, bytes]:
        """Send a request; its response (frames sent before it are left out)."""
        self.correlation += 1
        w = Writer(key).uint32(self.correlation)
        fill(w)
        self.sock.sendall(w.frame())
        while True:
            frame = self.next()
            if frame[0] & 0x7FFF == key and frame[1][:4] == self.correlation.to_bytes(4, "big"):
                return frame  # (Route and Partitions: 3.10.8 leaves the response bit out)

    def next(self) -> tuple[int, bytes]:
        """The next frame (``(0, b"")`` once the server closed the socket)."""
        while (frame := self.reader.next_frame()) is None:
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:
                return 0, b""
            self.reader.feed(data)
        return frame[0], frame[2]

    def unsolicited(self, first: bool = False) -> list[tuple[int, bytes]]:
        """The frames the server sent on its own: ``first``, wait for one (a few seconds at
        most); then those before the answer to a request that changes nothing."""
        got: list[tuple[int, bytes]] = []
        if first:
            got.append(self.next())
        self.correlation += 1
        self.sock.sendall(Writer(Key.DELETE_PUBLISHER).uint32(self.correlation).uint8(250)
                          .frame())
        while (frame := self.next())[0] != 0x8000 | Key.DELETE_PUBLISHER:
            assert frame[0], "closed"
            got.append(frame)
        return got

    def close(self) -> None:
        self.sock.close()


def code_of(frame: tuple[int, bytes]) -> Code:
    """A response's code (after its correlation id)."""
    return Code(int.from_bytes(frame[1][4:6], "big"))


def metadata_code(frame: tuple[int, bytes]) -> Code:
    """The code of the one stream a Metadata response describes."""
    f = Fields(frame[1])
    f.uint32()
    for _ in range(f.count()):
        f.uint16()
        f.string()
        f.uint32()
    assert f.count() == 1
    f.string()
    return Code(f.uint16())


class Target:
    """A broker with a stream port, and its administration: users, and over an AMQP 0-9-1
    ``channel`` (the in-process client's or pika's: the same methods) super streams, queues."""

    host = "127.0.0.1"
    port = 0
    channel: Any

    def add_user(self, name: str, permissions: tuple[str, str, str]) -> None:
        raise NotImplementedError

    def delete_user(self, name: str) -> None:
        raise NotImplementedError

    def super_stream(self, name: str, stream: str) -> None:
        """A direct exchange ``name`` bound to ``stream`` with key ``k``."""
        self.channel.exchange_declare(name, "direct", durable=True)
        self.channel.queue_bind(stream, name, "k")

    def delete_exchange(self, name: str) -> None:
        self.channel.exchange_delete(name)

    def classic_queue(self, name: str) -> None:
        self.channel.queue_declare(name, durable=True)

    def delete_queue(self, name: str) -> None:
        self.channel.queue_delete(name)

    def client(self, user: str = "guest", password: str = "guest") -> Client:
        return Client(self.host, self.port, user, password)


class EmbrokerTarget(Target):
    def __init__(self, broker: Broker, port: int) -> None:
        self.broker = broker
        self.port = port
        self.channel = broker.connect().channel()

    def add_user(self, name: str, permissions: tuple[str, str, str]) -> None:
        self.broker.add_user(name, "pw")
        self.broker.set_permissions(name, *permissions)

    def delete_user(self, name: str) -> None:
        self.broker.delete_user(name)


class ReferenceTarget(Target):
    """RabbitMQ: users through its management API, the rest over AMQP 0-9-1 (pika)."""

    def __init__(self, url: str) -> None:
        import pika

        parts = urllib.parse.urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = REFERENCE_STREAM_PORT
        credentials = f"{parts.username or 'guest'}:{parts.password or 'guest'}"
        self._auth = "Basic " + base64.b64encode(credentials.encode()).decode()
        self._api = f"http://{self.host}:15672/api"
        self.connection = pika.BlockingConnection(pika.URLParameters(url))
        self.channel = self.connection.channel()

    def _call(self, method: str, path: str, body: Any = None) -> None:
        request = urllib.request.Request(
            self._api + path, method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"authorization": self._auth, "content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=10):
            pass

    def add_user(self, name: str, permissions: tuple[str, str, str]) -> None:
        self._call("PUT", f"/users/{name}", {"password": "pw", "tags": ""})
        self._call("PUT", f"/permissions/%2F/{name}",
                   dict(zip(("configure", "write", "read"), permissions, strict=True)))

    def delete_user(self, name: str) -> None:
        self._call("DELETE", f"/users/{name}")

    def close(self) -> None:
        self.connection.close()


def _name(base: str) -> str:
    return f"embroker-test-{base}-{uuid.uuid4().hex[:8]}"


def create(c: Client, stream: str) -> Code:
    return code_of(c.request(Key.CREATE, lambda w: w.string(stream).properties({})))


def delete(c: Client, stream: str) -> Code:
    return code_of(c.request(Key.DELETE, lambda w: w.string(stream)))


def subscribe(c: Client, subscription: int, stream: str, credit: int = 0) -> Code:
    return code_of(c.request(Key.SUBSCRIBE, lambda w: w.uint8(subscription).string(stream)
                             .uint16(1).uint16(credit).properties({})))


@pytest.fixture(scope="module")
def embroker_target() -> Iterator[EmbrokerTarget]:
    broker = Broker()
    with broker.serve(stream_port=0) as server:
        assert server.stream_port is not None
        yield EmbrokerTarget(broker, server.stream_port)
        assert not server.errors, server.errors


@pytest.fixture(scope="module")
def reference_target() -> Iterator[ReferenceTarget]:
    url = os.environ.get("EMBROKER_REFERENCE_URL")
    if not url:
        pytest.skip("EMBROKER_REFERENCE_URL is not set")
    target = ReferenceTarget(url)
    try:
        yield target
    finally:
        target.close()


@pytest.fixture(params=["embroker", "reference"])
def target(request: pytest.FixtureRequest) -> Target:
    target: Target = request.getfixturevalue(f"{request.param}_target")
    return target


# -- one command, one permission refused, a stream that exists or not -------------------------

def answer(target: Target, command: str, user: str, exists: bool) -> Code:
    """What ``user`` is answered for ``command`` on a stream that ``exists`` or not (made,
    and cleaned up, by guest)."""
    guest = target.client()
    stream = _name("perm")
    super_stream = stream + "-super"
    if exists:
        assert code_of(guest.request(Key.CREATE, lambda w: w.string(stream).properties({}))) \
            == OK
        target.super_stream(super_stream, stream)
    client = target.client(user, "pw")
    try:
        return _ask(client, guest, command, stream, super_stream)
    finally:
        client.close()
        guest.request(Key.DELETE, lambda w: w.string(stream))
        if exists:
            target.delete_exchange(super_stream)
        guest.close()


def _ask(c: Client, guest: Client, command: str, stream: str, super_stream: str) -> Code:
    if command == "create":
        return code_of(c.request(Key.CREATE, lambda w: w.string(stream).properties({})))
    if command == "delete":
        return code_of(c.request(Key.DELETE, lambda w: w.string(stream)))
    if command == "metadata":
        return metadata_code(c.request(Key.METADATA, lambda w: w.strings([stream])))
    if command == "query_offset":
        return code_of(c.request(Key.QUERY_OFFSET, lambda w: w.string("ref").string(stream)))
    if command == "store_offset":
        c.sock.sendall(Writer(Key.STORE_OFFSET).string("ref").string(stream).uint64(7).frame())
        assert c.unsolicited() == []  # (no answer, and the connection goes on)
        return code_of(guest.request(Key.QUERY_OFFSET,
                                     lambda w: w.string("ref").string(stream)))
    if command == "query_publisher_sequence":
        return code_of(c.request(Key.QUERY_PUBLISHER_SEQUENCE,
                                 lambda w: w.string("ref").string(stream)))
    if command == "declare_publisher":
        return code_of(c.request(Key.DECLARE_PUBLISHER,
                                 lambda w: w.uint8(1).string("").string(stream)))
    if command == "subscribe":
        return code_of(c.request(Key.SUBSCRIBE, lambda w: w.uint8(1).string(stream).uint16(1)
                                 .uint16(1).properties({})))
    if command == "route":
        return code_of(c.request(Key.ROUTE, lambda w: w.string("k").string(super_stream)))
    assert command == "partitions"
    return code_of(c.request(Key.PARTITIONS, lambda w: w.string(super_stream)))


@pytest.fixture(scope="module")
def users_of() -> Iterator[Callable[[Target], dict[str, str]]]:
    """One user per permission refused, on each target (made once, deleted at the end)."""
    made: dict[int, tuple[Target, dict[str, str]]] = {}

    def users(target: Target) -> dict[str, str]:
        if id(target) not in made:
            names = {refused: _name(f"no-{refused}") for refused in PERMISSIONS}
            for refused, name in names.items():
                target.add_user(name, PERMISSIONS[refused])
            made[id(target)] = (target, names)
        return made[id(target)][1]

    yield users
    for target, names in made.values():
        for name in names.values():
            target.delete_user(name)


@pytest.mark.parametrize("refused", list(PERMISSIONS))
@pytest.mark.parametrize("command", list(ANSWERS))
def test_a_stream_command_checks_its_permission_before_the_stream(
        target: Target, users_of: Callable[[Target], dict[str, str]], command: str,
        refused: str) -> None:
    user = users_of(target)[refused]
    got = (answer(target, command, user, exists=True),
           answer(target, command, user, exists=False))
    assert got == ANSWERS[command][refused]


# -- the order of the other checks --------------------------------------------------------------

def create_cases(target: Target, users: dict[str, str]) -> dict[str, Any]:
    """Create: the name, then the permission, then the arguments, then an existing queue."""
    out: dict[str, Any] = {}
    guest = target.client()
    no_configure = target.client(users["configure"], "pw")

    def create_with(c: Client, name: str, arguments: dict[str, str] | None = None) -> Code:
        return code_of(c.request(Key.CREATE, lambda w: w.string(name)
                                 .properties(arguments or {})))

    try:
        out["amq. name, no configure permission"] = create_with(no_configure, "amq.embroker-test")
        out["empty name"] = create_with(guest, "")
        stream = _name("args")
        out["bad initial-cluster-size, no configure permission"] = create_with(
            no_configure, stream, {"initial-cluster-size": "0"})
        out["initial-cluster-size 0"] = create_with(guest, stream, {"initial-cluster-size": "0"})
        out["unknown queue-leader-locator"] = create_with(guest, stream,
                                                     {"queue-leader-locator": "bogus"})
        out["max-age 1h"] = create_with(guest, stream, {"max-age": "1h"})
        out["again, same arguments"] = create_with(guest, stream, {"max-age": "1h"})
        out["again, an unknown argument more"] = create_with(guest, stream,
                                                        {"max-age": "1h", "foo": "bar"})
        out["again, no max-age"] = create_with(guest, stream)
        out["again, another max-age"] = create_with(guest, stream, {"max-age": "2h"})
        out["again, initial-cluster-size 0"] = create_with(guest, stream,
                                                      {"max-age": "1h",
                                                       "initial-cluster-size": "0"})
        guest.request(Key.DELETE, lambda w: w.string(stream))
        queue = _name("classic")
        target.classic_queue(queue)
        try:
            out["over a classic queue"] = create_with(guest, queue)
            out["Delete of a classic queue"] = code_of(
                guest.request(Key.DELETE, lambda w: w.string(queue)))
            out["Subscribe to a classic queue"] = code_of(guest.request(
                Key.SUBSCRIBE, lambda w: w.uint8(9).string(queue).uint16(1).uint16(1)
                .properties({})))
        finally:
            target.delete_queue(queue)
        stripped = _name("newline")
        out["name with a newline"] = create_with(guest, stripped[:8] + "\n" + stripped[8:])
        out["  Delete of the name without it"] = code_of(
            guest.request(Key.DELETE, lambda w: w.string(stripped)))
    finally:
        guest.close()
        no_configure.close()
    return out


#: RabbitMQ 3.10.8's answers (checked live): a bad name before the permission
#: (rabbit_stream_utils:enforce_correct_name), the permission before the arguments, the
#: arguments before an existing queue, which must be the stream these arguments declare.
CREATE_ANSWERS = {
    "amq. name, no configure permission": PF,
    "empty name": PF,
    "bad initial-cluster-size, no configure permission": AR,
    "initial-cluster-size 0": PF,
    "unknown queue-leader-locator": PF,
    "max-age 1h": OK,
    "again, same arguments": AE,
    "again, an unknown argument more": AE,
    "again, no max-age": PF,
    "again, another max-age": PF,
    "again, initial-cluster-size 0": PF,
    "over a classic queue": PF,
    "Delete of a classic queue": NX,
    "Subscribe to a classic queue": NX,
    "name with a newline": OK,
    "  Delete of the name without it": OK,
}


def test_create_checks_name_permission_arguments_then_the_existing_queue(
        target: Target, users_of: Callable[[Target], dict[str, str]]) -> None:
    assert create_cases(target, users_of(target)) == CREATE_ANSWERS


def id_cases(target: Target) -> dict[str, Any]:
    """Subscribe: permission, stream, then the subscription id. DeclarePublisher: permission,
    then the publisher id and reference, then the stream."""
    out: dict[str, Any] = {}
    allowed, denied, missing = _name("allowed"), _name("denied"), _name("missing")
    reader, writer = _name("reader"), _name("writer")
    # (read / write permission on the "allowed" and "missing" streams only)
    target.add_user(reader, (".*", ".*", f"^({allowed}|{missing})$"))
    target.add_user(writer, (".*", f"^({allowed}|{missing})$", ".*"))
    guest = target.client()
    for stream in (allowed, denied):
        create(guest, stream)
    r, w_ = target.client(reader, "pw"), target.client(writer, "pw")
    try:
        def subscribe(c: Client, stream: str) -> Code:
            return code_of(c.request(Key.SUBSCRIBE, lambda w: w.uint8(1).string(stream)
                                     .uint16(1).uint16(0).properties({})))

        def declare(c: Client, publisher: int, reference: str, stream: str) -> Code:
            return code_of(c.request(Key.DECLARE_PUBLISHER, lambda w: w.uint8(publisher)
                                     .string(reference).string(stream)))

        out["subscribe 1"] = subscribe(r, allowed)
        out["subscribe 1 again, same stream"] = subscribe(r, allowed)
        out["subscribe 1 again, missing stream"] = subscribe(r, missing)
        out["subscribe 1 again, stream it may not read"] = subscribe(r, denied)
        out["publisher 1, reference ref"] = declare(w_, 1, "ref", allowed)
        out["publisher 1 again, missing stream"] = declare(w_, 1, "", missing)
        out["publisher 1 again, stream it may not write"] = declare(w_, 1, "", denied)
        out["publisher 2, reference ref again"] = declare(w_, 2, "ref", allowed)
        out["publisher 3, reference ref, missing stream"] = declare(w_, 3, "ref",
                                                                    missing)
        out["publisher 4, no reference"] = declare(w_, 4, "", allowed)
        out["publisher 5, no reference"] = declare(w_, 5, "", allowed)
    finally:
        r.close()
        w_.close()
        for stream in (allowed, denied):
            delete(guest, stream)
        guest.close()
        target.delete_user(reader)
        target.delete_user(writer)
    return out


#: RabbitMQ 3.10.8's answers (checked live; rabbit_stream_reader's subscribe and
#: declare_publisher). A reference may be declared once per stream and connection.
ID_ANSWERS = {
    "subscribe 1": OK,
    "subscribe 1 again, same stream": Code.SUBSCRIPTION_ID_ALREADY_EXISTS,
    "subscribe 1 again, missing stream": NX,
    "subscribe 1 again, stream it may not read": AR,
    "publisher 1, reference ref": OK,
    "publisher 1 again, missing stream": PF,
    "publisher 1 again, stream it may not write": AR,
    "publisher 2, reference ref again": PF,
    "publisher 3, reference ref, missing stream": NX,
    "publisher 4, no reference": OK,
    "publisher 5, no reference": OK,
}


def test_subscription_and_publisher_ids_are_checked_in_rabbitmqs_order(target: Target) -> None:
    assert id_cases(target) == ID_ANSWERS


def deletion_cases(target: Target) -> dict[str, Any]:
    """A stream deleted by another connection, or by the connection itself: what each
    connection with publishers or subscriptions on it is told, and what is left of them."""
    out: dict[str, Any] = {}
    stream = _name("gone")
    guest = target.client()
    guest.request(Key.CREATE, lambda w: w.string(stream).properties({}))
    publisher, reader, quit_ = target.client(), target.client(), target.client()
    try:
        publisher.request(Key.DECLARE_PUBLISHER, lambda w: w.uint8(1).string("").string(stream))
        for subscription in (1, 2):
            subscribe(reader, subscription, stream)
        quit_.request(Key.DECLARE_PUBLISHER, lambda w: w.uint8(1).string("").string(stream))
        quit_.request(Key.DELETE_PUBLISHER, lambda w: w.uint8(1))
        guest.request(Key.SUBSCRIBE, lambda w: w.uint8(1).string(stream).uint16(1).uint16(0)
                      .properties({}))
        guest.correlation += 1
        guest.sock.sendall(Writer(Key.DELETE).uint32(guest.correlation).string(stream).frame())
        out["the deleter is told"] = [(key, code_of((key, body)) if key & 0x8000 else
                                       Code(int.from_bytes(body[:2], "big")))
                                      for key, body in (guest.next(), guest.next())]
        out["a publisher's connection is told"] = _updates(publisher.unsolicited(first=True))
        out["two subscriptions' connection is told"] = _updates(reader.unsolicited(first=True))
        out["a connection whose publisher left is told"] = _updates(quit_.unsolicited())
        publisher.sock.sendall(Writer(Key.PUBLISH).uint8(1).int32(1).uint64(5)
                               .bytes_(b"\x00\x53\x75\xa0\x01x").frame())
        key, body = publisher.next()
        out["Publish then"] = (key, Code(int.from_bytes(body[-2:], "big")))
        out["DeletePublisher then"] = code_of(publisher.request(Key.DELETE_PUBLISHER,
                                                                lambda w: w.uint8(1)))
        reader.sock.sendall(Writer(Key.CREDIT).uint8(1).uint16(1).frame())
        key, body = reader.next()
        out["Credit then"] = (key, Code(int.from_bytes(body[:2], "big")))
        out["Unsubscribe then"] = code_of(reader.request(Key.UNSUBSCRIBE, lambda w: w.uint8(2)))
    finally:
        for c in (publisher, reader, quit_, guest):
            c.close()
    return out


def _updates(frames: list[tuple[int, bytes]]) -> list[tuple[int, Code]]:
    return [(key, Code(int.from_bytes(body[:2], "big"))) for key, body in frames]


#: RabbitMQ 3.10.8's answers (checked live): each connection with a publisher or a subscription
#: on the stream is told once (its reader monitors the stream's member: one MetadataUpdate per
#: stream), the deleter after its response; its publishers and subscriptions there are gone.
DELETION_ANSWERS = {
    "the deleter is told": [(0x8000 | Key.DELETE, OK), (Key.METADATA_UPDATE, NOT_AVAILABLE)],
    "a publisher's connection is told": [(Key.METADATA_UPDATE, NOT_AVAILABLE)],
    "two subscriptions' connection is told": [(Key.METADATA_UPDATE, NOT_AVAILABLE)],
    "a connection whose publisher left is told": [],
    "Publish then": (Key.PUBLISH_ERROR, Code.PUBLISHER_DOES_NOT_EXIST),
    "DeletePublisher then": Code.PUBLISHER_DOES_NOT_EXIST,
    "Credit then": (0x8000 | Key.CREDIT, Code.SUBSCRIPTION_ID_DOES_NOT_EXIST),
    "Unsubscribe then": Code.SUBSCRIPTION_ID_DOES_NOT_EXIST,
}


def test_a_deleted_stream_takes_its_publishers_and_subscriptions_with_one_update(
        target: Target) -> None:
    assert deletion_cases(target) == DELETION_ANSWERS


# -- what is not run against the reference ------------------------------------------------------

@pytest.mark.parametrize("arguments", [{"max-length-bytes": "abc"},
                                       {"initial-cluster-size": "1.5"},
                                       {"max-age": "bogus"}])
def test_create_with_an_argument_that_crashes_rabbitmqs_stream_manager_drops_the_connection(
        embroker_target: EmbrokerTarget, arguments: dict[str, str]) -> None:
    """An integer argument that is not one (``binary_to_integer``), an ``x-max-age`` with no
    number (``list_to_integer("")``): RabbitMQ 3.10.8's stream manager crashes, and the
    client's connection is closed with no answer, nothing created (checked live once; not run
    against the reference, whose stream listener restarts after it). embroker drops the
    connection the same way; a user without configure permission is refused first."""
    stream = _name("crash")
    c = embroker_target.client()
    try:
        c.sock.sendall(Writer(Key.CREATE).uint32(99).string(stream).properties(arguments)
                       .frame())
        assert c.next() == (0, b"")
    finally:
        c.close()
    assert stream not in embroker_target.broker.queues
    embroker_target.add_user("crash-no-configure", PERMISSIONS["configure"])
    try:
        c = embroker_target.client("crash-no-configure", "pw")
        assert code_of(c.request(Key.CREATE, lambda w: w.string(stream)
                                 .properties(arguments))) == AR
        c.close()
    finally:
        embroker_target.delete_user("crash-no-configure")


# -- the rule's home ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["s", "missing"])
@pytest.mark.parametrize("operation", [
    "create", "delete", "reader", "writer", "publisher sequence", "query offset", "store offset",
    "publish"])
def test_the_model_refuses_without_permission_whether_the_stream_exists_or_not(
        operation: str, name: str) -> None:
    """The order is the model's (the stream layer only turns its errors into codes): each
    operation a stream command uses raises AccessRefused for a user without the permission it
    needs, on a stream that exists and on one that does not, and touches nothing."""
    from embroker.errors import AccessRefused

    broker = Broker()
    with broker.connect() as admin:
        admin.channel().queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
    broker.add_user("u", "pw")
    broker.set_permissions("u", "^$", "^$", "^$")
    channel = broker.open_connection("/", user="u").open_channel(1)
    operations: dict[str, Callable[[str], object]] = {
        "create": lambda n: channel.stream_create(n, {"initial-cluster-size": "0"}),
        "delete": channel.stream_delete,
        "reader": channel.stream_reader,
        "writer": lambda n: channel.stream_writer(n, taken=True),
        "publisher sequence": lambda n: channel.stream_publisher_sequence(n, "r"),
        "query offset": lambda n: channel.stream_query_offset(n, "r"),
        "store offset": lambda n: channel.stream_store_offset(n, "r", 1),
        "publish": lambda n: channel.stream_publish_batch(
            n, [(1, None, b"m")], lambda data: ({}, data), reference="r"),
    }
    with pytest.raises(AccessRefused):
        operations[operation](name)
    assert set(broker.queues) == {"s"}
    assert broker.queues["s"].stream is not None
    assert broker.queues["s"].stream.offsets == {}
    assert broker.queues["s"].stream.writers == {}
    assert broker.queues["s"].message_count == 0
