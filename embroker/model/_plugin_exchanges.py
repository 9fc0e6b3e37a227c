"""The exchange types of RabbitMQ's routing plugins: consistent-hash, modulus-hash, random and
recent-history, each as its plugin's source for RabbitMQ 3.10 has it.

Theory of operation
-------------------
A plugin's ``route/2`` sees the whole delivery once (every routing key, the headers, the
properties), so these types implement ``route_message`` and return a :class:`Choice` that says
how they chose. Three of them choose among *all* of the exchange's bindings, listed as
``rabbit_router:match_routing_key(X, ['_'])`` lists them: in the order of RabbitMQ's route
table, an ``ordered_set`` keyed by the binding (Erlang's term order of the binding key, then the
destination, an exchange before a queue, then the arguments), a destination bound twice counted
twice (:func:`route_order`).

- ``x-modulus-hash`` (``rabbit_sharding_exchange_type_modulus_hash``): the destination at
  ``erlang:phash2(RoutingKeys, 2^27) rem N``, over the list of every routing key.
- ``x-random`` (``rabbit_exchange_type_random``): one destination drawn uniformly, or all of them
  when there are fewer than two. RabbitMQ draws from the channel process's seed; embroker from
  ``broker.plugins.random``, seeded, so a test routes the same way on every run.
- ``x-consistent-hash`` (``rabbit_exchange_type_consistent_hash``): a ring of buckets, each
  binding's destination taking as many consecutive buckets as its binding key says (the key must
  be an integer of at least 1); a second binding to a destination adds no buckets, and removing
  any binding of a destination removes all of its buckets (the plugin's ring is keyed by
  destination). A message goes to the owner of bucket ``jump_consistent_hash(phash2(V), N)``,
  where V is the first routing key, or with ``hash-header`` the header's ``{Type, Value}``
  (``undefined`` when absent), or with ``hash-property`` the ``correlation_id``,
  ``message_id`` or ``timestamp`` (as decimal digits). After a restart the ring is rebuilt from
  the surviving bindings in route-table order, as the plugin's ``recover/0`` does.
- ``x-recent-history`` (``rabbit_exchange_type_recent_history``): routes to every binding, and
  keeps the last ``x-recent-history-length`` messages (20 by default) that passed through it,
  unless a message's ``x-recent-history-no-store`` header is ``true``. A new binding gets them
  at once: a queue oldest first, an exchange newest first (each routed through it; one that
  routes nowhere fails the binding with ``541 INTERNAL_ERROR``, after those before it were
  delivered). The history is kept in memory only: a restart or the exchange's deletion forgets
  it.
"""

from __future__ import annotations

import bisect
import datetime
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, final

from typing_extensions import override

from .. import _erlang
from .._erlterm import (
    UNDEFINED,
    Atom,
    field_term,
    field_value_term,
    jump_consistent_hash,
    phash2,
    term_key,
)
from ..errors import InternalError, PreconditionFailed
from ..fieldtypes import field_type
from . import _history
from ._arguments import parse_expiration
from ._exchange import Binding, Choice, Exchange

if TYPE_CHECKING:
    from ._message import Message
    from ._queue import Queue
    from ._vhost import VirtualHost

__all__ = ["ConsistentHashExchange", "LocalRandomExchange", "ModulusHashExchange", "RandomExchange",
           "RecentHistoryExchange", "route_order"]


def _binding_term_key(binding: Binding) -> tuple[Any, ...]:
    # #binding{source, key, destination, args}: the key (a binary), the destination resource
    # ({resource, VHost, Kind, Name}: the kind an atom, exchange < queue), the arguments as
    # RabbitMQ stores them (sorted by name).
    dest = binding.destination
    args = [(k.encode("utf-8", "surrogateescape"), Atom(field_type(v)), field_value_term(v))
            for k, v in binding.arguments.items()]
    args.sort(key=lambda kv: kv[0])
    return (binding.routing_key.encode("utf-8", "surrogateescape"), dest.kind,
            dest.name.encode("utf-8", "surrogateescape"), term_key(args))


def route_order(bindings: Sequence[Binding]) -> list[Binding]:
    """The bindings as RabbitMQ's route table lists them (``match_routing_key(X, ['_'])``)."""
    return sorted(bindings, key=_binding_term_key)


def _target(binding: Binding) -> str:
    return f"{binding.destination.kind} '{binding.destination.name}'"


