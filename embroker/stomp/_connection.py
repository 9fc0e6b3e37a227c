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

import enum
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, Final

from .._erlang import string as erlang_string
from .._untrusted import log_text
from ..errors import AMQPError, ConnectionForced
from ..kit import (
    Client,
    Destination,
    DestinationError,
    DestinationType,
    DirectRefused,
    coalesce,
    direct_connect,
    ensure_binding,
    ensure_endpoint,
    external_check,
    parse_destination,
)
from ..model import Cancelled, Confirmed, ConnectionKind, Delivered
from ._frame import MAX_HEAD, Frame, FrameError, FrameReader, encode_frame
from ._mapping import (
    HeaderError,
    boolean,
    delivery_headers,
    destination_of,
    header_arguments,
    message_id,
    message_properties,
    parse_message_id,
    queue_flags,
    subscription_queue_name,
)
from ._settings import StompSettings

if TYPE_CHECKING:
    from .._transport import Accepted
    from ..model import Broker, Channel, Transaction
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
#: The destination prefixes an unknown destination's ERROR lists
#: (``rabbit_routing_util:all_dest_prefixes/0``, as the plugin prints them).
_ALL_PREFIXES: Final = "/temp-queue, /exchange, /topic, /queue, /amq/queue, /reply-queue/"
_INTERNAL_TAG: Final = "T_"
_QUEUE_TAG: Final = "Q_"
_TEMP_QUEUE: Final = "/temp-queue/"


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
                          direct=True)


@dataclass(slots=True)
class _Subscription:
    destination: str
    #: ``auto``, ``client`` (``client`` and ``client-individual``); ``None``: a reply queue's.
    ack_mode: str | None
    multi_ack: bool
    description: str


@dataclass(slots=True)
class _Txn:
    """A transaction the client named: the model's, the receipts of the SENDs it holds, and
    the refusal of a SEND it held (the plugin's channel sees nothing of a transaction until
    COMMIT: a refused publish is found then, after what came before it)."""

    transaction: Transaction
    receipts: list[str]
    failed: AMQPError | None = None


class _Refused(Exception):
    """What the plugin refuses itself: an ERROR frame, and the connection goes on."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class _Stop(Exception):
    """The connection ends (after what was sent, and the frame's receipt: the plugin's
    ``{stop, normal, _}`` still runs ``ensure_receipt/2``)."""


class _Crash(Exception):
    """The plugin's processor would crash: the connection ends with nothing more sent."""


def _p(text: str) -> str:
    # io_lib's ~p of a string (a list of bytes), as the plugin's texts print one.
    return erlang_string(text.encode("utf-8", "surrogateescape"))


