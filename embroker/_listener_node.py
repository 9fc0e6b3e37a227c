"""The node's application and its resource alarms (:class:`embroker.server.Server`'s third
role): ``rabbitmqctl stop_app``, ``start_app`` and ``reset``; the memory and disk monitors
(RabbitMQ's vm_memory_monitor and rabbit_disk_monitor, v3.10.8) and the alarms they raise;
and what the broker tells its transports (embroker.model._transports.Transport: blocked
publishers, alarms, a restart).
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ._listener import _Client, _Port
from ._transport import (
    BrokerConnection,
    port_kind,
)
from .errors import (
    PortInUse,
    add_note,
)
from .model._kinds import AlarmBlocking

if TYPE_CHECKING:
    from .model import Broker, Node

try:
    import resource
except ImportError:  # (Windows: no resource usage to read)
    resource = None  # type: ignore[assignment]

log = logging.getLogger("embroker.server")  # (the listener's one logger, whichever role logs)

#: RabbitMQ's memory monitor: the share of the RAM past which the memory alarm is raised, and
#: how often it measures (vm_memory_monitor.erl, rabbit_memory.hrl, v3.10.8: 0.4, 1000 ms);
#: the RAM assumed where it cannot be read (``MEMORY_SIZE_FOR_UNKNOWN_OS``: 1 GiB).
DEFAULT_VM_MEMORY_HIGH_WATERMARK = 0.4
MEMORY_CHECK_INTERVAL = 1.0
_UNKNOWN_TOTAL_MEMORY = 1_073_741_824
#: RabbitMQ's disk monitor (rabbit_disk_monitor.erl, v3.10.8): the free space of the data
#: directory under which the disk alarm is raised (50,000,000 bytes), and how often it looks:
#: ``2 * (free - limit) / 250,000`` ms, between 100 ms and 10 s, every 10 s while alarmed.
DEFAULT_DISK_FREE_LIMIT = 50_000_000
_DISK_MIN_INTERVAL = 0.1
_DISK_MAX_INTERVAL = 10.0
_DISK_FAST_RATE = 250_000  # bytes a millisecond (FAST_RATE)
#: What ``rabbitmqctl reset`` says while the application runs (its CLI, live on 3.10.8).
APP_RUNNING = ("this command requires the 'rabbit' app to be stopped on the target node. "
               "Stop it with 'rabbitmqctl stop_app'.")


class AppRunning(RuntimeError):
    """The broker's application runs: stop it first (:meth:`Server.stop_app`)."""


def memory_used() -> int:
    """This process's resident memory in bytes: ``/proc/self/statm`` (Linux), else the peak
    resident size ``getrusage`` reports (the best a portable call gives)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    if resource is None:
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # (bytes on macOS, else KiB)


def total_memory() -> int:
    """The machine's RAM in bytes (RabbitMQ's 1 GiB where it cannot be read)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return _UNKNOWN_TOTAL_MEMORY
    return total if total > 0 else _UNKNOWN_TOTAL_MEMORY



def _kind(ports: list[_Port], number: int) -> str:
    return next((p.kind for p in ports if p.number == number), "?")




