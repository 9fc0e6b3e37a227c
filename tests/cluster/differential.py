"""One cluster scenario, two clusters: embroker's (``Broker(nodes=3)``, its model channels) and the
reference (three RabbitMQ 3.10.8 nodes, pika on each node's port). A scenario drives a
:class:`Peer` through steps and keeps what each step came to as a line of text, node names
written ``node1``... and reply texts as the client saw them; :mod:`tests.cluster.test_differential`
compares those lines with the golden file recorded from the reference, and with the reference
again when it is asked for (``EMBROKER_REFERENCE_CLUSTER=1``).

Every operation runs on a channel of its own, as a client whose channel an error closes would
open a new one; a consumer keeps its channel and reports what came to it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

import pika
import pika.exceptions

from embroker.errors import AMQPError
from embroker.model import Broker, Cancelled, Delivered


class Peer(Protocol):
    """A cluster of three nodes a scenario drives; ``node`` is 0, 1 or 2."""

    def op(self, node: int, what: str, *args: Any, **kwargs: Any) -> str:
        """One channel operation (``queue_declare``, ``basic_get``...) on a new channel of a
        connection to ``node``: ``ok ...`` or ``CODE TEXT``."""

    def publish(self, node: int, exchange: str, key: str, body: bytes, *, persistent: bool,
                mandatory: bool = False, confirm: bool = False) -> str:
        """A publish: ``returned`` when it came back, ``ack``/``nack`` when confirmed."""

    def consume(self, node: int, queue: str, name: str, *, arguments: dict[str, Any] | None = None,
                ack: bool = False) -> str:
        """A consumer ``name`` on a channel of its own (prefetch 10, as a stream needs), with
        ``arguments`` (``x-stream-offset``...); acknowledging each delivery when ``ack``, else
        nothing."""

    def seen(self, name: str) -> list[str]:
        """What came to consumer ``name`` since last asked (``delivery BODY redelivered=B``,
        `` offset=N`` for a stream's, ``cancel``, ``closed CODE TEXT`` when its connection or
        channel was closed)."""

    def stop(self, node: int) -> None: ...

    def start(self, node: int) -> None: ...

    def q(self, name: str) -> str:
        """The queue name to use for ``name`` (unique on the reference)."""


def _said(what: str, got: tuple[Any, Any] | None) -> str:
    # A get's message (its body and redelivered flag) or a declare's counts, as a line says it.
    if got is None:
        return "empty"
    if what == "basic_get":
        return f"ok {got[0].decode()} redelivered={got[1]}"
    return f"ok {got[0]} {got[1]}"


def _amqp_error(error: AMQPError) -> str:
    return f"{error.reply_code} {error.reply_text}"


def _delivery(body: bytes, redelivered: bool, headers: dict[str, Any] | None) -> str:
    # A consumer's delivery as a line says it; a stream's with its offset.
    offset = (headers or {}).get("x-stream-offset")
    return (f"delivery {body.decode()} redelivered={redelivered}"
            + ("" if offset is None else f" offset={offset}"))


class EmbrokerCluster:
    """embroker's cluster of three nodes, driven through its model channels."""

    def __init__(self) -> None:
        self.broker = Broker(nodes=3)
        self._seen: dict[str, list[str]] = {}
        self._acks: dict[str, list[int]] = {}
        self._consumers: dict[str, Any] = {}

    def names(self) -> list[str]:
        return [node.name for node in self.broker.nodes]

    def q(self, name: str) -> str:
        return name

    def _channel(self, node: int) -> Any:
        return self.broker.open_connection(node=self.broker.nodes[node]).open_channel(1)

    def op(self, node: int, what: str, *args: Any, **kwargs: Any) -> str:
        try:
            result = getattr(self._channel(node), what)(*args, **kwargs)
        except AMQPError as error:
            return _amqp_error(error)
        if what == "basic_get":
            return _said(what, None if result is None else
                         (result.message.body, result.redelivered))
        if what == "queue_declare":
            return _said(what, (result.message_count, result.consumer_count))
        return "ok"

    def publish(self, node: int, exchange: str, key: str, body: bytes, *, persistent: bool,
                mandatory: bool = False, confirm: bool = False) -> str:
        channel = self._channel(node)
        if confirm:
            channel.confirm_select()
        try:
            outcome = channel.basic_publish(exchange, key, body,
                                            {"delivery_mode": 2} if persistent else {},
                                            mandatory=mandatory)
        except AMQPError as error:
            return _amqp_error(error)
        said = ["returned"] if outcome.returned else []
        if confirm:
            said.append("ack" if outcome.accepted else "nack")
        return " ".join(said) or "ok"

    def consume(self, node: int, queue: str, name: str, *, arguments: dict[str, Any] | None = None,
                ack: bool = False) -> str:
        channel = self._channel(node)
        seen = self._seen.setdefault(name, [])
        pending = self._acks.setdefault(name, [])

        def listener(event: Any) -> None:
            if isinstance(event, Delivered):
                seen.append(_delivery(event.message.body, event.redelivered,
                                      event.message.headers))
                if ack:  # (acknowledged after the model's call, not inside it)
                    pending.append(event.delivery_tag)
            elif isinstance(event, Cancelled):
                seen.append("cancel")

        channel.listener = listener
        channel.connection.on_closed_by_broker = lambda error: seen.append(
            f"closed {_amqp_error(error)}")
        channel.basic_qos(prefetch_count=10)
        try:
            tag = channel.basic_consume(queue, arguments=arguments)
        except AMQPError as error:
            return _amqp_error(error)
        channel.start_consumer(tag)
        self._consumers[name] = channel
        self._settle()
        return "ok"

    def _settle(self) -> None:
        # The acknowledgements the consumers owe, until none is left (an ack may bring more).
        while any(self._acks.values()):
            for name, tags in self._acks.items():
                channel = self._consumers.get(name)
                while tags:
                    tag = tags.pop(0)
                    if channel is not None and channel.is_open:
                        channel.basic_ack(tag)

    def seen(self, name: str) -> list[str]:
        self._settle()
        kept = self._seen.setdefault(name, [])
        got = list(kept)
        kept.clear()
        return got

    def stop(self, node: int) -> None:
        self.broker.nodes[node].stop()

    def start(self, node: int) -> None:
        self.broker.nodes[node].start()


