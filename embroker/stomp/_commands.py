"""What each STOMP command is in the model: the command table of
:class:`~embroker.stomp.StompConnection` (see :mod:`embroker.stomp._connection` for the
table in words), its destinations, subscriptions, acknowledgements and transactions, each a
call to :class:`embroker.model.Channel` or the adapter kit, in RabbitMQ 3.10.8's
``rabbit_stomp_processor``'s order."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final

from .._erlang import string as erlang_string
from ..errors import AMQPError
from ..fieldtypes import Long, Timestamp
from ..kit import (
    Destination,
    DestinationError,
    DestinationType,
    ensure_binding,
    ensure_endpoint,
    parse_destination,
)
from ._frame import Frame
from ._mapping import (
    HeaderError,
    boolean,
    header_arguments,
    message_properties,
    parse_message_id,
    queue_flags,
    subscription_queue_name,
)

if TYPE_CHECKING:
    from ..model import Channel, Transaction
    from ..model import Connection as ModelConnection
    from ._settings import StompSettings

__all__ = ["COMMANDS", "Commands"]

#: The destination prefixes an unknown destination's ERROR lists
#: (``rabbit_routing_util:all_dest_prefixes/0``, as the plugin prints them).
_ALL_PREFIXES: Final = "/temp-queue, /exchange, /topic, /queue, /amq/queue, /reply-queue/"
INTERNAL_TAG: Final = "T_"
QUEUE_TAG: Final = "Q_"
_TEMP_QUEUE: Final = "/temp-queue/"


@dataclass(slots=True)
class Subscription:
    """A subscription of the connection's, by its consumer tag."""

    destination: str
    #: ``auto``, ``client`` (``client`` and ``client-individual``); ``None``: a reply queue's.
    ack_mode: str | None
    multi_ack: bool
    description: str


@dataclass(slots=True)
class Txn:
    """A transaction the client named: the model's, the receipts of the SENDs it holds, and
    the refusal of a SEND it held (the plugin's channel sees nothing of a transaction until
    COMMIT: a refused publish is found then, after what came before it)."""

    transaction: Transaction
    receipts: list[str]
    failed: AMQPError | None = None


class Refused(Exception):
    """What the plugin refuses itself: an ERROR frame, and the connection goes on."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class Stop(Exception):
    """The connection ends (after what was sent, and the frame's receipt: the plugin's
    ``{stop, normal, _}`` still runs ``ensure_receipt/2``)."""


class Crash(Exception):
    """The plugin's processor would crash: the connection ends with nothing more sent."""


def erlang_p(text: str) -> str:
    # io_lib's ~p of a string (a list of bytes), as the plugin's texts print one.
    return erlang_string(text.encode("utf-8", "surrogateescape"))


