"""stomp.py (9.x) against embroker's STOMP listener, for STOMP 1.0, 1.1 and 1.2, end to end:
destinations, ack modes, transactions, receipts, durable topic subscriptions, temporary reply
queues, and 0-9-1 interop with pika both ways.

stomp.py sends the host it connects to as STOMP 1.2's ``host`` header (1.1 only when given a
``vhost``), which RabbitMQ's plugin, and so embroker, take as the virtual host: the clients here
pass ``vhost="/"``. Nothing waits on time: each step waits for the frame (a receipt, a message)
that says it is done."""

from __future__ import annotations

import os
import queue
import socket
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pika
import pytest
import stomp  # type: ignore[import-untyped]
from stomp.exception import ConnectFailedException  # type: ignore[import-untyped]

from embroker import Broker
from embroker.server import Server

from .conftest import wait_until

VERSIONS = ("1.0", "1.1", "1.2")
CLASSES: dict[str, Any] = {"1.0": stomp.Connection10, "1.1": stomp.Connection11,
                           "1.2": stomp.Connection12}
TIMEOUT = 5.0
REFERENCE_STOMP = 61613


class Frames(stomp.ConnectionListener):  # type: ignore[misc]
    """What the broker sent, by kind, as queues to wait on."""

    def __init__(self) -> None:
        self.messages: queue.Queue[Any] = queue.Queue()
        self.receipts: queue.Queue[str] = queue.Queue()
        self.errors: queue.Queue[Any] = queue.Queue()

    def on_message(self, frame: Any) -> None:
        self.messages.put(frame)

    def on_receipt(self, frame: Any) -> None:
        self.receipts.put(frame.headers["receipt-id"])

    def on_error(self, frame: Any) -> None:
        self.errors.put(frame)


class Client:
    """A connected stomp.py connection of one STOMP version, with the version's ack/nack."""

    def __init__(self, port: int, version: str, **connect: Any) -> None:
        self.version = version
        kwargs: dict[str, Any] = {} if version == "1.0" else {"vhost": "/"}
        self.conn = CLASSES[version]([("127.0.0.1", port)], **kwargs)
        self.frames = Frames()
        self.conn.set_listener("", self.frames)
        self.conn.connect("guest", "guest", wait=True, **connect)

    def receipt(self, **headers: Any) -> dict[str, Any]:
        """Headers asking for a receipt (wait for it with :meth:`wait_receipt`)."""
        return {"receipt": f"r-{uuid.uuid4().hex[:8]}", **headers}

    def wait_receipt(self, headers: dict[str, Any]) -> None:
        assert self.frames.receipts.get(timeout=TIMEOUT) == headers["receipt"]

    def subscribe(self, destination: str, sub_id: str, ack: str = "auto",
                  **headers: Any) -> None:
        """SUBSCRIBE, then wait for its receipt (the queue is there and consumed)."""
        asked = self.receipt(**headers)
        self.conn.subscribe(destination, id=sub_id, ack=ack, headers=asked)
        self.wait_receipt(asked)

    def send(self, destination: str, body: str, **headers: Any) -> None:
        """SEND, then wait for its receipt (the message has been routed)."""
        asked = self.receipt(**headers)
        self.conn.send(destination, body, headers=asked)
        self.wait_receipt(asked)

    def next(self) -> Any:
        return self.frames.messages.get(timeout=TIMEOUT)

    def _ack_args(self, frame: Any) -> tuple[Any, ...]:
        if self.version == "1.0":
            return (frame.headers["message-id"],)
        if self.version == "1.1":
            return (frame.headers["message-id"], frame.headers["subscription"])
        return (frame.headers["ack"],)

    def ack(self, frame: Any, **headers: Any) -> None:
        asked = self.receipt(**headers)
        self.conn.ack(*self._ack_args(frame), **asked)
        self.wait_receipt(asked)

    def nack(self, frame: Any, **headers: Any) -> None:
        asked = self.receipt(**headers)
        self.conn.nack(*self._ack_args(frame), **asked)
        self.wait_receipt(asked)

    def close(self) -> None:
        self.conn.disconnect()
        assert self.frames.errors.empty(), self.frames.errors.get()


@pytest.fixture
def stomp_server(broker: Broker) -> Iterator[Server]:
    with Server(broker, listeners={"stomp": 0}) as server:
        yield server
    assert server.errors == []
    broker._check()


