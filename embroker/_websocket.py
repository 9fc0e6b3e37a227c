"""WebSocket as a carrier: any sans-IO protocol connection served at ``/ws`` on a port of its
own, as RabbitMQ's Web-STOMP and Web-MQTT plugins serve STOMP and MQTT.

Theory of operation
-------------------
WebSocket is not a protocol of the broker's: it carries one. A :class:`WebSocketCarrier` is a
:class:`~embroker._transport.SansIOConnection` (what the listener and the in-memory links ask
of a connection) around an *inner* one, made by a factory once the opening handshake
succeeded. The inner connection sees a byte stream, exactly as it would over TCP; the carrier
turns the client's messages into that stream and the inner connection's output into messages.
It knows nothing of the protocol it carries and imports no protocol package.

RabbitMQ 3.10.8 serves Web-STOMP and Web-MQTT with cowboy 2.8 (``rabbit_web_stomp_listener``,
``rabbit_web_stomp_handler``, ``rabbit_web_mqtt_app``, ``rabbit_web_mqtt_handler`` over
``cowboy_websocket``); the carrier follows them:

1. **The request.** The request head is read with h11 and bounded (:data:`MAX_HEAD` bytes,
   complete or not: more is answered 431 before the rest is read, as the stream port bounds
   what precedes its open). Then, in cowboy's order: a path other than the configured one
   (``/ws``, the plugins' ``ws_path``; the query string aside) is answered 404 (the router); a
   request that is no upgrade (not a ``GET`` with ``Connection: upgrade`` and ``Upgrade:
   websocket``) 426 with those two headers over HTTP/1.1, 400 over HTTP/1.0; an upgrade with no
   ``Sec-WebSocket-Key``, a version other than 13 or a body, 400 (cowboy 2.8 also takes the
   drafts' versions 7 and 8; wsproto does not). Every refusal closes the connection. wsproto
   (``ConnectionType.SERVER``) then takes the request over and answers 101.
2. **The subprotocol.** The first of the kind's subprotocols, in its order of preference, that
   the client offered is chosen and named in the 101 (Web-STOMP's ``filter_stomp_protocols``
   keeps ``v10.stomp``, ``v11.stomp``, ``v12.stomp`` and prefers the highest). A client that
   offers none, or none the kind knows, is still served, with no ``Sec-WebSocket-Protocol`` in
   the answer, as both plugins do. (Web-MQTT 3.10.8 echoes whatever header the client sent,
   unchecked; embroker names one of the offered ones, as RFC 6455 §4.2.2 asks.) The factory
   is told which one was chosen (``None``: none).
3. **Messages.** A client's message, binary or text (text as its UTF-8 bytes), fragmented or
   not, is given to the inner connection whole once its last frame is in; a message over
   ``max_message`` bytes is refused with close 1009 as soon as it passes the bound, and the
   inner connection sees none of it (cowboy's ``max_frame_size``, whose default is no bound;
   embroker's is RabbitMQ's ``max_message_size``, 128 MiB). What the inner connection writes
   goes out as one message per :meth:`~WebSocketCarrier.data_to_send`: binary frames by
   default, text frames when the kind says so (Web-STOMP's ``ws_frame``, ``text`` by default;
   Web-MQTT sends binary). A text frame must hold UTF-8 (RFC 6455 §8.1): bytes that are not go
   out in a binary frame, and a character split between two writes is held for the next.
   Pings are answered with pongs; pongs are ignored. No extension is negotiated: RabbitMQ's
   cowboy offers permessage-deflate, whose inflation no bound would cost-check beforehand;
   every client takes an answer without it.
4. **Closing.** When the inner connection closes, its last bytes are sent, then a close frame
   1000 with the kind's reason (``"STOMP died"``, ``"MQTT died"``); a client's close frame is
   answered with its own code and the inner connection is told its peer left; a frame that
   breaks RFC 6455 (unmasked, a bad opcode, a fragmented control frame...) is answered 1002,
   text that is no UTF-8 1007 (cowboy's ``badframe`` and ``badencoding``); a bug while serving
   it (:meth:`~WebSocketCarrier.internal_error`) 1011 after the inner connection's own error.
   The carrier closes the transport once its close frame is written, as cowboy does.
5. **Time.** ``tick`` reads the clock passed in: the request must be in within the port's
   ``handshake_timeout`` (a client that sent nothing is closed without an answer, one that
   sent part of a request is answered 408); after the handshake, a connection that sends
   nothing for ``idle_timeout`` seconds (cowboy's websocket ``idle_timeout``, 60000 ms) is
   closed with 1000; the inner connection's own timers run on every tick.
6. **Bounds.** The request head (:data:`MAX_HEAD`), one message (``max_message``), the
   carrier's own frames not yet taken (pongs, :data:`MAX_PENDING_CONTROL`: more and it reads no
   more); the inner connection's output is taken only when the transport asks for bytes, so
   what waits unsent is bounded as the inner connection bounds it (``blocked``). Nothing a
   client sends raises out of :meth:`~WebSocketCarrier.receive_data`.

wsproto (and h11) are imported only when a carrier is made: a broker that serves no WebSocket
port never imports them.
"""

