"""The server side of an AMQP 1.0 connection, sans-IO: bytes in, model calls, bytes out.

Theory of operation
-------------------
A :class:`ServerConnection` is fed what the socket received (:meth:`receive_data`) and hands back
what must be written (:meth:`data_to_send`); it never touches a socket, a thread or the wall
clock (time comes from the broker's clock through :meth:`tick`). The owner holds the broker's
lock around every call. It offers the listener the same small interface as the 0-9-1
connection (``receive_data``, ``data_to_send``, ``has_output``, ``should_close``, ``tick``,
``close``, ``connection_lost``, ``blocked``).

The connection goes through the states in ``ConnectionState``::

    HEADER --AMQP 3 1 0 0--> SASL_INIT --sasl-init ok--> AMQP_HEADER --AMQP 0 1 0 0--> OPEN
        --open--> OPENED --close (either side)--> CLOSE_SENT --> CLOSED

Inside, sessions (``begin``/``end``) hold links (``attach``/``detach``); each is an endpoint
that an error can end on its own: a :class:`~._errors.LinkError` detaches its link (closed,
with the error), a :class:`~._errors.SessionError` ends its session, anything else closes the
connection. Errors become frames in exactly one place, :meth:`ServerConnection._fail`.

The broker model is driven as a 0-9-1 client would drive it: each session is a model channel
(in confirm mode, so each publish learns whether a queue refused it, and mandatory, so it
learns whether it went nowhere); a link that sends to the client is a model consumer whose
capacity is the link credit; settlements are acks, rejects and requeues of that channel's
delivery tags. Links and sessions that go away, by ``detach``, ``end``, ``close`` or a lost
socket, requeue what they had delivered and not settled.

Flow control (Part 2 section 2.5.6 and 2.6.7): session windows count transfer *frames* (serial
numbers, RFC 1982); link credit counts *deliveries* and is absolute (``delivery-count +
link-credit`` of the receiver's last flow). A delivery that the client's incoming window cannot
take yet waits in its session until a ``flow`` opens the window.
"""

from __future__ import annotations

import contextlib
import datetime
import enum
import itertools
import struct
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, final

from ..errors import (
    AccessRefused,
    AMQPError,
    NotAllowed,
    NotFound,
    PreconditionFailed,
    ResourceLocked,
)
from ..model._events import Cancelled, ChannelEvent, Confirmed, Delivered, Returned
from ..model._names import REPLY_TO
from ._address import Node, parse_address, queue_address
from ._definitions import (
    Accepted,
    Attach,
    Begin,
    Close,
    Coordinator,
    Declare,
    Declared,
    DeleteOnClose,
    Detach,
    Discharge,
    Disposition,
    End,
    Error,
    Flow,
    Modified,
    Open,
    Received,
    Rejected,
    Released,
    SaslInit,
    SaslMechanisms,
    SaslOutcome,
    Source,
    Target,
    TransactionalState,
    Transfer,
)
from ._errors import ConnectionError10, DecodeError, FramingError, LinkError, ProtocolError, SessionError
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
from ._frames import (
    AMQP_HEADER,
    EMPTY_FRAME,
    FRAME_SASL,
    MIN_MAX_FRAME_SIZE,
    SASL_HEADER,
    Frame,
    FrameReader,
    encode_frame,
    encode_transfer_frames,
)
from ._management import MANAGEMENT_ADDRESS, ManagementNode
from ._message import Kept, _value_to_091, encode_deaths, parse_message, to_amqp10, to_model
from ._selector import Selector, SelectorError
from ._types import Array, Described, Symbol, Timestamp, UInt, ULong, decode_value

if TYPE_CHECKING:
    from ..model import Broker, Browser, Message, Queue
    from ..model import Channel as ModelChannel
    from ..model import Connection as ModelConnection

__all__ = ["ConnectionState", "ServerConnection"]

#: What the server offers in ``open`` (RabbitMQ 4 offers the same frame size).
MAX_FRAME_SIZE: Final = 131072
CHANNEL_MAX: Final = 65535
#: Our idle time-out in milliseconds: a client silent this long is closed.
IDLE_TIME_OUT: Final = 60000
#: The session incoming window we keep open (frames); refilled when half is used.
INCOMING_WINDOW: Final = 65536
#: The credit a sending client gets on each link (as RabbitMQ 3.10 grants); refilled when
#: half is used.
LINK_CREDIT: Final = 65536
#: The credit a client gets for management requests, topped up at half (RabbitMQ 4's
#: ``?MAX_MANAGEMENT_LINK_CREDIT``).
MANAGEMENT_LINK_CREDIT: Final = 8
#: How long to wait for the client's ``close`` after ours (seconds).
CLOSE_TIMEOUT: Final = 1.0
_SERIAL: Final = 1 << 32
_HALF: Final = 1 << 31
_OUTCOMES: Final = (Symbol("amqp:accepted:list"), Symbol("amqp:rejected:list"),
                    Symbol("amqp:released:list"), Symbol("amqp:modified:list"))
_SELECTOR: Final = "apache.org:selector-filter:string"
_VOLATILE: Final = "rabbitmq:volatile-queue"
_SELECTOR_CODE: Final = 0x0000468C00000004
_TAG = struct.Struct(">Q")


def serial_add(a: int, b: int) -> int:
    """``a + b`` in 32-bit serial number arithmetic (RFC 1982)."""
    return (a + b) % _SERIAL


def serial_diff(a: int, b: int) -> int:
    """``a - b`` as a signed distance in 32-bit serial number arithmetic (RFC 1982)."""
    d = (a - b) % _SERIAL
    return d - _SERIAL if d >= _HALF else d


class ConnectionState(enum.Enum):
    HEADER = "waiting for the protocol header"
    SASL_INIT = "waiting for sasl-init"
    AMQP_HEADER = "waiting for the AMQP protocol header after SASL"
    OPEN = "waiting for open"
    OPENED = "open"
    CLOSE_SENT = "close sent: waiting for the client's close"
    CLOSED = "closed"


#: The mapping of the model's refusals to AMQP 1.0 error conditions.
_CONDITIONS: Final[dict[type[AMQPError], str]] = {
    NotFound: "amqp:not-found", AccessRefused: "amqp:unauthorized-access",
    PreconditionFailed: "amqp:precondition-failed", ResourceLocked: "amqp:resource-locked",
}


