"""A celery application: placing an order sends a task; the task publishes an event with kombu."""

from __future__ import annotations

from celery import Celery
from kombu import Connection, Exchange, Producer

app = Celery("shop")
app.conf.update(task_default_queue="shop.tasks", result_backend="cache+memory://",
                worker_hijack_root_logger=False, broker_connection_retry_on_startup=False,
                # a task running when the broker connection is lost goes back to the queue
                # (Celery 6's default)
                worker_cancel_long_running_tasks_on_connection_loss=True)

EVENTS = Exchange("shop.events", type="topic", durable=True)


@app.task(name="shop.charge")
def charge(order_id: int, amount: int) -> str:
    with Connection(app.conf.broker_url) as connection:
        Producer(connection).publish({"order_id": order_id, "amount": amount}, exchange=EVENTS,
                                     routing_key="order.charged", declare=[EVENTS],
                                     serializer="json")
    return f"charged {amount} for order {order_id}"


def place_order(order_id: int, amount: int) -> None:
    charge.delay(order_id, amount)
