"""The transport core: what every sans-IO connection offers the code that carries its bytes,
what each port of the listener allows, and one view of a carried connection with its faults.

Theory of operation
-------------------
embroker's protocol connections (AMQP 0-9-1, AMQP 1.0, the management API's HTTP, the stream
protocol) are sans-IO: fed bytes, asked for bytes. Two transports carry them: the listener's
sockets (:mod:`embroker.server`) and the in-memory links (:mod:`embroker.memory`). Both speak to
a connection through :class:`SansIOConnection` alone.

The listener has one client type for every socket; what differs between its ports is data: the
port's registered kind (:class:`PortKind`: its connection factory, RabbitMQ's name for its
listener, its plugin, whether the loop feeds it under the broker's lock and batches it, whether
its connections are broker connections, listed and open to faults) and its :class:`PortPolicy`
(how many connections the port holds, how much unwritten output a client may leave before the
loop stops reading it). The built-in kinds (AMQP, sniffed 0-9-1 or 1.0; AMQP 1.0 alone; the
management API; the stream protocol; a node's control port) register themselves from
``embroker._builtin_ports``, read the first time the registry is: this module and the listener
import no protocol. A broker connection of any kind answers one interface,
:class:`BrokerConnection` (its model connection, user, state, channels; close; told of
alarms and restarts), and a connection that carries another (:class:`CarryingConnection`: AMQP's
sniffing, a WebSocket) is reached through. Limits a connection enforces itself before it is
authenticated (handshake and header timeouts, header sizes) live in the connection and are
passed to it from the policy where the listener sets them (``handshake_timeout``).

A test sees a carried broker connection as a :class:`CarriedConnection`, whatever carries it: its
properties and its faults (kill, close, close a channel, stall) are written once, over a
:class:`Carrier`, which is the little each transport does its own way (the listener runs a fault
on its loop thread; a link runs it in the caller's thread under the broker's lock).
"""

from __future__ import annotations

import enum
import ssl
from collections.abc import Callable, Collection, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from .errors import ChannelException, ConnectionException, InternalError, error_for_code

if TYPE_CHECKING:
    from .model import Broker, Node
    from .model import Connection as ModelConnection
    from .model._kinds import ConnectionKind

__all__ = ["PORT_KINDS", "Accepted", "BrokerConnection", "CarriedConnection", "Carrier",
           "CarryingConnection", "ConnectionFactory", "PortKind", "PortPolicy",
           "SansIOConnection", "broker_connection", "client_properties", "port_kind", "port_kinds",
           "register_port_kind", "unregister_port_kind"]


class SansIOConnection(Protocol):
    """What a transport asks of a protocol connection."""

    def receive_data(self, data: bytes) -> None:
        """Take bytes the peer sent (``b""``: the peer closed its side)."""
        ...

    def data_to_send(self) -> bytes:
        """The bytes to write now (taken: asked again, they are not given twice)."""
        ...

    @property
    def has_output(self) -> bool:
        """There are bytes to write, or the connection should close."""
        ...

    @property
    def blocked(self) -> bool:
        """The connection takes no more input for now (a resource alarm, a full buffer)."""
        ...

    @property
    def should_close(self) -> bool:
        """Close the transport once what is to send is written."""
        ...

    @property
    def failure(self) -> BaseException | None:
        """An error met while sending to it in another connection's work (a delivery that
        could not be written): the transport closes it with its internal error, and clears
        it (sets it to ``None``)."""
        ...

    def tick(self) -> float | None:
        """Timers: heartbeats, handshake and idle timeouts; when it wants its next tick (the
        broker clock's monotonic time), or ``None``.

        A connection whose class sets ``tick_keeps_deadlines = True`` promises that nothing
        falls due before that time (``None``: nothing until it reads or writes): the listener
        then leaves it alone until then (AMQP 0-9-1's; ``embroker._listener_loop._Loop._tick``).
        Without it, the listener calls ``tick()`` at every look, every half second."""
        ...

    def internal_error(self, error: InternalError) -> None:
        """A bug while serving it: close with the protocol's internal-error code."""
        ...


