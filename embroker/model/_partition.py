"""A network partition between the nodes of a cluster, handled as RabbitMQ 3.10.8 handles it by
default (``cluster_partition_handling = ignore``), as a three-node cluster of it showed (one node
cut off from the two others, then connected again; tests/model/test_partition.py).

Theory of operation
-------------------
Two relations between nodes say what a partition changes (:class:`Network`):

- whether two nodes **reach** each other over the network (:meth:`Network.connected`): what a
  quorum queue's or a stream's members need to form a majority (Raft, Osiris);
- whether each **counts** the other among its running nodes (:meth:`Network.sees`): mnesia's
  ``running_db_nodes``, which decides whether a classic queue's home is up for a client.

:meth:`Network.split` cuts both between the sides. What each side's clients then see:

- a **classic** queue homed on the other side is *down* for them, as if its node had stopped:
  404 "home node ... is down or inaccessible" for a durable one, 404 "no queue ..." for a
  transient one (``rabbit_amqqueue:on_node_down/1`` deleted it from their side's records); a
  publish from their side does not reach it (returned when mandatory). Its consumers on the
  other side are cancelled, and what they had not acknowledged goes back to it, redelivered
  (the queue process saw their channels go down); on its own side it carries on.
- a **quorum** queue or **stream** goes on where a majority of its members is: led by one of
  them (the leader if it is there, else the next member there); its consumers on the other side
  are *suspected* (rabbit_fifo's ``{down, Pid, noconnection}``): not cancelled, served nothing,
  and what they had not acknowledged is returned to the queue with its delivery count raised.
  From a side without a majority it takes nothing, as a quorum queue without a majority of
  running members (:mod:`._cluster`): a publish is nacked, a get, consume or purge ends the
  connection with 541, a new quorum queue is refused.

:meth:`Network.heal` brings the network back. Raft heals on its own (the suspected consumers are
served again: ``{nodeup, Node}``), but mnesia does not: each node keeps the others it stopped
counting as *partitioned* (``rabbit_node_monitor:partitions/0``, the management API's
``partitions``, ``rabbitmqctl cluster_status``'s "Network Partitions"), and classic queues stay
down across, until the node of the other side restarts (``stop_app``, ``start_app``): it then
counts, and is counted by, every node it reaches again (it rejoins the cluster).

RabbitMQ keeps one copy of its metadata per side, and each side's changes during the partition
are its own (the restarted side loses its own); embroker keeps one: what a client declares or
deletes on one side is seen on both (a documented difference).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, final

if TYPE_CHECKING:
    from ._broker import Broker
    from ._channel import Channel
    from ._node import Node
    from ._queue import Queue

__all__ = ["Network", "healed", "partitioned"]


@final
class Network:
    """Which nodes of a broker's cluster reach and count each other (see the module)."""

    __slots__ = ("_broker", "_cut", "_uncounted")

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        #: The pairs of nodes the network does not join.
        self._cut: set[frozenset[Node]] = set()
        #: The pairs of nodes that do not count each other as running (mnesia's view).
        self._uncounted: set[frozenset[Node]] = set()

    @property
    def split_network(self) -> bool:
        """Whether the network between some nodes is cut (:meth:`split`, until :meth:`heal`)."""
        return bool(self._cut)

    @property
    def whole(self) -> bool:
        """Whether every node reaches and counts every other (no partition, none left)."""
        return not self._cut and not self._uncounted

    def connected(self, a: Node, b: Node) -> bool:
        """Whether ``a`` and ``b`` reach each other over the network."""
        return a is b or frozenset((a, b)) not in self._cut

    def sees(self, a: Node, b: Node) -> bool:
        """Whether ``a`` counts ``b`` among its cluster's running nodes (and ``b`` is running):
        whether a classic queue homed on ``b`` is up for ``a``'s clients."""
        return b.running and (a is b or frozenset((a, b)) not in self._uncounted)

    def partitions(self, node: Node) -> list[Node]:
        """The nodes ``node`` reaches again but no longer counts (``partitions`` of
        ``/api/nodes``), in the cluster's order."""
        return [other for other in self._broker.nodes if other is not node
                and frozenset((node, other)) in self._uncounted
                and frozenset((node, other)) not in self._cut]

    def sides(self, given: Iterable[Iterable[Node | str]]) -> list[list[Node]]:
        """The sides ``given`` names (nodes or their names), the nodes named in none forming
        one more.

        Raises:
            ValueError: a name is not a node of the cluster, a node is named twice, or the
                sides leave no node for another side (one side of every node is no partition).
        """
        nodes = self._broker.nodes
        by_name = {node.name: node for node in nodes}
        sides: list[list[Node]] = []
        named: set[Node] = set()
        for side in given:
            found: list[Node] = []
            for item in side:
                node = by_name.get(item) if isinstance(item, str) else item
                if node is None or node not in nodes:
                    raise ValueError(f"{item} is not a node of this cluster; its nodes are "
                                     f"{', '.join(by_name)}")
                if node in named:
                    raise ValueError(f"{node} is on two sides of the partition")
                named.add(node)
                found.append(node)
            if found:
                sides.append(found)
        rest = [node for node in nodes if node not in named]
        if rest:
            sides.append(rest)
        if len(sides) < 2:
            raise ValueError("a partition needs two sides: every node is on one side")
        return sides

    def split(self, sides: Sequence[Sequence[Node]]) -> None:
        """Cut the network, and each node's count of the others, between ``sides``."""
        for index, side in enumerate(sides):
            for other in sides[index + 1:]:
                for a in side:
                    for b in other:
                        pair = frozenset((a, b))
                        self._cut.add(pair)
                        self._uncounted.add(pair)

    def heal(self) -> None:
        """The network is back; what the nodes count stays (``ignore``)."""
        self._cut.clear()

    def rejoined(self, node: Node) -> None:
        """``node`` started again: it counts, and is counted by, every node it reaches."""
        self._uncounted = {pair for pair in self._uncounted
                           if node not in pair or not self.connected(*pair)}

    def majority_side(self, members: Sequence[Node], viewer: Node) -> bool:
        """Whether a majority of ``members`` runs and reaches ``viewer``."""
        return sum(1 for m in members if m.running and self.connected(viewer, m)) * 2 > len(
            members)


