"""URLs that name a broker for in-memory transports (no host is ever resolved)."""

from __future__ import annotations

import itertools
import weakref
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    from ..model import Broker, Node

__all__ = ["broker_of", "kombu_url", "memory_url", "target_of"]

#: The brokers a memory URL names (``amqp://guest:guest@embroker-memory-N/``).
_BROKERS: weakref.WeakValueDictionary[str, Broker] = weakref.WeakValueDictionary()
_ids = itertools.count(1)
_HOST_PREFIX = "embroker-memory-"
#: What follows a broker's key in the host naming a node after its first: ``-node2``...
_NODE_SUFFIX = "-node"


def _host(broker: Broker, node: Node | None) -> str:
    # The broker's key (made once per broker), and for a node after the first its place.
    key = next((k for k, b in _BROKERS.items() if b is broker), None)
    if key is None:
        key = f"{_HOST_PREFIX}{next(_ids)}"
        _BROKERS[key] = broker
    if node is None or node is broker.nodes[0]:
        return key
    return f"{key}{_NODE_SUFFIX}{broker.nodes.index(node) + 1}"


def memory_url(broker: Broker, vhost: str = "/", *, user: str = "guest",
               password: str | None = None, heartbeat: int = 0, name: str | None = None,
               node: Node | None = None) -> str:
    """A URL that names ``broker`` for :class:`TransportFactory` (no host is ever resolved):
    ``amqp://guest:guest@embroker-memory-1:5672/?heartbeat=0``.

    Args:
        vhost: the virtual host.
        user, password: the credentials (``password`` defaults to the user's in the broker).
        heartbeat: what the client asks for (0: none; aiormq's heartbeats run on real time).
        name: the connection's name (aiormq's ``name``: ``connection_name``).
        node: the node of the broker's cluster the client reaches (the first by default):
            ``embroker-memory-1-node2`` names the second. A client's list of such URLs is its
            list of nodes; a stopped node refuses the connection as its closed port would.

    Raises:
        ValueError: ``node`` is not one of the broker's.
    """
    if node is not None and node not in broker.nodes:
        raise ValueError(f"{node} is not a node of this broker; its nodes are "
                         f"{', '.join(str(n) for n in broker.nodes)}")
    key = _host(broker, node)
    if password is None:
        password = broker.users.get(user, "guest")
    query = f"heartbeat={heartbeat}" + (f"&name={quote(name, safe='')}" if name else "")
    path = "" if vhost == "/" else quote(vhost, safe="")
    return f"amqp://{quote(user, safe='')}:{quote(password, safe='')}@{key}:5672/{path}?{query}"


def kombu_url(broker: Broker, vhost: str = "/", *, user: str = "guest",
              password: str | None = None, node: Node | None = None) -> str:
    """kombu's URL of ``broker`` (of its ``node``, as :func:`memory_url`) through the
    ``embroker://`` transport (``embroker://guest:guest@embroker-memory-1:5672//``); kombu's
    failover takes several joined by ``;``."""
    amqp = memory_url(broker, vhost, user=user, password=password, node=node)
    return "embroker" + amqp[len("amqp"):amqp.index("/", len("amqp://")) + 1] + quote(
        vhost, safe="")


def broker_of(host: str) -> Broker | None:
    """The broker a memory URL's host names (``None``: no such broker, or it is gone)."""
    found = target_of(host)
    return None if found is None else found[0]


def target_of(host: str) -> tuple[Broker, Node] | None:
    """The broker and the node of its cluster a memory URL's host names (``None``: no such
    broker or node, or it is gone)."""
    key, suffix, place = host.partition(_NODE_SUFFIX)
    broker = _BROKERS.get(key)
    if broker is None:
        return None
    if not suffix:
        return broker, broker.nodes[0]
    if not place.isdigit() or not 1 <= int(place) <= len(broker.nodes):
        return None
    return broker, broker.nodes[int(place) - 1]