class StompConnection:
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
                 on_output: Callable[[], None] | None = None, web: bool = False) -> None:
        self.broker = broker
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
        self._subscriptions: dict[str, _Subscription] = {}
        self._transactions: dict[str, _Txn] = {}
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
                   local=accepted.local, loopback=accepted.loopback, tls=accepted.tls,
                   on_output=accepted.on_output, web=accepted.policy.kind == "web_stomp")

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
        """The broker closes it (a forced close): an ERROR naming the error, then the end."""
        self._die(error)

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

    def _error(self, message: str, detail: str, extra: list[tuple[str, str]] | None = None) -> None:
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
                    raise _Refused("Illegal command", "You must log in using CONNECT first")
                if not self._connect(Frame("CONNECT"), implicit=True):
                    self._finish()
                    return
            handler = COMMANDS.get(frame.command)
            if handler is None:
                raise _Refused("Bad command", f"Could not interpret command {_p(frame.command)}\n")
            if frame.command in ("SUBSCRIBE", "UNSUBSCRIBE") and frame.header("id") is None \
                    and "true" in (frame.header("durable"), frame.header("persistent")):
                raise _Refused("Missing Header",
                               "Header 'id' is required for durable subscriptions")
            handler(self, frame)
        except _Refused as refused:
            self._error(refused.message, refused.detail)
            return
        except _Crash:
            self._finish()
            return
        except _Stop:
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
            raise _Crash
        version = self._negotiate(frame.header("accept-version", "1.0") or "")
        if version is None:
            raise _Refused("Version mismatch",
                           f"Supported versions are {','.join(VERSIONS)}\n")
        if version == "1.0":
            frame = frame.trimmed()
        settings = self.settings
        login, passcode = frame.header("login"), frame.header("passcode")
        certificate = False
        if login is None:
            if settings.ssl_cert_login and self.tls is not None:
                name, _ = external_check(self.broker, self.tls, loopback=self.loopback,
                                         protocol="stomp", address=self._peer_host)
                login, certificate = (name or None), bool(name)
            elif settings.default_user is not None:
                login, default_passcode = settings.default_user
                passcode = passcode if passcode is not None else default_passcode
        elif passcode is None and settings.default_user is not None:
            passcode = settings.default_user[1]
        if login is None or (passcode is None and not certificate):
            raise _Refused("Bad CONNECT", "Missing login or passcode header(s)")
        vhost = frame.header("host", settings.default_vhost) or ""
        heart_beat = frame.header("heart-beat", "0,0") or ""
        kind = stomp_kind(version, self.web)
        try:
            self.model = direct_connect(
                self.broker, vhost, Client("stomp", peer_host=self._peer_host,
                                           peer_port=self._peer_port, loopback=self.loopback,
                                           tls=self.tls),
                user=login, password=None if certificate else passcode, kind=kind,
                client_properties=dict(self.client_properties), name=self._name,
                details={"peer_host": self._peer_host, "peer_port": self._peer_port,
                         "host": self._host, "port": self._port, "channel_max": 1,
                         "frame_max": 0, "heartbeat": 0, "mechanism": "PLAIN",
                         "ssl": self.tls is not None})
        except DirectRefused as refused:
            log.warning("STOMP login failed for user '%s': %s", log_text(login),
                        log_text(refused.reason))
            if refused.why == "credentials":
                raise _Refused("Bad CONNECT", f"Access refused for user '{login}'\n") from None
            if refused.why == "loopback":
                raise _Refused("Bad CONNECT", "non-loopback access denied") from None
            raise _Refused("Bad CONNECT", f"Virtual host '{vhost}' access denied") from None
        self.version, self.user = version, login
        self.model.on_closed_by_broker = self.close
        self.channel = self.model.open_channel(1)
        self.channel.listener = self._on_event
        self.session = "session-" + _guid()
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
            raise _Refused("Processing error", "Processing error") from None
        send, receive = _seconds(cy), _seconds(cx)
        self._send_interval, self._receive_timeout = float(send), float(receive)
        return send, receive

    # -- who it is -------------------------------------------------------------------------------

    @property
    def _peer_host(self) -> str:
        return self.peer.rpartition(":")[0].strip("[]")

    @property
    def _peer_port(self) -> int:
        port = self.peer.rpartition(":")[2]
        return int(port) if port.isdigit() else 0

    @property
    def _host(self) -> str:
        return self.local.rpartition(":")[0].strip("[]")

    @property
    def _port(self) -> int:
        port = self.local.rpartition(":")[2]
        return int(port) if port.isdigit() else 0

    @property
    def _name(self) -> str | None:
        if not self.peer:
            return None
        return f"{self.peer} -> {self.local}" if self.local else self.peer

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
                        f"'{event.consumer_tag}'.")
            self._notify()
            return
        headers: list[tuple[str, str]] = []
        if event.consumer_tag.startswith(_INTERNAL_TAG):
            headers.append(("subscription", event.consumer_tag[len(_INTERNAL_TAG):]))
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
                        f"Consumer tag {_p(consumer_tag)} is not associated with a "
                        "subscription.\n")
            return
        ident = consumer_tag[2:] if consumer_tag[:2] in (_INTERNAL_TAG, _QUEUE_TAG) else \
            f"Unknown[{consumer_tag}]"
        self._error("Server cancelled subscription",
                    "The server has canceled a subscription.\nNo more messages will be "
                    f"delivered for {_p(subscription.description)}.\n",
                    [("subscription", ident)])

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

    # -- destinations ------------------------------------------------------------------------------

    def _destination(self, frame: Frame, command: str) -> tuple[str, Destination]:
        text = frame.header("destination")
        if text is None:
            raise _Refused("Missing destination",
                           f"{_p(command)} must include a 'destination' header\n")
        try:
            destination = _parse(text)
        except DestinationError as error:
            if error.invalid and error.type is not None:
                raise _Refused("Invalid destination", f"'{error.rest}' is not a valid "
                               f"{error.type.value} destination\n") from None
            raise _Refused("Unknown destination", f"'{text}' is not a valid destination.\n"
                           f"Valid destination types are: {_ALL_PREFIXES}.\n") from None
        if destination.type is DestinationType.QUEUE and destination.name == "":
            raise _Refused("Invalid destination", "Destination cannot be blank")
        return text, destination

    def _routing(self, destination: Destination) -> tuple[str, str]:
        exchange, key = destination.routing
        if destination.type is DestinationType.TOPIC:
            exchange = self.settings.default_topic_exchange
        return exchange, key

    def _endpoint(self, frame: Frame, text: str, destination: Destination, direction: str,
                  command: str, queue: str = "") -> str | None:
        # ensure_endpoint/5 with the frame's queue flags and arguments.
        if destination.type is DestinationType.TEMP_QUEUE:
            raise _Refused("Invalid destination",
                           f"'{text}' is not a valid destination for '{command}'\n")
        if destination.type is DestinationType.QUEUE and direction == "dest" and \
                destination.name in self._declared:
            return destination.name
        private = destination.type in (DestinationType.EXCHANGE, DestinationType.TOPIC)
        defaults = [("exclusive", False), ("auto_delete", True)] if private else [
            ("durable", destination.type is DestinationType.QUEUE)]
        flags = queue_flags(frame, defaults)
        try:
            arguments = header_arguments(frame)
        except HeaderError:  # (the plugin's processor dies on it: its words are these)
            raise _Refused("Processing error", "Processing error") from None
        assert self.channel is not None
        name = ensure_endpoint(self.channel, destination, "source" if direction == "source"
                               else "dest", durable=flags.get("durable", False),
                               exclusive=flags.get("exclusive"),
                               auto_delete=flags.get("auto_delete"), arguments=arguments,
                               queue=queue)
        if destination.type is DestinationType.QUEUE and name is not None:
            self._declared.add(name)
        return name

    # -- commands ----------------------------------------------------------------------------------

    def _on_send(self, frame: Frame) -> None:
        if "message-id" in frame:
            raise _Refused("Invalid header", "'message-id' is not allowed on 'SEND'.\n")
        text, destination = self._destination(frame, "SEND")
        self._endpoint(frame, text, destination, "dest", "SEND")
        frame = self._reply_to(frame)
        try:
            properties = message_properties(frame)
        except HeaderError:
            raise _Refused("Processing error", "Processing error") from None
        exchange, key = self._routing(destination)
        channel = self.channel
        assert channel is not None
        receipt = frame.header("receipt")
        name = frame.header("transaction")
        origin = f"STOMP SEND to '{text}'"  # (how the routing trace names it)
        if name is not None:
            txn = self._transaction(name)
            if txn.failed is None:
                try:
                    channel.basic_publish(exchange, key, frame.body, properties,
                                          transaction=txn.transaction, origin=origin)
                except AMQPError as refused:
                    txn.failed = refused
                else:
                    if receipt is not None:
                        txn.receipts.append(receipt)
            return
        if receipt is not None and not channel.confirm_mode:
            channel.confirm_select()
        outcome = channel.basic_publish(exchange, key, frame.body, properties, origin=origin)
        if receipt is not None:  # (its confirm is among those of this read: _flush_receipts)
            self._receipts[outcome.seq] = receipt

    def _reply_to(self, frame: Frame) -> Frame:
        # ensure_reply_to/2: a /temp-queue/N reply-to becomes a queue of this connection's,
        # consumed (no acks), its name in the header.
        reply_to = frame.header("reply-to")
        if reply_to is None or not reply_to.startswith(_TEMP_QUEUE):
            return frame
        try:
            destination = parse_destination(reply_to)
        except DestinationError:
            raise _Refused("Processing error", "Processing error") from None
        if destination.type is not DestinationType.TEMP_QUEUE or destination.name is None:
            return frame
        queue = self._reply_queues.get(destination.name)
        if queue is None:
            channel = self.channel
            assert channel is not None
            queue = channel.queue_declare("", exclusive=True, auto_delete=True).queue
            tag = _INTERNAL_TAG + _TEMP_QUEUE + destination.name
            channel.basic_consume(queue, tag, no_ack=True)
            self._subscriptions[tag] = _Subscription(queue, None, False, "")
            self._reply_queues[destination.name] = queue
            channel.start_consumer(tag)
        headers = [(k, queue if k == "reply-to" else v) for k, v in frame.headers]
        return Frame(frame.command, headers, frame.body)

    def _on_subscribe(self, frame: Frame) -> None:
        text, destination = self._destination(frame, "SUBSCRIBE")
        channel = self.channel
        model = self.model
        assert channel is not None
        assert model is not None
        if destination.type is DestinationType.TOPIC:
            exchange, key = self._routing(destination)
            try:
                model.access.read_topic(exchange, key)
            except AMQPError as refused:  # (thrown, not a channel's death: no reply name)
                self._error("access_refused", refused.text)
                raise _Stop from None
        try:
            prefetch = _integer_header(frame, "prefetch-count")
        except HeaderError:
            raise _Refused("Processing error", "Processing error") from None
        ack = frame.header("ack", "auto")
        if ack not in ("auto", "client", "client-individual"):
            raise _Refused("Processing error", "Processing error")
        private = destination.type in (DestinationType.EXCHANGE, DestinationType.TOPIC)
        queue_name = ""
        if private:
            durable_id = frame.header("id") if _durable(frame) else None
            queue_name = subscription_queue_name(destination.routing[1], durable_id,
                                                 frame.header("x-queue-name"))
        queue = self._endpoint(frame, text, destination, "source", "SUBSCRIBE", queue_name)
        if queue is None:
            raise _Refused("Invalid destination",
                           f"'{text}' is not a valid destination for 'SUBSCRIBE'\n")
        try:
            tag, description = self._consumer_tag(frame)
        except _Refused:  # (the plugin's processor dies on it)
            raise _Refused("Processing error", "Processing error") from None
        if prefetch is not None:
            channel.basic_qos(prefetch_count=prefetch)
        if tag in self._subscriptions:
            detail = f"A subscription identified by '{tag}' already exists."
            self._error("Duplicated subscription identifier", detail)
            raise _Stop
        arguments = _stream_offset(frame.header("x-stream-offset"))
        try:
            channel.basic_consume(queue, tag, no_ack=ack == "auto", arguments=arguments)
            ensure_binding(channel, queue, *self._routing(destination))
        except AMQPError:
            if tag in channel.consumers:  # (its channel dies in the plugin: no cancel told)
                channel.basic_cancel(tag)
            if private:  # (server-named and declared here: safe to delete)
                self._delete_quietly(queue)
            raise
        self._subscriptions[tag] = _Subscription(text, "auto" if ack == "auto" else "client",
                                                 ack == "client", description)
        channel.start_consumer(tag)

    def _delete_quietly(self, queue: str) -> None:
        model = self.model
        if model is None or not model.is_open:
            return
        channel = model.open_internal_channel()
        try:
            channel.queue_delete(queue)
        except AMQPError:
            pass
        finally:
            channel.close()
            model.channels.pop(channel.number, None)

    @staticmethod
    def _consumer_tag(frame: Frame) -> tuple[str, str]:
        # rabbit_stomp_util:consumer_tag/1: "T_" and the id, or "Q_" and the destination.
        ident = frame.header("id")
        if ident is not None:
            if ident.startswith(_TEMP_QUEUE):
                raise _Refused("Invalid id", f"UNSUBSCRIBE 'id' may not start with "
                               f"{_TEMP_QUEUE}\n")
            return _INTERNAL_TAG + ident, f"id='{ident}'"
        destination = frame.header("destination")
        if destination is None:
            raise _Refused("Missing destination or id",
                           "UNSUBSCRIBE must include a 'destination' or 'id' header")
        return _QUEUE_TAG + destination, f"destination='{destination}'"

    def _on_unsubscribe(self, frame: Frame) -> None:
        tag, description = self._consumer_tag(frame)
        subscription = self._subscriptions.get(tag)
        if subscription is None:
            raise _Refused("No subscription found", "UNSUBSCRIBE must refer to an existing "
                           f"subscription.\nSubscription to {_p(description)} not found.\n")
        channel = self.channel
        assert channel is not None
        channel.basic_cancel(tag)
        del self._subscriptions[tag]
        destination = parse_destination(subscription.destination)
        if destination.type is DestinationType.TOPIC and _durable(frame):
            # maybe_delete_durable_sub/3: the durable subscription's queue goes with it.
            ident = frame.header("id") or ""
            channel.queue_delete(subscription_queue_name(destination.routing[1], ident,
                                                         frame.header("x-queue-name")))

    def _on_ack(self, frame: Frame) -> None:
        self._settle(frame, "ACK")

    def _on_nack(self, frame: Frame) -> None:
        self._settle(frame, "NACK")

    def _settle(self, frame: Frame, command: str) -> None:
        name = "id" if self.version == "1.2" else "message-id"
        value = frame.header(name)
        if value is None:
            raise _Refused("Missing header", f"{_p(command)} must include the {_p(name)} "
                           "header\n")
        parsed = parse_message_id(value)
        if parsed is None:
            raise _Refused("Invalid header", f"{_p(command)} must include a valid {_p(name)} "
                           "header\n")
        tag, _session, delivery_tag = parsed
        subscription = self._subscriptions.get(tag)
        if subscription is None:
            raise _Refused("Subscription not found",
                           f"Message with id {_p(value)} has no subscription")
        requeue = boolean(frame.header("requeue"))
        if requeue is None:
            requeue = self.settings.default_nack_requeue
        channel = self.channel
        assert channel is not None
        transaction = None
        if (name_ := frame.header("transaction")) is not None:
            txn = self._transaction(name_)
            if txn.failed is not None:
                return
            transaction = txn.transaction
        if command == "ACK":
            channel.basic_ack(delivery_tag, subscription.multi_ack, transaction=transaction)
        else:
            channel.basic_nack(delivery_tag, subscription.multi_ack, requeue,
                               transaction=transaction)

    def _transaction(self, name: str) -> _Txn:
        found = self._transactions.get(name)
        if found is None:
            raise _Refused("Bad transaction", f"Invalid transaction identifier: {_p(name)}\n")
        return found

    def _transaction_name(self, frame: Frame, command: str) -> str:
        name = frame.header("transaction")
        if name is None:
            raise _Refused("Missing transaction",
                           f"{_p(command)} must include a 'transaction' header\n")
        return name

    def _on_begin(self, frame: Frame) -> None:
        name = self._transaction_name(frame, "BEGIN")
        channel = self.channel
        assert channel is not None
        old = self._transactions.get(name)
        if old is not None:  # (begun again: what it held is forgotten)
            old.transaction.rollback()
        self._transactions[name] = _Txn(channel.transaction(), [])

    def _on_commit(self, frame: Frame) -> None:
        name = self._transaction_name(frame, "COMMIT")
        txn = self._transaction(name)
        del self._transactions[name]
        txn.transaction.commit()
        # (each publish is confirmed as it is routed: its receipt follows COMMIT's own; a
        # refused one ends the connection after COMMIT's receipt, as the plugin's channel
        # dies after it answered)
        self._committed.extend(txn.receipts)
        self._after_receipt = txn.failed

    def _on_abort(self, frame: Frame) -> None:
        name = self._transaction_name(frame, "ABORT")
        txn = self._transaction(name)
        del self._transactions[name]
        txn.transaction.rollback()

    def _on_disconnect(self, frame: Frame) -> None:
        """(The RECEIPT, if asked, goes first; then the connection ends.)"""


