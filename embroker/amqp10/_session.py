"""Sessions and flow: the role of an AMQP 1.0 connection between its frames and its links.

Theory of operation
-------------------
A session (``begin``/``end``) is a :class:`_Session`: its windows, its links by handle, and a
model channel (in confirm mode, so each publish learns whether a queue refused it) whose events
:class:`_ModelEvents` hears. :class:`Sessions` is the role object of the connection that begins
and ends them, keeps their windows, answers ``flow`` at the session level, attaches and detaches
links, and sends transfers as far as the client's incoming window lets them go (the rest waits
in the session for the client's next ``flow``).

Flow control (Part 2 section 2.5.6 and 2.6.7): session windows count transfer *frames* (serial
numbers, RFC 1982); link credit counts *deliveries* and is absolute (``delivery-count +
link-credit`` of the receiver's last flow).

Each link belongs to one of three link roles, which :class:`_LinkRole` describes and which
``link.role`` names: the links the client sends on (``_incoming``), those it receives on
(``_outgoing``) and the management node's link pairs (``_management_link``). What is the same
for every link (its attach's checks, its detach, its session's flow) is here; a performative
that concerns one link goes to its role (``on_transfer``, ``on_flow``, ``drop``).

Every role object holds a reference to the connection and to the connection's output list (the
same list for the connection's whole life), so a frame is queued in one call.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar, final

from ..amqp10_common._definitions import Accepted, Attach, Begin, Detach, End, Error, Flow, Released, Transfer
from ..amqp10_common._errors import ConnectionError10, LinkError, ProtocolError, SessionError
from ..amqp10_common._frames import encode_frame, encode_transfer_frames
from ..amqp10_common._types import Symbol, UInt
from ..errors import AccessRefused, AMQPError, NotFound, PreconditionFailed, ResourceLocked
from ..model._events import Cancelled, ChannelEvent, Delivered
from ._management import ManagementNode

if TYPE_CHECKING:
    from ..model import Broker
    from ..model import Channel as ModelChannel
    from ._connection import ServerConnection
    from ._management_link import _ManagementLink
    from ._outgoing import _Outgoing

__all__ = ["INCOMING_WINDOW", "Sessions", "serial_add", "serial_diff"]

#: The session incoming window we keep open (frames); refilled when half is used.
INCOMING_WINDOW: Final = 65536
_SERIAL: Final = 1 << 32
_HALF: Final = 1 << 31


def serial_add(a: int, b: int) -> int:
    """``a + b`` in 32-bit serial number arithmetic (RFC 1982)."""
    return (a + b) % _SERIAL


def serial_diff(a: int, b: int) -> int:
    """``a - b`` as a signed distance in 32-bit serial number arithmetic (RFC 1982)."""
    d = (a - b) % _SERIAL
    return d - _SERIAL if d >= _HALF else d


#: The mapping of the model's refusals to AMQP 1.0 error conditions.
_CONDITIONS: Final[dict[type[AMQPError], str]] = {
    NotFound: "amqp:not-found", AccessRefused: "amqp:unauthorized-access",
    PreconditionFailed: "amqp:precondition-failed", ResourceLocked: "amqp:resource-locked",
}


def _condition(error: AMQPError) -> str:
    return _CONDITIONS.get(type(error), "amqp:internal-error" if error.hard else
                           "amqp:precondition-failed")


def _durable(durability: object) -> bool:
    """Whether a v1 ``/queue/Q`` terminus declares a durable queue: for the terminus
    durabilities configuration (1) and unsettled-state (2), not for none (0, the default)
    (``rabbit_amqp1_0_link_util:durable/1``)."""
    return isinstance(durability, int) and durability > 0


_ACCEPTED: Final = Accepted()
_RELEASED: Final = Released()


# -- links and sessions -------------------------------------------------------------------------

class _Link:
    """A link attached in a session; ``handle`` is the client's and ours; ``role`` is the
    connection's role object that serves it."""

    #: Whether the link drains (only a link we send on does).
    drain = False

    def __init__(self, role: _LinkRole[Any], session: _Session, attach: Attach) -> None:
        self.role = role
        self.session = session
        self.name = attach.name
        self.handle = int(attach.handle)
        self.delivery_count = 0
        self.credit = 0
        self.detached = False

    @property
    def available(self) -> int | None:
        """What our ``flow`` on this link says is available (``None``: nothing said)."""
        return None


