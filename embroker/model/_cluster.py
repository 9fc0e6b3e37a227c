"""What happens to the queues when a node of the cluster stops and starts (``rabbitmqctl -n NODE
stop_app``/``start_app``), as RabbitMQ 3.10.8 does it, checked against a three-node cluster of
it (tests/cluster).

Theory of operation
-------------------
A node that stops closes its clients' connections (320 CONNECTION_FORCED "broker forced
connection closure with reason 'shutdown'"); then each queue it is part of is told
(:func:`node_stopped`), by its type:

- A **classic** queue homed there: its process ends. A transient one (exclusive or not durable)
  is deleted with its bindings (``rabbit_amqqueue:on_node_down/1``). A durable one (auto-delete
  or not) keeps its record, bindings included, and is *down*: its consumers elsewhere are
  cancelled (basic.cancel), deliveries they did not settle are no longer theirs (a later ack or
  reject of them changes nothing), and every operation on it from another node is refused with
  404 "home node 'N' of durable queue 'q' in vhost '/' is down or inaccessible" (declare,
  passive or not, consume, get, purge, bind, unbind, delete); a publish routed to it reaches
  nothing (returned as NO_ROUTE when mandatory, confirmed). When the node starts again the queue
  is back (:func:`node_started`) with what a restart keeps: its persistent messages, those its
  consumers had not acknowledged first again, marked redelivered.
- A **quorum** queue or a **stream** with a majority of its members still running goes on: if
  the stopped node led it, the next running member leads it (``placement.leader``; Ra elects
  whichever member times out first, embroker the next in the members' order). Without a
  majority (:func:`quorate`) it takes nothing: a publish to a quorum queue is nacked (not
  enqueued), one to a stream ends the connection with 506 RESOURCE_ERROR "Stream coordinator
  unavailable for queue ..."; basic.get, basic.consume and queue.purge end it with 541
  INTERNAL_ERROR (get: "Cannot get a message from queue ...: noproc"); declare and delete still
  answer, but a new quorum queue whose members have no majority is refused with 541
  "... cluster_not_formed", a new stream with 541 "... {error,coordinator_unavailable}", and
  so is a stream's delete.
  RabbitMQ gets there through timeouts (5 s for a delete, 30 s for a purge, 65 s for a get, a
  consume or a new channel's confirm; a stream's publish, consume and declare 30 s);
  embroker answers at once. The majority back, it goes on with
  what it held.

The queue that comes back is a new :class:`~._queue.Queue` object (RabbitMQ starts a new queue
process and recovers it from disk); the old one is deleted, so whatever still refers to it
(a channel's unsettled deliveries) finds it gone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InternalError, ResourceError
from . import _history
from ._exchange import Binding
from ._queue import Queue
from ._queue_type import Placement

if TYPE_CHECKING:
    from ._message import QueuedMessage
    from ._node import Node
    from ._vhost import VirtualHost

__all__ = ["elect", "no_majority", "node_started", "node_stopped", "quorate"]


def node_stopped(vhost: VirtualHost, node: Node) -> None:
    """``node`` stopped: each of ``vhost``'s queues that lives on it is told (see the module)."""
    delivered: dict[Queue, list[QueuedMessage]] | None = None
    for queue in list(vhost.queues.values()):
        if node not in queue.placement.members:
            continue
        if not queue.type.replicated:
            if queue.durable and not queue.exclusive:  # (a durable auto-delete one too)
                if delivered is None:
                    delivered = _delivered(vhost)
                _take_down(vhost, queue, delivered.get(queue, []))
            else:
                lost = queue.messages
                vhost.delete_queue_object(queue)
                _history.left(vhost.broker.clock, queue, lost, "lost")
        elif queue.placement.leader is node:
            elect(queue)


def quorate(queue: Queue, viewer: Node | None = None) -> bool:
    """Whether a majority of ``queue``'s members run (a classic queue: its home runs), on the
    side of ``viewer`` (the leader's by default) when the network is partitioned
    (:mod:`._partition`)."""
    placement = queue.placement
    return queue.vhost.broker.network.majority_side(
        placement.members, placement.leader if viewer is None else viewer)


