"""Time for the model.

The model never reads the wall clock itself: every time it needs goes through a :class:`Clock`.
:class:`SystemClock` is the real one; :class:`ManualClock` stands still until a test calls
:meth:`ManualClock.advance`, which then runs everything that fell due, in deadline order. Work that
falls due (message expiry, queue expiry, ...) is registered with :meth:`Clock.call_at` and runs when
the owner calls :meth:`Clock.run_due` (the server loop does, and ``ManualClock.advance`` does).
"""

from __future__ import annotations

import contextlib
import itertools
import time as _time
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import final

from sortedcontainers import SortedList
from typing_extensions import override

__all__ = ["Clock", "ManualClock", "SystemClock", "Timer"]


@final
class Timer:
    """A call registered with :meth:`Clock.call_at`; :meth:`cancel` stops it from running."""

    __slots__ = ("_callback", "_clock", "deadline", "seq")

    def __init__(self, clock: Clock, deadline: float, seq: int, callback: Callable[[], None]) -> None:
        self._clock = clock
        self.deadline = deadline
        self.seq = seq
        self._callback: Callable[[], None] | None = callback

    @property
    def cancelled(self) -> bool:
        return self._callback is None

    def cancel(self) -> None:
        """Forget this call. Cancelling twice, or after it ran, does nothing."""
        if self._callback is not None:
            self._callback = None
            self._clock._timers.discard(self)

    def __lt__(self, other: Timer) -> bool:
        return (self.deadline, self.seq) < (other.deadline, other.seq)

    def __repr__(self) -> str:
        return f"<Timer at {self.deadline:.3f}{' cancelled' if self.cancelled else ''}>"


class Clock(ABC):
    """Where the model gets the time, and where it leaves work for later."""

    def __init__(self) -> None:
        self._timers: SortedList = SortedList()
        self._seq = itertools.count()
        # The lock of the broker that uses this clock (set by the broker): what
        # ManualClock.advance holds, so that a test may call it while a listener serves.
        self._guard: AbstractContextManager[object] = contextlib.nullcontext()

    @abstractmethod
    def monotonic(self) -> float:
        """Seconds on a clock that never goes back; used for every deadline."""

    @abstractmethod
    def time(self) -> float:
        """Seconds since the epoch; used where RabbitMQ stamps a time (e.g. ``x-death``)."""

    def call_at(self, deadline: float, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` by :meth:`run_due` once :meth:`monotonic` reaches ``deadline``.

        Runtime complexity: ``O(log n)`` for ``n`` pending timers.
        """
        timer = Timer(self, deadline, next(self._seq), callback)
        self._timers.add(timer)
        return timer

    def next_deadline(self) -> float | None:
        """The earliest pending deadline, or ``None``: a server loop sleeps until then."""
        return self._timers[0].deadline if self._timers else None

    def run_due(self, on_error: Callable[[Exception], None] | None = None) -> int:
        """Run every call whose deadline has passed, earliest first; returns how many ran.

        A call may register new calls; those that are already due run in the same pass.

        Args:
            on_error: what to do with an exception a call raises (a bug): by default it
                propagates (the calls after it stay due); with ``on_error`` it is handed over
                and the other calls still run (the listener logs it and goes on).
        """
        ran = 0
        timers = self._timers
        while timers and timers[0].deadline <= self.monotonic():
            timer = timers.pop(0)
            callback, timer._callback = timer._callback, None
            if callback is not None:
                ran += 1
                if on_error is None:
                    callback()
                    continue
                try:
                    callback()
                except Exception as exc:
                    on_error(exc)
        return ran


@final
class SystemClock(Clock):
    """The real time of the process."""

    # The time module's functions themselves: reading the clock on the hot paths (every read
    # of a connection, every delivery's and ack's history) costs no Python call.
    monotonic = staticmethod(_time.monotonic)
    time = staticmethod(_time.time)


@final
class ManualClock(Clock):
    """A clock that moves only when told to, for deterministic tests.

    >>> clock = ManualClock(start=1_700_000_000.0)
    >>> fired = []
    >>> _ = clock.call_at(clock.monotonic() + 5, lambda: fired.append(clock.monotonic()))
    >>> clock.advance(4.9); fired
    []
    >>> clock.advance(0.1); fired
    [5.0]
    """

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        super().__init__()
        self._epoch = start
        self._now = 0.0

    @override
    def monotonic(self) -> float:
        return self._now

    @override
    def time(self) -> float:
        return self._epoch + self._now

    def advance(self, seconds: float) -> None:
        """Move time forward and run, in deadline order, everything that falls due on the way.

        Each call runs with the clock showing its own deadline, so work scheduled for t=5 sees
        t=5 even when the clock is advanced by 10 at once.
        """
        if seconds < 0:
            raise ValueError("a clock does not go back")
        with self._guard:  # the broker's lock: safe while a listener serves
            target = self._now + seconds
            timers = self._timers
            while timers and timers[0].deadline <= target:
                self._now = max(self._now, timers[0].deadline)
                self.run_due()
            self._now = target
