"""STOMP frames: a sans-IO reader and the writer, as RabbitMQ 3.10.8's ``rabbit_stomp_frame``
reads and writes them.

Theory of operation
-------------------
A frame is a command line, header lines, an empty line, a body and a NUL. The reader takes
bytes as they come (:meth:`FrameReader.feed`) and gives whole frames (:meth:`FrameReader.next`),
byte for byte as RabbitMQ's parser reads them:

- between frames, NULs and line feeds (a heart-beat) are skipped; a line may end in CR LF, and
  a CR anywhere else outside a body is refused (``unexpected_chars_*``);
- header names and values are unescaped (``\\n``, ``\\r``, ``\\c``, ``\\\\``: in every version,
  as RabbitMQ does), another escape is refused (``bad_escape``), a header line without a colon
  is refused (``header_no_value``), and the first of two headers of one name is the one kept;
- a ``SEND`` with ``content-length`` has that many bytes of body, then a NUL (anything else
  there is refused: RabbitMQ's reader dies on it); any other frame's body ends at its first NUL.

Unlike RabbitMQ 3.10, whose reader buffers any frame whole, the reader is bounded: a frame
(its head and body together) may not pass :attr:`FrameReader.max_frame` bytes, a head
:data:`MAX_HEAD` bytes, nor carry more than :data:`MAX_HEADERS` headers. A bound passed, or a
malformed frame, raises :class:`FrameError` and the reader reads nothing more.

Text is kept as ``str``: each byte sequence decoded as UTF-8, a byte that is not UTF-8 kept
as a lone surrogate (``surrogateescape``), so what a client sent goes back out unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, final

__all__ = ["MAX_HEAD", "MAX_HEADERS", "Frame", "FrameError", "FrameReader", "encode_frame"]

#: The most bytes a frame's command and headers may take (RabbitMQ 3.10: no bound).
MAX_HEAD: Final = 64 * 1024
#: The most headers a frame may carry (RabbitMQ 3.10: no bound).
MAX_HEADERS: Final = 1000

_UNESCAPES: Final = {ord("n"): "\n", ord("r"): "\r", ord("c"): ":", ord("\\"): "\\"}
_ESCAPES: Final = str.maketrans({"\\": "\\\\", "\n": "\\n", "\r": "\\r", ":": "\\c"})
_SPECIAL: Final = re.compile(r"[\\:\n\r]")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


@final
class FrameError(ValueError):
    """A frame that cannot be read: ``reason`` is RabbitMQ's term for it
    (``header_no_value``, ``bad_escape``, ``unexpected_chars_in_header``...), or embroker's
    bound (``frame_too_large``, ``too_many_headers``); ``detail`` what was found."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@final
@dataclass(slots=True)
class Frame:
    """One STOMP frame.

    Attributes:
        command: ``CONNECT``, ``SEND``, ``MESSAGE``...
        headers: name and value of each header, in the order they came, each name once (the
            first of two is the one kept, as RabbitMQ keeps it).
        body: the body.
    """

    command: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    _index: dict[str, str] | None = field(default=None, init=False, repr=False, compare=False)

    def header(self, name: str, default: str | None = None) -> str | None:
        """The value of header ``name`` (the first, if the list holds two), or ``default``."""
        index = self._index
        if index is None:
            index = self._index = dict(reversed(self.headers))
        return index.get(name, default)

    def __contains__(self, name: str) -> bool:
        return self.header(name) is not None

    def trimmed(self) -> Frame:
        """The frame with the spaces that start each header value taken away (STOMP 1.0's
        reading: ``rabbit_stomp_util:trim_headers/1``)."""
        return Frame(self.command, [(k, v.lstrip(" ")) for k, v in self.headers], self.body)


def encode_frame(command: str, headers: Iterable[tuple[str, str]], body: bytes = b"", *,
                 trailing_lf: bool = True) -> bytes:
    """A frame as RabbitMQ writes it (``rabbit_stomp_frame:serialize/2``): every header name
    and value escaped (in every version), ``content-length`` after the others when there is
    a body (a ``content-length`` given is dropped), then a NUL and, with ``trailing_lf``, a
    line feed."""
    pairs = [(name, value) for name, value in headers if name != "content-length"]
    if _SPECIAL.search("".join([text for pair in pairs for text in pair])) is None:
        lines = [command, *[f"{name}:{value}" for name, value in pairs]]  # (nothing to escape)
    else:
        lines = [command, *[f"{name.translate(_ESCAPES)}:{value.translate(_ESCAPES)}"
                            for name, value in pairs]]
    if body:
        lines.append(f"content-length:{len(body)}")
    head = _bytes("\n".join(lines)) + b"\n\n"
    return head + body + (b"\x00\n" if trailing_lf else b"\x00")


