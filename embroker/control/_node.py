"""A running embroker as RabbitMQ's tools see a node: a name, a control port, an application.

A :class:`Node` joins a :class:`~embroker.Broker` and the :class:`~embroker.server.Server`
serving it to the tools: it serves the control interface on the server's loop
(``Server.serve_control``, :mod:`._service`), writes the node's registry file
(:mod:`._registry`) so that ``rabbitmqctl -n NAME`` finds it, and answers what the tools ask of
a node (status, listeners, alarms, stop_app...). ``embroker serve`` and ``rabbitmq-server``
both run one.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

from .._listener_plugins import PROTOCOLS
from .._transport import port_kinds
from .._version import __version__
from ..errors import ConnectionForced
from ..management import views
from ..model._plugins import PLUGINS
from ..server import APP_RUNNING, AppRunning, PortInUse
from . import _queue_ops  # noqa: F401  (registers rabbitmq-queues' operations)
from ._ops import OPERATIONS
from ._protocol import EX_SOFTWARE, ControlError
from ._registry import NodeEntry, register, unregister
from ._service import ControlService

if TYPE_CHECKING:
    from ..management import ManagementAPI
    from ..model import Broker, Connection
    from ..server import Server

__all__ = ["LISTENER_PLUGINS", "Node"]

log = logging.getLogger("embroker.control")

#: The plugins that are listeners in embroker (served when their port is), with RabbitMQ's
#: protocol name for ``rabbitmq-diagnostics listeners``.
LISTENER_PLUGINS = {"rabbitmq_management": "http", "rabbitmq_stream": "stream",
                    "rabbitmq_amqp1_0": "amqp1_0",
                    **{plugin: protocol for p in PROTOCOLS for plugin, protocol in (
                        (p.plugin, p.protocols[0]), (p.web_plugin, p.protocols[2]))}}
#: The listener plugins another one depends on (RabbitMQ starts them with it): a Web-
#: plugin's protocol plugin (``rabbitmq_web_mqtt`` needs ``rabbitmq_mqtt``).
DEPENDENCIES = {p.web_plugin: (p.plugin,) for p in PROTOCOLS}
#: What ``rabbitmq-diagnostics listeners`` says each protocol is for (v3.10.8's texts).
PURPOSES = {
    "amqp": "AMQP 0-9-1 and AMQP 1.0",
    "amqp/ssl": "AMQP 0-9-1 and AMQP 1.0 over TLS",
    "http": "HTTP API",
    "https": "HTTP API over TLS (HTTPS)",
    "stream": "stream",
    "stream/ssl": "stream over TLS",
    **{protocol: purpose for p in PROTOCOLS
       for protocol, purpose in zip(p.protocols, p.purposes, strict=True)},
    "clustering": "inter-node and CLI tool communication",
}


def _listener_kinds() -> list[tuple[str, str]]:
    """The listener plugins, with the kind of port each brings (``Server.open_listener``): the
    registered port kinds a plugin opens on demand (``rabbitmq_management``,
    ``rabbitmq_stream``...)."""
    return [(kind.plugin, kind.name) for kind in port_kinds()
            if kind.plugin is not None and kind.on_demand and kind.factory is not None]


def _erlang_address(host: str) -> tuple[str, str]:
    """``host`` as RabbitMQ's errors show a listener's address: ``inet:ntoa/1``'s text and
    the Erlang tuple (``"127.0.0.1"``, ``"{127, 0, 0, 1}"``)."""
    try:
        address = ipaddress.ip_address("127.0.0.1" if host == "localhost" else host)
    except ValueError:
        return host, f'"{host}"'
    if address.version == 4:
        return str(address), "{" + ", ".join(str(b) for b in address.packed) + "}"
    words = [int.from_bytes(address.packed[i:i + 2], "big") for i in range(0, 16, 2)]
    return str(address), "{" + ", ".join(map(str, words)) + "}"


#: The application module of the listener plugins whose start error is given in short.
_APPLICATIONS = {plugin: application for p in PROTOCOLS for plugin, application in (
    (p.plugin, p.application), (p.web_plugin, p.web_application))}


def _could_not_start(plugin: str, host: str, port: int, exc: OSError) -> str:
    """What RabbitMQ 3.10.8's ``rabbitmq-plugins enable`` prints on stderr (exit 70) when a
    plugin's listener cannot start on a running node: the CLI's own crash on the node's
    ``{could_not_start, Plugin, Reason}`` (``rabbit:start_apps/2``; live, a port held by
    another socket). The stream plugin's term is RabbitMQ's whole; the management plugin's
    ends with its dispatch table, which RabbitMQ's own output elides too."""
    ip, address = _erlang_address(host)
    reason = errno.errorcode.get(exc.errno or 0, "einval").lower()
    acceptor = f"{{:acceptor, {address}, {port}}}"
    listen = (f"{{:shutdown, {{:failed_to_start_child, {{:ranch_listener_sup, {acceptor}}}, "
              f"{{:shutdown, {{:failed_to_start_child, :ranch_acceptors_sup, "
              f"{{:listen_error, {acceptor}, :{reason}}}}}}}}}}}")
    if plugin in _APPLICATIONS:  # (the listen error within the plugin's start; the rest of
        # RabbitMQ's term, its supervisors' names, is not reproduced)
        inner = (f"{{:{plugin}, {{{listen}, {{:{_APPLICATIONS[plugin]}, :start, "
                 f"[:normal, []]}}}}}}")
    elif plugin == "rabbitmq_stream":
        inner = (f"{{:rabbitmq_stream, {{{{:shutdown, {{:failed_to_start_child, "
                 f':"rabbit_stream_listener_sup_{ip}:{port}", {{:shutdown, '
                 f"{{:failed_to_start_child, {{:ranch_embedded_sup, {acceptor}}}, "
                 f"{listen}}}}}}}}}, {{:rabbit_stream, :start, [:normal, []]}}}}}}")
    else:
        options = f"[cowboy_opts: [sendfile: false], port: {port}]"
        inner = (f"{{:rabbitmq_management, {{:bad_return, {{{{:rabbit_mgmt_app, :start, "
                 f"[:normal, []]}}, {{:EXIT, {{{{:could_not_start_listener, {options}, "
                 f"{listen}}}, {{:gen_server, :call, [:rabbit_web_dispatch_registry, "
                 f"{{:add, :rabbitmq_management_tcp, {options}, #Function<0.27948776/1 in "
                 f":rabbit_web_dispatch>, [{{:_, [], [...]}}], {{[], 'RabbitMQ Management'}}}}, "
                 f":infinity]}}}}}}}}}}}}")
    return f"{{:case_clause, {{:could_not_start, :{plugin}, {inner}}}}}\n"


