"""The listener's ports (:class:`embroker.server.Server`'s first role): binding, listening and
accepting, each port's limit of connections and the budget the ports a stranger reaches share,
the ports a plugin opens and closes on a running node, and a node's control port.

Each accepted socket becomes a :class:`_Client`, served by the loop
(:mod:`embroker._listener_loop`) with the sans-IO connection its port's kind makes
(:class:`~embroker._transport.PortKind`). The ports are the loop's alone (see "Threads" in
:mod:`embroker.server`): another thread opens or closes one through the loop
(``Server._in_loop``).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import ipaddress
import logging
import selectors
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar, final

from ._tls import TLSSocket
from ._transport import (
    Accepted,
    PortKind,
    PortPolicy,
    SansIOConnection,
    broker_connection,
    port_kind,
    port_kinds,
)
from ._version import __version__
from .errors import (
    PortInUse,
)
from .model._access import is_loopback

if TYPE_CHECKING:
    from .management import ManagementAPI
    from .management._http import Request, Response, Work
    from .model import Broker, Node

log = logging.getLogger("embroker.server")  # (the listener's one logger, whichever role logs)


try:
    import resource
except ImportError:  # (Windows: no descriptor limit to read)
    resource = None  # type: ignore[assignment]

#: Bytes of answers an HTTP client of the management port may leave unread before the loop
#: stops reading its requests (as MAX_PENDING_OUTPUT of embroker.management: the same 4 MiB).
_HTTP_UNREAD = 4 * 1024 * 1024
#: The most tools a node's control port (serve_control) holds at once, once they proved they
#: know the cookie: RabbitMQ's tools open one connection each, and a script runs them one after
#: another.
_CONTROL_CLIENTS = 64
#: The most connections a control port holds that have not proved it yet (each has
#: embroker.control._handshake.HANDSHAKE_TIMEOUT seconds to): a new one drops the oldest, so
#: that however many idle sockets another user holds on the port, a tool that knows the cookie
#: gets in at once.
_CONTROL_PENDING = 16
#: How long the listener stops accepting after accept() failed for lack of resources; doubled
#: on each failure in a row, up to the maximum.
_ACCEPT_BACKOFF = 0.05
_ACCEPT_BACKOFF_MAX = 1.0
#: accept() errors that mean "no resources now", not "this listener is broken".
_RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
#: At most one warning about failing accepts (or a port at its limit) per this many seconds.
_WARN_INTERVAL = 10.0
#: The share of the process's descriptors the management port, and the stream port, may each
#: hold at most (one in four): below RabbitMQ's management limit wherever ``ulimit -n`` is
#: under 40,960.
_PORT_SHARE = 4
#: The share all such ports hold together at most (one in two: the HTTP, HTTPS, stream and
#: stream TLS ports, a quarter each, would otherwise hold every descriptor between them).
_STRANGERS_SHARE = 2


def default_max_connections() -> dict[str, int | None]:
    """The most connections each kind of port holds unless told otherwise, as RabbitMQ, but
    never more than a quarter of the process's descriptors (``RLIMIT_NOFILE``, read now) on a
    port a stranger reaches before any login, the HTTP and the stream ones: clients that a web
    page opens, or that connect and send nothing or half a request, cannot take the
    descriptors AMQP clients need to connect. (With ``ulimit -n 1024``: 256.)

    - ``"amqp"`` (the AMQP port, and the AMQP 1.0 port each): no limit, RabbitMQ's
      ``connection_max`` (``infinity``; tcp_listener_sup.erl gives it to ranch);
    - ``"management"``: RabbitMQ's 10,240 (ranch's defaults,
      ``embroker._builtin_ports.RANCH_MAX_CONNECTIONS``), within the quarter;
    - ``"stream"`` (the stream port, and the stream TLS port each): the quarter (the stream
      plugin's listener takes RabbitMQ's ``connection_max``, no limit; v3.10.8
      rabbit_stream_sup.erl); no limit where the descriptors have none;
    - each registered kind's (:class:`~embroker._transport.PortKind`: its ``max_connections``,
      within the quarter if a stranger reaches it).
    """
    share: int | None = None
    if resource is not None:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft != resource.RLIM_INFINITY:
            share = max(1, soft // _PORT_SHARE)
    limits: dict[str, int | None] = {}
    for kind in port_kinds():
        if kind.limit is None or kind.limit in limits:
            continue
        limit = kind.max_connections
        if kind.stranger and share is not None:
            limit = share if limit is None else min(limit, share)
        limits[kind.limit] = limit
    return limits


def stranger_budget() -> int | None:
    """The most connections the HTTP and stream ports (their TLS twins included) hold
    together: half of the process's descriptors (``RLIMIT_NOFILE``, read now; ``None`` where
    they have no limit). Each such port holds at most a quarter
    (:func:`default_max_connections`); together they never hold more than half, whichever of
    them a stranger fills, so that AMQP clients always find descriptors to connect with."""
    if resource is None:
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else max(1, soft // _STRANGERS_SHARE)


@final
class _Budget:
    """Connections several ports share (:func:`stranger_budget`): how many are open, at most
    how many (the loop's alone)."""

    __slots__ = ("limit", "open")

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.open = 0

    @property
    def full(self) -> bool:
        return self.limit is not None and self.open >= self.limit


@final
class _Client:
    """A socket being served and its connection, as its port's kind makes it (an AMQP
    connection, sniffed: 0-9-1 or 1.0; the management API's HTTP; the stream protocol...)."""

    __slots__ = ("answered", "bound", "carrying", "conn", "connected_at", "events", "heard_at",
                 "held", "kind", "locked", "peer", "port", "sock", "stalled_until", "streams",
                 "tick_at", "tls", "wbuf", "written")

    def __init__(self, sock: socket.socket | TLSSocket, peer: str,
                 connection: Callable[[_Client], Any], port: _Port | None = None) -> None:
        self.sock = sock
        #: Its TLS session (the same object as ``sock``), on a TLS port; else ``None``.
        self.tls = sock if type(sock) is TLSSocket else None
        self.peer = peer
        #: The port it came in on (its count of connections goes down as it leaves).
        self.port = port
        self.wbuf = bytearray()
        self.events = selectors.EVENT_READ
        #: A fault: nothing is written to the socket until then (time.monotonic()).
        self.stalled_until = 0.0
        #: When the client connected (time.time(): the management API's ``connected_at``).
        self.connected_at = time.time()
        #: When bytes last came from it (time.monotonic(): its heartbeats on a ManualClock).
        self.heard_at = time.monotonic()
        #: What the batching policy reads (embroker._batching.Readiness): whether its last
        #: read got an answer (it may wait for the next one), and whether that read held the
        #: policy's ``pipelined`` commands or more, none answered, and it is no consumer with
        #: acks to come (it pipelines).
        self.answered = True
        self.streams = False
        self.held = 0
        #: The loop's heartbeat look passes it by until then (the broker clock's monotonic
        #: time): what its connection's ``tick()`` said it has nothing to do before, for a
        #: connection that keeps that promise (``tick_keeps_deadlines``); 0.0, looked at every
        #: time. A read or a write for it sets it back to 0.0 (see ``_Loop._tick``).
        self.tick_at = 0.0
        #: Told how much of its output is not written yet, after each write (a stream
        #: connection: it pauses its readers while too much waits).
        self.written: Callable[[int], None] | None = None
        #: Its connection, as its port's kind made it: a carrier (AMQP's sniffing) is reached
        #: through to the connection it carries (``conn.inner``); the others are ``conn``.
        self.conn: Any = connection(self)
        self.carrying = hasattr(self.conn, "inner")
        #: Its port's kind (``None``: no broker connection's), kept at hand for the loop.
        self.kind: PortKind | None = port_kind(port.policy.kind) if port is not None else (
            port_kind("amqp") if self.carrying else None)
        #: The loop feeds it under the broker's lock and reads it as the batching policy says
        #: (PortKind.locked).
        self.locked = self.kind is not None and self.kind.locked
        #: Unwritten output past which the loop stops reading it (PortPolicy.output_bound).
        self.bound = port.policy.output_bound if port is not None else (
            None if self.locked else _HTTP_UNREAD)

    @property
    def protocol(self) -> Any:
        """Its protocol connection (an AMQP one's, once the protocol header chose it): a
        :class:`~embroker._transport.BrokerConnection` on a port of broker connections."""
        return broker_connection(self.conn)

    @property
    def broker(self) -> bool:
        """Whether its connection is a broker connection (PortKind.broker; not yet while its
        carrier carries none: a WebSocket before its handshake)."""
        return self.kind is not None and self.kind.broker and self.protocol is not None

    @property
    def listed(self) -> bool:
        """Whether it is in ``server.connections``, open to faults (PortKind.listed; as
        :attr:`broker`, once it carries a connection)."""
        return self.kind is not None and self.kind.listed and self.protocol is not None

    def unacked(self) -> int:
        """The deliveries it holds unacknowledged as an AMQP 0-9-1 consumer, as of the loop's
        last read or write for it (``held``: counted then, off the round trip's path)."""
        return self.held

    def count_held(self) -> None:
        """Count :meth:`unacked` now (after a read or a write)."""
        # (a connection that counts its commands, AMQP 0-9-1's, is one the batching reads)
        inner = self.conn.inner if self.carrying and self.conn.passthrough else self.conn
        model = inner.model if getattr(inner, "commands_read", None) is not None else None
        self.held = model.consumer_unacked() if model is not None else 0



@final
class _Port:
    """One port the listener serves: its sockets (127.0.0.1 and ::1 for ``localhost``), what it
    serves, how many connections it holds and may hold, and whether its accepts are paused
    (the loop's alone).

    It is selected for reading (accepting) while the listener runs, unless it holds its
    ``limit`` of connections or accept() failed for lack of resources less than ``backoff``
    ago (``paused_until``); each port on its own.
    """

    __slots__ = ("backoff", "budget", "failures", "kind", "limit", "number", "open",
                 "paused_until", "policy", "selected", "sockets", "warned")

    def __init__(self, policy: PortPolicy, number: int, sockets: list[socket.socket],
                 budget: _Budget | None = None) -> None:
        #: What it allows its clients (embroker._transport.PortPolicy).
        self.policy = policy
        #: Its kind's name (embroker._transport.PortKind): ``"amqp"``, ``"amqp10"`` (AMQP 1.0
        #: alone), ``"management"``, ``"stream"``, ``"control"``...
        self.kind = policy.kind
        self.number = number
        self.sockets = sockets
        #: The most connections it holds at once (``None``: no limit).
        self.limit = policy.max_connections
        #: How many of its connections are open.
        self.open = 0
        #: What it shares with other ports (``None``: nothing): it is full when that is.
        self.budget = budget
        #: Until when accept() is not tried (time.monotonic(); 0: not paused).
        self.paused_until = 0.0
        self.backoff = _ACCEPT_BACKOFF
        self.failures = 0
        self.warned = -_WARN_INTERVAL
        self.selected = False

    @property
    def full(self) -> bool:
        return (self.limit is not None and self.open >= self.limit) or \
            (self.budget is not None and self.budget.full)

    def __repr__(self) -> str:
        limit = "no limit" if self.limit is None else f"at most {self.limit}"
        return f"<port {self.number} ({self.kind}): {self.open} connection(s), {limit}>"


def _addresses(host: str) -> list[tuple[socket.AddressFamily, str]]:
    if host == "localhost":
        families = [(socket.AF_INET, "127.0.0.1")]
        if socket.has_ipv6:
            families.append((socket.AF_INET6, "::1"))
        return families
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return [(family, host)]


def _over_loopback(sock: socket.socket | TLSSocket) -> bool:
    """Whether a client came in over a loopback interface. RabbitMQ asks the socket's own
    address (``rabbit_net:is_loopback/1``), which is loopback exactly when the peer's is."""
    try:
        return is_loopback(ipaddress.ip_address(sock.getsockname()[0]))
    except (OSError, ValueError):
        return False


def _peer_name(sock: socket.socket, address: tuple[str, int] | tuple[str, int, int, int]) -> str:
    return f"{address[0]}:{address[1]}" if sock.family == socket.AF_INET else \
        f"[{address[0]}]:{address[1]}"



class _Listener:
    """The ports of :class:`~embroker.server.Server` (a role of it: Server is the one class):
    binding and listening (``_listen``), accepting (``_accept``: each port's limit, the
    strangers' budget, the back-off when accept() fails), the clients each accept makes
    (``_serve``), the ports opened and closed on demand (``open_listener``), a node's control
    port (``serve_control``)."""

    #: The attribute that holds each listener's port number, by kind and whether it is TLS
    #: (a registered kind's: :meth:`listener_port`).
    _LISTENER_ATTRIBUTES: ClassVar[dict[tuple[str, bool], str]] = {
        ("management", False): "management_port", ("management", True): "management_tls_port",
        ("stream", False): "stream_port", ("stream", True): "stream_tls_port"}

    if TYPE_CHECKING:  # (what it shares with the other roles: Server sets it up)
        broker: Broker
        node: Node
        _locked: AbstractContextManager[object]
        host: str
        tls: ssl.SSLContext | None
        handshake_timeout: float
        port: int
        tls_port: int | None
        amqp10_port: int | None
        stream_advertised_port: int | None
        max_connections: dict[str, int | None]
        _running: bool
        _app_running: bool
        _constructing: bool
        _selector: selectors.BaseSelector
        _wake_r: socket.socket
        _wake_w: socket.socket
        _strangers: _Budget
        _ports: list[_Port]
        _listeners: list[socket.socket]
        _paused_ports: set[_Port]
        _kind_ports: dict[tuple[str, bool], int]
        _clients: dict[int, _Client]
        _http_clients: dict[int, _Client]
        _management: ManagementAPI | None
        _control: tuple[Callable[[Request], Response | Work],
                        Callable[[Request], Response | None], str, str] | None
        _control_pending: deque[_Client]
        _control_tools: set[_Client]

        def _start_management(self) -> None: ...
        def _in_loop(self, function: Callable[[], Any]) -> Any: ...
        def _on_loop(self, function: Callable[[], Any], timeout: float = 5.0) -> Any: ...
        def _bug(self, exc: BaseException, where: str) -> None: ...
        def _has_output(self, client: _Client) -> None: ...
        def _write(self, client: _Client) -> None: ...
        def _drop(self, client: _Client) -> None: ...

    def _listen(self, host: str, port: int, policy: PortPolicy) -> int:
        """A new port of ``policy``'s kind on ``host`` and ``port``; its number.

        Raises:
            PortInUse, OSError: it cannot listen. Nothing else changes, but while the
                constructor runs: then the ports it opened before are closed too (the server
                will not exist).
        """
        try:
            sockets = self._bind(host, port)
        except BaseException:
            if self._constructing:
                self._close_listeners()
                self._selector.close()
                self._wake_r.close()
                self._wake_w.close()
            raise
        port = sockets[0].getsockname()[1]
        budget = self._strangers if port_kind(policy.kind).stranger else None
        self._ports.append(_Port(policy, port, sockets, budget))
        return port

    def _bind(self, host: str, port: int) -> list[socket.socket]:
        """Listening sockets on ``host``'s addresses and ``port`` (0: a free one, the same for
        each address), added to ``_listeners``: all of them or none. The server's other
        listening sockets are never touched here (a port that cannot open, as ``rabbitmq-plugins
        enable`` asks on a running node, must not close the ones serving).

        Raises:
            PortInUse: the port is taken (the sockets opened for it are closed again).
            OSError: another reason it cannot listen (the same).
        """
        sockets: list[socket.socket] = []
        try:
            for family, address in _addresses(host):
                sock = socket.socket(family, socket.SOCK_STREAM)
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    if family == socket.AF_INET6:
                        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                    sock.bind((address, port))
                except OSError as exc:
                    sock.close()
                    if family == socket.AF_INET6 and sockets:
                        log.debug("not listening on [%s]:%d: %s", address, port, exc)
                        continue
                    if exc.errno == errno.EADDRINUSE:
                        raise PortInUse(host, port) from None
                    raise
                sockets.append(sock)
                sock.listen(512)
                sock.setblocking(False)
                port = sock.getsockname()[1]
        except BaseException:
            for opened in sockets:
                opened.close()
            raise
        self._listeners += sockets
        return sockets

    def _close_listeners(self) -> None:
        for sock in self._listeners:
            sock.close()
        self._listeners.clear()

    # -- listeners a plugin brings: rabbitmq-plugins enable/disable on a running node ---------

    def listener_port(self, kind: str, *, tls: bool = False) -> int | None:
        """The port of ``kind`` (a registered :class:`~embroker._transport.PortKind`'s name)
        this listener serves, over TLS with ``tls``; ``None`` if none."""
        if kind == "amqp":
            return self.tls_port if tls else self.port
        if kind == "amqp10":
            return None if tls else self.amqp10_port
        attribute = self._LISTENER_ATTRIBUTES.get((kind, tls))
        if attribute is not None:
            found: int | None = getattr(self, attribute)
            return found
        return self._kind_ports.get((kind, tls))

    def _set_listener_port(self, kind: str, tls: bool, number: int | None) -> None:
        attribute = self._LISTENER_ATTRIBUTES.get((kind, tls))
        if attribute is not None:
            setattr(self, attribute, number)
        elif number is None:
            self._kind_ports.pop((kind, tls), None)
        else:
            self._kind_ports[kind, tls] = number

    def listeners(self) -> list[tuple[str, int]]:
        """The listeners as ``rabbitmq-diagnostics listeners`` names them: (RabbitMQ's protocol
        name, port), each registered kind's in the order of the registry, plain before TLS
        (``("amqp", 5672)``, ``("amqp/ssl", 5671)``, ``("http", 15672)``, ``("stream",
        5552)``...); a kind with no protocol name (the AMQP 1.0-only port, the control port) is
        not listed."""
        found = []
        for kind in port_kinds():
            for tls, protocol in ((False, kind.protocol), (True, kind.tls_protocol)):
                number = self.listener_port(kind.name, tls=tls)
                if protocol is not None and number is not None:
                    found.append((protocol, number))
        return found

    def _on_demand(self, kind: str, call: str) -> PortKind:
        try:
            found = port_kind(kind)
        except LookupError:
            found = None
        if found is None or found.factory is None or not found.on_demand:
            names = [k.name for k in port_kinds() if k.factory is not None and k.on_demand]
            raise ValueError(f"{call}: {' or '.join(map(repr, names))}, not {kind!r}")
        return found

    def open_listener(self, kind: str, port: int, *, tls: bool = False) -> int:
        """Serve the management API (``kind="management"``), the stream protocol
        (``"stream"``) or another registered kind of port (:class:`~embroker._transport.PortKind`)
        on ``port`` from now on, over TLS with ``tls`` (the server's TLS settings), as
        ``rabbitmq-plugins enable rabbitmq_management`` (``rabbitmq_stream``) starts its
        listeners on a running node; the port (the one served already, if any). While the
        application is stopped the port is kept for :meth:`start_app` to open. Safe from any
        thread.

        Raises:
            PortInUse: the port is taken.
            ValueError: a kind of port that does not open on demand (AMQP's), or TLS without
                the server's TLS settings.
        """
        found = self._on_demand(kind, "open_listener")
        if tls and self.tls is None:
            raise ValueError("open_listener: a TLS port needs TLS settings (Server(tls=...))")

        def open_port() -> int:
            current = self.listener_port(kind, tls=tls)
            if current is not None:
                return current
            limit = self.max_connections.get(found.limit) if found.limit else \
                found.max_connections
            number = self._listen(self.host, port, found.policy(
                limit, tls=self.tls if tls else None))
            added = self._ports[-1]
            self._set_listener_port(kind, tls, number)
            if kind == "management" and self._management is None:
                self._start_management()
            if kind == "stream" and not tls and self.stream_advertised_port is None:
                self.stream_advertised_port = number
            if not self._app_running:  # (opened by start_app, with the others)
                for sock in added.sockets:
                    sock.close()
                    self._listeners.remove(sock)
                added.sockets = []
            elif self._running:
                self._select_port(added)
            return number
        result: int = self._in_loop(open_port)
        return result

    def close_listener(self, kind: str) -> None:
        """Stop serving the management API, the stream protocol or another registered kind of
        port, its TLS port included, as ``rabbitmq-plugins disable`` stops the plugin's
        listeners: the ports close and their clients are dropped. Safe from any thread.

        Raises:
            ValueError: a kind of port that does not close on demand (AMQP's).
        """
        self._on_demand(kind, "close_listener")

        def close_port() -> None:
            for port in [p for p in self._ports if p.policy.kind == kind]:
                self._close_port(port)
                self._ports.remove(port)
                for client in [c for c in (*self._clients.values(),
                                           *self._http_clients.values()) if c.port is port]:
                    self._drop(client)
            for tls in (False, True):
                self._set_listener_port(kind, tls, None)
        self._in_loop(close_port)

    def _close_port(self, port: _Port) -> None:
        """Stop listening on ``port`` (its sockets closed; the port kept, to open again)."""
        self._paused_ports.discard(port)
        port.paused_until = 0.0
        if port.selected:
            for sock in port.sockets:
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(sock)
            port.selected = False
        for sock in port.sockets:
            sock.close()
            with contextlib.suppress(ValueError):
                self._listeners.remove(sock)
        port.sockets = []

    # -- accepting -----------------------------------------------------------------------------

    def _select_port(self, port: _Port) -> None:
        """Select ``port`` for reading (accepting) or not: while the listener runs, unless it
        is full (at its limit) or paused (accept() failed for lack of resources)."""
        on = self._running and bool(port.sockets) and not port.full and not port.paused_until
        if on == port.selected:
            return
        for sock in port.sockets:
            if on:
                self._selector.register(sock, selectors.EVENT_READ, port)
            else:
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(sock)
        port.selected = on

    def _accept(self, listener: socket.socket, port: _Port) -> None:
        while True:
            if port.full:  # the rest wait in the kernel's queue until one of them closes
                self._select_port(port)
                now = time.monotonic()
                if now - port.warned >= _WARN_INTERVAL:
                    log.warning("port %d holds %d connections, its limit: new clients wait "
                                "until one of them closes (max_connections)", port.number,
                                port.open)
                    port.warned = now
                return
            try:
                sock, address = listener.accept()
            except (BlockingIOError, InterruptedError):
                port.backoff = _ACCEPT_BACKOFF
                return
            except OSError as exc:
                self._accept_failed(port, exc)
                return
            port.open += 1
            if port.budget is not None:
                port.budget.open += 1
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                peer = _peer_name(sock, address)
                carried: socket.socket | TLSSocket = sock if port.policy.tls is None \
                    else TLSSocket(sock, port.policy.tls)
                kind = port_kind(port.kind)
                if kind.factory is None:  # (the listener's own: a node's control port)
                    self._accept_control(carried, peer, port)
                    continue
                self._serve(carried, peer, port, kind)
            except Exception as exc:  # a socket that died at once, or a bug: this one only
                self._bug(exc, "accepting a connection")
                sock.close()
                self._left(port)
                continue
            log.info("accepted connection from %s", peer)

    def _left(self, port: _Port | None) -> None:
        """A connection of ``port`` closed: one more may come."""
        if port is None:
            return
        port.open -= 1
        if port.budget is None:
            if not port.selected:
                self._select_port(port)
            return
        port.budget.open -= 1
        for other in self._ports:  # (each port of the budget may accept again)
            if other.budget is port.budget and not other.selected:
                self._select_port(other)

    def _serve(self, sock: socket.socket | TLSSocket, peer: str, port: _Port,
               kind: PortKind) -> None:
        """Serve an accepted socket with the connection ``kind`` makes: a client the loop
        feeds under the broker's lock (``kind.locked``) joins ``_clients`` under it, the others
        ``_http_clients``."""
        with self._locked:
            client = _Client(sock, peer, functools.partial(
                self._make, kind=kind, policy=port.policy), port)
            if kind.locked:
                self._clients[sock.fileno()] = client
        if not kind.locked:
            # (a connection that paces itself by its unwritten output: the stream protocol's)
            client.written = getattr(client.conn, "written", None)
            self._http_clients[sock.fileno()] = client
        self._selector.register(sock, selectors.EVENT_READ, client)
        if not kind.locked:
            log.debug("accepted %s connection from %s", kind.name, peer)

    def _make(self, client: _Client, *, kind: PortKind, policy: PortPolicy) -> SansIOConnection:
        """The connection ``kind`` makes for ``client``, under the broker's lock."""
        assert kind.factory is not None
        sock = client.sock
        try:
            local, local_port = sock.getsockname()[:2]
        except OSError:
            local, local_port = "", 0
        accepted = Accepted(self, self.broker, client.peer, local, _over_loopback(sock),
                            client.tls, policy, functools.partial(self._has_output, client),
                            local_port=local_port, node=self.node)
        with self._locked:
            return kind.factory(accepted)

    def serve_control(self, app: Callable[[Request], Response | Work],
                      screen: Callable[[Request], Response | None], *, name: str, cookie: str,
                      host: str = "127.0.0.1", port: int = 0) -> int:
        """Serve a node's control interface (embroker.control: what RabbitMQ's tools ask a
        node) on a port of its own; returns the port. Each connection first passes the
        handshake (:mod:`embroker.control._handshake`: the tool proves it knows ``cookie``,
        the node that it is ``name`` and knows it too), then is answered HTTP requests by
        ``app`` (``screen`` refuses them from their headers alone). It stays open while the
        node's application is stopped (``stop_app``).

        Args:
            host: where it listens (RabbitMQ's distribution's place: ``"auto"``, every
                interface; loopback by default).
            port: its port (0: any free one).

        Raises:
            PortInUse: ``port`` is taken.
        """
        number = self._listen("0.0.0.0" if host == "auto" else host, port,
                              port_kind("control").policy(None))
        self._control = (app, screen, name, cookie)
        if self._running:
            self._on_loop(lambda: self._select_port(self._ports[-1]))
        return number

    def _accept_control(self, sock: socket.socket | TLSSocket, peer: str, port: _Port) -> None:
        from .control._handshake import NodeHandshake
        from .management._http import HostPolicy, HttpConnection

        assert self._control is not None
        app, screen, name, cookie = self._control
        loopback = _over_loopback(sock)
        pending = self._control_pending
        while len(pending) >= _CONTROL_PENDING:  # the oldest that has not proved itself goes
            oldest = pending.popleft()
            oldest.conn.evict()
            try:
                self._write(oldest)  # (told -busy, and dropped)
            except Exception as exc:
                self._bug(exc, f"dropping the control connection from {oldest.peer}")
                self._drop(oldest)
            now = time.monotonic()
            if now - port.warned >= _WARN_INTERVAL:
                log.warning("control port %d: more than %d connections that have not proved "
                            "they know the cookie: the oldest are dropped", port.number,
                            _CONTROL_PENDING)
                port.warned = now

        def connection(client: _Client) -> NodeHandshake:
            def authenticated() -> bool:
                with contextlib.suppress(ValueError):
                    pending.remove(client)
                if len(self._control_tools) >= _CONTROL_CLIENTS:
                    return False
                self._control_tools.add(client)
                return True

            return NodeHandshake(name, cookie, lambda: HttpConnection(
                app, screen=screen, hosts=HostPolicy.of({"127.0.0.1"}), peer=peer,
                loopback=loopback, server_header=f"embroker/{__version__}"),
                on_authenticated=authenticated)

        client = _Client(sock, peer, connection, port)
        pending.append(client)
        self._http_clients[sock.fileno()] = client
        self._selector.register(sock, selectors.EVENT_READ, client)

    def _connection(self, client: _Client, *, policy: PortPolicy | None = None,
                    ) -> SansIOConnection:
        """An AMQP port's connection for ``client`` (sniffed: 0-9-1 or 1.0)."""
        policy = policy if policy is not None else port_kind("amqp").policy(
            None, handshake_timeout=self.handshake_timeout)
        return self._make(client, kind=port_kind(policy.kind), policy=policy)

    def _accept_failed(self, port: _Port, exc: OSError) -> None:
        if exc.errno not in _RESOURCE_ERRNOS:
            log.warning("accept failed on port %d: %s", port.number, exc)
            return
        # Out of file descriptors (or memory): stop accepting on this port for a while rather
        # than spin on a listener that stays readable; the clients already connected go on, and
        # so do the other ports (each pauses when its own accept() fails).
        now = time.monotonic()
        port.paused_until = now + port.backoff
        port.backoff = min(port.backoff * 2, _ACCEPT_BACKOFF_MAX)
        self._paused_ports.add(port)
        self._select_port(port)
        port.failures += 1
        if now - port.warned >= _WARN_INTERVAL:
            log.warning("cannot accept connections on port %d: %s (%d failure(s) since the "
                        "last warning); pausing its accept for up to %.2fs", port.number,
                        exc.strerror or exc, port.failures, _ACCEPT_BACKOFF_MAX)
            port.warned = now
            port.failures = 0