def partitioned(broker: Broker, sides: Sequence[Sequence[Node]]) -> None:
    """Cut the network between ``sides`` and tell every queue (see the module). Under the
    broker's lock."""
    from ._cluster import elect  # (a cycle: _cluster needs the queues)
    network = broker.network
    network.split(sides)
    broker.nodes_down = True
    for vhost in broker.vhosts.values():
        for queue in list(vhost.queues.values()):
            if queue.deleted or queue.down:
                continue
            if queue.type.replicated:
                elect(queue)
                _suspect_unreachable(queue)
            else:
                _drop_unseen(queue)


def healed(broker: Broker) -> None:
    """The network is back: quorum queues and streams serve their suspected consumers again
    (``{nodeup, Node}``); what the nodes count stays. Under the broker's lock."""
    from ._cluster import elect  # (a cycle: _cluster needs the queues)
    network = broker.network
    if not network.split_network:
        return
    network.heal()
    broker.nodes_down = not all(node.running for node in broker.nodes) or not network.whole
    for vhost in broker.vhosts.values():
        for queue in list(vhost.queues.values()):
            if queue.type.replicated and not queue.deleted:
                elect(queue)
                queue.trust_consumers()


def _suspect_unreachable(queue: Queue) -> None:
    # rabbit_fifo {down, Pid, noconnection}: each consumer whose node the leader no longer
    # reaches is suspected (served nothing) and what it holds goes back, its delivery count
    # raised; one whose channel holds deliveries without a consumer (basic.get) likewise.
    network = queue.vhost.broker.network
    leader = queue.placement.leader
    for consumer in queue.consumers:  # (first: what goes back is not theirs again)
        if not network.connected(consumer.channel.connection.node, leader):
            queue.suspect(consumer)
    for channel in _channels_holding(queue):
        if not network.connected(channel.connection.node, leader):
            queue.requeue(channel.release(queue), closed=True)


def _drop_unseen(queue: Queue) -> None:
    # A classic queue's process sees the channels of the other side go down: their consumers
    # end (basic.cancel), what they hold goes back, redelivered.
    network = queue.vhost.broker.network
    home = queue.placement.leader
    events = queue.vhost.broker.plugins.events
    for consumer in queue.consumers:
        if not network.sees(consumer.channel.connection.node, home):
            queue.remove_consumer(consumer, dispatch=False)
            if events is not None:
                events.consumer_deleted(consumer, None)
            consumer.channel.cancel_by_broker(consumer)
    for channel in _channels_holding(queue):
        if not network.sees(channel.connection.node, home):
            queue.requeue(channel.release(queue), closed=True)
    if queue.consumer_count:
        queue.dispatch()


def _channels_holding(queue: Queue) -> list[Channel]:
    # The channels with deliveries of ``queue`` not settled.
    return [channel for connection in queue.vhost.broker.connections.values()
            for channel in connection.channels.values()
            if any(unacked.queue is queue for unacked in channel.outstanding())]