def _condition(error: AMQPError) -> str:
    return _CONDITIONS.get(type(error), "amqp:internal-error" if error.hard else
                           "amqp:precondition-failed")


# -- links --------------------------------------------------------------------------------------

class _Link:
    """A link attached in a session; ``handle`` is the client's and ours."""

    def __init__(self, session: _Session, attach: Attach) -> None:
        self.session = session
        self.name = attach.name
        self.handle = int(attach.handle)
        self.delivery_count = 0
        self.credit = 0
        self.detached = False


@final
class _Incoming(_Link):
    """The client sends, we receive: messages published to a node (or to each one's ``to``)."""

    def __init__(self, session: _Session, attach: Attach, node: Node | None) -> None:
        super().__init__(session, attach)
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


@final
class _Outgoing(_Link):
    """We send, the client receives: a model consumer on a queue, or a browser of it."""

    def __init__(self, session: _Session, attach: Attach, queue: Queue | None) -> None:
        super().__init__(session, attach)
        #: The queue it takes from (``None`` for a volatile queue: direct reply-to).
        self.queue = queue
        #: A volatile queue's model channel (its direct reply-to consumer), closed with it.
        self.reply_channel: ModelChannel | None = None
        self.presettled = attach.snd_settle_mode == 1
        self.consumer_tag = ""
        self.drain = False
        #: A queue this link created (dynamic, or for an exchange source): deleted with it.
        self.own_queue = False
        #: Browsing (distribution-mode copy): the model's look at the queue, and the selector
        #: it passes messages through.
        self.browser: Browser | None = None
        self.selector: Selector | None = None
        self.unsettled: set[int] = set()

    @property
    def browse(self) -> bool:
        return self.browser is not None


@final
class _ManagementLink(_Link):
    """A half of a link pair to the management node: ``requests`` when the client sends (we
    grant it credit), else the half we answer on (the client grants credit)."""

    def __init__(self, session: _Session, attach: Attach, requests: bool) -> None:
        super().__init__(session, attach)
        self.requests = requests
        if requests:
            self.delivery_count = int(attach.initial_delivery_count or 0)
            self.credit = MANAGEMENT_LINK_CREDIT


class _Txn:
    """A local transaction: a model channel in tx mode holds its publishes; its settlements
    wait here (session channel, delivery tag, outcome) until the discharge."""

    __slots__ = ("channel", "failed", "settles")

    def __init__(self, channel: ModelChannel) -> None:
        self.channel = channel
        self.settles: list[tuple[int, int, Any]] = []
        self.failed: str | None = None


# -- sessions -----------------------------------------------------------------------------------

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
        self.model: ModelChannel = connection.model_channel(channel, self)

    @property
    def management(self) -> ManagementNode:
        if self._management is None:
            self._management = ManagementNode(self.model)
        return self._management


_ACCEPTED: Final = Accepted()
_RELEASED: Final = Released()


