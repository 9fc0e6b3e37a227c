"""Async tests use the same fixtures (they are synchronous, and that is fine): with
pytest-asyncio or with anyio's pytest plugin."""

from __future__ import annotations

import aio_pika
import pytest

from embroker import Broker
from embroker.testing import assert_routed, async_wait_until, queue_messages


async def publish_order(url: str, order_id: int) -> None:  # the application's code
    connection = await aio_pika.connect(url)
    channel = await connection.channel()
    orders = await channel.declare_exchange("orders", aio_pika.ExchangeType.TOPIC)
    queue = await channel.declare_queue("billing")
    await queue.bind(orders, "order.*")
    await orders.publish(aio_pika.Message(b'{"order": %d}' % order_id), "order.created")
    await connection.close()


@pytest.mark.asyncio
async def test_with_pytest_asyncio(broker: Broker, amqp_url: str) -> None:
    await publish_order(amqp_url, 7)
    await async_wait_until(lambda: assert_routed(broker, exchange="orders", queues=["billing"],
                                                 json={"order": 7}))
    assert [m.body for m in queue_messages(broker, "billing")] == [b'{"order": 7}']


@pytest.mark.anyio
async def test_with_anyio(broker: Broker, amqp_url: str) -> None:
    await publish_order(amqp_url, 8)
    await async_wait_until(lambda: assert_routed(broker, exchange="orders", queues=["billing"],
                                                 json={"order": 8}))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aio-pika runs on asyncio
