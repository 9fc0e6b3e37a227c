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

import contextlib
import dataclasses
import errno
import functools
import ipaddress
import logging
import os
import selectors
import shutil
import socket
import ssl
import struct
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar, final, overload

from ._batching import BatchingPolicy, Plan, on_one_cpu
from ._tls import TLSSocket
from ._transport import (
    PORT_KINDS,
    Accepted,
    BrokerConnection,
    CarriedConnection,
    PortKind,
    PortPolicy,
    SansIOConnection,
    broker_connection,
    client_properties,
    port_kind,
    port_kinds,
)
from ._untrusted import log_text
from ._version import __version__
from .errors import (
    ConnectionException,
    ConnectionForced,
    InternalError,
    PortInUse,
    add_note,
)
from .model._access import is_loopback
from .model._clock import ManualClock
from .model._kinds import AlarmBlocking
from .tls import TLSOptions, server_context

if TYPE_CHECKING:
    from .management import ManagementAPI
    from .management._http import HostPolicy, Request, Response, Work
    from .model import Broker
    from .model import Connection as ModelConnection

__all__ = ["APP_RUNNING", "DEFAULT_DISK_FREE_LIMIT", "DEFAULT_VM_MEMORY_HIGH_WATERMARK",
           "ERRORS_KEPT", "MEMORY_CHECK_INTERVAL", "AppRunning", "ClientConnection", "ErrorLog",
           "PortInUse", "Server", "WireConnection", "default_max_connections", "memory_used",
           "stranger_budget", "total_memory"]

try:
    import resource
except ImportError:  # (Windows: no descriptor limit to read)
    resource = None  # type: ignore[assignment]

log = logging.getLogger("embroker.server")

#: What AMQP 0-9-1's connection.tune offers by default (RabbitMQ's ``frame_max`` and
#: ``channel_max``: embroker.amqp091's FRAME_MAX and CHANNEL_MAX, pinned equal by a test), and
#: the largest frame_max its field carries.
FRAME_MAX = 131_072
CHANNEL_MAX = 2047
FRAME_MAX_LIMIT = 4_294_967_295

#: The most one read takes from a socket. Reads go into one buffer the loop keeps
#: (``recv_into``), and only what arrived is copied out: ``recv(262144)`` would allocate 256 KiB
#: for every read, above glibc's mmap threshold, an mmap and munmap (and page faults) each time:
#: about 10 µs a read, more than the rest of a paced publish costs.
_READ_SIZE = 262_144
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
_TICK = 0.5  # at most this long between looks at heartbeats, handshakes and timers
#: How long one turn of the loop spends on the steps of management answers worked out in steps
#: (a listing, an export: embroker.management._steps), across every HTTP client that waits for
#: one, taken in turn: so that however many requests a dashboard or a hostile client sends, the
#: AMQP clients wait at most about this (and one step) for the loop.
_WORK_PER_TURN = 0.002
#: How many answers are worked out at once (the others wait their turn, costing nothing until
#: their first step): what a listing builds between its steps is held for each, so this bounds
#: what many clients asking for long answers at once may hold (a listing of 5,000 queues holds
#: about 9 MB until it is sent).
_ACTIVE_WORK = 4
#: basic.deliver's class and method ids: written, a consumer holds more deliveries unacked.
_DELIVER = b"\x00\x3c\x00\x3c"
#: How long the rest of an AMQP 1.0 client's output waits after the answer to a receiving
#: link's attach (``pause_at``): long enough for a client in another thread or process to read
#: the attach on its own before the first transfers, as it does with RabbitMQ.
_ATTACH_PAUSE = 0.005
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
#: RabbitMQ's memory monitor: the share of the RAM past which the memory alarm is raised, and
#: how often it measures (vm_memory_monitor.erl, rabbit_memory.hrl, v3.10.8: 0.4, 1000 ms);
#: the RAM assumed where it cannot be read (``MEMORY_SIZE_FOR_UNKNOWN_OS``: 1 GiB).
DEFAULT_VM_MEMORY_HIGH_WATERMARK = 0.4
MEMORY_CHECK_INTERVAL = 1.0
_UNKNOWN_TOTAL_MEMORY = 1_073_741_824
#: RabbitMQ's disk monitor (rabbit_disk_monitor.erl, v3.10.8): the free space of the data
#: directory under which the disk alarm is raised (50,000,000 bytes), and how often it looks:
#: ``2 * (free - limit) / 250,000`` ms, between 100 ms and 10 s, every 10 s while alarmed.
DEFAULT_DISK_FREE_LIMIT = 50_000_000
_DISK_MIN_INTERVAL = 0.1
_DISK_MAX_INTERVAL = 10.0
_DISK_FAST_RATE = 250_000  # bytes a millisecond (FAST_RATE)
#: What ``rabbitmqctl reset`` says while the application runs (its CLI, live on 3.10.8).
APP_RUNNING = ("this command requires the 'rabbit' app to be stopped on the target node. "
               "Stop it with 'rabbitmqctl stop_app'.")


