"""pika over an in-memory link: the application's own ``BlockingConnection`` and
``SelectConnection``, with no socket and no thread.

::

    from embroker.memory.pika import BlockingConnection

    connection = BlockingConnection(broker)          # or broker.pika_connection()
    channel = connection.channel()
    channel.basic_publish("", "jobs", b"hello")

Both classes are pika's own (subclasses that change only how the stream is made): every frame
is pika's, parsed by embroker's AMQP 0-9-1 connection as it would be from a socket, in the
thread that calls pika. pika's timers (heartbeats, ``connection.sleep``,
``process_data_events(time_limit=...)``, ``call_later``) run on the broker's clock (see
:mod:`embroker.memory._loop` for how time passes while a client waits).

Needs pika (a test dependency; not one of embroker's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pika
import pika.exceptions
from pika.adapters.base_connection import BaseConnection
from pika.adapters.blocking_connection import BlockingChannel as _PikaBlockingChannel
from pika.adapters.blocking_connection import BlockingConnection as _PikaBlockingConnection
from pika.adapters.select_connection import SelectConnection as _PikaSelectConnection
from pika.adapters.utils import nbio_interface

from ._link import MemoryLink
from ._loop import VirtualLoop
from ._urls import target_of

if TYPE_CHECKING:
    from ..model import Broker, Node

__all__ = ["BlockingChannel", "BlockingConnection", "SelectConnection", "VirtualLoop"]


def _heartbeat_timer(callback: Callable[[], Any]) -> bool:
    # pika's heartbeat checker's timers: no progress (see VirtualLoop's ``background``)
    return type(getattr(callback, "__self__", None)).__name__ == "HeartbeatChecker"


class _Transport(nbio_interface.AbstractStreamTransport):  # type: ignore[misc]
    """pika's stream transport over a :class:`MemoryLink` (what the socket transport is)."""

    def __init__(self, link: MemoryLink, connection: SelectConnection, loop: VirtualLoop) -> None:
        self.link = link
        self._connection = connection
        self._loop = loop
        self._aborted = False

    def __repr__(self) -> str:
        return f"<embroker memory transport {self.link.peer}>"

    # pika's side
    def write(self, data: bytes) -> None:
        self.link.send(data)

    def get_write_buffer_size(self) -> int:
        return self.link.pending

    def get_protocol(self) -> SelectConnection:
        return self._connection

    def abort(self) -> None:
        if self._aborted:
            return
        self._aborted = True
        self.link.close()
        self._loop.detach(self)
        self._loop.add_callback(lambda: self._connection._proto_connection_lost(None))

    # the loop's side
    def deliver(self, data: bytes) -> None:
        if not self._aborted:
            self._connection._proto_data_received(data)

    def lost(self) -> None:
        if self._aborted:
            return
        self._aborted = True
        self.link.close()
        self._connection._proto_connection_lost(
            pika.exceptions.StreamLostError(self.link.lost) if self.link.lost else None)
        # (no reason: the broker closed the stream after its connection.close-ok, as a socket
        # reaching EOF; pika reports it as its own close)


class SelectConnection(_PikaSelectConnection):  # type: ignore[misc]
    """pika's ``SelectConnection`` to ``broker`` over an in-memory link.

    Args:
        broker: the broker.
        parameters, on_open_callback, on_open_error_callback, on_close_callback: as pika's
            (host and port are not used; the credentials and virtual host are).
        custom_ioloop: a :class:`VirtualLoop` to share with other connections (one is made
            otherwise: ``connection.ioloop``, with ``start()`` and ``stop()``).
        heartbeat: what the broker offers in connection.tune (seconds of its clock; 0: none).
        name: the link's name for logs and faults (``"memory:N"`` by default).

    The host of ``parameters`` may name a node of the broker's cluster
    (``pika.URLParameters(broker.memory_urls[1])``: ``embroker-memory-1-node2``); any
    other host is its first node. A stopped node refuses it: ``on_open_error_callback`` gets
    ``pika.exceptions.AMQPConnectionError``, as from a closed port.
    """

    def __init__(self, broker: Broker, parameters: pika.connection.Parameters | None = None,
                 on_open_callback: Callable[[Any], Any] | None = None,
                 on_open_error_callback: Callable[[Any, BaseException], Any] | None = None,
                 on_close_callback: Callable[[Any, BaseException], Any] | None = None,
                 custom_ioloop: VirtualLoop | None = None, *, heartbeat: int = 60,
                 name: str | None = None) -> None:
        self._embroker = broker
        self._memory_loop = custom_ioloop if custom_ioloop is not None else VirtualLoop(
            broker, background=_heartbeat_timer)
        self._memory_heartbeat = heartbeat
        self._memory_name = name
        self.link: MemoryLink | None = None
        BaseConnection.__init__(self, parameters, on_open_callback, on_open_error_callback,
                                on_close_callback, self._memory_loop,
                                internal_connection_workflow=True)

    def _adapter_connect_stream(self) -> None:
        loop = self._memory_loop
        try:
            self.link = MemoryLink(self._embroker, heartbeat=self._memory_heartbeat,
                                   name=self._memory_name, notify=loop.wake,
                                   node=_node_of(self._embroker, self.params))
        except ConnectionRefusedError as refused:
            error = pika.exceptions.AMQPConnectionError(refused)
            loop.add_callback(lambda: self._on_stream_terminated(error))
            return
        transport = _Transport(self.link, self, loop)
        loop.attach(transport)
        loop.add_callback(lambda: self._proto_connection_made(transport))

    def _adapter_disconnect_stream(self) -> None:
        if self._transport is not None:
            self._transport.abort()
        else:  # not connected yet: the stream ends before it began
            self._memory_loop.add_callback(lambda: self._on_stream_terminated(None))


