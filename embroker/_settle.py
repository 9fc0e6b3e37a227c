"""Quiescence: a barrier instead of sleeps.

``broker.settle()`` returns when nothing is in flight: every connection's input has been read and
processed, every frame the broker owes has been written, consumers with room have been given
what their queues hold, and no timer is due. The model's part is checked here, under the
broker's lock; each running listener checks its own part (sockets, buffers) on its loop's thread
when asked (``Server.settle_report``), so that the answer is a consistent snapshot.

Without a running listener nobody else runs the timers that fall due (expiry with a
:class:`~embroker.SystemClock`), so settling runs them, as ``broker.tick()`` does.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import Broker, Queue

__all__ = ["SettleTimeout", "busy", "drained", "settle", "settle_async", "wait_until_drained",
           "wait_until_drained_async"]


class SettleTimeout(AssertionError):
    """The broker did not settle in time; the message says what was still busy."""

    def __init__(self, what: str, timeout: float, reasons: list[str]) -> None:
        self.reasons = reasons
        listed = "\n".join(f"- {reason}" for reason in reasons)
        super().__init__(f"{what} within {timeout}s; still busy:\n{listed}")


def _consumer_with_room(queue: Queue) -> Any:
    if queue.single_active:
        active = getattr(queue, "_active", None)  # the one consumer that may take messages
        return active if active is not None and active.has_capacity() else None
    return next((c for c in queue.consumers if c.has_capacity()), None)


def busy(broker: Broker) -> list[str]:
    """What the model still has to do, in words (empty when it is quiet). Call under the
    broker's lock."""
    reasons = []
    clock = broker.clock
    deadline = clock.next_deadline()
    now = clock.monotonic()
    if deadline is not None and deadline <= now:
        reasons.append(f"a timer is due (deadline {deadline:.3f}, now {now:.3f} on the broker "
                       "clock): expiry or dead-lettering to run")
    for vhost in broker.vhosts.values():
        for queue in vhost.queues.values():
            if queue.message_count and queue.consumer_count:
                consumer = _consumer_with_room(queue)
                if consumer is not None:
                    reasons.append(f"{queue.resource} holds {queue.message_count} ready "
                                   f"message(s) and its consumer '{consumer.tag}' has room")
    return reasons


#: When the time is up and a listener's loop was too busy to say what it still had to do (a
#: loaded machine, a short timeout), it gets this long more to say it: the failure then names
#: the cause (a stalled client, unread input) rather than only that the loop did not answer.
_REPORT_GRACE = 1.0
_UNANSWERED = "did not answer in time"


def _pass(broker: Broker, remaining: float) -> list[str]:
    with broker.locked():
        if not broker.transports.listening:
            broker.clock.run_due()  # nobody else runs them
    # Each transport first: an in-memory link reads and answers what its client wrote (in this
    # thread), a listener answers from its own loop; then the broker's own state.
    reasons: list[str] = []
    for transport in broker.transports:
        reasons.extend(transport.settle_report(max(remaining, 0.001)))
    with broker.locked():
        return busy(broker) + reasons


def settle(broker: Broker, timeout: float = 5.0) -> None:
    """Wait until the broker is quiet (see the module's docstring).

    Raises:
        SettleTimeout: ``timeout`` seconds passed; says what was still busy.
    """
    __tracebackhide__ = True
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while True:
        reasons = _pass(broker, deadline - time.monotonic())
        if not reasons:
            return
        if time.monotonic() >= deadline:
            if _UNANSWERED in "".join(reasons):  # say what it is busy with, not just that
                reasons = _pass(broker, _REPORT_GRACE) or reasons
            raise SettleTimeout("the broker did not settle", timeout, reasons)
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


def _transports_busy(broker: Broker) -> list[str]:
    # The asyncio transports of in-memory links (embroker.memory.aio) with bytes in flight.
    from .memory import MemoryLink

    return [f"in-memory connection {link.peer}: bytes in flight"
            for link in broker.transports.of(MemoryLink) if link.reader is not None and link.reader.busy]


