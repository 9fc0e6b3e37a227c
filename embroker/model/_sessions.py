"""What a session protocol keeps beside queues (MQTT's, RabbitMQ 3.10.8's ``rabbitmq_mqtt``):
the client ids in use, and the messages retained per topic.

- :class:`ClientIds` is RabbitMQ's client id tracker (``rabbit_mqtt_collector`` over
  ``mqtt_machine``): one owner per client id on the node, whatever the virtual host (3.10's
  machine keys its map by the id alone), or per virtual host (``scope``: RabbitMQ 3.13+ join
  a ``pg`` group ``{VHost, ClientId}``); a connection that registers an id another holds
  takes it, and the other is told to close (``duplicate_id``, with what the new holder says).
- :class:`RetainedMessages` is a virtual host's retained message store
  (``rabbit_mqtt_retainer``, one per vhost): the last retained message of each topic, looked
  up by the exact topic name (3.10 matches no wildcards), cleared by an empty one.

Both are the model's, so a protocol adapter keeps no such state of its own, and the broker's
reset (``Broker.restart``) forgets them as RabbitMQ's node forgets its trackers (the retained
store survives a restart in RabbitMQ: DETS on disk; so it does here, with its vhost).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, final

__all__ = ["ClientIds", "Retained", "RetainedMessages"]


@final
class ClientIds:
    """The client ids in use on the node, each with its owner and what closes it. An id is
    held node-wide (3.10's ``mqtt_machine``) or per virtual host (``scope``: RabbitMQ 3.13+
    register ``{VHost, ClientId}`` in a ``pg`` group)."""

    __slots__ = ("_owners",)

    def __init__(self) -> None:
        self._owners: dict[object, tuple[object, Callable[[Any], None]]] = {}

    def register(self, client_id: str, owner: object, close: Callable[[Any], None], *,
                 scope: str | None = None, notice: Any = None) -> bool:
        """``owner`` holds ``client_id`` (in ``scope``) from now on; another holder's
        ``close`` is called with ``notice``, what the new holder tells it (``duplicate_id``:
        RabbitMQ 3.13+'s says whether the old one's will goes out). Whether another held it."""
        key = client_id if scope is None else (scope, client_id)
        held = self._owners.get(key)
        self._owners[key] = (owner, close)
        if held is not None and held[0] is not owner:
            held[1](notice)
            return True
        return False

    def unregister(self, client_id: str, owner: object, *, scope: str | None = None) -> None:
        """``owner`` no longer holds ``client_id`` (nothing when another took it since)."""
        key = client_id if scope is None else (scope, client_id)
        held = self._owners.get(key)
        if held is not None and held[0] is owner:
            del self._owners[key]

    def owner(self, client_id: str, *, scope: str | None = None) -> object | None:
        held = self._owners.get(client_id if scope is None else (scope, client_id))
        return held[0] if held is not None else None

    def __contains__(self, client_id: object) -> bool:
        return client_id in self._owners

    def __iter__(self) -> Iterator[object]:
        return iter(list(self._owners))

    def __len__(self) -> int:
        return len(self._owners)


@final
@dataclass(frozen=True, slots=True)
class Retained:
    """A retained message: its topic (as the protocol names it), QoS and payload."""

    topic: str
    qos: int
    payload: bytes
    #: What else the protocol keeps of it (MQTT 5's properties), or ``None``.
    extra: Any = None


@final
class RetainedMessages:
    """A virtual host's retained messages, by topic (see the module's notes)."""

    __slots__ = ("_by_topic",)

    def __init__(self) -> None:
        self._by_topic: dict[str, Retained] = {}

    def retain(self, message: Retained) -> None:
        """Keep ``message`` for its topic; an empty payload clears the topic instead
        (``hand_off_to_retainer/4``)."""
        if message.payload:
            self._by_topic[message.topic] = message
        else:
            self._by_topic.pop(message.topic, None)

    def clear(self, topic: str) -> None:
        self._by_topic.pop(topic, None)

    def fetch(self, topic: str) -> Retained | None:
        """The message retained for exactly ``topic``, or ``None``."""
        return self._by_topic.get(topic)

    def __iter__(self) -> Iterator[Retained]:
        return iter(list(self._by_topic.values()))

    def __len__(self) -> int:
        return len(self._by_topic)
