"""The node's identity: its name, its host and its cluster's name, one record that every surface
reads (the cluster issue's first step: a node knows who it is before it knows of others).

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
from typing import final

from ._names import NODE

__all__ = ["DEFAULT_NODE", "RABBITMQ_NODE", "NodeIdentity"]


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
