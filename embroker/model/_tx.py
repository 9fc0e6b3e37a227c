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
    #: basic.nack / basic.reject with requeue: back to the queue, marked redelivered.
    REQUEUE = "requeue"
    #: basic.nack / basic.reject without requeue: dropped, or dead-lettered (``rejected``).
    REJECT = "reject"


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
