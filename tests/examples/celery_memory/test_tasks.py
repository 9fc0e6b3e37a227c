"""A celery worker in the test process, on the embroker:// transport (no socket), whose retries
wait on the broker's virtual clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from celery.contrib.testing.worker import start_worker

from embroker import Broker
from embroker.testing import wait_until

from . import tasks
from .tasks import app, charge


@pytest.fixture
def worker(broker: Broker) -> Iterator[None]:
    app.conf.broker_url = broker.kombu_url
    app.amqp._producer_pool = None  # (one producer pool per app: this broker is new)
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10,
                      queues=["billing.tasks"]):  # (billing.retry is the broker's to hold)
        yield


@pytest.mark.embroker(clock=True)
def test_a_failed_charge_is_retried_30_seconds_later(broker: Broker, worker: None) -> None:
    tasks.answers[:] = ["down", "ok"]
    result = charge.delay(7)
    # the first attempt fails: the retry waits in billing.retry, on the broker's clock
    wait_until(lambda: "billing.retry" in broker.queues
               and broker.queues["billing.retry"].message_count == 1)
    broker.manual_clock.advance(29)
    assert broker.queues["billing.retry"].message_count == 1  # not yet
    broker.manual_clock.advance(1)  # 30 s: dead-lettered back to billing.tasks, and run
    assert result.get(timeout=10) == "order 7 charged after 1 retries"
    assert [(d.routing_key, d.queues) for d in broker.trace] == [
        ("billing.tasks", ("billing.tasks",)),  # charge.delay(7)
        ("billing.retry", ("billing.retry",)),  # the retry, held 30 s
        ("billing.tasks", ("billing.tasks",)),  # dead-lettered back when the TTL ran out
    ]
