"""HTTP/1.1 for the management port: a sans-IO connection over h11, fed by the listener's loop.

Theory of operation
-------------------
:class:`HttpConnection` is what the listener's selector loop serves on the management port, with
the same small interface as the AMQP connections (``receive_data``, ``data_to_send``,
``has_output``, ``should_close``, ``blocked``, ``tick``, ``connection_lost``...): bytes in,
bytes out, no socket. h11 parses the requests and frames the responses. A request is looked at
as soon as its headers are in, before any of its body is kept:

1. its header block must be within :data:`MAX_HEADERS` bytes and :data:`MAX_HEADER_FIELDS`
   fields (431 otherwise, whole or not);
2. its ``Host`` must name this broker and its ``Origin``, if any, must be the console's own
   (:class:`HostPolicy`; 403 otherwise): a web page the developer visits cannot drive the API,
   neither through DNS rebinding nor with a cross-site form;
3. the application's ``screen`` may answer it from its headers alone (no such route, a method
   the route lacks, credentials that fail), and says whether its route takes a body at all
   (:attr:`Request.takes_body`);
4. a body over ``max_body`` bytes is refused (413).

An answer given at one of these steps closes the connection (``connection: close``) and the
body is never kept: what the client still sends of it is read and dropped for at most
:data:`LINGER` seconds, so that a client that sends its body before reading (most do) reads the
answer instead of a reset. A request whose route takes no body (a GET, a DELETE, the console's
files) is answered as if it had none, as RabbitMQ's cowboy answers it (a ``GET /`` with a 20 MiB
body: 200 at once), and its body, if it announced one, is left unread the same way: dropped,
never kept, the connection closed after the answer. This is the one rule for bodies before
login: whoever asks, with or without credentials, no byte of a body is kept unless its route
takes one and the screen let the request through. A request that passes has its body read
(``100 Continue`` first if the client waits for it) and goes to the application (a callable
from :class:`Request` to a :class:`Response`, or to :class:`Work` to be done in steps: the
management API's ``begin``). A response is queued at once, so the loop writes it on the same
turn; work is stepped by the listener, one step per turn of its loop
(:meth:`HttpConnection.work`), while the client's next requests wait their turn, and its
response is queued when the last step gives it.

- **Keep-alive and pipelining**: after a response, the next request already received is served
  (h11's ``start_next_cycle``), in order; ``Connection: close`` and HTTP/1.0 end the connection
  after the response.
- **Time** (read from ``clock`` when the listener calls :meth:`HttpConnection.tick`): the
  headers of a connection's first request must be in within ``request_timeout`` seconds of its
  start, those of a later request within ``request_timeout`` of their first byte (408; a new
  connection that sent nothing is closed without an answer); a body within ``body_timeout`` of
  its headers (408); a connection with no request in progress is closed after
  ``idle_timeout`` seconds with nothing received. (RabbitMQ 3.10.8's management listener,
  cowboy 2.8: 5 s for the first request's headers, counted from the connection's start, 408
  or a silent close; then 60 s without a byte closes the connection, silently, whether between
  requests or in a body, and nothing bounds a body that keeps trickling in: embroker bounds it
  whole.)
- **Memory**: a client that does not read its responses stops being read from once
  :data:`MAX_PENDING_OUTPUT` bytes wait for it (``blocked`` here, and the listener applies the
  same bound to what it holds for the socket), so it costs that and its socket's buffers, no
  more. The bound is per HTTP connection and has nothing to do with the broker's memory alarm
  (``memory_high_watermark``), which counts the message bodies queues hold and blocks AMQP
  publishers: the management API still answers while the alarm is on, as RabbitMQ's does.
- **Bad input**: whatever a client sends, the connection either serves it or answers 4xx and
  closes: h11's ``RemoteProtocolError`` becomes its status hint (400, 413, 431...). Nothing a
  client sends raises out of :meth:`HttpConnection.receive_data`; an exception from the
  application is a bug, which the listener logs with its traceback and keeps: the client gets
  a plain 500 (:meth:`HttpConnection.internal_error`) that names nothing of it (no exception,
  no file, no line of code: an error's text often holds the install's paths).
"""

from __future__ import annotations

