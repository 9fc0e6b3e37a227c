"""A client for the chaos test, run as a process that the test kills at random (SIGKILL).

``publisher URL QUEUE NAME``: publishes ``NAME-1``, ``NAME-2``... with publisher confirms and
prints ``confirmed ID`` for each confirmed one. ``consumer URL QUEUE PREFETCH``: consumes with
manual acks and prints ``delivered ID REDELIVERED`` for each delivery, then acks it. Lines are
flushed at once, so what was printed before a kill is what happened.
"""

from __future__ import annotations

import sys

import pika


def publisher(url: str, queue: str, name: str) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.confirm_delivery()
    n = 0
    while True:
        n += 1
        message_id = f"{name}-{n}"
        ch.basic_publish("", queue, message_id.encode(),
                         pika.BasicProperties(message_id=message_id))
        print("confirmed", message_id, flush=True)


def consumer(url: str, queue: str, prefetch: int) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.basic_qos(prefetch_count=prefetch)

    def on_message(channel: pika.adapters.blocking_connection.BlockingChannel,
                   method: pika.spec.Basic.Deliver, _props: pika.BasicProperties,
                   body: bytes) -> None:
        print("delivered", body.decode(), int(method.redelivered), flush=True)
        channel.basic_ack(method.delivery_tag)

    ch.basic_consume(queue, on_message)
    ch.start_consuming()


if __name__ == "__main__":
    role, url, queue, arg = sys.argv[1:5]
    if role == "publisher":
        publisher(url, queue, arg)
    else:
        consumer(url, queue, int(arg))
