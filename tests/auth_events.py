"""The authentication events a test watches (``user.authentication.*`` on the event exchange),
for the kit's login and each protocol that uses it."""

from __future__ import annotations

from typing import Any

from embroker import Broker

__all__ = ["authentication_events", "watch_authentication"]


def watch_authentication(**broker_options: Any) -> tuple[Broker, Any, str]:
    """A broker with the event exchange, and a channel and queue bound to its logins' events."""
    broker = Broker(plugins=["rabbitmq_event_exchange"], **broker_options)
    ch = broker.connect().channel()
    q = ch.queue_declare("", exclusive=True).queue
    ch.queue_bind(q, "amq.rabbitmq.event", "user.authentication.#")
    return broker, ch, q


def authentication_events(ch: Any, q: str) -> list[tuple[str, dict[str, Any]]]:
    """The events announced since the last look: (routing key, headers but the timestamp)."""
    seen = []
    while (d := ch.basic_get(q, auto_ack=True)) is not None:
        headers = dict(d.properties["headers"])
        headers.pop("timestamp_in_ms", None)
        seen.append((d.routing_key, headers))
    return seen
