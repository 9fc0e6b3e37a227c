"""A loop for in-memory clients: timers on the broker's clock, links pumped, no selector.

:class:`VirtualLoop` runs the callbacks, timers and in-memory transports of the clients attached
to it, in the thread that polls it. It never blocks on a file descriptor. When the client waits
and nothing can arrive from the links, time has to pass:

- on a :class:`~embroker.ManualClock`, the loop moves the broker's clock to the next timer,
  the client's or the broker's (a TTL, a heartbeat, a delayed message: it may have something
  for the client), one at a time, so that
  ``connection.sleep(30)`` or ``process_data_events(time_limit=5)`` takes no real time and runs
  in the same order every time;
- on a :class:`~embroker.SystemClock`, it sleeps until that timer, or until another thread (a
  TCP client's delivery, ``add_callback_threadsafe``) wakes it.

Only a client polled from the main thread (the test's) moves a virtual clock: a client in a
thread of its own (an application's worker) waits in real time, in slices of 50 ms, for the
broker's output or for the test to move the clock.

A client that waits for something that can never come (``start_consuming()`` on an empty
queue, with only heartbeats left to run) would spin through virtual time forever:
after :attr:`VirtualLoop.max_idle` seconds of virtual time with nothing but heartbeats, the loop
raises :class:`Deadlock` instead.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol, final

from ..model._clock import ManualClock

if TYPE_CHECKING:
    from ..model import Broker
    from ._link import MemoryLink

__all__ = ["Deadlock", "VirtualLoop"]

#: A heartbeat frame (type 8, channel 0, empty payload, frame end): what does not count as
#: progress when the loop looks for a client that waits forever.
_HEARTBEAT: Final = b"\x08\x00\x00\x00\x00\x00\x00\xce"
#: At most this long (real seconds) the loop waits in one poll for another thread's output.
_REAL_WAIT: Final = 0.05


class Deadlock(RuntimeError):
    """An in-memory client waits for something that cannot happen: the broker's clock is
    virtual, nothing is in flight, and only heartbeats are left to run."""


class _Reader(Protocol):
    """What the loop hands a link's bytes to (an adapter's transport)."""

    link: MemoryLink

    def deliver(self, data: bytes) -> None: ...

    def lost(self) -> None: ...


@final
class _Timer:
    """A loop timer (pika's timer reference: ``cancel()``)."""

    __slots__ = ("callback", "deadline", "loop")

    def __init__(self, loop: VirtualLoop, deadline: float, callback: Callable[[], Any]) -> None:
        self.loop = loop
        self.deadline = deadline
        self.callback: Callable[[], Any] | None = callback

    def cancel(self) -> None:
        self.callback = None


@final
class VirtualLoop:
    """The ioloop of in-memory pika connections (pika's ``custom_ioloop``), driven by the
    caller: :meth:`poll` / :meth:`process_timeouts` (what ``BlockingConnection`` calls), or
    :meth:`start` until :meth:`stop` (``SelectConnection``'s ``connection.ioloop.start()``).

    Args:
        broker: the broker whose clock the timers run on.
        max_idle: seconds of virtual time a client may wait with nothing but heartbeats
            before :class:`Deadlock` is raised (ManualClock only).
        background: tells the client library's own housekeeping timers (its heartbeat
            checks) from the application's: their running is not progress.
    """

    def __init__(self, broker: Broker, *, max_idle: float = 3600.0,
                 background: Callable[[Callable[[], Any]], bool] | None = None) -> None:
        self.broker = broker
        self._background = background
        self.max_idle = max_idle
        self._timers: list[tuple[float, int, _Timer]] = []
        self._seq = itertools.count()
        self._callbacks: deque[Callable[[], Any]] = deque()
        self._readers: list[_Reader] = []
        self._wake = threading.Event()
        self._stopping = False
        self._closed = False
        # Virtual seconds this loop moved the clock, waiting, since its clients last made
        # progress (what the test or another client moved does not count: it is no wait here).
        self._waited = 0.0

    def __repr__(self) -> str:
        return f"<VirtualLoop {len(self._readers)} link(s), {len(self._timers)} timer(s)>"

    # -- what pika asks of an ioloop and of its I/O services -----------------------------------

    def get_native_ioloop(self) -> VirtualLoop:
        return self

    def activate_poller(self) -> None:
        """(Nothing to activate: there is no poller.)"""

    def call_later(self, delay: float, callback: Callable[[], Any]) -> _Timer:
        """Run ``callback`` once ``delay`` seconds of the broker's clock have passed."""
        timer = _Timer(self, self.broker.clock.monotonic() + max(delay, 0.0), callback)
        heapq.heappush(self._timers, (timer.deadline, next(self._seq), timer))
        return timer

    def remove_timeout(self, timer: _Timer) -> None:
        timer.cancel()

    def add_callback(self, callback: Callable[[], Any]) -> None:
        self._callbacks.append(callback)

    def add_callback_threadsafe(self, callback: Callable[[], Any]) -> None:
        self._callbacks.append(callback)
        self._wake.set()

    def wake(self) -> None:
        """Another thread (or the broker) has something for this loop's clients."""
        self._wake.set()

    def start(self) -> None:
        """Run until :meth:`stop` (SelectConnection's ``ioloop.start()``)."""
        self._stopping = False
        while not self._stopping:
            self.poll()
            self.process_timeouts()
        self._stopping = False

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()

    def close(self) -> None:
        self._closed = True
        self._timers.clear()
        self._callbacks.clear()

    # -- the links -----------------------------------------------------------------------------

    def attach(self, reader: _Reader) -> None:
        self._readers.append(reader)

    def detach(self, reader: _Reader) -> None:
        if reader in self._readers:
            self._readers.remove(reader)

    # -- one turn ------------------------------------------------------------------------------

    def poll(self) -> None:
        """One turn: pump the links, hand the clients what the broker sent, run the callbacks;
        when none of that did anything and no timer is due, let time pass (see the module's
        docstring) up to the next timer."""
        if self._work():
            return
        if self._due():
            return
        self._idle()

    def _work(self) -> bool:
        worked = False
        callbacks = self._callbacks
        if callbacks:
            self._waited = 0.0
            while callbacks:
                callbacks.popleft()()
            worked = True
        for reader in list(self._readers):
            link = reader.link
            if link._to_broker:
                worked = True  # the broker reads it now, answered or not
            if link.pump():
                data = link.receive()
                if data:
                    if data != _HEARTBEAT:
                        self._waited = 0.0
                    reader.deliver(data)
                    worked = True
                elif link.eof:
                    self.detach(reader)
                    reader.lost()
                    worked = True
        while callbacks:  # what the data caused (a transport's end after connection.close)
            callbacks.popleft()()
        return worked

    def _due(self) -> bool:
        timers = self._timers
        while timers and timers[0][2].callback is None:
            heapq.heappop(timers)
        return bool(timers) and timers[0][0] <= self.broker.clock.monotonic()

    def _idle(self) -> None:
        timers = self._timers
        clock = self.broker.clock
        servers = self.broker.transports.listening
        if isinstance(clock, ManualClock) and threading.current_thread() is not \
                threading.main_thread():
            # A client in a thread of its own (an application's worker): the test moves the
            # clock, not this thread; wait (real time) for output or for the clock to move.
            if self._wake.wait(_REAL_WAIT):
                self._wake.clear()
            return
        if isinstance(clock, ManualClock):
            # another thread may deliver (a listener serves): give it a moment of real time first
            if servers and self._wake.wait(_REAL_WAIT):
                self._wake.clear()
                return
            if not timers:
                if servers:
                    return
                raise Deadlock("an in-memory client waits, but nothing is in flight and it has "
                               "no timer: it would wait forever")
            deadline = timers[0][0]
            if self._waited + deadline - clock.monotonic() > self.max_idle:
                raise Deadlock(f"an in-memory client waited {self.max_idle:g}s of virtual time "
                               "with nothing but heartbeats: it waits for something that "
                               "cannot happen (a consumer on an empty queue?)")
            with self.broker.locked():
                # Step to the broker's next timer first, when it comes before the client's: what
                # it does (a TTL's dead-lettering, a delayed message) may be for this client.
                broker_deadline = clock.next_deadline()
                if broker_deadline is not None and broker_deadline < deadline:
                    deadline = broker_deadline
                step = max(0.0, deadline - clock.monotonic())
                clock.advance(step)
                self._waited += step
            return
        wait = _REAL_WAIT if not timers else max(0.0, min(timers[0][0] - clock.monotonic(),
                                                          _REAL_WAIT))
        if self._wake.wait(wait):
            self._wake.clear()

    def process_timeouts(self) -> None:
        """Run the timers that are due on the broker's clock, earliest first."""
        now = self.broker.clock.monotonic()
        timers = self._timers
        while timers and timers[0][0] <= now:
            _deadline, _seq, timer = heapq.heappop(timers)
            callback, timer.callback = timer.callback, None
            if callback is not None:
                if self._background is None or not self._background(callback):
                    self._waited = 0.0
                callback()
