"""A FastStream service that schedules reminders: an order placed now gets a reminder an hour
later, through a delayed-message exchange (RabbitMQ's rabbitmq_delayed_message_exchange plugin).

The plugin cannot return a delayed message to its publisher (it does not know yet where the
message will go), so it returns every mandatory one at once: publish to it with
``mandatory=False`` (FastStream publishes mandatory by default).
"""

from __future__ import annotations

from faststream import FastStream
from faststream.rabbit import ExchangeType, RabbitBroker, RabbitExchange, RabbitQueue

REMINDERS = RabbitExchange("reminders", type=ExchangeType.X_DELAYED_MESSAGE,
                           arguments={"x-delayed-type": "direct"})
DUE = RabbitQueue("reminders.due", routing_key="reminder")
ONE_HOUR_MS = 3_600_000


def create_app(url: str, sent: list[dict[str, object]]) -> tuple[FastStream, RabbitBroker]:
    broker = RabbitBroker(url)

    @broker.subscriber("orders")
    async def on_order(order: dict[str, object]) -> None:
        await broker.publish({"order": order["id"]}, exchange=REMINDERS, routing_key="reminder",
                             headers={"x-delay": ONE_HOUR_MS}, mandatory=False)

    @broker.subscriber(DUE, REMINDERS)
    async def on_reminder(reminder: dict[str, object]) -> None:
        sent.append(reminder)

    return FastStream(broker), broker
