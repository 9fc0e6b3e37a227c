"""The reminder service on embroker's virtual clock: an hour passes in a call, and the routing
decision says what is held and until when. (FastStream's in-memory TestRabbitBroker has no
delayed-message exchange.)"""

from __future__ import annotations

import asyncio

import pytest

from embroker import Broker
from embroker.testing import advance, assert_published, async_wait_until, held_messages

from .app import create_app


@pytest.mark.embroker(clock=True, plugins=["rabbitmq_delayed_message_exchange"])
def test_the_reminder_comes_an_hour_later(broker: Broker, amqp_url: str) -> None:
    sent: list[dict[str, object]] = []

    async def main() -> None:
        _app, rabbit = create_app(amqp_url, sent)
        async with rabbit:
            await rabbit.start()
            await rabbit.publish({"id": 42}, "orders")
            await async_wait_until(lambda: len(held_messages(broker)) == 1)
            advance(broker, 3599)
            assert len(held_messages(broker)) == 1  # not due yet
            advance(broker, 1)
            await async_wait_until(lambda: sent == [{"order": 42}])

    asyncio.run(main())
    (scheduled,) = assert_published(broker, exchange="reminders", routing_key="reminder")
    assert scheduled.outcome == "held"
    assert scheduled.held == (("reminders", 3600.0, 3_600_000),)