@final
class _Session:
    """A session: its windows, its links by handle, its model channel and unsettled
    deliveries (by delivery-id)."""

    def __init__(self, connection: ServerConnection, channel: int, begin: Begin) -> None:
        self.connection = connection
        self.channel = channel
        self.next_incoming_id = int(begin.next_outgoing_id)
        self.incoming_window = INCOMING_WINDOW
        self.next_outgoing_id = 0
        self.remote_incoming_window = int(begin.incoming_window)
        self.remote_outgoing_window = int(begin.outgoing_window)
        self.handle_max = min(int(begin.handle_max), 0xFFFFFFFF)
        self.links: dict[int, _Link] = {}
        #: Handles we detached (refused or closed with an error) whose detach the client has
        #: not yet answered: what it sends on them meanwhile crossed ours and is dropped.
        self.detaching: set[int] = set()
        self.by_tag: dict[str, _Outgoing] = {}
        self.next_delivery_id = 0
        #: Deliveries sent and not settled: delivery-id -> (link, model delivery tag).
        self.unsettled: dict[int, tuple[_Outgoing, int]] = {}
        self.pending: deque[bytes] = deque()
        self.dispositions: list[tuple[int, Any]] = []
        #: Link pairs to the management node, by link name: [requests half, responses half].
        self.pairs: dict[str, list[_ManagementLink | None]] = {}
        self._management: ManagementNode | None = None
        self.ended = False
        model = connection.model
        assert model is not None
        channel_ = model.open_channel(channel)
        channel_.confirm_select()
        channel_.listener = _ModelEvents(connection, self)
        self.model: ModelChannel = channel_

    @property
    def management(self) -> ManagementNode:
        if self._management is None:
            self._management = ManagementNode(self.model)
        return self._management


@final
class _ModelEvents:
    """The one place that hears a session's model channel: deliveries and cancels (the
    model's events), turned into this connection's calls. Returns and confirms are not
    listened to: a publish's outcome is what ``basic_publish`` returns."""

    __slots__ = ("connection", "outgoing", "session")

    def __init__(self, connection: ServerConnection, session: _Session) -> None:
        self.connection = connection
        self.session = session
        self.outgoing = connection._outgoing_links

    def __call__(self, event: ChannelEvent) -> None:
        # Events come in the middle of the model's work (another connection's publish, a timer):
        # a failure here is this connection's alone and must not unwind the model.
        try:
            if isinstance(event, Delivered):
                self.outgoing.deliver(self.session, event.consumer_tag, event.delivery_tag,
                                      event.redelivered, event.exchange, event.routing_key,
                                      event.message, event.failures)
            elif isinstance(event, Cancelled):
                self.outgoing.cancelled(self.session, event.consumer_tag)
        except Exception as exc:  # a bug: the listener closes this connection
            connection = self.connection
            connection.failure = exc
            connection._output_ready()


# -- roles --------------------------------------------------------------------------------------

class _Role:
    """A part of a connection's work: the connection, its broker and its output list."""

    __slots__ = ("_out", "broker", "connection")

    def __init__(self, connection: ServerConnection) -> None:
        self.connection = connection
        self.broker: Broker = connection.broker
        self._out = connection._out

    def _frame(self, channel: int, performative: Any) -> None:
        self._out.append(encode_frame(channel, performative))


_L = TypeVar("_L", bound=_Link)


class _LinkRole(_Role, Generic[_L]):
    """The role that serves one kind of link: what a transfer, a flow and the end of one of its
    links do (by default, those of a link the client receives on: a transfer is refused, a
    flow answered when asked, an end has nothing to release)."""

    __slots__ = ("sessions",)

    def __init__(self, connection: ServerConnection, sessions: Sessions) -> None:
        super().__init__(connection)
        self.sessions = sessions

    def on_transfer(self, link: _L, transfer: Transfer, payload: bytes) -> None:
        raise LinkError("amqp:not-allowed", "transfer on a link where the client receives")

    def on_flow(self, link: _L, flow: Flow) -> None:
        if flow.echo:
            self.sessions.link_flow(link)

    def drop(self, link: _L) -> None:
        """What the link held is released (it is detached, or its session ended)."""


