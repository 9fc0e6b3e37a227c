"""The control port's handshake: the tool and the node each prove they know the node's cookie,
and the node proves its name, before anything else is said. Light on purpose (the tools import
it, and nothing of the broker).

Theory of operation. RabbitMQ's tools reach a node over Erlang distribution, whose handshake
(OTP's ``dist_util``, "Distribution Handshake" in ERTS' documentation) has each side send a
challenge (a random number) and answer the other's with a digest over the challenge and the
cookie: neither side learns the cookie, and a process that does not know it can pose as neither.
embroker's control port opens the same way, in lines of ASCII, then carries HTTP/1.1
(:mod:`._service`):

1. tool -> node: ``EMBROKER-CONTROL/1 NAME NONCE_T`` -- the node it means, and its challenge
   (16 random bytes, hex).
2. node -> tool: ``+ NONCE_N PROOF_N``, with ``PROOF_N = HMAC-SHA256(cookie, "node" NAME
   NONCE_T NONCE_N)`` (each field ended by a NUL); or ``-name`` when it is not that node, and
   it closes.
3. The tool checks ``PROOF_N``: it knows now that whoever answers knows the cookie, is the node
   it named, and answered this very challenge. Otherwise it says nothing more, and closes: no
   argument (a password) ever reaches a process that could not prove it is the node.
   tool -> node: ``+ PROOF_T``, with ``PROOF_T = HMAC-SHA256(cookie, "tool" NAME NONCE_N
   NONCE_T)``.
4. The node checks ``PROOF_T`` and answers ``+ok`` (then reads HTTP requests), or ``-proof``
   and closes, having run nothing. Only then does the tool send its request.

The labels ``node``/``tool`` keep a proof from being reflected to the side that asked for it,
and each proof covers both challenges and the name. A node drops a connection that has not
proved itself within :data:`HANDSHAKE_TIMEOUT` seconds, and keeps at most a few such
connections at once (the oldest goes, told ``-busy``): whoever holds idle sockets on the port
delays no one who knows the cookie (``Server.serve_control``). The cookie never crosses the
wire.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import socket
import time
from collections.abc import Callable
from typing import Any, Final, final

__all__ = ["GREETING", "HANDSHAKE_TIMEOUT", "HandshakeFailed", "NodeHandshake", "Retry",
           "open_channel", "proof"]

#: The first word of the tool's first line (the protocol and its version).
GREETING: Final = b"EMBROKER-CONTROL/1"
#: Seconds a node gives a connection to prove itself (the loop's tick is half a second).
HANDSHAKE_TIMEOUT: Final = 2.0
#: The longest line of the handshake (a node name is at most 255 characters, as an atom).
MAX_LINE: Final = 512
_NONCE_BYTES: Final = 16


class HandshakeFailed(Exception):
    """The other side did not prove itself (or is another node): the reason, for the tool's
    diagnostics."""


class Retry(HandshakeFailed):
    """The node dropped the connection before it was authenticated (it was busy with others):
    nothing was run; a new connection may try again."""


def proof(cookie: bytes, label: bytes, name: str, first: bytes, second: bytes) -> bytes:
    """The digest a side proves it knows ``cookie`` with (hex): over its label, the node's
    name and both challenges (its peer's first)."""
    message = b"\0".join((label, name.encode(), first, second)) + b"\0"
    return hmac.new(cookie, message, hashlib.sha256).hexdigest().encode()


def _nonce() -> bytes:
    return secrets.token_hex(_NONCE_BYTES).encode()


def _is_nonce(value: bytes) -> bool:
    return len(value) == 2 * _NONCE_BYTES and all(c in b"0123456789abcdef" for c in value)


# -- the tool's side ----------------------------------------------------------------------------

def _line(sock: socket.socket, port: int) -> bytes:
    """One line from the node (without its newline). More than a line, or a line too long, is
    not the node: it says nothing more until it is answered. A connection closed before (the
    node dropped it unauthenticated: it ran nothing) may be tried again."""
    data = b""
    while b"\n" not in data:
        try:
            chunk = sock.recv(MAX_LINE + 1 - len(data))
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            raise Retry("the node closed the connection during the handshake")
        data += chunk
        if len(data) > MAX_LINE:
            break
    line, newline, rest = data.partition(b"\n")
    if not newline or rest:
        raise HandshakeFailed(f"the process on port {port} does not speak embroker's control "
                              "protocol")
    return line


def open_channel(host: str, port: int, name: str, cookie: str, *,
                 timeout: float) -> socket.socket:
    """A connection to the control port at ``host``:``port`` on which the node ``name`` proved
    itself, and was told the tool knows ``cookie`` (see the module's docstring): ready for the
    tool's request.

    Raises:
        Retry: the node dropped the connection before it was authenticated (busy).
        HandshakeFailed: whatever answers is not the node ``name``, or does not know the
            cookie, or refused ours.
        OSError: no connection (refused, timed out).
    """
    key = cookie.encode()
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        # (as http.client's own connections: a request's headers and body go in two writes,
        # which Nagle's algorithm would hold against the node's delayed ACK, 40 ms)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ours = _nonce()
        sock.sendall(b"%s %s %s\n" % (GREETING, name.encode(), ours))
        answer = _line(sock, port)
        if answer == b"-busy":
            raise Retry("the node is busy with other connections")
        if answer == b"-name":
            raise HandshakeFailed(f"the process on port {port} is not node {name}")
        fields = answer.split(b" ")
        if len(fields) != 3 or fields[0] != b"+" or not _is_nonce(fields[1]):
            raise HandshakeFailed(f"the process on port {port} does not speak embroker's "
                                  "control protocol")
        theirs, their_proof = fields[1], fields[2]
        if not hmac.compare_digest(their_proof, proof(key, b"node", name, ours, theirs)):
            raise HandshakeFailed(f"the process on port {port} could not prove it is node "
                                  f"{name} (it does not know the node's cookie)")
        sock.sendall(b"+ %s\n" % proof(key, b"tool", name, theirs, ours))
        verdict = _line(sock, port)
        if verdict == b"-busy":
            raise Retry("the node is busy with other connections")
        if verdict != b"+ok":
            raise HandshakeFailed(f"node {name} refused this tool's cookie")
    except BaseException:
        sock.close()
        raise
    return sock


# -- the node's side ----------------------------------------------------------------------------

@final
class NodeHandshake:
    """The node's side of one control connection (sans-IO, as the listener's connections are):
    the handshake, then the HTTP connection ``inner()`` makes, to which everything is passed.

    Args:
        name: the node's name.
        cookie: the node's cookie.
        inner: makes the connection that serves the authenticated tool (an
            :class:`~embroker.management.HttpConnection`).
        on_authenticated: told when the tool proved itself; ``False`` refuses it (``-busy``:
            the node holds as many tools as it may).
        clock: where the deadline is read (``time.monotonic``; a test's own).
        timeout: seconds for the handshake, from the connection's start.
    """

    __slots__ = ("_buffer", "_clock", "_cookie", "_deadline", "_failure", "_inner", "_make_inner",
                 "_name", "_on_authenticated", "_ours", "_out", "_state", "_theirs")

    def __init__(self, name: str, cookie: str, inner: Callable[[], Any], *,
                 on_authenticated: Callable[[], bool] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 timeout: float = HANDSHAKE_TIMEOUT) -> None:
        self._name = name
        self._cookie = cookie.encode()
        self._make_inner = inner
        self._on_authenticated = on_authenticated
        self._clock = clock
        self._deadline = clock() + timeout
        self._buffer = b""
        self._out = b""
        self._ours = b""
        self._theirs = b""
        #: "hello" (waiting for the tool's greeting), "proof" (for its proof), "closed", or
        #: "open" (authenticated: everything goes to the inner connection).
        self._state = "hello"
        self._inner: Any = None
        self._failure: Exception | None = None

    def __repr__(self) -> str:
        return f"<NodeHandshake of {self._name}: {self._state}>"

    @property
    def authenticated(self) -> bool:
        return self._state == "open"

    @property
    def failure(self) -> Exception | None:
        """An error met while sending (the listener reads it, and clears it)."""
        return self._inner.failure if self._inner is not None else self._failure

    @failure.setter
    def failure(self, value: Exception | None) -> None:
        if self._inner is not None:
            self._inner.failure = value
        else:
            self._failure = value

    # -- what the listener asks of every connection -------------------------------------------

    def receive_data(self, data: bytes) -> None:
        if self._inner is not None:
            self._inner.receive_data(data)
            return
        if self._state == "closed":
            return
        if not data:  # the tool went away
            self._state = "closed"
            return
        self._buffer += data
        while self._state in ("hello", "proof") and b"\n" in self._buffer:
            line, _, self._buffer = self._buffer.partition(b"\n")
            self._answer(line)
        if self._state in ("hello", "proof") and len(self._buffer) > MAX_LINE:
            self._refuse(b"-proof")
        if self._state == "open":
            rest, self._buffer = self._buffer, b""
            self._inner = self._make_inner()
            if rest:
                self._inner.receive_data(rest)

    def _answer(self, line: bytes) -> None:
        fields = line.split(b" ")
        if self._state == "hello":
            if len(fields) != 3 or fields[0] != GREETING or not _is_nonce(fields[2]):
                self._refuse(b"-proof")
            elif not hmac.compare_digest(fields[1], self._name.encode()):
                self._refuse(b"-name")
            else:
                self._theirs, self._ours = fields[2], _nonce()
                self._out += b"+ %s %s\n" % (self._ours, proof(
                    self._cookie, b"node", self._name, self._theirs, self._ours))
                self._state = "proof"
            return
        expected = proof(self._cookie, b"tool", self._name, self._ours, self._theirs)
        if len(fields) != 2 or fields[0] != b"+" or \
                not hmac.compare_digest(fields[1], expected):
            self._refuse(b"-proof")
        elif self._on_authenticated is not None and not self._on_authenticated():
            self._refuse(b"-busy")
        else:
            self._out += b"+ok\n"
            self._state = "open"

    def _refuse(self, line: bytes) -> None:
        self._out += line + b"\n"
        self._state = "closed"
        self._buffer = b""

    def evict(self) -> None:
        """Drop this unauthenticated connection (the node holds too many): it is told
        ``-busy``, so a tool may try again knowing nothing was run."""
        if self._inner is None:
            self._refuse(b"-busy")

    @property
    def has_output(self) -> bool:
        return bool(self._out) or (self._inner is not None and self._inner.has_output)

    def data_to_send(self) -> bytes:
        out, self._out = self._out, b""
        if self._inner is not None:
            out += self._inner.data_to_send()
        return out

    @property
    def should_close(self) -> bool:
        if self._inner is not None:
            return bool(self._inner.should_close)
        return self._state == "closed"

    @property
    def blocked(self) -> bool:
        return self._inner is not None and bool(self._inner.blocked)

    @property
    def has_work(self) -> bool:
        return self._inner is not None and bool(self._inner.has_work)

    def work(self) -> None:
        if self._inner is not None:
            self._inner.work()

    def tick(self) -> None:
        """Drop a connection that has not proved itself in time (without a word)."""
        if self._inner is not None:
            self._inner.tick()
        elif self._state != "closed" and self._clock() >= self._deadline:
            self._state = "closed"
            self._buffer = b""

    def internal_error(self, error: Any) -> None:
        if self._inner is not None:
            self._inner.internal_error(error)
        else:
            self._state = "closed"

    def close(self, error: Any = None) -> None:
        if self._inner is not None:
            self._inner.close(error)
        else:
            self._state = "closed"

    def connection_lost(self) -> None:
        if self._inner is not None:
            self._inner.connection_lost()
        self._state = "closed"
