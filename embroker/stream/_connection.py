"""The server side of one stream-protocol connection (sans-IO): bytes in, model calls, bytes out.

Theory of operation
-------------------
A client opens with PeerProperties, SaslHandshake, SaslAuthenticate (PLAIN), answers our Tune
with its own, then Open picks a virtual host; each step is allowed in one state only
(:data:`EXPECTED`), anything else closes the connection. Once open, requests are answered in
the order they come, each through one operation of the model (one model channel: its
``stream_*`` operations), which checks the permission the command needs, then that the stream
exists, then the rest, in RabbitMQ 3.10.8's order; this layer only turns the model's errors into
response codes (:func:`_code`; an error that takes RabbitMQ's reader down drops the connection):

- Create / Delete: a durable ``x-queue-type: stream`` queue (the arguments ``max-age``,
  ``max-length-bytes``, ``stream-max-segment-size-bytes``, ``initial-cluster-size``,
  ``queue-leader-locator`` become its ``x-`` arguments; an existing one must be that stream) /
  its deletion. A deleted stream takes the publishers and subscriptions every connection had
  on it, each connection told once (MetadataUpdate).
- DeclarePublisher / Publish / DeletePublisher: a Publish frame's messages for one stream are
  one chunk; a publisher with a reference is deduplicated (a publishing id not above the last
  one written for the reference is confirmed and not written again); QueryPublisherSequence
  answers that last id.
- Subscribe / Credit / Unsubscribe: a subscription is a chunk reader of the model's log, sent
  one chunk per credit as Deliver frames (osiris chunks with their CRC32); StoreOffset and
  QueryOffset keep a consumer reference's offset in the stream (the model's, so every
  connection sees it).
- Metadata names, for each stream, the node leading it and its running replicas, each by the
  host and port its node advertises (:attr:`StreamConnection.endpoint_of`: over a listener,
  each node's own listener's, ``Server.stream_endpoint_of``).

Message bodies are AMQP 1.0 messages: a message published here keeps its bytes for stream
readers and is read by 0-9-1 and 1.0 consumers through the 1.0 codec (``embroker.amqp10_common``);
a message published over AMQP is sent to stream readers encoded by that codec.

Output is bounded as RabbitMQ's is paced by its socket (its reader sends chunks with
``sendfile``, blocking while the socket is full): the connection counts the bytes it has not
seen written, those :meth:`~StreamConnection.data_to_send` has not returned and those its
driver says it still holds of what it did return (:meth:`~StreamConnection.written`, after
each write). While they are :data:`MAX_UNSENT` or more, its subscriptions' readers are paused,
their credit kept (a Credit adds to it, a publish elsewhere waits in the log); once they are
down to :data:`RESUME_UNSENT`, the readers go on, from the subscription after the one whose
chunk paused them, so one with much credit does not keep the others waiting. Past
:data:`MAX_UNREAD` it is ``blocked``: its driver stops reading from the client (as the
management port's HTTP connections). A driver that never calls
:meth:`~StreamConnection.written` is taken to write all it is given at once.

Errors: bad bytes raise :class:`StreamProtocolError` inside, which closes this connection with
a Close frame (its code and reason), nothing else; the model's refusals of a request become
its response code. Input is bounded before login: until Open succeeds, a frame whose size is
over :data:`INITIAL_FRAME_MAX` (8 KiB, RabbitMQ 4.3.5's pre-authentication bound) is refused
as soon as its size is read (FRAME_TOO_LARGE), none of its body kept; after it, the tuned
``frame_max`` and the broker's largest message bound it.

Timeouts and closes from the broker's side are RabbitMQ 3.10.8's (``rabbit_stream_reader``,
``rabbit_heartbeat``): each step of the opening may take 10 s (``state_timeout``); an open
connection sends a heartbeat when nothing went out for half the tuned interval and is dropped
when nothing came in for two; a connection the broker closes (the management API, a deleted
user or vhost, a restart) is dropped. A drop sends no frame: the process stops and its socket
closes.
"""

from __future__ import annotations

import enum
import itertools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, final

from .._untrusted import log_text
from ..amqp10_common import from_stream, to_stream
from ..errors import (
    AccessRefused,
    AMQPError,
    NotAllowed,
    NotFound,
    PreconditionFailed,
)
from ..kit import Client, LoginRefused, login
from ..model._kinds import STREAM
from ..model._stream import (
    Chunk,
    ChunkReader,
    Entry,
    FilterSpec,
    OffsetSpec,
    SacMember,
    StreamLog,
)
from ._frames import (
    DEFAULT_FRAME_MAX,
    Code,
    Fields,
    FrameReader,
    Key,
    StreamProtocolError,
    Writer,
    chunk_frame,
    response_key,
)

if TYPE_CHECKING:
    from ..kit import PeerCertificate
    from ..model import Broker as ModelBroker
    from ..model._channel import Channel as ModelChannel
    from ..model._connection import Connection as ModelConnection
    from ..model._node import Node
    from ..model._profile import Profile

__all__ = ["INITIAL_FRAME_MAX", "MAX_UNREAD", "MAX_UNSENT", "RESUME_UNSENT", "State",
           "StreamConnection"]

#: Refused logins, as RabbitMQ's stream reader warns of them (what the client chose escaped).
log = logging.getLogger("embroker.stream")

#: What we offer in Tune (RabbitMQ's defaults: 1 MiB frames, 60 s heartbeats).
FRAME_MAX: Final = DEFAULT_FRAME_MAX
HEARTBEAT: Final = 60
#: The largest frame read until Open succeeds, whatever Tune said (rabbit_stream_reader's
#: pre-authentication ``frame_max``, RabbitMQ 4.3.5's ``stream.initial_frame_max``, 8192 bytes:
#: room for a JWT as SASL PLAIN's password; RabbitMQ 3.10.8 bounded no inbound frame): a
#: client that has not logged in and opened a vhost cannot make the connection buffer more.
INITIAL_FRAME_MAX: Final = 8192
#: How long each step of the opening may take (rabbit_stream_reader's
#: ``connection_negotiation_step_timeout``, 10_000 ms in v3.10.8).
NEGOTIATION_STEP_TIMEOUT: Final = 10.0

