"""RabbitMQ 4's management node over AMQP 1.0, requests and answers as
``rabbit_amqp_management`` (RabbitMQ v4.1.4, deps/rabbit/src/rabbit_amqp_management.erl) and the
link pair as ``rabbit_amqp_session`` (handle_attach for ``?MANAGEMENT_NODE_ADDRESS``) give them.
There is no RabbitMQ 4 here: each test names the clause it pins. Requests are sent with plain
proton, so every byte of a request is the test's; RabbitMQ's own client drives the node in
test_rabbitmq_amqp_client.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from embroker import Broker
from embroker.server import Server

proton = pytest.importorskip("proton")
from proton import Message, PropertyDict, symbol  # noqa: E402
from proton.reactor import LinkOption  # noqa: E402
from proton.utils import BlockingConnection, LinkDetached  # noqa: E402

Request = Callable[..., tuple[int, Any]]


class _Paired(LinkOption):
    """The link options RabbitMQ's AMQP 1.0 clients give both halves of the pair."""

    def __init__(self, *, paired: bool = True) -> None:
        self.paired = paired

    def apply(self, link: Any) -> None:
        link.snd_settle_mode = proton.Link.SND_SETTLED
        link.rcv_settle_mode = proton.Link.RCV_FIRST
        if self.paired:
            link.properties = PropertyDict({symbol("paired"): True})


@pytest.fixture
def broker() -> Iterator[Broker]:
    broker = Broker(as_rabbitmq="4.1.x")
    yield broker
    broker._check()


