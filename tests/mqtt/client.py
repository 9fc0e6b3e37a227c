"""A small synchronous MQTT 3.1.1 client over a raw socket, for tests that watch exactly what a
broker sends (no MQTT library between the test and the wire).

- :meth:`RawMqtt.send` writes bytes as they are (:mod:`tests.mqtt.wire` builds the packets);
- :meth:`RawMqtt.read` returns the next :class:`Packet`, ``"closed"`` when the server closed
  the connection, or ``"timeout"`` when nothing whole came within the read timeout
  (:class:`tests.raw_socket.RawSocket` reads; :func:`split` cuts a packet off).

A :class:`Packet` keeps its bytes (``raw``) and what :func:`tests.mqtt.wire.parse` reads of
them (``name``, ``fields``).
"""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass
from typing import Any

from tests.raw_socket import Closed, RawSocket

from .wire import parse


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


class RawMqtt(RawSocket):
    """One MQTT connection (TCP), written with bytes and read packet by packet."""

    def send(self, data: bytes) -> None:
        """Write bytes as they are (:mod:`tests.mqtt.wire` builds the packets)."""
        self.send_raw(data)

    def read(self, timeout: float | None = None) -> Packet | Closed:
        """The next packet, ``"closed"``, or ``"timeout"`` (a partly read packet stays
        buffered for the next read)."""
        got = self.receive(split, timeout)
        return got if isinstance(got, str) else Packet(got)

    def abort(self) -> None:
        """Close abruptly: a TCP reset (no DISCONNECT)."""
        with contextlib.suppress(OSError):
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
        self.close()
