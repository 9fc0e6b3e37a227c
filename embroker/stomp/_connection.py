"""A STOMP connection: bytes in, :class:`embroker.model.Channel` operations, bytes out.

Theory of operation
-------------------
RabbitMQ 3.10.8's STOMP plugin is an adapter: its reader (``rabbit_stomp_reader``) parses
frames, and its processor (``rabbit_stomp_processor``) turns each one into calls on one
``rabbit_channel`` of a direct connection, with ``rabbit_routing_util`` for destinations. So is
this one: :class:`StompConnection` reads frames (:mod:`._frame`), logs in through the adapter
kit (:func:`embroker.kit.direct_connect`: the plugin's direct connection, in its order),
and maps each command to the model (:data:`COMMANDS`):

=============  ==================================================================================
command        what it is in the model
=============  ==================================================================================
CONNECT/STOMP  ``direct_connect`` (virtual host, login, access, loopback), channel 1
SEND           the kit's ``ensure_endpoint`` (``dest``), ``basic_publish`` (in a transaction:
               held by it); a ``receipt`` is sent once the publish is confirmed
SUBSCRIBE      the topic permission ``read`` (``/topic``), ``ensure_endpoint`` (``source``),
               ``basic_qos``, ``basic_consume``, ``ensure_binding``
UNSUBSCRIBE    ``basic_cancel`` (and a durable topic subscription's ``queue_delete``)
ACK/NACK       ``basic_ack``/``basic_nack`` (in a transaction: held by it)
BEGIN          a model :class:`~embroker.model.Transaction`, by the client's name
COMMIT/ABORT   its ``commit``/``rollback``
DISCONNECT     the model connection closed
=============  ==================================================================================

What the model refuses closes the connection after an ERROR frame naming RabbitMQ's error
(``not_found``, ``access_refused``...) with its reply text, as the plugin does when its channel
dies (``amqp_death/3``); what the plugin refuses itself (a missing header, a bad destination)
is an ERROR frame with its words, and the connection goes on. No permission, destination,
login or transaction rule is decided here: each is the model's or the kit's.

Differences from RabbitMQ 3.10.8, each pinned by a test: a frame that cannot be parsed is
answered with an ERROR frame before the connection closes (the plugin closes without one), and
frames are bounded (:mod:`._frame`; the plugin buffers any frame whole).
"""

from __future__ import annotations

import base64
import enum
import logging
import os
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, Final

from .._erlang import pair
from .._untrusted import log_text
from ..errors import AMQPError, ConnectionForced
from ..kit import (
    Client,
    DirectRefused,
    Endpoints,
    certificate_name,
    coalesce,
    direct_connect,
)
from ..model import Cancelled, Confirmed, ConnectionKind, Delivered
from ._commands import (
    COMMANDS,
    INTERNAL_TAG,
    QUEUE_TAG,
    Commands,
    Crash,
    Refused,
    Stop,
    Subscription,
    Txn,
    erlang_p,
)
from ._frame import MAX_HEAD, Frame, FrameError, FrameReader, encode_frame
from ._mapping import (
    delivery_headers,
    destination_of,
    message_id,
)
from ._settings import StompSettings

if TYPE_CHECKING:
    from .._transport import Accepted
    from ..model import Broker, Channel, Node
    from ..model import Connection as ModelConnection
    from ..model._events import ChannelEvent

__all__ = ["COMMANDS", "StompConnection", "StompState", "stomp_kind"]

log = logging.getLogger("embroker.stomp")

#: The versions the plugin speaks (``?SUPPORTED_VERSIONS``), lowest first.
VERSIONS: Final = ("1.0", "1.1", "1.2")
#: The most bytes a frame may take before the client has logged in.
LOGIN_FRAME_MAX: Final = 64 * 1024
#: The server header of CONNECTED (``rabbit``'s description and version).
SERVER: Final = "RabbitMQ/3.10.8"


