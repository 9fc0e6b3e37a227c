"""An MQTT connection driven with bytes in a test: packets in, packets out, no socket."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from embroker.model import Broker
from embroker.mqtt import MqttConnection
from embroker.mqtt._packet5 import Properties, _Body, _read_properties, write_properties


def _s(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return struct.pack(">H", len(data)) + data


def _packet(first: int, body: bytes) -> bytes:
    length = bytearray()
    n = len(body)
    while True:
        byte, n = n & 0x7F, n >> 7
        length.append(byte | (0x80 if n else 0))
        if not n:
            break
    return bytes([first]) + bytes(length) + body


def connect(client_id: str = "c1", *, clean: bool = True, user: str | None = None,
            password: str | None = None, keep_alive: int = 60, level: int = 4,
            name: str | None = None, will: tuple[str, bytes, int, bool] | None = None) -> bytes:
    flags = (2 if clean else 0) | (0x80 if user is not None else 0) | \
        (0x40 if password is not None else 0)
    payload = _s(client_id)
    if will is not None:
        topic, message, qos, retain = will
        flags |= 0x04 | (qos << 3) | (0x20 if retain else 0)
        payload += _s(topic) + _s(message)
    if user is not None:
        payload += _s(user)
    if password is not None:
        payload += _s(password)
    protocol = name if name is not None else ("MQTT" if level == 4 else "MQIsdp")
    body = _s(protocol) + bytes([level, flags]) + struct.pack(">H", keep_alive) + payload
    return _packet(0x10, body)


def subscribe(packet_id: int, *topics: tuple[str, int]) -> bytes:
    return _packet(0x82, struct.pack(">H", packet_id) + b"".join(
        _s(t) + bytes([q]) for t, q in topics))


def unsubscribe(packet_id: int, *topics: str) -> bytes:
    return _packet(0xA2, struct.pack(">H", packet_id) + b"".join(_s(t) for t in topics))


def publish(topic: str, payload: bytes, *, qos: int = 0, retain: bool = False,
            packet_id: int = 1, dup: bool = False) -> bytes:
    first = 0x30 | (8 if dup else 0) | (qos << 1) | (1 if retain else 0)
    return _packet(first, _s(topic) + (struct.pack(">H", packet_id) if qos else b"") + payload)


def puback(packet_id: int) -> bytes:
    return _packet(0x40, struct.pack(">H", packet_id))


PINGREQ = b"\xc0\x00"
DISCONNECT = b"\xe0\x00"


def _split(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Each packet of ``data``: its first byte and its body (the remaining length read by hand,
    independently of the codec under test)."""
    i = 0
    while i < len(data):
        first = data[i]
        i += 1
        length, multiplier = 0, 1
        while True:
            byte = data[i]
            i += 1
            length += (byte & 0x7F) * multiplier
            multiplier *= 128
            if not byte & 0x80:
                break
        yield first, data[i:i + length]
        i += length


def parse(data: bytes) -> list[tuple[str, Any]]:
    """The server's packets: (name, fields)."""
    out: list[tuple[str, Any]] = []
    for first, body in _split(data):
        kind = first >> 4
        if kind == 2:
            out.append(("CONNACK", (body[0] & 1 == 1, body[1])))
        elif kind == 3:
            qos = (first >> 1) & 3
            (n,) = struct.unpack(">H", body[:2])
            topic = body[2:2 + n].decode()
            rest = body[2 + n:]
            packet_id = struct.unpack(">H", rest[:2])[0] if qos else None
            payload = rest[2:] if qos else rest
            out.append(("PUBLISH", (topic, payload, qos, bool(first & 1), bool(first & 8),
                                    packet_id)))
        elif kind == 4:
            out.append(("PUBACK", struct.unpack(">H", body)[0]))
        elif kind == 9:
            out.append(("SUBACK", (struct.unpack(">H", body[:2])[0], list(body[2:]))))
        elif kind == 11:
            out.append(("UNSUBACK", struct.unpack(">H", body)[0]))
        elif kind == 13:
            out.append(("PINGRESP", None))
        else:
            out.append((str(kind), body))
    return out


