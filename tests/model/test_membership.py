"""A quorum queue gains and loses members and moves its leader (:mod:`embroker.model._membership`),
as RabbitMQ 3.10.8's ``rabbit_quorum_queue`` (``add_member/4``, ``delete_member/3``, ``grow/4``,
``shrink_all/1``, ``status/2``, ``list_with_minimum_quorum/0``) and
``rabbit_amqqueue:rebalance/3`` do it; what its tool prints of it is tests/control's."""

from __future__ import annotations

from typing import Any

import pytest

from embroker.model import Broker, Queue
from embroker.model._membership import (
    MembershipRefused,
    add_member,
    delete_member,
    grow,
    quorum_critical,
    quorum_status,
    rebalance,
    shrink,
    transfer_leadership,
)


@pytest.fixture
def broker() -> Broker:
    return Broker(nodes=3)


def _declare(broker: Broker, name: str, node: int = 0, arguments: dict[str, Any] | None = None
             ) -> Queue:
    channel = broker.open_connection(node=broker.nodes[node]).open_channel(1)
    channel.queue_declare(name, durable=True, arguments=arguments or {})
    return broker.vhost("/").queues[name]


def _quorum(broker: Broker, name: str, size: int = 3, node: int = 0) -> Queue:
    return _declare(broker, name, node, {"x-queue-type": "quorum",
                                         "x-quorum-initial-group-size": size})


def _names(queue: Queue) -> list[str]:
    return [n.name for n in queue.placement.members]


def test_a_new_member_comes_first_in_the_members_order_and_the_leader_stays(
        broker: Broker) -> None:
    # rabbit_quorum_queue:add_member/3: Ts#{nodes => [Node | Nodes]}
    queue = _quorum(broker, "q", 1)
    assert add_member(queue, broker.nodes[1]) is True
    assert queue.placement.members == (broker.nodes[1], broker.nodes[0])
    assert queue.placement.leader is broker.nodes[0]


def test_adding_a_member_where_there_is_one_does_nothing(broker: Broker) -> None:
    # add_member/4: "idempotent by design"
    queue = _quorum(broker, "q")
    before = queue.placement
    assert add_member(queue, broker.nodes[2]) is False
    assert queue.placement == before


def test_a_member_on_a_stopped_node_is_refused_node_not_running(broker: Broker) -> None:
    # add_member/4: lists:member(Node, rabbit_nodes:all_running())
    queue = _quorum(broker, "q", 1)
    broker.nodes[2].stop()
    with pytest.raises(MembershipRefused) as refused:
        add_member(queue, broker.nodes[2])
    assert refused.value.reason == "node_not_running"


def test_classic_queues_and_streams_have_no_members_to_change(broker: Broker) -> None:
    # add_member/4, delete_member/3, status/2: {error, classic_queue_not_supported}
    classic = _declare(broker, "c")
    stream = _declare(broker, "s", arguments={"x-queue-type": "stream"})
    for change in (add_member, delete_member):
        with pytest.raises(MembershipRefused) as refused:
            change(classic, broker.nodes[1])
        assert refused.value.reason == "classic_queue_not_supported"
        with pytest.raises(MembershipRefused) as refused:
            change(stream, broker.nodes[1])
        assert refused.value.reason == "stream_queue_not_supported"


def test_the_last_member_cannot_be_removed(broker: Broker) -> None:
    # delete_member/2: [{_, Node}] -> {error, last_node}
    queue = _quorum(broker, "q", 1)
    with pytest.raises(MembershipRefused) as refused:
        delete_member(queue, broker.nodes[0])
    assert refused.value.reason == "last_node"
    assert delete_member(queue, broker.nodes[2]) is False  # (not a member: nothing to do)


def test_removing_the_leaders_member_elects_the_next_running_member_in_a_new_term(
        broker: Broker) -> None:
    queue = _quorum(broker, "q")
    assert queue.placement.leader is broker.nodes[0]
    assert delete_member(queue, broker.nodes[0]) is True
    assert broker.nodes[0] not in queue.placement.members
    assert queue.placement.leader is queue.placement.members[0]
    assert queue.placement.term == 2


def test_messages_and_consumers_stay_while_members_change(broker: Broker) -> None:
    queue = _quorum(broker, "q")
    channel = broker.open_connection(node=broker.nodes[1]).open_channel(1)
    channel.basic_publish("", "q", b"kept")
    delete_member(queue, broker.nodes[0])
    add_member(queue, broker.nodes[0])
    assert [m.body for m in queue.messages] == [b"kept"]


def test_a_transfer_makes_a_running_member_the_leader(broker: Broker) -> None:
    queue = _quorum(broker, "q", 2)
    follower = queue.placement.members[1]
    assert transfer_leadership(queue, follower) is True
    assert (queue.placement.leader, queue.placement.term) == (follower, 2)
    assert transfer_leadership(queue, follower) is False  # (already_leader)
    outsider = next(n for n in broker.nodes if n not in queue.placement.members)
    assert transfer_leadership(queue, outsider) is False