@lru_cache(maxsize=1024)
def _parse(text: str) -> Destination:
    # The kit's parse_destination, its last 1024 answers remembered (a publisher names the same
    # few destinations again and again; a refusal is raised again each time).
    return parse_destination(text)


def _seconds(milliseconds: int) -> int:
    # millis_to_seconds/1
    if milliseconds <= 0:
        return 0
    return 1 if milliseconds < 1000 else milliseconds // 1000


def _guid() -> str:
    import base64

    return base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")


def _durable(frame: Frame) -> bool:
    # has_durable_header/1
    return boolean(frame.header("durable")) is True or boolean(frame.header("persistent")) is True


def _integer_header(frame: Frame, name: str) -> int | None:
    value = frame.header(name)
    if value is None:
        return None
    text = value.strip(" ")
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isdigit() or not digits.isascii():
        raise HeaderError(name)
    return int(text)


def _stream_offset(value: str | None) -> dict[str, Any] | None:
    # rabbit_stomp_frame:stream_offset_header/2: first, last, next, offset=N, timestamp=T.
    from ..fieldtypes import Long, Timestamp

    if value in ("first", "last", "next"):
        return {"x-stream-offset": value}
    for prefix, kind in (("offset=", Long), ("timestamp=", Timestamp)):
        if value is not None and value.startswith(prefix):
            number = value[len(prefix):]
            if number.lstrip("-").isdigit():
                return {"x-stream-offset": kind(int(number))}
            raise _Refused("Processing error", "Processing error")
    return None


#: Each command's handler (what it is in the model: see the module's notes).
COMMANDS: Final[dict[str, Callable[[StompConnection, Frame], None]]] = {
    "SEND": StompConnection._on_send,
    "SUBSCRIBE": StompConnection._on_subscribe,
    "UNSUBSCRIBE": StompConnection._on_unsubscribe,
    "ACK": StompConnection._on_ack,
    "NACK": StompConnection._on_nack,
    "BEGIN": StompConnection._on_begin,
    "COMMIT": StompConnection._on_commit,
    "ABORT": StompConnection._on_abort,
    "DISCONNECT": StompConnection._on_disconnect,
}
