"""The event exchange (rabbitmq_event_exchange), rule by rule, from the plugin's source
(rabbit_exchange_type_event.erl and rabbit_event_exchange_decorator.erl, RabbitMQ 3.10.8).
The headers themselves are compared with RabbitMQ in tests/conformance (scenarios_events and
test_event_shapes)."""

from __future__ import annotations

import pytest

from embroker import Broker, Channel, ManualClock
from embroker.errors import AccessRefused, NotFound
from embroker.fieldtypes import Long
from embroker.model import Delivery

EVENTS = "rabbitmq_event_exchange"


def listen(broker: Broker, key: str = "#") -> tuple[Channel, str]:
    ch = broker.connect().channel()
    q = ch.queue_declare("", exclusive=True).queue
    ch.queue_bind(q, "amq.rabbitmq.event", key)
    return ch, q


def drain(ch: Channel, q: str) -> list[Delivery]:
    out = []
    while (d := ch.basic_get(q, auto_ack=True)) is not None:
        out.append(d)
    return out


def test_register__the_exchange_is_a_durable_internal_topic_in_the_default_vhost() -> None:
    """register/0 declares amq.rabbitmq.event (topic, durable, internal) in the plugin's
    vhost, the default one; the other vhosts have none."""
    broker = Broker(plugins=[EVENTS], vhosts=("/", "other"))
    exchange = broker.vhost("/").exchanges["amq.rabbitmq.event"]
    assert (exchange.type, exchange.durable, exchange.internal) == ("topic", True, True)
    assert "amq.rabbitmq.event" not in broker.vhost("other").exchanges
    assert "amq.rabbitmq.event" not in Broker().vhost("/").exchanges, "only with the plugin"


def test_exchange__ensure_vhost_exists() -> None:
    """exchange/1 makes the plugin's vhost when it does not exist (ensure_vhost_exists/1)."""
    broker = Broker(plugins=[EVENTS], vhosts=("only",))
    assert "amq.rabbitmq.event" in broker.vhost("/").exchanges


def test_clients_cannot_publish_to_it() -> None:
    broker = Broker(plugins=[EVENTS])
    ch = broker.connect().channel()
    with pytest.raises(AccessRefused, match="cannot publish to internal exchange"):
        ch.basic_publish("amq.rabbitmq.event", "queue.created", b"")


def test_handle_event__events_of_every_vhost_go_to_the_one_exchange() -> None:
    """The handler publishes to exchange(VHost) of its state: events of another vhost land in
    the default vhost's amq.rabbitmq.event, their ``vhost`` header says where they happened."""
    broker = Broker(plugins=[EVENTS], vhosts=("/", "other"))
    ch, q = listen(broker, "queue.*")
    broker.connect("other").channel().queue_declare("far")
    [event] = drain(ch, q)
    assert event.routing_key == "queue.created"
    assert (event.properties["headers"]["name"], event.properties["headers"]["vhost"]) == (
        "far", "other")


def test_handle_event__message_properties() -> None:
    """delivery_mode 2, a timestamp in seconds (the event's, "0-9-1 says the timestamp is a 64 bit
    POSIX timestamp"), headers ending with timestamp_in_ms, an empty body, the routing key the
    event's name."""
    broker = Broker(plugins=[EVENTS], clock=ManualClock(start=1_700_000_000.25))
    ch, q = listen(broker, "exchange.created")
    broker.connect().channel().exchange_declare("x", "fanout")
    [event] = drain(ch, q)
    assert event.body == b""
    assert event.exchange == "amq.rabbitmq.event"
    assert event.properties["delivery_mode"] == 2
    assert event.properties["timestamp"] == 1_700_000_000
    headers = event.properties["headers"]
    assert list(headers)[-1] == "timestamp_in_ms"
    assert headers["timestamp_in_ms"] == 1_700_000_000_250
    assert isinstance(headers["timestamp_in_ms"], Long)


def test_handle_event__nothing_published_without_bindings() -> None:
    """has_any_bindings = false: the handler publishes nothing (not even to the trace)."""
    broker = Broker(plugins=[EVENTS])
    broker.connect().channel().queue_declare("q")
    assert len(broker.trace) == 0
    assert broker.plugins.events is not None
    assert broker.plugins.events.published == 0


def test_decorator__the_first_binding_sees_itself_and_the_last_unbinding_does_not() -> None:
    """The decorator tells the handler of the first binding before the binding's own event, and
    of the last one's removal before that event: the first binding.created is published, the
    last binding.deleted is not."""
    broker = Broker(plugins=[EVENTS])
    ch, q = listen(broker, "binding.*")
    [created] = drain(ch, q)
    assert created.properties["headers"]["source_name"] == "amq.rabbitmq.event"
    ch.queue_unbind(q, "amq.rabbitmq.event", "binding.*")
    assert drain(ch, q) == []


def test_events_do_not_recurse() -> None:
    """An event's own publishing raises no event: publishing the ``queue.created`` of a queue
    bound to the event exchange... and a queue that the event reaches."""
    broker = Broker(plugins=[EVENTS])
    ch, q = listen(broker)
    ch.queue_declare("watched")
    names = [e.routing_key for e in drain(ch, q)]
    assert names == ["binding.created", "queue.created"]
    assert broker.plugins.events is not None
    assert broker.plugins.events.published == 2


def test_events_are_on_the_trace() -> None:
    """Each published event leaves a routing decision (from the internal exchange)."""
    broker = Broker(plugins=[EVENTS])
    ch, q = listen(broker)
    ch.exchange_declare("x", "direct")
    decision = broker.trace[-1]
    assert (decision.exchange, decision.routing_key, decision.queues) == (
        "amq.rabbitmq.event", "exchange.created", (q,))


def test_in_process_connections_are_direct_connections() -> None:
    """The in-process client is RabbitMQ's direct (Erlang client) connection: type direct."""
    broker = Broker(plugins=[EVENTS])
    ch, q = listen(broker, "connection.*")
    conn = broker.connect(client_properties={"connection_name": "worker"})
    conn.close()
    created, closed = drain(ch, q)
    assert created.routing_key == "connection.created"
    assert created.properties["headers"]["type"] == "direct"
    assert created.properties["headers"]["user_provided_name"] == "worker"
    assert closed.routing_key == "connection.closed"


def test_without_the_plugin_no_event_exchange() -> None:
    broker = Broker()
    ch = broker.connect().channel()
    ch.queue_declare("q")
    with pytest.raises(NotFound, match=r"no exchange 'amq\.rabbitmq\.event'"):
        ch.queue_bind("q", "amq.rabbitmq.event", "#")



def test_a_vhost_created_in_a_cluster_names_its_running_nodes_latest_first() -> None:
    """vhost.created's cluster_state is rabbit_vhost:info's (vhost_cluster_state/1, v3.10.8:
    rabbit_nodes:all_running(), Mnesia's running nodes, the latest to join first; a stopped
    node is not named), as the management API and rabbitmqctl list_vhosts show it."""
    broker = Broker(plugins=[EVENTS], nodes=3)
    ch, q = listen(broker, "vhost.created")
    broker.nodes[1].stop()
    broker.add_vhost("later")
    [event] = drain(ch, q)
    assert list(event.properties["headers"]["cluster_state"].items()) == [
        ("embroker-3@localhost", "running"), ("embroker@localhost", "running")]
