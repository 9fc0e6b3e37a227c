"""Content assembly: from frames to commands (a method, or a method with its message).

Section 4.2.6 of the spec: a content-carrying method (``basic.publish``, and towards a client
``basic.deliver``, ``basic.get-ok``, ``basic.return``) is followed on its channel by exactly one
content header frame and then body frames until ``body_size`` bytes have arrived. Frames of other
channels may come in between; frames of the same channel may not. A :class:`ContentAssembler`
(one per connection) takes the frames in order and hands out a :class:`Command` when one is
complete: a method without content at once, a content method once its header and all its bodies
are in (at the header itself when the body is empty).

Errors (all connection exceptions; the spec text is section 4.2.6: "A peer that receives an
incomplete or badly-formatted content MUST raise a connection exception with reply code 505
(unexpected frame). This includes missing content headers, wrong class IDs in content headers,
missing content body frames, etc."):

* a content header or body frame that no content method announced, a method frame where a header
  or body was due, a header whose class id differs from the method's, a header with a non-zero
  weight, body frames adding up to more than the header's ``body_size``:
  :class:`~embroker.errors.UnexpectedFrame` (505). Section 4.2.6.1 says 501 for the wrong class
  id; RabbitMQ and the general rule of 4.2.6 say 505, and so does embroker. (Recent RabbitMQ
  versions answer 501 for bodies exceeding ``body_size``; 4.2.6 says 505.)
* content frames on channel 0: :class:`~embroker.errors.ChannelError` (504), section 4.2.6.1
  (the frame parser already refuses them; frames built by hand are checked again here).
* a ``body_size`` over ``max_body_size`` (512 MiB by default, RabbitMQ's hard limit):
  :class:`~embroker.errors.FrameError` (501) with RabbitMQ's text.

Reply texts follow ``rabbit_command_assembler``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final, final

from embroker.amqp091._frames import BodyFrame, Frame, HeaderFrame, MethodFrame
from embroker.amqp091._method import Method
from embroker.errors import ChannelError, FrameError, UnexpectedFrame

__all__ = ["MAX_BODY_SIZE", "Command", "ContentAssembler"]

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


class _Partial:
    """A content method waiting for its header (``header is None``) or bodies."""

    __slots__ = ("chunks", "header", "method", "remaining")

    def __init__(self, method: Method) -> None:
        self.method = method
        self.header: HeaderFrame | None = None
        self.remaining = 0
        self.chunks: list[bytes] = []


@final
class ContentAssembler:
    """Assemble frames into commands, per channel.

    Args:
        max_body_size: the largest ``body_size`` a content header may announce.

    >>> from embroker.amqp091 import BasicPublish, BodyFrame, HeaderFrame, MethodFrame
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
        self._partial: dict[int, _Partial] = {}
        self._max_body_size = max_body_size

    def add(self, frame: Frame) -> Command | None:
        """Take the next frame; return the command it completes, if any.

        Heartbeats are accepted and complete nothing.

        Runtime: O(1), plus joining the body when the last of several body frames arrives.

        Raises:
            UnexpectedFrame, ChannelError, FrameError: see the module docstring.
        """
        if isinstance(frame, MethodFrame):
            channel = frame.channel
            if channel in self._partial:
                raise self._interrupted(self._partial[channel])
            method = frame.method
            if method.HAS_CONTENT:
                self._partial[channel] = _Partial(method)
                return None
            return Command(channel, method)
        if isinstance(frame, HeaderFrame):
            return self._header(frame)
        if isinstance(frame, BodyFrame):
            return self._body(frame)
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
        partial = self._partial.get(channel)
        return partial.method if partial is not None else None

    def forget(self, channel: int) -> None:
        """Drop any half-received content on ``channel`` (when the channel closes)."""
        self._partial.pop(channel, None)

    def _header(self, frame: HeaderFrame) -> Command | None:
        channel = frame.channel
        if not channel:
            raise ChannelError("content header frame on channel 0")
        partial = self._partial.get(channel)
        if partial is None:
            raise UnexpectedFrame("expected method frame, got non method frame instead")
        method = partial.method
        if partial.header is not None:
            raise UnexpectedFrame("expected content body, got non content body frame instead",
                                  class_id=method.CLASS_ID, method_id=method.METHOD_ID)
        if frame.class_id != method.CLASS_ID:
            raise UnexpectedFrame(f"expected content header for class {method.CLASS_ID}, "
                                  f"got one for class {frame.class_id} instead",
                                  class_id=method.CLASS_ID, method_id=method.METHOD_ID)
        if frame.weight:
            raise UnexpectedFrame(f"content header weight must be 0, got {frame.weight}",
                                  class_id=method.CLASS_ID, method_id=method.METHOD_ID)
        size = frame.body_size
        if size > self._max_body_size:
            raise FrameError(f"content body size {size} exceeds maximum allowed size "
                             f"{self._max_body_size}",
                             class_id=method.CLASS_ID, method_id=method.METHOD_ID)
        if not size:
            del self._partial[channel]
            return Command(channel, method, frame.properties, frame.raw_properties, b"")
        partial.header = frame
        partial.remaining = size
        return None

    def _body(self, frame: BodyFrame) -> Command | None:
        channel = frame.channel
        if not channel:
            raise ChannelError("content body frame on channel 0")
        partial = self._partial.get(channel)
        if partial is None:
            raise UnexpectedFrame("expected method frame, got non method frame instead")
        header = partial.header
        method = partial.method
        if header is None:
            raise UnexpectedFrame(f"expected content header for class {method.CLASS_ID}, "
                                  "got non content header frame instead",
                                  class_id=method.CLASS_ID, method_id=method.METHOD_ID)
        data = frame.data
        remaining = partial.remaining - len(data)
        if remaining > 0:
            partial.remaining = remaining
            partial.chunks.append(data)
            return None
        if remaining < 0:
            raise UnexpectedFrame("content body frame exceeds remaining content size",
                                  class_id=method.CLASS_ID, method_id=method.METHOD_ID)
        del self._partial[channel]
        if partial.chunks:
            partial.chunks.append(data)
            data = b"".join(partial.chunks)
        return Command(channel, method, header.properties, header.raw_properties, data)

    @staticmethod
    def _interrupted(partial: _Partial) -> UnexpectedFrame:
        method = partial.method
        if partial.header is None:
            text = (f"expected content header for class {method.CLASS_ID}, "
                    "got non content header frame instead")
        else:
            text = "expected content body, got non content body frame instead"
        return UnexpectedFrame(text, class_id=method.CLASS_ID, method_id=method.METHOD_ID)
