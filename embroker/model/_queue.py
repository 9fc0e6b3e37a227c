"""Queues: ready messages in order, consumers taking turns, and RabbitMQ's queue features.

Theory of operation
-------------------
A queue holds its *ready* messages (published, not yet delivered) in delivery order; a message
delivered to a consumer or taken by basic.get is *unacked* until its channel settles it. Each
message keeps the position number (``seq``) it got on entering, so a requeued message goes back
where it was, ahead of those published after it, as in RabbitMQ's classic queues.

The features RabbitMQ configures with queue arguments all act on the ready messages:

- ``x-max-priority``: the ready messages are kept per priority, highest first (``_PriorityReady``);
- ``x-message-ttl`` and the ``expiration`` property: a message has a deadline; as in RabbitMQ it
  is removed when it is at the head of the queue and its deadline has passed, so a message with
  a long TTL holds back shorter-lived ones behind it. A timer on the broker clock fires at the
  head's deadline; a basic.get or a delivery also drops an expired head first;
- ``x-max-length`` / ``x-max-length-bytes`` with ``x-overflow``: limits on the ready messages.
  A classic queue refuses (reject-publish) a message that would take it over a limit. A quorum
  queue does what RabbitMQ 3.10's ``rabbit_fifo`` does: its publishers ("enqueuers") are
  blocked once it *is* over a limit (so it holds one message more than the limit), and let go
  only when it is back at 80% of the limit (``?LOW_LIMIT``); a publisher new to the queue is
  refused only while it is over (``register_enqueuer``). ``reject-publish-dlx`` is not a quorum
  overflow: such a queue drops its head (``rabbit_quorum_queue:overflow/3``). What a quorum
  queue and a stream do differently is theirs: :mod:`._queue_quorum`, :mod:`._queue_stream`;
- ``x-dead-letter-exchange`` / ``x-dead-letter-routing-key``: where messages go when they are
  rejected, expire or are pushed out by a length limit (see ``_deadletter``);
- ``x-expires``: the queue deletes itself after that long unused (no consumer, no basic.get, no
  declare).

A policy can set each of these too: :attr:`Queue.settings` holds what applies, the queue's own
arguments and its policies combined as RabbitMQ does (``_policy``), and
:meth:`Queue.apply_policies` takes new ones when its policies change.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast
from weakref import WeakKeyDictionary

from typing_extensions import Self

from . import _history
from ._message import Message, QueuedMessage
from ._names import resource
from ._policy import Policy, effective_definition
from ._queue_type import QUEUE_TYPES, Placement, QueueType
from ._stats import MessageStats
from ._stream import (
    StreamLog,
)

if TYPE_CHECKING:
    from ._channel import Channel
    from ._clock import Timer
    from ._connection import Connection
    from ._consumer import Consumer
    from ._exchange import Binding
    from ._vhost import VirtualHost

__all__ = ["Queue"]


class _FifoReady(deque[QueuedMessage]):
    """The ready messages of a queue without priorities: a deque in position order."""

    __slots__ = ()

    def put_back(self, entry: QueuedMessage) -> None:
        """Insert a requeued message at its original position."""
        if not self or entry.seq < self[0].seq:
            self.appendleft(entry)
            return
        lo, hi = 0, len(self)
        while lo < hi:
            mid = (lo + hi) // 2
            if self[mid].seq < entry.seq:
                lo = mid + 1
            else:
                hi = mid
        self.insert(lo, entry)


class _PriorityReady:
    """The ready messages of a priority queue (``x-max-priority``): one FIFO per priority,
    delivered highest priority first. Implements the part of the deque API queues use."""

    __slots__ = ("_levels", "_max", "_size")

    def __init__(self, max_priority: int) -> None:
        self._max = max_priority
        self._levels: dict[int, _FifoReady] = {}
        self._size = 0

    def _level(self, entry: QueuedMessage) -> _FifoReady:
        priority = entry.message.properties.get("priority") or 0
        priority = min(priority, self._max) if isinstance(priority, int) else 0
        level = self._levels.get(priority)
        if level is None:
            level = self._levels[priority] = _FifoReady()
            self._levels = dict(sorted(self._levels.items(), reverse=True))
        return level

    def append(self, entry: QueuedMessage) -> None:
        self._level(entry).append(entry)
        self._size += 1

    def put_back(self, entry: QueuedMessage) -> None:
        self._level(entry).put_back(entry)
        self._size += 1

    def popleft(self) -> QueuedMessage:
        for level in self._levels.values():
            if level:
                self._size -= 1
                return level.popleft()
        raise IndexError("pop from an empty queue")

    def __getitem__(self, index: int) -> QueuedMessage:
        if index != 0:
            raise IndexError("only the head of a priority queue can be read")
        for level in self._levels.values():
            if level:
                return level[0]
        raise IndexError("empty queue")

    def clear(self) -> None:
        self._levels.clear()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __iter__(self) -> Iterator[QueuedMessage]:
        for level in self._levels.values():
            yield from level

    def in_order(self) -> bool:
        return all(list(level) == sorted(level, key=_by_seq) for level in self._levels.values())


class Queue:
    """A queue: its ready messages in order and the consumers that take them in turn (a
    classic queue; ``Queue(...)`` makes a quorum queue or a stream of the subclass that
    implements its type, see :mod:`._queue_quorum` and :mod:`._queue_stream`).

    Attributes:
        name, durable, auto_delete, arguments: as declared.
        exclusive_owner: the connection that owns an exclusive queue, else ``None``.
        consumers: the consumers, highest ``x-priority`` first, each priority in the order its
            consumers next get a turn.
        unacked: how many of its messages are delivered and not yet acknowledged.
        bindings: the bindings whose destination is this queue (not counting the default
            exchange's implicit one).
    """

    kind: ClassVar[str] = "queue"
    #: Whether its deliveries carry more than the message as stored (:meth:`outgoing`).
    rewrites_deliveries: ClassVar[bool] = False
    #: Whether a ``modified`` outcome's annotations stay with the message.
    keeps_annotations: ClassVar[bool] = False

    __slots__ = (
        "__weakref__",  # a queue dead-lettering into a quorum queue is one of its enqueuers
        "_active",
        "_blocked",
        "_clock",
        "_consumer_count",
        "_delivery_limit",
        "_enqueuers",
        "_expires",
        "_expiring",
        "_expiry_timer",
        "_groups",
        "_idle_timer",
        "_max_bytes",
        "_max_length",
        "_next_seq",
        "_overflow",
        "_priorities",
        "_ready",
        "_ready_bytes",
        "_ready_persistent",
        "_registered",
        "_suspended",
        "_ttl",
        "arguments",
        "auto_delete",
        "bindings",
        "dead_letter_exchange",
        "dead_letter_routing_key",
        "declared_at",
        "default_binding",
        "default_route",
        "deleted",
        "down",
        "durable",
        "exclusive_owner",
        "had_consumers",
        "name",
        "name_only",
        "operator_policy",
        "placement",
        "policy",
        "protocol_state",
        "settings",
        "single_active",
        "stats",
        "stream",
        "stream_positions",
        "type",
        "unacked",
        "vhost",
    )

    def __new__(cls, vhost: VirtualHost, name: str, *, durable: bool = False,
                exclusive_owner: Connection | None = None, auto_delete: bool = False,
                arguments: dict[str, Any] | None = None) -> Self:
        if cls is Queue:  # the class of its type (x-queue-type)
            named = (arguments or {}).get("x-queue-type", "classic")
            kind = QUEUE_TYPES.get(named) if isinstance(named, str) else None
            if kind is not None:
                return cast("Self", object.__new__(kind.queue_class()))
        return object.__new__(cls)

    def __init__(self, vhost: VirtualHost, name: str, *, durable: bool = False,
                 exclusive_owner: Connection | None = None, auto_delete: bool = False,
                 arguments: dict[str, Any] | None = None) -> None:
        self.vhost = vhost
        self._clock = vhost.broker.clock
        self.name = name
        #: ``(name,)``, shared by the routing decisions that reach this queue alone (one tuple
        #: fewer per publish for the trace to keep).
        self.name_only = (name,)
        #: What passed through it (``message_stats``: :mod:`._stats`).
        self.stats = MessageStats()
        #: When it was declared (the clock's ``time()``, seconds since the epoch).
        self.declared_at = self._clock.time()
        self.durable = durable
        self.exclusive_owner = exclusive_owner
        self.auto_delete = auto_delete
        args = dict(arguments or {})
        self.arguments: dict[str, Any] = args
        # Consumers by priority, each group taking turns; priorities highest first.
        self._groups: dict[int, deque[Consumer]] = {}
        self._priorities: list[int] = []
        # Consumers passed over for lack of room, in the order they were (RabbitMQ's
        # blocked_consumers): out of the rotation until their channel gives them room again.
        self._blocked: list[Consumer] = []
        # Channels whose global limit stopped a delivery here (RabbitMQ's suspended limiter):
        # when the limit has room again, their consumers come back (resume).
        self._suspended: set[Channel] = set()
        self._consumer_count = 0
        self.bindings: dict[tuple[Any, ...], Binding] = {}
        #: What a protocol's layer keeps with the queue, gone with it (MQTT 5's subscription
        #: options by topic filter, which RabbitMQ keeps in the bindings' arguments).
        self.protocol_state: dict[str, Any] = {}
        self.unacked = 0
        self.had_consumers = False
        self.deleted = False
        max_priority = args.get("x-max-priority")
        self._ready: _FifoReady | _PriorityReady = (
            _PriorityReady(max_priority) if max_priority else _FifoReady())
        self._ready_bytes = 0  # body bytes of the ready messages (x-max-length-bytes)
        # How many of the ready messages are persistent (delivery_mode 2), and their bytes:
        # kept as they come and go, so that showing them costs nothing per message.
        self._ready_persistent = [0, 0]
        self._next_seq = 0
        self._expiring = False  # may any ready message have a deadline?
        self._expiry_timer: Timer | None = None
        self._idle_timer: Timer | None = None
        #: ``x-single-active-consumer``: one consumer at a time gets messages.
        self.single_active = args.get("x-single-active-consumer") is True
        self._registered: list[Consumer] = []  # in the order they came (single active)
        self._active: Consumer | None = None
        #: Its type (:mod:`._queue_type`), from ``x-queue-type``.
        self.type: QueueType = QUEUE_TYPES.get(args.get("x-queue-type", "classic"),
                                               QUEUE_TYPES["classic"])
        #: Where it lives in the cluster (its vhost places it once it is declared).
        first = vhost.broker.nodes[0]
        self.placement = Placement(first, (first,))
        #: Whether it is out of reach: a classic queue whose home node is stopped (RabbitMQ
        #: keeps its record: ``state`` ``down``; see :mod:`._cluster`).
        self.down = False
        #: A stream's log, its consumers read from an offset (``_stream``); else ``None``.
        self.stream: StreamLog | None = self._open_log()
        #: A stream's consumers and the offset each reads next.
        self.stream_positions: dict[Consumer, int] = {}
        #: The policy and operator policy that apply to it (set by its vhost's policies).
        self.policy: Policy | None = None
        self.operator_policy: Policy | None = None
        #: Its effective settings: its arguments and policies combined as RabbitMQ does.
        self.settings = self.type.settings(args, rabbitmq4=vhost.broker.profile.rabbitmq4)
        self._use_settings()
        # A quorum queue's publishers (channels, and queues that dead-letter to it) and whether
        # each is blocked (reject-publish): rabbit_fifo's enqueuers. Weak: a closed channel goes.
        self._enqueuers: WeakKeyDictionary[object, bool] = WeakKeyDictionary()
        self.default_binding: Binding  # set by the vhost
        #: ``(default_binding,)``: what the default exchange routes to it (one tuple, shared).
        self.default_route: tuple[Binding]
        self.touch()

    def _open_log(self) -> StreamLog | None:
        return None

    @property
    def quorum(self) -> bool:
        """Whether it is a quorum queue (for callers: the model asks its type)."""
        return self.type.name == "quorum"

    def _use_settings(self) -> None:
        settings = self.settings
        # Length limits count ready messages only, as RabbitMQ's.
        self._max_length: int | None = settings.max_length
        self._max_bytes: int | None = settings.max_length_bytes
        self._overflow: str = settings.overflow
        ttl = settings.message_ttl
        self._ttl: float | None = ttl / 1000 if ttl is not None else None
        self._expiring = self._expiring or ttl is not None
        expires = settings.expires
        self._expires: float | None = expires / 1000 if expires is not None else None
        self._delivery_limit: int | None = None
        self.dead_letter_exchange: str | None = settings.dead_letter_exchange
        self.dead_letter_routing_key: str | None = settings.dead_letter_routing_key

    def apply_policies(self, policy: Policy | None, operator_policy: Policy | None) -> None:
        """Take the policy and operator policy that now apply (set, changed or cleared) as
        RabbitMQ's queue does (``process_args_policy``): the ``x-expires`` countdown starts
        again, the new dead-letter target and message TTL apply from now on (queued messages
        keep their deadline), and with ``drop-head`` overflow (before or after the change, for a
        classic queue; after it, for a quorum queue) the oldest messages over a lowered length
        limit go at once, dead-lettered as ``maxlen``; expired messages at the head go too.
        """
        overflow = self._overflow
        self.policy, self.operator_policy = policy, operator_policy
        self.settings = self.type.settings(self.arguments, policy, operator_policy,
                                           rabbitmq4=self.vhost.broker.profile.rabbitmq4)
        self._use_settings()
        if not self.deleted:
            self._policies_changed(overflow)

    def _policies_changed(self, overflow: str) -> None:
        # What new settings do at once (``overflow`` the one before).
        if self._expires is None and self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        self.touch()
        if self._overflow == "drop-head" or overflow == "drop-head":
            self._drop_over_limit()
        self._evaluate_limit()
        if self._expiring:
            self._expire_head()

    def update_arguments(self, changes: Mapping[str, Any]) -> None:
        """Change its own ``x-`` arguments (a ``None`` value removes one) and take them as a
        policy change is taken (:meth:`apply_policies`): RabbitMQ's ``rabbit_amqqueue:update/2``
        then ``rabbit_queue_type:policy_changed/1``, as its MQTT plugin does to change a
        session queue's ``x-expires``."""
        arguments = dict(self.arguments)
        for key, value in changes.items():
            if value is None:
                arguments.pop(key, None)
            else:
                arguments[key] = value
        self.arguments = arguments
        self.apply_policies(self.policy, self.operator_policy)

    @property
    def effective_arguments(self) -> dict[str, Any]:
        """What applies, as ``x-`` arguments: its own arguments and its policies combined
        (``{"x-message-ttl": 60000, "x-dead-letter-exchange": "dlx"}``); see
        :attr:`settings` for where each value came from."""
        return self.settings.arguments()

    @property
    def effective_policy_definition(self) -> dict[str, Any]:
        """Its policy's definition merged with its operator policy's (as ``rabbitmqctl
        list_queues effective_policy_definition`` shows it)."""
        return effective_definition(self.policy, self.operator_policy)

    # -- inspection ----------------------------------------------------------------------------

    @property
    def resource(self) -> str:
        """How RabbitMQ names it in texts: ``"queue 'q' in vhost '/'"``."""
        return resource("queue", self.name, self.vhost.name)

    @property
    def exclusive(self) -> bool:
        return self.exclusive_owner is not None

    @property
    def prioritised(self) -> bool:
        """Whether its ready messages are kept by priority (``x-max-priority``), then in
        position order; else in position order alone."""
        return isinstance(self._ready, _PriorityReady)

    @property
    def message_count(self) -> int:
        """Messages ready for delivery (not counting delivered, unacknowledged ones)."""
        return len(self._ready)

    @property
    def message_bytes(self) -> int:
        """Body bytes of the ready messages (what ``x-max-length-bytes`` limits)."""
        return self._ready_bytes

    @property
    def consumer_count(self) -> int:
        return self._consumer_count

    @property
    def active_consumer(self) -> Consumer | None:
        """With ``x-single-active-consumer``: the consumer that gets the messages now."""
        return self._active if self.single_active else None

    @property
    def consumers(self) -> list[Consumer]:
        """Every consumer: those taking turns (highest priority first, in turn order), then
        those waiting for room."""
        return [*(c for priority in self._priorities for c in self._groups[priority]),
                *self._blocked]

    @property
    def messages(self) -> list[Message]:
        """The ready messages in delivery order, without consuming them (a snapshot taken
        under the broker's lock: safe while a listener serves clients)."""
        with self.vhost.broker._lock:
            return [entry.message for entry in self._ready]

    @property
    def entries(self) -> list[QueuedMessage]:
        """The ready messages with their per-queue state (``redelivered``, deadline)."""
        with self.vhost.broker._lock:
            return list(self._ready)

    def __len__(self) -> int:
        return len(self._ready)

    def __repr__(self) -> str:
        flags = [f for f, on in (("durable", self.durable), ("exclusive", self.exclusive),
                                 ("auto_delete", self.auto_delete)) if on]
        extra = f" {' '.join(flags)}" if flags else ""
        return (f"<queue '{self.name}' in vhost '{self.vhost.name}'{extra}: "
                f"{len(self._ready)} ready, {self.unacked} unacked, "
                f"{self._consumer_count} consumers>")

    # -- consumers -----------------------------------------------------------------------------

    def add_consumer(self, consumer: Consumer) -> None:
        """Add a consumer; it takes its turn after those of its priority already there."""
        group = self._groups.get(consumer.priority)
        if group is None:
            group = self._groups[consumer.priority] = deque()
            self._priorities = sorted(self._groups, reverse=True)
        group.append(consumer)
        self._consumer_count += 1
        self.had_consumers = True
        if self.single_active:
            self._registered.append(consumer)
            if self._active is None:
                self._active = consumer
        self.touch()

    def remove_consumer(self, consumer: Consumer, *, dispatch: bool = True) -> bool:
        """Remove a consumer; False when it was not there. With a single active consumer, the
        next one takes over (and gets messages at once unless ``dispatch`` is false)."""
        group = self._groups.get(consumer.priority)
        if group is None:
            return False
        if consumer.blocked:
            if consumer not in self._blocked:
                return False
            self._blocked.remove(consumer)
            consumer.blocked = False
        elif consumer in group:
            group.remove(consumer)
        else:
            return False
        self._consumer_count -= 1
        self.stream_positions.pop(consumer, None)
        if consumer.channel in self._suspended and all(
                c.channel is not consumer.channel for c in self.consumers):
            self._suspended.discard(consumer.channel)
        if not group and all(c.priority != consumer.priority for c in self._blocked):
            del self._groups[consumer.priority]
            self._priorities.remove(consumer.priority)
        if self.single_active:
            self._registered.remove(consumer)
            if self._active is consumer:
                # The next active consumer: the highest priority, then the earliest to come.
                self._active = max(self._registered, key=_priority, default=None)
                if self._active is not None and dispatch:
                    self.dispatch()
        self.touch()
        return True

    def clear_consumers(self) -> list[Consumer]:
        """Remove every consumer (the queue is going); returns them."""
        consumers = self.consumers
        self._groups.clear()
        self._priorities = []
        for consumer in self._blocked:
            consumer.blocked = False
        self._blocked.clear()
        self._suspended.clear()
        self._consumer_count = 0
        self.stream_positions.clear()
        self._registered.clear()
        self._active = None
        return consumers

    # -- messages in ---------------------------------------------------------------------------

    def publish(self, message: Message, expiration: float | None = None,
                publisher: object | None = None) -> bool:
        """Enqueue a routed message and hand it to a consumer if one can take it.

        Args:
            message: the message.
            expiration: its per-message TTL in seconds (the ``expiration`` property), if any.
            publisher: who publishes (a channel, or the queue that dead-letters it): a quorum
                queue over its limit blocks its publishers one by one.

        Returns:
            False when the queue refused it (``x-overflow`` reject-publish or
            reject-publish-dlx and the queue full): the publisher's confirm is then a nack.

        Runtime complexity: ``O(1)`` amortised.
        """
        limited = self._max_length is not None or self._max_bytes is not None
        if limited and self._overflow != "drop-head" and self._refuses(publisher, message):
            _history.refused(self._clock, self, message, self._overflow)
            if self._overflow == "reject-publish-dlx":
                self._dead_letter([message], "maxlen")
            return False
        entry = QueuedMessage(message, self._next_seq)
        self._next_seq += 1
        ttl = self._ttl
        if expiration is not None and (ttl is None or expiration < ttl):
            ttl = expiration
        if ttl is not None:
            entry.expires_at = self._clock.monotonic() + ttl
            self._expiring = True
        if self._consumer_count and not self._ready:
            # Straight to a consumer with room, as RabbitMQ's attempt_delivery: a message that
            # is delivered at once neither waits nor expires (even with a TTL of 0).
            consumer = self._next_consumer()
            if consumer is not None:
                self.unacked += 1
                consumer.deliver(self, entry)
                return True
        self._ready.append(entry)
        self._ready_bytes += len(message.body)
        if message.properties:  # (none: not persistent, and no call on the hot path)
            self._count_persistent(message, 1)
        if self._consumer_count:
            self.dispatch()
        if limited:
            self._drop_head()
            self._evaluate_limit()
        if self._expiring and self._ready and self._ready[0] is entry:
            self._expire_head()  # the new message is the head: set (or run) its expiry timer
        return True

    def requeue(self, entries: Iterable[QueuedMessage], *, closed: bool = False) -> None:
        """Put delivered messages back at their original positions, marked redelivered;
        ``closed``: their channel closed (which a quorum queue tells apart:
        :mod:`._queue_quorum`).

        Runtime complexity: ``O(k)`` when they go back to the head (the usual case), ``O(k * n)``
        at worst.
        """
        ready = self._ready
        for entry in sorted(entries, key=_by_seq, reverse=True):  # latest to earliest
            entry.redelivered = True
            self.unacked -= 1
            self._ready_bytes += len(entry.message.body)
            self._count_persistent(entry.message, 1)
            ready.put_back(entry)
        self._requeued()

    def _requeued(self) -> None:
        # Messages came back: they go on to consumers, limits and expiry as a publish's.
        if self._consumer_count:
            self.dispatch()
        if self._max_length is not None or self._max_bytes is not None:
            self._drop_head()
            self._evaluate_limit()
        if self._expiring:
            self._expire_head()

    # -- messages out --------------------------------------------------------------------------

    def _take(self) -> QueuedMessage:
        entry = self._ready.popleft()
        message = entry.message
        self._ready_bytes -= len(message.body)
        if message.properties:  # (as publish)
            self._count_persistent(message, -1)
        return entry

    def _count_persistent(self, message: Message, sign: int) -> None:
        """Count a ready message in (``sign`` 1) or out (-1), if it is persistent."""
        if message.properties.get("delivery_mode") == 2:
            counts = self._ready_persistent
            counts[0] += sign
            counts[1] += sign * len(message.body)

    @property
    def persistent(self) -> tuple[int, int]:
        """How many ready messages are persistent (``delivery_mode`` 2), and their body bytes
        (``O(1)``: kept as messages come and go)."""
        return self._ready_persistent[0], self._ready_persistent[1]

    def get(self) -> QueuedMessage | None:
        """Take the next ready message for basic.get (the caller settles or tracks it)."""
        if self._expires is not None:
            self.touch()
        if self._expiring:
            self._expire_head()
        if not self._ready:
            return None
        self.unacked += 1
        entry = self._ready.popleft()
        self._ready_bytes -= len(entry.message.body)
        self._count_persistent(entry.message, -1)
        if self._expiring:
            self._expire_head()  # as RabbitMQ: a newly exposed expired head goes at once
        if self._enqueuers:
            self._evaluate_limit()
        return entry

    def outgoing(self, entry: QueuedMessage, *, get: bool = False) -> Message:
        """The message as it is delivered (``get``: to basic.get) when
        :attr:`rewrites_deliveries`: as stored, here."""
        return entry.message

    def settle(self, count: int = 1) -> None:
        """Forget ``count`` delivered messages that were acknowledged."""
        self.unacked -= count

    def reject(self, entries: list[QueuedMessage]) -> None:
        """Forget delivered messages that were rejected without requeue: they are dead-lettered
        (reason ``rejected``) when the queue has a dead-letter exchange."""
        self.unacked -= len(entries)
        if self.dead_letter_exchange is not None and entries:
            self.vhost.dead_letter(self, [self._annotated(e) for e in entries], "rejected",
                                   [e.failures for e in entries])

    def _annotated(self, entry: QueuedMessage) -> Message:
        # The message with the annotations a modified outcome gave it (quorum queues).
        message = entry.message
        if not entry.annotations:
            return message
        return message.with_headers({**(message.properties.get("headers") or {}),
                                     **entry.annotations})

    def purge(self) -> int:
        """Drop every ready message; returns how many."""
        count = len(self._ready)
        self._ready.clear()
        self._ready_bytes = 0
        self._ready_persistent = [0, 0]
        self._arm_expiry()
        self._evaluate_limit()
        return count

    def recover(self, entries: Iterable[QueuedMessage]) -> None:
        """Take ``entries`` as its ready messages, in their positions' order: what a queue
        recovers when its node starts (:mod:`._cluster`; delivered ones marked redelivered by
        the caller)."""
        for entry in sorted(entries, key=_by_seq):
            self._ready.append(entry)
            self._ready_bytes += len(entry.message.body)
            self._count_persistent(entry.message, 1)
            self._next_seq = max(self._next_seq, entry.seq + 1)
        self._arm_expiry()
        self._evaluate_limit()

    def drop_transient(self) -> None:
        """Keep only the persistent messages (``delivery_mode`` 2): a broker restart."""
        kept = [e for e in self._ready if e.message.properties.get("delivery_mode") == 2]
        self._ready.clear()
        self._ready_bytes = 0
        self._ready_persistent = [0, 0]
        for entry in kept:
            self._ready.append(entry)
            self._ready_bytes += len(entry.message.body)
            self._count_persistent(entry.message, 1)
        self._arm_expiry()
        self.touch()
        self._evaluate_limit()

    def dispatch(self) -> None:
        """Hand ready messages to consumers with room until one side runs out: the highest
        priority consumers that have room first, taking turns within a priority. A stream's
        consumers each read on from their own offset while they have room."""
        ready = self._ready
        if self._expiring:
            self._expire_head()
        while ready:
            consumer = self._next_consumer()
            if consumer is None:
                return
            self.unacked += 1
            consumer.deliver(self, self._take())
            if self._expiring:
                self._expire_head()
        if self._enqueuers:
            self._evaluate_limit()

    def _next_consumer(self) -> Consumer | None:
        """The consumer whose turn it is among the highest priority ones with room; it goes
        to the back of its priority's line. ``None`` when nobody has room."""
        if self.single_active:
            active = self._active
            return active if active is not None and active.has_capacity() else None
        for priority in self._priorities:
            group = self._groups[priority]
            while group:
                consumer = group[0]
                if consumer.has_credit():
                    if not consumer.channel.global_limit_reached():
                        group.rotate(-1)
                        return consumer
                    self._suspended.add(consumer.channel)
                # No room: out of the rotation until its channel has room again (unblock).
                group.popleft()
                consumer.blocked = True
                self._blocked.append(consumer)
        return None

    def resume(self, channel: Channel) -> None:
        """``channel``'s global limit has room again: if it stopped deliveries here, its
        consumers with credit rejoin (:meth:`unblock`) and delivery goes on."""
        if channel in self._suspended:
            self._suspended.discard(channel)
            self.unblock(channel)
            self.dispatch()

    def suspect(self, consumer: Consumer) -> None:
        """``consumer``'s node is cut off from the queue (a partition): it is served nothing
        until :meth:`trust_consumers` (rabbit_fifo's ``{down, Pid, noconnection}``; what it
        held the caller returns)."""
        consumer.suspected = True

    def trust_consumers(self) -> None:
        """The network is whole again (``{nodeup, Node}``): the suspected consumers are served
        again, behind the others."""
        trusted = [c for c in self.consumers if c.suspected]
        for consumer in trusted:
            consumer.suspected = False
        for channel in {id(c.channel): c.channel for c in trusted}.values():
            self.unblock(channel)
        if trusted:
            self.dispatch()

    def unblock(self, channel: Channel) -> None:
        """``channel`` has room again (an ack, a lifted limit): its consumers passed over here
        that have credit rejoin the rotation, behind the others, in the order they were passed
        over (RabbitMQ's ``rabbit_queue_consumers:unblock``). The caller dispatches."""
        if not self._blocked:
            return
        waiting = []
        for consumer in self._blocked:
            if consumer.channel is channel and consumer.has_credit():
                consumer.blocked = False
                self._groups[consumer.priority].append(consumer)
            else:
                waiting.append(consumer)
        self._blocked = waiting

    # -- limits, expiry, dead-lettering ---------------------------------------------------------

    def _over_limit(self, extra_messages: int = 0, extra_bytes: int = 0) -> bool:
        return ((self._max_length is not None
                 and len(self._ready) + extra_messages > self._max_length)
                or (self._max_bytes is not None
                    and self._ready_bytes + extra_bytes > self._max_bytes))

    def _refuses(self, publisher: object | None, message: Message) -> bool:
        """Whether a queue with a length limit refuses ``publisher``'s ``message``
        (reject-publish): if it would take it over the limit."""
        return self._over_limit(1, len(message.body))

    def _evaluate_limit(self) -> None:
        """After each change: whether the publishers a quorum queue blocks go on blocked."""

    @property
    def blocked_publishers(self) -> int:
        """How many publishers a quorum queue over its limit blocks (reject-publish)."""
        return sum(1 for blocked in self._enqueuers.values() if blocked)

    def _drop_head(self) -> None:
        # drop-head overflow: the oldest ready messages go (dead-lettered, reason maxlen) until
        # the queue is within its limits.
        if self._overflow == "drop-head":
            self._drop_over_limit()

    def _drop_over_limit(self) -> None:
        dropped = []
        while self._ready and self._over_limit():
            dropped.append(self._take().message)
        if dropped:
            _history.left(self._clock, self, dropped, "evicted")
            self._dead_letter(dropped, "maxlen")

    def _expire_head(self) -> None:
        """Drop the expired messages at the head (dead-lettered, reason expired) and set the
        timer for the next deadline there."""
        ready = self._ready
        now = self._clock.monotonic()
        expired = []
        while ready:
            deadline = ready[0].expires_at
            if deadline is None or deadline > now:
                break
            expired.append(self._take().message)
        if expired:
            _history.left(self._clock, self, expired, "expired")
            self._dead_letter(expired, "expired")
        self._arm_expiry()

    def _arm_expiry(self) -> None:
        deadline = self._ready[0].expires_at if self._ready else None
        timer = self._expiry_timer
        if timer is not None:
            if deadline is not None and timer.deadline == deadline and not timer.cancelled:
                return
            timer.cancel()
            self._expiry_timer = None
        if deadline is not None and not self.deleted:
            self._expiry_timer = self._clock.call_at(deadline, self._expire_head)

    def _dead_letter(self, messages: list[Message], reason: str) -> None:
        if self.dead_letter_exchange is not None and messages:
            self.vhost.dead_letter(self, messages, reason)

    def drop_expired(self) -> None:
        """Remove an expired head now (RabbitMQ does before it answers a declare)."""
        if self._expiring:
            self._expire_head()

    def touch(self) -> None:
        """The queue was used (declare, basic.get, a consumer came or went): with ``x-expires``
        the countdown to its deletion starts again while it has no consumers."""
        if self._expires is None:
            return
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        if not self._consumer_count and not self.deleted:
            self._idle_timer = self._clock.call_at(self._clock.monotonic() + self._expires,
                                                   self._expired)

    def _expired(self) -> None:
        self._idle_timer = None
        if not self.deleted and not self._consumer_count:
            self.vhost.delete_queue_object(self)

    def stop_timers(self) -> None:
        """The queue is deleted: its expiry timers must not fire."""
        for timer in (self._expiry_timer, self._idle_timer):
            if timer is not None:
                timer.cancel()
        self._expiry_timer = self._idle_timer = None

    # -- invariants ----------------------------------------------------------------------------

    def _check(self) -> None:
        ready = self._ready
        if isinstance(ready, _PriorityReady):
            assert ready.in_order(), f"{self!r}: ready messages out of order"
        else:
            seqs = [entry.seq for entry in ready]
            assert seqs == sorted(seqs), f"{self!r}: ready messages out of order"
        assert self.unacked >= 0, f"{self!r}: negative unacked count"
        assert self._ready_bytes == sum(len(e.message.body) for e in ready)
        persistent = [e.message for e in ready if e.message.properties.get("delivery_mode") == 2]
        assert self.persistent == (len(persistent), sum(len(m.body) for m in persistent))
        assert not self._over_limit() or self._overflow != "drop-head" or not ready
        assert not self.deleted, f"{self!r}: deleted but still in its vhost"
        assert self._consumer_count == sum(len(g) for g in self._groups.values()) + len(
            self._blocked)
        assert all(c.blocked for c in self._blocked)
        assert self._priorities == sorted(self._groups, reverse=True)


def _by_seq(entry: QueuedMessage) -> int:
    return entry.seq


def _priority(consumer: Consumer) -> int:
    return consumer.priority