def open_node(c: BlockingConnection, name: str = "management") -> Request:
    sender = c.create_sender("/management", name=name, options=_Paired())
    receiver = c.create_receiver("/management", name=name, options=_Paired(), credit=1)

    def request(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        message_id = str(uuid.uuid4())
        sender.send(Message(id=message_id, address=path, subject=method, reply_to="$me",
                            body=body, inferred=False))
        answer = receiver.receive(timeout=5)  # settled: nothing to accept
        assert answer.correlation_id == message_id
        assert answer.properties == {"http:response": "1.1"}
        return int(answer.subject or "0"), answer.body

    return request


@pytest.fixture
def node(server: Server, proton_connect) -> Request:
    return open_node(proton_connect())


def test_a_link_pair_needs_the_paired_property(server: Server, proton_connect) -> None:
    """rabbit_amqp_session:check_paired/1: "Link property 'paired' is not set to boolean value
    'true'"."""
    c = proton_connect()
    with pytest.raises(LinkDetached, match="Link property 'paired' is not set to boolean "
                                           "value 'true'"):
        c.create_sender("/management", name="unpaired", options=_Paired(paired=False))


def test_put_queue_answers_201_then_200_and_409_when_not_equivalent(broker: Broker,
                                                                   node: Request) -> None:
    """handle_http_req PUT /queues/:queue: 201 for a new queue, 200 for an equivalent one,
    409 with the equivalence error otherwise; durable by default (decode_queue/1), and the
    node's default queue type stored in its arguments (augment_declare_args/5, line 118)."""
    status, queue = node("PUT", "/queues/orders", {})
    assert status == 201
    assert queue == {"leader": "rabbit@embroker", "replicas": ["rabbit@embroker"],
                     "message_count": 0, "consumer_count": 0, "name": "orders", "vhost": "/",
                     "durable": True, "auto_delete": False, "exclusive": False,
                     "type": "classic", "arguments": {"x-queue-type": "classic"}}
    assert isinstance(queue["message_count"], proton.ulong)  # encode_queue/3's types
    assert isinstance(queue["consumer_count"], proton.uint)
    assert broker.queues["orders"].durable
    assert node("PUT", "/queues/orders", {"durable": True})[0] == 200
    status, text = node("PUT", "/queues/orders", {"durable": False})
    assert (status, text) == (409, "inequivalent arg 'durable' for queue 'orders' in vhost "
                                   "'/': received 'false' but current is 'true'")


def test_put_queue_arguments_travel_as_amqp_values(broker: Broker, node: Request) -> None:
    status, queue = node("PUT", "/queues/qq", {"durable": True, "arguments": {
        "x-queue-type": "quorum", "x-max-length": 10}})  # (a Python int travels as long)
    assert status == 201
    assert queue["type"] == "quorum"
    assert queue["arguments"] == {"x-queue-type": "quorum", "x-max-length": 10}
    assert broker.queues["qq"].quorum


def test_put_queue_refusals(node: Request) -> None:
    """decode_queue/1 ("bad queue property ~tp"), the empty name, prohibit_cr_lf/1,
    prohibit_reserved_amq/1 (403), and an argument the queue refuses (409: a precondition)."""
    assert node("PUT", "/queues/q", {"colour": "red"}) == (
        400, 'bad queue property {{utf8,<<"colour">>},{utf8,<<"red">>}}')
    assert node("PUT", "/queues/", {}) == (400, "declare queue with empty name not allowed")
    assert node("PUT", "/queues/a%0Ab", {}) == (
        400, "Bad name 'a\nb': line feed and carriage return characters not allowed")
    assert node("PUT", "/queues/amq.mine", {}) == (
        403, "queue 'amq.mine' in vhost '/' starts with reserved prefix 'amq.'")
    status, text = node("PUT", "/queues/q", {"arguments": {"x-max-length": "ten"}})
    assert status == 409
    assert "x-max-length" in text


def test_get_queue_shows_counts_and_404_for_a_missing_one(broker: Broker,
                                                         node: Request) -> None:
    """handle_http_req GET /queues/:queue: 200 with encode_queue/3, 404 "~ts not found"."""
    ch = broker.connect().channel()
    ch.queue_declare("jobs")
    ch.basic_publish("", "jobs", b"1")
    ch.basic_publish("", "jobs", b"2")
    status, queue = node("GET", "/queues/jobs")
    assert (status, queue["message_count"], queue["durable"]) == (200, 2, False)
    assert node("GET", "/queues/missing") == (404, "queue 'missing' in vhost '/' not found")


def test_purge_and_delete_answer_the_message_count(broker: Broker, node: Request) -> None:
    """DELETE /queues/:queue/messages and DELETE /queues/:queue:
    purge_or_delete_queue_response/1 ({"message_count": ulong})."""
    ch = broker.connect().channel()
    ch.queue_declare("jobs")
    for body in (b"1", b"2", b"3"):
        ch.basic_publish("", "jobs", body)
    assert node("DELETE", "/queues/jobs/messages") == (200, {"message_count": 3})
    ch.basic_publish("", "jobs", b"4")
    assert node("DELETE", "/queues/jobs") == (200, {"message_count": 1})
    assert "jobs" not in broker.queues
    assert node("DELETE", "/queues/jobs") == (200, {"message_count": 0})
    assert node("DELETE", "/queues/jobs/messages") == (
        404, "no queue 'jobs' in vhost '/'")


def test_another_connections_exclusive_queue_cannot_be_purged_or_deleted(
        broker: Broker, node: Request) -> None:
    """with_exclusive_access_or_die / delete_with(..., CheckExclusive = true): the resource
    locked error, answered 400."""
    owner = broker.connect().channel()
    owner.queue_declare("mine", exclusive=True)
    status, text = node("DELETE", "/queues/mine/messages")
    assert status == 400
    assert text.startswith("cannot obtain exclusive access to locked queue 'mine'")
    assert node("DELETE", "/queues/mine")[0] == 400
    assert "mine" in broker.queues


def test_exchanges_put_204_409_and_the_names_refused(broker: Broker, node: Request) -> None:
    """handle_http_req PUT and DELETE /exchanges/:exchange: 204; an existing one is checked
    for equivalence (409); check_type/1 (400), prohibit_default_exchange/1 and
    prohibit_reserved_amq/1 (403); a pre-declared amq.* exchange that is equivalent is fine."""
    assert node("PUT", "/exchanges/events", {"type": "topic"}) == (204, None)
    assert broker.connect().channel().exchange_declare("events", "topic", durable=True) is None
    assert node("PUT", "/exchanges/events", {"type": "topic", "durable": True}) == (204, None)
    status, text = node("PUT", "/exchanges/events", {"type": "fanout"})
    assert (status, text) == (409, "inequivalent arg 'type' for exchange 'events' in vhost "
                                   "'/': received 'fanout' but current is 'topic'")
    assert node("PUT", "/exchanges/x", {"type": "nope"}) == (
        400, "unknown exchange type 'nope'")
    assert node("PUT", "/exchanges/amq.mine", {}) == (
        403, "exchange 'amq.mine' in vhost '/' starts with reserved prefix 'amq.'")
    assert node("PUT", "/exchanges/amq.direct", {"type": "direct"}) == (204, None)
    assert node("DELETE", "/exchanges/amq.direct") == (
        403, "exchange 'amq.direct' in vhost '/' starts with reserved prefix 'amq.'")
    assert node("DELETE", "/exchanges/events") == (204, None)
    assert node("DELETE", "/exchanges/events") == (204, None)  # ensure_deleted: no 404
    assert "events" not in broker.vhosts["/"].exchanges


def test_bindings_are_posted_listed_with_their_location_and_deleted(broker: Broker,
                                                                   node: Request) -> None:
    """POST /bindings (204), GET /bindings?src=...&dstq=...&key=... (encode_bindings/1 with
    compose_binding_uri/5's location) and DELETE /bindings/:segment (204)."""
    broker.connect().channel().queue_declare("q")
    binding = {"source": "amq.topic", "destination_queue": "q", "binding_key": "a.*",
               "arguments": {}}
    assert node("POST", "/bindings", binding) == (204, None)
    status, listed = node("GET", "/bindings?src=amq.topic&dstq=q&key=a.%2A")
    location = "/bindings/src=amq.topic;dstq=q;key=a.%2A;args="
    assert (status, listed) == (200, [{**binding, "location": location}])
    assert node("DELETE", location) == (204, None)
    assert node("GET", "/bindings?src=amq.topic&dstq=q&key=a.%2A") == (200, [])
    assert node("DELETE", location) == (204, None)  # nothing to unbind: still 204


def test_a_binding_with_arguments_is_named_by_the_hash_of_its_table(broker: Broker,
                                                                   node: Request) -> None:
    """args_hash/1: erlang:phash2 of the sorted {Key, Type, Value} table, 4 bytes, URL-safe
    base64 without padding. The hashes were computed with erl (OTP 25):
    erlang:phash2([{<<"a">>,longstr,<<"b">>},{<<"x-match">>,longstr,<<"all">>}], 1 bsl 32) is
    529825979 (H5SAuw); with {<<"f">>,bool,true},{<<"n">>,long,5}: 2543815733 (l5-MNQ)."""
    broker.connect().channel().queue_declare("q")
    for arguments, hashed in (({"x-match": "all", "a": "b"}, "H5SAuw"),
                              ({"n": 5, "f": True}, "l5-MNQ")):  # 5 travels as an AMQP long
        binding = {"source": "amq.headers", "destination_queue": "q", "binding_key": "",
                   "arguments": arguments}
        assert node("POST", "/bindings", binding) == (204, None)
        status, listed = node("GET", "/bindings?src=amq.headers&dstq=q&key=")
        location = f"/bindings/src=amq.headers;dstq=q;key=;args={hashed}"
        assert status == 200
        assert [b["location"] for b in listed] == [location]
        assert node("DELETE", location) == (204, None)
        assert broker.vhosts["/"].exchanges["amq.headers"].bindings == {}


def test_binding_refusals(broker: Broker, node: Request) -> None:
    """decode_binding/1 ("bad binding field ~tp"), binding_checks/5 (the default exchange:
    403), binding_action/4 (the bind's own refusal: 400), decode_binding_path_segment/1."""
    assert node("POST", "/bindings", {"source": "amq.topic", "queue": "q"}) == (
        400, 'bad binding field {{utf8,<<"queue">>},{utf8,<<"q">>}}')
    assert node("POST", "/bindings", {"source": "", "destination_queue": "q",
                                      "binding_key": "", "arguments": {}}) == (
        403, "operation not permitted on the default exchange")
    assert node("POST", "/bindings", {"source": "amq.topic", "destination_queue": "missing",
                                      "binding_key": "", "arguments": {}}) == (
        400, "no queue 'missing' in vhost '/'")
    assert node("DELETE", "/bindings/not-a-binding") == (
        400, "bad binding path segment 'not-a-binding'")


def test_a_request_without_permission_ends_the_session(broker: Broker, server: Server,
                                                      proton_connect) -> None:
    """check_resource_access/4 throws a protocol error the management code does not catch: the
    session ends with amqp:unauthorized-access (rabbit_amqp_session:protocol_error/3)."""
    broker.add_user("reader", "pw")
    broker.set_permissions("reader", "", "", ".*")
    address = server.amqp10_url.split("@", 1)[1]
    c = proton_connect(f"amqp://{address}", user="reader", password="pw",
                       allowed_mechs="PLAIN")
    sender = c.create_sender("/management", name="m", options=_Paired())
    receiver = c.create_receiver("/management", name="m", options=_Paired(), credit=1)
    sender.send(Message(id="1", address="/queues/mine", subject="PUT", reply_to="$me", body={}))
    with pytest.raises(proton.Timeout):  # no answer: proton's blocking API waits
        receiver.receive(timeout=1)
    ended = sender.link.session.remote_condition
    assert (ended.name, ended.description) == (
        "amqp:unauthorized-access", "access to queue 'mine' in vhost '/' refused for user "
                                    "'reader'")
    assert "mine" not in broker.queues


def test_a_request_rabbitmq_has_no_clause_for_is_answered_400(node: Request) -> None:
    """RabbitMQ 4's handle_http_req has no clause for other paths and methods (its session
    crashes); embroker answers 400 saying what it takes (docs/conformance.md)."""
    status, text = node("PATCH", "/queues/q", {})
    assert status == 400
    assert text.startswith("unsupported request: PATCH /queues/q")


def test_the_management_node_is_rabbitmq_4s(proton_connect) -> None:
    """A RabbitMQ 3 profile has no /management node: RabbitMQ 3.10's plugin refuses the
    address as an unknown v1 destination."""
    broker = Broker()
    with broker.serve() as server:
        c = BlockingConnection(server.amqp10_url, timeout=5, allowed_mechs="PLAIN")
        try:
            with pytest.raises(LinkDetached, match='unknown_destination,"/management"'):
                c.create_sender("/management", name="m", options=_Paired())
        finally:
            c.close()