class AppRunning(RuntimeError):
    """The broker's application runs: stop it first (:meth:`Server.stop_app`)."""


def memory_used() -> int:
    """This process's resident memory in bytes: ``/proc/self/statm`` (Linux), else the peak
    resident size ``getrusage`` reports (the best a portable call gives)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    if resource is None:
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # (bytes on macOS, else KiB)


def total_memory() -> int:
    """The machine's RAM in bytes (RabbitMQ's 1 GiB where it cannot be read)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return _UNKNOWN_TOTAL_MEMORY
    return total if total > 0 else _UNKNOWN_TOTAL_MEMORY


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


@final
class _Client:
    """A socket being served and its connection, as its port's kind makes it (an AMQP
    connection, sniffed: 0-9-1 or 1.0; the management API's HTTP; the stream protocol...)."""

    __slots__ = ("answered", "bound", "carrying", "conn", "connected_at", "events", "heard_at",
                 "held", "kind", "locked", "peer", "port", "sock", "stalled_until", "streams", "tls",
                 "wbuf", "written")

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
        """Whether its connection is a broker connection (PortKind.broker)."""
        return self.kind is not None and self.kind.broker

    @property
    def listed(self) -> bool:
        """Whether it is in ``server.connections``, open to faults (PortKind.listed)."""
        return self.kind is not None and self.kind.listed

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
class _Call:
    """Work a test asks the loop's thread to do, and its answer."""

    __slots__ = ("done", "error", "function", "result")

    def __init__(self, function: Callable[[], Any]) -> None:
        self.function = function
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None




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


