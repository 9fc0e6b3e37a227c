"""The broker's side of an in-memory connection: a sans-IO connection fed in the client's thread.

Theory of operation
-------------------
A :class:`MemoryLink` stands where a socket and the listener's loop stand for a TCP client: it
owns one broker connection (:class:`~embroker._transport.BrokerConnection`, made by its
``connection`` factory: AMQP 0-9-1's :class:`~embroker.amqp091.ServerConnection` by default) and
two byte queues,

- ``client → broker``: what the client library wrote (:meth:`MemoryLink.send`), fed to the
  connection by :meth:`MemoryLink.pump`, all of it in one ``receive_data`` call (one "read");
- ``broker → client``: what the connection had to send, taken out by :meth:`MemoryLink.pump`
  (and right away when the model produces output unasked: a delivery another connection
  caused), and read by the client library (:meth:`MemoryLink.receive`).

Nothing runs by itself: the adapter of each client library (pika's ioloop, aiormq's transport,
kombu's transport) calls :meth:`pump` when its client writes or waits, in the client's own
thread or event loop, under the broker's lock. Heartbeats and the handshake deadline go by the
broker's clock: the link registers its next :meth:`ServerConnection.tick` as a timer of that
clock, so a :class:`~embroker.ManualClock` moves them too.

A client's silence counts only while the client runs. On a ManualClock, time passes when the test
moves it (``advance``) or when a client waits (its loop steps the clock): an in-memory client that
did not run meanwhile (the test's thread was elsewhere, another client waited) could not have
sent its heartbeats, and no real time passed for it, so that time is not its silence
(:meth:`ServerConnection.excuse_silence`). A client that runs, reads what the broker sends and
never answers for two heartbeat intervals is dropped as RabbitMQ drops it (501 missed
heartbeats). On the system clock time passes for every client alike, and a client that stops
reading for two intervals is dropped.

Bytes queued for the client count as written (as a socket's buffer does): ``broker.settle()``
pumps every link (the client's writes are read and answered) and is then quiet, whether or not
the client has read the answers yet; ``settle_async`` also waits for the clients of the running
event loop to read them.

Faults (:class:`MemoryConnection`) act on the link as they act on a socket: ``kill`` ends the
stream with no connection.close, ``stall`` holds the broker's output back for some seconds of the
broker's clock.
"""

from __future__ import annotations

import errno
import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, final

from .._transport import BrokerConnection, CarriedConnection
from ..amqp091._frames import HEARTBEAT_FRAME
from ..errors import (
    InternalError,
)
from ..model._clock import ManualClock
from ..model._kinds import AlarmBlocking

if TYPE_CHECKING:
    from ..model import Broker, Node
    from ..model._clock import Timer

    #: What makes a link's connection: ``factory(broker, peer=..., on_output=...,
    #: heartbeat=...)`` (the arguments each sans-IO connection takes).
    LinkConnectionFactory = Callable[..., BrokerConnection]

__all__ = ["MemoryConnection", "MemoryLink", "Reader", "links"]

log = logging.getLogger("embroker.memory")

_ids = itertools.count(1)


class Reader(Protocol):
    """What carries a link's bytes to its client in an event loop (an asyncio transport)."""

    @property
    def busy(self) -> bool:
        """Bytes are in flight: written by the broker, not handed to the client yet."""
        ...


def links(broker: Broker) -> list[MemoryLink]:
    """The in-memory links open on ``broker`` (oldest first), under its lock."""
    return broker.transports.of(MemoryLink)


