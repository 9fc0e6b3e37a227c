"""What a node does for RabbitMQ's tools: one function per operation of the control interface.

Each operation takes the node and a JSON object of arguments and returns a JSON value; the
tools format it (:mod:`._ctl`). Every change goes through the broker's own ``rabbitmqctl``
methods (``add_user``, ``set_policy``...) and every listing reads the model under the broker's
lock, as the management API does, with its views: the rules live in the model, once.

A failure is a :class:`~._service.ControlError` carrying the text RabbitMQ's tool prints and
its exit code; a refusal by the model (an :class:`~embroker.errors.AMQPError`) is shown with
the model's text.
"""

from __future__ import annotations

import datetime
import decimal
import os
from collections.abc import Callable, Generator, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._untrusted import json_loads
from .._version import __version__
from ..errors import AMQPError, DefinitionsError, Refusal
from ..fieldtypes import field_type
from ..kit import check_password
from ..management import views
from ..model._definitions import read_file, vhost_metadata
from ..model._definitions_schema import NOT_JSON, parse
from ..model._kinds import AMQP_091 as AMQP_091_KIND
from ..model._kinds import DIRECT
from ._protocol import (
    EX_DATAERR,
    EX_NOUSER,
    EX_SOFTWARE,
    EX_UNAVAILABLE,
    EX_USAGE,
    INFO_KEYS,
    ControlError,
)

if TYPE_CHECKING:
    from ..model import Broker, Connection, Queue, VirtualHost
    from ._node import Node

__all__ = ["OPERATIONS"]

Operation = Callable[["Node", dict[str, Any]], Any]
OPERATIONS: dict[str, Operation] = {}



def operation(name: str) -> Callable[[Operation], Operation]:
    def register(function: Operation) -> Operation:
        OPERATIONS[name] = function
        return function
    return register


def _text(arguments: Mapping[str, Any], name: str, default: str | None = None) -> str:
    value = arguments.get(name, default)
    if not isinstance(value, str):
        raise ControlError(f"{name}: expected a string", EX_USAGE)
    return value


def _vhost(broker: Broker, arguments: Mapping[str, Any], *, code: int = EX_DATAERR,
           plain: bool = True) -> VirtualHost:
    """The vhost named, or RabbitMQ's error: "Virtual host 'v' does not exist" alone, exit 65
    (set_policy, delete_vhost), or after ``Error:`` with the name unquoted, exit 69 (the
    permission commands: ``plain=False``)."""
    name = _text(arguments, "vhost", "/")
    vhost = broker.vhosts.get(name)
    if vhost is None:
        raise ControlError(f"Virtual host '{name}' does not exist" if plain else
                           f"Virtual host {name} does not exist", code, plain=plain)
    return vhost


# -- node ---------------------------------------------------------------------------------------

@operation("ping")
def _ping(node: Node, arguments: dict[str, Any]) -> Any:
    return "pong"


@operation("await_startup")
def _await_startup(node: Node, arguments: dict[str, Any]) -> Any:
    return node.app_running


@operation("status")
def _status(node: Node, arguments: dict[str, Any]) -> Any:
    return node.status()


@operation("listeners")
def _listeners(node: Node, arguments: dict[str, Any]) -> Any:
    return node.listeners()


@operation("alarms")
def _alarms(node: Node, arguments: dict[str, Any]) -> Any:
    return node.alarms()


@operation("cluster_alarms")
def _cluster_alarms(node: Node, arguments: dict[str, Any]) -> Any:
    return node.cluster_alarms()


@operation("cluster_status")
def _cluster_status(node: Node, arguments: dict[str, Any]) -> Any:
    return node.cluster_status()


@operation("environment")
def _environment(node: Node, arguments: dict[str, Any]) -> Any:
    return {"version": __version__, "pid": os.getpid(), "node": node.name}


@operation("stop")
def _stop(node: Node, arguments: dict[str, Any]) -> Any:
    node.stop_soon()
    return None


@operation("stop_app")
def _stop_app(node: Node, arguments: dict[str, Any]) -> Any:
    node.stop_app()
    return None


@operation("start_app")
def _start_app(node: Node, arguments: dict[str, Any]) -> Any:
    node.start_app()
    return None


@operation("reset")
def _reset(node: Node, arguments: dict[str, Any]) -> Any:
    node.reset()
    return None


@operation("set_vm_memory_high_watermark")
def _set_vm_memory_high_watermark(node: Node, arguments: dict[str, Any]) -> Any:
    fraction, absolute = arguments.get("fraction"), arguments.get("absolute")
    node.set_vm_memory_high_watermark(fraction=fraction, absolute=absolute)
    return None


