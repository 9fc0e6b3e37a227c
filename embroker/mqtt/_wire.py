"""What embroker's two MQTT codecs share: :mod:`._packet` (3.1 and 3.1.1, as RabbitMQ 3.10.8's
``rabbit_mqtt_frame`` reads and writes them) and :mod:`._packet5` (5.0, and 3.1/3.1.1 as 3.13's
``rabbit_mqtt_packet`` reads them). Each codec says which packets its plugin reads and what it
refuses; the wire format both build on is here, once.

Theory of operation
-------------------
A packet is a fixed header (its type in the high four bits of the first byte, its flags in the
low four), a remaining length, and that many bytes. The remaining length takes one to four
bytes, seven bits each, least significant first, the high bit set on each byte but the last: a
fourth byte with its high bit set is malformed (:meth:`Reader._remaining_length`), so no body
is longer than 0x0FFFFFFF bytes.

:class:`Reader` buffers the bytes fed to it; each codec's ``_next`` reads the packet at the
head of the buffer, its header, its bounds, then its body (:meth:`Reader._take`), and parses
it with a :class:`Body`. A :class:`PacketError` is final, as each plugin's reader closes the
connection on one: the buffer is dropped and every later call raises it again.

Strings are ``str``: each byte sequence decoded as UTF-8, a byte that is not UTF-8 kept as a
lone surrogate (``surrogateescape``) and written back as that byte; neither plugin validates
them here (:meth:`Body.string`, :func:`utf8`).

Writing: :func:`packet` puts the fixed header before a body; it and :func:`string` bound
nothing (3.10's ``serialise_len/1`` writes whatever length it is given); 3.13's bounds are
:mod:`._packet5`'s.
"""

from __future__ import annotations

import enum
import struct
from typing import Final, Generic, TypeVar, final

__all__ = ["Body", "PacketError", "PacketType", "Reader", "packet", "pingresp", "string",
           "unread", "utf8", "varint"]

P = TypeVar("P")

_UINT16: Final = struct.Struct(">H")


class PacketType(enum.IntEnum):
    """A packet's type, the high four bits of its first byte."""

    CONNECT = 1
    CONNACK = 2
    PUBLISH = 3
    PUBACK = 4
    PUBREC = 5
    PUBREL = 6
    PUBCOMP = 7
    SUBSCRIBE = 8
    SUBACK = 9
    UNSUBSCRIBE = 10
    UNSUBACK = 11
    PINGREQ = 12
    PINGRESP = 13
    DISCONNECT = 14
    #: MQTT 5.0 only.
    AUTH = 15


@final
class PacketError(ValueError):
    """Bytes that are no packet the plugin reads.

    Attributes:
        reason: what (for the log).
        reason_code: the DISCONNECT reason code to send before closing, or ``None`` to close
            without a word (always ``None`` from :mod:`._packet`: 3.10 sends no DISCONNECT).
    """

    def __init__(self, reason: str, reason_code: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.reason_code = reason_code


def unread(kind: int, last: PacketType) -> PacketError:
    """The refusal of a packet type the plugin has no clause for, named if its protocol names
    it (types 1 to ``last``)."""
    name = PacketType(kind).name if 0 < kind <= last else str(kind)
    return PacketError(f"a {name} packet, which the plugin does not read")


class Body:
    """A packet's bytes, read field by field; running past them is a PacketError."""

    __slots__ = ("data", "offset")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    def take(self, n: int) -> bytes:
        data, start = self.data, self.offset
        end = start + n
        if end > len(data):
            raise PacketError("packet shorter than its fields")
        self.offset = end
        return data[start:end]

    def byte(self) -> int:
        return self.take(1)[0]

    def uint16(self) -> int:
        value: int = _UINT16.unpack(self.take(2))[0]
        return value

    def binary(self) -> bytes:
        """Binary data: a two-byte length, then that many bytes."""
        return self.take(self.uint16())

    def string(self) -> str:
        """A string: binary data (as :meth:`binary` reads it) decoded as UTF-8, a byte that is
        not UTF-8 kept as a lone surrogate."""
        return self.take(self.uint16()).decode("utf-8", "surrogateescape")

    def publish_header(self, flags: int) -> tuple[int, str, int | None]:
        """A PUBLISH's QoS (from its fixed header's flags: DUP, QoS, QoS, RETAIN), topic, and
        packet id (above QoS 0).

        Raises:
            PacketError: QoS 3 (3.10's parser refuses it, 3.13's processor crashes on it).
        """
        qos = (flags >> 1) & 3
        if qos == 3:
            raise PacketError("PUBLISH with QoS 3")
        topic = self.string()
        return qos, topic, (self.uint16() if qos else None)

    def rest(self) -> bytes:
        data = self.data
        chunk = data[self.offset:]
        self.offset = len(data)
        return chunk

    @property
    def done(self) -> bool:
        return self.offset == len(self.data)


class Reader(Generic[P]):
    """Packets from a byte stream: the buffering each codec's reader shares (see the module's
    notes); a subclass reads the packet at the head of the buffer in ``_next``."""

    __slots__ = ("_buffer", "_failed")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._failed: PacketError | None = None

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def next(self) -> P | None:
        """The next whole packet, or ``None`` until more bytes come.

        Raises:
            PacketError: the bytes are no packet the plugin reads, or pass a bound (and so
                will every call after).
        """
        if self._failed is not None:
            raise self._failed
        try:
            return self._next()
        except PacketError as error:
            self._failed = error
            self._buffer.clear()
            raise

    def _next(self) -> P | None:
        raise NotImplementedError

    def _remaining_length(self, malformed: str) -> tuple[int, int] | None:
        """Where the body of the packet at the head of the buffer starts, and its remaining
        length; ``None`` until the length's bytes come.

        Raises:
            PacketError: ``malformed`` (the plugin's word for it): a fourth length byte with
                its high bit set, refused as soon as it comes.
        """
        buffer = self._buffer
        length = 0
        position = 1
        while position < len(buffer):
            byte = buffer[position]
            length |= (byte & 0x7F) << (7 * position - 7)
            position += 1
            if byte < 0x80:
                return position, length
            if position == 5:
                raise PacketError(malformed)
        return None

    def _take(self, start: int, length: int) -> bytes | None:
        """The body of the packet at the head of the buffer (which it leaves), or ``None``
        until all of it has come."""
        buffer = self._buffer
        end = start + length
        if len(buffer) < end:
            return None
        body = bytes(buffer[start:end])
        del buffer[:end]
        return body


# -- writing ------------------------------------------------------------------------------------


def varint(n: int) -> bytes:
    """A remaining length (or MQTT 5.0's variable byte integer), unbounded."""
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def packet(first: int, body: bytes) -> bytes:
    """A packet: its first byte (type and flags), the remaining length, the body."""
    return bytes((first,)) + varint(len(body)) + body


def utf8(value: str) -> bytes:
    """A string's bytes: :meth:`Body.string` undone (a lone surrogate back to its byte)."""
    return value.encode("utf-8", "surrogateescape")


def string(value: str) -> bytes:
    """A string: a two-byte length (``struct.error`` over 65535 bytes), then :func:`utf8`."""
    data = utf8(value)
    return _UINT16.pack(len(data)) + data


def pingresp() -> bytes:
    return b"\xd0\x00"