@final
class MemoryLink:
    """One in-memory client connection, seen from the broker.

    Args:
        broker: the broker to connect to.
        name: how the link is known to logs and faults (its peer: ``"memory:1"`` by default).
        heartbeat: the heartbeat interval offered in connection.tune, in seconds of the
            broker's clock (0: none).
        notify: called (with no arguments, from whatever thread caused it, under the broker's
            lock) when the broker has output the client did not ask for: a delivery caused by
            another connection, a heartbeat, a fault. The adapter wakes its client with it.
        connection: what makes its broker connection, called as ``connection(broker,
            peer=..., on_output=..., heartbeat=...)`` (and ``node=...`` when one is given)
            under the broker's lock (any :class:`~embroker._transport.BrokerConnection`'s
            maker; ``None``: AMQP 0-9-1's :class:`~embroker.amqp091.ServerConnection`, over
            loopback).
        node: the node of the broker's cluster its client reaches (``None``: the first).

    Raises:
        ConnectionRefusedError: ``node`` is stopped: what its closed port answers a socket
            (a client's list of addresses goes on to the next).
    """

    def __init__(self, broker: Broker, *, name: str | None = None, heartbeat: int = 60,
                 notify: Callable[[], None] | None = None,
                 connection: LinkConnectionFactory | None = None,
                 node: Node | None = None) -> None:
        self.broker = broker
        self.peer = name or f"memory:{next(_ids)}"
        #: The thread that opened it: its client's (another in-memory client's thread may be
        #: what a waiting client waits for; unrelated threads are not).
        self.owner = threading.current_thread()
        self._notify = notify
        self._to_broker: deque[bytes] = deque()
        self._pending = 0  # bytes in _to_broker
        self._to_client: deque[bytes] = deque()
        self._held: list[bytes] = []  # what a stall holds back
        self._drop_after_write = False  # a fault: end the stream once the output is written
        #: Set once the broker side is gone: the client reads what is left, then end of stream.
        self.eof = False
        #: A fault's reason for ending the stream, for the client's error (``None``: clean).
        self.lost: str | None = None
        #: Until when (broker clock) a fault holds the broker's output back.
        self.stalled_until = 0.0
        self._timer: Timer | None = None
        self._closed = False
        # Whether the client read or wrote (pump, send, receive) since the last heartbeat tick.
        self._client_ran = True
        #: The asyncio transport its client reads through (embroker.memory.aio), if any:
        #: ``settle_async`` waits for it to hand over the bytes in flight.
        self.reader: Reader | None = None
        with broker.locked():
            if node is not None and not node.running:
                raise ConnectionRefusedError(errno.ECONNREFUSED,
                                             f"Connection refused: node {node} is stopped")
            make = connection if connection is not None else _amqp091
            #: Its broker connection (AMQP 0-9-1's unless told otherwise).
            where = {} if node is None else {"node": node}
            self.conn: Any = make(broker, peer=self.peer, on_output=self._output_ready,
                                  heartbeat=heartbeat, **where)
            broker.transports.add(self)
            self._schedule(self.conn.tick())

    def __repr__(self) -> str:
        return f"<MemoryLink {self._describe()} {self.conn.state.name}>"

    def _describe(self) -> str:
        describe = getattr(self.conn, "describe", None)  # (AMQP 0-9-1's words)
        return describe() if describe is not None else self.peer

    # -- the client's side ---------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        """Queue bytes the client wrote; the next :meth:`pump` feeds them to the broker."""
        self._client_ran = True
        if data and not self.eof:
            self._to_broker.append(data)
            self._pending += len(data)

    @property
    def pending(self) -> int:
        """Bytes the client wrote that the broker has not read yet."""
        return self._pending

    def receive(self) -> bytes:
        """Everything the broker sent that the client has not read (may be empty)."""
        self._client_ran = True
        out = self._to_client
        if not out:
            return b""
        if len(out) == 1:
            return out.popleft()
        # (popped one by one: the broker's side may append meanwhile, from another thread)
        return b"".join([out.popleft() for _ in range(len(out))])

    @property
    def readable(self) -> bool:
        """Whether :meth:`receive` has bytes, or the end of the stream is there to be seen."""
        return bool(self._to_client) or (self.eof and not self._closed)

    def pump(self) -> bool:
        """Feed the broker what the client wrote, and queue what the broker answers; run the
        broker's timers that are due. Takes the broker's lock. Returns whether the client has
        something to read (:attr:`readable`).

        For the client: it counts as the client running (see the module's docstring)."""
        self._client_ran = True
        return self._pump()

    def _pump(self) -> bool:
        broker = self.broker
        with broker.locked():
            clock = broker.clock
            deadline = clock.next_deadline()
            if deadline is not None and deadline <= clock.monotonic():
                clock.run_due()
            self._pump_locked()
        return bool(self._to_client) or (self.eof and not self._closed)  # (readable, inlined)

    def _pump_locked(self) -> None:
        incoming = self._to_broker
        if incoming and not self.eof:
            # (popped one by one, counting only what was popped: a writer may append meanwhile)
            data = incoming.popleft() if len(incoming) == 1 else b"".join(
                [incoming.popleft() for _ in range(len(incoming))])
            self._pending -= len(data)
            conn = self.conn
            try:
                conn.receive_data(data)
            except Exception as exc:  # a bug: this connection only, as the listener does
                log.exception("unexpected error in the connection %s", self.peer)
                conn.internal_error(InternalError(f"internal error: {type(exc).__name__}: {exc}"))
        self._collect()

    def _collect(self) -> None:
        conn = self.conn
        if getattr(conn, "failure", None) is not None:
            failure, conn.failure = conn.failure, None
            log.error("unexpected error sending to %s: %r", self.peer, failure)
            conn.internal_error(InternalError(
                f"internal error: {type(failure).__name__}: {failure}"))
        data = conn.data_to_send()
        if self.stalled_until and self.stalled_until > self.broker.clock.monotonic():
            if data:
                self._held.append(data)  # written, and held back by the fault
            return
        if self._held:
            self._to_client.extend(self._held)
            self._held.clear()
        if data and not (data == HEARTBEAT_FRAME and self._to_client):
            # (a heartbeat behind bytes the client has not read yet says nothing more: those
            # bytes are its traffic; a client that does not run is not sent one per interval)
            self._to_client.append(data)
        if self._drop_after_write and not self.eof:
            self._drop_after_write = False
            self.lost = "dropped by a test after a delivery (embroker.faults)"
            conn.killed(self.lost)
        if (conn.should_close or self.lost) and not self.eof:
            self._end()

    def _end(self) -> None:
        self.eof = True
        self._to_broker.clear()
        self._pending = 0
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.conn.connection_lost()
        self._forget()

    def _forget(self) -> None:
        self.broker.transports.remove(self)
        end_reason = getattr(self.conn, "end_reason", None)  # (AMQP 0-9-1's words)
        reason = self.lost or (end_reason() if end_reason is not None else "closed")
        log.info("in-memory connection %s ended: %s", self._describe(), reason)

    def close(self) -> None:
        """The client let go of the link (its socket closed): the broker releases the
        connection (unacknowledged messages go back, exclusive queues go)."""
        with self.broker.locked():
            self._closed = True
            if not self.eof:
                self._pump_locked()
                if not self.eof:
                    self._end()
            self._to_client.clear()

    # -- what the broker does unasked ----------------------------------------------------------

    def _output_ready(self) -> None:
        # Under the broker's lock, on any thread: a delivery another connection caused... (what
        # this link's own input causes is collected by pump, after the whole read)
        if getattr(self.conn, "_reading", False) or self.eof:  # (0-9-1's: within its read)
            return
        self._collect()
        if self._notify is not None:
            self._notify()

    def _schedule(self, when: float | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if when is not None and not self.eof:
            self._timer = self.broker.clock.call_at(when, self._tick)

    def _tick(self) -> None:
        # A timer of the broker's clock (ManualClock.advance, the listener, settle, pump).
        self._timer = None
        if self.eof:
            return
        conn = self.conn
        excuse = getattr(conn, "excuse_silence", None)
        if not self._client_ran and excuse is not None and \
                isinstance(self.broker.clock, ManualClock):
            excuse()  # the client did not run: the time that passed is not its
        self._client_ran = False
        conn.tick()  # a heartbeat due, or the end of a silent client
        if getattr(conn, "close_reason", None) is not None and conn.should_close:
            self.lost = str(conn.close_reason)
        self._wake()  # (what it sent counts as sent: the next heartbeat goes by it)
        if not self.eof:
            now = self.broker.clock.monotonic()
            following = conn.tick()
            self._schedule(None if following is None else max(following, now + 0.001))

    def _wake(self) -> None:
        self._collect()
        if self._notify is not None:
            self._notify()

    # -- what the broker asks of its transports (embroker.model._transports.Transport) --------

    #: Its timers run on whichever thread moves the broker's clock, not a thread of its own.
    runs_timers = False

    def on_blocked(self, blocked: bool, reason: str) -> None:
        conn = self.conn
        if conn.kind.alarm_blocking is not AlarmBlocking.PUBLISHERS:
            return
        if blocked:
            conn.publishers_blocked(reason)
        else:
            conn.publishers_unblocked()
        self._wake()

    def on_alarms(self, alarms: tuple[str, ...]) -> None:
        conn = self.conn
        if conn.kind.alarm_blocking is AlarmBlocking.READING:
            conn.held_by_alarm = conn.kind.blocked_by(alarms)
            self._wake()

    def on_restart(self) -> None:
        self.conn.on_restart()
        self._wake()

    def on_node(self, node: Node, running: bool) -> None:
        pass  # (its connection, if it was on that node, was closed by the model: it told us)

    # -- settle --------------------------------------------------------------------------------

    def settle_report(self, timeout: float) -> list[str]:
        """What this link still has to do, once what its client wrote is read and answered
        (in this thread: what is queued for the client counts as written)."""
        with self.broker.locked():
            if self._pump() and self._notify is not None:
                self._notify()  # its client has answers to read: wake its loop
            return self.busy()

    def busy(self) -> list[str]:
        """What this link still has to do (call under the broker's lock after :meth:`pump`)."""
        now = self.broker.clock.monotonic()
        if self.stalled_until > now and self._held:
            return [f"output to {self.peer} stalled by a fault for "
                    f"{self.stalled_until - now:.2f}s more (broker clock)"]
        if self._to_broker:
            return [f"input from {self.peer} not read yet"]
        return []


@final
class _LinkCarrier:
    """How an in-memory link carries its client (embroker._transport.Carrier): a fault runs in
    the caller's thread, under the broker's lock; a stall counts the broker's clock."""

    __slots__ = ("_link",)

    def __init__(self, link: MemoryLink) -> None:
        self._link = link

    @property
    def peer(self) -> str:
        return self._link.peer

    @property
    def protocol(self) -> BrokerConnection:
        conn: BrokerConnection = self._link.conn
        return conn

    def locked(self) -> AbstractContextManager[object]:
        return self._link.broker.locked()

    def alive(self) -> bool:
        return not self._link.eof

    def act(self, action: Callable[[], None]) -> None:
        with self._link.broker.locked():
            action()
            self._link._wake()

    def kill(self, reset: bool) -> None:
        link = self._link
        with link.broker.locked():
            if link.eof:
                return
            link.lost = "dropped by a test (embroker.faults)"
            link.conn.killed(link.lost)
            link._to_client.clear()
            link._end()
            if link._notify is not None:
                link._notify()

    def stall(self, seconds: float) -> None:
        link = self._link
        with link.broker.locked():
            clock = link.broker.clock
            link.stalled_until = clock.monotonic() + seconds
            clock.call_at(link.stalled_until, link._wake)

    def drop_after_delivery(self) -> None:
        link = self._link
        link._drop_after_write = True
        if not getattr(link.conn, "_reading", False):  # the delivery is out already
            link._wake()


@final
class MemoryConnection(CarriedConnection):
    """An in-memory client connection, as a test sees it (``broker.memory_connections``), with
    the faults a test can inject into it (the same as
    :class:`~embroker.server.ClientConnection`'s: :class:`~embroker._transport.CarriedConnection`).
    Each fault has happened when the call returns; the client notices when it next reads;
    ``stall`` counts the broker's clock.
    """

    __slots__ = ("_link",)

    def __init__(self, link: MemoryLink) -> None:
        super().__init__(_LinkCarrier(link))


def _amqp091(broker: Broker, *, peer: str, on_output: Callable[[], None],
             heartbeat: int, node: Node | None = None) -> BrokerConnection:
    """A link's default connection: AMQP 0-9-1's, over loopback (guest may log in)."""
    from ..amqp091._connection import ServerConnection

    return ServerConnection(broker, peer=peer, on_output=on_output, heartbeat=heartbeat,
                            loopback=True, node=node)
