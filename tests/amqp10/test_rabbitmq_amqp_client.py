"""RabbitMQ's own AMQP 1.0 client (``rabbitmq-amqp-python-client``, as PyPI ships it) against
``Broker(as_rabbitmq="4.1.x")``: the flows of its examples (getting started, publishers,
consumers and their outcomes, dead-lettering, RPC with direct reply-to) and its management
calls, written again here. It refuses any server that does not say RabbitMQ 4; it declares and
binds through the management node (``/management``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from embroker import Broker
from embroker.server import Server

client = pytest.importorskip("rabbitmq_amqp_python_client")
from rabbitmq_amqp_python_client import (  # noqa: E402
    AddressHelper,
    ClassicQueueSpecification,
    ConsumerOptions,
    ConsumerSettleStrategy,
    Converter,
    Environment,
    ExchangeSpecification,
    ExchangeToExchangeBindingSpecification,
    ExchangeToQueueBindingSpecification,
    ExchangeType,
    Message,
    OutcomeState,
    QuorumQueueSpecification,
)
from rabbitmq_amqp_python_client.exceptions import (  # noqa: E402
    AmqpMessageRejectedException,
    ValidationCodeException,
)
from rabbitmq_amqp_python_client.qpid.proton._exceptions import (  # noqa: E402
    ConnectionException,
)
from rabbitmq_amqp_python_client.qpid.proton.utils import SendException  # noqa: E402

from .rabbitmq_client import Collect, Done, consume  # noqa: E402


@pytest.fixture
def broker() -> Iterator[Broker]:
    broker = Broker(as_rabbitmq="4.1.x")
    yield broker
    broker._check()


def test_getting_started(broker: Broker, connection: Any) -> None:
    """The client's getting-started example: an exchange, a quorum queue, a binding, 100
    messages published through the exchange address, purged count, consumed, then unbound and
    deleted through the management node."""
    management = connection.management()
    management.declare_exchange(ExchangeSpecification(name="test-exchange"))
    management.declare_queue(QuorumQueueSpecification(name="example-queue"))
    bind_path = management.bind(ExchangeToQueueBindingSpecification(
        source_exchange="test-exchange", destination_queue="example-queue",
        binding_key="routing-key"))
    assert bind_path == ("/bindings/src=test-exchange;dstq=example-queue;key=routing-key;"
                         "args=")
    publisher = connection.publisher(AddressHelper.exchange_address("test-exchange",
                                                                    "routing-key"))
    assert management.purge_queue("example-queue") == 0
    for i in range(100):
        status = publisher.publish(Message(body=Converter.string_to_bytes(f"test message {i}")))
        assert status.remote_state == OutcomeState.ACCEPTED
    publisher.close()
    assert broker.queues["example-queue"].quorum
    got = consume(connection, AddressHelper.queue_address("example-queue"), 100)
    assert got.bodies == [f"test message {i}" for i in range(100)]
    management.unbind(bind_path)
    management.delete_queue("example-queue")
    management.delete_exchange("test-exchange")
    management.close()
    assert "example-queue" not in broker.queues
    assert "test-exchange" not in broker.vhosts["/"].exchanges


def test_publish_outcomes(broker: Broker, connection: Any) -> None:
    """Accepted when routed, released when no queue took the message, rejected by a full
    queue with reject-publish (the client's publisher examples)."""
    management = connection.management()
    management.declare_exchange(ExchangeSpecification(name="nowhere",
                                                      exchange_type=ExchangeType.fanout))
    management.declare_queue(ClassicQueueSpecification(name="full", max_len=0,
                                                       overflow_behaviour="reject-publish"))
    # The client's publish raises proton's SendException for these two outcomes.
    with pytest.raises(SendException) as released:
        connection.publisher("/exchanges/nowhere").publish(
            Message(body=Converter.string_to_bytes("lost")))
    assert released.value.state == OutcomeState.RELEASED
    with pytest.raises(AmqpMessageRejectedException, match="it is full"):
        connection.publisher("/queues/full").publish(
            Message(body=Converter.string_to_bytes("too many")))
    management.close()


def test_consumer_outcomes_and_dead_lettering(broker: Broker, connection: Any) -> None:
    """accept, discard (rejected: dead-lettered), requeue (released: back, redelivered)."""
    management = connection.management()
    management.declare_exchange(ExchangeSpecification(name="exchange-dead-letter",
                                                      exchange_type=ExchangeType.fanout))
    management.declare_queue(QuorumQueueSpecification(name="queue-dead-letter"))
    management.bind(ExchangeToQueueBindingSpecification(
        source_exchange="exchange-dead-letter", destination_queue="queue-dead-letter",
        binding_key=""))
    management.declare_queue(QuorumQueueSpecification(
        name="work", dead_letter_exchange="exchange-dead-letter"))
    publisher = connection.publisher("/queues/work")
    for i in range(3):
        publisher.publish(Message(body=Converter.string_to_bytes(f"m{i}")))
    publisher.close()
    assert consume(connection, "/queues/work", 1, "requeue").bodies == ["m0"]
    again = consume(connection, "/queues/work", 3, "discard")
    assert sorted(again.bodies) == ["m0", "m1", "m2"]
    dead = consume(connection, "/queues/queue-dead-letter", 3)
    assert sorted(dead.bodies) == ["m0", "m1", "m2"]
    assert broker.queues["work"].message_count == 0
    management.close()


def test_management_calls(broker: Broker, connection: Any) -> None:
    """queue_info, a classic queue with arguments, exchange-to-exchange bindings, purge."""
    management = connection.management()
    spec = ClassicQueueSpecification(name="classic", max_len=5, message_ttl=None,
                                     dead_letter_exchange="dlx")
    management.declare_queue(spec)
    info = management.queue_info("classic")
    assert (info.name, info.message_count, info.consumer_count, info.is_durable) == (
        "classic", 0, 0, True)
    assert broker.queues["classic"].arguments["x-max-length"] == 5
    management.declare_exchange(ExchangeSpecification(name="upstream",
                                                      exchange_type=ExchangeType.topic))
    management.declare_exchange(ExchangeSpecification(name="downstream"))
    path = management.bind(ExchangeToExchangeBindingSpecification(
        source_exchange="upstream", destination_exchange="downstream", binding_key="a.b"))
    assert [b.destination.name for b in
            broker.vhosts["/"].exchanges["upstream"].bindings.values()] == ["downstream"]
    # The client names an exchange-to-exchange binding with 'dstq=' (its address helper's
    # bug): RabbitMQ 4 reads that as a queue, finds no such binding and answers 204 without
    # unbinding anything (rabbit_amqp_management:handle_http_req DELETE /bindings/:segment).
    assert ";dstq=downstream;" in path
    management.unbind(path)
    assert [b.destination.name for b in
            broker.vhosts["/"].exchanges["upstream"].bindings.values()] == ["downstream"]
    management.close()


def test_rpc_with_direct_reply_to(server: Server) -> None:
    """The client's RPC example: a DirectReplyTo consumer (a dynamic receiver with the
    capability rabbitmq:volatile-queue, RabbitMQ 4.2) whose address goes in reply_to; the
    server answers through an anonymous publisher."""
    broker = Broker(as_rabbitmq="4.2.x")
    with broker.serve() as rpc_server:
        environment = Environment(rpc_server.amqp10_url + "/")
        connection = environment.connection()
        connection.dial()
        try:
            connection.management().declare_queue(ClassicQueueSpecification(name="rpc_queue"))
            replies = Collect(3, how=None)
            consumer = connection.consumer(message_handler=replies, consumer_options=ConsumerOptions(
                settle_strategy=ConsumerSettleStrategy.DirectReplyTo))
            reply_address = consumer.address
            assert reply_address is not None
            assert reply_address.startswith("/queues/amq.rabbitmq.reply-to.")
            requests = connection.publisher("/queues/rpc_queue")
            answers = connection.publisher()
            worker = broker.connect().channel()
            for i in range(3):
                request = Message(body=Converter.string_to_bytes(f"hello {i}"))
                request.reply_to = reply_address
                request.correlation_id = str(i)
                assert requests.publish(request).remote_state == OutcomeState.ACCEPTED
                got = worker.basic_get("rpc_queue", auto_ack=True)
                assert got is not None
                answer = Message(body=got.body.upper())
                answer.correlation_id = got.properties["correlation_id"]
                try:  # the replies reach the handler while the client waits for this one
                    status = answers.publish(AddressHelper.message_to_address_helper(
                        answer, got.properties["reply_to"]))
                    assert status.remote_state == OutcomeState.ACCEPTED
                except Done:
                    pass
            if len(replies.bodies) < 3:
                with contextlib.suppress(Done):
                    consumer.run()
            assert replies.bodies == ["HELLO 0", "HELLO 1", "HELLO 2"]
            assert [m.correlation_id for m in replies.messages] == ["0", "1", "2"]
        finally:
            environment.close()
    assert rpc_server.errors == []


@pytest.mark.parametrize("as_rabbitmq", [None, "3.10.8"])
def test_the_client_refuses_a_broker_that_is_not_rabbitmq_4(as_rabbitmq: str | None) -> None:
    broker = Broker(as_rabbitmq=as_rabbitmq)
    with broker.serve() as server:
        environment = Environment(server.amqp10_url + "/")
        with pytest.raises(ValidationCodeException):
            environment.connection().dial()
        environment.close()


@pytest.mark.parametrize(("vhost", "why"),
                         [("no-such-vhost", "missing"), ("locked", "no access")])
def test_a_vhost_refused_at_open_fails_the_dial_instead_of_recovering(server: Server,
                                                                      broker: Broker,
                                                                      vhost: str,
                                                                      why: str) -> None:
    """The client's test_connection_vhost_not_exists: RabbitMQ 4 answers such an open with no
    frame at all (rabbit_amqp_reader v4.1.4: check_vhost_exists / check_vhost_access raise
    before the open is sent, and handle_exception closes a connection that is not running yet
    without a close frame), so ``dial`` raises. A close after an open would instead send the
    client into its recovery loop, reconnecting to the same refusal."""
    broker.add_vhost("locked")
    broker.clear_permissions("guest", vhost="locked")
    environment = Environment(server.amqp10_url + "/" + vhost)
    with pytest.raises(ConnectionException):
        environment.connection().dial()
    # (no environment.close(): the client cannot close a connection whose dial failed, as its
    # own test does not)
    assert broker.connections == {}, why


@pytest.mark.parametrize(("as_rabbitmq", "attaches"), [("4.2.x", True), ("4.1.x", False)])
def test_a_sender_attaches_to_a_live_reply_address_from_rabbitmq_4_2(as_rabbitmq: str,
                                                                     attaches: bool) -> None:
    """The client's test_direct_reply_to_send_and_receive: a publisher on
    ``/queues/amq.rabbitmq.reply-to.*``. RabbitMQ 4.2 checks a target queue with
    ``rabbit_amqqueue:exists/1``, which for a volatile queue asks its requester
    (``rabbit_volatile_queue:exists/1`` v4.2.9): the link attaches while the requester
    consumes and is refused (amqp:not-found) once it has gone. Before 4.2 (a 4.1 profile
    here) no reply address is a queue."""
    broker = Broker(as_rabbitmq=as_rabbitmq)
    with broker.serve() as server:
        environment = Environment(server.amqp10_url + "/")
        requester, replier = environment.connection(), environment.connection()
        requester.dial()
        replier.dial()
        try:
            if not attaches:  # (the client itself refuses DirectReplyTo before 4.2, so
                # the address comes from a 0-9-1 requester that is still consuming)
                channel = broker.connect().channel()
                channel.basic_consume("amq.rabbitmq.reply-to", lambda *_: None, auto_ack=True)
                channel.queue_declare("requests")
                channel.basic_publish("", "requests", b"?",
                                      properties={"reply_to": "amq.rabbitmq.reply-to"})
                request = channel.basic_get("requests", auto_ack=True)
                assert request is not None
                address = "/queues/" + request.properties["reply_to"]
                with pytest.raises(Exception, match="amqp:not-found"):
                    replier.publisher(address)
                return
            replies = Collect(3, how=None)  # (pre-settled)
            consumer = requester.consumer(message_handler=replies, credit=10,
                                          consumer_options=ConsumerOptions(
                                              settle_strategy=ConsumerSettleStrategy.DirectReplyTo))
            address = consumer.address
            assert address is not None
            assert address.startswith("/queues/amq.rabbitmq.reply-to.")
            publisher = replier.publisher(address)
            for i in range(3):
                status = publisher.publish(Message(body=Converter.string_to_bytes(f"r{i}")))
                assert status.remote_state == OutcomeState.ACCEPTED
            with contextlib.suppress(Done):
                consumer.run()
            assert replies.bodies == ["r0", "r1", "r2"]
            publisher.close()
            consumer.close()
            with pytest.raises(Exception, match="amqp:not-found"):
                replier.publisher(address)
        finally:
            environment.close()
