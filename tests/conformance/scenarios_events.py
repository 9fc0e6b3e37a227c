"""Scenarios: the event exchange (plugin rabbitmq_event_exchange), as the reference runs it.

Each scenario binds a queue of its own to ``amq.rabbitmq.event``, does something, waits until
the events it expects have arrived (RabbitMQ publishes them asynchronously), and notes them:
the routing key, the properties, and the headers in the order they came (a list of pairs: the
order on the wire is RabbitMQ's). Events of other clients of the reference are left out (only
those that name this run's resources count), and what differs from run to run is replaced:
``timestamp_in_ms`` and the ``timestamp`` property by ``<time>``, pids by ``<pid>``.
"""

from __future__ import annotations

import re
from typing import Any

from .harness import ChannelProxy, Msg, Session

_PID = re.compile(r"^<[^<>]+\.\d+\.\d+>$")


def _mine(s: Session, headers: dict[str, Any]) -> bool:
    return any(isinstance(v, str) and s.token in v for v in headers.values())


def _clean(key: str, value: Any) -> Any:
    if key in ("timestamp_in_ms", "connected_at"):
        return "<time>"
    if isinstance(value, str) and _PID.match(value):
        return "<pid>"
    return value


def _listen(s: Session, ch: ChannelProxy, keys: tuple[str, ...] = ("#",)) -> str:
    q = ch.queue_declare("", exclusive=True)
    name = q.queue if hasattr(q, "queue") else ""
    for key in keys:
        ch.queue_bind(name, "amq.rabbitmq.event", key)
    return name


def _events(s: Session, ch: ChannelProxy, queue: str, count: int) -> None:
    """Wait for ``count`` events about this run's resources, then note them in order."""
    got: list[Any] = []

    def probe() -> int:
        while isinstance(m := ch.basic_get(queue, auto_ack=True), Msg):
            headers = m.properties.get("headers") or {}
            if _mine(s, headers):
                got.append(m)
        return len(got)

    s.wait_until(f"{count} events", probe, lambda n: n >= count)
    for m in got:
        properties = {k: ("<time>" if k == "timestamp" else v)
                      for k, v in m.properties.items() if k != "headers"}
        headers = [(k, _clean(k, v)) for k, v in (m.properties.get("headers") or {}).items()]
        s.note(f"event {m.routing_key}", (m.exchange, properties, m.body, headers))


def scenario_events_queue_exchange_binding(s: Session) -> None:
    """exchange.created, queue.created, binding.created, binding.deleted, queue.deleted, and an
    exchange deletion wrapped in its exchange-delete-in-progress parameter."""
    ch = s.channel()
    listener = _listen(s, ch)
    x, q = s.name("x"), s.name("q")
    ch.exchange_declare(x, "topic", durable=True, arguments={"alternate-exchange": s.name("ae"),
                                                             "n": 5})
    ch.queue_declare(q, arguments={"x-message-ttl": 60000, "x-max-length": 10})
    ch.queue_bind(q, x, "a.#", arguments={"z": 1, "b": ["x", 2]})
    ch.queue_unbind(q, x, "a.#", arguments={"z": 1, "b": ["x", 2]})
    ch.queue_delete(q)
    ch.exchange_delete(x)
    _events(s, ch, listener, 8)


def scenario_events_consumers(s: Session) -> None:
    """consumer.created and consumer.deleted (basic.cancel), with prefetch and arguments; an
    auto-delete queue deleted by the broker when its consumer goes (``rmq-internal``)."""
    ch = s.channel()
    listener = _listen(s, ch)
    q = s.name("q")
    ch.queue_declare(q, auto_delete=True)
    ch.basic_qos(prefetch_count=7)
    ch.basic_consume(q, consumer_tag=s.name("tag"), exclusive=True,
                     arguments={"x-priority": 3})
    ch.basic_cancel(s.name("tag"))
    _events(s, ch, listener, 4)


def scenario_events_deletions_take_bindings_and_consumers(s: Session) -> None:
    """Deleting a queue with bindings and a consumer, and an exchange with bindings."""
    ch = s.channel()
    listener = _listen(s, ch)
    x, q = s.name("x"), s.name("q")
    ch.exchange_declare(x, "direct")
    ch.queue_declare(q)
    ch.queue_bind(q, x, "k")
    ch.basic_consume(q, consumer_tag=s.name("tag"), auto_ack=True)
    ch.queue_delete(q)
    ch.wait_cancels(1)
    x2, q2 = s.name("x2"), s.name("q2")
    ch.exchange_declare(x2, "fanout")
    ch.queue_declare(q2)
    ch.queue_bind(q2, x2)
    ch.exchange_delete(x2)
    ch.queue_delete(q2)
    _events(s, ch, listener, 16)


def scenario_events_auto_delete_exchange(s: Session) -> None:
    """An auto-delete exchange goes with its last binding."""
    ch = s.channel()
    listener = _listen(s, ch)
    x, q = s.name("x"), s.name("q")
    ch.exchange_declare(x, "fanout", auto_delete=True)
    ch.queue_declare(q)
    ch.queue_bind(q, x)
    ch.queue_unbind(q, x)
    ch.queue_delete(q)
    _events(s, ch, listener, 6)


def scenario_events_exclusive_queue_goes_with_its_connection(s: Session) -> None:
    """An exclusive queue's owner_pid, and its deletion by the broker when its connection
    closes."""
    ch = s.channel()
    listener = _listen(s, ch)
    other = s.connection()
    och = other.channel()
    q = s.name("excl")
    och.queue_declare(q, exclusive=True)
    och.queue_bind(q, "amq.fanout")
    other.close()
    _events(s, ch, listener, 4)


def scenario_events_first_binding_sees_itself(s: Session) -> None:
    """The binding that makes the event exchange's first binding is itself published (RabbitMQ
    learns of the binding before the event); the events of a queue bound to it name it."""
    ch = s.channel()
    q = s.name("watch")
    ch.queue_declare(q, exclusive=True)
    ch.queue_bind(q, "amq.rabbitmq.event", "binding.*")
    _events(s, ch, q, 1)
    ch.queue_unbind(q, "amq.rabbitmq.event", "binding.*")


def scenario_events_channel_closes_with_a_consumer(s: Session) -> None:
    """A channel that closes with a consumer: what its queue says of the consumer."""
    ch = s.channel()
    listener = _listen(s, ch)
    q = s.name("q")
    ch.queue_declare(q)
    other = s.channel()
    other.basic_consume(q, consumer_tag=s.name("tag"))
    other.close()
    ch.queue_delete(q)
    _events(s, ch, listener, 4)