class BrokerConnection(SansIOConnection, Protocol):
    """What the listener, the faults, the listings, restarts and resource alarms ask of a
    protocol connection that is a broker connection (AMQP 0-9-1, AMQP 1.0, the stream
    protocol; STOMP and MQTT next): one interface, whatever the protocol.

    RabbitMQ's readers (``rabbit_reader``, ``rabbit_amqp1_0_reader``,
    ``rabbit_stream_reader``, v3.10.8) each answer the same questions of the node: who the
    connection is (its user, what the client said of itself), its channels, and how it closes
    when the node forces it (``rabbit_networking:close_connection/2``), stops, or raises an alarm.
    """

    @property
    def kind(self) -> ConnectionKind:
        """Its model connection's kind (``model.ConnectionKind``: how an alarm holds it, how
        the listings name its protocol)."""
        ...

    @property
    def model(self) -> ModelConnection | None:
        """The broker-side connection (``None`` until the client opened it)."""
        ...

    @property
    def user(self) -> str | None:
        """The user it logged in as (``""`` or ``None`` before)."""
        ...

    @property
    def state(self) -> enum.Enum:
        """Where the connection is: open, or a handshake or closing step (its protocol's)."""
        ...

    @property
    def client_properties(self) -> dict[str, Any]:
        """What the client said of itself (0-9-1's client properties, a 1.0 client's container
        id, the stream protocol's peer properties)."""
        ...

    @property
    def channel_numbers(self) -> Collection[int]:
        """The numbers of its open channels (AMQP 1.0: its sessions; none for the stream
        protocol)."""
        ...

    #: Whether a resource alarm of its kind holds it from being read now (a kind whose alarms
    #: hold it from reading: ``AlarmBlocking.READING``); set by the listener.
    held_by_alarm: bool

    #: When the application stops (``rabbitmqctl stop_app``) its socket ends at once, with
    #: nothing more written (RabbitMQ's 1.0 and stream readers); else its close is written.
    stops_silently: bool

    def close(self, error: ConnectionException) -> None:
        """Close from the broker's side, as the protocol does (0-9-1's connection.close, 1.0's
        close with ``amqp:connection:forced``, the stream protocol's socket end)."""
        ...

    def publishers_blocked(self, reason: str) -> None:
        """A resource alarm blocks publishers (a kind held when it publishes)."""
        ...

    def publishers_unblocked(self) -> None:
        """The alarms cleared."""
        ...

    def on_restart(self) -> None:
        """The broker restarts (``Broker.restart``, ``rabbitmqctl stop_app``): close as the
        protocol's reader does when its node stops (or nothing, where its model connection
        tells it)."""
        ...

    def killed(self, reason: str) -> None:
        """Its transport is ended with no close (a fault): ``reason`` is why, for its log."""
        ...

    def connection_lost(self) -> None:
        """The transport is gone: release what the connection holds."""
        ...


class CarryingConnection(SansIOConnection, Protocol):
    """A connection that carries another (AMQP's protocol-header sniffing, a WebSocket): the
    listener reaches the broker connection through :attr:`inner`, and tells the carrier what
    it tells a broker connection's transport (:meth:`close`, :meth:`publishers_blocked`,
    :meth:`publishers_unblocked`, ``internal_error``, ``connection_lost``), which passes it on
    (a WebSocket carrier: after its own framing)."""

    def close(self, error: ConnectionException) -> None:
        ...

    def publishers_blocked(self, reason: str) -> None:
        ...

    def publishers_unblocked(self) -> None:
        ...

    def connection_lost(self) -> None:
        ...

    @property
    def inner(self) -> SansIOConnection:
        """The connection it carries (a broker connection, or another carrier)."""
        ...

    #: Whether its bytes may be fed to :attr:`inner` directly now (the carrier adds nothing
    #: to them any more: sniffing, once the header chose).
    passthrough: bool


def broker_connection(conn: SansIOConnection) -> Any:
    """The connection ``conn`` carries, through every carrier (``conn`` itself if it is no
    carrier): a :class:`BrokerConnection` on a port kind whose connections are broker ones;
    ``None`` while a carrier carries nothing yet (a WebSocket before its handshake)."""
    while hasattr(conn, "passthrough"):  # (a carrier)
        inner = getattr(conn, "inner", None)
        if inner is None:
            return None
        conn = inner
    return conn


