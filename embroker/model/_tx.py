"""Transactions: publishes and settlements held, in order, until commit.

A :class:`Transaction` belongs to a connection and holds what its channels give it, in the
order they give it: publishes (:class:`HeldPublish`, already checked as basic.publish checks
them) and settlements (:class:`HeldSettlement`: acks, nacks and rejects, AMQP 1.0's
dispositions, the deliveries taken off their channel's unacknowledged ones). Nothing it holds
has happened yet: :meth:`Transaction.commit` applies every record in that order, and
:meth:`Transaction.rollback` forgets them, in the way of the protocol that asks.

A connection may have several open at once (AMQP 1.0 declares as many as it likes, STOMP names
its own), and they are not tied to a channel's mode: a channel in confirm mode may publish in
one. AMQP 0-9-1's tx class is one of them, modal: ``tx.select`` gives the channel its own
transaction, which every publish and acknowledgement of the channel goes to from then on
(:class:`~._channel.Channel`'s ``tx_*`` methods keep 0-9-1's rules, such as the 406 for
``tx.select`` after ``confirm.select``).

A channel that closes takes back the deliveries whose settlement a transaction holds (they are
requeued with its other unacknowledged ones, as RabbitMQ's channel does with an open tx); its
own transaction is dropped with it.
"""

from __future__ import annotations

import enum
from collections.abc import Container
from typing import TYPE_CHECKING, Any, NamedTuple, final

if TYPE_CHECKING:
    from ._channel import Channel
    from ._connection import Connection
    from ._consumer import Unacked
    from ._message import Message

__all__ = ["HeldPublish", "HeldSettlement", "Settlement", "Transaction", "TxRecord"]


class Settlement(enum.Enum):
    """How a client settled deliveries."""

    #: basic.ack: done with.
    ACK = "ack"
    #: basic.nack / basic.reject with requeue, AMQP 1.0 ``released`` and ``modified``
    #: without ``delivery-failed``: back to the queue, marked redelivered.
    REQUEUE = "requeue"
    #: AMQP 1.0 ``modified`` with ``delivery-failed``: back to the queue, with one more
    #: failed delivery counted on the message.
    REQUEUE_FAILED = "requeue-failed"
    #: basic.nack / basic.reject without requeue, AMQP 1.0 ``rejected`` and ``modified`` with
    #: ``undeliverable-here`` and ``delivery-failed``: dropped, or dead-lettered
    #: (``rejected``); a failed delivery, as RabbitMQ 4 counts a discard (rabbit_fifo's
    #: ``#discard{}``), carried to the dead-letter copy.
    REJECT = "reject"
    #: AMQP 1.0 ``modified`` with ``undeliverable-here`` and without ``delivery-failed``:
    #: dropped or dead-lettered as REJECT, but not counted as a failed delivery.
    DISCARD = "discard"

    @property
    def requeues(self) -> bool:
        """Whether the deliveries go back to their queue."""
        return self in (Settlement.REQUEUE, Settlement.REQUEUE_FAILED)

    @property
    def failed(self) -> bool:
        """Whether each delivery counts as a failed one (AMQP 1.0's header delivery-count)."""
        return self in (Settlement.REQUEUE_FAILED, Settlement.REJECT)


class HeldPublish(NamedTuple):
    """A publish a transaction holds until commit."""

    #: The channel it was published on (which routes it at commit).
    channel: Channel
    message: Message
    mandatory: bool
    #: The per-message TTL in seconds (from the ``expiration`` property), if any.
    expiration: float | None
    #: Queues it must not reach (see :meth:`Channel.basic_publish`).
    exclude: Container[str] = ()


class HeldSettlement(NamedTuple):
    """Acknowledgements a transaction holds until commit: the deliveries (by delivery tag) of
    one channel and how they were settled."""

    channel: Channel
    taken: list[tuple[int, Unacked]]
    settlement: Settlement
    #: The method that settled them (basic.ack, basic.nack, basic.reject, modified).
    method: str = "basic.ack"
    #: A quorum queue's annotations of AMQP 1.0's ``modified``, added at commit.
    annotations: dict[str, Any] | None = None


TxRecord = HeldPublish | HeldSettlement


@final
class Transaction:
    """Publishes and settlements of a connection's channels, held in order until
    :meth:`commit` (see the module's notes). Made by :meth:`Channel.transaction
    <embroker.model.Channel.transaction>`; a channel's ``basic_publish``, ``basic_ack``,
    ``basic_nack``, ``basic_reject`` and ``modify`` take it as ``transaction=``.

    After a commit or a rollback it is empty and may be used again (0-9-1 begins the next
    transaction at once). Its owner rolls it back when its connection closes.
    """

    __slots__ = ("_records", "connection")

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._records: list[TxRecord] = []

    @property
    def records(self) -> tuple[TxRecord, ...]:
        """What it holds, oldest first."""
        return tuple(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def _hold(self, record: TxRecord) -> None:
        # (a channel's operations call this once they have checked what it holds)
        channel = record.channel
        assert channel.connection is self.connection, "a transaction of another connection"
        self._records.append(record)
        channel._transactions[self] = None

    def commit(self) -> None:
        """Apply what it holds, in the order it was given: publishes are routed (a mandatory
        one that reaches no queue is returned now), settlements settle. It is empty after."""
        for record in self._take():
            if isinstance(record, HeldPublish):
                record.channel._publish(record.message, record.mandatory, record.expiration,
                                        record.exclude)
            else:
                record.channel._apply_settlement(record)

    def rollback(self, *, requeue: bool = False) -> None:
        """Forget what it holds: its publishes are discarded, and the deliveries its
        settlements held are, by default, unacknowledged again on their channels (AMQP 0-9-1's
        tx.rollback: RabbitMQ 3.10's rabbit_channel puts the transaction's acks back among the
        channel's unacknowledged messages, requeueing none). With ``requeue`` they go back to
        their queues, marked redelivered, as a ``released`` outcome does (embroker's AMQP 1.0
        discharge with ``fail``: RabbitMQ 3.10's 1.0 plugin has no transactions); a delivery
        of a stream, which takes no requeue, stays unacknowledged."""
        for record in self._take():
            if isinstance(record, HeldSettlement):
                record.channel._roll_back(record.taken, requeue=requeue)

    def _take(self) -> list[TxRecord]:
        records, self._records = self._records, []
        for channel in {id(r.channel): r.channel for r in records}.values():
            channel._transactions.pop(self, None)
        return records

    def _release(self, channel: Channel, *, publishes: bool) -> list[tuple[int, Unacked]]:
        """``channel`` closes: the deliveries this transaction held for it leave it (returned,
        to be requeued), and with ``publishes`` its held publishes too."""
        kept: list[TxRecord] = []
        taken: list[tuple[int, Unacked]] = []
        for record in self._records:
            if record.channel is not channel:
                kept.append(record)
            elif isinstance(record, HeldSettlement):
                taken.extend(record.taken)
            elif not publishes:
                kept.append(record)
        self._records = kept
        return taken

    def __repr__(self) -> str:
        return f"<Transaction of {self.connection.name}, {len(self._records)} held>"
