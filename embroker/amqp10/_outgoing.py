"""Receiving links: the role of an AMQP 1.0 connection for the links the client receives on.

Theory of operation
-------------------
A link the client receives on is an :class:`_Outgoing`. :class:`OutgoingLinks` is the
connection's role object for them. Such a link is made by the model when it attaches, which
checks it as ``basic.consume``: a model consumer of its queue whose capacity is the link credit
(the model delivers as credit allows, and each delivery becomes a transfer); with
distribution-mode ``copy``, a browser of the queue, shown the messages it has not seen as credit
allows (through a JMS selector when the link asks for one); for RabbitMQ 4.2's volatile queue,
a direct reply-to consumer on a model channel of its own. A v1 ``/queue/Q`` source is declared
first; an exchange source consumes from a private queue bound to the exchange, deleted with the
link. The source's stream filters become consumer arguments, its filter expressions a predicate
on messages.

Credit is absolute (Part 2 section 2.6.7): the receiver's ``delivery-count + link-credit``, less
ours, given to the model's consumer (``Channel.basic_credit``); a drain uses up what the queue
cannot fill by advancing the count. Settlements are acks,
rejects and requeues of the session channel's delivery tags, as RabbitMQ 4 settles each outcome
(inside a transaction, they wait for its discharge). A link that goes away, by ``detach``,
``end``, ``close`` or a lost socket, requeues what it had delivered and not settled.
"""

from __future__ import annotations

import contextlib
import datetime
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, final

from ..amqp10_common._definitions import (
    Accepted,
    Attach,
    DeleteOnClose,
    Disposition,
    Flow,
    Modified,
    Received,
    Rejected,
    Source,
    TransactionalState,
    Transfer,
)
from ..amqp10_common._errors import LinkError, SessionError
from ..amqp10_common._message import encode_deaths, to_amqp10, value_to_091
from ..amqp10_common._types import Array, Described, Symbol, Timestamp, UInt
from ..errors import AMQPError
from ..kit import Destination, DestinationType, Subscription, private_queue, subscribe
from ..model._names import REPLY_TO
from ._address import parse_address, queue_address
from ._filters import (
    SQL_FILTER,
    SQL_FILTER_KEY,
    FilterView,
    SqlError,
    descriptor_is,
    parse_property_filter,
    parse_sql,
    property_filters_match,
    sql_filter,
    view_of,
)
from ._selector import Selector, SelectorError
from ._session import (
    _RELEASED,
    _SERIAL,
    _condition,
    _durable,
    _Link,
    _LinkRole,
    _ModelEvents,
    _Session,
    serial_add,
    serial_diff,
)

if TYPE_CHECKING:
    from ..model import Browser, Message, Queue, Transaction
    from ..model import Channel as ModelChannel
    from ._connection import ServerConnection
    from ._session import Sessions

__all__ = ["STREAM_FILTER", "STREAM_MATCH_UNFILTERED", "STREAM_OFFSET_SPEC", "OutgoingLinks"]

_OUTCOMES: Final = (Symbol("amqp:accepted:list"), Symbol("amqp:rejected:list"),
                    Symbol("amqp:released:list"), Symbol("amqp:modified:list"))
_SELECTOR: Final = "apache.org:selector-filter:string"
_VOLATILE: Final = "rabbitmq:volatile-queue"
_SELECTOR_CODE: Final = 0x0000468C00000004
_TAG = struct.Struct(">Q")


@final
class _Outgoing(_Link):
    """We send, the client receives: a model consumer on a queue, or a browser of it."""

    def __init__(self, role: OutgoingLinks, session: _Session, attach: Attach,
                 queue: Queue | None) -> None:
        super().__init__(role, session, attach)
        #: The queue it takes from (``None`` for a volatile queue: direct reply-to).
        self.queue = queue
        #: A volatile queue's model channel (its direct reply-to consumer), closed with it.
        self.reply_channel: ModelChannel | None = None
        self.presettled = attach.snd_settle_mode == 1
        self.consumer_tag = ""
        self.drain = False
        #: The private queue this link made (dynamic, or for an exchange source), and its
        #: binding: undone with the link.
        self.subscription: Subscription | None = None
        #: Browsing (distribution-mode copy): the model's look at the queue, and the selector
        #: it passes messages through.
        self.browser: Browser | None = None
        self.selector: Selector | None = None
        self.unsettled: set[int] = set()

    @property
    def browse(self) -> bool:
        return self.browser is not None

    @property
    def available(self) -> int | None:
        return self.queue.message_count if self.queue is not None else None


