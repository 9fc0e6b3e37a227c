"""The loopback listener: sockets and one selector loop thread, the only I/O in embroker.

Each accepted socket gets the sans-IO connection its port's kind makes
(:class:`~embroker._transport.PortKind`, registered: an AMQP port's is 0-9-1's, or 1.0's when the
client's protocol header says AMQP 1.0, as RabbitMQ's; ``amqp10_port`` adds a port for AMQP 1.0
alone; the management API's, the stream protocol's, a registered protocol's). The loop reads
what arrives, feeds it to the connection (under the broker's lock for a kind that says so), and
writes what the
connections have to send: its own replies, and deliveries that another connection (or a test's
in-process client, from another thread) caused.

Nothing a client sends, and no bug, stops the loop:

- an unexpected error while handling one connection (reading, writing, its heartbeats, a
  delivery to it) closes that connection with 541 INTERNAL_ERROR; it is logged with its
  traceback and kept in :attr:`Server.errors` for the test to see (the last 20, with a count of
  them all: a bug that repeats cannot fill the memory);
- an unexpected error in a timer (a queue's expiry...) is logged and kept the same way, and the
  other timers still run;
- sockets that do not finish the handshake in time are closed (RabbitMQ's 10 s), and when
  ``accept`` fails on a port (too many open files) that port backs off instead of spinning,
  saying so once per interval, while the other ports go on accepting;
- each port may hold at most so many connections (``max_connections``): one at its limit stops
  accepting (the kernel queues the newcomers) until one of its connections closes, and the
  other ports go on. The management and stream ports have a limit by default, so that an HTTP
  client (the one a web page can drive) or a stream client that never logs in cannot take
  every descriptor and stop AMQP clients from connecting (:func:`default_max_connections`).

Roles
-----
:class:`Server` is the one public class, made of a role per module beside this one (mixins: the
roles share the listener's state, and the loop's hot path reads it with no extra hop):

- :mod:`embroker._listener`: the ports (bind, listen, accept, each port's limit and the budget
  the strangers' ports share, ports opened and closed on a running node, the control port);
- :mod:`embroker._listener_loop`: the selector loop (each turn, reading and writing the
  clients, dropping them, timers and heartbeats, work other threads hand it);
- :mod:`embroker._listener_node`: the application (``stop_app``, ``start_app``, ``reset``) and
  the resource alarms, and what the broker tells its transports;
- :mod:`embroker._listener_views`: the connections as tests and the management API see them,
  and the faults a test injects.

This module holds the settings, the ports' numbers and URLs, starting and stopping.

Threads
-------
The loop's thread owns the sockets, the selector and the listener's own tables; other threads
(a test's, an application's in-process client) reach them in three ways only:

- the table of clients (``Server._clients``) changes only on the loop's thread, and only under
  the broker's lock: the loop reads it freely, any other thread under the lock (as
  :attr:`Server.connections` and the broker's callbacks, which run under it, do), so a client
  leaves the table at the same moment as its connection leaves the broker;
- the clients with output to write (``_dirty``) and those a fault stalls (``_stalled``) are the
  loop's alone: another thread hands a client with output over through ``_handoff`` (a deque,
  whose ``append`` and ``popleft`` are thread-safe) and wakes the loop;
- any other work (a fault, dropping a connection, settle's questions) is queued on ``_calls``
  and runs on the loop's thread between two turns.
"""

from __future__ import annotations

import logging
import os
import selectors
import socket
import ssl
import threading
import traceback
from collections import deque
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar, final, overload

from ._batching import BatchingPolicy
from ._listener import (
    _Budget,
    _Client,
    _Listener,
    _Port,
    default_max_connections,
    stranger_budget,
)
from ._listener_loop import _READ_SIZE, _Call, _Loop
from ._listener_node import (
    APP_RUNNING,
    DEFAULT_DISK_FREE_LIMIT,
    DEFAULT_VM_MEMORY_HIGH_WATERMARK,
    MEMORY_CHECK_INTERVAL,
    AppRunning,
    _Node,
    memory_used,
    total_memory,
)
from ._listener_views import ClientConnection, WireConnection, _Views
from ._transport import (
    PORT_KINDS,
    PortKind,
    port_kind,
)
from .errors import (
    PortInUse,
    add_note,
)
from .tls import TLSOptions, server_context

if TYPE_CHECKING:
    from .management import ManagementAPI
    from .management._http import HostPolicy, Request, Response, Work
    from .model import Broker, Node

__all__ = ["APP_RUNNING", "DEFAULT_DISK_FREE_LIMIT", "DEFAULT_VM_MEMORY_HIGH_WATERMARK",
           "ERRORS_KEPT", "MEMORY_CHECK_INTERVAL", "AppRunning", "ClientConnection", "ErrorLog",
           "NodeServers", "PortInUse", "Server", "WireConnection", "default_max_connections",
           "memory_used", "node_ports", "stranger_budget", "total_memory"]

log = logging.getLogger("embroker.server")

