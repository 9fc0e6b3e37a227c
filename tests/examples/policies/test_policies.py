"""Policies from the marker, as the operators of the production RabbitMQ set them: the
application declares a plain queue, and the policies give it a dead-letter exchange and a length
limit. Runs unchanged against RabbitMQ (``--embroker-reference``)."""

from __future__ import annotations

import pika
import pytest

pytestmark = pytest.mark.embroker(
    policies=[{"name": "orders-dlx", "pattern": "^orders$", "apply-to": "queues",
               "definition": {"dead-letter-exchange": "orders.dlx"}}],
    operator_policies=[{"name": "cap", "pattern": "^orders$", "definition": {"max-length": 2}}])


def test_a_full_queue_dead_letters_its_oldest_order(amqp_url: str) -> None:
    with pika.BlockingConnection(pika.URLParameters(amqp_url)) as connection:
        channel = connection.channel()
        channel.exchange_declare("orders.dlx", "fanout")
        channel.queue_declare("orders.dead")
        channel.queue_bind("orders.dead", "orders.dlx")
        channel.queue_declare("orders")                    # no arguments: the policies decide
        for n in (1, 2, 3):
            channel.basic_publish("", "orders", f"order {n}".encode())

        kept = [channel.basic_get("orders", auto_ack=True)[2] for _ in range(2)]
        assert kept == [b"order 2", b"order 3"]
        _, properties, body = next(channel.consume("orders.dead", inactivity_timeout=5))
        assert body == b"order 1"
        death = properties.headers["x-death"][0]
        assert (death["queue"], death["reason"]) == ("orders", "maxlen")
