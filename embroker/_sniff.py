"""One port, two protocols: the first 8 bytes a client sends say which connection serves it.

``AMQP 0 0 9 1`` (and any other 0-x header) goes to the AMQP 0-9-1 connection, ``AMQP 3 1 0 0``
(SASL) and ``AMQP 0 1 0 0`` (and the TLS header ``AMQP 2 1 0 0``) to the AMQP 1.0 one, as
RabbitMQ does on port 5672. Anything else goes to the 0-9-1 connection, which answers with its
protocol header and closes (section 4.2.2). An AMQP 1.0-only port sends every client to 1.0.

The listener sees one small interface either way (``receive_data``, ``data_to_send``,
``has_output``, ``should_close``, ``tick``, ``close``, ``connection_lost``, ``blocked``,
``publishers_blocked``, ``publishers_unblocked``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, final

from .amqp091._connection import ServerConnection as Amqp091Connection
from .amqp091._frames import ProtocolHeaderKind, parse_protocol_header
from .amqp10._connection import ServerConnection as Amqp10Connection

if TYPE_CHECKING:
    from .model import Broker

__all__ = ["SniffingConnection"]


@final
class SniffingConnection:
    """A connection that does not yet know its protocol; then the one it turned out to be.

    Args:
        broker, peer, on_output, heartbeat: passed on to the connection chosen.
        amqp10_only: a 1.0-only port: every client is served AMQP 1.0.
    """

    __slots__ = ("_args", "_inbox", "amqp10_only", "inner")

    def __init__(self, broker: Broker, *, peer: str = "",
                 on_output: Callable[[], None] | None = None, heartbeat: int = 60,
                 amqp10_only: bool = False) -> None:
        self._args = (broker, peer, on_output, heartbeat)
        self._inbox = b""
        self.amqp10_only = amqp10_only
        #: The protocol's connection once the header arrived, else ``None``.
        self.inner: Amqp091Connection | Amqp10Connection | None = None

    def receive_data(self, data: bytes) -> None:
        if self.inner is not None:
            self.inner.receive_data(data)
            return
        if not data:
            self._choose(b"").connection_lost()
            return
        self._inbox += data
        header = parse_protocol_header(self._inbox)
        if header is None:
            return
        inbox, self._inbox = self._inbox, b""
        self._choose(inbox, header.kind).receive_data(inbox)

    def _choose(self, inbox: bytes, kind: ProtocolHeaderKind | None = None) -> Any:
        broker, peer, on_output, heartbeat = self._args
        if self.amqp10_only or kind is ProtocolHeaderKind.AMQP_1_0:
            self.inner = Amqp10Connection(broker, peer=peer, on_output=on_output,
                                          idle_time_out=heartbeat)
        else:
            self.inner = Amqp091Connection(broker, peer=peer, on_output=on_output,
                                           heartbeat=heartbeat)
        return self.inner

    # -- what the listener asks of every connection ---------------------------------------------

    def data_to_send(self) -> bytes:
        return self.inner.data_to_send() if self.inner is not None else b""

    @property
    def has_output(self) -> bool:
        return self.inner is not None and self.inner.has_output

    @property
    def should_close(self) -> bool:
        return self.inner is not None and self.inner.should_close

    @property
    def blocked(self) -> bool:
        return self.inner is not None and self.inner.blocked

    def tick(self) -> float | None:
        return self.inner.tick() if self.inner is not None else None

    def close(self, error: Any) -> None:
        if self.inner is not None:
            self.inner.close(error)

    def connection_lost(self) -> None:
        if self.inner is not None:
            self.inner.connection_lost()

    def publishers_blocked(self, reason: str) -> None:
        if self.inner is not None:
            self.inner.publishers_blocked(reason)

    def publishers_unblocked(self) -> None:
        if self.inner is not None:
            self.inner.publishers_unblocked()

    def __repr__(self) -> str:
        return f"<SniffingConnection {self.inner!r}>"
