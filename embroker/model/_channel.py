"""Channels and consumers: the methods of the exchange, queue, basic, confirm and tx classes.

A :class:`Channel` is what both the wire protocol and the in-process client drive: one method per
AMQP method, RabbitMQ's rules and errors. It never writes to anyone directly; what a client must be
sent without asking (deliveries, returns, confirms, cancels) goes through the callables the owner
sets (``on_deliver``, ``on_return``, ``on_confirm``, ``on_cancel``).

A channel exception raised here leaves the channel as it was; the owner closes it (the protocol
layer with channel.close, the in-process client by marking it closed) and calls :meth:`close`,
which requeues what it had not acknowledged.
"""

from __future__ import annotations

import base64
import os
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, final

from ..errors import (
    AccessRefused,
    NotAllowed,
    NotFound,
    NotImplementedAMQP,
    PreconditionFailed,
)
from ._arguments import parse_expiration, validate_consumer_arguments
from ._message import Message, QueuedMessage

if TYPE_CHECKING:
    from ._connection import Connection
    from ._queue import Queue
    from ._vhost import DeclareOk

__all__ = ["REPLY_TO", "Channel", "Consumer", "Delivery"]

#: on_deliver(consumer_tag, delivery_tag, redelivered, exchange, routing_key, message)
DeliverCallback = Callable[[str, int, bool, str, str, Message], None]
#: on_return(reply_code, reply_text, exchange, routing_key, message)
ReturnCallback = Callable[[int, str, str, str, Message], None]
#: on_confirm(delivery_tag, multiple, ack)
ConfirmCallback = Callable[[int, bool, bool], None]
#: on_cancel(consumer_tag): the broker cancelled a consumer (its queue went away)
CancelCallback = Callable[[str], None]


#: The pseudo-queue of direct reply-to.
REPLY_TO = "amq.rabbitmq.reply-to"


def random_name(prefix: str) -> str:
    """A name like RabbitMQ's server-generated ones: ``amq.gen-`` and 22 URL-safe characters."""
    return prefix + base64.urlsafe_b64encode(os.urandom(16)).decode("ascii").rstrip("=")


@final
class Delivery:
    """A message handed to a client by basic.get (or to an in-process consumer)."""

    __slots__ = ("consumer_tag", "delivery_tag", "exchange", "message", "message_count",
                 "redelivered", "routing_key")

    def __init__(self, delivery_tag: int, redelivered: bool, exchange: str, routing_key: str,
                 message: Message, message_count: int = 0, consumer_tag: str = "") -> None:
        self.delivery_tag = delivery_tag
        self.redelivered = redelivered
        self.exchange = exchange
        self.routing_key = routing_key
        self.message = message
        self.message_count = message_count
        self.consumer_tag = consumer_tag

    @property
    def properties(self) -> dict[str, Any]:
        return self.message.properties

    @property
    def body(self) -> bytes:
        return self.message.body

    def __repr__(self) -> str:
        return (f"<Delivery tag={self.delivery_tag} redelivered={self.redelivered} "
                f"exchange={self.exchange!r} routing_key={self.routing_key!r} "
                f"body={self.message.body[:40]!r}>")


