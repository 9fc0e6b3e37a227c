"""Dead-lettering: the message a queue republishes to its dead-letter exchange.

As RabbitMQ 3.10 builds it (``rabbit_dead_letter``): the ``x-death`` header holds one entry per
(queue, reason), most recent first; a death that happened before at the same queue for the same
reason increments that entry's ``count`` and moves it to the front (its other fields stay as they
were). The first death also sets ``x-first-death-reason``, ``-queue`` and ``-exchange``. The
``expiration`` property is removed (kept as ``original-expiration`` in the entry). With
``x-dead-letter-routing-key`` the message is routed with that key alone and loses its ``CC``
header; otherwise with all the keys it was first routed with (``CC`` and ``BCC`` included).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from ._message import Message

__all__ = ["REASONS", "dead_letter_message", "is_dead_letter_cycle"]

#: Why a message is dead-lettered.
REASONS = ("rejected", "expired", "maxlen", "delivery_limit")


def _header_routes(headers: Mapping[str, Any]) -> list[str]:
    keys: list[str] = []
    for name in ("CC", "BCC"):
        value = headers.get(name)
        if isinstance(value, list):
            keys.extend(v for v in value if isinstance(v, str))
    return keys


def dead_letter_message(message: Message, reason: str, queue: str, exchange: str,
                        routing_key: str | None, now: float) -> Message:
    """The message ``queue`` publishes to its dead-letter ``exchange``.

    Args:
        message: the message as it was in the queue.
        reason: one of :data:`REASONS`.
        queue: the name of the queue it leaves.
        exchange: the dead-letter exchange.
        routing_key: the queue's ``x-dead-letter-routing-key``, if any.
        now: the broker clock's wall time, for the entry's ``time``.
    """
    properties = dict(message.properties)
    headers: dict[str, Any] = dict(properties.get("headers") or {})
    info: dict[str, Any] = {
        "reason": reason,
        "queue": queue,
        "time": datetime.datetime.fromtimestamp(int(now), tz=datetime.timezone.utc),
        "exchange": message.exchange,
        "routing-keys": [message.keys[0], *_header_routes(headers)],
    }
    expiration = properties.pop("expiration", None)
    if expiration is not None:
        info["original-expiration"] = expiration
    deaths = headers.get("x-death")
    if not isinstance(deaths, list):
        if deaths is None:
            headers["x-first-death-reason"] = reason
            headers["x-first-death-queue"] = queue
            headers["x-first-death-exchange"] = message.exchange
        headers["x-death"] = [{"count": 1, **info}]
    else:
        same = [d for d in deaths if isinstance(d, dict)
                and d.get("queue") == queue and d.get("reason") == reason]
        others = [d for d in deaths if not any(d is s for s in same)]
        if same:
            entry = dict(same[0])
            entry["count"] = (entry.get("count") or 0) + 1
        else:
            entry = {"count": 1, **info}
        headers["x-death"] = [dict(sorted(entry.items())), *others]
    if routing_key is not None:
        headers.pop("CC", None)
        keys: tuple[str, ...] = (routing_key,)
    else:
        keys = message.keys
    properties["headers"] = headers
    return Message(exchange, keys[0], properties, message.body,
                   routing_keys=keys if len(keys) > 1 else None)


def is_dead_letter_cycle(queue: str, headers: Mapping[str, Any]) -> bool:
    """Whether dead-lettering to ``queue`` closes a cycle with no rejection in it (RabbitMQ
    drops the message for that queue then, rather than let it go round for ever)."""
    deaths = headers.get("x-death")
    if not isinstance(deaths, list):
        return False
    for index, death in enumerate(deaths):
        if isinstance(death, dict) and death.get("queue") == queue:
            return all(isinstance(d, dict) and d.get("reason") != "rejected"
                       for d in deaths[:index + 1])
    return False