@dataclass(frozen=True, slots=True)
class PortPolicy:
    """What one port allows its clients (the listener's ``_Port.policy``): its kind's defaults
    (:class:`PortKind`), with the server's settings."""

    #: Its kind's name (:func:`port_kind`): ``"amqp"``, ``"amqp10"`` (AMQP 1.0 alone),
    #: ``"management"``, ``"stream"``, ``"control"``...
    kind: str
    #: The most connections the port holds at once (``None``: no limit).
    max_connections: int | None
    #: Bytes of output a client may leave unwritten before the loop stops reading its input
    #: (``None``: the connection decides, with ``blocked``).
    output_bound: int | None = None
    #: How long a socket may take to open its connection (RabbitMQ's ``handshake_timeout``).
    handshake_timeout: float = 10.0
    #: TLS between the socket and the connection (a TLS port: amqps, the stream protocol's
    #: or the management API's), or ``None``.
    tls: ssl.SSLContext | None = None


@dataclass(frozen=True, slots=True)
class Accepted:
    """A socket a port accepted, as its kind's connection factory sees it."""

    #: The listener (:class:`embroker.server.Server`: its settings, ``heartbeat``...).
    listener: Any
    broker: Broker
    #: The client's address (``"127.0.0.1:53211"``) and the address it reached.
    peer: str
    local: str
    #: Whether it came over a loopback interface (``rabbit_net:is_loopback/1``).
    loopback: bool
    #: Its TLS session (its peer's certificate: SASL EXTERNAL), on a TLS port; else ``None``.
    tls: Any
    policy: PortPolicy
    #: Call it (under the broker's lock, from any thread) when the connection has output its
    #: own input did not cause (a delivery, a confirm): the loop writes it.
    on_output: Callable[[], None]
    #: The subprotocol a carrier negotiated for it (a WebSocket's ``Sec-WebSocket-Protocol``:
    #: ``v12.stomp``, ``mqtt``), or ``None``.
    subprotocol: str | None = None
    #: The port it reached (``local`` is the address alone), 0 when unknown.
    local_port: int = 0
    #: The node of the broker's cluster it reached (the listener's ``node``): its connection
    #: opens there (``Broker.open_connection(node=...)``); ``None``: the first.
    node: Node | None = None

    @property
    def local_address(self) -> str:
        """``host:port`` it reached (``[host]:port`` for IPv6), as connection names show it."""
        host = f"[{self.local}]" if ":" in self.local else self.local
        return f"{host}:{self.local_port}"


#: What makes the connection serving an accepted socket.
ConnectionFactory = Callable[[Accepted], SansIOConnection]


@dataclass(frozen=True, slots=True)
class PortKind:
    """One kind of port the listener serves: what its connections are and how the loop treats
    them. A new protocol is one :func:`register_port_kind`; the listener's constructor
    (``listeners=``), ``open_listener``, the accept loop, the listings, faults, restarts and
    alarms read these fields, never the kind's name.

    Attributes:
        name: its name (``max_connections``' keys, ``open_listener``'s ``kind``).
        factory: the connection serving each accepted socket (``None``: the listener's own,
            the node's control port).
        protocol, tls_protocol: RabbitMQ's name of its listener in ``rabbitmq-diagnostics
            listeners`` (``"amqp"``, ``"amqp/ssl"``, ``"http"``, ``"stream/ssl"``...), plain
            and over TLS (``None``: not listed).
        plugin: the plugin that brings its listener (``rabbitmq_stream``...; ``None``: the
            broker's own).
        limit: the ``max_connections`` key its ports count under (``None``: no such key; an
            AMQP 1.0-only port counts as ``"amqp"``).
        max_connections: its default most connections a port holds (``None``: no limit).
        stranger: a stranger reaches it before any login (HTTP, the stream protocol): at most
            a quarter of the descriptors each, half with the others (the stranger budget).
        output_bound: its default unwritten output past which a client is not read.
        locked: the loop feeds it under the broker's lock and reads it as the batching policy
            says (else the connection takes the lock itself).
        broker: its connections are broker connections (:class:`BrokerConnection`): told of
            restarts and alarms, in the management API's connections.
        listed: its connections are in ``server.connections``, open to faults.
        on_demand: its listeners open and close on a running node (``open_listener``, a
            plugin's ``rabbitmq-plugins enable``); the AMQP ports are the listener's own.
    """

    name: str
    factory: ConnectionFactory | None
    protocol: str | None = None
    tls_protocol: str | None = None
    plugin: str | None = None
    limit: str | None = None
    max_connections: int | None = None
    stranger: bool = False
    output_bound: int | None = None
    locked: bool = False
    broker: bool = False
    listed: bool = False
    on_demand: bool = True

    def policy(self, max_connections: int | None, *, handshake_timeout: float = 10.0,
               tls: ssl.SSLContext | None = None) -> PortPolicy:
        """A port's policy of this kind."""
        return PortPolicy(self.name, max_connections, self.output_bound,
                          handshake_timeout=handshake_timeout, tls=tls)


