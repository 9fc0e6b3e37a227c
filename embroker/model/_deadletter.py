"""Dead-lettering: the message a queue republishes to its dead-letter exchange.

As RabbitMQ 3.10 builds it (``rabbit_dead_letter``): the ``x-death`` header holds one entry per
(queue, reason), most recent first; a death that happened before at the same queue for the same
reason increments that entry's ``count`` and moves it to the front (its other fields stay as they
were). The first death also sets ``x-first-death-reason``, ``-queue`` and ``-exchange``. The
``expiration`` property is removed (kept as ``original-expiration`` in the entry). With
``x-dead-letter-routing-key`` the message is routed with that key alone and loses its ``CC``
header; otherwise with all the keys it was first routed with (``CC`` and ``BCC`` included).

The ``x-death`` header comes from clients too (a message consumed and published again), so any
value is handled, as RabbitMQ 3.10 handles it where it can:

- no ``x-death``: a fresh entry, and the ``x-first-death-*`` headers (replacing any);
- an ``x-death`` that is not an array: replaced by a fresh entry (no ``x-first-death-*``);
- an array of two or more entries is first grouped by (queue, reason): the first entry of each
  group stays, with a ``count`` of the group's size if it had none, and the groups come out in
  reverse order (RabbitMQ's fold); a single entry is left as it is;
- the matching entry's ``count`` goes up by one as a 64-bit integer (2**63 - 1 wraps around to
  -2**63, as RabbitMQ's encoding does); a missing count becomes 1.

Counts are ``long`` (:class:`~embroker.fieldtypes.Long`), times timestamps, and the headers table
comes out sorted by name, as RabbitMQ writes them.

Where RabbitMQ 3.10's queue process crashes instead (a matching entry whose ``count`` is not an
integer, an array element that is not a table), the queue and its other messages are lost there;
embroker treats such a count as missing and keeps such elements after the entries, unchanged.

RabbitMQ 4 (``Broker(as_rabbitmq="4.1.x")``) keeps the history itself, beside the message
(:class:`Death` records in :attr:`Message.deaths <embroker.model.Message.deaths>`; v4.1.4
``mc:record_death/4``), and never reads an ``x-death`` header a client sent: such a header is an
ordinary header until the message dies again, and then the broker's own history (fresh for a
message a client published) replaces it. Each death also sets ``x-last-death-reason``, ``-queue``
and ``-exchange``; ``x-first-death-*`` are set when the history was empty. The rendered tables
list ``original-expiration`` (when the message had a TTL) first, then ``count``, ``reason``,
``queue``, ``time`` (the first death), ``exchange`` and ``routing-keys`` (the routing key and the
``CC`` keys, never ``BCC``; ``mc_amqpl:death_table/7``); a dead-letter cycle is found in the
broker's history. AMQP 1.0 consumers get the history as the ``x-opt-deaths`` annotation
(:func:`death_entries`).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, final

from ..fieldtypes import Long
from ._message import Message

__all__ = ["REASONS", "Death", "dead_letter_message", "death_entries", "is_dead_letter_cycle"]

#: Why a message is dead-lettered.
REASONS = ("rejected", "expired", "maxlen", "delivery_limit")


def _header_routes(headers: Mapping[str, Any]) -> list[str]:
    keys: list[str] = []
    for name in ("CC", "BCC"):
        value = headers.get(name)
        if isinstance(value, list):
            keys.extend(v for v in value if isinstance(v, str))
    return keys


def _wrap_int64(value: int) -> Long:
    return Long((value + 2**63) % 2**64 - 2**63)


def _incremented(entry: dict[str, Any]) -> dict[str, Any]:
    # rabbit_dead_letter's increment of a matching entry's count; its other fields stay.
    count = entry.get("count")
    if isinstance(count, int) and not isinstance(count, bool):
        updated = {**entry, "count": _wrap_int64(count + 1)}
    else:  # missing, or no integer (where RabbitMQ 3.10's queue crashes)
        updated = {**entry, "count": Long(1)}
    return dict(sorted(updated.items()))


def _grouped(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # RabbitMQ groups two or more entries by (queue, reason): the first of each group stays, with
    # the group's size as its count when it has none; its fold reverses the order.
    if len(entries) < 2:
        return entries
    groups: dict[tuple[Any, Any], tuple[dict[str, Any], int]] = {}
    for entry in entries:
        key = (_hashable(entry.get("queue")), _hashable(entry.get("reason")))
        first, size = groups.get(key, (entry, 0))
        groups[key] = (first, size + 1)
    out = [first if "count" in first else {**first, "count": Long(size)}
           for first, size in groups.values()]
    return out[::-1]


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _death_entries(deaths: list[Any], queue: str, reason: str,
                   info: dict[str, Any]) -> list[Any]:
    tables = _grouped([d for d in deaths if isinstance(d, dict)])
    strays = [d for d in deaths if not isinstance(d, dict)]  # RabbitMQ's queue would crash
    same = [d for d in tables if d.get("queue") == queue and d.get("reason") == reason]
    if same:
        first = _incremented(same[0])
        others = [d for d in tables if d is not same[0]]
    else:
        first = dict(sorted({"count": Long(1), **info}.items()))
        others = tables
    return [first, *others, *strays]


def dead_letter_message(message: Message, reason: str, queue: str, exchange: str,
                        routing_key: str | None, now: float, *, rabbitmq4: bool = False,
                        ) -> Message:
    """The message ``queue`` publishes to its dead-letter ``exchange``.

    Args:
        message: the message as it was in the queue.
        reason: one of :data:`REASONS`.
        queue: the name of the queue it leaves.
        exchange: the dead-letter exchange.
        routing_key: the queue's ``x-dead-letter-routing-key``, if any.
        now: the broker clock's wall time, for the entry's ``time``.
        rabbitmq4: as RabbitMQ 4 (see the module's docstring).

    Never raises, whatever headers the message carries.
    """
    if rabbitmq4:
        return _dead_letter_message_4(message, reason, queue, exchange, routing_key, now)
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
    if "x-death" not in headers:
        headers["x-first-death-reason"] = reason
        headers["x-first-death-queue"] = queue
        headers["x-first-death-exchange"] = message.exchange
        headers["x-death"] = [{"count": Long(1), **info}]
    else:
        deaths = headers["x-death"]
        if isinstance(deaths, list):
            headers["x-death"] = _death_entries(deaths, queue, reason, info)
        else:
            headers["x-death"] = [{"count": Long(1), **info}]
    dead = _republished(message, exchange, routing_key, properties, headers)
    # The broker's own history too, for AMQP 1.0 consumers (x-opt-deaths: RabbitMQ 3.10's
    # plugin showed them none, embroker's 1.0 is RabbitMQ 4's).
    dead.deaths = _record_death(message.deaths, queue, reason, message.exchange,
                                tuple(info["routing-keys"]), _ttl(expiration), int(now * 1000))
    return dead


def _republished(message: Message, exchange: str, routing_key: str | None,
                 properties: dict[str, Any], headers: dict[str, Any]) -> Message:
    """The dead-lettered message, with ``headers`` sorted (RabbitMQ sorts the table): routed
    with ``x-dead-letter-routing-key`` alone, its ``CC`` header dropped, or else with every key
    it was first routed with."""
    if routing_key is not None:
        headers.pop("CC", None)
        keys: tuple[str, ...] = (routing_key,)
    else:
        keys = message.keys
    properties["headers"] = dict(sorted(headers.items()))
    return Message(exchange, keys[0], properties, message.body,
                   routing_keys=keys if len(keys) > 1 else None)


def _ttl(expiration: Any) -> int | None:
    return int(expiration) if isinstance(expiration, str) and expiration.isdigit() else None


@final
@dataclass(frozen=True, slots=True)
class Death:
    """One (queue, reason) of the death history RabbitMQ 4 keeps for a message (its ``#death``
    record). Times are the broker clock's wall time in milliseconds."""

    queue: str
    reason: str
    count: int
    first_time: int
    last_time: int
    exchange: str
    routing_keys: tuple[str, ...]
    ttl: int | None = None

    def table(self) -> dict[str, Any]:
        """As an ``x-death`` entry (``mc_amqpl:death_table/7``)."""
        table: dict[str, Any] = {} if self.ttl is None else {
            "original-expiration": str(self.ttl)}
        table.update({
            "count": Long(self.count), "reason": self.reason, "queue": self.queue,
            "time": datetime.datetime.fromtimestamp(self.first_time // 1000,
                                                    tz=datetime.timezone.utc),
            "exchange": self.exchange, "routing-keys": list(self.routing_keys)})
        return table


def _record_death(deaths: Sequence[Death], queue: str, reason: str, exchange: str,
                  routing_keys: tuple[str, ...], ttl: int | None, now_ms: int,
                  ) -> tuple[Death, ...]:
    # v4.1.4 mc:record_death/4 (deaths v2): by recency; a repeated (queue, reason) counts up,
    # takes the new last time and moves to the front, keeping its first time, exchange and keys.
    for index, death in enumerate(deaths):
        if death.queue == queue and death.reason == reason:
            updated = replace(death, count=death.count + 1, last_time=now_ms)
            return (updated, *deaths[:index], *deaths[index + 1:])
    return (Death(queue, reason, 1, now_ms, now_ms, exchange, routing_keys, ttl), *deaths)


def _dead_letter_message_4(message: Message, reason: str, queue: str, exchange: str,
                           routing_key: str | None, now: float) -> Message:
    properties = dict(message.properties)
    headers: dict[str, Any] = dict(properties.get("headers") or {})
    expiration = properties.pop("expiration", None)
    ttl = _ttl(expiration)
    cc = headers.get("CC")
    routes = [message.keys[0], *(k for k in cc if isinstance(k, str))] if isinstance(
        cc, list) else [message.keys[0]]
    first = not message.deaths
    deaths = _record_death(message.deaths, queue, reason, message.exchange, tuple(routes), ttl,
                           int(now * 1000))
    headers["x-death"] = [death.table() for death in deaths]
    for which in ("first", "last") if first else ("last",):
        headers[f"x-{which}-death-reason"] = reason
        headers[f"x-{which}-death-queue"] = queue
        headers[f"x-{which}-death-exchange"] = message.exchange
    dead = _republished(message, exchange, routing_key, properties, headers)
    dead.deaths = deaths
    return dead


def death_entries(deaths: Sequence[Death]) -> list[dict[str, Any]]:
    """The history as AMQP 1.0's ``x-opt-deaths`` lists it, newest first (v4.1.4
    ``mc_amqp:encode_deaths/1``), with plain values: the 1.0 layer gives them their types
    (``queue``, ``exchange`` and keys utf8, ``reason`` a symbol, ``count`` a ulong, the times
    timestamps in milliseconds, ``ttl`` a uint)."""
    out = []
    for death in deaths:
        entry: dict[str, Any] = {} if death.ttl is None else {"ttl": death.ttl}
        entry.update({"queue": death.queue, "reason": death.reason, "count": death.count,
                      "first-time": death.first_time, "last-time": death.last_time,
                      "exchange": death.exchange, "routing-keys": list(death.routing_keys)})
        out.append(entry)
    return out


def is_dead_letter_cycle(queue: str, headers: Mapping[str, Any],
                         deaths: Sequence[Death] | None = None) -> bool:
    """Whether dead-lettering to ``queue`` closes a cycle with no rejection in it (RabbitMQ
    drops the message for that queue then, rather than let it go round for ever). RabbitMQ 4
    looks in the history it kept (``deaths``; v4.1.4 ``mc:is_cycle_v2/2``), RabbitMQ 3.10 in
    the ``x-death`` header."""
    if deaths is not None:
        for index, death in enumerate(deaths):
            if death.queue == queue:
                return all(d.reason != "rejected" for d in deaths[:index + 1])
        return False
    deaths = headers.get("x-death")
    if not isinstance(deaths, list):
        return False
    for index, death in enumerate(deaths):
        if isinstance(death, dict) and death.get("queue") == queue:
            return all(isinstance(d, dict) and d.get("reason") != "rejected"
                       for d in deaths[:index + 1])
    return False
