"""What a channel tells its owner without being asked: events.

The model never writes to anyone. A channel hands each thing its client must be sent unasked
(a delivery to a consumer, a returned message, a publisher confirm, a consumer the broker
cancelled) to its owner's :attr:`~embroker.model.Channel.listener` as one of these small
immutable records; the AMQP 0-9-1 connection turns them into frames, the AMQP 1.0 connection
into transfers and dispositions, the in-process client into callbacks.

They are named tuples: immutable, typed, and cheap to make on the delivery path. The hot paths
make them with :func:`made_whole` (every field given, in order): a named tuple's own
``__new__`` is a Python function, a frame of its own for every delivery and confirm.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

if TYPE_CHECKING:
    from ._message import Message

__all__ = ["Cancelled", "ChannelEvent", "Confirmed", "Delivered", "Listener", "Returned",
           "made_whole"]

_TupleT = TypeVar("_TupleT", bound=tuple[Any, ...])


def made_whole(kind: type[_TupleT]) -> Callable[[tuple[Any, ...]], _TupleT]:
    """A maker of ``kind`` (a named tuple) from a tuple of all its fields in their order, with
    no defaults and no Python frame: ``tuple.__new__`` called directly (about 1,600
    instructions less an instance than ``kind(...)``, measured on the delivery path). What it
    is given is not checked: a hot path passes every field."""
    return functools.partial(tuple.__new__, kind)


class Delivered(NamedTuple):
    """A message for a consumer (basic.deliver)."""

    #: The channel's number.
    channel: int
    consumer_tag: str
    #: The channel's delivery tag for it; what the client acknowledges.
    delivery_tag: int
    #: Whether it was delivered before (and came back to its queue).
    redelivered: bool
    exchange: str
    routing_key: str
    message: Message
    #: How many of its deliveries failed before (AMQP 1.0 ``modified`` with
    #: ``delivery-failed``, rejections carried to a dead-letter copy): the 1.0 header's
    #: ``delivery-count``.
    failures: int = 0


#: :class:`Delivered` from all eight of its fields (:func:`made_whole`).
new_delivered = made_whole(Delivered)


class Returned(NamedTuple):
    """A mandatory message that reached no queue, sent back to its publisher (basic.return)."""

    channel: int
    reply_code: int
    reply_text: str
    exchange: str
    routing_key: str
    message: Message


class Confirmed(NamedTuple):
    """A publisher confirm: the broker took responsibility for a publish (``ack``) or refused
    it (a nack). ``multiple`` covers every publish up to ``delivery_tag``."""

    channel: int
    delivery_tag: int
    multiple: bool
    ack: bool


#: :class:`Confirmed` from all four of its fields (:func:`made_whole`).
new_confirmed = made_whole(Confirmed)


class Cancelled(NamedTuple):
    """The broker cancelled a consumer (its queue was deleted, or a fault injected)."""

    channel: int
    consumer_tag: str


#: Everything a channel may tell its owner.
ChannelEvent = Delivered | Returned | Confirmed | Cancelled
#: The callable a channel's owner sets to hear its events.
Listener = Callable[[ChannelEvent], None]