#: Unwritten output at which a connection's subscriptions stop being sent chunks: twice the
#: largest chunk a stream-protocol publisher writes (a Publish frame within FRAME_MAX), and half
#: of what makes the connection ``blocked`` (MAX_UNREAD), so a subscriber that reads slowly is
#: still read from (its Credit, its heartbeats) while it is paced.
MAX_UNSENT: Final = 2 * 1024 * 1024
#: Unwritten output down to which they are sent chunks again.
RESUME_UNSENT: Final = MAX_UNSENT // 2
#: Unwritten output past which the client is not read from (``blocked``): the management port's
#: ``MAX_PENDING_OUTPUT``, the listener's bound for what it holds for a stream client.
MAX_UNREAD: Final = 4 * 1024 * 1024

#: Offset types of Subscribe (PROTOCOL.adoc).
_OFFSET_TYPES: Final = {1: "first", 2: "last", 3: "next"}


class State(enum.Enum):
    """Where a connection is in its opening, and after."""

    PEER_PROPERTIES = "peer-properties"
    SASL_HANDSHAKE = "sasl-handshake"
    SASL_AUTHENTICATE = "sasl-authenticate"
    TUNE = "tune"
    OPEN = "open"
    OPENED = "opened"
    CLOSED = "closed"


#: The frames each state takes; any other closes the connection (the table is the state
#: machine: the handlers move to the next state).
EXPECTED: Final = {
    State.PEER_PROPERTIES: frozenset({Key.PEER_PROPERTIES}),
    State.SASL_HANDSHAKE: frozenset({Key.SASL_HANDSHAKE}),
    State.SASL_AUTHENTICATE: frozenset({Key.SASL_AUTHENTICATE, Key.SASL_HANDSHAKE}),
    State.TUNE: frozenset({Key.TUNE}),
    State.OPEN: frozenset({Key.OPEN, Key.HEARTBEAT}),
    State.OPENED: frozenset(Key) - {Key.PEER_PROPERTIES, Key.SASL_HANDSHAKE,
                                    Key.SASL_AUTHENTICATE, Key.OPEN, Key.DELIVER,
                                    Key.PUBLISH_CONFIRM, Key.PUBLISH_ERROR,
                                    Key.METADATA_UPDATE, Key.CONSUMER_UPDATE},
    State.CLOSED: frozenset(),
}


#: The commands RabbitMQ 3.13 added, served under the RabbitMQ 4 profile only.
_SINCE_3_13: Final = frozenset({Key.EXCHANGE_COMMAND_VERSIONS, Key.STREAM_STATS,
                                Key.CREATE_SUPER_STREAM, Key.DELETE_SUPER_STREAM})

#: What RabbitMQ 4.1.0 answers ExchangeCommandVersions with, in its order
#: (``rabbit_stream_utils:command_versions/0``): the commands a client may send, and their
#: versions (Publish 2: filter values).
COMMAND_VERSIONS: Final = (
    (Key.DECLARE_PUBLISHER, 1, 1), (Key.PUBLISH, 1, 2), (Key.QUERY_PUBLISHER_SEQUENCE, 1, 1),
    (Key.DELETE_PUBLISHER, 1, 1), (Key.SUBSCRIBE, 1, 1), (Key.CREDIT, 1, 1),
    (Key.STORE_OFFSET, 1, 1), (Key.QUERY_OFFSET, 1, 1), (Key.UNSUBSCRIBE, 1, 1),
    (Key.CREATE, 1, 1), (Key.DELETE, 1, 1), (Key.METADATA, 1, 1), (Key.CLOSE, 1, 1),
    (Key.HEARTBEAT, 1, 1), (Key.ROUTE, 1, 1), (Key.PARTITIONS, 1, 1),
    (Key.STREAM_STATS, 1, 1), (Key.CREATE_SUPER_STREAM, 1, 1),
    (Key.DELETE_SUPER_STREAM, 1, 1))


def _code(error: AMQPError) -> int:
    if isinstance(error, NotFound):
        return Code.STREAM_DOES_NOT_EXIST
    if isinstance(error, AccessRefused):
        return Code.ACCESS_REFUSED
    if isinstance(error, PreconditionFailed):
        return Code.PRECONDITION_FAILED
    return Code.INTERNAL_ERROR


class _Subscription:
    """A subscription: its reader once reading; a single active consumer waits, inactive, with
    what it asked for, until it is activated and its client says where to start."""

    __slots__ = ("credit", "filter", "group", "log", "member", "reader", "spec", "stream")

    def __init__(self, stream: str, log: StreamLog, spec: OffsetSpec, credit: int,
                 filter_spec: FilterSpec | None) -> None:
        self.stream = stream
        self.log = log
        self.spec = spec
        self.credit = credit
        self.filter = filter_spec
        self.reader: ChunkReader | None = None
        self.group: str | None = None
        self.member: SacMember | None = None


class _Publisher:
    __slots__ = ("reference", "stream")

    def __init__(self, stream: str, reference: str) -> None:
        self.stream = stream
        self.reference = reference