def no_majority(queue: Queue, what: str,
                node: Node | None = None) -> InternalError | ResourceError:
    """What a quorum queue (or stream) without a majority ends a connection with for ``what``
    (``"get"``, ``"consume"``, ``"purge"``, a stream's ``"publish"``, a new quorum queue's or
    stream's ``"declare"``, a stream's ``"delete"``), as RabbitMQ 3.10.8 answers (live, after
    its timeouts): 541, or a stream's 506 for a publish. ``node``: the node that answers (a
    delete's text names it; the leader when not given)."""
    if what == "get":
        return InternalError(f"Cannot get a message from queue '{queue.resource}': noproc")
    if what == "publish":
        return ResourceError(f"Stream coordinator unavailable for {queue.resource}")
    name = (node or queue.placement.leader).name
    if what == "delete":  # (rabbit_stream_queue:delete/4, after 30 s live; its trailing space)
        return InternalError(f"Cannot delete queue '{queue.resource}' on node '{name}': "
                             "{error,coordinator_unavailable} ")
    if what == "declare":
        if queue.type.name == "stream":  # (rabbit_stream_queue:declare/2, after 30 s live)
            return InternalError(f"Cannot declare a queue '{queue.resource}' on node '{name}': "
                                 "{error,coordinator_unavailable}")
        return InternalError(f"Cannot declare quorum queue '{queue.name}' in vhost "
                             f"'{queue.vhost.name}' on node '{name}' with leader on node "
                             f"'{name}': cluster_not_formed")
    return InternalError("")


def node_started(vhost: VirtualHost, node: Node) -> None:
    """``node`` started: its down classic queues are back (see the module)."""
    for queue in list(vhost.queues.values()):
        if queue.down and queue.placement.leader is node:
            queue.down = False
            queue.touch()
            if queue.consumer_count:
                queue.dispatch()
        elif queue.type.replicated and not queue.placement.leader.running:
            elect(queue)  # (a majority again: a leader again)


def elect(queue: Queue) -> None:
    """A replicated queue whose leader's node stopped, or is cut off from a majority of its
    members (:mod:`._partition`), is led by the next running member with a majority on its
    side (Ra elects whichever member times out first); without one, it has no leader until it
    has a majority again (the placement keeps the old leader, which the surfaces show as
    none). A leader that runs with its majority stays."""
    placement = queue.placement
    members = placement.members
    majority = queue.vhost.broker.network.majority_side
    if placement.leader.running and majority(members, placement.leader):
        return
    running = [n for n in members if n.running and majority(members, n)]
    if running:
        queue.placement = Placement(running[0], members, placement.term + 1)


def _take_down(vhost: VirtualHost, queue: Queue, out: list[QueuedMessage]) -> None:
    # The queue's process ends: a new Queue object takes its place, down, with its record
    # (arguments, bindings, policies, placement) and what the node keeps on disk; ``out`` its
    # deliveries not settled.
    for entry in out:
        entry.redelivered = True
    held = [*queue.entries, *out]
    kept = [e for e in held if e.message.properties.get("delivery_mode") == 2]
    _history.left(vhost.broker.clock, queue, [
        e.message for e in held if e.message.properties.get("delivery_mode") != 2], "lost")
    events = vhost.broker.plugins.events
    for consumer in queue.clear_consumers():
        if events is not None:
            events.consumer_deleted(consumer, None)
        consumer.channel.cancel_by_broker(consumer)
    queue.deleted = True
    queue.stop_timers()
    fresh = Queue(vhost, queue.name, durable=True, arguments=dict(queue.arguments))
    fresh.placement, fresh.down = queue.placement, True
    fresh.protocol_state = queue.protocol_state
    fresh.default_binding = Binding(vhost.default_exchange, fresh, queue.name, {})
    fresh.default_route = (fresh.default_binding,)
    for binding in list(queue.bindings.values()):
        exchange = binding.source
        exchange.remove_binding(binding.key)
        moved = Binding(exchange, fresh, binding.routing_key, binding.arguments)
        exchange.add_binding(moved)
        fresh.bindings[moved.key] = moved
    vhost.queues[queue.name] = fresh
    vhost.policies.attach(fresh)
    fresh.recover(kept)


def _delivered(vhost: VirtualHost) -> dict[Queue, list[QueuedMessage]]:
    # Each queue's deliveries that channels have not settled (a transaction's held acks too).
    found: dict[Queue, list[QueuedMessage]] = {}
    for connection in vhost.broker.connections.values():
        for channel in connection.channels.values():
            for unacked in channel.outstanding():
                found.setdefault(unacked.queue, []).append(unacked.entry)
    return found