class _Node:
    """The application and the resource alarms of :class:`~embroker.server.Server` (a role of
    it: Server is the one class), and what the broker tells it as one of its transports
    (``on_blocked``, ``on_alarms``, ``on_restart``, ``on_node``)."""

    if TYPE_CHECKING:  # (what it shares with the other roles: Server sets it up)
        broker: Broker
        node: Node
        _locked: AbstractContextManager[object]
        host: str
        data_dir: str
        vm_memory_limit: int
        disk_free_limit: int
        disk_free: int | None
        configured_watermark: tuple[float | None, int | None]
        configured_disk_free_limit: int
        _watermark: tuple[float | None, int | None]
        _memory_due: float
        _disk_due: float
        _monitored: dict[str, bool]
        _running: bool
        _app_running: bool
        _ports: list[_Port]
        _listeners: list[socket.socket]
        _clients: dict[int, _Client]
        _http_clients: dict[int, _Client]

        def _on_loop(self, function: Callable[[], Any], timeout: float = 5.0) -> Any: ...
        def _soon(self, function: Callable[[], Any], what: str) -> None: ...
        def _bind(self, host: str, port: int) -> list[socket.socket]: ...
        def _close_port(self, port: _Port) -> None: ...
        def _select_port(self, port: _Port) -> None: ...
        def _kill(self, client: _Client, *, flush: bool = False, reset: bool = False,
                  reason: str = "dropped by a test (embroker.faults)") -> None: ...
        def _drop(self, client: _Client) -> None: ...
        def _has_output(self, client: _Client) -> None: ...
        def _each_client(self, action: Callable[[_Client], None]) -> None: ...

    # -- the application: rabbitmqctl stop_app, start_app, reset -----------------------------

    @property
    def app_running(self) -> bool:
        """Whether the broker's application runs (``rabbitmqctl stop_app`` stops it)."""
        return self._app_running

    def stop_app(self) -> None:
        """``rabbitmqctl stop_app`` (RabbitMQ 3.10.8): every port stops listening but a control
        port's (AMQP, amqps, AMQP 1.0, stream, management: a client is refused), every client
        connection is closed as a node that stops closes them (AMQP 0-9-1: 320
        CONNECTION_FORCED "broker forced connection closure with reason 'shutdown'"; AMQP
        1.0, stream and HTTP: the socket closes, with no close frame), and the broker
        keeps what a restart keeps (:meth:`Broker.restart <embroker.Broker.restart>`: durable
        exchanges, queues and bindings, persistent messages). The resource alarms end.
        Nothing happens if it is stopped already. Safe from any thread, the loop's too.

        In a cluster of several nodes it stops the node it serves (:attr:`node`:
        :meth:`Node.stop <embroker.model.Node.stop>`, what the other nodes' clients see of
        it) and that node's alarms end; the other nodes' listeners serve on.
        """
        self._in_loop(self._stop_app)

    def start_app(self) -> None:
        """``rabbitmqctl start_app``: the ports listen again on the same numbers, and the
        memory watermark and disk free limit are the configured ones again (as RabbitMQ,
        which reads its configuration again: what ``set_vm_memory_high_watermark`` set is
        gone); in a cluster, its node starts (:meth:`Node.start
        <embroker.model.Node.start>`). Nothing happens if it runs already. Safe from any
        thread.

        Raises:
            PortInUse: one of its ports is taken now (no port listens then: call again once
                it is free).
        """
        self._in_loop(self._start_app)

    def reset(self) -> None:
        """``rabbitmqctl reset``: :meth:`Broker.reset_node <embroker.Broker.reset_node>` (the
        broker as freshly constructed), while the application is stopped.

        Raises:
            AppRunning: the application runs (RabbitMQ's text: :data:`APP_RUNNING`).
        """
        if self._app_running:
            raise AppRunning(APP_RUNNING)
        self._in_loop(self.broker.reset_node)

    def force_reset(self) -> None:
        """``rabbitmqctl force_reset``: on one node, the same as :meth:`reset`."""
        self.reset()

    def _in_loop(self, function: Callable[[], Any]) -> Any:
        # On the loop's thread when it runs (the caller's own thread when that is the loop);
        # in the caller's thread when there is no loop.
        if self._running:
            return self._on_loop(function, timeout=30.0)
        return function()


    def _stop_app(self) -> None:
        if not self._app_running:
            return
        self._app_running = False
        for port in self._ports:
            if port_kind(port.kind).factory is not None:  # (a control port stays)
                self._close_port(port)
        # The connections of a protocol that stops silently see their socket close, with no
        # close frame (AMQP 1.0, live on 3.10.8: proton reports "connection aborted"; the
        # stream protocol's); 0-9-1 clients get their connection.close.
        silent = [client for client in self._clients.values()
                  if client.broker and client.protocol.stops_silently]
        self._monitored.clear()  # (its alarms end with it: the monitors start afresh)
        with self._locked:
            if len(self.broker.nodes) == 1:
                self.broker.restart()  # (each broker connection is told: on_restart)
                for name in self.broker.alarms:
                    self.broker.clear_alarm(name)
            else:  # (its own clients are told, those still logging in too; then its node)
                self.on_restart()
                self.node.stop()
                for name in self.broker.alarms:
                    self.broker.clear_alarm(name, node=self.node)
        for client in silent:
            self._kill(client, reason="the application stopped")
        # Then the others' sockets close too, their close frame sent first, with a reset:
        # RabbitMQ's readers end with the application and its sockets linger 0 (v3.10.8
        # deps/rabbit/Makefile, tcp_listen_options {linger, {true, 0}}), so a client that reads
        # gets its 320, one that writes first meets the reset (live: pika's StreamLostError,
        # py-amqp's ConnectionResetError; tests/cluster/golden/clients/).
        for client in [client for client in self._clients.values()
                       if client.broker and not client.protocol.stops_silently]:
            self._kill(client, flush=True, reset=True, reason="the application stopped")
        for client in [*self._http_clients.values()]:  # stream and HTTP clients go
            if client.kind is None or (client.kind.factory is not None and not (
                    client.broker and not client.protocol.stops_silently)):
                self._drop(client)
        log.info("the application stopped: its ports are closed")

    def _start_app(self) -> None:
        if self._app_running:
            return
        if self.node not in self.broker.nodes:  # (before a port opens: it would serve nobody)
            raise RuntimeError(f"inconsistent_cluster: node {self.node} was removed from the "
                               "cluster (forget_cluster_node): it cannot start in it")
        reopened: list[_Port] = []
        try:
            for port in self._ports:
                if port_kind(port.kind).factory is not None and not port.sockets:
                    port.sockets = self._bind(self.host, port.number)
                    reopened.append(port)
        except PortInUse as exc:
            for port in reopened:
                for sock in port.sockets:
                    sock.close()
                    self._listeners.remove(sock)
                port.sockets = []
            add_note(exc, f"start_app: port {exc.port} ({_kind(self._ports, exc.port)}) is "
                          "taken now; the application stays stopped")
            raise
        self._app_running = True
        if len(self.broker.nodes) > 1:
            self.node.start()  # (the model takes the broker's lock)
        for port in reopened:
            self._select_port(port)
        fraction, absolute = self._watermark = self.configured_watermark
        self.vm_memory_limit = int(fraction * total_memory()) if fraction is not None \
            else min(absolute or 0, total_memory())
        self.disk_free_limit = self.configured_disk_free_limit
        self._monitor(time.monotonic(), force=True)
        log.info("the application started: ports %s listen again",
                 ", ".join(str(p.number) for p in reopened))

    # -- resource alarms: rabbitmqctl set_vm_memory_high_watermark, set_disk_free_limit --------

    @property
    def alarms(self) -> list[str]:
        """The resource alarms in effect on any node of the cluster: ``["disk"]``,
        ``["memory"]``, ``["disk", "memory"]`` or ``[]`` (``rabbitmq-diagnostics alarms``,
        which lists the disk alarm first); what blocks publishers."""
        return self.broker.alarms

    @property
    def local_alarms(self) -> list[str]:
        """The resource alarms its node raised itself (``rabbitmq-diagnostics
        check_local_alarms``; a broker of one node: :attr:`alarms`)."""
        return self.broker.alarms_of(self.node)

    @property
    def vm_memory_high_watermark(self) -> float | None:
        """The memory watermark as a share of the RAM (``None`` when set in bytes:
        :attr:`vm_memory_limit`)."""
        return self._watermark[0]

    def memory_used(self) -> int:
        """The memory the memory monitor measures: this process's resident memory, in bytes
        (RabbitMQ measures its Erlang VM's)."""
        return memory_used()

    def set_vm_memory_high_watermark(self, fraction: float | None = None, *,
                                     absolute: int | None = None) -> None:
        """``rabbitmqctl set_vm_memory_high_watermark FRACTION`` (or ``absolute BYTES``): the
        memory alarm is raised while :meth:`memory_used` is above ``fraction`` of the RAM
        (``0``: at once) or ``absolute`` bytes (at most the RAM), and cleared below it. The
        monitor measures now, then every second (RabbitMQ's interval).

        Raises:
            ValueError: neither or both given, a fraction not in 0..1 (RabbitMQ's CLI refuses
                those), or negative bytes.
            RuntimeError: the application is stopped.
        """
        if (fraction is None) == (absolute is None):
            raise ValueError("give a fraction of the RAM, or absolute bytes")
        if fraction is not None and not 0 <= fraction <= 1:
            raise ValueError(f"the memory watermark is a fraction of the RAM from 0 to 1, not "
                             f"{fraction}")
        if absolute is not None and absolute < 0:
            raise ValueError(f"the memory watermark cannot be negative ({absolute} bytes)")
        self._check_app("set_vm_memory_high_watermark")
        total = total_memory()
        limit = int(fraction * total) if fraction is not None else min(absolute or 0, total)

        def apply() -> None:
            self._watermark = (fraction, absolute)
            self.vm_memory_limit = limit
            self._check_memory(time.monotonic())
        self._in_loop(apply)

    def set_disk_free_limit(self, absolute: int | None = None, *,
                            mem_relative: float | None = None) -> None:
        """``rabbitmqctl set_disk_free_limit BYTES`` (or ``mem_relative FRACTION``): the disk
        alarm is raised while the free space of :attr:`data_dir`'s file system is below
        ``absolute`` bytes, or ``mem_relative`` times the RAM; the monitor looks now, then as
        RabbitMQ's does (sooner the nearer the limit: 100 ms to 10 s).

        Raises:
            ValueError: neither or both given, or a negative value.
            RuntimeError: the application is stopped.
        """
        if (absolute is None) == (mem_relative is None):
            raise ValueError("give a limit in bytes, or relative to the RAM (mem_relative)")
        if (absolute if absolute is not None else mem_relative or 0) < 0:
            raise ValueError("the disk free limit cannot be negative")
        self._check_app("set_disk_free_limit")
        limit = absolute if absolute is not None else round((mem_relative or 0) * total_memory())

        def apply() -> None:
            self.disk_free_limit = limit
            self._check_disk(time.monotonic())
        self._in_loop(apply)

    def _check_app(self, command: str) -> None:
        if not self._app_running:
            raise RuntimeError(f"{command}: the application is stopped (RabbitMQ: \"this "
                               "command requires the 'rabbit' app to be running on the target "
                               "node. Start it with 'rabbitmqctl start_app'.\")")

    def _monitor(self, now: float, *, force: bool = False) -> None:
        # On the loop's thread (or with no loop): each monitor when it is due.
        if force or now >= self._memory_due:
            self._check_memory(now)
        if force or now >= self._disk_due:
            self._check_disk(now)

    def _check_memory(self, now: float) -> None:
        # vm_memory_monitor:internal_update/1: alarmed while used > limit.
        self._memory_due = now + MEMORY_CHECK_INTERVAL
        self._set_alarm("memory", memory_used() > self.vm_memory_limit)

    def _check_disk(self, now: float) -> None:
        # rabbit_disk_monitor:internal_update/1: alarmed while free < limit; the next look
        # as its interval/1.
        free = shutil.disk_usage(self.data_dir).free
        self.disk_free = free
        alarmed = free < self.disk_free_limit
        self._set_alarm("disk", alarmed)
        ideal = 2 * (free - self.disk_free_limit) / _DISK_FAST_RATE / 1000
        self._disk_due = now + (_DISK_MAX_INTERVAL if alarmed else
                                max(_DISK_MIN_INTERVAL, min(_DISK_MAX_INTERVAL, ideal)))

    def _set_alarm(self, resource: str, on: bool) -> None:
        # (its node's alarm: each node of a cluster watches its own) Only what changes is
        # told, as rabbit_disk_monitor and vm_memory_monitor set or clear an alarm when the
        # state they found turns: an alarm raised by other means (broker.set_alarm) stays
        # until the monitor's own finding turns.
        if self._monitored.get(resource, False) is on:
            return
        self._monitored[resource] = on
        with self._locked:
            if on:
                self.broker.set_alarm(resource, node=self.node)
            else:
                self.broker.clear_alarm(resource, node=self.node)

    # -- what the broker asks of its transports: embroker.model._transports.Transport -------

    @property
    def runs_timers(self) -> bool:
        return self._running

    def on_blocked(self, blocked: bool, reason: str) -> None:
        # Called under the broker lock, from any thread: the connections of a kind held when
        # they publish are told (each holds itself when it publishes: its blocked says so).
        # (told through its carrier, if any: a carrier passes it on)
        def tell(client: _Client) -> None:
            if client.protocol.kind.alarm_blocking is AlarmBlocking.PUBLISHERS:
                if blocked:
                    client.conn.publishers_blocked(reason)
                else:
                    client.conn.publishers_unblocked()
        self._each_client(tell)

    def on_alarms(self, alarms: tuple[str, ...]) -> None:
        # Called under the broker lock, from any thread: the clients of a kind held from
        # reading by one of these alarms stop or start being read (their blocked says so;
        # the loop looks again once told).
        for client in [*self._clients.values(), *self._http_clients.values()]:
            if not client.broker:
                continue
            conn: BrokerConnection = client.protocol
            kind = conn.kind
            if kind.alarm_blocking is AlarmBlocking.READING:
                conn.held_by_alarm = kind.blocked_by(alarms)
                self._has_output(client)

    def on_node(self, node: Node, running: bool) -> None:
        # Called under the broker lock, from any thread: its node stopped or started in the
        # model (Node.stop() called directly, not through stop_app): its ports follow, as
        # stop_app and start_app have them (each does nothing when they already agree).
        if node is self.node and len(self.broker.nodes) > 1 and running != self._app_running:
            self._soon(self._start_app if running else self._stop_app,
                       f"{'start' if running else 'stop'}_app of node {node}")

    def on_restart(self) -> None:
        # Called under the broker lock, from any thread: every broker connection is told the
        # broker is going down, as a RabbitMQ node that stops does (each closes as its
        # protocol's reader does; a stream connection is told by its model connection).
        self._each_client(lambda client: client.protocol.on_restart())

