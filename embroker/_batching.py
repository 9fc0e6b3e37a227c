"""When the listener reads a ready client: at once, or after letting it write on (a pause).

Theory of operation
-------------------
A read costs the loop a turn (a select, a recv, the broker's lock, a send) whatever it holds, so
a client that streams (publishes without confirms, acks deliveries, fills a transaction) is
worth reading many frames at a time; a client that waits for each answer (a publish and then
its confirm, a declare, a ``basic.get``) is worth reading at once, since every microsecond the
loop waits is a microsecond added to its round trip. The listener asks :class:`BatchingPolicy`
which is which, once per turn, with what it saw passed in:

- the ready clients (:class:`Readiness`): whether each one's last read was *answered* (it got
  something back: a confirm, a ``declare-ok``... so it may be waiting for the next answer
  now), whether that read held :attr:`BatchingPolicy.pipelined` commands or more unanswered
  (it *streams*), and how many deliveries it holds unacknowledged as a consumer;
- how long the select waited for them (a select that answers at once found bytes waiting);
- the bytes waiting in each socket (``FIONREAD``, :func:`waiting`), and whether they end with a
  whole command other than a publish (:func:`ends_in_command`, looked at with ``MSG_PEEK``);
- a clock (:class:`Pacer`) the policy reads and sleeps on.

It answers with a :class:`Plan`: the clients to read at once, and those to read after a pause
(:meth:`BatchingPolicy.pause`). The listener reads the first group and *writes their answers*
before it pauses for the second: a request/response client is never made to wait for a
pipelining one's batch (``tests/server/test_listener_batching.py`` pins that order).

The rules, each measured (see the constants' notes for the figures):

1. A consumer holding two deliveries or more unacknowledged, with fewer than half of their acks
   waiting, is held: the policy looks again after :attr:`~BatchingPolicy.hold_step` and, if
   more acks came, sleeps for as long as the rest of half of them take at that pace (at most
   :attr:`~BatchingPolicy.hold_max`). One read then takes many acks, one write many deliveries.
2. A client whose last read went unanswered and whose select answered at once (bytes were
   waiting), or that streams and does not end with a command it may wait on, is let go on
   writing: steps of :attr:`~BatchingPolicy.pause_step`, twice as long each time while it keeps
   sending, up to :attr:`~BatchingPolicy.hold_max` in all. On one CPU, the policy first gives
   the CPU away (``os.sched_yield``): a client that wrote nothing more meanwhile waits for an
   answer and is read at once.
3. Every other client is read at once: a client whose last read completed one command and got
   an answer may be waiting for the next answer, whatever the timing says. A read that
   completed no command (pika sends a publish's three frames in three send()s) says nothing
   new, and one that completed several and got answers is a pipeliner (a window of
   confirms). (Before this rule a quick select alone meant "streaming": with the machine busy,
   pika confirming one by one in the listener's process paid two pauses a message, 1,560
   msg/s; now none, 6,000-7,000 msg/s, on the same run.)

The policy is asked on every turn, so its common answer (read everything at once) builds
nothing, and a consumer's deliveries in hand are counted by the listener when deliveries are
written or acks read, not at select time: what the loop does between a select and a read is on
every round trip's path.

Nothing here reads the wall clock or a socket on its own: :class:`SystemPacer` and the two
socket functions are what the listener passes in, and the tests pass recorders.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from .amqp091 import methods

if TYPE_CHECKING:
    from ._tls import TLSSocket

try:
    from fcntl import ioctl
    from termios import FIONREAD
except ImportError:  # (Windows: nothing counts what waits: no hold for acks, one fixed pause)
    ioctl = None  # type: ignore[assignment]

__all__ = ["BatchingPolicy", "Pacer", "Plan", "Readiness", "SystemPacer", "ends_in_command",
           "on_one_cpu", "waiting"]

#: The size of a basic.ack frame: the bytes waiting in a socket over it count the acks there.
ACK_FRAME: Final = 21
#: An AMQP 0-9-1 frame's payload size, 3 bytes into its header (after type and channel).
_FRAME_SIZE = struct.Struct(">I")
#: basic.publish's class and method ids, as a method frame's payload begins.
_PUBLISH_ID = methods.BasicPublish.INDEX.to_bytes(4, "big")
#: At most this many waiting bytes are looked at to see whether a pipelining client's last
#: command may wait for an answer; more than that is a client still streaming.
PEEK_MAX: Final = 4096


class Pacer(Protocol):
    """The clock the policy reads and waits on."""

    def perf_counter(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...

    def sched_yield(self) -> None: ...


class SystemPacer:
    """The real clock: ``time.perf_counter``, ``time.sleep`` and ``os.sched_yield``."""

    perf_counter = staticmethod(time.perf_counter)
    sleep = staticmethod(time.sleep)
    sched_yield = staticmethod(getattr(os, "sched_yield", lambda: None))


class Readiness(Protocol):
    """What the policy reads of a ready client (the listener's client object has these)."""

    #: Its socket (a TLS one's bytes are counted and looked at as they came: ciphertext).
    sock: socket.socket | TLSSocket
    #: Its last read got an answer: it may be waiting for the next one.
    answered: bool
    #: Its last read held ``pipelined`` commands or more, none answered (and it is no consumer
    #: with acks to come).
    streams: bool

    def unacked(self) -> int:
        """Deliveries it holds unacknowledged as a consumer (0: none, or not AMQP 0-9-1)."""
        ...


@dataclass(frozen=True, slots=True)
class Plan:
    """The policy's answer for one turn: read ``now`` at once (and write their answers), then
    pause (:meth:`BatchingPolicy.pause`) and read ``later``."""

    now: Sequence[Any]
    later: Sequence[Any] = ()
    #: The consumers the pause is for (rule 1): their acks, not a stream, are waited for.
    holding: bool = False


def waiting(sock: socket.socket | TLSSocket) -> int:
    """How many bytes ``sock`` has waiting to be read (0 if it cannot tell)."""
    fileno = sock.fileno()
    if ioctl is None or fileno < 0:  # (closed: while the loop served the clients read at once)
        return 0
    buffer = bytearray(4)
    try:
        ioctl(fileno, FIONREAD, buffer)
    except OSError:
        return 0
    return int.from_bytes(buffer, sys.byteorder)


def ends_in_command(sock: socket.socket | TLSSocket) -> bool:
    """Whether the bytes waiting in ``sock`` (looked at, not read) end with a whole method
    frame other than basic.publish's."""
    count = waiting(sock)
    if not count or count > PEEK_MAX:
        return False
    try:
        data = sock.recv(count, socket.MSG_PEEK)
    except OSError:
        return False
    end, pos, last = len(data), 0, -1
    while pos + 7 <= end:  # the frames' headers alone, to the last one
        last, pos = pos, pos + _FRAME_SIZE.unpack_from(data, pos + 3)[0] + 8
    if pos != end or last < 0 or data[last] != 1:
        return False  # a frame still coming, or content
    return data[last + 7:last + 11] != _PUBLISH_ID


def on_one_cpu() -> bool:
    """Whether this thread may run on one CPU only (``False`` where the platform cannot tell)."""
    try:
        return len(os.sched_getaffinity(0)) == 1
    except (AttributeError, OSError):
        return False


@dataclass
class BatchingPolicy:
    """Which ready clients the listener reads at once and which after a pause, and the pause.

    Every input is passed in (the module's docstring has the rules); the defaults are the
    measured ones. ``enabled=False`` reads every client at once (no pause, no hold).
    """

    pacer: Pacer = field(default_factory=SystemPacer)
    #: The bytes waiting in a socket; ``None``: the platform cannot count them (no hold, and a
    #: quick select alone means a stream, paused for once, ``pause_step``).
    waiting: Callable[[socket.socket | TLSSocket], int] | None = \
        waiting if ioctl is not None else None
    ends_in_command: Callable[[socket.socket | TLSSocket], bool] = ends_in_command
    #: The loop's thread may run on one CPU only (``on_one_cpu``, read as the loop starts).
    one_cpu: bool = False
    enabled: bool = True
    #: A select that answers within this found input waiting already. (pika publishing without
    #: confirms, in the listener's process: it hands the interpreter lock to the loop at every
    #: send(); read at once, each read would hold one publish and cost a whole turn:
    #: benchmarks/loopback.py's pipelined lines 0.36-0.55x RabbitMQ's rate without the pause,
    #: 0.58-0.99x with a fixed 200 us, about half the loop's CPU per message; tx 0.9x -> 1.1x
    #: with the steps.)
    streaming: float = 0.00005
    #: The first step of the pause for a streaming client; the next ones are twice as long.
    pause_step: float = 0.0001
    #: Commands in one read (none of them answered) that make a client one that pipelines
    #: (pika's transactions: a publish every 40 us, read 125 us after the write in the median;
    #: 5 -> 18.5 messages a turn, 0.81-0.85x RabbitMQ's rate -> 1.06-1.12x).
    pipelined: int = 3
    #: The consumer's hold: the first look, and the most the hold or a pause lasts in all
    #: (pika consuming at prefetch 100 in the listener's process: 0.95x RabbitMQ's rate ->
    #: 1.10x; in another process, prefetch 10 from 15k msg/s to 20k).
    hold_step: float = 0.00005
    hold_max: float = 0.001

    def plan(self, ready: Sequence[Readiness], waited: float) -> Plan | None:
        """Split the clients ready for reading; ``waited``: how long the select took. ``None``:
        read every one at once (the common case, answered without building anything: the
        loop asks on every turn, and a round trip pays for what it costs)."""
        count = self.waiting
        if count is not None:
            for client in ready:  # rule 1: a consumer whose acks are coming
                wanted = client.unacked() // 2
                if wanted >= 1 and count(client.sock) // ACK_FRAME < wanted:
                    return Plan([c for c in ready if c is not client], (client,), True)
        if waited < self.streaming:  # rule 2: bytes were waiting, from a client unanswered
            later = [c for c in ready if not c.answered]
        elif count is not None:  # ... or one that pipelines and is still writing
            later = [c for c in ready if not c.answered and c.streams
                     and not self.ends_in_command(c.sock)]
        else:
            return None
        if not later:
            return None  # rule 3: each may wait for an answer
        return Plan([c for c in ready if c not in later], later)

    def pause(self, plan: Plan) -> None:
        """Let ``plan.later`` go on writing (rule 1 or 2) before the listener reads them."""
        if not plan.later:
            return
        if plan.holding:
            self._hold(plan.later[0])
        else:
            self._let_stream([client.sock for client in plan.later])

    def _hold(self, client: Readiness) -> None:
        count, pacer = self.waiting, self.pacer
        assert count is not None  # (plan holds only where bytes can be counted)
        wanted = client.unacked() // 2
        before = count(client.sock) // ACK_FRAME
        pacer.sleep(self.hold_step)  # how fast do they come?
        came = count(client.sock) // ACK_FRAME - before
        missing = wanted - before - came
        if came > 0 and missing > 0:  # the rest of the wait in one sleep, at that pace
            pacer.sleep(min(missing * self.hold_step / came, self.hold_max - self.hold_step))

    def _let_stream(self, socks: list[socket.socket]) -> None:
        count, pacer = self.waiting, self.pacer
        if count is None:
            pacer.sleep(self.pause_step)
            return
        total = sum(map(count, socks))
        if self.one_cpu:
            pacer.sched_yield()
            before, total = total, sum(map(count, socks))
            if total == before:
                return  # (none of them is still writing: each waits for an answer)
        step, held = self.pause_step, 0.0
        while True:
            pacer.sleep(step)
            held += step
            before, total = total, sum(map(count, socks))
            rest = self.hold_max - held
            if total == before or rest < self.hold_step / 10:  # (stopped, or all of it waited)
                return
            step = min(2 * step, rest)
