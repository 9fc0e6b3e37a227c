"""A small synchronous MQTT 3.1.1 client over a raw socket, for tests that watch exactly what a
broker sends (no MQTT library between the test and the wire).

- :meth:`RawMqtt.send` writes bytes as they are (:mod:`tests.mqtt.wire` builds the packets);
- :meth:`RawMqtt.read` returns the next :class:`Packet`, ``"closed"`` when the server closed
  the connection, or ``"timeout"`` when nothing whole came within the read timeout.

A :class:`Packet` keeps its bytes (``raw``) and what :func:`tests.mqtt.wire.parse` reads of
them (``name``, ``fields``).
"""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass
from typing import Any, Literal

from .wire import parse

Closed = Literal["closed", "timeout"]


@dataclass(frozen=True)
class Packet:
    raw: bytes

    @property
    def name(self) -> str:
        return str(parse(self.raw)[0][0])

    @property
    def fields(self) -> Any:
        return parse(self.raw)[0][1]


def split(data: bytes) -> tuple[bytes, bytes] | None:
    """The first whole packet of ``data`` and what follows (None: no whole packet yet)."""
    if len(data) < 2:
        return None
    length, multiplier, i = 0, 1, 1
    while True:
        if i >= len(data):
            return None
        byte = data[i]
        i += 1
        length += (byte & 0x7F) * multiplier
        multiplier *= 128
        if not byte & 0x80 or i > 4:
            break
    if len(data) < i + length:
        return None
    return data[:i + length], data[i + length:]


class RawMqtt:
    """One MQTT connection (TCP), written with bytes and read packet by packet."""

    def __init__(self, host: str, port: int, *, timeout: float = 2.0) -> None:
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=10)
        self._buffer = b""
        self.closed = False

    def send(self, data: bytes) -> None:
        """Write bytes as they are (a connection the server closed swallows them)."""
        try:
            self.sock.sendall(data)
        except OSError:
            self.closed = True

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

    def read(self, timeout: float | None = None) -> Packet | Closed:
        """The next packet, ``"closed"``, or ``"timeout"`` (a partly read packet stays
        buffered for the next read)."""
        while True:
            parsed = split(self._buffer)
            if parsed is not None:
                raw, self._buffer = parsed
                return Packet(raw)
            if (why := self._fill(self.timeout if timeout is None else timeout)) is not None:
                return why

    def abort(self) -> None:
        """Close abruptly: a TCP reset (no DISCONNECT)."""
        with contextlib.suppress(OSError):
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
        self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        self.closed = True

    def __enter__(self) -> RawMqtt:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
