"""URLs that name a broker for in-memory transports (no host is ever resolved)."""

from __future__ import annotations

import itertools
import weakref
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    from ..model import Broker

__all__ = ["broker_of", "kombu_url", "memory_url"]

#: The brokers a memory URL names (``amqp://guest:guest@embroker-memory-N/``).
_BROKERS: weakref.WeakValueDictionary[str, Broker] = weakref.WeakValueDictionary()
_ids = itertools.count(1)
_HOST_PREFIX = "embroker-memory-"


def memory_url(broker: Broker, vhost: str = "/", *, user: str = "guest",
               password: str | None = None, heartbeat: int = 0, name: str | None = None) -> str:
    """A URL that names ``broker`` for :class:`TransportFactory` (no host is ever resolved):
    ``amqp://guest:guest@embroker-memory-1:5672/?heartbeat=0``.

    Args:
        vhost: the virtual host.
        user, password: the credentials (``password`` defaults to the user's in the broker).
        heartbeat: what the client asks for (0: none; aiormq's heartbeats run on real time).
        name: the connection's name (aiormq's ``name``: ``connection_name``).
    """
    key = next((k for k, b in _BROKERS.items() if b is broker), None)
    if key is None:
        key = f"{_HOST_PREFIX}{next(_ids)}"
        _BROKERS[key] = broker
    if password is None:
        password = broker.users.get(user, "guest")
    query = f"heartbeat={heartbeat}" + (f"&name={quote(name, safe='')}" if name else "")
    path = "" if vhost == "/" else quote(vhost, safe="")
    return f"amqp://{quote(user, safe='')}:{quote(password, safe='')}@{key}:5672/{path}?{query}"


def kombu_url(broker: Broker, vhost: str = "/", *, user: str = "guest",
              password: str | None = None) -> str:
    """kombu's URL of ``broker`` through the ``embroker://`` transport
    (``embroker://guest:guest@embroker-memory-1:5672//``)."""
    amqp = memory_url(broker, vhost, user=user, password=password)
    return "embroker" + amqp[len("amqp"):amqp.index("/", len("amqp://")) + 1] + quote(
        vhost, safe="")


def broker_of(host: str) -> Broker | None:
    """The broker a memory URL's host names (``None``: no such broker, or it is gone)."""
    return _BROKERS.get(host)