class ReferencePeer:
    """The reference cluster (:mod:`tests.cluster.reference_cluster`), driven with pika."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.prefix = f"diff-{uuid.uuid4().hex[:6]}-"
        self._seen: dict[str, list[str]] = {}
        self._consumers: dict[str, pika.BlockingConnection] = {}
        self._connections: list[pika.BlockingConnection] = []

    def names(self) -> list[str]:
        return [node.name for node in self.cluster.nodes]

    def q(self, name: str) -> str:
        return self.prefix + name

    def _connection(self, node: int) -> pika.BlockingConnection:
        connection = pika.BlockingConnection(pika.URLParameters(self.cluster.node(node).url))
        self._connections.append(connection)
        return connection

    def _pump(self) -> None:
        for name, connection in self._consumers.items():
            if connection.is_open:
                # (a consumer on a node that stopped: its connection was closed)
                try:
                    connection.process_data_events(time_limit=0.3)
                except pika.exceptions.ConnectionClosedByBroker as error:
                    self._seen[name].append(f"closed {error.reply_code} {error.reply_text}")
                except pika.exceptions.AMQPConnectionError:
                    pass

    def _on_channel(self, node: int, work: Callable[[Any], str]) -> str:
        # ``work`` on a new channel of a connection of its own to ``node``: what it says, or the
        # code and text the broker closed the channel or connection with.
        connection = self._connection(node)
        try:
            return work(connection.channel())
        except (pika.exceptions.ChannelClosedByBroker,
                pika.exceptions.ConnectionClosedByBroker) as error:
            return f"{error.reply_code} {error.reply_text}"
        finally:
            if connection.is_open:
                connection.close()

    def op(self, node: int, what: str, *args: Any, **kwargs: Any) -> str:
        if what == "basic_get":
            kwargs.setdefault("auto_ack", kwargs.pop("no_ack", False))
        elif what == "basic_consume":
            args = (args[0], lambda *_: None)

        def work(channel: Any) -> str:
            result = getattr(channel, what)(*args, **kwargs)
            if what == "basic_get":
                method, _properties, body = result
                return _said(what, None if method is None else (body, method.redelivered))
            if what == "queue_declare":
                return _said(what, (result.method.message_count, result.method.consumer_count))
            return "ok"

        return self._on_channel(node, work)

    def publish(self, node: int, exchange: str, key: str, body: bytes, *, persistent: bool,
                mandatory: bool = False, confirm: bool = False) -> str:
        said: list[str] = []

        def work(channel: Any) -> str:
            channel.add_on_return_callback(lambda *_: said.append("returned"))
            if confirm:
                channel.confirm_delivery()
            try:
                channel.basic_publish(exchange, key, body, pika.BasicProperties(
                    delivery_mode=2 if persistent else None), mandatory=mandatory)
                if confirm:
                    said.append("ack")
            except pika.exceptions.UnroutableError:
                said.extend(["returned", "ack"])
            except pika.exceptions.NackError:
                said.append("nack")
            channel.connection.process_data_events(time_limit=0.2)
            return " ".join(dict.fromkeys(said)) or "ok"

        return self._on_channel(node, work)

    def consume(self, node: int, queue: str, name: str, *, arguments: dict[str, Any] | None = None,
                ack: bool = False) -> str:
        connection = self._connection(node)
        seen = self._seen.setdefault(name, [])
        channel = connection.channel()
        channel.basic_qos(prefetch_count=10)
        channel.add_on_cancel_callback(lambda _frame: seen.append("cancel"))

        def deliver(channel: Any, method: Any, properties: Any, body: bytes) -> None:
            seen.append(_delivery(body, method.redelivered, properties.headers))
            if ack:
                channel.basic_ack(method.delivery_tag)

        try:
            channel.basic_consume(queue, deliver, arguments=arguments)
        except (pika.exceptions.ChannelClosedByBroker,
                pika.exceptions.ConnectionClosedByBroker) as error:
            return f"{error.reply_code} {error.reply_text}"
        self._consumers[name] = connection
        return "ok"

    def seen(self, name: str) -> list[str]:
        self._pump()
        kept = self._seen.setdefault(name, [])
        got = list(kept)
        kept.clear()
        return got

    def stop(self, node: int) -> None:
        self.cluster.stop_app(node)

    def start(self, node: int) -> None:
        self.cluster.start_app(node)
        self.cluster.wait_listening(node)

    def close(self, queues: list[str]) -> None:
        for connection in self._connections:
            if connection.is_open:
                connection.close()
        connection = self._connection(0)
        channel = connection.channel()
        for name in queues:
            channel.queue_delete(self.q(name))
        connection.close()


def run(scenario: Callable[[Any, list[str]], None], peer: Any) -> list[str]:
    """The lines of ``scenario`` on ``peer``, its node names written ``node1``...; the queue
    names are the scenario's own."""
    lines: list[str] = []
    scenario(peer, lines)
    text = "\n".join(lines)
    for index, name in enumerate(peer.names(), 1):
        text = text.replace(name, f"node{index}")
    if hasattr(peer, "prefix"):
        text = text.replace(peer.prefix, "")
    return text.split("\n")