@final
class OutgoingLinks(_LinkRole[_Outgoing]):
    """Attach (consume and browse), credit, deliveries out and the client's settlements."""

    __slots__ = ("browsers",)

    def __init__(self, connection: ServerConnection, sessions: Sessions) -> None:
        super().__init__(connection, sessions)
        #: The browsing links, shown new messages as credit allows.
        self.browsers: list[_Outgoing] = []

    # -- attach ---------------------------------------------------------------------------------

    def attach(self, session: _Session, attach: Attach) -> None:
        source = attach.source
        try:
            if source is None:
                raise LinkError("amqp:invalid-field", "a receiving link needs a source")
            link, reply_source = self._make_outgoing(session, attach, source)
        except LinkError as exc:
            self.sessions.refuse(session, attach, exc)
            return
        except AMQPError as exc:
            self.sessions.refuse(session, attach, LinkError(_condition(exc), exc.text))
            return
        session.links[link.handle] = link
        self._frame(session.channel, Attach(
            name=attach.name, handle=attach.handle, role=False,
            snd_settle_mode=1 if link.presettled else 0, rcv_settle_mode=0,
            source=reply_source, target=attach.target, initial_delivery_count=UInt(0)))
        connection = self.connection
        if connection._attach_mark is None:
            connection._attach_mark = len(self._out)
        if link.browse:
            self.browsers.append(link)

    def _make_outgoing(self, session: _Session, attach: Attach,
                       source: Source) -> tuple[_Outgoing, Source]:
        """A receiving link: a consumer of its queue, or (distribution-mode copy) a browser of
        it, made by the model, which checks them as basic.consume (read permission, the
        queue's existence, its exclusive owner). A v1 ``/queue/Q`` is declared first; an
        exchange source consumes from a private queue bound to the exchange, deleted with the
        link.

        Raises:
            LinkError: an address in none of the forms, a selector that does not parse or that
                a consuming link cannot apply.
            AMQPError: the model's refusal.
        """
        channel = session.model
        browse = source.distribution_mode == "copy"
        selector, filters = self._selector(source, browse)
        message_filter, expressions = self._expressions(source)
        subscription: Subscription | None = None
        if source.dynamic and _VOLATILE in (source.capabilities or ()):
            return self._volatile(session, attach, source)
        if source.dynamic:
            subscription = private_queue(channel, exclusive=True, auto_delete=False)
            name = subscription.queue
        else:
            node = parse_address(source.address, "source", v1=self.connection._v1)
            if node.kind == "queue":
                name = node.name
                if node.declare:
                    channel.queue_declare(name, durable=_durable(source.durable))
            else:  # the exchange first (404), then a private queue bound with the key
                subscription = subscribe(
                    channel, Destination(DestinationType.EXCHANGE, node.name, node.key or ""),
                    durable=False, exclusive=True, auto_delete=False, check_exchange=True)
                name = subscription.queue
        try:
            if browse:
                browser = channel.browse(name)
                link = _Outgoing(self, session, attach, browser.queue)
                link.browser, link.selector, link.presettled = browser, selector, True
            else:
                tag = channel.basic_consume(name, f"amqp10-{session.channel}-{int(attach.handle)}",
                                            no_ack=attach.snd_settle_mode == 1, exclusive=False,
                                            arguments=_stream_arguments(
                                                source, self.broker.profile.rabbitmq4),
                                            link_credit=True,
                                            message_filter=message_filter)
                link = _Outgoing(self, session, attach, channel.consumers[tag].queue)
                link.consumer_tag = tag
                session.by_tag[tag] = link
        except AMQPError:
            if subscription is not None:
                subscription.close()
            raise
        link.subscription = subscription
        reply = Source(
            address=queue_address(name) if source.dynamic else source.address,
            durable=source.durable, expiry_policy=source.expiry_policy,
            timeout=source.timeout, dynamic=source.dynamic,
            distribution_mode=Symbol("copy") if link.browse else None,
            filter=self._echoed_filters(source, filters, expressions) or None,
            default_outcome=_RELEASED,
            outcomes=_OUTCOMES, capabilities=source.capabilities)
        return link, reply

    def _volatile(self, session: _Session, attach: Attach,
                  source: Source) -> tuple[_Outgoing, Source]:
        """RabbitMQ 4.2's volatile queue: a dynamic receiver with the capability
        ``rabbitmq:volatile-queue`` (durability none, expiry link-detach, timeout 0,
        pre-settled) is a direct reply-to consumer of its own; its address is the reply-to
        address (``rabbit_amqp_session:ensure_source/9``, ``rabbit_volatile_queue``)."""
        if not (self.broker.profile.at_least(4, 2) and not source.durable
                and source.expiry_policy == "link-detach" and not source.timeout
                and attach.snd_settle_mode == 1):
            raise LinkError("amqp:not-implemented", f"Dynamic source not supported: "
                            f"{source!r}")
        connection = self.connection
        assert connection.model is not None
        channel = connection.model.open_internal_channel()
        channel.listener = _ModelEvents(connection, session)
        tag = channel.basic_consume(REPLY_TO, f"amqp10-{session.channel}-{int(attach.handle)}",
                                    no_ack=True)
        reply = channel.reply_consumer
        assert reply is not None
        link = _Outgoing(self, session, attach, None)
        link.consumer_tag, link.presettled, link.reply_channel = tag, True, channel
        link.credit = 0
        session.by_tag[tag] = link
        return link, Source(
            address=queue_address(reply.address), durable=source.durable,
            expiry_policy=source.expiry_policy, timeout=UInt(0), dynamic=True,
            dynamic_node_properties={Symbol("lifetime-policy"): DeleteOnClose(),
                                     Symbol("supported-dist-modes"): Array(
                                         0xA3, [Symbol("move")])},
            distribution_mode=Symbol("move"), capabilities=(Symbol(_VOLATILE),))

    def _echoed_filters(self, source: Source, filters: dict[Any, Any],
                        expressions: set[Any]) -> dict[Any, Any]:
        # The stream filters and filter expressions are applied (by the consumer they become):
        # the reply says so, in the order they were asked for ("the sending endpoint sets the
        # filter actually in place", Part 3 section 3.5.3).
        applied = {*_stream_filters(source, self.broker.profile.rabbitmq4),
                   *expressions}
        given = source.filter or {}
        return {**filters, **{key: value for key, value in given.items() if key in applied}}

    def _expressions(self, source: Source) -> tuple[Callable[[Message], bool] | None, set[Any]]:
        """The filter expressions of a source (RabbitMQ 4.1's property filters, 4.2's SQL
        filter) as one predicate on messages, and the keys of those applied. As v4.2.9
        ``rabbit_amqp_session:parse_filters/2`` folds the filter set from its last entry to
        its first: a filter that does not parse is left out (the attach goes on); one
        properties and one application-properties filter at most (a later one wins); an SQL
        filter (key ``sql-filter``) excludes property filters and the other way round,
        whichever comes last winning. The stream filters come first and are not expressions.
        RabbitMQ applies them on streams only; on other queues they are echoed and ignored
        (``rabbit_stream_queue:entry_to_msg/6`` is their only reader)."""
        profile = self.broker.profile
        if not profile.at_least(4, 1) or not source.filter:
            return None, set()
        streams = _stream_filters(source, True)
        sql: Callable[[FilterView], bool] | None = None
        props: dict[str, Any] = {}
        applied: set[Any] = set()
        for key, value in reversed(list(source.filter.items())):
            if key in streams or type(key) is not Symbol or (
                    str(key).startswith("rabbitmq:stream-")
                    and getattr(value, "descriptor", None) is None):
                continue
            if str(key) == SQL_FILTER_KEY and profile.at_least(4, 2):
                if sql is None and not props and isinstance(value, Described) and (
                        descriptor_is(value.descriptor, SQL_FILTER)) and (
                        type(value.value) is str):
                    try:
                        ast = parse_sql(value.value)
                    except SqlError:
                        continue
                    sql = sql_filter(ast, self._now_ms)
                    applied.add(key)
                continue
            parsed = parse_property_filter(value)
            if parsed is not None and sql is None and parsed[0] not in props:
                props[parsed[0]] = parsed
                applied.add(key)
        if sql is not None:
            test = sql
            return (lambda message: test(view_of(message))), applied
        if props:
            filters = list(props.values())
            return (lambda message: property_filters_match(filters, view_of(message))), applied
        return None, applied

    def _now_ms(self) -> int:
        return int(self.broker.clock.time() * 1000)

    @staticmethod
    def _selector(source: Source, browse: bool) -> tuple[Selector | None, dict[Any, Any]]:
        """The JMS selector a receiving link asks for, and the filters the reply echoes. A
        selector applies to browsing links; a consuming link that asks for one is refused
        (RabbitMQ 4 leaves it out of the reply, so a client that does not look delivers every
        message as if it matched: refusing says so). Other filters are left out of the reply,
        which tells the client they are not applied (Part 3 section 3.5.3)."""
        for key, value in (source.filter or {}).items():
            described = getattr(value, "descriptor", None)
            if key == _SELECTOR or described in (_SELECTOR, _SELECTOR_CODE):
                if not browse:
                    raise LinkError(
                        "amqp:not-implemented",
                        f"filter '{key}' ({_SELECTOR}) is applied on browsing links "
                        "(distribution-mode copy) only, not on a link that consumes")
                text = getattr(value, "value", value)
                try:
                    return Selector(str(text)), {key: value}
                except SelectorError as exc:
                    raise LinkError("amqp:invalid-field", f"selector: {exc}") from None
        return None, {}

    # -- credit and detach ----------------------------------------------------------------------

    def on_flow(self, link: _Outgoing, flow: Flow) -> None:
        # Credit is absolute: the receiver's delivery-count plus its link-credit, less ours.
        if flow.link_credit is None:
            if flow.echo:
                self.sessions.link_flow(link)
            return
        delivery_count = int(flow.delivery_count) if flow.delivery_count is not None else 0
        credit = serial_diff(serial_add(delivery_count, int(flow.link_credit)),
                             link.delivery_count % _SERIAL)
        link.credit = max(0, credit)
        link.drain = flow.drain
        drained = 0
        channel = link.session.model
        if link.browse:
            self._pump_browser(link)
        elif link.consumer_tag in channel.consumers:
            # The model delivers as credit allows (each delivery a transfer), then drains.
            credited = channel.basic_credit(link.consumer_tag, link.credit, drain=link.drain)
            link.credit, drained = credited.credit, credited.drained
        if link.drain and link.credit:  # (a volatile queue's link)
            drained, link.credit = link.credit, 0
        if drained:
            # Drain: nothing more to send, so the credit is used up by advancing the count.
            link.delivery_count += drained
            self.sessions.link_flow(link)
        elif flow.echo or link.drain:
            self.sessions.link_flow(link)

    def drop(self, link: _Outgoing) -> None:
        session = link.session
        channel = session.model
        if link.reply_channel is not None:  # a volatile queue goes with its link
            session.by_tag.pop(link.consumer_tag, None)
            link.reply_channel.close()
            return
        if link.consumer_tag:
            session.by_tag.pop(link.consumer_tag, None)
            if not session.ended:
                channel.basic_cancel(link.consumer_tag)
                # A link's unsettled deliveries go back to the queue with it.
                for delivery_id in sorted(link.unsettled):
                    entry = session.unsettled.pop(delivery_id, None)
                    if entry is not None:
                        with contextlib.suppress(AMQPError):  # its queue is gone
                            channel.basic_reject(entry[1], requeue=True)
                link.unsettled.clear()
        if link in self.browsers:
            self.browsers.remove(link)
        if link.subscription is not None:  # what the link made goes with it
            link.subscription.close()

    # -- settlements ------------------------------------------------------------------------------

    def on_disposition(self, session: _Session, disposition: Disposition, payload: bytes) -> None:
        if not disposition.role:
            return  # about deliveries the client sent: we settle those at once ourselves
        first = int(disposition.first)
        last = int(disposition.last) if disposition.last is not None else first
        span = serial_diff(last, first)
        if span < 0:
            raise SessionError("amqp:invalid-field", f"disposition range {first}..{last}")
        unsettled = session.unsettled
        if span + 1 <= len(unsettled):
            ids = [serial_add(first, i) for i in range(span + 1)]
        else:
            ids = sorted((i for i in unsettled if 0 <= serial_diff(i, first) <= span),
                         key=lambda i: serial_diff(i, first))
        state = disposition.state
        if (state is None and not disposition.settled) or isinstance(state, Received):
            return  # not an outcome yet
        answer = []
        for delivery_id in ids:
            entry = unsettled.pop(delivery_id, None)
            if entry is None:
                continue
            link, tag = entry
            link.unsettled.discard(delivery_id)
            if isinstance(state, TransactionalState):
                txn = self.connection._incoming_links.txns.get(state.txn_id)
                if txn is None:
                    raise SessionError("amqp:transaction:unknown-id",
                                       f"unknown transaction id {state.txn_id!r}")
                self.apply_outcome(session, tag, state.outcome or _RELEASED, txn)
            else:
                self.apply_outcome(session, tag, state or _RELEASED)
            if not disposition.settled:
                answer.append(delivery_id)
        for delivery_id in answer:  # the client did not settle: we do, with its outcome
            self._frame(session.channel, Disposition(role=False, first=UInt(delivery_id),
                                                     settled=True, state=state))

    def apply_outcome(self, session: _Session, tag: int, state: Any,
                      transaction: Transaction | None = None) -> None:
        """A receiver's outcome as RabbitMQ 4 settles it (``settle_op_from_outcome/1``):
        accepted acks, rejected discards (dead-lettered; a failed delivery), released requeues,
        modified requeues or (undeliverable-here) discards, counting a failed delivery when
        delivery-failed is set; in a ``transaction``, held until its discharge."""
        channel = session.model
        try:
            if isinstance(state, Accepted):
                channel.basic_ack(tag, transaction=transaction)
            elif isinstance(state, Rejected):
                channel.basic_reject(tag, requeue=False, transaction=transaction)
            elif isinstance(state, Modified):
                channel.modify(tag, delivery_failed=bool(state.delivery_failed),
                               undeliverable_here=bool(state.undeliverable_here),
                               annotations=_modified_annotations(state),
                               transaction=transaction)
            else:  # released
                channel.basic_reject(tag, requeue=True, transaction=transaction)
        except AMQPError:
            pass  # the delivery's queue is gone

    # -- deliveries out ----------------------------------------------------------------------------

    def deliver(self, session: _Session, consumer_tag: str, delivery_tag: int,
                 redelivered: bool, exchange: str, routing_key: str, message: Message,
                 failures: int) -> None:
        link = session.by_tag.get(consumer_tag)
        if link is None or session.ended:
            return
        annotations: dict[Any, Any] = {Symbol("x-exchange"): exchange,
                                       Symbol("x-routing-key"): routing_key}
        if message.deaths:
            annotations[Symbol("x-opt-deaths")] = encode_deaths(message.deaths)
        # The header as RabbitMQ 4 writes it (mc_amqp:update_header_from_anns/2): delivery-count
        # is the failed deliveries; first-acquirer only for a message never delivered, never
        # failed and never dead-lettered.
        first = not redelivered and not failures and not message.deaths
        payload = to_amqp10(message, first_acquirer=first, delivery_count=failures,
                            annotations=annotations)
        link.credit = max(0, link.credit - 1)
        self._transfer(session, link, _TAG.pack(delivery_tag), payload, delivery_tag)

    def _transfer(self, session: _Session, link: _Outgoing, tag: bytes, payload: bytes,
                  model_tag: int | None) -> None:
        delivery_id = session.next_delivery_id
        session.next_delivery_id = serial_add(delivery_id, 1)
        link.delivery_count += 1
        settled = link.presettled or model_tag is None
        if not settled and model_tag is not None:
            session.unsettled[delivery_id] = (link, model_tag)
            link.unsettled.add(delivery_id)
        self.sessions.send_transfer(session, Transfer(
            handle=UInt(link.handle), delivery_id=UInt(delivery_id), delivery_tag=tag,
            message_format=UInt(0), settled=settled), payload)
        self.connection._output_ready()

    def pump_browsers(self) -> None:
        for link in list(self.browsers):
            if link.credit > 0 and not link.session.ended:
                self._pump_browser(link)

    def _pump_browser(self, link: _Outgoing) -> None:
        """Show a browsing link the queue's messages it has not seen, as credit allows."""
        browser = link.browser
        if browser is None or browser.gone:
            return
        selector = link.selector
        shown = browser.take(link.credit, selector.matches if selector is not None else None)
        for entry in shown:
            message = entry.message
            payload = to_amqp10(message, first_acquirer=False, delivery_count=entry.failures,
                                annotations={Symbol("x-exchange"): message.exchange,
                                             Symbol("x-routing-key"): message.routing_key})
            link.credit -= 1
            self._transfer(link.session, link, _TAG.pack(entry.seq), payload, None)
        sent = bool(shown)
        if link.drain and link.credit:
            link.delivery_count += link.credit
            link.credit = 0
            self.sessions.link_flow(link)
        elif sent:
            self.connection._output_ready()

    def cancelled(self, session: _Session, consumer_tag: str) -> None:
        # The queue under a receiving link was deleted: the link is detached with an error.
        link = session.by_tag.pop(consumer_tag, None)
        if link is None or link.detached:
            return
        link.consumer_tag = ""
        self.sessions.detach_with_error(link, LinkError(
            "amqp:resource-deleted",
            f"queue '{link.queue.name if link.queue else ''}' was deleted"))
        self.connection._output_ready()


