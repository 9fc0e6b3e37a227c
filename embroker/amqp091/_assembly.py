"""Content assembly: from frames to commands (a method, or a method with its message).

Section 4.2.6 of the spec: a content-carrying method (``basic.publish``, and towards a client
``basic.deliver``, ``basic.get-ok``, ``basic.return``) is followed on its channel by exactly one
content header frame and then body frames until ``body_size`` bytes have arrived. Frames of other
channels may come in between; frames of the same channel may not. A :class:`ContentAssembler`
(one per connection) takes the frames in order and hands out a :class:`Command` when one is
complete: a method without content at once, a content method once its header and all its bodies
are in (at the header itself when the body is empty).

:class:`CommandReader` is the frame parser and the assembler in one loop, bytes to commands, for
the server's hot path: same rules, same errors in the same order (tests hold the two paths equal
on random and mutated input), no intermediate frame objects, and a whole ``basic.publish`` taken
in one step when its header and single body frame are already buffered.

Errors (all connection exceptions; the spec text is section 4.2.6: "A peer that receives an
incomplete or badly-formatted content MUST raise a connection exception with reply code 505
(unexpected frame). This includes missing content headers, wrong class IDs in content headers,
missing content body frames, etc."):

* a content header or body frame that no content method announced, a method frame where a header
  or body was due, a header whose class id differs from the method's, a header with a non-zero
  weight, body frames adding up to more than the header's ``body_size``:
  :class:`~embroker.errors.UnexpectedFrame` (505). Section 4.2.6.1 says 501 for the wrong class
  id; RabbitMQ and the general rule of 4.2.6 say 505, and so does embroker. A header with a
  weight is, for RabbitMQ, no content header at all. (RabbitMQ 3.10 waits for ever on bodies
  exceeding ``body_size``; 4.2.6 says 505, and embroker answers that.)
* content frames on channel 0: :class:`~embroker.errors.UnexpectedFrame` (505), as RabbitMQ
  (the frame parser refuses them with their bytes; frames built by hand are checked again here).
* a ``body_size`` over ``max_body_size`` (512 MiB by default, RabbitMQ's hard limit):
  :class:`~embroker.errors.FrameError` (501) with RabbitMQ's text.

Reply texts follow ``rabbit_command_assembler``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import Any, Final, final

from embroker.amqp091._frames import (
    _CONTENT_HEADER,
    _FRAME_HEADER,
    _U32,
    FRAME_MIN_SIZE,
    BodyFrame,
    Frame,
    HeaderFrame,
    MethodFrame,
    _FrameBuffer,
    bad_frame,
    bad_frame_end,
    bad_method,
    decode_arguments,
    read_content_header,
    unexpected_frame,
)
from embroker.amqp091._method import Method
from embroker.amqp091._methods import DECODERS
from embroker.amqp091._properties import PROPERTY_READERS
from embroker.errors import (
    ChannelError,
    ConnectionException,
    FrameError,
    SyntaxErrorAMQP,
    UnexpectedFrame,
)

__all__ = ["MAX_BODY_SIZE", "Command", "CommandReader", "ContentAssembler"]

#: A content header frame's header and fixed fields: type, channel, size, class id, weight,
#: body size, first property flags word.
_HEADER_FRAME_START = struct.Struct(">BHIHHQH")

#: RabbitMQ's ``?MAX_MSG_SIZE``: no message body may be larger (512 MiB).
MAX_BODY_SIZE: Final = 536_870_912


@final
class Command:
    """A complete command received on a channel.

    Attributes:
        channel: the channel number.
        method: the method.
        properties: for a content method, its properties (only those present); else ``None``.
        raw_properties: for a content method, the properties as received (flag words and
            values), to forward unchanged; else ``None``.
        body: for a content method, the whole body; else ``None``.
    """

    __slots__ = ("body", "channel", "method", "properties", "raw_properties")

    def __init__(self, channel: int, method: Method, properties: dict[str, Any] | None = None,
                 raw_properties: bytes | None = None, body: bytes | None = None) -> None:
        self.channel = channel
        self.method = method
        self.properties = properties
        self.raw_properties = raw_properties
        self.body = body

    @property
    def has_content(self) -> bool:
        """True when the command carries a message (properties and body)."""
        return self.body is not None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Command):
            return NotImplemented
        return (self.channel, self.method, self.properties, self.raw_properties, self.body) == (
            other.channel, other.method, other.properties, other.raw_properties, other.body)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if self.body is None:
            return f"Command({self.channel}, {self.method!r})"
        return (f"Command({self.channel}, {self.method!r}, properties={self.properties!r}, "
                f"body={self.body[:60]!r}{'...' if len(self.body) > 60 else ''})")


# The state of a channel between a content method and the end of its body, as a list for speed:
# [method, (properties, raw properties) once the header is in, body bytes still expected,
#  body chunks so far (None until a second chunk is needed)].
_METHOD, _HEADER, _REMAINING, _CHUNKS = 0, 1, 2, 3


def _interrupted(state: list[Any]) -> UnexpectedFrame:
    """Another frame arrived where the content of ``state`` was due."""
    method: Method = state[_METHOD]
    if state[_HEADER] is None:
        text = (f"expected content header for class {method.CLASS_ID}, "
                "got non content header frame instead")
    else:
        text = "expected content body, got non content body frame instead"
    return UnexpectedFrame(text, class_id=method.CLASS_ID, method_id=method.METHOD_ID)


def _stray(kind: str, channel: int, state: list[Any] | None) -> ConnectionException:
    """A content header or body frame that is not the one expected on ``channel``."""
    if state is None:
        if not channel:  # (the frame parser reports these, with their bytes)
            return UnexpectedFrame(f"content {kind} frame on channel 0")
        return UnexpectedFrame("expected method frame, got non method frame instead")
    return _interrupted(state)


def _bad_header(method: Method, class_id: int, weight: int, body_size: int,
                max_body_size: int) -> ConnectionException | None:
    """What is wrong with a content header for ``method``, if anything."""
    if class_id != method.CLASS_ID:
        return UnexpectedFrame(f"expected content header for class {method.CLASS_ID}, "
                               f"got one for class {class_id} instead",
                               class_id=method.CLASS_ID, method_id=method.METHOD_ID)
    if weight:  # RabbitMQ's assembler takes a header with a weight for no header at all
        return UnexpectedFrame(f"expected content header for class {method.CLASS_ID}, "
                               "got non content header frame instead",
                               class_id=method.CLASS_ID, method_id=method.METHOD_ID)
    if body_size > max_body_size:
        return FrameError(f"content body size {body_size} exceeds maximum allowed size "
                          f"{max_body_size}", class_id=method.CLASS_ID,
                          method_id=method.METHOD_ID)
    return None


def _too_long(state: list[Any]) -> UnexpectedFrame:
    method: Method = state[_METHOD]
    return UnexpectedFrame("content body frame exceeds remaining content size",
                           class_id=method.CLASS_ID, method_id=method.METHOD_ID)


@final
class ContentAssembler:
    """Assemble frames into commands, per channel.

    Args:
        max_body_size: the largest ``body_size`` a content header may announce.

    >>> from embroker.amqp091 import BodyFrame, HeaderFrame, MethodFrame
    >>> from embroker.amqp091.methods import BasicPublish
    >>> assembler = ContentAssembler()
    >>> assembler.add(MethodFrame(1, BasicPublish(routing_key="k"))) is None
    True
    >>> assembler.add(HeaderFrame(1, 60, 0, 2, {}, b"\\x00\\x00")) is None
    True
    >>> assembler.add(BodyFrame(1, b"hi")).body
    b'hi'
    """

    __slots__ = ("_max_body_size", "_partial")

    def __init__(self, max_body_size: int = MAX_BODY_SIZE) -> None:
        self._partial: dict[int, list[Any]] = {}
        self._max_body_size = max_body_size

    def add(self, frame: Frame) -> Command | None:
        """Take the next frame; return the command it completes, if any.

        Heartbeats are accepted and complete nothing.

        Runtime: O(1), plus joining the body when the last of several body frames arrives.

        Raises:
            UnexpectedFrame, ChannelError, FrameError: see the module docstring.
        """
        if isinstance(frame, BodyFrame):
            return self._body(frame)
        if isinstance(frame, MethodFrame):
            channel = frame.channel
            method = frame.method
            if channel in self._partial:
                raise _interrupted(self._partial[channel])
            if method.HAS_CONTENT:
                if not channel:
                    raise ChannelError("unexpected method in connection state running",
                                       class_id=method.CLASS_ID, method_id=method.METHOD_ID)
                self._partial[channel] = [method, None, 0, None]
                return None
            return Command(channel, method)
        if isinstance(frame, HeaderFrame):
            return self._header(frame)
        return None

    def feed(self, frames: Iterable[Frame]) -> Iterator[Command]:
        """:meth:`add` each frame; yield the commands completed, in order."""
        add = self.add
        for frame in frames:
            command = add(frame)
            if command is not None:
                yield command

    def pending(self, channel: int) -> Method | None:
        """The content method on ``channel`` still waiting for its content, if any."""
        state = self._partial.get(channel)
        return state[_METHOD] if state is not None else None

    def forget(self, channel: int) -> None:
        """Drop any half-received content on ``channel`` (when the channel closes)."""
        self._partial.pop(channel, None)

    def _header(self, frame: HeaderFrame) -> Command | None:
        channel = frame.channel
        state = self._partial.get(channel)
        if state is None or state[_HEADER] is not None:
            raise _stray("header", channel, state)
        method: Method = state[_METHOD]
        size = frame.body_size
        error = _bad_header(method, frame.class_id, frame.weight, size, self._max_body_size)
        if error is not None:
            raise error
        if not size:
            del self._partial[channel]
            return Command(channel, method, frame.properties, frame.raw_properties, b"")
        state[_HEADER] = (frame.properties, frame.raw_properties)
        state[_REMAINING] = size
        return None

    def _body(self, frame: BodyFrame) -> Command | None:
        channel = frame.channel
        state = self._partial.get(channel)
        if state is None or state[_HEADER] is None:
            raise _stray("body", channel, state)
        data = frame.data
        remaining = state[_REMAINING] - len(data)
        chunks: list[bytes] | None = state[_CHUNKS]
        if remaining > 0:
            state[_REMAINING] = remaining
            if chunks is None:
                state[_CHUNKS] = [data]
            else:
                chunks.append(data)
            return None
        if remaining < 0:
            raise _too_long(state)
        del self._partial[channel]
        if chunks is not None:
            chunks.append(data)
            data = b"".join(chunks)
        properties, raw = state[_HEADER]
        return Command(channel, state[_METHOD], properties, raw, data)


#: A content header's properties when none is set: the flag word alone.
_NO_PROPERTIES: Final = b"\x00\x00"


@final
class CommandReader(_FrameBuffer):
    """Bytes in, commands out: :class:`FrameParser` and :class:`ContentAssembler` in one loop.

    The same rules and errors, in the same order, as ``ContentAssembler().feed(
    FrameParser().feed(data))`` (a test holds them equal on random and mutated input), without
    the intermediate frame objects: the server's hot path. Heartbeats are consumed silently.

    Args:
        max_frame_size: as :class:`FrameParser`; set :attr:`frame_max` after tuning.
        max_body_size: as :class:`ContentAssembler`.

    >>> from embroker.amqp091 import encode_message
    >>> from embroker.amqp091.methods import BasicPublish
    >>> reader = CommandReader()
    >>> [c.body for c in reader.feed(encode_message(1, BasicPublish(), b"hi", 4096))]
    [b'hi']
    """

    __slots__ = ("_last_content", "_last_payload", "_max_body_size", "_partial")

    def __init__(self, max_frame_size: int = FRAME_MIN_SIZE,
                 max_body_size: int = MAX_BODY_SIZE) -> None:
        super().__init__(max_frame_size)
        self._partial: dict[int, list[Any]] = {}
        self._max_body_size = max_body_size
        # The last content method's frame payload and what it decoded to: a publisher sends
        # the same basic.publish again and again, decoded once (methods are not changed once
        # decoded, so commands may share one).
        self._last_payload: bytes | None = None
        self._last_content: Method | None = None

    def feed(self, data: bytes | bytearray | memoryview) -> Iterator[Command]:
        """Add received bytes; iterate over the commands they complete.

        As :meth:`FrameParser.feed`: lazy, in order, commands before a bad frame first, errors
        sticky.

        Raises:
            ConnectionException: (from the iterator) the errors of both :class:`FrameParser`
                and :class:`ContentAssembler`.
        """
        if data:  # _FrameBuffer._store, inlined: this is the hot path
            chunk = data if type(data) is bytes else bytes(data)
            if self._pos == len(self._buf) and not self._chunks:
                self._buf = chunk
                self._pos = 0
            else:
                self._chunks.append(chunk)
                self._pending += len(chunk)
        return self._commands()

    def pending(self, channel: int) -> Method | None:
        """The content method on ``channel`` still waiting for its content, if any."""
        state = self._partial.get(channel)
        return state[_METHOD] if state is not None else None

    def forget(self, channel: int) -> None:
        """Drop any half-received content on ``channel`` (when the channel closes)."""
        self._partial.pop(channel, None)

    def _whole_message(self, buf: bytes, pos: int, channel: int,
                       method: Method) -> Command | None:
        """The fast path of a content method: its header and single body frame already here.

        ``pos`` is where the frame after the method starts. Returns the command and moves past
        its frames when the header and one body frame follow on the same channel, complete and
        valid, with properties of a known shape; returns ``None`` (nothing consumed) otherwise,
        for the general loop to take them one by one. Raises what the general loop would raise
        on the same frames.
        """
        available = len(buf)
        if available - pos < 22:  # a header frame is at least 7 + 14 + 1 bytes
            return None
        (frame_type, header_channel, size, class_id, weight, body_size,
         flags) = _HEADER_FRAME_START.unpack_from(buf, pos)
        end = pos + 7 + size
        if (frame_type != 2 or header_channel != channel or size < 14 or end >= available
                or buf[end] != 0xCE or size > self._max_payload or class_id != method.CLASS_ID
                or weight or body_size > self._max_body_size):
            return None
        if not flags and end == pos + 21:  # no properties (pika's plain basic_publish)
            raw, properties = _NO_PROPERTIES, {}
        else:
            reader = PROPERTY_READERS.get(flags)
            if reader is None:
                return None
            raw = buf[pos + 19:end]
            try:
                properties = reader(raw, 2)
            except (struct.error, IndexError):
                raise SyntaxErrorAMQP("content header properties truncated") from None
        if not body_size:
            self._pos = end + 1
            return Command(channel, method, properties, raw, b"")
        start = end + 8
        end = start + body_size
        if (end >= available or buf[end] != 0xCE
                or _FRAME_HEADER.unpack_from(buf, start - 7) != (3, channel, body_size)
                or body_size > self._max_payload):
            return None
        self._pos = end + 1
        return Command(channel, method, properties, raw, buf[start:end])

    def _commands(self) -> Iterator[Command]:  # one hot loop, kept in one piece
        if self._error is not None:
            raise self._error
        partial = self._partial
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
                    pos = self._pos = end + 1
                    command = None
                    if frame_type == 1:
                        payload = buf[start:end]
                        if channel and payload == self._last_payload:  # the same publish again
                            method: Method = self._last_content  # type: ignore[assignment]
                        else:
                            decoder = (DECODERS.get(_U32.unpack_from(payload)[0]) if size >= 4
                                       else None)
                            if decoder is None or (not channel) != (payload[1] == 10
                                                                    and not payload[0]):
                                raise bad_method(channel, payload)
                            try:  # decode_arguments, inlined: its error path only on an error
                                method = decoder(payload)
                            except SyntaxErrorAMQP:
                                method = decode_arguments(decoder, payload)  # raises FrameError
                            if method.HAS_CONTENT:
                                self._last_payload, self._last_content = payload, method
                        if channel in partial:
                            raise _interrupted(partial[channel])
                        if not method.HAS_CONTENT:
                            command = Command(channel, method)
                        else:
                            command = self._whole_message(buf, pos, channel, method)
                            if command is None:
                                partial[channel] = [method, None, 0, None]
                            else:
                                pos = self._pos
                    elif frame_type == 3:
                        state = partial.get(channel)
                        if state is None or state[_HEADER] is None:
                            raise _stray("body", channel, state)
                        remaining = state[_REMAINING] - size
                        chunks = state[_CHUNKS]
                        if remaining > 0:
                            state[_REMAINING] = remaining
                            if chunks is None:
                                state[_CHUNKS] = [buf[start:end]]
                            else:
                                chunks.append(buf[start:end])
                        elif remaining < 0:
                            raise _too_long(state)
                        else:
                            del partial[channel]
                            if chunks is None:
                                body = buf[start:end]
                            else:
                                chunks.append(buf[start:end])
                                body = b"".join(chunks)
                            properties, raw = state[_HEADER]
                            command = Command(channel, state[_METHOD], properties, raw, body)
                    elif frame_type == 2:
                        # read_content_header, inlined for the common case
                        if size >= 14:
                            class_id, weight, body_size, flags = _CONTENT_HEADER.unpack_from(
                                buf, start)
                            raw = buf[start + 12:end]
                            reader = PROPERTY_READERS.get(flags)
                        else:
                            reader = None
                        if reader is None:
                            class_id, weight, body_size, properties, raw = read_content_header(
                                buf, start, end)
                        else:
                            try:
                                properties = reader(raw, 2)
                            except (struct.error, IndexError):
                                raise SyntaxErrorAMQP("content header properties "
                                                      "truncated") from None
                        state = partial.get(channel)
                        if state is None or state[_HEADER] is not None:
                            raise _stray("header", channel, state)
                        method = state[_METHOD]
                        error = _bad_header(method, class_id, weight, body_size,
                                            self._max_body_size)
                        if error is not None:
                            raise error
                        if body_size:
                            state[_HEADER] = (properties, raw)
                            state[_REMAINING] = body_size
                        else:
                            del partial[channel]
                            command = Command(channel, method, properties, raw, b"")
                    if command is not None:
                        yield command
                        if self._buf is not buf:  # another iterator from feed() moved on
                            need = 0
                            break
                        pos = self._pos
                        max_payload = self._max_payload  # the caller may have tuned frame_max
                if need:  # _FrameBuffer._wait, inlined
                    self._need = need
                    if pos:
                        self._buf = buf[pos:]
                        self._pos = 0
                    if not self._chunks:
                        return
        except ConnectionException as exc:
            self._error = exc
            raise
