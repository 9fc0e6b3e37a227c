"""A celery application whose failed tasks are retried later through the broker: a retry goes
to a queue that holds it for 30 s (a message TTL), then dead-letters it back to the tasks."""

from __future__ import annotations

from celery import Celery
from kombu import Queue

app = Celery("billing")
app.conf.update(task_default_queue="billing.tasks", result_backend="cache+memory://",
                worker_hijack_root_logger=False, broker_connection_retry_on_startup=False,
                task_queues=[
                    Queue("billing.tasks"),
                    # a retry waits here for 30 s, then goes back to billing.tasks
                    Queue("billing.retry", queue_arguments={
                        "x-message-ttl": 30_000, "x-dead-letter-exchange": "",
                        "x-dead-letter-routing-key": "billing.tasks"}),
                ])

#: What the payment service answers, call after call (a test sets it).
answers: list[str] = []


@app.task(name="billing.charge", bind=True, max_retries=3, default_retry_delay=0)
def charge(self, order_id: int) -> str:
    answer = answers.pop(0) if answers else "ok"
    if answer != "ok":  # the payment service is down: try again in 30 s, via the broker
        raise self.retry(queue="billing.retry")  # (the wait is the broker's, not Celery's)
    return f"order {order_id} charged after {self.request.retries} retries"
