"""aio-pika's robust connection against a broker that closes it: it reconnects, declares its
queue and consumer again, and goes on consuming."""

from __future__ import annotations

import asyncio

import aio_pika

from embroker import Broker
from embroker.faults import Faults
from embroker.testing import async_wait_until


async def consume_through_a_broker_restart(url: str, broker: Broker, faults: Faults) -> list[bytes]:
    received: list[bytes] = []
    connection = await aio_pika.connect_robust(
        url, client_properties={"connection_name": "events-consumer"},
        reconnect_interval=0.1)  # reconnect quickly (the default waits 5 s)
    channel = await connection.channel()
    queue = await channel.declare_queue("events")

    async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        async with message.process():
            received.append(message.body)

    await queue.consume(on_message)
    # The broker closes the connection (as a RabbitMQ node that stops for maintenance).
    await asyncio.get_running_loop().run_in_executor(
        None, faults.close_connection, 320, "maintenance", "events-consumer")
    # The robust connection comes back with its consumer.
    await async_wait_until(lambda: broker.queues["events"].consumer_count == 1, timeout=10)
    publisher = await aio_pika.connect(url)
    await (await publisher.channel()).default_exchange.publish(aio_pika.Message(b"after"),
                                                               "events")
    await async_wait_until(lambda: received, timeout=10)
    await publisher.close()
    await connection.close()
    return received


def test_a_robust_connection_recovers(broker: Broker, amqp_url: str,
                                      embroker_faults: Faults) -> None:
    received = asyncio.run(consume_through_a_broker_restart(amqp_url, broker, embroker_faults))
    assert received == [b"after"]