class BlockingChannel(_PikaBlockingChannel):  # type: ignore[misc]
    """pika's ``BlockingChannel`` whose ``consume(inactivity_timeout=...)`` waits on the
    broker's clock (pika's own reads the real one)."""

    def consume(self, queue: str, auto_ack: bool = False, exclusive: bool = False,
                arguments: dict[str, Any] | None = None,
                inactivity_timeout: float | None = None) -> Iterator[Any]:
        if inactivity_timeout is None:
            yield from super().consume(queue, auto_ack, exclusive, arguments)
            return
        clock = self.connection._embroker.clock
        nothing = (None, None, None)
        # pika's generator, asked never to wait itself: it yields what is there, or nothing.
        inner = super().consume(queue, auto_ack, exclusive, arguments, inactivity_timeout=0)
        deadline = clock.monotonic() + inactivity_timeout
        for item in inner:
            if item != nothing:
                yield item
                deadline = clock.monotonic() + inactivity_timeout
                continue
            remaining = deadline - clock.monotonic()
            if remaining <= 0:
                yield nothing
                deadline = clock.monotonic() + inactivity_timeout
                continue
            self.connection.process_data_events(time_limit=remaining)


def _each(configs: pika.connection.Parameters | Sequence[pika.connection.Parameters] | None,
          ) -> Sequence[pika.connection.Parameters]:
    if configs is None:
        return [pika.ConnectionParameters()]
    if isinstance(configs, pika.connection.Parameters):
        return [configs]
    if not configs:
        raise ValueError(f"Expected a non-empty sequence of connection parameters, "
                         f"but got {configs!r}.")
    return configs


def _node_of(broker: Broker, params: pika.connection.Parameters) -> Node | None:
    """The node of ``broker`` that ``params``' host names (a memory URL's), else ``None``."""
    found = target_of(params.host or "")
    return found[1] if found is not None and found[0] is broker else None


class BlockingConnection(_PikaBlockingConnection):  # type: ignore[misc]
    """pika's ``BlockingConnection`` to ``broker`` over an in-memory link: every call runs
    the broker's side too, in the calling thread, and returns when pika's own would.

    Args:
        broker: the broker.
        parameters: pika's connection parameters, or a sequence of them (the addresses of
            the cluster's nodes: the first whose node runs is used, as pika walks its list);
            the credentials, virtual host, client properties and heartbeat are what count,
            and a memory URL's host (``embroker-memory-1-node2``) names the node.
        heartbeat: what the broker offers in connection.tune (seconds of its clock; 0: none).
        name: the link's name for logs and faults (``"memory:N"`` by default).

    Raises:
        pika.exceptions.ProbableAuthenticationError, ...: what pika raises when the broker
            refuses the connection (wrong password, no such vhost).
    """

    def __init__(self, broker: Broker,
                 parameters: pika.connection.Parameters
                 | Sequence[pika.connection.Parameters] | None = None, *,
                 heartbeat: int = 60, name: str | None = None) -> None:
        self._embroker = broker
        self._memory_heartbeat = heartbeat
        self._memory_name = name
        super().__init__(parameters)

    def sleep(self, duration: float) -> None:
        """pika's ``sleep``, on the broker's clock (pika's own reads the real one): events are
        processed meanwhile; on a ManualClock the clock moves by ``duration``."""
        assert duration >= 0, duration
        clock = self._embroker.clock
        deadline = clock.monotonic() + duration
        time_limit = duration
        while True:
            self.process_data_events(time_limit)
            time_limit = deadline - clock.monotonic()
            if time_limit <= 0:
                break

    def channel(self, channel_number: int | None = None) -> BlockingChannel:
        """pika's ``channel()``; the channel's ``consume(inactivity_timeout=...)`` measures
        its timeout on the broker's clock."""
        channel = super().channel(channel_number)
        channel.__class__ = BlockingChannel
        return channel  # type: ignore[no-any-return]

    @property
    def link(self) -> MemoryLink:
        """The broker's side of this connection."""
        link: MemoryLink = self._impl.link
        return link

    def _create_connection(self, configs: Any = None, impl_class: Any = None) -> SelectConnection:
        each = _each(configs)
        for params in each[:-1]:  # (pika's walk: a refused node is passed over)
            try:
                return self._connect(params)
            except pika.exceptions.AMQPConnectionError as error:
                if not (error.args and isinstance(error.args[0], ConnectionRefusedError)):
                    raise
        return self._connect(each[-1])

    def _connect(self, params: pika.connection.Parameters) -> SelectConnection:
        done: list[Any] = []
        loop = VirtualLoop(self._embroker, background=_heartbeat_timer)
        try:
            SelectConnection(self._embroker, params, on_open_callback=done.append,
                             on_open_error_callback=lambda _c, error: done.append(error),
                             custom_ioloop=loop, heartbeat=self._memory_heartbeat,
                             name=self._memory_name)
            while not done:
                loop.poll()
                loop.process_timeouts()
        except Exception:
            loop.close()
            self._cleanup()
            raise
        if isinstance(done[0], BaseException):
            loop.close()
            self._cleanup()
            raise done[0]
        connection: SelectConnection = done[0]
        return connection
