"""A small synchronous STOMP client over a raw socket, for tests that watch exactly what a
broker sends (no STOMP library between the test and the wire).

- :meth:`RawStomp.send` writes one frame: its command, its headers in the order given (escaped
  as STOMP 1.1 and 1.2 say when ``escape`` is true: ``\\\\``, ``\\n``, ``\\c``, and ``\\r`` for
  1.2), its body, and the NUL; ``content_length`` adds that header.
- :meth:`RawStomp.read` returns the next :class:`Frame`, ``"closed"`` when the server closed
  the connection, or ``"timeout"`` when nothing came within the read timeout. Heart-beat EOLs
  between frames are skipped; a ``content-length`` header says how long the body is, else the
  body ends at the first NUL (:class:`tests.raw_socket.RawSocket` reads; :func:`parse` cuts a
  frame off).

Header names and values are kept as they came on the wire (decoded as UTF-8, not unescaped):
:meth:`Frame.header` unescapes on demand.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tests.raw_socket import Closed, RawSocket

Headers = Sequence[tuple[str, str]]

_ESCAPES_12 = {"\\": "\\\\", "\n": "\\n", ":": "\\c", "\r": "\\r"}
_UNESCAPES = {"\\": "\\", "n": "\n", "c": ":", "r": "\r"}


def escape(text: str, version: str = "1.2") -> str:
    """``text`` as a 1.1 (no ``\\r``) or 1.2 header name or value."""
    return "".join(_ESCAPES_12.get(c, c) if c != "\r" or version == "1.2" else c for c in text)


def unescape(text: str) -> str:
    """A 1.1/1.2 header name or value, its escapes read (an unknown one is left as it is)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in _UNESCAPES:
            out.append(_UNESCAPES[text[i + 1]])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


@dataclass
class Frame:
    command: str
    #: As received: in order, repeated names kept, not unescaped.
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""

    def header(self, name: str, default: str | None = None, *, raw: bool = False) -> str | None:
        """The first value of ``name`` (the one STOMP says counts), unescaped unless ``raw``."""
        for key, value in self.headers:
            if key == name:
                return value if raw else unescape(value)
        return default


class RawStomp(RawSocket):
    """One STOMP connection (TCP), read and written frame by frame."""

    def send(self, command: str, headers: Headers | dict[str, str] = (), body: bytes | str = b"",
             *, escape_as: str | None = "1.2", content_length: bool = False) -> None:
        """Write a frame (``escape_as``: the version whose escaping the headers get; None:
        written as given, as STOMP 1.0 says)."""
        items = list(headers.items()) if isinstance(headers, dict) else list(headers)
        data = body.encode() if isinstance(body, str) else body
        if content_length:
            items.append(("content-length", str(len(data))))
        lines = [command]
        for key, value in items:
            if escape_as is not None:
                key, value = escape(key, escape_as), escape(value, escape_as)
            lines.append(f"{key}:{value}")
        self.send_raw(("\n".join(lines) + "\n\n").encode() + data + b"\0")

    def read(self) -> Frame | Closed:
        """The next frame, ``"closed"``, or ``"timeout"`` (nothing whole within
        :attr:`timeout`: a partly read frame stays buffered for the next read)."""
        return self.receive(parse)

    def read_frames(self, count: int) -> list[Frame | Closed]:
        """Up to ``count`` frames, stopping early at ``closed`` or ``timeout``."""
        out: list[Frame | Closed] = []
        while len(out) < count:
            got = self.read()
            out.append(got)
            if isinstance(got, str):
                break
        return out

    def connect(self, login: str | None = "guest", passcode: str | None = "guest", *,
                host: str | None = "/", accept_version: str | None = "1.2",
                command: str = "CONNECT", extra: Iterable[tuple[str, str]] = ()) -> Frame | Closed:
        """Send CONNECT (or STOMP; headers left out when None) and return the answer."""
        headers = [(k, v) for k, v in (("accept-version", accept_version), ("host", host),
                                       ("login", login), ("passcode", passcode))
                   if v is not None]
        self.send(command, headers + list(extra), escape_as=None)
        return self.read()


def parse(data: bytes) -> tuple[Frame, bytes] | None:
    """The first whole frame of ``data`` and what follows it (None: no whole frame yet).
    EOLs before a frame (heart-beats) are skipped."""
    data = data.lstrip(b"\r\n")
    end = data.find(b"\n\n")
    crlf = data.find(b"\r\n\r\n")
    if end < 0 and crlf < 0:
        return None
    if end < 0 or 0 <= crlf < end:
        head, rest = data[:crlf], data[crlf + 4:]
    else:
        head, rest = data[:end], data[end + 2:]
    lines = [line[:-1] if line.endswith(b"\r") else line for line in head.split(b"\n")]
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        key, _, value = line.decode("utf-8", "replace").partition(":")
        headers.append((key, value))
    length = next((v for k, v in headers if k == "content-length"), None)
    if length is not None and length.strip().isdigit():
        size = int(length)
        if len(rest) < size + 1:
            return None
        body, rest = rest[:size], rest[size + 1:]
    else:
        if b"\0" not in rest:
            return None
        body, rest = rest.split(b"\0", 1)
    return Frame(lines[0].decode("utf-8", "replace"), headers, body), rest