def _modified_annotations(state: Modified) -> dict[str, Any] | None:
    """The ``message-annotations`` of a modified outcome as 0-9-1 header values. Their keys
    must be symbols that start with ``x-`` ("all symbolic keys except those beginning with
    "x-" are reserved", Part 3 section 3.2.10): RabbitMQ 4 has no clause for others and its
    session ends; so does this one, saying why."""
    annotations = state.message_annotations
    if not annotations:
        return None
    if not all(isinstance(k, Symbol) and k.startswith("x-") for k in annotations):
        raise SessionError("amqp:invalid-field", "the message-annotations of a modified "
                           "outcome must have symbol keys that start with 'x-'")
    return {str(k): value_to_091(v) for k, v in annotations.items()}


#: The source filter that says where a link reading a stream starts (RabbitMQ's 1.0 plugin).
STREAM_OFFSET_SPEC: Final = "rabbitmq:stream-offset-spec"
#: RabbitMQ 4's source filters choosing a stream's chunks by filter value (3.13+ filtering).
STREAM_FILTER: Final = "rabbitmq:stream-filter"
STREAM_MATCH_UNFILTERED: Final = "rabbitmq:stream-match-unfiltered"
_STREAM_FILTERS: Final = (STREAM_OFFSET_SPEC, STREAM_FILTER, STREAM_MATCH_UNFILTERED)


