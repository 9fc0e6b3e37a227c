"""The stream protocol's frames: reading them from bytes, writing them (sans-IO).

RabbitMQ 3.10.8's ``deps/rabbitmq_stream/docs/PROTOCOL.adoc`` is the reference. A frame is a
``uint32`` size, then ``uint16`` key (the top bit set in responses), ``uint16`` version, and the
command's fields, big-endian: integers, ``string`` (``int16`` length, UTF-8), ``bytes``
(``int32`` length), arrays (``int32`` count). :class:`FrameReader` cuts frames out of a byte
stream; :class:`Fields` reads one frame's fields and raises :class:`StreamProtocolError` for
anything short, negative or left over, never another error.
"""

from __future__ import annotations

import enum
import struct
import zlib
from collections.abc import Sequence
from typing import Final, final

from ..model._stream import SubBatch

__all__ = [
    "Code", "Fields", "FrameReader", "Key", "StreamProtocolError", "Writer", "chunk_frame",
    "response_key",
]


class Key(enum.IntEnum):
    """The command keys (PROTOCOL.adoc, "Commands")."""

    DECLARE_PUBLISHER = 0x0001
    PUBLISH = 0x0002
    PUBLISH_CONFIRM = 0x0003
    PUBLISH_ERROR = 0x0004
    QUERY_PUBLISHER_SEQUENCE = 0x0005
    DELETE_PUBLISHER = 0x0006
    SUBSCRIBE = 0x0007
    DELIVER = 0x0008
    CREDIT = 0x0009
    STORE_OFFSET = 0x000A
    QUERY_OFFSET = 0x000B
    UNSUBSCRIBE = 0x000C
    CREATE = 0x000D
    DELETE = 0x000E
    METADATA = 0x000F
    METADATA_UPDATE = 0x0010
    PEER_PROPERTIES = 0x0011
    SASL_HANDSHAKE = 0x0012
    SASL_AUTHENTICATE = 0x0013
    TUNE = 0x0014
    OPEN = 0x0015
    CLOSE = 0x0016
    HEARTBEAT = 0x0017
    ROUTE = 0x0018
    PARTITIONS = 0x0019
    #: RabbitMQ 3.11+ (the RabbitMQ 4 profile): a single active consumer is (de)activated.
    CONSUMER_UPDATE = 0x001A
    #: RabbitMQ 3.13+ (the RabbitMQ 4 profile): which versions of each command both speak.
    EXCHANGE_COMMAND_VERSIONS = 0x001B
    #: RabbitMQ 3.13+ (the RabbitMQ 4 profile): a stream's first and committed chunk ids.
    STREAM_STATS = 0x001C
    #: RabbitMQ 3.13+ (the RabbitMQ 4 profile): a super stream made or deleted at once.
    CREATE_SUPER_STREAM = 0x001D
    DELETE_SUPER_STREAM = 0x001E


class Code(enum.IntEnum):
    """Response codes (PROTOCOL.adoc, "Response Codes")."""

    OK = 0x01
    STREAM_DOES_NOT_EXIST = 0x02
    SUBSCRIPTION_ID_ALREADY_EXISTS = 0x03
    SUBSCRIPTION_ID_DOES_NOT_EXIST = 0x04
    STREAM_ALREADY_EXISTS = 0x05
    STREAM_NOT_AVAILABLE = 0x06
    SASL_MECHANISM_NOT_SUPPORTED = 0x07
    AUTHENTICATION_FAILURE = 0x08
    SASL_ERROR = 0x09
    SASL_CHALLENGE = 0x0A
    SASL_AUTHENTICATION_FAILURE_LOOPBACK = 0x0B
    VIRTUAL_HOST_ACCESS_FAILURE = 0x0C
    UNKNOWN_FRAME = 0x0D
    FRAME_TOO_LARGE = 0x0E
    INTERNAL_ERROR = 0x0F
    ACCESS_REFUSED = 0x10
    PRECONDITION_FAILED = 0x11
    PUBLISHER_DOES_NOT_EXIST = 0x12
    NO_OFFSET = 0x13


def response_key(key: int) -> int:
    """The key of the response to a request: the most significant bit set."""
    return key | 0x8000