from __future__ import annotations

import codecs
import dataclasses
import enum
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, Final, Literal, ParamSpec, final

if TYPE_CHECKING:
    import h11
    import wsproto

    from ._transport import Accepted, PortKind, SansIOConnection
    from .errors import ConnectionException, InternalError

__all__ = ["IDLE_TIMEOUT", "MAX_HEAD", "MAX_MESSAGE", "MAX_PENDING_CONTROL", "WEB_MQTT",
           "WEB_STOMP", "CloseCode", "WebSocketCarrier", "WebSocketOptions", "over_websocket",
           "websocket_port_kind"]

#: The largest request head (request line and headers) read before the handshake, in bytes,
#: complete or not: more is answered 431 before the rest is read.
MAX_HEAD: Final = 8192
#: The largest message a client may send by default, in bytes (RabbitMQ's ``max_message_size``
#: default, ``rabbit`` 3.10.8: 134217728).
MAX_MESSAGE: Final = 128 * 1024 * 1024
#: Seconds without a byte from the client before the carrier closes (cowboy 2.8's websocket
#: ``idle_timeout`` default, 60000 ms; the plugins' ``ws_opts.idle_timeout``).
IDLE_TIMEOUT: Final = 60.0
#: Bytes of the carrier's own frames (pongs) that may wait for the transport before the carrier
#: reads no more from the client (``blocked``).
MAX_PENDING_CONTROL: Final = 65_536

_STATUS_REASONS: Final = {400: b"Bad Request", 404: b"Not Found", 408: b"Request Timeout",
                          426: b"Upgrade Required", 431: b"Request Header Fields Too Large",
                          500: b"Internal Server Error"}


class CloseCode(enum.IntEnum):
    """The close codes the carrier sends (RFC 6455 §7.4.1)."""

    #: The purpose of the connection is fulfilled: the inner connection closed, or the client
    #: was idle too long (cowboy's ``stop`` and ``timeout``).
    NORMAL = 1000
    #: The peer broke the WebSocket protocol (cowboy's ``badframe``).
    PROTOCOL_ERROR = 1002
    #: A text message whose bytes are no UTF-8 (cowboy's ``badencoding``).
    INVALID_PAYLOAD = 1007
    #: A message too big to process (cowboy's ``badsize``).
    MESSAGE_TOO_BIG = 1009
    #: The server met a condition it did not expect (cowboy's ``crash``).
    INTERNAL_ERROR = 1011


