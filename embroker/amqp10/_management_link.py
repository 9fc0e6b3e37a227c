"""The management node's link pairs: the role of an AMQP 1.0 connection for RabbitMQ 4's
``/management`` node (``rabbit_amqp_session``'s management link pair).

Theory of operation
-------------------
With the RabbitMQ 4 profile, a client reaches the management node by attaching a pair of links
with the same name to the address ``/management`` (the link property ``paired`` true): a
sending half on which it sends requests (pre-settled; we grant it
:data:`MANAGEMENT_LINK_CREDIT`, topped up at half) and a receiving half on which each request's
answer comes back (the client grants credit). Each half is a :class:`_ManagementLink`;
:class:`ManagementLinks` is the connection's role object for them. The requests themselves are
answered by the session's :class:`~._management.ManagementNode`.
"""

from __future__ import annotations

from typing import Final, final

from ..amqp10_common._definitions import Attach, Flow, Source, Target, Transfer
from ..amqp10_common._errors import LinkError, SessionError
from ..amqp10_common._types import Symbol, UInt, ULong
from ._management import MANAGEMENT_ADDRESS
from ._session import _SERIAL, _Link, _LinkRole, _Session, serial_add, serial_diff

__all__ = ["MANAGEMENT_LINK_CREDIT", "ManagementLinks"]

#: The credit a client gets for management requests, topped up at half (RabbitMQ 4's
#: ``?MAX_MANAGEMENT_LINK_CREDIT``).
MANAGEMENT_LINK_CREDIT: Final = 8


@final
class _ManagementLink(_Link):
    """A half of a link pair to the management node: ``requests`` when the client sends (we
    grant it credit), else the half we answer on (the client grants credit)."""

    def __init__(self, role: ManagementLinks, session: _Session, attach: Attach,
                 requests: bool) -> None:
        super().__init__(role, session, attach)
        self.requests = requests
        if requests:
            self.delivery_count = int(attach.initial_delivery_count or 0)
            self.credit = MANAGEMENT_LINK_CREDIT


@final
class ManagementLinks(_LinkRole[_ManagementLink]):
    """Attach of either half, requests in, answers out, and the answering half's credit."""

    __slots__ = ()

    def is_management(self, attach: Attach) -> bool:
        terminus = attach.source if attach.role else attach.target
        return isinstance(terminus, (Source, Target)) and \
            terminus.address == MANAGEMENT_ADDRESS and self.broker.profile.rabbitmq4

    def attach(self, session: _Session, attach: Attach) -> None:
        requests = not attach.role  # the client sends requests on its sender
        try:
            properties = attach.properties or {}
            if properties.get(Symbol("paired")) is not True:
                raise LinkError("amqp:invalid-field",
                                "Link property 'paired' is not set to boolean value 'true'")
            if requests and attach.snd_settle_mode != 1:
                raise LinkError("amqp:invalid-field", "management requests are sent "
                                "pre-settled: attach with snd-settle-mode settled")
            pair = session.pairs.setdefault(attach.name, [None, None])
            if pair[0 if requests else 1] is not None:
                raise LinkError("amqp:precondition-failed",
                                f"received invalid attach for management link pair "
                                f"'{attach.name}': that half is attached already")
        except LinkError as exc:
            self.sessions.refuse(session, attach, exc)
            return
        link = _ManagementLink(self, session, attach, requests)
        pair[0 if requests else 1] = link
        session.links[link.handle] = link
        if requests:
            self._frame(session.channel, Attach(
                name=attach.name, handle=attach.handle, role=True, snd_settle_mode=1,
                rcv_settle_mode=0, source=attach.source, target=attach.target,
                max_message_size=ULong(self.broker.max_message_size),
                properties=attach.properties))
            self.sessions.link_flow(link)
        else:
            self._frame(session.channel, Attach(
                name=attach.name, handle=attach.handle, role=False, snd_settle_mode=1,
                rcv_settle_mode=attach.rcv_settle_mode, source=attach.source,
                target=attach.target, initial_delivery_count=UInt(0),
                max_message_size=attach.max_message_size, properties=attach.properties))

    def on_transfer(self, link: _ManagementLink, transfer: Transfer, payload: bytes) -> None:
        """One request on the requests half: answered on the pair's other half."""
        session = link.session
        if not link.requests:
            raise LinkError("amqp:not-allowed", "transfer on a link where the client receives")
        if link.credit <= 0:
            raise LinkError("amqp:link:transfer-limit-exceeded",
                            f"insufficient credit ({link.credit}) for management link from "
                            "client to RabbitMQ")
        if not transfer.settled or transfer.more:
            raise SessionError("amqp:invalid-field", "management requests are one settled "
                               "transfer each")
        responses = session.pairs.get(link.name, [None, None])[1]
        if responses is None:
            raise SessionError("amqp:precondition-failed",
                               "received transfer on half open management link pair")
        if responses.credit <= 0:
            raise SessionError("amqp:precondition-failed",
                               f"insufficient credit ({responses.credit}) for management link "
                               "from RabbitMQ to client")
        response = session.management.handle(payload)
        link.credit -= 1
        link.delivery_count += 1
        if link.credit <= MANAGEMENT_LINK_CREDIT // 2:
            link.credit = MANAGEMENT_LINK_CREDIT
            self.sessions.link_flow(link)
        responses.credit -= 1
        responses.delivery_count += 1
        delivery_id = session.next_delivery_id
        session.next_delivery_id = serial_add(delivery_id, 1)
        self.sessions.send_transfer(session, Transfer(
            handle=UInt(responses.handle), delivery_id=UInt(delivery_id), delivery_tag=b"",
            message_format=UInt(0), settled=True), response)


    def on_flow(self, link: _ManagementLink, flow: Flow) -> None:
        if not link.requests:
            if flow.link_credit is not None:  # credit is absolute (section 2.6.7)
                delivery_count = int(flow.delivery_count) if flow.delivery_count is not None \
                    else 0
                link.credit = max(0, serial_diff(serial_add(delivery_count,
                                                            int(flow.link_credit)),
                                                 link.delivery_count % _SERIAL))
                if flow.drain:
                    link.delivery_count += link.credit
                    link.credit = 0
            if flow.echo or flow.drain:
                self.sessions.link_flow(link)
        elif flow.echo:
            self.sessions.link_flow(link)

    def drop(self, link: _ManagementLink) -> None:
        pair = link.session.pairs.get(link.name)
        if pair is not None:
            pair[0 if link.requests else 1] = None
            if pair == [None, None]:
                del link.session.pairs[link.name]