class _AllBindings(Exchange):
    """A plugin type that chooses among all its bindings, in route-table order."""

    per_key = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ordered: list[Binding] | None = None

    def ordered(self) -> list[Binding]:
        """Every binding in route-table order (cached until the bindings change)."""
        if self._ordered is None:
            self._ordered = route_order(self.snapshot())
        return self._ordered

    @override
    def _bound(self, binding: Binding) -> None:
        self._ordered = None

    @override
    def _unbound(self, binding: Binding) -> None:
        self._ordered = None

    @override
    def route(self, routing_key: str, headers: Mapping[str, Any] | None) -> Sequence[Binding]:
        return self.route_message((routing_key,), headers, None)

    def draw_one(self, what: str) -> Choice:
        """One binding drawn uniformly from ``broker.plugins.random`` (every binding when there
        are fewer than two), said of ``what`` the bindings lead to ("binding", "queue")."""
        ordered = self.ordered()
        if len(ordered) < 2:
            return Choice(ordered, f"fewer than two {what}s: all of them")
        index = self.vhost.broker.plugins.random.randrange(len(ordered))
        return Choice((ordered[index],), (
            f"drew {what} {index + 1} of {len(ordered)} at random: {_target(ordered[index])}"))

    @override
    def mismatch(self, binding: Binding, routing_key: str,
                 headers: Mapping[str, Any] | None) -> str | None:
        return "not drawn"


@final
class ModulusHashExchange(_AllBindings):
    """``x-modulus-hash`` (the rabbitmq_sharding plugin): the binding at
    ``phash2(RoutingKeys, 2^27) rem N`` of the N bindings in route-table order."""

    type = "x-modulus-hash"

    @override
    def route_message(self, keys: Sequence[str], headers: Mapping[str, Any] | None,
                      properties: Mapping[str, Any] | None) -> Choice:
        ordered = self.ordered()
        if not ordered:
            return Choice((), "it has no bindings")
        terms = [k.encode("utf-8", "surrogateescape") for k in keys]
        index = phash2(terms, 2**27) % len(ordered)
        what = f"routing key '{keys[0]}'" if len(keys) == 1 else f"routing keys {list(keys)}"
        return Choice((ordered[index],), (
            f"phash2 of the {what} modulo {len(ordered)} binding(s) is {index}: "
            f"{_target(ordered[index])}"))

    @override
    def mismatch(self, binding: Binding, routing_key: str,
                 headers: Mapping[str, Any] | None) -> str | None:
        return "the hash of the routing keys picked another binding"


@final
class RandomExchange(_AllBindings):
    """``x-random``: one binding drawn uniformly from ``broker.plugins.random`` (every binding
    when there are fewer than two)."""

    type = "x-random"

    @override
    def route_message(self, keys: Sequence[str], headers: Mapping[str, Any] | None,
                      properties: Mapping[str, Any] | None) -> Choice:
        return self.draw_one("binding")


@final
class LocalRandomExchange(_AllBindings):
    """``x-local-random``, built into RabbitMQ 4.0 and later (so only with ``as_rabbitmq``
    4.x): one bound queue drawn uniformly from ``broker.plugins.random`` among the queues on
    the publisher's node (every queue is, here). Its bindings have an empty key and a classic
    queue as destination (rabbit_exchange_type_local_random v4.1.4: validate_binding/2,
    route/3)."""

    type = "x-local-random"

    @override
    def validate_binding(self, routing_key: str, arguments: Mapping[str, Any]) -> None:
        if routing_key:
            raise PreconditionFailed(f"Non empty binding '{routing_key}' key not permitted")

    @override
    def before_bind(self, binding: Binding) -> None:
        destination = binding.destination
        if destination.kind != "queue":
            raise PreconditionFailed("Destination not found")
        queue_type = destination.arguments.get("x-queue-type", "classic")
        if queue_type != "classic":
            raise PreconditionFailed(
                f"Queue type rabbit_{queue_type}_queue not valid for this exchange type")

    @override
    def route_message(self, keys: Sequence[str], headers: Mapping[str, Any] | None,
                      properties: Mapping[str, Any] | None) -> Choice:
        return self.draw_one("queue")


# -- consistent hash -------------------------------------------------------------------------

#: The properties ``hash-property`` may name.
HASH_PROPERTIES = ("correlation_id", "message_id", "timestamp")
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")


def _check_hash_arguments(arguments: Mapping[str, Any]) -> None:
    header, prop = arguments.get("hash-header"), arguments.get("hash-property")
    # hash_args/1 matches each as {longstr, V}: any other type is a case_clause crash, which
    # RabbitMQ answers with 541 INTERNAL_ERROR.
    for name in ("hash-header", "hash-property"):
        if name in arguments and not isinstance(arguments[name], str):
            raise InternalError("")
    if header is not None and prop is not None:
        raise PreconditionFailed("hash-header and hash-property are mutually exclusive")
    if prop is not None and prop not in HASH_PROPERTIES:
        raise PreconditionFailed(f"Unsupported property: {prop}")


