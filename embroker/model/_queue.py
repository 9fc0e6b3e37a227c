"""Queues: ready messages in order, consumers taking turns."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, final

from ._message import Message, QueuedMessage

if TYPE_CHECKING:
    from ._channel import Consumer
    from ._connection import Connection
    from ._exchange import Binding
    from ._vhost import VirtualHost

__all__ = ["Queue"]


@final
class Queue:
    """A queue: its ready messages in order and the consumers that take them in turn.

    Messages keep a position number (``seq``) from the moment they enter, so a requeued message
    goes back to where it was, ahead of the ones published after it, as in RabbitMQ.

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
        "_consumer_count", "_groups", "_max_bytes", "_max_length", "_next_seq", "_overflow",
        "_priorities", "_ready", "_ready_bytes", "arguments",
        "auto_delete", "bindings", "default_binding", "deleted", "durable", "exclusive_owner",
        "had_consumers", "name", "unacked", "vhost",
    )

    def __init__(self, vhost: VirtualHost, name: str, *, durable: bool = False,
                 exclusive_owner: Connection | None = None, auto_delete: bool = False,
                 arguments: dict[str, Any] | None = None) -> None:
        self.vhost = vhost
        self.name = name
        self.durable = durable
        self.exclusive_owner = exclusive_owner
        self.auto_delete = auto_delete
        self.arguments: dict[str, Any] = dict(arguments or {})
        # Consumers by priority, each group taking turns; priorities highest first.
        self._groups: dict[int, deque[Consumer]] = {}
        self._priorities: list[int] = []
        self._consumer_count = 0
        self.bindings: dict[tuple[Any, ...], Binding] = {}
        self.unacked = 0
        self.had_consumers = False
        self.deleted = False
        self._ready: deque[QueuedMessage] = deque()
        self._ready_bytes = 0  # body bytes of the ready messages (x-max-length-bytes)
        self._next_seq = 0
        # Length limits count ready messages only, as RabbitMQ's.
        self._max_length: int | None = self.arguments.get("x-max-length")
        self._max_bytes: int | None = self.arguments.get("x-max-length-bytes")
        self._overflow: str = self.arguments.get("x-overflow", "drop-head")
        self.default_binding: Binding  # set by the vhost

    # -- inspection ----------------------------------------------------------------------------

    @property
    def exclusive(self) -> bool:
        return self.exclusive_owner is not None

    @property
    def message_count(self) -> int:
        """Messages ready for delivery (not counting delivered, unacknowledged ones)."""
        return len(self._ready)

    @property
    def consumer_count(self) -> int:
        return self._consumer_count

    @property
    def consumers(self) -> list[Consumer]:
        return [c for priority in self._priorities for c in self._groups[priority]]

    def add_consumer(self, consumer: Consumer) -> None:
        """Add a consumer; it takes its turn after those of its priority already there."""
        group = self._groups.get(consumer.priority)
        if group is None:
            group = self._groups[consumer.priority] = deque()
            self._priorities = sorted(self._groups, reverse=True)
        group.append(consumer)
        self._consumer_count += 1
        self.had_consumers = True

    def remove_consumer(self, consumer: Consumer) -> bool:
        """Remove a consumer; False when it was not there."""
        group = self._groups.get(consumer.priority)
        if group is None or consumer not in group:
            return False
        group.remove(consumer)
        self._consumer_count -= 1
        if not group:
            del self._groups[consumer.priority]
            self._priorities.remove(consumer.priority)
        return True

    def clear_consumers(self) -> list[Consumer]:
        """Remove every consumer (the queue is going); returns them."""
        consumers = self.consumers
        self._groups.clear()
        self._priorities = []
        self._consumer_count = 0
        return consumers

    @property
    def messages(self) -> list[Message]:
        """The ready messages in delivery order, without consuming them."""
        return [entry.message for entry in self._ready]

    @property
    def entries(self) -> list[QueuedMessage]:
        """The ready messages with their per-queue state (``redelivered``)."""
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

    # -- messages in ---------------------------------------------------------------------------

    @property
    def message_bytes(self) -> int:
        """Body bytes of the ready messages (what ``x-max-length-bytes`` limits)."""
        return self._ready_bytes

    def publish(self, message: Message) -> bool:
        """Enqueue a routed message and hand it to a consumer if one can take it.

        Returns:
            False when the queue refused it (``x-overflow`` reject-publish or
            reject-publish-dlx and the queue full): the publisher's confirm is then a nack.

        Runtime complexity: ``O(1)`` amortised.
        """
        limited = self._max_length is not None or self._max_bytes is not None
        if limited and self._overflow != "drop-head" and self._over_limit(1, len(message.body)):
            return False
        entry = QueuedMessage(message, self._next_seq)
        self._next_seq += 1
        self._ready.append(entry)
        self._ready_bytes += len(message.body)
        if self._consumer_count:
            self.dispatch()
        if limited:
            self._drop_head()
        return True

    def _over_limit(self, extra_messages: int = 0, extra_bytes: int = 0) -> bool:
        return ((self._max_length is not None
                 and len(self._ready) + extra_messages > self._max_length)
                or (self._max_bytes is not None
                    and self._ready_bytes + extra_bytes > self._max_bytes))

    def _drop_head(self) -> None:
        # drop-head overflow: the oldest ready messages go until the queue is within limits.
        if self._overflow != "drop-head":
            return
        ready = self._ready
        while ready and self._over_limit():
            entry = ready.popleft()
            self._ready_bytes -= len(entry.message.body)

    def requeue(self, entries: Iterable[QueuedMessage]) -> None:
        """Put delivered messages back at their original positions, marked redelivered.

        Runtime complexity: ``O(k)`` when they go back to the head (the usual case), ``O(k * n)``
        at worst.
        """
        ordered = sorted(entries, key=_by_seq, reverse=True)
        ready = self._ready
        for entry in ordered:  # from the latest to the earliest
            entry.redelivered = True
            self.unacked -= 1
            self._ready_bytes += len(entry.message.body)
            if not ready or entry.seq < ready[0].seq:
                ready.appendleft(entry)
            else:
                ready.insert(_insertion_point(ready, entry.seq), entry)
        if self._consumer_count:
            self.dispatch()
        if self._max_length is not None or self._max_bytes is not None:
            self._drop_head()

    # -- messages out --------------------------------------------------------------------------

    def get(self) -> QueuedMessage | None:
        """Take the next ready message for basic.get (the caller settles or tracks it)."""
        if not self._ready:
            return None
        self.unacked += 1
        entry = self._ready.popleft()
        self._ready_bytes -= len(entry.message.body)
        return entry

    def settle(self, count: int = 1) -> None:
        """Forget ``count`` delivered messages: acknowledged, or dropped by a reject/nack."""
        self.unacked -= count

    def purge(self) -> int:
        """Drop every ready message; returns how many."""
        count = len(self._ready)
        self._ready.clear()
        self._ready_bytes = 0
        return count

    def dispatch(self) -> None:
        """Hand ready messages to consumers with room until one side runs out: the highest
        priority consumers that have room first, taking turns within a priority."""
        ready = self._ready
        for priority in self._priorities:
            group = self._groups[priority]
            while ready:
                for _ in range(len(group)):
                    consumer = group[0]
                    group.rotate(-1)
                    if consumer.has_capacity():
                        self.unacked += 1
                        entry = ready.popleft()
                        self._ready_bytes -= len(entry.message.body)
                        consumer.deliver(self, entry)
                        break
                else:
                    break  # nobody at this priority has room: try the next one down
            if not ready:
                return

    # -- invariants ----------------------------------------------------------------------------

    def _check(self) -> None:
        seqs = [entry.seq for entry in self._ready]
        assert seqs == sorted(seqs), f"{self!r}: ready messages out of order"
        assert self.unacked >= 0, f"{self!r}: negative unacked count"
        assert self._ready_bytes == sum(len(e.message.body) for e in self._ready)
        assert not self._over_limit() or self._overflow != "drop-head" or not self._ready
        assert not self.deleted, f"{self!r}: deleted but still in its vhost"
        assert self._consumer_count == sum(len(g) for g in self._groups.values())
        assert self._priorities == sorted(self._groups, reverse=True)


def _by_seq(entry: QueuedMessage) -> int:
    return entry.seq


def _insertion_point(ready: deque[QueuedMessage], seq: int) -> int:
    lo, hi = 0, len(ready)
    while lo < hi:
        mid = (lo + hi) // 2
        if ready[mid].seq < seq:
            lo = mid + 1
        else:
            hi = mid
    return lo
