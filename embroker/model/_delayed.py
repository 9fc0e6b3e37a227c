"""The delayed-message exchange (``x-delayed-message``, plugin rabbitmq_delayed_message_exchange),
on the broker's clock.

Theory of operation
-------------------
The rules are those of the plugin's last release for RabbitMQ 3.x (v3.13.0:
``rabbit_exchange_type_delayed_message.erl``, ``rabbit_delayed_message.erl``,
``rabbit_delayed_message_utils.erl``); each is pinned by a test named after it
(``tests/model/test_delayed.py``), and docs/plugins.md lists them with what 4.x changes.

- **Declaring.** ``x-delayed-type`` is required: the exchange type the exchange routes as
  (``validate/1``). Missing or not a string: 406 "Invalid argument, 'x-delayed-type' must be an
  existing exchange type"; ``x-delayed-message`` itself: 406 "Invalid argument,
  'x-delayed-message' can't be used for 'x-delayed-type'"; a type that does not exist: 503
  "unknown exchange type 'T'" (``rabbit_exchange:check_type/1``); then that type's own checks.
  Binding checks, and re-declare checks, are that type's too.
- **Publishing.** The ``x-delay`` header (``get_delay/1``): an integer of type long, short,
  signedint, unsignedbyte, unsignedshort or unsignedint as it is; a float or double truncated; a
  string (or byte array) converted with ``binary_to_integer`` (one that is not an integer makes
  the channel process crash: 541 INTERNAL_ERROR, the connection closes); a decimal or a void
  value crash the same way (the 3.13 message container has no conversion for a decimal, and a
  void is no ``{Type, Value}``); any other type (byte, bool, timestamp, table, array) is no delay.
  A delay in 1..2^32-1 ms (``?ERL_MAX_T``, Erlang's largest timer) holds the message; a missing,
  zero, negative or larger delay routes it at once, through the ``x-delayed-type`` routing.
- **While held**, the exchange routed the message nowhere: the publish is unroutable *now*. So a
  mandatory publish is returned at once with 312 NO_ROUTE (the plugin's README: "the mandatory
  flag is not supported"), a publisher in confirm mode gets its ack at once, and an exchange
  with an alternate exchange passes it there at once too (and it is still delivered later).
- **When the delay runs out** (``handle_info({timeout, ...})``): the message's ``x-delay`` is set
  to ``-Delay`` (``swap_delay_header/1``: a long, the headers sorted by name as RabbitMQ's table
  update leaves them), so it is not held again, and it is routed from the exchange with the
  bindings of that moment (an exchange deleted meanwhile has none: only its alternate exchange,
  looked up by name, can take it), to queues only: no confirm, no return. Messages due at the
  same millisecond go in the order of the plugin's index (due time, then the exchange, then
  the order they came).
- **Restarts.** The plugin keeps held messages in a disc table: they survive a broker restart,
  whatever the exchange's durability or the message's delivery mode (a non-durable exchange is
  gone after the restart, so such a message finds no bindings unless the exchange is declared
  again in time).

Times: the plugin keys a message on the millisecond it is due (``erlang:system_time`` + delay);
embroker uses the broker clock's monotonic time in milliseconds, so a :class:`ManualClock`'s
``advance`` delivers what fell due, in due order, and the listener's loop does it with the real
clock.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, final

from sortedcontainers import SortedDict
from typing_extensions import override

from ..errors import AMQPError, InternalError, PreconditionFailed
from ..fieldtypes import Long, field_type
from . import _history
from ._arguments import parse_expiration
from ._exchange import Binding, Exchange
from ._message import Message

if TYPE_CHECKING:
    from ._broker import Broker
    from ._clock import Timer
    from ._vhost import Live, VirtualHost

__all__ = ["ERL_MAX_T", "DelayedMessageExchange", "DelayedMessages", "HeldMessage", "get_delay"]

#: The longest delay the plugin holds a message for, in ms: Erlang's largest timer, 2^32-1.
ERL_MAX_T = 4294967295

#: The types whose value is the delay as it is (the 3.13 message container's names for
#: long, unsignedbyte, short, unsignedshort, unsignedint and signedint).
_INTEGER_TYPES = ("long", "unsignedbyte", "short", "unsignedshort", "unsignedint", "signedint")
#: Converted with binary_to_integer (longstr is utf8 or binary in the container).
_STRING_TYPES = ("longstr", "binary")
#: Truncated.
_FLOAT_TYPES = ("double", "float")
#: No conversion exists (mc_amqpl:from_091/2 has no clause for decimal; void becomes ``null``,
#: which get_delay/1 cannot match): the channel process crashes.
_CRASH_TYPES = ("decimal", "void")
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+\Z")


def get_delay(headers: Mapping[str, Any] | None) -> int | None:
    """The delay a message's ``x-delay`` header asks for, in ms, as the plugin reads it
    (``get_delay/1``); ``None`` for no delay (no header, or a type it ignores). The caller holds
    the message only for a delay in 1..:data:`ERL_MAX_T`.

    Raises:
        InternalError: (541) a string that is no integer, a decimal or a void value: the
            plugin crashes the channel process on those, and RabbitMQ closes the connection.
    """
    if not headers or "x-delay" not in headers:
        return None
    value = headers["x-delay"]
    kind = field_type(value)
    if kind in _INTEGER_TYPES:
        return int(value)
    if kind in _FLOAT_TYPES:
        return math.trunc(float(value))
    if kind in _STRING_TYPES:
        text = value if isinstance(value, str) else bytes(value).decode("latin-1")
        if not _INTEGER_TEXT.match(text):
            raise InternalError("")  # binary_to_integer: badarg
        return int(text)
    if kind in _CRASH_TYPES:
        raise InternalError("")
    return None


def _holds(delay: int | None) -> bool:
    return delay is not None and 0 < delay <= ERL_MAX_T


def swap_delay_header(properties: Mapping[str, Any], delay: int) -> dict[str, Any]:
    """The properties of a released message: ``x-delay`` set to ``-delay`` (a long), the
    headers sorted by name, as ``swap_delay_header/1`` and RabbitMQ's table update leave them."""
    headers = dict(properties.get("headers") or {})
    headers["x-delay"] = Long(-delay)
    ordered = dict(sorted(headers.items(), key=lambda kv: kv[0].encode("utf-8", "surrogateescape")))
    return {**properties, "headers": ordered}


