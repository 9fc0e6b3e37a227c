"""The node: overview, cluster name, nodes, whoami, extensions, auth, aliveness and health checks
(``rabbit_mgmt_wm_overview``, ``_cluster_name``, ``_nodes``, ``_node``, ``_whoami``,
``_extensions``, ``_auth``, ``_auth_attempts``, ``_aliveness_test``, ``_healthchecks``,
``_health_check_*``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .._untrusted import json_dumps
from .._version import __version__
from ..model._access import Rule
from ..model._stats import MessageStats
from . import _samples, views
from ._http import Response
from ._routes import Call, bad_request, not_found, route
from ._schema import Field, Schema, text

if TYPE_CHECKING:
    from ..model import Node
    from ._api import ManagementAPI

_EXCHANGE_DESCRIPTIONS = {
    "direct": "AMQP direct exchange, as per the AMQP specification",
    "fanout": "AMQP fanout exchange, as per the AMQP specification",
    "headers": "AMQP headers exchange, as per the AMQP specification",
    "topic": "AMQP topic exchange, as per the AMQP specification",
    # The plugins' (measured on RabbitMQ 3.10.8 with them enabled; the delayed-message
    # plugin's from its source).
    "x-consistent-hash": "Consistent Hashing Exchange",
    "x-modulus-hash": "Modulus Hashing Exchange",
    "x-random": "Randomly picks a binding (queue) to route via (to).",
    "x-recent-history": "Recent History Exchange.",
    "x-delayed-message": "Delayed Message Exchange.",
    # RabbitMQ 4's own (rabbit_exchange_type_local_random v4.1.4: description/0)
    "x-local-random": "Picks one random local binding (queue) to route via (to).",
}
_CHURN = ("channel_closed", "channel_created", "connection_closed", "connection_created",
          "queue_created", "queue_declared", "queue_deleted")
#: A node's figures that RabbitMQ samples from Erlang's VM and the disk: embroker shows 0.
_NODE_FIGURES = (
    "context_switches", "fd_used", "gc_bytes_reclaimed", "gc_num", "io_read_avg_time",
    "io_read_bytes", "io_read_count", "io_reopen_count", "io_seek_avg_time", "io_seek_count",
    "io_sync_avg_time", "io_sync_count", "io_write_avg_time", "io_write_bytes",
    "io_write_count", "mnesia_disk_tx_count", "mnesia_ram_tx_count", "msg_store_read_count",
    "msg_store_write_count", "proc_used", "queue_index_read_count", "queue_index_write_count",
    "sockets_used", *_CHURN)


def _failed(body: dict[str, Any]) -> Response:
    return Response(503, json_dumps(body).encode(), [("content-type", "application/json")])


def cluster_name(api: ManagementAPI) -> str:
    return api.broker.cluster_name


@route("GET", "overview", Rule.ANY)
def _overview(api: ManagementAPI, call: Call) -> Any:
    """A monitor's overview covers every vhost and names the node and its listeners; another
    user's covers the vhosts it may log in to and its own connections, without the node's
    details (``rabbit_mgmt_wm_overview``: ``get_overview(User, Range)``)."""
    broker = api.broker
    with broker.locked():
        monitor = api.sees_node(call)
        vhosts = [broker.vhosts[v] for v in api.visible(call)]
        unacked = views.unacked_by_queue(broker.connections.values())
        queues = [q for vh in vhosts for q in vh.queues.values()]
        ready = sum(q.message_count for q in queues)
        pending = sum(unacked.get(id(q), (0, 0))[0] for q in queues)
        names = {vh.name for vh in vhosts}
        connections = [c for c in broker.connections.values() if c.vhost.name in names
                       and api.sees_items_of(call, c.user)]
        totals = {"channels": sum(len(views.amqp_channels(c)) for c in connections),
                  "connections": len(connections),
                  "exchanges": sum(len(vh.exchanges) for vh in vhosts),
                  "queues": len(queues)}
        if monitor:
            totals["consumers"] = sum(q.consumer_count for q in queues)
        message_totals = MessageStats()  # (the visible vhosts', as its histories)
        for vhost in vhosts:
            message_totals.add(vhost.stats)
        listeners = _listeners(api)
        # The visible vhosts' histories summed (rabbit_mgmt_db:overview/3).
        ranges = _samples.asked(call, broker)
        lengths, msg_rates = api.sampler.histories(vhosts, ranges.lengths, ranges.msg_rates)
        # The node's churn: RabbitMQ 3.10.8 reads its samples for the msg_rates range and
        # formats them for the lengths range (rabbit_mgmt_data:overview_data/4,
        # rabbit_mgmt_db:overview/3): none ({}) for a lengths range alone (checked live).
        churn = views.stats(_CHURN, api.sampler.history([api.node], ranges.lengths)) \
            if ranges.lengths is None or ranges.msg_rates is not None else {}
    answer = {
        "management_version": "3.10.8", "rates_mode": "basic",
        "sample_retention_policies": {"global": [600, 3600, 28800, 86400],
                                      "basic": [600, 3600], "detailed": [600]},
        "exchange_types": _exchange_types(api), "product_version": __version__,
        "product_name": "embroker", "rabbitmq_version": "3.10.8",
        "cluster_name": cluster_name(api),
        "erlang_version": views.ERLANG_VERSION, "erlang_full_version": "none",
        "release_series_support_status": "supported", "disable_stats": False,
        "enable_queue_totals": False,
        "message_stats": views.stats(views.OVERVIEW_STATS, msg_rates,
                                     views.counted(message_totals)),
        "churn_rates": churn,
        "queue_totals": {"messages": ready + pending,
                         "messages_details": views.rate(lengths, "messages"),
                         "messages_ready": ready,
                         "messages_ready_details": views.rate(lengths, "messages_ready"),
                         "messages_unacknowledged": pending,
                         "messages_unacknowledged_details": views.rate(
                             lengths, "messages_unacknowledged")},
        "object_totals": totals, "statistics_db_event_queue": 0,
    }
    if monitor:
        answer.update({"node": api.node.name, "listeners": listeners,
                       "contexts": _contexts(api, node=True)})
    return answer


def _contexts(api: ManagementAPI, *, node: bool) -> list[dict[str, Any]]:
    port = str(api.server.management_port if api.server is not None else 0)
    context: dict[str, Any] = {"cowboy_opts": "[]", "description": "RabbitMQ Management",
                               "path": "/", "port": port}
    if node:
        context.update({"node": api.node.name, "ssl_opts": []})
    return [context]


def _exchange_types(api: ManagementAPI) -> list[dict[str, Any]]:
    """The exchange types a declare may name: the built-in ones and the enabled plugins'."""
    return [{"name": name, "description": _EXCHANGE_DESCRIPTIONS.get(name, name),
             "enabled": True} for name in sorted(api.broker.plugins.exchange_types)]


