"""The loopback listener: sockets and one selector loop thread, the only I/O in embroker.

Each accepted socket gets a sans-IO connection: :class:`~embroker.amqp091.ServerConnection` or,
when the client's protocol header says AMQP 1.0, :class:`~embroker.amqp10.ServerConnection`
(one port serves both, as RabbitMQ's; ``amqp10_port`` adds a port for AMQP 1.0 alone). The loop reads
what arrives, feeds it to the connection under the broker's lock, and writes what the
connections have to send: its own replies, and deliveries that another connection (or a test's
in-process client, from another thread) caused. Nothing a client sends can stop the loop: an
unexpected error closes that one connection with 541 INTERNAL_ERROR and is kept in
:attr:`Server.errors` for the test to see.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import selectors
import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, final

from ._sniff import SniffingConnection
from .errors import ConnectionForced, InternalError

if TYPE_CHECKING:
    from .model import Broker

__all__ = ["PortInUse", "Server"]

log = logging.getLogger("embroker.server")

_READ_SIZE = 262_144
_TICK = 0.5  # at most this long between looks at heartbeats and timers


class PortInUse(OSError):
    """The port asked for is taken (another broker, perhaps RabbitMQ, holds it)."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(errno.EADDRINUSE, f"port {port} on {host} is in use")
        self.host = host
        self.port = port

    def __str__(self) -> str:
        return f"port {self.port} on {self.host} is in use"


class _Client:
    __slots__ = ("conn", "events", "peer", "sock", "wbuf")

    def __init__(self, sock: socket.socket, conn: SniffingConnection, peer: str) -> None:
        self.sock = sock
        self.conn = conn
        self.peer = peer
        self.wbuf = bytearray()
        self.events = selectors.EVENT_READ


def _addresses(host: str) -> list[tuple[socket.AddressFamily, str]]:
    if host == "localhost":
        families = [(socket.AF_INET, "127.0.0.1")]
        if socket.has_ipv6:
            families.append((socket.AF_INET6, "::1"))
        return families
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return [(family, host)]


