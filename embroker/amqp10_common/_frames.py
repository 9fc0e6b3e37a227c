"""AMQP 1.0 framing (Part 2 section 2.3): protocol headers, frames, an incremental reader.

A frame is an 8-byte header (SIZE: 4 bytes, the whole frame's length; DOFF: 1 byte, the data
offset in 4-byte words, at least 2; TYPE: 1 byte, 0x00 AMQP or 0x01 SASL; a 2-byte channel for
AMQP frames), an extended header (``DOFF * 4 - 8`` bytes, ignored), then the body: one
performative, and for ``transfer`` the payload after it. A frame with no body is an empty frame,
which only keeps the connection alive (section 2.4.5).

:class:`FrameReader` is fed bytes in any chunking and hands back protocol headers and frames as
they complete; it never buffers more than one frame beyond what it has returned.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Final, final

from ._definitions import COMPOSITES, Composite, Transfer, composite_for
from ._errors import DecodeError, FramingError
from ._types import UInt, ULong, decode_value

__all__ = [
    "AMQP_HEADER",
    "EMPTY_FRAME",
    "FRAME_AMQP",
    "FRAME_SASL",
    "MIN_MAX_FRAME_SIZE",
    "SASL_HEADER",
    "Frame",
    "FrameReader",
    "encode_frame",
    "encode_transfer_frames",
]

#: ``AMQP 0 1 0 0``: "the protocol header for the AMQP protocol" (protocol id 0).
AMQP_HEADER: Final = b"AMQP\x00\x01\x00\x00"
#: ``AMQP 3 1 0 0``: the SASL security layer's header (protocol id 3, Part 5 section 5.3.1).
SASL_HEADER: Final = b"AMQP\x03\x01\x00\x00"
#: "Type 0x00 indicates that the frame is an AMQP frame."
FRAME_AMQP: Final = 0x00
#: "Type 0x01 indicates that the frame is a SASL frame."
FRAME_SASL: Final = 0x01
#: "Prior to any explicit negotiation, the maximum frame size is 512 (MIN-MAX-FRAME-SIZE)."
MIN_MAX_FRAME_SIZE: Final = 512
#: An empty AMQP frame on channel 0: what keeps an idle connection alive.
EMPTY_FRAME: Final = b"\x00\x00\x00\x08\x02\x00\x00\x00"

_HEADER = struct.Struct(">IBBH")
_PERFORMATIVES: Final = frozenset(range(0x10, 0x19))
_SASL_FRAMES: Final = frozenset(range(0x40, 0x45))


@final
@dataclass(slots=True)
class Frame:
    """One frame: its type, channel, performative (``None`` for an empty frame), payload."""

    type: int
    channel: int
    performative: Any
    payload: bytes = b""


@final
class FrameReader:
    """Turns a byte stream into protocol headers and frames.

    Args:
        max_frame_size: the largest frame accepted (the value we announced in ``open``; 512
            before that).

    Call :meth:`feed` with what arrived, then :meth:`next_header` when a protocol header is due
    or :meth:`next_frame` otherwise, until they return ``None`` (more bytes needed).
    """

    __slots__ = ("_buffer", "_pos", "max_frame_size")

    def __init__(self, max_frame_size: int = MIN_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._pos = 0

    def feed(self, data: bytes) -> None:
        if self._pos:
            del self._buffer[:self._pos]
            self._pos = 0
        self._buffer += data

    @property
    def buffered(self) -> int:
        return len(self._buffer) - self._pos

    def next_header(self) -> bytes | None:
        """The next 8 bytes (a protocol header is due), or ``None`` if fewer arrived."""
        if len(self._buffer) - self._pos < 8:
            return None
        start = self._pos
        self._pos += 8
        return bytes(self._buffer[start:start + 8])

    def next_frame(self) -> Frame | None:
        """The next complete frame, or ``None`` if it has not all arrived.

        Raises:
            FramingError: a frame header that cannot be valid (size below 8, DOFF below 2 or
                past the frame, a frame over ``max_frame_size``, an unknown frame type).
            DecodeError: a body that is not a performative of its frame type.
        """
        buffer = self._buffer
        pos = self._pos
        if len(buffer) - pos < 8:
            return None
        size, doff, kind, channel = _HEADER.unpack_from(buffer, pos)
        if size < 8:
            raise FramingError(f"frame size {size} is smaller than the 8-byte frame header")
        if size > self.max_frame_size:
            raise FramingError(f"frame of {size} bytes is larger than the max-frame-size "
                               f"{self.max_frame_size}")
        if doff < 2 or doff * 4 > size:
            raise FramingError(f"data offset {doff} is outside the frame of {size} bytes")
        if kind not in (FRAME_AMQP, FRAME_SASL):
            raise FramingError(f"unknown frame type 0x{kind:02x}")
        if len(buffer) - pos < size:
            return None
        self._pos = pos + size
        start = pos + doff * 4
        if start == pos + size:
            return Frame(kind, channel, None)
        return _decode_body(kind, channel, bytes(buffer[start:pos + size]))


#: The fields of a transfer the fast path reads, by position, with the type each must have.
_TRANSFER_KINDS: Final = (int, int, bytes, int, bool, bool)


def _fast_transfer(body: bytes) -> tuple[Transfer, int] | None:
    """The usual transfer (a list8 of uint, uint, vbin8, uint and booleans), read without the
    generic decoder; ``None`` for anything else (the generic path then decides)."""
    if body[3] != 0xC0:
        return None
    end = 5 + body[4]
    count = body[5]
    if not 1 <= count <= 6 or end > len(body):
        return None
    pos = 6
    values: list[object] = []
    try:
        for i in range(count):
            code = body[pos]
            if code == 0x43:
                value: object = 0
                pos += 1
            elif code == 0x52:
                value = body[pos + 1]
                pos += 2
            elif code == 0x70:
                value = int.from_bytes(body[pos + 1:pos + 5], "big")
                pos += 5
            elif code == 0xA0:
                size = body[pos + 1]
                value = body[pos + 2:pos + 2 + size]
                pos += 2 + size
            elif code in (0x41, 0x42):
                value = code == 0x41
                pos += 1
            elif code == 0x40 and i >= 1:
                value = None
                pos += 1
            else:
                return None
            if value is not None and type(value) is not _TRANSFER_KINDS[i]:
                return None
            values.append(value)
    except IndexError:
        return None
    if pos != end:
        return None
    handle, delivery_id, tag, message_format, settled, more = (values + [None] * 6)[:6]
    if not isinstance(handle, int):
        return None
    transfer = Transfer(
        UInt(handle), UInt(delivery_id) if isinstance(delivery_id, int) else None,
        tag if isinstance(tag, bytes) else None,
        UInt(message_format) if isinstance(message_format, int) else None,
        settled if isinstance(settled, bool) else None, more is True)
    return transfer, end


def _decode_body(kind: int, channel: int, body: bytes) -> Frame:
    if kind == FRAME_AMQP and body[:3] == b"\x00\x53\x14" and len(body) > 6:
        fast = _fast_transfer(body)
        if fast is not None:
            transfer, end = fast
            return Frame(kind, channel, transfer, body[end:])
    if len(body) < 3 or body[0] != 0x00:
        raise DecodeError("a frame body must begin with a described performative")
    if body[1] == 0x53:  # smallulong descriptor: the usual form
        code = body[2]
        cls = COMPOSITES.get(ULong(code))
        pos = 3
    else:
        descriptor, pos = decode_value(body, 1)
        cls = composite_for(descriptor)
        code = cls.CODE if cls is not None else -1
    allowed = _PERFORMATIVES if kind == FRAME_AMQP else _SASL_FRAMES
    if cls is None or code not in allowed:
        raise DecodeError(f"not a {'performative' if kind == FRAME_AMQP else 'SASL frame'}: "
                          f"descriptor 0x{code:02x}" if code >= 0 else
                          "unknown performative descriptor")
    items, end = decode_value(body, pos)
    if not isinstance(items, list):
        raise DecodeError(f"{cls.NAME} must be a list")
    performative = cls.from_list(items)
    if end != len(body) and cls is not Transfer:
        raise DecodeError(f"{len(body) - end} bytes after the {cls.NAME} performative")
    return Frame(kind, channel, performative, body[end:] if end != len(body) else b"")


def encode_frame(channel: int, performative: Composite | None, payload: bytes = b"",
                 kind: int = FRAME_AMQP) -> bytes:
    """One frame with ``performative`` (``None``: an empty frame) and ``payload``."""
    if performative is None:
        return _HEADER.pack(8, 2, kind, channel)
    body = bytearray(8)
    performative.encode_into(body)
    body += payload
    _HEADER.pack_into(body, 0, len(body), 2, kind, channel)
    return bytes(body)


def encode_transfer_frames(channel: int, transfer: Transfer, payload: bytes | memoryview,
                           max_frame_size: int) -> list[bytes]:
    """A delivery as transfer frames of at most ``max_frame_size`` bytes: ``more=true`` on
    every frame but the last; continuation frames carry only the handle (the other fields may
    be omitted, section 2.7.5).

    Raises:
        ValueError: ``max_frame_size`` cannot hold even the first transfer performative.
    """
    head = bytearray(8)
    if (transfer.delivery_id is not None and transfer.delivery_tag is not None
            and transfer.state is None and not transfer.more and len(transfer.delivery_tag) < 256):
        _transfer_performative(transfer, head)  # the common first frame, without the tables
    else:
        transfer.encode_into(head)
    room = max_frame_size - len(head)
    if len(payload) <= room:
        head += payload
        _HEADER.pack_into(head, 0, len(head), 2, FRAME_AMQP, channel)
        return [bytes(head)]
    frames = []
    transfer.more = True
    head = bytearray(8)
    transfer.encode_into(head)
    room = max_frame_size - len(head)
    if room <= 0:
        raise ValueError("max-frame-size too small for a transfer")
    view = memoryview(payload)
    frames.append(_with_payload(head, view[:room], channel))
    pos = room
    more = Transfer(handle=transfer.handle, more=True)
    less = Transfer(handle=transfer.handle)
    more_head = bytearray(8)
    more.encode_into(more_head)
    less_head = bytearray(8)
    less.encode_into(less_head)
    step = max_frame_size - len(more_head)
    while pos < len(view):
        last = len(view) - pos <= max_frame_size - len(less_head)
        chunk = view[pos:] if last else view[pos:pos + step]
        frames.append(_with_payload(less_head if last else more_head, chunk, channel))
        pos += len(chunk)
    transfer.more = False
    return frames


def _uint(value: int) -> bytes:
    if value == 0:
        return b"\x43"
    if value < 256:
        return b"\x52" + bytes((value,))
    return b"\x70" + value.to_bytes(4, "big")


def _transfer_performative(transfer: Transfer, out: bytearray) -> None:
    # handle, delivery-id, delivery-tag, message-format, settled: what Transfer.encode_into
    # gives for a delivery's first frame, built directly (this is the hot path of deliveries).
    tag = transfer.delivery_tag
    assert tag is not None
    assert transfer.delivery_id is not None
    body = (_uint(transfer.handle) + _uint(transfer.delivery_id) + b"\xa0" + bytes((len(tag),))
            + tag + _uint(transfer.message_format or 0))
    count = 4
    if transfer.settled is not None:
        body += b"\x41" if transfer.settled else b"\x42"
        count = 5
    out += b"\x00\x53\x14\xc0" + bytes((len(body) + 1, count)) + body


def _with_payload(head: bytearray, chunk: memoryview, channel: int) -> bytes:
    frame = bytearray(head)
    frame += chunk
    _HEADER.pack_into(frame, 0, len(frame), 2, FRAME_AMQP, channel)
    return bytes(frame)
