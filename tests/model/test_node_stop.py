"""A node of the cluster stops and starts (:mod:`embroker.model._cluster`): what the other nodes'
clients see, as a three-node RabbitMQ 3.10.8 cluster showed it (tests/cluster; the facts in
docs/cluster.md)."""

from __future__ import annotations

from typing import Any

import pytest

from embroker.errors import (
    ConnectionException,
    ConnectionForced,
    InternalError,
    NotFound,
    ResourceError,
)
from embroker.model import Broker, Cancelled
from tests.model.conftest import channel_on

DOWN = "NOT_FOUND - home node 'embroker-2@localhost' of durable queue 'dq' in vhost '/' is down or " \
       "inaccessible"



@pytest.fixture
def broker() -> Broker:
    return Broker(nodes=3)


def test_a_stopping_node_closes_its_clients_connections(broker: Broker) -> None:
    closed: list[ConnectionException] = []
    on_b = broker.open_connection(node=broker.nodes[1])
    on_b.on_closed_by_broker = closed.append
    on_a = broker.open_connection(node=broker.nodes[0])
    broker.nodes[1].stop()
    assert [(type(e), e.reply_text) for e in closed] == [
        (ConnectionForced, "CONNECTION_FORCED - broker forced connection closure with reason "
                           "'shutdown'")]
    assert on_a.is_open
    assert broker.nodes[1].connections == []


def test_a_durable_classic_queue_on_a_stopped_node_refuses_everything_with_404(
        broker: Broker) -> None:
    channel_on(broker, 1).queue_declare("dq", durable=True)
    broker.nodes[1].stop()
    a = channel_on(broker, 0)
    for attempt in (lambda: a.queue_declare("dq", passive=True),
                    lambda: a.queue_declare("dq", durable=True),
                    lambda: a.queue_declare("dq"),
                    lambda: a.basic_consume("dq"),
                    lambda: a.basic_get("dq"),
                    lambda: a.queue_purge("dq"),
                    lambda: a.queue_bind("dq", "amq.direct", "k"),
                    lambda: a.queue_delete("dq")):
        with pytest.raises(NotFound) as refused:
            attempt()
        assert refused.value.reply_text == DOWN


def test_a_publish_to_a_down_queue_reaches_nothing_and_is_confirmed(broker: Broker) -> None:
    b = channel_on(broker, 1)
    b.queue_declare("dq", durable=True)
    broker.nodes[1].stop()
    a = channel_on(broker, 0)
    a.confirm_select()
    outcome = a.basic_publish("", "dq", b"while-down", {"delivery_mode": 2}, mandatory=True)
    assert (outcome.routed, outcome.accepted, outcome.returned) == ((), True, True)


def test_consumers_elsewhere_are_cancelled_and_the_queue_comes_back_with_its_messages(
        broker: Broker) -> None:
    # (live: c1, c2 delivered and unacknowledged come back first, redelivered; c3 after)
    channel_on(broker, 1).queue_declare("dq", durable=True)
    a = channel_on(broker, 0)
    events: list[Any] = []
    a.listener = events.append
    a.basic_qos(prefetch_count=2)
    for body in (b"c1", b"c2", b"c3", b"transient"):
        a.basic_publish("", "dq", body, {} if body == b"transient" else {"delivery_mode": 2})
    tag = a.basic_consume("dq")
    a.start_consumer(tag)
    broker.nodes[1].stop()
    assert [type(e) for e in events if not hasattr(e, "message")] == [Cancelled]
    a.basic_ack(1)  # (its queue is gone: the ack changes nothing)
    broker.nodes[1].start()
    got = [a.basic_get("dq", no_ack=True) for _ in range(4)]
    assert [(g.message.body, g.redelivered) for g in got[:3]] == [
        (b"c1", True), (b"c2", True), (b"c3", False)]
    assert got[3] is None


def test_transient_classic_queues_on_a_stopped_node_are_deleted(broker: Broker) -> None:
    b = broker.open_connection(node=broker.nodes[1]).open_channel(1)
    b.queue_declare("plain", durable=False)
    b.queue_declare("auto", auto_delete=True)
    channel_on(broker, 0).queue_declare("elsewhere")
    broker.nodes[1].stop()
    assert "plain" not in broker.queues
    assert "auto" not in broker.queues
    assert "elsewhere" in broker.queues


def test_a_quorum_queue_led_by_a_stopped_node_gets_the_next_running_member(
        broker: Broker) -> None:
    channel_on(broker, 1).queue_declare("qq", durable=True, arguments={"x-queue-type": "quorum"})
    queue = broker.queues["qq"]
    assert queue.placement.leader is broker.nodes[1]
    broker.nodes[1].stop()
    assert queue.placement.leader is broker.nodes[2]  # (the next member: [2, 3, 1])
    a = channel_on(broker, 0)
    a.basic_publish("", "qq", b"x")
    assert a.basic_get("qq", no_ack=True).message.body == b"x"