# -- the scenarios -------------------------------------------------------------------------------


def classic_queue_on_a_stopped_node(peer: Any, out: list[str]) -> None:
    """A durable classic queue homed on node 2 while node 2 is stopped: what clients on node 1
    see, and what the queue holds when node 2 is back."""
    dq, other = peer.q("dq"), peer.q("other")
    out.append(f"declare on node2: {peer.op(1, 'queue_declare', dq, durable=True)}")
    for body in ("c1", "c2"):
        out.append(f"publish {body}: {peer.publish(1, '', dq, body.encode(), persistent=True)}")
    out.append(f"consume on node1: {peer.consume(0, dq, 'a')}")
    out.append(f"consumer on node1 got: {peer.seen('a')}")
    out.append(f"publish c3: {peer.publish(1, '', dq, b'c3', persistent=True)}")
    out.append(f"consumer on node1 got: {peer.seen('a')}")
    out.append(f"declare elsewhere: {peer.op(0, 'queue_declare', other, durable=True)}")
    peer.stop(1)
    out.append(f"consumer on node1 got: {peer.seen('a')}")
    out.append(f"passive declare: {peer.op(0, 'queue_declare', dq, passive=True)}")
    out.append(f"declare: {peer.op(0, 'queue_declare', dq, durable=True)}")
    out.append(f"consume: {peer.op(0, 'basic_consume', dq)}")
    out.append(f"get: {peer.op(0, 'basic_get', dq)}")
    out.append(f"purge: {peer.op(0, 'queue_purge', dq)}")
    out.append(f"bind: {peer.op(0, 'queue_bind', dq, 'amq.direct', 'k')}")
    out.append(f"delete: {peer.op(0, 'queue_delete', dq)}")
    out.append("publish mandatory: "
               + peer.publish(0, "", dq, b"lost", persistent=True, mandatory=True))
    out.append("publish confirmed: " + peer.publish(0, "", dq, b"lost", persistent=True,
                                                    confirm=True))
    out.append(f"the other queue: {peer.op(0, 'queue_declare', other, passive=True)}")
    peer.start(1)
    for _ in range(4):
        out.append(f"get after node2 is back: {peer.op(0, 'basic_get', dq, no_ack=True)}")


