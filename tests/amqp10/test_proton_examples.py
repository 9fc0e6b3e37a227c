"""The flows of proton's own Python examples (python/examples in qpid-proton: helloworld,
simple_send/simple_recv, client/server, tx_send/tx_recv, colour_send/selected_recv), written
again here against embroker. They all name the node ``examples``: a RabbitMQ 3.x v1 address
(a bare queue name), which the 3.x plugin declares when a link attaches; with the reference
configured, the same flows run against RabbitMQ 3.10's plugin too where it supports them
(it has no dynamic receivers and no transactions: client/server and tx_send/tx_recv are
embroker's alone).
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from typing import Any, NamedTuple

import pika
import pytest

from embroker import Broker

proton = pytest.importorskip("proton")
from proton import Message  # noqa: E402
from proton.handlers import MessagingHandler, TransactionHandler  # noqa: E402
from proton.reactor import Container, Selector  # noqa: E402

from .test_differential import reference_problem  # noqa: E402


class Where(NamedTuple):
    broker: str
    url10: str
    url091: str


@pytest.fixture(params=["embroker", "RabbitMQ"])
def where(request: pytest.FixtureRequest) -> Iterator[Where]:
    """embroker, or the reference (skipped when none is configured, failed when it does not
    answer)."""
    if request.param == "embroker":
        broker = Broker()
        with broker.serve() as server:
            yield Where("embroker", server.amqp10_url, server.url)
            assert server.errors == []
        return
    url = os.environ.get("EMBROKER_REFERENCE_URL")
    if not url:
        pytest.skip("EMBROKER_REFERENCE_URL is not set")
    if problem := reference_problem(url):
        pytest.fail(problem, pytrace=False)
    yield Where("RabbitMQ", url.rstrip("/"), url)


@pytest.fixture
def node(where: Where) -> Iterator[str]:
    """The examples' node: ``examples`` in the examples; here unique per test, deleted after."""
    name = f"examples-{uuid.uuid4().hex[:8]}"
    yield name
    conn = pika.BlockingConnection(pika.URLParameters(where.url091))
    conn.channel().queue_delete(name)
    conn.close()


def run(handler: Any) -> None:
    container = Container(handler)
    container.container_id = f"examples-{uuid.uuid4().hex[:6]}"
    container.run()