class StompState(enum.Enum):
    """Where a STOMP connection is."""

    #: Accepted: waiting for CONNECT.
    CONNECTING = "connecting"
    #: Logged in.
    CONNECTED = "connected"
    #: Closed (by either side).
    CLOSED = "closed"


@cache
def stomp_kind(version: str, web: bool = False) -> ConnectionKind:
    """The model's kind of a STOMP connection of ``version`` (over WebSocket with ``web``):
    listed as ``STOMP 1.2`` (``Web STOMP 1.2``), as RabbitMQ lists its ``{'STOMP', "1.2"}``;
    held by alarms when it publishes, counted against ``max-connections``."""
    name = "Web STOMP" if web else "STOMP"
    return ConnectionKind(name, f"{name} {version}", f"{{'{name}',\"{version}\"}}",
                          direct=True, listing="stomp_connections")


class StompConnection(Commands):
    """One STOMP connection (a :class:`embroker._transport.BrokerConnection`).

    Args:
        broker: the model broker.
        settings: the plugin's settings.
        peer, local: the client's address and the one it reached (``host:port``).
        loopback: whether it came over a loopback interface.
        tls: its TLS session on a TLS port (``ssl_cert_login``).
        on_output: called (under the broker's lock) when output is ready that its own input
            did not cause (a delivery).
        web: it is carried by a WebSocket (Web-STOMP: no implicit connect, listed as
            ``Web STOMP``).
    """

    # -- what the listener asks of a broker connection -----------------------------------------
    stops_silently = False
    held_by_alarm = False

    def __init__(self, broker: Broker, *, settings: StompSettings | None = None,
                 peer: str = "", local: str = "", loopback: bool = True, tls: Any = None,
                 on_output: Callable[[], None] | None = None, web: bool = False,
                 node: Node | None = None) -> None:
        self.broker = broker
        #: The node its client reached (``None``: the first): its model connection's.
        self.node = node
        self.settings = settings if settings is not None else StompSettings()
        self.peer, self.local, self.loopback, self.tls, self.web = peer, local, loopback, tls, web
        self._on_output = on_output
        self.state = StompState.CONNECTING
        self.version: str | None = None
        self.user: str | None = None
        self.model: ModelConnection | None = None
        self.channel: Channel | None = None
        self.session = ""
        self.client_properties: dict[str, Any] = {"product": "STOMP client"}
        self.failure: BaseException | None = None
        self.should_close = False
        self._reader = FrameReader(LOGIN_FRAME_MAX)
        self._out: list[bytes] = []
        self._subscriptions: dict[str, Subscription] = {}
        self._transactions: dict[str, Txn] = {}
        self._after_receipt: AMQPError | None = None  # (a COMMIT's: see _on_commit)
        self._declared: set[str] = set()  # the /queue/Q declared (rabbit_routing_util's state)
        self._reply_queues: dict[str, str] = {}
        self._receipts: dict[int, str] = {}  # publish sequence number -> receipt id
        self._confirms: list[tuple[int, bool]] = []  # confirms of the read being handled
        self._handling = False  # a frame is being handled: its deliveries wait (_deferred)
        self._deferred: list[bytes] = []
        self._committed: list[str] = []  # receipts of the publishes a COMMIT routed
        self._alarm = False  # publishers are blocked
        self._held = False  # ...and it published since: not read until they are unblocked
        self._send_interval = 0.0
        self._receive_timeout = 0.0
        now = broker.clock.monotonic()
        self._login_deadline = now + self.settings.login_timeout
        self._last_sent = self._last_received = now

    @classmethod
    def serving(cls, accepted: Accepted) -> StompConnection:
        """The connection serving a socket a ``stomp`` (or ``web_stomp``) port accepted."""
        settings = getattr(accepted.listener, "port_settings", {}).get("stomp")
        return cls(accepted.broker, settings=settings, peer=accepted.peer,
                   local=accepted.local_address, loopback=accepted.loopback, tls=accepted.tls,
                   on_output=accepted.on_output, web=accepted.policy.kind == "web_stomp",
                   node=accepted.node)

    # -- BrokerConnection ----------------------------------------------------------------------

    @property
    def kind(self) -> ConnectionKind:
        return stomp_kind(self.version or "1.0", self.web)

    @property
    def channel_numbers(self) -> tuple[int, ...]:
        return (1,) if self.channel is not None else ()

    @property
    def has_output(self) -> bool:
        return bool(self._out) or self.should_close

    @property
    def blocked(self) -> bool:
        """Not read: it published while a resource alarm blocks publishers (the plugin's
        ``blocked`` state, until the alarm clears)."""
        return self._held

    def data_to_send(self) -> bytes:
        data = b"".join(self._out)
        self._out.clear()
        return data

    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the client (``b""``: it closed the socket)."""
        if not data:
            self.connection_lost()
            return
        if self.state is StompState.CLOSED or self.should_close:
            return
        self._last_received = self.broker.clock.monotonic()
        self._reader.feed(data)
        try:
            while not self.should_close:
                try:
                    frame = self._reader.next()
                except FrameError as error:
                    self._frame_error(error)
                    break
                if frame is None:
                    break
                self._handle(frame)
                if frame.command == "SEND" and self._alarm:
                    self._held = True  # (rabbit_stomp_reader:maybe_block/2)
        finally:
            self._flush_receipts()

    def tick(self) -> None:
        """Heart-beats on the broker's clock, and the login timeout."""
        if self.state is StompState.CLOSED or self.should_close:
            return
        now = self.broker.clock.monotonic()
        if self.state is StompState.CONNECTING:
            if now >= self._login_deadline:  # (the reader stops: no frame)
                self._finish()
            return
        if self._receive_timeout and not self._held and \
                now - self._last_received >= 2 * self._receive_timeout:
            log.warning("STOMP detected missed client heartbeat(s) on connection %s, "
                        "closing it", log_text(self.peer))
            self._finish()
            return
        if self._send_interval and now - self._last_sent >= self._send_interval:
            self._write(b"\n")

    def internal_error(self, error: AMQPError) -> None:
        self._die(error)

    def close(self, error: AMQPError) -> None:
        """The broker closes it (``rabbitmqctl close_connection``, the management API, a
        fault): the plugin's channel dies of its connection's closing, and its
        ``handle_exit/3`` says so in an ERROR (``AMQP channel died``, the exit reason as
        Erlang prints it; checked live against RabbitMQ 3.10.8), then the end."""
        if self.state is StompState.CLOSED or self.should_close:
            return
        if self.channel is None:  # (not logged in: no channel to die, the reader just stops)
            self._finish()
            self._notify()
            return
        closing = pair("connection_closing", pair(
            "server_initiated_close", f"{error.reply_code},{erlang_p(error.text)}", 32), 12)
        self._error("AMQP channel died", "Reason: " + pair("shutdown", closing, 11), log_it=False)
        self._finish()
        self._notify()

    def publishers_blocked(self, reason: str) -> None:
        self._alarm = True

    def publishers_unblocked(self) -> None:
        self._alarm = self._held = False
        self._notify()

    def on_restart(self) -> None:
        self._die(ConnectionForced("broker forced connection closure with reason 'shutdown'"))

    def killed(self, reason: str) -> None:
        log.info("STOMP connection %s ended: %s", log_text(self.peer), log_text(reason))

    def connection_lost(self) -> None:
        """The socket is gone: the model connection closes (its transactions and unacknowledged
        deliveries with it)."""
        self.should_close = True
        self.state = StompState.CLOSED
        for txn in self._transactions.values():
            txn.transaction.rollback()
        self._transactions.clear()
        if self.model is not None:
            self.model.close()
            self.model = None

    # -- output --------------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        self._out.append(data)
        self._last_sent = self.broker.clock.monotonic()

    def _send(self, command: str, headers: list[tuple[str, str]], body: bytes = b"") -> None:
        self._write(encode_frame(command, headers, body, trailing_lf=self.settings.trailing_lf))

    def _notify(self) -> None:
        if self._on_output is not None:
            self._on_output()

    def _error(self, message: str, detail: str, extra: list[tuple[str, str]] | None = None,
               *, log_it: bool = True) -> None:
        # (the processor's error/3 logs what it sends; its send_error/3 does not)
        if log_it:
            log.error("STOMP error frame sent: message %s, detail %s", log_text(message),
                      log_text(detail))
        self._send("ERROR", [("message", message), ("content-type", "text/plain"),
                             ("version", ",".join(VERSIONS)), *(extra or [])],
                   detail.encode("utf-8", "surrogateescape"))

    def _die(self, error: AMQPError) -> None:
        # amqp_death/3: the channel or connection died: ERROR with RabbitMQ's error name and
        # its reply text, then the connection ends.
        if self.state is StompState.CLOSED or self.should_close:
            return
        self._error(error.reply_name.lower(), error.reply_text)
        self._finish()
        self._notify()

    def _finish(self) -> None:
        self.should_close = True
        self.connection_lost()

    def _frame_error(self, error: FrameError) -> None:
        log.error("STOMP detected network error on %s: %s", log_text(self.peer),
                  log_text(str(error)))
        self._error("Invalid frame", f"Could not parse frame: {error}\n")
        self._finish()

    # -- frames --------------------------------------------------------------------------------

    def _handle(self, frame: Frame) -> None:
        if self.version == "1.0":
            frame = frame.trimmed()
        self._handling = True
        try:
            self._command(frame)
        finally:
            self._handling = False
            deferred, self._deferred = self._deferred, []
            if not self.should_close:
                self._out.extend(deferred)

    def _command(self, frame: Frame) -> None:
        # One frame (process_frame/2): its command, then its receipt, then (_handle) the
        # deliveries it caused, which reach the plugin's reader only after it.
        try:
            if frame.command in ("CONNECT", "STOMP"):
                self._connect(frame, implicit=False)
                return
            if self.channel is None:
                if not self.settings.implicit_connect or self.web:
                    raise Refused("Illegal command", "You must log in using CONNECT first")
                if not self._connect(Frame("CONNECT"), implicit=True):
                    self._finish()
                    return
            handler = COMMANDS.get(frame.command)
            if handler is None:
                raise Refused("Bad command", f"Could not interpret command {erlang_p(frame.command)}\n")
            if frame.command in ("SUBSCRIBE", "UNSUBSCRIBE") and frame.header("id") is None \
                    and "true" in (frame.header("durable"), frame.header("persistent")):
                raise Refused("Missing Header",
                              "Header 'id' is required for durable subscriptions")
            handler(self, frame)
        except Refused as refused:
            self._error(refused.message, refused.detail)
            return
        except Crash:
            self._finish()
            return
        except Stop:
            self._receipt(frame)
            self._finish()
            return
        except AMQPError as error:  # (amqp_death/3, then the receipt)
            self._error(error.reply_name.lower(), error.reply_text)
            self._receipt(frame)
            self._finish()
            return
        self._receipt(frame)
        if frame.command == "DISCONNECT":
            self._finish()
        elif self._after_receipt is not None:
            failed, self._after_receipt = self._after_receipt, None
            self._die(failed)

    def _receipt(self, frame: Frame) -> None:
        # ensure_receipt/2 (a SEND's receipt waits for its confirm: _flush_receipts)
        receipt = frame.header("receipt")
        if receipt is not None and frame.command != "SEND":
            self._send("RECEIPT", [("receipt-id", receipt)])

    def _connect(self, frame: Frame, *, implicit: bool) -> bool:
        if self.channel is not None:  # (RabbitMQ's processor has no clause for it: it dies)
            raise Crash
        version = self._negotiate(frame.header("accept-version", "1.0") or "")
        if version is None:
            raise Refused("Version mismatch",
                          f"Supported versions are {','.join(VERSIONS)}\n")
        if version == "1.0":
            frame = frame.trimmed()
        settings = self.settings
        login, passcode = frame.header("login"), frame.header("passcode")
        # creds/3: the frame's login (the default passcode if none), else the certificate's
        # name (ssl_cert_login, over TLS), else the default user.
        certificate = None
        if login is None and settings.ssl_cert_login:
            certificate = certificate_name(self.broker, self.tls)
        if certificate is not None:
            login = certificate
        elif login is None and settings.default_user is not None:
            login, default_passcode = settings.default_user
            passcode = passcode if passcode is not None else default_passcode
        elif passcode is None and settings.default_user is not None:
            passcode = settings.default_user[1]
        if login is None or (passcode is None and certificate is None):
            raise Refused("Bad CONNECT", "Missing login or passcode header(s)")
        vhost = frame.header("host", settings.default_vhost) or ""
        heart_beat = frame.header("heart-beat", "0,0") or ""
        kind = stomp_kind(version, self.web)
        try:
            self.model = direct_connect(
                self.broker, vhost, Client("stomp", peer_host=self._ends.peer_host,
                                           peer_port=self._ends.peer_port, loopback=self.loopback,
                                           tls=self.tls),
                user=login, password=None if certificate is not None else passcode, kind=kind,
                client_properties=dict(self.client_properties), name=self._ends.name,
                node=self.node, details={"peer_host": self._ends.peer_host, "peer_port": self._ends.peer_port,
                         "host": self._ends.host, "port": self._ends.port, "channel_max": 1,
                         "frame_max": 0, "heartbeat": 0, "mechanism": "PLAIN",
                         "ssl": self.tls is not None})
        except DirectRefused as refused:
            log.warning("STOMP login failed for user '%s': %s", log_text(login),
                        log_text(refused.reason))
            if refused.why == "credentials":
                raise Refused("Bad CONNECT", f"Access refused for user '{login}'\n") from None
            if refused.why == "loopback":
                raise Refused("Bad CONNECT", "non-loopback access denied") from None
            raise Refused("Bad CONNECT", f"Virtual host '{vhost}' access denied") from None
        self.version, self.user = version, login
        self.model.on_closed_by_broker = self.close
        self.channel = self.model.open_channel(1)
        self.channel.listener = self._on_event
        self.session = "session-" + _guid()
        # (list_stomp_connections' own columns, as RabbitMQ 3.10.8 prints them: checked live)
        self.model.details["listing"] = {
            "session_id": {"$raw": f'"{self.session}"'}, "version": {"$raw": f'"{version}"'},
            "protocol": {"$raw": f"{{'{'Web STOMP' if self.web else 'STOMP'}', 0}}"},
            "auth_login": login, "auth_mechanism": "config" if frame.header("login") is None
            else "stomp_headers", "implicit_connect": settings.implicit_connect,
            "channel": {"$raw": "<0.0.0>"}}
        send, receive = self._heart_beats(heart_beat)
        self._reader.max_frame = self.broker.max_message_size + MAX_HEAD
        self.state = StompState.CONNECTED
        if not implicit:
            headers = [] if settings.hide_server_info else [("server", SERVER)]
            self._send("CONNECTED", [*headers, ("session", self.session),
                                     ("heart-beat", f"{send * 1000},{receive * 1000}"),
                                     ("version", version)])
        return True

    @staticmethod
    def _negotiate(accept: str) -> str | None:
        # rabbit_stomp_util:negotiate_version/2: the highest version both speak.
        common = [v for v in accept.split(",") if v in VERSIONS]
        return max(common, key=VERSIONS.index) if common else None

    def _heart_beats(self, header: str) -> tuple[int, int]:
        # ensure_heartbeats/1: the client's "cx,cy" in milliseconds; the broker sends every
        # cy and expects something every cx, each in whole seconds (at least 1 when not 0).
        try:
            cx, cy = (int(part) for part in header.split(","))
        except ValueError:
            raise Refused("Processing error", "Processing error") from None
        send, receive = _seconds(cy), _seconds(cx)
        self._send_interval, self._receive_timeout = float(send), float(receive)
        return send, receive

    # -- who it is -------------------------------------------------------------------------------

    @property
    def _ends(self) -> Endpoints:
        return Endpoints(self.peer, self.local)

    # -- the model's events ----------------------------------------------------------------------

    def _on_event(self, event: ChannelEvent) -> None:
        if isinstance(event, Delivered):
            self._deliver(event)
        elif isinstance(event, Confirmed):
            if event.multiple:
                self._confirms.extend((seq, event.ack) for seq in sorted(self._receipts)
                                      if seq <= event.delivery_tag)
            else:
                self._confirms.append((event.delivery_tag, event.ack))
        elif isinstance(event, Cancelled):
            self._cancelled(event.consumer_tag)
            self._notify()

    def _deliver(self, event: Delivered) -> None:
        subscription = self._subscriptions.get(event.consumer_tag)
        if subscription is None:
            self._error("Subscription not found", f"There is no current subscription with tag "
                        f"'{event.consumer_tag}'.", log_it=False)
            self._notify()
            return
        headers: list[tuple[str, str]] = []
        if event.consumer_tag.startswith(INTERNAL_TAG):
            headers.append(("subscription", event.consumer_tag[len(INTERNAL_TAG):]))
        ident = message_id(event.consumer_tag, self.session, event.delivery_tag)
        headers += [("destination", destination_of(event.exchange, event.routing_key)),
                    ("message-id", ident),
                    ("redelivered", "true" if event.redelivered else "false")]
        if subscription.ack_mode == "client" and self.version == "1.2":
            headers.append(("ack", ident))
        headers += delivery_headers(event.message.properties)
        data = encode_frame("MESSAGE", headers, event.message.body,
                            trailing_lf=self.settings.trailing_lf)
        if self._handling:
            self._deferred.append(data)
        else:
            self._write(data)
            self._notify()

    def _cancelled(self, consumer_tag: str) -> None:
        # server_cancel_consumer/2: an ERROR naming the subscription; the connection goes on.
        subscription = self._subscriptions.pop(consumer_tag, None)
        if subscription is None:
            self._error("Server cancelled unknown subscription",
                        f"Consumer tag {erlang_p(consumer_tag)} is not associated with a "
                        "subscription.\n")
            return
        ident = consumer_tag[2:] if consumer_tag[:2] in (INTERNAL_TAG, QUEUE_TAG) else \
            f"Unknown[{consumer_tag}]"
        self._error("Server cancelled subscription",
                    "The server has canceled a subscription.\nNo more messages will be "
                    f"delivered for {erlang_p(subscription.description)}.\n",
                    [("subscription", ident)], log_it=False)

    def _flush_receipts(self) -> None:
        # flush_pending_receipts/3 for the confirms of one read: coalesced as the channel
        # coalesces them, then one RECEIPT per confirmed publish that asked for one.
        confirms, self._confirms = self._confirms, []
        committed, self._committed = self._committed, []
        if self.should_close:
            return
        for receipt in committed:
            self._send("RECEIPT", [("receipt-id", receipt)])
        for tag, multiple, ack in coalesce(confirms):
            if not ack:
                continue
            tags = sorted(seq for seq in self._receipts if seq <= tag) if multiple else [tag]
            for seq in tags:
                if seq in self._receipts:
                    self._send("RECEIPT", [("receipt-id", self._receipts.pop(seq))])


def _seconds(milliseconds: int) -> int:
    # millis_to_seconds/1
    if milliseconds <= 0:
        return 0
    return 1 if milliseconds < 1000 else milliseconds // 1000


def _guid() -> str:
    return base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