#: Without a view of the loop's ready callbacks (a loop other than asyncio's own), this many
#: quiet turns in a row count as quiet.
_QUIET_TURNS = 20


async def settle_async(broker: Broker, timeout: float = 5.0) -> None:
    """:func:`settle` for asyncio tests: yields to the event loop while it waits, so the
    application's tasks (an aio-pika consumer...) run meanwhile.

    With no listener running (in-memory clients only) it is exact and takes no real time: it
    returns at the first turn of the loop where the broker and its in-memory links are quiet
    and no task of the loop is ready to run (each waits for something that needs time to pass).
    """
    __tracebackhide__ = True
    deadline = time.monotonic() + timeout
    loop = asyncio.get_running_loop()
    if not broker.transports.listening:
        ready = getattr(loop, "_ready", None)
        quiet = 0
        while True:
            reasons = _pass(broker, 0.0) + _transports_busy(broker)
            if reasons:
                quiet = 0
            elif ready is not None:
                if not ready:
                    return
            else:
                quiet += 1
                if quiet >= _QUIET_TURNS:
                    return
            if time.monotonic() >= deadline:
                raise SettleTimeout("the broker did not settle", timeout,
                                    reasons or ["tasks of the event loop kept running"])
            await asyncio.sleep(0)
    delay = 0.0005
    while True:
        # A listener answers from its own thread; asking blocks for a moment at most.
        reasons = await loop.run_in_executor(None, _pass, broker, deadline - time.monotonic())
        reasons += _transports_busy(broker)
        if not reasons:
            return
        if time.monotonic() >= deadline:
            if _UNANSWERED in "".join(reasons):
                reasons = await loop.run_in_executor(
                    None, _pass, broker, _REPORT_GRACE) or reasons
            raise SettleTimeout("the broker did not settle", timeout, reasons)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.02)


def drained(broker: Broker, queue: str, vhost: str = "/") -> str | None:
    """``None`` when ``queue`` holds no ready and no unacknowledged message; else why not."""
    with broker.locked():
        host = broker.vhosts.get(vhost)
        found = host.queues.get(queue) if host is not None else None
        if found is None:
            names = sorted(host.queues) if host is not None else []
            raise AssertionError(f"no queue {queue!r} in vhost {vhost!r}; the queues are {names}")
        if not found.message_count and not found.unacked:
            return None
        return (f"{found.resource} holds {found.message_count} ready and {found.unacked} "
                f"unacknowledged message(s), {found.consumer_count} consumer(s)")


def wait_until_drained(broker: Broker, queue: str, timeout: float = 5.0, *,
                       vhost: str = "/") -> None:
    """Wait until ``queue`` is empty and every message it delivered is acknowledged, settling
    the broker between looks.

    Raises:
        SettleTimeout: ``timeout`` seconds passed; says what the queue still holds.
        AssertionError: there is no such queue.
    """
    __tracebackhide__ = True
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while True:
        left = max(deadline - time.monotonic(), 0.001)
        reasons = _pass(broker, left)
        state = drained(broker, queue, vhost)
        if state is None and not reasons:
            return
        if time.monotonic() >= deadline:
            raise SettleTimeout(f"queue {queue!r} was not drained", timeout,
                                [r for r in (state, *reasons) if r])
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


async def wait_until_drained_async(broker: Broker, queue: str, timeout: float = 5.0, *,
                                   vhost: str = "/") -> None:
    """:func:`wait_until_drained` for asyncio tests (the event loop runs while it waits)."""
    __tracebackhide__ = True
    deadline = time.monotonic() + timeout
    delay = 0.0005
    loop = asyncio.get_running_loop()
    while True:
        reasons = await loop.run_in_executor(None, _pass, broker, deadline - time.monotonic())
        state = drained(broker, queue, vhost)
        if state is None and not reasons:
            return
        if time.monotonic() >= deadline:
            raise SettleTimeout(f"queue {queue!r} was not drained", timeout,
                                [r for r in (state, *reasons) if r])
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.02)
