"""What the broker closed on its clients: the operations it refused, the connections it dropped.

A channel or connection error the broker sends (channel.close or connection.close: a reply
code, its text and the method that caused it) and a connection it drops without one (a client
silent past its heartbeat timeout, a handshake never finished) leave an :class:`Incident` in
``broker.incidents``. An application may swallow the error its client raised, or never notice
that its connection went; a failed test's report (pytest-embroker's ``embroker`` section) lists
them, with when they happened. Each protocol records them where it closes (AMQP 0-9-1's one
place that closes, its heartbeat check, the in-process client's error path); the broker keeps
the last :data:`INCIDENTS_KEPT`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, final

if TYPE_CHECKING:
    from ._broker import Broker

__all__ = ["INCIDENTS_KEPT", "Incident", "Incidents"]

#: How many incidents the broker keeps (the oldest go first).
INCIDENTS_KEPT: Final = 100


@final
@dataclass(frozen=True, slots=True)
class Incident:
    """The broker closed a channel or a connection of a client."""

    #: When, on the broker's clock: ``clock.monotonic()`` (a ManualClock's virtual seconds).
    at: float
    #: The same moment as ``clock.time()`` (seconds since the epoch).
    wall: float
    #: The connection, as the broker's log names it
    #: (``"connection 127.0.0.1:5312 ('billing', user 'guest', vhost '/')"``).
    connection: str
    #: The channel closed; 0 when the connection was.
    channel: int
    reply_code: int
    #: RabbitMQ's reply text (``"NOT_FOUND - no queue 'q' in vhost '/'"``).
    reply_text: str
    #: The method refused (``"queue.declare"``; the in-process client's ``"queue_declare()"``),
    #: ``""`` when no method caused it.
    method: str = ""
    #: The connection was dropped: its socket closed with no connection.close the client could
    #: read (missed heartbeats, a handshake not finished in time).
    dropped: bool = False

    def __str__(self) -> str:
        if self.dropped:
            what = f"{self.connection} dropped"
        elif self.channel:
            what = f"channel {self.channel} of {self.connection} closed"
        else:
            what = f"{self.connection} closed"
        refused = f" (refusing {self.method})" if self.method else ""
        return f"{what}: {self.reply_code} {self.reply_text}{refused}"


@final
class Incidents:
    """The broker's last :data:`INCIDENTS_KEPT` incidents, oldest first (``broker.incidents``);
    iterating takes the broker's lock for its snapshot."""

    __slots__ = ("_broker", "_kept")

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._kept: deque[Incident] = deque(maxlen=INCIDENTS_KEPT)

    def record(self, connection: str, reply_code: int, reply_text: str, *, channel: int = 0,
               method: str = "", dropped: bool = False) -> Incident:
        """Keep what the broker closed now (the protocols call it under the broker's lock)."""
        clock = self._broker.clock
        incident = Incident(clock.monotonic(), clock.time(), connection, channel, reply_code,
                            reply_text, method, dropped)
        self._kept.append(incident)
        return incident

    def clear(self) -> None:
        """Forget them (a shared broker's reset between tests)."""
        with self._broker.locked():
            self._kept.clear()

    def __iter__(self) -> Iterator[Incident]:
        with self._broker.locked():
            return iter(list(self._kept))

    def __len__(self) -> int:
        return len(self._kept)

    def __getitem__(self, index: int) -> Incident:
        with self._broker.locked():
            return self._kept[index]

    def __repr__(self) -> str:
        return f"<Incidents: {len(self._kept)} kept>"