@final
class DelayedMessageExchange(Exchange):
    """``x-delayed-message``: routes as its ``x-delayed-type`` does, and holds a message with an
    ``x-delay`` until it is due (see the module's rules)."""

    type = "x-delayed-message"
    per_key = False
    intercepts = True

    def __init__(self, vhost: VirtualHost, name: str, **kwargs: Any) -> None:
        super().__init__(vhost, name, **kwargs)
        delayed_type = self.arguments["x-delayed-type"]
        if isinstance(delayed_type, (bytes, bytearray)):
            delayed_type = bytes(delayed_type).decode("utf-8", "surrogateescape")
        #: The exchange type it routes as.
        self.delayed_type: str = delayed_type
        cls = vhost.broker.plugins.exchange_types[delayed_type]
        #: An exchange of the delayed type that routes for it (it shares the bindings).
        self.routing: Exchange = cls(vhost, name, **kwargs)

    @classmethod
    @override
    def validate(cls, vhost: VirtualHost, arguments: Mapping[str, Any]) -> None:
        """The plugin's ``validate/1`` (see the module's rules)."""
        value = arguments.get("x-delayed-type")
        if isinstance(value, (bytes, bytearray)):
            value = bytes(value).decode("utf-8", "surrogateescape")
        if value == "x-delayed-message":
            raise PreconditionFailed(
                "Invalid argument, 'x-delayed-message' can't be used for 'x-delayed-type'")
        if not isinstance(value, str):
            raise PreconditionFailed(
                "Invalid argument, 'x-delayed-type' must be an existing exchange type")
        vhost.exchange_type(value).validate(vhost, arguments)  # rabbit_exchange:check_type/1

    # -- the delayed type routes ---------------------------------------------------------------

    @override
    def validate_binding(self, routing_key: str, arguments: Mapping[str, Any]) -> None:
        self.routing.validate_binding(routing_key, arguments)

    @override
    def add_binding(self, binding: Binding) -> bool:
        if not super().add_binding(binding):
            return False
        self.routing.add_binding(binding)
        return True

    @override
    def remove_binding(self, key: tuple[Any, ...]) -> Binding | None:
        binding = super().remove_binding(key)
        if binding is not None:
            self.routing.remove_binding(key)
        return binding

    @override
    def before_bind(self, binding: Binding) -> None:
        self.routing.before_bind(binding)

    @override
    def restarted(self) -> None:
        self.routing.restarted()

    @override
    def forget_messages(self) -> None:
        self.routing.forget_messages()

    @override
    def _check(self) -> None:
        assert self.routing.bindings.keys() == self.bindings.keys(), \
            f"{self!r}: its delayed type's bindings differ"
        self.routing._check()

    @override
    def route(self, routing_key: str, headers: Mapping[str, Any] | None) -> Sequence[Binding]:
        return self.routing.route(routing_key, headers)

    @override
    def route_message(self, keys: Sequence[str], headers: Mapping[str, Any] | None,
                      properties: Mapping[str, Any] | None) -> Sequence[Binding]:
        return self.routing.route_message(keys, headers, properties)

    @override
    def mismatch(self, binding: Binding, routing_key: str,
                 headers: Mapping[str, Any] | None) -> str | None:
        return self.routing.mismatch(binding, routing_key, headers)

    @override
    def intercept(self, message: Any, routing: Any) -> str | None:
        delay = get_delay(message.properties.get("headers"))
        if _holds(delay):
            assert delay is not None
            store = self.vhost.broker.plugins.delayed
            assert store is not None
            store.hold(self, message, delay, routing)
            return f"held for its x-delay of {delay} ms"
        if self.routing.intercepts:
            return self.routing.intercept(message, routing)
        return None

    def __repr__(self) -> str:
        return (f"<x-delayed-message exchange '{self.name}' in vhost '{self.vhost.name}' "
                f"(routing as {self.delayed_type}), {len(self.bindings)} bindings>")