import ipaddress
import json
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, final
from urllib.parse import parse_qsl, unquote

import h11

from ..model._access import is_loopback

__all__ = ["BODY_SLICE", "BODY_TIMEOUT", "IDLE_TIMEOUT", "INTERNAL_ERROR_BODY", "LINGER",
           "MAX_HEADERS", "MAX_HEADER_FIELDS", "MAX_PENDING_OUTPUT", "REQUEST_TIMEOUT", "HostPolicy",
           "HttpConnection", "Request", "Response", "Work"]

#: The largest request line and header block accepted (bytes), complete or not: more is 431.
#: (cowboy bounds each line instead, and only while it is incomplete in its buffer: RabbitMQ
#: 3.10.8 answered a 70,000-byte header 431, and a 4,200-byte one 200; embroker's bound is on
#: the whole block, however it arrives.)
MAX_HEADERS = 65_536
#: The most header fields a request may carry: more is 431 (cowboy's ``max_headers``, which
#: RabbitMQ's management listener keeps: 100 fields answered, 101 refused 431, checked live).
MAX_HEADER_FIELDS = 100
#: Bytes of responses a client may leave unread before the connection stops reading from it.
MAX_PENDING_OUTPUT = 4 * 1024 * 1024
#: The largest request body accepted by default (RabbitMQ's ``management.http.max_body_size``
#: is 20 MiB).
MAX_BODY = 20 * 1024 * 1024
#: A body longer than this is sent this much a step of the listener's loop
#: (:meth:`HttpConnection.work`), so that a long answer (a listing of 5,000 queues: 9 MB) costs
#: the loop a quarter of a megabyte's copy a turn, not several copies of the whole at once.
BODY_SLICE = 256 * 1024
#: Seconds for a request's headers (cowboy's ``request_timeout``, 5000 ms, which RabbitMQ's
#: management listener keeps: ``management.tcp.request_timeout`` sets it).
REQUEST_TIMEOUT = 5.0
#: Seconds a connection with no request in progress may stay silent (cowboy's
#: ``idle_timeout``, 60000 ms; ``management.tcp.idle_timeout``).
IDLE_TIMEOUT = 60.0
#: Seconds for a request's body, from the end of its headers (embroker's own: cowboy's
#: ``idle_timeout`` restarts at every byte, so a body that trickles in is never timed out).
BODY_TIMEOUT = 60.0
#: Seconds a connection that answered before reading a body keeps reading (and dropping) the
#: rest of it before it closes (cowboy's ``linger_timeout``, 1000 ms).
LINGER = 1.0
#: The body of the answer to a request the application failed on (a bug: the listener logs it
#: with its traceback): nothing of the error (cowboy answers such a request 500 with no body).
INTERNAL_ERROR_BODY = (b'{"error":"Internal Server Error","reason":"the broker failed on this '
                       b'request; its log says why"}')

_REASONS = {100: b"Continue", 200: b"OK", 201: b"Created", 204: b"No Content",
            301: b"Moved Permanently", 304: b"Not Modified", 400: b"Bad Request",
            401: b"Unauthorized", 403: b"Forbidden", 404: b"Not Found",
            405: b"Method Not Allowed", 408: b"Request Timeout", 413: b"Content Too Large",
            415: b"Unsupported Media Type", 431: b"Request Header Fields Too Large",
            500: b"Internal Server Error", 503: b"Service Unavailable"}


#: The port an origin or a ``Host`` without one means, by scheme.
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _split_host(value: str) -> tuple[str, int | None] | None:
    """``"Name:port"`` -> ``("name", port)`` (``"[::1]:80"`` -> ``("::1", 80)``; no port:
    ``None``); ``None`` for what is no host."""
    value = value.strip()
    port_text = ""
    if value.startswith("["):
        name, sep, rest = value[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:]
    elif value.count(":") == 1:
        name, _, port_text = value.partition(":")
    else:
        name = value
    if port_text and not (port_text.isdigit() and port_text.isascii()):
        return None
    name = name.lower().rstrip(".")
    if not name:
        return None
    return name, int(port_text) if port_text else None


def _is_loopback(name: str) -> bool:
    """Whether a host name is a loopback address (a name is not: ``localhost`` aside)."""
    try:
        return is_loopback(ipaddress.ip_address(name))
    except ValueError:
        return False


