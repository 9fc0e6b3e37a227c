"""An aio-pika worker that retries failed jobs with back-off through a delayed-message exchange.

A job comes from the queue ``jobs``. When handling it fails, the worker publishes it again to
the exchange ``retry`` (type ``x-delayed-message``, routing as ``direct``) with an ``x-delay`` that
doubles at each attempt (1 s, 2 s, 4 s...) and the attempt number in ``x-attempt``; ``retry``
routes it back to ``jobs`` when its delay runs out. After ``MAX_ATTEMPTS`` it goes to
``jobs.failed`` instead. Needs RabbitMQ's rabbitmq_delayed_message_exchange plugin.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aio_pika

BASE_DELAY_MS = 1000
MAX_ATTEMPTS = 4

Handler = Callable[[dict[str, Any]], Awaitable[None]]


async def declare(channel: aio_pika.abc.AbstractChannel,
                  ) -> tuple[aio_pika.abc.AbstractExchange, aio_pika.abc.AbstractQueue]:
    retry = await channel.declare_exchange(
        "retry", aio_pika.ExchangeType.X_DELAYED_MESSAGE, durable=True,
        arguments={"x-delayed-type": "direct"})
    jobs = await channel.declare_queue("jobs", durable=True)
    await jobs.bind(retry, routing_key="jobs")
    await channel.declare_queue("jobs.failed", durable=True)
    return retry, jobs


async def run_worker(channel: aio_pika.abc.AbstractChannel, handle: Handler) -> None:
    """Consume ``jobs`` with ``handle``; retry what fails, with back-off."""
    retry, jobs = await declare(channel)

    async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        async with message.process():
            try:
                await handle(json.loads(message.body))
            except Exception:
                attempt = int(message.headers.get("x-attempt", 0)) + 1  # type: ignore[arg-type]
                if attempt >= MAX_ATTEMPTS:
                    await channel.default_exchange.publish(
                        aio_pika.Message(message.body, headers={"x-attempt": attempt}),
                        routing_key="jobs.failed")
                    return
                delay = BASE_DELAY_MS * 2 ** (attempt - 1)
                await retry.publish(
                    aio_pika.Message(message.body,
                                     headers={"x-attempt": attempt, "x-delay": delay}),
                    routing_key="jobs")

    await jobs.consume(on_message)
