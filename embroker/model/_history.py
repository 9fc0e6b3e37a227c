"""What happened to a message after routing: its lifecycle events, and where it is now.

Theory of operation
-------------------
A routing decision (``broker.trace``) says where a publish went. What happened next (a
consumer got it, acked it, rejected it; it expired, was pushed out by a length limit,
dead-lettered, purged...) is recorded as *events* on the message, at the one place in the model
where each of those facts is decided:

=================  ============================================================================
event              recorded by
=================  ============================================================================
``refused``        ``Queue.publish``: ``x-overflow`` reject-publish(-dlx) and the queue full
``returned``       ``Channel._publish``: mandatory and reached no queue (basic.return)
``confirm_nack``   ``Channel.basic_publish``: the publisher's confirm was a nack
``delivered``      ``Channel._deliver`` / ``ReplyConsumer.deliver``: basic.deliver to a consumer
``got``            ``Channel.basic_get``: basic.get-ok
``acked``          ``Channel._settle``: basic.ack (or tx.commit of one)
``rejected``       ``Channel._settle``: basic.reject / basic.nack, with or without requeue
``requeued``       ``Channel._return_to_queues``: back to its queue (nack, recover, closed)
``expired``        ``Queue._expire_head``: its TTL ran out at the head of the queue
``evicted``        ``Queue._drop_head``: pushed out by ``x-max-length(-bytes)``, drop-head
``delivery_limit`` ``Queue.requeue``: a quorum queue's ``x-delivery-limit`` was passed
``dead_lettered``  ``VirtualHost.dead_letter``: republished to the dead-letter exchange
``purged``         ``Channel.queue_purge``; ``deleted``: its queue was deleted while it waited;
                   ``lost``: a restart dropped it (not persistent, or not a durable queue)
``held``           ``DelayedMessages.hold``: a delayed-message exchange holds it for its x-delay
``released``       ``DelayedMessages``: its delay ran out and it was routed again (its decision)
``replayed``       ``RecentHistoryExchange.before_bind``: a recent-history exchange replayed it
                   to a new binding
=================  ============================================================================

The events live in a plain list shared by the message and its decision (no reference cycle:
the decision holds the list, the message holds the list, the list holds neither). They are
compact tuples, ``(kind, queue, time, *details)``, made on the delivery path, and become
:class:`MessageEvent` records only when read. A message keeps at most :data:`LIMIT` events: past
that, the oldest half goes and a ``truncated`` event says how many went. A message with no
event list (the broker was made with ``trace_events=False``) records nothing, at the cost of
one attribute test per fact.

Where a message is *now* follows from its last event in each queue (:func:`fates`): ready when
there is none or it was requeued, unacked after a delivery, and so on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

from ._policy import limit_cause

if TYPE_CHECKING:
    from ._channel import Channel
    from ._clock import Clock
    from ._message import Message, QueuedMessage
    from ._queue import Queue
    from ._trace import RoutingDecision

__all__ = ["LIMIT", "EventKind", "Fate", "FateState", "MessageEvent", "RequeueCause", "events_of",
           "fates"]

#: What can happen to a message after routing.
EventKind = Literal["delivered", "got", "acked", "rejected", "requeued", "expired", "evicted",
                    "delivery_limit", "refused", "dead_lettered", "purged", "deleted", "lost",
                    "returned", "confirm_nack", "truncated", "held", "released", "replayed"]
#: Why a delivered message went back to its queue.
RequeueCause = Literal["basic.nack", "basic.reject", "basic.recover", "tx.commit",
                       "channel closed", "connection closed"]
#: Where a message is (or ended) in one queue.
FateState = Literal["ready", "unacked", "acked", "consumed", "rejected", "dead_lettered",
                    "expired", "evicted", "delivery_limit", "refused", "purged", "deleted", "lost"]

#: How many events one message keeps (the oldest half goes first).
LIMIT = 32

DELIVERED: Final = "delivered"
GOT: Final = "got"
ACKED: Final = "acked"
REJECTED: Final = "rejected"
REQUEUED: Final = "requeued"
EXPIRED: Final = "expired"
EVICTED: Final = "evicted"
DELIVERY_LIMIT: Final = "delivery_limit"
REFUSED: Final = "refused"
DEAD_LETTERED: Final = "dead_lettered"
PURGED: Final = "purged"
DELETED: Final = "deleted"
LOST: Final = "lost"
RETURNED: Final = "returned"
CONFIRM_NACK: Final = "confirm_nack"
#: The reason a queue "refused" a publish a test had nacked (:mod:`embroker.faults`).
NACK_INJECTED: Final = "nack-injected"
TRUNCATED: Final = "truncated"
HELD: Final = "held"
RELEASED: Final = "released"
REPLAYED: Final = "replayed"
#: The pseudo-queue direct reply-to deliveries are recorded under.
REPLY_QUEUE = "amq.rabbitmq.reply-to"


class MessageEvent(NamedTuple):
    """One thing that happened to a message after routing (see :meth:`RoutingDecision.history`).

    Only the fields that apply to its ``kind`` are set; the others are ``None``.
    """

    #: What happened.
    kind: EventKind
    #: The queue it happened in (``None`` for ``returned`` and ``confirm_nack``).
    queue: str | None
    #: When, on the broker clock's monotonic time (seconds).
    time: float
    #: delivered: the consumer's tag.
    consumer_tag: str | None = None
    #: delivered, got, acked, rejected, confirm_nack: the connection's name.
    connection: str | None = None
    #: delivered, got, acked, rejected, confirm_nack: the channel's number.
    channel: int | None = None
    #: delivered, got, acked, rejected: the delivery tag (confirm_nack: the publish's sequence
    #: number).
    delivery_tag: int | None = None
    #: delivered, got: whether it was marked redelivered.
    redelivered: bool | None = None
    #: delivered, got: whether the consumer or get was auto-ack (no_ack).
    auto_ack: bool | None = None
    #: rejected: whether it was to go back to its queue.
    requeue: bool | None = None
    #: rejected: the method (basic.reject, basic.nack); requeued: why (:data:`RequeueCause`).
    cause: str | None = None
    #: refused: the overflow behaviour; dead_lettered: the reason (rejected, expired, maxlen,
    #: delivery_limit).
    reason: str | None = None
    #: dead_lettered: the dead-letter exchange; held, released: the delayed-message exchange;
    #: replayed: the recent-history exchange.
    exchange: str | None = None
    #: dead_lettered: the routing decision of the republished message (``None`` when the
    #: dead-letter exchange does not exist); released: the decision of the delayed message's
    #: routing when its delay ran out.
    decision: RoutingDecision | None = None
    #: truncated: how many earlier events were let go.
    dropped: int | None = None
    #: held: when the delay runs out, on the broker clock's monotonic time (seconds).
    until: float | None = None
    #: delivered, got, acked, rejected, confirm_nack, in a cluster of several nodes: the node
    #: of the channel's connection (``None`` in a broker of one node).
    node: str | None = None

    def __str__(self) -> str:
        return _describe(self)

    def __repr__(self) -> str:
        # The fields that apply to its kind only (the others are None).
        shown = ", ".join(f"{name}={value!r}" for name, value in zip(self._fields, self,
                                                                      strict=True)
                          if value is not None)
        return f"MessageEvent({shown})"


#: The detail fields of each kind's compact tuple, after (kind, queue, time); "_channel" is the
#: model channel, read as its connection's name and its number.
_FIELDS: dict[str, tuple[str, ...]] = {
    DELIVERED: ("consumer_tag", "_channel", "delivery_tag", "redelivered", "auto_ack"),
    GOT: ("_channel", "delivery_tag", "redelivered", "auto_ack"),
    ACKED: ("_channel", "delivery_tag"),
    REJECTED: ("_channel", "delivery_tag", "requeue", "cause"),
    REQUEUED: ("cause",),
    REFUSED: ("reason", "cause"),
    EXPIRED: ("cause",),
    EVICTED: ("cause",),
    DELIVERY_LIMIT: ("cause",),
    DEAD_LETTERED: ("reason", "exchange", "decision"),
    CONFIRM_NACK: ("_channel", "delivery_tag"),
    TRUNCATED: ("dropped",),
    HELD: ("exchange", "until"),
    RELEASED: ("exchange", "decision"),
    REPLAYED: ("exchange",),
}


def events_of(events: Sequence[tuple[Any, ...]] | None) -> list[MessageEvent]:
    """The compact tuples of a message as :class:`MessageEvent` records, oldest first. Call
    under the broker's lock (the events change under it: a truncation takes two steps)."""
    if not events:
        return []
    out = []
    for event in events:
        kind, queue, time, *rest = event
        fields = dict(zip(_FIELDS.get(kind, ()), rest, strict=True))
        channel = fields.pop("_channel", None)
        if channel is not None:
            connection = channel.connection
            fields["connection"] = connection.name
            fields["channel"] = channel.number
            node = connection.node
            if len(node.broker.nodes) > 1:
                fields["node"] = node.name
        out.append(MessageEvent(kind, queue, time, **fields))
    return out