@operation("set_disk_free_limit")
def _set_disk_free_limit(node: Node, arguments: dict[str, Any]) -> Any:
    node.set_disk_free_limit(absolute=arguments.get("absolute"),
                             mem_relative=arguments.get("mem_relative"))
    return None


# -- listings -----------------------------------------------------------------------------------

def _pid(node: Node, kind: int, number: int, *, on: str | None = None) -> dict[str, str]:
    """An Erlang pid as RabbitMQ's tools print it (:mod:`._format`'s ``$pid``), for a queue
    (kind 0), a connection (1) or a channel (2) of this node (or of the cluster's node named
    ``on``: one embroker's nodes share its creation): stable for the object's life, unique
    on the node."""
    return {"$pid": f"<{on or node.name}.{node.creation}.{number}.{kind}>"}


def _typed(value: Any) -> Any:
    """An AMQP field value tagged for the tools (:mod:`._format`): tables and arrays with
    their values' AMQP types, as RabbitMQ keeps them."""
    if isinstance(value, Mapping):
        return {"$table": [[str(k), field_type(v), _typed(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return {"$array": [[field_type(v), _typed(v)] for v in value]}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("latin-1")
    if isinstance(value, datetime.datetime):
        return int(value.timestamp())
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def _ip(host: Any) -> Any:
    return {"$ip": host} if isinstance(host, str) and host else host


def _queue_row(node: Node, queue: Queue, unacked: Mapping[int, tuple[int, int]]) -> dict[str, Any]:
    if queue.down:
        # Its home node is stopped: rabbit_amqqueue:info_down/2 (v3.10.8) answers DOWN_KEYS,
        # the others '' (checked live: type rabbit_classic_queue, state down, its pid on its
        # home, messages '').
        down = {"name": queue.name, "durable": queue.durable, "auto_delete": queue.auto_delete,
                "arguments": _typed(queue.arguments), "type": queue.type.module,
                "pid": _pid(node, 0, id(queue) % 1_000_000, on=queue.placement.leader.name),
                "state": "down"}
        return {key: down.get(key, "") for key in INFO_KEYS["queues"][0]}
    info = views.queue_info(queue, unacked.get(id(queue), (0, 0)))
    classic = info["type"] == "classic"
    owner = queue.exclusive_owner if queue.exclusive else None
    row = {key: info.get(key, "") for key in INFO_KEYS["queues"][0]}
    # Where it lives (its placement): its pid is on its home or leader (list_queues asks each
    # node for the queues local to it: rabbit_amqqueue:emit_info_local/3 and
    # is_local_to_node/2, v3.10.8), none for a stream (pid is none of rabbit_stream_queue's
    # info keys: checked live); a replicated queue's leader ('' while its node is down),
    # members and the members that run (rabbit_quorum_queue:i/2, rabbit_stream_queue:i/2).
    home, members, online, leader = views.placement_names(queue)
    row.update({
        "arguments": _typed(queue.arguments),
        "pid": _pid(node, 0, id(queue) % 1_000_000, on=home) if info["type"] != "stream"
        else "",
        "owner_pid": _pid(node, 1, owner.id) if owner is not None else "",
        "exclusive": queue.exclusive if classic else "",
        "exclusive_consumer_pid": "", "exclusive_consumer_tag": info.get(
            "exclusive_consumer_tag") or "",
        "policy": info.get("policy") or "", "head_message_timestamp": "",
        "disk_reads": 0, "disk_writes": 0, "slave_pids": "", "synchronised_slave_pids": "",
        "leader": leader if not classic else "",
        "members": {"$atoms": list(members)} if not classic else "",
        "online": {"$atoms": list(online)} if not classic else "",
        "messages_ready_ram": info.get("messages_ready_ram", info.get("messages_ready")),
        "messages_unacknowledged_ram": info.get("messages_unacknowledged_ram",
                                                info.get("messages_unacknowledged")),
        "consumer_utilisation": info.get("consumer_utilisation") or "",
        "consumer_capacity": info.get("consumer_capacity") or 0,
        "state": "running",
    })
    return row


#: A connection's ``protocol`` as ``rabbitmqctl list_connections`` shows it: rabbit_reader's
#: ``{0,9,1}`` (``[0,9,1]`` in JSON).
AMQP_091 = {"$tuple": [0, 9, 1]}


def _amqp_091(connection: Connection) -> bool:
    """Whether ``connection`` is one ``rabbitmqctl list_connections`` lists: AMQP 0-9-1 (RabbitMQ
    3.10.8 lists AMQP 1.0 connections with list_amqp10_connections, stream ones with
    list_stream_connections: checked live)."""
    return connection.kind in (AMQP_091_KIND, DIRECT)


def _connection_rows(node: Node) -> list[dict[str, Any]]:
    from ..management import connection_info

    api = node.views
    wire = api.wire()
    rows = []
    for connection in node.broker.connections.values():
        if not connection.is_open or not _amqp_091(connection):
            continue
        info = connection_info(api, connection, wire, "rmq-cli")
        row = {key: info.get(key, "") for key in INFO_KEYS["connections"][0]}
        row.update({"pid": _pid(node, 1, connection.id), "channels": info.get("channels", 0),
                    "protocol": AMQP_091,
                    "ssl": info.get("ssl", False), "host": _ip(info.get("host")),
                    "peer_host": _ip(info.get("peer_host")),
                    "client_properties": _typed(connection.client_properties),
                    "ssl_protocol": info.get("ssl_protocol") or "",
                    "ssl_key_exchange": info.get("ssl_key_exchange") or "",
                    "ssl_cipher": info.get("ssl_cipher") or "",
                    "ssl_hash": info.get("ssl_hash") or "",
                    "peer_cert_subject": info.get("peer_cert_subject") or "",
                    "peer_cert_issuer": info.get("peer_cert_issuer") or "",
                    "peer_cert_validity": info.get("peer_cert_validity") or ""})
        rows.append(row)
    return rows


def _plugin_connection_rows(node: Node, kind: str) -> list[dict[str, Any]]:
    """A plugin's own listing (``list_stomp_connections``, ``list_mqtt_connections``): its
    connections, each row what its protocol layer keeps (``details["listing"]``) over the
    columns every connection has."""
    rows = []
    for connection in node.broker.connections.values():
        if not connection.is_open or connection.kind.listing != kind:
            continue
        details = connection.details
        row: dict[str, Any] = {
            "conn_name": connection.name, "connection": _pid(node, 1, connection.id),
            "connection_state": "running", "host": _ip(details.get("host")),
            "port": details.get("port", 0), "peer_host": _ip(details.get("peer_host")),
            "peer_port": details.get("peer_port", 0), "peer_addr": _ip(details.get("host")),
            "channels": len(connection.channels), "channel_max": details.get("channel_max", 0),
            "frame_max": details.get("frame_max", 0),
            "client_properties": _typed(connection.client_properties),
            "ssl": bool(details.get("ssl", False)), "ssl_protocol": "",
            "ssl_key_exchange": "", "ssl_cipher": "", "ssl_hash": "",
            "user": connection.user, "vhost": connection.vhost.name}
        row.update(details.get("listing", {}))
        rows.append(row)
    return rows


def _channel_pid(node: Node, connection: Connection, number: int) -> dict[str, str]:
    return _pid(node, 2, connection.id * 65536 + number)


Row = Callable[[Any], dict[str, Any]]


def _listed_queues(node: Node, vhost: VirtualHost, arguments: Mapping[str, Any]) -> list[Queue]:
    """The queues ``list_queues`` lists (list_queues_command.ex, v3.10.8): with ``--local``
    those whose home or leader is this node (``rabbit_amqqueue:emit_info_local/4``); else the
    down ones (``--offline``: ``emit_info_down/4``, listed first) and those on a running node
    (``--online``: each running node's local ones), both unless one is asked for."""
    queues = list(vhost.queues.values())
    if arguments.get("local"):
        return [q for q in queues if not q.down and q.placement.leader.name == node.name]
    online, offline = bool(arguments.get("online")), bool(arguments.get("offline"))
    if not online and not offline:
        online = offline = True
    return [q for q in queues if q.down and offline] + [
        q for q in queues if not q.down and online and q.placement.leader.running]


def _listing(node: Node, kind: str, vhost: VirtualHost | None,
             arguments: Mapping[str, Any]) -> tuple[list[Any], Row]:
    """What a listing shows (read now, under the broker's lock) and how each item becomes a
    row (in slices, later: see :func:`_list`)."""
    broker = node.broker
    if kind == "queues":
        assert vhost is not None
        unacked = views.unacked_by_queue(broker.connections.values())
        return _listed_queues(node, vhost, arguments), lambda q: _queue_row(node, q, unacked)
    if kind == "exchanges":
        assert vhost is not None
        return list(vhost.exchanges.values()), _exchange_row
    if kind == "bindings":
        assert vhost is not None
        found: list[tuple[str, str, str, str, Mapping[str, Any]]] = [
            ("", q.name, "queue", q.name, {}) for q in vhost.queues.values()]
        found += [(b.source.name, b.destination.name, b.destination.kind, b.routing_key,
                   b.arguments)
                  for x in vhost.exchanges.values() if x.name for b in x.bindings.values()]
        return found, _binding_row
    if kind == "connections":
        return _connection_rows(node), lambda row: row
    if kind in ("stomp_connections", "mqtt_connections"):
        return _plugin_connection_rows(node, kind), lambda row: row
    if kind == "channels":
        api = node.views
        wire = api.wire()
        channels = [(connection, channel, *api.identity(connection, wire))
                    for connection in broker.connections.values() if connection.is_open
                    for channel in views.amqp_channels(connection).values()]
        return channels, lambda item: _channel_row(node, *item)
    if kind == "consumers":
        assert vhost is not None
        return [c for q in vhost.queues.values() for c in q.consumers], \
            lambda consumer: _consumer_row(node, consumer)
    if kind == "vhosts":
        return list(broker.vhosts.values()), lambda host: _vhost_row(node, host)
    raise ControlError(f"nothing to list as {kind!r}", EX_USAGE)


def _exchange_row(exchange: Any) -> dict[str, Any]:
    return {"name": exchange.name, "type": exchange.type, "durable": exchange.durable,
            "auto_delete": exchange.auto_delete, "internal": exchange.internal,
            "arguments": _typed(exchange.arguments),
            "policy": exchange.policy.name if exchange.policy is not None else ""}


def _binding_row(binding: tuple[str, str, str, str, Mapping[str, Any]]) -> dict[str, Any]:
    source, destination, kind, key, arguments = binding
    return {"source_name": source, "source_kind": "exchange", "destination_name": destination,
            "destination_kind": kind, "routing_key": key, "arguments": _typed(arguments)}


def _channel_row(node: Node, connection: Connection, channel: Any, name: str,
                 peer: tuple[str, int]) -> dict[str, Any]:
    info = views.channel_info(channel, name, peer, connection.user, "rmq-cli")
    row = {key: info.get(key, "") for key in INFO_KEYS["channels"][0]}
    row.update({"pid": _channel_pid(node, connection, channel.number),
                "connection": _pid(node, 1, connection.id), "name": info["name"]})
    return row


def _consumer_row(node: Node, consumer: Any) -> dict[str, Any]:
    info = views.consumer_info(consumer, "", ("", 0), "")
    return {"queue_name": consumer.queue.name,
            "channel_pid": _channel_pid(node, consumer.channel.connection,
                                        consumer.channel.number),
            "consumer_tag": consumer.tag, "ack_required": info["ack_required"],
            "prefetch_count": info["prefetch_count"], "active": info["active"],
            "activity_status": info["activity_status"], "arguments": _typed(consumer.arguments)}


def _vhost_row(node: Node, host: VirtualHost) -> dict[str, Any]:
    metadata = vhost_metadata(node.broker, host.name)
    described = bool(metadata) or host.name == "/"
    return {"name": host.name,  # (a vhost with no metadata: RabbitMQ shows "" for both)
            "description": str(metadata.get("description", "Default virtual host"
                                            if host.name == "/" else "")),
            "tags": {"$atoms": list(metadata.get("tags", []))} if described else "",
            "default_queue_type": "undefined", "tracing": host.tracing,
            "cluster_state": {"$proplist": list(views.cluster_state(node.broker).items())}}


def _columns(kind: str, arguments: Mapping[str, Any]) -> list[str]:
    _allowed, default = INFO_KEYS[kind]
    given = arguments.get("columns") or list(default)
    if not isinstance(given, list) or not all(isinstance(c, str) for c in given):
        raise ControlError("columns: expected a list of names", EX_USAGE)
    return given


#: How many rows of a listing are made in one step of the listener's loop (about 2 ms of
#: queues): a listing of 10,000 queues costs 200 ms, which other clients must not wait for.
LISTING_SLICE = 100


@operation("list")
def _list(node: Node, arguments: dict[str, Any]) -> Generator[None, None, list[list[Any]]]:
    """Rows of one listing (``kind``: queues, exchanges, ...), each the named columns, made a
    slice at a time: a generator, which the control service steps as the management API
    steps its listings."""
    kind = _text(arguments, "kind")
    if kind not in INFO_KEYS:
        raise ControlError(f"nothing to list as {kind!r}", EX_USAGE)
    columns = _columns(kind, arguments)
    lock = node.broker.locked()
    with lock:
        vhost = _vhost(node.broker, arguments) if kind in (
            "queues", "exchanges", "bindings", "consumers") else None
        items, row_of = _listing(node, kind, vhost, arguments)
    rows: list[list[Any]] = []
    for start in range(0, len(items), LISTING_SLICE):
        with lock:  # (an item deleted meanwhile is still listed as it was read)
            rows += [[row.get(column) for column in columns]
                     for row in map(row_of, items[start:start + LISTING_SLICE])]
        yield  # (the listener serves its other clients between slices)
    return rows


@operation("list_users")
def _list_users(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        return [{"user": name, "tags": {"$atoms": list(broker.access.users[name].tags)}}
                for name in broker.access.users]


@operation("list_permissions")
def _list_permissions(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        vhost = _vhost(broker, arguments).name
        return [{"user": user, "configure": p.configure, "write": p.write, "read": p.read}
                for user, p in broker.list_permissions(vhost).items()]


@operation("list_user_permissions")
def _list_user_permissions(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    user = _text(arguments, "user")
    with broker.locked():
        _no_such_user(broker, user)
        rows = []
        for vhost in broker.vhosts:
            permissions = broker.access.permissions(user, vhost)
            if permissions is not None:
                rows.append({"vhost": vhost, "configure": permissions.configure,
                             "write": permissions.write, "read": permissions.read})
        return rows


@operation("list_topic_permissions")
def _list_topic_permissions(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        vhost = _vhost(broker, arguments).name
        return [{"user": user, "exchange": p.exchange, "write": p.write, "read": p.read}
                for user, found in broker.list_topic_permissions(vhost).items() for p in found]


@operation("list_user_topic_permissions")
def _list_user_topic_permissions(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    user = _text(arguments, "user")
    with broker.locked():
        _no_such_user(broker, user)
        return [{"vhost": vhost, "exchange": p.exchange, "write": p.write, "read": p.read}
                for vhost in broker.vhosts
                for p in broker.access.topic_permissions(user, vhost)]


def _policy_rows(policies: Iterable[Any]) -> list[dict[str, Any]]:
    return [{"vhost": p.vhost, "name": p.name, "pattern": p.pattern, "apply-to": p.apply_to,
             "definition": views.json_value(dict(p.definition)), "priority": p.priority}
            for p in policies]


@operation("list_policies")
def _list_policies(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        return _policy_rows(broker.list_policies(_vhost(broker, arguments).name))


@operation("list_operator_policies")
def _list_operator_policies(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        return _policy_rows(broker.list_operator_policies(_vhost(broker, arguments).name))


@operation("list_vhost_limits")
def _list_vhost_limits(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        if arguments.get("global"):
            return [{"vhost": name, "limits": broker.list_vhost_limits(name)}
                    for name in broker.vhosts if broker.list_vhost_limits(name)]
        vhost = _vhost(broker, arguments).name
        return [{"vhost": vhost, "limits": broker.list_vhost_limits(vhost)}]


@operation("list_user_limits")
def _list_user_limits(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        if arguments.get("user") is None:
            return [{"user": user, "limits": limits}
                    for user, limits in broker.user_limits().items() if limits]
        user = _text(arguments, "user")
        _no_such_user(broker, user)
        return [{"user": user, "limits": broker.user_limits(user).get(user, {})}]


@operation("list_parameters")
def _list_parameters(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        vhost = _vhost(broker, arguments).name
        return [{"component": p["component"], "name": p["name"], "value": _stored(p)}
                for p in broker.parameters(vhost=vhost)]


#: The keys of a policy kept as a runtime parameter, in the order RabbitMQ stores them
#: (``rabbit_policy:set_op/7``: what ``list_parameters`` prints, recorded live).
_POLICY_VALUE_KEYS = ("pattern", "definition", "priority", "apply-to")


def _stored(parameter: Mapping[str, Any]) -> Any:
    """A runtime parameter's value as RabbitMQ keeps it (a policy's keys in its order)."""
    value = parameter["value"]
    if parameter["component"] in ("policy", "operator_policy") and isinstance(value, Mapping):
        return {key: value[key] for key in _POLICY_VALUE_KEYS if key in value}
    return value


@operation("list_global_parameters")
def _list_global_parameters(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        return [{"name": name, "value": value}
                for name, value in broker.global_parameters().items()]


# -- users --------------------------------------------------------------------------------------

def _no_such_user(broker: Broker, name: str) -> None:
    """The user listings' and limits' error for a missing user (``{:no_such_user, "x"}``,
    exit 69: RabbitMQ's CLI prints the node's error term as it is)."""
    if name not in broker.access.users:
        raise ControlError(f'{{:no_such_user, "{name}"}}', EX_UNAVAILABLE)


def _user(broker: Broker, name: str, *, quoted: bool = True) -> None:
    """RabbitMQ's error for a missing user: quoted by the user commands, not by the
    permission commands (exit 67 both)."""
    if name not in broker.access.users:
        raise ControlError(f'User "{name}" does not exist' if quoted else
                           f"User {name} does not exist", EX_NOUSER)


@operation("add_user")
def _add_user(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    name, password = _text(arguments, "user"), _text(arguments, "password")
    with broker.locked():
        if name in broker.access.users:
            raise ControlError(f'User "{name}" already exists', EX_SOFTWARE)
        broker.add_user(name, password)
    return None


@operation("delete_user")
def _delete_user(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    name = _text(arguments, "user")
    with broker.locked():
        _user(broker, name)
        broker.delete_user(name)
    return None


@operation("change_password")
def _change_password(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    name = _text(arguments, "user")
    with broker.locked():
        _user(broker, name)
        broker.change_password(name, _text(arguments, "password"))
    return None


@operation("clear_password")
def _clear_password(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    name = _text(arguments, "user")
    with broker.locked():
        _user(broker, name)
        broker.clear_password(name)
    return None


@operation("set_user_tags")
def _set_user_tags(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    name = _text(arguments, "user")
    tags = arguments.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ControlError("tags: expected a list of names", EX_USAGE)
    with broker.locked():
        _user(broker, name)
        broker.set_user_tags(name, *tags)
    return None


@operation("authenticate_user")
def _authenticate_user(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    name, password = _text(arguments, "user"), _text(arguments, "password")
    with broker.locked():
        refusal = check_password(broker, name, password)
    if refusal is not None:
        raise ControlError(f"Error: failed to authenticate user \"{name}\"\n"
                           f"user '{name}' - invalid credentials", EX_DATAERR)
    return None


# -- vhosts -------------------------------------------------------------------------------------

@operation("add_vhost")
def _add_vhost(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    name = _text(arguments, "vhost")
    with broker.locked():
        if name in broker.vhosts:  # (RabbitMQ 3.10.8 says nothing: exit 0)
            return None
        broker.add_vhost(name, created_by="rmq-cli")  # (a user of no one: no permissions)
    return None


@operation("delete_vhost")
def _delete_vhost(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    name = _text(arguments, "vhost")
    with broker.locked():
        if name not in broker.vhosts:
            raise ControlError(f"Virtual host '{name}' does not exist", EX_DATAERR, plain=True)
        broker.delete_vhost(name)
    return None


# -- permissions --------------------------------------------------------------------------------

@operation("set_permissions")
def _set_permissions(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    name = _text(arguments, "user")
    with broker.locked():
        vhost = _vhost(broker, arguments, code=EX_UNAVAILABLE, plain=False).name
        _user(broker, name, quoted=False)
        broker.set_permissions(name, _text(arguments, "configure"), _text(arguments, "write"),
                               _text(arguments, "read"), vhost=vhost)
    return None


@operation("clear_permissions")
def _clear_permissions(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    name = _text(arguments, "user")
    with broker.locked():
        vhost = _vhost(broker, arguments, code=EX_UNAVAILABLE, plain=False).name
        _user(broker, name, quoted=False)
        broker.clear_permissions(name, vhost=vhost)
    return None


@operation("set_topic_permissions")
def _set_topic_permissions(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    name = _text(arguments, "user")
    with broker.locked():
        vhost = _vhost(broker, arguments, code=EX_UNAVAILABLE, plain=False).name
        _user(broker, name, quoted=False)
        broker.set_topic_permissions(name, _text(arguments, "exchange"),
                                     _text(arguments, "write"), _text(arguments, "read"),
                                     vhost=vhost)
    return None


@operation("clear_topic_permissions")
def _clear_topic_permissions(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    name = _text(arguments, "user")
    exchange = arguments.get("exchange")
    with broker.locked():
        vhost = _vhost(broker, arguments, code=EX_UNAVAILABLE, plain=False).name
        _user(broker, name, quoted=False)
        broker.clear_topic_permissions(name, exchange if isinstance(exchange, str) else None,
                                       vhost=vhost)
    return None


# -- policies, limits, parameters ------------------------------------------------------------

@operation("set_policy")
def _set_policy(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    setter = broker.set_operator_policy if arguments.get("operator") else broker.set_policy
    _json_argument(arguments, "definition")  # (RabbitMQ decodes it first)
    with broker.locked():
        vhost = _vhost(broker, arguments).name
        setter(_text(arguments, "name"), _text(arguments, "pattern"),
               _text(arguments, "definition"), priority=_number(arguments, "priority", 0),
               apply_to=_text(arguments, "apply_to", "all"), vhost=vhost)
    return None


def _number(arguments: Mapping[str, Any], name: str, default: int) -> int | float:
    value = arguments.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ControlError(f"{name}: expected a number", EX_USAGE)
    return value


@operation("clear_policy")
def _clear_policy(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    clear = broker.clear_operator_policy if arguments.get("operator") else broker.clear_policy
    with broker.locked():
        vhost = _vhost(broker, arguments).name
        clear(_text(arguments, "name"), vhost=vhost)
    return None


@operation("set_vhost_limits")
def _set_vhost_limits(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    _json_argument(arguments, "definition")
    with broker.locked():
        vhost = _vhost(broker, arguments).name
        broker.set_vhost_limits(_text(arguments, "definition"), vhost=vhost)
    return None


@operation("clear_vhost_limits")
def _clear_vhost_limits(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        if _text(arguments, "vhost", "/") not in broker.vhosts:
            raise ControlError("Parameter does not exist", EX_UNAVAILABLE)
        broker.clear_vhost_limits(vhost=_vhost(broker, arguments).name)
    return None


#: RabbitMQ's text for an argument that is no JSON (rabbit_json, v3.10.8).
_BADARG = "JSON decoding error. Reason: badarg"


def _json_argument(arguments: Mapping[str, Any], name: str) -> Any:
    try:
        return json_loads(_text(arguments, name))
    except ValueError:
        raise ControlError(_BADARG, EX_UNAVAILABLE) from None


@operation("set_user_limits")
def _set_user_limits(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    name = _text(arguments, "user")
    limits = _json_argument(arguments, "definition")
    if not isinstance(limits, dict):
        raise ControlError(_BADARG, EX_UNAVAILABLE)
    with broker.locked():
        _no_such_user(broker, name)
        broker.set_user_limits(name, limits)
    return None


@operation("clear_user_limits")
def _clear_user_limits(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    name = _text(arguments, "user")
    with broker.locked():
        _user(broker, name)
        broker.clear_user_limits(name, _text(arguments, "limit", "all"))
    return None


@operation("set_parameter")
def _set_parameter(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    value = _json_argument(arguments, "value")
    with broker.locked():
        broker.set_parameter(_text(arguments, "component"), _text(arguments, "name"), value,
                             vhost=_vhost(broker, arguments).name)
    return None


@operation("clear_parameter")
def _clear_parameter(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        broker.clear_parameter(_text(arguments, "component"), _text(arguments, "name"),
                               vhost=_vhost(broker, arguments).name)
    return None


# -- queues -------------------------------------------------------------------------------------

def _queue(broker: Broker, arguments: Mapping[str, Any]) -> Queue:
    """The queue named, or RabbitMQ's ``not_found`` (exit 69), missing vhost or queue."""
    vhost = broker.vhosts.get(_text(arguments, "vhost", "/"))
    if vhost is None:
        raise ControlError("not_found", EX_UNAVAILABLE)
    name = _text(arguments, "queue")
    queue = vhost.queues.get(name)
    if queue is None:
        raise ControlError("not_found", EX_UNAVAILABLE)
    return queue


#: What ``rabbitmqctl delete_queue`` prints for the model's if-unused and if-empty refusals
#: (its ``Queue is in use``, ``Queue is not empty``; exit 64).
_DELETE_REFUSALS: Mapping[Refusal | None, str] = {
    Refusal.IN_USE: "Queue is in use", Refusal.NOT_EMPTY: "Queue is not empty"}


def _cli_channel(node: Node, vhost: str) -> tuple[Connection, Any]:
    """A channel of a connection of no user on ``node``, as the CLI's direct connection: the
    model's own operations, without a user's permissions (rabbitmqctl is the node's
    administrator)."""
    connection = node.broker.open_connection(vhost, client_properties={"product": "rabbitmqctl"},
                                             name="rabbitmqctl", node=node.server.node)
    return connection, connection.open_internal_channel()


@operation("purge_queue")
def _purge_queue(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        queue = _queue(broker, arguments)
        connection, channel = _cli_channel(node, queue.vhost.name)
        try:
            return channel.queue_purge(queue.name)
        finally:
            connection.close()


@operation("delete_queue")
def _delete_queue(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():
        try:
            queue = _queue(broker, arguments)
        except ControlError:
            raise ControlError("Queue not found", EX_USAGE) from None
        connection, channel = _cli_channel(node, queue.vhost.name)
        try:
            return channel.queue_delete(queue.name, if_unused=bool(arguments.get("if_unused")),
                                        if_empty=bool(arguments.get("if_empty")))
        except AMQPError as exc:  # (if-unused, if-empty: RabbitMQ's CLI texts, exit 64)
            text = _DELETE_REFUSALS.get(exc.reason, exc.reply_text)
            raise ControlError(text, EX_USAGE) from None
        finally:
            if connection.is_open:
                connection.close()


# -- connections, tracing, definitions ----------------------------------------------------------

@operation("close_connection")
def _close_connection(node: Node, arguments: dict[str, Any]) -> Any:
    pid = _text(arguments, "pid")
    reason = _text(arguments, "reason", "")
    if not (pid.startswith("<") and pid.endswith(">") and pid.count(".") >= 2):
        raise ControlError(f'Error:\n{{:invalid_pid_syntax, "{pid}"}}', EX_UNAVAILABLE)
    with node.broker.locked():
        for connection in node.broker.connections.values():
            if connection.is_open and _pid(node, 1, connection.id)["$pid"] == pid:
                node.close_connection(connection, reason)
                return None
    return None  # (RabbitMQ's says nothing of a pid that has gone)


@operation("close_all_connections")
def _close_all_connections(node: Node, arguments: dict[str, Any]) -> Any:
    reason = _text(arguments, "reason", "")
    vhost = arguments.get("vhost")
    limit = arguments.get("limit")
    closed: list[str] = []
    with node.broker.locked():
        for connection in list(node.broker.connections.values()):
            if not connection.is_open or (vhost is not None and connection.vhost.name != vhost):
                continue
            if isinstance(limit, int) and len(closed) >= limit:
                break
            node.close_connection(connection, reason)
            closed.append(_pid(node, 1, connection.id)["$pid"])
    return closed


@operation("trace")
def _trace(node: Node, arguments: dict[str, Any]) -> Any:
    broker = node.broker
    with broker.locked():  # (RabbitMQ 3.10.8 answers success for a missing vhost too)
        vhost = broker.vhosts.get(_text(arguments, "vhost", "/"))
        if vhost is not None:
            vhost.tracing = bool(arguments.get("on"))
    return None


@operation("export_definitions")
def _export_definitions(node: Node, arguments: dict[str, Any]) -> Any:
    return node.broker.definitions()


@operation("import_definitions")
def _import_definitions(node: Node, arguments: dict[str, Any]) -> Any:
    """The whole broker's import (``rabbit_definitions:import_parsed/1``: each item names its
    vhost) of the file at ``path`` or of ``text``, read and checked by the model; its refusal
    as RabbitMQ's tool prints it: a document that is no JSON is 65 ``Failed to deserialise
    input``, one that is no object 70, an item in a vhost that does not exist 65 ``Virtual
    host '...' does not exist``, any other refusal 69 with its text (RabbitMQ's tool prints an
    Erlang term or its crash for most of them)."""
    path, text = arguments.get("path"), arguments.get("text")
    try:
        if isinstance(path, str):
            document = read_file(path)
        elif isinstance(text, str):
            document = parse(text.encode("utf-8", "surrogateescape"))
        else:
            raise ControlError("import_definitions: a path or a text", EX_USAGE)
    except DefinitionsError as exc:
        if exc.reason == NOT_JSON:
            raise ControlError(f"Failed to deserialise input (format: JSON) (error: "
                               f"{exc.text})", EX_DATAERR) from None
        raise ControlError(exc.text, EX_DATAERR) from None
    try:
        node.broker.load_definitions(document, vhost=None)
    except DefinitionsError as exc:
        reason = exc.reason
        if isinstance(reason, list) and reason[:1] == ["no_such_vhost"]:
            raise ControlError(f"Virtual host '{reason[1]}' does not exist", EX_DATAERR,
                               plain=True) from None
        raise ControlError(exc.text, EX_SOFTWARE if reason == NOT_JSON else EX_UNAVAILABLE
                           ) from None
    return None


# -- plugins ------------------------------------------------------------------------------------

@operation("plugins")
def _plugins(node: Node, arguments: dict[str, Any]) -> Any:
    return node.plugin_states()


@operation("apply_plugins")
def _apply_plugins(node: Node, arguments: dict[str, Any]) -> Any:
    enabled = arguments.get("enabled")
    if not isinstance(enabled, list) or not all(isinstance(n, str) for n in enabled):
        raise ControlError("enabled: expected a list of plugin names", EX_USAGE)
    return node.apply_plugins(enabled)




# -- the cluster's membership: join_cluster, forget_cluster_node --------------------------------

@operation("join_cluster")
def _join_cluster(node: Node, arguments: dict[str, Any]) -> Any:
    """``rabbit_mnesia:join_cluster/2`` asked of this node (stopped): a node of its own
    cluster is already a member; any other is not one embroker can reach."""
    return node.join_cluster(_text(arguments, "member"))


@operation("forget_cluster_node")
def _forget_cluster_node(node: Node, arguments: dict[str, Any]) -> Any:
    node.forget_cluster_node(_text(arguments, "node"))
    return None
