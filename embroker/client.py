"""The in-process client: pika's method names over the broker model, with no bytes at all.

>>> from embroker import Broker
>>> ch = Broker().connect().channel()
>>> ch.queue_declare("jobs").queue
'jobs'
>>> ch.basic_publish("", "jobs", b"hello")
>>> ch.basic_get("jobs", auto_ack=True).body
b'hello'

Errors are the exceptions of :mod:`embroker.errors` with ``reply_code`` and ``reply_text``; as on
the wire, a channel exception closes the channel and a connection exception the connection.
Consumer callbacks run on the caller's thread after the call that caused the delivery returns,
or when :meth:`Connection.process_data_events` is called (deliveries caused by other threads).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, final

from .amqp091._properties import encode_properties
from .errors import (
    AMQPError,
    ChannelClosed,
    ChannelException,
    ConnectionClosed,
    NackError,
    UnroutableError,
    add_note,
)
from .model import (
    PROPERTY_NAMES,
    Cancelled,
    ChannelEvent,
    Confirmed,
    DeclareOk,
    Delivered,
    Delivery,
    Message,
    Returned,
)

if TYPE_CHECKING:
    from .model import Broker, Node
    from .model import Channel as ModelChannel
    from .model import Connection as ModelConnection

__all__ = ["Channel", "ChannelClosed", "Connection", "ConnectionClosed", "ReturnedMessage"]

P = ParamSpec("P")
R = TypeVar("R")

#: on_message_callback(channel, delivery, properties, body), as pika's.
MessageCallback = Callable[["Channel", Delivery, dict[str, Any], bytes], None]



@final
class ReturnedMessage:
    """A mandatory message that reached no queue, as basic.return reports it."""

    __slots__ = ("body", "exchange", "properties", "reply_code", "reply_text", "routing_key")

    def __init__(self, reply_code: int, reply_text: str, exchange: str, routing_key: str,
                 message: Message) -> None:
        self.reply_code = reply_code
        self.reply_text = reply_text
        self.exchange = exchange
        self.routing_key = routing_key
        self.properties = message.properties
        self.body = message.body

    def __repr__(self) -> str:
        return (f"<ReturnedMessage {self.reply_code} {self.reply_text} exchange={self.exchange!r}"
                f" routing_key={self.routing_key!r} body={self.body[:40]!r}>")


def _model_call(method: Callable[Concatenate[Channel, P], R]) -> Callable[Concatenate[Channel, P], R]:
    """Run a channel method under the broker lock, with AMQP's error rules, then run the
    consumer callbacks it caused."""

    def wrapper(self: Channel, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._locked:
            if not self._model.is_open:
                self._check_open()
            try:
                result = method(self, *args, **kwargs)
            except AMQPError as exc:
                self._failed(exc, method.__name__)
                raise
        if self._pending:
            self.connection.process_data_events()
        return result

    wrapper.__name__ = method.__name__
    wrapper.__qualname__ = method.__qualname__
    wrapper.__doc__ = method.__doc__
    return wrapper


def _properties(properties: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """The properties the broker keeps, and their wire encoding: what cannot be sent over AMQP
    0-9-1 (a header of 2**70, a priority of 300...) is refused here, at publish, rather than
    poisoning the queue for every consumer that comes later."""
    unknown = set(properties) - set(PROPERTY_NAMES)
    if unknown:
        raise TypeError(f"unknown message properties {sorted(unknown)}; "
                        f"the basic properties are {', '.join(PROPERTY_NAMES)}")
    props = {k: v for k, v in properties.items() if v is not None}
    headers = props.get("headers")
    if headers is not None:
        props["headers"] = dict(headers)  # the broker keeps its own copy
    try:
        encoded = encode_properties(props)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"these properties cannot be sent over AMQP 0-9-1: {exc}") from None
    return props, encoded


@final
class Connection:
    """An in-process connection to a virtual host of a broker (``broker.connect()``)."""

    def __init__(self, broker: Broker, vhost: str = "/", *, user: str | None = None,
                 client_properties: dict[str, Any] | None = None,
                 node: Node | str | None = None) -> None:
        self.broker = broker
        props = {"product": "embroker in-process client",
                 "capabilities": {"consumer_cancel_notify": True, "basic.nack": True,
                                  "publisher_confirms": True}}
        props.update(client_properties or {})
        with broker.locked():
            self._model: ModelConnection = broker.open_connection(
                vhost, user=user, client_properties=props,
                node=broker.node_named(node) if isinstance(node, str) else node)
        self._channel_numbers = itertools.count(1)
        self._channels: dict[int, Channel] = {}
        self._pending: deque[tuple[Channel, ChannelEvent]] = deque()
        self._dispatching = False
        self.closed_by: AMQPError | None = None

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<in-process {self._model!r}>"

    @property
    def is_open(self) -> bool:
        return self._model.is_open

    @property
    def model(self) -> ModelConnection:
        """The broker-side connection."""
        return self._model

    def channel(self) -> Channel:
        """Open a new channel."""
        self._check_open()
        with self.broker.locked():
            number = next(self._channel_numbers)
            channel = Channel(self, self._model.open_channel(number))
        self._channels[number] = channel
        return channel

    def close(self) -> None:
        """Close the connection: channels close, unacknowledged messages are requeued and
        exclusive queues deleted."""
        with self.broker.locked():
            self._model.close()

    def _closed_by_broker(self, exc: AMQPError) -> None:
        self.closed_by = exc
        self._model.close()

    def _check_open(self) -> None:
        if not self._model.is_open:
            raise ConnectionClosed(self.closed_by or self._model.closed_by)

    def process_data_events(self) -> None:
        """Run the consumer, return and cancel callbacks that are waiting, in order."""
        if self._dispatching:
            return  # the outer call drains the queue
        self._dispatching = True
        try:
            pending = self._pending
            while pending:
                channel, event = pending.popleft()
                channel._handle(event)
        finally:
            self._dispatching = False


@final
class Channel:
    """An in-process channel with pika's method names and keywords."""

    def __init__(self, connection: Connection, model: ModelChannel) -> None:
        self.connection = connection
        self._model = model
        self._locked = connection.broker.locked()
        self._pending = connection._pending
        self.closed_by: AMQPError | None = None
        #: Mandatory messages that came back unroutable, oldest first.
        self.returned: list[ReturnedMessage] = []
        #: Publisher confirms received, as (delivery_tag, multiple, ack) tuples.
        self.confirms: list[tuple[int, bool, bool]] = []
        #: Consumer tags the broker cancelled (their queue was deleted).
        self.cancelled: list[str] = []
        self._callbacks: dict[str, MessageCallback] = {}
        self._on_return: list[Callable[[Channel, ReturnedMessage], None]] = []
        model.listener = self._on_event

    def __repr__(self) -> str:
        return f"<in-process {self._model!r}>"

    @property
    def channel_number(self) -> int:
        return self._model.number

    @property
    def is_open(self) -> bool:
        return self._model.is_open and self.connection.is_open

    @property
    def is_closed(self) -> bool:
        return not self.is_open

    @property
    def model(self) -> ModelChannel:
        """The broker-side channel."""
        return self._model

    def _check_open(self) -> None:
        self.connection._check_open()
        if not self._model.is_open:
            raise ChannelClosed(self.closed_by)


    def _failed(self, exc: AMQPError, method: str) -> None:
        # As on the wire: a channel exception closes the channel, a connection exception the
        # connection. (Under the broker's lock.) A 404 names the name most likely meant.
        if exc.missing is not None:
            meant = self._model.vhost.suggest(*exc.missing)
            if meant is not None:
                add_note(exc, f"did you mean {exc.missing[0]} '{meant}'?")
        model = self.connection._model
        self._model.vhost.broker.incidents.record(
            f"in-process {model.name} (user '{model.user}', vhost '{model.vhost.name}')",
            exc.reply_code, exc.reply_text,
            channel=self._model.number if isinstance(exc, ChannelException) else 0,
            method=f"{method}()")
        if isinstance(exc, ChannelException):
            self.closed_by = exc
            self._model.close()
        else:
            self.connection._closed_by_broker(exc)

    def close(self) -> None:
        """Close the channel; its unacknowledged messages are requeued."""
        with self._locked:
            self._model.close()

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- callbacks -----------------------------------------------------------------------------

    def _on_event(self, event: ChannelEvent) -> None:
        # From the model, under the broker lock: confirms are recorded at once, the rest runs
        # the client's callbacks once the call that caused them has returned.
        if isinstance(event, Confirmed):
            self.confirms.append((event.delivery_tag, event.multiple, event.ack))
        else:
            self._pending.append((self, event))

    def _handle(self, event: ChannelEvent) -> None:
        if isinstance(event, Delivered):
            callback = self._callbacks.get(event.consumer_tag)
            if callback is not None:
                message = event.message
                delivery = Delivery(event.delivery_tag, event.redelivered, event.exchange,
                                    event.routing_key, message, consumer_tag=event.consumer_tag)
                callback(self, delivery, message.properties, message.body)
        elif isinstance(event, Returned):
            returned = ReturnedMessage(event.reply_code, event.reply_text, event.exchange,
                                       event.routing_key, event.message)
            self.returned.append(returned)
            for on_return in self._on_return:
                on_return(self, returned)
        elif isinstance(event, Cancelled):
            self._callbacks.pop(event.consumer_tag, None)
            self.cancelled.append(event.consumer_tag)

    def add_on_return_callback(self, callback: Callable[[Channel, ReturnedMessage], None]) -> None:
        """Call ``callback(channel, returned)`` for every mandatory message that comes back."""
        self._on_return.append(callback)

    # -- exchange class ------------------------------------------------------------------------

    @_model_call
    def exchange_declare(self, exchange: str, exchange_type: str = "direct",
                         passive: bool = False, durable: bool = False, auto_delete: bool = False,
                         internal: bool = False, arguments: dict[str, Any] | None = None) -> None:
        """Declare an exchange (exchange.declare)."""
        self._model.exchange_declare(exchange, exchange_type, passive=passive, durable=durable,
                                     auto_delete=auto_delete, internal=internal,
                                     arguments=arguments)

    @_model_call
    def exchange_delete(self, exchange: str = "", if_unused: bool = False) -> None:
        """Delete an exchange (exchange.delete)."""
        self._model.exchange_delete(exchange, if_unused=if_unused)

    @_model_call
    def exchange_bind(self, destination: str, source: str, routing_key: str = "",
                      arguments: dict[str, Any] | None = None) -> None:
        """Bind exchange ``destination`` to exchange ``source`` (exchange.bind)."""
        self._model.exchange_bind(destination, source, routing_key, arguments)

    @_model_call
    def exchange_unbind(self, destination: str = "", source: str = "", routing_key: str = "",
                        arguments: dict[str, Any] | None = None) -> None:
        """Remove an exchange-to-exchange binding (exchange.unbind)."""
        self._model.exchange_unbind(destination, source, routing_key, arguments)

    # -- queue class ---------------------------------------------------------------------------

    @_model_call
    def queue_declare(self, queue: str = "", passive: bool = False, durable: bool = False,
                      exclusive: bool = False, auto_delete: bool = False,
                      arguments: dict[str, Any] | None = None) -> DeclareOk:
        """Declare a queue; returns ``.queue``, ``.message_count`` and ``.consumer_count``."""
        return self._model.queue_declare(queue, passive=passive, durable=durable,
                                         exclusive=exclusive, auto_delete=auto_delete,
                                         arguments=arguments)

    @_model_call
    def queue_bind(self, queue: str, exchange: str, routing_key: str | None = None,
                   arguments: dict[str, Any] | None = None) -> None:
        """Bind a queue to an exchange; ``routing_key`` defaults to the queue name, as pika's."""
        self._model.queue_bind(queue, exchange, queue if routing_key is None else routing_key,
                               arguments)

    @_model_call
    def queue_unbind(self, queue: str, exchange: str = "", routing_key: str | None = None,
                     arguments: dict[str, Any] | None = None) -> None:
        """Remove a queue binding; ``routing_key`` defaults to the queue name, as pika's."""
        self._model.queue_unbind(queue, exchange, queue if routing_key is None else routing_key,
                                 arguments)

    @_model_call
    def queue_purge(self, queue: str = "") -> int:
        """Drop the queue's ready messages; returns how many."""
        return self._model.queue_purge(queue)

    @_model_call
    def queue_delete(self, queue: str = "", if_unused: bool = False,
                     if_empty: bool = False) -> int:
        """Delete a queue; returns how many ready messages it held."""
        return self._model.queue_delete(queue, if_unused=if_unused, if_empty=if_empty)

    # -- basic class ---------------------------------------------------------------------------

    # basic.publish, basic.get and basic.ack are the hot path: they do what @_model_call does,
    # written out to save a call layer per message.

    def basic_publish(self, exchange: str, routing_key: str, body: bytes | str,
                      properties: dict[str, Any] | None = None, mandatory: bool = False) -> None:
        """Publish a message; ``properties`` is a dict of basic property names.

        In confirm mode (:meth:`confirm_delivery`), as pika's ``BlockingChannel``: a mandatory
        message that comes back raises :class:`~embroker.errors.UnroutableError`, a nack
        :class:`~embroker.errors.NackError` (after the return callbacks have run).
        """
        if type(body) is not bytes:
            body = body.encode("utf-8") if isinstance(body, str) else bytes(body)
        props, encoded = _properties(properties) if properties else ({}, None)
        model = self._model
        with self._locked:
            if not model.is_open:
                self._check_open()
            confirming = model.confirm_mode
            pending = len(self._pending)
            try:
                published = model.basic_publish(exchange, routing_key, body, props,
                                                mandatory=mandatory, encoded_properties=encoded)
            except AMQPError as exc:
                self._failed(exc, "basic_publish")
                raise
            if confirming:
                # The message itself comes back with the return callbacks' event.
                returned = [ReturnedMessage(e.reply_code, e.reply_text, e.exchange,
                                            e.routing_key, e.message)
                            for channel, e in list(self._pending)[pending:]
                            if channel is self and isinstance(e, Returned)
                            ] if published.returned else []
                nacked = not published.accepted
        if self._pending:
            self.connection.process_data_events()
        if confirming and nacked:
            raise NackError(list(returned))
        if confirming and returned:
            raise UnroutableError(list(returned))

    def basic_get(self, queue: str = "", auto_ack: bool = False) -> Delivery | None:
        """Take one message (basic.get); ``None`` when the queue is empty."""
        with self._locked:
            if not self._model.is_open:
                self._check_open()
            try:
                return self._model.basic_get(queue, no_ack=auto_ack)
            except AMQPError as exc:
                self._failed(exc, "basic_get")
                raise

    def basic_ack(self, delivery_tag: int = 0, multiple: bool = False) -> None:
        """Acknowledge one delivery, or all up to ``delivery_tag`` with ``multiple``."""
        with self._locked:
            if not self._model.is_open:
                self._check_open()
            try:
                self._model.basic_ack(delivery_tag, multiple)
            except AMQPError as exc:
                self._failed(exc, "basic_ack")
                raise
        if self._pending:
            self.connection.process_data_events()

    @_model_call
    def basic_nack(self, delivery_tag: int = 0, multiple: bool = False,
                   requeue: bool = True) -> None:
        self._model.basic_nack(delivery_tag, multiple, requeue)

    @_model_call
    def basic_reject(self, delivery_tag: int, requeue: bool = True) -> None:
        self._model.basic_reject(delivery_tag, requeue)

    @_model_call
    def basic_qos(self, prefetch_size: int = 0, prefetch_count: int = 0,
                  global_qos: bool = False) -> None:
        self._model.basic_qos(prefetch_size, prefetch_count, global_qos)

    @_model_call
    def basic_recover(self, requeue: bool = True) -> None:
        self._model.basic_recover(requeue)

    @_model_call
    def basic_consume(self, queue: str, on_message_callback: MessageCallback,
                      auto_ack: bool = False, exclusive: bool = False,
                      consumer_tag: str | None = None,
                      arguments: dict[str, Any] | None = None) -> str:
        """Start a consumer; ``on_message_callback(channel, delivery, properties, body)`` runs
        for each message. Returns the consumer tag."""
        tag = self._model.basic_consume(queue, consumer_tag or "", no_ack=auto_ack,
                                        exclusive=exclusive, arguments=arguments)
        self._callbacks[tag] = on_message_callback
        self._model.start_consumer(tag)
        return tag

    @_model_call
    def basic_cancel(self, consumer_tag: str) -> None:
        self._model.basic_cancel(consumer_tag)
        self._callbacks.pop(consumer_tag, None)

    @_model_call
    def tx_select(self) -> None:
        """Make the channel transactional: publishes and acks wait for :meth:`tx_commit`."""
        self._model.tx_select()

    @_model_call
    def tx_commit(self) -> None:
        self._model.tx_commit()

    @_model_call
    def tx_rollback(self) -> None:
        self._model.tx_rollback()

    @_model_call
    def confirm_delivery(self) -> None:
        """Put the channel in confirm mode (confirm.select); confirms go to :attr:`confirms`."""
        self._model.confirm_select()