# -- recording: one function per fact, called where the model decides it -----------------------

def _append(events: list[tuple[Any, ...]], event: tuple[Any, ...]) -> None:
    if len(events) >= LIMIT:
        drop = LIMIT // 2
        first = events[0]
        if first[0] == TRUNCATED:
            del events[1:1 + drop]
            events[0] = (TRUNCATED, None, first[2], first[3] + drop)
        else:
            del events[:drop]
            events.insert(0, (TRUNCATED, None, event[2], drop))
    events.append(event)


# The channel is kept in the tuple (its connection's name and its number are read when the
# events are): the cheapest thing to record on the delivery path.

def delivered(channel: Channel, queue: str, entry_message: Message, consumer_tag: str, tag: int,
              redelivered: bool, auto_ack: bool) -> None:
    events = entry_message.history
    if events is not None:
        event = (DELIVERED, queue, channel._clock.monotonic(), consumer_tag, channel,
                 tag, redelivered, auto_ack)
        if len(events) < LIMIT:
            events.append(event)
        else:
            _append(events, event)


def got(channel: Channel, queue: str, entry: QueuedMessage, tag: int, auto_ack: bool) -> None:
    events = entry.message.history
    if events is not None:
        event = (GOT, queue, channel._clock.monotonic(), channel, tag,
                 entry.redelivered, auto_ack)
        if len(events) < LIMIT:
            events.append(event)
        else:
            _append(events, event)