@final
@dataclass(frozen=True)
class HostPolicy:
    """Which ``Host`` and ``Origin`` headers the management port answers (403 otherwise).

    A ``Host`` is answered when it names this machine in a way only its own user can: the
    listener's own address (``own``), ``localhost``, any loopback literal (``127.0.0.1``,
    ``[::1]``...), whatever the port, or an entry of ``allowed``. A page on another site cannot
    send one of those: a DNS rebinding attack sends its own name, which resolves to this
    machine but is not among them. A request with no ``Host`` (HTTP/1.0) is answered.

    An ``Origin`` (browsers send it on every request a page's script or form makes, except
    simple GETs of the same origin) is answered when it is the origin of the request itself,
    the port's scheme (``http://``, ``https://`` on a TLS port) and the request's ``Host``: a
    page of the console. Another one (a page of another site, ``null`` from a sandbox or a file)
    is answered only when ``allowed`` names it.

    Args:
        own: the listener's own addresses and name (``"127.0.0.1"``, ``"::1"``, the ``--host``
            given), lower case, no port.
        allowed: more names to answer (``"broker.internal"``, ``"dev.example:3000"``: with a
            port, that port only); ``"*"``: every ``Host`` and every ``Origin``.
    """

    own: frozenset[str] = frozenset()
    allowed: frozenset[str] = frozenset()

    @classmethod
    def of(cls, own: Collection[str] = (), allowed: Collection[str] = ()) -> HostPolicy:
        """A policy from names as given (any case, ``[::1]`` or ``::1``)."""
        def names(values: Collection[str], ports: bool) -> frozenset[str]:
            found = set()
            for value in values:
                if value == "*":
                    found.add(value)
                    continue
                split = _split_host(value)
                if split is not None:
                    found.add(split[0] if split[1] is None or not ports
                              else f"{split[0]}:{split[1]}")
            return frozenset(found)
        return cls(names(own, ports=False), names(allowed, ports=True))

    def _listed(self, name: str, port: int | None) -> bool:
        return name in self.allowed or (port is not None and f"{name}:{port}" in self.allowed)

    def host_refusal(self, host: str | None) -> str | None:
        """Why a request with this ``Host`` header is refused (``None``: it is answered)."""
        if host is None or "*" in self.allowed:
            return None
        split = _split_host(host)
        if split is not None:
            name, port = split
            if name == "localhost" or name in self.own or _is_loopback(name) or \
                    self._listed(name, port):
                return None
        shown = split[0] if split is not None else host
        return (f"Host {host!r} names neither this broker nor a loopback address (a web page "
                "whose own name resolves to this machine, DNS rebinding, sends such a Host); "
                f"to answer it, start the broker with --management-allow-host {shown} "
                f"(Broker.serve(management_allow_hosts=[{shown!r}]))")

    def origin_refusal(self, origin: str | None, host: str | None,
                       scheme: str = "http") -> str | None:
        """Why a request with this ``Origin`` (and ``Host``), on a port that serves ``scheme``
        (``"http"``, ``"https"``), is refused (``None``: answered)."""
        if origin is None or "*" in self.allowed:
            return None
        given, sep, rest = origin.strip().partition("://")
        given = given.lower()
        split = _split_host(rest) if sep and "/" not in rest else None
        if split is not None:
            name, port = split
            default = _DEFAULT_PORTS.get(given)
            own = _split_host(host) if host is not None else None
            if given == scheme and own is not None and default is not None and \
                    (name, port or default) == (own[0], own[1] or default):
                return None  # a page of the console itself
            if self._listed(name, port or default):
                return None
        shown = (f"{split[0]}:{split[1]}" if split[1] is not None else split[0]) \
            if split is not None else origin
        return (f"a page of {origin} sent this request, not a page of this broker's console "
                "(a cross-site request); to answer such requests, start the broker with "
                f"--management-allow-host {shown} "
                f"(Broker.serve(management_allow_hosts=[{shown!r}]))")


