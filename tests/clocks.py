"""A clock for tests that must not be a ManualClock: its time moves only when the test sets it,
and it runs no timer by itself (a ManualClock runs them as it advances, and the listener treats
a broker on one as a test moving the time)."""

from __future__ import annotations

from typing_extensions import override

from embroker.model import Clock


class SteppedClock(Clock):
    """``monotonic()`` is :attr:`now`; ``time()`` is ``start`` plus it."""

    def __init__(self, start: float = 1_700_000_000) -> None:
        super().__init__()
        self.start = start
        self.now = 0.0

    @override
    def monotonic(self) -> float:
        return self.now

    @override
    def time(self) -> float:
        return self.start + self.now