class StreamProtocolError(Exception):
    """Bytes that are not a frame of the stream protocol, or a frame out of place: the
    connection is closed with ``code`` (a :class:`Code`) and this text."""

    def __init__(self, text: str, code: int = Code.UNKNOWN_FRAME) -> None:
        super().__init__(text)
        self.text = text
        self.code = code


#: The largest frame a client may send before Tune settles it (RabbitMQ's default frame_max).
DEFAULT_FRAME_MAX: Final = 1_048_576


@final
class FrameReader:
    """Cuts frames (``key, version, body``) out of the bytes received, however they arrive.

    Args:
        frame_max: the largest frame accepted (its size field); 0 for no limit.
    """

    __slots__ = ("_buffer", "frame_max")

    def __init__(self, frame_max: int = DEFAULT_FRAME_MAX) -> None:
        self._buffer = bytearray()
        self.frame_max = frame_max

    def feed(self, data: bytes) -> None:
        buffer = self._buffer
        if self.frame_max and len(buffer) < 4 <= len(buffer) + len(data):
            # A frame begins here: one over frame_max keeps its size alone (next_frame
            # refuses it), not the rest of what came with it.
            wanted = 4 - len(buffer)
            (size,) = struct.unpack(">I", bytes(buffer) + data[:wanted])
            if size > self.frame_max:
                buffer += data[:wanted]
                return
        buffer += data

    def next_frame(self) -> tuple[int, int, bytes] | None:
        """The next whole frame, or ``None`` until more bytes come.

        Raises:
            StreamProtocolError: a frame over ``frame_max`` (FRAME_TOO_LARGE) or too short to
                hold a key and a version.
        """
        buffer = self._buffer
        if len(buffer) < 4:
            return None
        (size,) = struct.unpack_from(">I", buffer)
        if self.frame_max and size > self.frame_max:
            raise StreamProtocolError(f"frame of {size} bytes, over frame_max {self.frame_max}",
                                      Code.FRAME_TOO_LARGE)
        if size < 4:
            raise StreamProtocolError(f"frame of {size} bytes: no room for a key and a version")
        if len(buffer) < 4 + size:
            return None
        key, version = struct.unpack_from(">HH", buffer, 4)
        body = bytes(buffer[8:4 + size])
        del buffer[:4 + size]
        return key, version, body


@final
class Fields:
    """Reads one frame's fields in order; every read checks the bytes are there."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def _take(self, n: int) -> bytes:
        end = self._pos + n
        if n < 0 or end > len(self._data):
            raise StreamProtocolError(f"frame too short: {n} more bytes wanted at byte "
                                      f"{self._pos} of {len(self._data)}")
        chunk = self._data[self._pos:end]
        self._pos = end
        return chunk

    def _unpack(self, fmt: str) -> int:
        data = self._take(struct.calcsize(fmt))
        value: int = struct.unpack(fmt, data)[0]
        return value

    def uint8(self) -> int:
        return self._unpack(">B")

    def uint16(self) -> int:
        return self._unpack(">H")

    def uint32(self) -> int:
        return self._unpack(">I")

    def int32(self) -> int:
        return self._unpack(">i")

    def uint64(self) -> int:
        return self._unpack(">Q")

    def int64(self) -> int:
        return self._unpack(">q")

    def string(self) -> str:
        length = self._unpack(">h")
        if length < 0:
            return ""  # null
        try:
            return self._take(length).decode("utf-8")
        except UnicodeDecodeError:
            raise StreamProtocolError("a string that is not UTF-8") from None

    def string_or_none(self) -> str | None:
        """A string that may be null (length -1)."""
        length = self._unpack(">h")
        if length < 0:
            return None
        try:
            return self._take(length).decode("utf-8")
        except UnicodeDecodeError:
            raise StreamProtocolError("a string that is not UTF-8") from None

    def bytes_(self) -> bytes:
        length = self.int32()
        return b"" if length < 0 else self._take(length)

    def entry(self) -> bytes | SubBatch:
        """A Publish entry: a message's bytes (a size whose top bit is 0), or a sub-entry (top
        bit 1: compression, records, uncompressed size, then the stored bytes)."""
        if self._pos < len(self._data) and self._data[self._pos] & 0x80:
            kind = self.uint8()
            count = self.uint16()
            uncompressed = self.uint32()
            return SubBatch((kind >> 4) & 0x7, count, uncompressed, self._take(self.uint32()))
        return self._take(self.uint32())

    def count(self) -> int:
        """An array's count (at most as many items as bytes left)."""
        n = self.int32()
        if n < 0 or n > len(self._data) - self._pos:
            raise StreamProtocolError(f"an array of {n} items in {len(self._data)} bytes")
        return n

    def strings(self) -> list[str]:
        return [self.string() for _ in range(self.count())]

    def properties(self) -> dict[str, str]:
        return {self.string(): self.string() for _ in range(self.count())}

    def remaining(self) -> int:
        """How many bytes of the frame are left."""
        return len(self._data) - self._pos

    def end(self) -> None:
        """The frame must end here."""
        if self._pos != len(self._data):
            raise StreamProtocolError(f"{len(self._data) - self._pos} bytes left over in a frame")


