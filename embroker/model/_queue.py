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
        "_consumer_count", "_groups", "_next_seq", "_priorities", "_ready", "arguments",
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
        self._next_seq = 0
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

    def publish(self, message: Message) -> None:
        """Enqueue a routed message and hand it to a consumer if one can take it.

        Runtime complexity: ``O(1)`` amortised.
        """
        entry = QueuedMessage(message, self._next_seq)
        self._next_seq += 1
        self._ready.append(entry)
        if self._consumer_count:
            self.dispatch()

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
            if not ready or entry.seq < ready[0].seq:
                ready.appendleft(entry)
            else:
                ready.insert(_insertion_point(ready, entry.seq), entry)
        if self._consumer_count:
            self.dispatch()

    # -- messages out --------------------------------------------------------------------------

    def get(self) -> QueuedMessage | None:
        """Take the next ready message for basic.get (the caller settles or tracks it)."""
        if not self._ready:
            return None
        self.unacked += 1
        return self._ready.popleft()

    def settle(self, count: int = 1) -> None:
        """Forget ``count`` delivered messages: acknowledged, or dropped by a reject/nack."""
        self.unacked -= count

    def purge(self) -> int:
        """Drop every ready message; returns how many."""
        count = len(self._ready)
        self._ready.clear()
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
                        consumer.deliver(self, ready.popleft())
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
