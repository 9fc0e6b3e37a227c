"""The listener's selector loop (:class:`embroker.server.Server`'s second role): each turn waits
for the sockets (or the next timer), reads what arrived and feeds it to each client's
connection, writes what the connections have to send, runs the broker's timers and heartbeats,
steps the management API's long answers, and runs the work other threads queue for it.

The hot path of a paced AMQP client is here (``_read``, ``_write``, ``_flush``): keep it free
of extra calls and attribute hops (benchmarks/listener_turns.py measures it). Who may touch
what, from which thread: "Threads" in :mod:`embroker.server`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, final

from ._batching import BatchingPolicy, Plan, on_one_cpu
from ._listener import _Client, _Port
from ._transport import (
    client_properties,
)
from ._untrusted import log_text
from .errors import (
    ConnectionForced,
    InternalError,
)
from .model._clock import ManualClock

if TYPE_CHECKING:
    from .management import ManagementAPI
    from .model import Broker
    from .server import ErrorLog

log = logging.getLogger("embroker.server")  # (the listener's one logger, whichever role logs)

#: The most one read takes from a socket. Reads go into one buffer the loop keeps
#: (``recv_into``), and only what arrived is copied out: ``recv(262144)`` would allocate 256 KiB
#: for every read, above glibc's mmap threshold, an mmap and munmap (and page faults) each time:
#: about 10 µs a read, more than the rest of a paced publish costs.
_READ_SIZE = 262_144
_TICK = 0.5  # at most this long between looks at heartbeats, handshakes and timers
_NEVER = float("inf")  # (a connection with no deadline: looked at once it reads or writes)
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


@final
class _Call:
    """Work a test asks the loop's thread to do, and its answer."""

    __slots__ = ("done", "error", "function", "result")

    def __init__(self, function: Callable[[], Any]) -> None:
        self.function = function
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None





def _describe(client: _Client) -> str:
    name = client_properties(client.protocol).get("connection_name")
    return f"{client.peer} ('{log_text(name)}')" if isinstance(name, str) else client.peer




