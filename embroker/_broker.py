"""The public :class:`Broker`: the model's broker plus the ways in (in-process client, listener)."""

from __future__ import annotations

from typing import Any, final

from . import model
from .client import Connection
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

    def connect(self, vhost: str = "/", *, user: str | None = None,
                client_properties: dict[str, Any] | None = None) -> Connection:
        """Open an in-process connection (no socket) to ``vhost``.

        Args:
            vhost: the virtual host.
            user: a user whose permissions every call is checked against, as on the wire (no
                password: the test vouches for it). Without one, nothing is checked.

        Raises:
            NotAllowed: (530) no such virtual host, or ``user`` has no access to it.
        """
        return Connection(self, vhost, user=user, client_properties=client_properties)

    def serve(self, host: str = "127.0.0.1", port: int = 0, *, heartbeat: int = 60,
              amqp10_port: int | None = None) -> Server:
        """Start a listener that real AMQP 0-9-1 and AMQP 1.0 clients can connect to (one port
        serves both, told apart by the protocol header, as RabbitMQ's).

        Use it as a context manager, or call ``.stop()``::

            with broker.serve() as server:
                pika.BlockingConnection(pika.URLParameters(server.url))

        Args:
            host: the address to listen on; ``"localhost"`` listens on 127.0.0.1 and ::1.
            port: the port; 0 takes any free one (see ``server.port`` / ``server.url``).
            heartbeat: the heartbeat interval offered to clients, in seconds (0: none).
            amqp10_port: also listen on this port for AMQP 1.0 alone (0: any free port; see
                ``server.amqp10_port`` / ``server.amqp10_url``).

        Raises:
            PortInUse: the port is taken.
        """
        return Server(self, host, port, heartbeat=heartbeat, amqp10_port=amqp10_port).start()