@final
class Writer:
    """Builds one frame: ``Writer(key).uint16(...)...frame()``."""

    __slots__ = ("_out",)

    def __init__(self, key: int, version: int = 1) -> None:
        self._out = bytearray(struct.pack(">IHH", 0, key, version))

    def uint8(self, v: int) -> Writer:
        self._out += struct.pack(">B", v)
        return self

    def uint16(self, v: int) -> Writer:
        self._out += struct.pack(">H", v)
        return self

    def uint32(self, v: int) -> Writer:
        self._out += struct.pack(">I", v)
        return self

    def int32(self, v: int) -> Writer:
        self._out += struct.pack(">i", v)
        return self

    def int64(self, v: int) -> Writer:
        self._out += struct.pack(">q", v)
        return self

    def uint64(self, v: int) -> Writer:
        self._out += struct.pack(">Q", v)
        return self

    def string(self, v: str) -> Writer:
        # (the bytes it holds: a name a 0-9-1 client chose may hold a surrogate's encoding,
        # which RabbitMQ writes as it is)
        data = v.encode("utf-8", "surrogateescape")
        self._out += struct.pack(">H", len(data)) + data
        return self

    def bytes_(self, v: bytes) -> Writer:
        self._out += struct.pack(">i", len(v)) + v
        return self

    def raw(self, v: bytes) -> Writer:
        self._out += v
        return self

    def strings(self, values: Sequence[str]) -> Writer:
        self.int32(len(values))
        for v in values:
            self.string(v)
        return self

    def properties(self, values: dict[str, str]) -> Writer:
        self.int32(len(values))
        for k, v in values.items():
            self.string(k).string(v)
        return self

    def frame(self) -> bytes:
        struct.pack_into(">I", self._out, 0, len(self._out) - 4)
        return bytes(self._out)


def chunk_frame(subscription_id: int, first_offset: int, timestamp: int,
                entries: Sequence[bytes | SubBatch], records: int | None = None,
                trailer: int = 0) -> bytes:
    """A Deliver frame holding one osiris chunk (v1 header, 48 bytes, epoch 1 as a stream
    created once on RabbitMQ 3.10.8) of ``entries`` holding ``records`` (one per entry when not
    given), with the CRC32 of the data. A simple entry is a ``uint32`` size whose top bit is 0,
    then the bytes; a sub-batch as the client sent it (``0x80`` or'ed with its compression
    shifted 4, records, uncompressed size, size, bytes). The header gives the chunk's
    ``trailer`` size; its bytes are not sent (RabbitMQ 3.10.8 sends the data alone).

    >>> frame = chunk_frame(0, 7, 1000, [b"a", b"bc"])
    >>> len(frame) == 4 + 4 + 1 + 48 + (4 + 1) + (4 + 2)
    True
    >>> chunk_frame(0, 7, 1000, [SubBatch(1, 3, 9, b"xy")], 3)[-13:].hex()
    '90000300000009000000027879'
    """
    data = b"".join(struct.pack(">I", len(e)) + e if isinstance(e, bytes)
                    else struct.pack(">BHII", 0x80 | e.compression << 4, e.count,
                                     e.uncompressed_size, len(e.data)) + e.data
                    for e in entries)
    count = len(entries) if records is None else records
    header = struct.pack(">bbHIqQQiIII", 0x50, 0, len(entries), count, timestamp, 1,
                         first_offset, _signed32(zlib.crc32(data)), len(data), trailer, 0)
    return Writer(Key.DELIVER).uint8(subscription_id).raw(header).raw(data).frame()


def _signed32(value: int) -> int:
    return value - (1 << 32) if value >= 1 << 31 else value
