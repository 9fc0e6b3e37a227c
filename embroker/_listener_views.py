"""The connections a listener serves, as tests and the management API see them, and the faults
a test injects into them (:class:`embroker.server.Server`'s fourth role): ``connections``,
``wire_connections``, ``close_connection``, what is left to do (``settle_report``), and
:class:`ClientConnection`, each fault run on the loop's thread, which owns the socket.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import selectors
import socket
import struct
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, cast, final

from ._listener import _Client, _Port
from ._listener_loop import _describe
from ._tls import TLSSocket
from ._transport import (
    BrokerConnection,
    CarriedConnection,
)
from .errors import (
    ConnectionException,
)

if TYPE_CHECKING:
    from .model import Connection as ModelConnection
    from .server import Server



class _Views:
    """The listings and faults of :class:`~embroker.server.Server` (a role of it: Server is the
    one class)."""

    if TYPE_CHECKING:  # (what it shares with the other roles: Server sets it up)
        port: int
        _locked: AbstractContextManager[object]
        _running: bool
        _selector: selectors.BaseSelector
        _clients: dict[int, _Client]
        _http_clients: dict[int, _Client]
        _stalled: set[_Client]

        def _on_loop(self, function: Callable[[], Any], timeout: float = 5.0) -> Any: ...
        def _has_output(self, client: _Client) -> None: ...
        def _drop(self, client: _Client) -> None: ...

    # -- quiescence ----------------------------------------------------------------------------

    def settle_report(self, timeout: float) -> list[str]:
        """What this listener still has to do (empty when quiet), as seen from its own loop
        right after a turn: see :meth:`embroker.Broker.settle`."""
        if not self._running:
            return []
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
            if type(data) is _Port:
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
        server = cast("Server", self)  # (this role is one of the Server's)
        with self._locked:
            return [ClientConnection(server, client)
                    for client in [*self._clients.values(), *self._http_clients.values()]
                    if client.listed]

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

    def protocol_connections(self) -> Iterator[BrokerConnection]:
        """The sans-IO connections being served (for inspection): the listed broker
        connections' (0-9-1 and 1.0 ones...)."""
        with self._locked:
            return iter([c.protocol for c in [*self._clients.values(),
                                              *self._http_clients.values()] if c.listed])

    def wire_connections(self) -> dict[int, WireConnection]:
        """The broker connections this listener carries (AMQP and stream), by ``id`` of their
        model connection (:attr:`Broker.connections <embroker.Broker.connections>`' values),
        as the management API shows them. Call it holding the broker still
        (``broker.locked()``)."""
        found: dict[int, WireConnection] = {}
        for client, conn, model in self._carried():
            found[id(model)] = WireConnection(
                client.peer, _sockname(client.sock), client.connected_at, model.kind.protocol,
                getattr(conn, "channel_max", 0), getattr(conn, "frame_max", 0),
                getattr(conn, "heartbeat", 0), bool(getattr(conn, "blocked", False)))
        return found

    def close_connection(self, connection: ModelConnection, error: ConnectionException) -> bool:
        """Close ``connection`` with ``error`` (connection.close, or the stream protocol's
        Close), if this listener carries it; whether it did. Call it holding the broker still;
        the close is written by the loop."""
        for client, _conn, model in self._carried():
            if model is connection:
                client.conn.close(error)
                self._has_output(client)
                return True
        return False

    def _carried(self) -> Iterator[tuple[_Client, Any, ModelConnection]]:
        """The clients whose connection is a broker connection (AMQP and stream, opened), with
        their protocol connection and its model connection; not HTTP clients, not handshakes."""
        for client in [*self._clients.values(), *self._http_clients.values()]:
            if not client.broker:
                continue
            conn: BrokerConnection = client.protocol
            model = conn.model
            if model is not None:
                yield client, conn, model

    def _drop_if_served(self, client: _Client) -> None:
        # On the loop's thread: drop a client another thread failed, unless it went meanwhile.
        if self._served(client):
            self._drop(client)

    def _served(self, client: _Client) -> bool:
        # Whether ``client`` is still served (in its table: see "Threads" in embroker.server).
        table = self._clients if client.locked else self._http_clients
        return client.sock.fileno() >= 0 and table.get(client.sock.fileno()) is client

    def _kill(self, client: _Client, *, flush: bool = False, reset: bool = False,
              reason: str = "dropped by a test (embroker.faults)") -> None:
        # Runs on the loop's thread: the socket goes without a connection.close.
        if not self._served(client):
            return
        if flush:
            with self._locked:
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
        if client.broker:
            client.protocol.killed(reason)
        self._drop(client)

    def _stall(self, client: _Client, seconds: float) -> None:
        client.stalled_until = time.monotonic() + seconds
        self._stalled.add(client)



@final
@dataclasses.dataclass(frozen=True, slots=True)
class WireConnection:
    """A broker connection as a listener carries it (:meth:`Server.wire_connections`)."""

    #: The client's address (``"127.0.0.1:53211"``) and the listener's that it reached.
    peer: str
    local: str
    #: When it connected (``time.time()``).
    connected_at: float
    #: ``"AMQP 0-9-1"``, ``"AMQP 1-0"`` (RabbitMQ's spelling) or ``"stream"``.
    protocol: str
    channel_max: int
    frame_max: int
    #: The heartbeat interval agreed, in seconds (0: none).
    heartbeat: int
    #: Its publishers are blocked (a resource alarm).
    blocked: bool



def _sockname(sock: socket.socket | TLSSocket) -> str:
    try:
        name = sock.getsockname()
    except OSError:
        return ":0"
    return f"{name[0]}:{name[1]}"



def _names(connections: list[ClientConnection]) -> list[str]:
    return [c.connection_name or c.peer for c in connections]


@final
class _SocketCarrier:
    """How the listener carries one broker connection (embroker._transport.Carrier): a fault
    runs on the loop's thread, which owns the socket."""

    __slots__ = ("_client", "_server")

    def __init__(self, server: Server, client: _Client) -> None:
        self._server = server
        self._client = client

    @property
    def peer(self) -> str:
        return self._client.peer

    @property
    def protocol(self) -> BrokerConnection:
        inner: BrokerConnection = self._client.protocol
        return inner

    def locked(self) -> AbstractContextManager[object]:
        return self._server._locked

    def alive(self) -> bool:
        return self._client.sock.fileno() >= 0

    def act(self, action: Callable[[], None]) -> None:
        server, client = self._server, self._client

        def run() -> None:
            with server._locked:
                action()
            server._dirty.add(client)
        server._on_loop(run)

    def kill(self, reset: bool) -> None:
        self._server._on_loop(functools.partial(self._server._kill, self._client, reset=reset))

    def stall(self, seconds: float) -> None:
        self._server._on_loop(functools.partial(self._server._stall, self._client, seconds))

    def drop_after_delivery(self) -> None:
        # (under the broker's lock, on any thread: the loop writes the delivery, then drops)
        server = self._server
        server._later(functools.partial(
            server._kill, self._client, flush=True,
            reason="dropped by a test after a delivery (embroker.faults)"))


@final
class ClientConnection(CarriedConnection):
    """A client connection a listener serves, as a test sees it (``server.connections``), with
    the faults a test can inject into it (:class:`~embroker._transport.CarriedConnection`).
    Each fault runs on the listener's thread and has happened when the call returns; ``stall``
    counts real time."""

    __slots__ = ("_client",)

    def __init__(self, server: Server, client: _Client) -> None:
        super().__init__(_SocketCarrier(server, client))
