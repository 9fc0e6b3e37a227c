"""Frames: the protocol header, the incremental frame parser, and the frame encoders.

Theory of operation
-------------------

An AMQP 0-9-1 connection starts with an 8-byte protocol header from the client
(:func:`parse_protocol_header` says what it is), then carries frames both ways (section 4.2.3)::

    type (octet) | channel (short) | size (long) | payload (size bytes) | frame-end 0xCE

:class:`FrameParser` is fed whatever bytes arrive, in chunks of any size (one byte at a time
works), and yields each complete frame as soon as its frame-end byte is in: a
:class:`MethodFrame` (the method decoded), a :class:`HeaderFrame` (content header, properties
decoded and also kept encoded), a :class:`BodyFrame` or a :class:`HeartbeatFrame`. Incomplete
bytes stay buffered until the next :meth:`FrameParser.feed`. A frame is checked as soon as its
7-byte header is in (type, size, channel), so a bad frame is refused before its payload arrives
and a huge size never makes the parser wait for it.

Turning frames into commands (a method, or a method with its content) is the job of
``ContentAssembler`` in ``_assembly.py``; ``CommandReader`` there does both in one loop.

Errors
------

The parser raises only :class:`~embroker.errors.ConnectionException` subclasses; any other
exception is a bug. Once it has raised, the connection is unusable and every later call raises the
same error. Codes and texts are RabbitMQ 3.10's (``rabbit_reader``, ``rabbit_command_assembler``,
measured on the reference broker), which differ from the specification's in places:

* a frame larger than the negotiated frame-max (checked on its header; like RabbitMQ, 8 bytes
  over are tolerated, because "quite a few clients get it wrong - off-by 1 or 8"), a frame-end
  byte that is not 0xCE, an unknown frame type, a heartbeat with a payload, a method or content
  header payload too short for its fixed fields: :class:`~embroker.errors.FrameError` (501),
  ``type 1, all octets = <<...>>: {frame_too_large,140000,131064}``;
* a heartbeat on a channel other than 0, a content header or body on channel 0:
  :class:`~embroker.errors.UnexpectedFrame` (505), ``type 8, all octets = <<>>`` (the spec
  says 501 and 504);
* malformed method arguments (truncated, extra bytes, a table or string running past the
  frame, an unknown field type): :class:`~embroker.errors.FrameError` (501)
  ``cannot decode <<...>>`` with the method's class and method ids (the spec says 502);
* a method of the connection class on a channel other than 0: 503 ``unimplemented method``;
  any other method on channel 0: 504 ``unexpected method in connection state running``;
* a method id that no class defines: :class:`~embroker.errors.CommandInvalid` (503). RabbitMQ
  drops the socket without a word here (and for an unknown field type, where it crashes):
  embroker says why in a connection.close.

Frames print as RabbitMQ prints them, ``type T, all octets = <<...>>`` (``first 16`` for longer
payloads), Erlang binaries and terms included (see ``embroker._erlang``).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, final

from embroker import _erlang
from embroker.amqp091._method import Method
from embroker.amqp091._methods import DECODERS
from embroker.amqp091._properties import PROPERTY_READERS, encode_properties, read_properties
from embroker.errors import (
    ChannelError,
    CommandInvalid,
    ConnectionException,
    FrameError,
    SyntaxErrorAMQP,
    UnexpectedFrame,
)

__all__ = [
    "FRAME_BODY",
    "FRAME_END",
    "FRAME_HEADER",
    "FRAME_HEARTBEAT",
    "FRAME_MAX_LIMIT",
    "FRAME_METHOD",
    "FRAME_MIN_SIZE",
    "FRAME_MIN_SIZE_4_1",
    "FRAME_OVERHEAD",
    "FRAME_SIZE_FUDGE",
    "HEARTBEAT_FRAME",
    "PROTOCOL_HEADER",
    "BodyFrame",
    "Frame",
    "FrameParser",
    "HeaderFrame",
    "HeartbeatFrame",
    "MethodFrame",
    "ProtocolHeader",
    "ProtocolHeaderKind",
    "decode_method",
    "encode_body_frames",
    "encode_frame",
    "encode_header_frame",
    "encode_header_frame_raw",
    "encode_message",
    "encode_method_frame",
    "parse_protocol_header",
]

#: "Type = 1, METHOD: method frame."
FRAME_METHOD: Final = 1
#: "Type = 2, HEADER: content header frame."
FRAME_HEADER: Final = 2
#: "Type = 3, BODY: content body frame."
FRAME_BODY: Final = 3
#: Heartbeat frame type: 8 (the spec's constant table; section 4.2.3's "4" is a typo).
FRAME_HEARTBEAT: Final = 8
#: "The frame-end octet MUST always be the hexadecimal value %xCE."
FRAME_END: Final = 0xCE
#: "Until the frame-max has been negotiated, both peers MUST accept frames of up to
#: frame-min-size octets large" (4096).
FRAME_MIN_SIZE: Final = 4096
#: The largest frame_max connection.tune can offer: its frame-max is a long (32 bits).
FRAME_MAX_LIMIT: Final = 2**32 - 1
#: The smallest frame-max RabbitMQ 4.1 and later agree to (v4.1.4 rabbit_framing.hrl).
FRAME_MIN_SIZE_4_1: Final = 8192
#: Header (7 bytes) plus frame-end (1 byte): frame-max minus this is the largest payload.
FRAME_OVERHEAD: Final = 8
#: RabbitMQ accepts payloads this many bytes over the limit (``?FRAME_SIZE_FUDGE``).
FRAME_SIZE_FUDGE: Final = 8
#: The AMQP 0-9-1 protocol header a client sends first, and a server sends back to refuse.
PROTOCOL_HEADER: Final = b"AMQP\x00\x00\x09\x01"
#: A heartbeat frame: "type=8, channel=0, size=0, frame-end=0xCE".
HEARTBEAT_FRAME: Final = b"\x08\x00\x00\x00\x00\x00\x00\xce"

_FRAME_HEADER = struct.Struct(">BHI")
_END_AND_FRAME_HEADER = struct.Struct(">BBHI")
_END_AND_CONTENT_HEADER = struct.Struct(">BBHIHHQ")
_CONTENT_HEADER = struct.Struct(">HHQH")
_CONTENT_HEADER_FRAME = struct.Struct(">BHIHHQ")
_U32 = struct.Struct(">I")
_NO_LIMIT = 0xFFFFFFFF


# -- the protocol header ---------------------------------------------------------------------


class ProtocolHeaderKind(enum.Enum):
    """What the first 8 bytes of a connection announce."""

    #: ``AMQP 0 0 9 1``: this protocol.
    AMQP_0_9_1 = "amqp-0-9-1"
    #: ``AMQP`` then a version this codec does not speak (0-8, 0-9, 0-10...): the server answers
    #: with :data:`PROTOCOL_HEADER` and closes (section 4.2.2). RabbitMQ accepts ``AMQP 1 1 0 9``
    #: (0-9) as 0-9-1; that choice is the server's.
    OTHER_AMQP_VERSION = "other-amqp-version"
    #: ``AMQP id 1 0 0`` with protocol id 0 (AMQP), 2 (TLS) or 3 (SASL): AMQP 1.0, for an AMQP 1.0
    #: listener to take over.
    AMQP_1_0 = "amqp-1-0"
    #: Not ``AMQP`` at all (an HTTP request, a TLS client hello...).
    NOT_AMQP = "not-amqp"


@final
@dataclass(frozen=True, slots=True)
class ProtocolHeader:
    """A parsed protocol header.

    Attributes:
        kind: what it announces.
        protocol_id: the byte after ``AMQP`` (0 for 0-9-1 and AMQP 1.0, 2 TLS, 3 SASL, 1 in the
            legacy 0-8/0-9 headers); 0 when not AMQP.
        version: the three bytes after the protocol id (``(0, 9, 1)``, ``(1, 0, 0)``...);
            ``(0, 0, 0)`` when not AMQP.
        data: the 8 bytes received (fewer when refused early as not AMQP).
    """

    kind: ProtocolHeaderKind
    protocol_id: int
    version: tuple[int, int, int]
    data: bytes


def parse_protocol_header(data: bytes | bytearray | memoryview) -> ProtocolHeader | None:
    """Classify the first bytes a client sent.

    Args:
        data: the bytes received so far; only the first 8 are looked at.

    Returns:
        ``None`` while fewer than 8 bytes have arrived and they still begin like ``AMQP``;
        otherwise the :class:`ProtocolHeader`. A prefix that cannot become ``AMQP`` is
        ``NOT_AMQP`` at once, so a client speaking another protocol is answered without waiting.
        The caller consumes 8 bytes (or closes, for anything but ``AMQP_0_9_1``).

    >>> parse_protocol_header(b"AMQP\\x00\\x00\\x09\\x01").kind
    <ProtocolHeaderKind.AMQP_0_9_1: 'amqp-0-9-1'>
    >>> parse_protocol_header(b"AMQP\\x03\\x01\\x00\\x00").protocol_id
    3
    >>> parse_protocol_header(b"AMQ") is None
    True
    """
    head = bytes(data[:8])
    if not b"AMQP".startswith(head[:4]):
        return ProtocolHeader(ProtocolHeaderKind.NOT_AMQP, 0, (0, 0, 0), head)
    if len(head) < 8:
        return None
    protocol_id, major, minor, revision = head[4:8]
    version = (major, minor, revision)
    if head == PROTOCOL_HEADER:
        kind = ProtocolHeaderKind.AMQP_0_9_1
    elif protocol_id in (0, 2, 3) and version == (1, 0, 0):
        kind = ProtocolHeaderKind.AMQP_1_0
    else:
        kind = ProtocolHeaderKind.OTHER_AMQP_VERSION
    return ProtocolHeader(kind, protocol_id, version, head)


# -- frames ---------------------------------------------------------------------------------------


@final
@dataclass(slots=True)
class MethodFrame:
    """A method frame (type 1): a decoded method on a channel."""

    channel: int
    method: Method


@final
@dataclass(slots=True)
class HeaderFrame:
    """A content header frame (type 2).

    Attributes:
        channel: the channel (never 0).
        class_id: the class of the content (60, basic).
        weight: unused, "must be zero" (the assembler checks it).
        body_size: the total size of the body frames that follow.
        properties: the properties present, decoded (see ``_properties``).
        raw_properties: the same properties as received (flag words and values), to send on
            unchanged with :func:`encode_header_frame_raw`.
    """

    channel: int
    class_id: int
    weight: int
    body_size: int
    properties: dict[str, Any]
    raw_properties: bytes


@final
@dataclass(slots=True)
class BodyFrame:
    """A content body frame (type 3): one slice of a message body."""

    channel: int
    data: bytes


@final
@dataclass(frozen=True, slots=True)
class HeartbeatFrame:
    """A heartbeat frame (type 8): always on channel 0, with no payload."""

    channel: int = 0


_HEARTBEAT = HeartbeatFrame()

Frame: TypeAlias = MethodFrame | HeaderFrame | BodyFrame | HeartbeatFrame


def decode_method(payload: bytes | bytearray | memoryview) -> Method:
    """Decode a method frame payload (class id, method id, arguments) to its method object.

    Raises:
        FrameError: the payload is shorter than the class and method ids.
        CommandInvalid: no method has these ids.
        SyntaxErrorAMQP: the arguments are malformed.

    >>> decode_method(b"\\x00\\x3c\\x00\\x50" + bytes(8) + b"\\x01")
    BasicAck(delivery_tag=0, multiple=True)
    """
    p = payload if type(payload) is bytes else bytes(payload)
    if len(p) < 4:
        raise FrameError(f"method frame payload of {len(p)} bytes has no class and method id")
    (index,) = _U32.unpack_from(p)
    decoder = DECODERS.get(index)
    if decoder is None:
        raise CommandInvalid(f"unknown method: class {index >> 16}, method {index & 0xFFFF}",
                             class_id=index >> 16, method_id=index & 0xFFFF)
    return decoder(p)


def read_content_header(buf: bytes, start: int,
                        end: int) -> tuple[int, int, int, dict[str, Any], bytes]:
    """Decode the content header payload ``buf[start:end]``.

    Returns:
        ``(class_id, weight, body_size, properties, raw_properties)``.

    Raises:
        SyntaxErrorAMQP: shorter than its 14 fixed bytes, or malformed properties.
    """
    if end - start < 14:
        raise frame_error(2, bytes(buf[start:end]), "unknown_frame")
    class_id, weight, body_size, flags = _CONTENT_HEADER.unpack_from(buf, start)
    raw = buf[start + 12:end]
    reader = PROPERTY_READERS.get(flags)  # the common case: a flags word seen before
    if reader is None:
        return class_id, weight, body_size, read_properties(raw, 0), raw
    try:
        return class_id, weight, body_size, reader(raw, 2), raw
    except (struct.error, IndexError):
        raise SyntaxErrorAMQP("content header properties truncated") from None


class _FrameBuffer:
    """The received bytes not parsed yet, and the frame-max they are checked against."""

    __slots__ = ("_buf", "_chunks", "_error", "_frame_max", "_max_payload", "_need", "_pending",
                 "_pos")

    def __init__(self, max_frame_size: int) -> None:
        self._buf = b""  # bytes not yet parsed start at self._pos
        self._pos = 0
        self._chunks: list[bytes] = []  # bytes fed since, not yet joined to _buf
        self._pending = 0  # their total length
        self._need = 7  # bytes needed after _pos before another frame can be parsed
        self._error: ConnectionException | None = None
        self._frame_max = 0
        self._max_payload = _NO_LIMIT
        self.frame_max = max_frame_size

    @property
    def frame_max(self) -> int:
        """The negotiated frame-max (0: no limit). Settable, e.g. after ``tune-ok``."""
        return self._frame_max

    @frame_max.setter
    def frame_max(self, value: int) -> None:
        if value < 0:
            raise ValueError(f"frame_max must be positive or 0, not {value}")
        self._frame_max = value
        self._max_payload = (value - FRAME_OVERHEAD + FRAME_SIZE_FUDGE) if value else _NO_LIMIT

    @property
    def buffered(self) -> int:
        """How many bytes are waiting for the rest of their frame."""
        return len(self._buf) - self._pos + self._pending

    def _store(self, data: bytes | bytearray | memoryview) -> None:
        if data:
            chunk = data if type(data) is bytes else bytes(data)
            if self._pos == len(self._buf) and not self._chunks:
                self._buf = chunk
                self._pos = 0
            else:
                self._chunks.append(chunk)
                self._pending += len(chunk)

    def _merge(self) -> bool:
        """Join the chunks fed since to the buffer, once they can complete what is needed."""
        buf = self._buf
        pos = self._pos
        if len(buf) - pos + self._pending < self._need:
            return False
        chunks = self._chunks
        if pos < len(buf):
            buf = b"".join([buf[pos:], *chunks])
        elif len(chunks) == 1:
            buf = chunks[0]
        else:
            buf = b"".join(chunks)
        self._chunks = []
        self._pending = 0
        self._buf = buf
        self._pos = 0
        return True

    def _wait(self, buf: bytes, pos: int, need: int) -> bool:
        """Record that ``need`` bytes from ``pos`` are needed; True if fed chunks may have them."""
        self._need = need
        if pos:  # drop what was parsed: a big buffer is not kept alive for a few bytes
            self._buf = buf[pos:]
            self._pos = 0
        return bool(self._chunks)

    def _too_large(self, frame_type: int, size: int) -> FrameError:
        return frame_error(frame_type, b"", f"{{frame_too_large,{size},"
                                            f"{self._frame_max - FRAME_OVERHEAD}}}")


@final
class FrameParser(_FrameBuffer):
    """Incremental frame parser: feed it bytes, get complete frames back.

    Args:
        max_frame_size: the largest frame accepted, frame header and end included (the
            connection's frame-max; 0 means no limit). Starts at :data:`FRAME_MIN_SIZE`, as the
            spec requires before tuning; set :attr:`frame_max` after ``connection.tune-ok``.

    >>> parser = FrameParser()
    >>> list(parser.feed(HEARTBEAT_FRAME[:5]))
    []
    >>> list(parser.feed(HEARTBEAT_FRAME[5:]))
    [HeartbeatFrame(channel=0)]
    """

    __slots__ = ()

    def __init__(self, max_frame_size: int = FRAME_MIN_SIZE) -> None:
        super().__init__(max_frame_size)

    def feed(self, data: bytes | bytearray | memoryview) -> Iterator[Frame]:
        """Add received bytes; iterate over the frames they complete.

        The bytes are buffered at once; the frames are parsed as the iterator is consumed, in
        order, so that frames before a bad one are still handed out before the error is raised.
        Frames left unconsumed stay buffered for the next call.

        Runtime: O(len(data)) over the whole stream, however it is chunked.

        Raises:
            ConnectionException: (from the iterator) see the module docstring. The parser is
                then dead: every later call raises the same error.
        """
        self._store(data)
        return self._frames()

    def _frames(self) -> Iterator[Frame]:
        if self._error is not None:
            raise self._error
        try:
            while True:
                if self._chunks and not self._merge():
                    return
                buf = self._buf
                pos = self._pos
                available = len(buf)
                max_payload = self._max_payload
                while True:
                    if available - pos < 7:
                        need = 7
                        break
                    frame_type, channel, size = _FRAME_HEADER.unpack_from(buf, pos)
                    if size > max_payload:
                        raise self._too_large(frame_type, size)
                    end = pos + 7 + size
                    if end >= available:
                        need = size + 8
                        break
                    start = pos + 7
                    if buf[end] != 0xCE:
                        raise bad_frame_end(buf[end], frame_type, buf[start:end])
                    if frame_type == 3 or frame_type == 2:  # noqa: PLR1714 - hot path
                        if not channel:
                            raise unexpected_frame(frame_type, buf[start:end])
                    elif frame_type != 1 and (frame_type != 8 or channel or size):
                        raise bad_frame(frame_type, channel, buf[start:end])
                    self._pos = end + 1
                    if frame_type == 3:
                        yield BodyFrame(channel, buf[start:end])
                    elif frame_type == 1:
                        payload = buf[start:end]
                        decoder = DECODERS.get(_U32.unpack_from(payload)[0]) if size >= 4 else None
                        # connection methods on channel 0, all the others elsewhere (4.2.3)
                        if decoder is None or (not channel) != (payload[1] == 10 and not payload[0]):
                            raise bad_method(channel, payload)
                        yield MethodFrame(channel, decode_arguments(decoder, payload))
                    elif frame_type == 2:
                        yield HeaderFrame(channel, *read_content_header(buf, start, end))
                    else:
                        yield _HEARTBEAT
                    if self._buf is not buf:  # another iterator from feed() moved on
                        need = 0
                        break
                    pos = self._pos
                    max_payload = self._max_payload  # the caller may have tuned frame_max
                if need and not self._wait(buf, pos, need):
                    return
        except ConnectionException as exc:
            self._error = exc
            raise


def _octets(frame_type: int, payload: bytes) -> str:
    # rabbit_reader's payload snippet: the whole payload up to 16 bytes, else its first 16.
    which, shown = ("all", payload) if len(payload) <= 16 else ("first 16", payload[:16])
    prefix = f"type {frame_type}, {which} octets = "
    return prefix + _erlang.binary(bytes(shown), len(prefix))


def frame_error(frame_type: int, payload: bytes, error: str) -> FrameError:
    """RabbitMQ's 501 for a frame it cannot use: ``type T, all octets = <<...>>: error``."""
    return FrameError(f"{_octets(frame_type, payload)}: {error}")


def unexpected_frame(frame_type: int, payload: bytes) -> UnexpectedFrame:
    """RabbitMQ's 505 for a frame that cannot come here (content on channel 0, a heartbeat on
    another channel): ``type T, all octets = <<...>>``."""
    return UnexpectedFrame(_octets(frame_type, payload))


def bad_frame_end(byte: int, frame_type: int, payload: bytes) -> FrameError:
    """The error for a frame whose last byte is not 0xCE."""
    return frame_error(frame_type, payload, f"{{invalid_frame_end_marker,{byte}}}")


def bad_frame(frame_type: int, channel: int, payload: bytes) -> ConnectionException:
    """The error for a heartbeat that is not one (a payload, a channel) or an unknown type."""
    if frame_type == 8 and not payload:
        return unexpected_frame(frame_type, payload)
    return frame_error(frame_type, payload, "unknown_frame")


def decode_arguments(decoder: Callable[[bytes], Method], payload: bytes) -> Method:
    """Decode a method frame's payload; malformed arguments are RabbitMQ's 501
    ``cannot decode <<...>>`` (the bytes after the class and method ids, as ``~w`` writes
    them), with the method's ids."""
    try:
        return decoder(payload)
    except SyntaxErrorAMQP:
        class_id, method_id = struct.unpack_from(">HH", payload)
        raise FrameError(f"cannot decode {_erlang.binary_w(bytes(payload[4:]))}",
                         class_id=class_id, method_id=method_id) from None


def bad_method(channel: int, payload: bytes) -> ConnectionException:
    """The error for a method frame that cannot be decoded on this channel (see the module doc)."""
    if len(payload) < 4:
        return frame_error(1, payload, "unknown_frame")
    class_id, method_id = struct.unpack_from(">HH", payload)
    if channel and class_id == 10:
        return CommandInvalid("unimplemented method", class_id=class_id, method_id=method_id)
    if not channel and class_id != 10:
        return ChannelError("unexpected method in connection state running",
                            class_id=class_id, method_id=method_id)
    return CommandInvalid(f"unknown method: class {class_id}, method {method_id}",
                          class_id=class_id, method_id=method_id)


# -- encoding -------------------------------------------------------------------------------------


def encode_frame(frame_type: int, channel: int, payload: bytes) -> bytes:
    """One frame: the 7-byte header, ``payload`` and the frame-end byte.

    >>> encode_frame(FRAME_HEARTBEAT, 0, b"") == HEARTBEAT_FRAME
    True
    """
    return _FRAME_HEADER.pack(frame_type, channel, len(payload)) + payload + b"\xce"


def encode_method_frame(channel: int, method: Method) -> bytes:
    """The method frame for ``method`` on ``channel``.

    Raises:
        TypeError, ValueError: an argument cannot be encoded (see ``Method.encode``).
    """
    payload = method.encode()
    return _FRAME_HEADER.pack(1, channel, len(payload)) + payload + b"\xce"


def encode_header_frame(channel: int, class_id: int, body_size: int,
                        properties: Mapping[str, Any] | None) -> bytes:
    """A content header frame from a properties mapping (see ``_properties``).

    Raises:
        TypeError, ValueError: a property cannot be encoded.
    """
    return encode_header_frame_raw(channel, class_id, body_size, encode_properties(properties))


def encode_header_frame_raw(channel: int, class_id: int, body_size: int,
                            raw_properties: bytes) -> bytes:
    """A content header frame from already encoded properties (flag words and values).

    ``raw_properties`` is what :attr:`HeaderFrame.raw_properties` holds: forwarding a message
    with its properties unchanged needs no re-encoding, as in RabbitMQ.
    """
    return (_CONTENT_HEADER_FRAME.pack(2, channel, 12 + len(raw_properties), class_id, 0,
                                       body_size) + raw_properties + b"\xce")


def _body_chunk(frame_max: int) -> int:
    if not frame_max:
        return _NO_LIMIT
    if frame_max <= FRAME_OVERHEAD:
        raise ValueError(f"frame_max {frame_max} leaves no room for a body")
    return frame_max - FRAME_OVERHEAD


def encode_body_frames(channel: int, body: bytes | bytearray | memoryview,
                       frame_max: int) -> list[bytes]:
    """The body frames for ``body``, each payload at most ``frame_max - 8`` bytes.

    An empty body has no body frame. ``frame_max`` 0 means no limit (one frame).

    >>> [len(f) - 8 for f in encode_body_frames(1, bytes(500_000), 131072)]
    [131064, 131064, 131064, 106808]
    """
    chunk = _body_chunk(frame_max)
    view = memoryview(body)
    return [_FRAME_HEADER.pack(3, channel, len(view[i:i + chunk])) + view[i:i + chunk] + b"\xce"
            for i in range(0, len(view), chunk)]


def encode_message(channel: int, method: Method, body: bytes | bytearray | memoryview,
                   frame_max: int, properties: Mapping[str, Any] | None = None,
                   raw_properties: bytes | None = None) -> bytes:
    """All the frames of a content method: method frame, content header, body frames.

    Args:
        channel: the channel number.
        method: a method with ``HAS_CONTENT`` (``basic.deliver``, ``basic.get-ok``,
            ``basic.return``, ``basic.publish``).
        body: the message body; split in frames of at most ``frame_max - 8`` bytes.
        frame_max: the connection's negotiated frame-max (0: no limit).
        properties: the properties, as a mapping; ignored when ``raw_properties`` is given.
        raw_properties: the properties already encoded (``HeaderFrame.raw_properties``).

    Raises:
        TypeError, ValueError: the method or the properties cannot be encoded.
    """
    return encode_content(channel, method.encode(), method.CLASS_ID, body, frame_max,
                          properties, raw_properties)


def encode_content(channel: int, payload: bytes, class_id: int,
                   body: bytes | bytearray | memoryview, frame_max: int,
                   properties: Mapping[str, Any] | None = None,
                   raw_properties: bytes | None = None) -> bytes:
    """:func:`encode_message` with the method's frame payload already encoded (``payload``,
    of class ``class_id``): what the server's delivery path uses with
    :func:`deliver_payload`.

    Raises:
        TypeError, ValueError: the properties cannot be encoded.
    """
    props = raw_properties if raw_properties is not None else encode_properties(properties)
    size = len(body)
    if size and (size <= frame_max - FRAME_OVERHEAD or not frame_max):  # one body frame
        return b"".join((
            _FRAME_HEADER.pack(1, channel, len(payload)), payload,
            _END_AND_CONTENT_HEADER.pack(0xCE, 2, channel, 12 + len(props), class_id, 0,
                                         size), props,
            _END_AND_FRAME_HEADER.pack(0xCE, 3, channel, size), body, b"\xce",
        ))
    parts = [_FRAME_HEADER.pack(1, channel, len(payload)), payload,
             _END_AND_CONTENT_HEADER.pack(0xCE, 2, channel, 12 + len(props), class_id, 0,
                                          size),
             props]
    if size:
        chunk = _body_chunk(frame_max)
        view = memoryview(body)
        for i in range(0, size, chunk):
            piece = view[i:i + chunk]
            parts.append(_END_AND_FRAME_HEADER.pack(0xCE, 3, channel, len(piece)))
            parts.append(piece)  # type: ignore[arg-type]  # join takes any bytes-like
    parts.append(b"\xce")
    return b"".join(parts)


_LEN8: Final = [bytes((n,)) for n in range(256)]
_TAG_AND_BIT: Final = struct.Struct(">QB")


def deliver_payload(consumer_tag: str, delivery_tag: int, redelivered: bool, exchange: str,
                    routing_key: str) -> bytes | None:
    """The payload of a basic.deliver method frame, byte for byte what
    ``BasicDeliver(...).encode()`` gives (a test holds them equal), without the method object:
    once per delivery. ``None`` when an argument cannot be encoded (a string over 255 bytes, a
    tag out of range, a wrong type): the caller then encodes the method, which says why.
    """
    head, tail = deliver_head(consumer_tag), deliver_tail(exchange, routing_key)
    if head is None or tail is None:
        return None
    return deliver_payload_from(head, delivery_tag, redelivered, tail)


def deliver_head(consumer_tag: str) -> bytes | None:
    """A basic.deliver payload up to its delivery tag: the method's ids and the consumer tag
    (``None``: the tag cannot be encoded)."""
    try:
        tag = consumer_tag.encode("utf-8", "surrogateescape")
        return b"\x00\x3c\x00\x3c" + _LEN8[len(tag)] + tag
    except (IndexError, TypeError, AttributeError):
        return None


def deliver_tail(exchange: str, routing_key: str) -> bytes | None:
    """A basic.deliver payload after its redelivered bit: the exchange and the routing key
    (``None``: one cannot be encoded)."""
    try:
        name = exchange.encode("utf-8", "surrogateescape")
        key = routing_key.encode("utf-8", "surrogateescape")
        return b"".join((_LEN8[len(name)], name, _LEN8[len(key)], key))
    except (IndexError, TypeError, AttributeError):
        return None


def deliver_payload_from(head: bytes, delivery_tag: int, redelivered: bool,
                         tail: bytes) -> bytes | None:
    """:func:`deliver_payload` from its :func:`deliver_head` and :func:`deliver_tail`, which a
    connection may keep from one delivery to the next (``None``: the delivery tag is out of
    range or not a number)."""
    try:
        return b"".join((head, _TAG_AND_BIT.pack(delivery_tag, 1 if redelivered else 0), tail))
    except (TypeError, struct.error):
        return None