class _Loop:
    """The selector loop of :class:`~embroker.server.Server` (a role of it: Server is the one
    class): its turns (``_run``, ``_turn``), reading and writing the clients (``_read``,
    ``_write``, ``_flush``), dropping them (``_drop``), the timers and heartbeats (``_tick``),
    the management API's answers worked out in steps (``_work``), a bug kept and its
    connection closed (``_bug``, ``_isolated``, ``_fail``), and the work other threads hand it
    (``_on_loop``, ``_has_output``)."""

    if TYPE_CHECKING:  # (what it shares with the other roles: Server sets it up)
        broker: Broker
        _locked: AbstractContextManager[object]
        errors: ErrorLog
        batching: BatchingPolicy
        _running: bool
        _app_running: bool
        _loop_ident: int | None
        _selector: selectors.BaseSelector
        _read_buffer: memoryview
        _wake_r: socket.socket
        _wake_w: socket.socket
        _clients: dict[int, _Client]
        _http_clients: dict[int, _Client]
        _dirty: set[_Client]
        _handoff: deque[_Client]
        _working: deque[_Client]
        _stalled: set[_Client]
        _paused: dict[_Client, float]
        _calls: deque[_Call]
        _turn_calls: deque[_Call]
        _ports: list[_Port]
        _paused_ports: set[_Port]
        _control_pending: deque[_Client]
        _control_tools: set[_Client]
        _management: ManagementAPI | None

        def _accept(self, listener: socket.socket, port: _Port) -> None: ...
        def _select_port(self, port: _Port) -> None: ...
        def _left(self, port: _Port | None) -> None: ...
        def _close_listeners(self) -> None: ...
        def _monitor(self, now: float, *, force: bool = False) -> None: ...
        def _drop_if_served(self, client: _Client) -> None: ...

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
        # Only the calls asked for before this select run this turn: what a client sent
        # before a test's call (a publish before stop_app) is in its socket by then, and is
        # read first. One asked for later woke the selector: it runs next turn, after that
        # turn's reads.
        due = len(self._calls)
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
        if due or self._turn_calls:
            self._run_calls(due)
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

    # -- reading, timers, writing ----------------------------------------------------------------

    def _read(self, client: _Client) -> None:
        conn = client.conn
        if (conn.inner if client.carrying and conn.passthrough else conn).blocked:
            # Held since the loop last looked (an alarm raised while it waited): not read, as
            # RabbitMQ's blocked reader reads nothing; _write takes it off reading.
            self._dirty.add(client)
            return
        buffer = self._read_buffer
        try:
            size = client.sock.recv_into(buffer)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            size = 0
        if size:
            client.heard_at = time.monotonic()
        client.tick_at = 0.0  # (what it read may move its deadlines: _tick looks again)
        data = buffer[:size].tobytes()
        if client.tls is not None and client.tls.unsent:
            self._dirty.add(client)  # (the handshake's answer the socket did not take)
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
        blocked = self.broker.publishers_blocked
        with self._locked:
            ran = self.broker.clock.run_due(on_error=self._timer_failed)
            self.broker.check_resources()
        if self._app_running:
            try:
                self._monitor(time.monotonic())
            except Exception as exc:  # (a disk that cannot be read...): logged, kept
                self._bug(exc, "the resource monitors")
        manual = isinstance(self.broker.clock, ManualClock)
        now = time.monotonic()
        clock_now = self.broker.clock.monotonic()
        for client in list(self._clients.values()):
            if client.tick_at > clock_now:
                continue  # (an idle connection costs this comparison until its deadline)
            conn = client.conn
            with self._isolated(client), self._locked:
                if manual:
                    self._excuse_silence(client, now)
                wanted = conn.tick()
                # A connection that keeps its tick's promise is looked at again when it said,
                # or once it reads or writes (None: nothing due until then); on a ManualClock
                # at every look, as a test moves the time.
                if not manual and getattr(conn, "tick_keeps_deadlines", False):
                    client.tick_at = _NEVER if wanted is None else wanted
                if conn.has_output:
                    self._dirty.add(client)
        for http in list(self._http_clients.values()):
            with self._isolated(http):
                http.conn.tick()
            if http.conn.has_output or http.conn.should_close:
                self._dirty.add(http)
        if ran or blocked != self.broker.publishers_blocked:
            self._mark_output()  # (what the timers or an alarm did may be anyone's output)

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
        client.tick_at = 0.0  # (as _read: what it writes moves its heartbeat's deadline)
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
            if inner is None:  # (a carrier that never carried a connection: nothing ended)
                pass
            elif end_reason is not None:
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

    # -- stopping ------------------------------------------------------------------------------

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

    def _run_calls(self, count: int | None = None) -> None:
        # The first ``count`` calls of other threads (every one when None), then those the
        # loop handed itself this turn.
        while self._calls and (count is None or count > 0):
            if count is not None:
                count -= 1
            self._call(self._calls.popleft())
        while self._turn_calls:
            self._call(self._turn_calls.popleft())

    @staticmethod
    def _call(call: _Call) -> None:
        try:
            call.result = call.function()
        except Exception as exc:
            call.error = exc
        finally:
            call.done.set()

    def _later(self, function: Callable[[], Any]) -> None:
        """Run ``function`` on the loop's thread, waiting for nothing: asked on the loop's
        own thread (a fault armed as it writes a delivery), at the end of this turn, once its
        output is written and before anything else is read; asked on another, at the end of
        the turn after the loop's next select (what clients sent before is read first)."""
        if threading.get_ident() == self._loop_ident:
            self._turn_calls.append(_Call(function))
            return
        self._calls.append(_Call(function))
        self._wake()

    def _soon(self, function: Callable[[], Any], what: str) -> None:
        """Run ``function`` on the loop's thread at its next turn, waiting for nothing (the
        caller may hold the broker's lock, which the loop needs); an error it raises is
        logged as ``what`` failing. At once when there is no loop."""
        if not self._running:
            function()
            return

        def logged() -> None:
            try:
                function()
            except Exception as exc:  # (nobody waits for it: the log says so)
                log.warning("%s failed: %s", what, exc)
        self._later(logged)

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