@final
@dataclass(frozen=True, slots=True)
class WebSocketOptions:
    """How a kind of port is served over WebSocket.

    Attributes:
        path: the one path served (the plugins' ``ws_path``, ``/ws``); others are 404.
        subprotocols: the subprotocols the kind speaks, most preferred first.
        frame: ``"binary"`` or ``"text"``: the frames the inner connection's output goes out
            in (Web-STOMP's ``ws_frame``, ``text`` by default; Web-MQTT's ``binary``).
        max_message: the largest message a client may send, in bytes (close 1009 beyond).
        idle_timeout: seconds without a byte from the client before close 1000 (``None``:
            never).
        close_reason: the reason in the close frame sent when the inner connection closes
            (Web-STOMP: ``"STOMP died"``).
        max_head: the largest request head, in bytes (431 beyond).
    """

    path: str = "/ws"
    subprotocols: tuple[str, ...] = ()
    frame: Literal["binary", "text"] = "binary"
    max_message: int = MAX_MESSAGE
    idle_timeout: float | None = IDLE_TIMEOUT
    close_reason: str = ""
    max_head: int = MAX_HEAD

    def __post_init__(self) -> None:
        if not self.path.startswith("/"):
            raise ValueError(f"a WebSocket path starts with '/': {self.path!r}")
        if self.frame not in ("binary", "text"):
            raise ValueError(f"frame is 'binary' or 'text', not {self.frame!r}")
        if self.max_message < 1 or self.max_head < 64:
            raise ValueError("max_message must be positive and max_head at least 64 bytes")

    def choose(self, offered: list[str]) -> str | None:
        """The subprotocol to answer a client that offered ``offered`` (``None``: none)."""
        return next((name for name in self.subprotocols if name in offered), None)


#: Web-STOMP's (``rabbit_web_stomp_handler``, v3.10.8): the STOMP versions IANA registers,
#: the highest preferred, text frames.
WEB_STOMP: Final = WebSocketOptions(subprotocols=("v12.stomp", "v11.stomp", "v10.stomp"),
                                    frame="text", close_reason="STOMP died")
#: Web-MQTT's (``rabbit_web_mqtt_handler``, v3.10.8): ``mqtt`` (MQTT 3.1.1) and ``mqttv3.1``,
#: binary frames.
WEB_MQTT: Final = WebSocketOptions(subprotocols=("mqtt", "mqttv3.1"), frame="binary",
                                   close_reason="MQTT died")


def _tokens(request: h11.Request, name: bytes) -> set[bytes]:
    """The comma-separated tokens of every ``name`` header, in lower case."""
    return {token.strip().lower() for header, value in request.headers if header == name
            for token in value.split(b",")}