def settled(channel: Channel, taken: Iterable[tuple[int, Any]], ack: bool, requeue: bool,
            cause: str) -> None:
    """Deliveries a client acknowledged (``ack``) or rejected; ``taken`` holds (tag, Unacked)."""
    now = None
    for tag, (queue, entry, _consumer) in taken:
        events = entry.message.history
        if events is None:
            continue
        if now is None:
            now = channel._clock.monotonic()
        _append(events, (ACKED, queue.name, now, channel, tag) if ack else
                (REJECTED, queue.name, now, channel, tag, requeue, cause))


def acked(channel: Channel, tag: int, queue: Queue, entry: QueuedMessage) -> None:
    """One delivery acknowledged (``settled`` for one, on a consumer's hot path)."""
    events = entry.message.history
    if events is not None:
        event = (ACKED, queue.name, channel._clock.monotonic(), channel, tag)
        if len(events) < LIMIT:
            events.append(event)
        else:
            _append(events, event)


def requeued(clock: Clock, queue: Queue, entries: Iterable[QueuedMessage], cause: str) -> None:
    kind = DELETED if queue.deleted else REQUEUED
    now = None
    for entry in entries:
        events = entry.message.history
        if events is not None:
            if now is None:
                now = clock.monotonic()
            _append(events, (kind, queue.name, now, cause) if kind == REQUEUED
                    else (kind, queue.name, now))


def left(clock: Clock, queue: Queue, messages: Iterable[Message], kind: str) -> None:
    """Messages that left ``queue`` without a client: ``expired``, ``evicted``,
    ``delivery_limit`` (with the policies behind the limit, if any), ``purged``, ``deleted`` or
    ``lost``."""
    now = None
    name = queue.name
    limited = kind in (EXPIRED, EVICTED, DELIVERY_LIMIT)
    for message in messages:
        events = message.history
        if events is not None:
            if now is None:
                now = clock.monotonic()
            if limited:
                _append(events, (kind, name, now, limit_cause(queue, kind, message)))
            else:
                _append(events, (kind, name, now))