class Wire:
    """An :class:`MqttConnection` and what it sent, parsed."""

    def __init__(self, broker: Broker, **options: Any) -> None:
        options.setdefault("peer", "127.0.0.1:50000")
        options.setdefault("local", "127.0.0.1:1883")
        self.broker = broker
        self.conn = MqttConnection(broker, **options)

    def send(self, data: bytes) -> list[tuple[str, Any]]:
        self.conn.receive_data(data)
        return self.received()

    def received(self) -> list[tuple[str, Any]]:
        data = self.conn.data_to_send()
        return parse5(data) if self.conn.v5 is not None else parse(data)


# -- MQTT 5.0 (the client's packets written by hand; properties by _packet5's writer) ----------


def _props(properties: Properties | None) -> bytes:
    return write_properties(properties or Properties())


def connect5(client_id: str = "c5", *, clean: bool = True, user: str | None = None,
             password: str | None = None, keep_alive: int = 60,
             properties: Properties | None = None,
             will: tuple[str, bytes, int, bool, Properties] | None = None) -> bytes:
    flags = (2 if clean else 0) | (0x80 if user is not None else 0) | \
        (0x40 if password is not None else 0)
    payload = _s(client_id)
    if will is not None:
        topic, message, qos, retain, will_properties = will
        flags |= 0x04 | (qos << 3) | (0x20 if retain else 0)
        payload += _props(will_properties) + _s(topic) + _s(message)
    if user is not None:
        payload += _s(user)
    if password is not None:
        payload += _s(password)
    body = _s("MQTT") + bytes([5, flags]) + struct.pack(">H", keep_alive) + \
        _props(properties) + payload
    return _packet(0x10, body)


def publish5(topic: str, payload: bytes, *, qos: int = 0, retain: bool = False,
             packet_id: int = 1, properties: Properties | None = None) -> bytes:
    first = 0x30 | (qos << 1) | (1 if retain else 0)
    return _packet(first, _s(topic) + (struct.pack(">H", packet_id) if qos else b"")
                   + _props(properties) + payload)


def subscribe5(packet_id: int, *subscriptions: tuple[str, int],
               properties: Properties | None = None) -> bytes:
    """Each subscription: a filter and its options byte (QoS | 4 no local | 8 retain as
    published | handling << 4)."""
    return _packet(0x82, struct.pack(">H", packet_id) + _props(properties) + b"".join(
        _s(t) + bytes([o]) for t, o in subscriptions))


def unsubscribe5(packet_id: int, *topics: str) -> bytes:
    return _packet(0xA2, struct.pack(">H", packet_id) + b"\x00" + b"".join(
        _s(t) for t in topics))


def puback5(packet_id: int, code: int = 0) -> bytes:
    return _packet(0x40, struct.pack(">H", packet_id) + bytes([code, 0]))


def disconnect5(code: int = 0, properties: Properties | None = None) -> bytes:
    return _packet(0xE0, bytes([code]) + _props(properties))


def parse5(data: bytes) -> list[tuple[str, Any]]:
    """The server's level-5 packets: (name, fields), properties as :class:`Properties`."""
    out: list[tuple[str, Any]] = []
    for first, raw in _split(data):
        body = _Body(raw)
        kind = first >> 4
        if kind == 2:
            flags, code = body.byte(), body.byte()
            out.append(("CONNACK", (flags & 1 == 1, code, _read_properties(body, 5))))
        elif kind == 3:
            qos = (first >> 1) & 3
            topic = body.string()
            packet_id = body.uint16() if qos else None
            props = _read_properties(body, 5)
            out.append(("PUBLISH", (topic, body.rest(), qos, bool(first & 1), packet_id,
                                    props)))
        elif kind == 4:
            out.append(("PUBACK", (body.uint16(), body.byte() if not body.done else 0)))
        elif kind in (9, 11):
            packet_id = body.uint16()
            _read_properties(body, 5)
            out.append(("SUBACK" if kind == 9 else "UNSUBACK", (packet_id, list(body.rest()))))
        elif kind == 13:
            out.append(("PINGRESP", None))
        elif kind == 14:
            out.append(("DISCONNECT", body.byte() if not body.done else 0))
        else:
            out.append((str(kind), body.rest()))
    return out