@final
class FrameReader:
    """Frames from a byte stream (see the module's notes).

    Args:
        max_frame: the most bytes one frame may take, head and body (:attr:`max_frame`).
    """

    __slots__ = ("_buffer", "_failed", "_scanned", "max_frame")

    def __init__(self, max_frame: int) -> None:
        #: The most bytes one frame may take; its owner may raise it (once logged in).
        self.max_frame = max_frame
        self._buffer = bytearray()
        self._scanned = 0  # how far the current frame's NUL was looked for
        self._failed: FrameError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received and not yet part of a frame given out."""
        return len(self._buffer)

    def feed(self, data: bytes) -> None:
        """Add bytes received."""
        self._buffer += data

    def next(self) -> Frame | None:
        """The next whole frame, or ``None`` until more bytes come.

        Raises:
            FrameError: the bytes are no frame, or pass a bound (and so will every call
                after).
        """
        if self._failed is not None:
            raise self._failed
        try:
            return self._next()
        except FrameError as error:
            self._failed = error
            self._buffer.clear()
            raise

    def _next(self) -> Frame | None:
        buffer = self._buffer
        start = 0
        size = len(buffer)
        while start < size:  # between frames: NULs and (CR) LFs
            byte = buffer[start]
            if byte in (0, 10):
                start += 1
            elif byte == 13:
                if start + 1 == size:
                    break
                if buffer[start + 1] != 10:
                    raise FrameError("unexpected_chars_between_frames",
                                     repr(bytes(buffer[start:start + 2])))
                start += 2
            else:
                break
        if start:
            del buffer[:start]
            self._scanned = max(0, self._scanned - start)
            size = len(buffer)
        if not size or (size == 1 and buffer[0] == 13):
            return None
        end = _head_end(buffer)
        if end is None:
            if size > min(MAX_HEAD, self.max_frame):
                raise FrameError("frame_too_large", f"a frame's head over {MAX_HEAD} bytes")
            return None
        head_end, body_start = end
        command, headers = _parse_head(bytes(buffer[:head_end]))
        if command == "SEND":
            length = _content_length(headers)
        else:
            length = None
        if length is not None:
            if body_start + length > self.max_frame:
                raise FrameError("frame_too_large",
                                 f"content-length {length} over {self.max_frame} bytes")
            if size < body_start + length + 1:
                return None
            if buffer[body_start + length] != 0:
                raise FrameError("missing_nul", "no NUL after content-length bytes")
            nul = body_start + length
        else:
            nul = buffer.find(b"\x00", max(body_start, self._scanned))
            if nul < 0:
                if size > self.max_frame:
                    raise FrameError("frame_too_large", f"a frame over {self.max_frame} bytes")
                self._scanned = size
                return None
        body = bytes(buffer[body_start:nul])
        del buffer[:nul + 1]
        self._scanned = 0
        return Frame(command, headers, body)


def _head_end(buffer: bytearray) -> tuple[int, int] | None:
    # Where the head (command and headers) ends and the body starts, or None: not all here.
    # (The command line is never empty: the reader skipped line feeds before it.)
    position = 0
    while True:
        eol = buffer.find(b"\n", position)
        if eol < 0:
            return None
        line_start = position
        position = eol + 1
        if line_start and (eol == line_start or (
                eol == line_start + 1 and buffer[line_start] == 13)):
            return line_start, position


def _parse_head(head: bytes) -> tuple[str, list[tuple[str, str]]]:
    # Decoded once: "\n", "\r", ":" and "\\" are single bytes that no UTF-8 sequence holds.
    text = _text(head)
    lines = text.split("\n")
    if "\r" in text:
        lines = [_line(line, "unexpected_chars_in_header" if i else "unexpected_chars_in_command")
                 for i, line in enumerate(lines)]
    escaped = "\\" in text
    headers: list[tuple[str, str]] = []
    seen: set[str] = set()
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon:
            raise FrameError("header_no_value", repr(name))
        if escaped:
            name, value = _unescape(name), _unescape(value)
        if name not in seen:
            if len(headers) >= MAX_HEADERS:
                raise FrameError("too_many_headers", f"over {MAX_HEADERS}")
            seen.add(name)
            headers.append((name, value))
    return lines[0], headers


def _line(line: str, reason: str) -> str:
    # A line without its CR LF's CR; any other CR is refused (rabbit_stomp_frame's parser).
    if line.endswith("\r"):
        line = line[:-1]
    cr = line.find("\r")
    if cr >= 0:
        raise FrameError(reason, repr(line[cr:cr + 2].encode("utf-8", "surrogateescape")))
    return line


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            if i + 1 == len(text):
                raise FrameError("bad_escape", "\\")
            unescaped = _UNESCAPES.get(ord(text[i + 1]))
            if unescaped is None:
                raise FrameError("bad_escape", "\\" + text[i + 1])
            out.append(unescaped)
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _content_length(headers: list[tuple[str, str]]) -> int | None:
    for name, value in headers:
        if name == "content-length":
            text = value.strip(" ")
            if not text.lstrip("+-").isdigit() or not text.isascii():
                raise FrameError("bad_content_length", repr(value))
            length = int(text)
            if length < 0:
                raise FrameError("bad_content_length", repr(value))
            return length
    return None