def quorum_queue_losing_its_leader(peer: Any, out: list[str]) -> None:
    """A quorum queue led by node 2, a consumer on node 2 holding its messages and one on node
    1; node 2 stops: node 1's consumer gets them again, the queue goes on."""
    qq = peer.q("qq")
    out.append("declare on node2: "
               + peer.op(1, "queue_declare", qq, durable=True,
                         arguments={"x-queue-type": "quorum"}))
    out.append(f"consume on node2: {peer.consume(1, qq, 'b')}")
    for body in ("m1", "m2", "m3"):
        out.append(f"publish {body}: {peer.publish(0, '', qq, body.encode(), persistent=True)}")
    out.append(f"consumer on node2 got: {peer.seen('b')}")
    out.append(f"consume on node1: {peer.consume(0, qq, 'a')}")
    out.append(f"consumer on node1 got: {peer.seen('a')}")
    peer.stop(1)
    out.append(f"consumer on node1 got: {peer.seen('a')}")
    out.append("publish m4 confirmed: "
               + peer.publish(0, "", qq, b"m4", persistent=True, confirm=True))
    out.append(f"consumer on node1 got: {peer.seen('a')}")
    out.append(f"passive declare: {peer.op(2, 'queue_declare', qq, passive=True)}")
    peer.start(1)
    out.append(f"consumer on node1 got: {peer.seen('a')}")




STREAM = {"x-queue-type": "stream"}


def _answered(said: str) -> str:
    # A stream's declare-ok without its counts: RabbitMQ reads its message count from a metrics
    # table the stream's writer refreshes on a timer (v3.10.8 rabbit_stream_queue:stat/1 and
    # i(messages, Q): queue_coarse_metrics), 0 or the count depending on when one asks.
    return "ok" if said.startswith("ok ") else said


def _read(peer: Any, node: int, stream: str, name: str, offset: object) -> str:
    # A consumer of a stream from ``offset`` (x-stream-offset), acknowledging what it gets.
    return str(peer.consume(node, stream, name, arguments={"x-stream-offset": offset}, ack=True))


def _consume_when_replicated(peer: Any, node: int, queue: str, name: str,
                             arguments: dict[str, Any]) -> str:
    # A consumer of a stream on a node that has just started: RabbitMQ refuses it with 406
    # "... does not have a replica on the local node" until the stream coordinator has
    # restarted the node's replica (4 to 6 s after start_app here); polled for 30 s at most.
    deadline = time.monotonic() + 30
    while True:
        said = peer.consume(node, queue, name, arguments=arguments, ack=True)
        if "does not have a replica on the local node" not in said or time.monotonic() > deadline:
            return said
        time.sleep(0.05)  # (the reference only: embroker's replica is there at once)


def stream_losing_its_leader(peer: Any, out: list[str]) -> None:
    """A stream led by node 2 (the node it was declared on), read from its first offset by a
    consumer on node 1 and from the next by one on node 3 (prefetch 10, as a stream needs,
    acknowledging), a publisher with confirms on node 1; node 2 stops.

    Seen on the reference: the consumers see nothing of the stop (no cancel: each reads its own
    node's member); the next publish is confirmed at once and reaches both at offset 2; a new
    consumer from offset 1 reads s2, s3; node 2 back, its publish reaches all three."""
    st = peer.q("st")
    out.append("declare on node2: "
               + peer.op(1, "queue_declare", st, durable=True, arguments=STREAM))
    for body in ("s1", "s2"):
        out.append(f"publish {body} confirmed: "
                   + peer.publish(0, "", st, body.encode(), persistent=True, confirm=True))
    out.append("consume on node1 from first: "
               + _read(peer, 0, st, "a", "first"))
    out.append("consume on node3 from next: "
               + _read(peer, 2, st, "c", "next"))
    out.append(f"consumer on node1 got: {peer.seen('a')}")
    out.append(f"consumer on node3 got: {peer.seen('c')}")
    peer.stop(1)
    out.append(f"consumer on node1 got: {peer.seen('a')}")
    out.append(f"consumer on node3 got: {peer.seen('c')}")
    out.append("publish s3 confirmed: "
               + peer.publish(0, "", st, b"s3", persistent=True, confirm=True))
    out.append(f"consumer on node1 got: {peer.seen('a')}")
    out.append(f"consumer on node3 got: {peer.seen('c')}")
    out.append("consume on node3 from offset 1: "
               + _read(peer, 2, st, "d", 1))
    out.append(f"consumer from offset 1 got: {peer.seen('d')}")
    out.append(f"passive declare: {_answered(peer.op(2, 'queue_declare', st, passive=True))}")
    peer.start(1)
    out.append("publish s4 confirmed on node2: "
               + peer.publish(1, "", st, b"s4", persistent=True, confirm=True))
    out.append(f"consumer on node1 got: {peer.seen('a')}")
    out.append(f"consumer on node3 got: {peer.seen('c')}")
    out.append(f"consumer from offset 1 got: {peer.seen('d')}")


