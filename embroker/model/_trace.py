"""Routing decisions: what every publish did, and why."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, final

from ._message import Message
from ._policy import alternate_exchange_origin

if TYPE_CHECKING:
    from ..errors import AMQPError
    from ._exchange import Binding, Exchange

__all__ = ["RoutingDecision", "Trace", "Visit"]

#: An exchange a message passed through, the bindings it had then (an immutable snapshot), and
#: whether it handed the message to its alternate exchange.
Visit = tuple["Exchange", tuple["Binding", ...], bool]


@final
class RoutingDecision:
    """The outcome of one publish, kept on ``broker.trace``.

    Attributes:
        vhost: the virtual host.
        exchange: the exchange name published to (``""`` for the default exchange).
        message: the message as routed (``BCC`` already removed).
        keys: the routing keys used: the routing key, then those of ``CC`` and ``BCC``.
        queues: the names of the queues the message reached, in delivery order.
        matched: every binding that matched, along the whole path through exchange-to-exchange
            bindings and alternate exchanges.
        mandatory: whether the publish was mandatory.
        error: the error that refused the publish (no such exchange, internal exchange...).
        dead_letter: for a message a queue dead-lettered, ``(queue, reason)``; else ``None``.
        cause: for a dead-lettered message, the policies behind it in words (``"through
            policy 'dlx-all'"``); ``None`` when the queue's own arguments decided.
    """

    __slots__ = ("_visited", "body_dropped", "cause", "dead_letter", "error", "exchange", "keys",
                 "mandatory", "matched", "message", "queues", "vhost")

    def __init__(self, vhost: str, exchange: str, message: Message, keys: tuple[str, ...],
                 queues: tuple[str, ...] = (), matched: tuple[Binding, ...] = (),
                 visited: tuple[Visit, ...] = (), mandatory: bool = False,
                 error: AMQPError | None = None,
                 dead_letter: tuple[str, str] | None = None, cause: str | None = None) -> None:
        self.vhost = vhost
        self.exchange = exchange
        self.message = message
        self.keys = keys
        self.queues = queues
        self.matched = matched
        self.mandatory = mandatory
        self.error = error
        self.dead_letter = dead_letter
        self.cause = cause
        self._visited = visited
        #: True when the trace let the body go to stay within its byte budget.
        self.body_dropped = False

    def drop_body(self) -> None:
        """Let the message body go (the trace's byte budget); the rest stays."""
        m = self.message
        self.message = Message(m.exchange, m.routing_key, m.properties, b"",
                               routing_keys=m.routing_keys)
        self.message.origin = m.origin
        self.body_dropped = True

    @property
    def origin(self) -> str | None:
        """How the message was published when not over AMQP 0-9-1 or in-process: the AMQP 1.0
        link and its address (``"AMQP 1.0 link 'sender' to '/queues/q'"``)."""
        return self.message.origin

    @property
    def routing_key(self) -> str:
        return self.message.routing_key

    @property
    def headers(self) -> dict[str, Any]:
        return self.message.headers

    @property
    def properties(self) -> dict[str, Any]:
        return self.message.properties

    @property
    def body(self) -> bytes:
        return self.message.body

    @property
    def outcome(self) -> str:
        """``"routed"``, ``"returned"`` (mandatory and unroutable), ``"unroutable"`` (dropped)
        or ``"refused"`` (the publish failed with :attr:`error`)."""
        if self.error is not None:
            return "refused"
        if self.queues:
            return "routed"
        return "returned" if self.mandatory else "unroutable"

    @property
    def routed(self) -> bool:
        return bool(self.queues)

    @property
    def alternate_exchanges(self) -> tuple[str, ...]:
        """Names of the exchanges that passed the message on to their alternate exchange."""
        return tuple(x.name for x, _snap, to_ae in self._visited if to_ae)

    def __repr__(self) -> str:
        target = f"queues {list(self.queues)}" if self.queues else self.outcome
        return (f"<RoutingDecision exchange={self.exchange!r} routing_key={self.routing_key!r}"
                f" -> {target}>")

    def explain(self) -> str:
        """Say in words where the message went and why, or why it went nowhere."""
        name = f"'{self.exchange}'" if self.exchange else "'' (the default exchange)"
        how = "Published"
        if self.dead_letter is not None:
            why = self.dead_letter[1] + (f", {self.cause}" if self.cause else "")
            how = f"Dead-lettered from queue '{self.dead_letter[0]}' ({why}) and republished"
        lines = [f"{how} to exchange {name} in vhost '{self.vhost}' with routing key "
                 f"'{self.routing_key}'" + (f", headers {self.headers!r}" if self.headers else "")]
        if self.message.origin is not None and self.dead_letter is None:
            lines.append(f"  through {self.message.origin}")
        if len(self.keys) > 1:
            lines.append(f"  routing keys with CC/BCC: {list(self.keys)}")
        if self.error is not None:
            lines.append(f"  refused: {self.error.reply_code} {self.error.reply_text}")
            return "\n".join(lines)
        if self.queues:
            lines.append(f"  routed to {len(self.queues)} queue(s): "
                         + ", ".join(f"'{q}'" for q in self.queues))
        elif self.dead_letter is not None and not self._visited:
            lines.append("  dropped: the dead-letter exchange does not exist")
        else:
            lines.append("  reached no queue: " + (
                "returned to the publisher (mandatory)" if self.mandatory else "dropped"))
        matched = {id(b) for b in self.matched}
        for exchange, bindings, to_ae in self._visited:
            lines.extend(self._explain_exchange(exchange, bindings, matched))
            if to_ae:
                lines.append(f"    nothing matched: passed on to its alternate exchange "
                             f"'{exchange.alternate_exchange}'"
                             + alternate_exchange_origin(exchange))
            elif exchange.alternate_exchange and not any(
                    b.source is exchange for b in self.matched):
                lines.append(f"    alternate exchange '{exchange.alternate_exchange}' "
                             "does not exist")
        return "\n".join(lines)

    def _explain_exchange(self, exchange: Exchange, bindings: tuple[Binding, ...],
                          matched: set[int]) -> list[str]:
        if exchange.name == "":
            hit = [b for b in self.matched if b.source is exchange]
            if hit:
                return [f"  the default exchange routes to the queue named by the key: "
                        f"{', '.join(repr(b.routing_key) for b in hit)}"]
            return [f"  the default exchange routes to the queue named by the key, and there is "
                    f"no queue {' or '.join(repr(k) for k in self.keys)}"]
        lines = [f"  exchange '{exchange.name}' ({exchange.type}) has {len(bindings)} binding(s)"]
        headers = self.headers
        for binding in bindings:
            target = f"{binding.destination.kind} '{binding.destination.name}'"
            if id(binding) in matched:
                lines.append(f"    matched  -> {target} (key '{binding.routing_key}')")
                continue
            reasons = [exchange.mismatch(binding, key, headers) for key in self.keys]
            reason = next((r for r in reasons if r is not None), "no match")
            lines.append(f"    no match -> {target}: {reason}")
        return lines


@final
class Trace(deque[RoutingDecision]):
    """The most recent routing decisions, oldest first, bounded in number and in the body
    bytes they keep alive: a decision holds its message, so a long run of large messages would
    otherwise keep every body in memory. Past the byte budget, the oldest large bodies are let
    go (their decisions stay, with an empty body and ``body_dropped`` set).

    Args:
        maxlen: how many decisions to keep.
        max_bytes: how many bytes of large bodies (from ``LARGE_BODY`` bytes) they may hold.
    """

    #: Bodies from this size on count against the byte budget (smaller ones are bounded by
    #: ``maxlen`` alone, and cost nothing extra to trace).
    LARGE_BODY = 4096

    def __init__(self, maxlen: int = 10_000, max_bytes: int = 64 * 1024 * 1024) -> None:
        super().__init__(maxlen=maxlen)
        self.max_bytes = max_bytes
        self._large: deque[RoutingDecision] = deque()
        self._bytes = 0

    def hold(self, decision: RoutingDecision) -> None:
        """Count a decision with a large body against the byte budget (the caller appended
        it already)."""
        self._large.append(decision)
        self._bytes += len(decision.message.body)
        while self._bytes > self.max_bytes and len(self._large) > 1:
            oldest = self._large.popleft()
            self._bytes -= len(oldest.message.body)
            oldest.drop_body()

    def clear(self) -> None:
        super().clear()
        self._large.clear()
        self._bytes = 0

    @property
    def body_bytes(self) -> int:
        """Bytes of large bodies the kept decisions hold."""
        return self._bytes
