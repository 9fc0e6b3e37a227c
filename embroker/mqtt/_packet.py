"""MQTT 3.1 and 3.1.1 packets: a sans-IO reader and the writers, as RabbitMQ 3.10.8's
``rabbit_mqtt_frame`` reads and writes them.

Theory of operation
-------------------
A packet is a fixed header (the type in the high four bits of its first byte, the flags in
the low four: DUP, QoS, RETAIN on PUBLISH), a remaining length (one to four bytes, seven bits
each, least significant first) and that many bytes. :class:`PacketReader` reads what the
plugin reads, and refuses as it refuses (the plugin's parser crashes, and its reader closes
the connection): a CONNECT whose protocol name and level are not ``MQIsdp``/3 or ``MQTT``/4,
or that holds bytes past its last field; a SUBSCRIBE or UNSUBSCRIBE whose flags are not
``0010``; a PINGREQ or DISCONNECT with a body. The packets the plugin never reads (PUBREC,
PUBREL, PUBCOMP, and the server's own) are refused here too: the plugin's reader would wait
for more bytes forever.

Strings are kept as ``str``, each byte sequence decoded as UTF-8 and a byte that is not UTF-8
kept as a lone surrogate (``surrogateescape``): RabbitMQ 3.10 takes them as byte lists.

Unlike RabbitMQ 3.10, the reader is bounded (:attr:`PacketReader.max_packet`): before CONNECT,
:data:`LOGIN_PACKET_MAX`; its owner raises it once logged in.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field
from typing import Final, final

__all__ = ["LOGIN_PACKET_MAX", "Connect", "Disconnect", "PacketError", "PacketReader",
           "PacketType", "PingReq", "PubAck", "Publish", "Subscribe", "Unsubscribe", "Will",
           "connack", "pingresp", "puback", "publish", "suback", "unsuback"]

#: The most bytes a packet may take before the client has logged in (a CONNECT with its will).
LOGIN_PACKET_MAX: Final = 1024 * 1024
#: The largest remaining length the encoding carries (``?MAX_LEN``).
MAX_LENGTH: Final = 0x0FFFFFFF
#: The protocol names and levels the plugin speaks (``?PROTOCOL_NAMES``).
PROTOCOLS: Final = {3: "MQIsdp", 4: "MQTT"}


class PacketType(enum.IntEnum):
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


@final
class PacketError(ValueError):
    """Bytes that are no packet the plugin reads: ``reason`` says what (for the log)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@final
@dataclass(frozen=True, slots=True)
class Will:
    """A CONNECT's last will."""

    topic: str
    payload: bytes
    qos: int
    retain: bool


@final
@dataclass(frozen=True, slots=True)
class Connect:
    level: int
    clean_session: bool
    keep_alive: int
    client_id: str
    will: Will | None = None
    username: str | None = None
    password: str | None = None


@final
@dataclass(frozen=True, slots=True)
class Publish:
    topic: str
    payload: bytes
    qos: int = 0
    retain: bool = False
    dup: bool = False
    packet_id: int | None = None


@final
@dataclass(frozen=True, slots=True)
class PubAck:
    packet_id: int


@final
@dataclass(frozen=True, slots=True)
class Subscribe:
    packet_id: int
    #: Each topic filter and the QoS asked, in the packet's order.
    topics: list[tuple[str, int]] = field(default_factory=list)


@final
@dataclass(frozen=True, slots=True)
class Unsubscribe:
    packet_id: int
    topics: list[str] = field(default_factory=list)


@final
@dataclass(frozen=True, slots=True)
class PingReq:
    pass


@final
@dataclass(frozen=True, slots=True)
class Disconnect:
    pass


Packet = Connect | Publish | PubAck | Subscribe | Unsubscribe | PingReq | Disconnect


class _Body:
    """A packet's bytes, read field by field; running past them is a PacketError."""

    __slots__ = ("data", "offset")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    def take(self, n: int) -> bytes:
        end = self.offset + n
        if end > len(self.data):
            raise PacketError("packet shorter than its fields")
        chunk = self.data[self.offset:end]
        self.offset = end
        return chunk

    def byte(self) -> int:
        return self.take(1)[0]

    def uint16(self) -> int:
        value: int = struct.unpack(">H", self.take(2))[0]
        return value

    def binary(self) -> bytes:
        return self.take(self.uint16())

    def string(self) -> str:
        return self.binary().decode("utf-8", "surrogateescape")

    def rest(self) -> bytes:
        chunk = self.data[self.offset:]
        self.offset = len(self.data)
        return chunk

    @property
    def done(self) -> bool:
        return self.offset == len(self.data)