def refused(clock: Clock, queue: Queue, message: Message, overflow: str) -> None:
    events = message.history
    if events is not None:
        cause = limit_cause(queue, REFUSED) if overflow != NACK_INJECTED else None
        _append(events, (REFUSED, queue.name, clock.monotonic(), overflow, cause))


def dead_lettered(clock: Clock, queue: str, message: Message, reason: str, exchange: str,
                  decision: RoutingDecision | None) -> None:
    events = message.history
    if events is not None:
        _append(events, (DEAD_LETTERED, queue, clock.monotonic(), reason, exchange, decision))


def held(clock: Clock, message: Message, exchange: str, until: float) -> None:
    events = message.history
    if events is not None:
        _append(events, (HELD, None, clock.monotonic(), exchange, until))


def released(clock: Clock, message: Message, exchange: str,
             decision: RoutingDecision | None) -> None:
    events = message.history
    if events is not None:
        _append(events, (RELEASED, None, clock.monotonic(), exchange, decision))


def replayed(clock: Clock, queue: Queue, message: Message, exchange: str) -> None:
    events = message.history
    if events is not None:
        _append(events, (REPLAYED, queue.name, clock.monotonic(), exchange))


def returned(clock: Clock, message: Message) -> None:
    events = message.history
    if events is not None:
        _append(events, (RETURNED, None, clock.monotonic()))


def confirm_nack(channel: Channel, message: Message, seq: int) -> None:
    events = message.history
    if events is not None:
        _append(events, (CONFIRM_NACK, None, channel._clock.monotonic(), channel,
                         seq))


# -- reading: where is it now? ------------------------------------------------------------------

class Fate(NamedTuple):
    """Where a message is now (or how it ended) in one queue it reached."""

    queue: str
    state: FateState
    #: The event that put it there (``None``: ready since routing, nothing happened yet).
    event: MessageEvent | None

    def __str__(self) -> str:
        return f"queue '{self.queue}': {fate_text(self)}"


_STATE_OF: dict[str, FateState] = {
    ACKED: "acked", REQUEUED: "ready", REPLAYED: "ready", EXPIRED: "expired", EVICTED: "evicted",
    DELIVERY_LIMIT: "delivery_limit", REFUSED: "refused", DEAD_LETTERED: "dead_lettered",
    PURGED: "purged", DELETED: "deleted", LOST: "lost",
}


def fates(queues: Iterable[str], events: list[MessageEvent]) -> list[Fate]:
    """Where the message is now in each queue it reached (``queues``, the routed ones, refused
    included), from its last event there."""
    last: dict[str, MessageEvent] = {}
    order: list[str] = list(queues)
    for event in events:
        queue = event.queue
        if queue is None:
            continue
        if event.kind == REJECTED and event.requeue:
            continue  # a requeued (or deleted) event follows
        if queue not in last and queue not in order:
            order.append(queue)  # direct reply-to, or an event the trace let go
        last[queue] = event
    out = []
    for queue in order:
        found = last.get(queue)
        if found is None:
            out.append(Fate(queue, "ready", None))
        elif found.kind in (DELIVERED, GOT):
            out.append(Fate(queue, "consumed" if found.auto_ack else "unacked", found))
        elif found.kind == REJECTED:
            out.append(Fate(queue, "rejected", found))
        else:
            out.append(Fate(queue, _STATE_OF.get(found.kind, "ready"), found))
    return out


def _by(event: MessageEvent) -> str:
    """The policies behind a limit, after a comma (``", max-length 2 from policy 'cap'"``)."""
    return f", {event.cause}" if event.cause else ""


def _who(event: MessageEvent) -> str:
    node = f", on node '{event.node}'" if event.node is not None else ""
    return f"{event.connection}, channel {event.channel}{node}"


