"""A quorum queue's own rules: what RabbitMQ 3.10's ``rabbit_fifo`` does that a classic queue
does not (see :mod:`._queue` for what they share).

Theory of operation
-------------------
- A delivery carries ``x-delivery-count`` (how many times it came back before) and the
  annotations a ``modified`` outcome gave it (:meth:`QuorumQueue.outgoing`).
- A message that comes back counts one more delivery; over ``x-delivery-limit`` it goes
  (dead-lettered, reason ``delivery_limit``); without a limit it goes to the back of the queue,
  with one it comes back first (:meth:`QuorumQueue.requeue`).
- Over a length limit with ``reject-publish``, its publishers ("enqueuers") are blocked, and
  let go at 80% of every limit (``evaluate_limit/5``); ``reject-publish-dlx`` is not a quorum
  overflow: it drops its head (``rabbit_quorum_queue:overflow/3``); a policy's change of the
  overflow drops the head only when the new overflow is ``drop-head``.
- RabbitMQ 4 reads a negative ``delivery-limit`` as none (v4.1.4 ``rabbit_fifo:update_config``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar, final

from ..fieldtypes import Long
from . import _history
from ._queue import Queue, _by_seq

if TYPE_CHECKING:
    from ._message import Message, QueuedMessage

__all__ = ["QuorumQueue"]

#: Where a quorum queue lets blocked publishers go: 80% of its limits (rabbit_fifo.hrl).
_LOW_LIMIT = 0.8


@final
class QuorumQueue(Queue):
    """A quorum queue (``x-queue-type`` quorum): see the module's notes."""

    rewrites_deliveries: ClassVar[bool] = True
    keeps_annotations: ClassVar[bool] = True

    __slots__ = ()

    def _use_settings(self) -> None:
        super()._use_settings()
        if self._overflow == "reject-publish-dlx":
            self._overflow = "drop-head"  # not a quorum overflow: RabbitMQ warns, drops the head
        limit = self.settings.delivery_limit
        if limit is not None and limit < 0 and self.vhost.broker.profile.rabbitmq4:
            limit = None  # RabbitMQ 4: a negative limit is none (v4.1.4 rabbit_fifo:update_config)
        self._delivery_limit = limit

    def _policies_changed(self, overflow: str) -> None:
        super()._policies_changed(self._overflow)  # (only the new overflow drops the head)

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

    def requeue(self, entries: Iterable[QueuedMessage], *, closed: bool = False) -> None:
        """Put delivered messages back, each counting one more delivery: over the delivery
        limit they go, without a limit to the back of the queue, with one to their positions;
        ``closed`` (their channel closed), to their positions either way.
        """
        ready = self._ready
        limit = self._delivery_limit
        over_limit = []
        to_back = []
        for entry in sorted(entries, key=_by_seq, reverse=True):  # latest to earliest
            entry.redelivered = True
            self.unacked -= 1
            entry.delivery_count += 1
            if limit is not None and entry.delivery_count > limit:
                over_limit.append(entry.message)
                _history.left(self._clock, self, (entry.message,), "delivery_limit")
                continue
            if limit is None and not closed:
                # RabbitMQ 3.10's quorum queue without a delivery limit returns a message to
                # the back of the queue (with one, it comes back first, as below), several in
                # their order (rabbit_fifo's return of a consumer's messages). Those of a
                # consumer whose channel closed come back first either way (v3.10.8
                # rabbit_fifo: handle_down, return_all/5 into its returns).
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
        self._requeued()

    def _refuses(self, publisher: object | None, message: Message) -> bool:
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
