"""RabbitMQ's firehose tracer (``rabbitmqctl trace_on``, a vhost's ``tracing``): a copy of every
publish and every delivery of a virtual host, published to its ``amq.rabbitmq.trace`` exchange.

As ``rabbit_trace``: a publish is traced as ``publish.<exchange>`` once routed (with the queues
it reached, ``routed_queues``), a delivery or basic.get as ``deliver.<queue>``; the copy carries
the message's body, and headers that say where it went (``exchange_name``, ``routing_keys``,
``properties``, ``node``, ``connection``, ``channel``, ``user``, ``vhost``, and ``redelivered``
for a delivery). Messages published to the trace exchange itself are never traced (a queue
that reads the firehose would trace itself forever). The copies are routed through the trace
exchange's bindings without a routing decision on the broker's trace: they are the broker's own
work, not a client's publish.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..fieldtypes import Long
from ._message import Message

if TYPE_CHECKING:
    from ._channel import Channel
    from ._queue import Queue

__all__ = ["TRACE_EXCHANGE", "delivered", "published"]

#: The exchange the firehose publishes to.
TRACE_EXCHANGE = "amq.rabbitmq.trace"


def _headers(channel: Channel, message: Message) -> dict[str, Any]:
    connection = channel.connection
    return {"exchange_name": message.exchange, "routing_keys": list(message.keys),
            "properties": dict(message.properties), "node": connection.node.name,
            "connection": connection.name, "channel": channel.number,
            "user": connection.user, "vhost": channel.vhost.name}


def _emit(channel: Channel, key: str, headers: dict[str, Any], body: bytes) -> None:
    vhost = channel.vhost
    exchange = vhost.exchanges.get(TRACE_EXCHANGE)
    if exchange is None:
        return
    copy = Message(TRACE_EXCHANGE, key, {"headers": headers}, body)
    queues, _matched, _visited = vhost._route(exchange, [key], None)
    for queue in queues:
        queue.publish(copy)


def published(channel: Channel, message: Message, queues: list[Queue]) -> None:
    """``message`` was published on ``channel`` and routed to ``queues``."""
    if message.exchange == TRACE_EXCHANGE:
        return
    headers = _headers(channel, message)
    if message.exchange == "":
        # As rabbit_exchange:route/2 for the default exchange, which rabbit_trace is given:
        # the routing keys themselves, sorted, whether a queue has that name or not (direct
        # reply-to's keys left out).
        headers["routed_queues"] = sorted({key for key in message.keys
                                           if not key.startswith("amq.rabbitmq.reply-to")})
    else:
        headers["routed_queues"] = [queue.name for queue in queues]
    _emit(channel, f"publish.{message.exchange}", headers, message.body)


def delivered(channel: Channel, queue: str, message: Message, redelivered: bool) -> None:
    """``message`` was delivered from ``queue`` on ``channel`` (to a consumer or basic.get)."""
    if message.exchange == TRACE_EXCHANGE:
        return
    headers = _headers(channel, message)
    headers["redelivered"] = Long(1 if redelivered else 0)
    _emit(channel, f"deliver.{queue}", headers, message.body)
