"""Where a connection comes from and where it arrived, as every protocol names them: the
client's and the listener's host and port, and the connection's name (``peer -> local``, as
RabbitMQ names a network connection)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

__all__ = ["Endpoints"]


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port) if port.isdigit() else 0


@final
@dataclass(frozen=True, slots=True)
class Endpoints:
    """A connection's two ends, each ``host:port`` (``[host]:port`` for IPv6; ``""``:
    unknown).

    >>> e = Endpoints("127.0.0.1:50000", "[::1]:61613")
    >>> e.peer_host, e.peer_port, e.host, e.port, e.name
    ('127.0.0.1', 50000, '::1', 61613, '127.0.0.1:50000 -> [::1]:61613')
    """

    peer: str = ""
    local: str = ""

    @property
    def peer_host(self) -> str:
        return _split(self.peer)[0]

    @property
    def peer_port(self) -> int:
        return _split(self.peer)[1]

    @property
    def host(self) -> str:
        return _split(self.local)[0]

    @property
    def port(self) -> int:
        return _split(self.local)[1]

    @property
    def name(self) -> str | None:
        """``peer -> local``, the name RabbitMQ gives a network connection (``None`` when the
        peer is unknown: the model names it)."""
        if not self.peer:
            return None
        return f"{self.peer} -> {self.local}" if self.local else self.peer
