"""Publish outcomes on the wire: how the outcomes of the publishes one read brought in are
coalesced into as few frames as the protocol allows, for every protocol.

AMQP 0-9-1's confirms (:func:`coalesce`, ``multiple``):

RabbitMQ's channel collects the confirms and rejections that arrive while it works and sends them
together (``rabbit_channel:send_confirms_and_nacks``): one ``basic.ack`` with ``multiple`` for the
acknowledged publishes below the first rejected one, single acks after it, and the nacks alike
(one ``multiple`` nack for those below the first ack, single nacks after it). A lone ack goes out
on its own (``multiple=false``); a lone nack with ``multiple=true``. embroker confirms every
publish at once, so a batch is what one read from the socket brought in.

>>> coalesce([(1, True), (2, True), (3, True)])
[(3, True, True)]
>>> coalesce([(1, True), (2, True), (3, False), (4, True)])
[(2, True, True), (4, False, True), (3, False, False)]
>>> coalesce([(1, True)]), coalesce([(1, False)])
([(1, False, True)], [(1, True, False)])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

__all__ = ["coalesce", "runs"]

T = TypeVar("T")


def coalesce(outcomes: Iterable[tuple[int, bool]]) -> list[tuple[int, bool, bool]]:
    """The confirms to send for publish outcomes ``(delivery tag, accepted)``, in order, as
    ``(delivery_tag, multiple, ack)``: the acks first, then the nacks."""
    acks = sorted(tag for tag, accepted in outcomes if accepted)
    nacks = sorted(tag for tag, accepted in outcomes if not accepted)
    frames: list[tuple[int, bool, bool]] = []
    if len(acks) == 1:
        frames.append((acks[0], False, True))
    elif acks:
        frames.extend(_runs(acks, nacks, ack=True))
    if nacks:
        frames.extend(_runs(nacks, acks, ack=False))
    return frames


def _runs(tags: list[int], others: list[int], *, ack: bool) -> list[tuple[int, bool, bool]]:
    # rabbit_channel:coalesce_and_send: one multiple frame for the tags below the first tag
    # of the other kind, single frames for the rest.
    cutoff = min([tags[-1] + 1, *others])
    below = [tag for tag in tags if tag < cutoff]
    frames = [(below[-1], True, ack)] if below else []
    frames.extend((tag, False, ack) for tag in tags if tag >= cutoff)
    return frames


def runs(outcomes: Sequence[tuple[int, T]], *, follows: Callable[[int, int], bool],
         joins: Callable[[T], bool]) -> list[tuple[int, int, T]]:
    """Outcomes ``(delivery id, outcome)`` in the order they came, as ``(first, last,
    outcome)`` ranges: a delivery joins the range before it when its id ``follows`` the
    range's last, its outcome is the same object and ``joins`` says such outcomes may share a
    frame (AMQP 1.0's dispositions: consecutive accepted transfers in one ``first``/``last``
    range, each other outcome on its own, as RabbitMQ's 1.0 plugin settles them).

    >>> runs([(1, "ok"), (2, "ok"), (3, "no"), (4, "ok")], follows=lambda a, b: b == a + 1,
    ...      joins=lambda outcome: outcome == "ok")
    [(1, 2, 'ok'), (3, 3, 'no'), (4, 4, 'ok')]
    """
    if not outcomes:
        return []
    ranges: list[tuple[int, int, T]] = []
    first, state = outcomes[0]
    last = first
    for delivery_id, outcome in outcomes[1:]:
        if follows(last, delivery_id) and outcome is state and joins(state):
            last = delivery_id
            continue
        ranges.append((first, last, state))
        first = last = delivery_id
        state = outcome
    ranges.append((first, last, state))
    return ranges
