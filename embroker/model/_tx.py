"""Transactions (the tx class): what a transactional channel holds until commit.

A transactional channel does not route its publishes nor apply its acknowledgements at once: it
keeps them, in order, as :class:`HeldPublish` and :class:`HeldSettlement` records. ``tx.commit``
applies them in that order, ``tx.rollback`` forgets them (acknowledged messages become
unacknowledged again, as in RabbitMQ), and a channel that closes requeues what they held.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ._consumer import Unacked
    from ._message import Message

__all__ = ["HeldPublish", "HeldSettlement", "Settlement", "TxRecord"]


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

    message: Message
    mandatory: bool
    #: The per-message TTL in seconds (from the ``expiration`` property), if any.
    expiration: float | None


class HeldSettlement(NamedTuple):
    """Acknowledgements a transaction holds until commit: the deliveries (by delivery tag) and
    how they were settled."""

    taken: list[tuple[int, Unacked]]
    settlement: Settlement
    #: The method that settled them (basic.ack, basic.nack, basic.reject).
    method: str = "basic.ack"


TxRecord = HeldPublish | HeldSettlement
