"""The FastStream service against embroker, instead of FastStream's in-memory test broker: the
messages go through a real AMQP connection and RabbitMQ's routing, and the test can ask why."""

from __future__ import annotations

import asyncio

from embroker import Broker
from embroker.testing import assert_published, assert_unroutable, async_wait_until

from .app import create_app


def test_paid_orders_are_sent_to_shipping(broker: Broker, amqp_url: str) -> None:
    channel = broker.connect().channel()  # the shipping side's queue, declared in-process
    channel.exchange_declare("shipping", "topic", durable=True)  # as FastStream declares it
    channel.queue_declare("ship-eu")
    channel.queue_bind("ship-eu", "shipping", "ship.eu")

    async def main() -> None:
        _app, rabbit = create_app(amqp_url)
        async with rabbit:
            await rabbit.start()
            await rabbit.publish({"id": 1, "paid": True, "region": "eu"}, "orders")
            await rabbit.publish({"id": 2, "paid": False, "region": "eu"}, "orders")
            await rabbit.publish({"id": 3, "paid": True, "region": "us"}, "orders")
            await async_wait_until(
                lambda: len([d for d in broker.trace if d.exchange == "shipping"]) == 2)

    asyncio.run(main())
    (eu,) = assert_published(broker, exchange="shipping", routing_key="ship.eu")
    assert eu.queues == ("ship-eu",)
    assert eu.body == b'{"order":1}'
    assert_unroutable(broker, exchange="shipping", routing_key="ship.us")  # no US queue yet
