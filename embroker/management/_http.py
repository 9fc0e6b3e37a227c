"""HTTP/1.1 for the management port: a sans-IO connection over h11, fed by the listener's loop.

Theory of operation
-------------------
:class:`HttpConnection` is what the listener's selector loop serves on the management port, with
the same small interface as the AMQP connections (``receive_data``, ``data_to_send``,
``has_output``, ``should_close``, ``blocked``, ``tick``, ``connection_lost``...): bytes in,
bytes out, no socket. h11 parses the requests and frames the responses; each complete request
goes to the application (a callable from :class:`Request` to :class:`Response`, the management
API) and its response is queued at once, so the loop writes it on the same turn.

- **Keep-alive and pipelining**: after a response, the next request already received is served
  (h11's ``start_next_cycle``), in order; ``Connection: close`` and HTTP/1.0 end the connection
  after the response.
- **Limits**: request line and headers at most :data:`MAX_HEADERS` bytes, a body at most
  ``max_body`` bytes (413, before it is read), a request finished within ``request_timeout``
  seconds of its first byte (408), a keep-alive connection idle for at most ``idle_timeout``
  seconds; a client that does not read its responses stops being read from once
  :data:`MAX_PENDING_OUTPUT` bytes wait for it (``blocked`` here, and the listener applies the
  same bound to what it holds for the socket), so it costs that and its socket's buffers, no
  more. The bound is per HTTP connection and has nothing to do with the broker's memory alarm
  (``memory_high_watermark``), which counts the message bodies queues hold and blocks AMQP
  publishers: the management API still answers while the alarm is on, as RabbitMQ's does.
- **Bad input**: whatever a client sends, the connection either serves it or answers 4xx and
  closes: h11's ``RemoteProtocolError`` becomes its status hint (400, 413, 431...). Nothing a
  client sends raises out of :meth:`HttpConnection.receive_data`; an exception from the
  application is a bug, answered 500 and kept by the listener.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, final
from urllib.parse import parse_qsl, unquote

import h11

__all__ = ["MAX_HEADERS", "MAX_PENDING_OUTPUT", "HttpConnection", "Request", "Response"]

#: The largest request line and header block accepted (bytes): more is 431.
MAX_HEADERS = 65_536
#: Bytes of responses a client may leave unread before the connection stops reading from it.
MAX_PENDING_OUTPUT = 4 * 1024 * 1024
#: The largest request body accepted by default (RabbitMQ's ``management.http.max_body_size``
#: is 20 MiB).
MAX_BODY = 20 * 1024 * 1024

_REASONS = {200: b"OK", 201: b"Created", 204: b"No Content", 301: b"Moved Permanently",
            304: b"Not Modified", 400: b"Bad Request", 401: b"Unauthorized",
            403: b"Forbidden", 404: b"Not Found", 405: b"Method Not Allowed",
            408: b"Request Timeout", 413: b"Content Too Large", 415: b"Unsupported Media Type",
            431: b"Request Header Fields Too Large", 500: b"Internal Server Error",
            503: b"Service Unavailable"}


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
    """

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""
    peer: str = ""
    loopback: bool = True

    @property
    def segments(self) -> list[str]:
        """The path's segments, each percent-decoded (``/api/queues/%2F/q`` ->
        ``["api", "queues", "/", "q"]``)."""
        return [unquote(part) for part in self.path.strip("/").split("/")] if \
            self.path.strip("/") else []


@final
@dataclass
class Response:
    """An HTTP response: status, headers (names in lower case), body."""

    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None


def _status_for(error: h11.ProtocolError) -> int:
    hint = getattr(error, "error_status_hint", 400)
    return hint if isinstance(hint, int) and 400 <= hint < 600 else 400


