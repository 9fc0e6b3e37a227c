"""kombu (and Celery) over an in-memory link: the ``embroker://`` transport.

::

    import embroker.memory.kombu                     # registers embroker:// with kombu
    with kombu.Connection(broker.kombu_url) as conn: # embroker://guest:guest@embroker-memory-1//
        conn.SimpleQueue("jobs").put({"n": 1})

The transport is kombu's py-amqp transport with one change: py-amqp's socket transport is
replaced by one over a :class:`~embroker.memory.MemoryLink`. Every frame is py-amqp's own
(its connection, channels, method framing and content encoding); the broker reads them when
py-amqp reads, in the same thread.

Waiting: when py-amqp waits for frames that are not there (``drain_events(timeout=...)``),
with a :class:`~embroker.ManualClock` the wait ends at once with ``socket.timeout`` (time does
not pass by itself: the test moves it); with the system clock it waits (real time, up to the
timeout) for another thread to give it something.

The transport says it is not asynchronous, so a Celery worker uses its blocking loop (the
"synloop", ``drain_events`` with a timeout) and needs no file descriptor at all.

Needs kombu and py-amqp (test dependencies, not embroker's).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import kombu.transport
from amqp.transport import _AbstractTransport, to_host_port
from kombu.transport import pyamqp

from ..model._clock import ManualClock
from ._link import MemoryLink, links
from ._urls import target_of

if TYPE_CHECKING:
    from ..model import Broker

__all__ = ["Transport", "register"]

_PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"


class _MemoryTransport(_AbstractTransport):  # type: ignore[misc]
    """py-amqp's transport over a :class:`MemoryLink` (what its TCPTransport is)."""

    connected: bool
    _read_buffer: bytes

    def __init__(self, host: str, connect_timeout: float | None = None, ssl: Any = False,
                 read_timeout: float | None = None, write_timeout: float | None = None,
                 socket_settings: Any = None, **kwargs: Any) -> None:
        super().__init__(host, connect_timeout=connect_timeout, read_timeout=read_timeout,
                         write_timeout=write_timeout, socket_settings=socket_settings,
                         **kwargs)
        self.link: MemoryLink | None = None
        self._timeout: float | None = None
        self._wake = threading.Event()

    def __repr__(self) -> str:
        return f"<embroker memory transport {self.link.peer if self.link else '(disconnected)'}>"

    def connect(self) -> None:
        if self.connected:
            return
        host, _port = to_host_port(f"{self.host}:{self.port}")
        found = target_of(host)
        if found is None:
            raise OSError(f"{host!r} names no embroker broker: make the URL with "
                          "broker.kombu_url")
        # (a stopped node: ConnectionRefusedError, which kombu's failover passes over)
        self.link = MemoryLink(found[0], notify=self._wake.set, node=found[1])
        self.link.send(_PROTOCOL_HEADER)
        self.connected = True

    @contextmanager
    def having_timeout(self, timeout: float | None) -> Iterator[None]:
        previous, self._timeout = self._timeout, timeout
        try:
            yield None
        finally:
            self._timeout = previous

    def _write(self, s: bytes) -> None:
        if self.link is None or self.link.eof:
            raise OSError("Server unexpectedly closed connection")
        self.link.send(bytes(s))
        self.link.pump()  # a publisher that never reads still has its publishes read

    def _read(self, n: int, initial: bool = False) -> bytes:
        link = self.link
        rbuf: bytes = self._read_buffer
        try:
            while len(rbuf) < n:
                if link is None:
                    raise OSError("Server unexpectedly closed connection")
                link.pump()
                data = link.receive()
                if data:
                    rbuf += data
                    continue
                if link.eof:
                    raise OSError(link.lost or "Server unexpectedly closed connection")
                self._wait(link.broker)
        except BaseException:
            self._read_buffer = rbuf
            raise
        result, self._read_buffer = rbuf[:n], rbuf[n:]
        return bytes(result)

    def _wait(self, broker: Broker) -> None:
        # Nothing to read: on a virtual clock time does not pass by itself (a timeout ends
        # the wait at once); on the real one, another thread may give us something.
        timeout = self._timeout
        # No other thread can give us anything: none runs an in-memory client of this broker
        # (threads of other libraries, a Spark session's, do not count).
        me = threading.current_thread()
        alone = not any(other.owner is not me and other.owner.is_alive()
                        for other in links(broker))
        if isinstance(broker.clock, ManualClock) and not broker.transports.listening and alone:
            if timeout is None:
                from ._loop import Deadlock

                raise Deadlock("an in-memory kombu client waits with no timeout, but nothing "
                               "is in flight: it would wait forever")
            raise TimeoutError("timed out")  # (socket.timeout: "no frame yet" to py-amqp)
        if not self._wake.wait(0.05 if timeout is None else min(timeout, 0.05)) \
                and timeout is not None:
            raise TimeoutError("timed out")
        self._wake.clear()

    def close(self) -> None:
        if self.link is not None:
            self.link.close()
            self.link = None
        self.connected = False

    @property
    def peer(self) -> str:
        return self.link.peer if self.link is not None else ""


class _Connection(pyamqp.Connection):
    """py-amqp's connection (with kombu's channel class) over a memory transport."""

    def Transport(self, host: str, connect_timeout: float | None, ssl: Any = False,
                  read_timeout: float | None = None, write_timeout: float | None = None,
                  socket_settings: Any = None, **kwargs: Any) -> _MemoryTransport:
        return _MemoryTransport(host, connect_timeout, ssl, read_timeout, write_timeout,
                                socket_settings, **kwargs)


class Transport(pyamqp.Transport):
    """kombu's ``embroker://`` transport: kombu's py-amqp transport over an in-memory link."""

    Connection = _Connection
    driver_name = "embroker"
    implements = pyamqp.Transport.implements.extend(asynchronous=False, heartbeats=False)

    def register_with_event_loop(self, connection: Any, loop: Any) -> None:
        raise NotImplementedError("the embroker:// transport has no file descriptor: "
                                  "run consumers with drain_events (Celery: its synloop)")


def register() -> None:
    """Register ``embroker://`` with kombu (done on import of this module)."""
    kombu.transport.TRANSPORT_ALIASES["embroker"] = "embroker.memory.kombu:Transport"


register()