#: What AMQP 0-9-1's connection.tune offers by default (RabbitMQ's ``frame_max`` and
#: ``channel_max``: embroker.amqp091's FRAME_MAX and CHANNEL_MAX, pinned equal by a test), and
#: the largest frame_max its field carries.
FRAME_MAX = 131_072
CHANNEL_MAX = 2047
FRAME_MAX_LIMIT = 4_294_967_295


#: How many of its unexpected errors a listener keeps (the most recent; :class:`ErrorLog`).
ERRORS_KEPT = 20
#: How the note on a kept error begins.
_NOTE = "(raised on embroker's listener thread, in "


def _without_tracebacks(exc: BaseException) -> None:
    """Let go of the tracebacks of ``exc`` and of the exceptions it chains to: their frames,
    and everything those frames referred to."""
    seen: set[int] = set()
    pending = [exc]
    while pending:
        error = pending.pop()
        if id(error) in seen:
            continue
        seen.add(id(error))
        error.__traceback__ = None
        pending.extend(e for e in (error.__cause__, error.__context__) if e is not None)
        pending.extend(e for e in getattr(error, "exceptions", ()) if isinstance(e, BaseException))


@final
class ErrorLog(Sequence[BaseException]):
    """The unexpected exceptions a listener met (bugs in embroker): ``server.errors``.

    Bounded, so that a bug that repeats cannot fill the memory: the last :attr:`keep` (20)
    exceptions are kept, oldest first, and :attr:`total` counts them all (:attr:`dropped`: how
    many were let go). A kept exception holds no traceback, so no frame (and nothing a frame
    referred to) stays alive; what its traceback said is kept as text (:meth:`traceback`) and,
    on Python 3.11 and later, as a note on the exception, shown wherever it is printed (as the
    cause of :func:`embroker.testing.check_server`'s AssertionError, say).

    A read-only sequence that compares equal to a list of the same exceptions
    (``assert server.errors == []``); every read is taken under the broker's lock, so it is safe
    from any thread. :meth:`clear` forgets them (a test that provoked a bug on purpose).
    """

    __hash__: ClassVar[None]  # type: ignore[assignment]

    def __init__(self, lock: AbstractContextManager[object], keep: int = ERRORS_KEPT) -> None:
        self._guard = lock
        #: How many exceptions are kept (the most recent).
        self.keep = keep
        self._kept: deque[tuple[BaseException, str]] = deque(maxlen=keep)
        #: How many exceptions the listener met, kept or not (since the last :meth:`clear`).
        self.total = 0

    def record(self, exc: BaseException, where: str) -> str:
        """Keep ``exc``, met in ``where`` (``"a timer"``...), without its traceback; returns its
        frames as text (for the log, which writes the message itself: escaped, as it may
        quote a client)."""
        described = traceback.TracebackException.from_exception(exc)
        lines = list(described.format())
        only = list(described.format_exception_only())
        stack = lines[:-len(only)] if only and lines[-len(only):] == only else lines
        frames = "".join(traceback.format_tb(exc.__traceback__))
        _without_tracebacks(exc)
        notes = getattr(exc, "__notes__", None)
        if not any(isinstance(n, str) and n.startswith(_NOTE) for n in notes or ()):
            note = f"{_NOTE}{where})\n" + "".join(stack).rstrip()
            add_note(exc, note)
        with self._guard:
            self._kept.append((exc, "".join(stack)))
            self.total += 1
        return frames

    @property
    def dropped(self) -> int:
        """How many exceptions were met but are not kept (older than the last :attr:`keep`)."""
        with self._guard:
            return self.total - len(self._kept)

    def clear(self) -> None:
        """Forget the exceptions, and the count."""
        with self._guard:
            self._kept.clear()
            self.total = 0

    def traceback(self, index: int = -1) -> str:
        """The traceback of the kept exception at ``index``, as text (the newest by default)."""
        with self._guard:
            return self._kept[index][1]

    def __len__(self) -> int:
        return len(self._kept)

    @overload
    def __getitem__(self, index: int) -> BaseException: ...

    @overload
    def __getitem__(self, index: slice) -> list[BaseException]: ...

    def __getitem__(self, index: int | slice) -> BaseException | list[BaseException]:
        with self._guard:
            if isinstance(index, slice):
                return [exc for exc, _text in list(self._kept)[index]]
            return self._kept[index][0]

    def __iter__(self) -> Iterator[BaseException]:
        with self._guard:
            return iter([exc for exc, _text in self._kept])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ErrorLog):
            return list(self) == list(other)
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        with self._guard:
            kept = [exc for exc, _text in self._kept]
            dropped = self.total - len(kept)
        return repr(kept) + (f" (and {dropped} earlier not kept)" if dropped else "")



def _served_node(broker: Broker, node: Node | str | None) -> Node:
    """The node of ``broker`` that ``node`` names (the first for ``None``).

    Raises:
        ValueError: no such node in ``broker``'s cluster.
    """
    if node is None:
        return broker.nodes[0]
    if not isinstance(node, str) and node in broker.nodes:
        return node
    try:
        return broker.node_named(str(node))
    except KeyError:
        raise ValueError(f"node: {node!s} is no node of this broker; its nodes are "
                         f"{', '.join(n.name for n in broker.nodes)}") from None


