"""Queue types, as RabbitMQ's ``rabbit_queue_type`` behaviour has them: what each type is called,
what it takes, and where a new queue of it lives in the cluster.

Theory of operation
-------------------
A queue's type (:attr:`Queue.type <embroker.model.Queue.type>`) is one of :data:`QUEUE_TYPES`,
picked by its ``x-queue-type``. Each type says what RabbitMQ 3.10.8's module of it says:

- its name and module (``classic``, ``rabbit_classic_queue``...), which refusals and listings
  quote;
- its capabilities (``capabilities/0``): the queue arguments it takes, the consumer arguments,
  the policies that do not apply to it, whether a server-named queue may be of it;
- whether it can be durable, exclusive or auto-delete (``is_compatible/3``);
- where a new queue lives (:meth:`QueueType.place`, ``declare/2``): a classic queue on one
  node (its home), a quorum queue and a stream on a group of members with one leader
  (:class:`Placement`).

Placement follows RabbitMQ 3.10.8 (``rabbit_classic_queue:declare/2`` with
``rabbit_queue_master_location_misc``; ``rabbit_quorum_queue:declare/2``,
``rabbit_stream_queue:declare/2`` with ``rabbit_queue_location``) and is deterministic: where
RabbitMQ picks at random or among equals, the nodes' order decides (``random`` draws from the
broker's seeded source).

- A classic queue lives on the declaring node (``client-local``) unless its
  ``x-queue-master-locator`` argument or ``queue-master-locator`` policy says ``min-masters``
  (the node homing the fewest classic queues) or ``random``; an exclusive queue always lives
  on the declaring node.
- A quorum queue has ``x-quorum-initial-group-size`` members (3 by default: RabbitMQ's
  ``quorum_cluster_size``; the argument only, no policy, in 3.10), a stream
  ``initial-cluster-size`` ones (the policy over the argument; every node by default): every
  node when that is the whole cluster, else the declaring node, then the running nodes before
  the stopped ones, fewest members first (ties by name). Its leader is the declaring node
  (``client-local``, the default) or, with ``queue-leader-locator`` (the policy over the
  argument) ``balanced`` (or ``random``, ``least-leaders``, which 3.10 maps to it), the running
  member leading the fewest queues.

In a cluster of one node every queue lives on it, as before there were nodes.

What each type decides, and where
---------------------------------
Nothing outside these types tests a queue's type as a flag: whatever differs by type is asked
of the type, or done by the queue's class, which ``Queue(...)`` takes from its type
(:meth:`QueueType.queue_class`; RabbitMQ's split between the ``rabbit_queue_type`` modules and
the processes behind them: ``rabbit_fifo``, ``osiris``).

- Settings (this module): which names exist, the arguments each takes and whether it may be
  server-named or durable, exclusive, auto-delete (``_arguments`` and the vhost ask at declare
  time); which policies apply (:meth:`QueueType.unsupported_policies`, ``capabilities/0``);
  how its arguments and policies combine (:meth:`QueueType.settings`: the classic or quorum
  precedence of ``_policy``; a stream then takes its retention alone, :mod:`._queue_stream`).
- Refusals (this module, asked by the channel before it acts, ``rabbit_stream_queue``'s
  texts): a stream refuses queue.purge, basic.get, a consumer with ``x-priority``, without a
  prefetch, with automatic acknowledgement or on a channel with a global qos, basic.nack and
  basic.reject, a publish while it has no leader, and keeps rolled-back acknowledgements
  unacknowledged (:attr:`QueueType.requeues`); a quorum queue is not created without a
  majority of its members (:meth:`QueueType.declarable`).
- Delivery (the queue's class): a classic queue is :class:`~._queue.Queue` itself, its hot
  paths free of type tests; :class:`~._queue_quorum.QuorumQueue` counts deliveries
  (``x-delivery-count``, ``x-delivery-limit``, a requeue to the back without a limit) and
  blocks its publishers over a limit; :class:`~._queue_stream.StreamQueue` appends to its log
  and delivers each consumer from its own offset. A channel asks the class's
  ``rewrites_deliveries`` and ``keeps_annotations`` before it calls ``outgoing``.
- Listings (this module): what a listing shows of a queue's messages
  (:meth:`QueueType.message_counts`: a stream's log, none of them taken).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, cast, final

from ..errors import NotImplementedAMQP, PreconditionFailed
from ._policy import Policy, QueueSettings, queue_settings
from ._stream import parse_offset_spec

if TYPE_CHECKING:
    from ._node import Node
    from ._queue import Queue
    from ._queue_stream import StreamQueue

__all__ = ["QUEUE_TYPES", "Placement", "QueueType"]

#: ``quorum_cluster_size``: a quorum queue's members without ``x-quorum-initial-group-size``.
QUORUM_CLUSTER_SIZE: Final = 3
#: The classic queue's mirroring keys, which neither a quorum queue nor a stream takes.
_MIRRORING: Final = ("ha-mode", "ha-params", "ha-sync-mode", "ha-promote-on-shutdown",
                     "ha-promote-on-failure", "queue-master-locator")


@final
@dataclass(frozen=True, slots=True)
class Placement:
    """Where a queue lives: its leader (a classic queue's home) and its members, the leader
    among them (a classic queue's: its home alone); ``term``: how many leaders it has had
    (Raft's term: each election or transfer of leadership starts a new one)."""

    leader: Node
    members: tuple[Node, ...]
    term: int = 1


class QueueType:
    """A queue type (``rabbit_queue_type``): see the module's notes. One instance per type,
    shared by its queues."""

    name: ClassVar[str]
    module: ClassVar[str]
    #: ``capabilities/0``'s ``queue_arguments``: the ``x-`` arguments it takes, in RabbitMQ's
    #: order (:meth:`equivalence_keys`), and as a set.
    queue_argument_order: ClassVar[tuple[str, ...]]
    #: What RabbitMQ 4 adds to them.
    queue_arguments_4: ClassVar[tuple[str, ...]] = ()
    #: Whether a restart keeps every message, transient ones too (a quorum queue's Raft log
    #: and a stream's keep them all; live on 3.10.8: a transient message published to a
    #: quorum queue is there after ``stop_app``, ``start_app``), not only the persistent ones.
    keeps_every_message: ClassVar[bool] = False
    queue_arguments: ClassVar[frozenset[str]]
    #: ``consumer_arguments``.
    consumer_arguments: ClassVar[frozenset[str]]
    #: ``server_named``: whether a server-named queue may be of this type.
    server_named: ClassVar[bool] = False
    #: ``unsupported_policies``: a policy with one of these keys does not apply to a queue of
    #: this type (RabbitMQ 3.10.8; ``_4``: 4.1.4's).
    unsupported_policies_3: ClassVar[frozenset[str]]
    unsupported_policies_4: ClassVar[frozenset[str]]
    #: Whether it replicates (members and a leader) or lives on one node.
    replicated: ClassVar[bool] = True
    #: Whether a settlement may put a message back (``settle/5``'s requeue).
    requeues: ClassVar[bool] = True

    __slots__ = ()

    def unsupported_policies(self, *, rabbitmq4: bool) -> frozenset[str]:
        """The policy keys that make a policy not apply to a queue of this type."""
        return self.unsupported_policies_4 if rabbitmq4 else self.unsupported_policies_3

    def is_compatible(self, *, durable: bool, exclusive: bool, auto_delete: bool) -> bool:
        """``is_compatible/3``: a replicated queue is durable, neither exclusive nor
        auto-delete."""
        return durable and not exclusive and not auto_delete

    def place(self, queue: Queue, local: Node) -> Placement:
        """Where ``queue``, declared on node ``local``, lives (``declare/2``)."""
        nodes = queue.vhost.broker.nodes
        if len(nodes) == 1:
            return Placement(local, (local,))
        replicas = _replicas(queue, local, self.group_size(queue, len(nodes)))
        locator = _setting(queue, "queue-leader-locator", policy_first=True)
        if locator in ("balanced", "random", "least-leaders"):
            running = [n for n in replicas if n.running] or list(replicas)
            leader = min(running, key=lambda n: (_leading(queue, n), nodes.index(n)))
        else:
            leader = local if local in replicas else replicas[0]
        # (the queue's nodes: [Leader | Followers], rabbit_quorum_queue:declare/2)
        return Placement(leader, (leader, *(n for n in replicas if n is not leader)))

    def group_size(self, queue: Queue, cluster: int) -> int:
        raise NotImplementedError

    def equivalence_keys(self, *, rabbitmq4: bool) -> tuple[str, ...]:
        """What a queue.declare of an existing queue of this type must repeat, in the order
        compared (``rabbit_amqqueue:assert_args_equivalence/2``: the type's queue arguments,
        in its ``capabilities/0`` order)."""
        return self.queue_argument_order + (self.queue_arguments_4 if rabbitmq4 else ())

    def stat(self, queue: Queue) -> tuple[int, int]:
        """``stat/1``: the message and consumer counts a queue.declare-ok reports."""
        return queue.message_count, queue.consumer_count

    def queue_class(self) -> type[Queue]:
        """The class of its queues, which ``Queue(...)`` makes (a classic queue:
        :class:`~._queue.Queue` itself)."""
        from ._queue import Queue  # (a cycle: a queue knows its type)
        return Queue

    def settings(self, arguments: dict[str, Any], policy: Policy | None = None,
                 operator_policy: Policy | None = None, *, rabbitmq4: bool) -> QueueSettings:
        """What applies to a queue of this type with ``arguments`` and these policies: both
        combined by the type's precedence (``_policy``'s table; a stream: the classic one,
        then its own retention, :mod:`._queue_stream`)."""
        return queue_settings(arguments, policy, operator_policy, rabbitmq4=rabbitmq4)

    # -- what it refuses (the channel asks before it acts) -------------------------------------

    def declarable(self, queue: Queue) -> bool:
        """Whether ``queue``, just placed while some node is stopped, may be created
        (``declare/2``): yes, but for a quorum queue or stream without a majority of its
        members."""
        return True

    def check_purge(self, queue: Queue) -> None:
        """``purge/1``: raise if the type has no purge."""

    def check_delete(self, queue: Queue, node: Node | None) -> None:
        """``delete/4``, asked on ``node`` while some node is stopped: raise if the type
        cannot delete ``queue`` now."""

    def check_dequeue(self, queue: Queue) -> None:
        """``dequeue/5``: raise if the type answers no basic.get."""

    def check_consume(self, queue: Queue, arguments: dict[str, Any], *, no_ack: bool,
                      prefetch: int, global_prefetch: int, link_credit: bool) -> None:
        """``consume/3``: raise for a consumer the type refuses (``arguments`` its
        ``basic.consume`` arguments, ``prefetch`` and ``global_prefetch`` its channel's
        limits, ``link_credit`` whether credit, not a prefetch, meters it). The arguments
        first (:meth:`check_consume_arguments`), then, for a quorum queue, global qos."""
        self.check_consume_arguments(queue, arguments)

    def check_consume_arguments(self, queue: Queue, arguments: dict[str, Any]) -> None:
        """``rabbit_amqqueue:check_consume_arguments/3`` (v3.10.8): the type and value of the
        consumer arguments this type takes, then any argument another type takes and this
        one does not, in the order given: 406 "invalid arg 'x-stream-offset' for queue 'q'
        in vhost '/' of queue type rabbit_classic_queue"."""
        from ._arguments import validate_consumer_arguments  # (it needs QUEUE_TYPES)
        validate_consumer_arguments(queue.resource, arguments, self.consumer_arguments)
        others = _EVERY_CONSUMER_ARGUMENT - self.consumer_arguments
        for key in arguments:
            if key in others:
                raise PreconditionFailed(f"invalid arg '{key}' for {queue.resource} of queue "
                                         f"type {self.module}")

    def check_return(self, queue: Queue) -> None:
        """``settle/5`` with a requeue or discard (basic.nack, basic.reject): raise if the
        type takes acks only."""

    def check_leaderless_publish(self, queue: Queue) -> None:
        """A publish to ``queue`` while it has no leader: raise if the type answers it with an
        error before the message goes anywhere."""

    # -- what it shows --------------------------------------------------------------------------

    def message_counts(self, queue: Queue, unacked: tuple[int, int],
                       ) -> tuple[int, int, int, int, int, int]:
        """What a listing shows of ``queue``'s messages (``info/2``): ready, their bytes,
        unacknowledged (``unacked``: count and bytes, as the caller counted them), their
        bytes, persistent ready ones and their bytes (a durable queue's)."""
        ready = queue.message_count
        persistent = queue.persistent if queue.durable and ready else (0, 0)
        return ready, queue.message_bytes, unacked[0], unacked[1], persistent[0], persistent[1]

    def __repr__(self) -> str:
        return f"<queue type {self.name}>"


@final
class ClassicType(QueueType):
    """``rabbit_classic_queue``: one node, its home."""

    name = "classic"
    module = "rabbit_classic_queue"
    #: capabilities/0's queue_arguments in RabbitMQ 3.10.8's order (a redeclare compares
    #: them in it; 4.x adds x-queue-leader-locator).
    queue_argument_order = (
        "x-expires", "x-message-ttl", "x-dead-letter-exchange", "x-dead-letter-routing-key",
        "x-max-length", "x-max-length-bytes", "x-max-priority", "x-overflow", "x-queue-mode",
        "x-queue-version", "x-single-active-consumer", "x-queue-type", "x-queue-master-locator")
    queue_arguments_4 = ("x-queue-leader-locator",)
    queue_arguments = frozenset(queue_argument_order)
    consumer_arguments = frozenset(("x-cancel-on-ha-failover", "x-priority", "x-credit"))
    server_named = True
    replicated = False
    unsupported_policies_3 = frozenset((
        "max-age", "stream-max-segment-size-bytes", "queue-leader-locator",
        "initial-cluster-size", "delivery-limit", "dead-letter-strategy"))
    #: (4.1.4: a classic queue takes queue-leader-locator and refuses the quorum queues'
    #: in-memory limits and target-group-size)
    unsupported_policies_4 = frozenset((
        "max-age", "stream-max-segment-size-bytes", "initial-cluster-size", "delivery-limit",
        "dead-letter-strategy", "max-in-memory-length", "max-in-memory-bytes",
        "target-group-size"))

    def is_compatible(self, *, durable: bool, exclusive: bool, auto_delete: bool) -> bool:
        return True

    def place(self, queue: Queue, local: Node) -> Placement:
        nodes = queue.vhost.broker.nodes
        home = local
        if len(nodes) > 1 and not queue.exclusive:
            strategy = _setting(queue, "queue-master-locator", policy_first=False)
            running = [n for n in nodes if n.running] or list(nodes)
            if strategy == "min-masters":
                home = min(running, key=lambda n: (_leading(queue, n), nodes.index(n)))
            elif strategy == "random":
                home = running[queue.vhost.broker.plugins.random.randrange(len(running))]
        return Placement(home, (home,))


@final
class QuorumType(QueueType):
    """``rabbit_quorum_queue``: members replicating one log, one of them the leader."""

    name = "quorum"
    module = "rabbit_quorum_queue"
    queue_argument_order = (
        "x-dead-letter-exchange", "x-dead-letter-routing-key", "x-dead-letter-strategy",
        "x-expires", "x-max-length", "x-max-length-bytes", "x-max-in-memory-length",
        "x-max-in-memory-bytes", "x-overflow", "x-single-active-consumer", "x-queue-type",
        "x-quorum-initial-group-size", "x-delivery-limit", "x-message-ttl",
        "x-queue-leader-locator")
    queue_arguments = frozenset(queue_argument_order)
    keeps_every_message = True
    consumer_arguments = frozenset(("x-priority", "x-credit"))
    unsupported_policies_3 = unsupported_policies_4 = frozenset((
        "max-priority", "queue-mode", "single-active-consumer", *_MIRRORING, "max-age",
        "stream-max-segment-size-bytes", "initial-cluster-size"))

    def group_size(self, queue: Queue, cluster: int) -> int:
        size = queue.arguments.get("x-quorum-initial-group-size")
        return min(cluster, size if isinstance(size, int) else QUORUM_CLUSTER_SIZE)

    def settings(self, arguments: dict[str, Any], policy: Policy | None = None,
                 operator_policy: Policy | None = None, *, rabbitmq4: bool) -> QueueSettings:
        return queue_settings(arguments, policy, operator_policy, quorum=True,
                              rabbitmq4=rabbitmq4)

    def queue_class(self) -> type[Queue]:
        from ._queue_quorum import QuorumQueue
        return QuorumQueue

    def declarable(self, queue: Queue) -> bool:
        from ._cluster import quorate  # (a cycle: _cluster needs the queue)
        return quorate(queue)

    def check_consume(self, queue: Queue, arguments: dict[str, Any], *, no_ack: bool,
                      prefetch: int, global_prefetch: int, link_credit: bool) -> None:
        # rabbit_quorum_queue:consume/3 (v3.10.8): a channel whose limiter is active (global
        # qos) is refused, {error, global_qos_not_supported_for_queue_type}, which
        # rabbit_channel answers 540 (the connection ends)
        self.check_consume_arguments(queue, arguments)
        if global_prefetch:
            raise NotImplementedAMQP(f"{queue.resource} does not support global qos")


@final
class StreamType(QueueType):
    """``rabbit_stream_queue``: a replicated log, one writer (the leader) and its replicas."""

    name = "stream"
    module = "rabbit_stream_queue"
    queue_argument_order = ("x-max-length-bytes", "x-queue-type", "x-max-age",
                            "x-stream-max-segment-size-bytes", "x-initial-cluster-size",
                            "x-queue-leader-locator")
    queue_arguments = frozenset(queue_argument_order)
    keeps_every_message = True
    consumer_arguments = frozenset(("x-stream-offset", "x-credit"))
    unsupported_policies_3 = frozenset((
        "expires", "message-ttl", "dead-letter-exchange", "dead-letter-routing-key",
        "max-length", "max-in-memory-length", "max-in-memory-bytes", "max-priority", "overflow",
        "queue-mode", "single-active-consumer", "delivery-limit", *_MIRRORING,
        "dead-letter-strategy"))
    unsupported_policies_4 = unsupported_policies_3 | {"target-group-size"}
    requeues = False

    def group_size(self, queue: Queue, cluster: int) -> int:
        size = _setting(queue, "initial-cluster-size", policy_first=True)
        return min(cluster, size) if isinstance(size, int) and size > 0 else cluster

    def stat(self, queue: Queue) -> tuple[int, int]:
        # v3.10.8 rabbit_stream_queue:stat/1 answers {ok, Messages, 0}: a stream's declare-ok
        # counts no consumers, however many read it.
        return queue.message_count, 0

    def queue_class(self) -> type[Queue]:
        from ._queue_stream import StreamQueue
        return StreamQueue

    def check_delete(self, queue: Queue, node: Node | None) -> None:
        # rabbit_stream_queue:delete/4: the coordinator needs a majority (live, after 30 s)
        from ._cluster import no_majority, quorate  # (a cycle: _cluster needs the queue)
        if not quorate(queue):
            raise no_majority(queue, "delete", node)

    def declarable(self, queue: Queue) -> bool:
        # rabbit_stream_queue:declare/2: the coordinator needs a majority (live, after 30 s:
        # 541 {error,coordinator_unavailable}; embroker asks the stream's own members)
        from ._cluster import quorate  # (a cycle: _cluster needs the queue)
        return quorate(queue)

    def check_purge(self, queue: Queue) -> None:
        raise NotImplementedAMQP(f"queue.purge not supported by stream queues {queue.resource}")

    def check_dequeue(self, queue: Queue) -> None:
        raise NotImplementedAMQP(f"basic.get not supported by stream queues {queue.resource}")

    def check_consume(self, queue: Queue, arguments: dict[str, Any], *, no_ack: bool,
                      prefetch: int, global_prefetch: int, link_credit: bool) -> None:
        # rabbit_stream_queue:consume/3 (v3.10.8): after the arguments, these checks in this
        # order; then the x-stream-offset argument is read when the consumer joins
        # (Queue.add_consumer).
        self.check_consume_arguments(queue, arguments)
        if not prefetch and not link_credit:
            raise PreconditionFailed(
                f"consumer prefetch count is not set for '{queue.resource}'")
        if no_ack:
            raise NotImplementedAMQP(
                f"automatic acknowledgement not supported by stream queues {queue.resource}")
        if global_prefetch:
            raise NotImplementedAMQP(f"{queue.resource} does not support global qos")
        parse_offset_spec(arguments.get("x-stream-offset"),
                          cast("StreamQueue", queue).log.now_ms())

    def check_return(self, queue: Queue) -> None:
        # (settle/5: a stream takes acks only)
        raise NotImplementedAMQP("basic.nack and basic.reject not supported by stream "
                                 f"queues {queue.resource}")

    def check_leaderless_publish(self, queue: Queue) -> None:
        from ._cluster import no_majority
        raise no_majority(queue, "publish")

    def message_counts(self, queue: Queue, unacked: tuple[int, int],
                       ) -> tuple[int, int, int, int, int, int]:
        # the messages its log keeps, none of them "taken"
        log = cast("StreamQueue", queue).log
        return len(log), log.size, 0, 0, 0, 0


#: Every queue type by its ``x-queue-type`` name.
QUEUE_TYPES: Final[dict[str, QueueType]] = {
    t.name: t for t in (ClassicType(), QuorumType(), StreamType())}
#: ``rabbit_queue_type:arguments(consumer_arguments)``: what any type takes.
_EVERY_CONSUMER_ARGUMENT: Final = frozenset().union(
    *(t.consumer_arguments for t in QUEUE_TYPES.values()))


def _setting(queue: Queue, key: str, *, policy_first: bool) -> object:
    # A placement setting from the queue's argument (x-KEY) and its policy (KEY): which wins
    # is the type's (rabbit_queue_type_util:args_policy_lookup/3 with policy_precedence for the
    # leader locator and a stream's size; the argument first for a classic queue's locator).
    argument = queue.arguments.get(f"x-{key}")
    policy = queue.policy.definition.get(key) if queue.policy is not None else None
    first, second = (policy, argument) if policy_first else (argument, policy)
    return first if first is not None else second


def _replicas(queue: Queue, local: Node, size: int) -> tuple[Node, ...]:
    # rabbit_queue_location:select_replicas/6: every node when the group is as large as the
    # cluster (in the cluster's order, as mnesia lists it: the latest to join first); else the
    # declaring node, then the running nodes before the stopped ones, those with the fewest
    # members first, ties by name (the counters map's order).
    nodes: Sequence[Node] = queue.vhost.broker.nodes
    if size >= len(nodes):
        return tuple(reversed(nodes))
    others = sorted((n for n in nodes if n is not local),
                    key=lambda n: (not n.running, _membership(queue, n), n.name))
    return (local, *others[:size - 1])


def _leading(queue: Queue, node: Node) -> int:
    # How many of the cluster's other queues (of any type: the queues a node leads or homes)
    # ``node`` leads.
    return sum(1 for vhost in queue.vhost.broker.vhosts.values()
               for other in vhost.queues.values()
               if other is not queue and other.placement.leader is node)


def _membership(queue: Queue, node: Node) -> int:
    return sum(1 for vhost in queue.vhost.broker.vhosts.values()
               for other in vhost.queues.values()
               if other is not queue and node in other.placement.members)