@pytest.fixture
def port(stomp_server: Server) -> int:
    number = stomp_server.listener_port("stomp")
    assert number is not None
    return number


@pytest.fixture(params=VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def no_consumers(broker: Broker, name: str) -> bool:
    return broker.queues[name].consumer_count == 0


# -- connecting -------------------------------------------------------------------------------


def refused_without_vhost(port: int) -> str:
    """Connect with stomp.py 1.2 as it comes (``host`` = the host connected to); the ERROR."""
    conn = stomp.Connection12([("127.0.0.1", port)])
    frames = Frames()
    conn.set_listener("", frames)
    with pytest.raises(ConnectFailedException):
        conn.connect("guest", "guest", wait=True)
    error = frames.errors.get(timeout=TIMEOUT)
    assert error.headers["message"] == "Bad CONNECT"
    conn.transport.disconnect_socket()  # (the broker leaves it open after the ERROR, as RabbitMQ)
    return str(error.body)


def test_host_header_names_the_vhost_so_stomp_py_12_needs_vhost(port: int) -> None:
    assert refused_without_vhost(port) == "Virtual host '127.0.0.1' access denied"
    for version in VERSIONS:
        client = Client(port, version)
        assert client.conn.is_connected()
        client.close()
    # 1.1 sends no host header unless given a vhost: the default vhost, as 1.0
    bare = stomp.Connection11([("127.0.0.1", port)])
    bare.connect("guest", "guest", wait=True)
    bare.disconnect()


@pytest.mark.skipif(not os.environ.get("EMBROKER_REFERENCE_URL"),
                    reason="needs EMBROKER_REFERENCE_URL (the reference RabbitMQ)")
def test_reference_rabbitmq_refuses_the_host_as_vhost_alike() -> None:
    host = urlsplit(os.environ["EMBROKER_REFERENCE_URL"]).hostname or "127.0.0.1"
    try:
        socket.create_connection((host, REFERENCE_STOMP), timeout=1).close()
    except OSError:
        pytest.skip(f"the reference's STOMP plugin does not answer on {REFERENCE_STOMP}")
    assert refused_without_vhost(REFERENCE_STOMP) == "Virtual host '127.0.0.1' access denied"
    Client(REFERENCE_STOMP, "1.2").close()


def test_bad_password_is_refused(port: int) -> None:
    conn = stomp.Connection12([("127.0.0.1", port)], vhost="/")
    frames = Frames()
    conn.set_listener("", frames)
    with pytest.raises(ConnectFailedException):
        conn.connect("guest", "wrong", wait=True)
    error = frames.errors.get(timeout=TIMEOUT)
    assert (error.headers["message"], error.body) == ("Bad CONNECT",
                                                      "Access refused for user 'guest'\n")
    conn.transport.disconnect_socket()


# -- destinations -----------------------------------------------------------------------------


@pytest.mark.parametrize(("subscribe_to", "send_to"), [
    ("/queue/stomp-q", "/queue/stomp-q"),
    ("/topic/news.*", "/topic/news.sport"),
    ("/exchange/amq.direct/key", "/exchange/amq.direct/key"),
    ("/amq/queue/declared", "/queue/declared"),
])
def test_send_and_subscribe_on_each_kind_of_destination(
        port: int, broker: Broker, version: str, subscribe_to: str, send_to: str) -> None:
    if subscribe_to.startswith("/amq/queue/"):
        broker.connect().channel().queue_declare("declared", durable=True)
    client = Client(port, version)
    client.subscribe(subscribe_to, "s1")
    client.send(send_to, "hello", **{"content-type": "text/plain", "x-note": "n"})
    got = client.next()
    assert got.body == "hello"
    assert got.headers["destination"] == send_to
    assert got.headers["content-type"] == "text/plain"
    assert got.headers["x-note"] == "n"
    assert got.headers["message-id"]
    assert got.headers["subscription"] == "s1"
    assert "ack" not in got.headers  # (1.2: only where the subscription acknowledges)
    client.close()


# -- acknowledgements -------------------------------------------------------------------------


def test_auto_ack_leaves_nothing_behind(port: int, broker: Broker, version: str) -> None:
    client = Client(port, version)
    client.subscribe("/queue/auto", "s1")
    for body in ("a", "b"):
        client.send("/queue/auto", body)
    assert [client.next().body for _ in range(2)] == ["a", "b"]
    client.close()
    wait_until(lambda: no_consumers(broker, "auto"))
    assert broker.queues["auto"].message_count == 0


def test_client_ack_is_cumulative(port: int, broker: Broker, version: str) -> None:
    client = Client(port, version)
    client.subscribe("/queue/cumulative", "s1", ack="client")
    for body in ("a", "b", "c"):
        client.send("/queue/cumulative", body)
    frames = [client.next() for _ in range(3)]
    assert [f.body for f in frames] == ["a", "b", "c"]
    client.ack(frames[1])  # a and b
    client.close()  # c goes back to the queue
    wait_until(lambda: no_consumers(broker, "cumulative"))
    assert [m.body for m in broker.queues["cumulative"].messages] == [b"c"]


@pytest.mark.parametrize("version", ["1.1", "1.2"])
def test_client_individual_ack_and_nack(port: int, broker: Broker, version: str) -> None:
    client = Client(port, version)
    client.subscribe("/queue/individual", "s1", ack="client-individual")
    for body in ("a", "b", "c"):
        client.send("/queue/individual", body)
    a, b, c = (client.next() for _ in range(3))
    assert a.headers["redelivered"] == "false"
    if version == "1.2":
        assert a.headers["ack"] != b.headers["ack"]
    client.ack(b)  # b alone
    client.nack(a)  # requeued (requeue defaults to true), so delivered again
    again = client.next()
    assert (again.body, again.headers["redelivered"]) == ("a", "true")
    client.nack(c, requeue="false")  # dropped
    client.ack(again)
    client.close()
    wait_until(lambda: no_consumers(broker, "individual"))
    assert broker.queues["individual"].message_count == 0


# -- transactions -----------------------------------------------------------------------------


def test_transactions_commit_and_abort(port: int, broker: Broker, version: str) -> None:
    client = Client(port, version)
    client.subscribe("/queue/tx", "s1", ack="client")
    aborted = client.conn.begin()
    client.conn.send("/queue/tx", "dropped", transaction=aborted)
    client.conn.abort(aborted)
    committed = client.conn.begin()
    client.conn.send("/queue/tx", "kept", transaction=committed)
    asked = client.receipt()
    client.conn.commit(committed, headers=asked)
    client.wait_receipt(asked)
    got = client.next()
    assert got.body == "kept"
    # an ACK inside an aborted transaction is dropped: the message stays unacknowledged
    rolled_back = client.conn.begin()
    client.ack(got, transaction=rolled_back)
    client.conn.abort(rolled_back)
    client.close()
    wait_until(lambda: no_consumers(broker, "tx"))
    assert [m.body for m in broker.queues["tx"].messages] == [b"kept"]


# -- durable topic subscriptions --------------------------------------------------------------


def test_durable_topic_subscription_survives_a_reconnect(
        port: int, broker: Broker, version: str) -> None:
    durable = {"persistent": "true", "auto-delete": "false"}
    if version == "1.0":
        durable["id"] = "keeper"
    client = Client(port, version, headers={"client-id": "c1"})
    client.subscribe("/topic/durable.news", "keeper", ack="client", **durable)
    client.close()
    names = [name for name, q in broker.queues.items() if q.durable and not q.auto_delete]
    assert len(names) == 1, names
    assert names[0].startswith("stomp-subscription-")
    wait_until(lambda: no_consumers(broker, names[0]))
    sender = Client(port, version)
    sender.send("/topic/durable.news", "while away", persistent="true")
    sender.close()
    assert broker.queues[names[0]].message_count == 1
    client = Client(port, version, headers={"client-id": "c1"})
    client.subscribe("/topic/durable.news", "keeper", ack="client", **durable)
    got = client.next()
    assert (got.body, got.headers["persistent"]) == ("while away", "true")
    client.ack(got)
    # unsubscribing with persistent:true deletes the subscription's queue
    asked = client.receipt(**durable)
    client.conn.unsubscribe("keeper", headers=asked) if version != "1.0" else \
        client.conn.unsubscribe(destination="/topic/durable.news", headers=asked)
    client.wait_receipt(asked)
    client.close()
    assert names[0] not in broker.queues


# -- temporary reply queues -------------------------------------------------------------------


def test_temp_queue_reply_to_round_trip(port: int, version: str) -> None:
    server_side = Client(port, version)
    server_side.subscribe("/queue/requests", "rq")
    caller = Client(port, version)
    caller.send("/queue/requests", "ping", **{"reply-to": "/temp-queue/answers"})
    request = server_side.next()
    reply_to = request.headers["reply-to"]
    assert reply_to.startswith("/reply-queue/amq.gen-"), reply_to
    server_side.send(reply_to, "pong", **{"correlation-id": "c-1"})
    reply = caller.next()
    assert (reply.body, reply.headers["correlation-id"]) == ("pong", "c-1")
    # (as RabbitMQ: the subscription is the temp-queue name, the destination the queue's)
    assert reply.headers["subscription"] == "/temp-queue/answers"
    assert reply.headers["destination"] == "/queue/" + reply_to.removeprefix("/reply-queue/")
    caller.close()
    server_side.close()


# -- interop with AMQP 0-9-1 (pika) -----------------------------------------------------------


def test_pika_publish_is_read_over_stomp(stomp_server: Server, port: int, version: str) -> None:
    amqp = pika.BlockingConnection(pika.URLParameters(stomp_server.url))
    channel = amqp.channel()
    channel.queue_declare("from-pika", durable=True)
    client = Client(port, version)
    client.subscribe("/amq/queue/from-pika", "s1")
    channel.basic_publish("", "from-pika", b"hi from pika", pika.BasicProperties(
        content_type="text/plain", content_encoding="utf-8", correlation_id="corr",
        reply_to="/queue/back", message_id="m-7", priority=4, delivery_mode=2, type="greeting",
        app_id="pika", user_id="guest", timestamp=1700000000, expiration="60000",
        headers={"x-text": "v", "x-int": 42, "x-bool": True, "x-list": [1], "x-table": {"a": 1},
                 "x-bytes": b"b"}))
    got = client.next()
    assert got.body == "hi from pika"
    assert got.headers.pop("message-id").startswith("T_s1@@session-")
    # as RabbitMQ 3.10.8 sends it (checked on the reference): the properties by name, the
    # headers of string and integer values (bool, array, table and byte values are left out)
    assert got.headers == {
        "subscription": "s1", "destination": "/queue/from-pika", "redelivered": "false",
        "x-text": "v", "x-int": "42", "app-id": "pika", "user-id": "guest", "type": "greeting",
        "timestamp": "1700000000", "amqp-message-id": "m-7", "expiration": "60000",
        "reply-to": "/queue/back", "correlation-id": "corr", "priority": "4",
        "persistent": "true", "content-encoding": "utf-8", "content-type": "text/plain",
        "content-length": "12"}
    client.close()
    amqp.close()


def test_stomp_send_is_read_with_pika(stomp_server: Server, port: int, version: str) -> None:
    amqp = pika.BlockingConnection(pika.URLParameters(stomp_server.url))
    channel = amqp.channel()
    channel.queue_declare("from-stomp", durable=True)
    client = Client(port, version)
    client.send("/amq/queue/from-stomp", "hi from stomp", persistent="true", priority="3",
                expiration="5000", type="t", timestamp="17",
                **{"content-type": "application/json", "content-encoding": "gz",
                   "correlation-id": "c", "reply-to": "/queue/back", "x-custom": "yes",
                   "amqp-message-id": "id-1", "app-id": "ap", "user-id": "guest"})
    client.close()
    method, props, body = channel.basic_get("from-stomp", auto_ack=True)
    assert method is not None
    assert body == b"hi from stomp"
    # as RabbitMQ 3.10.8 maps them (checked on the reference); the receipt header is kept too
    headers = props.headers
    assert headers.pop("receipt").startswith("r-")
    assert headers == {"x-custom": "yes", "content-length": "13"}
    assert (props.content_type, props.content_encoding, props.delivery_mode, props.priority,
            props.expiration) == ("application/json", "gz", 2, 3, "5000")
    assert (props.correlation_id, props.reply_to, props.message_id) == ("c", "/queue/back",
                                                                        "id-1")
    assert (props.app_id, props.user_id, props.timestamp, props.type) == ("ap", "guest", 17, "t")
    amqp.close()
