"""A TCP connection for tests that watch exactly what a broker sends: bytes written as they
are, and read back one whole unit at a time (an MQTT packet, a STOMP frame), each read bounded
by a timeout. The protocol's client says how a unit is cut from what came
(:class:`tests.mqtt.client.RawMqtt`, :class:`tests.stomp.client.RawStomp`).

:meth:`RawSocket.receive` returns the next unit, ``"closed"`` when the server closed the
connection (or reset it), or ``"timeout"`` when nothing whole came within the timeout; a unit
partly read stays buffered for the next read.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable
from typing import Literal, TypeVar

from typing_extensions import Self

__all__ = ["Closed", "RawSocket"]

#: What a read returns in place of a unit: the server closed the connection, or nothing whole
#: came within the timeout.
Closed = Literal["closed", "timeout"]

Unit = TypeVar("Unit")


class RawSocket:
    """One TCP connection, written with bytes and read through a buffer."""

    def __init__(self, host: str, port: int, *, timeout: float = 2.0) -> None:
        #: How long a read waits for a whole unit by default.
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=10)
        self._buffer = b""
        self.closed = False

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (a connection the server closed swallows them)."""
        try:
            self.sock.sendall(data)
        except OSError:
            self.closed = True

    def receive(self, cut: Callable[[bytes], tuple[Unit, bytes] | None],
                timeout: float | None = None) -> Unit | Closed:
        """The next unit, ``"closed"`` or ``"timeout"`` (nothing whole within ``timeout``,
        default :attr:`timeout`).

        Args:
            cut: the first whole unit of the bytes it is given and what follows it (None: no
                whole unit yet).
        """
        while True:
            parsed = cut(self._buffer)
            if parsed is not None:
                unit, self._buffer = parsed
                return unit
            if (why := self._fill(self.timeout if timeout is None else timeout)) is not None:
                return why

    def _fill(self, timeout: float) -> Closed | None:
        if self.closed:
            return "closed"
        self.sock.settimeout(timeout)
        try:
            chunk = self.sock.recv(65536)
        except TimeoutError:
            return "timeout"
        except OSError:  # reset by the server
            chunk = b""
        if not chunk:
            self.closed = True
            return "closed"
        self._buffer += chunk
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        self.closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