@final
@dataclass
class Request:
    """One HTTP request, read whole.

    Attributes:
        method: ``"GET"``, ``"PUT"``... (upper case).
        path: the path of the target, still percent-encoded (``/api/queues/%2F/q``).
        query: the query string's parameters (decoded; the last of a repeated name wins).
        headers: the headers, names in lower case (a repeated header's values joined by ``,``).
        body: the body's bytes.
        peer: the client's address; ``loopback``: whether it came over a loopback interface.
        screened: the application's ``screen`` let it through on its headers (its login is
            done and counted: the application does not count it again).
        takes_body: whether its route takes a body at all, as the ``screen`` says (a GET does
            not): a request whose route takes none is answered without reading its body.
    """

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""
    peer: str = ""
    loopback: bool = True
    screened: bool = False
    takes_body: bool = True

    @property
    def segments(self) -> list[str]:
        """The path's segments, each percent-decoded (``/api/queues/%2F/q`` ->
        ``["api", "queues", "/", "q"]``); bytes that are no UTF-8 kept as a wire string keeps
        them (``surrogateescape``), so that a name holding them is found, as RabbitMQ finds
        it."""
        return [unquote(part, errors="surrogateescape") for part in
                self.path.strip("/").split("/")] if self.path.strip("/") else []


@final
@dataclass
class Response:
    """An HTTP response: status, headers (names in lower case), body.

    ``parts``: a long body given in pieces, in order (then ``body`` is their join, made only
    if asked): the connection sends them a slice a step and never joins them whole.
    """

    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    parts: list[bytes] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.parts is not None:
            self.body = b""

    @property
    def length(self) -> int:
        """The body's length in bytes."""
        return len(self.body) if self.parts is None else sum(map(len, self.parts))

    def content(self) -> bytes:
        """The whole body (the parts joined, for callers that want one ``bytes``)."""
        return self.body if self.parts is None else b"".join(self.parts)

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None


class Work(Protocol):
    """An answer the application works out in steps (the management API's ``Pending``)."""

    def step(self) -> Response | None:
        """One short step; the response once there is one."""

    def close(self) -> None:
        """Stop (the client went away)."""


def _status_for(error: h11.ProtocolError) -> int:
    hint = getattr(error, "error_status_hint", 400)
    return hint if isinstance(hint, int) and 400 <= hint < 600 else 400


def _buffered(conn: h11.Connection) -> int:
    """How many received bytes h11 holds unparsed. (h11 says so publicly only with a copy,
    ``trailing_data``; its buffer's length is read directly where it has the one it has had
    since 0.10.)"""
    buffer = getattr(conn, "_receive_buffer", None)
    return len(buffer) if buffer is not None else len(conn.trailing_data[0])


