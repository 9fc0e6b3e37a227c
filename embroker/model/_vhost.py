"""A virtual host: its exchanges, queues and bindings, and routing between them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, final

from typing_extensions import override

from ..errors import (
    AccessRefused,
    AMQPError,
    CommandInvalid,
    InternalError,
    NotFound,
    PreconditionFailed,
    Refusal,
    ResourceLocked,
)
from ..fieldtypes import field_type
from . import _history
from ._arguments import (
    check_equivalent_arguments,
    check_equivalent_field,
    check_equivalent_queue_arguments,
    validate_queue_arguments,
)
from ._cluster import no_majority
from ._deadletter import dead_letter_message, is_dead_letter_cycle
from ._event_exchange import INTERNAL_USER
from ._exchange import EXCHANGE_TYPES, Binding, Bindings, Choice, Exchange, binding_key
from ._message import Message
from ._names import (
    REPLY_TO,
    is_default_exchange,
    is_reply_name,
    nearest,
    random_name,
    reserved,
    resource,
)
from ._policy import Policies, dead_letter_cause
from ._queue import Queue
from ._queue_type import QUEUE_TYPES
from ._sessions import RetainedMessages
from ._stats import MessageStats
from ._trace import RoutingDecision, Visit

if TYPE_CHECKING:
    from ._broker import Broker
    from ._channel import ReplyConsumer
    from ._connection import Connection
    from ._node import Node

__all__ = ["STANDARD_EXCHANGES", "DeclareOk", "DefaultExchange", "VirtualHost"]

#: Exchanges every virtual host has, as in RabbitMQ.
STANDARD_EXCHANGES = (
    ("amq.direct", "direct"), ("amq.fanout", "fanout"), ("amq.topic", "topic"),
    ("amq.headers", "headers"), ("amq.match", "headers"),
)

@final
class Live:
    """A live routing (a publish, a dead-lettering, a delayed message's release): the message,
    what the plugin exchanges on its path said of it (``notes``: exchange name, words), and the
    delays it is held for (``held``: exchange name, when it is due on the broker clock, the
    delay in milliseconds)."""

    __slots__ = ("_on_finish", "dry", "held", "message", "notes")

    def __init__(self, message: Message, *, dry: bool = False) -> None:
        self.message = message
        #: A dry run (``testing.route``): the exchanges say how they choose, and act on
        #: nothing (nothing held, nothing kept).
        self.dry = dry
        self.notes: list[tuple[str, str]] = []
        self.held: list[tuple[str, float, int]] = []
        self._on_finish: list[Any] = []

    def after(self, action: Any) -> None:
        """Run ``action()`` once the routing is recorded (a held message's history event goes
        after its decision gives the message its event list)."""
        self._on_finish.append(action)

    def finish(self) -> None:
        for action in self._on_finish:
            action()
        self._on_finish.clear()


class DeclareOk(NamedTuple):
    """The answer to queue.declare."""

    queue: str
    message_count: int
    consumer_count: int
    #: Whether this declare created the queue (False: it existed, or a passive declare).
    created: bool = False


@final
class DefaultExchange(Exchange):
    """The nameless exchange: every queue is bound to it by its own name."""

    type = "direct"

    @override
    def route(self, routing_key: str, headers: Mapping[str, Any] | None) -> Sequence[Binding]:
        queue = self.vhost.queues.get(routing_key)
        return queue.default_route if queue is not None else ()

    @override
    def mismatch(self, binding: Binding, routing_key: str,
                 headers: Mapping[str, Any] | None) -> str | None:
        return None if binding.routing_key == routing_key else "another queue's name"


def _routing_headers(headers: Mapping[str, Any], key: str) -> list[str]:
    value = headers.get(key)
    if value is None and key not in headers:
        return []
    if not isinstance(value, list):
        raise PreconditionFailed(
            f'invalid message: {{unacceptable_type_in_header,"{key}",{field_type(value)}}}')
    return [v for v in value if isinstance(v, str)]


@final
class VirtualHost:
    """A virtual host. Names in errors follow RabbitMQ: ``"queue 'q' in vhost '/'"``."""

    def __init__(self, broker: Broker, name: str) -> None:
        self.broker = broker
        self.name = name
        self.exchanges: dict[str, Exchange] = {}
        #: What passed through it (``message_stats``: :mod:`._stats`).
        self.stats = MessageStats()
        self.queues: dict[str, Queue] = {}
        self._trace = broker.trace
        #: Direct reply-to addresses and the reply consumers they lead to.
        self.reply_consumers: dict[str, ReplyConsumer] = {}
        #: The messages retained per topic (MQTT's retainer: :mod:`._sessions`).
        self.retained = RetainedMessages()
        #: Its policies, operator policies and limits.
        self.policies = Policies(self)
        #: RabbitMQ's firehose (``rabbitmqctl trace_on``): a copy of each publish and delivery
        #: goes to ``amq.rabbitmq.trace`` (see ``_firehose``).
        self.tracing = False
        self.default_exchange = self.exchanges[""] = DefaultExchange(self, "", durable=True)
        for xname, xtype in STANDARD_EXCHANGES:
            self.exchanges[xname] = EXCHANGE_TYPES[xtype](self, xname, durable=True)
        # RabbitMQ's firehose tracer publishes here; clients may not (it is internal).
        self.exchanges["amq.rabbitmq.trace"] = EXCHANGE_TYPES["topic"](
            self, "amq.rabbitmq.trace", durable=True, internal=True)

    def __repr__(self) -> str:
        return (f"<vhost '{self.name}': {len(self.exchanges)} exchanges, "
                f"{len(self.queues)} queues>")

    def resource(self, kind: str, name: str) -> str:
        """How RabbitMQ names a resource of this vhost in texts: ``"queue 'q' in vhost '/'"``."""
        return resource(kind, name, self.name)

    # -- lookups -------------------------------------------------------------------------------

    def lookup_exchange(self, name: str) -> Exchange:
        """The exchange ``name``; raises NotFound (404) "no exchange 'x' in vhost '/'"."""
        try:
            return self.exchanges[name]
        except KeyError:
            raise self.missing("exchange", name) from None

    def lookup_queue(self, name: str, viewer: Node | None = None) -> Queue:
        """The queue ``name``; raises NotFound (404) "no queue 'q' in vhost '/'", or "home node
        'N' of durable queue 'q' in vhost '/' is down or inaccessible" for a queue whose node
        is stopped (:mod:`._cluster`), or is out of ``viewer``'s reach (a partition:
        :meth:`check_reach`)."""
        try:
            queue = self.queues[name]
        except KeyError:
            raise self.missing("queue", name) from None
        if queue.down or self.broker.nodes_down:
            self.check_reach(queue, viewer)
        return queue

    def check_reach(self, queue: Queue, viewer: Node | None) -> None:
        """Raise NotFound (404) if ``queue`` is out of reach for the clients of ``viewer``
        (``None``: nobody's in particular): down (its home node stopped: "home node ... is
        down or inaccessible"), or a classic queue whose home ``viewer`` does not count as
        running after a partition (:mod:`._partition`): a durable one the same, a transient
        one "no queue ..." (``rabbit_amqqueue:on_node_down/1`` deleted it on this side)."""
        if queue.down:
            raise self.unreachable(queue)
        if self.across(queue, viewer):
            if queue.durable and queue.exclusive_owner is None:
                raise self.unreachable(queue)
            raise self.missing("queue", queue.name)

    def across(self, queue: Queue, viewer: Node | None) -> bool:
        """Whether ``queue`` is a classic queue homed on a node ``viewer`` does not count as
        running (a partition, :mod:`._partition`): out of reach for ``viewer``'s clients."""
        return viewer is not None and not queue.type.replicated and (
            not self.broker.network.whole) and (
            not self.broker.network.sees(viewer, queue.placement.leader))

    def unreachable(self, queue: Queue) -> NotFound:
        """RabbitMQ's 404 for a durable queue whose home node is stopped
        (``rabbit_amqqueue:not_found_or_absent_dirty/1``)."""
        return NotFound(f"home node '{queue.placement.leader.name}' of durable "
                        f"{self.resource('queue', queue.name)} is down or inaccessible")

    def missing(self, kind: str, name: str) -> NotFound:
        """RabbitMQ's 404 for a ``kind`` (``"queue"``, ``"exchange"``) named ``name`` that
        this vhost does not have, knowing what was missing (for :meth:`suggest`)."""
        error = NotFound(f"no {self.resource(kind, name)}")
        error.missing = (kind, name)
        return error

    def suggest(self, kind: str, name: str) -> str | None:
        """The name of this vhost's ``kind`` that ``name`` was most likely meant to be
        (:func:`~._names.nearest`), or ``None``. (Under the broker's lock.)"""
        names = self.queues if kind == "queue" else self.exchanges
        return nearest(name, names)

    def check_exclusive_access(self, queue: Queue, connection: Connection | None) -> None:
        """Raise ResourceLocked (405) when ``queue`` is exclusive to another connection."""
        if queue.exclusive_owner is not None and queue.exclusive_owner is not connection:
            raise self._locked(queue)

    def _locked(self, queue: Queue) -> ResourceLocked:
        return ResourceLocked(
            f"cannot obtain exclusive access to locked {self.resource('queue', queue.name)}. "
            "It could be originally declared on another connection or the exclusive "
            "property value does not match that of the original declaration.")

    def _check_not_default(self, name: str) -> None:
        if is_default_exchange(name):
            raise AccessRefused("operation not permitted on the default exchange")

    # -- exchanges -----------------------------------------------------------------------------

    def declare_exchange(self, name: str, type_: str = "direct", *, passive: bool = False,
                         durable: bool = False, auto_delete: bool = False,
                         internal: bool = False, arguments: Mapping[str, Any] | None = None,
                         user: str = INTERNAL_USER) -> Exchange:
        """exchange.declare with RabbitMQ's checks, in RabbitMQ's order (``user``: who
        declares it, for the event exchange)."""
        arguments = dict(arguments or {})
        if passive:
            self._check_not_default(name)
            return self.lookup_exchange(name)
        cls = self.exchange_type(type_)
        self._check_not_default(name)
        exchange = self.exchanges.get(name)
        if exchange is None:
            if reserved(name):
                raise AccessRefused(
                    f"exchange name '{name}' contains reserved prefix 'amq.*'")
            ae = arguments.get("alternate-exchange")
            if ae is not None and not isinstance(ae, str):
                raise PreconditionFailed(
                    f"invalid type '{field_type(ae)}' for arg 'alternate-exchange' in "
                    f"{self.resource('exchange', name)}")
            cls.validate(self, arguments)
            exchange = cls(self, name, durable=durable, auto_delete=auto_delete,
                           internal=internal, arguments=arguments)
            self.exchanges[name] = exchange
            self.policies.attach(exchange)
            events = self.broker.plugins.events
            if events is not None:
                events.exchange_created(exchange, user)
            return exchange
        where = self.resource("exchange", name)
        check_equivalent_field(where, "type", exchange.type, type_)
        check_equivalent_field(where, "durable", exchange.durable, durable)
        check_equivalent_field(where, "auto_delete", exchange.auto_delete, auto_delete)
        check_equivalent_field(where, "internal", exchange.internal, internal)
        check_equivalent_arguments(where, exchange.arguments, arguments, ("alternate-exchange",))
        return exchange

    def exchange_type(self, type_: str) -> type[Exchange]:
        """The exchange class of a type name: a built-in type, or one an enabled plugin brings.
        Raises CommandInvalid (503) "unknown exchange type 'x'" (RabbitMQ looks the name up as
        an Erlang atom: '' exists as one, and is no type: "invalid exchange type ''"); from
        RabbitMQ 3.13.3 the same texts are a channel's PreconditionFailed (406; v4.1.4
        rabbit_exchange:check_type/1)."""
        cls = self.broker.plugins.exchange_types.get(type_)
        if cls is None:
            adjective = "invalid" if type_ == "" or type_ in self.broker.plugins.retired_types \
                else "unknown"
            error = (PreconditionFailed if self.broker.profile.at_least(3, 13, 3)
                     else CommandInvalid)
            raise error(f"{adjective} exchange type '{type_}'")
        return cls

    def delete_exchange(self, name: str, *, if_unused: bool = False,
                        user: str = INTERNAL_USER) -> None:
        """exchange.delete; a missing exchange is not an error (as RabbitMQ 3.10)."""
        self._check_not_default(name)
        if reserved(name):
            raise AccessRefused(f"deletion of system {self.resource('exchange', name)} not allowed")
        exchange = self.exchanges.get(name)
        if exchange is None:
            return
        if if_unused and exchange.bindings:
            raise PreconditionFailed(f"{self.resource('exchange', name)} in use",
                                     reason=Refusal.IN_USE)
        self._delete_exchange(exchange, user, explicit=True)

    def _delete_exchange(self, exchange: Exchange, user: str = INTERNAL_USER, *,
                         explicit: bool = False, unbound: Binding | None = None) -> None:
        # The event exchange sees what RabbitMQ 3.10 notifies: the bindings of other sources
        # (into this exchange), then the exchange and its own bindings (``unbound``: the one
        # whose removal auto-deleted it), an explicit deletion inside its
        # exchange-delete-in-progress parameter.
        del self.exchanges[exchange.name]
        events = self.broker.plugins.events
        if events is not None and explicit:
            events.exchange_delete_started(exchange, user)
        for binding in list(exchange.incoming.values()):
            self._remove_binding(binding, user)
        if events is not None:
            events.exchange_deleted(exchange, user)
            if unbound is not None:
                events.binding_deleted(unbound, user)
        for binding in list(exchange.bindings.values()):
            self._remove_binding(binding, user)
        if events is not None and explicit:
            events.exchange_delete_finished(exchange, user)

    # -- queues --------------------------------------------------------------------------------

    def declare_queue(self, name: str, connection: Connection | None, *, passive: bool = False,
                      durable: bool = False, exclusive: bool = False, auto_delete: bool = False,
                      arguments: Mapping[str, Any] | None = None) -> DeclareOk:
        """queue.declare with RabbitMQ's checks, in RabbitMQ's order."""
        arguments = dict(arguments or {})
        if name == REPLY_TO or (name.startswith(REPLY_TO + ".") and name in self.reply_consumers):
            return DeclareOk(name, 0, 1)  # the direct reply-to pseudo-queue, as RabbitMQ answers
        if passive:
            found = self.lookup_queue(name, connection.node if connection is not None else None)
            self.check_exclusive_access(found, connection)
            found.touch()  # a declare renews an x-expires lease
            found.drop_expired()
            return DeclareOk(found.name, *found.type.stat(found))
        profile = self.broker.profile
        if profile.rabbitmq4 and "x-queue-type" not in arguments:
            # RabbitMQ 4 stores the node's default type in every declared queue's arguments
            # (v4.1.4 rabbit_amqqueue:augment_declare_args/5; embroker has no vhost default).
            arguments["x-queue-type"] = "classic"
        if not name:
            named = arguments.get("x-queue-type", "classic")
            kind = QUEUE_TYPES.get(named) if isinstance(named, str) else None
            if kind is None or not kind.server_named:
                raise PreconditionFailed(
                    "Cannot declare a server-named queue for type "
                    f"{kind.module if kind is not None else named}")
            name = random_name("amq.gen-")
        elif reserved(name):
            raise AccessRefused(f"queue name '{name}' contains reserved prefix 'amq.*'")
        if connection is not None:
            connection.access.queue_declare(self, name, arguments)
        owner = connection if exclusive else None
        durable = durable and not exclusive
        queue = self.queues.get(name)
        if queue is not None:
            if queue.down or self.broker.nodes_down:
                self.check_reach(queue, connection.node if connection is not None else None)
            if queue.exclusive_owner is not owner:  # RabbitMQ's strict exclusive check
                raise self._locked(queue)
            where = self.resource("queue", name)
            check_equivalent_field(where, "durable", queue.durable, durable)
            check_equivalent_field(where, "auto_delete", queue.auto_delete, auto_delete)
            check_equivalent_queue_arguments(where, queue.arguments, arguments,
                                             queue.type.equivalence_keys(
                                                 rabbitmq4=self.broker.profile.rabbitmq4))
            queue.touch()
            queue.drop_expired()
            return DeclareOk(name, *queue.type.stat(queue))
        if profile.rabbitmq4:
            # v4.1.4 rabbit_amqqueue:declare/7: the arguments, then the deprecated transient
            # non-exclusive queue, then (rabbit_queue_type:declare/2) the vhost's queue limit
            validate_queue_arguments(self.resource("queue", name), arguments, durable=durable,
                                     exclusive=exclusive, auto_delete=auto_delete)
            if not durable and not exclusive and not profile.permits("transient_nonexcl_queues"):
                raise InternalError(profile.refusal("transient_nonexcl_queues"))
            self.policies.check_queue_limit(name)
        else:
            self.policies.check_queue_limit(name)
            validate_queue_arguments(self.resource("queue", name), arguments, durable=durable,
                                     exclusive=exclusive, auto_delete=auto_delete)
        queue = Queue(self, name, durable=durable, exclusive_owner=owner,
                      auto_delete=auto_delete, arguments=arguments)
        queue.default_binding = Binding(self.default_exchange, queue, name, {})
        queue.default_route = (queue.default_binding,)
        self.queues[name] = queue
        if owner is not None:
            owner.exclusive_queues[name] = queue
        self.policies.attach(queue)
        queue.placement = queue.type.place(
            queue, connection.node if connection is not None else self.broker.nodes[0])
        if self.broker.nodes_down and not queue.type.declarable(queue):
            self.delete_queue_object(queue)  # (never created: rabbit_{quorum,stream}_queue:declare/2)
            raise no_majority(queue, "declare")
        events = self.broker.plugins.events
        if events is not None:
            events.queue_created(queue, connection.user if connection else INTERNAL_USER)
        return DeclareOk(name, 0, 0, created=True)

    def delete_queue(self, name: str, connection: Connection | None, *,
                     if_unused: bool = False, if_empty: bool = False) -> int:
        """queue.delete; returns the number of ready messages deleted. A missing queue is not an
        error (as RabbitMQ 3.10)."""
        queue = self.queues.get(name)
        if queue is None:
            return 0
        if queue.down or self.broker.nodes_down:
            viewer = connection.node if connection is not None else None
            if self.across(queue, viewer) and not (
                    queue.durable and queue.exclusive_owner is None):
                return 0  # (a transient queue across a partition: none on this side)
            self.check_reach(queue, viewer)
        self.check_exclusive_access(queue, connection)
        if self.broker.nodes_down:
            queue.type.check_delete(queue, connection.node if connection else None)
        if if_unused and queue.consumer_count:
            raise PreconditionFailed(f"{self.resource('queue', name)} in use",
                                     reason=Refusal.IN_USE)
        if if_empty and queue.message_count:
            raise PreconditionFailed(f"{self.resource('queue', name)} not empty",
                                     reason=Refusal.NOT_EMPTY)
        return self.delete_queue_object(queue, connection.user if connection else INTERNAL_USER)

    def delete_queue_object(self, queue: Queue, user: str = INTERNAL_USER) -> int:
        """Delete a queue: its bindings go, its consumers are cancelled; returns how many ready
        messages it held. ``user``: who deleted it (the broker itself by default)."""
        count = queue.message_count
        _history.left(self.broker.clock, queue, queue.messages, "deleted")
        queue.purge()
        queue.deleted = True
        self.queues.pop(queue.name, None)
        queue.stop_timers()
        if queue.exclusive_owner is not None:
            queue.exclusive_owner.exclusive_queues.pop(queue.name, None)
        # Events as RabbitMQ 3.10 notifies them: each consumer's channel sees it go, the
        # bindings go (the broker's doing), the queue goes, then the queue drops its consumers.
        events = self.broker.plugins.events
        if events is not None:
            for consumer in queue.consumers:
                events.consumer_deleted(consumer, consumer.channel.connection.user)
        for binding in list(queue.bindings.values()):
            self._remove_binding(binding, INTERNAL_USER)
        if events is not None:
            events.queue_deleted(queue, user)
        for consumer in queue.clear_consumers():
            if events is not None:
                events.consumer_deleted(consumer, None)
            consumer.channel.cancel_by_broker(consumer)
        return count

    def restart(self) -> None:
        """What survives a broker restart: durable exchanges and queues, the bindings between
        them, and the persistent messages of durable queues (every message of a quorum queue
        or stream: :attr:`~._queue_type.QueueType.keeps_every_message`)."""
        for queue in list(self.queues.values()):
            if queue.durable:
                if queue.type.keeps_every_message:
                    continue
                _history.left(self.broker.clock, queue, [
                    m for m in queue.messages if m.properties.get("delivery_mode") != 2], "lost")
                queue.drop_transient()
            else:
                lost = queue.messages
                self.delete_queue_object(queue)
                _history.left(self.broker.clock, queue, lost, "lost")
        for exchange in list(self.exchanges.values()):
            if not exchange.durable and self.exchanges.get(exchange.name) is exchange:
                self._delete_exchange(exchange)
        for exchange in self.exchanges.values():
            exchange.restarted()

    # -- bindings ------------------------------------------------------------------------------

    def _destination(self, kind: str, name: str) -> Queue | Exchange:
        return self.lookup_queue(name) if kind == "queue" else self.lookup_exchange(name)

    def _binding_ends(self, source: str, kind: str, destination: str,
                      connection: Connection | None) -> tuple[Exchange, Queue | Exchange]:
        if kind == "exchange":
            self._check_not_default(destination)
        self._check_not_default(source)
        exchange = self.exchanges.get(source)
        dest = self.queues.get(destination) if kind == "queue" else self.exchanges.get(
            destination)
        if exchange is None:
            raise self.missing("exchange", source)
        if dest is None:
            raise self.missing(kind, destination)
        if isinstance(dest, Queue):
            if dest.down or self.broker.nodes_down:
                self.check_reach(dest, connection.node if connection is not None else None)
            self.check_exclusive_access(dest, connection)
        return exchange, dest

    def bind(self, source: str, kind: str, destination: str, routing_key: str,
             arguments: Mapping[str, Any], connection: Connection | None) -> None:
        """queue.bind / exchange.bind (``kind`` is "queue" or "exchange")."""
        exchange, dest = self._binding_ends(source, kind, destination, connection)
        exchange.validate_binding(routing_key, arguments)
        binding = Binding(exchange, dest, routing_key, dict(arguments))
        exchange.before_bind(binding)
        if exchange.add_binding(binding):
            if isinstance(dest, Queue):
                dest.bindings[binding.key] = binding
            else:
                dest.incoming[binding.key] = binding
            events = self.broker.plugins.events
            if events is not None:
                events.binding_created(binding, connection.user if connection else INTERNAL_USER)

    def unbind(self, source: str, kind: str, destination: str, routing_key: str,
               arguments: Mapping[str, Any], connection: Connection | None) -> None:
        """queue.unbind / exchange.unbind. As in RabbitMQ, unbinding never fails for missing
        things (binding, exchange or destination); only the default exchange (403) and an
        existing binding of another connection's exclusive queue (405) are refused."""
        if kind == "exchange":
            self._check_not_default(destination)
        self._check_not_default(source)
        exchange = self.exchanges.get(source)
        if exchange is None:
            return
        binding = exchange.bindings.get(binding_key(source, kind, destination, routing_key, arguments))
        if binding is None:
            return
        if isinstance(binding.destination, Queue):
            if binding.destination.down or self.broker.nodes_down:
                self.check_reach(binding.destination,
                                 connection.node if connection is not None else None)
            self.check_exclusive_access(binding.destination, connection)
        self._remove_binding(binding, connection.user if connection else INTERNAL_USER)

    def _remove_binding(self, binding: Binding, user: str = INTERNAL_USER) -> None:
        source, dest = binding.source, binding.destination
        if source.remove_binding(binding.key) is None:
            return  # gone already (an auto-delete exchange took it with it)
        if isinstance(dest, Queue):
            dest.bindings.pop(binding.key, None)
        else:
            dest.incoming.pop(binding.key, None)
        events = self.broker.plugins.events
        if source.auto_delete and not source.bindings and self.exchanges.get(
                source.name) is source:
            self._delete_exchange(source, user, unbound=binding)
        elif events is not None:
            events.binding_deleted(binding, user)

    # -- routing -------------------------------------------------------------------------------

    def route(self, exchange_name: str, message: Message, mandatory: bool = False, *,
              dry_run: bool = False) -> list[Queue]:
        """Route a message published to ``exchange_name`` as RabbitMQ does and return the queues
        it reaches, in delivery order; the caller enqueues it. Every call leaves a
        :class:`RoutingDecision` on the broker's trace, refused publishes included.
        ``dry_run``: the plugins' exchanges act on nothing (a delayed-message exchange routes
        as if the delay had run out and holds nothing; a recent-history exchange keeps nothing).

        Raises:
            NotFound: (404) no such exchange.
            AccessRefused: (403) the exchange is internal.
            PreconditionFailed: (406) a CC or BCC header that is not an array.
        """
        exchange = self.exchanges.get(exchange_name)
        if exchange is None or exchange.internal:
            exchange = self.publish_target(message)  # raises
        headers = message.properties.get("headers")
        if headers and ("CC" in headers or "BCC" in headers):
            keys = self._sender_selected_keys(exchange_name, message, headers)
            headers = message.properties.get("headers")
        elif exchange.alternate_exchange is None and exchange.per_key and not dry_run:
            result: list[Queue] | None = None
            # Fast path: one routing key, no alternate exchange, every binding to a queue.
            routing_key = message.routing_key
            found = exchange.route(routing_key, headers)
            if len(found) == 1 and found[0].destination.kind == "queue":
                queue: Queue = found[0].destination  # type: ignore[assignment]
                result = [queue]
                names: tuple[str, ...] = queue.name_only
            else:
                queues: dict[Queue, None] = {}
                for binding in found:
                    if binding.destination.kind != "queue":
                        break
                    queues[binding.destination] = None  # type: ignore[index]
                else:
                    result = _sorted_queues(queues)
                    names = tuple([q.name for q in result])
            if result is not None:
                # The decision's tuples are shared where they can be (the queue's own name, the
                # exchange's visit while its bindings stay the same): the trace keeps one
                # decision per publish, and every object it keeps is one more for the garbage
                # collector to walk.
                snapshot = exchange._snapshot
                if snapshot is None:
                    snapshot = exchange.snapshot()
                visit = exchange._visit
                if visit is None or visit[0][1] is not snapshot:
                    visit = exchange._visit = ((exchange, snapshot, False),)
                self._trace.routed(
                    self.name, exchange_name, message,
                    names if len(names) == 1 and names[0] == routing_key else (routing_key,),
                    names, found if type(found) is tuple or type(found) is Bindings
                    else tuple(found), visit, mandatory)
                return result
            keys = [message.routing_key]
        else:
            keys = [message.routing_key]
        live = Live(message, dry=dry_run)
        try:
            routed, matched, path = self._route(exchange, keys, headers, message.properties, live)
        except AMQPError as error:  # a plugin's crash (541): the publish fails
            self.refuse(message, error)
        self._trace.record(RoutingDecision(
            self.name, exchange_name, message, tuple(keys), tuple([q.name for q in routed]),
            matched, path, mandatory, notes=tuple(live.notes), held=tuple(live.held)))
        live.finish()
        return routed

    def route_keys(self, exchange_name: str, keys: Sequence[str],
                   headers: Mapping[str, Any] | None, *,
                   properties: Mapping[str, Any] | None = None,
                   ) -> tuple[list[Queue], tuple[Binding, ...], tuple[Visit, ...]]:
        """Where a message published to ``exchange_name`` would go, without publishing it:
        nothing is enqueued and nothing is traced. ``keys`` are every routing key (the routing
        key, then the ``CC`` and ``BCC`` values); ``headers`` are matched as they are (a
        ``BCC`` header is not removed); ``properties`` are what a consistent-hash exchange
        with ``hash-property`` hashes. For routing recorded traffic (``embroker.analytics``).

        The plugins' exchanges route as they would route the message now, without their side
        effects: a delayed-message exchange routes it through its ``x-delayed-type`` as if its
        delay had run out (nothing is held), a recent-history exchange keeps nothing, and an
        ``x-random`` exchange draws from ``broker.plugins.random`` as a publish would.

        Returns:
            the queues reached in delivery order, every binding matched along the path, and the
            exchanges visited (each with its bindings and whether it passed the message on to
            its alternate exchange).

        Raises:
            NotFound: (404) no such exchange.
            AccessRefused: (403) the exchange is internal.
        """
        exchange = self.exchanges.get(exchange_name)
        if exchange is None:
            raise self.missing("exchange", exchange_name)
        if exchange.internal:
            raise AccessRefused(
                f"cannot publish to internal {self.resource('exchange', exchange_name)}")
        return self._route(exchange, list(keys), headers, properties)

    def replay_through(self, exchange: Exchange, message: Message) -> list[Queue]:
        """Route ``message`` from ``exchange`` as RabbitMQ's ``rabbit_exchange:route/2`` does for
        a message a plugin publishes itself (the recent-history exchange's replay): a live
        routing, without a decision on the trace; returns the queues it reaches (the caller
        enqueues)."""
        live = Live(message)
        queues = self._route(exchange, list(message.keys), message.properties.get("headers"),
                             message.properties, live)[0]
        live.finish()
        return queues

    def publish_from_broker(self, exchange: Exchange, message: Message) -> list[Queue]:
        """Publish a message the broker makes itself (an event of the event exchange): routed
        from ``exchange`` even if it is internal, recorded on the trace, enqueued; no confirm,
        no return. Returns the queues it reached."""
        live = Live(message)
        keys = list(message.keys)
        queues, matched, path = self._route(exchange, keys, message.properties.get("headers"),
                                            message.properties, live)
        self._record(RoutingDecision(self.name, exchange.name, message, tuple(keys),
                                     tuple([q.name for q in queues]), matched, path,
                                     notes=tuple(live.notes), held=tuple(live.held)))
        live.finish()
        for queue in queues:
            queue.publish(message)
        return queues

    def _record(self, decision: RoutingDecision) -> None:
        self._trace.record(decision)

    def deliver_replies(self, message: Message) -> tuple[str, ...]:
        """Direct reply-to: a message published to the default exchange with a reply-to
        address as a key goes straight to the requesting channel, and nowhere when the
        requester has gone. Returns the addresses that count as routed to: as RabbitMQ 3.10
        (and 4.1), none (``rabbit_exchange:route/2`` delivers a reply beside routing, so a
        mandatory reply is also returned); as RabbitMQ 4.2, each address the broker issued,
        whether or not its requester is still there (v4.2.0 release notes: the address is a
        volatile queue, checked only when delivering)."""
        volatile = self.broker.profile.at_least(4, 2)
        routed: list[str] = []
        for key in message.keys:
            reply = self.reply_consumers.get(key)
            if reply is not None:
                reply.deliver(message)
            if volatile and is_reply_name(key) and key not in routed:
                routed.append(key)
        return tuple(routed)

    def is_volatile_queue(self, name: str) -> bool:
        """Whether ``name`` is a volatile queue that exists: as RabbitMQ 4.2, a direct reply-to
        address whose requester still consumes from it (``rabbit_volatile_queue:exists/1``
        v4.2.9 asks the requester's session), which an AMQP 1.0 sender may attach to."""
        return (self.broker.profile.at_least(4, 2) and is_reply_name(name)
                and name in self.reply_consumers)

    def dead_letter(self, source: Queue, messages: list[Message], reason: str,
                    failures: list[int] | None = None) -> None:
        """Republish messages that leave ``source`` for ``reason`` to its dead-letter exchange,
        as RabbitMQ does: a missing exchange drops them, an internal one is fine, and a queue
        the message already died in for reasons other than a rejection is skipped (a cycle).
        ``failures``, one per message, are their failed deliveries, carried to the copies."""
        exchange_name = source.dead_letter_exchange
        assert exchange_name is not None
        exchange = self.exchanges.get(exchange_name)
        now = self.broker.clock.time()
        rabbitmq4 = self.broker.profile.rabbitmq4
        # In a cluster of several nodes, each copy's decision names the node of the queue.
        home = source.placement.leader.name if len(self.broker.nodes) > 1 else None
        for i, message in enumerate(messages):
            dead = dead_letter_message(message, reason, source.name, exchange_name,
                                       source.dead_letter_routing_key, now, rabbitmq4=rabbitmq4)
            if failures is not None:
                dead.failures = failures[i]
            origin = (source.name, reason)
            cause = dead_letter_cause(source, reason, message)
            if exchange is None:
                self._record(RoutingDecision(
                    self.name, exchange_name, dead, dead.keys, dead_letter=origin, cause=cause))
                if home is not None:
                    self._trace.on_node(home)
                _history.dead_lettered(self.broker.clock, source.name, message, reason,
                                       exchange_name, None)
                continue
            live = Live(dead)
            try:
                queues, matched, path = self._route(exchange, list(dead.keys),
                                                    dead.properties.get("headers"),
                                                    dead.properties, live)
            except AMQPError as error:  # a plugin's crash: the copy is lost
                self._record(RoutingDecision(self.name, exchange_name, dead, dead.keys,
                                             error=error, dead_letter=origin, cause=cause))
                if home is not None:
                    self._trace.on_node(home)
                continue
            if reason != "rejected":
                headers = dead.headers
                deaths = dead.deaths if rabbitmq4 else None
                queues = [q for q in queues if not is_dead_letter_cycle(q.name, headers, deaths)]
            decision = RoutingDecision(
                self.name, exchange_name, dead, dead.keys, tuple([q.name for q in queues]),
                matched, path, dead_letter=origin, cause=cause, notes=tuple(live.notes),
                held=tuple(live.held))
            self._record(decision)
            if home is not None:
                decision._node = home
            live.finish()
            _history.dead_lettered(self.broker.clock, source.name, message, reason,
                                   exchange_name, decision)
            for queue in queues:
                queue.publish(dead, publisher=source)

    def check_routing_headers(self, message: Message) -> None:
        """Raise what :meth:`route` would for ``CC``/``BCC`` headers that are not arrays: a
        transaction checks at publish (the refusal is recorded on the trace)."""
        headers = message.properties.get("headers")
        if headers and ("CC" in headers or "BCC" in headers):
            try:
                _routing_headers(headers, "CC")
                _routing_headers(headers, "BCC")
            except PreconditionFailed as exc:
                self.refuse(message, exc)

    def publish_target(self, message: Message) -> Exchange:
        """The exchange a client publishes ``message`` to (:meth:`target_exchange`); a refusal
        is recorded on the trace."""
        try:
            return self.target_exchange(message.exchange)
        except AMQPError as error:
            self.refuse(message, error)

    def target_exchange(self, name: str) -> Exchange:
        """The exchange ``name`` as a place to publish to: it must exist (404 "no exchange 'x'
        in vhost '/'") and not be internal (403 "cannot publish to internal exchange ...")."""
        exchange = self.lookup_exchange(name)
        if exchange.internal:
            raise AccessRefused(f"cannot publish to internal {self.resource('exchange', name)}")
        return exchange

    def refuse(self, message: Message, error: AMQPError) -> NoReturn:
        """Record a refused publish on the trace, and raise ``error``."""
        self._record(RoutingDecision(self.name, message.exchange, message,
                                     (message.routing_key,), error=error))
        raise error

    def _sender_selected_keys(self, exchange_name: str, message: Message,
                              headers: Mapping[str, Any]) -> list[str]:
        # Sender-selected distribution: CC and BCC add routing keys; BCC is removed from the
        # message before anyone sees it.
        try:
            keys = [message.routing_key, *_routing_headers(headers, "CC"),
                    *_routing_headers(headers, "BCC")]
        except PreconditionFailed as exc:
            self.refuse(message, exc)
        if "BCC" in headers:
            stripped = {k: v for k, v in headers.items() if k != "BCC"}
            message.properties = {**message.properties, "headers": stripped}
            message.encoded_properties = None
        message.routing_keys = tuple(keys)
        return keys

    def _route(self, exchange: Exchange, keys: list[str], headers: Mapping[str, Any] | None,
               properties: Mapping[str, Any] | None = None, live: Live | None = None,
               ) -> tuple[list[Queue], tuple[Binding, ...], tuple[Visit, ...]]:
        # RabbitMQ's rabbit_exchange:route/2: a work list of exchanges, each visited once; an
        # exchange that matches nothing at all passes the message to its alternate exchange.
        # ``live``: a real publish (plugin exchanges may act on it: hold it, keep it).
        queues: dict[Queue, None] = {}
        matched: list[Binding] = []
        visited: list[Visit] = []
        seen = {exchange.name}
        work = [exchange]
        while work:
            current = work.pop()
            found: dict[tuple[Any, ...], Binding] = {}
            kept = (current.intercept(live.message, live)
                    if live is not None and current.intercepts and not live.dry else None)
            if kept is not None:
                assert live is not None
                live.notes.append((current.name, kept))
            elif current.per_key:
                for key in keys:
                    for binding in current.route(key, headers):
                        found[binding.key] = binding
            else:
                chosen = current.route_message(keys, headers, properties)
                for binding in chosen:
                    found[binding.key] = binding
                if live is not None and isinstance(chosen, Choice) and chosen.note:
                    live.notes.append((current.name, chosen.note))
            alternate = None
            if not found and current.alternate_exchange is not None:
                alternate = self.exchanges.get(current.alternate_exchange)
            visited.append((current, current.snapshot(), alternate is not None))
            if alternate is not None and alternate.name not in seen:
                seen.add(alternate.name)
                work.append(alternate)
            for binding in found.values():
                matched.append(binding)
                dest = binding.destination
                if isinstance(dest, Queue):
                    queues[dest] = None
                elif dest.name not in seen:
                    seen.add(dest.name)
                    work.append(dest)
        return _sorted_queues(queues), tuple(matched), tuple(visited)

    def _check(self) -> None:
        for queue in self.queues.values():
            queue._check()
            for key, binding in queue.bindings.items():
                assert binding.source.bindings.get(key) is binding, f"{binding!r} dangling"
        for exchange in self.exchanges.values():
            exchange._check()
            for key, binding in exchange.bindings.items():
                dest = binding.destination
                back = dest.bindings if isinstance(dest, Queue) else dest.incoming
                assert back.get(key) is binding, f"{binding!r} not known to its destination"


def _sorted_queues(queues: dict[Queue, None]) -> list[Queue]:
    # RabbitMQ delivers to the routed queues in the order of their names (lists:usort).
    return sorted(queues, key=_queue_name)


def _queue_name(queue: Queue) -> str:
    return queue.name

