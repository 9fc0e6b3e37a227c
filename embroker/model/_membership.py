"""A quorum queue's membership and leadership, changed by an operator as RabbitMQ 3.10.8's
``rabbitmq-queues`` changes them (``rabbit_quorum_queue``: ``status/2``, ``add_member/4``,
``delete_member/3``, ``grow/4``, ``shrink_all/1``, ``list_with_minimum_quorum/0``;
``rabbit_amqqueue:rebalance/3``), checked against a three-node cluster of it (the golden files
of tests/control/golden/rabbitmq-queues).

Theory of operation
-------------------
A quorum queue lives on its members (:attr:`Queue.placement <embroker.model.Queue.placement>`:
the members in RabbitMQ's order of them, the leader among them, and the term: how many
leaders it has had). Every change here replaces the placement; the queue's messages,
consumers and bindings are the queue's own and stay as they are (embroker replicates at once:
every member is always caught up).

- :func:`add_member` puts a member on a running node of the cluster, first in the members'
  order (RabbitMQ's ``[Node | Nodes]``); on a node that is already a member it does nothing
  ("idempotent by design"). A node that is not running, or not in the cluster, is refused
  (``node_not_running``).
- :func:`delete_member` takes a member off; a node that is not a member is nothing to do.
  The last member is refused (``last_node``); removing the leader elects the next running
  member (a new term).
- :func:`transfer_leadership` makes a running member the leader (a new term).
- :func:`grow` and :func:`shrink` do that for every quorum queue that matches, and report
  each one's new size or its error; :func:`quorum_critical` lists the quorum queues a node
  is a member of that would lose their majority without it; :func:`rebalance` moves
  leadership from nodes leading more than their share to members leading fewer.

Classic queues and streams are refused (``classic_queue_not_supported``; RabbitMQ 3.10.8's
functions crash on a stream, which the tools print as an error: ``stream_queue_not_supported``
here). None of this is a channel's operation: it raises :class:`MembershipRefused`, never an
AMQP error. Call these holding the broker still (``broker.locked()``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, final

from .. import _regex
from . import _history
from ._cluster import quorate
from ._queue_type import Placement

if TYPE_CHECKING:
    from ._broker import Broker
    from ._node import Node
    from ._queue import Queue

__all__ = ["MACHINE_VERSION", "MemberStatus", "MembershipRefused", "add_member",
           "delete_member", "forget_node", "grow", "quorum_critical", "quorum_status", "rebalance", "shrink",
           "transfer_leadership"]

#: ``rabbit_fifo``'s machine version in RabbitMQ 3.10.8 (``quorum_status``' Machine Version).
MACHINE_VERSION: Final = 2


@final
class MembershipRefused(Exception):
    """A membership change (or status) RabbitMQ refuses, with its reason: RabbitMQ's atom
    (``not_found``, ``classic_queue_not_supported``, ``stream_queue_not_supported``,
    ``node_not_running``, ``last_node``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@final
@dataclass(frozen=True, slots=True)
class MemberStatus:
    """One member as ``rabbit_quorum_queue:status/2`` reports it.

    Attributes:
        node: the member's node.
        raft_state: ``leader`` or ``follower``; ``noproc`` when its node is stopped (Ra's
            process cannot be asked: RabbitMQ prints the error's name, the rest empty).
        log_index, commit_index: embroker keeps no Raft log: the messages the queue holds
            (ready or not) as its log, all committed; ``None`` for a stopped member.
        snapshot_index: ``None``: no snapshot (RabbitMQ's ``undefined`` until Ra takes one),
            and for a stopped member.
        term: how many leaders the queue has had (``None`` for a stopped member).
        machine_version: :data:`MACHINE_VERSION` (``None`` for a stopped member).
    """

    node: Node
    raft_state: str
    log_index: int | None
    commit_index: int | None
    snapshot_index: int | None
    term: int | None
    machine_version: int | None


def _quorum(queue: Queue) -> None:
    if queue.type.name == "classic":
        raise MembershipRefused("classic_queue_not_supported")
    if queue.type.name != "quorum":
        raise MembershipRefused("stream_queue_not_supported")


def quorum_status(queue: Queue) -> list[MemberStatus]:
    """Each member of quorum queue ``queue``, in its members' order (``status/2``).

    Raises:
        MembershipRefused: ``queue`` is not a quorum queue.
    """
    _quorum(queue)
    placement = queue.placement
    held = queue.message_count + queue.unacked
    found = []
    for node in placement.members:
        if not node.running:
            found.append(MemberStatus(node, "noproc", None, None, None, None, None))
            continue
        state = "leader" if node is placement.leader and quorate(queue) else "follower"
        found.append(MemberStatus(node, state, held, held, None, placement.term,
                                  MACHINE_VERSION))
    return found


def add_member(queue: Queue, node: Node) -> bool:
    """Put a member of quorum queue ``queue`` on ``node`` (``add_member/4``): whether it was
    added (``False``: it was a member already).

    Raises:
        MembershipRefused: not a quorum queue; ``node_not_running`` (stopped, or not a node of
            this cluster).
    """
    _quorum(queue)
    if node not in queue.vhost.broker.nodes or not node.running:
        raise MembershipRefused("node_not_running")
    placement = queue.placement
    if node in placement.members:
        return False
    queue.placement = Placement(placement.leader, (node, *placement.members), placement.term)
    return True


def delete_member(queue: Queue, node: Node) -> bool:
    """Take ``node``'s member of quorum queue ``queue`` away (``delete_member/3``): whether
    it was one. The leader's: the next running member leads (a new term).

    Raises:
        MembershipRefused: not a quorum queue; ``last_node``: it is the only member.
    """
    _quorum(queue)
    placement = queue.placement
    if node not in placement.members:
        return False
    if len(placement.members) == 1:
        raise MembershipRefused("last_node")
    members = tuple(n for n in placement.members if n is not node)
    if placement.leader is node:
        running = [n for n in members if n.running]
        queue.placement = Placement(running[0] if running else members[0], members,
                                    placement.term + 1)
    else:
        queue.placement = Placement(placement.leader, members, placement.term)
    return True


def transfer_leadership(queue: Queue, node: Node) -> bool:
    """Make ``node``'s member the leader of quorum queue ``queue`` (``ra:transfer_leadership``):
    whether it moved (``False``: it leads already, or it is no running member)."""
    placement = queue.placement
    if node is placement.leader or node not in placement.members or not node.running:
        return False
    queue.placement = Placement(node, placement.members, placement.term + 1)
    return True


#: What :func:`grow` and :func:`shrink` report of each queue: ``(queue, size, None)`` after
#: the change, or ``(queue, size, reason)`` when it failed (the size it kept).
Result = tuple["Queue", int, "str | None"]


def _quorum_queues(broker: Broker) -> list[Queue]:
    return [queue for vhost in broker.vhosts.values() for queue in vhost.queues.values()
            if queue.type.name == "quorum"]


def _matches(subject: str, pattern: str) -> bool:
    # re:run/2 (unanchored); a pattern users write is matched without backtracking.
    try:
        return _regex.compile(pattern).search(subject)
    except re.error:
        return False


def grow(broker: Broker, node: Node, strategy: Literal["all", "even"], *,
         vhost_pattern: str = ".*", queue_pattern: str = ".*") -> list[Result]:
    """Add a member on ``node`` to every quorum queue without one there (``grow/4``): those
    of a vhost matching ``vhost_pattern`` and a name matching ``queue_pattern``, with an
    even number of members for ``"even"``. Nothing when ``node`` is not running."""
    if node not in broker.nodes or not node.running:
        return []
    results: list[Result] = []
    for queue in _quorum_queues(broker):
        members = queue.placement.members
        if node in members or (strategy == "even" and len(members) % 2) or not (
                _matches(queue.vhost.name, vhost_pattern)
                and _matches(queue.name, queue_pattern)):
            continue
        add_member(queue, node)
        results.append((queue, len(members) + 1, None))
    return results


def shrink(broker: Broker, node: Node) -> list[Result]:
    """Take ``node``'s member away from every quorum queue that has one (``shrink_all/1``);
    a queue whose only member it is keeps it (``last_node``)."""
    results: list[Result] = []
    for queue in _quorum_queues(broker):
        size = len(queue.placement.members)
        if node not in queue.placement.members:
            continue
        try:
            delete_member(queue, node)
        except MembershipRefused as refused:
            results.append((queue, size, refused.reason))
        else:
            results.append((queue, size - 1, None))
    return results


def quorum_critical(broker: Broker, node: Node) -> list[Queue]:
    """The quorum queues with a member on ``node`` that would lose their majority if it
    stopped (``list_with_minimum_quorum/0``: no more members running than a majority)."""
    found = []
    for queue in _quorum_queues(broker):
        members = queue.placement.members
        if node in members and sum(1 for n in members if n.running) <= len(members) // 2 + 1:
            found.append(queue)
    return found


def rebalance(broker: Broker, kind: Literal["all", "quorum", "classic"], *,
              vhost_pattern: str = ".*", queue_pattern: str = ".*"
              ) -> list[tuple[Node, int, int]]:
    """Move leadership of the matching replicated queues (quorum queues: embroker's classic
    queues are not mirrored) from nodes leading more than their share (the queues over the
    running nodes, rounded up) to the members leading fewest (``rabbit_amqqueue:rebalance/3``).

    Returns:
        Per node that led any of them at the start, with the queues RabbitMQ's tally gave
        it (quorum, classic), in RabbitMQ's order (by name, last first).
    """
    running = [n for n in broker.nodes if n.running]
    chosen = [q for q in _quorum_queues(broker) if kind in ("all", "quorum")
              and _matches(q.vhost.name, vhost_pattern) and _matches(q.name, queue_pattern)]
    # group_by_node/1: each node's [{Length, Q, Migrated}], built by prepending, sorted by
    # length (stable): a quorum queue's length is its Raft log's, here its messages.
    by_node: dict[Node, list[tuple[int, Queue, bool]]] = {}
    for queue in chosen:
        by_node.setdefault(queue.placement.leader, []).insert(
            0, (queue.message_count + queue.unacked, queue, False))
    for entries in by_node.values():
        entries.sort(key=lambda entry: entry[0])
    desired = -(-len(chosen) // len(running)) if running else 0
    while _migrate_one(by_node, desired):
        pass
    return [(node, len(by_node[node]), 0)
            for node in sorted(by_node, key=lambda n: n.name, reverse=True)]


def _migrate_one(by_node: dict[Node, list[tuple[int, Queue, bool]]], desired: int) -> bool:
    # maybe_migrate/3: the first node (by name) leading more than ``desired`` whose first
    # queue has not moved yet tries to move it; whether one was tried.
    for node in sorted(by_node, key=lambda n: n.name):
        entries = by_node[node]
        if len(entries) <= desired or entries[0][2]:
            continue
        length, queue, _ = entries.pop(0)
        candidates = [n for n in queue.placement.members if n is not node]
        if candidates:
            target = min(candidates, key=lambda n: len(by_node.get(n, ())))
            if transfer_leadership(queue, target):
                by_node.setdefault(target, []).append((length, queue, True))
                return True
        entries.append((length, queue, True))
        return True
    return False



def forget_node(broker: Broker, node: Node) -> None:
    """``rabbitmqctl forget_cluster_node``: ``node`` (stopped) leaves the cluster
    (``rabbit_mnesia:forget_cluster_node/2``, v3.10.8): the durable classic queues homed on it
    are deleted (``rabbit_amqqueue:forget_all_durable/1``), its member of each quorum queue is
    removed (the tool's ``rabbit_quorum_queue:shrink_all/1``; the queue's last member stays;
    a stream keeps its member, as 3.10.8's tool shrinks no stream), and the node is no longer
    one of the cluster's. Call it holding the broker still.

    Raises:
        MembershipRefused: ``node_running``: it runs (stop it first); ``not_a_cluster_node``:
            it is not one of the cluster's; ``last_node``: it is the cluster's only node.
    """
    if node not in broker.nodes:
        raise MembershipRefused("not_a_cluster_node")
    if node.running:
        raise MembershipRefused("node_running")
    if len(broker.nodes) == 1:
        raise MembershipRefused("last_node")
    for vhost in broker.vhosts.values():
        for queue in list(vhost.queues.values()):
            placement = queue.placement
            if node not in placement.members:
                continue
            if not queue.type.replicated:
                lost = queue.messages
                vhost.delete_queue_object(queue)
                _history.left(broker.clock, queue, lost, "lost")
            elif queue.type.name == "quorum" and len(placement.members) > 1:
                members = tuple(n for n in placement.members if n is not node)
                leader = placement.leader if placement.leader is not node else next(
                    (n for n in members if n.running), members[0])
                queue.placement = Placement(leader, members, placement.term + (
                    leader is not placement.leader))
    broker.nodes.remove(node)
    broker.nodes_down = not all(n.running for n in broker.nodes) or not broker.network.whole
