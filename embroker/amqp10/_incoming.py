"""Sending links: the role of an AMQP 1.0 connection for the links the client sends on.

Theory of operation
-------------------
A link the client sends on is an :class:`_Incoming`: messages published to the node its target
names (checked by the model when the link attaches), or to each message's ``to`` for the
anonymous terminus, or, for a transaction coordinator, ``declare`` and ``discharge``.
:class:`IncomingLinks` is the connection's role object for them. It grants them credit
(:data:`~._connection.LINK_CREDIT` by default, refilled when half is used), puts a delivery
that spans transfer frames together, publishes it on its session's model channel (in confirm
mode and mandatory) and queues the outcome the model returns, as RabbitMQ 4's session words it:
a message a queue refused is ``rejected``, one that reached no queue ``released``.
The outcomes of the deliveries received in one read go out in one ``disposition`` per range
that agrees (:meth:`IncomingLinks.flush_dispositions`).

A local transaction (Part 4) is a model :class:`~embroker.model.Transaction` of the
connection: the publishes and the settlements (dispositions of the deliveries the client
received) that name it are held in it, in order, until the discharge commits them, or rolls
them back (publishes discarded, the deliveries released to their queues).
"""

from __future__ import annotations

import itertools
import struct
from typing import TYPE_CHECKING, Any, final

from ..amqp10_common._definitions import (
    Attach,
    Coordinator,
    Declare,
    Declared,
    Discharge,
    Disposition,
    Error,
    Rejected,
    Target,
    TransactionalState,
    Transfer,
)
from ..amqp10_common._errors import DecodeError, LinkError, SessionError
from ..amqp10_common._message import Kept, parse_message, to_model
from ..amqp10_common._types import Symbol, UInt, ULong, decode_value
from ..errors import AMQPError
from ..kit import runs
from ..model import Transaction
from ._address import Node, parse_address
from ._session import (
    _ACCEPTED,
    _RELEASED,
    _condition,
    _durable,
    _Link,
    _LinkRole,
    _Session,
    serial_add,
)

if TYPE_CHECKING:
    from ._connection import ServerConnection
    from ._session import Sessions

__all__ = ["IncomingLinks"]


@final
class _Incoming(_Link):
    """The client sends, we receive: messages published to a node (or to each one's ``to``)."""

    def __init__(self, role: IncomingLinks, session: _Session, attach: Attach,
                 node: Node | None) -> None:
        super().__init__(role, session, attach)
        self.node = node
        target = attach.target
        self.address = target.address if isinstance(target, Target) else None
        self.presettled = attach.snd_settle_mode == 1
        self.delivery_count = int(attach.initial_delivery_count or 0)
        self.max_credit = session.connection.link_credit
        # The delivery being received, while it spans frames.
        self.partial: bytearray | None = None
        self.partial_id = 0
        self.partial_settled = False
        self.partial_state: Any = None
        self.coordinator = isinstance(attach.target, Coordinator)
        #: How the routing trace names this link's publishes.
        self.origin = f"AMQP 1.0 link '{self.name}' to " + (
            f"'{self.address}'" if self.address is not None else "each message's 'to'")


def _follows(last: int, delivery_id: int) -> bool:
    return delivery_id == serial_add(last, 1)  # delivery ids are serial numbers (RFC 1982)


def _joins(outcome: Any) -> bool:
    return outcome is _ACCEPTED  # only accepted transfers share a disposition