@final
class Node:
    """``broker`` served by ``server`` under the node name ``name`` (see the module's
    docstring). :meth:`start` serves the control port and registers the node; :meth:`close`
    unregisters it.

    Args:
        on_stop: what ``rabbitmqctl stop`` does (stop the process's server); called from a
            thread of its own.
        enabled_plugins_file: the file ``rabbitmq-plugins`` reads and writes (``None``: none).
        data_dir: the node's data folder (``rabbitmq-diagnostics status``, the disk monitor).
        config_files: the configuration files it was started from, for ``status``.
        log_file: where it logs (``status``), if anywhere.
        plugin_ports: where ``rabbitmq-plugins enable`` opens a listener plugin's port on the
            running node (default RabbitMQ's: 15672, 5552, 61613 and 15674; ``None``: no
            plain port, as
            ``stream.listeners.tcp = none``).
        plugin_tls_ports: the same for their TLS listeners (``management.ssl.port``,
            ``stream.listeners.ssl.*``; default none), on the server's TLS settings.
        dist: where the control port listens, as RabbitMQ's distribution would: its host
            (``"auto"``: every interface), its port (0: any free one), and whether the port was
            named (``RABBITMQ_DIST_PORT``): a port only implied by a default gives way to a free
            one when it is taken (:attr:`dist_moved` says so).
    """

    def __init__(self, broker: Broker, server: Server, name: str, *,
                 on_stop: Callable[[], None] | None = None,
                 enabled_plugins_file: Path | None = None, data_dir: Path | None = None,
                 config_files: Iterable[Path] = (), log_file: Path | None = None,
                 folder: Path | None = None,
                 plugin_ports: Mapping[str, int | None] | None = None,
                 plugin_tls_ports: Mapping[str, int | None] | None = None,
                 dist: tuple[str, int, bool] = ("127.0.0.1", 0, False)) -> None:
        self.broker = broker
        self.server = server
        self.name = name
        # The node's one identity: what the management API, the event exchange, AMQP 1.0 and
        # the stream protocol report from now on (the server's node: Broker.node for the
        # first).
        broker.name_node(name, node=server.node)
        self.started = time.time()
        #: The node's "creation" (the middle part of its pids): its start time, so the pids of
        #: one run never match another's.
        self.creation = int(self.started) % 1_000_000_000
        self.on_stop = on_stop if on_stop is not None else server.stop
        self.enabled_plugins_file = enabled_plugins_file
        self.data_dir = data_dir if data_dir is not None else Path(server.data_dir)
        server.data_dir = str(self.data_dir)  # (where the disk monitor looks)
        self.config_files = tuple(config_files)
        self.log_file = log_file
        self._folder = folder
        #: Where a listener plugin enabled on the running node listens (RabbitMQ's defaults,
        #: or the node's configuration: ``management.tcp.port``, ``stream.listeners.tcp``).
        self.plugin_ports: dict[str, int | None] = {
            "rabbitmq_management": 15672, "rabbitmq_stream": 5552,
            **{plugin: port for p in PROTOCOLS
               for plugin, port in ((p.plugin, p.port), (p.web_plugin, p.web_port))},
            **(plugin_ports or {})}
        #: Where they listen over TLS (``None``: not).
        self.plugin_tls_ports: dict[str, int | None] = dict(plugin_tls_ports or {})
        self._entry: NodeEntry | None = None
        self._views: ManagementAPI | None = None
        self.dist = dist
        #: The implied port the control port could not have (taken), when it took another.
        self.dist_moved: int | None = None
        #: What sets the management API up as its starter wants it (``rabbitmq-server``: the
        #: files ``/api/nodes`` names, RabbitMQ's UI), again when ``rabbitmq-plugins`` starts
        #: the management plugin on the running node; ``None``: nothing to set.
        self.management_setup: Callable[[ManagementAPI], None] | None = None

    def __repr__(self) -> str:
        return f"<Node {self.name} control port {self.control_port}>"

    @property
    def views(self) -> ManagementAPI:
        """The management API's views of the model (the server's own API when it serves one),
        which listings share with it."""
        if self.server.management is not None:
            return self.server.management
        if self._views is None:
            from ..management import ManagementAPI

            self._views = ManagementAPI(self.broker, self.server)
        return self._views

    @property
    def control_port(self) -> int | None:
        return self._entry.control_port if self._entry is not None else None

    def start(self) -> Node:
        """Serve the control interface and register the node (see :mod:`._registry`).

        Raises:
            NodeNameInUse: a live node has the name.
        """
        cookie = NodeEntry.new_cookie()
        service = ControlService(self, OPERATIONS)
        host, wanted, named = self.dist
        try:
            if not 0 <= wanted <= 65535:
                raise PortInUse(host, wanted)
            port = self.server.serve_control(service, service.screen, name=self.name,
                                             cookie=cookie, host=host, port=wanted)
        except PortInUse:
            if named:
                raise
            port = self.server.serve_control(service, service.screen, name=self.name,
                                             cookie=cookie, host=host, port=0)
            self.dist_moved = wanted
        self._entry = NodeEntry(self.name, os.getpid(), port, cookie, self._ports(),
                                host="127.0.0.1" if host in ("auto", "0.0.0.0") else
                                "::1" if host == "::" else host)
        register(self._entry, self._folder)
        return self

    def close(self) -> None:
        """Unregister the node (its control port closes with the server)."""
        if self._entry is not None:
            unregister(self._entry, self._folder)
            self._entry = None
        if self._views is not None:
            self._views.close()
            self._views = None

    def __enter__(self) -> Node:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- what the tools ask -----------------------------------------------------------------------

    def _ports(self) -> dict[str, int]:
        return dict(self.server.listeners())

    @property
    def app_running(self) -> bool:
        return self.server.app_running

    def listeners(self) -> list[dict[str, Any]]:
        """The node's listeners as ``rabbitmq-diagnostics listeners`` lists them."""
        host = self.server.host
        interface = "[::]" if host in ("", "::", "0.0.0.0") else host
        found = [{"interface": interface, "port": port, "protocol": name,
                  "purpose": PURPOSES.get(name, name), "node": self.name}
                 for name, port in self._ports().items()] if self.app_running else []
        if self.control_port is not None:  # (RabbitMQ's: its distribution port, for its CLI)
            dist = self.dist[0]
            found.insert(0, {"interface": "[::]" if dist in ("auto", "0.0.0.0", "::") else dist,
                             "port": self.control_port,
                             "protocol": "clustering", "purpose": PURPOSES["clustering"],
                             "node": self.name})
        return found

    def alarms(self) -> list[str]:
        """The resource alarms this node raised (``memory``, ``disk``): ``rabbit:status/0``'s
        and ``rabbit_alarm:get_local_alarms/0``'s."""
        return list(self.server.local_alarms)

    def cluster_alarms(self) -> list[dict[str, str]]:
        """Every node's resource alarms, each with its node (``rabbit_alarm:get_alarms/0``,
        what ``rabbitmq-diagnostics alarms`` lists)."""
        return [{"node": node.name, "resource": name}
                for node, name in self.broker.node_alarms()]

    def plugin_states(self) -> dict[str, Any]:
        """Each plugin embroker has, whether it is enabled, and the enabled-plugins file."""
        enabled = set(self.broker.plugins.enabled)
        server = self.server
        enabled.update(plugin for plugin, kind in _listener_kinds()
                       if server.listener_port(kind) is not None
                       or server.listener_port(kind, tls=True) is not None)
        if self.server.amqp10:  # (sniffed on the AMQP ports: rabbitmq_amqp1_0 is that)
            enabled.add("rabbitmq_amqp1_0")
        return {"available": sorted({*PLUGINS, *LISTENER_PLUGINS}), "enabled": sorted(enabled),
                "file": str(self.enabled_plugins_file or ""), "version": __version__,
                "rabbitmq_version": self.rabbitmq_version}

    def apply_plugins(self, enabled: Iterable[str]) -> dict[str, list[str]]:
        """Make ``enabled`` the node's plugins, as ``rabbitmq-plugins`` applies a configuration
        to a running node, at once: the listeners (management, stream: :meth:`Server.open_listener
        <embroker.server.Server.open_listener>` on :attr:`plugin_ports`), then the exchange-type
        plugins (:meth:`Plugins.enable <embroker.model._plugins.Plugins.enable>`) and AMQP 1.0
        (``rabbitmq_amqp1_0``: :attr:`Server.amqp10 <embroker.server.Server.amqp10>`, for the
        next connections). Returns which ``started`` and which ``stopped``.

        Raises:
            ControlError: a listener cannot open (its port is taken, say): RabbitMQ's error
                (exit 70), and nothing has changed (a listener opened for this call is closed
                again, no exchange type started or stopped).
        """
        wanted = set(enabled)
        wanted.update(d for name in list(wanted) for d in DEPENDENCIES.get(name, ()))
        running = set(self.plugin_states()["enabled"])
        started: list[str] = []
        listener_kinds = _listener_kinds()
        for name, kind in listener_kinds:  # (first: the only step that can fail)
            if name not in wanted or name in running:
                continue
            listeners = [(port, tls) for port, tls in ((self.plugin_ports.get(name), False),
                                                       (self.plugin_tls_ports.get(name), True))
                         if port is not None]
            for port, tls in listeners:
                try:
                    self.server.open_listener(kind, port, tls=tls)
                except OSError as exc:
                    for opened in [*started, name]:
                        self.server.close_listener(dict(listener_kinds)[opened])
                    log.error("rabbitmq-plugins: plugin %s could not start: %s", name, exc)
                    raise ControlError(_could_not_start(name, self.server.host, port, exc),
                                       EX_SOFTWARE, plain=True) from None
            if listeners:
                started.append(name)
        management = self.server.management
        if "rabbitmq_management" in started and self.management_setup is not None and \
                management is not None:
            self.management_setup(management)
        plugins = self.broker.plugins
        started += [n for n in wanted & set(PLUGINS) if plugins.enable(n)]
        stopped = [n for n in set(plugins.enabled) - wanted if plugins.disable(n)]
        amqp10 = "rabbitmq_amqp1_0" in wanted
        if amqp10 != self.server.amqp10:  # (for the next connections: RabbitMQ's reader)
            self.server.amqp10 = amqp10
            (started if amqp10 else stopped).append("rabbitmq_amqp1_0")
        for name, kind in listener_kinds:
            if name not in wanted and name in running:
                self.server.close_listener(kind)
                stopped.append(name)
        self._reregister()
        if started or stopped:
            log.info("Plugins changed; enabled %s, disabled %s", sorted(started),
                     sorted(stopped))
        return {"started": sorted(started), "stopped": sorted(stopped)}

    def _reregister(self) -> None:
        """The registry file again, with the ports served now."""
        if self._entry is not None:
            self._entry = replace(self._entry, ports=self._ports())
            register(self._entry, self._folder)

    @property
    def rabbitmq_version(self) -> str:
        """The RabbitMQ version the node behaves as: its broker's profile's (``3.10.8``, or
        ``as_rabbitmq``'s), which ``rabbitmq-diagnostics server_version`` reports (embroker's
        own version is :attr:`status`'s ``version``)."""
        return self.broker.profile.presented_version

    def status(self) -> dict[str, Any]:
        """What ``rabbitmqctl status`` shows of the node."""
        return {
            "pid": os.getpid(), "node": self.name, "version": __version__,
            "rabbitmq_version": self.rabbitmq_version,
            "uptime": int(time.time() - self.started), "running": self.app_running,
            "listeners": self.listeners(), "alarms": self.alarms(),
            "plugins": self.plugin_states(), "data_dir": str(self.data_dir),
            "config_files": [str(p) for p in self.config_files],
            "log_file": str(self.log_file) if self.log_file is not None else "",
            "vm_memory_high_watermark": self.server.vm_memory_high_watermark,
            "vm_memory_limit": self.server.vm_memory_limit,
            "memory_used": self.server.memory_used(),
            "disk_free_limit": self.server.disk_free_limit,
            "disk_free": self.server.disk_free,
            "connections": len(self.broker.connections),
            "queues": sum(len(v.queues) for v in self.broker.vhosts.values()),
            "vhosts": len(self.broker.vhosts),
        }

    def cluster_status(self) -> dict[str, Any]:
        """What ``rabbitmqctl cluster_status`` shows (``cluster_status_command.ex``, v3.10.8):
        the cluster's name, its nodes (every one a disc node), the running ones, and of each
        running node its version, maintenance status, alarms and listeners (this node's; the
        cluster's other nodes have none of their own yet), the partitions each running node
        lists (``rabbit_mnesia:status/0``; after a partition, the running nodes are those
        this node counts), the feature flags."""
        broker = self.broker
        with broker.locked():
            nodes = [node.name for node in broker.nodes]
            here = self.server.node
            running = views.running_nodes(broker, here)
            partitions = {node.name: [other.name for other in node.partitions]
                          for node in broker.nodes if node.name in running and node.partitions}
            cluster_name = broker.cluster_name
        version = {"rabbitmq_name": "RabbitMQ", "rabbitmq_version": self.rabbitmq_version,
                   "erlang_version": views.ERLANG_VERSION}
        listeners = self.listeners()
        return {
            "cluster_name": cluster_name, "disk_nodes": nodes, "ram_nodes": [],
            "running_nodes": running,
            "versions": {name: dict(version) for name in running},
            "alarms": [{**alarm, "type": "resource_limit"} for alarm in self.cluster_alarms()
                       if alarm["node"] in running],
            "listeners": {name: listeners if name == self.name else [] for name in running},
            "maintenance_status": dict.fromkeys(running, "not under maintenance"),
            "partitions": partitions, "feature_flags": views.feature_flags(),
        }

    def close_connection(self, connection: Connection, reason: str) -> None:
        """Close ``connection`` as ``rabbitmqctl close_connection``: 320 CONNECTION_FORCED
        with the reason given. Call it holding the broker still."""
        error = ConnectionForced(reason)
        if not self.server.close_connection(connection, error):
            connection.close_by_broker(error)

    def stop_soon(self) -> None:
        """``rabbitmqctl stop``: the node leaves the registry now (a tool asking finds no node,
        a node of that name may start), then stops in a thread of its own: the answer goes out
        with the listener's last turn, before its ports close (the tool waits for that)."""
        self.close()
        threading.Thread(target=self.on_stop, name=f"embroker:stop {self.name}",
                         daemon=True).start()

    def stop_app(self) -> None:
        self.server.stop_app()

    def start_app(self) -> None:
        try:
            self.server.start_app()
        except PortInUse as exc:
            raise ControlError(f"{exc}: the port was taken while the application was stopped",
                               70) from None
        except RuntimeError as exc:  # (a node forget_cluster_node removed)
            raise ControlError(str(exc), 69) from None

    def reset(self) -> None:
        if self.server.app_running:
            raise ControlError(APP_RUNNING, 69)
        if len(self.broker.nodes) > 1:  # (RabbitMQ's node would leave its cluster)
            raise ControlError(
                f"node {self.name} is one of a cluster of {len(self.broker.nodes)} nodes in "
                "one embroker process, which cannot reset one node alone (a RabbitMQ node "
                "would leave its cluster): forget_cluster_node removes a stopped node, and "
                "embroker serve --nodes N makes a new cluster", 69)
        try:
            self.server.reset()
        except AppRunning:
            raise ControlError(APP_RUNNING, 69) from None

    def join_cluster(self, member: str) -> bool:
        """``rabbitmqctl join_cluster MEMBER`` on this node (stopped: else RabbitMQ's usage
        refusal, 64): a node of its own cluster makes it "already a member" (true); a node
        of another embroker process cannot be joined (embroker's nodes form a cluster in one
        process: ``serve --nodes N``), 69 with that said.

        Raises:
            ControlError: as above.
        """
        if self.server.app_running:
            raise ControlError(APP_RUNNING, 64)
        with self.broker.locked():
            names = [node.name for node in self.broker.nodes]
        if member in names:
            return True
        raise ControlError(
            f"embroker cannot join node {self.name} to {member}: embroker's nodes form a "
            "cluster within one process (embroker serve --nodes N, Broker(nodes=N)), and "
            f"{member} is not one of this one's ({', '.join(names)})", 69)

    def forget_cluster_node(self, name: str) -> None:
        """``rabbitmqctl forget_cluster_node NODE``, asked of this node: the stopped node
        ``name`` leaves the cluster (:func:`embroker.model._membership.forget_node`).

        Raises:
            ControlError: RabbitMQ's refusals: it runs (69, "RabbitMQ on node N must be
                stopped ..."), it is not a node of the cluster (69), it is this node.
        """
        from ..model._membership import MembershipRefused, forget_node

        with self.broker.locked():
            found = next((n for n in self.broker.nodes if n.name == name), None)
            if found is None:
                raise ControlError('{not_a_cluster_node,"The node selected is not in the '
                                   'cluster."}', 69)
            if found is self.server.node:
                raise ControlError(f"{{failed_to_remove_node,'{name}',"
                                   "{mnesia_not_running,...}}: this node cannot forget "
                                   "itself; ask another node of the cluster", 69)
            try:
                forget_node(self.broker, found)
            except MembershipRefused as refused:
                if refused.reason == "node_running":
                    raise ControlError(f"RabbitMQ on node {name} must be stopped with "
                                       f"'rabbitmqctl -n {name} stop_app' before it can be "
                                       "removed", 69) from None
                raise ControlError(refused.reason, 69) from None

    def set_vm_memory_high_watermark(self, *, fraction: float | None = None,
                                     absolute: int | None = None) -> None:
        try:
            self.server.set_vm_memory_high_watermark(fraction, absolute=absolute)
        except (ValueError, RuntimeError) as exc:
            raise ControlError(str(exc), 65 if isinstance(exc, ValueError) else 69) from None

    def set_disk_free_limit(self, *, absolute: int | None = None,
                            mem_relative: float | None = None) -> None:
        try:
            self.server.set_disk_free_limit(absolute, mem_relative=mem_relative)
        except (ValueError, RuntimeError) as exc:
            raise ControlError(str(exc), 65 if isinstance(exc, ValueError) else 69) from None