class Commands:
    """The commands (a role of :class:`~embroker.stomp.StompConnection`: it is the one class)."""

    if TYPE_CHECKING:  # (what it shares with the connection, which sets it up)
        settings: StompSettings
        version: str | None
        channel: Channel | None
        model: ModelConnection | None
        _subscriptions: dict[str, Subscription]
        _transactions: dict[str, Txn]
        _declared: set[str]
        _reply_queues: dict[str, str]
        _receipts: dict[int, str]
        _committed: list[str]
        _after_receipt: AMQPError | None

        def _error(self, message: str, detail: str,
                   extra: list[tuple[str, str]] | None = None, *,
                   log_it: bool = True) -> None: ...

    # -- destinations ------------------------------------------------------------------------------

    def _destination(self, frame: Frame, command: str) -> tuple[str, Destination]:
        text = frame.header("destination")
        if text is None:
            raise Refused("Missing destination",
                          f"{erlang_p(command)} must include a 'destination' header\n")
        try:
            destination = _parse(text)
        except DestinationError as error:
            if error.invalid and error.type is not None:
                raise Refused("Invalid destination", f"'{error.rest}' is not a valid "
                              f"{error.type.value} destination\n") from None
            raise Refused("Unknown destination", f"'{text}' is not a valid destination.\n"
                          f"Valid destination types are: {_ALL_PREFIXES}.\n") from None
        if destination.type is DestinationType.QUEUE and destination.name == "":
            raise Refused("Invalid destination", "Destination cannot be blank")
        return text, destination

    def _routing(self, destination: Destination) -> tuple[str, str]:
        exchange, key = destination.routing
        if destination.type is DestinationType.TOPIC:
            exchange = self.settings.default_topic_exchange
        return exchange, key

    def _endpoint(self, frame: Frame, text: str, destination: Destination, direction: str,
                  command: str, queue: str = "") -> str | None:
        # ensure_endpoint/5 with the frame's queue flags and arguments.
        if destination.type is DestinationType.TEMP_QUEUE:
            raise Refused("Invalid destination",
                          f"'{text}' is not a valid destination for '{command}'\n")
        if destination.type is DestinationType.QUEUE and direction == "dest" and \
                destination.name in self._declared:
            return destination.name
        private = destination.type in (DestinationType.EXCHANGE, DestinationType.TOPIC)
        defaults = [("exclusive", False), ("auto_delete", True)] if private else [
            ("durable", destination.type is DestinationType.QUEUE)]
        flags = queue_flags(frame, defaults)
        try:
            arguments = header_arguments(frame)
        except HeaderError:  # (the plugin's processor dies on it: its words are these)
            raise Refused("Processing error", "Processing error") from None
        assert self.channel is not None
        name = ensure_endpoint(self.channel, destination, "source" if direction == "source"
                               else "dest", durable=flags.get("durable", False),
                               exclusive=flags.get("exclusive"),
                               auto_delete=flags.get("auto_delete"), arguments=arguments,
                               queue=queue)
        if destination.type is DestinationType.QUEUE and name is not None:
            self._declared.add(name)
        return name

    # -- commands ----------------------------------------------------------------------------------

    def _on_send(self, frame: Frame) -> None:
        if "message-id" in frame:
            raise Refused("Invalid header", "'message-id' is not allowed on 'SEND'.\n")
        text, destination = self._destination(frame, "SEND")
        self._endpoint(frame, text, destination, "dest", "SEND")
        frame = self._reply_to(frame)
        try:
            properties = message_properties(frame)
        except HeaderError:
            raise Refused("Processing error", "Processing error") from None
        exchange, key = self._routing(destination)
        channel = self.channel
        assert channel is not None
        receipt = frame.header("receipt")
        name = frame.header("transaction")
        origin = f"STOMP SEND to '{text}'"  # (how the routing trace names it)
        if name is not None:
            txn = self._transaction(name)
            if txn.failed is None:
                try:
                    channel.basic_publish(exchange, key, frame.body, properties,
                                          transaction=txn.transaction, origin=origin)
                except AMQPError as refused:
                    txn.failed = refused
                else:
                    if receipt is not None:
                        txn.receipts.append(receipt)
            return
        if receipt is not None and not channel.confirm_mode:
            channel.confirm_select()
        outcome = channel.basic_publish(exchange, key, frame.body, properties, origin=origin)
        if receipt is not None:  # (its confirm is among those of this read: _flush_receipts)
            self._receipts[outcome.seq] = receipt

    def _reply_to(self, frame: Frame) -> Frame:
        # ensure_reply_to/2: a /temp-queue/N reply-to becomes a queue of this connection's,
        # consumed (no acks), its name in the header.
        reply_to = frame.header("reply-to")
        if reply_to is None or not reply_to.startswith(_TEMP_QUEUE):
            return frame
        try:
            destination = parse_destination(reply_to)
        except DestinationError:
            raise Refused("Processing error", "Processing error") from None
        if destination.type is not DestinationType.TEMP_QUEUE or destination.name is None:
            return frame
        queue = self._reply_queues.get(destination.name)
        if queue is None:
            channel = self.channel
            assert channel is not None
            queue = channel.queue_declare("", exclusive=True, auto_delete=True).queue
            tag = INTERNAL_TAG + _TEMP_QUEUE + destination.name
            channel.basic_consume(queue, tag, no_ack=True)
            self._subscriptions[tag] = Subscription(queue, None, False, "")
            self._reply_queues[destination.name] = queue
            channel.start_consumer(tag)
        headers = [(k, queue if k == "reply-to" else v) for k, v in frame.headers]
        return Frame(frame.command, headers, frame.body)

    def _on_subscribe(self, frame: Frame) -> None:
        text, destination = self._destination(frame, "SUBSCRIBE")
        channel = self.channel
        model = self.model
        assert channel is not None
        assert model is not None
        if destination.type is DestinationType.TOPIC:
            exchange, key = self._routing(destination)
            try:
                model.access.read_topic(exchange, key)
            except AMQPError as refused:  # (thrown, not a channel's death: no reply name)
                self._error("access_refused", refused.text)
                raise Stop from None
        try:
            prefetch = _integer_header(frame, "prefetch-count")
        except HeaderError:
            raise Refused("Processing error", "Processing error") from None
        ack = frame.header("ack", "auto")
        if ack not in ("auto", "client", "client-individual"):
            raise Refused("Processing error", "Processing error")
        private = destination.type in (DestinationType.EXCHANGE, DestinationType.TOPIC)
        queue_name = ""
        if private:
            durable_id = frame.header("id") if _durable(frame) else None
            queue_name = subscription_queue_name(destination.routing[1], durable_id,
                                                 frame.header("x-queue-name"))
        queue = self._endpoint(frame, text, destination, "source", "SUBSCRIBE", queue_name)
        if queue is None:
            raise Refused("Invalid destination",
                          f"'{text}' is not a valid destination for 'SUBSCRIBE'\n")
        try:
            tag, description = self._consumer_tag(frame)
        except Refused:  # (the plugin's processor dies on it)
            raise Refused("Processing error", "Processing error") from None
        if prefetch is not None:
            channel.basic_qos(prefetch_count=prefetch)
        if tag in self._subscriptions:
            detail = f"A subscription identified by '{tag}' already exists."
            self._error("Duplicated subscription identifier", detail)
            raise Stop
        arguments = _stream_offset(frame.header("x-stream-offset"))
        try:
            channel.basic_consume(queue, tag, no_ack=ack == "auto", arguments=arguments)
            ensure_binding(channel, queue, *self._routing(destination))
        except AMQPError:
            if tag in channel.consumers:  # (its channel dies in the plugin: no cancel told)
                channel.basic_cancel(tag)
            if private:  # (server-named and declared here: safe to delete)
                self._delete_quietly(queue)
            raise
        self._subscriptions[tag] = Subscription(text, "auto" if ack == "auto" else "client",
                                                 ack == "client", description)
        channel.start_consumer(tag)

    def _delete_quietly(self, queue: str) -> None:
        model = self.model
        if model is None or not model.is_open:
            return
        channel = model.open_internal_channel()
        try:
            channel.queue_delete(queue)
        except AMQPError:
            pass
        finally:
            channel.close()
            model.channels.pop(channel.number, None)

    @staticmethod
    def _consumer_tag(frame: Frame) -> tuple[str, str]:
        # rabbit_stomp_util:consumer_tag/1: "T_" and the id, or "Q_" and the destination.
        ident = frame.header("id")
        if ident is not None:
            if ident.startswith(_TEMP_QUEUE):
                raise Refused("Invalid id", f"UNSUBSCRIBE 'id' may not start with "
                              f"{_TEMP_QUEUE}\n")
            return INTERNAL_TAG + ident, f"id='{ident}'"
        destination = frame.header("destination")
        if destination is None:
            raise Refused("Missing destination or id",
                          "UNSUBSCRIBE must include a 'destination' or 'id' header")
        return QUEUE_TAG + destination, f"destination='{destination}'"

    def _on_unsubscribe(self, frame: Frame) -> None:
        tag, description = self._consumer_tag(frame)
        subscription = self._subscriptions.get(tag)
        if subscription is None:
            raise Refused("No subscription found", "UNSUBSCRIBE must refer to an existing "
                          f"subscription.\nSubscription to {erlang_p(description)} not found.\n")
        channel = self.channel
        assert channel is not None
        channel.basic_cancel(tag)
        del self._subscriptions[tag]
        destination = parse_destination(subscription.destination)
        if destination.type is DestinationType.TOPIC and _durable(frame):
            # maybe_delete_durable_sub/3: the durable subscription's queue goes with it.
            ident = frame.header("id") or ""
            channel.queue_delete(subscription_queue_name(destination.routing[1], ident,
                                                         frame.header("x-queue-name")))

    def _on_ack(self, frame: Frame) -> None:
        self._settle(frame, "ACK")

    def _on_nack(self, frame: Frame) -> None:
        self._settle(frame, "NACK")

    def _settle(self, frame: Frame, command: str) -> None:
        name = "id" if self.version == "1.2" else "message-id"
        value = frame.header(name)
        if value is None:
            raise Refused("Missing header", f"{erlang_p(command)} must include the {erlang_p(name)} "
                          "header\n")
        parsed = parse_message_id(value)
        if parsed is None:
            raise Refused("Invalid header", f"{erlang_p(command)} must include a valid {erlang_p(name)} "
                          "header\n")
        tag, _session, delivery_tag = parsed
        subscription = self._subscriptions.get(tag)
        if subscription is None:
            raise Refused("Subscription not found",
                          f"Message with id {erlang_p(value)} has no subscription")
        requeue = boolean(frame.header("requeue"))
        if requeue is None:
            requeue = self.settings.default_nack_requeue
        channel = self.channel
        assert channel is not None
        transaction = None
        if (name_ := frame.header("transaction")) is not None:
            txn = self._transaction(name_)
            if txn.failed is not None:
                return
            transaction = txn.transaction
        if command == "ACK":
            channel.basic_ack(delivery_tag, subscription.multi_ack, transaction=transaction)
        else:
            channel.basic_nack(delivery_tag, subscription.multi_ack, requeue,
                               transaction=transaction)

    def _transaction(self, name: str) -> Txn:
        found = self._transactions.get(name)
        if found is None:
            raise Refused("Bad transaction", f"Invalid transaction identifier: {erlang_p(name)}\n")
        return found

    def _transaction_name(self, frame: Frame, command: str) -> str:
        name = frame.header("transaction")
        if name is None:
            raise Refused("Missing transaction",
                          f"{erlang_p(command)} must include a 'transaction' header\n")
        return name

    def _on_begin(self, frame: Frame) -> None:
        name = self._transaction_name(frame, "BEGIN")
        channel = self.channel
        assert channel is not None
        old = self._transactions.get(name)
        if old is not None:  # (begun again: what it held is forgotten)
            old.transaction.rollback()
        self._transactions[name] = Txn(channel.transaction(), [])

    def _on_commit(self, frame: Frame) -> None:
        name = self._transaction_name(frame, "COMMIT")
        txn = self._transaction(name)
        del self._transactions[name]
        txn.transaction.commit()
        # (each publish is confirmed as it is routed: its receipt follows COMMIT's own; a
        # refused one ends the connection after COMMIT's receipt, as the plugin's channel
        # dies after it answered)
        self._committed.extend(txn.receipts)
        self._after_receipt = txn.failed

    def _on_abort(self, frame: Frame) -> None:
        name = self._transaction_name(frame, "ABORT")
        txn = self._transaction(name)
        del self._transactions[name]
        txn.transaction.rollback()

    def _on_disconnect(self, frame: Frame) -> None:
        """(The RECEIPT, if asked, goes first; then the connection ends.)"""