_KINDS: dict[str, PortKind] = {}
_LOADED: list[bool] = []  # (once the built-in kinds are registered)


def _registry() -> dict[str, PortKind]:
    if not _LOADED:
        _LOADED.append(True)
        from . import _builtin_ports  # (the protocols register themselves)
        del _builtin_ports
    return _KINDS


def register_port_kind(kind: PortKind) -> None:
    """Serve ``kind``'s ports from now on (``Server(listeners={name: port})``,
    ``open_listener``); a kind of the same name is replaced."""
    _registry()[kind.name] = kind


def unregister_port_kind(name: str) -> None:
    """Forget a registered kind (a test's own)."""
    _registry().pop(name, None)


def port_kind(name: str) -> PortKind:
    """The registered kind called ``name``.

    Raises:
        LookupError: no such kind.
    """
    try:
        return _registry()[name]
    except KeyError:
        raise LookupError(f"no port kind {name!r}: the kinds are "
                          f"{', '.join(map(repr, _registry()))}") from None


def port_kinds() -> list[PortKind]:
    """The registered kinds, in the order they were registered."""
    return list(_registry().values())


class _LimitNames(Collection[str]):
    """The kinds of port, as ``max_connections`` names them: the registry's, read live."""

    def _names(self) -> list[str]:
        return list(dict.fromkeys(k.limit for k in _registry().values() if k.limit))

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __len__(self) -> int:
        return len(self._names())

    def __repr__(self) -> str:
        return repr(tuple(self._names()))


#: The kinds of port, as ``max_connections`` names them (``"amqp"``, ``"management"``,
#: ``"stream"``, and each registered kind's).
PORT_KINDS: Final[Collection[str]] = _LimitNames()


class Carrier(Protocol):
    """How a transport carries one AMQP connection: what :class:`CarriedConnection` and its
    faults need of it (the listener's socket, or an in-memory link)."""

    @property
    def peer(self) -> str:
        """The client's address (``"127.0.0.1:53211"``, ``"memory:1"``)."""
        ...

    @property
    def protocol(self) -> BrokerConnection:
        """The broker connection it carries (after the protocol header)."""
        ...

    def locked(self) -> AbstractContextManager[object]:
        """Hold the broker still."""
        ...

    def alive(self) -> bool:
        """The transport still carries bytes (the socket is open, the link has not ended)."""
        ...

    def act(self, action: Callable[[], None]) -> None:
        """Run ``action`` under the broker's lock where the transport runs it (the listener's
        loop thread), then write what it caused; its exceptions are raised here."""
        ...

    def kill(self, reset: bool) -> None:
        """End the transport with no connection.close (``reset``: a TCP RST)."""
        ...

    def stall(self, seconds: float) -> None:
        """Write nothing to the client for ``seconds``."""
        ...

    def drop_after_delivery(self) -> None:
        """End the transport once the delivery being written now is written (under the
        broker's lock, on any thread: the model calls it as it delivers)."""
        ...