@final
class StreamConnection:
    """One stream-protocol connection, fed bytes, returning bytes (no sockets).

    Args:
        broker: the model broker.
        peer: the client's address, for texts.
        advertised_host, advertised_port: this listener, as Open and Metadata name it.
        loopback: whether the client came over a loopback interface (guest's rule).
        on_output: called (no arguments, under the broker's lock) when output becomes ready
            without input causing it (a delivery caused by another connection's publish).
        endpoint_of: the host and port a node of the cluster advertises to stream clients
            (``rabbit_stream:host/0`` and ``port/0`` asked of that node), ``None`` for a node
            that cannot say (RabbitMQ's Metadata leaves it out); by default every node
            advertises this connection's (``advertised_host``, ``advertised_port``); a
            listener passes each node's listener's (``Server.stream_endpoint_of``).
    """

    #: The model's kind of connection it opens (which limits apply, how alarms hold it).
    kind = STREAM
    # -- what the listener asks of a broker connection (embroker._transport.BrokerConnection) --
    #: At stop_app its socket closes, with no frame (rabbit_stream_reader).
    stops_silently = True
    #: It has no channels.
    channel_numbers: tuple[int, ...] = ()

    def on_restart(self) -> None:
        """(Its model connection tells it: Broker.restart closes it.)"""

    def killed(self, reason: str) -> None:
        """(Nothing to note.)"""

    def __init__(self, broker: ModelBroker, *, peer: str = "", advertised_host: str = "localhost",
                 advertised_port: int = 5552, loopback: bool = True,
                 on_output: Callable[[], None] | None = None,
                 tls: PeerCertificate | None = None,
                 endpoint_of: Callable[[Node], tuple[str, int] | None] | None = None,
                 node: Node | None = None) -> None:
        self.broker = broker
        #: The host and port each node advertises (see the class's notes).
        self.endpoint_of: Callable[[Node], tuple[str, int] | None] = \
            endpoint_of if endpoint_of is not None else self._advertised
        #: The node its client reached (``None``: the first): its model connection's.
        self.node = node
        self.peer = peer
        #: Its TLS session, when it came over TLS (SASL EXTERNAL's certificate).
        self.tls = tls
        self.advertised_host = advertised_host
        self.advertised_port = advertised_port
        self.loopback = loopback
        self.on_output = on_output
        self.state = State.PEER_PROPERTIES
        self.user: str | None = None
        self.vhost: str | None = None
        #: What the client said of itself in PeerProperties.
        self.client_properties: dict[str, str] = {}
        self.frame_max = FRAME_MAX
        self.heartbeat = HEARTBEAT
        self._reader = FrameReader(INITIAL_FRAME_MAX)
        self._out = bytearray()
        #: Of what data_to_send returned, the bytes its driver still holds (its last report).
        self._held = 0
        #: Whether its driver reports what it wrote (:meth:`written`): then what it was given
        #: counts as held until it says otherwise.
        self._paced = False
        #: Whether its subscriptions' readers are paused (too much output unwritten).
        self._paused = False
        self._disk_alarm = self.kind.blocked_by(broker.alarms)
        # The read the socket was armed for when the disk alarm came: still taken.
        self._armed = False
        #: The subscription sent the chunk that paused them: the others go first next time.
        self._paused_by: int | None = None
        self.model: ModelConnection | None = None
        self._channel: ModelChannel | None = None
        self._publishers: dict[int, _Publisher] = {}
        self._subscriptions: dict[int, _Subscription] = {}
        #: The streams it has publishers or subscriptions on: told when one is deleted.
        self._monitored: dict[str, StreamLog] = {}
        #: Inside its own Delete: the streams gone, told after the response (as RabbitMQ).
        self._deleting = False
        self._gone_later: list[str] = []
        #: ConsumerUpdate requests we sent, by correlation id: the subscription they activate.
        self._updates: dict[int, int] = {}
        self._correlation = itertools.count(1)
        self._version = 1  # of the frame being handled
        #: Why the connection closed (``None`` while open, or a clean close).
        self.close_reason: str | None = None
        self.should_close = False
        self.failure: BaseException | None = None
        now = broker.clock.monotonic()
        self._last_sent = now
        self._last_received = now
        self._step_deadline = now + NEGOTIATION_STEP_TIMEOUT

    # -- what the server loop uses ------------------------------------------------------------

    @property
    def has_output(self) -> bool:
        return bool(self._out)

    @property
    def unsent(self) -> int:
        """The bytes of output not written yet, as far as it knows: those
        :meth:`data_to_send` has not returned, and those its driver last said it still held."""
        return len(self._out) + self._held

    @property
    def disk_alarm(self) -> bool:
        """The disk alarm is in effect (set by its listener). As rabbit_stream_reader
        (v3.10.8): the connection is read once more (its socket was armed for one more
        packet when the alarm came), then not until the alarm clears; its heartbeat monitor
        is paused; no publisher can be declared meanwhile (the model's ``stream_writer``:
        PRECONDITION_FAILED). The memory alarm does nothing to the stream protocol."""
        return self._disk_alarm

    @disk_alarm.setter
    def disk_alarm(self, on: bool) -> None:
        if on and not self._disk_alarm:
            self._armed = True
        self._disk_alarm = on

    @property
    def held_by_alarm(self) -> bool:
        """Whether an alarm of its kind holds it (:attr:`disk_alarm`): what its listener sets
        for a kind held from reading (:class:`embroker.model.AlarmBlocking`)."""
        return self._disk_alarm

    @held_by_alarm.setter
    def held_by_alarm(self, on: bool) -> None:
        self.disk_alarm = on

    @property
    def blocked(self) -> bool:
        """Whether to stop reading from the client: it leaves too much output unread, or the
        disk alarm holds it (:attr:`disk_alarm`)."""
        return (self._disk_alarm and not self._armed) or self.unsent > MAX_UNREAD

    def data_to_send(self) -> bytes:
        """The bytes to write (and forget). Taking them may let paused subscriptions go on:
        their chunks are then ready for the next call (``on_output`` is called)."""
        data = bytes(self._out)
        self._out.clear()
        if data:
            self._last_sent = self.broker.clock.monotonic()
            if self._paced:
                self._held += len(data)
        if self._paused:
            with self.broker.locked():
                self._resume()
        return data

    def written(self, unsent: int) -> None:
        """Its driver's report after writing: of all the bytes :meth:`data_to_send` returned,
        ``unsent`` are not written yet (what the socket did not take). From the first report
        on, what it is given counts as unsent until the next report; paused subscriptions
        resume once little enough is left (``on_output`` is called when that makes output)."""
        with self.broker.locked():
            self._paced = True
            self._held = unsent
            if self._paused:
                self._resume()

    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the client (``b""``: it closed the socket). Never raises for bad
        input: the connection closes with a Close frame."""
        with self.broker.locked():
            if not data:
                self.connection_lost()
                return
            if self.state is State.CLOSED:
                return
            now = self._last_received = self.broker.clock.monotonic()
            state = self.state
            self._armed = False  # (the read an alarm let through: taken now)
            self._reader.feed(data)
            try:
                while not self.should_close:
                    frame = self._reader.next_frame()
                    if frame is None:
                        break
                    self._handle(*frame)
            except StreamProtocolError as exc:
                self._close(exc.code, exc.text)
            if self.state is not state:  # the next step of the opening: its own 10 s
                self._step_deadline = now + NEGOTIATION_STEP_TIMEOUT

    def tick(self) -> None:
        """Drop a client that takes too long over a step of the opening or has been silent
        for two heartbeat intervals; send a heartbeat when nothing went out for half of one."""
        if self.state is State.CLOSED:
            return
        now = self.broker.clock.monotonic()
        if self.state is not State.OPENED:
            if now >= self._step_deadline:
                self._drop(f"timeout in state '{self.state.value}', likely due to lack of "
                           "client action")
            return
        if not self.heartbeat:
            return
        if self.disk_alarm:  # (rabbit_heartbeat:pause_monitor: not read, not missed)
            self._last_received = now
        if now - self._last_received > 2 * self.heartbeat:
            self._drop(f"missed heartbeats from client, timeout: {self.heartbeat}s")
        elif now - self._last_sent >= self.heartbeat / 2:
            self._send(Writer(Key.HEARTBEAT).frame())
            self._last_sent = now

    def connection_lost(self) -> None:
        """The socket is gone: release the subscriptions and the model connection."""
        with self.broker.locked():
            subscriptions = list(self._subscriptions.values())
            self._subscriptions.clear()
            for subscription in subscriptions:
                self._stop(subscription)
            self._publishers.clear()
            for log in self._monitored.values():
                log.monitors.pop(self, None)
            self._monitored.clear()
            if self.model is not None:
                self.model.close()
                self.model = None
            self.state = State.CLOSED
            self.should_close = True

    def internal_error(self, error: AMQPError) -> None:
        """A bug while serving this connection: close it (INTERNAL_ERROR)."""
        self._close(Code.INTERNAL_ERROR, error.text)

    def close(self, error: AMQPError) -> None:
        """The broker closes the connection (a forced close, a shutdown): dropped, with no
        frame, as RabbitMQ's stream reader stops."""
        self._drop(error.reply_text)
        self._notify()

    def publishers_blocked(self, reason: str) -> None:
        """(Memory alarms do not block stream publishers here.)"""

    def publishers_unblocked(self) -> None:
        """(See :meth:`publishers_blocked`.)"""

    # -- output --------------------------------------------------------------------------------

    def _send(self, frame: bytes) -> None:
        self._out += frame

    def _pause(self, subscription_id: int) -> None:
        # Too much output unwritten: no subscription is sent chunks until it is written.
        self._paused = True
        self._paused_by = subscription_id
        for subscription in self._subscriptions.values():
            if subscription.reader is not None:
                subscription.reader.pause()

    def _resume(self) -> None:
        # Enough written: the readers go on, from the subscription after the one that paused
        # them, until their credit is spent or the output is too much again.
        if self.unsent > RESUME_UNSENT or self.state is State.CLOSED:
            return
        self._paused = False
        ids = list(self._subscriptions)
        first = ids.index(self._paused_by) + 1 if self._paused_by in self._subscriptions else 0
        readers = [reader for i in ids[first:] + ids[:first]
                   if (reader := self._subscriptions[i].reader) is not None]
        for reader in readers:
            reader.paused = False
        for reader in readers:
            if self._paused:
                break
            reader.pump()

    def _notify(self) -> None:
        if self.on_output is not None:
            self.on_output()

    def _respond(self, key: int, correlation_id: int, code: int = Code.OK) -> Writer:
        return Writer(response_key(key)).uint32(correlation_id).uint16(code)

    def _drop(self, reason: str) -> None:
        # (RabbitMQ's reader stops: its socket closes after what was written, with no Close)
        if self.state is not State.CLOSED:
            self.close_reason = reason
            self.connection_lost()

    def _close(self, code: int, reason: str) -> None:
        if self.state is State.CLOSED:
            return
        self.close_reason = reason
        self._send(Writer(Key.CLOSE).uint32(next(self._correlation)).uint16(code)
                   .string(reason[:1000]).frame())
        self.connection_lost()

    # -- dispatch ------------------------------------------------------------------------------

    def _handle(self, key: int, version: int, body: bytes) -> None:
        if key & 0x8000:
            if key == response_key(Key.CLOSE):
                self.connection_lost()  # the answer to our Close
            elif key == response_key(Key.CONSUMER_UPDATE) and self.state is State.OPENED:
                self._on_consumer_update_response(Fields(body))
            return  # (a response to nothing we asked is dropped)
        try:
            command = Key(key)
        except ValueError:
            raise StreamProtocolError("unknown frame") from None  # (RabbitMQ 3.10.8's text)
        rabbitmq4 = self.broker.profile.rabbitmq4
        if command in _SINCE_3_13 and not rabbitmq4:
            raise StreamProtocolError("unknown frame")  # (RabbitMQ 3.10's reader has none)
        if command not in EXPECTED[self.state]:
            raise StreamProtocolError(f"{command.name} in state {self.state.value}")
        if version != 1 and not (version == 2 and command is Key.PUBLISH and rabbitmq4):
            raise StreamProtocolError(f"{command.name} version {version} (this broker speaks "
                                      f"{'1, 2 for Publish' if rabbitmq4 else '1'})")
        self._version = version
        fields = Fields(body)
        handler = getattr(self, f"_on_{command.name.lower()}")
        handler(fields)

    # -- opening -------------------------------------------------------------------------------

    def _on_peer_properties(self, f: Fields) -> None:
        correlation = f.uint32()
        self.client_properties = f.properties()
        f.end()
        props = {k: v for k, v in self.broker.server_properties.items() if isinstance(v, str)}
        self._send(self._respond(Key.PEER_PROPERTIES, correlation).properties(props).frame())
        self.state = State.SASL_HANDSHAKE

    def _on_sasl_handshake(self, f: Fields) -> None:
        correlation = f.uint32()
        f.end()
        # (rabbit_stream_utils:auth_mechanisms/1: as AMQP 0-9-1's, checked live)
        self._send(self._respond(Key.SASL_HANDSHAKE, correlation).strings(
            list(self.broker.offered_mechanisms(tls=self.tls is not None))).frame())
        self.state = State.SASL_AUTHENTICATE

    def _on_sasl_authenticate(self, f: Fields) -> None:
        correlation = f.uint32()
        mechanism = f.string()
        data = f.bytes_()
        f.end()
        if mechanism not in self.broker.offered_mechanisms(tls=self.tls is not None):
            self._send(self._respond(Key.SASL_AUTHENTICATE, correlation,
                                     Code.SASL_MECHANISM_NOT_SUPPORTED).frame())
            return
        host, _, port = self.peer.rpartition(":")
        # (the kit's login, announced as rabbit_stream_reader's notify_auth_result; the event's
        # host is the client's, its port 0: what the listener does not say)
        client = Client("stream", "stream", peer_host=host.strip("[]"),
                        peer_port=int(port) if port.isdigit() else 0, host=host.strip("[]"),
                        loopback=self.loopback, tls=self.tls, loopback_event=False)
        try:
            user = login(self.broker, mechanism, data, client)
        except LoginRefused as refused:
            # (RabbitMQ's stream reader logs it as a warning)
            log.warning("stream connection %s: %s login refused: %s", self.peer,
                        log_text(mechanism), log_text(refused.reason))
            if refused.why == "loopback":
                self._send(self._respond(Key.SASL_AUTHENTICATE, correlation,
                                         Code.SASL_AUTHENTICATION_FAILURE_LOOPBACK).frame())
                self._close(Code.SASL_AUTHENTICATION_FAILURE_LOOPBACK,
                            f"user '{refused.user}' can only connect via localhost")
            else:
                self._send(self._respond(Key.SASL_AUTHENTICATE, correlation,
                                         Code.AUTHENTICATION_FAILURE).frame())
                self._close(Code.AUTHENTICATION_FAILURE, "authentication failure")
            return
        self.user = user
        self._send(self._respond(Key.SASL_AUTHENTICATE, correlation).frame())
        self._send(Writer(Key.TUNE).uint32(FRAME_MAX).uint32(HEARTBEAT).frame())
        self.state = State.TUNE

    def _on_tune(self, f: Fields) -> None:
        frame_max = f.uint32()
        heartbeat = f.uint32()
        f.end()
        self.frame_max = min(frame_max, FRAME_MAX) if frame_max else FRAME_MAX
        self.heartbeat = min(heartbeat, HEARTBEAT) if heartbeat else 0
        # (What it reads stays within INITIAL_FRAME_MAX until Open succeeds: _on_open.)
        self.state = State.OPEN

    def _on_open(self, f: Fields) -> None:
        correlation = f.uint32()
        vhost = f.string()
        f.end()
        try:
            host, _, port = self.peer.rpartition(":")
            self.model = self.broker.open_connection(
                vhost, user=self.user, client_properties=dict(self.client_properties),
                name=f"stream connection {self.peer}" if self.peer else None,
                kind=self.kind, node=self.node, details={"peer_host": host.strip("[]"),
                         "peer_port": int(port) if port.isdigit() else 0,
                         "host": host.strip("[]"), "mechanism": "PLAIN", "channel_max": 0,
                         "frame_max": self.frame_max, "heartbeat": self.heartbeat})
        except NotAllowed:
            self._send(self._respond(Key.OPEN, correlation,
                                     Code.VIRTUAL_HOST_ACCESS_FAILURE).frame())
            self._close(Code.VIRTUAL_HOST_ACCESS_FAILURE, f"access to vhost '{vhost}' refused")
            return
        self.vhost = vhost
        # What it reads from now on: RabbitMQ 3.10.8 checks no inbound frame against frame_max
        # (rabbit_stream_core:incoming_data/2, "TODO: check max frame size", v3.10.8 and v4.1.0),
        # so a client batching a Publish past it is served. embroker bounds what it buffers
        # for one frame by the broker's largest message instead (128 MiB, as RabbitMQ 3.10's
        # max_message_size; 16 MiB under the RabbitMQ 4 profile): FRAME_TOO_LARGE past it.
        # (Until now INITIAL_FRAME_MAX held, as RabbitMQ 4.3.5's reader switches from its
        # pre-authentication bound on a successful Open.)
        self._reader.frame_max = max(self.frame_max, self.broker.max_message_size)
        self.model.on_closed_by_broker = self.close
        self._channel = self.model.open_internal_channel()
        self._send(self._respond(Key.OPEN, correlation).properties({
            "advertised_host": self.advertised_host,
            "advertised_port": str(self.advertised_port)}).frame())
        self.state = State.OPENED

    def _on_heartbeat(self, f: Fields) -> None:
        f.end()

    def _on_close(self, f: Fields) -> None:
        correlation = f.uint32()
        f.uint16()
        self.close_reason = f.string()
        f.end()
        self._send(self._respond(Key.CLOSE, correlation).frame())
        self.connection_lost()

    # -- streams -------------------------------------------------------------------------------

    @property
    def channel(self) -> ModelChannel:
        assert self._channel is not None
        return self._channel

    def _on_create(self, f: Fields) -> None:
        correlation = f.uint32()
        stream = f.string()
        given = f.properties()
        f.end()
        try:
            created = self.channel.stream_create(stream, given)
        except AMQPError as exc:
            if exc.hard:  # (RabbitMQ's stream manager crashes, and takes this reader with it)
                self._drop(exc.reply_text)
                return
            code = _code(exc)
        else:
            code = Code.OK if created else Code.STREAM_ALREADY_EXISTS
        self._send(self._respond(Key.CREATE, correlation, code).frame())

    def _on_delete(self, f: Fields) -> None:
        correlation = f.uint32()
        stream = f.string()
        f.end()
        self._delete_streams(Key.DELETE, correlation,
                             lambda: self.channel.stream_delete(stream))

    def _delete_streams(self, key: Key, correlation: int, delete: Callable[[], None]) -> None:
        """Run ``delete`` (a stream, or a super stream and its partitions, go) and answer it;
        then this connection's own publishers and subscriptions on what went are told, after
        the response."""
        code: int = Code.OK
        self._deleting = True
        try:
            delete()
        except AMQPError as exc:
            code = _code(exc)
        finally:
            self._deleting = False
        self._send(self._respond(key, correlation, code).frame())
        gone, self._gone_later = self._gone_later, []
        for name in gone:
            self._send_not_available(name)

    def _advertised(self, node: Node) -> tuple[str, int]:
        # (no listener said otherwise: every node advertises this connection's endpoint)
        return self.advertised_host, self.advertised_port

    def _on_metadata(self, f: Fields) -> None:
        # rabbit_stream_reader (v3.10.8), {metadata, Streams}: each stream's topology
        # (rabbit_stream_manager:topology/2: its leader, or none while down, and its running
        # replicas); the nodes involved, each asked for its endpoint (one that does not answer
        # is left out); the brokers are those endpoints, distinct and sorted, each referred
        # to by its index (0xFFFF: no leader, as element_index/2 gives -1).
        correlation = f.uint32()
        streams = f.strings()
        f.end()
        topologies: list[tuple[str, AMQPError | tuple[Node | None, tuple[Node, ...]]]] = []
        for stream in streams:
            try:
                topologies.append((stream, self.channel.stream_topology(stream)))
            except AMQPError as exc:
                topologies.append((stream, exc))
        endpoints: dict[str, tuple[str, int] | None] = {}
        for _stream, topology in topologies:
            if not isinstance(topology, AMQPError):
                leader, replicas = topology
                for node in (leader, *replicas) if leader is not None else replicas:
                    if node.name not in endpoints:
                        endpoints[node.name] = self.endpoint_of(node)
        brokers = sorted({e for e in endpoints.values() if e is not None})
        index = {endpoint: i for i, endpoint in enumerate(brokers)}

        def reference(node: Node | None) -> int:
            endpoint = endpoints.get(node.name) if node is not None else None
            return index[endpoint] if endpoint is not None else 0xFFFF

        w = Writer(response_key(Key.METADATA)).uint32(correlation).int32(len(brokers))
        for i, (host, port) in enumerate(brokers):
            w.uint16(i).string(host).uint32(port)
        w.int32(len(streams))
        for stream, topology in topologies:
            if isinstance(topology, AMQPError):
                w.string(stream).uint16(_code(topology)).uint16(0xFFFF).int32(0)
                continue
            leader, replicas = topology
            known = [reference(r) for r in replicas if endpoints.get(r.name) is not None]
            w.string(stream).uint16(Code.OK).uint16(reference(leader)).int32(len(known))
            for ref in known:
                w.uint16(ref)
        self._send(w.frame())

    # -- streams deleted -----------------------------------------------------------------------

    def _monitor(self, stream: str, log: StreamLog) -> None:
        # Told when the stream is deleted, while it has publishers or subscriptions on it.
        if self._monitored.get(stream) is not log:
            self._monitored[stream] = log
            log.monitors[self] = lambda: self._stream_gone(stream)

    def _unmonitor_unused(self, stream: str) -> None:
        if any(p.stream == stream for p in self._publishers.values()) or \
                any(s.stream == stream for s in self._subscriptions.values()):
            return
        log = self._monitored.pop(stream, None)
        if log is not None:
            log.monitors.pop(self, None)

    def _stream_gone(self, stream: str) -> None:
        # A stream it publishes to or reads is deleted: its publishers and subscriptions on it
        # go, and it is told once (rabbit_stream_reader: clean_state_after_stream_deletion
        # ...: one MetadataUpdate STREAM_NOT_AVAILABLE per stream, checked live).
        self._monitored.pop(stream, None)
        for publisher_id in [i for i, p in self._publishers.items() if p.stream == stream]:
            del self._publishers[publisher_id]
        for subscription_id in [i for i, s in self._subscriptions.items() if s.stream == stream]:
            del self._subscriptions[subscription_id]  # (its reader went with the log)
        if self._deleting:
            self._gone_later.append(stream)
        else:
            self._send_not_available(stream)
            self._notify()

    def _send_not_available(self, stream: str) -> None:
        self._send(Writer(Key.METADATA_UPDATE).uint16(Code.STREAM_NOT_AVAILABLE)
                   .string(stream).frame())

    # -- publishing ----------------------------------------------------------------------------

    def _on_declare_publisher(self, f: Fields) -> None:
        correlation = f.uint32()
        publisher_id = f.uint8()
        reference = f.string()
        stream = f.string()
        f.end()
        code: int = Code.OK
        taken = publisher_id in self._publishers or (bool(reference) and any(
            p.stream == stream and p.reference == reference for p in self._publishers.values()))
        try:
            log = self.channel.stream_writer(stream, taken=taken)
        except AMQPError as exc:
            code = _code(exc)
        else:
            self._publishers[publisher_id] = _Publisher(stream, reference)
            self._monitor(stream, log)
        self._send(self._respond(Key.DECLARE_PUBLISHER, correlation, code).frame())

    def _on_delete_publisher(self, f: Fields) -> None:
        correlation = f.uint32()
        publisher_id = f.uint8()
        f.end()
        publisher = self._publishers.pop(publisher_id, None)
        if publisher is not None:
            self._unmonitor_unused(publisher.stream)
        code = Code.OK if publisher is not None else Code.PUBLISHER_DOES_NOT_EXIST
        self._send(self._respond(Key.DELETE_PUBLISHER, correlation, code).frame())

    def _on_publish(self, f: Fields) -> None:
        publisher_id = f.uint8()
        v2 = self._version == 2  # RabbitMQ 3.13+: each message with its filter value
        # (v1's entries may be sub-entries; v2 has none: "TODO handle filter value with
        # sub-batching", v4.1.0 rabbit_stream_reader)
        entries = [(f.uint64(), f.string_or_none(), f.bytes_()) if v2
                   else (f.uint64(), None, f.entry()) for _ in range(f.count())]
        f.end()
        publisher = self._publishers.get(publisher_id)
        if publisher is None:
            self._publish_errors(publisher_id, [pid for pid, _v, _d in entries],
                                 Code.PUBLISHER_DOES_NOT_EXIST)
            return
        profile = self.broker.profile
        try:
            confirmed = self.channel.stream_publish_batch(
                publisher.stream, entries, lambda data: from_stream(data, profile),
                reference=publisher.reference, filtered=v2)
        except AMQPError as exc:
            self._publish_errors(publisher_id, [pid for pid, _v, _d in entries], _code(exc))
            return
        if confirmed:
            w = Writer(Key.PUBLISH_CONFIRM).uint8(publisher_id).int32(len(confirmed))
            for publishing_id in confirmed:
                w.uint64(publishing_id)
            self._send(w.frame())

    def _publish_errors(self, publisher_id: int, ids: list[int], code: int) -> None:
        w = Writer(Key.PUBLISH_ERROR).uint8(publisher_id).int32(len(ids))
        for publishing_id in ids:
            w.uint64(publishing_id).uint16(code)
        self._send(w.frame())

    def _on_query_publisher_sequence(self, f: Fields) -> None:
        correlation = f.uint32()
        reference = f.string()
        stream = f.string()
        f.end()
        try:
            sequence = self.channel.stream_publisher_sequence(stream, reference)
        except AMQPError as exc:
            self._send(self._respond(Key.QUERY_PUBLISHER_SEQUENCE, correlation, _code(exc))
                       .uint64(0).frame())
            return
        self._send(self._respond(Key.QUERY_PUBLISHER_SEQUENCE, correlation)
                   .uint64(sequence).frame())

    # -- consuming -----------------------------------------------------------------------------

    def _on_subscribe(self, f: Fields) -> None:
        correlation = f.uint32()
        subscription_id = f.uint8()
        stream = f.string()
        offset_type = f.uint16()
        spec: OffsetSpec
        if offset_type in _OFFSET_TYPES:
            spec = _OFFSET_TYPES[offset_type]
        elif offset_type == 4:
            spec = f.uint64()
        elif offset_type == 5:
            spec = ("timestamp", f.int64())
        else:
            raise StreamProtocolError(f"unknown offset type {offset_type}")
        credit = f.uint16()
        properties = f.properties()
        f.end()
        rabbitmq4 = self.broker.profile.rabbitmq4
        filter_spec = _subscription_filter(properties) if rabbitmq4 else None
        # RabbitMQ 3.11+: single-active-consumer, in the group its "name" property names
        sac = rabbitmq4 and properties.get("single-active-consumer", "").lower() == "true"
        # (read permission, the stream, the subscription id, a single active consumer's name:
        # RabbitMQ's order, v3.10.8 and v4.1.4)
        try:
            log = self.channel.stream_reader(stream)
        except AMQPError as exc:
            self._send(self._respond(Key.SUBSCRIBE, correlation, _code(exc)).frame())
            return
        if subscription_id in self._subscriptions:
            self._send(self._respond(Key.SUBSCRIBE, correlation,
                                     Code.SUBSCRIPTION_ID_ALREADY_EXISTS).frame())
            return
        if sac and not properties.get("name"):
            self._send(self._respond(Key.SUBSCRIBE, correlation,
                                     Code.PRECONDITION_FAILED).frame())
            return
        self._send(self._respond(Key.SUBSCRIBE, correlation).frame())  # before any chunk
        subscription = _Subscription(stream, log, spec, credit, filter_spec)
        self._subscriptions[subscription_id] = subscription
        self._monitor(stream, log)
        if not sac:
            self._start(subscription_id, subscription, spec)
            return
        subscription.group = properties["name"]
        subscription.member = SacMember(lambda: self._activate(subscription_id))
        if log.join_group(subscription.group, subscription.member):
            self._activate(subscription_id)

    def _start(self, subscription_id: int, subscription: _Subscription,
               spec: OffsetSpec) -> None:
        # The subscription reads from ``spec``: its chunks go out as its credit allows.
        def on_chunk(chunk: Chunk) -> None:
            self._send(chunk_frame(subscription_id, chunk.first_offset, chunk.timestamp,
                                   _entries(chunk, self.broker.profile), len(chunk.messages),
                                   chunk.trailer))
            if self.unsent >= MAX_UNSENT:
                self._pause(subscription_id)
            self._notify()

        credit, subscription.credit = subscription.credit, 0
        # (known as the subscription's reader before it reads: on_chunk may pause it)
        reader = subscription.reader = subscription.log.reader(spec, 0, on_chunk,
                                                               subscription.filter)
        if self._paused:
            reader.pause()
        reader.add_credit(credit)

    def _activate(self, subscription_id: int) -> None:
        # A single active consumer becomes active: ask its client where to start
        # (ConsumerUpdate, active); it reads once the answer comes.
        if self.state is not State.OPENED or subscription_id not in self._subscriptions:
            return
        correlation = next(self._correlation)
        self._updates[correlation] = subscription_id
        self._send(Writer(Key.CONSUMER_UPDATE).uint32(correlation).uint8(subscription_id)
                   .uint8(1).frame())
        self._notify()

    def _on_consumer_update_response(self, f: Fields) -> None:
        correlation = f.uint32()
        code = f.uint16()
        offset_type = f.uint16()
        value = f.uint64() if offset_type in (4, 5) or f.remaining() >= 8 else 0
        subscription_id = self._updates.pop(correlation, None)
        subscription = self._subscriptions.get(subscription_id) \
            if subscription_id is not None else None
        if subscription is None or subscription.reader is not None:
            return
        spec: OffsetSpec = subscription.spec  # (type 0 or an error: what it subscribed with)
        if code == Code.OK and offset_type in _OFFSET_TYPES:
            spec = _OFFSET_TYPES[offset_type]
        elif code == Code.OK and offset_type == 4:
            spec = value
        elif code == Code.OK and offset_type == 5:
            spec = ("timestamp", value - (1 << 64) if value >= 1 << 63 else value)
        assert subscription_id is not None
        self._start(subscription_id, subscription, spec)

    def _stop(self, subscription: _Subscription) -> None:
        # Unsubscribed (or its connection gone): it reads no more; a single active consumer
        # leaves its group, which activates the next one.
        if subscription.reader is not None:
            subscription.reader.close()
        if subscription.group is not None and subscription.member is not None:
            subscription.log.leave_group(subscription.group, subscription.member)

    def _on_credit(self, f: Fields) -> None:
        subscription_id = f.uint8()
        credit = f.uint16()
        f.end()
        found = self._subscriptions.get(subscription_id)
        if found is None:  # answered only when something is wrong (PROTOCOL.adoc)
            self._send(Writer(response_key(Key.CREDIT)).uint16(
                Code.SUBSCRIPTION_ID_DOES_NOT_EXIST).uint8(subscription_id).frame())
            return
        if found.reader is None:
            found.credit += credit  # (an inactive single active consumer keeps it)
        else:
            found.reader.add_credit(credit)

    def _on_unsubscribe(self, f: Fields) -> None:
        correlation = f.uint32()
        subscription_id = f.uint8()
        f.end()
        found = self._subscriptions.pop(subscription_id, None)
        if found is not None:
            self._stop(found)
            self._unmonitor_unused(found.stream)
        self._send(self._respond(Key.UNSUBSCRIBE, correlation, Code.OK if found is not None
                                 else Code.SUBSCRIPTION_ID_DOES_NOT_EXIST).frame())

    def _on_store_offset(self, f: Fields) -> None:
        reference = f.string()
        stream = f.string()
        offset = f.uint64()
        f.end()
        try:
            self.channel.stream_store_offset(stream, reference, offset)
        except AMQPError:
            return  # no response to StoreOffset (PROTOCOL.adoc)

    def _on_query_offset(self, f: Fields) -> None:
        correlation = f.uint32()
        reference = f.string()
        stream = f.string()
        f.end()
        try:
            offset = self.channel.stream_query_offset(stream, reference)
        except AMQPError as exc:
            self._send(self._respond(Key.QUERY_OFFSET, correlation, _code(exc)).uint64(0)
                       .frame())
            return
        self._send(self._respond(Key.QUERY_OFFSET, correlation,
                                 Code.OK if offset is not None else Code.NO_OFFSET)
                   .uint64(offset or 0).frame())

    def _on_exchange_command_versions(self, f: Fields) -> None:
        correlation = f.uint32()
        for _ in range(f.count()):
            f.uint16()
            f.uint16()
            f.uint16()
        f.end()
        w = self._respond(Key.EXCHANGE_COMMAND_VERSIONS, correlation)
        w.int32(len(COMMAND_VERSIONS))
        for key, low, high in COMMAND_VERSIONS:
            w.uint16(key).uint16(low).uint16(high)
        self._send(w.frame())

    def _on_stream_stats(self, f: Fields) -> None:
        correlation = f.uint32()
        stream = f.string()
        f.end()
        try:
            stats = self.channel.stream_stats(stream)
        except AMQPError as exc:
            w = self._respond(Key.STREAM_STATS, correlation, _code(exc)).int32(0)
        else:
            w = self._respond(Key.STREAM_STATS, correlation).int32(len(stats))
            for key, value in stats.items():
                w.string(key).int64(value)
        self._send(w.frame())

    def _on_create_super_stream(self, f: Fields) -> None:
        correlation = f.uint32()
        name = f.string()
        partitions = f.strings()
        binding_keys = f.strings()
        arguments = f.properties()
        f.end()
        try:
            created = self.channel.super_stream_create(name, partitions, binding_keys,
                                                       arguments)
        except AMQPError as exc:
            code = _code(exc)
        else:
            code = Code.OK if created else Code.STREAM_ALREADY_EXISTS
        self._send(self._respond(Key.CREATE_SUPER_STREAM, correlation, code).frame())

    def _on_delete_super_stream(self, f: Fields) -> None:
        correlation = f.uint32()
        name = f.string()
        f.end()
        self._delete_streams(Key.DELETE_SUPER_STREAM, correlation,
                             lambda: self.channel.super_stream_delete(name))

    # -- super streams (3.10: Route and Partitions over an exchange's bindings) ---------------

    def _on_route(self, f: Fields) -> None:
        correlation = f.uint32()
        routing_key = f.string()
        super_stream = f.string()
        f.end()
        try:
            streams = self.channel.super_stream_route(super_stream, routing_key)
        except AMQPError as exc:
            self._send(self._respond(Key.ROUTE, correlation, _code(exc)).int32(0).frame())
            return
        self._send(self._respond(Key.ROUTE, correlation).strings(streams).frame())

    def _on_partitions(self, f: Fields) -> None:
        correlation = f.uint32()
        super_stream = f.string()
        f.end()
        try:
            streams = self.channel.super_stream_partitions(super_stream)
        except AMQPError as exc:
            self._send(self._respond(Key.PARTITIONS, correlation, _code(exc)).int32(0).frame())
            return
        self._send(self._respond(Key.PARTITIONS, correlation).strings(streams).frame())


def _subscription_filter(properties: dict[str, str]) -> FilterSpec | None:
    """A subscription's filter (RabbitMQ 3.13+, v4.1.4 rabbit_stream_reader): the values of the
    properties ``filter.N``, and ``match-unfiltered`` ``true``; none without filter values."""
    values = frozenset(v for k, v in properties.items() if k.startswith("filter."))
    if not values:
        return None
    return values, properties.get("match-unfiltered", "false").lower() == "true"


def _entries(chunk: Chunk, profile: Profile) -> list[Entry]:
    """A chunk's entries: as published over this protocol, or each message published over
    AMQP as :func:`~embroker.amqp10_common.to_stream` writes it."""
    if chunk.raw is not None:
        return list(chunk.raw)
    return [to_stream(m, profile) for m in chunk.messages if m is not None]
