"""The channel methods a client may send, as a table: one row per method.

Each row says how a method reaches the model's :class:`~embroker.model.Channel` (``call``), what
the client is answered with (``reply``, from the method and the call's result; a method with
content for basic.get-ok), whether the method's ``no-wait`` bit suppresses that answer, and what
follows the answer (``then``: a consumer's deliveries start once its consume-ok is queued). The
broker's rules all live in the model; a row only translates fields.

The channel lifecycle (channel.open, channel.close, channel.close-ok) is not here: it changes the
connection's own state, and :class:`~embroker.amqp091._connection.ServerConnection` handles it.
A method that is in neither (a server-to-client method such as basic.deliver) is a 503
COMMAND_INVALID.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Generic, NamedTuple, TypeVar, final

from ._assembly import Command
from ._method import Method
from ._methods import (
    BasicAck,
    BasicCancel,
    BasicCancelOk,
    BasicConsume,
    BasicConsumeOk,
    BasicGet,
    BasicGetEmpty,
    BasicGetOk,
    BasicNack,
    BasicPublish,
    BasicQos,
    BasicQosOk,
    BasicRecover,
    BasicRecoverAsync,
    BasicRecoverOk,
    BasicReject,
    ChannelFlow,
    ChannelFlowOk,
    ConfirmSelect,
    ConfirmSelectOk,
    ExchangeBind,
    ExchangeBindOk,
    ExchangeDeclare,
    ExchangeDeclareOk,
    ExchangeDelete,
    ExchangeDeleteOk,
    ExchangeUnbind,
    ExchangeUnbindOk,
    QueueBind,
    QueueBindOk,
    QueueDeclare,
    QueueDeclareOk,
    QueueDelete,
    QueueDeleteOk,
    QueuePurge,
    QueuePurgeOk,
    QueueUnbind,
    QueueUnbindOk,
    TxCommit,
    TxCommitOk,
    TxRollback,
    TxRollbackOk,
    TxSelect,
    TxSelectOk,
)

if TYPE_CHECKING:
    from ..model import Channel, Delivery, Message

__all__ = ["ROUTES", "Route", "WithContent"]

M = TypeVar("M", bound=Method)
R = TypeVar("R")


class WithContent(NamedTuple):
    """A reply that carries a message (basic.get-ok)."""

    method: Method
    message: Message


Reply = Method | WithContent | None


@final
@dataclass(frozen=True)
class Route(Generic[M, R]):
    """How one channel method is handled."""

    #: The model call: the channel, the method, the whole command (for content); its result.
    call: Callable[[Channel, M, Command], R]
    #: The answer built from the method and the result; ``None`` for methods with no answer.
    reply: Callable[[M, R], Reply] | None = None
    #: Whether the method's ``no_wait`` bit means "send no answer".
    no_wait: bool = False
    #: A publish: while the broker blocks publishers, the connection stops reading after it.
    publishes: bool = False
    #: What runs once the answer is queued (the channel and the call's result).
    then: Callable[[Channel, R], None] | None = None


def _row(method: type[M], call: Callable[[Channel, M, Command], R],
         reply: Callable[[M, R], Reply] | None = None, *, no_wait: bool = False,
         publishes: bool = False,
         then: Callable[[Channel, R], None] | None = None) -> tuple[type[Method], Route[Any, Any]]:
    return method, Route(call, reply, no_wait, publishes, then)


def _get_ok(got: Delivery | None) -> Reply:
    if got is None:
        return BasicGetEmpty()
    return WithContent(BasicGetOk(
        delivery_tag=got.delivery_tag, redelivered=got.redelivered, exchange=got.exchange,
        routing_key=got.routing_key, message_count=got.message_count), got.message)


#: Every channel method a client may send (but the lifecycle ones), with its row.
ROUTES: Final[dict[type[Method], Route[Any, Any]]] = dict([
    _row(ChannelFlow, lambda ch, m, _: ch.flow(m.active),
         lambda m, _: ChannelFlowOk(active=m.active)),
    _row(ChannelFlowOk, lambda ch, m, _: None),  # the client answering a flow we never send
    _row(ExchangeDeclare, lambda ch, m, _: ch.exchange_declare(
        m.exchange, m.type, passive=m.passive, durable=m.durable, auto_delete=m.auto_delete,
        internal=m.internal, arguments=m.arguments),
        lambda m, _: ExchangeDeclareOk(), no_wait=True),
    _row(ExchangeDelete, lambda ch, m, _: ch.exchange_delete(m.exchange, if_unused=m.if_unused),
         lambda m, _: ExchangeDeleteOk(), no_wait=True),
    _row(ExchangeBind, lambda ch, m, _: ch.exchange_bind(
        m.destination, m.source, m.routing_key, m.arguments),
        lambda m, _: ExchangeBindOk(), no_wait=True),
    _row(ExchangeUnbind, lambda ch, m, _: ch.exchange_unbind(
        m.destination, m.source, m.routing_key, m.arguments),
        lambda m, _: ExchangeUnbindOk(), no_wait=True),
    _row(QueueDeclare, lambda ch, m, _: ch.queue_declare(
        m.queue, passive=m.passive, durable=m.durable, exclusive=m.exclusive,
        auto_delete=m.auto_delete, arguments=m.arguments),
        lambda m, ok: QueueDeclareOk(queue=ok.queue, message_count=ok.message_count,
                                     consumer_count=ok.consumer_count), no_wait=True),
    _row(QueueBind, lambda ch, m, _: ch.queue_bind(m.queue, m.exchange, m.routing_key,
                                                   m.arguments),
         lambda m, _: QueueBindOk(), no_wait=True),
    _row(QueueUnbind, lambda ch, m, _: ch.queue_unbind(m.queue, m.exchange, m.routing_key,
                                                       m.arguments),
         lambda m, _: QueueUnbindOk()),
    _row(QueuePurge, lambda ch, m, _: ch.queue_purge(m.queue),
         lambda m, count: QueuePurgeOk(message_count=count), no_wait=True),
    _row(QueueDelete, lambda ch, m, _: ch.queue_delete(m.queue, if_unused=m.if_unused,
                                                       if_empty=m.if_empty),
         lambda m, count: QueueDeleteOk(message_count=count), no_wait=True),
    _row(BasicQos, lambda ch, m, _: ch.basic_qos(m.prefetch_size, m.prefetch_count, m.global_),
         lambda m, _: BasicQosOk()),
    _row(BasicConsume, lambda ch, m, _: ch.basic_consume(
        m.queue, m.consumer_tag, no_ack=m.no_ack, exclusive=m.exclusive, arguments=m.arguments),
        lambda m, tag: BasicConsumeOk(consumer_tag=tag), no_wait=True,
        then=lambda ch, tag: ch.start_consumer(tag)),
    _row(BasicCancel, lambda ch, m, _: ch.basic_cancel(m.consumer_tag),
         lambda m, _: BasicCancelOk(consumer_tag=m.consumer_tag), no_wait=True),
    _row(BasicPublish, lambda ch, m, c: ch.basic_publish(
        m.exchange, m.routing_key, c.body or b"", c.properties, mandatory=m.mandatory,
        immediate=m.immediate, encoded_properties=c.raw_properties), publishes=True),
    _row(BasicGet, lambda ch, m, _: ch.basic_get(m.queue, no_ack=m.no_ack),
         lambda m, got: _get_ok(got)),
    _row(BasicAck, lambda ch, m, _: ch.basic_ack(m.delivery_tag, m.multiple)),
    _row(BasicNack, lambda ch, m, _: ch.basic_nack(m.delivery_tag, m.multiple, m.requeue)),
    _row(BasicReject, lambda ch, m, _: ch.basic_reject(m.delivery_tag, m.requeue)),
    _row(BasicRecoverAsync, lambda ch, m, _: ch.basic_recover(m.requeue)),
    _row(BasicRecover, lambda ch, m, _: ch.basic_recover(m.requeue),
         lambda m, _: BasicRecoverOk()),
    _row(ConfirmSelect, lambda ch, m, _: ch.confirm_select(),
         lambda m, _: ConfirmSelectOk(), no_wait=True),
    _row(TxSelect, lambda ch, m, _: ch.tx_select(), lambda m, _: TxSelectOk()),
    _row(TxCommit, lambda ch, m, _: ch.tx_commit(), lambda m, _: TxCommitOk()),
    _row(TxRollback, lambda ch, m, _: ch.tx_rollback(), lambda m, _: TxRollbackOk()),
])