class _Timed(MessagingHandler):
    """A handler that gives up after 10 s (a broker that never answers fails the test)."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.url = url
        self.timed_out = False

    def on_start(self, event: Any) -> None:
        self.timer = event.container.schedule(10, self)
        self.conn = event.container.connect(self.url, allowed_mechs="PLAIN")
        self.start(event)

    def start(self, event: Any) -> None:
        raise NotImplementedError

    def on_timer_task(self, event: Any) -> None:
        self.timed_out = True
        self.conn.close()

    def finish(self) -> None:
        self.timer.cancel()
        self.conn.close()


def test_helloworld(where: Where, node: str) -> None:
    """A receiver, then a sender, on one connection to the bare address: the first attach
    declares the queue, and the one message comes back."""
    got = []

    class HelloWorld(_Timed):
        def start(self, event: Any) -> None:
            event.container.create_receiver(self.conn, node)
            event.container.create_sender(self.conn, node)

        def on_sendable(self, event: Any) -> None:
            event.sender.send(Message(body="Hello World!"))
            event.sender.close()

        def on_message(self, event: Any) -> None:
            got.append(event.message.body)
            self.finish()

    handler = HelloWorld(where.url10)
    run(handler)
    assert (got, handler.timed_out) == (["Hello World!"], False)


def test_simple_send_then_simple_recv(where: Where, node: str) -> None:
    """100 messages sent and confirmed, then received in order by a receiver of their own."""
    class Send(_Timed):
        confirmed = 0

        def start(self, event: Any) -> None:
            self.sent = 0
            event.container.create_sender(self.conn, node)

        def on_sendable(self, event: Any) -> None:
            while event.sender.credit and self.sent < 100:
                self.sent += 1
                event.sender.send(Message(id=self.sent, body={"sequence": self.sent}))

        def on_accepted(self, event: Any) -> None:
            self.confirmed += 1
            if self.confirmed == 100:
                self.finish()

    got: list[Any] = []

    class Recv(_Timed):
        def start(self, event: Any) -> None:
            event.container.create_receiver(self.conn, node)

        def on_message(self, event: Any) -> None:
            got.append(event.message.body)
            if len(got) == 100:
                self.finish()

    sender = Send(where.url10)
    run(sender)
    assert (sender.confirmed, sender.timed_out) == (100, False)
    run(Recv(where.url10))
    assert got == [{"sequence": i} for i in range(1, 101)]


def test_tx_send_then_tx_recv(where: Where, node: str) -> None:
    """100 messages sent in transactions of 10, each batch committed; then received and
    accepted in transactions of 10."""
    if where.broker == "RabbitMQ":
        pytest.skip("RabbitMQ 3.10's plugin has no transactions ('Transactions not "
                    "supported', rabbit_amqp1_0_session:validate_attach/1)")
    class TxSend(_Timed, TransactionHandler):
        committed = 0

        def start(self, event: Any) -> None:
            self.container, self.batch = event.container, 0
            self.transaction: Any = None
            self.sender = event.container.create_sender(self.conn, node)
            event.container.declare_transaction(self.conn, handler=self)

        def on_transaction_declared(self, event: Any) -> None:
            self.transaction = event.transaction
            self.send()

        def on_sendable(self, event: Any) -> None:
            self.send()

        def send(self) -> None:
            while self.transaction and self.sender.credit and \
                    self.committed + self.batch < 100:
                seq = self.committed + self.batch + 1
                self.transaction.send(self.sender, Message(id=seq, body={"sequence": seq}))
                self.batch += 1
                if self.batch == 10:
                    self.transaction.commit()
                    self.transaction = None

        def on_transaction_committed(self, event: Any) -> None:
            self.committed += self.batch
            self.batch = 0
            if self.committed == 100:
                self.finish()
            else:
                self.container.declare_transaction(self.conn, handler=self)

    got: list[Any] = []

    class TxRecv(_Timed, TransactionHandler):
        def __init__(self, url: str) -> None:
            super().__init__(url, prefetch=0, auto_accept=False)

        def start(self, event: Any) -> None:
            self.container, self.current = event.container, 0
            self.receiver = event.container.create_receiver(self.conn, node)
            event.container.declare_transaction(self.conn, handler=self)
            self.transaction: Any = None

        def on_transaction_declared(self, event: Any) -> None:
            self.receiver.flow(10)
            self.transaction = event.transaction

        def on_message(self, event: Any) -> None:
            got.append(event.message.body)
            self.transaction.accept(event.delivery)
            self.current += 1
            if self.current == 10:
                self.transaction.commit()
                self.transaction = None

        def on_transaction_committed(self, event: Any) -> None:
            self.current = 0
            if len(got) == 100:
                self.finish()
            else:
                self.container.declare_transaction(self.conn, handler=self)

    sender = TxSend(where.url10)
    run(sender)
    assert (sender.committed, sender.timed_out) == (100, False)
    run(TxRecv(where.url10))
    assert got == [{"sequence": i} for i in range(1, 101)]
    conn = pika.BlockingConnection(pika.URLParameters(where.url091))
    assert conn.channel().queue_declare(node, passive=True).method.message_count == 0
    conn.close()


def test_client_and_server(where: Where, node: str) -> None:
    """The server consumes requests from the bare address and answers each to its reply-to
    through an anonymous sender; the client's replies come to a dynamic receiver."""
    if where.broker == "RabbitMQ":
        pytest.skip("RabbitMQ 3.10's plugin has no dynamic receivers "
                    "('Dynamic sources not supported')")
    requests = ["Twas brillig, and the slithy toves", "Did gire and gymble in the wabe."]

    class Server(_Timed):
        def start(self, event: Any) -> None:
            self.answered = 0
            event.container.create_receiver(self.conn, node)
            self.replies = event.container.create_sender(self.conn, None)

        def on_message(self, event: Any) -> None:
            self.replies.send(Message(address=event.message.reply_to,
                                      body=event.message.body.upper(),
                                      correlation_id=event.message.correlation_id))
            self.answered += 1
            if self.answered == len(requests):
                self.finish()

    answers = []

    class Client(_Timed):
        def start(self, event: Any) -> None:
            self.sender = event.container.create_sender(self.conn, node)
            self.receiver = event.container.create_receiver(self.conn, None, dynamic=True)
            self.pending = list(requests)

        def next_request(self) -> None:
            self.sender.send(Message(reply_to=self.receiver.remote_source.address,
                                     body=self.pending[0]))

        def on_link_opened(self, event: Any) -> None:
            if event.receiver == self.receiver:
                self.next_request()

        def on_message(self, event: Any) -> None:
            answers.append(f"{self.pending.pop(0)} => {event.message.body}")
            if self.pending:
                self.next_request()
            else:
                self.finish()

    server = Server(where.url10)
    serving = threading.Thread(target=run, args=(server,))  # the example's other process
    serving.start()
    client = Client(where.url10)
    run(client)
    serving.join(15)
    assert answers == [f"{r} => {r.upper()}" for r in requests]
    assert not client.timed_out
    assert not server.timed_out


def test_selected_recv_is_refused_on_a_consuming_link(where: Where,
                                                      node: str) -> None:
    """colour_send then selected_recv: a JMS selector on a link that consumes. embroker cannot
    apply it there and says so (amqp:not-implemented, naming the filter) rather than deliver
    every colour as RabbitMQ does; every message stays in the queue."""
    if where.broker == "RabbitMQ":
        pytest.skip("RabbitMQ ignores the selector: the difference this test pins")

    class ColourSend(_Timed):
        def start(self, event: Any) -> None:
            self.sent = self.confirmed = 0
            event.container.create_sender(self.conn, node)

        def on_sendable(self, event: Any) -> None:
            while event.sender.credit and self.sent < 10:
                self.sent += 1
                colour = "green" if self.sent % 2 else "red"
                event.sender.send(Message(body=f"{colour} {self.sent}",
                                          properties={"colour": colour}))

        def on_accepted(self, event: Any) -> None:
            self.confirmed += 1
            if self.confirmed == 10:
                self.finish()

    errors = []

    class SelectedRecv(_Timed):
        def start(self, event: Any) -> None:
            event.container.create_receiver(self.conn, node,
                                            options=Selector("colour = 'green'"))

        def on_message(self, event: Any) -> None:
            errors.append(("message", event.message.body))

        def on_link_error(self, event: Any) -> None:
            condition = event.link.remote_condition
            errors.append((condition.name, condition.description))
            self.finish()

    run(ColourSend(where.url10))
    run(SelectedRecv(where.url10))
    assert errors == [("amqp:not-implemented",
                       "filter 'selector' (apache.org:selector-filter:string) is applied on "
                       "browsing links (distribution-mode copy) only, not on a link that "
                       "consumes")]
    conn = pika.BlockingConnection(pika.URLParameters(where.url091))
    assert conn.channel().queue_declare(node, passive=True).method.message_count == 10
    conn.close()
