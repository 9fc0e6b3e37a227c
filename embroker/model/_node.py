"""The broker's nodes: each one's identity (its name, its host and its cluster's name, one record
that every surface reads) and what runs on it (:class:`Node`: its connections). A broker is a
cluster of one node unless told otherwise; what every node shares (virtual hosts, exchanges,
bindings, queues, users, policies) stays on the broker.

RabbitMQ reports the node's name (``rabbit@HOST``: ``node()``) in ``rabbitmqctl status``,
``/api/nodes`` and every management listing's ``node``, the event exchange's ``node`` header
(rabbit_event_exchange), the firehose's ``node`` header, RabbitMQ 4's AMQP 1.0 ``node`` server
property and its queues' ``leader``; the host part of the name is what the stream protocol
advertises by default (``rabbit_stream:host/0``, v3.10.8); and the cluster's name, which
starts as the node's own (``rabbit_nodes:cluster_name_default/0``), is what AMQP 1.0's open
says as its ``container-id`` (``rabbit_amqp1_0_reader``, v3.10.8) and 0-9-1's server
properties say as ``cluster_name``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, final

from ..errors import ConnectionForced
from ._names import NODE

if TYPE_CHECKING:
    from ._broker import Broker
    from ._connection import Connection

__all__ = ["DEFAULT_NODE", "RABBITMQ_NODE", "Node", "NodeIdentity"]


@final
@dataclass(frozen=True, slots=True)
class NodeIdentity:
    """Who a node is, as RabbitMQ reports it.

    Attributes:
        name: its node name, ``name@host`` (``rabbit@localhost``).
        host: the host its clients are told to reach (the stream protocol's advertised host):
            the host part of its name.
        cluster_name: the name its cluster starts with (the ``cluster_name`` global parameter
            renames it: :attr:`Broker.cluster_name <embroker.model.Broker.cluster_name>`).
    """

    name: str
    host: str
    cluster_name: str

    @classmethod
    def named(cls, name: str, *, cluster_name: str | None = None) -> NodeIdentity:
        """The identity of node ``name`` (``rabbit@HOST``): its host is the part after the
        ``@`` (``localhost`` when there is none); its cluster is named after it unless
        ``cluster_name`` says otherwise (``rabbit_nodes:cluster_name_default/0``)."""
        host = name.partition("@")[2] or "localhost"
        return cls(name, host, name if cluster_name is None else cluster_name)

    def __str__(self) -> str:
        return self.name


#: A broker nobody named: ``embroker@localhost``, in a cluster named ``embroker``.
DEFAULT_NODE = NodeIdentity(NODE, "localhost", "embroker")
#: A broker nobody named that presents itself as RabbitMQ (``as_rabbitmq``): ``rabbit@embroker``
#: (what its cluster name has always said), reached at ``localhost``.
RABBITMQ_NODE = NodeIdentity("rabbit@embroker", "localhost", "rabbit@embroker")


@final
class Node:
    """A node of the broker's cluster: who it is (:attr:`identity`) and the connections its
    clients opened on it. ``str(node)`` is its name."""

    __slots__ = ("broker", "identity", "running")

    def __init__(self, broker: Broker, identity: NodeIdentity) -> None:
        self.broker = broker
        self.identity = identity
        #: Whether its RabbitMQ application runs (``rabbitmqctl -n NODE stop_app`` stops it).
        self.running = True

    @property
    def name(self) -> str:
        return self.identity.name

    @property
    def partitions(self) -> list[Node]:
        """The nodes it reaches again after a partition but no longer counts as running
        (``rabbit_node_monitor:partitions/0``; :meth:`Broker.heal
        <embroker.model.Broker.heal>`), until one of them or it restarts."""
        return self.broker.network.partitions(self)

    @property
    def connections(self) -> list[Connection]:
        """Its open connections, oldest first (a snapshot)."""
        with self.broker._lock:
            return [c for c in self.broker.connections.values() if c.node is self]

    def stop(self) -> None:
        """``rabbitmqctl -n NODE stop_app``: its clients' connections are closed (320
        CONNECTION_FORCED, reason 'shutdown') and the queues living on it are told, as
        :mod:`._cluster` describes: the others' clients see RabbitMQ's errors until it starts
        again. The last running node stopping is the whole broker stopping: what survives is
        what survives :meth:`Broker.restart <embroker.model.Broker.restart>`, once it starts."""
        from ._cluster import node_stopped
        broker = self.broker
        with broker._lock:
            if not self.running:
                return
            self.running = False
            broker.nodes_down = True
            shutdown = ConnectionForced("broker forced connection closure with reason "
                                        "'shutdown'")
            for connection in self.connections:
                if connection.on_closed_by_broker is not None:  # a protocol's: it is told
                    connection.close_by_broker(shutdown)
                else:
                    connection.close()
            if any(node.running for node in broker.nodes):
                for vhost in broker.vhosts.values():
                    node_stopped(vhost, self)
            broker.transports.node_changed(self, False)

    def start(self) -> None:
        """``rabbitmqctl -n NODE start_app``: it runs again, and its down queues are back with
        what they kept (:mod:`._cluster`); the first node of a stopped cluster to start
        recovers every queue as a restart does."""
        from ._cluster import node_started
        broker = self.broker
        with broker._lock:
            if self.running:
                return
            if self not in broker.nodes:  # (forget_cluster_node removed it)
                raise RuntimeError(f"inconsistent_cluster: node {self.name} was removed from "
                                   "the cluster (forget_cluster_node): it cannot start in it")
            whole = not any(node.running for node in broker.nodes)
            self.running = True
            broker.network.rejoined(self)  # (it counts the nodes it reaches: a partition ends)
            broker.nodes_down = not all(node.running for node in broker.nodes) or (
                not broker.network.whole)
            for vhost in broker.vhosts.values():
                if whole:
                    vhost.restart()
                node_started(vhost, self)
            broker.transports.node_changed(self, True)

    def __str__(self) -> str:
        return self.identity.name

    def __repr__(self) -> str:
        return f"<Node {self.identity.name}>"