@final
class Consumer:
    """A subscription of a channel to a queue (basic.consume)."""

    __slots__ = ("arguments", "blocked", "channel", "credit", "exclusive", "no_ack", "prefetch",
                 "priority", "queue", "tag", "unacked")

    def __init__(self, channel: Channel, queue: Queue, tag: str, *, no_ack: bool,
                 exclusive: bool, arguments: dict[str, Any], prefetch: int) -> None:
        self.channel = channel
        self.queue = queue
        self.tag = tag
        self.no_ack = no_ack
        self.exclusive = exclusive
        self.arguments = arguments
        self.prefetch = prefetch
        self.unacked = 0
        #: Passed over for lack of room (its queue puts it at the back when it has room again).
        self.blocked = False
        priority = arguments.get("x-priority", 0)
        self.priority: int = priority if isinstance(priority, int) else 0
        #: An AMQP 1.0 receiving link's credit: how many more messages it may be sent. ``None``
        #: (0-9-1 and the in-process client) leaves the capacity to qos.
        self.credit: int | None = None

    def has_capacity(self) -> bool:
        """Whether qos lets this consumer take one more message now. As in RabbitMQ, a reached
        channel-wide (global) limit holds back auto-ack consumers too. A consumer with link
        credit (AMQP 1.0) has room while it has credit, whatever it holds unacknowledged."""
        if self.credit is not None:
            return self.credit > 0
        channel = self.channel
        if channel.global_prefetch and channel.consumer_unacked >= channel.global_prefetch:
            return False
        return self.no_ack or not self.prefetch or self.unacked < self.prefetch

    def deliver(self, queue: Queue, entry: QueuedMessage) -> None:
        if self.credit is not None:
            self.credit -= 1
        self.channel._deliver(self, queue, entry)

    def set_credit(self, credit: int) -> None:
        """Give the consumer link credit (AMQP 1.0 flow): it takes up to ``credit`` messages,
        at once if its queue has them ready."""
        self.credit = credit
        if credit > 0 and not self.queue.deleted:
            if self.blocked:
                self.queue.unblocked(self)
            self.queue.dispatch()

    def __repr__(self) -> str:
        return (f"<Consumer '{self.tag}' on queue '{self.queue.name}' "
                f"(channel {self.channel.number}, {self.unacked} unacked)>")


# An unacknowledged delivery: the queue it came from, its entry, the consumer (None for get).
_Unacked = tuple["Queue", QueuedMessage, "Consumer | None"]


def _by_tag(pair: tuple[int, _Unacked]) -> int:
    return pair[0]


