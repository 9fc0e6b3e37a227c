"""Who may do what over AMQP 1.0: every read, browse included, every declare and every publish
goes through the model's checks (read, configure and write permissions; exclusive owners), as
over 0-9-1. Against RabbitMQ: the golden scenarios of ``scenarios.py``; here, the paths RabbitMQ
3.10's plugin cannot be compared on (dynamic nodes, the anonymous terminus, exchange sources).
"""

from __future__ import annotations

from typing import Any

import pytest

from embroker import Broker
from embroker.server import Server

proton = pytest.importorskip("proton")
from proton import Message  # noqa: E402
from proton.reactor import Copy  # noqa: E402
from proton.utils import BlockingConnection, LinkDetached  # noqa: E402


def connect_as(server: Server, user: str) -> BlockingConnection:
    address = server.amqp10_url.split("@", 1)[1]
    return BlockingConnection(f"amqp://{address}", user=user, password="pw", timeout=5,
                              allowed_mechs="PLAIN")


@pytest.fixture
def user(broker: Broker):
    def make(name: str, configure: str, write: str, read: str) -> str:
        broker.add_user(name, "pw")
        broker.set_permissions(name, configure, write, read)
        return name
    return make


def test_a_dynamic_receiver_needs_configure_permission_for_its_queue(
        server: Server, broker: Broker, user) -> None:
    c = connect_as(server, user("noconf", "", ".*", ".*"))
    try:
        with pytest.raises(LinkDetached, match=r"amqp:unauthorized-access.*access to queue "
                                               r"'amq\.gen-.*' in vhost '/' refused"):
            c.create_receiver(None, dynamic=True)
        assert not [name for name in broker.queues if name.startswith("amq.gen-")]
    finally:
        c.close()


def test_the_anonymous_terminus_checks_write_permission_per_message(
        server: Server, broker: Broker, user) -> None:
    broker.connect().channel().queue_declare("q")
    c = connect_as(server, user("nowrite", ".*", "^amq\\.direct$", ".*"))
    try:
        sender = c.create_sender(None)
        refused = sender.send(Message(body="no", address="/queues/q"), error_states=[])
        assert refused.remote_state == proton.Delivery.REJECTED
        assert (refused.remote.condition.name, refused.remote.condition.description) == (
            "amqp:unauthorized-access",
            "access to exchange 'amq.default' in vhost '/' refused for user 'nowrite'")
        broker.connect().channel().queue_bind("q", "amq.direct", "k")
        sender.send(Message(body="yes", address="/exchanges/amq.direct/k"))
        assert [m.body for m in broker.queues["q"].messages] == [b"\x00Sw\xa1\x03yes"]
    finally:
        c.close()


def test_a_link_to_an_exchange_needs_write_permission_when_it_attaches(
        server: Server, user) -> None:
    c = connect_as(server, user("nowrite", ".*", "", ".*"))
    try:
        with pytest.raises(LinkDetached, match=r"amqp:unauthorized-access.*access to exchange "
                                               r"'amq\.fanout' in vhost '/' refused"):
            c.create_sender("/exchanges/amq.fanout")
    finally:
        c.close()


def test_an_exchange_source_binds_with_read_permission_on_the_exchange(
        server: Server, broker: Broker, user) -> None:
    """/exchange/X/K as a source: a private queue (configure), bound to X (write on the queue,
    read on X), consumed (read on the queue). Refused, the private queue does not stay."""
    c = connect_as(server, user("noread-x", ".*", ".*", "^amq\\.gen-"))
    try:
        with pytest.raises(LinkDetached, match=r"amqp:unauthorized-access.*access to exchange "
                                               r"'amq\.topic' in vhost '/' refused"):
            c.create_receiver("/exchange/amq.topic/a.#")
        assert not [name for name in broker.queues if name.startswith("amq.gen-")]
    finally:
        c.close()


def test_a_connection_browses_and_consumes_its_own_exclusive_queue(
        server: Server, broker: Broker) -> None:
    c = BlockingConnection(server.amqp10_url, timeout=5, allowed_mechs="PLAIN")
    try:
        receiver = c.create_receiver(None, dynamic=True, credit=0)  # one at a time, asked for
        address = receiver.remote_source.address
        sender = c.create_sender(address)
        for body in ("taken", "left"):
            sender.send(Message(body=body))
        assert receiver.receive(timeout=5).body == "taken"
        receiver.accept()
        browser = c.create_receiver(address, credit=1, options=Copy())
        assert browser.receive(timeout=5).body == "left"
        name = address.removeprefix("/queues/")
        assert broker.queues[name].message_count == 1
    finally:
        c.close()


def test_a_connection_of_a_deleted_user_is_closed_with_connection_forced(
        broker: Broker, user: Any) -> None:
    # (as a 0-9-1 connection is: 320 and "user 'X' is deleted"; before, the 1.0 connection
    # stayed open on a closed model connection)
    from proton import ConnectionException

    name = user("leaving", ".*", ".*", ".*")
    broker.connect().channel().queue_declare("q")
    with broker.serve() as server:
        connection = connect_as(server, name)
        connection.create_sender("/queues/q")
        broker.delete_user(name)
        with pytest.raises(ConnectionException, match=r"amqp:connection:forced.*is deleted"):
            connection.create_sender("/queues/q")
        assert server.errors == []
