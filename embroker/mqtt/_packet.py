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

Strings are kept as ``str`` (:mod:`._wire`'s rule): RabbitMQ 3.10 takes them as byte lists.

Unlike RabbitMQ 3.10, the reader is bounded (:attr:`PacketReader.max_packet`): before CONNECT,
:data:`LOGIN_PACKET_MAX`; its owner raises it once logged in.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Final, final

from ._wire import Body, PacketError, PacketType, Reader, packet, pingresp, string, unread

__all__ = ["LOGIN_PACKET_MAX", "Connect", "Disconnect", "PacketError", "PacketReader",
           "PacketType", "PingReq", "PubAck", "Publish", "Subscribe", "Unsubscribe", "Will",
           "connack", "pingresp", "puback", "publish", "suback", "unsuback"]

#: The most bytes a packet may take before the client has logged in (a CONNECT with its will).
LOGIN_PACKET_MAX: Final = 1024 * 1024
#: The protocol names and levels the plugin speaks (``?PROTOCOL_NAMES``).
PROTOCOLS: Final = {3: "MQIsdp", 4: "MQTT"}


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


@final
class PacketReader(Reader[Packet]):
    """Packets from a byte stream (see the module's notes).

    Args:
        max_packet: the most bytes one packet may take (:attr:`max_packet`).
    """

    __slots__ = ("max_packet",)

    def __init__(self, max_packet: int = LOGIN_PACKET_MAX) -> None:
        super().__init__()
        #: The most bytes one packet may take; its owner may raise it (once logged in).
        self.max_packet = max_packet

    def _next(self) -> Packet | None:
        header = self._remaining_length("invalid_mqtt_frame_len")
        if header is None:
            return None
        start, length = header
        if start + length > self.max_packet:
            raise PacketError(f"packet of {length} bytes over the bound of {self.max_packet}")
        first = self._buffer[0]
        body = self._take(start, length)
        if body is None:
            return None
        return _parse(first >> 4, first & 0x0F, Body(body))


def _parse(kind: int, flags: int, body: Body) -> Packet:
    # rabbit_mqtt_frame:parse_frame/3 (PUBLISH tried first: the most frequent)
    if kind == PacketType.PUBLISH:
        qos, topic, packet_id = body.publish_header(flags)
        return Publish(topic, body.rest(), qos, bool(flags & 1), bool(flags & 8), packet_id)
    if kind == PacketType.CONNECT:
        return _connect(body)
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
    raise unread(kind, PacketType.DISCONNECT)


def _connect(body: Body) -> Connect:
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


def connack(code: int, session_present: bool = False) -> bytes:
    """CONNACK with a return code (0 accepted; 1 protocol level, 2 identifier rejected, 3
    server unavailable, 4 bad user name or password, 5 not authorised)."""
    return packet(0x20, bytes([1 if session_present else 0, code]))


def publish(topic: str, payload: bytes, *, qos: int = 0, retain: bool = False,
            dup: bool = False, packet_id: int | None = None) -> bytes:
    first = 0x30 | (8 if dup else 0) | (qos << 1) | (1 if retain else 0)
    head = string(topic) + (struct.pack(">H", packet_id) if qos else b"")
    return packet(first, head + payload)


def puback(packet_id: int) -> bytes:
    return packet(0x40, struct.pack(">H", packet_id))


def suback(packet_id: int, codes: list[int]) -> bytes:
    return packet(0x90, struct.pack(">H", packet_id) + bytes(codes))


def unsuback(packet_id: int) -> bytes:
    return packet(0xB0, struct.pack(">H", packet_id))