def _parse(text: str) -> Destination:
    # The kit's parse_destination, its last 1024 answers for short texts remembered (a
    # publisher names the same few destinations again and again; a refusal is raised again
    # each time; what is kept stays small whatever clients send).
    return _parse_short(text) if len(text) <= _REMEMBERED else parse_destination(text)


#: The longest text whose reading is remembered.
_REMEMBERED: Final = 256
_parse_short = lru_cache(maxsize=1024)(parse_destination)


def _durable(frame: Frame) -> bool:
    # has_durable_header/1
    return boolean(frame.header("durable")) is True or boolean(frame.header("persistent")) is True


def _integer_header(frame: Frame, name: str) -> int | None:
    value = frame.header(name)
    if value is None:
        return None
    text = value.strip(" ")
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isdigit() or not digits.isascii():
        raise HeaderError(name)
    return int(text)


def _stream_offset(value: str | None) -> dict[str, Any] | None:
    # rabbit_stomp_frame:stream_offset_header/2: first, last, next, offset=N, timestamp=T.
    if value in ("first", "last", "next"):
        return {"x-stream-offset": value}
    for prefix, kind in (("offset=", Long), ("timestamp=", Timestamp)):
        if value is not None and value.startswith(prefix):
            number = value[len(prefix):]
            if number.lstrip("-").isdigit():
                return {"x-stream-offset": kind(int(number))}
            raise Refused("Processing error", "Processing error")
    return None


#: Each command's handler (what it is in the model: see the module's notes).
COMMANDS: Final[dict[str, Callable[[Commands, Frame], None]]] = {
    "SEND": Commands._on_send,
    "SUBSCRIBE": Commands._on_subscribe,
    "UNSUBSCRIBE": Commands._on_unsubscribe,
    "ACK": Commands._on_ack,
    "NACK": Commands._on_nack,
    "BEGIN": Commands._on_begin,
    "COMMIT": Commands._on_commit,
    "ABORT": Commands._on_abort,
    "DISCONNECT": Commands._on_disconnect,
}