@final
class IncomingLinks(_LinkRole[_Incoming]):
    """Attach, transfers in (publishes, transactions) and the dispositions that settle them."""

    __slots__ = ("_txn_ids", "failed", "txns")

    def __init__(self, connection: ServerConnection, sessions: Sessions) -> None:
        super().__init__(connection, sessions)
        #: The open transactions, by transaction id.
        self.txns: dict[bytes, Transaction] = {}
        #: Why an open transaction can only roll back (a publish in it was refused).
        self.failed: dict[bytes, str] = {}
        self._txn_ids = itertools.count(1)

    def attach(self, session: _Session, attach: Attach) -> None:
        target = attach.target
        node: Node | None = None
        try:
            if target is None:
                raise LinkError("amqp:invalid-field", "a sending link needs a target")
            if isinstance(target, Coordinator):
                if attach.snd_settle_mode == 1:
                    raise LinkError("amqp:invalid-field",
                                    "transaction controllers cannot send pre-settled")
            elif target.dynamic:
                raise LinkError("amqp:not-implemented", "dynamic targets are not supported")
            elif target.address is not None:
                node = self._resolve_target(session, target)
        except LinkError as exc:
            self.sessions.refuse(session, attach, exc)
            return
        except AMQPError as exc:
            self.sessions.refuse(session, attach, LinkError(_condition(exc), exc.text))
            return
        link = _Incoming(self, session, attach, node)
        session.links[link.handle] = link
        reply_target: Any = target
        if isinstance(target, Coordinator):
            reply_target = Coordinator(capabilities=(Symbol("amqp:local-transactions"),))
        self._frame(session.channel, Attach(
            name=attach.name, handle=attach.handle, role=True,
            snd_settle_mode=attach.snd_settle_mode, rcv_settle_mode=0, source=attach.source,
            target=reply_target, max_message_size=ULong(self.broker.max_message_size)))
        link.credit = link.max_credit
        self.sessions.link_flow(link)

    def _resolve_target(self, session: _Session, target: Target) -> Node:
        """What a sending link's target names, checked (and for a v1 ``/queue/Q``, declared)
        by the model as RabbitMQ does when the link attaches: the node must exist and this
        connection may publish to it (``rabbit_amqp_session:ensure_target/4``).

        Raises:
            LinkError: an address in none of the forms.
            AMQPError: the model's refusal (no such queue or exchange, no permission...).
        """
        node = parse_address(target.address, "target", v1=self.connection._v1)
        channel = session.model
        if node.kind == "queue":
            if node.declare:
                channel.queue_declare(node.name, durable=_durable(target.durable))
            channel.check_publish("", queue=node.name)
        else:
            if node.version == 1 and node.name:  # 3.x: a passive declare first (404)
                channel.exchange_declare(node.name, passive=True)
            channel.check_publish(node.name)
        return node

    # -- transfers in ---------------------------------------------------------------------------

    def on_transfer(self, link: _Incoming, transfer: Transfer, payload: bytes) -> None:
        if link.partial is None:
            if transfer.delivery_id is None:
                raise SessionError("amqp:invalid-field",
                                   "the first transfer of a delivery needs a delivery-id")
            if link.credit <= 0:
                raise LinkError("amqp:link:transfer-limit-exceeded",
                                "transfer without link credit")
            link.credit -= 1
            link.delivery_count += 1
            link.partial = bytearray()
            link.partial_id = int(transfer.delivery_id)
            link.partial_settled = bool(transfer.settled)
            link.partial_state = transfer.state
        elif transfer.delivery_id is not None and int(transfer.delivery_id) != link.partial_id:
            raise SessionError("amqp:invalid-field", "a continuation transfer names another "
                               "delivery-id")
        if transfer.settled:
            link.partial_settled = True
        if transfer.state is not None:
            link.partial_state = transfer.state
        if transfer.aborted:
            link.partial = None  # an aborted delivery is simply forgotten
            self._replenish(link)
            return
        link.partial += payload
        limit = self.broker.max_message_size
        if len(link.partial) > limit:
            link.partial = None
            raise LinkError("amqp:link:message-size-exceeded",
                            f"message larger than the broker's max_message_size ({limit} bytes)")
        if transfer.more:
            return
        data, link.partial = bytes(link.partial), None
        delivery_id, settled = link.partial_id, link.partial_settled
        if link.coordinator:
            outcome = self._coordinate(data)
        else:
            outcome = self._publish(link, data, link.partial_state)
        if not settled:
            link.session.dispositions.append((delivery_id, outcome))
            self.connection._unflushed = True
        self._replenish(link)

    def _replenish(self, link: _Incoming) -> None:
        if link.credit < link.max_credit // 2 and not link.detached:
            link.credit = link.max_credit
            self.sessions.link_flow(link)

    def flush_dispositions(self) -> None:
        # Outcomes of the deliveries received in one read, in ranges where they agree.
        self.connection._unflushed = False
        for session in self.connection.sessions.values():
            pending = session.dispositions
            if not pending:
                continue
            session.dispositions = []
            for first, last, state in runs(pending, follows=_follows, joins=_joins):
                self._disposition(session, first, last, state)

    def _disposition(self, session: _Session, first: int, last: int, state: Any) -> None:
        self._frame(session.channel, Disposition(role=True, first=UInt(first),
                                                 last=UInt(last) if last != first else None,
                                                 settled=True, state=state))

    def _publish(self, link: _Incoming, data: bytes, state: Any) -> Any:
        """Route one message; returns its outcome for the client."""
        txn: Transaction | None = None
        if isinstance(state, TransactionalState):
            txn = self.txns.get(state.txn_id)
            if txn is None:
                return Rejected(error=Error(Symbol("amqp:transaction:unknown-id"),
                                            "unknown transaction id"))
        try:
            parsed = parse_message(data)
        except DecodeError as exc:
            return self._rejected(txn, state, "amqp:decode-error", exc.description)
        node = link.node
        if node is None:  # the anonymous terminus (rabbit_amqp_session:lookup_target/7)
            to = parsed.properties.to if parsed.properties is not None else None
            if to is None:
                return self._rejected(txn, state, "amqp:precondition-failed",
                                      "anonymous terminus requires 'to' address to be set")
            try:
                node = parse_address(to)
            except LinkError:
                node = None
            if node is None or node.version != 2:
                return self._rejected(txn, state, "amqp:precondition-failed",
                                      f"bad 'to' address string: {to}")
        if node.kind == "queue":
            exchange, key = "", node.name
        else:
            exchange = node.name
            key = node.key if node.key is not None else (
                parsed.properties.subject if parsed.properties is not None
                and parsed.properties.subject is not None else "")
        properties, body = to_model(parsed)
        kept = Kept(properties, parsed.message_annotations, parsed.bare)
        if self.broker.publishers_blocked:
            self.connection.blocked = True
        channel = link.session.model
        try:
            published = channel.basic_publish(exchange, key, body, properties, mandatory=True,
                                              native=kept, origin=link.origin, transaction=txn)
        except AMQPError as exc:
            if txn is not None:
                self.failed[state.txn_id] = exc.text
            return self._rejected(txn, state, _condition(exc), exc.text)
        if txn is not None:
            return TransactionalState(state.txn_id, _ACCEPTED)
        if not published.accepted:
            return Rejected(error=Error(Symbol("amqp:resource-limit-exceeded"),
                                        "a queue refused the message: it is full "
                                        "(x-overflow reject-publish)"))
        if not published.routed:
            return _RELEASED
        return _ACCEPTED

    @staticmethod
    def _rejected(txn: Transaction | None, state: Any, condition: str, description: str) -> Any:
        rejected = Rejected(error=Error(Symbol(condition), description[:1024]))
        if txn is not None:
            return TransactionalState(state.txn_id, rejected)
        return rejected

    # -- transactions (Part 4) ---------------------------------------------------------------------

    def _coordinate(self, data: bytes) -> Any:
        try:
            parsed = parse_message(data)
            section = decode_value(parsed.body)[0] if parsed.body else None
            value = getattr(section, "value", None)
        except DecodeError as exc:
            return Rejected(error=Error(Symbol("amqp:decode-error"), exc.description))
        connection = self.connection
        assert connection.model is not None
        if isinstance(value, Declare):
            txn_id = struct.pack(">I", next(self._txn_ids))
            self.txns[txn_id] = Transaction(connection.model)
            return Declared(txn_id)
        if isinstance(value, Discharge):
            txn = self.txns.pop(value.txn_id, None)
            if txn is None:
                return Rejected(error=Error(Symbol("amqp:transaction:unknown-id"),
                                            f"unknown transaction id {value.txn_id!r}"))
            failed = self.failed.pop(value.txn_id, None)
            if value.fail or failed is not None:
                txn.rollback(requeue=True)  # acquired deliveries: released, back again
                if not value.fail:
                    return Rejected(error=Error(Symbol("amqp:transaction:rollback"),
                                                f"rolled back: {failed}"))
                return _ACCEPTED
            txn.commit()
            return _ACCEPTED
        return Rejected(error=Error(Symbol("amqp:decode-error"),
                                    "a coordinator takes declare and discharge messages"))

    def close_transactions(self) -> None:
        """The connection is gone: what the open transactions hold is rolled back (their
        sessions' channels took back the deliveries they held as they closed)."""
        for txn in self.txns.values():
            txn.rollback()
        self.txns.clear()
        self.failed.clear()
