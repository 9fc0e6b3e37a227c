"""Routing decisions: what every publish did, and why; and what became of the message."""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal, final, overload

from ..fieldtypes import shown
from . import _faults, _history
from ._history import Fate, MessageEvent
from ._message import Message, MessageFields
from ._policy import alternate_exchange_origin

if TYPE_CHECKING:
    from ..errors import AMQPError
    from ._exchange import Binding, Exchange

__all__ = ["Explanation", "Outcome", "RoutingDecision", "Trace", "Visit"]

#: An exchange a message passed through, the bindings it had then (an immutable snapshot), and
#: whether it handed the message to its alternate exchange.
Visit = tuple["Exchange", Sequence["Binding"], bool]

#: A routed publish's decision before it is made (:meth:`Trace.routed`): its fields, then the
#: message's events.
_Unmade = tuple[Any, ...]

#: What became of a publish: it reached queues (``routed``), reached none (``unroutable``, or
#: ``returned`` to a mandatory publisher), every queue it reached refused it because it was
#: full (``overflow``: ``x-overflow`` reject-publish or reject-publish-dlx) or because a test
#: injected a nack (``nacked``, :mod:`embroker.faults`), a delayed-message exchange holds it for
#: its ``x-delay`` and it reached no queue now (``held``), or the publish itself failed
#: (``refused``: no such exchange...).
Outcome = Literal["routed", "unroutable", "returned", "overflow", "nacked", "held", "refused"]


