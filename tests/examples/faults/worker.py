"""A pika worker that survives its broker: it acknowledges a job once handled, and when the
connection drops it connects again (the job it was handling comes back, marked redelivered)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pika
from pika.exceptions import AMQPConnectionError

JOBS = "jobs"


def run_worker(url: str, handle: Callable[[bytes, bool], None], stop: threading.Event) -> None:
    """Consume ``jobs`` until ``stop`` is set, reconnecting whenever the connection is lost."""
    params = pika.URLParameters(url)
    params.client_properties = {"connection_name": "jobs-worker"}
    while not stop.is_set():
        try:
            connection = pika.BlockingConnection(params)
            channel = connection.channel()
            channel.queue_declare(JOBS, durable=True)
            channel.basic_qos(prefetch_count=1)
            for method, _properties, body in channel.consume(JOBS, inactivity_timeout=0.05):
                if stop.is_set():
                    break
                if method is not None:
                    handle(body, method.redelivered)
                    channel.basic_ack(method.delivery_tag)
            connection.close()
        except AMQPConnectionError:
            time.sleep(0.05)  # the broker went away: try again shortly