class CarriedConnection:
    """A client connection as a test sees it, with the faults a test can inject into it: one
    implementation for every transport (:class:`embroker.server.ClientConnection`,
    :class:`embroker.memory.MemoryConnection`). Each fault has happened when the call returns.

    Attributes:
        peer: the client's address (``"127.0.0.1:53211"``, ``"memory:1"``).
        client_properties: what the client said of itself in connection.start-ok (an AMQP 1.0
            client: its container id).
        connection_name: the name the client gave (``client_properties["connection_name"]``).
    """

    __slots__ = ("_carrier", "client_properties", "connection_name", "peer")

    def __init__(self, carrier: Carrier) -> None:
        self._carrier = carrier
        self.peer = carrier.peer
        self.client_properties: dict[str, Any] = dict(client_properties(carrier.protocol))
        name = self.client_properties.get("connection_name")
        self.connection_name: str | None = name if isinstance(name, str) else None

    @property
    def product(self) -> str | None:
        """The client library (``client_properties["product"]``: ``"Pika Python Client
        Library"``...)."""
        product = self.client_properties.get("product")
        return product if isinstance(product, str) else None

    @property
    def protocol(self) -> str:
        """``"AMQP 0-9-1"``, ``"AMQP 1.0"``... (its connection kind's name)."""
        return self._carrier.protocol.kind.name

    @property
    def user(self) -> str:
        return self._carrier.protocol.user or ""

    @property
    def model(self) -> ModelConnection | None:
        """The broker-side connection (``None`` until connection.open / open)."""
        return self._carrier.protocol.model

    @property
    def vhost(self) -> str | None:
        model = self._carrier.protocol.model
        return model.vhost.name if model is not None else None

    @property
    def state(self) -> enum.Enum:
        """Where the connection is: ``OPEN``, or a handshake or closing step (the protocol's
        ``ConnectionState``)."""
        return self._carrier.protocol.state

    @property
    def is_open(self) -> bool:
        carrier = self._carrier
        with carrier.locked():
            inner = carrier.protocol
            return inner.model is not None and not inner.should_close and carrier.alive()

    @property
    def channels(self) -> list[int]:
        """The numbers of its open channels (an AMQP 1.0 connection's sessions)."""
        with self._carrier.locked():
            return sorted(self._carrier.protocol.channel_numbers)

    def __repr__(self) -> str:
        name = f" {self.connection_name!r}" if self.connection_name else ""
        return (f"<{type(self).__name__}{name} from {self.peer} "
                f"({self.product or 'unknown client'}), {self.state.value}>")

    # -- faults --------------------------------------------------------------------------------

    def kill(self, *, reset: bool = False) -> None:
        """End the connection abruptly, with no connection.close (as a broker that crashes, or
        a network that fails): unacknowledged messages go back to their queues and the client
        sees its connection lost. ``reset`` sends a TCP RST instead of a FIN (an in-memory
        link has none: the same end)."""
        self._carrier.kill(reset)

    def close(self, reply_code: int = 320,
              reply_text: str = "broker forced connection closure with reason 'shutdown'",
              ) -> None:
        """Close the connection from the broker's side with connection.close carrying
        ``reply_code`` (a connection exception: 320, 501-541) and ``reply_text`` (the text
        after the reply name: ``"CONNECTION_FORCED - <reply_text>"``)."""
        error = error_for_code(reply_code, reply_text)
        if not isinstance(error, ConnectionException):
            raise ValueError(f"{reply_code} is a channel exception: use close_channel()")
        self._carrier.act(lambda: self._carrier.protocol.close(error))

    def close_channel(self, channel: int, reply_code: int = 406,
                      reply_text: str = "closed by a test (embroker.faults)") -> None:
        """Close one channel from the broker's side with channel.close carrying ``reply_code``
        (a channel exception: 403, 404, 405, 406...) and ``reply_text``; its unacknowledged
        messages go back to their queues.

        Raises:
            LookupError: the connection has no such open channel.
        """
        error = error_for_code(reply_code, reply_text)
        if not isinstance(error, ChannelException):
            raise ValueError(f"{reply_code} is a connection exception: use close()")
        inner = self._carrier.protocol
        close_channel: Callable[[int, ChannelException], None] | None = getattr(
            inner, "close_channel", None)
        if close_channel is None:
            raise TypeError(f"{self!r} speaks {inner.kind.name}: it has no channels a test "
                            "can close (AMQP 1.0: sessions, not channels)")

        def close() -> None:
            numbers = inner.channel_numbers
            if channel not in numbers:
                raise LookupError(f"no open channel {channel} on {self!r}; its channels "
                                  f"are {sorted(numbers)}")
            close_channel(channel, error)
        self._carrier.act(close)

    def drop_after_delivery(self) -> None:
        """End the connection, with no connection.close, right after the delivery being
        written to it now (a consumer that crashes mid-message; ``Faults.drop_on_delivery``)."""
        self._carrier.drop_after_delivery()

    def stall(self, seconds: float) -> None:
        """Write nothing to this client for ``seconds`` (the listener: real time; an in-memory
        link: the broker's clock): it stops hearing from the broker, heartbeats included, so a
        client with heartbeats shorter than that times out. What was held is written
        afterwards."""
        self._carrier.stall(seconds)


def client_properties(inner: SansIOConnection) -> dict[str, Any]:
    """What a client said of itself: 0-9-1's client properties; a 1.0 client's container id
    (``{}`` for a connection that is no broker connection)."""
    found = getattr(inner, "client_properties", None)
    return dict(found) if found else {}
