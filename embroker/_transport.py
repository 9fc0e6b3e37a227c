"""The transport core: what every sans-IO connection offers the code that carries its bytes,
what each port of the listener allows, and one view of a carried connection with its faults.

Theory of operation
-------------------
embroker's protocol connections (AMQP 0-9-1, AMQP 1.0, the management API's HTTP, the stream
protocol) are sans-IO: fed bytes, asked for bytes. Two transports carry them: the listener's
sockets (:mod:`embroker.server`) and the in-memory links (:mod:`embroker.memory`). Both speak to
a connection through :class:`SansIOConnection` alone.

The listener has one client type for every socket; what differs between its ports is data, a
:class:`PortPolicy`: how many connections the port holds, how much unwritten output a client
may leave before the loop stops reading it, and whether its clients speak AMQP. An AMQP client
(0-9-1 or 1.0, sniffed) is a broker connection (listed, open to faults), the batching policy
(:mod:`embroker._batching`) decides when it is read, and the loop feeds it under the broker's
lock; the management API's and the stream protocol's connections take the lock themselves.
Limits a connection enforces itself before it is authenticated (handshake and header timeouts,
header sizes) live in the connection and are passed to it from the policy where the listener
sets them (``handshake_timeout``).

A test sees a carried AMQP connection as a :class:`CarriedConnection`, whatever carries it: its
properties and its faults (kill, close, close a channel, stall) are written once, over a
:class:`Carrier`, which is the little each transport does its own way (the listener runs a fault
on its loop thread; a link runs it in the caller's thread under the broker's lock).
"""

from __future__ import annotations

import enum
import ssl
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from .amqp091 import ServerConnection as Amqp091Connection
from .amqp10 import ServerConnection as Amqp10Connection
from .errors import ChannelException, ConnectionException, error_for_code

if TYPE_CHECKING:
    from .model import Connection as ModelConnection

__all__ = ["PORT_KINDS", "CarriedConnection", "Carrier", "PortPolicy", "SansIOConnection",
           "client_properties"]

#: The kinds of port, as ``max_connections`` names them.
PORT_KINDS: Final = ("amqp", "management", "stream")


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

    def tick(self) -> None:
        """Timers: heartbeats, handshake and idle timeouts."""
        ...

    def internal_error(self, error: Exception) -> None:
        """A bug while serving it: close with the protocol's internal-error code."""
        ...


@dataclass(frozen=True, slots=True)
class PortPolicy:
    """What one kind of port allows its clients (the listener's ``_Port.policy``)."""

    #: ``"amqp"``, ``"amqp10"`` (AMQP 1.0 alone), ``"management"`` or ``"stream"``.
    kind: str
    #: The most connections the port holds at once (``None``: no limit).
    max_connections: int | None
    #: Bytes of output a client may leave unwritten before the loop stops reading its input
    #: (``None``: the connection decides, with ``blocked``).
    output_bound: int | None = None
    #: Its clients speak AMQP (0-9-1 or 1.0, sniffed): broker connections the loop feeds under
    #: the broker's lock and reads as the batching policy says, listed in
    #: ``server.connections`` and open to faults; the others are HTTP or stream clients.
    amqp: bool = False
    #: How long a socket may take to open its connection (RabbitMQ's ``handshake_timeout``).
    handshake_timeout: float = 10.0
    #: TLS between the socket and the connection (a TLS port: amqps, the stream protocol's
    #: or the management API's), or ``None``.
    tls: ssl.SSLContext | None = None

    @classmethod
    def for_amqp(cls, max_connections: int | None, *, amqp10_only: bool = False,
                 handshake_timeout: float = 10.0,
                 tls: ssl.SSLContext | None = None) -> PortPolicy:
        return cls("amqp10" if amqp10_only else "amqp", max_connections, amqp=True,
                   handshake_timeout=handshake_timeout, tls=tls)

    @classmethod
    def for_management(cls, max_connections: int | None, output_bound: int,
                       tls: ssl.SSLContext | None = None) -> PortPolicy:
        return cls("management", max_connections, output_bound, tls=tls)

    @classmethod
    def for_stream(cls, max_connections: int | None, output_bound: int,
                   tls: ssl.SSLContext | None = None) -> PortPolicy:
        return cls("stream", max_connections, output_bound, tls=tls)


class Carrier(Protocol):
    """How a transport carries one AMQP connection: what :class:`CarriedConnection` and its
    faults need of it (the listener's socket, or an in-memory link)."""

    @property
    def peer(self) -> str:
        """The client's address (``"127.0.0.1:53211"``, ``"memory:1"``)."""
        ...

    @property
    def protocol(self) -> Amqp091Connection | Amqp10Connection:
        """The protocol connection it carries (after the protocol header)."""
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
        """``"AMQP 0-9-1"`` or ``"AMQP 1.0"``."""
        return "AMQP 1.0" if isinstance(self._carrier.protocol, Amqp10Connection) else \
            "AMQP 0-9-1"

    @property
    def user(self) -> str:
        return self._carrier.protocol.user

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
            inner = self._carrier.protocol
            return sorted(inner.channels if isinstance(inner, Amqp091Connection)
                          else inner.sessions)

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
        if not isinstance(inner, Amqp091Connection):
            raise TypeError(f"{self!r} speaks AMQP 1.0: it has sessions, not channels")

        def close() -> None:
            if channel not in inner.channels:
                raise LookupError(f"no open channel {channel} on {self!r}; its channels "
                                  f"are {sorted(inner.channels)}")
            inner.close_channel(channel, error)
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


def client_properties(inner: Amqp091Connection | Amqp10Connection) -> dict[str, Any]:
    """What a client said of itself: 0-9-1's client properties; a 1.0 client's container id."""
    if isinstance(inner, Amqp091Connection):
        return inner.client_properties
    return {"container_id": inner.container_id} if inner.container_id else {}