@final
class PacketReader:
    """Packets from a byte stream (see the module's notes).

    Args:
        max_packet: the most bytes one packet may take (:attr:`max_packet`).
    """

    __slots__ = ("_buffer", "_failed", "max_packet")

    def __init__(self, max_packet: int = LOGIN_PACKET_MAX) -> None:
        #: The most bytes one packet may take; its owner may raise it (once logged in).
        self.max_packet = max_packet
        self._buffer = bytearray()
        self._failed: PacketError | None = None

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def next(self) -> Packet | None:
        """The next whole packet, or ``None`` until more bytes come.

        Raises:
            PacketError: the bytes are no packet the plugin reads, or pass the bound (and so
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

    def _next(self) -> Packet | None:
        buffer = self._buffer
        if len(buffer) < 2:
            return None
        length = 0
        multiplier = 1
        position = 1
        while True:
            if position >= len(buffer):
                return None
            byte = buffer[position]
            position += 1
            length += (byte & 0x7F) * multiplier
            if not byte & 0x80:
                break
            multiplier *= 128
            if position > 4:
                raise PacketError("invalid_mqtt_frame_len")
        if length > MAX_LENGTH or position + length > self.max_packet:
            raise PacketError(f"packet of {length} bytes over the bound of {self.max_packet}")
        if len(buffer) < position + length:
            return None
        first = buffer[0]
        body = bytes(buffer[position:position + length])
        del buffer[:position + length]
        return _parse(first >> 4, first & 0x0F, _Body(body))


def _parse(kind: int, flags: int, body: _Body) -> Packet:
    # rabbit_mqtt_frame:parse_frame/3
    if kind == PacketType.CONNECT:
        return _connect(body)
    if kind == PacketType.PUBLISH:
        qos = (flags >> 1) & 3
        if qos == 3:
            raise PacketError("PUBLISH with QoS 3")
        topic = body.string()
        packet_id = body.uint16() if qos else None
        return Publish(topic, body.rest(), qos, bool(flags & 1), bool(flags & 8), packet_id)
    if kind == PacketType.PUBACK:
        packet_id = body.uint16()
        if not body.done:
            raise PacketError("PUBACK longer than its packet id")
        return PubAck(packet_id)
    if kind in (PacketType.SUBSCRIBE, PacketType.UNSUBSCRIBE):
        if flags != 2:
            raise PacketError(f"{PacketType(kind).name} flags {flags:04b}, not 0010")
        packet_id = body.uint16()
        if kind == PacketType.SUBSCRIBE:
            topics: list[tuple[str, int]] = []
            while not body.done:
                name = body.string()
                topics.append((name, body.byte() & 3))
            return Subscribe(packet_id, topics)
        names = []
        while not body.done:
            names.append(body.string())
        return Unsubscribe(packet_id, names)
    if kind in (PacketType.PINGREQ, PacketType.DISCONNECT):
        if not body.done:
            raise PacketError(f"{PacketType(kind).name} with a body")
        return PingReq() if kind == PacketType.PINGREQ else Disconnect()
    name = PacketType(kind).name if kind in PacketType._value2member_map_ else str(kind)
    raise PacketError(f"a {name} packet, which the plugin does not read")


def _connect(body: _Body) -> Connect:
    name = body.string()
    level = body.byte()
    flags = body.byte()
    keep_alive = body.uint16()
    client_id = body.string()
    will = None
    if flags & 0x04:
        topic = body.string()
        will = Will(topic, body.binary(), (flags >> 3) & 3, bool(flags & 0x20))
    username = body.string() if flags & 0x80 else None
    password = body.string() if flags & 0x40 else None
    if not body.done:
        raise PacketError("CONNECT longer than its fields")
    if PROTOCOLS.get(level) != name:  # (protocol_name_approved/2: protocol_header_corrupt)
        raise PacketError(f"protocol_header_corrupt: {name!r} level {level}")
    return Connect(level, bool(flags & 0x02), keep_alive, client_id, will, username, password)


# -- writing ------------------------------------------------------------------------------------


def _length(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _packet(first: int, body: bytes) -> bytes:
    return bytes([first]) + _length(len(body)) + body


def _string(text: str) -> bytes:
    data = text.encode("utf-8", "surrogateescape")
    return struct.pack(">H", len(data)) + data


def connack(code: int, session_present: bool = False) -> bytes:
    """CONNACK with a return code (0 accepted; 1 protocol level, 2 identifier rejected, 3
    server unavailable, 4 bad user name or password, 5 not authorised)."""
    return _packet(0x20, bytes([1 if session_present else 0, code]))


def publish(topic: str, payload: bytes, *, qos: int = 0, retain: bool = False,
            dup: bool = False, packet_id: int | None = None) -> bytes:
    first = 0x30 | (8 if dup else 0) | (qos << 1) | (1 if retain else 0)
    head = _string(topic) + (struct.pack(">H", packet_id) if qos else b"")
    return _packet(first, head + payload)


def puback(packet_id: int) -> bytes:
    return _packet(0x40, struct.pack(">H", packet_id))


def suback(packet_id: int, codes: list[int]) -> bytes:
    return _packet(0x90, struct.pack(">H", packet_id) + bytes(codes))


def unsuback(packet_id: int) -> bytes:
    return _packet(0xB0, struct.pack(">H", packet_id))


def pingresp() -> bytes:
    return b"\xd0\x00"