@final
class _Slice:
    """The buckets of one destination: ``first`` to ``first + weight - 1``."""

    __slots__ = ("destination", "first", "weight")

    def __init__(self, destination: Any, first: int, weight: int) -> None:
        self.destination = destination
        self.first = first
        self.weight = weight


@final
class ConsistentHashExchange(Exchange):
    """``x-consistent-hash``: a ring of buckets weighted by binding keys; Google's jump
    consistent hash of ``phash2`` of the routing key (or a header, or a property) picks one."""

    type = "x-consistent-hash"
    per_key = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ring: list[_Slice] = []
        self._total = 0
        header, prop = self.arguments.get("hash-header"), self.arguments.get("hash-property")
        self._hash_on: tuple[str, str] | None = (
            ("header", header) if isinstance(header, str) else
            ("property", prop) if isinstance(prop, str) else None)

    @classmethod
    @override
    def validate(cls, vhost: VirtualHost, arguments: Mapping[str, Any]) -> None:
        """The plugin's ``validate/1``: ``hash-header`` and ``hash-property`` are strings, not
        both, and the property one of correlation_id, message_id, timestamp.

        Raises:
            PreconditionFailed: (406) both given, or another property.
            InternalError: (541) a value that is not a string (the plugin crashes on it).
        """
        _check_hash_arguments(arguments)

    @override
    def validate_binding(self, routing_key: str, arguments: Mapping[str, Any]) -> None:
        if not _INTEGER.match(routing_key):
            prefix = "The binding key must be an integer: "
            raise PreconditionFailed(prefix + _erlang.binary(
                routing_key.encode("utf-8", "surrogateescape"), len(prefix)))
        if int(routing_key) < 1:
            raise PreconditionFailed("The binding key must be greater than 0")

    # The ring: each destination's buckets, in the order they were added.

    @override
    def _bound(self, binding: Binding) -> None:
        dest = binding.destination
        if any(s.destination is dest for s in self._ring):
            return  # "this binding (possibly with a different routing key) already exists"
        weight = int(binding.routing_key)
        self._ring.append(_Slice(dest, self._total, weight))
        self._total += weight

    @override
    def _unbound(self, binding: Binding) -> None:
        dest = binding.destination
        for i, piece in enumerate(self._ring):
            if piece.destination is dest:
                del self._ring[i]
                self._total -= piece.weight
                for later in self._ring[i:]:
                    later.first -= piece.weight
                return

    @override
    def restarted(self) -> None:
        self._ring, self._total = [], 0
        for binding in route_order(self.snapshot()):
            self._bound(binding)

    @override
    def _check(self) -> None:
        first = 0
        bound = {id(b.destination) for b in self.bindings.values()}
        for piece in self._ring:
            assert piece.first == first, f"{self!r}: the ring has a gap or an overlap"
            assert id(piece.destination) in bound, f"{self!r}: buckets without a binding"
            first += piece.weight
        assert first == self._total, f"{self!r}: the ring's total is off"

    def buckets(self) -> list[tuple[str, str, int, int]]:
        """The ring: each destination's kind, name, first bucket and number of buckets."""
        return [(s.destination.kind, s.destination.name, s.first, s.weight) for s in self._ring]

    def _hashed(self, keys: Sequence[str], headers: Mapping[str, Any] | None,
                properties: Mapping[str, Any] | None) -> tuple[Any, str]:
        how = self._hash_on
        if how is None:
            return keys[0].encode("utf-8", "surrogateescape"), f"routing key '{keys[0]}'"
        kind, name = how
        if kind == "header":
            if headers is None or name not in headers:
                return UNDEFINED, f"header '{name}' (absent: undefined)"
            return field_term(headers[name]), f"header '{name}'"
        value = (properties or {}).get(name)
        if value is None:
            return UNDEFINED, f"property {name} (absent: undefined)"
        if name == "timestamp":
            seconds = int(value.timestamp()) if isinstance(value, datetime.datetime) else int(value)
            return str(seconds).encode(), f"property timestamp {seconds}"
        return str(value).encode("utf-8", "surrogateescape"), f"property {name} '{value}'"

    @override
    def route_message(self, keys: Sequence[str], headers: Mapping[str, Any] | None,
                      properties: Mapping[str, Any] | None) -> Choice:
        if not self._total:
            return Choice((), "its hash ring is empty")
        term, what = self._hashed(keys, headers, properties)
        bucket = jump_consistent_hash(phash2(term), self._total)
        starts = [s.first for s in self._ring]
        piece = self._ring[bisect.bisect_right(starts, bucket) - 1]
        chosen = [b for b in self.snapshot() if b.destination is piece.destination][:1]
        return Choice(chosen, (
            f"the hash of the {what} fell in bucket {bucket} of {self._total}: "
            f"{piece.destination.kind} '{piece.destination.name}' (buckets {piece.first}-"
            f"{piece.first + piece.weight - 1})"))

    @override
    def route(self, routing_key: str, headers: Mapping[str, Any] | None) -> Sequence[Binding]:
        return self.route_message((routing_key,), headers, None)

    @override
    def mismatch(self, binding: Binding, routing_key: str,
                 headers: Mapping[str, Any] | None) -> str | None:
        if not any(s.destination is binding.destination for s in self._ring):
            return "its destination has no buckets on the ring"
        return "the hash fell in another destination's buckets"


