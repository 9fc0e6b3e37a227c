"""The aio-pika RPC service and client over embroker, with direct reply-to."""

from __future__ import annotations

import asyncio

import aio_pika

from embroker import Broker
from embroker.testing import assert_published, async_wait_until, queue_messages

from .rpc import REQUESTS, Client, serve


async def rpc_round_trip(url: str) -> list[int]:
    server_conn = await aio_pika.connect(url)
    client_conn = await aio_pika.connect(url)
    try:
        await serve(await server_conn.channel())
        client = Client(await client_conn.channel())
        await client.start()
        return list(await asyncio.gather(client.add(1, 2), client.add(40, 2)))
    finally:
        await client_conn.close()
        await server_conn.close()


def test_the_service_answers(broker: Broker, amqp_url: str) -> None:
    assert asyncio.run(rpc_round_trip(amqp_url)) == [3, 42]
    requests = assert_published(broker, exchange="", routing_key=REQUESTS, count=2)
    # as RabbitMQ does, the broker gave each request the client channel's own reply-to name
    (reply_to,) = {d.properties["reply_to"] for d in requests}
    assert reply_to.startswith("amq.rabbitmq.reply-to.")
    replies = assert_published(broker, exchange="", routing_key=reply_to, count=2)
    assert all(d.outcome != "refused" for d in replies)
    assert queue_messages(broker, REQUESTS) == []


def test_a_request_waits_for_the_service(broker: Broker, amqp_url: str) -> None:
    async def main() -> None:
        conn = await aio_pika.connect(amqp_url)
        channel = await conn.channel()
        await channel.declare_queue(REQUESTS)
        client = Client(channel)
        await client.start()
        call = asyncio.ensure_future(client.add(2, 2))
        await async_wait_until(lambda: queue_messages(broker, REQUESTS))  # request queued
        await serve(await conn.channel())                                  # service comes up
        assert await call == 4
        await conn.close()

    asyncio.run(main())