def fate_text(fate: Fate) -> str:
    state = fate.state
    if fate.event is None:
        return "ready, waiting for a consumer"
    event = fate.event
    if state == "ready":
        if event.kind == REPLAYED:
            return (f"ready, replayed by x-recent-history exchange '{event.exchange}' to a new "
                    "binding")
        return f"ready again (requeued: {event.cause})"
    if state in ("unacked", "consumed"):
        how = (f"delivered to consumer '{event.consumer_tag}'" if event.kind == DELIVERED
               else "taken by basic.get")
        tail = ("auto-ack, so done with" if state == "consumed"
                else f"delivery tag {event.delivery_tag}, not acknowledged yet")
        return f"{how} on {_who(event)} ({tail})"
    if state == "acked":
        return f"acknowledged on {_who(event)}"
    if state == "rejected":
        return f"rejected without requeue ({event.cause}) on {_who(event)}, and dropped"
    if state == "dead_lettered":
        target = event.decision
        where = (f"reaching {', '.join(repr(q) for q in target.queues)}" if target is not None
                 and target.queues else "reaching no queue")
        if target is None:
            where = "which does not exist: dropped"
        return (f"dead-lettered ({event.reason}) to exchange '{event.exchange}', {where}")
    return {
        "expired": f"expired (TTL{_by(event)}) and dropped",
        "evicted": f"pushed out by the queue's length limit (drop-head{_by(event)}) and dropped",
        "delivery_limit": f"passed the queue's delivery limit{_by(event)} and dropped",
        "refused": ("refused: a nack injected by a test" if event.reason == NACK_INJECTED
                    else f"refused: the queue was full (x-overflow {event.reason}{_by(event)})"),
        "purged": "purged",
        "deleted": "gone with its queue (deleted)",
        "lost": "lost in a broker restart",
    }[state]


def _describe(event: MessageEvent) -> str:
    kind = event.kind
    where = f" in queue '{event.queue}'" if event.queue is not None else ""
    if kind == DELIVERED:
        again = ", redelivered" if event.redelivered else ""
        ack = ", auto-ack" if event.auto_ack else ""
        return (f"delivered{where} to consumer '{event.consumer_tag}' on {_who(event)} "
                f"(delivery tag {event.delivery_tag}{again}{ack})")
    if kind == GOT:
        again = ", redelivered" if event.redelivered else ""
        ack = ", auto-ack" if event.auto_ack else ""
        return (f"taken by basic.get{where} on {_who(event)} "
                f"(delivery tag {event.delivery_tag}{again}{ack})")
    if kind == ACKED:
        return f"acknowledged{where} on {_who(event)} (delivery tag {event.delivery_tag})"
    if kind == REJECTED:
        requeue = "with requeue" if event.requeue else "without requeue"
        return (f"rejected{where} by {event.cause} {requeue} on {_who(event)} "
                f"(delivery tag {event.delivery_tag})")
    if kind == REQUEUED:
        return f"requeued{where} ({event.cause})"
    if kind == DEAD_LETTERED:
        return f"dead-lettered{where} ({event.reason}) to exchange '{event.exchange}'"
    if kind == REFUSED:
        if event.reason == NACK_INJECTED:
            return f"refused{where}: a nack injected by a test"
        return f"refused{where}: the queue was full (x-overflow {event.reason}{_by(event)})"
    if kind == CONFIRM_NACK:
        return (f"nacked to its publisher on {_who(event)} "
                f"(publish sequence number {event.delivery_tag})")
    if kind == TRUNCATED:
        return f"({event.dropped} earlier event(s) not kept)"
    if kind == HELD:
        return (f"held by x-delayed-message exchange '{event.exchange}' until "
                f"{event.until:g} s (broker clock)")
    if kind == RELEASED:
        target = event.decision
        reached = (", ".join(repr(q) for q in target.queues) if target is not None
                   and target.queues else "no queue")
        return (f"released by x-delayed-message exchange '{event.exchange}' and routed again, "
                f"reaching {reached}")
    if kind == REPLAYED:
        return (f"replayed{where} by x-recent-history exchange '{event.exchange}' to a new "
                "binding")
    return {
        EXPIRED: f"expired{where}" + (f" ({event.cause})" if event.cause else ""),
        EVICTED: f"evicted{where} (x-max-length, drop-head{_by(event)})",
        DELIVERY_LIMIT: f"over the delivery limit{where}" + (f" ({event.cause})" if event.cause
                                                             else ""),
        PURGED: f"purged{where}",
        DELETED: f"deleted with its queue{where}",
        LOST: f"lost in a restart{where}",
        RETURNED: "returned to its publisher (mandatory, no queue)",
    }.get(kind, kind)
