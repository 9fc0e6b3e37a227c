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
connection. Errors become frames in one place each: the connection's in
:meth:`ServerConnection._fail_connection`, a session's in :meth:`~._session.Sessions.end_session`,
a link's in :meth:`~._session.Sessions.detach_with_error`.

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

The work is split by role. This module holds the connection itself and its connection-level
frames: the protocol headers, SASL, ``open``, ``close``, the heartbeats and the idle and handshake
time-outs, and the dispatch of every other frame to the role object that serves it (each holds a
reference to the connection, whose state they share):

- :class:`~._session.Sessions` (``_session.py``): ``begin`` and ``end``, the session windows,
  ``flow``, ``attach`` and ``detach``;
- :class:`~._incoming.IncomingLinks` (``_incoming.py``): the links the client sends on
  (publishes, their dispositions, transactions);
- :class:`~._outgoing.OutgoingLinks` (``_outgoing.py``): the links the client receives on
  (consume and browse, credit, deliveries, the client's settlements);
- :class:`~._management_link.ManagementLinks` (``_management_link.py``): RabbitMQ 4's
  management node link pairs.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, final

from ..amqp10_common._definitions import (
    Attach,
    Begin,
    Close,
    Detach,
    Disposition,
    End,
    Error,
    Flow,
    Open,
    SaslInit,
    SaslMechanisms,
    SaslOutcome,
    Transfer,
)
from ..amqp10_common._errors import ConnectionError10, DecodeError, FramingError, ProtocolError, SessionError
from ..amqp10_common._frames import (
    AMQP_HEADER,
    EMPTY_FRAME,
    FRAME_SASL,
    MIN_MAX_FRAME_SIZE,
    SASL_HEADER,
    Frame,
    FrameReader,
    encode_frame,
)
from ..amqp10_common._types import Symbol, UInt
from ..errors import AMQPError, NotAllowed
from ..kit import Client, LoginRefused, direct_login, login
from ..model._kinds import AMQP_10
from ._incoming import IncomingLinks
from ._management_link import ManagementLinks
from ._outgoing import OutgoingLinks
from ._session import Sessions, _Session

if TYPE_CHECKING:
    from ..kit import PeerCertificate
    from ..model import Broker, Node
    from ..model import Connection as ModelConnection

__all__ = ["ConnectionState", "ServerConnection"]


#: What the server offers in ``open`` (RabbitMQ 4 offers the same frame size).
MAX_FRAME_SIZE: Final = 131072
CHANNEL_MAX: Final = 65535
#: Our idle time-out in milliseconds: a client silent this long is closed.
IDLE_TIME_OUT: Final = 60000
#: The credit a sending client gets on each link (as RabbitMQ 3.10 grants); refilled when
#: half is used.
LINK_CREDIT: Final = 65536
#: How long to wait for the client's ``close`` after ours (seconds).
CLOSE_TIMEOUT: Final = 1.0


class ConnectionState(enum.Enum):
    HEADER = "waiting for the protocol header"
    SASL_INIT = "waiting for sasl-init"
    AMQP_HEADER = "waiting for the AMQP protocol header after SASL"
    OPEN = "waiting for open"
    OPENED = "open"
    CLOSE_SENT = "close sent: waiting for the client's close"
    CLOSED = "closed"


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

    #: The model's kind of connection it opens (which limits apply, how alarms hold it).
    kind = AMQP_10
    # -- what the listener asks of a broker connection (embroker._transport.BrokerConnection) --
    #: (An alarm holds it once it sends a transfer: never from reading.)
    held_by_alarm = False
    #: At stop_app its socket closes with no close frame (live on 3.10.8: proton reports
    #: "connection aborted").
    stops_silently = True

    @property
    def channel_numbers(self) -> list[int]:
        """Its sessions' channel numbers."""
        return list(self.sessions)

    @property
    def client_properties(self) -> dict[str, Any]:
        """What the client said of itself: its container id."""
        return {"container_id": self.container_id} if self.container_id else {}

    def on_restart(self) -> None:
        """The broker stops: ``amqp:connection:forced``."""
        from ..errors import ConnectionForced
        self.close(ConnectionForced("broker forced connection closure with reason 'shutdown'"))

    def killed(self, reason: str) -> None:
        """(Its end is logged with its own close reason.)"""

    def __init__(self, broker: Broker, *, peer: str = "",
                 on_output: Callable[[], None] | None = None, idle_time_out: float = 60,
                 max_frame_size: int = MAX_FRAME_SIZE,
                 channel_max: int = CHANNEL_MAX, link_credit: int = LINK_CREDIT,
                 heartbeat: int | None = None, handshake_timeout: float = 10.0,
                 connected_at: float | None = None, loopback: bool = False,
                 tls: PeerCertificate | None = None, node: Node | None = None) -> None:
        self.broker = broker
        #: The node its client reached (``None``: the first): its model connection's.
        self.node = node
        self.peer = peer
        #: Its TLS session, when it came over TLS (SASL EXTERNAL's certificate).
        self.tls = tls
        #: Whether the client came over a loopback interface (``guest`` may log in only then).
        self.loopback = loopback
        self.state = ConnectionState.HEADER
        self._on_output = on_output
        self._out: list[bytes] = []  # the role objects append to this list: never rebound
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
        #: Whether outcomes of received deliveries wait to be flushed (by the sending links).
        self._unflushed = False
        # The roles (see the module's docstring), which share this connection's state.
        self._session_role = sessions = Sessions(self)
        self._incoming_links = IncomingLinks(self, sessions)
        self._outgoing_links = OutgoingLinks(self, sessions)
        self._management_links = ManagementLinks(self, sessions)
        #: The performatives a session takes, each with its handler.
        self._handlers: Final[dict[type[Any], _Handler]] = {
            Attach: sessions.on_attach,
            Flow: sessions.on_flow,
            Transfer: sessions.on_transfer,
            Disposition: self._outgoing_links.on_disposition,
            Detach: sessions.on_detach,
            End: sessions.on_end,
        }

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
        self._incoming_links.flush_dispositions()
        self._outgoing_links.pump_browsers()

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
            # (never AMQPLAIN, which RabbitMQ 3.10 offers: proton then falls back to
            # ANONYMOUS; see shared/notes/amqp10-interop.md) EXTERNAL where it is offered to
            # AMQP 0-9-1 clients: configured, over TLS
            offered = self.broker.access.anonymous is not None
            mechanisms = ["PLAIN"] + (["ANONYMOUS"] if offered else []) + (
                ["EXTERNAL"] if "EXTERNAL" in self.broker.offered_mechanisms(
                    tls=self.tls is not None) else [])
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
        user, refused = self._authenticate(init.mechanism, init.initial_response or b"")
        if user is None:
            self._out.append(encode_frame(0, SaslOutcome(code=1), kind=FRAME_SASL))
            # (for the log only, as RabbitMQ's "~s login refused: ~s": the client is told
            # nothing but the outcome)
            self.close_reason = ConnectionError10(
                "amqp:unauthorized-access", f"{init.mechanism} login refused: {refused}")
            self._finish()
            return
        self.user = user
        self._out.append(encode_frame(0, SaslOutcome(code=0), kind=FRAME_SASL))
        self.state = ConnectionState.AMQP_HEADER

    def _authenticate(self, mechanism: str, response: bytes) -> tuple[str | None, str]:
        """The user ``mechanism`` logs in as, or ``None`` and why not (RabbitMQ's words for
        the log: ``user 'bob' - invalid credentials``): the kit's login, counted as RabbitMQ
        3.10's AMQP 1.0 plugin counts it (``amqp10``, no address) and announced by no event
        (rabbit_amqp1_0_reader:auth_phase_1_0/2 emits none; each session's direct
        connection does: :func:`~embroker.kit.direct_login`)."""
        offered = mechanism in ("PLAIN", "ANONYMOUS") or (
            mechanism == "EXTERNAL" and "EXTERNAL" in self.broker.offered_mechanisms(
                tls=self.tls is not None))
        if not offered:
            return None, "unknown authentication mechanism"
        try:
            return login(self.broker, mechanism, response, Client(
                "amqp10", loopback=self.loopback, tls=self.tls)), ""
        except LoginRefused as refused:
            return None, refused.reason

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
            self._incoming_links.flush_dispositions()  # outcomes go out before what follows the transfers
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
            if not self.broker.profile.rabbitmq4 and self.user:
                # (RabbitMQ 3.10's session process logs in over a direct connection)
                direct_login(self.broker, self.user)
            self._session_role.begin(channel, performative)
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
            handler = self._handlers.get(type(performative))
            if handler is None:
                raise ConnectionError10("amqp:illegal-state",
                                        f"unexpected {type(performative).__name__}")
            handler(session, performative, frame.payload)
        except SessionError as exc:
            self._session_role.end_session(session, exc)

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
            container_id=self.broker.cluster_name,
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
            vhost, user=self.user, client_properties={"container_id": self.container_id},
            name=f"amqp 1.0 connection {self.peer}" if self.peer else None, kind=self.kind,
            node=self.node)
        self.model.on_closed_by_broker = self._closed_by_broker
        self.vhost = vhost

    def _closed_by_broker(self, error: Any) -> None:
        # The broker closes it (its user or vhost deleted, a reader's crash: 541): close
        # carries why, and the listener is told there is output.
        self.close(error)
        self._output_ready()

    def _server_properties(self) -> dict[Any, Any]:
        """The broker's server properties (``product``, ``version``... as for 0-9-1, so
        ``Broker(as_rabbitmq=...)`` shows here too), the string-valued ones."""
        properties = {Symbol(k): v for k, v in sorted(self.broker.server_properties.items())
                      if isinstance(v, str) and k.isascii()}
        if self.broker.profile.rabbitmq4:  # RabbitMQ 4 names its node first (the Java client
            # needs it: rabbit_amqp_reader:server_properties/0)
            properties = {Symbol("node"): self.broker.node.name, **properties}
        return properties

    def _finish(self) -> None:
        self.state = ConnectionState.CLOSED
        self.should_close = True
        self._teardown()

    def _teardown(self) -> None:
        for session in list(self.sessions.values()):
            self._session_role.drop_session(session)
        self.sessions.clear()
        self._incoming_links.close_transactions()
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
                self._frame(0, Open(container_id=self.broker.cluster_name, max_frame_size=UInt(
                    self.offer_max_frame_size), channel_max=self.offer_channel_max))
            self._frame(0, Close(error=Error(Symbol(error.condition), error.description[:1024])))
            self.state = ConnectionState.CLOSE_SENT
            self._closing_since = self.broker.clock.monotonic()
            for session in list(self.sessions.values()):
                self._session_role.drop_session(session)
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
        self._outgoing_links.pump_browsers()
        return min(deadlines) if deadlines else None


_Handler = Callable[[_Session, Any, bytes], None]