@final
class Server:
    """A listener that lets unmodified AMQP 0-9-1 clients talk to ``broker``.

    Use :meth:`Broker.serve <embroker.Broker.serve>` to make one. ``host="localhost"`` listens
    on both 127.0.0.1 and ::1 (clients may try either); ``port=0`` takes any free port.

    Raises:
        PortInUse: the port is taken.
    """

    def __init__(self, broker: Broker, host: str = "127.0.0.1", port: int = 0, *,
                 heartbeat: int = 60, amqp10_port: int | None = None) -> None:
        self.broker = broker
        self.host = host
        self.heartbeat = heartbeat
        #: Unexpected exceptions raised while serving (bugs); tests should find it empty.
        self.errors: list[BaseException] = []
        self._clients: dict[int, _Client] = {}
        self._dirty: set[_Client] = set()
        self._selector = selectors.DefaultSelector()
        self._listeners: list[socket.socket] = []
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._running = False
        self._thread: threading.Thread | None = None
        self._loop_ident: int | None = None
        self.port = self._listen(host, port)
        shared = len(self._listeners)
        #: The port that serves AMQP 1.0 alone (``None`` unless asked for).
        self.amqp10_port = self._listen(host, amqp10_port) if amqp10_port is not None else None
        self._amqp10_only = set(self._listeners[shared:])
        broker.on_blocked.append(self._on_blocked)
        broker.on_restart.append(self._on_restart)

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
        self._running = True
        for sock in self._listeners:
            self._selector.register(sock, selectors.EVENT_READ, None)
        self._selector.register(self._wake_r, selectors.EVENT_READ, self._wake_r)
        self._thread = threading.Thread(target=self._run, name=f"embroker:{self.port}",
                                         daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Close every client connection with 320 CONNECTION_FORCED and free the port."""
        if not self._running:
            self._close_listeners()
            return
        self._running = False
        self._wake()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        with contextlib.suppress(ValueError):
            self.broker.on_blocked.remove(self._on_blocked)
        with contextlib.suppress(ValueError):
            self.broker.on_restart.remove(self._on_restart)

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def serve_forever(self) -> None:
        """Serve in the calling thread until :meth:`stop` (from a signal handler, say)."""
        self._running = True
        for sock in self._listeners:
            self._selector.register(sock, selectors.EVENT_READ, None)
        self._selector.register(self._wake_r, selectors.EVENT_READ, self._wake_r)
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
                now = time.monotonic()
                timeout = max(0.0, next_tick - now)
                deadline = self.broker.clock.next_deadline()
                if deadline is not None:
                    timeout = min(timeout, max(0.0, deadline - self.broker.clock.monotonic()))
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
                if time.monotonic() >= next_tick:
                    self._tick()
                    next_tick = time.monotonic() + _TICK
                elif deadline is not None and self.broker.clock.monotonic() >= deadline:
                    self._run_timers()  # expiries fall due between heartbeat ticks
                self._flush()
        except KeyboardInterrupt:  # Ctrl-C in serve_forever: a clean stop
            self._running = False
        except BaseException as exc:  # pragma: no cover - a bug in the loop itself
            self.errors.append(exc)
            log.exception("the listener loop failed")
        finally:
            self._shutdown()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                sock, address = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. too many open files: keep serving the others
                log.warning("accept failed: %s", exc)
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            peer = f"{address[0]}:{address[1]}" if sock.family == socket.AF_INET else \
                f"[{address[0]}]:{address[1]}"
            client = _Client(sock, None, peer)  # type: ignore[arg-type]
            client.conn = SniffingConnection(self.broker, peer=peer,
                                             on_output=functools.partial(self._output, client),
                                             heartbeat=self.heartbeat,
                                             amqp10_only=listener in self._amqp10_only)
            self._clients[sock.fileno()] = client
            self._selector.register(sock, selectors.EVENT_READ, client)
            log.info("accepted connection from %s", peer)

    def _output(self, client: _Client) -> None:
        # Called by a connection (under the broker lock) when it has something to send that its
        # own input did not cause: a delivery, a confirm, a cancel...
        self._dirty.add(client)
        if threading.get_ident() != self._loop_ident:
            self._wake()

    def _read(self, client: _Client) -> None:
        try:
            data = client.sock.recv(_READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        conn = client.conn
        try:
            with self.broker.lock:
                conn.receive_data(data)
        except Exception as exc:  # a bug: keep it for the test, close only this connection
            self.errors.append(exc)
            log.exception("error while handling data from %s", client.peer)
            with self.broker.lock:
                conn.close(InternalError(f"internal error: {type(exc).__name__}: {exc}"))
        if not data:
            log.info("connection from %s closed by the client", client.peer)
        if conn.has_output or conn.blocked:
            self._dirty.add(client)

    def _run_timers(self) -> None:
        with self.broker.lock:
            self.broker.clock.run_due()
            for client in self._clients.values():
                if client.conn.has_output:
                    self._dirty.add(client)

    def _tick(self) -> None:
        with self.broker.lock:
            self.broker.clock.run_due()
            for client in list(self._clients.values()):
                client.conn.tick()
                if client.conn.has_output:
                    self._dirty.add(client)

    def _flush(self) -> None:
        while self._dirty:
            client = self._dirty.pop()
            if client.sock.fileno() < 0:
                continue
            conn = client.conn
            with self.broker.lock:
                data = conn.data_to_send()
            if data:
                client.wbuf += data
            if client.wbuf:
                try:
                    sent = client.sock.send(client.wbuf)
                    del client.wbuf[:sent]
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    self._drop(client)
                    continue
            if conn.should_close and not client.wbuf:
                self._drop(client)
                continue
            events = 0 if conn.blocked else selectors.EVENT_READ
            if client.wbuf:
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
        if client.events:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(client.sock)
        with self.broker.lock:
            client.conn.connection_lost()
        client.sock.close()
        log.info("connection from %s closed", client.peer)

    def _on_blocked(self, blocked: bool, reason: str) -> None:
        for client in list(self._clients.values()):
            if blocked:
                client.conn.publishers_blocked(reason)
            else:
                client.conn.publishers_unblocked()
                self._dirty.add(client)
        self._wake()

    def _on_restart(self) -> None:
        # Called under the broker lock, from any thread: every client is told the broker is
        # going down, as a RabbitMQ node that stops does.
        for client in list(self._clients.values()):
            client.conn.close(ConnectionForced(
                "broker forced connection closure with reason 'shutdown'"))
            self._dirty.add(client)
        self._wake()

    def _shutdown(self) -> None:
        clients = list(self._clients.values())
        with self.broker.lock:
            for client in clients:
                client.conn.close(ConnectionForced(
                    "broker forced connection closure with reason 'shutdown'"))
        for client in clients:
            with self.broker.lock:
                client.wbuf += client.conn.data_to_send()
            with contextlib.suppress(OSError):
                client.sock.setblocking(True)
                client.sock.settimeout(0.2)
                client.sock.sendall(client.wbuf)
            self._drop(client)
        self._close_listeners()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def connections(self) -> Iterator[object]:
        """The sans-IO connections being served (for inspection): 0-9-1 and 1.0 ones."""
        return iter([c.conn.inner for c in self._clients.values() if c.conn.inner is not None])
