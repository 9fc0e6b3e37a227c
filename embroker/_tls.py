"""TLS between a client's socket and its protocol connection, done in memory on the
listener's loop (``ssl.MemoryBIO`` and ``SSLObject``): the loop keeps its non-blocking socket
and its selector, and a socket with TLS is read and written as one without.

Theory of operation
-------------------
A :class:`TLSSocket` stands where the loop keeps the client's socket. Its
:meth:`~TLSSocket.recv_into` reads the ciphertext that is there, takes the handshake on or
decrypts, and gives the loop the plaintext (a ``BlockingIOError`` while there is none yet, as
a socket with nothing to read; 0 when the peer closed or the TLS session failed, as a socket's
end). It reads at most as much ciphertext as the loop's buffer can hold in plaintext, so
nothing decrypted waits in it unread. Its :meth:`~TLSSocket.send` encrypts what the loop
writes, and takes nothing more while ciphertext waits for the socket
(:attr:`~TLSSocket.unsent`: the loop then waits to write, as with its own buffer), so the
loop's output bound holds for TLS clients too.

A handshake that fails (a certificate refused, garbage, a protocol version the port does not
take) costs its connection alone: the alert OpenSSL wrote is sent if the socket takes it, and
the loop sees the socket's end. One that stalls is closed by the protocol connection's own
handshake timeout, which counts from the TCP connection.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from typing import Any, Final, final

__all__ = ["TLSSocket"]

#: Room kept for a TLS record OpenSSL holds in part between reads (16 KiB and its overhead):
#: the ciphertext read is never more than the plaintext the loop's buffer can take.
_RECORD: Final = 17 * 1024


@final
class TLSSocket:
    """A server-side TLS session over a connected non-blocking socket (see the module's
    notes); what it does not define it passes on to the socket (``fileno``, ``close``,
    ``getsockname``...)."""

    __slots__ = ("_in", "_out", "_tls", "error", "handshaken", "raw", "unsent")

    def __init__(self, raw: socket.socket, context: ssl.SSLContext) -> None:
        self.raw = raw
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._in, self._out, server_side=True)
        #: Whether the handshake is done.
        self.handshaken = False
        #: Why the session failed, if it did (the log says it).
        self.error: ssl.SSLError | None = None
        #: Ciphertext the socket has not taken yet.
        self.unsent = bytearray()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)

    # -- reading ---------------------------------------------------------------------------

    def recv_into(self, buffer: memoryview) -> int:
        """Plaintext into ``buffer``: how many bytes; 0 at the end (the peer closed, or TLS
        failed).

        Raises:
            BlockingIOError: no plaintext yet (the handshake goes on, or half a record came).
        """
        room = len(buffer) - self._in.pending - _RECORD
        ended = False
        if room > 0:
            try:
                data = self.raw.recv(room)
            except (BlockingIOError, InterruptedError):
                data = None
            except OSError:
                return 0
            if data == b"":
                ended = True
                self._in.write_eof()
            elif data:
                self._in.write(data)
        count = 0
        try:
            if not self.handshaken:
                self._tls.do_handshake()
                self.handshaken = True
            while count < len(buffer):
                # (into the buffer: a count, which typeshed does not know)
                read: int = self._tls.read(len(buffer) - count,
                                           buffer[count:])  # type: ignore[assignment]
                if not read:  # the peer's close_notify: ours in answer, then the end
                    ended = True
                    self._close_notify()
                    break
                count += read
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLZeroReturnError:
            ended = True
            self._close_notify()
        except ssl.SSLError as exc:
            self.error = exc
            ended = True
        self.flush()  # (the handshake's answers, an alert, a key update)
        if count:
            return count
        if ended:
            return 0
        raise BlockingIOError

    def _close_notify(self) -> None:
        with contextlib.suppress(ssl.SSLError):
            self._tls.unwrap()

    # -- writing ---------------------------------------------------------------------------

    def send(self, data: bytes | bytearray | memoryview) -> int:
        """Encrypt ``data`` and write what the socket takes; how many bytes of ``data`` were
        taken: all, or none while earlier ciphertext waits (then ``BlockingIOError``, as a
        full socket)."""
        if not self.flush() or not self.handshaken:
            raise BlockingIOError
        if not data:
            return 0
        try:
            self._tls.write(data)
        except ssl.SSLError as exc:
            self.error = exc
            raise OSError(f"TLS: {exc}") from None
        self.flush()
        return len(data)

    def sendall(self, data: bytes | bytearray | memoryview) -> None:
        """Encrypt ``data`` and write it all (a blocking socket: the listener's last words
        before it closes a connection)."""
        if self.handshaken and data:
            self._tls.write(data)
        self.unsent.extend(self._out.read())
        if self.unsent:
            self.raw.sendall(self.unsent)
            self.unsent.clear()

    def flush(self) -> bool:
        """Write the waiting ciphertext the socket takes; whether none is left waiting."""
        unsent = self.unsent
        if self._out.pending:
            unsent.extend(self._out.read())
        if unsent:
            try:
                sent = self.raw.send(unsent)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError:
                unsent.clear()  # (the socket is gone: the next read says so)
                return True
            del unsent[:sent]
        return not unsent

    # -- the peer ----------------------------------------------------------------------------

    def peer_certificate(self) -> dict[str, Any] | None:
        """The client's certificate, as ``ssl`` decodes a verified one, or ``None`` (none sent,
        or the port does not verify)."""
        if not self.handshaken:
            return None
        certificate = self._tls.getpeercert()
        return certificate or None

    def version(self) -> str | None:
        """The TLS version agreed (``"TLSv1.3"``...), once the handshake is done."""
        return self._tls.version() if self.handshaken else None
