from __future__ import annotations

import pytest

from embroker.model import ManualClock


def test_manual_clock_runs_due_calls_in_deadline_order_at_their_time() -> None:
    clock = ManualClock()
    seen: list[tuple[str, float]] = []
    clock.call_at(3, lambda: seen.append(("b", clock.monotonic())))
    clock.call_at(1, lambda: seen.append(("a", clock.monotonic())))
    cancelled = clock.call_at(2, lambda: seen.append(("never", 0)))
    cancelled.cancel()
    clock.advance(10)
    assert seen == [("a", 1), ("b", 3)]
    assert clock.monotonic() == 10
    assert clock.next_deadline() is None


def test_calls_scheduled_while_running_run_when_due() -> None:
    clock = ManualClock()
    seen: list[float] = []

    def again() -> None:
        seen.append(clock.monotonic())
        if len(seen) < 3:
            clock.call_at(clock.monotonic() + 1, again)

    clock.call_at(1, again)
    clock.advance(5)
    assert seen == [1, 2, 3]


def test_manual_clock_does_not_go_back() -> None:
    with pytest.raises(ValueError, match="does not go back"):
        ManualClock().advance(-1)
