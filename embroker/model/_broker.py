"""The broker: virtual hosts, users, the clock and the routing trace."""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from .._version import __version__
from ..errors import ConnectionForced, NotAllowed
from . import _definitions
from ._access import UNRESTRICTED, AccessControl, UserAdministration
from ._clock import Clock, SystemClock
from ._connection import Connection
from ._definitions import Source
from ._exchange import Exchange
from ._faults import DeliveryFault, PublishNack
from ._incidents import Incidents
from ._kinds import DIRECT, AlarmBlocking, ConnectionKind
from ._node import DEFAULT_NODE, RABBITMQ_NODE, Node, NodeIdentity
from ._parameters import ParameterCommands
from ._partition import Network
from ._plugins import Plugins
from ._policy import PolicyCommands
from ._profile import Profile
from ._queue import Queue
from ._sessions import ClientIds
from ._trace import Trace
from ._transports import Transports
from ._vhost import VirtualHost

__all__ = ["DEFAULT_MAX_MESSAGE_SIZE", "Broker"]

#: RabbitMQ's default ``max_message_size``: 128 MiB.
DEFAULT_MAX_MESSAGE_SIZE = 128 * 1024 * 1024
#: The resources RabbitMQ raises alarms for, in the order its reader names them
#: (``connection.blocked``'s reason "low on disk & memory", live on 3.10.8).
ALARM_RESOURCES = ("disk", "memory")
#: RabbitMQ 4's: 16 MiB (v4.1.4 deps/rabbit/Makefile).
DEFAULT_MAX_MESSAGE_SIZE_4 = 16 * 1024 * 1024


def _server_properties(as_rabbitmq: str | None, profile: Profile,
                       overrides: Mapping[str, Any] | None, node: NodeIdentity) -> dict[str, Any]:
    if as_rabbitmq is None:
        properties: dict[str, Any] = {
            "product": "embroker", "version": __version__, "platform": "Python",
            "copyright": "embroker contributors", "cluster_name": node.cluster_name,
            "information": "embroker: an embedded AMQP broker with RabbitMQ's semantics, for "
                           "tests",
        }
    else:
        version = profile.presented_version
        properties = {
            "product": "RabbitMQ", "version": version,
            "platform": "Erlang/OTP 26.2.5" if profile.rabbitmq4 else "Erlang/OTP 25.2.3",
            "copyright": "Copyright (c) 2007-2025 Broadcom Inc and/or its subsidiaries"
                         if profile.rabbitmq4 else
                         "Copyright (c) 2007-2022 VMware, Inc. or its affiliates.",
            "cluster_name": node.cluster_name,
            "information": f"embroker {__version__} presenting itself as RabbitMQ {version}: "
                           "an embedded AMQP broker with RabbitMQ's semantics, for tests",
        }
    if overrides:
        if "capabilities" in overrides:
            raise ValueError("server_properties cannot set 'capabilities': they are what the "
                             "protocol layer implements")
        properties.update(overrides)
    return properties


def _node_identities(nodes: int | Sequence[str], first: NodeIdentity) -> list[NodeIdentity]:
    # The cluster's node identities: ``first`` then its numbered siblings, or the names given.
    if isinstance(nodes, int):
        if nodes < 1:
            raise ValueError(f"nodes: at least 1, not {nodes}")
        prefix, _, host = first.name.partition("@")
        return [first, *(NodeIdentity(f"{prefix}-{i}@{host}", first.host, first.cluster_name)
                         for i in range(2, nodes + 1))]
    names = list(nodes)
    if not names or len(set(names)) != len(names):
        raise ValueError(f"nodes: distinct names, at least one, not {names!r}")
    return [NodeIdentity.named(name, cluster_name=first.cluster_name) for name in names]


