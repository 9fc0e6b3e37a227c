"""What a publish came to: :class:`PublishOutcome`, the answer of ``Channel.basic_publish``.

Every surface needs more of a publish than its confirm sequence number: AMQP 1.0 settles each
transfer ``accepted``, ``released`` (it reached no queue) or ``rejected`` (a queue refused it,
RabbitMQ 4's ``rabbit_amqp_session``), and the management API's publish answers
``{"routed": ...}`` (``rabbit_mgmt_wm_exchange_publish``, v3.10.8). The model decides each of
these once and returns them, so that no surface rebuilds them from the channel's events or the
routing trace.

It is a named tuple, as the channel's events are (:mod:`._events`): immutable, typed and cheap
to make on the publish path.
"""

from __future__ import annotations

from typing import NamedTuple

from ._events import made_whole

__all__ = ["PublishOutcome"]


class PublishOutcome(NamedTuple):
    """What one ``basic_publish`` came to.

    >>> from embroker.model import Broker
    >>> ch = Broker().open_connection().open_channel(1)
    >>> _ = ch.queue_declare("jobs")
    >>> ch.basic_publish("", "jobs", b"x")
    PublishOutcome(seq=0, routed=('jobs',), accepted=True, returned=False, held=False)
    >>> ch.basic_publish("", "nowhere", b"x", mandatory=True).returned
    True
    """

    #: The publish sequence number in confirm mode (what the confirm names); 0 outside it.
    seq: int = 0
    #: The names of the queues the message was routed to, in routing order; a direct reply-to
    #: address counts as one when the broker's profile routes to it as a volatile queue
    #: (RabbitMQ 4.2). Empty: the message reached no queue.
    routed: tuple[str, ...] = ()
    #: False when the broker refused the message after routing it: a queue with
    #: ``x-overflow`` reject-publish was full, or a test injected a nack (in confirm mode, the
    #: confirm is a nack).
    accepted: bool = True
    #: A mandatory message that reached no queue: it was returned (basic.return).
    returned: bool = False
    #: In a transaction: held until tx.commit, so nothing is routed yet.
    held: bool = False


#: :class:`PublishOutcome` from all five of its fields (``_events.made_whole``: once per
#: publish).
new_outcome = made_whole(PublishOutcome)
