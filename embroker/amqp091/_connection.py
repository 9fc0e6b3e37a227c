"""The server side of an AMQP 0-9-1 connection, sans-IO: bytes in, model calls, bytes out.

Theory of operation
-------------------
A :class:`ServerConnection` is fed what the socket received (:meth:`receive_data`) and hands back
what must be written (:meth:`data_to_send`); it never touches a socket, a thread or the wall
clock (time comes from the broker's clock, through :meth:`tick`). The owner (the listener in
``embroker.server``, or a test with byte strings) holds the broker's lock around every call.

The connection goes through the states of the handshake (section 2.2.4 of the specification)::

    HEADER --protocol header--> START_OK --start-ok--> TUNE_OK --tune-ok--> OPEN_VHOST
        --connection.open--> OPEN --connection.close (either side)--> CLOSING --> CLOSED

Each handshake state accepts only the method named in ``_EXPECTED`` (the checks themselves are in
``_handshake``); anything else is a connection exception. In ``OPEN`` the connection handles the
channel lifecycle (channel.open, channel.close, close-ok) itself and every other channel method
through the table ``ROUTES`` of ``_dispatch``, which calls the model's
:class:`~embroker.model.Channel` (one path for the wire and the in-process client) and answers.
What the model says unasked (deliveries, returns, confirms, cancels) arrives as events
(:meth:`_on_event`) and leaves as frames.

Errors are exceptions (:mod:`embroker.errors`) and become frames in exactly one place,
:meth:`_fail`: a channel exception closes its channel with ``channel.close`` (the channel then
ignores everything but ``channel.close``/``close-ok``, section 2.3.7), a connection exception
closes the connection with ``connection.close``. Either way the broker and every other
connection go on.
"""

from __future__ import annotations

import enum
import logging
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, final

from .._untrusted import log_text
from ..errors import (
    AMQPError,
    ChannelError,
    ChannelException,
    CommandInvalid,
    ConnectionException,
    FrameError,
    NotAllowed,
)
from ..kit import coalesce
from ..model import Cancelled, ChannelEvent, Confirmed, Delivered, Returned
from ..model._connection import channel_already_open
from ..model._kinds import AMQP_091
from . import _handshake
from ._assembly import Command, CommandReader
from ._dispatch import ROUTES, WithContent
from ._frames import (
    FRAME_MIN_SIZE,
    FRAME_MIN_SIZE_4_1,
    HEARTBEAT_FRAME,
    PROTOCOL_HEADER,
    ProtocolHeaderKind,
    deliver_head,
    deliver_payload_from,
    deliver_tail,
    encode_content,
    encode_message,
    encode_method_frame,
    parse_protocol_header,
)
from ._method import Method
from ._methods import (
    METHOD_CLASSES,
    BasicCancel,
    BasicDeliver,
    BasicReturn,
    ChannelClose,
    ChannelCloseOk,
    ChannelOpen,
    ChannelOpenOk,
    ConnectionBlocked,
    ConnectionClose,
    ConnectionCloseOk,
    ConnectionOpen,
    ConnectionOpenOk,
    ConnectionStartOk,
    ConnectionTune,
    ConnectionTuneOk,
    ConnectionUnblocked,
    ConnectionUpdateSecret,
    ConnectionUpdateSecretOk,
)

if TYPE_CHECKING:
    from ..kit import PeerCertificate
    from ..model import Broker, Message, Node
    from ..model import Channel as ModelChannel
    from ..model import Connection as ModelConnection

__all__ = ["ConnectionState", "ServerConnection"]

#: Why channels closed (one line per channel closed with an error, at INFO; by the client with
#: 200, at DEBUG). Why each connection ended is logged once by its owner (``embroker.server``)
#: from :meth:`ServerConnection.end_reason`.
log = logging.getLogger("embroker.connection")

#: What the server offers in connection.tune (RabbitMQ's defaults).
CHANNEL_MAX: Final = 2047
FRAME_MAX: Final = 131072
HEARTBEAT: Final = 60
#: How long to wait for connection.close-ok after sending connection.close (seconds).
CLOSE_OK_TIMEOUT: Final = 1.0
#: After answering a client's connection.close, how long to leave the socket for the client to
#: close (what it still writes is discarded), as RabbitMQ 3.10 does: a client may have
#: publishes queued behind its close, and closing first would fail its writes.
CLOSE_LINGER: Final = 30.0
#: How long a client may take from connecting to connection.open (RabbitMQ's
#: handshake_timeout); a slower one is disconnected, with no frame, as RabbitMQ does.
HANDSHAKE_TIMEOUT: Final = 10.0