@final
class WebSocketCarrier:
    """The server side of one WebSocket connection carrying an inner sans-IO connection.

    Args:
        make_inner: makes the inner connection once the handshake succeeded, given the
            subprotocol chosen (``None``: none).
        options: the path, subprotocols, frame type and bounds (:class:`WebSocketOptions`).
        handshake_timeout: seconds for the request (the port's ``handshake_timeout``).
        clock: where ``tick`` reads the time (``time.monotonic``; a test's own).

    Attributes:
        inner: the inner connection, once the handshake succeeded (``None`` before).
        subprotocol: the subprotocol chosen (``None``: none, or no handshake yet).
        close_code: the close code sent, once one was (``None``: none yet, or none at all: a
            refused request, a transport that ended).
    """

    __slots__ = ("_clock", "_closing", "_deadline", "_failed", "_h11", "_held", "_inner_ended",
                 "_last_input", "_make_inner", "_message", "_options", "_out", "_out_size",
                 "_received", "_ws", "close_code", "inner", "subprotocol")

    #: Its bytes are never the inner connection's as they are: the listener always asks the
    #: carrier (:class:`embroker._transport.CarryingConnection`).
    passthrough = False

    def __init__(self, make_inner: Callable[[str | None], SansIOConnection],
                 options: WebSocketOptions | None = None, *, handshake_timeout: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        import h11
        self._options = options if options is not None else WebSocketOptions()
        self._make_inner = make_inner
        self._clock = clock
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=self._options.max_head)
        self._ws: wsproto.WSConnection | None = None
        self.inner: SansIOConnection | None = None
        self.subprotocol: str | None = None
        self.close_code: int | None = None
        self._out: list[bytes] = []
        self._out_size = 0
        self._message = bytearray()
        self._held = b""  # the start of a character split between two writes (text frames)
        self._closing = False  # the last bytes are queued: nothing more is read or taken
        self._failed = False  # internal_error: the close code is 1011
        self._inner_ended = False  # the inner connection was told its peer left
        self._received = False
        now = clock()
        self._deadline = now + handshake_timeout
        self._last_input = now

    # -- SansIOConnection --------------------------------------------------------------------

    def receive_data(self, data: bytes) -> None:
        """Take bytes the client sent (``b""``: it closed its side). Never raises for anything
        the client sends."""
        if self._closing:
            return
        if not data:
            self._end_inner()
            self._closing = True
            return
        self._received = True
        self._last_input = self._clock()
        if self._ws is None:
            self._read_request(data)
        else:
            self._read_frames(data)

    def data_to_send(self) -> bytes:
        """The bytes to write now: the handshake's answer, the inner connection's output as
        messages, pongs, the close frame."""
        inner = self.inner
        if inner is not None and not self._closing:
            data = inner.data_to_send()
            if data:
                self._send_message(data)
            if inner.should_close:
                self._close(CloseCode.INTERNAL_ERROR if self._failed else CloseCode.NORMAL,
                            self._options.close_reason, inner_ended=True)
        if not self._out:
            return b""
        data = self._out[0] if len(self._out) == 1 else b"".join(self._out)
        self._out.clear()
        self._out_size = 0
        return data

    @property
    def has_output(self) -> bool:
        """There are bytes to write, or the connection should close."""
        return bool(self._out) or self._closing or (
            self.inner is not None and self.inner.has_output)

    @property
    def blocked(self) -> bool:
        """The carrier reads no more for now: the inner connection is blocked, or too many of
        the carrier's own frames wait."""
        if self._out_size > MAX_PENDING_CONTROL:
            return True
        inner = self.inner
        return inner is not None and not self._closing and inner.blocked

    @property
    def should_close(self) -> bool:
        """Close the transport once what is to send is written."""
        return self._closing

    @property
    def failure(self) -> BaseException | None:
        """The inner connection's (an error met while another connection's work wrote to it)."""
        return self.inner.failure if self.inner is not None else None

    @failure.setter
    def failure(self, value: BaseException | None) -> None:
        inner: Any = self.inner  # (the protocol's failure is the transport's to clear)
        if inner is not None:
            inner.failure = value

    def tick(self) -> float | None:
        """The handshake's and the idle timeouts, and the inner connection's timers (when the
        inner connection wants its next tick)."""
        if self._closing:
            return None
        now = self._clock()
        if self.inner is None:
            if now >= self._deadline:
                if self._received:
                    self._refuse(408)
                else:
                    self._closing = True
            return None
        wanted = self.inner.tick()
        idle = self._options.idle_timeout
        if idle is not None and now - self._last_input >= idle and not self._closing:
            self._close(CloseCode.NORMAL, self._options.close_reason)
        return wanted

    def internal_error(self, error: InternalError) -> None:
        """A bug while serving it: the inner connection's own internal error, then close 1011
        (a bug before the handshake: 500)."""
        if self._closing:
            return
        if self.inner is None:
            self._refuse(500)
            return
        self._failed = True
        self.inner.internal_error(error)
        if not self.inner.has_output:
            self._close(CloseCode.INTERNAL_ERROR, "")

    # -- what the transport tells a broker connection, passed on ------------------------------

    def close(self, error: ConnectionException) -> None:
        """Close the inner connection with ``error`` (its own close, in a message), then the
        WebSocket; before the handshake there is nothing to close but the socket."""
        if self.inner is None:
            self._closing = True
            return
        _carried(self.inner).close(error)

    def publishers_blocked(self, reason: str) -> None:
        if self.inner is not None:
            _carried(self.inner).publishers_blocked(reason)

    def publishers_unblocked(self) -> None:
        if self.inner is not None:
            _carried(self.inner).publishers_unblocked()

    def connection_lost(self) -> None:
        """The transport ended: the inner connection is told its peer left (once)."""
        self._end_inner()
        self._closing = True

    # -- the handshake -----------------------------------------------------------------------

    def _read_request(self, data: bytes) -> None:
        import h11
        conn = self._h11
        try:
            conn.receive_data(data)
            event = conn.next_event()
        except h11.RemoteProtocolError as error:
            hint = error.error_status_hint
            self._refuse(hint if hint in _STATUS_REASONS else 400)
            return
        if event is h11.NEED_DATA:
            return
        if not isinstance(event, h11.Request):  # (nothing else comes first from a client)
            self._refuse(400)
            return
        options = self._options
        if event.target.partition(b"?")[0] != options.path.encode():
            self._refuse(404)
            return
        upgrade = event.method == b"GET" and b"upgrade" in _tokens(event, b"connection") and \
            b"websocket" in _tokens(event, b"upgrade")
        if not upgrade or event.http_version != b"1.1":
            if event.http_version == b"1.1":
                self._refuse(426, [(b"connection", b"upgrade"), (b"upgrade", b"websocket")])
            else:
                self._refuse(400)
            return
        names = {name for name, _ in event.headers}
        keyed = b"sec-websocket-key" in names and \
            _tokens(event, b"sec-websocket-version") == {b"13"}
        bodiless = b"transfer-encoding" not in names and \
            _tokens(event, b"content-length") in (set(), {b"0"})
        if not (keyed and bodiless):
            self._refuse(400, [(b"sec-websocket-version", b"13")])
            return
        self._accept(event)

    def _accept(self, request: h11.Request) -> None:
        import h11
        from wsproto import ConnectionType, WSConnection
        from wsproto.events import AcceptConnection, Request
        from wsproto.utilities import ProtocolError

        ws = WSConnection(ConnectionType.SERVER)
        try:
            ws.initiate_upgrade_connection(list(request.headers), request.target)
            offered = next(event for event in ws.events() if isinstance(event, Request))
        except (ProtocolError, h11.ProtocolError, UnicodeError, ValueError, StopIteration):
            self._refuse(400)  # (wsproto refused the request: a Host that is no name...)
            return
        chosen = self._options.choose(list(offered.subprotocols))
        self._queue(ws.send(AcceptConnection(subprotocol=chosen)))
        self._ws = ws
        self.subprotocol = chosen
        self.inner = self._make_inner(chosen)
        rest, _ = self._h11.trailing_data  # frames the client sent at once after its request
        if rest:
            self._read_frames(rest)

    def _refuse(self, status: int, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        """Answer the request ``status`` with no body, and close."""
        import h11
        conn = self._h11
        if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            response = h11.Response(status_code=status, reason=_STATUS_REASONS.get(status, b""),
                                    headers=[*(headers or []), (b"content-length", b"0"),
                                             (b"connection", b"close")])
            self._queue((conn.send(response) or b"") + (conn.send(h11.EndOfMessage()) or b""))
        self._closing = True

    # -- messages ----------------------------------------------------------------------------

    def _read_frames(self, data: bytes) -> None:
        from wsproto.connection import ConnectionState
        from wsproto.events import CloseConnection, Message, Ping

        ws = self._ws
        assert ws is not None
        assert self.inner is not None
        ws.receive_data(data)
        limit = self._options.max_message
        for event in ws.events():
            if self._closing:
                break
            if isinstance(event, Message):
                payload: Any = event.data
                piece = payload.encode() if isinstance(payload, str) else payload
                if len(self._message) + len(piece) > limit:
                    self._message.clear()
                    self._close(CloseCode.MESSAGE_TOO_BIG, "")
                    break
                self._message += piece
                if event.message_finished and self._message:
                    message = bytes(self._message)
                    self._message.clear()
                    self.inner.receive_data(message)
            elif isinstance(event, Ping):
                self._queue(ws.send(event.response()))
            elif isinstance(event, CloseConnection):
                if ws.state is ConnectionState.REMOTE_CLOSING:  # the client's close frame
                    self.close_code = event.code
                    self._queue(ws.send(event.response()))
                    self._end_inner()
                    self._closing = True
                else:  # wsproto failed the client's frames (1002, 1007)
                    self._close(event.code, "")
                break

    def _send_message(self, data: bytes) -> None:
        from wsproto.events import BytesMessage, TextMessage

        ws = self._ws
        assert ws is not None
        if self._options.frame == "text":
            data, self._held = self._held + data, b""
            decoder = codecs.getincrementaldecoder("utf-8")()
            try:
                text = decoder.decode(data)
            except UnicodeDecodeError:  # no UTF-8: a text frame could not carry it
                self._queue(ws.send(BytesMessage(data=data)))
                return
            self._held = decoder.getstate()[0]
            if text:
                self._queue(ws.send(TextMessage(data=text)))
            return
        self._queue(ws.send(BytesMessage(data=data)))

    def _close(self, code: int, reason: str, *, inner_ended: bool = False) -> None:
        """Send a close frame ``code`` (after what the inner connection wrote) and close; the
        inner connection is told its peer left unless it ended itself."""
        from wsproto.events import BytesMessage, CloseConnection

        ws = self._ws
        assert ws is not None
        if self._held:
            self._queue(ws.send(BytesMessage(data=self._held)))
            self._held = b""
        self._queue(ws.send(CloseConnection(code=code, reason=reason or None)))
        self.close_code = code
        if not inner_ended:
            self._end_inner()
        self._inner_ended = True
        self._closing = True

    def _end_inner(self) -> None:
        if self.inner is not None and not self._inner_ended:
            self._inner_ended = True
            self.inner.receive_data(b"")

    def _queue(self, data: bytes) -> None:
        if data:
            self._out.append(data)
            self._out_size += len(data)


P = ParamSpec("P")


def _carried(inner: SansIOConnection) -> Any:
    return inner  # (a broker connection, or another carrier: what the transport tells it)


def websocket_port_kind(kind: PortKind, name: str, options: WebSocketOptions, *,
                        protocol: str | None = None, tls_protocol: str | None = None,
                        plugin: str | None = None) -> PortKind:
    """``kind``'s connections served over WebSocket at ``options.path``, on a port of their own:
    RabbitMQ's Web-STOMP and Web-MQTT (``rabbitmq_web_stomp``: listener ``http/web-stomp``,
    ``https/web-stomp`` over TLS). Register the result (:func:`~embroker._transport.register_port_kind`)
    and serve it as any kind (``Server(listeners={name: port})``, ``open_listener(name, port)``).

    The inner connection is made once the handshake succeeded, by ``kind``'s factory, which
    finds the subprotocol chosen in ``Accepted.subprotocol``; a stranger reaches the port
    before any login (it counts in the stranger budget, as the HTTP ports), and its
    ``max_connections`` key is ``name``.
    """
    inner_factory = kind.factory
    if inner_factory is None:
        raise ValueError(f"port kind {kind.name!r} has no connection factory to carry")

    def factory(accepted: Accepted) -> WebSocketCarrier:
        def make_inner(subprotocol: str | None) -> SansIOConnection:
            return inner_factory(dataclasses.replace(accepted, subprotocol=subprotocol))
        return WebSocketCarrier(make_inner, options,
                                handshake_timeout=accepted.policy.handshake_timeout,
                                clock=accepted.broker.clock.monotonic)

    return dataclasses.replace(kind, name=name, factory=factory, protocol=protocol,
                               tls_protocol=tls_protocol, plugin=plugin, limit=name,
                               stranger=True, on_demand=True)


def over_websocket(factory: Callable[Concatenate[str | None, P], SansIOConnection],
                   options: WebSocketOptions | None = None, *, handshake_timeout: float = 10.0,
                   clock: Callable[[], float] = time.monotonic) -> Callable[P, WebSocketCarrier]:
    """A connection factory that serves ``factory``'s connections over WebSocket.

    The factory returned takes the arguments ``factory`` takes after its first (the peer, the
    port's TLS session...) and returns a :class:`WebSocketCarrier`; once the client's handshake
    succeeded, the carrier calls ``factory`` with the subprotocol chosen (``None``: none) and
    those arguments. A factory that has no use for the subprotocol is passed as
    ``lambda subprotocol, *args: make(*args)``.

    Args:
        factory: makes the inner connection.
        options: path, subprotocols, frame type and bounds (:class:`WebSocketOptions`).
        handshake_timeout: seconds for the request (the port policy's ``handshake_timeout``).
        clock: where the carriers read the time.
    """
    def make(*args: P.args, **kwargs: P.kwargs) -> WebSocketCarrier:
        def make_inner(subprotocol: str | None) -> SansIOConnection:
            return factory(subprotocol, *args, **kwargs)
        return WebSocketCarrier(make_inner, options, handshake_timeout=handshake_timeout,
                                clock=clock)
    return make