def stream_losing_a_replica(peer: Any, out: list[str]) -> None:
    """A stream led by node 1, consumers on node 1 and node 3 (node 3 reading its replica);
    node 3 stops: its consumer's connection is closed, node 1's goes on, a publish is confirmed
    by the two members left; node 3 back, a consumer there reads everything.

    Seen on the reference: for 4 to 6 s after ``start_app`` a consumer on node 3 is refused
    with 406 "... does not have a replica on the local node" (its replica not restarted yet);
    embroker's replica is there at once, so the scenario records the answer once it is ok."""
    st = peer.q("st")
    out.append("declare on node1: "
               + peer.op(0, "queue_declare", st, durable=True, arguments=STREAM))
    out.append("publish s1 confirmed: "
               + peer.publish(0, "", st, b"s1", persistent=True, confirm=True))
    out.append("consume on node1 from first: "
               + _read(peer, 0, st, "a", "first"))
    out.append("consume on node3 from first: "
               + _read(peer, 2, st, "c", "first"))
    out.append(f"consumer on node1 got: {peer.seen('a')}")
    out.append(f"consumer on node3 got: {peer.seen('c')}")
    peer.stop(2)
    out.append(f"consumer on node3 got: {peer.seen('c')}")
    out.append("publish s2 confirmed: "
               + peer.publish(1, "", st, b"s2", persistent=True, confirm=True))
    out.append(f"consumer on node1 got: {peer.seen('a')}")
    out.append(f"passive declare: {_answered(peer.op(1, 'queue_declare', st, passive=True))}")
    peer.start(2)
    out.append("consume on node3 from first again, once its replica is back: "
               + _consume_when_replicated(peer, 2, st, "c2", {"x-stream-offset": "first"}))
    out.append(f"consumer on node3 got: {peer.seen('c2')}")
    out.append(f"consumer on node1 got: {peer.seen('a')}")


def stream_without_a_majority(peer: Any, out: list[str]) -> None:
    """A stream led by node 1 with a consumer there; node 2 and node 3 stop (one member of three
    left): what a consumer, a publish with confirms, a declare and a new consumer get.

    Seen on the reference: the consumer sees nothing; the publish ends the connection with 506
    "RESOURCE_ERROR - Stream coordinator unavailable for queue ..." after 30 s (embroker at
    once); a declare, passive or not, answers at once; one node back, the next publish is
    confirmed and written at offset 1: the refused one was never written. (A new consumer, a
    new stream and a delete answer 541 after 30 s each: pinned in tests/model/test_node_stop.py,
    not here.)"""
    st = peer.q("st")
    out.append("declare on node1: "
               + peer.op(0, "queue_declare", st, durable=True, arguments=STREAM))
    out.append("publish s1 confirmed: "
               + peer.publish(0, "", st, b"s1", persistent=True, confirm=True))
    out.append("consume on node1 from first: "
               + _read(peer, 0, st, "a", "first"))
    out.append(f"consumer on node1 got: {peer.seen('a')}")
    peer.stop(1)
    peer.stop(2)
    out.append(f"consumer on node1 got: {peer.seen('a')}")
    out.append("publish s2 confirmed: "
               + peer.publish(0, "", st, b"s2", persistent=True, confirm=True))
    out.append(f"passive declare: {_answered(peer.op(0, 'queue_declare', st, passive=True))}")
    out.append("declare: "
               + _answered(peer.op(0, 'queue_declare', st, durable=True, arguments=STREAM)))
    out.append(f"consumer on node1 got: {peer.seen('a')}")
    peer.start(1)
    out.append("publish s3 confirmed: "
               + peer.publish(0, "", st, b"s3", persistent=True, confirm=True))
    out.append("consume on node1 from first again: "
               + _read(peer, 0, st, "b", "first"))
    out.append(f"consumer got: {peer.seen('b')}")


