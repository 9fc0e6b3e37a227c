"""Users and permissions over the wire, with pika: logins (passwords, hashes, guest only over
loopback), vhost access, permission errors, a deleted user's connections. The rules themselves:
tests/model/test_access.py; against RabbitMQ: tests/conformance/scenarios_access.py and the
reference test at the end of this file."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pika
import pytest
from pika.exceptions import (
    ChannelClosedByBroker,
    ConnectionClosedByBroker,
    ProbableAccessDeniedError,
    ProbableAuthenticationError,
)

from embroker import Broker
from embroker import amqp091 as a
from embroker.amqp091._connection import ServerConnection
from embroker.model._access import MD5, SHA256, SHA512, hash_password
from embroker.server import Server
from tests.cli import interrupt, serve

LOGIN_REFUSED = ("ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. "
                 "For details see the broker logfile.")


def connect(port: int, user: str, password: str, *, host: str = "127.0.0.1",
            vhost: str = "%2F") -> pika.BlockingConnection:
    params = pika.URLParameters(f"amqp://{user}:{password}@{host}:{port}/{vhost}")
    params.connection_attempts = 1
    params.socket_timeout = 5
    return pika.BlockingConnection(params)


def refused_login(port: int, user: str, password: str, **kwargs: Any) -> str:
    with pytest.raises(ProbableAuthenticationError) as caught:
        connect(port, user, password, **kwargs)
    return str(caught.value)


def non_loopback_address() -> str | None:
    """An IPv4 address of this machine that is not a loopback one (None when there is none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a route
            address: str = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


@pytest.fixture
def served() -> Iterator[tuple[Broker, Server]]:
    broker = Broker(users={"guest": "guest", "app": "pw"})
    with broker.serve() as server:
        yield broker, server
    assert server.errors == []


def test_guest_logs_in_only_over_loopback_other_users_from_anywhere() -> None:
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address to connect from")
    broker = Broker(users={"guest": "guest", "app": "pw"})
    with broker.serve(host="0.0.0.0") as server:
        assert LOGIN_REFUSED in refused_login(server.port, "guest", "guest", host=address)
        connect(server.port, "app", "pw", host=address).close()
        connect(server.port, "guest", "guest").close()  # 127.0.0.1
    open_door = Broker(loopback_users=())
    with open_door.serve(host="0.0.0.0") as server:
        connect(server.port, "guest", "guest", host=address).close()


def test_a_sans_io_connection_is_not_loopback_unless_its_owner_says_so() -> None:
    broker = Broker()
    replies = []
    for loopback in (False, True):
        conn = ServerConnection(broker, loopback=loopback)
        conn.receive_data(a.PROTOCOL_HEADER)
        conn.data_to_send()
        conn.receive_data(a.encode_method_frame(0, a.methods.ConnectionStartOk(
            client_properties={"capabilities": {"authentication_failure_close": True}},
            mechanism="PLAIN", response="\0guest\0guest", locale="en_US")))
        frames = list(a.FrameParser(max_frame_size=131072).feed(conn.data_to_send()))
        replies.append(frames[0].method)
    refused, accepted = replies
    assert isinstance(refused, a.methods.ConnectionClose)
    assert (refused.reply_code, refused.reply_text) == (403, LOGIN_REFUSED)
    assert isinstance(accepted, a.methods.ConnectionTune)


def test_wrong_blank_and_unknown_logins_are_refused_alike(served: tuple[Broker, Server]) -> None:
    broker, server = served
    broker.add_user("nopass", "")
    for user, password in (("app", "wrong"), ("app", ""), ("nopass", ""), ("nobody", "pw")):
        assert LOGIN_REFUSED in refused_login(server.port, user, password), (user, password)
    connect(server.port, "app", "pw").close()


def test_vhost_access_is_checked_at_connection_open(served: tuple[Broker, Server]) -> None:
    broker, server = served
    broker.add_user("alice", "pw")
    with pytest.raises(ProbableAccessDeniedError) as caught:
        connect(server.port, "alice", "pw")
    assert "(530)" in str(caught.value)
    assert "NOT_ALLOWED - access to vhost '/' refused for user 'alice'" in str(caught.value)
    broker.set_permissions("alice", "", "", "")
    connect(server.port, "alice", "pw").close()


def test_permission_errors_close_the_channel_with_rabbitmqs_text(served: tuple[Broker, Server]) -> None:
    broker, server = served
    broker.add_user("alice", "pw")
    broker.set_permissions("alice", "^alice-", "^alice-", "^alice-")
    conn = connect(server.port, "alice", "pw")
    ch = conn.channel()
    ch.queue_declare("alice-q")
    with pytest.raises(ChannelClosedByBroker) as caught:
        ch.queue_declare("bob-q")
    assert (caught.value.reply_code, caught.value.reply_text) == (
        403, "ACCESS_REFUSED - access to queue 'bob-q' in vhost '/' refused for user 'alice'")
    ch = conn.channel()
    ch.basic_publish("", "alice-q", b"x")  # async: the refusal closes the channel
    with pytest.raises(ChannelClosedByBroker) as caught:
        ch.queue_declare("alice-q", passive=True)
    assert caught.value.reply_text == (
        "ACCESS_REFUSED - access to exchange 'amq.default' in vhost '/' refused for user 'alice'")
    assert broker.queues["alice-q"].message_count == 0
    conn.close()


def test_deleting_a_user_closes_its_wire_connections(served: tuple[Broker, Server]) -> None:
    broker, server = served
    broker.add_user("alice", "pw")
    broker.set_permissions("alice", ".*", ".*", ".*")
    conn = connect(server.port, "alice", "pw")
    other = connect(server.port, "app", "pw")
    conn.channel().queue_declare("q")
    broker.delete_user("alice")
    with pytest.raises(ConnectionClosedByBroker) as caught:
        conn.process_data_events(5)
    assert (caught.value.reply_code, caught.value.reply_text) == (
        320, "CONNECTION_FORCED - user 'alice' is deleted")
    other.channel().queue_declare("q", passive=True)  # the others go on
    other.close()
    assert "alice" not in broker.users


def definitions(tag: str, version: str = "3.10.8") -> dict[str, Any]:
    """Users whose passwords are known only by their hashes, one per algorithm."""
    return {
        "rabbit_version": version,
        "users": [
            {"name": f"{tag}-sha256", "password_hash": hash_password("p256", algorithm=SHA256),
             "hashing_algorithm": SHA256, "tags": []},
            {"name": f"{tag}-sha512", "password_hash": hash_password("p512", algorithm=SHA512),
             "hashing_algorithm": SHA512, "tags": []},
            {"name": f"{tag}-md5", "password_hash": hash_password("pmd5", algorithm=MD5),
             "hashing_algorithm": MD5, "tags": []},
            {"name": f"{tag}-nohash", "password_hash": "", "tags": []},
        ],
        "permissions": [{"user": f"{tag}-{kind}", "vhost": "/", "configure": ".*", "write": ".*",
                         "read": ".*"} for kind in ("sha256", "sha512", "md5", "nohash")],
    }


#: (user suffix, password, whether it logs in)
LOGINS = [("sha256", "p256", True), ("sha512", "p512", True), ("md5", "pmd5", True),
          ("sha512", "p256", False), ("md5", "wrong", False), ("nohash", "", False),
          ("nohash", "x", False)]


def login_outcomes(port: int, tag: str) -> list[bool]:
    outcomes = []
    for suffix, password, _ in LOGINS:
        try:
            connect(port, f"{tag}-{suffix}", password).close()
            outcomes.append(True)
        except ProbableAuthenticationError:
            outcomes.append(False)
    return outcomes


def test_password_hashes_from_definitions_are_checked_per_algorithm() -> None:
    broker = Broker()
    broker.load_definitions(definitions("u"))
    with broker.serve() as server:
        assert login_outcomes(server.port, "u") == [ok for _, _, ok in LOGINS]


def test_serve_takes_users_and_definitions_from_the_command_line(tmp_path: Any) -> None:
    path = tmp_path / "defs.json"
    path.write_text(json.dumps({"users": [{"name": "alice", "password": "pw", "tags": []}],
                                "permissions": [{"user": "alice", "vhost": "/", "configure": "^$",
                                                 "write": ".*", "read": ".*"}]}))
    proc = serve("--user", "app:secret", "--definitions", str(path))
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split("listening on ")[1].split(" ")[0]
        port = int(url.rsplit(":", 1)[1].strip("/"))
        connect(port, "app", "secret").channel().queue_declare("q")  # --user: full access
        ch = connect(port, "alice", "pw").channel()
        with pytest.raises(ChannelClosedByBroker) as caught:
            ch.queue_declare("mine")
        assert caught.value.reply_code == 403
    finally:
        _out, err = interrupt(proc)
    assert proc.returncode == 0, err


@pytest.mark.skipif(not os.environ.get("EMBROKER_REFERENCE_URL") or not shutil.which("rabbitmqctl"),
                    reason="needs EMBROKER_REFERENCE_URL and rabbitmqctl (the reference RabbitMQ)")
def test_rabbitmq_checks_the_same_hashes_the_same_way() -> None:
    """The same definitions (hashes of each algorithm, a user without a password) imported into
    RabbitMQ and loaded into embroker: the same logins succeed."""
    tag = f"embroker-hash-{uuid.uuid4().hex[:8]}"
    document = definitions(tag)
    broker = Broker()
    broker.load_definitions(document)
    with broker.serve() as server:
        expected = login_outcomes(server.port, tag)
    fd, path = tempfile.mkstemp(prefix="embroker-users-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(document, f)
        os.chmod(path, 0o644)
        subprocess.run(["rabbitmqctl", "-q", "import_definitions", path], check=True,
                       capture_output=True, timeout=120)
        port = int(os.environ["EMBROKER_REFERENCE_URL"].rsplit(":", 1)[1].split("/")[0])
        deadline = time.monotonic() + 60  # the import finishes asynchronously
        outcomes: list[bool] | None = None
        trouble: Exception | None = None
        while outcomes != expected and time.monotonic() < deadline:
            try:
                outcomes = login_outcomes(port, tag)
            except Exception as exc:  # a busy RabbitMQ times out a handshake: try again
                trouble = exc
            time.sleep(0.5)
        assert outcomes == expected == [ok for _, _, ok in LOGINS], trouble
    finally:
        os.unlink(path)
        for user in document["users"]:
            with contextlib.suppress(subprocess.SubprocessError):
                subprocess.run(["rabbitmqctl", "-q", "delete_user", "--", user["name"]],
                               capture_output=True, timeout=120, check=False)
