"""An asyncio RPC service with aio-pika: requests on the queue ``rpc.add``, answers sent to
RabbitMQ's direct reply-to pseudo-queue ``amq.rabbitmq.reply-to`` (no reply queue to declare)."""

from __future__ import annotations

import asyncio
import json
import uuid

import aio_pika

REQUESTS = "rpc.add"
REPLY_TO = "amq.rabbitmq.reply-to"


async def serve(channel: aio_pika.abc.AbstractChannel) -> None:
    """Answer ``{"a": 1, "b": 2}`` with ``{"sum": 3}``."""
    queue = await channel.declare_queue(REQUESTS)

    async def on_request(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        async with message.process():
            request = json.loads(message.body)
            reply = aio_pika.Message(json.dumps({"sum": request["a"] + request["b"]}).encode(),
                                     correlation_id=message.correlation_id)
            await channel.default_exchange.publish(reply, routing_key=message.reply_to or "")

    await queue.consume(on_request)


class Client:
    """Calls the service; replies come back on direct reply-to, matched by correlation id."""

    def __init__(self, channel: aio_pika.abc.AbstractChannel) -> None:
        self.channel = channel
        self.pending: dict[str, asyncio.Future[int]] = {}

    async def start(self) -> None:
        replies = await self.channel.get_queue(REPLY_TO, ensure=False)
        await replies.consume(self._on_reply, no_ack=True)  # before the first publish

    async def _on_reply(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        future = self.pending.pop(message.correlation_id or "", None)
        if future is not None:
            future.set_result(json.loads(message.body)["sum"])

    async def add(self, a: int, b: int, timeout: float = 5.0) -> int:
        correlation_id = uuid.uuid4().hex
        future = self.pending[correlation_id] = asyncio.get_running_loop().create_future()
        await self.channel.default_exchange.publish(
            aio_pika.Message(json.dumps({"a": a, "b": b}).encode(), reply_to=REPLY_TO,
                             correlation_id=correlation_id), routing_key=REQUESTS)
        return await asyncio.wait_for(future, timeout)
