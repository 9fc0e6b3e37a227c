"""The retrying worker on embroker's virtual clock: the back-off takes no time at all, the test
moves the clock, and the delays are read from what the delayed-message exchange holds."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aio_pika
import pytest

from embroker import Broker
from embroker.testing import advance, async_wait_until, held_messages, queue_messages

from .worker import run_worker

PLUGIN = "rabbitmq_delayed_message_exchange"


@pytest.mark.embroker(clock=True, plugins=[PLUGIN])
def test_a_flaky_job_is_retried_with_back_off(broker: Broker, amqp_url: str) -> None:
    attempts: list[float] = []

    async def handle(job: dict[str, Any]) -> None:
        attempts.append(broker.clock.monotonic())
        if len(attempts) < 3:
            raise RuntimeError("flaky")

    async def main() -> None:
        connection = await aio_pika.connect(amqp_url)
        async with connection:
            channel = await connection.channel()
            await run_worker(channel, handle)
            await channel.default_exchange.publish(
                aio_pika.Message(json.dumps({"id": 7}).encode()), routing_key="jobs")
            for delay in (1000, 2000):  # held, then let go by the test
                await async_wait_until(lambda: len(held_messages(broker)) == 1)
                assert held_messages(broker)[0].delay == delay
                advance(broker, delay / 1000)
            await async_wait_until(lambda: len(attempts) == 3)

    asyncio.run(main())
    assert attempts == [0.0, 1.0, 3.0]  # on the virtual clock: 1 s, then 2 s more
    retried = next(d for d in broker.trace if d.exchange == "retry")
    assert "held until +1 s by x-delayed-message exchange 'retry'" in retried.explain()


@pytest.mark.embroker(clock=True, plugins=[PLUGIN])
def test_a_job_that_always_fails_ends_in_jobs_failed(broker: Broker, amqp_url: str) -> None:
    async def handle(job: dict[str, Any]) -> None:
        raise RuntimeError("broken")

    async def main() -> None:
        connection = await aio_pika.connect(amqp_url)
        async with connection:
            channel = await connection.channel()
            await run_worker(channel, handle)
            await channel.default_exchange.publish(aio_pika.Message(b'{"id": 8}'),
                                                   routing_key="jobs")
            for seconds in (1, 2, 4):
                await async_wait_until(lambda: len(held_messages(broker)) == 1)
                advance(broker, seconds)
            await async_wait_until(lambda: len(queue_messages(broker, "jobs.failed")) == 1)

    asyncio.run(main())
    (failed,) = queue_messages(broker, "jobs.failed")
    assert failed.headers["x-attempt"] == 4
    assert broker.clock.monotonic() == 7.0