@final
class Explanation(str):
    """The text of :meth:`RoutingDecision.explain`: a ``str`` that shows as text in the REPL
    (its repr is the text itself, not a quoted one-liner)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)

@final
class RoutingDecision(MessageFields):
    """The outcome of one publish, kept on ``broker.trace``, and the life of its message since.

    Attributes:
        vhost: the virtual host.
        exchange: the exchange name published to (``""`` for the default exchange).
        message: the message as routed (``BCC`` already removed).
        keys: the routing keys used: the routing key, then those of ``CC`` and ``BCC``.
        matched: every binding that matched, along the whole path through exchange-to-exchange
            bindings and alternate exchanges.
        mandatory: whether the publish was mandatory.
        error: the error that refused the publish (no such exchange, internal exchange...).
        dead_letter: for a message a queue dead-lettered, ``(queue, reason)``; else ``None``.
        body_dropped: the trace let the body go to stay within its byte budget.
        headers_dropped: the trace let the ``headers`` table go, for the same reason.
        cause: for a dead-lettered message, the policies behind it in words (``"through
            policy 'dlx-all'"``); ``None`` when the queue's own arguments decided.
        notes: what the plugin exchanges on the path said of how they chose (``(exchange,
            words)``: a consistent-hash exchange's bucket, a random exchange's draw...).
        held: the delayed-message exchanges that hold the message, each with when its delay
            runs out on the broker clock (monotonic seconds) and the delay in milliseconds:
            ``(exchange, until, delay)``.
        released: for a delayed message whose delay ran out, ``(exchange, delay in ms)``.
        node: in a cluster of several nodes, the node it was published on (the publishing
            connection's) or, dead-lettered, the node of the queue it left; ``None`` in a
            broker of one node.
    """

    __slots__ = ("_events", "_lock", "_node", "_routed", "_size", "_trace", "_visited", "body_dropped",
                 "cause",
                 "dead_letter", "error", "exchange", "headers_dropped", "held", "keys",
                 "mandatory", "matched", "message", "notes", "released", "vhost")

    #: Set only in a cluster of several nodes (see :attr:`node`): unset, it costs nothing.
    _node: str

    def __init__(self, vhost: str, exchange: str, message: Message, keys: tuple[str, ...],
                 queues: tuple[str, ...] = (), matched: Sequence[Binding] = (),
                 visited: tuple[Visit, ...] = (), mandatory: bool = False,
                 error: AMQPError | None = None,
                 dead_letter: tuple[str, str] | None = None, cause: str | None = None,
                 notes: tuple[tuple[str, str], ...] = (),
                 held: tuple[tuple[str, float, int], ...] = (),
                 released: tuple[str, int] | None = None) -> None:
        self.vhost = vhost
        self.exchange = exchange
        self.message = message
        self.keys = keys
        self._routed = queues
        self.matched = matched
        self.mandatory = mandatory
        self.error = error
        self.dead_letter = dead_letter
        self.cause = cause
        self.notes = notes
        self.held = held
        self.released = released
        self._visited = visited
        self.body_dropped = False
        self.headers_dropped = False
        # The message's events (shared with the message while it lives), or None when the
        # trace records none; and the bytes the trace's budget counts for this decision.
        self._events: list[tuple[Any, ...]] | None = None
        self._size = 0
        # The broker's lock, which every change to what the decision reads (its events, the
        # exchanges it visited, its message when the trace lets it go) happens under; set by
        # the trace that records it. Reads that need more than one attribute take it.
        self._lock: AbstractContextManager[object] = _UNRECORDED
        # The trace that recorded it (what names exist now, for explain()'s hints).
        self._trace: Trace | None = None

    def let_go(self) -> None:
        """Let the message body and headers go (the trace's byte budget); the rest stays, and
        so does the history."""
        with self._lock:
            self._let_go()

    def _let_go(self) -> None:
        m = self.message
        properties = m.properties
        if properties.get("headers"):
            properties = {k: v for k, v in properties.items() if k != "headers"}
            self.headers_dropped = True
        self.message = Message(m.exchange, m.routing_key, properties, b"",
                               routing_keys=m.routing_keys)
        self.message.origin = m.origin
        self.body_dropped = bool(m.body)

    drop_body = let_go

    @property
    def node(self) -> str | None:
        """In a cluster of several nodes, the node it was published on (the publishing
        connection's), or for a dead-lettered copy the node of the queue it left; ``None`` in
        a broker of one node (a slot set only then: a broker of one node pays nothing)."""
        return getattr(self, "_node", None)

    @property
    def origin(self) -> str | None:
        """How the message was published when not over AMQP 0-9-1 or in-process: the AMQP 1.0
        link and its address (``"AMQP 1.0 link 'sender' to '/queues/q'"``)."""
        return self.message.origin

    def json(self) -> Any:
        """The body parsed as JSON.

        Raises:
            ValueError: the body is not JSON (or the trace let it go: ``body_dropped``).
        """
        with self._lock:
            dropped, body = self.body_dropped, self.message.body
        if dropped:
            raise ValueError("the trace let this decision's body go (its byte budget, "
                             "trace_bytes, was reached): there is no body to parse")
        try:
            return json.loads(body)
        except ValueError as exc:
            raise ValueError(f"the body is not JSON ({exc}): {body[:80]!r}") from None

    @property
    def queues(self) -> tuple[str, ...]:
        """The names of the queues that took the message, in RabbitMQ's delivery order: sorted
        by name (``lists:usort`` of the routed queues), whatever the order of the bindings
        (a queue that refused it because it was full is in :attr:`refused` instead).

        >>> from embroker import Broker
        >>> ch = Broker().connect().channel()
        >>> for q in ("zeta", "alpha"):
        ...     _ = ch.queue_declare(q); ch.queue_bind(q, "amq.fanout")
        >>> ch.basic_publish("amq.fanout", "", b"m")
        >>> ch.connection.broker.trace[-1].queues
        ('alpha', 'zeta')
        """
        events = self._events
        if events is not None:
            with self._lock:
                refused = {e[1] for e in events if e[0] == _history.REFUSED}
            if refused:
                return tuple(q for q in self._routed if q not in refused)
        return self._routed

    @property
    def refused(self) -> tuple[tuple[str, str], ...]:
        """The queues the message reached that refused it because they were full, with their
        ``x-overflow`` (``reject-publish`` or ``reject-publish-dlx``): ``(queue, overflow)``."""
        events = self._events
        if events is None:
            return ()
        with self._lock:
            return tuple((e[1], e[3]) for e in events if e[0] == _history.REFUSED)

    @property
    def nacked(self) -> bool:
        """Whether the publisher (in confirm mode) got a nack for it (a queue refused it)."""
        events = self._events
        if events is None:
            return False
        with self._lock:
            return any(e[0] == _history.CONFIRM_NACK for e in events)

    @property
    def outcome(self) -> Outcome:
        """``"routed"`` (some queue took it), ``"overflow"`` (every queue it reached refused
        it: full), ``"nacked"`` (a test injected a nack), ``"held"`` (a delayed-message exchange
        holds it, and no queue took it now), ``"returned"`` (mandatory and unroutable),
        ``"unroutable"`` (dropped) or ``"refused"`` (the publish failed with :attr:`error`).
        A held mandatory message is ``"held"``, though RabbitMQ returned it to its publisher
        (the delayed-message plugin does not support mandatory)."""
        if self.error is not None:
            return "refused"
        with self._lock:
            if self.queues:
                return "routed"
            if self._routed:
                return ("nacked" if any(how == _faults.NACK_INJECTED for _q, how in self.refused)
                        else "overflow")
        if self.held:
            return "held"
        return "returned" if self.mandatory else "unroutable"

    @property
    def routed(self) -> bool:
        return bool(self.queues)

    @property
    def alternate_exchanges(self) -> tuple[str, ...]:
        """Names of the exchanges that passed the message on to their alternate exchange."""
        return tuple(x.name for x, _snap, to_ae in self._visited if to_ae)

    # -- the message's life -------------------------------------------------------------------

    def history(self) -> list[MessageEvent]:
        """What happened to the message after routing, oldest first: deliveries, acks,
        rejections, requeues, expiry, dead-lettering... (empty when the broker records no
        events: ``trace_events=False``). A snapshot taken under the broker's lock."""
        if self._events is None:
            return []
        with self._lock:
            return _history.events_of(self._events)

    def fate(self) -> list[Fate]:
        """Where the message is now in each queue it reached (ready, unacked, acked, expired,
        dead-lettered...), from its last event there."""
        return _history.fates(self._routed, self.history())

    def __repr__(self) -> str:
        with self._lock:
            queues = self.queues
            target = f"queues {list(queues)}" if queues else self.outcome
            refused = self.refused
        if refused:
            target += ", refused by " + ", ".join(f"'{q}' ({how})" for q, how in refused)
        return (f"<RoutingDecision exchange={self.exchange!r} routing_key={self.routing_key!r}"
                f" -> {target}>")

    def explain(self, *, suggest: bool = True) -> Explanation:
        """Say in words where the message went and why, or why it went nowhere, and where it
        is now. The text shows as text in the REPL (see :class:`Explanation`). Written under
        the broker's lock, from one consistent state.

        With ``suggest``, an exchange or queue that does not exist is followed by the name it
        was most likely meant to be, if the vhost has one now (``did you mean 'orders'?``: a
        comparison with up to a few hundred names, milliseconds at most).
        """
        with self._lock:
            return Explanation("\n".join(self._explain_lines(suggest)))

    def _hint(self, kind: str, name: str, suggest: bool) -> str:
        """``"; did you mean 'orders'?"``, or ``""``."""
        trace = self._trace
        if not suggest or trace is None or trace.suggest is None:
            return ""
        meant = trace.suggest(self.vhost, kind, name)
        return f"; did you mean '{meant}'?" if meant is not None else ""

    def _explain_lines(self, suggest: bool) -> list[str]:
        name = f"'{self.exchange}'" if self.exchange else "'' (the default exchange)"
        node = self.node
        on = f" on node '{node}'" if node is not None else ""
        how = f"Published{on}"
        if self.dead_letter is not None:
            why = self.dead_letter[1] + (f", {self.cause}" if self.cause else "")
            how = (f"Dead-lettered from queue '{self.dead_letter[0]}' ({why}){on} and "
                   "republished")
        elif self.released is not None:
            how = (f"Released after its x-delay of {self.released[1]} ms by x-delayed-message "
                   f"exchange '{self.released[0]}' and published again")
        headers = self.headers
        lines = [f"{how} to exchange {name} in vhost '{self.vhost}' with routing key "
                 f"'{self.routing_key}'" + (f", headers {shown(headers)}" if headers else "")]
        if self.headers_dropped or self.body_dropped:
            lines.append("  (the trace let this message's "
                         + " and ".join(w for w, gone in (("body", self.body_dropped),
                                                           ("headers", self.headers_dropped))
                                        if gone)
                         + " go to stay within its byte budget)")
        if self.message.origin is not None and self.dead_letter is None:
            lines.append(f"  through {self.message.origin}")
        if len(self.keys) > 1:
            lines.append(f"  routing keys with CC/BCC: {list(self.keys)}")
        if self.error is not None:
            missing = self.error.missing
            lines.append(f"  refused: {self.error.reply_code} {self.error.reply_text}"
                         + (self._hint(*missing, suggest) if missing else ""))
            return lines
        queues = self.queues
        refused = self.refused
        for xname, _until, delay in self.held:
            lines.append(f"  held until +{_seconds(delay / 1000)} s by x-delayed-message "
                         f"exchange '{xname}' (x-delay {delay}), then routed through its "
                         "bindings of that moment")
        if queues:
            lines.append(f"  routed to {len(queues)} queue(s): "
                         + ", ".join(f"'{q}'" for q in queues))
        elif self.held:
            lines.append("  reached no queue now" + (
                ": returned to the publisher (mandatory: the plugin cannot know where the "
                "message will go)" if self.mandatory else ""))
        elif refused:
            lines.append("  reached queues, but every one refused it")
        elif self.dead_letter is not None and not self._visited:
            lines.append("  dropped: the dead-letter exchange does not exist")
        else:
            lines.append("  reached no queue: " + (
                "returned to the publisher (mandatory)" if self.mandatory else "dropped"))
        for queue, overflow in refused:
            lines.append(f"  refused by queue '{queue}': " + (
                "a nack injected by a test (embroker.faults)"
                if overflow == _faults.NACK_INJECTED else f"full (x-overflow {overflow})"))
        if self.nacked:
            lines.append("  the publisher's confirm was a nack")
        matched = {id(b) for b in self.matched}
        notes: dict[str, list[str]] = {}
        for xname, note in self.notes:
            notes.setdefault(xname, []).append(note)
        for exchange, bindings, to_ae in self._visited:
            lines.extend(self._explain_exchange(exchange, bindings, matched, suggest))
            lines.extend(f"    {note}" for note in notes.get(exchange.name, ()))
            if to_ae:
                lines.append(f"    nothing matched: passed on to its alternate exchange "
                             f"'{exchange.alternate_exchange}'"
                             + alternate_exchange_origin(exchange))
            elif exchange.alternate_exchange and not any(
                    b.source is exchange for b in self.matched):
                lines.append(f"    alternate exchange '{exchange.alternate_exchange}' "
                             "does not exist")
        lines.extend(self._fate_lines("  now: ", 0))
        lines.extend(self._release_lines())
        return lines

    def _release_lines(self) -> list[str]:
        if self._events is None:
            return []
        lines = []
        for event in _history.events_of(self._events):
            if event.kind == _history.RELEASED:
                lines.append(f"  now: {event}")
                target = event.decision
                if target is not None:
                    lines.extend(target._fate_lines("       then ", 1))
        if self.held and not lines:
            lines.append("  now: held, waiting for its delay to run out")
        return lines

    def _fate_lines(self, prefix: str, depth: int) -> list[str]:
        if self._events is None:
            return []
        lines = []
        for fate in self.fate():
            if fate.state == "refused":
                continue  # said above
            lines.append(f"{prefix}{self._queue_where(fate)}")
            target = fate.event.decision if fate.event is not None else None
            if fate.state == "dead_lettered" and target is not None and depth < 4:
                lines.extend(target._fate_lines(" " * len(prefix) + "then ", depth + 1))
        return lines

    def _queue_where(self, fate: Fate) -> str:
        """``str(fate)``, with its queue's node in a cluster of several nodes (``queue 'q' on
        node 'N' (down): ...``)."""
        trace = self._trace
        where = (trace.placement(self.vhost, fate.queue)
                 if trace is not None and trace.placement is not None else None)
        if where is None:
            return str(fate)
        node, down = where
        return (f"queue '{fate.queue}' on node '{node}'" + (" (down)" if down else "")
                + f": {_history.fate_text(fate)}")

    def _explain_exchange(self, exchange: Exchange, bindings: Sequence[Binding],
                          matched: set[int], suggest: bool) -> list[str]:
        if exchange.name == "":
            hit = [b for b in self.matched if b.source is exchange]
            if hit:
                return [f"  the default exchange routes to the queue named by the key: "
                        f"{', '.join(repr(b.routing_key) for b in hit)}"]
            return [f"  the default exchange routes to the queue named by the key, and there is "
                    f"no queue {' or '.join(repr(k) for k in self.keys)}"
                    + self._hint("queue", self.keys[0], suggest)]
        lines = [f"  exchange '{exchange.name}' ({exchange.type}) has {len(bindings)} binding(s)"]
        headers = self.headers
        holds = any(name == exchange.name for name, _until, _delay in self.held)
        for binding in bindings:
            target = f"{binding.destination.kind} '{binding.destination.name}'"
            if holds:
                lines.append(f"    waiting  -> {target} (key '{binding.routing_key}'): "
                             "consulted when the delay runs out")
                continue
            if id(binding) in matched:
                lines.append(f"    matched  -> {target} (key '{binding.routing_key}')")
                continue
            reasons = [exchange.mismatch(binding, key, headers) for key in self.keys]
            reason = next((r for r in reasons if r is not None), "no match")
            lines.append(f"    no match -> {target}: {reason}")
        return lines


def _seconds(value: float) -> str:
    """Seconds for people: ``5``, ``0.25``, ``90``."""
    return f"{value:.3f}".rstrip("0").rstrip(".") or "0"


#: The lock of a decision no trace recorded (nothing changes it).
_UNRECORDED: AbstractContextManager[object] = contextlib.nullcontext()

#: Header tables whose wire encoding is smaller than this are not measured (they cost little).
_SMALL_ENCODED_PROPERTIES = 512


def _deep_size(value: Any, depth: int = 0) -> int:
    """About how many bytes of memory ``value`` (a field value of a header table) takes."""
    size = sys.getsizeof(value)
    if depth > 32:
        return size
    if isinstance(value, dict):
        for key, item in value.items():
            size += sys.getsizeof(key) + _deep_size(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            size += _deep_size(item, depth + 1)
    return size


#: A header table with at most this many entries, each a number or a short string, is small.
_SMALL_HEADERS = 32
_SHORT = 256


def _small_headers(headers: dict[str, Any]) -> bool:
    if len(headers) > _SMALL_HEADERS:
        return False
    for value in headers.values():
        if isinstance(value, (str, bytes)):
            if len(value) > _SHORT:
                return False
        elif not isinstance(value, (int, float)) and value is not None:
            return False  # a table, an array, a decimal...: measure it
    return True


def message_size(message: Message) -> int:
    """The bytes the trace counts for a message it keeps: its body, and its header table when
    that is not small (about what it takes in memory). Small tables (a few numbers and short
    strings, or a short encoding off the wire) are not measured: they cost little."""
    size = len(message.body)
    headers = message.properties.get("headers")
    if headers:
        encoded = message.encoded_properties
        if encoded is not None:
            if len(encoded) >= _SMALL_ENCODED_PROPERTIES:
                size += _deep_size(headers)
        elif not _small_headers(headers):
            size += _deep_size(headers)
    return size


@final
class Trace(Sequence[RoutingDecision]):
    """The most recent routing decisions, oldest first, bounded in number and in the bytes
    they keep alive: a decision holds its message, so a long run of large messages (large
    bodies or large header tables) would otherwise keep them all in memory. Past the byte
    budget, the oldest large messages are let go (their decisions stay, with an empty body and
    no headers, ``body_dropped`` / ``headers_dropped`` set, and their history).

    A message still in a queue is the same object as the one its decision holds (kept by
    reference, not copied); the budget counts it all the same, as what the trace keeps alive.

    A read-only sequence, safe from any thread while a listener serves clients: ``len``,
    indexing (``trace[-1]``), slicing (``trace[-5:]``, a list), iteration, ``reversed``, ``in``
    and :meth:`snapshot` read under the broker's lock (iterating works on a snapshot). The
    only changes are the model's recording, :meth:`pop` and :meth:`clear`, all under that lock
    and all accounted in the byte budget.

    Args:
        maxlen: how many decisions to keep.
        max_bytes: how many bytes of large messages (from ``LARGE_BODY`` bytes, body and
            header table together) they may hold.
        events: whether to record what happens to messages after routing (their history).
        lock: the broker's lock.
    """

    #: Messages from this size on (body and headers) count against the byte budget (smaller
    #: ones are bounded by ``maxlen`` alone, and cost nothing extra to trace).
    LARGE_BODY = 4096

    def __init__(self, maxlen: int = 10_000, max_bytes: int = 64 * 1024 * 1024, *,
                 events: bool = True, lock: threading.RLock | None = None) -> None:
        # Oldest first. The newest ``_unmade`` entries are a publish's fields not yet made
        # into its decision (:meth:`routed`): the first read makes them (:meth:`_made`).
        self._decisions: deque[RoutingDecision | _Unmade] = deque(maxlen=maxlen)
        self._unmade = 0
        self._maxlen = maxlen
        self.max_bytes = max_bytes
        #: Whether messages record their lifecycle events (see ``RoutingDecision.history``).
        self.events = events
        self._lock = lock if lock is not None else threading.RLock()
        # The decisions whose message counts against the byte budget, oldest first (each
        # one's ``_size``), and the bytes they count together.
        self._large: deque[RoutingDecision] = deque()
        self._bytes = 0
        #: How many decisions were ever recorded (a bookmark: ``trace.total`` now, and later
        #: the decisions since are the last ``trace.total - bookmark``).
        self.total = 0
        #: ``(vhost, kind, name) -> the name meant, or None``: the broker's, for the hints of
        #: ``explain()`` (a trace of its own has none).
        self.suggest: Callable[[str, str, str], str | None] | None = None
        #: ``(vhost, queue) -> (its node's name, whether it is down)``, or ``None`` (a broker
        #: of one node, or no such queue): the broker's, for ``explain()``'s "now" lines.
        self.placement: Callable[[str, str], tuple[str, bool] | None] | None = None

    @property
    def maxlen(self) -> int:
        """How many decisions the trace keeps (the broker's ``trace_limit``)."""
        return self._maxlen

    # -- changes: the model's recording, pop and clear -------------------------------------------

    def record(self, decision: RoutingDecision) -> None:
        """Keep a new decision. The model calls this once per publish, holding the broker's
        lock (so it takes none itself: this is the publish path)."""
        self._made()
        decisions = self._decisions
        large = self._large
        if large and len(decisions) == self._maxlen and decisions[0] is large[0]:
            self._bytes -= large.popleft()._size  # the oldest goes, by count
        decisions.append(decision)
        decision._lock = self._lock
        decision._trace = self
        self.total += 1
        message = decision.message
        if self.events:
            message.history = decision._events = []
        properties = message.properties
        if properties and "headers" in properties:
            size = message_size(message)
            if size >= self.LARGE_BODY:
                self._hold(decision, size)
        elif len(message.body) >= self.LARGE_BODY:
            self._hold(decision, len(message.body))

    def routed(self, vhost: str, exchange: str, message: Message, keys: tuple[str, ...],
               queues: tuple[str, ...], matched: Sequence[Binding],
               visited: tuple[Visit, ...], mandatory: bool) -> None:
        """:meth:`record` a routed publish's decision, made only when the trace is first read
        after it: the publish path keeps the decision's fields (and the message's history, when
        events are kept), nothing more. A message the byte budget counts is recorded at once."""
        properties = message.properties
        if (len(message.body) >= self.LARGE_BODY or (properties and "headers" in properties
                and message_size(message) >= self.LARGE_BODY)):
            self.record(RoutingDecision(vhost, exchange, message, keys, queues, matched,
                                        visited, mandatory))
            return
        decisions = self._decisions
        large = self._large
        if large and len(decisions) == self._maxlen and decisions[0] is large[0]:
            self._bytes -= large.popleft()._size  # the oldest goes, by count
        events = None
        if self.events:
            events = message.history = []
        decisions.append((vhost, exchange, message, keys, queues, matched, visited, mandatory,
                          events))
        self._unmade += 1
        self.total += 1

    def _made(self) -> deque[RoutingDecision]:
        """The decisions, each one made (under the broker's lock): O(publishes since the
        last read)."""
        decisions = self._decisions
        unmade = self._unmade
        if unmade:
            self._unmade = 0
            count = min(unmade, len(decisions))  # (the oldest may have gone, by count)
            fields: list[_Unmade] = [decisions.pop() for _ in range(count)]  # type: ignore[misc]
            fields.reverse()
            for vhost, exchange, message, keys, queues, matched, visited, mandatory, events \
                    in fields:
                decision = RoutingDecision(vhost, exchange, message, keys, queues, matched,
                                           visited, mandatory)
                decision._events = events
                decision._lock = self._lock
                decision._trace = self
                decisions.append(decision)
        return decisions  # type: ignore[return-value]

    def on_node(self, node: str, message: Message | None = None) -> None:
        """Say that the newest decision (``message``'s, when given) happened on node ``node``
        (a cluster of several nodes: the model calls this, under the broker's lock, right
        after recording it)."""
        decisions = self._made()
        if decisions and (message is None or decisions[-1].message is message):
            decisions[-1]._node = node

    def _hold(self, decision: RoutingDecision, size: int) -> None:
        decision._size = size
        self._large.append(decision)
        self._bytes += size
        while self._bytes > self.max_bytes and len(self._large) > 1:
            oldest = self._large.popleft()
            self._bytes -= oldest._size
            oldest._size = 0
            oldest._let_go()

    def pop(self) -> RoutingDecision:
        """Take back the newest decision, and what the byte budget counted for it
        (:func:`embroker.testing.route` does, to leave the trace as it found it).

        Raises:
            IndexError: the trace is empty.
        """
        with self._lock:
            decision = self._made().pop()
            self.total -= 1
            if self._large and self._large[-1] is decision:
                self._large.pop()
                self._bytes -= decision._size
                decision._size = 0
            return decision

    def clear(self) -> None:
        """Forget every decision (``broker.reset()`` does); the byte budget is free again.
        :attr:`total` goes on counting."""
        with self._lock:
            self._decisions.clear()
            self._unmade = 0
            for decision in self._large:
                decision._size = 0
            self._large.clear()
            self._bytes = 0

    # -- reads: each one under the broker's lock -------------------------------------------------

    def __len__(self) -> int:
        return len(self._decisions)

    @overload
    def __getitem__(self, index: int) -> RoutingDecision: ...

    @overload
    def __getitem__(self, index: slice) -> list[RoutingDecision]: ...

    def __getitem__(self, index: int | slice) -> RoutingDecision | list[RoutingDecision]:
        """``trace[-1]``: one decision; ``trace[-5:]``: a list of them.

        Complexity: O(1) at either end; a slice costs its length plus its distance from the
        nearer end (a step other than 1: the length of the trace).
        """
        with self._lock:
            decisions = self._made()
            if not isinstance(index, slice):
                return decisions[index]
            size = len(decisions)
            start, stop, step = index.indices(size)
            if step != 1:
                return list(decisions)[index]
            if stop <= start:
                return []
            if stop <= size - start:  # nearer the left end
                return list(itertools.islice(decisions, start, stop))
            taken = list(itertools.islice(reversed(decisions), size - stop, size - start))
            taken.reverse()
            return taken

    def __iter__(self) -> Iterator[RoutingDecision]:
        """Iterate over a snapshot: the listener may record decisions meanwhile."""
        with self._lock:
            return iter(tuple(self._made()))

    def __reversed__(self) -> Iterator[RoutingDecision]:
        with self._lock:
            return iter(tuple(reversed(self._made())))

    def __contains__(self, value: object) -> bool:
        with self._lock:
            return any(decision is value for decision in self._made())

    def index(self, value: Any, start: int = 0, stop: int = sys.maxsize) -> int:
        """Where ``value`` is in the trace now.

        Raises:
            ValueError: it is not there.
        """
        snapshot = self.snapshot()
        for position in range(*slice(start, stop).indices(len(snapshot))):
            if snapshot[position] is value:
                return position
        raise ValueError(f"{value!r} is not in the trace")

    def count(self, value: Any) -> int:
        with self._lock:
            return sum(1 for decision in self._made() if decision is value)

    def snapshot(self) -> list[RoutingDecision]:
        """The decisions now, oldest first, as a list (taken under the broker's lock)."""
        with self._lock:
            return list(self._made())

    def __repr__(self) -> str:
        with self._lock:
            return (f"<Trace {len(self._decisions)} decision(s) of at most {self._maxlen}, "
                    f"{self._bytes} bytes kept>")

    @property
    def kept_bytes(self) -> int:
        """Bytes of large messages (bodies and header tables) the kept decisions hold."""
        return self._bytes

    body_bytes = kept_bytes

    def _check(self) -> None:
        """Assert every internal invariant (for tests)."""
        with self._lock:
            decisions = self._made()
            assert len(decisions) <= self._maxlen
            assert self.total >= len(decisions)
            kept = {id(decision) for decision in decisions}
            assert all(id(decision) in kept for decision in self._large), \
                "the byte budget counts a decision the trace no longer has"
            order = [d for d in decisions if d._size]
            assert order == list(self._large), "the budget's decisions are not the trace's own"
            assert self._bytes == sum(d._size for d in self._large), (
                f"the budget counts {self._bytes} bytes, its decisions hold "
                f"{sum(d._size for d in self._large)}")
            assert self._bytes <= self.max_bytes or len(self._large) <= 1
