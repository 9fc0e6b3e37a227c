"""In a cluster of several nodes, the trace and explain() name the node of each step: the
publish's (its connection's node), each delivery's and acknowledgement's (its channel's), and
where the message is now (its queue's node, down when that node is stopped). A broker of one
node says what it always said."""

from __future__ import annotations

import pytest

from embroker.errors import NotFound
from embroker.model import Broker, Channel


def _cluster() -> tuple[Broker, Channel, Channel]:
    broker = Broker(nodes=3)
    on_a = broker.open_connection(node=broker.nodes[0]).open_channel(1)
    on_b = broker.open_connection(node=broker.nodes[1]).open_channel(1)
    return broker, on_a, on_b


def test_a_publish_names_the_node_of_its_connection() -> None:
    broker, _on_a, on_b = _cluster()
    on_b.queue_declare("orders", durable=True)
    on_b.basic_publish("", "orders", b"m")
    decision = broker.trace[-1]
    assert decision.node == "embroker-2@localhost"
    assert decision.explain().splitlines()[0] == (
        "Published on node 'embroker-2@localhost' to exchange '' (the default exchange) in "
        "vhost '/' with routing key 'orders'")


def test_a_refused_publish_names_its_node_too() -> None:
    broker, on_a, _on_b = _cluster()
    with pytest.raises(NotFound):
        on_a.basic_publish("nowhere", "k", b"m")
    decision = broker.trace[-1]
    assert decision.outcome == "refused"
    assert decision.node == "embroker@localhost"


def test_explain_names_each_queue_node_and_each_delivery_node() -> None:
    broker, on_a, on_b = _cluster()
    on_b.queue_declare("orders", durable=True)                                  # home: node 2
    on_a.queue_declare("audit", durable=True, arguments={"x-queue-type": "quorum"})  # leader 1
    for queue in ("orders", "audit"):
        on_a.queue_bind(queue, "amq.fanout", "")
    on_a.basic_publish("amq.fanout", "", b"m")
    on_a.basic_get("audit")
    now = [line for line in broker.trace[-1].explain().splitlines() if "now:" in line]
    assert now == [
        "  now: queue 'audit' on node 'embroker@localhost': taken by basic.get on connection 1, "
        "channel 1, on node 'embroker@localhost' (delivery tag 1, not acknowledged yet)",
        "  now: queue 'orders' on node 'embroker-2@localhost': ready, waiting for a consumer"]


def test_each_history_event_of_a_channel_names_its_node() -> None:
    broker, on_a, on_b = _cluster()
    on_a.queue_declare("audit", durable=True, arguments={"x-queue-type": "quorum"})
    on_a.basic_publish("", "audit", b"m")
    got = on_b.basic_get("audit")
    on_b.basic_ack(got.delivery_tag)
    events = broker.trace[-1].history()
    assert [(e.kind, e.node) for e in events] == [("got", "embroker-2@localhost"),
                                                  ("acked", "embroker-2@localhost")]
    assert str(events[1]) == ("acknowledged in queue 'audit' on connection 2, channel 1, "
                              "on node 'embroker-2@localhost' (delivery tag 1)")


def test_a_queue_whose_node_is_stopped_is_down_in_explain() -> None:
    broker, on_a, on_b = _cluster()
    on_b.queue_declare("orders", durable=True)
    on_a.basic_publish("", "orders", b"m", properties={"delivery_mode": 2})
    broker.nodes[1].stop()
    now = [line for line in broker.trace[-1].explain().splitlines() if "now:" in line]
    assert now == ["  now: queue 'orders' on node 'embroker-2@localhost' (down): ready, "
                   "waiting for a consumer"]


def test_a_dead_lettered_copy_names_the_node_of_the_queue_it_left() -> None:
    broker, on_a, on_b = _cluster()
    on_b.queue_declare("dead", durable=True)
    on_b.queue_declare("work", durable=True,
                       arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key":
                                  "dead"})
    on_a.basic_publish("", "work", b"m")
    got = on_a.basic_get("work")
    on_a.basic_reject(got.delivery_tag, requeue=False)
    decision = broker.trace[-1]
    assert decision.dead_letter == ("work", "rejected")
    assert decision.node == "embroker-2@localhost"
    assert "(rejected) on node 'embroker-2@localhost' and republished" in decision.explain()


def test_a_broker_of_one_node_names_no_node() -> None:
    broker = Broker()
    ch = broker.open_connection().open_channel(1)
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"m")
    got = ch.basic_get("q")
    ch.basic_ack(got.delivery_tag)
    decision = broker.trace[-1]
    assert decision.node is None
    assert [e.node for e in decision.history()] == [None, None]
    assert "node" not in decision.explain()
    assert "node" not in repr(decision.history()[0])
