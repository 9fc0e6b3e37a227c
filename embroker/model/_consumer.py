"""Consumers (basic.consume) and the deliveries a client holds unacknowledged."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, final

from ._events import made_whole

if TYPE_CHECKING:
    from ._channel import Channel
    from ._message import Message, QueuedMessage
    from ._queue import Queue

__all__ = ["Browser", "Consumer", "Credited", "Delivery", "Unacked"]


@final
class Delivery:
    """A message handed to a client by basic.get (or to an in-process consumer)."""

    __slots__ = ("consumer_tag", "delivery_tag", "exchange", "message", "message_count",
                 "redelivered", "routing_key")

    def __init__(self, delivery_tag: int, redelivered: bool, exchange: str, routing_key: str,
                 message: Message, message_count: int = 0, consumer_tag: str = "") -> None:
        self.delivery_tag = delivery_tag
        self.redelivered = redelivered
        self.exchange = exchange
        self.routing_key = routing_key
        self.message = message
        self.message_count = message_count
        self.consumer_tag = consumer_tag

    @property
    def properties(self) -> dict[str, Any]:
        return self.message.properties

    @property
    def body(self) -> bytes:
        return self.message.body

    def __repr__(self) -> str:
        return (f"<Delivery tag={self.delivery_tag} redelivered={self.redelivered} "
                f"exchange={self.exchange!r} routing_key={self.routing_key!r} "
                f"body={self.message.body[:40]!r}>")


@final
class Consumer:
    """A subscription of a channel to a queue (basic.consume)."""

    __slots__ = ("arguments", "blocked", "channel", "credit", "exclusive", "message_filter",
                 "no_ack", "prefetch", "priority", "queue", "suspected", "tag", "unacked")

    def __init__(self, channel: Channel, queue: Queue, tag: str, *, no_ack: bool,
                 exclusive: bool, arguments: dict[str, Any], prefetch: int) -> None:
        self.channel = channel
        self.queue = queue
        self.tag = tag
        self.no_ack = no_ack
        self.exclusive = exclusive
        self.arguments = arguments
        self.prefetch = prefetch
        self.unacked = 0
        #: Passed over for lack of room: out of its queue's rotation until its channel has room
        #: (then it rejoins at the back, see Queue.unblock).
        self.blocked = False
        priority = arguments.get("x-priority", 0)
        self.priority: int = priority if isinstance(priority, int) else 0
        #: An AMQP 1.0 receiving link's credit: how many more messages it may be sent. ``None``
        #: (0-9-1 and the in-process client) leaves the capacity to qos.
        self.credit: int | None = None
        #: A stream consumer's per-message filter (RabbitMQ 4.1+'s AMQP 1.0 filter
        #: expressions, given by the protocol layer): a message it refuses is skipped, without
        #: taking credit. ``None`` takes every message.
        self.message_filter: Callable[[Message], bool] | None = None
        #: Its node is cut off from its quorum queue's leader (a partition): it is served
        #: nothing until the network heals (rabbit_fifo's ``suspected_down``).
        self.suspected = False

    def has_credit(self) -> bool:
        """Whether its own limit lets it take one more message: its prefetch (basic.qos
        global=false), or for an AMQP 1.0 receiving link its link credit (whatever it holds
        unacknowledged); a suspected one has none."""
        if self.credit is not None:
            return self.credit > 0 and not self.suspected
        return (self.no_ack or not self.prefetch or self.unacked < self.prefetch) and (
            not self.suspected)

    def has_capacity(self) -> bool:
        """Whether qos lets this consumer take one more message now: its own prefetch, and its
        channel's global limit. As in RabbitMQ, a reached global limit holds back auto-ack
        consumers too."""
        return self.has_credit() and not self.channel.global_limit_reached()

    def deliver(self, queue: Queue, entry: QueuedMessage) -> None:
        if self.credit is not None:
            self.credit -= 1
        self.channel._deliver(self, queue, entry)

    def set_credit(self, credit: int) -> None:
        """Give the consumer link credit (AMQP 1.0 flow): it takes up to ``credit`` messages,
        at once if its queue has them ready (:meth:`Channel.basic_credit
        <embroker.model.Channel.basic_credit>` is the channel's operation)."""
        self.credit = credit
        if credit > 0 and not self.queue.deleted:
            if self.blocked:
                self.queue.unblock(self.channel)  # back in the rotation
            self.queue.dispatch()

    def drain(self) -> int:
        """Use up the credit the queue could not fill: returns how much (RabbitMQ's queue
        answers a drain with the credit it drained, ``send_drained``)."""
        drained, self.credit = self.credit or 0, 0
        return drained

    def __repr__(self) -> str:
        return (f"<Consumer '{self.tag}' on queue '{self.queue.name}' "
                f"(channel {self.channel.number}, {self.unacked} unacked)>")


class Credited(NamedTuple):
    """What giving a consumer credit did (:meth:`Channel.basic_credit
    <embroker.model.Channel.basic_credit>`)."""

    #: Messages delivered at once (each took one credit).
    delivered: int
    #: The credit a drain used up, unfilled (the link advances its delivery count by it).
    drained: int
    #: The credit left.
    credit: int


class Unacked(NamedTuple):
    """A delivery its channel has not settled yet."""

    queue: Queue
    entry: QueuedMessage
    #: The consumer it went to; ``None`` for basic.get.
    consumer: Consumer | None


#: :class:`Unacked` from its three fields (``_events.made_whole``: once per delivery).
new_unacked = made_whole(Unacked)


@final
class Browser:
    """A look at a queue's ready messages that takes none of them (AMQP 1.0's
    distribution-mode ``copy``), made by :meth:`Channel.browse <embroker.model.Channel.browse>`
    once the channel may read the queue. It remembers how far it has read: each message is
    shown once, in the queue's order, and messages that arrive later are shown when they come.
    """

    __slots__ = ("_position", "_shown", "queue")

    def __init__(self, queue: Queue) -> None:
        self.queue = queue
        # What was shown: in a queue kept in position order, the position (seq) of the last
        # message shown; in a priority queue (ready messages by priority, then position), the
        # positions shown that may still be there.
        self._position = -1
        self._shown: set[int] | None = set() if queue.prioritised else None

    @property
    def gone(self) -> bool:
        """Whether the queue was deleted (nothing more will be shown)."""
        return self.queue.deleted

    def take(self, limit: int,
             accept: Callable[[Message], bool] | None = None) -> list[QueuedMessage]:
        """Up to ``limit`` ready messages not shown before, in queue order; those ``accept``
        refuses are passed over for good (a browser's selector).

        Runtime complexity: ``O(n)`` for ``n`` ready messages.
        """
        queue = self.queue
        if limit <= 0 or queue.deleted:
            return []
        entries = queue.entries
        seen = self._shown
        if seen is not None and len(seen) > 2 * len(entries) + 64:
            seen.intersection_update(entry.seq for entry in entries)  # forget the departed
        shown: list[QueuedMessage] = []
        for entry in entries:
            if seen is None:
                if entry.seq <= self._position:
                    continue
                self._position = entry.seq
            elif entry.seq in seen:
                continue
            else:
                seen.add(entry.seq)
            if accept is None or accept(entry.message):
                shown.append(entry)
                if len(shown) == limit:
                    break
        return shown

    def __repr__(self) -> str:
        return f"<Browser of queue '{self.queue.name}' after #{self._position}>"
