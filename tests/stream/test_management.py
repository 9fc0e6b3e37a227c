"""A stream in the management API: its type, and the messages its log keeps (RabbitMQ 3.10
shows them once its statistics come in; embroker at once). Its consumers take nothing, so
nothing is ever unacknowledged in the listing."""

from __future__ import annotations

import pika

from embroker import Broker
from tests.management.test_api import Api


def test_a_stream_shows_its_type_and_what_it_keeps() -> None:
    broker = Broker()
    with broker.serve(management=True) as server:
        connection = pika.BlockingConnection(pika.URLParameters(server.url))
        channel = connection.channel()
        channel.queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
        for body in (b"1", b"2", b"3"):
            channel.basic_publish("", "s", body)
        channel.basic_qos(prefetch_count=10)
        got: list[bytes] = []

        def on_message(ch: object, method: object, _props: object, body: bytes) -> None:
            got.append(body)
            channel.basic_ack(method.delivery_tag)  # type: ignore[attr-defined]

        # (pika rejects the deliveries it holds undispatched when it closes: a stream refuses
        # rejects with 540, as RabbitMQ does, so they are taken and acknowledged first)
        channel.basic_consume("s", on_message, arguments={"x-stream-offset": "first"})
        while len(got) < 3:
            connection.process_data_events(time_limit=1)
        _, queue = Api(server)("GET", "/queues/%2F/s")
        assert (queue["type"], queue["messages"], queue["messages_ready"],
                queue["messages_unacknowledged"], queue["consumers"]) == ("stream", 3, 3, 0, 1)
        assert queue["arguments"] == {"x-queue-type": "stream"}
        assert "backing_queue_status" not in queue
        connection.close()
        assert server.errors == []
