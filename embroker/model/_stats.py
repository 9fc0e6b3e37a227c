"""Message statistics: what passed through each channel, exchange, queue and virtual host, with
the names RabbitMQ 3.10.8's management API shows (``message_stats``).

RabbitMQ's channel counts as it works (``rabbit_channel``'s ``?INCR_STATS``, into
``rabbit_core_metrics``' tables) and the management agent sums those counts per channel,
exchange, queue and vhost every statistics interval. embroker counts in the same places, on the
object itself, so a count is current when it is read (RabbitMQ's lags by up to its interval):

- a publish that reaches routing (``deliver_to_queues``): ``publish`` on the channel and the
  vhost, ``publish_in`` on the exchange; each queue it reaches ``publish``, and the exchange
  ``publish_out`` once per queue; unroutable, ``return_unroutable`` (mandatory) or
  ``drop_unroutable`` (the channel and the vhost);
- each basic.ack sent to a publisher: ``confirm`` (the channel and the vhost);
- each delivery (``record_sent``): ``deliver`` / ``deliver_no_ack`` to a consumer, ``get`` /
  ``get_no_ack`` to basic.get, and ``redeliver`` when redelivered; each acknowledged delivery
  ``ack``; a basic.get that finds nothing ``get_empty`` (the channel, the queue and the vhost).

What the API shows of them (which groups, and the two counts 3.10.8 always shows as 0) is the
management API's (:mod:`embroker.management.views`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

__all__ = ["MessageStats"]


@final
@dataclass(slots=True, eq=False, repr=False)
class MessageStats:
    """One object's counts (see the module's documentation for where each is counted)."""

    publish: int = 0
    confirm: int = 0
    return_unroutable: int = 0
    drop_unroutable: int = 0
    deliver: int = 0
    deliver_no_ack: int = 0
    get: int = 0
    get_no_ack: int = 0
    get_empty: int = 0
    redeliver: int = 0
    ack: int = 0
    publish_in: int = 0
    publish_out: int = 0

    @property
    def published(self) -> bool:
        """Whether a publish was counted here (RabbitMQ's publishing counts exist)."""
        return bool(self.publish or self.publish_in)

    @property
    def took(self) -> bool:
        """Whether a delivery, an ack or an empty basic.get was counted here (RabbitMQ's
        delivering counts exist)."""
        return bool(self.deliver or self.deliver_no_ack or self.get or self.get_no_ack
                    or self.get_empty or self.ack)

    @property
    def deliver_get(self) -> int:
        """Every delivery, to consumers and basic.get, with or without acks."""
        return self.deliver + self.deliver_no_ack + self.get + self.get_no_ack

    def add(self, other: MessageStats) -> None:
        """Count ``other``'s counts here too (a sum: the broker's overview)."""
        for name in self.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)}" for name in self.__slots__
                          if getattr(self, name))
        return f"<MessageStats {shown or 'none'}>"
