"""aiormq and aio-pika over an in-memory link, driven by the running event loop.

::

    from embroker.memory.aio import connect

    connection = await connect(broker)               # an aio_pika.Connection, no socket
    # or: aio_pika.connect(broker_url, connection_class=Connection) with url = memory_url(broker)
    # or: aiormq.Connection(memory_url(broker), transport_factory=TransportFactory())

The client's streams (asyncio's ``StreamReader``/``StreamWriter``, what aiormq reads and writes)
sit on a transport whose other end is a :class:`~embroker.memory.MemoryLink`: what the client
writes is read by the broker in a callback of the same event loop (all the writes of one loop
turn together, as one read), and what the broker answers is handed to the client's stream in
that callback. No socket, no thread; ``await broker.settle_async()`` returns once the links,
the broker and every task of the loop are quiet (nothing runnable is left).

aiormq's own timers (heartbeats, timeouts) run on the event loop's time, not on the broker's
clock: :func:`memory_url` turns heartbeats off by default, as a client that runs while a test
moves a :class:`~embroker.ManualClock` in steps would send none in virtual time (the time a
client does not run is not counted as its silence: see :mod:`embroker.memory._link`).

Needs aiormq (aio-pika's transport; test dependencies, not embroker's).
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

import aio_pika
import aiormq
from aiormq.connection import TransportFactory as _TransportFactory
from yarl import URL

from ._link import MemoryLink
from ._urls import memory_url, target_of

if TYPE_CHECKING:
    from ..model import Broker, Node

__all__ = ["Connection", "RobustConnection", "TransportFactory", "connect", "memory_url"]

class _Transport(asyncio.Transport):
    """asyncio's transport over a :class:`MemoryLink`, pumped by callbacks of its loop."""

    def __init__(self, link: MemoryLink, protocol: asyncio.Protocol,
                 loop: asyncio.AbstractEventLoop) -> None:
        super().__init__({"peername": (link.peer, 0), "sockname": ("embroker", 0)})
        self.link = link
        self._protocol = protocol
        self._loop = loop
        self._thread = threading.get_ident()
        self._scheduled = False
        self._closing = False
        self._lost = False

    # the client's side
    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing:
            return
        self.link.send(bytes(data))
        self._schedule()

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def can_write_eof(self) -> bool:
        return False

    def is_closing(self) -> bool:
        return self._closing

    def get_write_buffer_size(self) -> int:
        return self.link.pending

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._loop.call_soon(self._close)

    def abort(self) -> None:
        self.close()

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._protocol

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        assert isinstance(protocol, asyncio.Protocol)
        self._protocol = protocol

    def pause_reading(self) -> None:
        pass  # what the broker sends waits in the link anyway

    def resume_reading(self) -> None:
        pass

    def is_reading(self) -> bool:
        return not self._lost

    # the loop's side
    def _schedule(self) -> None:
        if self._scheduled or self._lost:
            return
        self._scheduled = True
        if threading.get_ident() == self._thread:
            self._loop.call_soon(self._pump)
        else:  # a delivery another thread caused (a TCP client served by a listener)
            self._loop.call_soon_threadsafe(self._pump)

    def _pump(self) -> None:
        self._scheduled = False
        if self._lost:
            return
        link = self.link
        link.pump()
        data = link.receive()
        if data:
            self._protocol.data_received(data)
        if link.eof and not link._to_client:
            self._lose(ConnectionResetError(link.lost) if link.lost else None)

    def _close(self) -> None:
        self.link.close()
        self._lose(None)

    def _lose(self, error: Exception | None) -> None:
        if self._lost:
            return
        self._lost = True
        self._closing = True
        self.link.close()
        if error is None:
            self._protocol.eof_received()
        self._protocol.connection_lost(error)

    @property
    def busy(self) -> bool:
        """Whether the transport has a pump due or bytes for either side."""
        link = self.link
        return not self._lost and (self._scheduled or bool(link._to_broker)
                                   or bool(link._to_client))


class TransportFactory(_TransportFactory):
    """aiormq's transport factory for in-memory links: the URL's host names the broker and
    the node of its cluster (:func:`memory_url`); ``aiormq.Connection(url,
    transport_factory=TransportFactory())``. A stopped node refuses the connection
    (``ConnectionRefusedError``, as its closed port): a robust connection tries again."""

    async def create(self, url: URL, **_kwargs: Any,
                     ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        found = target_of(url.host or "")
        if found is None:
            raise aiormq.exceptions.AMQPConnectionError(
                f"{url.host!r} names no embroker broker: make the URL with "
                "broker.memory_url (embroker.memory.memory_url)")
        broker, node = found
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(loop=loop)
        protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
        holder: list[_Transport] = []
        link = MemoryLink(broker, heartbeat=60, notify=lambda: holder[0]._schedule()
                          if holder else None, node=node)
        transport = _Transport(link, protocol, loop)
        holder.append(transport)
        link.reader = transport
        protocol.connection_made(transport)
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        return reader, writer


class _Memory:
    """What makes aio-pika's connection classes use the in-memory transport."""

    async def connect(self, timeout: Any = None) -> None:
        self.kwargs.setdefault("transport_factory", TransportFactory())  # type: ignore[attr-defined]
        await super().connect(timeout)  # type: ignore[misc]


class Connection(_Memory, aio_pika.Connection):
    """aio-pika's ``Connection`` over an in-memory link (its ``connection_class``)."""


class RobustConnection(_Memory, aio_pika.RobustConnection):
    """aio-pika's ``RobustConnection`` over an in-memory link: it reconnects, in memory,
    after a fault closes it."""


async def connect(broker: Broker, vhost: str = "/", *, robust: bool = False,
                  name: str | None = None, node: Node | None = None,
                  **kwargs: Any) -> aio_pika.abc.AbstractConnection:
    """``aio_pika.connect`` to ``broker`` (its ``node``: the first by default) over an
    in-memory link (``robust``: ``connect_robust``). ``kwargs`` go to aio-pika."""
    url = memory_url(broker, vhost, name=name, node=node)
    connection: aio_pika.abc.AbstractConnection
    if robust:
        connection = await aio_pika.connect_robust(url, connection_class=RobustConnection,
                                                   **kwargs)
    else:
        connection = await aio_pika.connect(url, connection_class=Connection, **kwargs)
    return connection