class Broker(UserAdministration, PolicyCommands, ParameterCommands):
    """An AMQP broker with RabbitMQ's semantics, as plain objects.

    Args:
        clock: where time comes from; a :class:`~embroker.ManualClock` makes expiry exact.
        vhosts: the virtual hosts to create (``"/"`` by default).
        users: the default users, names and passwords (``guest``/``guest`` by default); each
            gets full permissions on every virtual host (see :meth:`set_permissions`).
        loopback_users: users that may only connect over a loopback interface (RabbitMQ's
            ``loopback_users``: ``guest``).
        trace_limit: how many routing decisions :attr:`trace` keeps (oldest dropped first).
        trace_bytes: how many bytes of large messages (bodies and header tables)
            :attr:`trace` may keep alive.
        trace_events: whether to record what happens to each message after routing
            (deliveries, acks, expiry...: ``broker.trace[-1].history()``).
        max_message_size: the largest message body a client may publish, in bytes (RabbitMQ's
            ``max_message_size``, 128 MiB by default, 16 MiB as RabbitMQ 4); a larger one is
            refused with 406.
        server_properties: what the broker says of itself to clients (AMQP 0-9-1
            ``connection.start``'s server-properties; ``product``, ``version``, ``platform``,
            ``cluster_name``, ``information``...), over the defaults; ``capabilities`` are the
            protocol layer's and cannot be set here.
        as_rabbitmq: present the broker as that RabbitMQ version (``"3.10.8"``, or
            ``"4.1.x"`` for a minor version's behaviour): product ``RabbitMQ``, that version,
            RabbitMQ's platform and cluster-name style, and an ``information`` that still says
            it is embroker. For clients and tools that branch on the product (RabbitMQ's AMQP
            1.0 client, amqplib's tests). ``server_properties`` still apply on top. A RabbitMQ 4
            version also switches the behaviours RabbitMQ 4 changed (:attr:`profile`; see
            docs/conformance.md).
        deprecated_features: with a RabbitMQ 4 version, the deprecated features to deny
            (``{"amqp_address_v1": False}``, as ``deprecated_features.permit.amqp_address_v1 =
            false`` in rabbitmq.conf; see :data:`~embroker.model._profile.DEPRECATED_FEATURES`).
        memory_high_watermark: when the message bodies held in queues pass this many bytes,
            publishers are blocked as by RabbitMQ's memory alarm (connection.blocked, and the
            listener stops reading from connections that publish) until they drop below it
            again; checked by :meth:`tick` and by the listener. ``None``: no limit.
        plugins: RabbitMQ plugins to enable, by RabbitMQ's names
            (``rabbitmq_delayed_message_exchange``, ``rabbitmq_consistent_hash_exchange``,
            ``rabbitmq_sharding`` for ``x-modulus-hash``, ``rabbitmq_random_exchange``,
            ``rabbitmq_recent_history_exchange``, ``rabbitmq_event_exchange``): the exchange
            types they bring exist only then (see :attr:`plugins`, docs/plugins.md).
        auth_mechanisms: the SASL mechanisms AMQP clients are offered, in this order
            (RabbitMQ's ``auth_mechanisms``): ``PLAIN``, ``AMQPLAIN``, and ``EXTERNAL``
            (``rabbitmq_auth_mechanism_ssl``: the client certificate's name, offered on TLS
            connections only; docs/tls.md).
        ssl_cert_login_from: what ``EXTERNAL`` takes as the user name:
            ``"distinguished_name"`` (the certificate's subject, RabbitMQ's format) or
            ``"common_name"`` (RabbitMQ's ``ssl_cert_login_from``).
        nodes: the cluster's nodes: how many (the first named as a broker of one node is,
            ``embroker@localhost``, the others ``embroker-2@localhost``...; ``rabbit@embroker``
            and ``rabbit-2@embroker`` as RabbitMQ), or their names (``rabbit@a``...). Every
            node shares the virtual hosts, exchanges, bindings, users and policies; each has its
            own connections, and each queue lives on some of them (docs/cluster.md).

    Every call into the model, from the listener's thread or a test's, runs under the broker's
    one lock: the in-process client, the listener and the testing helpers take it, and the
    reads the documentation shows take it for their snapshot, so a caller needs it only to
    hold the broker still across several reads (:meth:`locked`; see docs/threads.md).

    Policies, operator policies and vhost limits are set with ``rabbitmqctl``'s commands
    (:meth:`set_policy`, :meth:`clear_policy`, :meth:`set_operator_policy`,
    :meth:`set_vhost_limits`...).
    """

    def __init__(self, *, clock: Clock | None = None, vhosts: tuple[str, ...] = ("/",),
                 users: Mapping[str, str] | None = None, trace_limit: int = 10_000,
                 trace_bytes: int = 64 * 1024 * 1024, trace_events: bool = True,
                 max_message_size: int | None = None,
                 memory_high_watermark: int | None = None,
                 server_properties: Mapping[str, Any] | None = None,
                 as_rabbitmq: str | None = None,
                 deprecated_features: Mapping[str, bool] | None = None,
                 loopback_users: Iterable[str] = ("guest",),
                 plugins: Iterable[str] = (),
                 auth_mechanisms: Iterable[str] = ("PLAIN", "AMQPLAIN"),
                 ssl_cert_login_from: str = "distinguished_name",
                 nodes: int | Sequence[str] = 1) -> None:
        self._lock = threading.RLock()
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.clock._guard = self._lock  # ManualClock.advance() holds it
        #: Users and permissions (see :mod:`embroker.model._access`).
        # What reset() rebuilds the broker from (RabbitMQ recreates its default user and
        # vhost as a reset node starts).
        self._initial = (tuple(vhosts), dict(users if users is not None else {"guest": "guest"}))
        self.access = AccessControl(self._initial[1], loopback_users)
        self.auth_mechanisms = tuple(auth_mechanisms)
        unknown = set(self.auth_mechanisms) - {"PLAIN", "AMQPLAIN", "EXTERNAL"}
        if unknown:
            raise ValueError(f"auth_mechanisms: no mechanism {', '.join(sorted(unknown))} "
                             "(PLAIN, AMQPLAIN, EXTERNAL)")
        if ssl_cert_login_from not in ("distinguished_name", "common_name"):
            raise ValueError(f"ssl_cert_login_from: 'distinguished_name' or 'common_name', "
                             f"not {ssl_cert_login_from!r}")
        self.ssl_cert_login_from = ssl_cert_login_from
        self.vhosts: dict[str, VirtualHost] = {}
        self.connections: dict[int, Connection] = {}
        #: The client ids session protocols (MQTT) hold on the node (:mod:`._sessions`).
        self.client_ids = ClientIds()
        self._connection_ids = itertools.count(1)
        #: The most recent routing decisions, oldest first.
        self.trace = Trace(trace_limit, trace_bytes, events=trace_events, lock=self._lock)
        #: What the broker closed on its clients, oldest first: the operations it refused
        #: (channel and connection errors) and the connections it dropped (missed heartbeats).
        self.incidents = Incidents(self)
        self.trace.suggest = self._suggest
        self.trace.placement = self._queue_node
        #: What the broker says of itself to clients (see ``server_properties`` above).
        self.profile = Profile.parse(as_rabbitmq, deprecated_features)
        node = DEFAULT_NODE if as_rabbitmq is None else RABBITMQ_NODE
        self.server_properties = _server_properties(as_rabbitmq, self.profile, server_properties,
                                                    node)
        #: Whether any of its nodes is stopped, or the network between them partitioned (kept
        #: by :class:`~._node.Node` and :meth:`partition`): the fast paths look no further
        #: while it is false.
        self.nodes_down = False
        #: The cluster's nodes (:class:`~._node.Node`): one, unless told otherwise.
        self.nodes: list[Node] = [
            Node(self, identity) for identity in _node_identities(
                nodes, dataclasses.replace(node, cluster_name=str(
                    self.server_properties.get("cluster_name", ""))))]
        #: Which nodes reach and count each other (:mod:`._partition`).
        self.network = Network(self)
        self._init_parameters()
        self.max_message_size = max_message_size if max_message_size is not None else (
            DEFAULT_MAX_MESSAGE_SIZE_4 if self.profile.rabbitmq4 else DEFAULT_MAX_MESSAGE_SIZE)
        self.memory_high_watermark = memory_high_watermark
        self._memory_alarm = False
        #: The resource alarms raised with :meth:`set_alarm` (``"memory"``, ``"disk"``), each
        #: with the nodes that raised it (a node's listener raises its own).
        self._alarms: dict[str, set[Node]] = {}
        # Publishers are blocked by an alarm (not by a test's block_publishers).
        self._blocked_by_alarm = False
        self.publishers_blocked = False
        self.blocked_reason = ""
        #: What carries clients to it: the listeners and the in-memory links register
        #: themselves here, are told of resource alarms and restarts, and are asked by
        #: ``settle()`` what they still have to do (:class:`~._transports.Transports`).
        self.transports = Transports()
        # Faults a test armed (embroker.faults): nacked publishes, drops on delivery.
        self._publish_faults: list[PublishNack] = []
        self._delivery_faults: list[DeliveryFault] = []
        #: The enabled plugins and their state (exchange types, ``x-random``'s seeded source,
        #: the delayed messages held, the event exchange).
        self.plugins = Plugins(self, plugins)
        for name in vhosts:
            self.add_vhost(name)
        self.plugins.start()

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} vhosts={list(self.vhosts)} "
                f"connections={len(self.connections)}>")

    def node_named(self, name: str) -> Node:
        """The node called ``name``.

        Raises:
            KeyError: no such node in the cluster.
        """
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    @property
    def node(self) -> NodeIdentity:
        """Who its first node is (:class:`~._node.NodeIdentity`): its name, host and first
        cluster name, which every surface reports (``embroker@localhost`` unless named:
        :meth:`name_node`)."""
        return self.nodes[0].identity

    def name_node(self, name: str, *, node: Node | None = None) -> None:
        """Name this node ``name`` (``rabbit@HOST``), as RabbitMQ's tools start a node:
        ``rabbitmqctl status``, ``/api/nodes``, the event exchange's and the firehose's
        ``node``, RabbitMQ 4's AMQP 1.0 ``node`` and the stream protocol's advertised host
        report it from now on. Its cluster keeps its name. ``node``: which node of the
        cluster (the first by default)."""
        with self._lock:
            named = self.nodes[0] if node is None else node
            named.identity = NodeIdentity.named(name,
                                                cluster_name=named.identity.cluster_name)

    def partition(self, *sides: Iterable[Node | str]) -> None:
        """Cut the network between the nodes of each of ``sides`` (nodes or their names) and
        the others (the nodes named on no side form one more): each side's clients see the
        other side's classic queues down and its nodes stopped, and quorum queues and streams
        go on where a majority of their members is, as RabbitMQ 3.10.8's default
        ``cluster_partition_handling = ignore`` has it (:mod:`._partition`).
        ``broker.partition(["embroker-3@localhost"])`` cuts the third node off.

        Raises:
            ValueError: a side names no node of the cluster, a node twice, or every node.
        """
        from ._partition import partitioned

        with self._lock:
            partitioned(self, self.network.sides(sides))

    def heal(self) -> None:
        """The network between the nodes is whole again. Quorum queues and streams heal (their
        suspected consumers are served again); what each node counts as running does not
        (``ignore``): the nodes list each other as partitions, and classic queues stay down
        across, until a node of the other side restarts (``node.stop()``, ``node.start()``).
        Nothing happens when the network is whole."""
        from ._partition import healed

        with self._lock:
            healed(self)

    def locked(self) -> AbstractContextManager[object]:
        """Hold the broker still: ``with broker.locked(): ...``. While the block runs, no other
        thread changes the broker (the listener's loop, a client in another thread and
        expiry wait), so several reads agree with each other, and the live containers of the
        model (``vhost.queues``, ``exchange.bindings``, ``broker.connections``,
        ``queue.consumers``...) can be walked.

        Reentrant and cheap: the context manager is the broker's one lock (the same object on
        every call; keep it if you like). Hold it briefly: the listener serves nobody
        meanwhile. The reads the documentation shows (``broker.trace``, a decision's
        ``history()`` and ``explain()``, ``queue.messages``, ``server.connections``...) take
        it themselves; see docs/threads.md for the whole contract.

        >>> broker = Broker()
        >>> with broker.locked():
        ...     names = sorted(broker.vhost("/").exchanges)
        >>> names[:2]
        ['', 'amq.direct']
        """
        return self._lock

    # -- virtual hosts -------------------------------------------------------------------------

    def _suggest(self, vhost: str, kind: str, name: str) -> str | None:
        """The ``kind`` of vhost ``vhost`` that ``name`` was most likely meant to be (hints of
        errors and explanations); under the broker's lock."""
        host = self.vhosts.get(vhost)
        return host.suggest(kind, name) if host is not None else None

    def _queue_node(self, vhost: str, queue: str) -> tuple[str, bool] | None:
        """In a cluster of several nodes, the node of queue ``queue`` (a classic queue's home,
        a replicated queue's leader) and whether it is down; ``None`` in a broker of one node
        or for no such queue. Under the broker's lock."""
        if len(self.nodes) == 1:
            return None
        host = self.vhosts.get(vhost)
        found = host.queues.get(queue) if host is not None else None
        if found is None:
            return None
        leader = found.placement.leader
        return leader.name, found.down or not leader.running

    def add_vhost(self, name: str, *, created_by: str | None = None) -> VirtualHost:
        """Create a virtual host (with its standard exchanges); returns the existing one if any.

        ``created_by``: the user who asks (the management API's), who alone gets full
        permissions on a vhost it creates, as RabbitMQ's ``rabbit_vhost:put_vhost`` grants
        them; without one, the default users get them.
        """
        with self._lock:
            vhost = self.vhosts.get(name)
            if vhost is None:
                vhost = self.vhosts[name] = VirtualHost(self, name)
                self.access.vhost_added(name, created_by)
                if self.plugins.events is not None:
                    if created_by is None:
                        self.plugins.events.vhost_added(vhost)
                    else:
                        self.plugins.events.vhost_added(vhost, created_by)
            return vhost

    def delete_vhost(self, name: str) -> None:
        """``rabbitmqctl delete_vhost``: its connections are closed (320 CONNECTION_FORCED
        "vhost 'x' is deleted"), its queues deleted with their messages (their consumers
        cancelled), its exchanges, policies, limits and permissions gone.

        Raises:
            NotAllowed: (530) no such virtual host.
        """
        with self._lock:
            vhost = self.vhost(name)
            for connection in list(self.connections.values()):
                if connection.vhost is vhost:
                    connection.close_by_broker(ConnectionForced(f"vhost '{name}' is deleted"))
            for queue in list(vhost.queues.values()):
                vhost.delete_queue_object(queue)
            vhost.exchanges.clear()
            del self.vhosts[name]
            self.access.vhost_deleted(name)
            _definitions.vhost_deleted(self, name)

    def vhost(self, name: str = "/") -> VirtualHost:
        try:
            return self.vhosts[name]
        except KeyError:
            raise NotAllowed(f"vhost {name} not found") from None

    @property
    def queues(self) -> dict[str, Queue]:
        """The queues of the default virtual host ``/``, by name (a snapshot: safe to iterate
        while a listener serves clients)."""
        with self._lock:
            return dict(self.vhosts["/"].queues)

    @property
    def exchanges(self) -> dict[str, Exchange]:
        """The exchanges of the default virtual host ``/``, by name (a snapshot)."""
        with self._lock:
            return dict(self.vhosts["/"].exchanges)

    # -- connections ---------------------------------------------------------------------------

    def open_connection(self, vhost: str = "/", *, user: str | None = None,
                        client_properties: dict[str, Any] | None = None,
                        name: str | None = None,
                        details: dict[str, Any] | None = None,
                        kind: ConnectionKind = DIRECT,
                        topic_variables: Mapping[str, str] | None = None,
                        node: Node | None = None) -> Connection:
        """Open a model-level connection to ``vhost``: what the protocol layers and the
        in-process client build on (a test wants :meth:`embroker.Broker.connect`).

        Args:
            user: the user whose permissions every operation is checked against (logged in
                already: no password here); ``None`` for a connection that is not checked
                (it acts as ``guest``).
            details: what the protocol layer knows of it (``peer_host``, ``peer_port``,
                ``channel_max``, ``frame_max``, ``heartbeat``, ``mechanism``), for events.
            kind: what kind of client it serves (:mod:`embroker.model._kinds`: ``AMQP_091``,
                ``AMQP_10``, ``STREAM``; ``DIRECT``, an in-process connection, by default):
                which limits apply to it, how alarms hold it, how listings name it.
            topic_variables: what its protocol adds to the variables of ``user``'s topic
                permissions (``{"client_id": ...}`` for MQTT; ``{username}`` and ``{vhost}``
                are always there).
            node: the node its client reached (the first, by default).

        Raises:
            NotAllowed: (530) no such virtual host, ``user`` has no access to it, or its
                ``max-connections`` is reached, or ``user``'s own ``max-connections`` (its
                user limit, when its kind's ``user_connection_limit`` says so: not on a
                stream connection, which RabbitMQ's stream reader does not check, v3.10.8
                and v4.1.0).
        """
        with self._lock:
            host = self.vhost(vhost)
            if user is None:
                host.policies.check_connection_limit("guest")
                connection = Connection(host, user="guest", client_properties=client_properties,
                                        name=name, access=UNRESTRICTED, kind=kind, node=node)
            else:
                host.policies.check_connection_limit(user)
                if kind.user_connection_limit:
                    self._check_user_connection_limit(user)
                self.access.check_vhost(user, vhost)
                connection = Connection(host, user=user, client_properties=client_properties,
                                        name=name, access=self.access.grant(user, vhost, topic_variables),
                                        kind=kind, node=node)
            connection.details = dict(details or {})
            if self.plugins.events is not None:
                self.plugins.events.connection_created(connection)
            return connection

    def _check_user_connection_limit(self, user: str) -> None:
        # rabbit_reader:is_over_user_connection_limit/1 (v3.10.8), after the vhost's limit and
        # before vhost access: its tracked connections (every protocol's) against the limit.
        limit = self.user_limit(user, "max-connections")
        if limit is not None and (limit == 0 or sum(
                1 for c in self.connections.values() if c.user == user) >= limit):
            raise NotAllowed(f"connection refused for user '{user}': user connection limit "
                             f"({limit}) is reached")

    # -- resource alarms ------------------------------------------------------------------------

    def block_publishers(self, reason: str = "low on memory") -> None:
        """Act as RabbitMQ under a resource alarm: a connection that publishes meanwhile is
        told ``connection.blocked`` with ``reason`` (if it announced the capability) and is
        not read from, that publish included, until :meth:`unblock_publishers` (RabbitMQ
        3.10.8's reader); those that do not publish are told nothing."""
        with self._lock:
            if self.publishers_blocked:
                return
            self.publishers_blocked, self.blocked_reason = True, reason
            self.transports.blocked(True, reason)

    def unblock_publishers(self) -> None:
        """End :meth:`block_publishers`: clients get connection.unblocked."""
        with self._lock:
            self._blocked_by_alarm = False
            if not self.publishers_blocked:
                return
            self.publishers_blocked, self.blocked_reason = False, ""
            self.transports.blocked(False, "")

    def holds(self, kind: ConnectionKind) -> bool:
        """Whether connections of ``kind`` are held now, as its ``alarm_blocking`` says: a
        kind held when it publishes, while publishers are blocked (by one of its alarms, or
        :meth:`block_publishers`); a kind held from reading, while one of its alarms is in
        effect; never, a kind no alarm holds."""
        with self._lock:
            if kind.alarm_blocking is AlarmBlocking.PUBLISHERS:
                return self.publishers_blocked and (
                    not self._blocked_by_alarm or kind.blocked_by(self.alarms))
            return kind.blocked_by(self.alarms)

    @property
    def alarms(self) -> list[str]:
        """The resource alarms in effect: ``"disk"``, ``"memory"``, both or none, in that
        order (``rabbitmq-diagnostics alarms`` lists the disk alarm first). ``"memory"`` is
        set by a listener's memory monitor (:meth:`Server.set_vm_memory_high_watermark
        <embroker.server.Server.set_vm_memory_high_watermark>`) or by
        :attr:`memory_high_watermark`."""
        with self._lock:
            found = set(self._alarms)
            if self._memory_alarm:
                found.add("memory")
            return [name for name in ALARM_RESOURCES if name in found]

    def alarms_of(self, node: Node) -> list[str]:
        """The resource alarms ``node`` raised itself (``rabbit_alarm:get_local_alarms/0`` on
        it): ``"disk"``, ``"memory"``, both or none, in that order. The memory alarm of
        :attr:`memory_high_watermark` is the first node's."""
        with self._lock:
            found = {name for name, nodes in self._alarms.items() if node in nodes}
            if self._memory_alarm and node is self.nodes[0]:
                found.add("memory")
            return [name for name in ALARM_RESOURCES if name in found]

    def node_alarms(self) -> list[tuple[Node, str]]:
        """Every node's resource alarms (``rabbit_alarm:get_alarms/0``: the cluster's), each
        with the node that raised it, in the nodes' order (each node's disk alarm first)."""
        with self._lock:
            return [(node, name) for node in self.nodes for name in self.alarms_of(node)]

    def set_alarm(self, resource: str, *, node: Node | None = None) -> None:
        """Raise the ``"memory"`` or ``"disk"`` alarm (``rabbit_alarm:set_alarm``) on ``node``
        (the first by default): with the first alarm, publishers are blocked
        (:meth:`block_publishers`) with the reason RabbitMQ's reader gives (``"low on
        memory"``, ``"low on disk"``, ``"low on disk & memory"``: what is in effect when a
        client is told); a second alarm tells nobody again. An alarm of any node blocks the
        whole cluster's publishers (``rabbit_alarm``: "If any node has an alarm, then all
        publishing should be disabled across the cluster").

        Raises:
            ValueError: no such resource.
        """
        if resource not in ALARM_RESOURCES:
            raise ValueError(f"no resource alarm {resource!r}: 'memory' or 'disk'")
        with self._lock:
            raised = self._alarms.setdefault(resource, set())
            raised.add(self.nodes[0] if node is None else node)
            if len(raised) == 1:
                self._alarms_changed()

    def clear_alarm(self, resource: str, *, node: Node | None = None) -> None:
        """Clear the ``"memory"`` or ``"disk"`` alarm of ``node`` (of every node by default):
        publishers are unblocked (connection.unblocked) when the last alarm clears."""
        with self._lock:
            raised = self._alarms.get(resource)
            if raised is None:
                return
            raised.difference_update(raised if node is None else {node})
            if not raised:
                del self._alarms[resource]
                self._alarms_changed()

    def _alarms_changed(self) -> None:
        # Under the lock. rabbit_reader's blocked_by_message/1 (v3.10.8): "low on " and the
        # resources in effect joined with " & " (live: "low on disk & memory").
        active = self.alarms
        self.transports.alarms_changed(tuple(active))
        if active:
            reason = "low on " + " & ".join(active)
            if not self.publishers_blocked:
                self.block_publishers(reason)
                self._blocked_by_alarm = True
            elif self._blocked_by_alarm:
                self.blocked_reason = reason  # (what a client told from now on reads)
        elif self.publishers_blocked and self._blocked_by_alarm:
            self.unblock_publishers()

    # -- restarts -------------------------------------------------------------------------------

    def offered_mechanisms(self, *, tls: bool) -> tuple[str, ...]:
        """The SASL mechanisms a client is offered (AMQP 0-9-1's connection.start, the stream
        protocol's SaslHandshake): :attr:`auth_mechanisms`, EXTERNAL only over TLS
        (``rabbit_auth_mechanism_ssl:should_offer/1``, v3.10.8: offered with or without a
        client certificate, which is then refused with a clear reason)."""
        return tuple(m for m in self.auth_mechanisms if m != "EXTERNAL" or tls)

    def restart(self) -> None:
        """Act as a RabbitMQ node that restarts: every connection is closed (clients over the
        wire get 320 CONNECTION_FORCED), non-durable exchanges and queues vanish, and durable
        queues keep only their persistent messages (``delivery_mode`` 2), unacknowledged ones
        included. Application tests use it to check their reconnection logic."""
        with self._lock:
            self.transports.restarting()
            shutdown = ConnectionForced("broker forced connection closure with reason "
                                        "'shutdown'")
            for connection in list(self.connections.values()):
                if connection.on_closed_by_broker is not None:  # a protocol's: it is told
                    connection.close_by_broker(shutdown)
                else:
                    connection.close()
            for vhost in self.vhosts.values():
                vhost.restart()

    def reset_node(self) -> None:
        """``rabbitmqctl reset`` (and ``force_reset``, the same on one node): the broker is as
        freshly constructed, with the virtual hosts and users it was constructed with (their
        default permissions and tags) and nothing else: no other vhost, user, queue, exchange,
        binding, policy, parameter or limit; global parameters as new (a new cluster id, the
        first cluster name). Every connection is closed first (as :meth:`restart`). The
        plugins stay enabled; the settings given to the constructor stay. Resource alarms
        are the monitors' (a listener's): they stay as they are.

        (Not :meth:`embroker.Broker.reset`, which returns a shared broker to its baseline
        between tests and keeps its connections.)

        RabbitMQ resets a node only while its application is stopped: a listener's
        :meth:`Server.reset <embroker.server.Server.reset>` checks that; the model has no
        listeners and does not.
        """
        with self._lock:
            self.restart()
            for name in list(self.vhosts):
                self.delete_vhost(name)
            vhosts, users = self._initial
            loopback, anonymous = self.access.loopback_users, self.access.anonymous
            self.access = AccessControl(users, loopback)
            self.access.anonymous = anonymous
            self.server_properties["cluster_name"] = self._default_cluster_name
            self._init_parameters()
            self._publish_faults.clear()
            self._delivery_faults.clear()
            for name in vhosts:
                self.add_vhost(name)
            self.plugins.start()

    # -- time ----------------------------------------------------------------------------------

    def tick(self) -> int:
        """Run the work that has fallen due (expiries...) and check the memory watermark;
        returns how many timers ran."""
        with self._lock:
            ran = self.clock.run_due()
            self.check_resources()
            return ran

    def held_bytes(self) -> int:
        """Bytes of message bodies ready in queues, in every vhost (what the memory watermark
        measures).

        Runtime complexity: ``O(queues)``.
        """
        with self._lock:
            return sum(q.message_bytes for vhost in self.vhosts.values()
                       for q in vhost.queues.values())

    def check_resources(self) -> None:
        """Raise or clear the memory alarm against :attr:`memory_high_watermark`, as RabbitMQ
        does (publishers blocked while the alarm lasts). An alarm does not clear publishers
        blocked by :meth:`block_publishers` for another reason."""
        limit = self.memory_high_watermark
        if limit is None and not self._memory_alarm:
            return
        with self._lock:
            over = limit is not None and self.held_bytes() > limit
            if over != self._memory_alarm:
                self._memory_alarm = over
                self._alarms_changed()

    # -- the trace -----------------------------------------------------------------------------

    def _check(self) -> None:
        """Assert every internal invariant (for tests)."""
        with self._lock:
            self.trace._check()
            if self.plugins.delayed is not None:
                self.plugins.delayed._check()
            for vhost in self.vhosts.values():
                vhost._check()
            for connection in self.connections.values():
                for channel in connection.channels.values():
                    channel._check()
            per_queue: dict[int, int] = {}
            for connection in self.connections.values():
                for channel in connection.channels.values():
                    for queue, _entry, _consumer in channel.outstanding():
                        per_queue[id(queue)] = per_queue.get(id(queue), 0) + 1
            for vhost in self.vhosts.values():
                for queue in vhost.queues.values():
                    assert queue.unacked == per_queue.get(id(queue), 0), (
                        f"{queue!r}: unacked count {queue.unacked} but channels hold "
                        f"{per_queue.get(id(queue), 0)}")

    # -- definitions ---------------------------------------------------------------------------

    def load_definitions(self, source: Source, *, vhost: str | None = "/",
                         ignore_unsupported: bool = False) -> list[str]:
        """Load a RabbitMQ definitions document (``rabbitmqctl export_definitions``): vhosts,
        users, permissions, exchanges, queues, bindings, policies, operator policies and vhost
        limits, from a JSON file (or a folder of them), its bytes, or a dict.

        The document is checked whole before anything is loaded (a malformed one changes
        nothing); an item the model refuses then ends the load as it ends RabbitMQ's import
        (see :func:`embroker.model._definitions.load_definitions`).

        Args:
            source: a path to a JSON file or a folder of them, the JSON's bytes, or the
                parsed document.
            vhost: the virtual host of items that name none (``None``: each must name one).
            ignore_unsupported: load the rest of a document with runtime parameters embroker
                cannot honour (shovels, federation upstreams), which are refused by default.

        Returns:
            What was left out (``["shovel 'move' in vhost '/'"]``; empty by default).

        Raises:
            DefinitionsError: the only error: not JSON, malformed (the field named), too big or
                too deep, an item refused as RabbitMQ refuses it (an unknown vhost or user, a
                queue argument or policy RabbitMQ would not take, with its text), or runtime
                parameters embroker cannot honour.
        """
        return _definitions.load_definitions(self, source, vhost=vhost,
                                             ignore_unsupported=ignore_unsupported)

    def definitions(self) -> dict[str, Any]:
        """This broker as a RabbitMQ definitions document (loads with
        ``rabbitmqctl import_definitions``)."""
        return _definitions.export_definitions(self)