def _stream_filters(source: Source, rabbitmq4: bool) -> dict[Any, tuple[str, Any]]:
    """The stream filters of a source, by their key in its filter set: (name, value). RabbitMQ
    3.10 knows a filter by its key and takes a plain value; RabbitMQ 4 (v4.1.4
    ``rabbit_amqp_session:parse_filters/2``) by its value's descriptor, under any key, and
    adds ``rabbitmq:stream-filter`` and ``rabbitmq:stream-match-unfiltered``."""
    found: dict[Any, tuple[str, Any]] = {}
    for key, value in (source.filter or {}).items():
        descriptor = getattr(value, "descriptor", None)
        if rabbitmq4 and isinstance(descriptor, str) and descriptor in _STREAM_FILTERS:
            found[key] = (str(descriptor), getattr(value, "value", None))
        elif key == STREAM_OFFSET_SPEC:
            found[key] = (STREAM_OFFSET_SPEC, getattr(value, "value", value)
                          if descriptor is not None else value)
    return found


def _stream_arguments(source: Source, rabbitmq4: bool = False) -> dict[str, Any] | None:
    """The consumer arguments a source's stream filters become, as RabbitMQ's 1.0 plugin maps
    them (3.10.8 ``source_filters_to_consumer_args/1``, 4.1.4 ``parse_filters/2``): the offset
    spec a timestamp (milliseconds, taken to the second as 0-9-1 timestamps are), a string
    (``first``, ``last``, ``next``, an interval such as ``10m``) or an integer offset; with
    RabbitMQ 4, ``x-stream-filter`` (a string or a list of strings) and
    ``x-stream-match-unfiltered`` (a boolean). Other values are ignored."""
    arguments: dict[str, Any] = {}
    for name, spec in _stream_filters(source, rabbitmq4).values():
        if name == STREAM_OFFSET_SPEC:
            if isinstance(spec, Timestamp):
                arguments["x-stream-offset"] = datetime.datetime.fromtimestamp(
                    int(spec) // 1000, datetime.timezone.utc)
            elif isinstance(spec, str):
                arguments["x-stream-offset"] = str(spec)
            elif isinstance(spec, int) and not isinstance(spec, bool) and (
                    spec >= 0 or not rabbitmq4):
                arguments["x-stream-offset"] = int(spec)
        elif name == STREAM_FILTER:
            if isinstance(spec, str):
                arguments["x-stream-filter"] = str(spec)
            elif isinstance(spec, list):
                arguments["x-stream-filter"] = [str(v) for v in spec if isinstance(v, str)]
        elif isinstance(spec, bool):
            arguments["x-stream-match-unfiltered"] = spec
    return arguments or None


