"""Faults application code must survive, injected one connection at a time.

:class:`Faults` gathers them for a broker (and its listener, for the faults that need a socket)::

    from embroker.faults import Faults

    faults = Faults(broker, server)
    faults.kill_connection("billing-worker")        # socket closed, no connection.close
    faults.close_connection(320, "maintenance")      # connection.close with that code and text
    faults.close_channel(1, 406, "boom")            # channel.close on one channel
    faults.cancel_consumer(queue="jobs")             # basic.cancel from the broker
    faults.nack_publishes(2, exchange="orders")      # the next 2 publishes there are nacked
    faults.stall(5.0)                                # nothing written for 5 s: heartbeats time out
    faults.drop_on_delivery(lambda m: b"poison" in m.body)  # the consumer "crashes" mid-message
    faults.stop_node("embroker-2@localhost")         # rabbitmqctl -n ... stop_app (a cluster)
    faults.start_node("embroker-2@localhost")        # ... start_app

Connections are named by what their client said (``connection_name``, as pika's
``client_properties={"connection_name": ...}``), by their peer address, or left out when there
is a single one (``server.connections`` lists them). The pytest plugin's ``embroker_faults``
fixture is a :class:`Faults` for the test's broker and listener.

Each fault is recorded where it shows: a nacked publish on its routing decision (outcome
``"nacked"``), a requeue caused by a dropped connection in the message's history.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, final

from .errors import ChannelException, ConnectionException, error_for_code
from .model import Message
from .model._faults import DeliveryFault, PublishNack

if TYPE_CHECKING:
    from .memory import MemoryConnection
    from .model import Broker, Channel, Node
    from .server import ClientConnection, Server

__all__ = ["Faults"]


@final
class Faults:
    """Faults for ``broker`` and, for those that need a socket, its listener ``server``.

    Args:
        broker: the broker.
        server: its listener (``broker.serve()``), for the faults on wire connections; or a
            cluster's listeners, one per node (``broker.serve_nodes()``): the connections of
            every node's.
    """

    def __init__(self, broker: Broker, server: Server | Sequence[Server] | None = None) -> None:
        self.broker = broker
        #: The listeners whose connections it reaches (one, or one per node of a cluster).
        self.servers: list[Server] = [] if server is None else \
            list(server) if isinstance(server, Sequence) else [server]
        #: The first of them (``None``: none).
        self.server = self.servers[0] if self.servers else None

    def __repr__(self) -> str:
        return f"<Faults for {self.broker!r}{f' and {self.server!r}' if self.server else ''}>"

    # -- connections ---------------------------------------------------------------------------

    def _server(self) -> Server:
        if self.server is None:
            raise RuntimeError("this fault needs a listener: Faults(broker, server) "
                               "(the embroker_faults fixture starts the test's)")
        return self.server

    @property
    def connections(self) -> list[ClientConnection | MemoryConnection]:
        """The client connections: the listener's (``server.connections``), then the in-memory
        ones (``broker.memory_connections``)."""
        from .memory import MemoryConnection, MemoryLink

        with self.broker.locked():
            memory = [MemoryConnection(link) for link in self.broker.transports.of(MemoryLink)]
        return [*(c for server in self.servers for c in server.connections), *memory]

    def connection(self, name: str | None = None) -> ClientConnection | MemoryConnection:
        """The client connection named ``name`` (its ``connection_name`` or peer address,
        ``"memory:N"`` for an in-memory one), or the only open one.

        Raises:
            LookupError: no such connection (the message lists them).
        """
        found = self.connections
        names = [c.connection_name or c.peer for c in found]
        if name is None:
            live = [c for c in found if c.is_open]
            if len(live) == 1:
                return live[0]
            raise LookupError(f"{len(live)} open connections: name one of "
                              f"{[c.connection_name or c.peer for c in live]}")
        for connection in found:
            if name in (connection.connection_name, connection.peer):
                return connection
        raise LookupError(f"no connection named {name!r}; the connections are {names}")

    def kill_connection(self, name: str | None = None, *, reset: bool = False) -> None:
        """Close a connection's socket abruptly, with no connection.close (a crash, a network
        failure): what it had not acknowledged goes back to its queues."""
        self.connection(name).kill(reset=reset)

    def close_connection(self, reply_code: int = 320,
                         reply_text: str = "broker forced connection closure with reason "
                                           "'shutdown'", name: str | None = None) -> None:
        """Close a connection from the broker's side with ``reply_code`` and ``reply_text``
        (``320 CONNECTION_FORCED - ...`` by default, as a RabbitMQ node that stops)."""
        if not isinstance(error_for_code(reply_code, reply_text), ConnectionException):
            raise ValueError(f"{reply_code} is a channel exception: use close_channel()")
        self.connection(name).close(reply_code, reply_text)

    def close_channel(self, channel: int, reply_code: int = 406,
                      reply_text: str = "closed by a test (embroker.faults)",
                      name: str | None = None) -> None:
        """Close one channel of a connection with a channel exception (``406
        PRECONDITION_FAILED - ...`` by default)."""
        if not isinstance(error_for_code(reply_code, reply_text), ChannelException):
            raise ValueError(f"{reply_code} is a connection exception: use close_connection()")
        self.connection(name).close_channel(channel, reply_code, reply_text)

    def stall(self, seconds: float, name: str | None = None) -> None:
        """Write nothing to a connection for ``seconds``: a client whose heartbeat is shorter
        than that times out and reconnects."""
        self.connection(name).stall(seconds)

    def drop_on_delivery(self, predicate: Callable[[Message], object], *, times: int = 1,
                         name: str | None = None) -> DeliveryFault:
        """Drop the connection a message matching ``predicate`` is delivered to, right after
        the delivery is written: a consumer that crashes while it processes that message (it
        is redelivered to the next one). TCP and in-memory connections alike."""
        only = self.connection(name) if name is not None else None

        def action(channel: Channel, _message: Message) -> None:
            # (under the broker's lock, as the model delivers)
            for carried in [only] if only is not None else self.connections:
                if carried.model is channel.connection:
                    carried.drop_after_delivery()
                    return

        fault = DeliveryFault(predicate, action, times)
        with self.broker.locked():
            self.broker._delivery_faults.append(fault)
        return fault

    # -- a node of a cluster ---------------------------------------------------------------------

    def stop_node(self, node: Node | str) -> None:
        """Stop a node of the cluster as ``rabbitmqctl -n NODE stop_app`` does: its listener's
        ports refuse connections and its clients' connections close (320 CONNECTION_FORCED),
        while the other nodes' listeners serve on; its classic queues are down and the quorum
        queues and streams it led are led by another member (:meth:`Node.stop
        <embroker.model.Node.stop>`: what the other nodes' clients see). A node that no
        listener serves stops in the model alone (its in-process and in-memory clients). On
        a broker of one node, the listener's ``stop_app`` (what survives is what a restart
        keeps).

        Raises:
            KeyError: no node of the cluster is called ``node``.
        """
        served = self._listener(node)
        if served is not None:
            served.stop_app()
        else:
            self._node(node).stop()

    def start_node(self, node: Node | str) -> None:
        """Start a node :meth:`stop_node` stopped (``rabbitmqctl -n NODE start_app``): its
        ports listen again on the same numbers, its down queues are back.

        Raises:
            KeyError: no node of the cluster is called ``node``.
            PortInUse: one of its ports was taken meanwhile.
        """
        served = self._listener(node)
        if served is not None:
            served.start_app()
        else:
            self._node(node).start()

    def partition(self, *sides: Iterable[Node | str]) -> None:
        """Cut the network between the nodes of each of ``sides`` and the rest, as RabbitMQ
        3.10.8 handles it by default (``ignore``): :meth:`Broker.partition
        <embroker.model.Broker.partition>`. Every listener serves on; each side's clients see
        the other side's classic queues down, and quorum queues go on where their majority is.

        Raises:
            ValueError: a side names no node of the cluster, a node twice, or every node.
        """
        self.broker.partition(*sides)

    def heal(self) -> None:
        """The network is whole again (:meth:`Broker.heal <embroker.model.Broker.heal>`):
        quorum queues heal; the nodes list each other as partitions until the node of one side
        restarts (:meth:`stop_node`, :meth:`start_node`)."""
        self.broker.heal()

    def _node(self, node: Node | str) -> Node:
        return self.broker.node_named(node) if isinstance(node, str) else node

    def _listener(self, node: Node | str) -> Server | None:
        # The running listener serving the node: one of ours, else any registered with the
        # broker.
        from .server import Server

        found = self._node(node)
        with self.broker.locked():
            registered = self.broker.transports.of(Server)
        for server in [*self.servers, *registered]:
            if server.node is found and server.running:
                return server
        return None

    # -- the model's faults (in-process connections too) ---------------------------------------

    def cancel_consumer(self, consumer_tag: str | None = None, *, queue: str | None = None,
                        vhost: str = "/") -> list[str]:
        """Cancel consumers from the broker's side (basic.cancel, as when their queue is
        deleted): the one with ``consumer_tag``, or every consumer of ``queue``. Clients that
        announced ``consumer_cancel_notify`` are told. Returns the tags cancelled.

        Raises:
            LookupError: nothing matched (the message lists the consumers there are).
        """
        if consumer_tag is None and queue is None:
            raise TypeError("name a consumer_tag or a queue")
        cancelled = []
        with self.broker.locked():
            host = self.broker.vhost(vhost)
            every = [c for q in host.queues.values() for c in q.consumers]
            for consumer in every:
                if (consumer_tag is None or consumer.tag == consumer_tag) and (
                        queue is None or consumer.queue.name == queue):
                    consumer.queue.remove_consumer(consumer)
                    consumer.channel.cancel_by_broker(consumer)
                    cancelled.append(consumer.tag)
            if not cancelled:
                there = [f"{c.tag!r} on {c.queue.name!r}" for c in every]
                raise LookupError(f"no consumer matched (consumer_tag={consumer_tag!r}, "
                                  f"queue={queue!r}); the consumers are {there}")
        return cancelled

    def nack_publishes(self, count: int = 1, *, exchange: str | None = None,
                       queue: str | None = None, vhost: str = "/") -> PublishNack:
        """Nack the next ``count`` publishes made in confirm mode to ``exchange`` or routed to
        ``queue`` (any publish when neither is given): they are not enqueued, and the publisher
        gets basic.nack, as when a queue fails to take a message. Returns the armed fault
        (``.nacked`` counts the publishes it nacked)."""
        fault = PublishNack(count, exchange=exchange, queue=queue, vhost=vhost)
        with self.broker.locked():
            self.broker._publish_faults.append(fault)
        return fault

    def clear(self) -> None:
        """Disarm every publish and delivery fault."""
        with self.broker.locked():
            self.broker._publish_faults.clear()
            self.broker._delivery_faults.clear()