@final
class ServerConnection:
    """One AMQP 1.0 client connection, seen from the broker.

    Args:
        broker: the broker whose model this connection drives.
        peer: a description of the peer for logs and names.
        on_output: called (with no arguments) when output becomes ready without
            :meth:`receive_data` being the cause (a delivery caused by another connection).
        idle_time_out: our idle time-out, seconds (0: none); the client is closed with
            ``amqp:resource-limit-exceeded`` after that long without a frame.
        max_frame_size, channel_max, link_credit: what we offer.
        handshake_timeout: how long from ``connected_at`` (the broker clock's monotonic time
            when the socket connected; now by default) until ``open`` (seconds).
    """

    def __init__(self, broker: Broker, *, peer: str = "",
                 on_output: Callable[[], None] | None = None, idle_time_out: float = 60,
                 max_frame_size: int = MAX_FRAME_SIZE,
                 channel_max: int = CHANNEL_MAX, link_credit: int = LINK_CREDIT,
                 heartbeat: int | None = None, handshake_timeout: float = 10.0,
                 connected_at: float | None = None, loopback: bool = False) -> None:
        self.broker = broker
        self.peer = peer
        #: Whether the client came over a loopback interface (``guest`` may log in only then).
        self.loopback = loopback
        self.state = ConnectionState.HEADER
        self._on_output = on_output
        self._out: list[bytes] = []
        self._reader = FrameReader(MIN_MAX_FRAME_SIZE)
        if heartbeat is not None:  # the listener's 0-9-1 setting, in seconds
            idle_time_out = heartbeat
        self.idle_time_out = idle_time_out
        #: How long a client may take from connecting to ``open`` (seconds), as RabbitMQ's
        #: ``handshake_timeout``; then the socket is closed.
        self.handshake_timeout = handshake_timeout
        self.offer_max_frame_size = max_frame_size
        self.offer_channel_max = channel_max
        self.link_credit = link_credit
        #: What the client allows: the largest frame we may send, its idle time-out (s).
        self.peer_max_frame_size = MIN_MAX_FRAME_SIZE
        self.peer_idle_time_out = 0.0
        self.channel_max = channel_max
        self.container_id = ""
        #: Whether RabbitMQ 3's v1 addresses are served (RabbitMQ 4 with its amqp_address_v1
        #: deprecated feature denied: not).
        self._v1 = broker.profile.permits("amqp_address_v1")
        self.user = ""
        self.vhost = "/"
        self.model: ModelConnection | None = None
        self.sessions: dict[int, _Session] = {}
        self._ending: set[int] = set()  # channels whose session we ended, awaiting its end
        self._txns: dict[bytes, _Txn] = {}
        self._txn_ids = itertools.count(1)
        self._model_channels = itertools.count(1 << 16)
        self._browsers: list[_Outgoing] = []
        now = broker.clock.monotonic()
        self._last_received = now
        self._last_sent = now
        self._started = now if connected_at is None else connected_at
        self._closing_since = 0.0
        #: A bug met while the model told this connection something (set by the event
        #: listener); the listener closes the connection with it.
        self.failure: Exception | None = None
        #: The error that closed the connection, if one did.
        self.close_reason: ProtocolError | None = None
        #: True once the socket should close (after what is queued is sent).
        self.should_close = False
        #: Set by :meth:`data_to_send`: the length of the part of its bytes that answers a
        #: receiving link's attach, when deliveries follow it in the same bytes (``None``
        #: otherwise). RabbitMQ's first transfers on a new link follow its attach after a
        #: round trip of credit through the queue's process, so clients read the attach first;
        #: a listener keeps that order by writing the rest a moment later.
        self.pause_at: int | None = None
        self._attach_mark: int | None = None
        #: True while the broker blocks publishers and this connection published.
        self.blocked = False
        # Per publish: what the model told us (a return, a nack).
        self._returned = False
        self._nacked = False
        self._unflushed = False

    def __repr__(self) -> str:
        return f"<amqp10.ServerConnection {self.peer or id(self)} {self.state.name}>"

    # -- bytes in and out ------------------------------------------------------------------------

    def data_to_send(self) -> bytes:
        """Everything queued for the socket since the last call (may be empty); when it holds
        the answer to a receiving link's attach followed by more, :attr:`pause_at` says where
        that answer ends."""
        self.pause_at = None
        if not self._out:
            return b""
        self._last_sent = self.broker.clock.monotonic()
        mark = self._attach_mark
        if mark is not None:
            self._attach_mark = None
            if mark < len(self._out):
                self.pause_at = sum(len(chunk) for chunk in self._out[:mark])
        data = b"".join(self._out)
        self._out.clear()
        return data

    @property
    def has_output(self) -> bool:
        return bool(self._out) or self.should_close

    def _send(self, data: bytes) -> None:
        self._out.append(data)

    def _frame(self, channel: int, performative: Any) -> None:
        self._out.append(encode_frame(channel, performative))

    def _output_ready(self) -> None:
        if self._on_output is not None:
            self._on_output()

    def receive_data(self, data: bytes) -> None:
        """Feed bytes received from the client; replies queue up for :meth:`data_to_send`.

        An empty ``data`` means the client closed its side: everything the connection held is
        released (unsettled deliveries requeued). Never raises for anything the client sends.
        """
        if self.state is ConnectionState.CLOSED:
            return
        if not data:
            self.connection_lost()
            return
        self._last_received = self.broker.clock.monotonic()
        reader = self._reader
        reader.feed(data)
        try:
            while not self.should_close:
                if self.state in (ConnectionState.HEADER, ConnectionState.AMQP_HEADER):
                    header = reader.next_header()
                    if header is None:
                        break
                    self._header(header)
                    continue
                frame = reader.next_frame()
                if frame is None:
                    break
                self._dispatch(frame)
        except (FramingError, DecodeError) as exc:
            # The byte stream cannot be trusted past this point: say why, then hang up.
            self._fail_connection(exc)
            self._finish()
        except ProtocolError as exc:
            self._fail_connection(exc)
        self._flush_dispositions()
        self._pump_browsers()

    def connection_lost(self) -> None:
        """The socket is gone: release everything the connection held."""
        self.state = ConnectionState.CLOSED
        self.should_close = True
        self._teardown()

    def close(self, error: object) -> None:
        """Close from the broker's side (``amqp:connection:forced`` when the broker stops, or
        ``amqp:internal-error`` for a bug); ``error`` is an :class:`~embroker.errors.AMQPError`
        or a :class:`~._errors.ProtocolError`."""
        if self.state in (ConnectionState.CLOSED, ConnectionState.CLOSE_SENT):
            return
        if isinstance(error, ProtocolError):
            self._fail_connection(error)
        elif isinstance(error, AMQPError):
            condition = "amqp:connection:forced" if error.reply_code == 320 else \
                "amqp:internal-error"
            self._fail_connection(ConnectionError10(condition, error.text))
        else:
            self._fail_connection(ConnectionError10("amqp:internal-error", str(error)))

    def internal_error(self, error: object) -> None:
        """A bug met while serving this connection: tell the client (``amqp:internal-error``,
        when it can still read a close) and close the socket without waiting."""
        if self.state is ConnectionState.CLOSED:
            return
        text = getattr(error, "text", None) or str(error)
        self._fail_connection(ConnectionError10("amqp:internal-error", text))
        self._finish()

    def publishers_blocked(self, reason: str) -> None:
        """The broker blocks publishers: a connection that publishes stops being read."""

    def publishers_unblocked(self) -> None:
        self.blocked = False
        self._output_ready()

    # -- headers and SASL --------------------------------------------------------------------------

    def _header(self, header: bytes) -> None:
        if self.state is ConnectionState.HEADER and header == SASL_HEADER:
            offered = self.broker.access.anonymous is not None
            mechanisms = ["PLAIN"] + (["ANONYMOUS"] if offered else [])
            self._send(SASL_HEADER)
            self._out.append(encode_frame(0, SaslMechanisms(tuple(Symbol(m) for m in mechanisms)),
                                          kind=FRAME_SASL))
            self.state = ConnectionState.SASL_INIT
            return
        if self.state is ConnectionState.AMQP_HEADER and header == AMQP_HEADER:
            self._send(AMQP_HEADER)
            self.state = ConnectionState.OPEN
            return
        # Section 2.2: answer with the header we want, then close. Before SASL that is SASL's
        # (authentication is required); after it, AMQP's.
        self._send(SASL_HEADER if self.state is ConnectionState.HEADER else AMQP_HEADER)
        self._finish()

    def _sasl(self, frame: Frame) -> None:
        init = frame.performative
        if not isinstance(init, SaslInit):
            raise ConnectionError10("amqp:illegal-state",
                                    f"expected sasl-init, got {type(init).__name__}")
        user = self._authenticate(init.mechanism, init.initial_response or b"")
        if user is None:
            self._out.append(encode_frame(0, SaslOutcome(code=1), kind=FRAME_SASL))
            self.close_reason = ConnectionError10("amqp:unauthorized-access",
                                                  f"authentication with {init.mechanism} failed")
            self._finish()
            return
        self.user = user
        self._out.append(encode_frame(0, SaslOutcome(code=0), kind=FRAME_SASL))
        self.state = ConnectionState.AMQP_HEADER

    def _authenticate(self, mechanism: str, response: bytes) -> str | None:
        if mechanism == "PLAIN":
            parts = response.split(b"\x00")
            if len(parts) != 3:
                return None
            try:
                user, password = parts[1].decode("utf-8"), parts[2].decode("utf-8")
            except UnicodeDecodeError:
                return None
            return user if self.broker.access.login(user, password,
                                                    loopback=self.loopback) else None
        if mechanism == "ANONYMOUS":
            return self.broker.access.login_anonymous(
                loopback=self.loopback, rabbitmq4=self.broker.profile.rabbitmq4)
        return None

    # -- dispatch ---------------------------------------------------------------------------------

    def _dispatch(self, frame: Frame) -> None:
        state = self.state
        if frame.type == FRAME_SASL:
            if state is not ConnectionState.SASL_INIT:
                raise FramingError("a SASL frame outside the SASL exchange")
            self._sasl(frame)
            return
        if state is ConnectionState.SASL_INIT:
            raise FramingError("an AMQP frame during the SASL exchange")
        performative = frame.performative
        if performative is None:
            return  # an empty frame: it only keeps the connection alive
        if self._unflushed and type(performative) is not Transfer:
            self._flush_dispositions()  # outcomes go out before what follows the transfers
        if state is ConnectionState.CLOSE_SENT:
            if isinstance(performative, Close):
                self._finish()
            return  # section 2.4.3: nothing else counts after our close
        if state is ConnectionState.OPEN:
            if not isinstance(performative, Open) or frame.channel != 0:
                raise ConnectionError10("amqp:illegal-state",
                                        f"expected open, got {type(performative).__name__}")
            self._open(performative)
            return
        if isinstance(performative, Open):
            raise ConnectionError10("amqp:illegal-state", "a second open")
        if isinstance(performative, Close):
            self._frame(0, Close())
            self._finish()
            return
        channel = frame.channel
        if channel > self.channel_max:
            raise FramingError(f"channel {channel} is over channel-max {self.channel_max}")
        if isinstance(performative, Begin):
            self._begin(channel, performative)
            return
        session = self.sessions.get(channel)
        if session is None:
            if channel in self._ending:
                if isinstance(performative, End):
                    self._ending.discard(channel)
                return  # we ended it with an error: ignore what crosses our end
            raise ConnectionError10("amqp:illegal-state",
                                    f"{type(performative).__name__} on channel {channel}, "
                                    "where no session has begun")
        try:
            handler = _HANDLERS.get(type(performative))
            if handler is None:
                raise ConnectionError10("amqp:illegal-state",
                                        f"unexpected {type(performative).__name__}")
            handler(self, session, performative, frame.payload)
        except SessionError as exc:
            self._end_session(session, exc)

    # -- connection -------------------------------------------------------------------------------

    def _open(self, open_: Open) -> None:
        vhost = "/"
        if open_.hostname and open_.hostname.startswith("vhost:"):
            vhost = open_.hostname[len("vhost:"):]
        self.container_id = open_.container_id
        self.peer_max_frame_size = max(MIN_MAX_FRAME_SIZE, min(int(open_.max_frame_size),
                                                              0xFFFFFFFF))
        self.channel_max = min(self.offer_channel_max, int(open_.channel_max))
        if open_.idle_time_out:
            self.peer_idle_time_out = int(open_.idle_time_out) / 1000
        self._reader.max_frame_size = self.offer_max_frame_size
        rabbitmq4 = self.broker.profile.rabbitmq4
        if rabbitmq4:
            # RabbitMQ 4 checks the vhost, the user's access and the connection limits before
            # it answers the open; a refusal there is a handshake error, which closes the
            # socket without a frame (rabbit_amqp_reader: handle_connection_frame's
            # check_vhost_exists, check_vhost_access, check_*_connection_limit, then
            # handle_exception's last clause). Its clients take that as a failed connection,
            # not as a closed one to recover from.
            try:
                self._open_model(vhost)
            except NotAllowed:
                self.state = ConnectionState.CLOSED
                self.should_close = True
                return
        opened = Open(
            container_id=self.broker.server_properties.get("cluster_name", "embroker")
            if rabbitmq4 else "embroker",
            max_frame_size=UInt(self.offer_max_frame_size), channel_max=self.channel_max,
            idle_time_out=UInt(int(self.idle_time_out * 1000)) if self.idle_time_out else None,
            # RabbitMQ 4 offers the link pair of its management node (rabbit_amqp_reader).
            offered_capabilities=(Symbol("LINK_PAIR_V1_0"), Symbol("ANONYMOUS-RELAY"))
            if rabbitmq4 else (Symbol("ANONYMOUS-RELAY"),),
            properties=self._server_properties())
        frame = encode_frame(0, opened)
        while len(frame) > MIN_MAX_FRAME_SIZE and opened.properties:
            # Our open must fit the 512 bytes allowed before negotiation: the longest of the
            # broker's properties give way first.
            properties = dict(opened.properties)
            del properties[max(properties, key=lambda k: len(str(properties[k])))]
            opened.properties = properties
            frame = encode_frame(0, opened)
        self._out.append(frame)
        self.state = ConnectionState.OPENED
        if rabbitmq4:
            return
        # RabbitMQ 3.10's plugin answers the open first, then closes the connection.
        try:
            self.broker.vhost(vhost)
        except NotAllowed as exc:  # (0-9-1's 530; a missing node in 1.0's terms)
            raise ConnectionError10("amqp:not-found", exc.text) from None
        try:
            self._open_model(vhost)
        except NotAllowed as exc:  # no access to the vhost
            raise ConnectionError10("amqp:unauthorized-access", exc.text) from None

    def _open_model(self, vhost: str) -> None:
        """The model's connection to ``vhost`` for this connection's user.

        Raises:
            NotAllowed: no such vhost, no access to it, or a connection limit reached.
        """
        self.model = self.broker.open_connection(
            vhost, user=self.user, client_properties={"container_id": self.container_id,
                                                      "protocol": "AMQP 1.0"},
            name=f"amqp 1.0 connection {self.peer}" if self.peer else None)
        self.vhost = vhost

    def _server_properties(self) -> dict[Any, Any]:
        """The broker's server properties (``product``, ``version``... as for 0-9-1, so
        ``Broker(as_rabbitmq=...)`` shows here too), the string-valued ones."""
        properties = {Symbol(k): v for k, v in sorted(self.broker.server_properties.items())
                      if isinstance(v, str) and k.isascii()}
        if self.broker.profile.rabbitmq4:  # RabbitMQ 4 names its node first (the Java client
            # needs it: rabbit_amqp_reader:server_properties/0)
            properties = {Symbol("node"): str(self.broker.server_properties.get(
                "cluster_name", "rabbit@embroker")), **properties}
        return properties

    def _finish(self) -> None:
        self.state = ConnectionState.CLOSED
        self.should_close = True
        self._teardown()

    def _teardown(self) -> None:
        for session in list(self.sessions.values()):
            self._drop_session(session)
        self.sessions.clear()
        for txn in self._txns.values():
            txn.channel.close()
        self._txns.clear()
        if self.model is not None:
            self.model.close()

    def _fail_connection(self, error: ProtocolError) -> None:
        """Close the connection with ``error`` (``close`` carrying it) and wait for the
        client's ``close``."""
        if self.close_reason is None:
            self.close_reason = error
        if self.state in (ConnectionState.CLOSED, ConnectionState.CLOSE_SENT):
            return
        if self.state in (ConnectionState.OPEN, ConnectionState.OPENED):
            if self.state is ConnectionState.OPEN:  # we owe an open before a close
                self._frame(0, Open(container_id="embroker", max_frame_size=UInt(
                    self.offer_max_frame_size), channel_max=self.offer_channel_max))
            self._frame(0, Close(error=Error(Symbol(error.condition), error.description[:1024])))
            self.state = ConnectionState.CLOSE_SENT
            self._closing_since = self.broker.clock.monotonic()
            for session in list(self.sessions.values()):
                self._drop_session(session)
            self.sessions.clear()
        else:
            self._finish()

    # -- time -------------------------------------------------------------------------------------

    def tick(self) -> float | None:
        """Send an empty frame when the client's idle time-out is half gone; close a client
        silent for our whole idle time-out (``amqp:resource-limit-exceeded``).

        Returns:
            when to call again (broker clock, monotonic seconds), or ``None``.
        """
        now = self.broker.clock.monotonic()
        if self.state is ConnectionState.CLOSE_SENT:
            if now - self._closing_since >= CLOSE_TIMEOUT:
                self._finish()
                return None
            return self._closing_since + CLOSE_TIMEOUT
        if self.state is ConnectionState.CLOSED:
            return None
        if self.state is not ConnectionState.OPENED:
            # The handshake (header, SASL, open) must be done within the handshake time-out.
            if now - self._started >= self.handshake_timeout:
                self.close_reason = ConnectionError10(
                    "amqp:resource-limit-exceeded",
                    f"handshake not done within {self.handshake_timeout:g}s")
                self._finish()
                return None
            return self._started + self.handshake_timeout
        deadlines = []
        if self.idle_time_out and self.state is ConnectionState.OPENED:
            if now - self._last_received >= self.idle_time_out:
                self._fail_connection(ConnectionError10(
                    "amqp:resource-limit-exceeded",
                    f"no frame received for {self.idle_time_out:g}s (idle-time-out)"))
                return None
            deadlines.append(self._last_received + self.idle_time_out)
        if self.peer_idle_time_out and self.state is ConnectionState.OPENED:
            interval = self.peer_idle_time_out / 2
            if now - self._last_sent >= interval:
                self._out.append(EMPTY_FRAME)
                self._last_sent = now
            deadlines.append(self._last_sent + interval)
        self._pump_browsers()
        return min(deadlines) if deadlines else None

    # -- sessions ---------------------------------------------------------------------------------

    def model_channel(self, number: int, session: _Session) -> ModelChannel:
        assert self.model is not None
        channel = self.model.open_channel(number)
        channel.confirm_select()
        channel.listener = _ModelEvents(self, session)
        return channel

    def _begin(self, channel: int, begin: Begin) -> None:
        if begin.remote_channel is not None:
            raise ConnectionError10("amqp:illegal-state",
                                    "begin answers a begin we never sent (remote-channel set)")
        if channel in self.sessions or channel in self._ending:
            raise ConnectionError10("amqp:illegal-state",
                                    f"channel {channel} already has a session")
        if self.model is None:
            raise ConnectionError10("amqp:illegal-state", "no connection open")
        session = _Session(self, channel, begin)
        self.sessions[channel] = session
        self._frame(channel, Begin(remote_channel=channel, next_outgoing_id=UInt(0),
                                   incoming_window=UInt(INCOMING_WINDOW),
                                   outgoing_window=UInt(0xFFFFFFFF),
                                   handle_max=UInt(session.handle_max)))

    def _on_end(self, session: _Session, end: End, payload: bytes) -> None:
        self._drop_session(session)
        del self.sessions[session.channel]
        self._frame(session.channel, End())

    def _end_session(self, session: _Session, error: ProtocolError) -> None:
        """End a session with an error; frames for it are ignored until the client's end."""
        self._drop_session(session)
        self.sessions.pop(session.channel, None)
        self._ending.add(session.channel)
        self._frame(session.channel,
                    End(error=Error(Symbol(error.condition), error.description[:1024])))

    def _drop_session(self, session: _Session) -> None:
        if session.ended:
            return
        session.ended = True
        for link in list(session.links.values()):
            self._drop_link(link)
        session.links.clear()
        session.model.close()  # requeues whatever is still unsettled, in order

    # -- links ------------------------------------------------------------------------------------

    def _on_attach(self, session: _Session, attach: Attach, payload: bytes) -> None:
        handle = int(attach.handle)
        if handle > session.handle_max:
            raise ConnectionError10("amqp:connection:framing-error",
                                    f"handle {handle} is over handle-max {session.handle_max}")
        if handle in session.links or handle in session.detaching:
            raise SessionError("amqp:session:handle-in-use", f"handle {handle} is in use")
        if self._is_management(attach):
            self._attach_management(session, attach)
        elif attach.role:
            self._attach_outgoing(session, attach)
        else:
            self._attach_incoming(session, attach)

    # -- the management node (RabbitMQ 4's link pair, rabbit_amqp_session) ------------------------

    def _is_management(self, attach: Attach) -> bool:
        terminus = attach.source if attach.role else attach.target
        return isinstance(terminus, (Source, Target)) and \
            terminus.address == MANAGEMENT_ADDRESS and self.broker.profile.rabbitmq4

    def _attach_management(self, session: _Session, attach: Attach) -> None:
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
            self._refuse(session, attach, exc)
            return
        link = _ManagementLink(session, attach, requests)
        pair[0 if requests else 1] = link
        session.links[link.handle] = link
        if requests:
            self._frame(session.channel, Attach(
                name=attach.name, handle=attach.handle, role=True, snd_settle_mode=1,
                rcv_settle_mode=0, source=attach.source, target=attach.target,
                max_message_size=ULong(self.broker.max_message_size),
                properties=attach.properties))
            self._link_flow(link)
        else:
            self._frame(session.channel, Attach(
                name=attach.name, handle=attach.handle, role=False, snd_settle_mode=1,
                rcv_settle_mode=attach.rcv_settle_mode, source=attach.source,
                target=attach.target, initial_delivery_count=UInt(0),
                max_message_size=attach.max_message_size, properties=attach.properties))

    def _management_request(self, link: _ManagementLink, transfer: Transfer,
                            payload: bytes) -> None:
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
            self._link_flow(link)
        responses.credit -= 1
        responses.delivery_count += 1
        delivery_id = session.next_delivery_id
        session.next_delivery_id = serial_add(delivery_id, 1)
        self._send_transfer(session, Transfer(
            handle=UInt(responses.handle), delivery_id=UInt(delivery_id), delivery_tag=b"",
            message_format=UInt(0), settled=True), response)

    def _send_transfer(self, session: _Session, transfer: Transfer, payload: bytes) -> None:
        """Send a transfer, split into frames, as far as the session's window lets them go now;
        the rest waits in ``session.pending`` for the peer's next flow."""
        for frame in encode_transfer_frames(session.channel, transfer, payload,
                                            self.peer_max_frame_size):
            if session.remote_incoming_window > 0 and not session.pending:
                self._out.append(frame)
                session.remote_incoming_window -= 1
                session.next_outgoing_id = serial_add(session.next_outgoing_id, 1)
            else:
                session.pending.append(frame)

    def _refuse(self, session: _Session, attach: Attach, error: ProtocolError) -> None:
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

    def _attach_incoming(self, session: _Session, attach: Attach) -> None:
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
            self._refuse(session, attach, exc)
            return
        except AMQPError as exc:
            self._refuse(session, attach, LinkError(_condition(exc), exc.text))
            return
        link = _Incoming(session, attach, node)
        session.links[link.handle] = link
        reply_target: Any = target
        if isinstance(target, Coordinator):
            reply_target = Coordinator(capabilities=(Symbol("amqp:local-transactions"),))
        self._frame(session.channel, Attach(
            name=attach.name, handle=attach.handle, role=True,
            snd_settle_mode=attach.snd_settle_mode, rcv_settle_mode=0, source=attach.source,
            target=reply_target, max_message_size=ULong(self.broker.max_message_size)))
        link.credit = link.max_credit
        self._link_flow(link)

    def _resolve_target(self, session: _Session, target: Target) -> Node:
        """What a sending link's target names, checked (and for a v1 ``/queue/Q``, declared)
        by the model as RabbitMQ does when the link attaches: the node must exist and this
        connection may publish to it (``rabbit_amqp_session:ensure_target/4``).

        Raises:
            LinkError: an address in none of the forms.
            AMQPError: the model's refusal (no such queue or exchange, no permission...).
        """
        node = parse_address(target.address, "target", v1=self._v1)
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

    def _attach_outgoing(self, session: _Session, attach: Attach) -> None:
        source = attach.source
        try:
            if source is None:
                raise LinkError("amqp:invalid-field", "a receiving link needs a source")
            link, reply_source = self._make_outgoing(session, attach, source)
        except LinkError as exc:
            self._refuse(session, attach, exc)
            return
        except AMQPError as exc:
            self._refuse(session, attach, LinkError(_condition(exc), exc.text))
            return
        session.links[link.handle] = link
        self._frame(session.channel, Attach(
            name=attach.name, handle=attach.handle, role=False,
            snd_settle_mode=1 if link.presettled else 0, rcv_settle_mode=0,
            source=reply_source, target=attach.target, initial_delivery_count=UInt(0)))
        if self._attach_mark is None:
            self._attach_mark = len(self._out)
        if link.browse:
            self._browsers.append(link)

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
        own = False
        if source.dynamic and _VOLATILE in (source.capabilities or ()):
            return self._volatile(session, attach, source)
        if source.dynamic:
            name = channel.queue_declare("", exclusive=True).queue
            own = True
        else:
            node = parse_address(source.address, "source", v1=self._v1)
            if node.kind == "queue":
                name = node.name
                if node.declare:
                    channel.queue_declare(name, durable=_durable(source.durable))
            else:
                channel.exchange_declare(node.name, passive=True)  # 404 first
                name = channel.queue_declare("", exclusive=True).queue
                own = True
        try:
            if own and not source.dynamic:
                channel.queue_bind(name, node.name, node.key or "")
            if browse:
                browser = channel.browse(name)
                link = _Outgoing(session, attach, browser.queue)
                link.browser, link.selector, link.presettled = browser, selector, True
            else:
                tag = channel.basic_consume(name, f"amqp10-{session.channel}-{int(attach.handle)}",
                                            no_ack=attach.snd_settle_mode == 1, exclusive=False,
                                            arguments=_stream_arguments(
                                                source, self.broker.profile.rabbitmq4),
                                            link_credit=True,
                                            message_filter=message_filter)
                consumer = channel.consumers[tag]
                consumer.credit = 0
                link = _Outgoing(session, attach, consumer.queue)
                link.consumer_tag = tag
                session.by_tag[tag] = link
        except AMQPError:
            if own:
                self.broker.vhosts[self.vhost].delete_queue(name, self.model)
            raise
        link.own_queue = own
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
        assert self.model is not None
        channel = self.model.open_channel(next(self._model_channels))
        channel.listener = _ModelEvents(self, session)
        tag = channel.basic_consume(REPLY_TO, f"amqp10-{session.channel}-{int(attach.handle)}",
                                    no_ack=True)
        reply = channel.reply_consumer
        assert reply is not None
        link = _Outgoing(session, attach, None)
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

    def _on_detach(self, session: _Session, detach: Detach, payload: bytes) -> None:
        handle = int(detach.handle)
        if handle in session.detaching:
            session.detaching.discard(handle)  # the answer to our detach
            return
        link = session.links.pop(handle, None)
        if link is None:
            raise SessionError("amqp:session:unattached-handle",
                               f"detach of handle {int(detach.handle)}, which is not attached")
        self._drop_link(link)
        # Closed detaches are always answered closed (RabbitMQ 3.10 did not, and hung proton).
        self._frame(session.channel, Detach(handle=detach.handle, closed=detach.closed))

    def _detach_with_error(self, link: _Link, error: ProtocolError) -> None:
        session = link.session
        session.links.pop(link.handle, None)
        session.detaching.add(link.handle)
        self._drop_link(link)
        self._frame(session.channel, Detach(handle=UInt(link.handle), closed=True, error=Error(
            Symbol(error.condition), error.description[:1024])))

    def _drop_link(self, link: _Link) -> None:
        if link.detached:
            return
        link.detached = True
        if isinstance(link, _ManagementLink):
            pair = link.session.pairs.get(link.name)
            if pair is not None:
                pair[0 if link.requests else 1] = None
                if pair == [None, None]:
                    del link.session.pairs[link.name]
            return
        if not isinstance(link, _Outgoing):
            return
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
        if link in self._browsers:
            self._browsers.remove(link)
        if link.own_queue and link.queue is not None and not link.queue.deleted:
            # The broker's own clean-up of what the link made (no permission is asked again).
            self.broker.vhosts[self.vhost].delete_queue_object(link.queue)

    # -- flow ---------------------------------------------------------------------------------------

    def _session_flow(self, session: _Session, link: _Link | None = None, *,
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
            flow.drain = isinstance(link, _Outgoing) and link.drain
            flow.echo = echo
        self._frame(session.channel, flow)

    def _link_flow(self, link: _Link) -> None:
        available = link.queue.message_count if isinstance(link, _Outgoing) \
            and link.queue is not None else None
        self._session_flow(link.session, link, available=available)

    def _on_flow(self, session: _Session, flow: Flow, payload: bytes) -> None:
        # The client's session state: how many more transfer frames it takes from us.
        next_incoming = int(flow.next_incoming_id) if flow.next_incoming_id is not None else 0
        session.remote_incoming_window = serial_diff(
            serial_add(next_incoming, int(flow.incoming_window)), session.next_outgoing_id)
        session.remote_outgoing_window = int(flow.outgoing_window)
        self._send_pending(session)
        if flow.handle is None:
            if flow.echo:
                self._session_flow(session)
            return
        link = session.links.get(int(flow.handle))
        if link is None:
            if int(flow.handle) in session.detaching:
                return
            raise SessionError("amqp:session:unattached-handle",
                               f"flow for handle {int(flow.handle)}, which is not attached")
        if isinstance(link, _Outgoing):
            self._receiver_flow(link, flow)
        elif isinstance(link, _ManagementLink) and not link.requests:
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
                self._link_flow(link)
        elif flow.echo:
            self._link_flow(link)

    def _receiver_flow(self, link: _Outgoing, flow: Flow) -> None:
        # Credit is absolute: the receiver's delivery-count plus its link-credit, less ours.
        if flow.link_credit is None:
            if flow.echo:
                self._link_flow(link)
            return
        delivery_count = int(flow.delivery_count) if flow.delivery_count is not None else 0
        credit = serial_diff(serial_add(delivery_count, int(flow.link_credit)),
                             link.delivery_count % _SERIAL)
        link.credit = max(0, credit)
        link.drain = flow.drain
        if link.browse:
            self._pump_browser(link)
        else:
            consumer = link.session.model.consumers.get(link.consumer_tag)
            if consumer is not None:
                consumer.set_credit(link.credit)  # deliveries follow, as credit allows
                link.credit = consumer.credit or 0
        if link.drain and link.credit:
            # Drain: nothing more to send, so the credit is used up by advancing the count.
            link.delivery_count += link.credit
            link.credit = 0
            consumer = link.session.model.consumers.get(link.consumer_tag)
            if consumer is not None:
                consumer.credit = 0
            self._link_flow(link)
        elif flow.echo or link.drain:
            self._link_flow(link)

    # -- transfers in ---------------------------------------------------------------------------

    def _on_transfer(self, session: _Session, transfer: Transfer, payload: bytes) -> None:
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
            self._session_flow(session)
        try:
            if isinstance(link, _ManagementLink):
                self._management_request(link, transfer, payload)
                return
            if not isinstance(link, _Incoming):
                raise LinkError("amqp:not-allowed", "transfer on a link where the client "
                                "receives")
            self._receive(link, transfer, payload)
        except LinkError as exc:
            self._detach_with_error(link, exc)

    def _receive(self, link: _Incoming, transfer: Transfer, payload: bytes) -> None:
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
            self._unflushed = True
        self._replenish(link)

    def _replenish(self, link: _Incoming) -> None:
        if link.credit < link.max_credit // 2 and not link.detached:
            link.credit = link.max_credit
            self._link_flow(link)

    def _flush_dispositions(self) -> None:
        # Outcomes of the deliveries received in one read, in ranges where they agree.
        self._unflushed = False
        for session in self.sessions.values():
            pending = session.dispositions
            if not pending:
                continue
            session.dispositions = []
            first, last, state = pending[0][0], pending[0][0], pending[0][1]
            for delivery_id, outcome in pending[1:]:
                if (delivery_id == serial_add(last, 1) and outcome is state
                        and state is _ACCEPTED):
                    last = delivery_id
                    continue
                self._disposition(session, first, last, state)
                first = last = delivery_id
                state = outcome
            self._disposition(session, first, last, state)

    def _disposition(self, session: _Session, first: int, last: int, state: Any) -> None:
        self._frame(session.channel, Disposition(role=True, first=UInt(first),
                                                 last=UInt(last) if last != first else None,
                                                 settled=True, state=state))

    def _publish(self, link: _Incoming, data: bytes, state: Any) -> Any:
        """Route one message; returns its outcome for the client."""
        txn: _Txn | None = None
        if isinstance(state, TransactionalState):
            txn = self._txns.get(state.txn_id)
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
            self.blocked = True
        channel = txn.channel if txn is not None else link.session.model
        self._returned = self._nacked = False
        # A reply to a volatile queue (direct reply-to) is routed there, not returned.
        mandatory = not (exchange == "" and channel.vhost.is_reply_address(key))
        try:
            channel.basic_publish(exchange, key, body, properties, mandatory=mandatory,
                                  amqp10=kept, origin=link.origin)
        except AMQPError as exc:
            if txn is not None:
                txn.failed = exc.text
            return self._rejected(txn, state, _condition(exc), exc.text)
        if txn is not None:
            return TransactionalState(state.txn_id, _ACCEPTED)
        if self._nacked:
            return Rejected(error=Error(Symbol("amqp:resource-limit-exceeded"),
                                        "a queue refused the message: it is full "
                                        "(x-overflow reject-publish)"))
        if self._returned:
            return _RELEASED
        return _ACCEPTED

    @staticmethod
    def _rejected(txn: _Txn | None, state: Any, condition: str, description: str) -> Any:
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
        assert self.model is not None
        if isinstance(value, Declare):
            txn_id = struct.pack(">I", next(self._txn_ids))
            channel = self.model.open_channel(next(self._model_channels))
            channel.tx_select()
            channel.listener = _ignore_events
            self._txns[txn_id] = _Txn(channel)
            return Declared(txn_id)
        if isinstance(value, Discharge):
            txn = self._txns.pop(value.txn_id, None)
            if txn is None:
                return Rejected(error=Error(Symbol("amqp:transaction:unknown-id"),
                                            f"unknown transaction id {value.txn_id!r}"))
            if value.fail or txn.failed is not None:
                txn.channel.tx_rollback()
                txn.channel.close()
                for session_channel, tag, _outcome in txn.settles:  # acquired: back again
                    self._settle_tag(session_channel, tag, _RELEASED)
                if not value.fail:
                    return Rejected(error=Error(Symbol("amqp:transaction:rollback"),
                                                f"rolled back: {txn.failed}"))
                return _ACCEPTED
            txn.channel.tx_commit()
            txn.channel.close()
            for session_channel, tag, outcome in txn.settles:
                self._settle_tag(session_channel, tag, outcome)
            return _ACCEPTED
        return Rejected(error=Error(Symbol("amqp:decode-error"),
                                    "a coordinator takes declare and discharge messages"))

    def _settle_tag(self, session_channel: int, tag: int, outcome: Any) -> None:
        session = self.sessions.get(session_channel)
        if session is not None and not session.ended:
            self._apply_outcome(session, tag, outcome)

    # -- dispositions -------------------------------------------------------------------------------

    def _on_disposition(self, session: _Session, disposition: Disposition, payload: bytes) -> None:
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
                txn = self._txns.get(state.txn_id)
                if txn is None:
                    raise SessionError("amqp:transaction:unknown-id",
                                       f"unknown transaction id {state.txn_id!r}")
                txn.settles.append((session.channel, tag, state.outcome or _RELEASED))
            else:
                self._apply_outcome(session, tag, state or _RELEASED)
            if not disposition.settled:
                answer.append(delivery_id)
        for delivery_id in answer:  # the client did not settle: we do, with its outcome
            self._frame(session.channel, Disposition(role=False, first=UInt(delivery_id),
                                                     settled=True, state=state))

    def _apply_outcome(self, session: _Session, tag: int, state: Any) -> None:
        """A receiver's outcome as RabbitMQ 4 settles it (``settle_op_from_outcome/1``):
        accepted acks, rejected discards (dead-lettered; a failed delivery), released requeues,
        modified requeues or (undeliverable-here) discards, counting a failed delivery when
        delivery-failed is set."""
        channel = session.model
        try:
            if isinstance(state, Accepted):
                channel.basic_ack(tag)
            elif isinstance(state, Rejected):
                channel.basic_reject(tag, requeue=False)
            elif isinstance(state, Modified):
                channel.modify(tag, delivery_failed=bool(state.delivery_failed),
                               undeliverable_here=bool(state.undeliverable_here),
                               annotations=_modified_annotations(state))
            else:  # released
                channel.basic_reject(tag, requeue=True)
        except AMQPError:
            pass  # the delivery's queue is gone

    # -- deliveries out ----------------------------------------------------------------------------

    def _deliver(self, session: _Session, consumer_tag: str, delivery_tag: int,
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
        self._send_transfer(session, Transfer(
            handle=UInt(link.handle), delivery_id=UInt(delivery_id), delivery_tag=tag,
            message_format=UInt(0), settled=settled), payload)
        self._output_ready()

    def _send_pending(self, session: _Session) -> None:
        pending = session.pending
        while pending and session.remote_incoming_window > 0:
            self._out.append(pending.popleft())
            session.remote_incoming_window -= 1
            session.next_outgoing_id = serial_add(session.next_outgoing_id, 1)

    def _pump_browsers(self) -> None:
        for link in list(self._browsers):
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
            self._link_flow(link)
        elif sent:
            self._output_ready()

    def _cancelled(self, session: _Session, consumer_tag: str) -> None:
        # The queue under a receiving link was deleted: the link is detached with an error.
        link = session.by_tag.pop(consumer_tag, None)
        if link is None or link.detached:
            return
        link.consumer_tag = ""
        self._detach_with_error(link, LinkError("amqp:resource-deleted",
                                                f"queue '{link.queue.name if link.queue else ''}' "
                                                "was deleted"))
        self._output_ready()


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
    return {str(k): _value_to_091(v) for k, v in annotations.items()}


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


def _durable(durability: object) -> bool:
    """Whether a v1 ``/queue/Q`` terminus declares a durable queue: for the terminus
    durabilities configuration (1) and unsettled-state (2), not for none (0, the default)
    (``rabbit_amqp1_0_link_util:durable/1``)."""
    return isinstance(durability, int) and durability > 0


def _ignore_events(event: ChannelEvent) -> None:
    pass  # a transaction's channel: its publishes are settled at the discharge


@final
class _ModelEvents:
    """The one place that hears a session's model channel: deliveries, returns, confirms and
    cancels (the model's events), turned into this connection's calls."""

    __slots__ = ("connection", "session")

    def __init__(self, connection: ServerConnection, session: _Session) -> None:
        self.connection = connection
        self.session = session

    def __call__(self, event: ChannelEvent) -> None:
        # Events come in the middle of the model's work (another connection's publish, a timer):
        # a failure here is this connection's alone and must not unwind the model.
        connection = self.connection
        try:
            if isinstance(event, Delivered):
                connection._deliver(self.session, event.consumer_tag, event.delivery_tag,
                                    event.redelivered, event.exchange, event.routing_key,
                                    event.message, event.failures)
            elif isinstance(event, Returned):
                connection._returned = True
            elif isinstance(event, Confirmed):
                if not event.ack:
                    connection._nacked = True
            elif isinstance(event, Cancelled):
                connection._cancelled(self.session, event.consumer_tag)
        except Exception as exc:  # a bug: the listener closes this connection
            connection.failure = exc
            connection._output_ready()


_Handler = Callable[[ServerConnection, _Session, Any, bytes], None]

#: The performatives a session takes, each with its handler.
_HANDLERS: Final[dict[type[Any], _Handler]] = {
    Attach: ServerConnection._on_attach,
    Flow: ServerConnection._on_flow,
    Transfer: ServerConnection._on_transfer,
    Disposition: ServerConnection._on_disposition,
    Detach: ServerConnection._on_detach,
    End: ServerConnection._on_end,
}

