"""A service that connects as its own user, with the permissions it has in production: the
checkout service may publish to ``orders`` and declare nothing (docs/fixtures.md). With
``--embroker-reference`` the user is made in the reference RabbitMQ for the test."""

from __future__ import annotations

from collections.abc import Callable

import pika
import pytest
from pika.exceptions import ChannelClosedByBroker

from embroker import Broker
from embroker.testing import assert_routed


def test_checkout_publishes_orders_and_may_declare_nothing(
        broker: Broker, amqp_url_for: Callable[..., str]) -> None:
    admin = broker.connect().channel()
    admin.exchange_declare("orders", "topic")
    admin.queue_declare("billing")
    admin.queue_bind("billing", "orders", "order.*")
    url = amqp_url_for("checkout", "s3cret", configure="^$", write="^orders$", read="^$")
    with pika.BlockingConnection(pika.URLParameters(url)) as connection:
        channel = connection.channel()
        channel.basic_publish("orders", "order.paid", b'{"order": 42}')
        with pytest.raises(ChannelClosedByBroker, match="ACCESS_REFUSED"):
            channel.queue_declare("scratch")
    assert_routed(broker, exchange="orders", routing_key="order.paid", queues=["billing"])