@final
class HttpConnection:
    """The server side of one HTTP/1.1 connection: bytes in, the application's answers out.

    Args:
        app: turns a request into a response (called with no lock held: it takes what it
            needs).
        peer: the client's address (``"127.0.0.1:53211"``), for the application and logs.
        loopback: whether the client came over a loopback interface.
        max_body: the largest body accepted (413 beyond it).
        request_timeout: seconds from a request's first byte to its last (408 beyond).
        idle_timeout: seconds a keep-alive connection may wait between requests.
        clock: where ``tick`` reads the time (``time.monotonic``; a test's own).
        server_header: the ``server`` header of every response.
    """

    __slots__ = ("_app", "_clock", "_closing", "_h11", "_idle_timeout", "_last_activity",
                 "_max_body", "_out", "_request", "_request_started", "_request_timeout",
                 "_server_header", "failure", "loopback", "peer", "requests_served")

    def __init__(self, app: Callable[[Request], Response], *, peer: str = "",
                 loopback: bool = True, max_body: int = MAX_BODY,
                 request_timeout: float = 60.0, idle_timeout: float = 120.0,
                 clock: Callable[[], float] = time.monotonic,
                 server_header: str = "embroker") -> None:
        self._app = app
        self.peer = peer
        self.loopback = loopback
        self._max_body = max_body
        self._request_timeout = request_timeout
        self._idle_timeout = idle_timeout
        self._clock = clock
        self._server_header = server_header.encode()
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADERS)
        self._out = bytearray()
        self._closing = False
        self._request: tuple[h11.Request, bytearray] | None = None
        self._request_started: float | None = None
        self._last_activity = clock()
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

    @property
    def should_close(self) -> bool:
        """Whether the connection is over (the socket closes once its output is written)."""
        return self._closing

    @property
    def blocked(self) -> bool:
        """Whether to stop reading from the client: it leaves too much output unread."""
        return len(self._out) > MAX_PENDING_OUTPUT

    @property
    def close_reason(self) -> object:
        return None

    def data_to_send(self) -> bytes:
        data = bytes(self._out)
        self._out.clear()
        return data

    def receive_data(self, data: bytes) -> None:
        """Feed what the client sent (``b""``: it closed its side).

        Nothing a client sends raises here; the application's own exceptions do (bugs: the
        listener answers them with :meth:`internal_error`).
        """
        if self._closing:
            return
        self._last_activity = self._clock()
        if data and self._request_started is None and self._request is None:
            self._request_started = self._last_activity
        try:
            self._h11.receive_data(data)
        except RuntimeError:  # data after the client closed its side, or after an error
            self._closing = True
            return
        self._process()

    def tick(self) -> float | None:
        """Close a connection whose request is too slow (408) or that stayed idle too long."""
        if self._closing:
            return None
        now = self._clock()
        if self._request_started is not None and now - self._request_started > \
                self._request_timeout:
            self._refuse(408, b"request timeout")
        elif self._request_started is None and now - self._last_activity > self._idle_timeout:
            self._closing = True
        return None

    def close(self, _error: Any = None) -> None:
        """End the connection (the broker shuts down): after the output already queued."""
        self._closing = True

    def internal_error(self, error: Any) -> None:
        """The application failed on a request (a bug): answer 500 if no answer has begun,
        then close."""
        if self._h11.our_state in (h11.IDLE, h11.SEND_RESPONSE) and \
                self._h11.their_state is not h11.ERROR:
            body = b'{"error":"Internal Server Error","reason":"' + \
                str(error).replace('"', "'").encode("utf-8", "replace")[:500] + b'"}'
            self._send(Response(500, body, [("content-type", "application/json")]),
                       close=True)
        self._closing = True

    def connection_lost(self) -> None:
        self._closing = True

    def publishers_blocked(self, _reason: str) -> None:
        """(AMQP's resource alarms do not concern HTTP clients.)"""

    def publishers_unblocked(self) -> None:
        """(AMQP's resource alarms do not concern HTTP clients.)"""

    # -- requests ----------------------------------------------------------------------------

    def _process(self) -> None:
        conn = self._h11
        while not self._closing:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as error:
                self._refuse(_status_for(error), str(error).encode("utf-8", "replace")[:200])
                return
            if event is h11.NEED_DATA:
                return
            if event is h11.PAUSED:
                if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                    conn.start_next_cycle()
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
                        self._refuse(413, b"request body too large")
                        return
                    body += event.data
            elif isinstance(event, h11.EndOfMessage):
                self._answer()
            elif isinstance(event, h11.ConnectionClosed):
                self._closing = True
                return

    def _begin(self, event: h11.Request) -> None:
        length = _content_length(event.headers)
        if length is not None and length > self._max_body:
            self._refuse(413, b"request body too large")
            return
        self._request = (event, bytearray())
        if self._request_started is None:
            self._request_started = self._clock()

    def _answer(self) -> None:
        assert self._request is not None
        event, body = self._request
        self._request = None
        self._request_started = None
        target = event.target.decode("latin-1")
        path, _, query_string = target.partition("?")
        headers: dict[str, str] = {}
        for name, value in event.headers:
            key = name.decode("latin-1").lower()
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]},{text}" if key in headers else text
        request = Request(event.method.decode("ascii", "replace").upper(), path,
                          dict(parse_qsl(query_string, keep_blank_values=True)), headers,
                          bytes(body), self.peer, self.loopback)
        response = self._app(request)  # an exception here is a bug: the listener answers 500
        if request.method == "HEAD":
            response = Response(response.status, b"", [
                *[(k, v) for k, v in response.headers if k != "content-length"],
                ("content-length", str(len(response.body)))])
            self._send(response, head=True)
        else:
            self._send(response)
        self.requests_served += 1
        self._last_activity = self._clock()

    def _send(self, response: Response, *, close: bool = False, head: bool = False) -> None:
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers
                   if k not in ("content-length", "connection")]
        if not head:
            headers.append((b"content-length", str(len(response.body)).encode()))
        else:
            headers += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers
                        if k == "content-length"]
        headers.append((b"server", self._server_header))
        if close:
            headers.append((b"connection", b"close"))
        conn = self._h11
        try:
            self._out += conn.send(h11.Response(status_code=response.status, headers=headers,
                                                reason=_REASONS.get(response.status, b"")))
            if response.body and not head:
                self._out += conn.send(h11.Data(data=response.body))
            self._out += conn.send(h11.EndOfMessage())
        except h11.LocalProtocolError:  # h11 refuses (a state we did not foresee): close
            self._closing = True
            return
        if conn.our_state is h11.MUST_CLOSE:
            self._closing = True

    def _refuse(self, status: int, reason: bytes) -> None:
        """Answer a request that cannot be served with ``status`` and close."""
        if self._h11.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            text = reason.decode("utf-8", "replace").replace('"', "'")
            body = ('{"error":"' + _REASONS.get(status, b"error").decode() + '","reason":"'
                    + text + '"}').encode()
            self._send(Response(status, body, [("content-type", "application/json")]),
                       close=True)
        self._closing = True


def _content_length(headers: Any) -> int | None:
    for name, value in headers:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def json_headers(extra: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """The headers of a JSON answer, as RabbitMQ's (``content-type: application/json``)."""
    return [("content-type", "application/json"), *(extra or {}).items()]
