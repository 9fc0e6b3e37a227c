"""Channels: the methods of the exchange, queue, basic, confirm and tx classes.

A :class:`Channel` is what both the wire protocol and the in-process client drive: one method per
AMQP method, RabbitMQ's rules and errors. It never writes to anyone directly; what a client must be
sent without asking (deliveries, returns, confirms, cancels) goes to its owner's
:attr:`Channel.listener` as an event (:mod:`._events`).

A channel exception raised here leaves the channel as it was; the owner closes it (the protocol
layer with channel.close, the in-process client by marking it closed) and calls :meth:`close`,
which requeues what it had not acknowledged.

What a channel keeps:

- its consumers (:mod:`._consumer`) and the deliveries not yet settled, by delivery tag;
- qos: ``prefetch_count`` for consumers created from now on and ``global_prefetch`` for all of
  them together (RabbitMQ's meaning of basic.qos ``global``);
- in confirm mode, the publish sequence number; in tx mode, its own transaction (:mod:`._tx`),
  and the open transactions that hold its publishes or settlements;
- for direct reply-to, its reply consumer (:class:`ReplyConsumer`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Container, Iterator, Sequence
from typing import TYPE_CHECKING, Any, final

from ..errors import (
    AccessRefused,
    ChannelException,
    NoRoute,
    NotAllowed,
    NotFound,
    NotImplementedAMQP,
    PreconditionFailed,
)
from . import _faults, _firehose, _history
from ._arguments import (
    parse_expiration,
)
from ._cluster import no_majority, quorate
from ._consumer import Browser, Consumer, Credited, Delivery, Unacked, new_unacked
from ._events import (
    Cancelled,
    Delivered,
    Listener,
    Returned,
    new_confirmed,
    new_delivered,
)
from ._message import Message, QueuedMessage
from ._names import REPLY_TO, random_name, reply_name
from ._outcome import PublishOutcome, new_outcome
from ._stats import MessageStats
from ._stream_commands import StreamCommands
from ._tx import HeldPublish, HeldSettlement, Settlement, Transaction

if TYPE_CHECKING:
    from ._connection import Connection
    from ._queue import Queue
    from ._vhost import DeclareOk

__all__ = ["Channel", "ReplyConsumer"]

#: What basic.return says of a mandatory message that reached no queue.
_NO_ROUTE = NoRoute("")
#: The outcome of a publish a transaction holds until its commit.
_HELD = PublishOutcome(held=True)
#: The outcome of a publish that reached no queue: dropped, or returned under mandatory.
_UNROUTED = PublishOutcome()
_RETURNED = PublishOutcome(returned=True)


def _by_tag(pair: tuple[int, Unacked]) -> int:
    return pair[0]


def _annotate(taken: list[tuple[int, Unacked]], annotations: dict[str, Any]) -> None:
    # A quorum queue's modified outcome: the annotations go on the message.
    for _tag, unacked in taken:
        entry = unacked.entry
        entry.annotations = {**(entry.annotations or {}), **annotations}


@final
class ReplyConsumer:
    """Direct reply-to: a channel's consumer on the pseudo-queue ``amq.rabbitmq.reply-to``.
    Replies published to its ``address`` go straight to it, with no queue and no acks."""

    __slots__ = ("address", "channel", "tag")

    def __init__(self, channel: Channel, tag: str) -> None:
        self.channel = channel
        self.tag = tag
        self.address = reply_name()

    def deliver(self, message: Message) -> None:
        """Deliver a reply. As RabbitMQ, it does not take a delivery tag of its own (the
        channel's next one is shown, unused)."""
        channel = self.channel
        _history.delivered(channel, REPLY_TO, message, self.tag, channel._next_tag, False, True)
        if channel.listener is not None:
            channel.listener(Delivered(channel.number, self.tag, channel._next_tag, False,
                                       message.exchange, message.routing_key, message))


@final
class Channel(StreamCommands):
    """The server side of one AMQP channel (the stream protocol's commands:
    :class:`~._stream_commands.StreamCommands`).

    Attributes:
        number: the channel number on its connection.
        listener: where the channel's events go (set by its owner); ``None`` drops them.
        consumers: its consumers by tag.
        prefetch_count: basic.qos for consumers created from now on (``global=false``).
        global_prefetch: basic.qos for all its consumers together (``global=true``).
        confirm_mode, tx_mode: whether confirm.select / tx.select was called.
    """

    def __init__(self, connection: Connection, number: int) -> None:
        self.connection = connection
        self.vhost = connection.vhost
        # How a publish is routed: by the vhost alone in a broker of one node (its nodes are
        # fixed when it is made), else so that the decision names this channel's node.
        self._route: Callable[[str, Message, bool], list[Queue]] = (
            self.vhost.route if len(self.vhost.broker.nodes) == 1 else self._route_on_node)
        self.number = number
        self.is_open = True
        self.listener: Listener | None = None
        self.consumers: dict[str, Consumer] = {}
        #: Delivery tags are handed out in increasing order, so insertion order is tag order:
        #: ``multiple`` acks pop from the front.
        self._unacked: OrderedDict[int, Unacked] = OrderedDict()
        self._next_tag = 1
        #: What it published and took (``message_stats``: :mod:`._stats`).
        self.stats = MessageStats()
        self.prefetch_count = 0
        self.global_prefetch = 0
        # What the global limit counts (RabbitMQ's limiter "volume"): set to everything unacked
        # when a limit is set, then consumer deliveries in and out (basic.get ones never go out).
        self._volume = 0
        #: Deliveries to consumers (not basic.get) not yet settled.
        self.consumer_unacked = 0
        self.most_recent_queue: str | None = None
        self.confirm_mode = False
        self._publish_seq = 0
        self.tx_mode = False
        #: tx.select's transaction (AMQP 0-9-1's modal one), which the channel's publishes and
        #: settlements go to when they name none.
        self._tx: Transaction | None = None
        #: The open transactions holding its publishes or settlements (in the order they began
        #: to).
        self._transactions: dict[Transaction, None] = {}
        self.reply_consumer: ReplyConsumer | None = None
        # The broker's armed faults (lists changed in place, never replaced) and its clock: at
        # hand on the delivery path.
        broker = self.vhost.broker
        self._publish_faults = broker._publish_faults
        self._delivery_faults = broker._delivery_faults
        self._clock = broker.clock

    @property
    def internal(self) -> bool:
        """Whether it is one of the broker's own channels (:meth:`Connection.open_internal_channel
        <._connection.Connection.open_internal_channel>`), whose number is no 0-9-1 channel
        number."""
        return self.number > 0xFFFF

    def __repr__(self) -> str:
        state = "open" if self.is_open else "closed"
        return (f"<Channel {self.number} of {self.connection.name}, {state}, "
                f"{len(self.consumers)} consumers, {len(self._unacked)} unacked>")

    @property
    def unacked_tags(self) -> list[int]:
        return list(self._unacked)

    def unacked(self) -> Iterator[tuple[int, Unacked]]:
        """The deliveries not acknowledged yet, by delivery tag, oldest first (a live view:
        read it under the broker's lock)."""
        return iter(self._unacked.items())

    # -- names ---------------------------------------------------------------------------------

    def _queue_name(self, name: str) -> str:
        # An empty queue name means the channel's most recently declared queue (AMQP 0-9-1).
        if name:
            return name
        if self.most_recent_queue is None:
            raise NotFound("no previously declared queue")
        return self.most_recent_queue

    def _check_quorate(self, queue: Queue, what: str) -> None:
        # A quorum queue (or stream) without a majority of its members running, on this
        # channel's side of a partition, answers no get, consume or purge (:mod:`._cluster`).
        if self.vhost.broker.nodes_down and queue.type.replicated and not quorate(
                queue, self.connection.node):
            raise no_majority(queue, what)

    def _queue(self, name: str) -> Queue:
        queue = self.vhost.lookup_queue(self._queue_name(name), self.connection.node)
        self.vhost.check_exclusive_access(queue, self.connection)
        return queue

    # -- exchange class ------------------------------------------------------------------------

    def exchange_declare(self, exchange: str, exchange_type: str = "direct", *,
                         passive: bool = False, durable: bool = False, auto_delete: bool = False,
                         internal: bool = False, arguments: dict[str, Any] | None = None) -> bool:
        """exchange.declare; returns whether it created the exchange (False: it existed, or
        ``passive``). Raises NotFound (passive, missing), AccessRefused (``amq.`` names, the
        default exchange), PreconditionFailed (not equivalent), CommandInvalid (unknown type).
        """
        if not passive:
            self.connection.access.exchange_declare(self.vhost, exchange, exchange_type, arguments)
        created = not passive and exchange not in self.vhost.exchanges
        self.vhost.declare_exchange(exchange, exchange_type, passive=passive, durable=durable,
                                    auto_delete=auto_delete, internal=internal,
                                    arguments=arguments or {}, user=self.connection.user)
        return created

    def check_exchange_declare(self, exchange: str, exchange_type: str = "direct",
                               arguments: dict[str, Any] | None = None) -> bool:
        """Whether ``exchange`` exists, asked as a declare of it asks: the permissions its
        declare needs first, then the lookup. RabbitMQ 4's AMQP 1.0 management node asks this
        before it checks a new exchange's name (``rabbit_amqp_management``, ``PUT
        /exchanges``, v4.1: ``check_resource_access`` then ``rabbit_exchange:lookup``):
        permission before existence. Nothing is declared.

        Raises:
            AccessRefused: (403) no configure permission on ``exchange`` (for a new one with an
                ``alternate-exchange``: no read on it, or no write on the alternate).
        """
        self.connection.access.exchange_declare(self.vhost, exchange, exchange_type, arguments)
        return exchange in self.vhost.exchanges

    def exchange_delete(self, exchange: str, *, if_unused: bool = False) -> None:
        self.connection.access.exchange_delete(exchange)
        self.vhost.delete_exchange(exchange, if_unused=if_unused, user=self.connection.user)

    def exchange_bind(self, destination: str, source: str, routing_key: str = "",
                      arguments: dict[str, Any] | None = None) -> None:
        self.connection.access.bind(self.vhost, source, "exchange", destination, routing_key)
        self.vhost.bind(source, "exchange", destination, routing_key, arguments or {},
                        self.connection)

    def exchange_unbind(self, destination: str, source: str, routing_key: str = "",
                        arguments: dict[str, Any] | None = None) -> None:
        self.connection.access.bind(self.vhost, source, "exchange", destination, routing_key)
        self.vhost.unbind(source, "exchange", destination, routing_key, arguments or {},
                          self.connection)

    # -- queue class ---------------------------------------------------------------------------

    def queue_declare(self, queue: str = "", *, passive: bool = False, durable: bool = False,
                      exclusive: bool = False, auto_delete: bool = False,
                      arguments: dict[str, Any] | None = None) -> DeclareOk:
        """queue.declare; returns the name (server-generated for ``""``), the counts and
        whether it created the queue (:attr:`~._vhost.DeclareOk.created`)."""
        result = self.vhost.declare_queue(
            queue, self.connection, passive=passive, durable=durable, exclusive=exclusive,
            auto_delete=auto_delete, arguments=arguments or {})
        self.most_recent_queue = result.queue
        return result

    def _binding_key(self, queue: str, routing_key: str) -> str:
        # queue.bind/unbind with neither a queue nor a key: the most recent queue's name.
        if not queue and not routing_key and self.most_recent_queue is not None:
            return self.most_recent_queue
        return routing_key

    def queue_bind(self, queue: str, exchange: str, routing_key: str = "",
                   arguments: dict[str, Any] | None = None) -> None:
        routing_key = self._binding_key(queue, routing_key)
        self.connection.access.bind(self.vhost, exchange, "queue", self._queue_name(queue),
                                    routing_key)
        self.vhost.bind(exchange, "queue", self._queue_name(queue), routing_key,
                        arguments or {}, self.connection)

    def queue_unbind(self, queue: str, exchange: str, routing_key: str = "",
                     arguments: dict[str, Any] | None = None) -> None:
        routing_key = self._binding_key(queue, routing_key)
        self.connection.access.bind(self.vhost, exchange, "queue", self._queue_name(queue),
                                    routing_key)
        self.vhost.unbind(exchange, "queue", self._queue_name(queue), routing_key,
                          arguments or {}, self.connection)

    def queue_purge(self, queue: str = "") -> int:
        self.connection.access.read_queue(self._queue_name(queue))
        q = self._queue(queue)
        self._check_quorate(q, "purge")
        q.type.check_purge(q)
        _history.left(self.vhost.broker.clock, q, q.messages, "purged")
        return q.purge()

    def queue_delete(self, queue: str = "", *, if_unused: bool = False,
                     if_empty: bool = False) -> int:
        self.connection.access.queue_delete(self._queue_name(queue))
        return self.vhost.delete_queue(self._queue_name(queue), self.connection,
                                       if_unused=if_unused, if_empty=if_empty)

    # -- channel class -------------------------------------------------------------------------

    def flow(self, active: bool) -> None:
        """channel.flow from the client. RabbitMQ 3.10 does not implement ``active=false``
        (540 NOT_IMPLEMENTED); ``active=true`` changes nothing."""
        if not active:
            raise NotImplementedAMQP("active=false")

    # -- basic class: publishing ---------------------------------------------------------------

    def basic_publish(self, exchange: str, routing_key: str, body: bytes,
                      properties: dict[str, Any] | None = None, *, mandatory: bool = False,
                      immediate: bool = False, encoded_properties: bytes | None = None,
                      native: object | None = None, origin: str | None = None,
                      transaction: Transaction | None = None,
                      exclude: Container[str] = ()) -> PublishOutcome:
        """basic.publish; returns its :class:`~._outcome.PublishOutcome`: the publish sequence
        number in confirm mode (else 0), the queues it was routed to, whether a queue refused
        it and whether it was returned. In a transaction (``transaction``, else tx.select's)
        the message is checked at once and held until commit (``held``). ``native`` and
        ``origin`` are what the protocol's layer keeps on the message (see :class:`Message`).
        ``exclude`` names queues the message must not reach even where routed there (MQTT 5's
        No Local: RabbitMQ's ``drop_local/2`` takes them from the routed queues).

        Raises:
            NotFound: (404) no such exchange.
            AccessRefused: (403) the exchange is internal.
            PreconditionFailed: (406) a body over the broker's ``max_message_size``, a
                ``user_id`` that is not the connection's user, an ``expiration`` that is no
                number of milliseconds, a ``delivery_mode`` other than 1 and 2, or a
                ``CC``/``BCC`` header that is not an array.
            NotImplementedAMQP: (540) ``immediate`` is set, as in RabbitMQ 3.

        Every refusal is recorded on the trace too.
        """
        if immediate:
            raise NotImplementedAMQP("immediate=true")
        message = Message(exchange, routing_key, properties if properties is not None else {},
                          body, encoded_properties)
        if native is not None or origin is not None:
            message.native, message.origin = native, origin
        vhost = self.vhost
        try:
            # RabbitMQ's order of checks: size, the exchange, user_id, expiration, CC/BCC.
            max_size = vhost.broker.max_message_size
            if len(body) > max_size:
                vhost.refuse(message, PreconditionFailed(
                    f"message size {len(body)} is larger than configured max size {max_size}"))
            self.connection.access.publish(vhost, message)
            target = vhost.exchanges.get(exchange)
            if target is None or target.internal:
                vhost.publish_target(message)  # raises (and records the refusal)
            expiration = self._check_properties(message) if properties else None
            held = transaction if transaction is not None else self._tx
            if held is not None:
                vhost.check_routing_headers(message)
                held._hold(HeldPublish(self, message, mandatory, expiration, exclude))
                return _HELD
        except ChannelException:
            if len(vhost.broker.nodes) > 1:  # the refusal on the trace names its node
                vhost.broker.trace.on_node(self.connection.node.name, message)
            raise
        outcome = self._publish(message, mandatory, expiration, exclude)
        if not self.confirm_mode:
            return outcome
        self._publish_seq += 1
        accepted = outcome.accepted
        if accepted:
            self.stats.confirm += 1
            vhost.stats.confirm += 1
        else:
            _history.confirm_nack(self, message, self._publish_seq)
        if self.listener is not None:
            # RabbitMQ coalesces a nack with everything unconfirmed before it: with nothing else
            # outstanding, that is multiple=true for this one message.
            self.listener(new_confirmed((self.number, self._publish_seq, not accepted, accepted)))
        return new_outcome((self._publish_seq, outcome.routed, accepted, outcome.returned, False))

    def _check_properties(self, message: Message) -> float | None:
        # user_id must be the connection's user; expiration must parse (returned, in seconds);
        # a reply-to of the direct reply-to pseudo-queue becomes this channel's address.
        properties = message.properties
        try:
            user_id = properties.get("user_id")
            if user_id is not None and user_id != self.connection.user and \
                    not self.connection.access.impersonator:
                raise PreconditionFailed(
                    f"user_id property set to '{user_id}' but authenticated user was "
                    f"'{self.connection.user}'")
            expiration = (parse_expiration(properties["expiration"])
                          if "expiration" in properties else None)
            mode = properties.get("delivery_mode")
            if mode is not None and mode not in (1, 2):  # rabbit_basic:is_message_persistent
                raise PreconditionFailed(f"invalid message: {{delivery_mode_unknown,{mode}}}")
            if properties.get("reply_to") == REPLY_TO:
                if self.reply_consumer is None:
                    raise PreconditionFailed("fast reply consumer does not exist")
                message.properties = {**properties, "reply_to": self.reply_consumer.address}
                message.encoded_properties = None
        except PreconditionFailed as exc:
            self.vhost.refuse(message, exc)
        return expiration

    def _publish(self, message: Message, mandatory: bool, expiration: float | None,
                 exclude: Container[str] = ()) -> PublishOutcome:
        """Route and enqueue; the outcome's sequence number is left to the caller. Direct
        reply-to's "routed or returned" is decided here, for every surface: a reply counts as
        routed only where the broker's profile makes its address a volatile queue
        (:meth:`~._vhost.VirtualHost.deliver_replies`)."""
        queues = self._route(message.exchange, message, mandatory)
        if exclude:
            queues = [queue for queue in queues if queue.name not in exclude]
        vhost = self.vhost
        leaderless: Sequence[Queue] = ()
        if vhost.broker.nodes_down:  # (a queue whose node is stopped takes nothing,
            node = self.connection.node  # nor one across a partition: :mod:`._partition`)
            queues = [queue for queue in queues
                      if not queue.down and not vhost.across(queue, node)]
            leaderless = [q for q in queues if q.type.replicated and not quorate(q, node)]
            for queue in leaderless:  # (before anything is enqueued anywhere)
                queue.type.check_leaderless_publish(queue)
        if vhost.tracing:
            _firehose.published(self, message, queues)
        if self.confirm_mode and self._publish_faults and _faults.nack(
                self, message, queues):  # a test injected a nack (embroker.faults)
            return PublishOutcome(0, tuple([queue.name for queue in queues]), False)
        replies = (vhost.deliver_replies(message) if not message.exchange
                   and message.routing_key.startswith(REPLY_TO) else ())
        # The statistics of a publish that reached routing (:mod:`._stats`).
        vstats = vhost.stats
        self.stats.publish += 1
        vstats.publish += 1
        exchange = vhost.exchanges.get(message.exchange)
        xstats = exchange.stats if exchange is not None else None
        if xstats is not None:
            xstats.publish_in += 1
        if queues:
            if xstats is not None:
                xstats.publish_out += len(queues)
            accepted = True
            for queue in queues:
                queue.stats.publish += 1
                if leaderless and queue in leaderless:
                    accepted = False  # (no majority: nacked, not enqueued)
                elif not queue.publish(message, expiration, self):
                    accepted = False
            return new_outcome((0, queues[0].name_only if len(queues) == 1 and not replies
                                else (*[queue.name for queue in queues], *replies), accepted,
                                False, False))
        if replies:
            return PublishOutcome(0, replies)  # RabbitMQ 4.2: a volatile queue (not returned)
        if not mandatory:
            self.stats.drop_unroutable += 1
            vstats.drop_unroutable += 1
            return _UNROUTED
        self.stats.return_unroutable += 1
        vstats.return_unroutable += 1
        _history.returned(self.vhost.broker.clock, message)
        if self.listener is not None:
            self.listener(Returned(self.number, _NO_ROUTE.reply_code, _NO_ROUTE.reply_text,
                                   message.exchange, message.routing_key, message))
        return _RETURNED

    def _route_on_node(self, exchange: str, message: Message, mandatory: bool) -> list[Queue]:
        """Route in a cluster of several nodes: the decision the routing recorded (refused
        or not) names the node it was published on, this channel's connection's."""
        trace = self.vhost.broker.trace
        before = trace.total
        try:
            return self.vhost.route(exchange, message, mandatory)
        finally:
            if trace.total > before:
                trace.on_node(self.connection.node.name)

    def check_publish(self, exchange: str, *, queue: str | None = None) -> None:
        """Whether this channel may publish to ``exchange`` at all (to ``queue`` through it,
        when given), checked as basic.publish checks its exchange but without publishing: the
        queue exists, then write permission on the exchange, then the exchange exists and is
        not internal. RabbitMQ 4's AMQP 1.0 checks this when a link to a fixed node attaches
        (``rabbit_amqp_session:ensure_target/4``, ``check_exchange/4``); each publish is checked
        again.

        Raises:
            NotFound: (404) no such queue or exchange.
            AccessRefused: (403) no write permission, or the exchange is internal.
        """
        if queue is not None and not self.vhost.is_volatile_queue(queue):
            self.vhost.lookup_queue(queue, self.connection.node)
        self.connection.access.write_exchange(exchange)
        self.vhost.target_exchange(exchange)

    def confirm_select(self) -> None:
        """confirm.select: from now on every publish is confirmed with a sequence number.

        Raises:
            PreconditionFailed: (406) the channel is transactional.
        """
        if self.tx_mode:
            raise PreconditionFailed("cannot switch from tx to confirm mode")
        self.confirm_mode = True

    # -- tx class ------------------------------------------------------------------------------

    def transaction(self) -> Transaction:
        """A new transaction of this channel's connection, not tied to any channel's mode:
        several may be open at once, and a channel in confirm mode may use one. Pass it as
        ``transaction=`` to :meth:`basic_publish` and the settlements; then
        :meth:`Transaction.commit <._tx.Transaction.commit>` or ``rollback``."""
        return Transaction(self.connection)

    def tx_select(self) -> None:
        """tx.select. Raises PreconditionFailed (406) on a channel in confirm mode."""
        if self.confirm_mode:
            raise PreconditionFailed("cannot switch from confirm to tx mode")
        self.tx_mode = True
        if self._tx is None:
            self._tx = Transaction(self.connection)

    def _check_tx(self) -> None:
        if not self.tx_mode:
            raise PreconditionFailed("channel is not transactional")

    def tx_commit(self) -> None:
        """tx.commit: apply the held publishes and acknowledgements, in order; mandatory
        messages that reach no queue are returned now. Raises PreconditionFailed (406) when the
        channel is not transactional."""
        self._check_tx()
        assert self._tx is not None
        self._tx.commit()

    def tx_rollback(self) -> None:
        """tx.rollback: forget the held publishes; acknowledged messages become unacknowledged
        again (as in RabbitMQ). Raises PreconditionFailed (406) when not transactional."""
        self._check_tx()
        assert self._tx is not None
        self._tx.rollback()

    def _roll_back(self, restored: list[tuple[int, Unacked]], *, requeue: bool) -> None:
        # A transaction rolled back settlements of this channel: the deliveries are
        # unacknowledged again, or (``requeue``) back in their queues; stream queues take no
        # requeue (rabbit_stream_queue:settle/5), theirs stay unacknowledged.
        if requeue:
            back = [pair for pair in restored if pair[1].queue.type.requeues]
            if back:
                self._settle(back, Settlement.REQUEUE, "basic.reject")
            restored = [pair for pair in restored if not pair[1].queue.type.requeues]
        if restored:
            self._unacked = OrderedDict(sorted([*self._unacked.items(), *restored], key=_by_tag))

    def _apply_settlement(self, record: HeldSettlement) -> None:
        # A transaction commits a settlement of this channel.
        if record.annotations:
            _annotate(record.taken, record.annotations)
        self._settle(record.taken, record.settlement, record.method)

    def _take_held_settlements(self) -> list[tuple[int, Unacked]]:
        # The channel closes: the deliveries the open transactions hold for it leave them; its
        # own transaction (tx.select's) goes with it, publishes and all.
        taken: list[tuple[int, Unacked]] = []
        for txn in list(self._transactions):
            taken.extend(txn._release(self, publishes=txn is self._tx))
        self._transactions.clear()
        return taken

    # -- basic class: delivering ---------------------------------------------------------------

    def basic_get(self, queue: str = "", *, no_ack: bool = False) -> Delivery | None:
        """basic.get; ``None`` when the queue is empty (basic.get-empty)."""
        self.connection.access.read_queue(self._queue_name(queue))
        q = self.vhost.queues.get(queue) if queue else None
        if q is None or q.down or self.vhost.broker.nodes_down or (
                q.exclusive_owner is not None and q.exclusive_owner is not self.connection):
            q = self._queue(queue)  # raises, or resolves the empty name
        q.type.check_dequeue(q)
        self._check_quorate(q, "get")
        entry = q.get()
        if entry is None:
            for stats in (self.stats, q.stats, self.vhost.stats):
                stats.get_empty += 1
            return None
        tag = self._next_tag
        self._next_tag = tag + 1
        for stats in (self.stats, q.stats, self.vhost.stats):
            if no_ack:
                stats.get_no_ack += 1
            else:
                stats.get += 1
            if entry.redelivered:
                stats.redeliver += 1
        if no_ack:
            q.settle()
        else:
            self._unacked[tag] = new_unacked((q, entry, None))
        _history.got(self, q.name, entry, tag, no_ack)
        if self.vhost.tracing:
            _firehose.delivered(self, q.name, entry.message, entry.redelivered)
        message = q.outgoing(entry, get=True) if q.rewrites_deliveries else entry.message
        if self._delivery_faults:
            _faults.delivered(self, entry.message)
        return Delivery(tag, entry.redelivered, message.exchange, message.routing_key, message,
                        q.message_count)

    def _deliver(self, consumer: Consumer, queue: Queue, entry: QueuedMessage) -> None:
        tag = self._next_tag
        self._next_tag = tag + 1
        stats, qstats, vstats = self.stats, queue.stats, self.vhost.stats
        if entry.redelivered:
            stats.redeliver += 1
            qstats.redeliver += 1
            vstats.redeliver += 1
        if consumer.no_ack:
            stats.deliver_no_ack += 1
            qstats.deliver_no_ack += 1
            vstats.deliver_no_ack += 1
            queue.settle()
        else:
            stats.deliver += 1
            qstats.deliver += 1
            vstats.deliver += 1
            self._unacked[tag] = new_unacked((queue, entry, consumer))
            consumer.unacked += 1
            self.consumer_unacked += 1
            if self.global_prefetch:
                self._volume += 1
        _history.delivered(self, queue.name, entry.message, consumer.tag, tag, entry.redelivered,
                           consumer.no_ack)
        if self.vhost.tracing:
            _firehose.delivered(self, queue.name, entry.message, entry.redelivered)
        message = queue.outgoing(entry) if queue.rewrites_deliveries else entry.message
        if self.listener is not None:
            self.listener(new_delivered((self.number, consumer.tag, tag, entry.redelivered,
                                         message.exchange, message.routing_key, message,
                                         entry.failures)))
        if self._delivery_faults:
            _faults.delivered(self, entry.message)

    def basic_consume(self, queue: str = "", consumer_tag: str = "", *, no_ack: bool = False,
                      exclusive: bool = False, arguments: dict[str, Any] | None = None,
                      link_credit: bool = False,
                      message_filter: Callable[[Message], bool] | None = None) -> str:
        """basic.consume; returns the consumer tag (server-generated when empty).

        ``message_filter``: on a stream, the messages it refuses are skipped (RabbitMQ 4.1+'s
        filter expressions, ``rabbit_stream_queue:entry_to_msg/6``); other queues ignore it, as
        RabbitMQ's classic and quorum queues do.

        ``link_credit``: the consumer's capacity is an AMQP 1.0 link's credit, none until
        :meth:`basic_credit` gives it some, not basic.qos: a stream then needs no prefetch
        count (RabbitMQ 3.10's 1.0 plugin sets one on every session).

        Raises:
            NotFound: (404) no such queue.
            ResourceLocked: (405) an exclusive queue of another connection.
            AccessRefused: (403) the queue has an exclusive consumer, or has consumers and this
                one asks to be exclusive.
            NotAllowed: (530, closes the connection) the tag is in use on this channel.
        """
        if queue == REPLY_TO:
            return self._consume_replies(consumer_tag, no_ack)
        name = self._queue_name(queue)
        if consumer_tag in self.consumers:  # RabbitMQ's order: the tag, read, the queue
            raise NotAllowed(f"attempt to reuse consumer tag '{consumer_tag}'")
        self.connection.access.read_queue(name)
        q = self._queue(queue)
        self._check_quorate(q, "consume")
        if not consumer_tag:
            consumer_tag = random_name("amq.ctag-")
        if (q.consumer_count or q.single_active) and (
                exclusive or any(c.exclusive for c in q.consumers)):
            # RabbitMQ refuses an exclusive consumer on a single-active-consumer queue too.
            raise AccessRefused(f"{q.resource} in exclusive use")
        arguments = dict(arguments or {})
        q.type.check_consume(q, arguments, no_ack=no_ack, prefetch=self.prefetch_count,
                             global_prefetch=self.global_prefetch, link_credit=link_credit)
        consumer = Consumer(self, q, consumer_tag, no_ack=no_ack, exclusive=exclusive,
                            arguments=arguments, prefetch=self.prefetch_count)
        consumer.message_filter = message_filter
        if link_credit:
            consumer.credit = 0
        self.consumers[consumer_tag] = consumer
        q.add_consumer(consumer)
        events = self.vhost.broker.plugins.events
        if events is not None:
            events.consumer_created(consumer)
        return consumer_tag

    def browse(self, queue: str) -> Browser:
        """Look at a queue's ready messages without taking them (AMQP 1.0's distribution-mode
        ``copy``). Checked as basic.consume is: read permission, then that the queue exists and
        is not another connection's exclusive queue.

        Raises:
            AccessRefused: (403) no read permission on the queue.
            NotFound: (404) no such queue.
            ResourceLocked: (405) an exclusive queue of another connection.
        """
        self.connection.access.read_queue(self._queue_name(queue))
        return Browser(self._queue(queue))

    def _consume_replies(self, consumer_tag: str, no_ack: bool) -> str:
        # Direct reply-to: the pseudo-queue amq.rabbitmq.reply-to delivers replies straight to
        # this channel, without a queue and without acknowledgements.
        if not no_ack:
            raise PreconditionFailed("reply consumer cannot acknowledge")
        if self.reply_consumer is not None:
            raise PreconditionFailed("reply consumer already set")
        reply = self.reply_consumer = ReplyConsumer(self, consumer_tag or random_name("amq.ctag-"))
        self.vhost.reply_consumers[reply.address] = reply
        return reply.tag

    def _stop_replies(self) -> None:
        if self.reply_consumer is not None:
            self.vhost.reply_consumers.pop(self.reply_consumer.address, None)
            self.reply_consumer = None

    def basic_credit(self, consumer_tag: str, credit: int, *, drain: bool = False) -> Credited:
        """Give a consumer link credit, as RabbitMQ's queues take an AMQP 1.0 link's flow
        (``rabbit_amqqueue:credit/5``, v3.10.8; ``rabbit_queue_type:credit``): from now on
        it takes up to ``credit`` messages whatever it holds unacknowledged, those its queue
        has ready at once. With ``drain``, the credit the queue could not fill is used up
        (the queue's ``send_drained``). An unknown tag gets nothing (a link whose consumer
        was cancelled).

        Returns:
            what was delivered at once, drained, and the credit left.
        """
        consumer = self.consumers.get(consumer_tag)
        if consumer is None:
            return Credited(0, 0, 0)
        consumer.set_credit(credit)
        left = consumer.credit or 0
        drained = consumer.drain() if drain else 0
        return Credited(max(0, credit - left), drained, left - drained)

    def start_consumer(self, consumer_tag: str) -> None:
        """Begin deliveries to a consumer once its consume-ok is on its way to the client."""
        consumer = self.consumers.get(consumer_tag)
        if consumer is not None:
            consumer.queue.dispatch()

    def basic_cancel(self, consumer_tag: str) -> None:
        """basic.cancel; an unknown tag is not an error (RabbitMQ answers cancel-ok)."""
        if self.reply_consumer is not None and consumer_tag == self.reply_consumer.tag:
            self._stop_replies()
            return
        consumer = self.consumers.pop(consumer_tag, None)
        if consumer is None:
            return
        queue = consumer.queue
        if not queue.remove_consumer(consumer):  # the queue is gone already
            return
        events = self.vhost.broker.plugins.events
        if events is not None:
            events.consumer_deleted(consumer, self.connection.user)
        if queue.auto_delete and not queue.consumer_count and not queue.deleted:
            self.vhost.delete_queue_object(queue)

    def cancel_by_broker(self, consumer: Consumer) -> None:
        """The consumer's queue was deleted: forget it and tell the client if it listens."""
        if self.consumers.pop(consumer.tag, None) is not None and self.listener is not None:
            self.listener(Cancelled(self.number, consumer.tag))

    def basic_qos(self, prefetch_size: int = 0, prefetch_count: int = 0,
                  global_: bool = False) -> None:
        """basic.qos with RabbitMQ's meaning of ``global``: false limits each consumer created
        from now on (and, as RabbitMQ 3.10, lifts the channel's global limit), true limits all
        the channel's consumers together. A global limit set while the channel holds unacked
        messages counts them, basic.get ones included (which their acks never give back)."""
        if prefetch_size:
            raise NotImplementedAMQP(f"prefetch_size!=0 ({prefetch_size})")
        if global_ and not self.vhost.broker.profile.permits("global_qos"):
            global_ = False  # RabbitMQ 4, global_qos denied: per consumer, no error (v4.1.4
            # rabbit_channel:handle_method(#'basic.qos'{global = true}))
        was_reached = self.global_limit_reached()
        if global_:
            if prefetch_count and not self.global_prefetch:
                self._volume = len(self._unacked)
            self.global_prefetch = prefetch_count
        else:
            self.prefetch_count = prefetch_count
            self.global_prefetch = 0
        if was_reached and not self.global_limit_reached():
            self._resume()

    def global_limit_reached(self) -> bool:
        """Whether the channel's global limit (basic.qos global=true) holds its consumers."""
        return bool(self.global_prefetch) and self._volume >= self.global_prefetch

    def _resume(self) -> None:
        # The global limit has room again: the queues it stopped take this channel's consumers
        # back and go on (RabbitMQ's limiter notifying its queues).
        queues = {id(c.queue): c.queue for c in self.consumers.values()}
        for queue in queues.values():
            if not queue.deleted:
                queue.resume(self)

    # -- acknowledgements ----------------------------------------------------------------------

    def _take_unacked(self, delivery_tag: int, multiple: bool) -> list[tuple[int, Unacked]]:
        unacked = self._unacked
        if multiple:
            if delivery_tag == 0:
                taken = list(unacked.items())
                unacked.clear()
                return taken
            if delivery_tag not in unacked:
                raise PreconditionFailed(f"unknown delivery tag {delivery_tag}")
            taken = []
            while True:
                tag, item = unacked.popitem(last=False)
                taken.append((tag, item))
                if tag == delivery_tag:
                    return taken
        try:
            return [(delivery_tag, unacked.pop(delivery_tag))]
        except KeyError:
            raise PreconditionFailed(f"unknown delivery tag {delivery_tag}") from None

    def _settle(self, taken: list[tuple[int, Unacked]], settlement: Settlement,
                method: str) -> None:
        """Settle deliveries as RabbitMQ's channel does: one group per (queue, consumer tag),
        basic.get ones first, then tags in byte order, each group settled by its queue (which
        gives its consumers their credit back and goes on delivering) before the next; then the
        channel's global limit gets its room back."""
        if len(taken) == 1 and settlement is Settlement.ACK:
            self._ack_one(*taken[0])
            return
        requeue = settlement.requeues
        _history.settled(self, taken, settlement is Settlement.ACK, requeue, method)
        if len(taken) == 1:
            groups: list[list[tuple[int, Unacked]]] = [taken]
        else:
            by_key: dict[tuple[str, str], list[tuple[int, Unacked]]] = {}
            for pair in taken:
                queue, _entry, consumer = pair[1]
                key = (queue.name, "" if consumer is None else "\x00" + consumer.tag)
                by_key.setdefault(key, []).append(pair)
            groups = [by_key[key] for key in sorted(by_key)]
        consumed = 0
        for group in groups:
            queue = group[0][1].queue
            if settlement is Settlement.ACK:
                for stats in (self.stats, queue.stats, self.vhost.stats):
                    stats.ack += len(group)
            regained = False
            for _tag, (_queue, _entry, consumer) in group:
                if consumer is not None:
                    regained |= consumer.prefetch > 0 and not consumer.no_ack and \
                        consumer.unacked == consumer.prefetch
                    consumer.unacked -= 1
                    consumed += 1
            entries = [unacked.entry for _tag, unacked in group]
            if settlement.failed:
                for entry in entries:
                    entry.failures += 1
            if requeue:
                _history.requeued(self.vhost.broker.clock, queue, entries, method)
            if queue.deleted:
                continue
            if regained:
                queue.unblock(self)  # credit back first, as rabbit_queue_consumers
            if settlement is Settlement.ACK:
                queue.settle(len(entries))
            elif requeue:
                queue.requeue(entries)
            else:
                queue.reject(entries)
            if queue.consumer_count:
                queue.dispatch()
        self.consumer_unacked -= consumed
        if consumed and self.global_prefetch:
            self._room_back(consumed)

    def _room_back(self, consumed: int) -> None:
        # ``consumed`` consumer deliveries settled: the global limit (basic.qos global=true)
        # counts them no more, and the queues it stopped go on if it has room now.
        was_reached = self.global_limit_reached()
        self._volume = self._volume - consumed if self._volume else 0  # (RabbitMQ's)
        if was_reached and not self.global_limit_reached():
            self._resume()

    def _ack_one(self, tag: int, unacked: Unacked) -> None:
        # _settle for one acknowledged delivery, without the grouping.
        queue, entry, consumer = unacked
        _history.acked(self, tag, queue, entry)
        self.stats.ack += 1
        queue.stats.ack += 1
        self.vhost.stats.ack += 1
        regained = False
        if consumer is not None:
            regained = consumer.prefetch > 0 and not consumer.no_ack and \
                consumer.unacked == consumer.prefetch
            consumer.unacked -= 1
        if not queue.deleted:
            if regained:
                queue.unblock(self)  # credit back first, as rabbit_queue_consumers
            queue.settle()
            if queue.consumer_count:
                queue.dispatch()
        if consumer is not None:
            self.consumer_unacked -= 1
            if self.global_prefetch:
                self._room_back(1)

    def _settle_or_hold(self, taken: list[tuple[int, Unacked]], settlement: Settlement,
                        method: str, transaction: Transaction | None,
                        annotations: dict[str, Any] | None = None) -> None:
        held = transaction if transaction is not None else self._tx
        if held is not None:
            held._hold(HeldSettlement(self, taken, settlement, method, annotations))
            return
        if annotations:
            _annotate(taken, annotations)
        self._settle(taken, settlement, method)

    def basic_ack(self, delivery_tag: int = 0, multiple: bool = False, *,
                  transaction: Transaction | None = None) -> None:
        """basic.ack; in a transaction (``transaction``, else tx.select's) the deliveries are
        taken at once and settled at commit. Raises PreconditionFailed (406) "unknown delivery
        tag N"."""
        if not multiple and self._tx is None and transaction is None:  # (the hot path)
            unacked = self._unacked.pop(delivery_tag, None)
            if unacked is None:
                raise PreconditionFailed(f"unknown delivery tag {delivery_tag}")
            self._ack_one(delivery_tag, unacked)
            return
        self._settle_or_hold(self._take_unacked(delivery_tag, multiple), Settlement.ACK,
                             "basic.ack", transaction)

    def _check_returns(self, delivery_tag: int, multiple: bool) -> None:
        # Whether each delivery's queue type takes a nack or reject (settle/5).
        unacked = self._unacked
        if multiple:
            items = list(unacked.values()) if delivery_tag == 0 else [
                item for tag, item in unacked.items() if tag <= delivery_tag]
        else:
            item = unacked.get(delivery_tag)
            items = [] if item is None else [item]
        for item in items:
            item.queue.type.check_return(item.queue)

    def basic_nack(self, delivery_tag: int = 0, multiple: bool = False,
                   requeue: bool = True, *, transaction: Transaction | None = None) -> None:
        """basic.nack: requeue the messages to their original positions, or drop them (in a
        transaction, at commit)."""
        self._check_returns(delivery_tag, multiple)
        self._settle_or_hold(self._take_unacked(delivery_tag, multiple),
                             Settlement.REQUEUE if requeue else Settlement.REJECT, "basic.nack",
                             transaction)

    def basic_reject(self, delivery_tag: int, requeue: bool = True, *,
                     transaction: Transaction | None = None) -> None:
        self._check_returns(delivery_tag, False)
        self._settle_or_hold(self._take_unacked(delivery_tag, False),
                             Settlement.REQUEUE if requeue else Settlement.REJECT, "basic.reject",
                             transaction)

    def modify(self, delivery_tag: int, *, delivery_failed: bool = False,
               undeliverable_here: bool = False,
               annotations: dict[str, Any] | None = None,
               transaction: Transaction | None = None) -> None:
        """Settle a delivery with AMQP 1.0's ``modified`` outcome, as RabbitMQ 4 does
        (``rabbit_amqp_session:settle_op_from_outcome/1``, then the queue's ``modify``):
        ``undeliverable_here`` drops it (dead-lettered, reason ``rejected``), else it goes back
        to its queue; ``delivery_failed`` counts one failed delivery on the message first (the
        1.0 header's ``delivery-count``, carried to a dead-letter copy). A quorum queue adds
        ``annotations`` (``x-`` keys) to the message, later deliveries and its dead-letter copy
        included (rabbit_fifo's ``#modify{}``); other queues ignore them, as RabbitMQ 4's
        classic queues do. In a transaction, all of it happens at commit. Raises
        PreconditionFailed (406) "unknown delivery tag N"."""
        if undeliverable_here:
            settlement = Settlement.REJECT if delivery_failed else Settlement.DISCARD
        else:
            settlement = Settlement.REQUEUE_FAILED if delivery_failed else Settlement.REQUEUE
        taken = self._take_unacked(delivery_tag, False)
        self._settle_or_hold(taken, settlement, "modified", transaction,
                             annotations if taken[0][1].queue.keeps_annotations else None)

    def _return_to_queues(self, taken: list[tuple[int, Unacked]], cause: str) -> None:
        # A closing channel's deliveries go back, queue by queue, all at once.
        by_queue: dict[int, tuple[Queue, list[QueuedMessage]]] = {}
        for _tag, (queue, entry, _consumer) in taken:
            by_queue.setdefault(id(queue), (queue, []))[1].append(entry)
        for queue, entries in by_queue.values():
            _history.requeued(self.vhost.broker.clock, queue, entries, cause)
            if not queue.deleted:
                queue.requeue(entries, closed=True)

    def basic_recover(self, requeue: bool = True) -> None:
        """basic.recover / recover-async: requeue everything unacknowledged. RabbitMQ does not
        implement ``requeue=false`` (540 NOT_IMPLEMENTED)."""
        if not requeue:
            raise NotImplementedAMQP("requeue=false")
        taken = list(self._unacked.items())
        self._unacked.clear()
        self._settle(taken, Settlement.REQUEUE, "basic.recover")

    # -- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Cancel the channel's consumers and requeue its unacknowledged messages in their
        original order, marked redelivered. Closing twice does nothing."""
        if not self.is_open:
            return
        self.is_open = False
        self.connection.channels.pop(self.number, None)
        events = self.vhost.broker.plugins.events
        if events is not None and not self.internal:
            events.channel_closed(self)
        self._stop_replies()
        consumers = list(self.consumers.values())
        self.consumers.clear()
        for consumer in consumers:  # no redelivery to this channel while it closes
            consumer.queue.remove_consumer(consumer, dispatch=False)
            if events is not None:
                events.consumer_deleted(consumer, self.connection.user)
        # What an open transaction held goes back too: held acks were never applied.
        taken = sorted([*self._take_held_settlements(), *self._unacked.items()], key=_by_tag)
        self._unacked.clear()
        for _tag, unacked in taken:
            if unacked.consumer is not None:
                unacked.consumer.unacked -= 1
                self.consumer_unacked -= 1
        self._return_to_queues(  # requeued first, then the others take over
            taken, "channel closed" if self.connection.is_open else "connection closed")
        for queue in {id(c.queue): c.queue for c in consumers}.values():
            if queue.deleted:
                continue
            if queue.auto_delete and not queue.consumer_count:
                self.vhost.delete_queue_object(queue)
            elif queue.consumer_count:
                queue.dispatch()

    def release(self, queue: Queue) -> list[QueuedMessage]:
        """Give ``queue`` back the deliveries of it this channel has not settled, because the
        queue no longer reaches the channel's node (a partition, :mod:`._partition`: its
        process saw the channel go down). They are returned, for the caller to requeue; the
        channel keeps their delivery tags, and settling them later changes nothing (the
        queue is not told), as a RabbitMQ channel's ack to a queue across a partition."""
        from ._queue import Queue as Plain  # (a cycle: queues know channels)

        released: list[QueuedMessage] = []
        consumed = 0
        stand_in: Queue | None = None
        for tag, (held, entry, consumer) in self._unacked.items():
            if held is not queue:
                continue
            if stand_in is None:  # (a queue nobody reaches: a settlement of it is nothing)
                stand_in = Plain(self.vhost, queue.name, durable=queue.durable)
                stand_in.deleted = True
            if consumer is not None:
                consumer.unacked -= 1
                consumed += 1
            self._unacked[tag] = Unacked(stand_in, entry, None)
            released.append(entry)
        if consumed:
            self.consumer_unacked -= consumed
            if self.global_prefetch:
                self._room_back(consumed)
        return released

    def outstanding(self) -> list[Unacked]:
        """Every delivery not yet settled: unacknowledged, or acknowledged in an open
        transaction."""
        held = [item for txn in self._transactions for record in txn.records
                if isinstance(record, HeldSettlement) and record.channel is self
                for _tag, item in record.taken]
        return [*self._unacked.values(), *held]

    def _check(self) -> None:
        by_consumers = sum(1 for unacked in self.outstanding() if unacked.consumer is not None)
        assert self.consumer_unacked == by_consumers, f"{self!r}: consumer unacked counts disagree"
        tags = list(self._unacked)
        assert tags == sorted(tags), f"{self!r}: unacked tags out of order"
        for consumer in self.consumers.values():
            if consumer.prefetch and not consumer.no_ack:
                assert consumer.unacked <= consumer.prefetch, f"{consumer!r}: over prefetch"
