"""Celery over embroker: the task is sent and executed through the broker, and the test checks
what went through it (no RabbitMQ, no eager mode)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from celery.contrib.testing.worker import start_worker

from embroker import Broker
from embroker.faults import Faults
from embroker.testing import assert_published, published, wait_until

from .tasks import app, place_order


@pytest.fixture
def celery_worker(amqp_url: str) -> Iterator[None]:
    app.conf.broker_url = amqp_url
    # celery keeps one producer pool per app, made for the broker URL of its first use: this
    # test's broker has a URL of its own.
    app.amqp._producer_pool = None
    # Heartbeats every second keep the worker's event loop turning, so that it notices the stop
    # at the end of the test at once (with the default, 120 s, stopping takes ~10 s).
    app.conf.broker_heartbeat = 1
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        yield


def test_a_placed_order_is_charged(broker: Broker, celery_worker: None) -> None:
    place_order(7, 1250)  # over the wire: the broker sees it a moment later
    task = wait_until(lambda: assert_published(broker, exchange="", routing_key="shop.tasks",
                                               count=1)).last
    assert task.headers["task"] == "shop.charge"
    event = wait_until(lambda: assert_published(broker, exchange="shop.events",
                                                routing_key="order.*"), timeout=10).last
    assert json.loads(event.body) == {"order_id": 7, "amount": 1250}
    assert published(broker, exchange="shop.events").call_count == 1


def test_the_worker_survives_the_broker_closing_its_connections(
        broker: Broker, celery_worker: None, embroker_faults: Faults) -> None:
    place_order(1, 100)
    wait_until(lambda: published(broker, exchange="shop.events").called, timeout=10)
    for connection in embroker_faults.connections:  # a broker going down for maintenance
        connection.close(320, "maintenance")
    # kombu reconnects, and the worker consumes again
    wait_until(lambda: broker.queues["shop.tasks"].consumer_count == 1, timeout=10)
    place_order(2, 200)
    event = wait_until(lambda: assert_published(broker, exchange="shop.events",
                                                json={"order_id": 2, "amount": 200}), timeout=10)
    assert event.call_count == 1
