"""The loopback listener: sockets and one selector loop thread, the only I/O in embroker.

Each accepted socket gets a sans-IO connection: :class:`~embroker.amqp091.ServerConnection`, or
:class:`~embroker.amqp10.ServerConnection` when the client's protocol header says AMQP 1.0 (one
port serves both, as RabbitMQ's; ``amqp10_port`` adds a port for AMQP 1.0 alone). The loop reads
what arrives, feeds it to the connection under the broker's lock, and writes what the
connections have to send: its own replies, and deliveries that another connection (or a test's
in-process client, from another thread) caused.

Nothing a client sends, and no bug, stops the loop:

- an unexpected error while handling one connection (reading, writing, its heartbeats, a
  delivery to it) closes that connection with 541 INTERNAL_ERROR; it is logged with its
  traceback and kept in :attr:`Server.errors` for the test to see;
- an unexpected error in a timer (a queue's expiry...) is logged and kept the same way, and the
  other timers still run;
- sockets that do not finish the handshake in time are closed (RabbitMQ's 10 s), and when
  ``accept`` fails (too many open files) the listener backs off instead of
  spinning, saying so once per interval.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import functools
import ipaddress
import logging
import selectors
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, final

from ._sniff import SniffingConnection
from .amqp091 import ServerConnection as Amqp091Connection
from .amqp10 import ServerConnection as Amqp10Connection
from .errors import (
    ChannelException,
    ConnectionException,
    ConnectionForced,
    InternalError,
    PortInUse,
    error_for_code,
)
from .model._access import is_loopback
from .model._faults import DeliveryFault

if TYPE_CHECKING:
    from .model import Broker, Message
    from .model import Channel as ModelChannel
    from .model import Connection as ModelConnection

__all__ = ["ClientConnection", "PortInUse", "Server"]

log = logging.getLogger("embroker.server")

_READ_SIZE = 262_144
_TICK = 0.5  # at most this long between looks at heartbeats, handshakes and timers
#: How long the listener stops accepting after accept() failed for lack of resources; doubled
#: on each failure in a row, up to the maximum.
_ACCEPT_BACKOFF = 0.05
_ACCEPT_BACKOFF_MAX = 1.0
#: accept() errors that mean "no resources now", not "this listener is broken".
_RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
#: At most one warning about failing accepts per this many seconds.
_WARN_INTERVAL = 10.0


@final
class _Client:
    """A socket being served and its connection."""

    __slots__ = ("conn", "events", "peer", "sock", "stalled_until", "wbuf")

    def __init__(self, sock: socket.socket, peer: str,
                 connection: Callable[[_Client], SniffingConnection]) -> None:
        self.sock = sock
        self.peer = peer
        self.wbuf = bytearray()
        self.events = selectors.EVENT_READ
        #: A fault: nothing is written to the socket until then (time.monotonic()).
        self.stalled_until = 0.0
        self.conn = connection(self)


@final
class _Call:
    """Work a test asks the loop's thread to do, and its answer."""

    __slots__ = ("done", "error", "function", "result")

    def __init__(self, function: Callable[[], Any]) -> None:
        self.function = function
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None


def _addresses(host: str) -> list[tuple[socket.AddressFamily, str]]:
    if host == "localhost":
        families = [(socket.AF_INET, "127.0.0.1")]
        if socket.has_ipv6:
            families.append((socket.AF_INET6, "::1"))
        return families
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return [(family, host)]


def _over_loopback(sock: socket.socket) -> bool:
    """Whether a client came in over a loopback interface. RabbitMQ asks the socket's own
    address (``rabbit_net:is_loopback/1``), which is loopback exactly when the peer's is."""
    try:
        return is_loopback(ipaddress.ip_address(sock.getsockname()[0]))
    except (OSError, ValueError):
        return False


