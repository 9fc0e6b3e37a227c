"""What a node does for ``rabbitmq-queues`` (:mod:`._queues_cli`): the operations behind its
commands, each through :mod:`embroker.model._membership` under the broker's lock.

An operation answers a JSON value; a refusal RabbitMQ's function returns as ``{error, Reason}``
is answered as ``{"error": "REASON"}`` (the tool prints it by its own rules), a missing queue as
``{"error": "not_found"}``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..model import _membership
from ._ops import _text, operation

if TYPE_CHECKING:
    from ..model import Broker, Queue
    from ..model import Node as ModelNode
    from ._node import Node

__all__: list[str] = []


def _queue(broker: Broker, arguments: dict[str, Any]) -> Queue | None:
    vhost = broker.vhosts.get(_text(arguments, "vhost", "/"))
    return None if vhost is None else vhost.queues.get(_text(arguments, "queue"))


def _node(broker: Broker, name: str) -> ModelNode | None:
    return next((node for node in broker.nodes if node.name == name), None)


def _model_node(node: Node) -> ModelNode:
    return node.server.node


def _results(results: list[_membership.Result]) -> list[dict[str, Any]]:
    return [{"vhost": queue.vhost.name, "name": queue.name, "size": size, "error": error}
            for queue, size, error in results]


@operation("quorum_status")
def _quorum_status(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        queue = _queue(broker, arguments)
        if queue is None:
            return {"error": "not_found"}
        try:
            found = _membership.quorum_status(queue)
        except _membership.MembershipRefused as refused:
            return {"error": refused.reason}
        # (a member that cannot be asked: its columns empty; no snapshot: undefined)
        return {"members": [
            {"Node Name": m.node.name, "Raft State": m.raft_state, "Log Index": m.log_index,
             "Commit Index": m.commit_index,
             "Snapshot Index": "undefined" if m.snapshot_index is None else m.snapshot_index,
             "Term": m.term, "Machine Version": m.machine_version} if m.term is not None else
            {"Node Name": m.node.name, "Raft State": m.raft_state, "Log Index": "",
             "Commit Index": "", "Snapshot Index": "", "Term": "", "Machine Version": ""}
            for m in found]}


def _change_member(node: Node, arguments: dict[str, Any], *, adding: bool) -> Any:
    broker = node.broker
    with broker.locked():
        queue = _queue(broker, arguments)
        if queue is None:
            return {"error": "not_found"}
        target = _node(broker, _text(arguments, "node"))
        try:
            if target is None:  # (no node of the cluster: a classic queue, a stream refused
                # first; then nothing to add to, nothing to remove)
                _membership.quorum_status(queue)
                if adding:
                    raise _membership.MembershipRefused("node_not_running")
            elif adding:
                _membership.add_member(queue, target)
            else:
                _membership.delete_member(queue, target)
        except _membership.MembershipRefused as refused:
            return {"error": refused.reason}
        return {}


@operation("add_member")
def _add_member(node: Node, arguments: dict[str, Any]) -> Any:
    return _change_member(node, arguments, adding=True)


@operation("delete_member")
def _delete_member(node: Node, arguments: dict[str, Any]) -> Any:
    return _change_member(node, arguments, adding=False)


@operation("grow")
def _grow(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        target = _node(broker, _text(arguments, "node"))
        if target is None:
            return []
        return _results(_membership.grow(
            broker, target, "even" if arguments.get("strategy") == "even" else "all",
            vhost_pattern=_text(arguments, "vhost_pattern", ".*"),
            queue_pattern=_text(arguments, "queue_pattern", ".*")))


@operation("shrink")
def _shrink(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        target = _node(broker, _text(arguments, "node"))
        return [] if target is None else _results(_membership.shrink(broker, target))


@operation("quorum_critical")
def _quorum_critical(node: Node, arguments: dict[str, Any]) -> Any:
    """``check_if_node_is_quorum_critical``: ``single_node_cluster``, or the queues (as
    ``list_with_minimum_quorum_for_cli/0`` describes them)."""
    broker = node.broker
    with broker.locked():
        if len(broker.nodes) == 1:
            return "single_node_cluster"
        return [{"readable_name": f"queue '{q.name}' in vhost '{q.vhost.name}'",
                 "name": q.name, "virtual_host": q.vhost.name, "type": "quorum"}
                for q in _membership.quorum_critical(broker, _model_node(node))]


@operation("single_node_cluster")
def _single_node_cluster(node: Node, arguments: dict[str, Any]) -> Any:
    return len(node.broker.nodes) == 1


@operation("rebalance")
def _rebalance(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    kind = _text(arguments, "type")
    with broker.locked():
        summary = _membership.rebalance(
            broker, "classic" if kind == "classic" else "quorum" if kind == "quorum" else "all",
            vhost_pattern=_text(arguments, "vhost_pattern", ".*"),
            queue_pattern=_text(arguments, "queue_pattern", ".*"))
    return [{"Node name": n.name, "Number of quorum queues": quorum,
             "Number of replicated classic queues": classic} for n, quorum, classic in summary]