def test_a_single_node_broker_stopped_and_started_is_restarted() -> None:
    broker = Broker()
    channel = broker.open_connection().open_channel(1)
    channel.queue_declare("d", durable=True)
    channel.queue_declare("t")
    channel.basic_publish("", "d", b"p", {"delivery_mode": 2})
    channel.basic_publish("", "d", b"t")
    broker.nodes[0].stop()
    broker.nodes[0].start()
    assert list(broker.queues) == ["d"]
    assert [m.body for m in broker.queues["d"].messages] == [b"p"]


def test_a_quorum_queue_without_a_majority_takes_nothing_until_it_is_back(
        broker: Broker) -> None:
    # (live: get 541 "... noproc", purge and consume 541, a new channel's publish nacked and
    # not enqueued; the majority back, the queue goes on with what it held)
    a = channel_on(broker, 0)
    a.queue_declare("qq", durable=True, arguments={"x-queue-type": "quorum"})
    a.basic_publish("", "qq", b"before")
    broker.nodes[1].stop()
    broker.nodes[2].stop()
    publisher = channel_on(broker, 0)
    publisher.confirm_select()
    assert not publisher.basic_publish("", "qq", b"lost").accepted
    for attempt, text in ((lambda c: c.basic_get("qq"), "INTERNAL_ERROR - Cannot get a "
                           "message from queue 'queue 'qq' in vhost '/'': noproc"),
                          (lambda c: c.queue_purge("qq"), "INTERNAL_ERROR"),
                          (lambda c: c.basic_consume("qq"), "INTERNAL_ERROR")):
        with pytest.raises(InternalError) as refused:
            attempt(channel_on(broker, 0))
        assert refused.value.reply_text == text
    assert channel_on(broker, 0).queue_declare("qq", passive=True).queue == "qq"
    broker.nodes[1].start()
    assert [m.body for m in broker.queues["qq"].messages] == [b"before"]


def test_a_durable_auto_delete_classic_queue_is_kept_down_not_deleted(broker: Broker) -> None:
    # (live: the transient ones go, a durable auto-delete one survives, down)
    channel_on(broker, 1).queue_declare("da", durable=True, auto_delete=True)
    broker.nodes[1].stop()
    assert broker.queues["da"].down
    broker.nodes[1].start()
    assert not broker.queues["da"].down


def test_a_stream_without_a_majority_refuses_a_publish_with_506(broker: Broker) -> None:
    # (live: 506 "RESOURCE_ERROR - Stream coordinator unavailable for queue 'st' in vhost '/'")
    a = channel_on(broker, 0)
    a.queue_declare("st", durable=True, arguments={"x-queue-type": "stream"})
    broker.nodes[1].stop()
    broker.nodes[2].stop()
    with pytest.raises(ResourceError) as refused:
        channel_on(broker, 0).basic_publish("", "st", b"x")
    assert refused.value.reply_text == \
        "RESOURCE_ERROR - Stream coordinator unavailable for queue 'st' in vhost '/'"


def test_a_new_quorum_queue_without_a_majority_is_refused(broker: Broker) -> None:
    # (live: 541 "... cluster_not_formed", after 15 s; nothing declared)
    broker.nodes[1].stop()
    broker.nodes[2].stop()
    with pytest.raises(InternalError) as refused:
        channel_on(broker, 0).queue_declare("qq.new", durable=True,
                                          arguments={"x-queue-type": "quorum"})
    assert refused.value.reply_text == (
        "INTERNAL_ERROR - Cannot declare quorum queue 'qq.new' in vhost '/' on node "
        "'embroker@localhost' with leader on node 'embroker@localhost': cluster_not_formed")
    assert "qq.new" not in broker.queues


def test_a_stopped_nodes_consumer_returns_its_quorum_deliveries_counted(broker: Broker) -> None:
    # (live: redelivered, x-delivery-count 1; consumers elsewhere see no cancel)
    a = channel_on(broker, 0)
    a.queue_declare("qq", durable=True, arguments={"x-queue-type": "quorum"})
    b = channel_on(broker, 1)
    b.basic_qos(prefetch_count=1)
    b.start_consumer(b.basic_consume("qq"))
    events: list[Any] = []
    a.listener = events.append
    a.start_consumer(a.basic_consume("qq"))
    a.basic_publish("", "qq", b"m")  # (to b's consumer, the first in turn)
    a.basic_cancel(next(iter(a.consumers)))
    broker.nodes[1].stop()
    got = a.basic_get("qq", no_ack=True)
    assert (got.message.body, got.redelivered, got.message.headers["x-delivery-count"]) == (
        b"m", True, 1)
    assert not [e for e in events if isinstance(e, Cancelled)]


