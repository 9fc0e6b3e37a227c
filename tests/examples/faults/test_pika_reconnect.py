"""A worker that crashes in the middle of a job, and one whose connection the broker closes:
the application's reconnection logic is tested against faults embroker injects."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pika
import pytest

from embroker import Broker
from embroker.faults import Faults
from embroker.testing import published, wait_until

from .worker import JOBS, run_worker


@pytest.fixture
def handled(amqp_url: str) -> Iterator[list[tuple[bytes, bool]]]:
    """The jobs the worker handled, (body, redelivered), while it runs in a thread."""
    seen: list[tuple[bytes, bool]] = []
    stop = threading.Event()
    worker = threading.Thread(target=run_worker,
                              args=(amqp_url, lambda b, r: seen.append((b, r)), stop))
    worker.start()
    yield seen
    stop.set()
    worker.join(5)


def submit(url: str, *bodies: bytes) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.queue_declare(JOBS, durable=True)
    for body in bodies:
        channel.basic_publish("", JOBS, body, pika.BasicProperties(delivery_mode=2))
    connection.close()


def test_a_job_the_worker_crashed_on_is_redelivered(
        broker: Broker, amqp_url: str, embroker_faults: Faults,
        handled: list[tuple[bytes, bool]]) -> None:
    # The connection drops right after job-2 is delivered: as if the worker crashed on it.
    embroker_faults.drop_on_delivery(lambda message: message.body == b"job-2")
    submit(amqp_url, b"job-1", b"job-2", b"job-3")
    wait_until(lambda: {b for b, _ in handled} == {b"job-1", b"job-2", b"job-3"}, timeout=10)
    broker.wait_until_drained(JOBS)
    assert (b"job-2", True) in handled  # handled again after the reconnection, redelivered
    job2 = published(broker, body=b"job-2").last
    assert [e.kind for e in job2.history()] == ["delivered", "requeued", "delivered", "acked"]
    assert job2.history()[1].cause == "connection closed"


def test_the_worker_reconnects_when_the_broker_closes_its_connection(
        broker: Broker, amqp_url: str, embroker_faults: Faults,
        handled: list[tuple[bytes, bool]]) -> None:
    submit(amqp_url, b"before")
    wait_until(lambda: handled == [(b"before", False)])
    broker.wait_until_drained(JOBS)  # acknowledged (else it would come back, redelivered)
    embroker_faults.close_connection(320, "node is going down", name="jobs-worker")
    submit(amqp_url, b"after")
    wait_until(lambda: len(handled) == 2, timeout=10)
    assert handled[1] == (b"after", False)