def _peer_name(sock: socket.socket, address: tuple[str, int] | tuple[str, int, int, int]) -> str:
    return f"{address[0]}:{address[1]}" if sock.family == socket.AF_INET else \
        f"[{address[0]}]:{address[1]}"


@final
class Server:
    """A listener that lets unmodified AMQP 0-9-1 clients talk to ``broker``.

    Use :meth:`Broker.serve <embroker.Broker.serve>` to make one. ``host="localhost"`` listens
    on both 127.0.0.1 and ::1 (clients may try either); ``port=0`` takes any free port.

    Args:
        broker: the broker to serve.
        host, port: where to listen.
        heartbeat: the heartbeat interval offered to clients, in seconds (0: none).
        handshake_timeout: how long a socket may take from connecting to connection.open
            (RabbitMQ's ``handshake_timeout``, 10 s).
        amqp10_port: also listen on this port for AMQP 1.0 alone (0: any free port).

    Raises:
        PortInUse: the port is taken.
    """

    def __init__(self, broker: Broker, host: str = "127.0.0.1", port: int = 0, *,
                 heartbeat: int = 60, handshake_timeout: float = 10.0,
                 amqp10_port: int | None = None) -> None:
        self.broker = broker
        self.host = host
        self.heartbeat = heartbeat
        self.handshake_timeout = handshake_timeout
        #: Unexpected exceptions raised while serving (bugs); tests should find it empty.
        self.errors: list[BaseException] = []
        self._clients: dict[int, _Client] = {}
        self._dirty: set[_Client] = set()
        self._selector = selectors.DefaultSelector()
        self._listeners: list[socket.socket] = []
        self._accepting = False
        self._accept_resumes = 0.0
        self._accept_backoff = _ACCEPT_BACKOFF
        self._accept_failures = 0
        self._accept_warned = -_WARN_INTERVAL
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._running = False
        self._thread: threading.Thread | None = None
        self._loop_ident: int | None = None
        # Work other threads hand to the loop (faults, settle's questions).
        self._calls: deque[_Call] = deque()
        self._stalled: set[_Client] = set()  # clients whose output a fault holds back
        self.port = self._listen(host, port)
        shared = len(self._listeners)
        #: The port that serves AMQP 1.0 alone (``None`` unless asked for).
        self.amqp10_port = self._listen(host, amqp10_port) if amqp10_port is not None else None
        self._amqp10_only = set(self._listeners[shared:])
        broker._on_blocked.append(self._on_blocked)
        broker._on_restart.append(self._on_restart)
        broker._servers.append(self)

    def _listen(self, host: str, port: int) -> int:
        for family, address in _addresses(host):
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind((address, port))
            except OSError as exc:
                sock.close()
                if family == socket.AF_INET6 and self._listeners:
                    log.debug("not listening on [%s]:%d: %s", address, port, exc)
                    continue
                self._close_listeners()
                if exc.errno == errno.EADDRINUSE:
                    raise PortInUse(host, port) from None
                raise
            sock.listen(512)
            sock.setblocking(False)
            self._listeners.append(sock)
            port = sock.getsockname()[1]
        return port

    def _close_listeners(self) -> None:
        for sock in self._listeners:
            sock.close()
        self._listeners.clear()

    def _url(self, port: int) -> str:
        user = "guest" if "guest" in self.broker.users else next(iter(self.broker.users), "guest")
        password = self.broker.users.get(user, "guest")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"amqp://{user}:{password}@{host}:{port}"

    @property
    def url(self) -> str:
        """``amqp://USER:PASSWORD@HOST:PORT/`` for a user of the broker (guest if there is one)."""
        return self._url(self.port) + "/"

    @property
    def amqp10_url(self) -> str:
        """``amqp://USER:PASSWORD@HOST:PORT`` for AMQP 1.0 clients such as proton: the 1.0 port
        if there is one, else the shared port (which serves both protocols)."""
        return self._url(self.amqp10_port or self.port)

    def __repr__(self) -> str:
        state = "running" if self._running else "stopped"
        return f"<embroker Server {self.url} {state}, {len(self._clients)} connections>"

    # -- start and stop --------------------------------------------------------------------------

    def start(self) -> Server:
        """Start serving in a background thread; returns self."""
        if self._running:
            return self
        self._prepare()
        self._thread = threading.Thread(target=self._run, name=f"embroker:{self.port}",
                                         daemon=True)
        self._thread.start()
        return self

    def _prepare(self) -> None:
        self._running = True
        self._set_accepting(True)
        self._selector.register(self._wake_r, selectors.EVENT_READ, self._wake_r)

    def stop(self, timeout: float = 5.0) -> None:
        """Close every client connection with 320 CONNECTION_FORCED and free the port."""
        if self._running:
            self._running = False
            self._wake()
            if self._thread is not None and self._thread is not threading.current_thread():
                self._thread.join(timeout)
        else:
            self._close_listeners()
        with contextlib.suppress(ValueError):
            self.broker._on_blocked.remove(self._on_blocked)
        with contextlib.suppress(ValueError):
            self.broker._on_restart.remove(self._on_restart)
        with contextlib.suppress(ValueError):
            self.broker._servers.remove(self)

    @property
    def running(self) -> bool:
        """Whether the listener is serving."""
        return self._running

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def serve_forever(self) -> None:
        """Serve in the calling thread until :meth:`stop` (from a signal handler, say)."""
        self._prepare()
        self._thread = threading.current_thread()
        self._run()

    # -- the loop ----------------------------------------------------------------------------

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            self._wake_w.send(b"\0")

    def _run(self) -> None:
        self._loop_ident = threading.get_ident()
        next_tick = 0.0
        try:
            while self._running:
                try:
                    next_tick = self._turn(next_tick)
                except Exception as exc:  # a bug in the loop itself: keep it, keep serving
                    self._bug(exc, "the listener loop")
                    time.sleep(0.01)  # never spin on a bug that repeats
        except KeyboardInterrupt:  # Ctrl-C in serve_forever: a clean stop
            self._running = False
        finally:
            self._shutdown()

    def _turn(self, next_tick: float) -> float:
        """One turn of the loop: wait for sockets (or the next timer), serve what is ready."""
        now = time.monotonic()
        timeout = max(0.0, next_tick - now)
        clock = self.broker.clock
        with self.broker._lock:  # a test's thread may add or run timers meanwhile
            deadline = clock.next_deadline()
            clock_now = clock.monotonic()
        if deadline is not None:
            timeout = min(timeout, max(0.0, deadline - clock_now))
        if not self._accepting:
            timeout = min(timeout, max(0.0, self._accept_resumes - now))
        if self._stalled:
            timeout = min(timeout, max(0.0, min(c.stalled_until for c in self._stalled) - now))
        for key, mask in self._selector.select(timeout):
            data = key.data
            if data is None:
                self._accept(key.fileobj)  # type: ignore[arg-type]
            elif data is self._wake_r:
                with contextlib.suppress(BlockingIOError, OSError):
                    while self._wake_r.recv(4096):
                        pass
            else:
                if mask & selectors.EVENT_READ:
                    self._read(data)
                if mask & selectors.EVENT_WRITE:
                    self._dirty.add(data)
        now = time.monotonic()
        if not self._accepting and now >= self._accept_resumes:
            self._set_accepting(True)
        for client in [c for c in self._stalled if c.stalled_until <= now]:
            self._stalled.discard(client)  # the stall is over: write what it held
            self._dirty.add(client)
        if now >= next_tick:
            self._tick()
            next_tick = time.monotonic() + _TICK
        elif deadline is not None and clock.monotonic() >= deadline:
            self._run_timers()  # expiries fall due between heartbeat ticks
        self._flush()
        if self._calls:
            self._run_calls()
            self._flush()
        return next_tick

    # -- errors --------------------------------------------------------------------------------

    def _bug(self, exc: BaseException, where: str) -> None:
        self.errors.append(exc)
        log.error("unexpected error in %s: %s: %s", where, type(exc).__name__, exc,
                  exc_info=(type(exc), exc, exc.__traceback__))

    @contextlib.contextmanager
    def _isolated(self, client: _Client) -> Iterator[None]:
        """Run work for one connection: a bug closes that connection (541), nothing else."""
        try:
            yield
        except Exception as exc:
            self._bug(exc, f"the connection from {client.peer}")
            self._fail(client, exc)

    def _fail(self, client: _Client, exc: BaseException) -> None:
        # Tell the client why (541) if we still can, then let the flush close the socket.
        try:
            with self.broker._lock:
                client.conn.internal_error(InternalError(
                    f"internal error: {type(exc).__name__}: {exc}"))
            self._dirty.add(client)
        except Exception as again:  # the connection cannot even close: drop the socket
            self._bug(again, f"closing the connection from {client.peer}")
            self._drop(client)

    # -- accepting -----------------------------------------------------------------------------

    def _set_accepting(self, on: bool) -> None:
        if on == self._accepting:
            return
        for sock in self._listeners:
            if on:
                self._selector.register(sock, selectors.EVENT_READ, None)
            else:
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(sock)
        self._accepting = on

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                sock, address = listener.accept()
            except (BlockingIOError, InterruptedError):
                self._accept_backoff = _ACCEPT_BACKOFF
                return
            except OSError as exc:
                self._accept_failed(exc)
                return
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                peer = _peer_name(sock, address)
                client = _Client(sock, peer, functools.partial(
                    self._connection, amqp10_only=listener in self._amqp10_only))
                self._clients[sock.fileno()] = client
                self._selector.register(sock, selectors.EVENT_READ, client)
            except Exception as exc:  # a socket that died at once, or a bug: this one only
                self._bug(exc, "accepting a connection")
                sock.close()
                continue
            log.info("accepted connection from %s", peer)

    def _connection(self, client: _Client, *, amqp10_only: bool = False) -> SniffingConnection:
        def output_ready() -> None:
            # Called by the connection (under the broker lock) when it has something to send
            # that its own input did not cause: a delivery, a confirm, a cancel...
            self._dirty.add(client)
            if threading.get_ident() != self._loop_ident:
                self._wake()

        with self.broker._lock:
            return SniffingConnection(self.broker, peer=client.peer, on_output=output_ready,
                                      heartbeat=self.heartbeat,
                                      handshake_timeout=self.handshake_timeout,
                                      loopback=_over_loopback(client.sock),
                                      amqp10_only=amqp10_only)

    def _accept_failed(self, exc: OSError) -> None:
        if exc.errno not in _RESOURCE_ERRNOS:
            log.warning("accept failed: %s", exc)
            return
        # Out of file descriptors (or memory): stop accepting for a while rather than spin on
        # a listener that stays readable; the clients already connected go on.
        self._set_accepting(False)
        self._accept_resumes = time.monotonic() + self._accept_backoff
        self._accept_backoff = min(self._accept_backoff * 2, _ACCEPT_BACKOFF_MAX)
        self._accept_failures += 1
        now = time.monotonic()
        if now - self._accept_warned >= _WARN_INTERVAL:
            log.warning("cannot accept connections: %s (%d failure(s) since the last warning); "
                        "pausing accept for up to %.2fs", exc.strerror or exc,
                        self._accept_failures, _ACCEPT_BACKOFF_MAX)
            self._accept_warned = now
            self._accept_failures = 0

    # -- reading, timers, writing ----------------------------------------------------------------

    def _read(self, client: _Client) -> None:
        try:
            data = client.sock.recv(_READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        conn = client.conn
        with self._isolated(client), self.broker._lock:
            conn.receive_data(data)
        if conn.has_output or conn.blocked:
            self._dirty.add(client)

    def _run_timers(self) -> None:
        with self.broker._lock:
            self.broker.clock.run_due(on_error=self._timer_failed)
        self._mark_output()

    def _timer_failed(self, exc: Exception) -> None:
        self._bug(exc, "a timer")

    def _tick(self) -> None:
        with self.broker._lock:
            self.broker.clock.run_due(on_error=self._timer_failed)
            self.broker.check_resources()
        for client in list(self._clients.values()):
            with self._isolated(client), self.broker._lock:
                client.conn.tick()
        self._mark_output()

    def _mark_output(self) -> None:
        for client in self._clients.values():
            if client.conn.has_output:
                self._dirty.add(client)

    def _flush(self) -> None:
        while self._dirty:
            client = self._dirty.pop()
            if client.sock.fileno() < 0:
                continue
            with self._isolated(client):
                self._write(client)

    def _write(self, client: _Client) -> None:
        conn = client.conn
        if conn.failure is not None:  # sending it something failed, in another's work
            failure, conn.failure = conn.failure, None
            self._bug(failure, f"sending to the connection from {client.peer}")
            self._fail(client, failure)
        with self.broker._lock:
            data = conn.data_to_send()
        if data:
            client.wbuf += data
        stalled = client.stalled_until > time.monotonic()
        if client.wbuf and not stalled:
            try:
                sent = client.sock.send(client.wbuf)
                del client.wbuf[:sent]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                self._drop(client)
                return
        if conn.should_close and not client.wbuf:
            self._drop(client)
            return
        events = 0 if conn.blocked else selectors.EVENT_READ
        if client.wbuf and not stalled:
            events |= selectors.EVENT_WRITE
        if events != client.events:
            if not client.events:
                self._selector.register(client.sock, events, client)
            elif not events:
                self._selector.unregister(client.sock)
            else:
                self._selector.modify(client.sock, events, client)
            client.events = events

    def _drop(self, client: _Client) -> None:
        self._clients.pop(client.sock.fileno(), None)
        self._dirty.discard(client)
        self._stalled.discard(client)
        if client.events:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(client.sock)
            client.events = 0
        try:
            with self.broker._lock:
                client.conn.connection_lost()
        except Exception as exc:  # releasing its channels failed: still close the socket
            self._bug(exc, f"releasing the connection from {client.peer}")
        finally:
            client.sock.close()
        try:
            inner = client.conn.inner
            if isinstance(inner, Amqp091Connection):
                log.info("connection %s ended: %s", inner.describe(), inner.end_reason())
            else:
                reason = inner.close_reason
                log.info("AMQP 1.0 connection %s ended%s", _describe(client),
                         f": {reason}" if reason else "")
        except Exception as exc:  # describing it failed: say so, and go on
            self._bug(exc, f"logging the end of the connection from {client.peer}")

    # -- the broker's own events ---------------------------------------------------------------

    def _each_client(self, action: Callable[[_Client], None]) -> None:
        for client in list(self._clients.values()):
            with self._isolated(client):
                action(client)
            self._dirty.add(client)
        self._wake()

    def _on_blocked(self, blocked: bool, reason: str) -> None:
        # Called under the broker lock, from any thread.
        if blocked:
            self._each_client(lambda client: client.conn.publishers_blocked(reason))
        else:
            self._each_client(lambda client: client.conn.publishers_unblocked())

    def _on_restart(self) -> None:
        # Called under the broker lock, from any thread: every client is told the broker is
        # going down, as a RabbitMQ node that stops does.
        self._each_client(lambda client: client.conn.close(ConnectionForced(
            "broker forced connection closure with reason 'shutdown'")))

    def _shutdown(self) -> None:
        clients = list(self._clients.values())
        for client in clients:
            with self._isolated(client), self.broker._lock:
                client.conn.close(ConnectionForced(
                    "broker forced connection closure with reason 'shutdown'"))
                client.wbuf += client.conn.data_to_send()
        for client in clients:
            with contextlib.suppress(OSError):
                client.sock.setblocking(True)
                client.sock.settimeout(0.2)
                client.sock.sendall(client.wbuf)
            if client.sock.fileno() >= 0:
                self._drop(client)
        while self._calls:  # nobody will run them now
            call = self._calls.popleft()
            call.error = RuntimeError(f"{self!r} stopped")
            call.done.set()
        self._set_accepting(False)
        self._close_listeners()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    # -- work from other threads ------------------------------------------------------------------

    def _run_calls(self) -> None:
        while self._calls:
            call = self._calls.popleft()
            try:
                call.result = call.function()
            except Exception as exc:
                call.error = exc
            finally:
                call.done.set()

    def _on_loop(self, function: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Run ``function`` on the loop's thread (between two turns) and return its result.

        Raises:
            RuntimeError: the listener is not running.
            TimeoutError: the loop did not get to it in ``timeout`` seconds.
        """
        if threading.get_ident() == self._loop_ident:
            return function()
        if not self._running:
            raise RuntimeError(f"{self!r} is not running")
        call = _Call(function)
        self._calls.append(call)
        self._wake()
        if not call.done.wait(timeout):
            raise TimeoutError(f"the listener's loop did not answer within {timeout}s")
        if call.error is not None:
            raise call.error
        return call.result

    # -- quiescence ----------------------------------------------------------------------------

    def _settle_report(self, timeout: float) -> list[str]:
        """What this listener still has to do (empty when quiet), as seen from its own loop
        right after a turn: see :meth:`embroker.Broker.settle`."""
        try:
            reasons: list[str] = self._on_loop(self._busy, timeout)
        except RuntimeError:
            return []  # stopped meanwhile
        except TimeoutError:
            return [f"the listener on port {self.port} did not answer in time (its loop is busy)"]
        return reasons

    def _busy(self) -> list[str]:
        reasons = []
        for key, mask in self._selector.select(0):
            data = key.data
            if data is None:
                reasons.append("a client is waiting to be accepted")
            elif isinstance(data, _Client) and mask & selectors.EVENT_READ:
                reasons.append(f"input from {_describe(data)} not read yet")
        now = time.monotonic()
        for client in self._clients.values():
            if client.stalled_until > now:
                reasons.append(f"output to {_describe(client)} stalled by a fault for "
                               f"{client.stalled_until - now:.2f}s more")
            elif client.wbuf or client.conn.has_output:
                reasons.append(f"output to {_describe(client)} not written yet "
                               f"({len(client.wbuf)} byte(s) waiting)")
        return reasons

    # -- the connections, and faults on them ---------------------------------------------------

    @property
    def connections(self) -> list[ClientConnection]:
        """The client connections being served, oldest first, with what each client said of
        itself (``client_properties``, its ``connection_name``): what a test picks a
        connection from to inject a fault (:class:`ClientConnection`)."""
        with self.broker._lock:
            return [ClientConnection(self, client) for client in list(self._clients.values())]

    def connection(self, name: str | None = None) -> ClientConnection:
        """The connection whose client named itself ``name`` (``connection_name``), or whose
        peer address is ``name``; with no name, the only open one.

        Raises:
            LookupError: no such connection, or several when no name was given.
        """
        found = self.connections
        if name is None:
            live = [c for c in found if c.is_open]
            if len(live) == 1:
                return live[0]
            raise LookupError(f"{len(live)} open connections: name one of {_names(live)}")
        for connection in found:
            if name in (connection.connection_name, connection.peer):
                return connection
        raise LookupError(f"no connection named {name!r}; the connections are {_names(found)}")

    def protocol_connections(self) -> Iterator[Amqp091Connection | Amqp10Connection]:
        """The sans-IO connections being served (for inspection): 0-9-1 and 1.0 ones."""
        return iter([c.conn.inner for c in self._clients.values()])

    def _kill(self, client: _Client, *, flush: bool = False, reset: bool = False,
              reason: str = "dropped by a test (embroker.faults)") -> None:
        # Runs on the loop's thread: the socket goes without a connection.close.
        if client.sock.fileno() < 0 or self._clients.get(client.sock.fileno()) is not client:
            return
        if flush:
            with self.broker._lock:
                client.wbuf += client.conn.data_to_send()
            with contextlib.suppress(OSError):
                client.sock.setblocking(True)
                client.sock.settimeout(0.2)
                client.sock.sendall(client.wbuf)
        client.wbuf.clear()
        if reset:
            with contextlib.suppress(OSError):
                client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
        inner = client.conn.inner
        if isinstance(inner, Amqp091Connection) and inner.close_reason is None:
            inner.close_reason = ConnectionForced(reason)
        self._drop(client)

    def _stall(self, client: _Client, seconds: float) -> None:
        client.stalled_until = time.monotonic() + seconds
        self._stalled.add(client)

    def _drop_on_delivery(self, channel: ModelChannel, _message: Message, *,
                          only: ClientConnection | None) -> None:
        # Called by the model (under the lock, on any thread) as it delivers a matching
        # message: drop that connection once the delivery is written.
        for client in list(self._clients.values()):
            if client.conn.inner.model is channel.connection and (
                    only is None or only._client is client):
                self._calls.append(_Call(functools.partial(self._kill, client, flush=True,
                                                           reason="dropped by a test after a "
                                                                  "delivery (embroker.faults)")))
                self._wake()
                return

    def drop_on_delivery(self, predicate: Callable[[Message], object], *, times: int = 1,
                         connection: ClientConnection | None = None) -> DeliveryFault:
        """Drop the connection a message matching ``predicate`` is delivered to (basic.deliver
        or get-ok), right after writing that delivery, with no connection.close: a client
        that crashes while it processes a message. At most ``times`` times; only on
        ``connection`` if given. Returns the armed fault (``broker._delivery_faults``)."""
        fault = DeliveryFault(predicate, functools.partial(self._drop_on_delivery,
                                                           only=connection), times)
        with self.broker._lock:
            self.broker._delivery_faults.append(fault)
        return fault


def _describe(client: _Client) -> str:
    name = _client_properties(client).get("connection_name")
    return f"{client.peer} ({name!r})" if isinstance(name, str) else client.peer


def _client_properties(client: _Client) -> dict[str, Any]:
    # What the client said of itself: 0-9-1's client properties; a 1.0 client's container id.
    inner = client.conn.inner
    if isinstance(inner, Amqp091Connection):
        return inner.client_properties
    return {"container_id": inner.container_id} if inner.container_id else {}


def _names(connections: list[ClientConnection]) -> list[str]:
    return [c.connection_name or c.peer for c in connections]


@final
class ClientConnection:
    """A client connection a listener serves, as a test sees it (``server.connections``), with
    the faults a test can inject into it. Each fault runs on the listener's thread and has
    happened when the call returns.

    Attributes:
        peer: the client's address (``"127.0.0.1:53211"``).
        client_properties: what the client said of itself in connection.start-ok.
        connection_name: the name the client gave (``client_properties["connection_name"]``).
    """

    __slots__ = ("_client", "_server", "client_properties", "connection_name", "peer")

    def __init__(self, server: Server, client: _Client) -> None:
        self._server = server
        self._client = client
        self.peer = client.peer
        self.client_properties: dict[str, Any] = dict(_client_properties(client))
        name = self.client_properties.get("connection_name")
        self.connection_name: str | None = name if isinstance(name, str) else None

    @property
    def product(self) -> str | None:
        """The client library (``client_properties["product"]``: ``"Pika Python Client
        Library"``...)."""
        product = self.client_properties.get("product")
        return product if isinstance(product, str) else None

    @property
    def protocol(self) -> str:
        """``"AMQP 0-9-1"`` or ``"AMQP 1.0"``."""
        return "AMQP 1.0" if isinstance(self._client.conn.inner, Amqp10Connection) else \
            "AMQP 0-9-1"

    @property
    def user(self) -> str:
        return self._client.conn.inner.user

    @property
    def model(self) -> ModelConnection | None:
        """The broker-side connection (``None`` until connection.open / open)."""
        return self._client.conn.inner.model

    @property
    def vhost(self) -> str | None:
        model = self._client.conn.inner.model
        return model.vhost.name if model is not None else None

    @property
    def state(self) -> enum.Enum:
        """Where the connection is: ``OPEN``, or a handshake or closing step (the protocol's
        ``ConnectionState``)."""
        return self._client.conn.inner.state

    @property
    def is_open(self) -> bool:
        inner = self._client.conn.inner
        return inner.model is not None and not inner.should_close \
            and self._client.sock.fileno() >= 0

    @property
    def channels(self) -> list[int]:
        """The numbers of its open channels (an AMQP 1.0 connection's sessions)."""
        inner = self._client.conn.inner
        with self._server.broker._lock:
            return sorted(inner.channels if isinstance(inner, Amqp091Connection)
                          else inner.sessions)

    def __repr__(self) -> str:
        name = f" {self.connection_name!r}" if self.connection_name else ""
        return (f"<ClientConnection{name} from {self.peer} ({self.product or 'unknown client'}), "
                f"{self.state.value}>")

    # -- faults --------------------------------------------------------------------------------

    def kill(self, *, reset: bool = False) -> None:
        """Close the socket abruptly, with no connection.close (as a broker that crashes, or a
        network that fails): unacknowledged messages go back to their queues. ``reset`` sends
        a TCP RST instead of a FIN."""
        self._server._on_loop(functools.partial(self._server._kill, self._client, reset=reset))

    def close(self, reply_code: int = 320,
              reply_text: str = "broker forced connection closure with reason 'shutdown'",
              ) -> None:
        """Close the connection from the broker's side with connection.close carrying
        ``reply_code`` (a connection exception: 320, 501-541) and ``reply_text`` (the text
        after the reply name: ``"CONNECTION_FORCED - <reply_text>"``)."""
        error = error_for_code(reply_code, reply_text)
        if not isinstance(error, ConnectionException):
            raise ValueError(f"{reply_code} is a channel exception: use close_channel()")

        def close() -> None:
            with self._server.broker._lock:
                self._client.conn.close(error)
            self._server._dirty.add(self._client)
        self._server._on_loop(close)

    def close_channel(self, channel: int, reply_code: int = 406,
                      reply_text: str = "closed by a test (embroker.faults)") -> None:
        """Close one channel from the broker's side with channel.close carrying ``reply_code``
        (a channel exception: 403, 404, 405, 406...) and ``reply_text``; its unacknowledged
        messages go back to their queues.

        Raises:
            LookupError: the connection has no such open channel.
        """
        error = error_for_code(reply_code, reply_text)
        if not isinstance(error, ChannelException):
            raise ValueError(f"{reply_code} is a connection exception: use close()")

        inner = self._client.conn.inner
        if not isinstance(inner, Amqp091Connection):
            raise TypeError(f"{self!r} speaks AMQP 1.0: it has sessions, not channels")

        def close() -> None:
            with self._server.broker._lock:
                if channel not in inner.channels:
                    raise LookupError(f"no open channel {channel} on {self!r}; its channels "
                                      f"are {sorted(inner.channels)}")
                inner.close_channel(channel, error)
            self._server._dirty.add(self._client)
        self._server._on_loop(close)

    def stall(self, seconds: float) -> None:
        """Write nothing to this client for ``seconds`` (real time): it stops hearing from the
        broker, heartbeats included, so a client with heartbeats shorter than that times out.
        What was held is written afterwards."""
        self._server._on_loop(functools.partial(self._server._stall, self._client, seconds))