def _listeners(api: ManagementAPI) -> list[dict[str, Any]]:
    """The node's listeners (RabbitMQ's ``rabbit_networking:active_listeners``), as the
    listener names them (:meth:`Server.listeners <embroker.server.Server.listeners>`: what
    ``rabbitmq-diagnostics listeners`` shows too)."""
    server = api.server
    if server is None:
        return []
    options = {"backlog": 512, "nodelay": True, "linger": [True, 0], "exit_on_close": False}
    return [{"node": api.node.name, "protocol": protocol, "ip_address": server.host,
             "port": port, "socket_opts": dict(options)} for protocol, port in server.listeners()]


@route("GET", "cluster-name", Rule.ANY)
def _cluster_name(api: ManagementAPI, call: Call) -> Any:
    return {"name": cluster_name(api)}


_CLUSTER_NAME = Schema({"name": Field(text, required=True)})


@route("PUT", "cluster-name", Rule.ADMIN, body=_CLUSTER_NAME)
def _cluster_name_put(api: ManagementAPI, call: Call) -> Any:
    api.broker.set_global_parameter("cluster_name", call.body["name"])
    return Response(204)


@route("GET", "nodes", Rule.MONITOR)
def _nodes(api: ManagementAPI, call: Call) -> Any:
    """Every node of the cluster, in its order (``rabbit_mgmt_wm_nodes:all_nodes_raw/0``: each
    a disc node, running or not)."""
    with api.broker.locked():
        nodes = list(api.broker.nodes)
        ranges = _samples.asked(call, api.broker, ceil_lengths=True)
    return [_node(api, node, ranges.node_stats) for node in nodes]