@final
class Server(_Views, _Node, _Listener, _Loop):
    """A listener that lets unmodified AMQP 0-9-1 clients talk to ``broker``.

    Use :meth:`Broker.serve <embroker.Broker.serve>` to make one. ``host="localhost"`` listens
    on both 127.0.0.1 and ::1 (clients may try either); ``port=0`` takes any free port.

    Args:
        broker: the broker to serve.
        host, port: where to listen.
        heartbeat: the heartbeat interval offered to clients, in seconds (0: none).
        frame_max, channel_max: the largest frame (bytes) and the most channels AMQP 0-9-1's
            connection.tune offers (RabbitMQ's ``frame_max`` and ``channel_max``: 131072 and
            2047 by default; 0 means no limit; at most what the method's fields carry,
            4294967295 and 65535).
        handshake_timeout: how long a socket may take from connecting to connection.open
            (RabbitMQ's ``handshake_timeout``, 10 s).
        amqp10_port: also listen on this port for AMQP 1.0 alone (0: any free port).
        amqp10: serve AMQP 1.0 on the AMQP ports too (sniffed from the protocol header), as
            RabbitMQ 3.10 with its ``rabbitmq_amqp1_0`` plugin (``rabbitmq-server`` takes it
            from the enabled plugins); ``False``: a 1.0 client gets the 0-9-1 header back, as
            RabbitMQ without the plugin. :attr:`amqp10` changes it for the next connections.
        management_port: also serve RabbitMQ's management HTTP API and the console on this
            port (0: any free port), from the same loop (see :mod:`embroker.management`).
        stream_port: also serve RabbitMQ's stream protocol on this port (0: any free port),
            from the same loop (see :mod:`embroker.stream`).
        max_connections: the most connections a port holds at once, by kind of port:
            ``"amqp"`` (the AMQP port; the AMQP 1.0 port has as many of its own),
            ``"management"``, ``"stream"``; ``None`` for no limit. A kind left out keeps its
            default (:func:`default_max_connections`: RabbitMQ's). A port at its limit
            accepts nothing more until one of its connections closes; the others go on.
        listeners: more ports, by kind (a registered :class:`~embroker._transport.PortKind`:
            ``{"stomp": 0}``), each its kind's connections over plain TCP.
        tls_listeners: more ports over TLS, by kind (``{"stomp": 0}``: RabbitMQ's
            ``stomp.listeners.ssl``), on the ``tls`` settings the amqps port takes.
        port_settings: what each registered kind's connections are configured with, by the
            kind's name (``{"stomp": StompSettings(...)}``, ``{"mqtt": MqttSettings(...)}``;
            :attr:`port_settings`).
        management_allow_hosts: more names the management port answers requests for, besides
            the listener's own address, ``localhost`` and loopback addresses (a name, or
            ``name:port``; ``"*"``: any), and whose pages it answers (``Origin``); see
            docs/management.md.
        node: the node of ``broker``'s cluster it serves (:attr:`node`: a
            :class:`~embroker.model.Node` or its name; the first by default): every client it
            accepts connects to that node, and :meth:`stop_app` stops that node. A cluster
            of several nodes is served by a listener per node (:meth:`Broker.serve_nodes
            <embroker.Broker.serve_nodes>`), each with its own ports and loop thread.

    Raises:
        PortInUse: the port is taken.
        ValueError: ``max_connections`` names no kind of port, or a limit under 1;
            ``frame_max`` or ``channel_max`` that connection.tune cannot carry; ``node`` is
            no node of ``broker``.
    """

    def __init__(self, broker: Broker, host: str = "127.0.0.1", port: int = 0, *,
                 heartbeat: int = 60, handshake_timeout: float = 10.0,
                 amqp10_port: int | None = None, management_port: int | None = None,
                 stream_port: int | None = None,
                 max_connections: Mapping[str, int | None] | None = None,
                 management_allow_hosts: Collection[str] = (),
                 stream_advertised_host: str | None = None,
                 stream_advertised_port: int | None = None,
                 batching: BatchingPolicy | None = None,
                 tls: ssl.SSLContext | TLSOptions | None = None, tls_port: int | None = None,
                 stream_tls_port: int | None = None,
                 management_tls_port: int | None = None,
                 frame_max: int = FRAME_MAX, channel_max: int = CHANNEL_MAX,
                 amqp10: bool = True, listeners: Mapping[str, int] | None = None,
                 tls_listeners: Mapping[str, int] | None = None,
                 port_settings: Mapping[str, Any] | None = None,
                 node: Node | str | None = None) -> None:
        served = _served_node(broker, node)  # (checked before any port opens)
        for name, value, bound, zero in (("frame_max", frame_max, FRAME_MAX_LIMIT, "no limit"),
                                         ("channel_max", channel_max, 65535, "no limit"),
                                         ("heartbeat", heartbeat, 65535, "no heartbeats")):
            if not 0 <= value <= bound:
                raise ValueError(f"{name}: 0 ({zero}) or up to {bound} (what connection.tune "
                                 f"carries), not {value}")
        for argument, named in (("listeners", listeners), ("tls_listeners", tls_listeners)):
            for name in named or {}:
                try:
                    extra: PortKind | None = port_kind(name)
                except LookupError:
                    extra = None
                if extra is None or extra.factory is None or not extra.on_demand:
                    raise ValueError(f"{argument}: {name!r} is no kind of port it opens on "
                                     "demand")
        limits = default_max_connections()
        #: What the HTTP and stream ports hold together (:func:`stranger_budget`).
        self._strangers = _Budget(stranger_budget())
        for kind, limit in (max_connections or {}).items():
            if kind not in limits:
                raise ValueError(f"max_connections: no port is {kind!r}: give "
                                 f"{', '.join(map(repr, PORT_KINDS))}")
            if limit is not None and limit < 1:
                raise ValueError(f"max_connections: {kind!r} must hold one connection or "
                                 f"more (None: no limit), not {limit}")
            limits[kind] = limit
        if tls is None and ((tls_port, stream_tls_port, management_tls_port) != (None,) * 3
                            or tls_listeners):
            raise ValueError("a TLS port needs TLS settings: tls=TLSOptions(certfile=...) or an "
                             "ssl.SSLContext")
        #: The server-side context of the TLS ports (``None``: no TLS port).
        self.tls: ssl.SSLContext | None = server_context(tls) if tls is not None else None
        self.broker = broker
        #: The node it serves (:class:`~embroker.model.Node`): its clients' connections are
        #: that node's, and :meth:`stop_app` stops it.
        self.node: Node = served
        # The broker's lock (``broker.locked()``), kept at hand: every model call runs under it.
        self._locked = broker.locked()
        self.host = host
        self.heartbeat = heartbeat
        #: What AMQP 0-9-1's connection.tune offers (RabbitMQ's ``frame_max``, ``channel_max``).
        self.frame_max = frame_max
        self.channel_max = channel_max
        self.handshake_timeout = handshake_timeout
        #: Whether the AMQP ports serve AMQP 1.0 (RabbitMQ's ``rabbitmq_amqp1_0`` plugin:
        #: ``rabbitmq-plugins enable`` and ``disable`` set it on a running node); read as each
        #: connection is accepted, so safe to set from any thread.
        self.amqp10 = amqp10
        #: Unexpected exceptions raised while serving (bugs): the last 20 and a count of them
        #: all (:class:`ErrorLog`). Tests should find it empty.
        self.errors = ErrorLog(self._locked)
        # See "Threads" in the module's docstring for who changes these.
        self._clients: dict[int, _Client] = {}
        self._dirty: set[_Client] = set()
        # HTTP clients whose answer is worked out in steps, in the order they are served.
        self._working: deque[_Client] = deque()
        self._handoff: deque[_Client] = deque()
        self._selector = selectors.DefaultSelector()
        self._read_buffer = memoryview(bytearray(_READ_SIZE))  # the loop's alone (_read)
        self._listeners: list[socket.socket] = []
        #: The ports served, each with its sockets, limit and pause (the loop's alone).
        self._ports: list[_Port] = []
        self._paused_ports: set[_Port] = set()  # accept() failed: resumes at paused_until
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._running = False
        self._stopped = False  # (stop() was called: it never serves again)
        # Held while the loop is prepared or the server stops (start, serve_forever, stop).
        self._lifecycle = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop_ident: int | None = None
        #: Which ready clients are read at once and which after a pause (embroker._batching);
        #: its ``one_cpu`` is set as the loop starts.
        self.batching = batching if batching is not None else BatchingPolicy()
        # Work other threads hand to the loop (faults, settle's questions), and work the loop
        # hands itself for the end of its turn (a fault armed by a delivery it writes).
        self._calls: deque[_Call] = deque()
        self._turn_calls: deque[_Call] = deque()
        self._stalled: set[_Client] = set()  # clients whose output a fault holds back
        #: AMQP 1.0 clients whose output waits after an attach, and until when (``pause_at``).
        self._paused: dict[_Client, float] = {}
        # (a port that cannot open closes the ones opened before it: see _listen)
        self._constructing = True
        #: The ports of registered kinds (``listeners``, ``open_listener``), by kind and TLS.
        self._kind_ports: dict[tuple[str, bool], int] = {}
        amqp = port_kind("amqp")
        self.port = self._listen(host, port, amqp.policy(
            limits["amqp"], handshake_timeout=handshake_timeout))
        #: The port that serves AMQP 1.0 alone (``None`` unless asked for).
        self.amqp10_port = self._listen(host, amqp10_port, port_kind("amqp10").policy(
            limits["amqp"], handshake_timeout=handshake_timeout)) \
            if amqp10_port is not None else None
        #: The amqps port (RabbitMQ's 5671: AMQP 0-9-1 and 1.0 over TLS, sniffed as on the
        #: plain one), ``None`` unless asked for.
        self.tls_port = self._listen(host, tls_port, amqp.policy(
            limits["amqp"], handshake_timeout=handshake_timeout, tls=self.tls)) \
            if tls_port is not None else None
        # The management port: HTTP clients, kept apart from the AMQP ones (they are no
        # broker connections); the loop's alone, as _dirty.
        self._http_clients: dict[int, _Client] = {}
        self._management: ManagementAPI | None = None
        # A node's control interface (serve_control): its application and screen, the node's
        # name and cookie; its connections not authenticated yet (oldest first), and those
        # that are (the loop's alone).
        self._control: tuple[Callable[[Request], Response | Work],
                             Callable[[Request], Response | None], str, str] | None = None
        self._control_pending: deque[_Client] = deque()
        self._control_tools: set[_Client] = set()
        #: The port of the management HTTP API and console (``None`` unless asked for).
        management, stream = port_kind("management"), port_kind("stream")
        self.management_port = self._listen(host, management_port, management.policy(
            limits["management"])) if management_port is not None else None
        #: The port of the stream protocol (``None`` unless asked for). Its clients are kept
        #: with the HTTP ones: the loop does not feed them under the lock (PortKind.locked).
        self.stream_port = self._listen(host, stream_port, stream.policy(
            limits["stream"])) if stream_port is not None else None
        #: The stream protocol over TLS (RabbitMQ's 5551), ``None`` unless asked for.
        self.stream_tls_port = self._listen(host, stream_tls_port, stream.policy(
            limits["stream"], tls=self.tls)) if stream_tls_port is not None else None
        #: The management API and console over HTTPS (RabbitMQ's 15671), ``None`` unless
        #: asked for.
        self.management_tls_port = self._listen(host, management_tls_port, management.policy(
            limits["management"], tls=self.tls)) if management_tls_port is not None else None
        for secure, named in ((False, listeners), (True, tls_listeners)):
            for name, number in (named or {}).items():
                extra = port_kind(name)
                self._kind_ports[name, secure] = self._listen(host, number, extra.policy(
                    limits.get(extra.limit) if extra.limit else extra.max_connections,
                    tls=self.tls if secure else None))
        #: What each registered kind's connections are configured with, by the kind's name
        #: (``port_settings["stomp"]``: a :class:`~embroker.stomp.StompSettings`, which the
        #: Web-STOMP port's connections read too; ``port_settings["mqtt"]``: an
        #: :class:`~embroker.mqtt.MqttSettings`, for Web-MQTT too); each connection reads it
        #: as it is accepted, so a change holds for the next ones.
        self.port_settings: dict[str, Any] = dict(port_settings or {})
        self._stream_advertised_host = stream_advertised_host or None
        #: What the stream protocol's Open and Metadata name as this node's port (RabbitMQ's
        #: ``stream.advertised_port``): by default, as ``rabbit_stream:port/0`` (v3.10.8),
        #: the stream listener's port.
        self.stream_advertised_port = stream_advertised_port if stream_advertised_port \
            else self.stream_port
        #: The most connections each kind of port holds (``None``: no limit).
        self.max_connections: dict[str, int | None] = limits
        #: The names the management port answers besides its own (``management_allow_hosts``).
        self.management_allow_hosts = tuple(management_allow_hosts)
        self._hosts: HostPolicy | None = None  # the management port's, made with the API
        if management_port is not None or management_tls_port is not None:
            self._start_management()
        #: The application runs (``rabbitmqctl stop_app`` / ``start_app``): :attr:`app_running`.
        self._app_running = True
        #: The folder whose file system the disk monitor watches (RabbitMQ's data directory).
        self.data_dir = os.getcwd()
        # The memory watermark as set: a share of the RAM, or bytes (absolute).
        self._watermark: tuple[float | None, int | None] = (DEFAULT_VM_MEMORY_HIGH_WATERMARK,
                                                            None)
        #: The memory alarm's limit in bytes (the watermark applied to the RAM).
        self.vm_memory_limit = int(DEFAULT_VM_MEMORY_HIGH_WATERMARK * total_memory())
        #: The disk alarm's limit: the least free space, in bytes.
        self.disk_free_limit = DEFAULT_DISK_FREE_LIMIT
        #: What :meth:`start_app` sets the watermark and the disk limit back to, as RabbitMQ
        #: reads its configuration again (``rabbitmq-server`` sets them from
        #: ``vm_memory_high_watermark.*`` and ``disk_free_limit.*``): (fraction, bytes), bytes.
        self.configured_watermark: tuple[float | None, int | None] = (
            DEFAULT_VM_MEMORY_HIGH_WATERMARK, None)
        self.configured_disk_free_limit = DEFAULT_DISK_FREE_LIMIT
        #: The free space the disk monitor last saw, in bytes (``None``: not looked yet).
        self.disk_free: int | None = None
        self._memory_due = 0.0  # (time.monotonic(): when each monitor looks next)
        self._disk_due = 0.0
        #: What each monitor last found (``"memory"``, ``"disk"``: alarmed or not).
        self._monitored: dict[str, bool] = {}
        self._constructing = False
        broker.transports.add(self)

    def _credentials(self) -> str:
        """``USER:PASSWORD`` of a user of the broker (guest if there is one), for URLs."""
        user = "guest" if "guest" in self.broker.users else next(iter(self.broker.users), "guest")
        return f"{user}:{self.broker.users.get(user, 'guest')}"

    def _url(self, port: int, scheme: str = "amqp", host: str | None = None) -> str:
        host = self.host if host is None else host
        host = f"[{host}]" if ":" in host else host
        return f"{scheme}://{self._credentials()}@{host}:{port}"

    @property
    def url(self) -> str:
        """``amqp://USER:PASSWORD@HOST:PORT/`` for a user of the broker (guest if there is one)."""
        return self._url(self.port) + "/"

    @property
    def management_url(self) -> str:
        """``http://HOST:PORT/`` of the management API and console (``/api/...`` and ``/``).

        Raises:
            RuntimeError: the listener serves no management port (``management=True``).
        """
        if self.management_port is None:
            raise RuntimeError("this listener serves no management API: start it with "
                               "broker.serve(management=True) (serve --management-port N)")
        host = f"[{self.host}]" if ":" in self.host else self.host
        if host == "localhost":
            host = "127.0.0.1"
        return f"http://{host}:{self.management_port}/"

    @property
    def management(self) -> ManagementAPI | None:
        """The management API this listener serves (``None`` without a management port)."""
        return self._management

    @property
    def management_hosts(self) -> HostPolicy | None:
        """The names and page origins the management port answers (its own addresses,
        ``localhost``, loopback and :attr:`management_allow_hosts`), as each of its connections
        is given them; ``None`` until the management API is served."""
        return self._hosts

    @property
    def stream_advertised_host(self) -> str:
        """What the stream protocol's Open and Metadata name as this node's host (RabbitMQ's
        ``stream.advertised_host``): by default, as ``rabbit_stream:host/0`` (v3.10.8), the
        host of the node it serves (:attr:`node`: ``localhost`` unless it was named)."""
        return self._stream_advertised_host or self.node.identity.host

    @stream_advertised_host.setter
    def stream_advertised_host(self, host: str | None) -> None:
        self._stream_advertised_host = host or None

    def stream_endpoint_of(self, node: Node, *, tls: bool = False) -> tuple[str, int]:
        """The host and port ``node`` advertises to stream clients (what RabbitMQ's
        ``rabbit_stream:host/0`` and ``port/0`` answer on that node, for the Open and the
        Metadata): the :attr:`stream_advertised_host` and port of the running listener of the
        broker that serves ``node`` with a stream port (:attr:`stream_advertised_port`; with
        ``tls``, its stream TLS port, as RabbitMQ's ``advertised_tls_port``); a node no such
        listener serves advertises this one's (a cluster served by this listener alone)."""
        with self._locked:
            others = self.broker.transports.of(Server)
        for server in [self, *others]:
            port = server.stream_tls_port if tls else server.stream_advertised_port
            if server.node is node and server.running and port:
                return server.stream_advertised_host, port
        return self.stream_advertised_host, (self.stream_tls_port if tls
                                             else self.stream_advertised_port) or 0

    @property
    def stream_url(self) -> str | None:
        """``rabbitmq-stream://USER:PASSWORD@HOST:PORT/%2f`` for stream-protocol clients, on
        the host and port the node advertises (a client that compares them with what it
        connected to then stays); ``None`` without a stream port."""
        if self.stream_port is None:
            return None
        return self._url(self.stream_advertised_port or 0, "rabbitmq-stream",
                         self.stream_advertised_host) + "/%2f"

    @property
    def tls_url(self) -> str:
        """``amqps://USER:PASSWORD@HOST:PORT/`` of the amqps port.

        Raises:
            RuntimeError: the listener serves no amqps port (``tls_port``).
        """
        if self.tls_port is None:
            raise RuntimeError("this listener serves no amqps port: start it with "
                               "broker.serve(tls=..., tls_port=0) (serve --tls-port N)")
        return self._url(self.tls_port, "amqps") + "/"

    @property
    def stream_tls_url(self) -> str | None:
        """``rabbitmq-stream+tls://USER:PASSWORD@HOST:PORT/%2f`` of the stream protocol's TLS
        port, on the host the node advertises; ``None`` without one."""
        if self.stream_tls_port is None:
            return None
        return self._url(self.stream_tls_port, "rabbitmq-stream+tls",
                         self.stream_advertised_host) + "/%2f"

    @property
    def management_tls_url(self) -> str:
        """``https://HOST:PORT/`` of the management API and console over HTTPS.

        Raises:
            RuntimeError: the listener serves no HTTPS port (``management_tls_port``).
        """
        if self.management_tls_port is None:
            raise RuntimeError("this listener serves no management API over HTTPS: start it "
                               "with broker.serve(tls=..., management_tls_port=0)")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.management_tls_port}/"

    @property
    def amqp10_url(self) -> str:
        """``amqp://USER:PASSWORD@HOST:PORT`` for AMQP 1.0 clients such as proton: the 1.0 port
        if there is one, else the shared port (which serves both protocols)."""
        return self._url(self.amqp10_port or self.port)

    # -- STOMP and Web-STOMP (registered kinds "stomp" and "web_stomp", by name) -------------

    @property
    def stomp_port(self) -> int | None:
        """The STOMP port (RabbitMQ's 61613: ``rabbitmq_stomp``), ``None`` without one."""
        return self.listener_port("stomp")

    @property
    def stomp_tls_port(self) -> int | None:
        """STOMP over TLS (RabbitMQ's 61614), ``None`` without it."""
        return self.listener_port("stomp", tls=True)

    @property
    def web_stomp_port(self) -> int | None:
        """STOMP over WebSocket at ``/ws`` (RabbitMQ's 15674: ``rabbitmq_web_stomp``),
        ``None`` without it."""
        return self.listener_port("web_stomp")

    @property
    def web_stomp_tls_port(self) -> int | None:
        """Web-STOMP over TLS, ``wss`` (RabbitMQ's ``web_stomp.ssl.port``, 15673 in its
        documentation), ``None`` without it."""
        return self.listener_port("web_stomp", tls=True)

    def _address(self, scheme: str, port: int | None, path: str = "") -> str | None:
        if port is None:
            return None
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{port}{path}"

    @property
    def stomp_url(self) -> str | None:
        """``stomp://HOST:PORT`` of the STOMP port (a STOMP client logs in with CONNECT's
        ``login`` and ``passcode``, not the URL's), ``None`` without one."""
        return self._address("stomp", self.stomp_port)

    @property
    def stomp_tls_url(self) -> str | None:
        """``stomp+ssl://HOST:PORT`` of STOMP over TLS, ``None`` without it."""
        return self._address("stomp+ssl", self.stomp_tls_port)

    @property
    def web_stomp_url(self) -> str | None:
        """``ws://HOST:PORT/ws``: Web-STOMP (subprotocols ``v12.stomp``, ``v11.stomp``,
        ``v10.stomp``), ``None`` without it."""
        return self._address("ws", self.web_stomp_port, "/ws")

    @property
    def web_stomp_tls_url(self) -> str | None:
        """``wss://HOST:PORT/ws``: Web-STOMP over TLS, ``None`` without it."""
        return self._address("wss", self.web_stomp_tls_port, "/ws")

    # -- MQTT and Web-MQTT (registered kinds "mqtt" and "web_mqtt", by name) -----------------

    @property
    def mqtt_port(self) -> int | None:
        """The MQTT port (RabbitMQ's 1883: ``rabbitmq_mqtt``), ``None`` without one."""
        return self.listener_port("mqtt")

    @property
    def mqtt_tls_port(self) -> int | None:
        """MQTT over TLS (RabbitMQ's 8883), ``None`` without it."""
        return self.listener_port("mqtt", tls=True)

    @property
    def web_mqtt_port(self) -> int | None:
        """MQTT over WebSocket at ``/ws`` (RabbitMQ's 15675: ``rabbitmq_web_mqtt``),
        ``None`` without it."""
        return self.listener_port("web_mqtt")

    @property
    def web_mqtt_tls_port(self) -> int | None:
        """Web-MQTT over TLS, ``wss`` (RabbitMQ's ``web_mqtt.ssl.port``, 15676 in its
        documentation), ``None`` without it."""
        return self.listener_port("web_mqtt", tls=True)

    @property
    def mqtt_url(self) -> str | None:
        """``mqtt://HOST:PORT`` of the MQTT port (a client logs in with CONNECT's user name
        and password, guest/guest or none, not the URL's), ``None`` without one."""
        return self._address("mqtt", self.mqtt_port)

    @property
    def mqtt_tls_url(self) -> str | None:
        """``mqtts://HOST:PORT`` of MQTT over TLS, ``None`` without it."""
        return self._address("mqtts", self.mqtt_tls_port)

    @property
    def web_mqtt_url(self) -> str | None:
        """``ws://HOST:PORT/ws``: Web-MQTT (subprotocol ``mqtt``), ``None`` without it."""
        return self._address("ws", self.web_mqtt_port, "/ws")

    @property
    def web_mqtt_tls_url(self) -> str | None:
        """``wss://HOST:PORT/ws``: Web-MQTT over TLS, ``None`` without it."""
        return self._address("wss", self.web_mqtt_tls_port, "/ws")

    def __repr__(self) -> str:
        state = "running" if self._running else "stopped"
        return f"<embroker Server {self.url} {state}, {len(self._clients)} connections>"

    # -- start and stop --------------------------------------------------------------------------

    def start(self) -> Server:
        """Start serving in a background thread; returns self (a server stopped already
        serves nothing: its ports are closed)."""
        with self._lifecycle:
            if self._running or self._stopped:
                return self
            self._prepare()
        self._thread = threading.Thread(target=self._run, name=f"embroker:{self.port}",
                                         daemon=True)
        self._thread.start()
        return self

    def _prepare(self) -> None:
        self._running = True
        for port in self._ports:
            self._select_port(port)
        self._selector.register(self._wake_r, selectors.EVENT_READ, self._wake_r)

    def stop(self, timeout: float = 5.0) -> None:
        """Close every client connection with 320 CONNECTION_FORCED and free the port. Safe
        from any thread (a signal handler's) at any time, before the loop runs too."""
        with self._lifecycle:
            running, self._running, self._stopped = self._running, False, True
            if not running:
                self._close_listeners()
        if running:
            self._wake()
            if self._thread is not None and self._thread is not threading.current_thread():
                self._thread.join(timeout)
        self.broker.transports.remove(self)

    @property
    def running(self) -> bool:
        """Whether the listener is serving."""
        return self._running

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def serve_forever(self) -> None:
        """Serve in the calling thread until :meth:`stop` (from a signal handler, say); at
        once if it was stopped before it served."""
        with self._lifecycle:
            if self._stopped:
                return
            self._prepare()
        self._thread = threading.current_thread()
        self._run()

    def _start_management(self) -> None:
        from .management import ManagementAPI  # h11 and the API: only when served
        from .management._http import HostPolicy

        self._management = ManagementAPI(self.broker, self)
        own = {self.host, *(sock.getsockname()[0] for sock in self._listeners)}
        self._hosts = HostPolicy.of(own, self.management_allow_hosts)



