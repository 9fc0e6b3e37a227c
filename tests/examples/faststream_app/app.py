"""A FastStream service: it takes orders from the queue ``orders`` and, for each paid one,
publishes a shipping request to the exchange ``shipping`` with the routing key of its region."""

from __future__ import annotations

from faststream import FastStream
from faststream.rabbit import ExchangeType, RabbitBroker, RabbitExchange

SHIPPING = RabbitExchange("shipping", type=ExchangeType.TOPIC)


def create_app(url: str) -> tuple[FastStream, RabbitBroker]:
    broker = RabbitBroker(url)
    publisher = broker.publisher(exchange=SHIPPING)

    @broker.subscriber("orders")
    async def on_order(order: dict[str, object]) -> None:
        if order.get("paid"):
            await publisher.publish({"order": order["id"]},
                                    routing_key=f"ship.{order['region']}")

    return FastStream(broker), broker