@route("GET", "nodes/{node}", Rule.MONITOR)
def _node_one(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        found = [node for node in api.broker.nodes if node.name == call.params["node"]]
    if not found:
        raise not_found()
    with api.broker.locked():
        ranges = _samples.asked(call, api.broker, ceil_lengths=True)
    return _node(api, found[0], ranges.node_stats)


def _node(api: ManagementAPI, node: Node, node_stats: _samples.Range | None = None
          ) -> dict[str, Any]:
    """A node as ``/api/nodes`` shows it. A node whose RabbitMQ is stopped has no statistics:
    its name, type, ``running`` and no cluster links (checked live on a 3.10.8 cluster,
    ``rabbitmqctl stop_app`` on one node). A running node has the figures embroker keeps: the
    memory the broker holds and the server's disk figures (one process, one disk); its own
    alarms (``broker.alarms_of(node)``); the management context of the node that answers
    (the server's), none on the others. Its figures' ``*_details`` from its history
    (``node_stats``: the range asked)."""
    broker = api.broker
    with broker.locked():
        running = broker.network.sees(api.node, node)  # (after a partition: as it counts)
        partitions = [other.name for other in node.partitions] if node.running else []
    if not running:
        return {"name": node.name, "type": "disc", "running": False, "cluster_links": [],
                **({"partitions": partitions} if partitions else {})}
    served = node is api.node
    with broker.locked():
        held = broker.held_bytes()
        alarms = broker.alarms_of(node)
        history = api.sampler.history([node], node_stats)
    limit = broker.memory_high_watermark
    server = api.server  # (the node's monitors, when served: rabbitmqctl set_*_limit)
    disk_limit = server.disk_free_limit if server is not None else 0
    disk_free = (server.disk_free or 0) if server is not None else 0
    figures = views.stats(_NODE_FIGURES, history)
    for name in ("proc_used", "fd_used", "sockets_used"):
        figures[name] = 0
    return {**figures,
        "partitions": partitions, "os_pid": "0", "fd_total": 1024, "sockets_total": 0,
        "mem_limit": limit if limit is not None else 0, "mem_alarm": "memory" in alarms,
        "mem_used": held, "mem_used_details": views.rate(history, "mem_used"),
        "disk_free_limit": disk_limit, "disk_free_alarm": "disk" in alarms,
        "disk_free": disk_free,
        "disk_free_details": views.rate(history, "disk_free"), "proc_total": 0, "proc_used": 0,
        "rates_mode": "basic", "uptime": int((time.time() - api._started) * 1000),
        "run_queue": 0, "processors": 1, "exchange_types": _exchange_types(api),
        "auth_mechanisms": [{"name": "PLAIN", "description": "SASL PLAIN authentication "
                             "mechanism", "enabled": True},
                            {"name": "AMQPLAIN", "description": "QPid AMQPLAIN mechanism",
                             "enabled": True}],
        "applications": [{"name": "embroker", "description": "embroker",
                          "version": __version__}],
        "contexts": _contexts(api, node=False) if served else [],
        # (rabbit:log_locations/0, rabbit_mnesia:dir/0, rabbit:config_files/0: what the node
        # started from, as whoever started it told the API; the data folder is the one the
        # disk monitor watches, rabbitmq-diagnostics status's data_directory)
        "log_files": list(api.log_files),
        "db_dir": server.data_dir if server is not None else "",
        "config_files": list(api.config_files), "cluster_links": [],
        "net_ticktime": 60, "enabled_plugins": ["rabbitmq_management"],
        "mem_calculation_strategy": "none",
        "metrics_gc_queue_length": dict.fromkeys((
            "channel_closed", "channel_consumer_deleted", "connection_closed",
            "consumer_deleted", "exchange_deleted", "node_node_deleted", "queue_deleted",
            "vhost_deleted"), 0),
        "ra_open_file_metrics": {"ra_log_segment_writer": 0, "ra_log_wal": 0},
        "name": node.name, "type": "disc", "running": True,
    }


@route("GET", "auth/attempts/{node}", Rule.MONITOR)
def _auth_attempts(api: ManagementAPI, call: Call) -> Any:
    """rabbit_mgmt_wm_auth_attempts: the logins tried per protocol (the model counts them
    where it decides them: ``broker.access.attempts``); another node is 404."""
    if call.params["node"] != api.node.name:
        raise not_found()
    with api.broker.locked():
        return api.broker.access.attempts.by_protocol()


@route("GET", "auth/attempts/{node}/source", Rule.MONITOR)
def _auth_attempts_by_source(api: ManagementAPI, call: Call) -> Any:
    """The same per client address and user: none unless tracking of sources is on
    (``broker.access.attempts.track_sources``, RabbitMQ's ``track_auth_attempt_source``,
    off by default)."""
    if call.params["node"] != api.node.name:
        raise not_found()
    with api.broker.locked():
        return api.broker.access.attempts.by_source()


@route("DELETE", "auth/attempts/{node}", Rule.MONITOR)
@route("DELETE", "auth/attempts/{node}/source", Rule.MONITOR)
def _auth_attempts_reset(api: ManagementAPI, call: Call) -> Any:
    """Forget the counts, both kinds (``rabbit_core_metrics:reset_auth_attempt_metrics``)."""
    if call.params["node"] != api.node.name:
        raise not_found()
    with api.broker.locked():
        api.broker.access.attempts.reset()
    return Response(204)


#: The UI parts of the plugins embroker serves, as RabbitMQ 3.10.8 lists them
#: (``rabbit_mgmt_wm_extensions``: each ``rabbit_mgmt_extension`` module's ``web_ui/0``, the
#: management plugin's first, then by application): ``rabbitmq_management``'s router (without
#: it the UI never starts) and ``rabbitmq_tracing``'s Admin > Tracing page (``/api/traces`` and
#: ``/api/trace-files`` are always served). ``rabbitmq_stream_management``'s ``stream.js`` is
#: not listed, as on a RabbitMQ without that plugin: embroker serves no ``/api/stream/*``, and
#: the UI would load pages that fail. (The reference, with rabbitmq_management and
#: rabbitmq_tracing on, answered exactly this.)
EXTENSIONS = ({"javascript": "dispatcher.js"}, {"javascript": "tracing.js"})


@route("GET", "extensions", Rule.ANY)
def _extensions(api: ManagementAPI, call: Call) -> Any:
    return [dict(extension) for extension in EXTENSIONS]


@route("GET", "whoami", Rule.ANY)
def _whoami(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        user = api.broker.access.users.get(call.user)
        tags = list(user.tags) if user is not None else []
    return {"name": call.user, "tags": tags}


@route("GET", "auth", Rule.PUBLIC)
def _auth(api: ManagementAPI, call: Call) -> Any:
    return {"enable_uaa": False, "uaa_client_id": "", "uaa_location": ""}


@route("GET", "aliveness-test/{vhost}", Rule.VHOST)
def _aliveness(api: ManagementAPI, call: Call) -> Any:
    vhost = api.vhost(call).name
    # As RabbitMQ: declare the queue aliveness-test, publish to it and get the message back.
    with api.channel(call, vhost, whole_reasons=True) as channel:
        channel.queue_declare("aliveness-test")
        channel.basic_publish("", "aliveness-test", b"test_message")
        got = channel.basic_get("aliveness-test", no_ack=True)
    if got is None or got.body != b"test_message":
        return _failed({"status": "failed", "reason": "message did not come back"})
    return {"status": "ok"}


@route("DELETE", "reset", Rule.ADMIN)
@route("DELETE", "reset/{node}", Rule.ADMIN)
def _reset(api: ManagementAPI, call: Call) -> Any:
    """rabbit_mgmt_wm_reset: clear the statistics; embroker's are exact (counted when asked),
    so there is nothing to clear. Another node's name is 404, as RabbitMQ answers."""
    if call.params.get("node", api.node.name) != api.node.name:
        raise not_found()
    return Response(204)


@route("POST", "rebalance/queues", Rule.ADMIN)
def _rebalance_queues(api: ManagementAPI, call: Call) -> Any:
    """rabbit_mgmt_wm_rebalance_queues: spread queue leaders over the nodes; one node has
    nothing to move (RabbitMQ answers 204 there too)."""
    return Response(204)


@route("GET", "healthchecks/node", Rule.ANY)  # (3.10's deprecated node check)
@route("GET", "health/checks/certificate-expiration/{within}/{unit}", Rule.ANY)  # (no TLS)
@route("GET", "health/checks/virtual-hosts", Rule.ANY)
def _healthy(api: ManagementAPI, call: Call) -> Any:
    """Checks that always pass on embroker's one node."""
    return {"status": "ok"}


@route("GET", "healthchecks/node/{node}", Rule.ANY)
def _healthchecks_node(api: ManagementAPI, call: Call) -> Any:
    if call.params["node"] != api.node.name:
        raise not_found()
    return {"status": "ok"}


#: How RabbitMQ names each resource of an alarm (``rabbit_alarm:format_as_map/1``, v3.10.8).
_ALARM_RESOURCES = {"memory": "memory", "disk": "disk space"}


@route("GET", "health/checks/alarms", Rule.ANY)
def _health_alarms(api: ManagementAPI, call: Call) -> Any:
    """The resource alarms in effect on any node of the cluster, each with its node
    (``rabbit_mgmt_wm_health_check_alarms``, v3.10.8: ``rabbit_alarm:get_alarms/1``), in
    RabbitMQ's failure body."""
    with api.broker.locked():
        alarms = [(node.name, name) for node, name in api.broker.node_alarms()]
    return _alarms_answer(alarms, "There are alarms in effect in the cluster")


@route("GET", "health/checks/local-alarms", Rule.ANY)
def _health_local_alarms(api: ManagementAPI, call: Call) -> Any:
    """The resource alarms of the node that answers (the server's) alone
    (``rabbit_mgmt_wm_health_check_local_alarms``, v3.10.8: ``get_local_alarms/1``)."""
    node = api.node
    alarms = [(node.name, name) for name in api.broker.alarms_of(node)]
    return _alarms_answer(alarms, "There are alarms in effect on the node")


def _alarms_answer(alarms: list[tuple[str, str]], reason: str) -> Any:
    if alarms:
        return _failed({"status": "failed", "reason": reason,
                        "alarms": [{"node": node, "resource": _ALARM_RESOURCES.get(a, a)}
                                   for node, a in alarms]})
    return {"status": "ok"}


@route("GET", "health/checks/port-listener/{port}", Rule.ANY)
def _health_port(api: ManagementAPI, call: Call) -> Any:
    try:
        port = int(call.params["port"])
    except ValueError:
        raise bad_request(f"{call.params['port']} is not a port") from None
    ports = {entry["port"] for entry in _listeners(api)}
    if port not in ports:
        return _failed({"status": "failed", "reason": "No active listener",
                        "missing": port, "ports": sorted(ports)})
    return {"status": "ok", "port": port}


@route("GET", "health/checks/protocol-listener/{protocol}", Rule.ANY)
def _health_protocol(api: ManagementAPI, call: Call) -> Any:
    protocol = call.params["protocol"]
    known = {entry["protocol"] for entry in _listeners(api)}
    wanted = {"amqp091": "amqp", "amqp": "amqp", "amqp10": "amqp10", "amqp1.0": "amqp10",
              "http": "http"}.get(protocol, protocol)
    if wanted not in known:
        return _failed({"status": "failed",
                        "reason": f"No active listener for protocol {protocol}",
                        "missing": protocol, "protocols": sorted(known)})
    return {"status": "ok", "protocol": protocol}


@route("GET", "health/checks/node-is-mirror-sync-critical", Rule.ANY)
@route("GET", "health/checks/node-is-quorum-critical", Rule.ANY)
def _health_single_node(api: ManagementAPI, call: Call) -> Any:
    return {"status": "ok", "reason": "single node cluster"}
