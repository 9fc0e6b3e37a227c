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

Each state accepts only the methods named in ``_EXPECTED``; anything else is a connection
exception. In ``OPEN`` every channel method goes through the dispatch table ``_HANDLERS`` to a
``_handle_*`` method, which calls the model's :class:`~embroker.model.Channel` (one path for the
wire and the in-process client) and answers with the synchronous reply.

Errors are exceptions (:mod:`embroker.errors`) and become frames in exactly one place,
:meth:`_fail`: a channel exception closes its channel with ``channel.close`` (the channel then
ignores everything but ``channel.close``/``close-ok``, section 2.3.7), a connection exception
closes the connection with ``connection.close``. Either way the broker and every other
connection go on.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, final

from .._version import __version__
from ..errors import (
    AccessRefused,
    AMQPError,
    ChannelError,
    ChannelException,
    CommandInvalid,
    ConnectionException,
    FrameError,
    NotAllowed,
    NotImplementedAMQP,
)
from ._assembly import Command, CommandReader
from ._fields import decode_table
from ._frames import (
    FRAME_MIN_SIZE,
    HEARTBEAT_FRAME,
    PROTOCOL_HEADER,
    ProtocolHeaderKind,
    encode_message,
    encode_method_frame,
    parse_protocol_header,
)
from ._method import Method
from ._methods import (
    BasicAck,
    BasicCancel,
    BasicCancelOk,
    BasicConsume,
    BasicConsumeOk,
    BasicDeliver,
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
    BasicReturn,
    ChannelClose,
    ChannelCloseOk,
    ChannelFlow,
    ChannelFlowOk,
    ChannelOpen,
    ChannelOpenOk,
    ConfirmSelect,
    ConfirmSelectOk,
    ConnectionBlocked,
    ConnectionClose,
    ConnectionCloseOk,
    ConnectionOpen,
    ConnectionOpenOk,
    ConnectionStart,
    ConnectionStartOk,
    ConnectionTune,
    ConnectionTuneOk,
    ConnectionUnblocked,
    ConnectionUpdateSecret,
    ConnectionUpdateSecretOk,
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
    from ..model import Broker, Message
    from ..model import Channel as ModelChannel
    from ..model import Connection as ModelConnection

__all__ = ["ConnectionState", "ServerConnection"]

#: What the server offers in connection.tune (RabbitMQ's defaults).
CHANNEL_MAX: Final = 2047
FRAME_MAX: Final = 131072
HEARTBEAT: Final = 60
#: How long to wait for connection.close-ok after sending connection.close (seconds).
CLOSE_OK_TIMEOUT: Final = 1.0

SERVER_CAPABILITIES: Final = {
    "publisher_confirms": True,
    "exchange_exchange_bindings": True,
    "basic.nack": True,
    "consumer_cancel_notify": True,
    "connection.blocked": True,
    "consumer_priorities": True,
    "authentication_failure_close": True,
    "per_consumer_qos": True,
    "direct_reply_to": True,
}


class ConnectionState(enum.Enum):
    HEADER = "waiting for the protocol header"
    START_OK = "waiting for connection.start-ok"
    TUNE_OK = "waiting for connection.tune-ok"
    OPEN_VHOST = "waiting for connection.open"
    OPEN = "open"
    CLOSING = "closing: waiting for connection.close-ok"
    CLOSED = "closed"


#: The methods each handshake state accepts (section 2.2.4); anything else there is an error.
_EXPECTED: Final[dict[ConnectionState, tuple[type[Method], ...]]] = {
    ConnectionState.START_OK: (ConnectionStartOk,),
    ConnectionState.TUNE_OK: (ConnectionTuneOk,),
    ConnectionState.OPEN_VHOST: (ConnectionOpen,),
}


def _parse_credentials(mechanism: str, response: bytes) -> tuple[str, str] | None:
    if mechanism == "PLAIN":
        parts = response.split(b"\x00")
        if len(parts) != 3:
            return None
        return parts[1].decode("utf-8", "replace"), parts[2].decode("utf-8", "replace")
    if mechanism == "AMQPLAIN":
        try:
            table = decode_table(len(response).to_bytes(4, "big") + response)
        except AMQPError:
            return None
        login, password = table.get("LOGIN"), table.get("PASSWORD")
        if isinstance(login, str) and isinstance(password, str):
            return login, password
    return None


@final
class ServerConnection:
    """One client connection, seen from the broker.

    Args:
        broker: the broker whose model this connection drives.
        peer: a description of the peer for logs and names (``"127.0.0.1:53211"``).
        on_output: called (with no arguments) whenever output becomes ready without
            :meth:`receive_data` being the cause, e.g. a delivery caused by another connection;
            the listener uses it to wake its loop.
        heartbeat: the heartbeat interval offered in connection.tune (seconds, 0 for none).
    """

    def __init__(self, broker: Broker, *, peer: str = "", on_output: Callable[[], None] | None = None,
                 heartbeat: int = HEARTBEAT, frame_max: int = FRAME_MAX,
                 channel_max: int = CHANNEL_MAX) -> None:
        self.broker = broker
        self.peer = peer
        self.state = ConnectionState.HEADER
        self._out: list[bytes] = []
        self._on_output = on_output
        self._reader = CommandReader(max_frame_size=FRAME_MIN_SIZE)
        self._inbox = bytearray()  # bytes before the protocol header is complete
        self.offer_heartbeat = heartbeat
        self.offer_frame_max = frame_max
        self.offer_channel_max = channel_max
        self.heartbeat = 0
        self.frame_max = FRAME_MIN_SIZE
        self.channel_max = channel_max
        self.client_properties: dict[str, Any] = {}
        self.user = ""
        self.model: ModelConnection | None = None
        self.channels: dict[int, ModelChannel] = {}
        self._closing_channels: set[int] = set()
        now = broker.clock.monotonic()
        self._last_received = now
        self._last_sent = now
        #: The reason the connection closed, when an error closed it.
        self.close_reason: AMQPError | None = None
        #: True once everything there is to send has been queued and the socket should close.
        self.should_close = False
        self._closing_since = 0.0
        #: Set when this connection published while the broker blocks publishers: the owner
        #: stops reading from it until the broker unblocks.
        self.blocked = False

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
    def has_output(self) -> bool:
        """Whether :meth:`data_to_send` has something, or the socket should close."""
        return bool(self._out) or self.should_close

    def _send(self, data: bytes) -> None:
        self._out.append(data)

    def _send_method(self, channel: int, method: Method) -> None:
        self._send(encode_method_frame(channel, method))

    def _send_content(self, channel: int, method: Method, message: Message) -> None:
        # A message leaves with the properties it came in with when the broker did not change
        # them (no re-encoding), split into body frames by the negotiated frame-max.
        self._send(encode_message(channel, method, message.body, self.frame_max,
                                  message.properties, message.encoded_properties))

    def receive_data(self, data: bytes) -> None:
        """Feed bytes received from the client; replies queue up for :meth:`data_to_send`.

        An empty ``data`` means the client closed its side: the connection is dropped and its
        model connection closed (unacknowledged messages requeued, exclusive queues deleted).
        Never raises for anything the client sends.
        """
        if self.state is ConnectionState.CLOSED:
            return
        if not data:
            self.connection_lost()
            return
        self._last_received = self.broker.clock.monotonic()
        try:
            if self.state is ConnectionState.HEADER:
                self._inbox += data
                if not self._protocol_header():
                    return
                data, self._inbox = bytes(self._inbox[8:]), bytearray()
            for command in self._reader.feed(data):  # heartbeats count as received, nothing more
                if self.should_close:
                    return
                if command.channel in self._closing_channels:
                    self._while_channel_closing(command)
                    continue
                try:
                    self._dispatch(command)
                except ConnectionException as exc:
                    self._fail_connection(exc)  # and wait for the client's close-ok
        except ConnectionException as exc:
            # The byte stream itself is broken (framing, syntax, content order): nothing after
            # it can be trusted, so close right after saying why (section 4.2.3).
            self._fail_connection(exc)
            self.state = ConnectionState.CLOSED
            self.should_close = True

    def connection_lost(self) -> None:
        """The socket is gone: release everything the connection held."""
        self.state = ConnectionState.CLOSED
        self.should_close = True
        if self.model is not None:
            self.model.close()

    # -- the handshake -------------------------------------------------------------------------

    def _protocol_header(self) -> bool:
        header = parse_protocol_header(self._inbox)
        if header is None:
            return False
        if header.kind is not ProtocolHeaderKind.AMQP_0_9_1:
            # Section 4.2.2: answer with the protocol header we speak, then close.
            self._send(PROTOCOL_HEADER)
            self.state = ConnectionState.CLOSED
            self.should_close = True
            return False
        self.state = ConnectionState.START_OK
        self._send_method(0, ConnectionStart(
            version_major=0, version_minor=9,
            server_properties={
                "product": "embroker", "version": __version__, "platform": "Python",
                "copyright": "embroker contributors",
                "information": "An embedded AMQP 0-9-1 broker with RabbitMQ's semantics",
                "cluster_name": "embroker",
                "capabilities": dict(SERVER_CAPABILITIES),
            },
            mechanisms="PLAIN AMQPLAIN", locales="en_US"))
        return True

    def _handshake(self, method: Method) -> None:
        if isinstance(method, ConnectionStartOk):
            self.client_properties = dict(method.client_properties or {})
            mechanism = method.mechanism
            if mechanism not in ("PLAIN", "AMQPLAIN"):
                raise CommandInvalid(f"unknown authentication mechanism '{mechanism}'")
            response = method.response if isinstance(method.response, bytes) else \
                str(method.response).encode("utf-8", "surrogateescape")
            credentials = _parse_credentials(mechanism, response)
            if credentials is None or self.broker.users.get(credentials[0]) != credentials[1]:
                self._refuse_login(mechanism, credentials[0] if credentials else "")
                return
            self.user = credentials[0]
            self.state = ConnectionState.TUNE_OK
            self._send_method(0, ConnectionTune(channel_max=self.offer_channel_max,
                                                frame_max=self.offer_frame_max,
                                                heartbeat=self.offer_heartbeat))
        elif isinstance(method, ConnectionTuneOk):
            frame_max = method.frame_max or self.offer_frame_max
            if frame_max < FRAME_MIN_SIZE:
                raise NotAllowed(f"frame_max={frame_max} < {FRAME_MIN_SIZE} min size")
            if frame_max > self.offer_frame_max:
                raise NotAllowed(f"frame_max={frame_max} > {self.offer_frame_max} max size")
            self.frame_max = frame_max
            self._reader.frame_max = frame_max
            self.channel_max = method.channel_max or self.offer_channel_max
            self.heartbeat = method.heartbeat
            self.state = ConnectionState.OPEN_VHOST
        elif isinstance(method, ConnectionOpen):
            vhost = method.virtual_host
            if vhost not in self.broker.vhosts:
                raise NotAllowed(f"vhost {vhost} not found")
            self.model = self.broker.open_connection(
                vhost, user=self.user, client_properties=self.client_properties,
                name=f"connection {self.peer}" if self.peer else None)
            self.state = ConnectionState.OPEN
            self._send_method(0, ConnectionOpenOk())
            if self.broker.publishers_blocked and self._has_capability("connection.blocked"):
                self._send_method(0, ConnectionBlocked(reason=self.broker.blocked_reason))

    def _refuse_login(self, mechanism: str, user: str) -> None:
        error = AccessRefused(f"Login was refused using authentication mechanism {mechanism}. "
                              "For details see the broker logfile.")
        self.close_reason = error
        if self._has_capability("authentication_failure_close"):
            self._send_method(0, ConnectionClose(reply_code=error.reply_code,
                                                 reply_text=error.reply_text, class_id=0,
                                                 method_id=0))
        self.state = ConnectionState.CLOSED
        self.should_close = True

    def _has_capability(self, name: str) -> bool:
        capabilities = self.client_properties.get("capabilities")
        return isinstance(capabilities, dict) and capabilities.get(name) is True

    # -- dispatch ------------------------------------------------------------------------------

    def _dispatch(self, command: Command) -> None:
        method = command.method
        channel = command.channel
        state = self.state
        if state is not ConnectionState.OPEN:
            if state is ConnectionState.CLOSING:
                if isinstance(method, (ConnectionCloseOk, ConnectionClose)):
                    if isinstance(method, ConnectionClose):
                        self._send_method(0, ConnectionCloseOk())
                    self.state = ConnectionState.CLOSED
                    self.should_close = True
                return  # section 2.3.7: ignore everything else while closing
            expected = _EXPECTED[state]
            if channel != 0 or not isinstance(method, expected):
                raise CommandInvalid(f"expected '{expected[0].NAME}', got '{method.NAME}'")
            self._handshake(method)
            return
        if channel == 0:
            self._connection_method(method)
            return
        if method.CLASS_ID == 10:
            raise CommandInvalid(f"connection method '{method.NAME}' on channel {channel}")
        model_channel = self.channels.get(channel)
        try:
            if model_channel is None:
                self._open_channel(channel, method)
                return
            handler = _HANDLERS.get(type(method))
            if handler is None:
                raise CommandInvalid(f"unexpected method '{method.NAME}' from the client")
            handler(self, model_channel, command)
        except ChannelException as exc:
            self._fail_channel(channel, exc.with_method(method.CLASS_ID, method.METHOD_ID))
        except ConnectionException as exc:
            raise exc.with_method(method.CLASS_ID, method.METHOD_ID) from None

    def _connection_method(self, method: Method) -> None:
        if isinstance(method, ConnectionClose):
            self._send_method(0, ConnectionCloseOk())
            self._shutdown()
        elif isinstance(method, ConnectionCloseOk):
            self._shutdown()  # the client answered a close it did not see coming
        elif isinstance(method, ConnectionUpdateSecret):
            self._send_method(0, ConnectionUpdateSecretOk())
        elif isinstance(method, (ConnectionBlocked, ConnectionUnblocked)):
            pass  # a client may tell us it is blocked; nothing to do
        else:
            raise CommandInvalid(f"unexpected method '{method.NAME}' on channel 0")

    def _shutdown(self) -> None:
        self.state = ConnectionState.CLOSED
        self.should_close = True
        if self.model is not None:
            self.model.close()

    # -- channels ------------------------------------------------------------------------------

    def _open_channel(self, number: int, method: Method) -> None:
        if not isinstance(method, ChannelOpen):
            raise ChannelError("expected 'channel.open'")
        if len(self.channels) >= self.channel_max:  # RabbitMQ counts channels, not numbers
            raise NotAllowed(f"number of channels opened ({len(self.channels)}) has reached "
                             f"the negotiated channel_max ({self.channel_max})")
        assert self.model is not None
        channel = self.model.open_channel(number)
        self.channels[number] = channel
        channel.on_deliver = self._deliverer(number)
        channel.on_return = self._returner(number)
        channel.on_confirm = self._confirmer(number)
        channel.on_cancel = self._canceller(number)
        self._send_method(number, ChannelOpenOk())

    def _while_channel_closing(self, command: Command) -> None:
        # After channel.close was sent, only channel.close and close-ok count (section 2.3.7).
        method = command.method
        if isinstance(method, (ChannelClose, ChannelCloseOk)):
            if isinstance(method, ChannelClose):
                self._send_method(command.channel, ChannelCloseOk())
            self._closing_channels.discard(command.channel)
            self._reader.forget(command.channel)

    def _fail_channel(self, number: int, error: ChannelException) -> None:
        channel = self.channels.pop(number, None)
        if channel is not None:
            channel.close()
        self._reader.forget(number)
        self._closing_channels.add(number)
        self._send_method(number, ChannelClose(reply_code=error.reply_code,
                                               reply_text=error.reply_text[:255],
                                               class_id=error.class_id,
                                               method_id=error.method_id))

    def _fail_connection(self, error: ConnectionException) -> None:
        """Close the connection with ``error`` (connection.close) and wait for close-ok."""
        self.close_reason = error
        if self.state in (ConnectionState.START_OK, ConnectionState.TUNE_OK,
                          ConnectionState.OPEN_VHOST, ConnectionState.OPEN):
            self._send_method(0, ConnectionClose(reply_code=error.reply_code,
                                                 reply_text=error.reply_text[:255],
                                                 class_id=error.class_id,
                                                 method_id=error.method_id))
            self.state = ConnectionState.CLOSING
            self._closing_since = self.broker.clock.monotonic()
        else:
            self.state = ConnectionState.CLOSED
            self.should_close = True
        for channel in list(self.channels.values()):
            channel.close()
        self.channels.clear()
        if self.model is not None:
            self.model.close()

    def close(self, error: ConnectionException) -> None:
        """Close the connection from the broker's side (e.g. 320 CONNECTION_FORCED at stop)."""
        if self.state not in (ConnectionState.CLOSED, ConnectionState.CLOSING):
            self._fail_connection(error)

    # -- time ----------------------------------------------------------------------------------

    def tick(self) -> float | None:
        """Send a heartbeat when one is due and drop a client silent for two intervals.

        Returns:
            when to call again (on the broker clock's monotonic time), or ``None``.
        """
        now = self.broker.clock.monotonic()
        if self.state is ConnectionState.CLOSING:
            if now - self._closing_since >= CLOSE_OK_TIMEOUT:
                self.connection_lost()  # the client never answered our connection.close
                return None
            return self._closing_since + CLOSE_OK_TIMEOUT
        if self.heartbeat <= 0 or self.state is ConnectionState.CLOSED:
            return None
        if now - self._last_received > 2 * self.heartbeat:
            self.close_reason = FrameError("missed heartbeats from client, timeout: "
                                           f"{self.heartbeat}s")
            self.connection_lost()
            return None
        interval = self.heartbeat / 2
        if now - self._last_sent >= interval:
            self._send(HEARTBEAT_FRAME)
        return min(self._last_sent + interval, self._last_received + 2 * self.heartbeat)

    # -- blocking ------------------------------------------------------------------------------

    def publishers_blocked(self, reason: str) -> None:
        if self.state is ConnectionState.OPEN and self._has_capability("connection.blocked"):
            self._send_method(0, ConnectionBlocked(reason=reason))
            self._output_ready()

    def publishers_unblocked(self) -> None:
        self.blocked = False
        if self.state is ConnectionState.OPEN and self._has_capability("connection.blocked"):
            self._send_method(0, ConnectionUnblocked())
            self._output_ready()

    # -- what the model sends without being asked ----------------------------------------------

    def _output_ready(self) -> None:
        if self._on_output is not None:
            self._on_output()

    def _deliverer(self, number: int) -> Callable[[str, int, bool, str, str, Message], None]:
        def deliver(consumer_tag: str, delivery_tag: int, redelivered: bool, exchange: str,
                    routing_key: str, message: Message) -> None:
            self._send_content(number, BasicDeliver(
                consumer_tag=consumer_tag, delivery_tag=delivery_tag, redelivered=redelivered,
                exchange=exchange, routing_key=routing_key), message)
            self._output_ready()
        return deliver

    def _returner(self, number: int) -> Callable[[int, str, str, str, Message], None]:
        def returned(reply_code: int, reply_text: str, exchange: str, routing_key: str,
                     message: Message) -> None:
            self._send_content(number, BasicReturn(
                reply_code=reply_code, reply_text=reply_text, exchange=exchange,
                routing_key=routing_key), message)
            self._output_ready()
        return returned

    def _confirmer(self, number: int) -> Callable[[int, bool, bool], None]:
        def confirm(delivery_tag: int, multiple: bool, ack: bool) -> None:
            self._send_method(number, BasicAck(delivery_tag=delivery_tag, multiple=multiple)
                              if ack else BasicNack(delivery_tag=delivery_tag, multiple=multiple,
                                                    requeue=False))
            self._output_ready()
        return confirm

    def _canceller(self, number: int) -> Callable[[str], None]:
        def cancel(consumer_tag: str) -> None:
            if self._has_capability("consumer_cancel_notify"):
                self._send_method(number, BasicCancel(consumer_tag=consumer_tag, no_wait=True))
                self._output_ready()
        return cancel

    # -- channel method handlers (one per method, reached through _HANDLERS) --------------------

    def _handle_channel_close(self, channel: ModelChannel, command: Command) -> None:
        channel.close()
        del self.channels[command.channel]
        self._reader.forget(command.channel)
        self._send_method(command.channel, ChannelCloseOk())

    def _handle_channel_close_ok(self, channel: ModelChannel, command: Command) -> None:
        pass  # only meaningful while closing, which _while_channel_closing handles

    def _handle_channel_open(self, channel: ModelChannel, command: Command) -> None:
        raise ChannelError("second 'channel.open' seen")

    def _handle_channel_flow(self, channel: ModelChannel, command: Command) -> None:
        method: ChannelFlow = command.method  # type: ignore[assignment]
        if not method.active:
            raise NotImplementedAMQP("active=false")
        self._send_method(command.channel, ChannelFlowOk(active=True))

    def _handle_channel_flow_ok(self, channel: ModelChannel, command: Command) -> None:
        pass

    def _handle_exchange_declare(self, channel: ModelChannel, command: Command) -> None:
        m: ExchangeDeclare = command.method  # type: ignore[assignment]
        channel.exchange_declare(m.exchange, m.type, passive=m.passive, durable=m.durable,
                                 auto_delete=m.auto_delete, internal=m.internal,
                                 arguments=m.arguments)
        if not m.no_wait:
            self._send_method(command.channel, ExchangeDeclareOk())

    def _handle_exchange_delete(self, channel: ModelChannel, command: Command) -> None:
        m: ExchangeDelete = command.method  # type: ignore[assignment]
        channel.exchange_delete(m.exchange, if_unused=m.if_unused)
        if not m.no_wait:
            self._send_method(command.channel, ExchangeDeleteOk())

    def _handle_exchange_bind(self, channel: ModelChannel, command: Command) -> None:
        m: ExchangeBind = command.method  # type: ignore[assignment]
        channel.exchange_bind(m.destination, m.source, m.routing_key, m.arguments)
        if not m.no_wait:
            self._send_method(command.channel, ExchangeBindOk())

    def _handle_exchange_unbind(self, channel: ModelChannel, command: Command) -> None:
        m: ExchangeUnbind = command.method  # type: ignore[assignment]
        channel.exchange_unbind(m.destination, m.source, m.routing_key, m.arguments)
        if not m.no_wait:
            self._send_method(command.channel, ExchangeUnbindOk())

    def _handle_queue_declare(self, channel: ModelChannel, command: Command) -> None:
        m: QueueDeclare = command.method  # type: ignore[assignment]
        ok = channel.queue_declare(m.queue, passive=m.passive, durable=m.durable,
                                   exclusive=m.exclusive, auto_delete=m.auto_delete,
                                   arguments=m.arguments)
        if not m.no_wait:
            self._send_method(command.channel, QueueDeclareOk(
                queue=ok.queue, message_count=ok.message_count, consumer_count=ok.consumer_count))

    def _handle_queue_bind(self, channel: ModelChannel, command: Command) -> None:
        m: QueueBind = command.method  # type: ignore[assignment]
        channel.queue_bind(m.queue, m.exchange, m.routing_key, m.arguments)
        if not m.no_wait:
            self._send_method(command.channel, QueueBindOk())

    def _handle_queue_unbind(self, channel: ModelChannel, command: Command) -> None:
        m: QueueUnbind = command.method  # type: ignore[assignment]
        channel.queue_unbind(m.queue, m.exchange, m.routing_key, m.arguments)
        self._send_method(command.channel, QueueUnbindOk())

    def _handle_queue_purge(self, channel: ModelChannel, command: Command) -> None:
        m: QueuePurge = command.method  # type: ignore[assignment]
        count = channel.queue_purge(m.queue)
        if not m.no_wait:
            self._send_method(command.channel, QueuePurgeOk(message_count=count))

    def _handle_queue_delete(self, channel: ModelChannel, command: Command) -> None:
        m: QueueDelete = command.method  # type: ignore[assignment]
        count = channel.queue_delete(m.queue, if_unused=m.if_unused, if_empty=m.if_empty)
        if not m.no_wait:
            self._send_method(command.channel, QueueDeleteOk(message_count=count))

    def _handle_basic_qos(self, channel: ModelChannel, command: Command) -> None:
        m: BasicQos = command.method  # type: ignore[assignment]
        channel.basic_qos(m.prefetch_size, m.prefetch_count, m.global_)
        self._send_method(command.channel, BasicQosOk())

    def _handle_basic_consume(self, channel: ModelChannel, command: Command) -> None:
        m: BasicConsume = command.method  # type: ignore[assignment]
        tag = channel.basic_consume(m.queue, m.consumer_tag, no_ack=m.no_ack,
                                    exclusive=m.exclusive, arguments=m.arguments)
        if not m.no_wait:
            self._send_method(command.channel, BasicConsumeOk(consumer_tag=tag))
        channel.start_consumer(tag)  # deliveries follow consume-ok

    def _handle_basic_cancel(self, channel: ModelChannel, command: Command) -> None:
        m: BasicCancel = command.method  # type: ignore[assignment]
        channel.basic_cancel(m.consumer_tag)
        if not m.no_wait:
            self._send_method(command.channel, BasicCancelOk(consumer_tag=m.consumer_tag))

    def _handle_basic_publish(self, channel: ModelChannel, command: Command) -> None:
        m: BasicPublish = command.method  # type: ignore[assignment]
        if self.broker.publishers_blocked:
            self.blocked = True
        channel.basic_publish(m.exchange, m.routing_key, command.body or b"",
                              command.properties, mandatory=m.mandatory, immediate=m.immediate,
                              encoded_properties=command.raw_properties)

    def _handle_basic_get(self, channel: ModelChannel, command: Command) -> None:
        m: BasicGet = command.method  # type: ignore[assignment]
        got = channel.basic_get(m.queue, no_ack=m.no_ack)
        if got is None:
            self._send_method(command.channel, BasicGetEmpty())
            return
        self._send_content(command.channel, BasicGetOk(
            delivery_tag=got.delivery_tag, redelivered=got.redelivered, exchange=got.exchange,
            routing_key=got.routing_key, message_count=got.message_count), got.message)

    def _handle_basic_ack(self, channel: ModelChannel, command: Command) -> None:
        m: BasicAck = command.method  # type: ignore[assignment]
        channel.basic_ack(m.delivery_tag, m.multiple)

    def _handle_basic_nack(self, channel: ModelChannel, command: Command) -> None:
        m: BasicNack = command.method  # type: ignore[assignment]
        channel.basic_nack(m.delivery_tag, m.multiple, m.requeue)

    def _handle_basic_reject(self, channel: ModelChannel, command: Command) -> None:
        m: BasicReject = command.method  # type: ignore[assignment]
        channel.basic_reject(m.delivery_tag, m.requeue)

    def _handle_basic_recover_async(self, channel: ModelChannel, command: Command) -> None:
        m: BasicRecoverAsync = command.method  # type: ignore[assignment]
        channel.basic_recover(m.requeue)

    def _handle_basic_recover(self, channel: ModelChannel, command: Command) -> None:
        m: BasicRecover = command.method  # type: ignore[assignment]
        channel.basic_recover(m.requeue)
        self._send_method(command.channel, BasicRecoverOk())

    def _handle_confirm_select(self, channel: ModelChannel, command: Command) -> None:
        m: ConfirmSelect = command.method  # type: ignore[assignment]
        channel.confirm_select()
        if not m.no_wait:
            self._send_method(command.channel, ConfirmSelectOk())

    def _handle_tx_select(self, channel: ModelChannel, command: Command) -> None:
        channel.tx_select()
        self._send_method(command.channel, TxSelectOk())

    def _handle_tx_commit(self, channel: ModelChannel, command: Command) -> None:
        channel.tx_commit()
        self._send_method(command.channel, TxCommitOk())

    def _handle_tx_rollback(self, channel: ModelChannel, command: Command) -> None:
        channel.tx_rollback()
        self._send_method(command.channel, TxRollbackOk())


_Handler = Callable[[ServerConnection, "ModelChannel", Command], None]

#: The channel methods a client may send, each with its handler. A method that is not here
#: (a server-to-client method such as basic.deliver) is a 503 COMMAND_INVALID.
_HANDLERS: Final[dict[type[Method], _Handler]] = {
    ChannelClose: ServerConnection._handle_channel_close,
    ChannelCloseOk: ServerConnection._handle_channel_close_ok,
    ChannelOpen: ServerConnection._handle_channel_open,
    ChannelFlow: ServerConnection._handle_channel_flow,
    ChannelFlowOk: ServerConnection._handle_channel_flow_ok,
    ExchangeDeclare: ServerConnection._handle_exchange_declare,
    ExchangeDelete: ServerConnection._handle_exchange_delete,
    ExchangeBind: ServerConnection._handle_exchange_bind,
    ExchangeUnbind: ServerConnection._handle_exchange_unbind,
    QueueDeclare: ServerConnection._handle_queue_declare,
    QueueBind: ServerConnection._handle_queue_bind,
    QueueUnbind: ServerConnection._handle_queue_unbind,
    QueuePurge: ServerConnection._handle_queue_purge,
    QueueDelete: ServerConnection._handle_queue_delete,
    BasicQos: ServerConnection._handle_basic_qos,
    BasicConsume: ServerConnection._handle_basic_consume,
    BasicCancel: ServerConnection._handle_basic_cancel,
    BasicPublish: ServerConnection._handle_basic_publish,
    BasicGet: ServerConnection._handle_basic_get,
    BasicAck: ServerConnection._handle_basic_ack,
    BasicNack: ServerConnection._handle_basic_nack,
    BasicReject: ServerConnection._handle_basic_reject,
    BasicRecoverAsync: ServerConnection._handle_basic_recover_async,
    BasicRecover: ServerConnection._handle_basic_recover,
    ConfirmSelect: ServerConnection._handle_confirm_select,
    TxSelect: ServerConnection._handle_tx_select,
    TxCommit: ServerConnection._handle_tx_commit,
    TxRollback: ServerConnection._handle_tx_rollback,
}
