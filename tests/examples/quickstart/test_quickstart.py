import pika

from embroker import Broker
from embroker.testing import assert_routed, queue_messages


def publish_order(url: str, order_id: int) -> None:      # the application's code
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.exchange_declare("orders", "topic")
    channel.queue_declare("billing")
    channel.queue_bind("billing", "orders", "order.*")
    channel.basic_publish("orders", "order.created", str(order_id).encode())
    connection.close()


def test_an_order_reaches_billing(broker: Broker, amqp_url: str) -> None:
    publish_order(amqp_url, 42)
    assert_routed(broker, exchange="orders", routing_key="order.created", queues=["billing"])
    assert [m.body for m in queue_messages(broker, "billing")] == [b"42"]