def test_quorum_status_lists_each_member_leader_first_when_declared_and_a_stopped_one_noproc(
        broker: Broker) -> None:
    # status/2: one row per member (get_nodes/1's order); a member whose Ra server cannot be
    # asked shows the error's name (noproc) and empty columns
    queue = _quorum(broker, "q")
    broker.nodes[2].stop()
    rows = [(m.node.name, m.raft_state, m.term) for m in quorum_status(queue)]
    members = _names(queue)
    assert rows[0] == (members[0], "leader", 1)
    assert {(name, state) for name, state, _ in rows[1:]} == {
        (members[1], "follower" if members[1] != broker.nodes[2].name else "noproc"),
        (members[2], "follower" if members[2] != broker.nodes[2].name else "noproc")}


def test_grow_adds_a_member_on_the_node_to_the_matching_queues_without_one(
        broker: Broker) -> None:
    # grow/4: not already a member, the node running, the strategy, both patterns (re:run/2)
    one = _quorum(broker, "one", 1)
    two = _quorum(broker, "two", 2)
    _quorum(broker, "full", 3)
    _declare(broker, "classic")
    node = next(n for n in broker.nodes if n not in two.placement.members)
    assert [(q.name, size, error) for q, size, error in grow(broker, node, "even")] == [
        ("two", 3, None)]
    assert [(q.name, size) for q, size, _ in grow(broker, broker.nodes[1], "all",
                                                  queue_pattern="^on")] == [("one", 2)]
    assert grow(broker, broker.nodes[1], "all", vhost_pattern="^nomatch$") == []
    assert broker.nodes[1] in one.placement.members


def test_grow_on_a_node_that_is_not_running_adds_nothing(broker: Broker) -> None:
    _quorum(broker, "one", 1)
    broker.nodes[2].stop()
    assert grow(broker, broker.nodes[2], "all") == []


def test_shrink_removes_the_nodes_members_and_keeps_a_last_one(broker: Broker) -> None:
    # shrink_all/1: {ok, Size - 1} or {error, Size, last_node}
    _quorum(broker, "three")
    _quorum(broker, "alone", 1, node=2)
    assert [(q.name, size, error) for q, size, error in shrink(broker, broker.nodes[2])] == [
        ("three", 2, None), ("alone", 1, "last_node")]


def test_a_node_is_quorum_critical_for_queues_with_no_member_to_spare(broker: Broker) -> None:
    # filter_quorum_critical/2: members running =< length(Members) div 2 + 1
    _quorum(broker, "three")
    _quorum(broker, "two", 2)
    _quorum(broker, "one", 1)
    assert [q.name for q in quorum_critical(broker, broker.nodes[0])] == ["two", "one"]
    broker.nodes[2].stop()
    assert [q.name for q in quorum_critical(broker, broker.nodes[0])] == ["three", "two", "one"]


def test_rebalance_moves_leaders_from_nodes_above_their_share(broker: Broker) -> None:
    # rabbit_amqqueue:rebalance/3: at most ceil(queues / running nodes) leaders a node
    queues = [_quorum(broker, f"q{i}") for i in range(4)]
    assert {q.placement.leader for q in queues} == {broker.nodes[0]}
    summary = rebalance(broker, "quorum")
    leaders = [sum(1 for q in queues if q.placement.leader is n) for n in broker.nodes]
    assert max(leaders) == 2
    assert sum(leaders) == 4
    assert [(n.name, quorum, classic) for n, quorum, classic in summary] == sorted(
        ((n.name, count, 0) for n, count in zip(broker.nodes, leaders, strict=True) if count),
        reverse=True)


def test_rebalance_of_classic_queues_moves_nothing(broker: Broker) -> None:
    # is_replicated/1: a classic queue only when mirrored, which embroker's never are
    _declare(broker, "c")
    _quorum(broker, "q")
    assert rebalance(broker, "classic") == []


def test_grow_and_rebalance_take_only_the_queues_their_patterns_match(broker: Broker) -> None:
    # grow/4 and rebalance/3: is_match/2 (re:run/2) on the vhost's and the queue's names
    _quorum(broker, "a1", 1)
    _quorum(broker, "b1", 1)
    assert [q.name for q, _, _ in grow(broker, broker.nodes[1], "all", queue_pattern="^a")] == [
        "a1"]
    assert grow(broker, broker.nodes[2], "all", vhost_pattern="^x") == []
    assert [(n.name, count) for n, count, _ in rebalance(broker, "quorum", queue_pattern="^b")
            ] == [(broker.nodes[0].name, 1)]