# -- recent history --------------------------------------------------------------------------

#: How many messages an ``x-recent-history`` exchange keeps without ``x-recent-history-length``.
DEFAULT_HISTORY_LENGTH = 20
_HISTORY_INTEGER_TYPES = ("byte", "short", "signedint", "long")


@final
class RecentHistoryExchange(Exchange):
    """``x-recent-history``: routes to every binding and replays its last messages to each new
    one."""

    type = "x-recent-history"
    per_key = False
    intercepts = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        length = self.arguments.get("x-recent-history-length")
        self.length: int = int(length) if length is not None else DEFAULT_HISTORY_LENGTH
        #: The messages kept, newest first.
        self.history: list[Message] = []

    @classmethod
    @override
    def validate(cls, vhost: VirtualHost, arguments: Mapping[str, Any]) -> None:
        """``x-recent-history-length`` is a byte, short, signedint or long above 0.

        Raises:
            PreconditionFailed: (406) "Invalid argument V, 'x-recent-history-length' must be a
                positive integer".
        """
        if "x-recent-history-length" not in arguments:
            return
        value = arguments["x-recent-history-length"]
        if field_type(value) in _HISTORY_INTEGER_TYPES and value > 0:
            return
        prefix = "Invalid argument "
        if isinstance(value, (str, bytes, bytearray)):
            data = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
            shown = _erlang.binary(data, len(prefix))
        else:
            shown = _erlang.field_value(value)
        raise PreconditionFailed(
            f"{prefix}{shown}, 'x-recent-history-length' must be a positive integer")

    @override
    def route(self, routing_key: str, headers: Mapping[str, Any] | None) -> Sequence[Binding]:
        return self.snapshot()

    @override
    def route_message(self, keys: Sequence[str], headers: Mapping[str, Any] | None,
                      properties: Mapping[str, Any] | None) -> Choice:
        return Choice(self.snapshot(), (
            f"routes to every binding, and keeps the last {self.length} message(s) for new "
            f"bindings ({len(self.history)} kept)"))

    @override
    def mismatch(self, binding: Binding, routing_key: str,
                 headers: Mapping[str, Any] | None) -> str | None:
        return None

    @override
    def intercept(self, message: Any, routing: Any) -> str | None:
        headers = message.properties.get("headers") or {}
        if headers.get("x-recent-history-no-store") is True:
            return None
        self.history.insert(0, message)
        del self.history[self.length:]
        return None

    @override
    def before_bind(self, binding: Binding) -> None:
        if binding.key in self.bindings or not self.history:
            return
        dest = binding.destination
        vhost = self.vhost
        clock = vhost.broker.clock
        if dest.kind == "queue":
            queue: Queue = dest  # type: ignore[assignment]
            for message in reversed(self.history):  # oldest first
                _history.replayed(clock, queue, message, self.name)
                queue.publish(message, _expiration(message))
            return
        for message in list(self.history):  # newest first, each routed through the exchange
            queues = vhost.replay_through(dest, message)  # type: ignore[arg-type]
            if not queues:
                raise InternalError("")  # "could not find queue/exchange ''", as 541
            for queue in queues:
                _history.replayed(clock, queue, message, self.name)
                queue.publish(message, _expiration(message))

    @override
    def restarted(self) -> None:
        self.history.clear()

    @override
    def forget_messages(self) -> None:
        self.history.clear()


def _expiration(message: Message) -> float | None:
    value = message.properties.get("expiration")
    return parse_expiration(value) if value is not None else None