# -- the held messages ----------------------------------------------------------------------------

class HeldMessage(NamedTuple):
    """A message a delayed-message exchange holds (``broker.plugins.delayed.held()``)."""

    #: When it is due, on the broker clock's monotonic time (seconds).
    due: float
    #: Its delay, in milliseconds.
    delay: int
    #: The virtual host and the name of the exchange that holds it.
    vhost: str
    exchange: str
    #: The message, as published.
    message: Message

    def __str__(self) -> str:
        return (f"held by exchange '{self.exchange}' in vhost '{self.vhost}' until {self.due:g} "
                f"s (x-delay {self.delay}): routing key '{self.message.routing_key}', "
                f"{len(self.message.body)} byte(s)")


@final
class _Entry:
    __slots__ = ("delay", "exchange", "held")

    def __init__(self, exchange: Exchange, held: HeldMessage) -> None:
        self.exchange = exchange
        self.delay = held.delay
        self.held = held


@final
class DelayedMessages:
    """The messages the broker's delayed-message exchanges hold, in the plugin's index order
    (due millisecond, then exchange, then arrival), with one clock timer for the earliest.

    ``len(store)`` is how many are held; :meth:`held` lists them.
    """

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._index: SortedDict = SortedDict()  # (due ms, vhost, exchange) -> [_Entry]
        self._count = 0
        self._timer: Timer | None = None

    def __len__(self) -> int:
        return self._count

    def __repr__(self) -> str:
        return f"<DelayedMessages {self._count} held>"

    def held(self) -> list[HeldMessage]:
        """Every held message, the earliest due first."""
        with self._broker.locked():
            return [entry.held for entries in self._index.values() for entry in entries]

    def hold(self, exchange: Exchange, message: Message, delay: int, live: Live | None) -> None:
        """Hold ``message`` for ``delay`` ms from now (``internal_delay_message/4``)."""
        clock = self._broker.clock
        due_ms = math.floor(clock.monotonic() * 1000) + delay
        key = (due_ms, exchange.vhost.name.encode("utf-8", "surrogateescape"),
               exchange.name.encode("utf-8", "surrogateescape"))
        held = HeldMessage(due_ms / 1000, delay, exchange.vhost.name, exchange.name, message)
        self._index.setdefault(key, []).append(_Entry(exchange, held))
        self._count += 1
        if live is not None:
            live.held.append((exchange.name, held.due, delay))
            live.after(lambda: _history.held(clock, message, exchange.name, held.due))
        self._schedule()

    def clear(self) -> list[HeldMessage]:
        """Drop every held message (``broker.reset()``); returns them."""
        gone = [entry.held for entries in self._index.values() for entry in entries]
        self._index.clear()
        self._count = 0
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        return gone

    def _schedule(self) -> None:
        if not self._index:
            return
        due = self._index.keys()[0][0] / 1000
        if self._timer is not None and not self._timer.cancelled and self._timer.deadline <= due:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._broker.clock.call_at(due, self._fire)

    def _fire(self) -> None:
        # One key at a time, then the timer for the next (handle_info/2, maybe_delay_first/0).
        self._timer = None
        if not self._index:
            return
        _key, entries = self._index.popitem(0)
        self._count -= len(entries)
        for entry in entries:
            self._release(entry)
        self._schedule()

    def _release(self, entry: _Entry) -> None:
        held, old = entry.held, entry.exchange
        broker = self._broker
        vhost = broker.vhosts.get(held.vhost)
        if vhost is None:
            _history.released(broker.clock, held.message, held.exchange, None)
            return
        current = vhost.exchanges.get(held.exchange)
        exchange = current if current is not None else old  # gone: no bindings, only its AE
        original = held.message
        message = Message(original.exchange, original.routing_key,
                          swap_delay_header(original.properties, held.delay), original.body,
                          routing_keys=original.routing_keys)
        message.origin = original.origin
        from ._trace import RoutingDecision
        from ._vhost import Live

        live = Live(message)
        try:
            queues, matched, path = vhost._route(
                exchange, list(message.keys), message.properties.get("headers"),
                message.properties, live)
        except AMQPError as error:  # (a crash of the plugin's process: the message is lost)
            decision = RoutingDecision(vhost.name, held.exchange, message, message.keys,
                                       error=error, released=(held.exchange, held.delay))
            vhost._record(decision)
            _history.released(broker.clock, original, held.exchange, decision)
            return
        decision = RoutingDecision(
            vhost.name, held.exchange, message, message.keys, tuple([q.name for q in queues]),
            matched, path, notes=tuple(live.notes), held=tuple(live.held),
            released=(held.exchange, held.delay))
        vhost._record(decision)
        live.finish()
        _history.released(broker.clock, original, held.exchange, decision)
        expiration = message.properties.get("expiration")
        ttl = parse_expiration(expiration) if expiration is not None else None
        for queue in queues:
            queue.publish(message, ttl)

    def _check(self) -> None:
        assert self._count == sum(len(e) for e in self._index.values())
        if self._index:
            assert self._timer is not None, "messages held, and no timer"
            assert not self._timer.cancelled, "messages held, and the timer cancelled"
