"""Faults a test injects into the model (see :mod:`embroker.faults` for the public API).

Two hooks, each tested only when a fault is armed (one attribute test otherwise):

- ``nack``: a publish in confirm mode that matches an armed :class:`PublishNack` is not
  enqueued and its publisher gets a nack, as when a RabbitMQ queue fails to take a message;
  the decision records it (the queues it would have reached refused it, reason
  ``"nack-injected"``; or, reaching none, the confirm nack alone).
- ``delivered``: a delivery (or get-ok) of a message that matches an armed
  :class:`DeliveryFault` calls the fault's action with the channel (the listener drops the
  connection after writing the delivery: a client that crashes while it processes a message).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, final

from . import _history
from ._history import NACK_INJECTED

if TYPE_CHECKING:
    from ._channel import Channel
    from ._message import Message
    from ._queue import Queue

__all__ = ["NACK_INJECTED", "DeliveryFault", "PublishNack", "delivered", "nack"]



@final
class PublishNack:
    """Nack the next ``remaining`` publishes (in confirm mode) to ``exchange`` or routed to
    ``queue`` (either, both, or neither: any publish) in ``vhost``."""

    __slots__ = ("exchange", "nacked", "queue", "remaining", "vhost")

    def __init__(self, remaining: int, *, exchange: str | None = None, queue: str | None = None,
                 vhost: str = "/") -> None:
        self.remaining = remaining
        self.exchange = exchange
        self.queue = queue
        self.vhost = vhost
        #: How many publishes it nacked so far.
        self.nacked = 0

    def matches(self, vhost: str, exchange: str, queues: list[Queue]) -> bool:
        return (self.remaining > 0 and vhost == self.vhost
                and (self.exchange is None or exchange == self.exchange)
                and (self.queue is None or any(q.name == self.queue for q in queues)))

    def __repr__(self) -> str:
        target = " ".join(f"{k}={v!r}" for k, v in (("exchange", self.exchange),
                                                   ("queue", self.queue)) if v is not None)
        return f"<PublishNack {self.remaining} left{' ' + target if target else ''}>"


@final
class DeliveryFault:
    """Call ``action(channel, message)`` when a message matching ``predicate`` is delivered
    (``times`` times at most)."""

    __slots__ = ("action", "fired", "predicate", "times")

    def __init__(self, predicate: Callable[[Message], Any],
                 action: Callable[[Channel, Message], None], times: int = 1) -> None:
        self.predicate = predicate
        self.action = action
        self.times = times
        self.fired = 0


def nack(channel: Channel, message: Message, queues: list[Queue]) -> bool:
    """Whether an armed fault nacks this publish; if so, record it (the caller enqueues
    nothing and confirms with a nack)."""
    vhost = channel.vhost
    for fault in vhost.broker._publish_faults:
        if fault.matches(vhost.name, message.exchange, queues):
            fault.remaining -= 1
            fault.nacked += 1
            clock = vhost.broker.clock
            for queue in queues:
                _history.refused(clock, queue, message, NACK_INJECTED)
            return True
    return False


def delivered(channel: Channel, message: Message) -> None:
    """A message was delivered on ``channel``: run the delivery faults it matches."""
    for fault in list(channel.vhost.broker._delivery_faults):
        if fault.fired < fault.times and fault.predicate(message):
            fault.fired += 1
            fault.action(channel, message)