def classic_queue_with_a_consumer_on_each_node(peer: Any, out: list[str]) -> None:
    """A durable classic queue homed on node 1 with a consumer on each node (prefetch 10,
    acknowledging nothing), fed from node 2; node 1 stops and starts: what each consumer sees,
    and what a consumer on node 2 gets when it is back.

    Seen on the reference: node 1's consumer's connection is closed (320); its delivery p1 goes
    back to the queue and on to node 2's consumer, redelivered, just before the queue goes down
    and node 2's and node 3's consumers are cancelled; a mandatory publish is returned and
    confirmed; node 1 back, nobody is subscribed again and the queue holds p1..p3, all
    redelivered."""
    dq = peer.q("dq")
    out.append("declare on node1: " + peer.op(0, "queue_declare", dq, durable=True))
    for node, name in enumerate("abc"):
        out.append(f"consume on node{node + 1}: {peer.consume(node, dq, name)}")
    for body in ("p1", "p2", "p3"):
        out.append(f"publish {body} on node2: "
                   + peer.publish(1, "", dq, body.encode(), persistent=True, confirm=True))
    for node, name in enumerate("abc"):
        out.append(f"consumer on node{node + 1} got: {peer.seen(name)}")
    peer.stop(0)
    for node, name in enumerate("abc"):
        out.append(f"consumer on node{node + 1} got: {peer.seen(name)}")
    out.append("publish p4 mandatory on node2: "
               + peer.publish(1, "", dq, b"p4", persistent=True, mandatory=True, confirm=True))
    peer.start(0)
    for node, name in enumerate("bc", 1):
        out.append(f"consumer on node{node + 1} got: {peer.seen(name)}")
    out.append(f"declare on node3: {peer.op(2, 'queue_declare', dq, durable=True)}")
    out.append(f"consume on node2 again: {peer.consume(1, dq, 'd')}")
    out.append(f"consumer on node2 got: {peer.seen('d')}")


def quorum_queue_with_a_publisher_on_each_node(peer: Any, out: list[str]) -> None:
    """A quorum queue led by node 1, a consumer on node 3, a publisher with confirms on each
    node; node 1 (the leader) stops: the others' publishes are confirmed and delivered; node 1
    back, its publish too."""
    qq = peer.q("qq")
    out.append("declare on node1: "
               + peer.op(0, "queue_declare", qq, durable=True,
                         arguments={"x-queue-type": "quorum"}))
    out.append(f"consume on node3: {peer.consume(2, qq, 'c', ack=True)}")
    for node in range(3):
        out.append(f"publish q{node + 1} on node{node + 1}: "
                   + peer.publish(node, "", qq, f"q{node + 1}".encode(), persistent=True,
                                  confirm=True))
    out.append(f"consumer on node3 got: {peer.seen('c')}")
    peer.stop(0)
    out.append(f"consumer on node3 got: {peer.seen('c')}")
    for node in (1, 2):
        out.append(f"publish q{node + 3} on node{node + 1}: "
                   + peer.publish(node, "", qq, f"q{node + 3}".encode(), persistent=True,
                                  confirm=True))
    out.append(f"consumer on node3 got: {peer.seen('c')}")
    peer.start(0)
    out.append("publish q6 on node1: "
               + peer.publish(0, "", qq, b"q6", persistent=True, confirm=True))
    out.append(f"consumer on node3 got: {peer.seen('c')}")
    out.append(f"passive declare on node1: {peer.op(0, 'queue_declare', qq, passive=True)}")


SCENARIOS: dict[str, Callable[[Any, list[str]], None]] = {
    scenario.__name__: scenario for scenario in (
        classic_queue_on_a_stopped_node, quorum_queue_losing_its_leader,
        stream_losing_its_leader, stream_losing_a_replica, stream_without_a_majority,
        classic_queue_with_a_consumer_on_each_node, quorum_queue_with_a_publisher_on_each_node)}
#: The queues each scenario declares (removed from the reference after it).
QUEUES: dict[str, list[str]] = {
    "classic_queue_on_a_stopped_node": ["dq", "other"],
    "quorum_queue_losing_its_leader": ["qq"],
    "stream_losing_its_leader": ["st"],
    "stream_losing_a_replica": ["st"],
    "stream_without_a_majority": ["st"],
    "classic_queue_with_a_consumer_on_each_node": ["dq"],
    "quorum_queue_with_a_publisher_on_each_node": ["qq"],
}
