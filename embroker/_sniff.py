"""One port, two protocols: the first 8 bytes a client sends say which connection serves it.

``AMQP 3 1 0 0`` (SASL), ``AMQP 0 1 0 0`` and ``AMQP 2 1 0 0`` (TLS) go to the AMQP 1.0
connection, as RabbitMQ does on port 5672; everything else (``AMQP 0 0 9 1`` first of all) to the
AMQP 0-9-1 one, which also answers a header it does not speak with its own and closes (section
4.2.2). An AMQP 1.0-only port sends every client to 1.0.

Until the header is complete the 0-9-1 connection holds the socket (its handshake time-out runs
from the connect); the 1.0 connection takes over when the header says 1.0. The listener sees one
small interface either way (``receive_data``, ``data_to_send``, ``has_output``,
``should_close``, ``tick``, ``close``, ``internal_error``, ``connection_lost``, ``blocked``,
``failure``, ``close_reason``, ``publishers_blocked``, ``publishers_unblocked``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, final

from .amqp091._connection import CHANNEL_MAX, FRAME_MAX
from .amqp091._connection import ServerConnection as Amqp091Connection
from .amqp091._frames import ProtocolHeaderKind, parse_protocol_header
from .amqp10._connection import ServerConnection as Amqp10Connection

if TYPE_CHECKING:
    from .amqp091._handshake import PeerCertificate
    from .model import Broker, Node

__all__ = ["SniffingConnection"]


@final
class SniffingConnection:
    """The connection of one socket: 0-9-1 until the protocol header says otherwise.

    Args:
        broker, peer, on_output, heartbeat, handshake_timeout, loopback, node: for the
            connection chosen.
        frame_max, channel_max: what the 0-9-1 connection's connection.tune offers.
        amqp10_only: a 1.0-only port: every client is served AMQP 1.0.
        amqp10: whether a 1.0 header is served 1.0 (RabbitMQ's rabbitmq_amqp1_0 plugin);
            ``False``: the 0-9-1 connection answers it as a protocol it does not speak (its
            own header, then it closes), as RabbitMQ without the plugin.
    """

    __slots__ = ("_args", "_connected_at", "_inbox", "_node", "_tls", "amqp10", "amqp10_only",
                 "inner", "loopback", "passthrough", "sniffed")

    def __init__(self, broker: Broker, *, peer: str = "",
                 on_output: Callable[[], None] | None = None, heartbeat: int = 60,
                 handshake_timeout: float = 10.0, loopback: bool = False,
                 amqp10_only: bool = False, tls: PeerCertificate | None = None,
                 frame_max: int = FRAME_MAX, channel_max: int = CHANNEL_MAX,
                 amqp10: bool = True, node: Node | None = None) -> None:
        self._args = (broker, peer, on_output, heartbeat, handshake_timeout)
        self._tls = tls
        self._node = node
        self.loopback = loopback
        self._connected_at = broker.clock.monotonic()
        self._inbox = b""
        self.amqp10_only = amqp10_only
        self.amqp10 = amqp10
        self.sniffed = False
        #: Its bytes go to :attr:`inner` as they are (once sniffed: a carrier,
        #: embroker._transport.CarryingConnection).
        self.passthrough = False
        #: The protocol's connection (0-9-1 until a 1.0 header arrives).
        self.inner: Amqp091Connection | Amqp10Connection = Amqp091Connection(
            broker, peer=peer, on_output=on_output, heartbeat=heartbeat, frame_max=frame_max,
            channel_max=channel_max, handshake_timeout=handshake_timeout, loopback=loopback, tls=tls,
            node=node)

    def receive_data(self, data: bytes) -> None:
        if self.sniffed or not data:
            self.inner.receive_data(data)
            return
        self._inbox += data
        header = parse_protocol_header(self._inbox)
        if header is None:
            return
        inbox, self._inbox = self._inbox, b""
        self.sniffed = self.passthrough = True
        if self.amqp10_only or (header.kind is ProtocolHeaderKind.AMQP_1_0 and self.amqp10):
            broker, peer, on_output, heartbeat, handshake_timeout = self._args
            self.inner = Amqp10Connection(broker, peer=peer, on_output=on_output,
                                          idle_time_out=heartbeat,
                                          handshake_timeout=handshake_timeout,
                                          connected_at=self._connected_at,
                                          loopback=self.loopback, tls=self._tls,
                                          node=self._node)
        self.inner.receive_data(inbox)

    # -- what the listener asks of every connection ---------------------------------------------

    def data_to_send(self) -> bytes:
        return self.inner.data_to_send()

    @property
    def has_output(self) -> bool:
        return self.inner.has_output

    @property
    def should_close(self) -> bool:
        return self.inner.should_close

    @property
    def blocked(self) -> bool:
        return self.inner.blocked

    @property
    def close_reason(self) -> object:
        return self.inner.close_reason

    @property
    def failure(self) -> Exception | None:
        return self.inner.failure

    @failure.setter
    def failure(self, value: Exception | None) -> None:
        self.inner.failure = value

    def tick(self) -> float | None:
        return self.inner.tick()

    @property
    def tick_keeps_deadlines(self) -> bool:
        return getattr(self.inner, "tick_keeps_deadlines", False)

    def close(self, error: Any) -> None:
        self.inner.close(error)

    def internal_error(self, error: Any) -> None:
        self.inner.internal_error(error)

    def connection_lost(self) -> None:
        self.inner.connection_lost()

    def publishers_blocked(self, reason: str) -> None:
        self.inner.publishers_blocked(reason)

    def publishers_unblocked(self) -> None:
        self.inner.publishers_unblocked()

    def __repr__(self) -> str:
        return f"<SniffingConnection {self.inner!r}>"
