"""The public :class:`Broker`: the model's broker plus the ways in (in-process client, listener)."""

from __future__ import annotations

from typing import Any, final

from . import model
from .client import Connection
from .model import Message, MessageEvent, RoutingDecision
from .model._history import events_of
from .server import Server

__all__ = ["Broker"]


@final
class Broker(model.Broker):
    """An embedded AMQP 0-9-1 broker with RabbitMQ's semantics.

    >>> broker = Broker()
    >>> ch = broker.connect().channel()
    >>> ch.exchange_declare("events", "topic")
    >>> ch.queue_declare("audit").queue
    'audit'
    >>> ch.queue_bind("audit", "events", "order.*")
    >>> ch.basic_publish("events", "order.created", b"{}")
    >>> broker.trace[-1].queues
    ('audit',)
    >>> broker.queues["audit"].messages[0].body
    b'{}'
    """

    def connect(self, vhost: str = "/", *, user: str = "guest",
                client_properties: dict[str, Any] | None = None) -> Connection:
        """Open an in-process connection (no socket) to ``vhost``.

        Raises:
            NotAllowed: (530) no such virtual host.
        """
        return Connection(self, vhost, user=user, client_properties=client_properties)

    def history(self, message: Message) -> list[MessageEvent]:
        """What happened to ``message`` (one found in a queue, or a delivery's ``.message``)
        since it was routed: deliveries, acks, requeues, expiry, dead-lettering..., oldest first.
        Empty for a message that was never routed, or when the broker records no events."""
        return events_of(message.history)

    def decision_of(self, message: Message) -> RoutingDecision | None:
        """The routing decision that put ``message`` where it is, if the trace still has it."""
        events = message.history
        for decision in reversed(self.trace):
            if decision.message is message or (events is not None and decision._events is events):
                return decision
        return None

    def serve(self, host: str = "127.0.0.1", port: int = 0, *, heartbeat: int = 60) -> Server:
        """Start a listener that real AMQP 0-9-1 clients can connect to.

        Use it as a context manager, or call ``.stop()``::

            with broker.serve() as server:
                pika.BlockingConnection(pika.URLParameters(server.url))

        Args:
            host: the address to listen on; ``"localhost"`` listens on 127.0.0.1 and ::1.
            port: the port; 0 takes any free one (see ``server.port`` / ``server.url``).
            heartbeat: the heartbeat interval offered to clients, in seconds (0: none).

        Raises:
            PortInUse: the port is taken.
        """
        return Server(self, host, port, heartbeat=heartbeat).start()