@final
class HttpConnection:
    """The server side of one HTTP/1.1 connection: bytes in, the application's answers out.

    Args:
        app: turns a request into a response, or into :class:`Work` whose steps
            :meth:`work` takes (called with no lock held: it takes what it needs).
        screen: answers a request from its headers alone, before its body is read (``None``:
            read the body and ask ``app``); see ``ManagementAPI.screen``.
        hosts: which ``Host`` and ``Origin`` headers are answered (:class:`HostPolicy`; by
            default ``localhost`` and loopback addresses only).
        peer: the client's address (``"127.0.0.1:53211"``), for the application and logs.
        loopback: whether the client came over a loopback interface.
        max_body: the largest body accepted (413 beyond it).
        request_timeout: seconds for a request's headers: from the connection's start for the
            first one, from their first byte for the next ones (408 beyond).
        idle_timeout: seconds a connection with no request in progress may stay silent.
        body_timeout: seconds for a request's body, from the end of its headers (408 beyond).
        clock: where ``tick`` reads the time (``time.monotonic``; a test's own).
        server_header: the ``server`` header of every response.
        scheme: what the port serves, ``"http"`` or ``"https"`` (a TLS port): the scheme of
            the console's own pages, whose ``Origin`` is answered.
    """

    __slots__ = ("_app", "_body", "_body_close", "_body_deadline", "_body_timeout", "_clock",
                 "_closing", "_cycle_start", "_drained", "_expected", "_fed", "_h11",
                 "_head_deadline", "_head_seen", "_hosts", "_idle_timeout", "_last_activity",
                 "_linger_left", "_linger_until", "_max_body", "_out", "_out_size", "_request",
                 "_request_timeout", "_scheme", "_screen", "_server_header", "_unread", "_work",
                 "failure", "loopback", "peer", "requests_served")

    def __init__(self, app: Callable[[Request], Response | Work], *,
                 screen: Callable[[Request], Response | None] | None = None,
                 hosts: HostPolicy | None = None, peer: str = "", loopback: bool = True,
                 max_body: int = MAX_BODY, request_timeout: float = REQUEST_TIMEOUT,
                 idle_timeout: float = IDLE_TIMEOUT, body_timeout: float = BODY_TIMEOUT,
                 clock: Callable[[], float] = time.monotonic,
                 server_header: str = "embroker", scheme: str = "http") -> None:
        self._app = app
        self._scheme = scheme
        self._screen = screen
        self._hosts = hosts if hosts is not None else HostPolicy()
        self.peer = peer
        self.loopback = loopback
        self._max_body = max_body
        self._request_timeout = request_timeout
        self._idle_timeout = idle_timeout
        self._body_timeout = body_timeout
        self._clock = clock
        self._server_header = server_header.encode()
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADERS)
        # What is to send, in pieces (a response's body as it came: no copy before the one
        # data_to_send makes), and how many bytes.
        self._out: list[bytes | memoryview] = []
        self._out_size = 0
        # The rest of a long body, sent a slice a step (see work()), and whether the
        # connection closes after it.
        self._body: deque[bytes | memoryview] | None = None
        self._body_close = False
        self._closing = False
        self._request: tuple[Request, bytearray] | None = None
        # A request whose answer the application works out in steps.
        self._work: tuple[Request, Work] | None = None
        self._last_activity = clock()
        # The first request's headers are due request_timeout after the connection's start;
        # a later one's after its first byte (None: no request begun).
        self._head_deadline: float | None = self._last_activity + request_timeout
        self._head_seen = False  # whether a byte of the awaited headers came
        self._body_deadline: float | None = None
        self._expected: int | None = 0  # the request's body's length (None: chunked)
        # Bytes given to h11, and how many of them came before the request being parsed.
        self._fed = 0
        self._cycle_start = 0
        # A body left unread (an answer given before it, or a route that takes none): the
        # connection reads no more requests, what the client sends is dropped, and it closes
        # after the answer. How many more bytes of that body are due (None: unknown), whether
        # they all came (or the client closed), and, once the answer is queued, until when the
        # rest is waited for (LINGER).
        self._unread = False
        self._linger_left: int | None = None
        self._drained = False
        self._linger_until: float | None = None
        #: What the listener reads (as of the AMQP connections): an error met while sending.
        self.failure: Exception | None = None
        #: How many requests were answered on this connection.
        self.requests_served = 0

    def __repr__(self) -> str:
        return (f"<HttpConnection from {self.peer or 'a client'}, "
                f"{self.requests_served} request(s) served>")

    # -- what the listener asks of every connection -------------------------------------------

    @property
    def has_output(self) -> bool:
        return bool(self._out)

    def _emit(self, pieces: list[Any] | None) -> None:
        for piece in pieces or ():
            if piece:
                self._out.append(piece)
                self._out_size += len(piece)

    @property
    def has_work(self) -> bool:
        """Whether a request's answer is being worked out, or a long one sent: the listener
        takes its steps (:meth:`work`) while the client reads what it was sent (no step while
        :attr:`blocked`)."""
        return (self._work is not None or self._body is not None) and not self._closing and \
            not self.blocked

    def work(self) -> None:
        """One step: a slice of :data:`BODY_SLICE` bytes of a long body being sent, or of the
        answer being worked out; once that gives the response, it is sent and the client's
        next request, if it came, is served. An exception is the application's bug (the
        listener answers it with :meth:`internal_error`)."""
        if self._closing:
            return
        if self._body is not None:
            self._send_slice()
            if self._body is None:
                self._process()
            return
        if self._work is None:
            return
        request, work = self._work
        response = work.step()
        if response is None:
            return
        self._work = None
        self._send(response, close=self._unread, head=request.method == "HEAD")
        self.requests_served += 1
        self._last_activity = self._clock()
        self._process()

    @property
    def should_close(self) -> bool:
        """Whether the connection is over (the socket closes once its output is written)."""
        return self._closing and self._linger_until is None

    @property
    def blocked(self) -> bool:
        """Whether to stop reading from the client: it leaves too much output unread."""
        return self._out_size > MAX_PENDING_OUTPUT

    @property
    def close_reason(self) -> object:
        return None

    def data_to_send(self) -> bytes:
        out = self._out
        data = bytes(out[0]) if len(out) == 1 else b"".join(out)
        out.clear()
        self._out_size = 0
        return data

    def receive_data(self, data: bytes) -> None:
        """Feed what the client sent (``b""``: it closed its side).

        Nothing a client sends raises here; the application's own exceptions do (bugs: the
        listener answers them with :meth:`internal_error`).
        """
        if self._unread or self._closing:
            if self._unread and not self._drained:  # the rest of a body left unread: dropped
                if self._linger_left is not None:
                    self._linger_left -= len(data)
                if not data or (self._linger_left is not None and self._linger_left <= 0):
                    self._drained = True  # all of it came, or the client closed
                    self._linger_until = None
            if not data and not self._closing:  # it went away before its answer: as h11 does
                self._closing = True            # with a second end of input, stop
                self._stop_work()
            return
        now = self._clock()
        self._last_activity = now
        if data and self._request is None:
            if self._head_deadline is None:  # the first byte of a later request's headers
                self._head_deadline = now + self._request_timeout
            self._head_seen = True
        self._fed += len(data)
        try:
            self._h11.receive_data(data)
        except RuntimeError:  # data after the client closed its side, or after an error
            self._closing = True
            return
        self._process()

    def tick(self) -> float | None:
        """Time out what is late: headers or a body (408), a silent connection, the end of a
        body the connection drops (see the module's docstring)."""
        now = self._clock()
        if self._closing:
            if self._linger_until is not None and now >= self._linger_until:
                self._linger_until = None
            return None
        if self._head_deadline is not None and now >= self._head_deadline:
            if self._head_seen:
                self._refuse(408, "request headers not received within "
                                  f"{self._request_timeout:g} s", linger=False)
            else:  # nothing came: closed without an answer, as cowboy does
                self._closing = True
        elif self._body_deadline is not None and now >= self._body_deadline:
            self._refuse(408, f"request body not received within {self._body_timeout:g} s",
                         linger=False)
        elif self._head_deadline is None and self._request is None and \
                self._work is None and now - self._last_activity >= self._idle_timeout:
            self._closing = True
        return None

    def close(self, _error: Any = None) -> None:
        """End the connection (the broker shuts down): after the output already queued."""
        self._closing = True
        self._linger_until = None
        self._stop_work()

    def _stop_work(self) -> None:
        if self._work is not None:
            work, self._work = self._work[1], None
            work.close()

    def internal_error(self, _error: Any) -> None:
        """The application failed on a request (a bug, which the listener logs with its
        traceback): answer a plain 500 if no answer has begun, then close. The answer says
        nothing of the error: its text may name the install's files, a traceback its code."""
        if self._h11.our_state in (h11.IDLE, h11.SEND_RESPONSE) and \
                self._h11.their_state is not h11.ERROR:
            self._send(Response(500, INTERNAL_ERROR_BODY, [("content-type", "application/json")]),
                       close=True)
        self._closing = True
        self._linger_until = None
        self._work = None  # (its steps failed: nothing to close)

    def connection_lost(self) -> None:
        self._closing = True
        self._linger_until = None
        self._stop_work()

    def publishers_blocked(self, _reason: str) -> None:
        """(AMQP's resource alarms do not concern HTTP clients.)"""

    def publishers_unblocked(self) -> None:
        """(AMQP's resource alarms do not concern HTTP clients.)"""

    # -- requests ----------------------------------------------------------------------------

    def _process(self) -> None:
        conn = self._h11
        # (the next request waits its turn: after the answer being worked out or sent)
        while not self._closing and self._work is None and self._body is None:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as error:
                self._refuse(_status_for(error), str(error)[:200], linger=False)
                return
            if event is h11.NEED_DATA:
                return
            if event is h11.PAUSED:
                if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                    conn.start_next_cycle()
                    self._next_cycle()
                    continue
                if conn.our_state is h11.MUST_CLOSE or conn.their_state in (
                        h11.MUST_CLOSE, h11.CLOSED):
                    self._closing = True
                return
            if isinstance(event, h11.Request):
                self._begin(event)
            elif isinstance(event, h11.Data):
                if self._request is not None:
                    body = self._request[1]
                    if len(body) + len(event.data) > self._max_body:
                        self._refuse(413, "request body too large")
                        return
                    body += event.data
            elif isinstance(event, h11.EndOfMessage):
                self._answer()
            elif isinstance(event, h11.ConnectionClosed):
                self._closing = True
                return

    def _next_cycle(self) -> None:
        """A response was sent and h11 awaits the next request: what was received of it
        already, if anything, starts its clock."""
        waiting = _buffered(self._h11)
        self._cycle_start = self._fed - waiting
        self._head_seen = waiting > 0
        self._head_deadline = self._clock() + self._request_timeout if waiting else None

    def _begin(self, event: h11.Request) -> None:
        """A request's headers are in: check them, screen the request, then read its body."""
        size = self._fed - _buffered(self._h11) - self._cycle_start
        if size > MAX_HEADERS or len(event.headers) > MAX_HEADER_FIELDS:
            self._refuse(431, f"request headers too large (at most {MAX_HEADERS} bytes and "
                              f"{MAX_HEADER_FIELDS} fields)", linger=False)
            return
        target = event.target.decode("latin-1")
        path, _, query_string = target.partition("?")
        headers: dict[str, str] = {}
        for name, value in event.headers:
            key = name.decode("latin-1").lower()
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]},{text}" if key in headers else text
        request = Request(event.method.decode("ascii", "replace").upper(), path,
                          dict(parse_qsl(query_string, keep_blank_values=True,
                                         errors="surrogateescape")), headers,
                          b"", self.peer, self.loopback)
        self._head_deadline = None
        self._head_seen = False
        self._expected = _body_length(event.headers)
        length = _content_length(event.headers)
        refusal = self._hosts.host_refusal(headers.get("host")) or \
            self._hosts.origin_refusal(headers.get("origin"), headers.get("host"), self._scheme)
        if refusal is not None:
            self._refuse(403, refusal)
            return
        if self._screen is not None:
            answer = self._screen(request)  # an exception is a bug: the listener answers 500
            if answer is not None:
                self._answer_early(request, answer)
                return
        if not request.takes_body and self._expected != 0:
            # A body its route does not take (a GET's): answered as if it had none (as
            # cowboy answers it), the body left unread and the connection closed after.
            self._leave_unread()
            self._run(request)
            return
        if length is not None and length > self._max_body:
            self._refuse(413, "request body too large")
            return
        if self._h11.they_are_waiting_for_100_continue:
            self._emit([self._h11.send(h11.InformationalResponse(
                status_code=100, headers=[], reason=b"Continue"))])
        self._request = (request, bytearray())
        self._body_deadline = self._clock() + self._body_timeout

    def _answer_early(self, request: Request, response: Response) -> None:
        """Send the screen's answer and close, the body unread."""
        if self._h11.their_state is h11.SEND_BODY:
            self._leave_unread()
        self._send(response, close=True, head=request.method == "HEAD")
        self.requests_served += 1
        self._close()

    def _answer(self) -> None:
        assert self._request is not None
        request, body = self._request
        self._request = None
        self._body_deadline = None
        request.body = bytes(body)
        self._run(request)

    def _run(self, request: Request) -> None:
        """Ask the application for the answer to ``request`` and send it (or take its work,
        whose steps :meth:`work` takes); closing after it when its body was left unread."""
        response = self._app(request)  # an exception here is a bug: the listener answers 500
        if not isinstance(response, Response):
            self._work = (request, response)
            return
        self._send(response, close=self._unread, head=request.method == "HEAD")
        self.requests_served += 1
        self._last_activity = self._clock()

    def _send(self, response: Response, *, close: bool = False, head: bool = False) -> None:
        if head:
            response = Response(response.status, b"", [
                *[(k, v) for k, v in response.headers if k != "content-length"],
                ("content-length", str(response.length))])
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers
                   if k not in ("content-length", "connection")]
        if not head:
            headers.append((b"content-length", str(response.length).encode()))
        else:
            headers += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers
                        if k == "content-length"]
        headers.append((b"server", self._server_header))
        if close:
            headers.append((b"connection", b"close"))
        conn = self._h11
        try:
            self._emit(conn.send_with_data_passthrough(h11.Response(
                status_code=response.status, headers=headers,
                reason=_REASONS.get(response.status, b""))))
            if response.parts is not None and not head:  # a slice a step (work())
                self._body, self._body_close = deque(response.parts), close
                self._send_slice()
                return
            if response.body and not head:
                if len(response.body) > BODY_SLICE:  # the rest a slice a step (work())
                    self._body = deque([memoryview(response.body)])
                    self._body_close = close
                    self._send_slice()
                    return
                self._emit(conn.send_with_data_passthrough(h11.Data(data=response.body)))
            self._emit(conn.send_with_data_passthrough(h11.EndOfMessage()))
        except h11.LocalProtocolError:  # h11 refuses (a state we did not foresee): close
            self._closing = True
            return
        if conn.our_state is h11.MUST_CLOSE:
            self._close()

    def _send_slice(self) -> None:
        """About :data:`BODY_SLICE` more bytes of the body being sent (whole parts, or a slice
        of a long one); its end once all are sent."""
        assert self._body is not None
        conn, rest, sent = self._h11, self._body, 0
        try:
            while rest and sent < BODY_SLICE:
                part = rest.popleft()
                if len(part) > BODY_SLICE - sent:  # (a long part: a slice of it now)
                    cut = max(BODY_SLICE - sent, 1)
                    rest.appendleft(memoryview(part)[cut:])
                    part = memoryview(part)[:cut]
                if part:
                    self._emit(conn.send_with_data_passthrough(
                        h11.Data(data=part)))  # type: ignore[arg-type]
                sent += len(part)
            if not rest:
                self._body = None
                self._emit(conn.send_with_data_passthrough(h11.EndOfMessage()))
        except h11.LocalProtocolError:  # (as in _send)
            self._body = None
            self._closing = True
            return
        if self._body is None and conn.our_state is h11.MUST_CLOSE:
            self._close()

    def _refuse(self, status: int, reason: str, *, linger: bool = True) -> None:
        """Answer a request that cannot be served with ``status`` and close; with ``linger``,
        read and drop the rest of a body still coming first (see :data:`LINGER`)."""
        if linger and self._h11.their_state is h11.SEND_BODY:
            self._leave_unread(len(self._request[1]) if self._request is not None else 0)
        if self._h11.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            body = json.dumps({"error": _REASONS.get(status, b"error").decode(),
                               "reason": reason}, separators=(",", ":")).encode()
            self._send(Response(status, body, [("content-type", "application/json")]),
                       close=True)
        self._request = None
        self._body_deadline = None
        self._close()

    def _leave_unread(self, read: int = 0) -> None:
        """The body of the request being answered (``read`` bytes of it parsed already) is not
        read: the connection reads no more requests, drops what comes, and closes after its
        answer (:meth:`_close`)."""
        self._unread = True
        length = self._expected
        left = None if length is None else length - read - _buffered(self._h11)
        self._linger_left = left
        self._drained = left is not None and left <= 0

    def _close(self) -> None:
        """The last answer is queued: close once it is written; after a body left unread, once
        the rest of it came or :data:`LINGER` seconds passed (so that a client that sends its
        whole body before reading reads the answer rather than a reset)."""
        if not self._closing and self._unread and not self._drained:
            self._linger_until = self._clock() + LINGER
        self._closing = True


def _content_length(headers: Any) -> int | None:
    for name, value in headers:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _body_length(headers: Any) -> int | None:
    """How long the body of a request with these headers is: its content-length, 0 without
    one, ``None`` when chunked (unknown)."""
    for name, value in headers:
        if name == b"transfer-encoding" and b"chunked" in value.lower():
            return None
    return _content_length(headers) or 0


def json_headers(extra: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """The headers of a JSON answer, as RabbitMQ's (``content-type: application/json``)."""
    return [("content-type", "application/json"), *(extra or {}).items()]
