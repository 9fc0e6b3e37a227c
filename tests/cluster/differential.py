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

import contextlib
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

    def consume(self, node: int, queue: str, name: str) -> str:
        """A consumer ``name`` on a channel of its own (prefetch 10, acknowledging nothing)."""

    def seen(self, name: str) -> list[str]:
        """What came to consumer ``name`` since last asked (``delivery BODY redelivered=B``,
        ``cancel``)."""

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


class EmbrokerCluster:
    """embroker's cluster of three nodes, driven through its model channels."""

    def __init__(self) -> None:
        self.broker = Broker(nodes=3)
        self._seen: dict[str, list[str]] = {}
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

    def consume(self, node: int, queue: str, name: str) -> str:
        channel = self._channel(node)
        seen = self._seen.setdefault(name, [])

        def listener(event: Any) -> None:
            if isinstance(event, Delivered):
                seen.append(f"delivery {event.message.body.decode()} "
                            f"redelivered={event.redelivered}")
            elif isinstance(event, Cancelled):
                seen.append("cancel")

        channel.listener = listener
        channel.basic_qos(prefetch_count=10)
        try:
            tag = channel.basic_consume(queue)
        except AMQPError as error:
            return _amqp_error(error)
        channel.start_consumer(tag)
        self._consumers[name] = channel
        return "ok"

    def seen(self, name: str) -> list[str]:
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
        for connection in self._consumers.values():
            if connection.is_open:
                # (a consumer on a node that stopped: its connection was closed)
                with contextlib.suppress(pika.exceptions.AMQPConnectionError):
                    connection.process_data_events(time_limit=0.3)

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

    def consume(self, node: int, queue: str, name: str) -> str:
        connection = self._connection(node)
        seen = self._seen.setdefault(name, [])
        channel = connection.channel()
        channel.basic_qos(prefetch_count=10)
        channel.add_on_cancel_callback(lambda _frame: seen.append("cancel"))

        def deliver(_channel: Any, method: Any, _properties: Any, body: bytes) -> None:
            seen.append(f"delivery {body.decode()} redelivered={method.redelivered}")

        channel.basic_consume(queue, deliver)
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


SCENARIOS: dict[str, Callable[[Any, list[str]], None]] = {
    "classic_queue_on_a_stopped_node": classic_queue_on_a_stopped_node,
    "quorum_queue_losing_its_leader": quorum_queue_losing_its_leader,
}
#: The queues each scenario declares (removed from the reference after it).
QUEUES: dict[str, list[str]] = {
    "classic_queue_on_a_stopped_node": ["dq", "other"],
    "quorum_queue_losing_its_leader": ["qq"],
}