def node_ports(settings: Mapping[str, Any], index: int) -> dict[str, Any]:
    """``settings`` (:meth:`Broker.serve <embroker.Broker.serve>`'s keyword arguments) for the
    node at ``index`` of a cluster: each port numbered other than 0 moved ``index`` on (the
    ports ``port``, ``management``, ``*_port``, and those of ``listeners`` and
    ``tls_listeners``); 0 (any free port), ``True``, ``None`` and the rest as they are."""
    def moved(value: Any) -> Any:
        number = isinstance(value, int) and not isinstance(value, bool) and value != 0
        return value + index if number else value

    found: dict[str, Any] = {}
    for key, value in settings.items():
        if key in ("listeners", "tls_listeners") and value is not None:
            found[key] = {kind: moved(number) for kind, number in value.items()}
        elif key in ("port", "management") or key.endswith("_port"):
            found[key] = moved(value)
        else:
            found[key] = value
    return found


@final
class NodeServers(Sequence[Server]):
    """A listener per node of a cluster (:meth:`Broker.serve_nodes
    <embroker.Broker.serve_nodes>`), in the order of ``broker.nodes``: ``servers[0]`` serves
    the first node. A context manager that stops them all.

    Each one is a :class:`Server` of its own (its ports, its loop thread, its
    ``stop_app``/``start_app``); this adds what a test of a cluster asks of them together.
    """

    def __init__(self, servers: Sequence[Server]) -> None:
        self._servers = list(servers)

    def __len__(self) -> int:
        return len(self._servers)

    @overload
    def __getitem__(self, index: int) -> Server: ...

    @overload
    def __getitem__(self, index: slice) -> list[Server]: ...

    def __getitem__(self, index: int | slice) -> Server | list[Server]:
        return self._servers[index]

    def __repr__(self) -> str:
        return f"<embroker NodeServers {[str(s.node) for s in self._servers]}>"

    @property
    def urls(self) -> list[str]:
        """Each node's AMQP URL (:attr:`Server.url`), in node order: a client's list of
        addresses (``[pika.URLParameters(url) for url in servers.urls]``)."""
        return [server.url for server in self._servers]

    def server(self, node: Node | str) -> Server:
        """The listener of ``node`` (a :class:`~embroker.model.Node` or its name).

        Raises:
            LookupError: no listener serves that node (the message names those served).
        """
        for server in self._servers:
            if server.node is node or server.node.name == node:
                return server
        raise LookupError(f"no listener serves node {node!s}; the nodes served are "
                          f"{', '.join(str(s.node) for s in self._servers)}")

    def stop_node(self, node: Node | str) -> None:
        """``rabbitmqctl -n NODE stop_app``: :meth:`Server.stop_app` of ``node``'s listener
        (its ports refuse connections, its clients are closed, the others' go on)."""
        self.server(node).stop_app()

    def start_node(self, node: Node | str) -> None:
        """``rabbitmqctl -n NODE start_app``: :meth:`Server.start_app` of ``node``'s listener.

        Raises:
            PortInUse: one of its ports was taken meanwhile.
        """
        self.server(node).start_app()

    def start(self) -> NodeServers:
        """Start every listener (each in a thread of its own); returns self."""
        for server in self._servers:
            server.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every listener (:meth:`Server.stop`)."""
        for server in self._servers:
            server.stop(timeout)

    def __enter__(self) -> NodeServers:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
