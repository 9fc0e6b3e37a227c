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
  overflow: such a queue drops its head (``rabbit_quorum_queue:overflow/3``);
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
from typing import TYPE_CHECKING, Any, ClassVar, final
from weakref import WeakKeyDictionary

from ..errors import InternalError
from ..fieldtypes import Long
from . import _history
from ._message import Message, QueuedMessage
from ._names import resource
from ._policy import Policy, effective_definition, queue_settings
from ._queue_type import QUEUE_TYPES, Placement, QueueType
from ._stream import (
    DEFAULT_SEGMENT_SIZE,
    Entry,
    StreamLog,
    chunk_matches,
    consumer_filter,
    max_age_ms,
    parse_offset_spec,
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


@final
class Queue:
    """A queue: its ready messages in order and the consumers that take them in turn.

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
        "quorum",
        "settings",
        "single_active",
        "stream",
        "stream_positions",
        "type",
        "unacked",
        "vhost",
    )

    def __init__(self, vhost: VirtualHost, name: str, *, durable: bool = False,
                 exclusive_owner: Connection | None = None, auto_delete: bool = False,
                 arguments: dict[str, Any] | None = None) -> None:
        self.vhost = vhost
        self._clock = vhost.broker.clock
        self.name = name
        #: ``(name,)``, shared by the routing decisions that reach this queue alone (one tuple
        #: fewer per publish for the trace to keep).
        self.name_only = (name,)
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
        #: ``x-queue-type`` quorum: deliveries carry ``x-delivery-count``, ``x-delivery-limit``.
        self.quorum = args.get("x-queue-type") == "quorum"
        #: ``x-queue-type`` stream: the log its consumers read from an offset (``_stream``).
        self.stream: StreamLog | None = None
        #: A stream's consumers and the offset each reads next.
        self.stream_positions: dict[Consumer, int] = {}
        if args.get("x-queue-type") == "stream":
            self.stream = _stream_log(self)
        #: The policy and operator policy that apply to it (set by its vhost's policies).
        self.policy: Policy | None = None
        self.operator_policy: Policy | None = None
        #: Its effective settings: its arguments and policies combined as RabbitMQ does.
        self.settings = queue_settings(args, quorum=self.quorum,
                                       rabbitmq4=vhost.broker.profile.rabbitmq4)
        self._use_settings()
        # A quorum queue's publishers (channels, and queues that dead-letter to it) and whether
        # each is blocked (reject-publish): rabbit_fifo's enqueuers. Weak: a closed channel goes.
        self._enqueuers: WeakKeyDictionary[object, bool] = WeakKeyDictionary()
        self.default_binding: Binding  # set by the vhost
        #: ``(default_binding,)``: what the default exchange routes to it (one tuple, shared).
        self.default_route: tuple[Binding]
        self.touch()

    def _use_settings(self) -> None:
        settings = self.settings
        # Length limits count ready messages only, as RabbitMQ's.
        self._max_length: int | None = settings.max_length
        self._max_bytes: int | None = settings.max_length_bytes
        overflow = settings.overflow
        if self.quorum and overflow == "reject-publish-dlx":
            overflow = "drop-head"  # not a quorum overflow: RabbitMQ warns and drops the head
        self._overflow: str = overflow
        ttl = settings.message_ttl
        self._ttl: float | None = ttl / 1000 if ttl is not None else None
        self._expiring = self._expiring or ttl is not None
        expires = settings.expires
        self._expires: float | None = expires / 1000 if expires is not None else None
        limit = settings.delivery_limit if self.quorum else None
        if limit is not None and limit < 0 and self.vhost.broker.profile.rabbitmq4:
            limit = None  # RabbitMQ 4: a negative limit is none (v4.1.4 rabbit_fifo:update_config)
        self._delivery_limit: int | None = limit
        self.dead_letter_exchange: str | None = settings.dead_letter_exchange
        self.dead_letter_routing_key: str | None = settings.dead_letter_routing_key
        if self.stream is not None:
            self._use_stream_settings()

    def _use_stream_settings(self) -> None:
        # A stream takes none of the classic and quorum keys of its policies (its type's
        # unsupported_policies), and the retention keys from its arguments and policies, the
        # lowest of each as RabbitMQ 3.10's rabbit_stream_queue:update_stream_conf/2 does.
        assert self.stream is not None
        self._max_length = self._max_bytes = self._ttl = self._expires = None
        self._delivery_limit = None
        self.dead_letter_exchange = self.dead_letter_routing_key = None
        definitions = [p.definition for p in (self.policy, self.operator_policy)
                       if p is not None]

        def lowest(key: str, convert: Any) -> int | None:
            values = [convert(d[key]) for d in definitions if key in d]
            values.append(convert(self.arguments.get("x-" + key)))
            found = [v for v in values if v is not None]
            return min(found) if found else None

        def as_int(value: Any) -> int | None:
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        def as_age(value: Any) -> int | None:
            return max_age_ms(value) if isinstance(value, str) else None

        log = self.stream
        log.max_bytes = lowest("max-length-bytes", as_int)
        log.max_age = lowest("max-age", as_age)
        log.segment_size = lowest("stream-max-segment-size-bytes", as_int) or DEFAULT_SEGMENT_SIZE

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
        self.settings = queue_settings(self.arguments, policy, operator_policy,
                                       quorum=self.quorum,
                                       rabbitmq4=self.vhost.broker.profile.rabbitmq4)
        self._use_settings()
        if self.deleted:
            return
        if self.stream is not None:
            self.stream.apply_retention()  # (osiris re-evaluates when its retention changes)
            return
        if self._expires is None and self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        self.touch()
        if self._overflow == "drop-head" or (overflow == "drop-head" and not self.quorum):
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
            if self.stream is not None:
                return self.stream.messages()  # a stream: every message it keeps
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
        """Add a consumer; it takes its turn after those of its priority already there. A
        stream's consumer reads from where its ``x-stream-offset`` argument says.

        Raises:
            InternalError: (541) a stream consumer's ``x-stream-offset`` is not one (as
                RabbitMQ 3.10 answers).
        """
        position = 0
        if self.stream is not None:
            spec = parse_offset_spec(consumer.arguments.get("x-stream-offset"),
                                     self.stream.now_ms())
            position = self.stream.start_offset(spec)
        group = self._groups.get(consumer.priority)
        if group is None:
            group = self._groups[consumer.priority] = deque()
            self._priorities = sorted(self._groups, reverse=True)
        group.append(consumer)
        self._consumer_count += 1
        self.had_consumers = True
        if self.stream is not None:
            self.stream_positions[consumer] = position
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
        if self.stream is not None:
            self.append_chunk((message,), writer=self.stream.amqp_writer(publisher))
            return True
        limited = self._max_length is not None or self._max_bytes is not None
        if limited and self._overflow != "drop-head" and (
                self._blocks(publisher) if self.quorum
                else self._over_limit(1, len(message.body))):
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
        ``closed``: their channel closed (a quorum queue's go back first then, see below).

        Runtime complexity: ``O(k)`` when they go back to the head (the usual case), ``O(k * n)``
        at worst.
        """
        if self.stream is not None:  # nothing goes back to a stream: only the credit
            self.unacked -= sum(1 for _entry in entries)
            return
        ready = self._ready
        limit = self._delivery_limit
        over_limit = []
        to_back = []
        for entry in sorted(entries, key=_by_seq, reverse=True):  # latest to earliest
            entry.redelivered = True
            self.unacked -= 1
            if self.quorum:
                entry.delivery_count += 1
                if limit is not None and entry.delivery_count > limit:
                    over_limit.append(entry.message)
                    _history.left(self._clock, self, (entry.message,), "delivery_limit")
                    continue
                if limit is None and not closed:
                    # RabbitMQ 3.10's quorum queue without a delivery limit returns a message
                    # to the back of the queue (with one, it comes back first, as below),
                    # several in their order (rabbit_fifo's return of a consumer's messages).
                    # Those of a consumer whose channel closed come back first either way
                    # (v3.10.8 rabbit_fifo: handle_down, return_all/5 into its returns).
                    to_back.append(entry)
                    continue
            self._ready_bytes += len(entry.message.body)
            self._count_persistent(entry.message, 1)
            ready.put_back(entry)
        for entry in reversed(to_back):  # earliest first
            entry.seq = self._next_seq
            self._next_seq += 1
            self._ready_bytes += len(entry.message.body)
            self._count_persistent(entry.message, 1)
            ready.append(entry)
        if over_limit:
            self._dead_letter(over_limit[::-1], "delivery_limit")
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
        self._ready_bytes -= len(entry.message.body)
        self._count_persistent(entry.message, -1)
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
        """The message as a quorum queue delivers it: with ``x-delivery-count`` (how many times
        it came back before) in its headers. As RabbitMQ 3.10, a consumer's first delivery has
        no such header, while basic.get always shows it; from RabbitMQ 3.12 neither has it
        (v3.12.0 release notes; v4.1.4 rabbit_fifo_client:add_delivery_count_header/2)."""
        message = entry.message
        annotations = entry.annotations
        get = get and not self.vhost.broker.profile.at_least(3, 12)
        if not get and not entry.delivery_count and not annotations:
            return message
        headers = {**(message.properties.get("headers") or {}), **(annotations or {})}
        if get or entry.delivery_count:
            headers["x-delivery-count"] = Long(entry.delivery_count)
        return message.with_headers(headers)

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
        if self.stream is not None:
            self._dispatch_stream()
            return
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

    def _blocks(self, publisher: object | None) -> bool:
        """Whether a quorum queue refuses ``publisher``'s message (reject-publish): a publisher
        new to the queue registers, refused only if the queue is over a limit now
        (``rabbit_fifo`` ``register_enqueuer``); one it knows is refused while blocked."""
        enqueuers = self._enqueuers
        blocked = enqueuers.get(publisher) if publisher is not None else None
        if blocked is None:
            blocked = self._over_limit()
            if publisher is not None:
                enqueuers[publisher] = blocked
        return blocked

    def _evaluate_limit(self) -> None:
        """A quorum queue with reject-publish after each change (``rabbit_fifo``'s
        ``evaluate_limit/5``): over a limit, every publisher is blocked; at or below 80% of
        every limit (``is_below_soft_limit``), every one is let go."""
        enqueuers = self._enqueuers
        if not enqueuers or self._overflow != "reject-publish":
            return
        if self._over_limit():
            for publisher in list(enqueuers.keys()):
                enqueuers[publisher] = True
        elif self._below_soft_limit():
            for publisher in list(enqueuers.keys()):
                enqueuers[publisher] = False

    def _below_soft_limit(self) -> bool:
        max_length, max_bytes = self._max_length, self._max_bytes
        return ((max_length is None or len(self._ready) <= int(max_length * _LOW_LIMIT))
                and (max_bytes is None or self._ready_bytes <= int(max_bytes * _LOW_LIMIT)))

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
        if self.stream is not None:
            self.stream.stop()

    # -- streams -------------------------------------------------------------------------------

    def append_chunk(self, messages: tuple[Message | None, ...],
                     raw: tuple[Entry, ...] | None = None,
                     filter_values: tuple[str | None, ...] | None = None, *,
                     writer: tuple[str, int] | None = None) -> int:
        """Write messages to a stream as one chunk (one per record, see
        :class:`~._stream.Chunk`; ``writer`` as :meth:`~._stream.StreamLog.append` takes it)
        and deliver them to the consumers that have room; returns the offset of the first.

        Runtime complexity: ``O(m + c)`` for ``m`` messages and ``c`` consumers.
        """
        assert self.stream is not None
        if filter_values is None and self.vhost.broker.profile.rabbitmq4:
            # RabbitMQ 3.13+: an AMQP message's x-stream-filter-value header is its filter value
            # (v4.1.4 rabbit_stream_queue:stream_message/1)
            filter_values = tuple(_filter_value(m) for m in messages if m is not None)
        chunk = self.stream.append(messages, raw, filter_values, writer=writer)
        if self._consumer_count:
            self._dispatch_stream()
        return chunk.first_offset

    def _dispatch_stream(self) -> None:
        stream = self.stream
        assert stream is not None
        positions = self.stream_positions
        rabbitmq4 = self.vhost.broker.profile.rabbitmq4
        for consumer in list(positions):
            # RabbitMQ 3.13+: a consumer's x-stream-filter skips the chunks that do not match
            spec = consumer_filter(consumer.arguments) if rabbitmq4 else None
            while consumer in positions and consumer.has_capacity():
                offset = max(positions[consumer], stream.first_offset)
                chunk = stream.chunk_at(offset)
                if chunk is None:
                    break
                if not chunk_matches(chunk, spec):
                    positions[consumer] = chunk.next_offset
                    continue
                message = chunk.messages[offset - chunk.first_offset]
                if chunk.unparsed and (not rabbitmq4 or chunk.malformed):
                    # a sub-batch it cannot read: RabbitMQ 3.10's reader crashes on the chunk
                    # (osiris hands it the sub-batch unparsed), 4.x's on a malformed one (v4.1.0
                    # rabbit_stream_queue:stream_entries/5 parses every sub-batch of a chunk it
                    # reads), before any of its records goes: the consumer's connection, 541
                    consumer.channel.connection.close_by_broker(InternalError(""))
                    break
                positions[consumer] = offset + 1
                if message is None:
                    continue  # nothing there for AMQP readers (a compressed sub-batch...)
                keep = consumer.message_filter
                if keep is not None and not keep(message):
                    continue  # RabbitMQ 4.1+: filtered out per message, no credit taken
                headers = {**(message.properties.get("headers") or {}),
                           "x-stream-offset": Long(offset)}
                copy = message.with_headers(headers)
                # the message as its protocol wrote it goes with it: a stream keeps an AMQP 1.0
                # message whole (its subject, to...), the offset added as an annotation
                copy.native = message.native
                entry = QueuedMessage(copy, offset)
                self.unacked += 1
                consumer.deliver(self, entry)

    # -- invariants ----------------------------------------------------------------------------

    def _check(self) -> None:
        ready = self._ready
        if isinstance(ready, _PriorityReady):
            assert ready.in_order(), f"{self!r}: ready messages out of order"
        else:
            seqs = [entry.seq for entry in ready]
            assert seqs == sorted(seqs), f"{self!r}: ready messages out of order"
        assert self.unacked >= 0, f"{self!r}: negative unacked count"
        if self.stream is not None:
            self.stream._check()
            assert not ready
            assert set(self.stream_positions) == set(self.consumers)
        assert self._ready_bytes == sum(len(e.message.body) for e in ready)
        persistent = [e.message for e in ready if e.message.properties.get("delivery_mode") == 2]
        assert self.persistent == (len(persistent), sum(len(m.body) for m in persistent))
        assert not self._over_limit() or self._overflow != "drop-head" or not ready
        assert not self.deleted, f"{self!r}: deleted but still in its vhost"
        assert self._consumer_count == sum(len(g) for g in self._groups.values()) + len(
            self._blocked)
        assert all(c.blocked for c in self._blocked)
        assert self._priorities == sorted(self._groups, reverse=True)


#: Where a quorum queue lets blocked publishers go: 80% of its limits (rabbit_fifo.hrl).
_LOW_LIMIT = 0.8


def _filter_value(message: Message) -> str | None:
    value = (message.properties.get("headers") or {}).get("x-stream-filter-value")
    return value if isinstance(value, str) else None


def _stream_log(queue: Queue) -> StreamLog:
    """A new stream's log, from its arguments (validated when it was declared)."""
    args = queue.arguments
    max_bytes = args.get("x-max-length-bytes")
    max_age = args.get("x-max-age")
    segment = args.get("x-stream-max-segment-size-bytes")
    return StreamLog(queue.vhost.broker.clock,
                     max_bytes=max_bytes if isinstance(max_bytes, int) else None,
                     max_age=max_age_ms(max_age) if isinstance(max_age, str) else None,
                     segment_size=segment if isinstance(segment, int) else DEFAULT_SEGMENT_SIZE)


def _by_seq(entry: QueuedMessage) -> int:
    return entry.seq


def _priority(consumer: Consumer) -> int:
    return consumer.priority