@final
class Server:
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
        management_allow_hosts: more names the management port answers requests for, besides
            the listener's own address, ``localhost`` and loopback addresses (a name, or
            ``name:port``; ``"*"``: any), and whose pages it answers (``Origin``); see
            docs/management.md.

    Raises:
        PortInUse: the port is taken.
        ValueError: ``max_connections`` names no kind of port, or a limit under 1;
            ``frame_max`` or ``channel_max`` that connection.tune cannot carry.
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
                 amqp10: bool = True, listeners: Mapping[str, int] | None = None) -> None:
        for name, value, bound, zero in (("frame_max", frame_max, FRAME_MAX_LIMIT, "no limit"),
                                         ("channel_max", channel_max, 65535, "no limit"),
                                         ("heartbeat", heartbeat, 65535, "no heartbeats")):
            if not 0 <= value <= bound:
                raise ValueError(f"{name}: 0 ({zero}) or up to {bound} (what connection.tune "
                                 f"carries), not {value}")
        for name in listeners or {}:
            if port_kind(name).factory is None or not port_kind(name).on_demand:
                raise ValueError(f"listeners: {name!r} is no kind of port it opens on demand")
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
        if tls is None and (tls_port, stream_tls_port, management_tls_port) != (None,) * 3:
            raise ValueError("a TLS port needs TLS settings: tls=TLSOptions(certfile=...) or an "
                             "ssl.SSLContext")
        #: The server-side context of the TLS ports (``None``: no TLS port).
        self.tls: ssl.SSLContext | None = server_context(tls) if tls is not None else None
        self.broker = broker
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
        # Work other threads hand to the loop (faults, settle's questions).
        self._calls: deque[_Call] = deque()
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
        for name, number in (listeners or {}).items():
            extra = port_kind(name)
            self._kind_ports[name, False] = self._listen(host, number, extra.policy(
                limits.get(extra.limit) if extra.limit else extra.max_connections))
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
        self._constructing = False
        broker.transports.add(self)

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
    def stream_advertised_host(self) -> str:
        """What the stream protocol's Open and Metadata name as this node's host (RabbitMQ's
        ``stream.advertised_host``): by default, as ``rabbit_stream:host/0`` (v3.10.8), the
        host of the broker's node (:attr:`Broker.node <embroker.model.Broker.node>`:
        ``localhost`` unless it was named)."""
        return self._stream_advertised_host or self.broker.node.host

    @stream_advertised_host.setter
    def stream_advertised_host(self, host: str | None) -> None:
        self._stream_advertised_host = host or None

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

    # -- the application: rabbitmqctl stop_app, start_app, reset -----------------------------

    @property
    def app_running(self) -> bool:
        """Whether the broker's application runs (``rabbitmqctl stop_app`` stops it)."""
        return self._app_running

    def stop_app(self) -> None:
        """``rabbitmqctl stop_app`` (RabbitMQ 3.10.8): every port stops listening but a control
        port's (AMQP, amqps, AMQP 1.0, stream, management: a client is refused), every client
        connection is closed as a node that stops closes them (AMQP 0-9-1: 320
        CONNECTION_FORCED "broker forced connection closure with reason 'shutdown'"; AMQP
        1.0, stream and HTTP: the socket closes, with no close frame), and the broker
        keeps what a restart keeps (:meth:`Broker.restart <embroker.Broker.restart>`: durable
        exchanges, queues and bindings, persistent messages). The resource alarms end.
        Nothing happens if it is stopped already. Safe from any thread, the loop's too.
        """
        self._in_loop(self._stop_app)

    def start_app(self) -> None:
        """``rabbitmqctl start_app``: the ports listen again on the same numbers, and the
        memory watermark and disk free limit are the configured ones again (as RabbitMQ,
        which reads its configuration again: what ``set_vm_memory_high_watermark`` set is
        gone). Nothing happens if it runs already. Safe from any thread.

        Raises:
            PortInUse: one of its ports is taken now (no port listens then: call again once
                it is free).
        """
        self._in_loop(self._start_app)

    def reset(self) -> None:
        """``rabbitmqctl reset``: :meth:`Broker.reset_node <embroker.Broker.reset_node>` (the
        broker as freshly constructed), while the application is stopped.

        Raises:
            AppRunning: the application runs (RabbitMQ's text: :data:`APP_RUNNING`).
        """
        if self._app_running:
            raise AppRunning(APP_RUNNING)
        self._in_loop(self.broker.reset_node)

    def force_reset(self) -> None:
        """``rabbitmqctl force_reset``: on one node, the same as :meth:`reset`."""
        self.reset()

    def _in_loop(self, function: Callable[[], Any]) -> Any:
        # On the loop's thread when it runs (the caller's own thread when that is the loop);
        # in the caller's thread when there is no loop.
        if self._running:
            return self._on_loop(function, timeout=30.0)
        return function()

    def _start_management(self) -> None:
        from .management import ManagementAPI  # h11 and the API: only when served
        from .management._http import HostPolicy

        self._management = ManagementAPI(self.broker, self)
        own = {self.host, *(sock.getsockname()[0] for sock in self._listeners)}
        self._hosts = HostPolicy.of(own, self.management_allow_hosts)

    # -- listeners a plugin brings: rabbitmq-plugins enable/disable on a running node ---------

    #: The attribute that holds each listener's port number, by kind and whether it is TLS
    #: (a registered kind's: :meth:`listener_port`).
    _LISTENER_ATTRIBUTES: ClassVar[dict[tuple[str, bool], str]] = {
        ("management", False): "management_port", ("management", True): "management_tls_port",
        ("stream", False): "stream_port", ("stream", True): "stream_tls_port"}

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

    def _stop_app(self) -> None:
        if not self._app_running:
            return
        self._app_running = False
        for port in self._ports:
            if port_kind(port.kind).factory is not None:  # (a control port stays)
                self._close_port(port)
        # The connections of a protocol that stops silently see their socket close, with no
        # close frame (AMQP 1.0, live on 3.10.8: proton reports "connection aborted"; the
        # stream protocol's); 0-9-1 clients get their connection.close.
        silent = [client for client in self._clients.values()
                  if client.broker and client.protocol.stops_silently]
        with self._locked:
            self.broker.restart()  # (each broker connection is told: on_restart)
            for name in self.broker.alarms:
                self.broker.clear_alarm(name)
        for client in silent:
            self._kill(client, reason="the application stopped")
        for client in [*self._http_clients.values()]:  # stream and HTTP clients go
            if client.kind is None or (client.kind.factory is not None and not (
                    client.broker and not client.protocol.stops_silently)):
                self._drop(client)
        log.info("the application stopped: its ports are closed")

    def _start_app(self) -> None:
        if self._app_running:
            return
        reopened: list[_Port] = []
        try:
            for port in self._ports:
                if port_kind(port.kind).factory is not None and not port.sockets:
                    port.sockets = self._bind(self.host, port.number)
                    reopened.append(port)
        except PortInUse as exc:
            for port in reopened:
                for sock in port.sockets:
                    sock.close()
                    self._listeners.remove(sock)
                port.sockets = []
            add_note(exc, f"start_app: port {exc.port} ({_kind(self._ports, exc.port)}) is "
                          "taken now; the application stays stopped")
            raise
        self._app_running = True
        for port in reopened:
            self._select_port(port)
        fraction, absolute = self._watermark = self.configured_watermark
        self.vm_memory_limit = int(fraction * total_memory()) if fraction is not None \
            else min(absolute or 0, total_memory())
        self.disk_free_limit = self.configured_disk_free_limit
        self._monitor(time.monotonic(), force=True)
        log.info("the application started: ports %s listen again",
                 ", ".join(str(p.number) for p in reopened))

    # -- resource alarms: rabbitmqctl set_vm_memory_high_watermark, set_disk_free_limit --------

    @property
    def alarms(self) -> list[str]:
        """The resource alarms in effect: ``["disk"]``, ``["memory"]``, ``["disk",
        "memory"]`` or ``[]`` (``rabbitmq-diagnostics alarms``, which lists the disk alarm
        first)."""
        return self.broker.alarms

    @property
    def vm_memory_high_watermark(self) -> float | None:
        """The memory watermark as a share of the RAM (``None`` when set in bytes:
        :attr:`vm_memory_limit`)."""
        return self._watermark[0]

    def memory_used(self) -> int:
        """The memory the memory monitor measures: this process's resident memory, in bytes
        (RabbitMQ measures its Erlang VM's)."""
        return memory_used()

    def set_vm_memory_high_watermark(self, fraction: float | None = None, *,
                                     absolute: int | None = None) -> None:
        """``rabbitmqctl set_vm_memory_high_watermark FRACTION`` (or ``absolute BYTES``): the
        memory alarm is raised while :meth:`memory_used` is above ``fraction`` of the RAM
        (``0``: at once) or ``absolute`` bytes (at most the RAM), and cleared below it. The
        monitor measures now, then every second (RabbitMQ's interval).

        Raises:
            ValueError: neither or both given, a fraction not in 0..1 (RabbitMQ's CLI refuses
                those), or negative bytes.
            RuntimeError: the application is stopped.
        """
        if (fraction is None) == (absolute is None):
            raise ValueError("give a fraction of the RAM, or absolute bytes")
        if fraction is not None and not 0 <= fraction <= 1:
            raise ValueError(f"the memory watermark is a fraction of the RAM from 0 to 1, not "
                             f"{fraction}")
        if absolute is not None and absolute < 0:
            raise ValueError(f"the memory watermark cannot be negative ({absolute} bytes)")
        self._check_app("set_vm_memory_high_watermark")
        total = total_memory()
        limit = int(fraction * total) if fraction is not None else min(absolute or 0, total)

        def apply() -> None:
            self._watermark = (fraction, absolute)
            self.vm_memory_limit = limit
            self._check_memory(time.monotonic())
        self._in_loop(apply)

    def set_disk_free_limit(self, absolute: int | None = None, *,
                            mem_relative: float | None = None) -> None:
        """``rabbitmqctl set_disk_free_limit BYTES`` (or ``mem_relative FRACTION``): the disk
        alarm is raised while the free space of :attr:`data_dir`'s file system is below
        ``absolute`` bytes, or ``mem_relative`` times the RAM; the monitor looks now, then as
        RabbitMQ's does (sooner the nearer the limit: 100 ms to 10 s).

        Raises:
            ValueError: neither or both given, or a negative value.
            RuntimeError: the application is stopped.
        """
        if (absolute is None) == (mem_relative is None):
            raise ValueError("give a limit in bytes, or relative to the RAM (mem_relative)")
        if (absolute if absolute is not None else mem_relative or 0) < 0:
            raise ValueError("the disk free limit cannot be negative")
        self._check_app("set_disk_free_limit")
        limit = absolute if absolute is not None else round((mem_relative or 0) * total_memory())

        def apply() -> None:
            self.disk_free_limit = limit
            self._check_disk(time.monotonic())
        self._in_loop(apply)

    def _check_app(self, command: str) -> None:
        if not self._app_running:
            raise RuntimeError(f"{command}: the application is stopped (RabbitMQ: \"this "
                               "command requires the 'rabbit' app to be running on the target "
                               "node. Start it with 'rabbitmqctl start_app'.\")")

    def _monitor(self, now: float, *, force: bool = False) -> None:
        # On the loop's thread (or with no loop): each monitor when it is due.
        if force or now >= self._memory_due:
            self._check_memory(now)
        if force or now >= self._disk_due:
            self._check_disk(now)

    def _check_memory(self, now: float) -> None:
        # vm_memory_monitor:internal_update/1: alarmed while used > limit.
        self._memory_due = now + MEMORY_CHECK_INTERVAL
        self._set_alarm("memory", memory_used() > self.vm_memory_limit)

    def _check_disk(self, now: float) -> None:
        # rabbit_disk_monitor:internal_update/1: alarmed while free < limit; the next look
        # as its interval/1.
        free = shutil.disk_usage(self.data_dir).free
        self.disk_free = free
        alarmed = free < self.disk_free_limit
        self._set_alarm("disk", alarmed)
        ideal = 2 * (free - self.disk_free_limit) / _DISK_FAST_RATE / 1000
        self._disk_due = now + (_DISK_MAX_INTERVAL if alarmed else
                                max(_DISK_MIN_INTERVAL, min(_DISK_MAX_INTERVAL, ideal)))

    def _set_alarm(self, resource: str, on: bool) -> None:
        with self._locked:
            if on:
                self.broker.set_alarm(resource)
            else:
                self.broker.clear_alarm(resource)


    # -- the loop ----------------------------------------------------------------------------

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            self._wake_w.send(b"\0")

    def _run(self) -> None:
        self._loop_ident = threading.get_ident()
        self.batching.one_cpu = on_one_cpu()
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
        with self._locked:  # a test's thread may add or run timers meanwhile
            deadline = clock.next_deadline()
            clock_now = clock.monotonic()
        if deadline is not None:
            timeout = min(timeout, max(0.0, deadline - clock_now))
        if self._paused_ports:
            timeout = min(timeout, max(0.0, min(p.paused_until for p in self._paused_ports)
                                       - now))
        if self._stalled:
            timeout = min(timeout, max(0.0, min(c.stalled_until for c in self._stalled) - now))
        if self._paused:
            timeout = min(timeout, max(0.0, min(self._paused.values()) - now))
        if self._working:
            timeout = 0.0  # (an answer is being worked out: look at the sockets, then go on)
        batching = self.batching
        waited = batching.pacer.perf_counter()
        ready = self._selector.select(timeout)
        plan: Plan | None = None
        if ready and batching.enabled:
            waited = batching.pacer.perf_counter() - waited
            if len(ready) == 1:  # (the common case, without building a list)
                key, mask = ready[0]
                one = key.data
                if type(one) is _Client and one.locked and mask & selectors.EVENT_READ:
                    plan = batching.plan((one,), waited)
            else:
                clients = [key.data for key, mask in ready
                           if type(key.data) is _Client and key.data.locked
                           and mask & selectors.EVENT_READ]
                if clients:
                    plan = batching.plan(clients, waited)
        for key, mask in ready:
            data = key.data
            if type(data) is _Port:
                if data.selected:  # (stop_app, from a client served this turn, closes ports)
                    self._accept(key.fileobj, data)  # type: ignore[arg-type]
            elif data is self._wake_r:
                with contextlib.suppress(BlockingIOError, OSError):
                    while self._wake_r.recv(4096):
                        pass
            else:
                if data.sock.fileno() < 0:
                    continue  # (dropped earlier in this turn: stop_app, a fault)
                if mask & selectors.EVENT_READ and (plan is None or data not in plan.later):
                    self._read(data)
                if mask & selectors.EVENT_WRITE:
                    self._dirty.add(data)
        if plan is not None:
            # The clients read at once get their answers before the pause: a request/response
            # client never waits for a pipelining one's batch. (The held ones' bytes stay in
            # their sockets meanwhile: one read takes them all.)
            self._flush()
            batching.pause(plan)
            for client in plan.later:
                if client.sock.fileno() >= 0:
                    self._read(client)
        now = time.monotonic()
        if self._paused_ports:
            for port in [p for p in self._paused_ports if p.paused_until <= now]:
                self._paused_ports.discard(port)  # the pause is over: try accept() again
                port.paused_until = 0.0
                self._select_port(port)
        if self._stalled:
            for client in [c for c in self._stalled if c.stalled_until <= now]:
                self._stalled.discard(client)  # the stall is over: write what it held
                self._dirty.add(client)
        if self._paused:
            for paused in [c for c, until in self._paused.items() if until <= now]:
                del self._paused[paused]  # the pause after an attach is over
                self._dirty.add(paused)
        if self._working:
            self._work()
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
        # Logged as text: a handler that keeps records (pytest's) keeps no frames either. The
        # message may quote a client (a name in a KeyError): escaped, it is the line's end,
        # and the stack follows it (the frames' lines are embroker's own).
        frames = self.errors.record(exc, where)
        log.error("unexpected error in %s: %s: %s\nTraceback (most recent call last):\n%s",
                  where, type(exc).__name__, log_text(exc), frames.rstrip())

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
            with self._locked:
                client.conn.internal_error(InternalError(
                    f"internal error: {type(exc).__name__}: {exc}"))
            self._has_output(client)
        except Exception as again:  # the connection cannot even close: drop the socket
            self._bug(again, f"closing the connection from {client.peer}")
            if threading.get_ident() == self._loop_ident:
                self._drop(client)
            else:  # the table of clients and the selector are the loop's: it drops it
                self._calls.append(_Call(functools.partial(self._drop_if_served, client)))
                self._wake()

    def _has_output(self, client: _Client) -> None:
        """``client`` has something to write: the loop writes it (woken if need be)."""
        if threading.get_ident() == self._loop_ident:
            self._dirty.add(client)
        else:
            self._handoff.append(client)
            self._wake()

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
            local = sock.getsockname()[0]
        except OSError:
            local = ""
        accepted = Accepted(self, self.broker, client.peer, local, _over_loopback(sock),
                            client.tls, policy, functools.partial(self._has_output, client))
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

    # -- reading, timers, writing ----------------------------------------------------------------

    def _read(self, client: _Client) -> None:
        buffer = self._read_buffer
        try:
            size = client.sock.recv_into(buffer)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            size = 0
        if size:
            client.heard_at = time.monotonic()
        data = buffer[:size].tobytes()
        if client.tls is not None and client.tls.unsent:
            self._dirty.add(client)  # (the handshake's answer the socket did not take)
        conn = client.conn
        if not client.locked:  # (the management API and the stream protocol take the lock)
            with self._isolated(client):
                conn.receive_data(data)
            if conn.has_output or conn.blocked or conn.should_close:
                self._dirty.add(client)
            self._note_work(client)
            return
        # Once a carrier passes its bytes through (the protocol header chose the protocol),
        # the connection it carries is fed directly (what SniffingConnection.receive_data would
        # do, without the extra call on every read).
        target = conn.inner if client.carrying and conn.passthrough else conn
        try:  # (what _isolated does, inlined: one read per message on a paced client)
            with self._locked:
                target.receive_data(data)
        except Exception as exc:
            self._bug(exc, f"the connection from {client.peer}")
            self._fail(client, exc)
        # (the protocol's connection, once its carrier passes bytes through: has_output
        # covers should_close)
        inner = conn.inner if client.carrying and conn.passthrough else conn
        # (a connection that counts the commands each read completed, AMQP 0-9-1's, tells
        # the batching policy whether it pipelines; the others are answered or not)
        commands: int | None = getattr(inner, "commands_read", None)
        if inner.has_output or inner.blocked:
            self._dirty.add(client)
            # It asked for something, or is answered: it may wait now, unless that read held
            # several commands (it pipelines: a publisher with a window of confirms).
            client.answered = commands is None or commands < 2
            client.streams = False
        else:
            # (A read that completed no command, a publish's first frames, says nothing new:
            # a client waiting for its answer writes the rest of its request at once.)
            if commands is None or commands:
                client.answered = False
            if commands is not None:
                if client.held:
                    client.count_held()  # (its acks came: fewer in hand)
                client.streams = commands >= self.batching.pipelined and client.held < 2

    def _run_timers(self) -> None:
        with self._locked:
            self.broker.clock.run_due(on_error=self._timer_failed)
        self._mark_output()

    def _timer_failed(self, exc: Exception) -> None:
        self._bug(exc, "a timer")

    def _tick(self) -> None:
        with self._locked:
            self.broker.clock.run_due(on_error=self._timer_failed)
            self.broker.check_resources()
        if self._app_running:
            try:
                self._monitor(time.monotonic())
            except Exception as exc:  # (a disk that cannot be read...): logged, kept
                self._bug(exc, "the resource monitors")
        manual = isinstance(self.broker.clock, ManualClock)
        now = time.monotonic()
        for client in list(self._clients.values()):
            with self._isolated(client), self._locked:
                if manual:
                    self._excuse_silence(client, now)
                client.conn.tick()
        for http in list(self._http_clients.values()):
            with self._isolated(http):
                http.conn.tick()
            if http.conn.has_output or http.conn.should_close:
                self._dirty.add(http)
        self._mark_output()

    @staticmethod
    def _excuse_silence(client: _Client, now: float) -> None:
        # A client on a socket lives in real time: while it has been heard from within two
        # heartbeat intervals of real time, the test moving the broker's ManualClock is not its
        # silence: the broker's clock counts its silence once it is silent in real time too.
        conn = client.conn
        if client.carrying and not conn.passthrough:
            return  # (its protocol is not chosen yet)
        inner = conn.inner if client.carrying else conn
        excuse = getattr(inner, "excuse_silence", None)  # (AMQP 0-9-1's heartbeats)
        heartbeat = getattr(inner, "heartbeat", 0)
        if excuse is not None and heartbeat and now - client.heard_at <= 2 * heartbeat:
            excuse()

    def _mark_output(self) -> None:
        for client in self._clients.values():
            if client.conn.has_output:
                self._dirty.add(client)

    def _note_work(self, client: _Client) -> None:
        """Serve the steps of ``client``'s answer, if it waits for one and reads what it was
        sent."""
        bound = client.bound
        if getattr(client.conn, "has_work", False) and (
                bound is None or len(client.wbuf) <= bound) and client not in self._working:
            self._working.append(client)

    def _work(self) -> None:
        """Steps of the answers HTTP clients wait for: the first :data:`_ACTIVE_WORK` clients,
        each in turn, for at most :data:`_WORK_PER_TURN` in all (at least one step); the
        others wait in line."""
        working = self._working
        deadline = time.perf_counter() + _WORK_PER_TURN
        active = [working.popleft() for _ in range(min(len(working), _ACTIVE_WORK))]
        waiting: list[_Client] = []  # (not stepped this turn: first next turn)
        stepped: list[_Client] = []
        for index, client in enumerate(active):
            if index and time.perf_counter() > deadline:
                waiting = active[index:]
                break
            conn = client.conn
            with self._isolated(client):
                conn.work()
            if conn.has_output or conn.should_close:
                self._dirty.add(client)
            if getattr(conn, "has_work", False) and client.sock.fileno() >= 0:
                stepped.append(client)  # (one that reads nothing comes back from _write)
        working.extendleft(reversed(waiting + stepped))

    def _flush(self) -> None:
        handoff = self._handoff
        while handoff:  # clients other threads gave output to
            self._dirty.add(handoff.popleft())
        while self._dirty:
            client = self._dirty.pop()
            if client.sock.fileno() < 0:
                continue
            try:  # (what _isolated does, inlined: the hot path)
                self._write(client)
            except Exception as exc:
                self._bug(exc, f"the connection from {client.peer}")
                self._fail(client, exc)

    def _write(self, client: _Client) -> None:
        # The protocol connection, asked directly once its carrier passes bytes through
        # (SniffingConnection only passes these on to it): the hot write path. A carrier that
        # frames (a WebSocket) is asked itself.
        conn: Any = client.conn
        if client.carrying and conn.passthrough:
            conn = conn.inner
        tls = client.tls
        if tls is not None and tls.unsent:
            tls.flush()
        if conn.failure is not None:  # sending it something failed, in another's work
            failure, conn.failure = conn.failure, None
            self._bug(failure, f"sending to the connection from {client.peer}")
            self._fail(client, failure)
        with self._locked:
            data = conn.data_to_send()
            # (an AMQP 1.0 connection's attach answer: the rest waits, _ATTACH_PAUSE)
            pause = getattr(conn, "pause_at", None) if client.locked else None
        stalled = bool(client.stalled_until) and client.stalled_until > time.monotonic()
        rest = b""
        if client in self._paused:
            stalled = True
        elif pause is not None:  # the attach's answer now, the rest in a moment
            data, rest = data[:pause], data[pause:]
        wbuf = client.wbuf
        if data and not wbuf and not stalled:
            # The common case, nothing left over from before: send the bytes as they are (no
            # copy into the buffer); keep what the socket did not take.
            try:
                sent = client.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self._drop(client)
                return
            if sent < len(data):
                wbuf += memoryview(data)[sent:]
        elif data or wbuf:
            if data:
                wbuf += data
            if not stalled:
                try:
                    sent = client.sock.send(wbuf)
                    del wbuf[:sent]
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    self._drop(client)
                    return
        if rest:
            wbuf += rest
            self._paused[client] = time.monotonic() + _ATTACH_PAUSE
            stalled = True
        if not client.locked:
            if client.written is not None:  # (a stream connection paces its readers by it)
                client.written(len(client.wbuf))
            self._note_work(client)
        if conn.should_close and not client.wbuf and (tls is None or tls.flush()):
            self._drop(client)
            return
        if client.locked and _DELIVER in data:
            client.count_held()  # (deliveries went out: the batching policy's hold reads it)
        bound = client.bound
        events = 0 if conn.blocked or (bound is not None and len(client.wbuf) > bound) \
            else selectors.EVENT_READ
        if (client.wbuf or (tls is not None and tls.unsent)) and not stalled:
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
        # On the loop's thread. The client leaves the table under the lock, with its connection.
        fileno = client.sock.fileno()
        self._dirty.discard(client)
        self._stalled.discard(client)
        self._paused.pop(client, None)
        if client.events:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(client.sock)
            client.events = 0
        if not client.locked:
            if self._http_clients.pop(fileno, None) is not None:
                self._left(client.port)
            if client.kind is not None and client.kind.factory is None:  # (a control port's)
                self._control_tools.discard(client)
                with contextlib.suppress(ValueError):
                    self._control_pending.remove(client)
            client.conn.connection_lost()
            client.sock.close()
            return
        try:
            with self._locked:
                if self._clients.pop(fileno, None) is not None:
                    self._left(client.port)
                client.conn.connection_lost()
        except Exception as exc:  # releasing its channels failed: still close the socket
            self._bug(exc, f"releasing the connection from {client.peer}")
        finally:
            client.sock.close()
        try:
            inner = client.protocol
            end_reason = getattr(inner, "end_reason", None)  # (AMQP 0-9-1's own words)
            if end_reason is not None:
                log.info("connection %s ended: %s", inner.describe(), end_reason())
            else:
                reason = getattr(inner, "close_reason", None)
                log.info("%s connection %s ended%s", inner.kind.name, _describe(client),
                         f": {log_text(reason)}" if reason else "")
        except Exception as exc:  # describing it failed: say so, and go on
            self._bug(exc, f"logging the end of the connection from {client.peer}")

    # -- the broker's own events ---------------------------------------------------------------

    def _each_client(self, action: Callable[[_Client], None]) -> None:
        # Under the broker's lock (the table of clients changes only under it), on any thread:
        # each broker connection (PortKind.broker).
        for client in [*self._clients.values(), *self._http_clients.values()]:
            if not client.broker:
                continue
            with self._isolated(client):
                action(client)
            self._has_output(client)

    # (what the broker asks of its transports: embroker.model._transports.Transport)

    @property
    def runs_timers(self) -> bool:
        return self._running

    def on_blocked(self, blocked: bool, reason: str) -> None:
        # Called under the broker lock, from any thread: the connections of a kind held when
        # they publish are told (each holds itself when it publishes: its blocked says so).
        # (told through its carrier, if any: a carrier passes it on)
        def tell(client: _Client) -> None:
            if client.protocol.kind.alarm_blocking is AlarmBlocking.PUBLISHERS:
                if blocked:
                    client.conn.publishers_blocked(reason)
                else:
                    client.conn.publishers_unblocked()
        self._each_client(tell)

    def on_alarms(self, alarms: tuple[str, ...]) -> None:
        # Called under the broker lock, from any thread: the clients of a kind held from
        # reading by one of these alarms stop or start being read (their blocked says so;
        # the loop looks again once told).
        for client in [*self._clients.values(), *self._http_clients.values()]:
            if not client.broker:
                continue
            conn: BrokerConnection = client.protocol
            kind = conn.kind
            if kind.alarm_blocking is AlarmBlocking.READING:
                conn.held_by_alarm = kind.blocked_by(alarms)
                self._has_output(client)

    def on_restart(self) -> None:
        # Called under the broker lock, from any thread: every broker connection is told the
        # broker is going down, as a RabbitMQ node that stops does (each closes as its
        # protocol's reader does; a stream connection is told by its model connection).
        self._each_client(lambda client: client.protocol.on_restart())

    def _shutdown(self) -> None:
        for http in list(self._http_clients.values()):
            with contextlib.suppress(OSError):
                http.sock.setblocking(True)
                http.sock.settimeout(0.2)
                http.sock.sendall(http.wbuf + http.conn.data_to_send())
            self._drop(http)
        if self._management is not None:
            self._management.close()  # its traces (rabbitmq_tracing's consumers) stop
        clients = list(self._clients.values())
        for client in clients:
            with self._isolated(client), self._locked:
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
        for port in self._ports:
            self._select_port(port)  # (not running: none is selected)
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
        with self._locked:
            return [ClientConnection(self, client)
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
        # Whether ``client`` is still served (in its table: see "Threads").
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


def _kind(ports: list[_Port], number: int) -> str:
    return next((p.kind for p in ports if p.number == number), "?")


def _sockname(sock: socket.socket | TLSSocket) -> str:
    try:
        name = sock.getsockname()
    except OSError:
        return ":0"
    return f"{name[0]}:{name[1]}"


def _describe(client: _Client) -> str:
    name = client_properties(client.protocol).get("connection_name")
    return f"{client.peer} ('{log_text(name)}')" if isinstance(name, str) else client.peer


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
        server._calls.append(_Call(functools.partial(
            server._kill, self._client, flush=True,
            reason="dropped by a test after a delivery (embroker.faults)")))
        server._wake()


@final
class ClientConnection(CarriedConnection):
    """A client connection a listener serves, as a test sees it (``server.connections``), with
    the faults a test can inject into it (:class:`~embroker._transport.CarriedConnection`).
    Each fault runs on the listener's thread and has happened when the call returns; ``stall``
    counts real time."""

    __slots__ = ("_client",)

    def __init__(self, server: Server, client: _Client) -> None:
        super().__init__(_SocketCarrier(server, client))