class ConnectionState(enum.Enum):
    HEADER = "waiting for the protocol header"
    START_OK = "waiting for connection.start-ok"
    TUNE_OK = "waiting for connection.tune-ok"
    OPEN_VHOST = "waiting for connection.open"
    OPEN = "open"
    CLOSING = "closing: waiting for connection.close-ok"
    CLOSED = "closed"


#: The method each handshake state accepts (section 2.2.4); anything else there is an error.
_EXPECTED: Final[dict[ConnectionState, type[Method]]] = {
    ConnectionState.START_OK: ConnectionStartOk,
    ConnectionState.TUNE_OK: ConnectionTuneOk,
    ConnectionState.OPEN_VHOST: ConnectionOpen,
}

#: A basic.ack or basic.nack frame: frame type, channel, size (13), class and method ids,
#: delivery tag, the bits (multiple; requeue for a nack), frame end.
_CONFIRM_FRAME: Final = struct.Struct(">BHIHHQBB")

#: The states in which the client can still read a connection.close we send.
_CAN_CLOSE: Final = frozenset(_EXPECTED) | {ConnectionState.OPEN}


@final
class ServerConnection:
    """One client connection, seen from the broker.

    Args:
        broker: the broker whose model this connection drives.
        peer: a description of the peer for logs and names (``"127.0.0.1:53211"``).
        loopback: whether the client came over a loopback interface; users the broker keeps
            to loopback (``guest``) are refused otherwise. False unless the owner says so.
        on_output: called (with no arguments) whenever output becomes ready without
            :meth:`receive_data` being the cause, e.g. a delivery caused by another connection;
            the listener uses it to wake its loop.
        heartbeat, frame_max, channel_max: what connection.tune offers.
        handshake_timeout: how long the client may take from connecting to connection.open; a
            client too slow is disconnected (the socket closes, as RabbitMQ's does).
        node: the node of the broker's cluster the client reached (its listener's): the
            model connection opens there (``None``: the first node).
    """

    #: Never a pause in what :meth:`data_to_send` returns (the AMQP 1.0 connection's may ask
    #: for one after an attach; the listener asks every protocol's connection).
    pause_at: int | None = None
    #: The model's kind of connection it opens (which limits apply, how alarms hold it).
    kind = AMQP_091
    # -- what the listener asks of a broker connection (embroker._transport.BrokerConnection) --
    #: (An alarm holds it when it publishes: never from reading; rabbit_reader.)
    held_by_alarm = False
    #: At stop_app it writes its connection.close (rabbit_reader's shutdown).
    stops_silently = False
    #: :meth:`tick` has nothing to do before the time it returns (``None``: nothing until the
    #: connection reads or writes): the listener leaves an idle connection alone until then.
    tick_keeps_deadlines = True

    def __init__(self, broker: Broker, *, peer: str = "", on_output: Callable[[], None] | None = None,
                 heartbeat: int = HEARTBEAT, frame_max: int = FRAME_MAX,
                 channel_max: int = CHANNEL_MAX,
                 handshake_timeout: float = HANDSHAKE_TIMEOUT, loopback: bool = False,
                 tls: PeerCertificate | None = None, node: Node | None = None) -> None:
        self.broker = broker
        #: The node its client reached (``None``: the first): its model connection's.
        self.node = node
        self.peer = peer
        self.loopback = loopback
        #: Its TLS session, when it came over TLS (SASL EXTERNAL's certificate).
        self.tls = tls
        self.state = ConnectionState.HEADER
        self._out: list[bytes] = []
        self._on_output = on_output
        self._reader = CommandReader(max_frame_size=FRAME_MIN_SIZE)
        self._inbox = bytearray()  # bytes before the protocol header is complete
        self._offer = _handshake.Tuning(channel_max, frame_max, heartbeat)
        self.heartbeat = 0
        self.mechanism = "PLAIN"
        self.frame_max = FRAME_MIN_SIZE
        self.channel_max = channel_max
        self.client_properties: dict[str, Any] = {}
        self.user = ""
        self.model: ModelConnection | None = None
        self.channels: dict[int, ModelChannel] = {}
        self._closing_channels: set[int] = set()
        # The last delivery's consumer tag and its encoding, and its exchange and routing key
        # and theirs (a basic.deliver payload's head and tail): the next is most often alike.
        self._deliver_head: tuple[str, bytes | None] = ("", None)
        self._deliver_tail: tuple[str, str, bytes | None] = ("", "", None)
        # Publish outcomes (delivery tag, accepted) not yet confirmed on the wire, per channel:
        # sent together at the end of each read (see kit.coalesce), or before the channel's next
        # frame.
        self._confirms: dict[int, list[tuple[int, bool]]] = {}
        self._reading = False
        #: How many commands the last :meth:`receive_data` held: the listener tells a client that
        #: pipelines from one that waits for each answer by it.
        self.commands_read = 0
        now = broker.clock.monotonic()
        self._last_received = now
        self._last_sent = now
        self._handshake_deadline = now + handshake_timeout
        self._linger_until = now
        #: The reason the connection closed, when an error closed it.
        self.close_reason: AMQPError | None = None
        #: What the client's connection.close said (reply code, reply text), if it sent one.
        self.client_close: tuple[int, str] | None = None
        #: Why its login was refused, for the log (RabbitMQ's words: ``PLAIN login refused:
        #: user 'bob' - invalid credentials``; the name as the client sent it).
        self.refused_login: str | None = None
        #: True once everything there is to send has been queued and the socket should close.
        self.should_close = False
        self._closing_since = 0.0
        #: Set when this connection published while the broker blocks publishers: the owner
        #: stops reading from it until the broker unblocks.
        self.blocked = False
        # Told connection.blocked (and not unblocked yet); the commands held meanwhile.
        self._told_blocked = False
        self._held: list[Command] = []
        #: An unexpected error met while sending it what the model said (a delivery caused by
        #: another connection, say): the owner reports it and calls :meth:`internal_error`.
        self.failure: Exception | None = None

    def describe(self) -> str:
        """The connection for a log line: its peer, and the client's connection name, user
        and vhost when known (``"127.0.0.1:5312 ('billing', user 'guest', vhost '/')"``),
        what the client chose escaped (:func:`~embroker._untrusted.log_text`)."""
        parts = []
        name = self.client_properties.get("connection_name")
        if isinstance(name, str):
            parts.append(f"'{log_text(name)}'")
        if self.user:
            parts.append(f"user '{log_text(self.user)}'")
        if self.model is not None:
            parts.append(f"vhost '{log_text(self.model.vhost.name)}'")
        return f"{self.peer or 'connection'}" + (f" ({', '.join(parts)})" if parts else "")

    def end_reason(self) -> str:
        """Why the connection ended, in words for the log, what the client chose escaped (a
        refused login as RabbitMQ logs it: ``PLAIN login refused: user 'bob' - invalid
        credentials``)."""
        error = self.close_reason
        if self.refused_login is not None:
            return log_text(self.refused_login)
        if error is not None:
            return log_text(error)
        if self.client_close is not None:
            code, text = self.client_close
            return f"closed by the client (connection.close {code} '{log_text(text)}')"
        if self.state is not ConnectionState.OPEN and self.model is None:
            return f"the client closed the socket during the handshake ({self.state.value})"
        return "the client closed the socket without connection.close"

    def __repr__(self) -> str:
        return f"<ServerConnection {self.peer or id(self)} {self.state.name}>"

    # -- bytes in and out ----------------------------------------------------------------------

    def data_to_send(self) -> bytes:
        """Everything queued for the socket since the last call (may be empty)."""
        if not self._out:
            return b""
        self._last_sent = self.broker.clock.monotonic()  # what heartbeats go by
        data = b"".join(self._out)
        self._out.clear()
        return data

    @property
    def closed(self) -> bool:
        """Whether the connection is closed (the socket may still be open for a while)."""
        return self.state is ConnectionState.CLOSED

    @property
    def has_output(self) -> bool:
        """Whether :meth:`data_to_send` has something, or the socket should close."""
        return bool(self._out) or self.should_close

    def _send_method(self, channel: int, method: Method) -> None:
        if self._confirms:  # what was confirmed goes first: before the channel's next frame,
            for pending in [channel] if channel else list(self._confirms):  # or a close
                if pending in self._confirms:
                    self._send_confirms(pending)
        self._out.append(encode_method_frame(channel, method))

    def _send_content(self, channel: int, method: Method, message: Message) -> None:
        # A message leaves with the properties it came in with when the broker did not change
        # them (no re-encoding), split into body frames by the negotiated frame-max.
        if channel in self._confirms:
            self._send_confirms(channel)
        self._out.append(encode_message(channel, method, message.body, self.frame_max,
                                        message.properties, message.encoded_properties))

    def _send_confirms(self, channel: int) -> None:
        # The frames packed in one go (what encode_method_frame makes of BasicAck/BasicNack,
        # byte for byte: a test holds them equal), as this is once per confirmed publish.
        outcomes = self._confirms.pop(channel)
        if len(outcomes) == 1 and outcomes[0][1]:  # one ack (confirms one by one): no sorting
            self._out.append(_CONFIRM_FRAME.pack(1, channel, 13, 60, 80, outcomes[0][0], 0,
                                                 0xCE))
            return
        for tag, multiple, ack in coalesce(outcomes):
            # (RabbitMQ's publisher nacks carry requeue=true, the record's default.)
            self._out.append(_CONFIRM_FRAME.pack(1, channel, 13, 60, 80, tag, multiple, 0xCE)
                             if ack else
                             _CONFIRM_FRAME.pack(1, channel, 13, 60, 120, tag, multiple | 2,
                                                 0xCE))

    def receive_data(self, data: bytes) -> None:
        """Feed bytes received from the client; replies queue up for :meth:`data_to_send`.

        An empty ``data`` means the client closed its side: the connection is dropped and its
        model connection closed (unacknowledged messages requeued, exclusive queues deleted).
        Never raises for anything the client sends.
        """
        if self.state is ConnectionState.CLOSED:
            if not data:
                self.connection_lost()  # the client closed its side after our close-ok
            return
        if not data:
            self.connection_lost()
            return
        self._last_received = self.broker.clock.monotonic()
        self._reading = True
        count = 0
        try:
            if self.state is ConnectionState.HEADER:
                self._inbox += data
                if not self._protocol_header():
                    return
                data, self._inbox = bytes(self._inbox[8:]), bytearray()
            for command in self._reader.feed(data):  # heartbeats count as received, nothing more
                count += 1
                if self.state is ConnectionState.CLOSED:  # type: ignore[comparison-overlap]
                    return  # what a client sends after its close (or ours) is discarded
                if self._held or (self.broker.publishers_blocked and self._holds(command)):
                    self._held.append(command)  # (read once the alarm clears)
                    continue
                self._take(command)
        except ConnectionException as exc:
            # The byte stream itself is broken (framing, syntax, content order): nothing after
            # it can be trusted, so close right after saying why (section 4.2.3).
            self._fail(exc, drop=True)
        finally:
            self._reading = False
            self.commands_read = count
            if self._confirms:
                for channel in list(self._confirms):
                    self._send_confirms(channel)

    def _holds(self, command: Command) -> bool:
        """Whether ``command`` is a publish the broker's resource alarm holds back: as
        RabbitMQ 3.10.8's reader, a connection is blocked when it publishes during an alarm
        (``publish_received/1``: told connection.blocked once, with the alarms then in effect),
        and nothing more of it is read until the last alarm clears (live: neither that publish
        nor those after it reach a queue meanwhile)."""
        if not self.broker.publishers_blocked or self.state is not ConnectionState.OPEN:
            return False
        route = ROUTES.get(type(command.method))
        if route is None or not route.publishes or command.channel not in self.channels \
                or command.channel in self._closing_channels:
            return False
        self.blocked = True
        if not self._told_blocked and self._has_capability("connection.blocked"):
            self._told_blocked = True
            self._send_method(0, ConnectionBlocked(reason=self.broker.blocked_reason))
        return True

    def connection_lost(self) -> None:
        """The socket is gone: release everything the connection held."""
        self._release()
        self.should_close = True

    def _release(self) -> None:
        # Closed: channels closed (unacknowledged messages requeued), exclusive queues gone.
        self.state = ConnectionState.CLOSED
        if self.model is not None:
            self.model.close()

    # -- the handshake -------------------------------------------------------------------------

    def _protocol_header(self) -> bool:
        header = parse_protocol_header(self._inbox)
        if header is None:
            return False
        if header.kind is not ProtocolHeaderKind.AMQP_0_9_1:
            # Section 4.2.2: answer with the protocol header we speak, then close.
            self._out.append(PROTOCOL_HEADER)
            self.state = ConnectionState.CLOSED
            self.should_close = True
            return False
        self.state = ConnectionState.START_OK
        self._send_method(0, _handshake.start(self.broker, self.tls))
        return True

    def _handshake(self, method: Method) -> None:
        if isinstance(method, ConnectionStartOk):
            self.client_properties = dict(method.client_properties or {})
            self.mechanism = method.mechanism
            host, _, port = self.peer.rpartition(":")
            try:
                self.user = _handshake.authenticate(
                    self.broker, method, loopback=self.loopback, address=host.strip("[]"),
                    port=int(port) if port.isdigit() else 0, tls=self.tls)
            except _handshake.LoginRefused as refused:
                self.refused_login = refused.reason
                # RabbitMQ tells only the clients that can take it, then closes the socket.
                self._fail(refused.error, drop=True,
                           tell=self._has_capability("authentication_failure_close"))
                return
            self.state = ConnectionState.TUNE_OK
            self._send_method(0, ConnectionTune(channel_max=self._offer.channel_max,
                                                frame_max=self._offer.frame_max,
                                                heartbeat=self._offer.heartbeat))
        elif isinstance(method, ConnectionTuneOk):
            try:
                tuned = _handshake.tune(self._offer, method, frame_min=(
                    FRAME_MIN_SIZE_4_1 if self.broker.profile.at_least(4, 1)
                    else FRAME_MIN_SIZE))
            except NotAllowed as exc:
                self._fail(exc, drop=True)  # nothing was agreed: no close-ok to wait for
                return
            self.channel_max, self.frame_max, self.heartbeat = tuned
            self._reader.frame_max = tuned.frame_max
            self.state = ConnectionState.OPEN_VHOST
        elif isinstance(method, ConnectionOpen):
            self.model = self.broker.open_connection(
                method.virtual_host, user=self.user, client_properties=self.client_properties,
                name=f"connection {self.peer}" if self.peer else None, kind=self.kind,
                node=self.node,
                details={**self._peer_details(), "channel_max": self.channel_max,
                         "frame_max": self.frame_max, "heartbeat": self.heartbeat})
            self.model.on_closed_by_broker = self._closed_by_broker
            self.state = ConnectionState.OPEN
            self._send_method(0, ConnectionOpenOk())
            # (under an alarm, nothing is said until it publishes: RabbitMQ's reader)

    def _peer_details(self) -> dict[str, Any]:
        """What the event exchange says of the peer (``peer_host``, ``peer_port``, ``host``,
        ``mechanism``)."""
        host, _, port = self.peer.rpartition(":")
        return {"peer_host": host.strip("[]"), "peer_port": int(port) if port.isdigit() else 0,
                "host": host.strip("[]"), "mechanism": self.mechanism}

    def _has_capability(self, name: str) -> bool:
        return _handshake.has_capability(self.client_properties, name)

    # -- dispatch ------------------------------------------------------------------------------

    def _take(self, command: Command) -> None:
        """Act on one command: a channel exception closes its channel, a connection exception
        the connection (after the client's close-ok)."""
        method = command.method
        number = command.channel
        try:
            if number in self._closing_channels:
                self._while_channel_closing(command)
                return
            state = self.state
            if state is not ConnectionState.OPEN:
                if state is ConnectionState.CLOSING:
                    self._while_closing(method)
                    return
                expected = _EXPECTED[state]
                if number != 0 or not isinstance(method, expected):
                    raise CommandInvalid(f"expected '{expected.NAME}', got '{method.NAME}'")
                self._handshake(method)
                return
            if number == 0:
                self._connection_method(method)
                return
            if method.CLASS_ID == 10:
                raise CommandInvalid(f"connection method '{method.NAME}' on channel {number}")
            try:
                self._channel_method(number, command)
            except ChannelException as exc:
                self._fail(exc.with_method(method.CLASS_ID, method.METHOD_ID), channel=number)
            except ConnectionException as exc:
                raise exc.with_method(method.CLASS_ID, method.METHOD_ID) from None
        except AMQPError as exc:
            self._fail(exc)  # a connection exception: wait for the client's close-ok

    def _channel_method(self, number: int, command: Command) -> None:
        method = command.method
        channel = self.channels.get(number)
        if channel is None:
            self._open_channel(number, method)
            return
        route = ROUTES.get(type(method))  # (the channel lifecycle's methods are not in it)
        if route is not None:
            result = route.call(channel, method, command)
            if route.reply is not None and not (route.no_wait and getattr(method, "no_wait",
                                                                          False)):
                reply = route.reply(method, result)
                if isinstance(reply, WithContent):
                    self._send_content(number, reply.method, reply.message)
                elif reply is not None:
                    self._send_method(number, reply)
            if route.then is not None:
                route.then(channel, result)
            return
        if isinstance(method, ChannelClose):
            channel.close()
            del self.channels[number]
            self._reader.forget(number)
            self._send_method(number, ChannelCloseOk())
            log.log(logging.DEBUG if method.reply_code == 200 else logging.INFO,
                    "%s: channel %d closed by the client (%d %s)", self.describe(), number,
                    method.reply_code, log_text(method.reply_text))
            return
        if isinstance(method, ChannelOpen):
            raise channel_already_open()
        if isinstance(method, ChannelCloseOk):
            return  # only meaningful while closing, which _while_channel_closing handles
        raise CommandInvalid(f"unexpected method '{method.NAME}' from the client")

    def _connection_method(self, method: Method) -> None:
        if isinstance(method, ConnectionClose):
            self.client_close = (method.reply_code, method.reply_text)
            self._send_method(0, ConnectionCloseOk())
            self._release()
            self._linger_until = self.broker.clock.monotonic() + CLOSE_LINGER
        elif isinstance(method, ConnectionCloseOk):
            self.connection_lost()  # the client answered a close it did not see coming
        elif isinstance(method, ConnectionUpdateSecret):
            self._send_method(0, ConnectionUpdateSecretOk())
        elif isinstance(method, (ConnectionBlocked, ConnectionUnblocked)):
            pass  # a client may tell us it is blocked; nothing to do
        else:
            raise CommandInvalid(f"unexpected method '{method.NAME}' on channel 0")

    def _while_closing(self, method: Method) -> None:
        # Section 2.3.7: once connection.close is sent, only close and close-ok count.
        if isinstance(method, (ConnectionCloseOk, ConnectionClose)):
            if isinstance(method, ConnectionClose):
                self._send_method(0, ConnectionCloseOk())
            self.state = ConnectionState.CLOSED
            self.should_close = True

    # -- channels ------------------------------------------------------------------------------

    def _open_channel(self, number: int, method: Method) -> None:
        if not isinstance(method, ChannelOpen):
            raise ChannelError("expected 'channel.open'")
        if self.channel_max and len(self.channels) >= self.channel_max:  # (0: no limit)
            # RabbitMQ counts channels, not numbers
            raise NotAllowed(f"number of channels opened ({len(self.channels)}) has reached "
                             f"the negotiated channel_max ({self.channel_max})")
        assert self.model is not None
        channel = self.model.open_channel(number)
        self.channels[number] = channel
        channel.listener = self._on_event
        self._send_method(number, ChannelOpenOk())

    def _while_channel_closing(self, command: Command) -> None:
        # After channel.close was sent, the channel waits for close-ok and ignores the rest
        # (section 2.3.7). A close that crossed ours is answered, and the wait goes on; a
        # channel.open before the close-ok is refused, as RabbitMQ does.
        method = command.method
        if isinstance(method, ChannelCloseOk):
            self._closing_channels.discard(command.channel)
            self._reader.forget(command.channel)
        elif isinstance(method, ChannelClose):
            self._send_method(command.channel, ChannelCloseOk())
            self._reader.forget(command.channel)
        elif isinstance(method, ChannelOpen):
            raise channel_already_open().with_method(method.CLASS_ID, method.METHOD_ID)

    # -- errors: the one place that closes -----------------------------------------------------

    def _fail(self, error: AMQPError, *, channel: int = 0, drop: bool = False,
              tell: bool = True) -> None:
        """Close a channel (a channel exception on ``channel``) or the connection because of
        ``error``, telling the client why.

        Args:
            error: the reason, sent as the close's reply code and text.
            channel: the channel a channel exception happened on; 0 closes the connection.
            drop: close the socket right after the connection.close instead of waiting for the
                client's close-ok (the byte stream cannot be trusted, or the login failed).
            tell: whether to send the connection.close at all.
        """
        reason = (error.reply_code, error.wire_reply_text, error.class_id, error.method_id)
        refused = METHOD_CLASSES.get(error.class_id << 16 | error.method_id) \
            if error.class_id else None
        method = refused.NAME if refused is not None else ""
        if channel and isinstance(error, ChannelException):
            log.info("%s: channel %d closed by the broker: %s", self.describe(), channel,
                     log_text(error))
            self._incident(error, channel=channel, method=method)
            self._confirms.pop(channel, None)  # as RabbitMQ: a closing channel confirms nothing
            model = self.channels.pop(channel, None)
            if model is not None:
                model.close()
            self._reader.forget(channel)
            self._closing_channels.add(channel)
            self._send_method(channel, ChannelClose(*reason))
            return
        self.close_reason = error
        if self.state is not ConnectionState.CLOSED:
            self._incident(error, method=method, dropped=not (tell and self.state in _CAN_CLOSE))
        if tell and self.state in _CAN_CLOSE:
            self._send_method(0, ConnectionClose(*reason))
            if not drop:
                self.state = ConnectionState.CLOSING
                self._closing_since = self.broker.clock.monotonic()
        if drop or self.state is not ConnectionState.CLOSING:
            self.state = ConnectionState.CLOSED
            self.should_close = True
        for model in list(self.channels.values()):
            model.close()
        self.channels.clear()
        if self.model is not None:
            self.model.close()

    def close(self, error: ConnectionException) -> None:
        """Close the connection from the broker's side (e.g. 320 CONNECTION_FORCED at stop)."""
        if self.state not in (ConnectionState.CLOSED, ConnectionState.CLOSING):
            self._fail(error)

    def close_channel(self, number: int, error: ChannelException) -> None:
        """Close channel ``number`` from the broker's side because of ``error`` (a test's
        fault): channel.close is sent and its unacknowledged messages are requeued."""
        if number in self.channels:
            self._fail(error, channel=number)

    def internal_error(self, error: ConnectionException) -> None:
        """A bug met while serving this connection: tell the client (541, when it can still
        read a close) and close the socket without waiting, releasing what it held."""
        if self.state is not ConnectionState.CLOSED:
            self._fail(error, drop=True)

    @property
    def channel_numbers(self) -> list[int]:
        return list(self.channels)

    def on_restart(self) -> None:
        """The broker stops: 320 CONNECTION_FORCED, as RabbitMQ's node that stops."""
        from ..errors import ConnectionForced
        self.close(ConnectionForced("broker forced connection closure with reason 'shutdown'"))

    def killed(self, reason: str) -> None:
        """Its socket ended with no close (a fault): its end is logged with ``reason``."""
        if self.close_reason is None:
            from ..errors import ConnectionForced
            self.close_reason = ConnectionForced(reason)

    def _closed_by_broker(self, error: ConnectionException) -> None:
        # The model closes this connection (its user was deleted): tell the client now.
        self.close(error)
        self._output_ready()

    # -- time ----------------------------------------------------------------------------------

    def tick(self) -> float | None:
        """Send a heartbeat when one is due and drop a client silent for two intervals.

        Returns:
            when to call again (on the broker clock's monotonic time), or ``None``.
        """
        now = self.broker.clock.monotonic()
        if self.state in _EXPECTED or self.state is ConnectionState.HEADER:
            if now >= self._handshake_deadline:
                self.close_reason = FrameError(  # (the socket closes with no frame)
                    f"handshake timeout: the client did not finish the handshake in time "
                    f"(stopped {self.state.value})")
                self._incident(self.close_reason, dropped=True)
                self.connection_lost()
                return None
            return self._handshake_deadline
        if self.state is ConnectionState.CLOSING:
            if now - self._closing_since >= CLOSE_OK_TIMEOUT:
                self.connection_lost()  # the client never answered our connection.close
                return None
            return self._closing_since + CLOSE_OK_TIMEOUT
        if self.state is ConnectionState.CLOSED:
            if self.should_close:
                return None
            if now >= self._linger_until:
                self.should_close = True  # the client never closed its side
                return None
            return self._linger_until
        if self.heartbeat <= 0:
            return None
        if now - self._last_received > 2 * self.heartbeat:
            self.close_reason = FrameError("missed heartbeats from client, timeout: "
                                           f"{self.heartbeat}s")
            self._incident(self.close_reason, dropped=True)
            self.connection_lost()
            return None
        interval = self.heartbeat / 2
        if now - self._last_sent >= interval:
            self._out.append(HEARTBEAT_FRAME)
        return min(self._last_sent + interval, self._last_received + 2 * self.heartbeat)

    def _incident(self, error: AMQPError, *, channel: int = 0, method: str = "",
                  dropped: bool = False) -> None:
        # What the broker closed, for broker.incidents (a failed test's report).
        self.broker.incidents.record(f"connection {self.describe()}", error.reply_code,
                                     error.reply_text, channel=channel, method=method,
                                     dropped=dropped)

    def excuse_silence(self) -> None:
        """Count the client's silence (missed heartbeats) from now on: its transport knows the
        client could not speak in the time that passed. A test moved the broker's
        :class:`~embroker.ManualClock` while an in-memory client was not running, or while a
        socket's client, which lives in real time, was heard from within two intervals of it.
        """
        self._last_received = max(self._last_received, self.broker.clock.monotonic())

    # -- blocking ------------------------------------------------------------------------------

    def publishers_blocked(self, reason: str) -> None:
        """The broker blocks publishers (a resource alarm): nothing is said now. As RabbitMQ
        3.10.8's reader, the connection is told (connection.blocked, with the reason then in
        effect) and stops being read when it publishes (:meth:`_holds`); one that only
        consumes, or is idle, is never told."""

    def publishers_unblocked(self) -> None:
        """The last alarm cleared: connection.unblocked if it was told it was blocked, then
        what was held back is read."""
        self.blocked = False
        if self._told_blocked:
            self._told_blocked = False
            if self.state is ConnectionState.OPEN:
                self._send_method(0, ConnectionUnblocked())
        held, self._held = self._held, []
        if held:
            self._reading = True
            try:
                for index, command in enumerate(held):
                    if self.closed:
                        break
                    if self._holds(command):  # (blocked again meanwhile)
                        self._held = held[index:]
                        break
                    self._take(command)
            finally:
                self._reading = False
                for channel in list(self._confirms):
                    self._send_confirms(channel)
        self._output_ready()

    # -- what the model sends without being asked ----------------------------------------------

    def _output_ready(self) -> None:
        if self._on_output is not None:
            self._on_output()

    def _on_event(self, event: ChannelEvent) -> None:
        # The model's events come in the middle of its work (another connection's publish, a
        # timer): a failure here is this connection's alone and must not unwind the model.
        try:
            if type(event) is Confirmed:  # (_send_event's case, inlined: once per publish)
                confirms = self._confirms.get(event.channel)
                if confirms is None:
                    self._confirms[event.channel] = [(event.delivery_tag, event.ack)]
                else:
                    confirms.append((event.delivery_tag, event.ack))
                if not self._reading:
                    self._send_confirms(event.channel)
            else:
                self._send_event(event)
        except Exception as exc:
            self.failure = exc
        else:
            if self._reading:
                return  # (its own input's doing: whoever feeds it collects the output after)
        on_output = self._on_output  # (_output_ready, inlined)
        if on_output is not None:
            on_output()

    def _send_event(self, event: ChannelEvent) -> None:
        if isinstance(event, Delivered):
            # (_send_content, with the method's payload packed without the method object)
            channel, message = event.channel, event.message
            if channel in self._confirms:
                self._send_confirms(channel)
            consumer_tag, exchange, routing_key = (event.consumer_tag, event.exchange,
                                                   event.routing_key)
            head = self._deliver_head
            if head[0] != consumer_tag or head[1] is None:
                head = self._deliver_head = (consumer_tag, deliver_head(consumer_tag))
            tail = self._deliver_tail
            if tail[1] != routing_key or tail[0] != exchange or tail[2] is None:
                tail = self._deliver_tail = (exchange, routing_key,
                                             deliver_tail(exchange, routing_key))
            payload = (deliver_payload_from(head[1], event.delivery_tag, event.redelivered,
                                            tail[2])
                       if head[1] is not None and tail[2] is not None else None)
            if payload is None:  # cannot be encoded: the method says why (raises)
                payload = BasicDeliver(
                    consumer_tag=event.consumer_tag, delivery_tag=event.delivery_tag,
                    redelivered=event.redelivered, exchange=event.exchange,
                    routing_key=event.routing_key).encode()
            self._out.append(encode_content(channel, payload, BasicDeliver.CLASS_ID,
                                            message.body, self.frame_max, message.properties,
                                            message.encoded_properties))
        elif isinstance(event, Confirmed):
            self._confirms.setdefault(event.channel, []).append((event.delivery_tag, event.ack))
            if not self._reading:
                self._send_confirms(event.channel)
        elif isinstance(event, Returned):
            self._send_content(event.channel, BasicReturn(
                reply_code=event.reply_code, reply_text=event.reply_text,
                exchange=event.exchange, routing_key=event.routing_key), event.message)
        elif isinstance(event, Cancelled):
            if not self._has_capability("consumer_cancel_notify"):
                return
            self._send_method(event.channel, BasicCancel(consumer_tag=event.consumer_tag,
                                                         no_wait=True))
