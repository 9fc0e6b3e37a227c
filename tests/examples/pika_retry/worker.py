"""A pika worker: manual acks, failed jobs retried after a delay through a dead-letter queue,
parked after three attempts."""

from __future__ import annotations

from collections.abc import Callable

import pika

WORK, RETRY, PARKED, DLX = "jobs", "jobs.retry", "jobs.parked", "jobs.dlx"
MAX_ATTEMPTS = 3
RETRY_DELAY_MS = 5_000


def declare(channel: pika.adapters.blocking_connection.BlockingChannel) -> None:
    # A rejected job goes through jobs.dlx to jobs.retry; when its TTL runs out there, it is
    # dead-lettered again, through the default exchange, back to jobs.
    channel.exchange_declare(DLX, "direct", durable=True)
    channel.queue_declare(WORK, durable=True, arguments={
        "x-dead-letter-exchange": DLX, "x-dead-letter-routing-key": RETRY})
    channel.queue_declare(RETRY, durable=True, arguments={
        "x-message-ttl": RETRY_DELAY_MS, "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": WORK})
    channel.queue_bind(RETRY, DLX, RETRY)
    channel.queue_declare(PARKED, durable=True)


def attempts(properties: pika.BasicProperties) -> int:
    """How many times this job failed before: RabbitMQ counts rejections in ``x-death``."""
    for death in (properties.headers or {}).get("x-death", []):
        if death["queue"] == WORK and death["reason"] == "rejected":
            return int(death["count"])
    return 0


def run_until_idle(url: str, handle: Callable[[bytes], None], idle: float = 0.05) -> None:
    """Process jobs until none arrives for ``idle`` seconds."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    declare(channel)
    channel.basic_qos(prefetch_count=10)
    for method, properties, body in channel.consume(WORK, inactivity_timeout=idle):
        if method is None:
            break
        try:
            handle(body)
        except Exception:
            if attempts(properties) + 1 >= MAX_ATTEMPTS:
                channel.basic_publish("", PARKED, body, properties)
                channel.basic_ack(method.delivery_tag)
            else:
                channel.basic_nack(method.delivery_tag, requeue=False)  # to jobs.retry
        else:
            channel.basic_ack(method.delivery_tag)
    channel.cancel()
    connection.close()