def test_a_quorum_queue_without_a_majority_has_no_leader_until_it_has_one_again(
        broker: Broker) -> None:
    # (live: leader null while a follower is the only member running; a leader again once a
    # majority is back)
    channel_on(broker, 1).queue_declare("qq", durable=True, arguments={"x-queue-type": "quorum"})
    queue = broker.queues["qq"]
    broker.nodes[0].stop()
    broker.nodes[1].stop()  # (the leader: one member of three left)
    assert not queue.placement.leader.running
    broker.nodes[0].start()
    assert queue.placement.leader.running


def test_a_publish_refused_by_a_leaderless_stream_is_enqueued_nowhere(broker: Broker) -> None:
    # (the 506 ends the publish: a classic queue the same exchange routes to gets nothing)
    a = channel_on(broker, 0)
    a.exchange_declare("fan", "fanout")
    a.queue_declare("st", durable=True, arguments={"x-queue-type": "stream"})
    a.queue_declare("plain")
    a.queue_bind("plain", "fan")
    a.queue_bind("st", "fan")
    broker.nodes[1].stop()
    broker.nodes[2].stop()
    with pytest.raises(ResourceError):
        channel_on(broker, 0).basic_publish("fan", "", b"x")
    assert broker.queues["plain"].message_count == 0


def test_a_stream_without_a_majority_refuses_a_consumer_and_a_new_stream_541(
        broker: Broker) -> None:
    # (live on the reference cluster, each after 30 s: a consume 541 "INTERNAL_ERROR"; a new
    # stream 541 "... {error,coordinator_unavailable}", rabbit_stream_queue:declare/2 v3.10.8;
    # /work/notes/clusterdiff/facts.md)
    channel_on(broker, 0).queue_declare("st", durable=True, arguments={"x-queue-type": "stream"})
    broker.nodes[1].stop()
    broker.nodes[2].stop()
    reader = channel_on(broker, 0)
    reader.basic_qos(prefetch_count=10)
    with pytest.raises(InternalError) as refused:
        reader.basic_consume("st", arguments={"x-stream-offset": "first"})
    assert refused.value.reply_text == "INTERNAL_ERROR"
    with pytest.raises(InternalError) as refused:
        channel_on(broker, 0).queue_declare("st.new", durable=True,
                                          arguments={"x-queue-type": "stream"})
    assert refused.value.reply_text == (
        "INTERNAL_ERROR - Cannot declare a queue 'queue 'st.new' in vhost '/'' on node "
        "'embroker@localhost': {error,coordinator_unavailable}")
    assert "st.new" not in broker.queues


def test_a_stream_without_a_majority_is_not_deleted(broker: Broker) -> None:
    # (live on the reference cluster, after 30 s: 541 "... Cannot delete queue ... on node
    # 'N': {error,coordinator_unavailable} ", its trailing space included:
    # rabbit_stream_queue:delete/4 v3.10.8; a quorum queue's delete answers)
    channel_on(broker, 0).queue_declare("st", durable=True, arguments={"x-queue-type": "stream"})
    broker.nodes[1].stop()
    broker.nodes[2].stop()
    with pytest.raises(InternalError) as refused:
        channel_on(broker, 0).queue_delete("st")
    assert refused.value.reply_text == (
        "INTERNAL_ERROR - Cannot delete queue 'queue 'st' in vhost '/'' on node "
        "'embroker@localhost': {error,coordinator_unavailable} ")
    assert "st" in broker.queues
    broker.nodes[1].start()
    assert channel_on(broker, 0).queue_delete("st") == 0


def test_a_restart_keeps_a_quorum_queues_transient_messages_and_a_classic_queues_persistent_ones(
) -> None:
    # Live on 3.10.8 (one node, stop_app then start_app): a quorum queue keeps its transient
    # message too (its Raft log keeps every command); a durable classic queue only the
    # persistent one. (QueueType.keeps_every_message)
    broker = Broker()
    channel = broker.open_connection().open_channel(1)
    channel.queue_declare("qq", durable=True, arguments={"x-queue-type": "quorum"})
    channel.queue_declare("cq", durable=True)
    for queue in ("qq", "cq"):
        channel.basic_publish("", queue, b"transient", {})
        channel.basic_publish("", queue, b"persistent", {"delivery_mode": 2})
    broker.restart()
    assert [m.body for m in broker.queues["qq"].messages] == [b"transient", b"persistent"]
    assert [m.body for m in broker.queues["cq"].messages] == [b"persistent"]
