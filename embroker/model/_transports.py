"""What carries clients to a broker, registered with it: the public hooks of the transports.

Theory of operation
-------------------
A broker is reached through transports: the listener (:class:`embroker.server.Server`, its
sockets and loop thread) and the in-memory links (:class:`embroker.memory.MemoryLink`, one per
client of a library adapter). Each one registers itself with ``broker.transports.add`` as it
starts and leaves with ``remove``; the broker then tells every registered transport of its own
events (a resource alarm blocks publishers, a restart, a node of the cluster stopping), and
``broker.settle()`` and the test helpers ask each one what it still has to do, without knowing
what kind it is.

The model itself does no I/O: a transport is an object with the methods of :class:`Transport`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from ._node import Node

__all__ = ["Transport", "Transports"]

T = TypeVar("T")


class Transport(Protocol):
    """What a broker asks of a transport registered with it."""

    @property
    def runs_timers(self) -> bool:
        """Its own thread runs the broker's timers (a running listener's loop); when no
        transport does, ``settle()`` runs the timers that are due."""
        ...

    def on_blocked(self, blocked: bool, reason: str) -> None:
        """Publishers are blocked (``reason``) or unblocked: tell the clients that asked
        (``connection.blocked``/``unblocked``). Called under the broker's lock."""
        ...

    def on_restart(self) -> None:
        """The broker restarts: close every connection carried (320 CONNECTION_FORCED).
        Called under the broker's lock."""
        ...

    def on_alarms(self, alarms: tuple[str, ...]) -> None:
        """The resource alarms in effect changed (``"disk"``, ``"memory"``): for what a
        protocol does on its own under them (the stream protocol stops reading during the disk
        alarm). Called under the broker's lock."""
        ...

    def on_node(self, node: Node, running: bool) -> None:
        """``node`` of the cluster stopped or started (:meth:`Node.stop
        <embroker.model.Node.stop>`, however it was called): a listener serving it closes or
        opens its ports, as ``rabbitmqctl stop_app`` and ``start_app`` do. Called under the
        broker's lock, after the model has done its part; it must not wait for another
        thread."""
        ...

    def settle_report(self, timeout: float) -> list[str]:
        """What it still has to do (input not read, output not written, a stall), in words;
        empty when quiet. Called without the broker's lock; it may take ``timeout`` seconds
        to answer (a listener asks its own thread)."""
        ...


class Transports:
    """The transports registered with one broker, oldest first."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: list[Transport] = []

    def add(self, transport: Transport) -> None:
        """Register ``transport`` (once: adding it again does nothing)."""
        if transport not in self._items:
            self._items.append(transport)

    def remove(self, transport: Transport) -> None:
        """Forget ``transport`` (nothing if it is not registered)."""
        if transport in self._items:
            self._items.remove(transport)

    def __iter__(self) -> Iterator[Transport]:
        return iter(list(self._items))  # (a copy: a transport may leave while walked)

    def __len__(self) -> int:
        return len(self._items)

    def of(self, kind: type[T]) -> list[T]:
        """The registered transports that are ``kind`` (``MemoryLink``, ``Server``...)."""
        return [t for t in self._items if isinstance(t, kind)]

    @property
    def listening(self) -> bool:
        """Whether a registered transport runs the broker's timers on a thread of its own."""
        return any(t.runs_timers for t in self._items)

    def blocked(self, blocked: bool, reason: str) -> None:
        """Tell each transport that publishers are blocked or unblocked."""
        for transport in list(self._items):
            transport.on_blocked(blocked, reason)

    def alarms_changed(self, alarms: tuple[str, ...]) -> None:
        """Tell each transport which resource alarms are in effect now."""
        for transport in list(self._items):
            transport.on_alarms(alarms)

    def node_changed(self, node: Node, running: bool) -> None:
        """Tell each transport that ``node`` stopped (``running`` false) or started."""
        for transport in list(self._items):
            transport.on_node(node, running)

    def restarting(self) -> None:
        """Tell each transport that the broker restarts."""
        for transport in list(self._items):
            transport.on_restart()