@final
class Sessions(_Role):
    """Begin and end, the session windows, flow, attach and detach."""

    __slots__ = ()

    # -- begin and end ----------------------------------------------------------------------------

    def begin(self, channel: int, begin: Begin) -> None:
        connection = self.connection
        if begin.remote_channel is not None:
            raise ConnectionError10("amqp:illegal-state",
                                    "begin answers a begin we never sent (remote-channel set)")
        if channel in connection.sessions or channel in connection._ending:
            raise ConnectionError10("amqp:illegal-state",
                                    f"channel {channel} already has a session")
        if connection.model is None:
            raise ConnectionError10("amqp:illegal-state", "no connection open")
        session = _Session(connection, channel, begin)
        connection.sessions[channel] = session
        self._frame(channel, Begin(remote_channel=channel, next_outgoing_id=UInt(0),
                                   incoming_window=UInt(INCOMING_WINDOW),
                                   outgoing_window=UInt(0xFFFFFFFF),
                                   handle_max=UInt(session.handle_max)))

    def on_end(self, session: _Session, end: End, payload: bytes) -> None:
        self.drop_session(session)
        del self.connection.sessions[session.channel]
        self._frame(session.channel, End())

    def end_session(self, session: _Session, error: ProtocolError) -> None:
        """End a session with an error; frames for it are ignored until the client's end."""
        self.drop_session(session)
        self.connection.sessions.pop(session.channel, None)
        self.connection._ending.add(session.channel)
        self._frame(session.channel,
                    End(error=Error(Symbol(error.condition), error.description[:1024])))

    def drop_session(self, session: _Session) -> None:
        if session.ended:
            return
        session.ended = True
        for link in list(session.links.values()):
            self.drop_link(link)
        session.links.clear()
        session.model.close()  # requeues whatever is still unsettled, in order

    # -- attach and detach ------------------------------------------------------------------------

    def on_attach(self, session: _Session, attach: Attach, payload: bytes) -> None:
        handle = int(attach.handle)
        if handle > session.handle_max:
            raise ConnectionError10("amqp:connection:framing-error",
                                    f"handle {handle} is over handle-max {session.handle_max}")
        if handle in session.links or handle in session.detaching:
            raise SessionError("amqp:session:handle-in-use", f"handle {handle} is in use")
        connection = self.connection
        if connection._management_links.is_management(attach):
            connection._management_links.attach(session, attach)
        elif attach.role:
            connection._outgoing_links.attach(session, attach)
        else:
            connection._incoming_links.attach(session, attach)

    def refuse(self, session: _Session, attach: Attach, error: ProtocolError) -> None:
        # Part 2 figure 2.33: attach with a null terminus on our side, then detach (closed).
        if attach.role:  # the client receives: we are the sender, the source is ours to null
            reply = Attach(name=attach.name, handle=attach.handle, role=False,
                           snd_settle_mode=attach.snd_settle_mode, source=None,
                           target=attach.target, initial_delivery_count=UInt(0))
        else:
            reply = Attach(name=attach.name, handle=attach.handle, role=True,
                           snd_settle_mode=attach.snd_settle_mode, source=attach.source,
                           target=None)
        self._frame(session.channel, reply)
        session.detaching.add(int(attach.handle))
        self._frame(session.channel, Detach(handle=attach.handle, closed=True, error=Error(
            Symbol(error.condition), error.description[:1024])))

    def on_detach(self, session: _Session, detach: Detach, payload: bytes) -> None:
        handle = int(detach.handle)
        if handle in session.detaching:
            session.detaching.discard(handle)  # the answer to our detach
            return
        link = session.links.pop(handle, None)
        if link is None:
            raise SessionError("amqp:session:unattached-handle",
                               f"detach of handle {int(detach.handle)}, which is not attached")
        self.drop_link(link)
        # Closed detaches are always answered closed (RabbitMQ 3.10 did not, and hung proton).
        self._frame(session.channel, Detach(handle=detach.handle, closed=detach.closed))

    def detach_with_error(self, link: _Link, error: ProtocolError) -> None:
        session = link.session
        session.links.pop(link.handle, None)
        session.detaching.add(link.handle)
        self.drop_link(link)
        self._frame(session.channel, Detach(handle=UInt(link.handle), closed=True, error=Error(
            Symbol(error.condition), error.description[:1024])))

    def drop_link(self, link: _Link) -> None:
        if link.detached:
            return
        link.detached = True
        link.role.drop(link)

    # -- flow -------------------------------------------------------------------------------------

    def session_flow(self, session: _Session, link: _Link | None = None, *,
                     echo: bool = False, available: int | None = None) -> None:
        flow = Flow(next_incoming_id=UInt(session.next_incoming_id),
                    incoming_window=UInt(session.incoming_window),
                    next_outgoing_id=UInt(session.next_outgoing_id),
                    outgoing_window=UInt(0xFFFFFFFF))
        if link is not None:
            flow.handle = UInt(link.handle)
            flow.delivery_count = UInt(link.delivery_count % _SERIAL)
            flow.link_credit = UInt(link.credit)
            flow.available = None if available is None else UInt(min(available, 0xFFFFFFFF))
            flow.drain = link.drain
            flow.echo = echo
        self._frame(session.channel, flow)

    def link_flow(self, link: _Link) -> None:
        self.session_flow(link.session, link, available=link.available)

    def on_flow(self, session: _Session, flow: Flow, payload: bytes) -> None:
        # The client's session state: how many more transfer frames it takes from us.
        next_incoming = int(flow.next_incoming_id) if flow.next_incoming_id is not None else 0
        session.remote_incoming_window = serial_diff(
            serial_add(next_incoming, int(flow.incoming_window)), session.next_outgoing_id)
        session.remote_outgoing_window = int(flow.outgoing_window)
        self.send_pending(session)
        if flow.handle is None:
            if flow.echo:
                self.session_flow(session)
            return
        link = session.links.get(int(flow.handle))
        if link is None:
            if int(flow.handle) in session.detaching:
                return
            raise SessionError("amqp:session:unattached-handle",
                               f"flow for handle {int(flow.handle)}, which is not attached")
        link.role.on_flow(link, flow)

    # -- transfers --------------------------------------------------------------------------------

    def on_transfer(self, session: _Session, transfer: Transfer, payload: bytes) -> None:
        if session.incoming_window <= 0:
            raise SessionError("amqp:session:window-violation",
                               "transfer beyond the session's incoming window")
        session.incoming_window -= 1
        session.next_incoming_id = serial_add(session.next_incoming_id, 1)
        link = session.links.get(int(transfer.handle))
        if link is None:
            if int(transfer.handle) in session.detaching:
                return
            raise SessionError("amqp:session:unattached-handle",
                               f"transfer on handle {int(transfer.handle)}, which is not "
                               "attached")
        if session.incoming_window < INCOMING_WINDOW // 2:
            session.incoming_window = INCOMING_WINDOW
            self.session_flow(session)
        try:
            link.role.on_transfer(link, transfer, payload)
        except LinkError as exc:
            self.detach_with_error(link, exc)

    def send_transfer(self, session: _Session, transfer: Transfer, payload: bytes) -> None:
        """Send a transfer, split into frames, as far as the session's window lets them go now;
        the rest waits in ``session.pending`` for the peer's next flow."""
        for frame in encode_transfer_frames(session.channel, transfer, payload,
                                            self.connection.peer_max_frame_size):
            if session.remote_incoming_window > 0 and not session.pending:
                self._out.append(frame)
                session.remote_incoming_window -= 1
                session.next_outgoing_id = serial_add(session.next_outgoing_id, 1)
            else:
                session.pending.append(frame)

    def send_pending(self, session: _Session) -> None:
        pending = session.pending
        while pending and session.remote_incoming_window > 0:
            self._out.append(pending.popleft())
            session.remote_incoming_window -= 1
            session.next_outgoing_id = serial_add(session.next_outgoing_id, 1)
