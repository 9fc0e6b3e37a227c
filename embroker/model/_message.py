"""Messages, and a message's place in a queue."""

from __future__ import annotations

from typing import Any, final

__all__ = ["PROPERTY_NAMES", "Message", "MessageFields", "QueuedMessage"]

#: The 14 properties of the basic class, in the order of their property flags.
PROPERTY_NAMES = (
    "content_type", "content_encoding", "headers", "delivery_mode", "priority", "correlation_id",
    "reply_to", "expiration", "message_id", "timestamp", "type", "user_id", "app_id", "cluster_id",
)


@final
class Message:
    """A published message: where it was published, its properties and its body.

    One ``Message`` is shared by every queue it was routed to and is never changed after routing;
    what differs per queue (redelivered, position) lives in :class:`QueuedMessage`.

    Attributes:
        exchange: the exchange it was published to (``""`` for the default exchange).
        routing_key: the routing key it was published with.
        properties: the basic properties that were set, keyed by their spec names
            (``content_type``, ``headers``, ``delivery_mode`` ...).
        body: the content body.
    """

    __slots__ = ("body", "deaths", "encoded_properties", "exchange", "failures", "history",
                 "native", "origin", "properties", "routing_key", "routing_keys")

    def __init__(self, exchange: str, routing_key: str, properties: dict[str, Any], body: bytes,
                 encoded_properties: bytes | None = None,
                 routing_keys: tuple[str, ...] | None = None) -> None:
        self.exchange = exchange
        self.routing_key = routing_key
        self.properties = properties
        self.body = body
        #: Every key it was routed with: the routing key, then those of ``CC`` and ``BCC``;
        #: ``None`` when that is the routing key alone.
        self.routing_keys = routing_keys
        #: The properties as they came off the wire (flag words and values), kept by the
        #: protocol layer so a delivery can send them on without encoding them again; ``None``
        #: when unknown or when the broker changed the properties.
        self.encoded_properties = encoded_properties
        #: What the publishing protocol's layer kept of the message in its own form, so a
        #: consumer over the same protocol gets it back unchanged (AMQP 1.0's annotations and
        #: bare message bytes; MQTT's message under the RabbitMQ 4 profile, as RabbitMQ keeps an
        #: ``mc`` message in its protocol's module); ``None`` otherwise. Each layer reads only
        #: its own type.
        self.native: object | None = None
        #: How it was published when not over AMQP 0-9-1 or in-process (an AMQP 1.0 link and
        #: its address), for the routing trace; ``None`` otherwise.
        self.origin: str | None = None
        #: What happened to it after routing, as compact event tuples shared with its routing
        #: decision (see ``_history``); ``None`` until routed, or when the trace records none.
        self.history: list[tuple[Any, ...]] | None = None
        #: For a dead-lettered copy: the failed deliveries of the message it copies (RabbitMQ
        #: 4 carries its ``delivery_count`` annotation to the dead-letter queue); else 0.
        self.failures = 0
        #: The death history the broker keeps as RabbitMQ 4 (newest first; see
        #: :class:`~embroker.model._deadletter.Death`); empty for a message a client published.
        self.deaths: tuple[Any, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key it was routed with (the routing key, then CC and BCC keys)."""
        return self.routing_keys if self.routing_keys is not None else (self.routing_key,)

    @property
    def headers(self) -> dict[str, Any]:
        """The ``headers`` property, or an empty dict."""
        return self.properties.get("headers") or {}

    def with_headers(self, headers: dict[str, Any]) -> Message:
        """A copy with other headers (as a queue delivers it), keeping what the broker knows of
        the message (its keys, failed deliveries and death history)."""
        copy = Message(self.exchange, self.routing_key, {**self.properties, "headers": headers},
                       self.body, routing_keys=self.routing_keys)
        copy.failures = self.failures
        copy.deaths = self.deaths
        return copy

    def __repr__(self) -> str:
        body = self.body if len(self.body) <= 40 else self.body[:37] + b"..."
        return (
            f"<Message exchange={self.exchange!r} routing_key={self.routing_key!r} "
            f"properties={self.properties!r} body={body!r}>"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return (self.exchange, self.routing_key, self.properties, self.body) == (
            other.exchange, other.routing_key, other.properties, other.body)

    __hash__ = None  # type: ignore[assignment]


@final
class QueuedMessage:
    """A message in one queue: its position (``seq``) and whether it was delivered before."""

    __slots__ = ("annotations", "delivery_count", "expires_at", "failures", "message",
                 "redelivered", "seq")

    def __init__(self, message: Message, seq: int) -> None:
        self.message = message
        self.seq = seq
        self.redelivered = False
        #: When it expires (broker clock, monotonic seconds), or ``None``.
        self.expires_at: float | None = None
        #: How many times it came back to the queue (quorum queues' ``x-delivery-count``).
        self.delivery_count = 0
        #: How many of its deliveries failed (AMQP 1.0 ``modified`` with ``delivery-failed``, a
        #: rejection): the 1.0 header's ``delivery-count``, as RabbitMQ 4 counts it.
        self.failures = message.failures
        #: ``x-`` annotations a quorum queue added when the message came back with AMQP 1.0's
        #: ``modified`` outcome (RabbitMQ 4: shown as message annotations, 0-9-1 headers).
        self.annotations: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"<QueuedMessage #{self.seq}{' redelivered' if self.redelivered else ''} {self.message!r}>"


class MessageFields:
    """The message's routing key, properties, headers and body, read through the ``message``
    attribute of a record that carries one (a routing decision, the reference's decision)."""

    __slots__ = ()

    message: Message

    @property
    def routing_key(self) -> str:
        return self.message.routing_key

    @property
    def headers(self) -> dict[str, Any]:
        return self.message.headers

    @property
    def properties(self) -> dict[str, Any]:
        return self.message.properties

    @property
    def body(self) -> bytes:
        return self.message.body
