"""Tests of the pika worker: real pika over embroker's listener, time under the test's control."""

from __future__ import annotations

import pika
import pytest

from embroker import Broker
from embroker.testing import advance, assert_dead_lettered, queue_messages, wait_until_drained

from .worker import PARKED, RETRY, WORK, declare, run_until_idle

#: TTLs expire when the test says so (and so these tests need embroker's virtual clock).
virtual_time = pytest.mark.embroker(clock=True)


def publish_job(url: str, body: bytes) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    declare(channel)
    channel.basic_publish("", WORK, body, pika.BasicProperties(delivery_mode=2))
    connection.close()


def test_a_job_that_succeeds_is_acked(broker: Broker, amqp_url: str) -> None:
    done: list[bytes] = []
    publish_job(amqp_url, b"job-1")
    run_until_idle(amqp_url, done.append)
    assert done == [b"job-1"]
    wait_until_drained(broker, WORK)  # nothing ready, nothing unacknowledged
    assert queue_messages(broker, WORK) == []


@virtual_time
def test_a_failed_job_is_retried_after_the_delay(broker: Broker, amqp_url: str) -> None:
    calls: list[bytes] = []

    def flaky(body: bytes) -> None:
        calls.append(body)
        if len(calls) == 1:
            raise RuntimeError("database down")

    publish_job(amqp_url, b"job-2")
    run_until_idle(amqp_url, flaky)
    assert_dead_lettered(broker, queue=WORK, reason="rejected", to=[RETRY])
    assert [m.body for m in queue_messages(broker, RETRY)] == [b"job-2"]

    advance(broker, 4.9)                       # not yet
    assert queue_messages(broker, WORK) == []
    advance(broker, 0.1)                       # the retry delay is over
    assert_dead_lettered(broker, queue=RETRY, reason="expired", to=[WORK])

    run_until_idle(amqp_url, flaky)
    assert calls == [b"job-2", b"job-2"]
    assert queue_messages(broker, WORK) == queue_messages(broker, RETRY) == []


@virtual_time
def test_a_job_that_keeps_failing_is_parked(broker: Broker, amqp_url: str) -> None:
    def broken(body: bytes) -> None:
        raise ValueError("bad job")

    publish_job(amqp_url, b"job-3")
    for _ in range(3):
        run_until_idle(amqp_url, broken)
        advance(broker, 5)
    (parked,) = queue_messages(broker, PARKED)
    assert parked.body == b"job-3"
    deaths = parked.headers["x-death"]
    assert [(d["queue"], d["reason"], d["count"]) for d in deaths] == [
        ("jobs.retry", "expired", 2), ("jobs", "rejected", 2)]