@final
class Channel:
    """The server side of one AMQP channel."""

    def __init__(self, connection: Connection, number: int) -> None:
        self.connection = connection
        self.vhost = connection.vhost
        self.number = number
        self.is_open = True
        self.consumers: dict[str, Consumer] = {}
        #: Delivery tags are handed out in increasing order, so insertion order is tag order:
        #: ``multiple`` acks pop from the front.
        self._unacked: OrderedDict[int, _Unacked] = OrderedDict()
        self._next_tag = 1
        self.prefetch_count = 0  # for consumers created from now on (basic.qos global=false)
        self.global_prefetch = 0  # for all consumers of the channel together (global=true)
        self.consumer_unacked = 0
        self.most_recent_queue: str | None = None
        self.confirm_mode = False
        self._publish_seq = 0
        self.tx_mode = False
        #: What a transaction holds until commit, in order: ("publish", args) or
        #: ("settle", (taken, requeue or None for an ack)).
        self._tx: list[tuple[str, Any]] = []
        #: Direct reply-to: the consumer tag and address of this channel's reply consumer.
        self.reply_consumer_tag: str | None = None
        self.reply_address: str | None = None
        self.on_deliver: DeliverCallback | None = None
        self.on_return: ReturnCallback | None = None
        self.on_confirm: ConfirmCallback | None = None
        self.on_cancel: CancelCallback | None = None

    def __repr__(self) -> str:
        state = "open" if self.is_open else "closed"
        return (f"<Channel {self.number} of {self.connection.name}, {state}, "
                f"{len(self.consumers)} consumers, {len(self._unacked)} unacked>")

    @property
    def unacked_tags(self) -> list[int]:
        return list(self._unacked)

    # -- names ---------------------------------------------------------------------------------

    def _queue_name(self, name: str) -> str:
        # An empty queue name means the channel's most recently declared queue (AMQP 0-9-1).
        if name:
            return name
        if self.most_recent_queue is None:
            raise NotFound("no previously declared queue")
        return self.most_recent_queue

    def _queue(self, name: str, *, exclusive_check: bool = True) -> Queue:
        queue = self.vhost.lookup_queue(self._queue_name(name))
        if exclusive_check:
            self.vhost.check_exclusive_access(queue, self.connection)
        return queue

    # -- exchange class ------------------------------------------------------------------------

    def exchange_declare(self, exchange: str, exchange_type: str = "direct", *,
                         passive: bool = False, durable: bool = False, auto_delete: bool = False,
                         internal: bool = False, arguments: dict[str, Any] | None = None) -> None:
        """exchange.declare. Raises NotFound (passive, missing), AccessRefused (``amq.`` names,
        the default exchange), PreconditionFailed (not equivalent), CommandInvalid (unknown type).
        """
        self.vhost.declare_exchange(exchange, exchange_type, passive=passive, durable=durable,
                                    auto_delete=auto_delete, internal=internal,
                                    arguments=arguments or {})

    def exchange_delete(self, exchange: str, *, if_unused: bool = False) -> None:
        self.vhost.delete_exchange(exchange, if_unused=if_unused)

    def exchange_bind(self, destination: str, source: str, routing_key: str = "",
                      arguments: dict[str, Any] | None = None) -> None:
        self.vhost.bind(source, "exchange", destination, routing_key, arguments or {},
                        self.connection)

    def exchange_unbind(self, destination: str, source: str, routing_key: str = "",
                        arguments: dict[str, Any] | None = None) -> None:
        self.vhost.unbind(source, "exchange", destination, routing_key, arguments or {},
                          self.connection)

    # -- queue class ---------------------------------------------------------------------------

    def queue_declare(self, queue: str = "", *, passive: bool = False, durable: bool = False,
                      exclusive: bool = False, auto_delete: bool = False,
                      arguments: dict[str, Any] | None = None) -> DeclareOk:
        """queue.declare; returns the name (server-generated for ``""``) and the counts."""
        result = self.vhost.declare_queue(
            queue, self.connection, passive=passive, durable=durable, exclusive=exclusive,
            auto_delete=auto_delete, arguments=arguments or {})
        self.most_recent_queue = result.queue
        return result

    def queue_bind(self, queue: str, exchange: str, routing_key: str = "",
                   arguments: dict[str, Any] | None = None) -> None:
        if not queue and not routing_key and self.most_recent_queue is not None:
            routing_key = self.most_recent_queue
        self.vhost.bind(exchange, "queue", self._queue_name(queue), routing_key,
                        arguments or {}, self.connection)

    def queue_unbind(self, queue: str, exchange: str, routing_key: str = "",
                     arguments: dict[str, Any] | None = None) -> None:
        if not queue and not routing_key and self.most_recent_queue is not None:
            routing_key = self.most_recent_queue
        self.vhost.unbind(exchange, "queue", self._queue_name(queue), routing_key,
                          arguments or {}, self.connection)

    def queue_purge(self, queue: str = "") -> int:
        return self._queue(queue).purge()

    def queue_delete(self, queue: str = "", *, if_unused: bool = False,
                     if_empty: bool = False) -> int:
        return self.vhost.delete_queue(self._queue_name(queue), self.connection,
                                       if_unused=if_unused, if_empty=if_empty)

    # -- basic class: publishing ---------------------------------------------------------------

    def basic_publish(self, exchange: str, routing_key: str, body: bytes,
                      properties: dict[str, Any] | None = None, *, mandatory: bool = False,
                      immediate: bool = False, encoded_properties: bytes | None = None,
                      amqp10: object | None = None, origin: str | None = None) -> int:
        """basic.publish; returns the publish sequence number in confirm mode, else 0.
        In a transaction the message is held until commit. ``amqp10`` and ``origin`` are what
        the AMQP 1.0 layer keeps on the message (see :class:`Message`).

        Raises:
            NotFound: (404) no such exchange.
            AccessRefused: (403) the exchange is internal.
            PreconditionFailed: (406) a ``CC``/``BCC`` header that is not an array, or a
                ``user_id`` that is not the connection's user.
            NotImplementedAMQP: (540) ``immediate`` is set, as in RabbitMQ 3.
        """
        if immediate:
            raise NotImplementedAMQP("immediate=true")
        if properties and "user_id" in properties and properties["user_id"] != self.connection.user:
            raise PreconditionFailed(
                f"user_id property set to '{properties['user_id']}' but authenticated user was "
                f"'{self.connection.user}'")
        expiration = None
        if properties:
            if "expiration" in properties:
                expiration = parse_expiration(properties["expiration"])
            if properties.get("reply_to") == REPLY_TO:
                if self.reply_address is None:
                    raise PreconditionFailed("fast reply consumer does not exist")
                properties = {**properties, "reply_to": self.reply_address}
                encoded_properties = None
        message = Message(exchange, routing_key, properties if properties is not None else {},
                          body, encoded_properties)
        if amqp10 is not None or origin is not None:
            message.amqp10, message.origin = amqp10, origin
        if self.tx_mode:
            self.vhost.check_publishable(exchange, message)
            self._tx.append(("publish", (message, mandatory, expiration)))
            return 0
        accepted = self._publish(message, mandatory, expiration)
        if self.confirm_mode:
            self._publish_seq += 1
            if self.on_confirm is not None:
                # RabbitMQ coalesces a nack with everything unconfirmed before it: with nothing
                # else outstanding, that is multiple=true for this one message.
                self.on_confirm(self._publish_seq, not accepted, accepted)
            return self._publish_seq
        return 0

    def _publish(self, message: Message, mandatory: bool, expiration: float | None) -> bool:
        """Route and enqueue; False when a queue refused the message (overflow)."""
        queues = self.vhost.route(message.exchange, message, mandatory)
        if not message.exchange and message.routing_key.startswith(REPLY_TO):
            self.vhost.deliver_replies(message)  # (not counted as routed: see deliver_replies)
        if queues:
            accepted = True
            for queue in queues:
                if not queue.publish(message, expiration):
                    accepted = False
            return accepted
        if mandatory and self.on_return is not None:
            self.on_return(312, "NO_ROUTE", message.exchange, message.routing_key, message)
        return True

    def confirm_select(self) -> None:
        """confirm.select: from now on every publish is confirmed with a sequence number.

        Raises:
            PreconditionFailed: (406) the channel is transactional.
        """
        if self.tx_mode:
            raise PreconditionFailed("cannot switch from tx to confirm mode")
        self.confirm_mode = True

    # -- tx class ------------------------------------------------------------------------------

    def tx_select(self) -> None:
        """tx.select. Raises PreconditionFailed (406) on a channel in confirm mode."""
        if self.confirm_mode:
            raise PreconditionFailed("cannot switch from confirm to tx mode")
        self.tx_mode = True

    def _check_tx(self) -> None:
        if not self.tx_mode:
            raise PreconditionFailed("channel is not transactional")

    def tx_commit(self) -> None:
        """tx.commit: apply the held publishes and acknowledgements, in order; mandatory
        messages that reach no queue are returned now. Raises PreconditionFailed (406) when the
        channel is not transactional."""
        self._check_tx()
        held, self._tx = self._tx, []
        for kind, args in held:
            if kind == "publish":
                self._publish(*args)
            else:
                self._settle(*args)

    def tx_rollback(self) -> None:
        """tx.rollback: forget the held publishes; acknowledged messages become unacknowledged
        again (as in RabbitMQ). Raises PreconditionFailed (406) when not transactional."""
        self._check_tx()
        held, self._tx = self._tx, []
        restored = [pair for kind, args in held if kind == "settle" for pair in args[0]]
        if restored:
            merged = sorted([*self._unacked.items(), *restored], key=_by_tag)
            self._unacked = OrderedDict(merged)

    # -- basic class: delivering ---------------------------------------------------------------

    def _next_delivery_tag(self) -> int:
        tag = self._next_tag
        self._next_tag = tag + 1
        return tag

    def basic_get(self, queue: str = "", *, no_ack: bool = False) -> Delivery | None:
        """basic.get; ``None`` when the queue is empty (basic.get-empty)."""
        q = self.vhost.queues.get(queue) if queue else None
        if q is None or (q.exclusive_owner is not None and q.exclusive_owner is not self.connection):
            q = self._queue(queue)  # raises, or resolves the empty name
        entry = q.get()
        if entry is None:
            return None
        tag = self._next_delivery_tag()
        if no_ack:
            q.settle()
        else:
            self._unacked[tag] = (q, entry, None)
        message = q.outgoing(entry, get=True) if q.quorum else entry.message
        return Delivery(tag, entry.redelivered, message.exchange, message.routing_key, message,
                        len(q._ready))

    def _deliver(self, consumer: Consumer, queue: Queue, entry: QueuedMessage) -> None:
        tag = self._next_tag
        self._next_tag = tag + 1
        if consumer.no_ack:
            queue.settle()
        else:
            self._unacked[tag] = (queue, entry, consumer)
            consumer.unacked += 1
            self.consumer_unacked += 1
        message = queue.outgoing(entry) if queue.quorum else entry.message
        if self.on_deliver is not None:
            self.on_deliver(consumer.tag, tag, entry.redelivered, message.exchange,
                            message.routing_key, message)

    def basic_consume(self, queue: str = "", consumer_tag: str = "", *, no_ack: bool = False,
                      exclusive: bool = False, arguments: dict[str, Any] | None = None) -> str:
        """basic.consume; returns the consumer tag (server-generated when empty).

        Raises:
            NotFound: (404) no such queue.
            ResourceLocked: (405) an exclusive queue of another connection.
            AccessRefused: (403) the queue has an exclusive consumer, or has consumers and this
                one asks to be exclusive.
            NotAllowed: (530, closes the connection) the tag is in use on this channel.
        """
        if queue == REPLY_TO:
            return self._consume_replies(consumer_tag, no_ack)
        q = self._queue(queue)
        if not consumer_tag:
            consumer_tag = random_name("amq.ctag-")
        elif consumer_tag in self.consumers:
            raise NotAllowed(f"attempt to reuse consumer tag '{consumer_tag}'")
        if (q.consumer_count or q.single_active) and (
                exclusive or any(c.exclusive for c in q.consumers)):
            # RabbitMQ refuses an exclusive consumer on a single-active-consumer queue too.
            raise AccessRefused(f"queue '{q.name}' in vhost '{self.vhost.name}' in exclusive use")
        arguments = dict(arguments or {})
        validate_consumer_arguments(f"queue '{q.name}' in vhost '{self.vhost.name}'", arguments)
        consumer = Consumer(self, q, consumer_tag, no_ack=no_ack, exclusive=exclusive,
                            arguments=arguments, prefetch=self.prefetch_count)
        self.consumers[consumer_tag] = consumer
        q.add_consumer(consumer)
        return consumer_tag

    def _consume_replies(self, consumer_tag: str, no_ack: bool) -> str:
        # Direct reply-to: the pseudo-queue amq.rabbitmq.reply-to delivers replies straight to
        # this channel, without a queue and without acknowledgements.
        if not no_ack:
            raise PreconditionFailed("reply consumer cannot acknowledge")
        if self.reply_address is not None:
            raise PreconditionFailed("reply consumer already set")
        self.reply_consumer_tag = consumer_tag or random_name("amq.ctag-")
        self.reply_address = f"{REPLY_TO}.{random_name('')}.{random_name('')}"
        self.vhost.reply_channels[self.reply_address] = self
        return self.reply_consumer_tag

    def _stop_replies(self) -> None:
        if self.reply_address is not None:
            self.vhost.reply_channels.pop(self.reply_address, None)
        self.reply_address = self.reply_consumer_tag = None

    def deliver_reply(self, message: Message) -> None:
        """Deliver a reply published to this channel's reply-to address. As RabbitMQ, it does
        not take a delivery tag of its own (the channel's next one is shown, unused)."""
        if self.on_deliver is not None and self.reply_consumer_tag is not None:
            self.on_deliver(self.reply_consumer_tag, self._next_tag, False, message.exchange,
                            message.routing_key, message)

    def start_consumer(self, consumer_tag: str) -> None:
        """Begin deliveries to a consumer once its consume-ok is on its way to the client."""
        consumer = self.consumers.get(consumer_tag)
        if consumer is not None:
            consumer.queue.dispatch()

    def basic_cancel(self, consumer_tag: str) -> None:
        """basic.cancel; an unknown tag is not an error (RabbitMQ answers cancel-ok)."""
        if consumer_tag == self.reply_consumer_tag:
            self._stop_replies()
            return
        consumer = self.consumers.pop(consumer_tag, None)
        if consumer is not None:
            self._remove_consumer(consumer)

    def _remove_consumer(self, consumer: Consumer) -> None:
        queue = consumer.queue
        if not queue.remove_consumer(consumer):  # the queue is gone already
            return
        if queue.auto_delete and not queue.consumer_count and not queue.deleted:
            self.vhost.delete_queue_object(queue)

    def cancel_by_broker(self, consumer: Consumer) -> None:
        """The consumer's queue was deleted: forget it and tell the client if it listens."""
        if self.consumers.pop(consumer.tag, None) is not None and self.on_cancel is not None:
            self.on_cancel(consumer.tag)

    def basic_qos(self, prefetch_size: int = 0, prefetch_count: int = 0,
                  global_: bool = False) -> None:
        """basic.qos with RabbitMQ's meaning of ``global``: false limits each consumer created
        from now on, true limits all the channel's consumers together."""
        if prefetch_size:
            raise NotImplementedAMQP(f"prefetch_size!=0 ({prefetch_size})")
        if global_:
            self.global_prefetch = prefetch_count
        else:
            self.prefetch_count = prefetch_count
            self.global_prefetch = 0  # RabbitMQ 3.10: a per-consumer qos lifts the channel's
        self._dispatch_own_queues()

    def _dispatch_own_queues(self) -> None:
        seen: set[int] = set()
        for consumer in list(self.consumers.values()):
            queue = consumer.queue
            if id(queue) not in seen:
                seen.add(id(queue))
                queue.dispatch()

    # -- acknowledgements ----------------------------------------------------------------------

    def _take_unacked(self, delivery_tag: int, multiple: bool) -> list[tuple[int, _Unacked]]:
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

    def _release(self, taken: list[tuple[int, _Unacked]]) -> None:
        freed = 0
        for _tag, (_queue, _entry, consumer) in taken:
            if consumer is not None:
                consumer.unacked -= 1
                freed += 1
                if consumer.blocked and consumer.has_capacity():
                    consumer.queue.unblocked(consumer)
        self.consumer_unacked -= freed
        if freed and self.global_prefetch:
            for consumer in self.consumers.values():
                if consumer.blocked and consumer.has_capacity():
                    consumer.queue.unblocked(consumer)

    def _settle(self, taken: list[tuple[int, _Unacked]], requeue: bool | None) -> None:
        # requeue None: acknowledged; True: back to the queue; False: dropped.
        self._release(taken)
        if requeue is None:
            for _tag, (queue, _entry, _consumer) in taken:
                queue.settle()
        else:
            self._settle_rejected(taken, requeue)
        if not self.consumers:
            return
        if self.global_prefetch:
            self._dispatch_own_queues()  # room on the channel: any of its consumers may take more
            return
        # Only the consumers whose deliveries were settled have gained room.
        if len(taken) == 1:
            consumer = taken[0][1][2]
            if consumer is not None and not consumer.queue.deleted:
                consumer.queue.dispatch()
            return
        queues = {id(c.queue): c.queue for _tag, (_q, _e, c) in taken if c is not None}
        for queue in queues.values():
            if not queue.deleted:
                queue.dispatch()

    def basic_ack(self, delivery_tag: int = 0, multiple: bool = False) -> None:
        """basic.ack. Raises PreconditionFailed (406) "unknown delivery tag N"."""
        taken = self._take_unacked(delivery_tag, multiple)
        if self.tx_mode:
            self._tx.append(("settle", (taken, None)))
        else:
            self._settle(taken, None)

    def basic_nack(self, delivery_tag: int = 0, multiple: bool = False,
                   requeue: bool = True) -> None:
        """basic.nack: requeue the messages to their original positions, or drop them."""
        taken = self._take_unacked(delivery_tag, multiple)
        if self.tx_mode:
            self._tx.append(("settle", (taken, requeue)))
        else:
            self._settle(taken, requeue)

    def basic_reject(self, delivery_tag: int, requeue: bool = True) -> None:
        self.basic_nack(delivery_tag, False, requeue)

    def _settle_rejected(self, taken: list[tuple[int, _Unacked]], requeue: bool) -> None:
        by_queue: dict[int, tuple[Queue, list[QueuedMessage]]] = {}
        for _tag, (queue, entry, _consumer) in taken:
            by_queue.setdefault(id(queue), (queue, []))[1].append(entry)
        for queue, entries in by_queue.values():
            if queue.deleted:
                continue
            if requeue:
                queue.requeue(entries)
            else:
                queue.reject(entries)

    def basic_recover(self, requeue: bool = True) -> None:
        """basic.recover / recover-async: requeue everything unacknowledged. RabbitMQ does not
        implement ``requeue=false`` (540 NOT_IMPLEMENTED)."""
        if not requeue:
            raise NotImplementedAMQP("requeue=false")
        taken = list(self._unacked.items())
        self._unacked.clear()
        self._settle(taken, True)

    # -- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Cancel the channel's consumers and requeue its unacknowledged messages in their
        original order, marked redelivered. Closing twice does nothing."""
        if not self.is_open:
            return
        self.is_open = False
        self.connection.channels.pop(self.number, None)
        self._stop_replies()
        consumers = list(self.consumers.values())
        self.consumers.clear()
        for consumer in consumers:  # no redelivery to this channel while it closes
            consumer.queue.remove_consumer(consumer, dispatch=False)
        # What an open transaction held goes back too: held acks were never applied.
        taken = [pair for kind, args in self._tx if kind == "settle" for pair in args[0]]
        self._tx = []
        taken = sorted([*taken, *self._unacked.items()], key=_by_tag)
        self._unacked.clear()
        self._release(taken)
        self._settle_rejected(taken, True)  # requeued first, then the others take over
        for queue in {id(c.queue): c.queue for c in consumers}.values():
            if queue.deleted:
                continue
            if queue.auto_delete and not queue.consumer_count:
                self.vhost.delete_queue_object(queue)
            elif queue.consumer_count:
                queue.dispatch()

    def outstanding(self) -> list[_Unacked]:
        """Every delivery not yet settled: unacknowledged, or acknowledged in an open
        transaction."""
        held = [item for kind, args in self._tx if kind == "settle" for _tag, item in args[0]]
        return [*self._unacked.values(), *held]

    def _check(self) -> None:
        by_consumers = sum(1 for _q, _e, c in self.outstanding() if c is not None)
        assert self.consumer_unacked == by_consumers, f"{self!r}: consumer unacked counts disagree"
        tags = list(self._unacked)
        assert tags == sorted(tags), f"{self!r}: unacked tags out of order"
        for consumer in self.consumers.values():
            if consumer.prefetch and not consumer.no_ack:
                assert consumer.unacked <= consumer.prefetch, f"{consumer!r}: over prefetch"
