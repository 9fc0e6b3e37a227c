"""What the tests with RabbitMQ's own AMQP 1.0 client share (import it after
``pytest.importorskip("rabbitmq_amqp_python_client")``)."""

from __future__ import annotations

import contextlib
from typing import Any

from rabbitmq_amqp_python_client import AMQPMessagingHandler, Converter, Event


class Done(BaseException):
    """Ends a consumer's run(), as the client's own tests end theirs."""


class Collect(AMQPMessagingHandler):
    """Settles each message as told and stops after ``count`` of them."""

    def __init__(self, count: int, how: str | None = "accept") -> None:
        super().__init__()
        self.count, self.how = count, how
        self.bodies: list[str] = []
        self.messages: list[Any] = []

    def on_amqp_message(self, event: Event) -> None:
        self.bodies.append(Converter.bytes_to_string(event.message.body))
        self.messages.append(event.message)
        if self.how is not None:  # (pre-settled deliveries are not settled again)
            getattr(self.delivery_context, self.how)(event)
        if len(self.bodies) == self.count:
            raise Done


def consume(connection: Any, address: str, count: int, how: str = "accept",
            options: Any = None) -> Collect:
    """Consume ``count`` messages from ``address`` with :class:`Collect`, then close."""
    handler = Collect(count, how)
    consumer = connection.consumer(address, message_handler=handler, consumer_options=options)
    with contextlib.suppress(Done):  # (the handler ends the run)
        consumer.run()
    consumer.close()
    return handler
