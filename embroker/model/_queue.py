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
        consumers: the consumers, in the order they next get a turn.
        unacked: how many of its messages are delivered and not yet acknowledged.
        bindings: the bindings whose destination is this queue (not counting the default
            exchange's implicit one).
    """

    kind: ClassVar[str] = "queue"

    __slots__ = (
        "_next_seq", "_ready", "arguments", "auto_delete", "bindings", "consumers",
        "default_binding", "deleted", "durable", "exclusive_owner", "had_consumers", "name",
        "unacked", "vhost",
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
        self.consumers: deque[Consumer] = deque()
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
        return len(self.consumers)

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
                f"{len(self.consumers)} consumers>")

    # -- messages in ---------------------------------------------------------------------------

    def publish(self, message: Message) -> None:
        """Enqueue a routed message and hand it to a consumer if one can take it.

        Runtime complexity: ``O(1)`` amortised.
        """
        entry = QueuedMessage(message, self._next_seq)
        self._next_seq += 1
        self._ready.append(entry)
        if self.consumers:
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
        if self.consumers:
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
        """Hand ready messages to consumers with room, in turn, until one side runs out."""
        consumers = self.consumers
        ready = self._ready
        while ready and consumers:
            for _ in range(len(consumers)):
                consumer = consumers[0]
                consumers.rotate(-1)
                if consumer.has_capacity():
                    self.unacked += 1
                    consumer.deliver(self, ready.popleft())
                    break
            else:
                return

    # -- invariants ----------------------------------------------------------------------------

    def _check(self) -> None:
        seqs = [entry.seq for entry in self._ready]
        assert seqs == sorted(seqs), f"{self!r}: ready messages out of order"
        assert self.unacked >= 0, f"{self!r}: negative unacked count"
        assert not self.deleted, f"{self!r}: deleted but still in its vhost"


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
