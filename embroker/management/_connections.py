"""Connections: listing, one by name, a user's, closing, and a connection's channels
(``rabbit_mgmt_wm_connections``, ``_connection``, ``_connections_vhost``,
``_connection_user_name``, ``_connection_channels``): a user sees and closes its own;
monitoring users see everyone's, administrators close everyone's (RabbitMQ's
``is_authorized_user``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ConnectionForced
from ..model._access import NO_ITEM, Rule
from ..model._kinds import DIRECT
from . import _samples, views
from ._api import split_peer
from ._channels import channel_info
from ._http import Response
from ._routes import Call, not_found, route
from ._steps import Steps

if TYPE_CHECKING:
    from ..model import Connection
    from ..server import WireConnection
    from ._api import ManagementAPI


def connection_info(api: ManagementAPI, connection: Connection,
                     wire: Mapping[int, WireConnection], who: str,
                     data_rates: _samples.History | None = None) -> dict[str, Any]:
    """``connection`` as ``/api/connections`` shows it (``rabbit_mgmt_format``; a stream
    connection with ``rabbit_stream_reader``'s keys), ``wire`` the server's sockets by model
    connection, ``who`` the user named as the one who asked (``rmq-cli`` for the tools),
    ``data_rates`` its history for the range asked (octets and reductions)."""
    carried = wire.get(id(connection))
    name, (peer_host, peer_port) = api.identity(connection, wire)
    here = split_peer(carried.local) if carried is not None else ("", 0)
    connected_at = carried.connected_at if carried is not None else api._started
    properties = views.json_value(connection.client_properties)
    provided = connection.client_properties.get("connection_name")
    if views.is_stream(connection):  # rabbit_stream_reader's ?CREATION_EVENT_KEYS (v3.10.8)
        details = connection.details
        return {
            "auth_mechanism": "PLAIN", "channel_max": 0, "client_properties": properties,
            "connected_at": int(connected_at * 1000),
            "frame_max": details.get("frame_max", 0), "host": here[0], "name": name,
            "node": connection.node.name, "peer_cert_issuer": None, "peer_cert_subject": None,
            "peer_cert_validity": None, "peer_host": peer_host, "peer_port": peer_port,
            "port": here[1], "protocol": "stream", "ssl": False, "ssl_cipher": None,
            "ssl_hash": None, "ssl_key_exchange": None, "ssl_protocol": None,
            "timeout": details.get("heartbeat", 0), "user": connection.user,
            "user_who_performed_action": who, "vhost": connection.vhost.name}
    if connection.kind.direct:  # a plugin's direct connection (rabbit_direct's keys, v3.10.8)
        details = connection.details
        return {
            "channel_max": details.get("channel_max", 0), "channels": len(connection.channels),
            "client_properties": properties, "connected_at": int(connected_at * 1000),
            "frame_max": details.get("frame_max", 0), "host": here[0], "name": name,
            "node": connection.node.name, "peer_host": peer_host, "peer_port": peer_port,
            "port": here[1], "protocol": connection.kind.protocol,
            "ssl": bool(details.get("ssl", False)), "type": "direct", "user": connection.user,
            "user_who_performed_action": who, "vhost": connection.vhost.name,
            # (what the plugin adds to its adapter info: MQTT's client id)
            **({"variable_map": views.json_value(details["variable_map"])}
               if "variable_map" in details else {})}
    info: dict[str, Any] = {
        "auth_mechanism": "PLAIN",
        "channel_max": carried.channel_max if carried is not None else 0,
        "channels": len(connection.channels), "client_properties": properties,
        "connected_at": int(connected_at * 1000),
        "frame_max": carried.frame_max if carried is not None else 0,
        "garbage_collection": dict(views._GC),
        "host": here[0], "name": name, "node": connection.node.name,
        "peer_cert_issuer": None, "peer_cert_subject": None, "peer_cert_validity": None,
        "peer_host": peer_host, "peer_port": peer_port, "port": here[1],
        # (its kind's; embroker lists its in-process connections as 0-9-1 ones)
        "protocol": "AMQP 0-9-1" if connection.kind is DIRECT else connection.kind.protocol,
        "recv_cnt": 0, "recv_oct": 0, "recv_oct_details": views.rate(data_rates, "recv_oct"),
        "reductions": 0, "reductions_details": views.rate(data_rates, "reductions"),
        "send_cnt": 0, "send_oct": 0,
        "send_oct_details": views.rate(data_rates, "send_oct"), "send_pend": 0, "ssl": False,
        "ssl_cipher": None,
        "ssl_hash": None, "ssl_key_exchange": None, "ssl_protocol": None,
        "state": "blocked" if carried is not None and carried.blocked else "running",
        "timeout": carried.heartbeat if carried is not None else 0,
        "type": "network" if carried is not None else "direct", "user": connection.user,
        "user_who_performed_action": who, "vhost": connection.vhost.name,
    }
    if isinstance(provided, str):
        info["user_provided_name"] = provided
    return info


def _named(api: ManagementAPI, call: Call) -> tuple[Connection, Mapping[int, Any]] | None:
    """The open connection the path names, among every user's, with the listener's clients."""
    wire = api.wire()
    for connection in api.broker.connections.values():
        if connection.is_open and api.identity(connection, wire)[0] == call.params["name"]:
            return connection, wire
    return None


def _connection_owner(api: ManagementAPI, call: Call) -> object:
    found = _named(api, call)
    return found[0].user if found is not None else NO_ITEM


def _named_or_404(api: ManagementAPI, call: Call) -> tuple[Connection, Mapping[int, Any]]:
    found = _named(api, call)
    if found is None:
        raise not_found()
    return found


@route("GET", "connections", Rule.ANY)
@route("GET", "vhosts/{vhost}/connections", Rule.VHOST)
def _connections(api: ManagementAPI, call: Call) -> Steps[Response]:
    with api.broker.locked():
        wire = api.wire()
        connections = api.listed_connections(call)
        # (rabbit_mgmt_wm_connections: range_ceil)
        ranges = _samples.asked(call, api.broker, ceil_lengths=True)
    ranged = ranges != _samples.NO_RANGES
    history = api.sampler.history
    return (yield from api.listing(call, connections, lambda c: connection_info(
        api, c, wire, call.user, history([c], ranges.data_rates) if ranged else None),
        locked=True))


@route("GET", "connections/{name}", Rule.OWNER, owner=_connection_owner)
def _connection_get(api: ManagementAPI, call: Call) -> Any:
    broker = api.broker
    with broker.locked():
        connection, wire = _named_or_404(api, call)
        # (rabbit_mgmt_wm_connection: range_ceil)
        ranges = _samples.asked(call, broker, ceil_lengths=True)
        return connection_info(api, connection, wire, call.user,
                               api.sampler.history([connection], ranges.data_rates))


@route("DELETE", "connections/{name}", Rule.OWNER, owner=_connection_owner)
def _connection_delete(api: ManagementAPI, call: Call) -> Any:
    reason = call.request.headers.get("x-reason", "Closed via management plugin")
    with api.broker.locked():
        connection, _wire = _named_or_404(api, call)
        _close(api, connection, reason)
    return Response(204)


def _close(api: ManagementAPI, connection: Connection, reason: str) -> None:
    error = ConnectionForced(reason)
    if api.server is None or not api.server.close_connection(connection, error):
        connection.close_by_broker(error)  # (an in-process or in-memory connection)


def _user_connections(api: ManagementAPI, call: Call) -> list[Connection]:
    return [c for c in api.broker.connections.values()
            if c.is_open and c.user == call.params["username"]]


def _no_owner(api: ManagementAPI, call: Call) -> object:
    """(RabbitMQ 3.10.8 asks ``is_authorized_user`` about the list of the user's connections,
    which has no ``user``: only monitoring users read it and administrators delete it, the
    user itself included.)"""
    return NO_ITEM


@route("GET", "connections/username/{username}", Rule.OWNER, owner=_no_owner)
def _connections_of_user(api: ManagementAPI, call: Call) -> Any:
    wire = api.wire()
    with api.broker.locked():
        return [{"name": api.identity(c, wire)[0], "vhost": c.vhost.name, "user": c.user,
                 "node": c.node.name} for c in _user_connections(api, call)]


@route("DELETE", "connections/username/{username}", Rule.OWNER, owner=_no_owner)
def _close_connections_of_user(api: ManagementAPI, call: Call) -> Any:
    reason = call.request.headers.get("x-reason", "Closed via management plugin")
    with api.broker.locked():
        for connection in _user_connections(api, call):
            _close(api, connection, reason)
    return Response(204)


@route("GET", "connections/{name}/channels", Rule.OWNER, owner=_connection_owner)
def _connection_channels(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        connection, wire = _named_or_404(api, call)
        name, peer = api.identity(connection, wire)
        ranges = _samples.asked(call, api.broker)
        asked = ranges if ranges != _samples.NO_RANGES else None
        items = [channel_info(api, ch, name, peer, connection.user, call.user, asked)
                 for ch in views.amqp_channels(connection).values()]
    return api.listing(call, items)
