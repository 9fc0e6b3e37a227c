"""RabbitMQ 3.10's management HTTP API over the broker model.

Theory of operation
-------------------
:class:`ManagementAPI` is the application behind each :class:`~._http.HttpConnection` of a
listener's management port: a request in, a response out, on the listener's loop thread. A
request goes through RabbitMQ's steps (``cowboy_rest`` in ``rabbit_mgmt_wm_*``), in its order:
the route (404 ``Object Not Found``), the method (405 with ``allow``), the credentials (401),
the user's tags and vhost access (401 ``not_authorised``), the body (400 ``bad_request``),
then the operation.

Everything it changes goes through the model's own operations, the ones AMQP 0-9-1 uses, as
the HTTP user: a declare, delete, bind, publish or get opens a model connection to the vhost
as that user (``broker.open_connection(vhost, user=...)``, as RabbitMQ's management plugin opens
a direct connection) and calls its channel, so the equivalence rules, the permission checks
and the errors are the same as on the wire; the connection is closed before the lock is let
go, so no one sees it. Users, permissions, policies, limits and definitions go through the
broker's ``rabbitmqctl`` commands. The access questions (which tags may do what, which vhosts a
user sees) are the model's (:class:`~embroker.model._access.AccessControl`).

What it reads is read under the broker's lock (``broker.locked()``) into plain values; the JSON
is written after the lock is let go, so the AMQP clients of the same listener wait only for
the reading.
"""

from __future__ import annotations

import base64
import binascii
import heapq
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast, final
from urllib.parse import quote

from .._version import __version__
from ..errors import (
    AccessControlError,
    AccessRefused,
    AMQPError,
    ConnectionForced,
    DefinitionsError,
    NotAllowed,
    NotFound,
    PolicyError,
)
from ..model import Returned, _definitions
from ..model._access import ManagementRefused, Permissions
from ..model._history import events_of
from . import _views as views
from ._http import Request, Response
from ._tracing import Tracing, TracingError

if TYPE_CHECKING:
    from ..model import Broker, Channel, Connection, Queue, VirtualHost
    from ..server import Server

__all__ = ["ManagementAPI"]

_STATIC = Path(__file__).with_name("console")
_CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                  ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml",
                  ".png": "image/png"}
_CHALLENGE = ("www-authenticate", 'Basic realm="RabbitMQ Management"')
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


class HttpError(Exception):
    """An answer other than success: status, RabbitMQ's ``error`` and ``reason``."""

    def __init__(self, status: int, error: str, reason: str, *,
                 headers: list[tuple[str, str]] | None = None, empty: bool = False) -> None:
        super().__init__(reason)
        self.status = status
        self.error = error
        self.reason = reason
        self.headers = headers or []
        self.empty = empty


def _not_found() -> HttpError:
    return HttpError(404, "Object Not Found", "Not Found")


def _bad_request(reason: str) -> HttpError:
    return HttpError(400, "bad_request", reason)


def _require(body: Mapping[str, Any], keys: tuple[str, ...], separator: str = ",") -> None:
    """400 for the keys ``body`` lacks, listed as RabbitMQ prints them
    (``[{key_missing,read}]``; ``separator`` ",\n " where its ``~p`` wraps a long list)."""
    missing = [k for k in keys if k not in body]
    if missing:
        raise _bad_request("[" + separator.join(f"{{key_missing,{k}}}" for k in missing) + "]")


@final
@dataclass
class _Call:
    """One authorised request: who asks, with which tags, and the route's parameters."""

    request: Request
    user: str
    tags: frozenset[str]
    params: dict[str, str]

    def body(self) -> dict[str, Any]:
        raw = self.request.body
        if not raw.strip():
            return {}
        try:
            found = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise _bad_request("not_json") from None
        if isinstance(found, str):
            raise _bad_request("invalid payload: the request body JSON-decoded to a string. "
                               "Is the input doubly-JSON-encoded?")
        if not isinstance(found, dict):
            raise _bad_request("not_json")
        return found


_Handler = Callable[["ManagementAPI", _Call], Any]


@final
class _Route:
    __slots__ = ("handlers", "parts")

    def __init__(self, pattern: str) -> None:
        self.parts = tuple(pattern.strip("/").split("/"))
        self.handlers: dict[str, _Handler] = {}

    def match(self, segments: list[str]) -> dict[str, str] | None:
        if len(segments) != len(self.parts):
            return None
        params: dict[str, str] = {}
        for part, segment in zip(self.parts, segments, strict=True):
            if part.startswith("{"):
                params[part[1:-1]] = segment
            elif part != segment:
                return None
        return params

    @property
    def allow(self) -> str:
        methods = ["HEAD", "GET"] if "GET" in self.handlers else []
        methods += [m for m in ("PUT", "POST", "DELETE") if m in self.handlers]
        return ", ".join([*methods, "OPTIONS"])


_ROUTES: list[_Route] = []


def _route(method: str, pattern: str) -> Callable[[_Handler], _Handler]:
    def register(handler: _Handler) -> _Handler:
        for existing in _ROUTES:
            if existing.parts == tuple(pattern.strip("/").split("/")):
                existing.handlers[method] = handler
                return handler
        route = _Route(pattern)
        route.handlers[method] = handler
        _ROUTES.append(route)
        return handler
    return register


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1", "yes")


def _tags_of(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(t) for t in value if str(t)]
    return [t.strip() for t in str(value or "").split(",") if t.strip()]


@final
class ManagementAPI:
    """RabbitMQ's management HTTP API and the console, for one listener's broker.

    Args:
        broker: the broker to show and change.
        server: the listener that serves it (its connections and ports).
        rabbitmqadmin: a copy of RabbitMQ's ``rabbitmqadmin`` script to serve at
            ``/cli/rabbitmqadmin`` (embroker ships none; without one that path says where to
            get it).
    """

    def __init__(self, broker: Broker, server: Server | None = None, *,
                 rabbitmqadmin: str | Path | None = None,
                 trace_dir: str | Path | None = None) -> None:
        self.broker = broker
        self.server = server
        self.rabbitmqadmin = Path(rabbitmqadmin) if rabbitmqadmin is not None else None
        self.server_header = f"embroker/{__version__}"
        self._started = time.time()
        #: The tracing plugin's traces (``/api/traces``) and their logs (``/api/trace-files``),
        #: in ``trace_dir`` (by default a temporary directory, removed with the listener).
        self.tracing = Tracing(broker, trace_dir)

    def close(self) -> None:
        """Stop the traces (the listener stops)."""
        with self.broker.locked():
            self.tracing.close()

    # -- the entry point ---------------------------------------------------------------------

    def __call__(self, request: Request) -> Response:
        segments = request.segments
        if not segments or segments[0] != "api":
            return self._static(request, segments)
        try:
            return self._api(request, segments[1:])
        except HttpError as error:
            if segments[1:2] == ["embroker"]:
                # embroker's own paths (the console's) ask for no credentials: a browser would
                # answer a challenge with its own login dialog, over the page's.
                error.headers = [h for h in error.headers if h != _CHALLENGE]
            return self._error(error)

    def screen(self, request: Request) -> Response | None:
        """The answer to a request that its headers alone decide (no such route, a method the
        route does not have, credentials that fail), given before its body is read; ``None``:
        read the body and answer through :meth:`__call__`. (``request.body`` is empty.)"""
        return None

    def _error(self, error: HttpError) -> Response:
        if error.empty:
            return Response(error.status, b"", error.headers)
        body = json.dumps({"error": error.error, "reason": error.reason},
                          separators=(",", ":")).encode()
        return Response(error.status, body, [("content-type", "application/json"),
                                             *error.headers])

    def _api(self, request: Request, segments: list[str]) -> Response:
        for route in _ROUTES:
            params = route.match(segments)
            if params is None:
                continue
            method = "GET" if request.method == "HEAD" else request.method
            if method == "OPTIONS":
                return Response(200, b"", [("allow", route.allow)])
            handler = route.handlers.get(method)
            if handler is None:
                return Response(405, b"", [("allow", route.allow)])
            user, tags = self._authenticate(request)
            if params.get("name") == "amq.default" and segments[0] == "exchanges":
                params["name"] = ""  # RabbitMQ's name for the default exchange in paths
            if params.get("source") == "amq.default":
                params["source"] = ""
            result = handler(self, _Call(request, user, tags, params))
            if isinstance(result, Response):
                return result
            return self._json(result, request)
        raise _not_found()

    def _json(self, value: Any, request: Request) -> Response:
        body = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        return Response(200, body, [("content-type", "application/json"),
                                    ("cache-control", "no-cache")])

    def _authenticate(self, request: Request) -> tuple[str, frozenset[str]]:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "basic":
            raise HttpError(401, "", "", headers=[_CHALLENGE], empty=True)
        try:
            name, sep, password = base64.b64decode(token.strip(), validate=True).decode(
                "utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            name, sep, password = "", "", ""
        with self.broker.locked():
            try:
                if not sep:
                    raise ManagementRefused("Login failed", challenge=True)
                tags = self.broker.access.management_login(name, password,
                                                           loopback=request.loopback)
            except ManagementRefused as refused:
                if refused.challenge:
                    raise HttpError(401, "not_authorized", refused.reason,
                                    headers=[_CHALLENGE]) from None
                raise HttpError(401, "not_authorised", refused.reason) from None
        return name, tags

    # -- access -------------------------------------------------------------------------------

    def _need(self, call: _Call, tag: str, vhost: str | None = None) -> None:
        """RabbitMQ's ``is_authorized_*``: the tag, and access to ``vhost`` when given."""
        if vhost is not None and vhost not in self.broker.vhosts:
            raise _not_found()
        try:
            self.broker.access.check_management(call.user, tag, vhost)
        except ManagementRefused as refused:
            raise HttpError(401, "not_authorised", refused.reason) from None

    def _visible(self, call: _Call) -> list[str]:
        return self.broker.access.visible_vhosts(call.user, self.broker.vhosts)

    def _vhosts_for(self, call: _Call) -> list[VirtualHost]:
        """The vhosts a listing covers: the route's (checked), or all the user sees."""
        name = call.params.get("vhost")
        if name is not None:
            self._need(call, "management", name)
            return [self.broker.vhosts[name]]
        return [self.broker.vhosts[v] for v in self._visible(call)]

    @contextmanager
    def _channel(self, call: _Call, vhost: str) -> Iterator[Channel]:
        """A channel of a model connection to ``vhost`` as the HTTP user (under the broker's
        lock, closed before it is let go): what RabbitMQ's direct connection is."""
        with self.broker.locked():
            if vhost not in self.broker.vhosts:
                raise HttpError(404, "not_found", "vhost_not_found")
            try:
                connection = self.broker.open_connection(
                    vhost, user=call.user, client_properties={"product": "management API"},
                    name=f"management API ({call.user})")
            except NotAllowed as refused:
                raise HttpError(401, "not_authorised", refused.reply_text) from None
            try:
                yield connection.open_channel(1)
            except AccessRefused:
                raise HttpError(401, "not_authorised", "Access refused.") from None
            except NotFound as error:
                raise HttpError(404, "not_found", error.text) from None
            except AMQPError as error:
                raise _bad_request(error.text) from None
            finally:
                connection.close()

    # -- listings: pagination, columns, sort --------------------------------------------------

    def _listing(self, call: _Call, items: list[dict[str, Any]]) -> Any:
        """RabbitMQ's list options: ``sort``/``sort_reverse``, ``columns``, ``name`` with
        ``use_regex``, and ``page``/``page_size`` (then the answer is a page object)."""
        query = call.request.query
        name = query.get("name")
        if name:
            if _truthy(query.get("use_regex")):
                import re

                try:
                    pattern = re.compile(name)
                except re.error:
                    raise _bad_request("invalid regular expression") from None
                items = [i for i in items if pattern.search(str(i.get("name", "")))]
            else:
                items = [i for i in items if name.lower() in str(i.get("name", "")).lower()]
        sort = query.get("sort")
        if not sort and items and "name" in items[0]:
            # RabbitMQ's default order: by vhost, then name.
            items = sorted(items, key=lambda i: (str(i.get("vhost", "")), str(i.get("name", ""))))
        if sort:
            path = sort.split(".")

            def key(item: dict[str, Any]) -> tuple[int, Any]:
                value: Any = item
                for part in path:
                    value = value.get(part) if isinstance(value, dict) else None
                if value is None:
                    return (0, "")
                return (1, value) if isinstance(value, (int, float)) and not isinstance(
                    value, bool) else (2, str(value))
            items = sorted(items, key=key, reverse=_truthy(query.get("sort_reverse")))
        columns = query.get("columns")
        if columns:
            items = [_columns(item, columns.split(",")) for item in items]
        if "page" not in query:
            return items
        try:
            page = int(query["page"])
            size = int(query.get("page_size", "100"))
        except ValueError:
            raise _bad_request("page and page_size must be integers") from None
        if page < 1 or size < 1 or size > 500:
            raise _bad_request(f"Invalid page or page_size (page {page}, page_size {size}: "
                               "pages start at 1, sizes at most 500)")
        total = len(items)
        pages = max(1, -(-total // size))
        if page > pages:
            raise _bad_request(f"page out of range: {page} > {pages}")
        chosen = items[(page - 1) * size: page * size]
        return {"filtered_count": total, "item_count": len(chosen), "items": chosen,
                "page": page, "page_count": pages, "page_size": size, "total_count": total}

    # -- the console and other static answers ---------------------------------------------------

    def _static(self, request: Request, segments: list[str]) -> Response:
        if request.method not in ("GET", "HEAD"):
            return Response(405, b"", [("allow", "HEAD, GET, OPTIONS")])
        if segments == ["cli", "rabbitmqadmin"]:
            return self._rabbitmqadmin()
        name = "/".join(segments) or "index.html"
        if segments == ["cli"]:
            name = "cli.html"
        path = (_STATIC / name).resolve()
        if _STATIC.resolve() not in path.parents or not path.is_file():
            return self._error(_not_found())
        content_type = _CONTENT_TYPES.get(path.suffix, "application/octet-stream")
        return Response(200, path.read_bytes(), [("content-type", content_type),
                                                 ("cache-control", "no-cache")])

    def _rabbitmqadmin(self) -> Response:
        if self.rabbitmqadmin is not None and self.rabbitmqadmin.is_file():
            return Response(200, self.rabbitmqadmin.read_bytes(),
                            [("content-type", "text/x-python; charset=utf-8")])
        text = ("embroker does not ship rabbitmqadmin, RabbitMQ's command line tool (it is "
                "RabbitMQ's code, under its licence).\n\nGet it from a RabbitMQ node with the "
                "management plugin (http://NODE:15672/cli/rabbitmqadmin) or from "
                "RabbitMQ's repository (deps/rabbitmq_management/bin/rabbitmqadmin), and run it "
                "against embroker:\n\n    rabbitmqadmin --port PORT list queues\n\nTo serve "
                "your copy here, start embroker with --rabbitmqadmin PATH.\n")
        return Response(404, text.encode(), [("content-type", "text/plain; charset=utf-8")])

    # -- helpers over the model ------------------------------------------------------------------

    def _wire(self) -> dict[int, Any]:
        """The listener's AMQP and stream clients by ``id`` of their model connection (under
        the lock)."""
        found: dict[int, Any] = {}
        if self.server is not None:
            for client in list(self.server._clients.values()):
                model = client.conn.inner.model
                if model is not None:
                    found[id(model)] = client
            for other in list(self.server._http_clients.values()):  # (the stream port's)
                model = getattr(other.conn, "model", None)
                if model is not None:
                    found[id(model)] = other
        return found

    def _connection_identity(self, connection: Connection,
                             wire: Mapping[int, Any]) -> tuple[str, tuple[str, int]]:
        client = wire.get(id(connection))
        if client is None:
            return f"{connection.name} (in-process)", ("", 0)
        host, port = _split_peer(client.peer)
        here = _split_peer(_sockname(client.sock))
        return f"{client.peer} -> {here[0]}:{here[1]}", (host, port)

    def _queue(self, vhost: str, name: str) -> Any:
        found = self.broker.vhosts[vhost].queues.get(name)
        if found is None:
            raise _not_found()
        return found

    def _queue_info(self, queue: Any, unacked: Mapping[int, tuple[int, int]]) -> dict[str, Any]:
        return views.queue_info(queue, unacked.get(id(queue), (0, 0)))

    def _listing_json(self, call: _Call, rows: list[Any], sort_key: Callable[[Any], Any],
                      to_json: Callable[[Any], str], to_dict: Callable[[Any], dict[str, Any]],
                      ) -> Any:
        """A listing of ``rows`` (snapshots read under the lock), answered without the lock:
        with no list option (``sort``, ``columns``, ``name``, ``page``), its JSON text written
        row by row in RabbitMQ's default order; else through :meth:`_listing`."""
        query = call.request.query
        if any(option in query for option in ("sort", "columns", "name", "page")):
            return self._listing(call, [to_dict(row) for row in rows])
        rows.sort(key=sort_key)
        body = ("[" + ",".join([to_json(row) for row in rows]) + "]").encode()
        return Response(200, body, [("content-type", "application/json"),
                                    ("cache-control", "no-cache")])


def _columns(item: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for column in columns:
        path = column.strip().split(".")
        value: Any = item
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if value is None and not _has(item, path):
            continue
        target = out
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = value
    return out


def _has(item: dict[str, Any], path: list[str]) -> bool:
    value: Any = item
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return True


def _split_peer(peer: str) -> tuple[str, int]:
    host, _, port = peer.rpartition(":")
    return host.strip("[]"), int(port) if port.isdigit() else 0


def _sockname(sock: Any) -> str:
    try:
        name = sock.getsockname()
    except OSError:
        return ":0"
    return f"{name[0]}:{name[1]}"


# == the endpoints ==================================================================================
# (registered on import; each is RabbitMQ's rabbit_mgmt_wm_* of the same path)

# -- overview, nodes, whoami, extensions, health ------------------------------------------------------

@_route("GET", "overview")
def _overview(api: ManagementAPI, call: _Call) -> Any:
    broker = api.broker
    with broker.locked():
        vhosts = [broker.vhosts[v] for v in api._visible(call)]
        unacked = views.unacked_by_queue(broker.connections.values())
        queues = [q for vh in vhosts for q in vh.queues.values()]
        ready = sum(q.message_count for q in queues)
        pending = sum(unacked.get(id(q), (0, 0))[0] for q in queues)
        names = {vh.name for vh in vhosts}
        connections = [c for c in broker.connections.values() if c.vhost.name in names
                       and ("monitoring" in call.tags or c.user == call.user)]
        totals = {"channels": sum(len(_amqp_channels(c)) for c in connections),
                  "connections": len(connections),
                  "consumers": sum(q.consumer_count for q in queues),
                  "exchanges": sum(len(vh.exchanges) for vh in vhosts),
                  "queues": len(queues)}
        listeners = _listeners(api)
    return {
        "management_version": "3.10.8", "rates_mode": "basic",
        "sample_retention_policies": {"global": [600, 3600, 28800, 86400],
                                      "basic": [600, 3600], "detailed": [600]},
        "exchange_types": _exchange_types(api), "product_version": __version__,
        "product_name": "embroker", "rabbitmq_version": "3.10.8",
        "cluster_name": str(broker.server_properties.get("cluster_name", "embroker")),
        "erlang_version": "none (embroker is Python)", "erlang_full_version": "none",
        "release_series_support_status": "supported", "disable_stats": False,
        "enable_queue_totals": False, "message_stats": views.stats(views.OVERVIEW_STATS),
        "churn_rates": views.stats(_CHURN),
        "queue_totals": {"messages": ready + pending, "messages_details": views.rate(),
                         "messages_ready": ready, "messages_ready_details": views.rate(),
                         "messages_unacknowledged": pending,
                         "messages_unacknowledged_details": views.rate()},
        "object_totals": totals, "statistics_db_event_queue": 0, "node": views.NODE,
        "listeners": listeners,
        "contexts": _contexts(api, node=True),
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


def _contexts(api: ManagementAPI, *, node: bool) -> list[dict[str, Any]]:
    port = str(api.server.management_port if api.server is not None else 0)
    context: dict[str, Any] = {"cowboy_opts": "[]", "description": "RabbitMQ Management",
                               "path": "/", "port": port}
    if node:
        context.update({"node": views.NODE, "ssl_opts": []})
    return [context]


def _exchange_types(api: ManagementAPI) -> list[dict[str, Any]]:
    """The exchange types a declare may name: the built-in ones and the enabled plugins'."""
    return [{"name": name, "description": _EXCHANGE_DESCRIPTIONS.get(name, name),
             "enabled": True} for name in sorted(api.broker.plugins.exchange_types)]


def _listeners(api: ManagementAPI) -> list[dict[str, Any]]:
    server = api.server
    if server is None:
        return []
    options = {"backlog": 512, "nodelay": True, "linger": [True, 0], "exit_on_close": False}
    found = [{"node": views.NODE, "protocol": "amqp", "ip_address": server.host,
              "port": server.port, "socket_opts": dict(options)}]
    if server.amqp10_port is not None:
        found.append({"node": views.NODE, "protocol": "amqp10", "ip_address": server.host,
                      "port": server.amqp10_port, "socket_opts": dict(options)})
    if server.management_port is not None:
        found.append({"node": views.NODE, "protocol": "http", "ip_address": server.host,
                      "port": server.management_port, "socket_opts": dict(options)})
    return found



@_route("GET", "cluster-name")
def _cluster_name(api: ManagementAPI, call: _Call) -> Any:
    return {"name": str(api.broker.server_properties.get("cluster_name", "embroker"))}


@_route("GET", "nodes")
def _nodes(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "monitoring")
    return [_node(api)]


@_route("GET", "nodes/{node}")
def _node_one(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "monitoring")
    if call.params["node"] != views.NODE:
        raise _not_found()
    return _node(api)


def _node(api: ManagementAPI) -> dict[str, Any]:
    broker = api.broker
    with broker.locked():
        held = broker.held_bytes()
        alarm = broker.publishers_blocked
    limit = broker.memory_high_watermark
    figures = views.stats(_NODE_FIGURES)
    for name in ("proc_used", "fd_used", "sockets_used"):
        figures[name] = 0
    return {**figures,
        "partitions": [], "os_pid": "0", "fd_total": 1024, "sockets_total": 0,
        "mem_limit": limit if limit is not None else 0, "mem_alarm": alarm,
        "mem_used": held, "mem_used_details": views.rate(),
        "disk_free_limit": 0, "disk_free_alarm": False, "disk_free": 0,
        "disk_free_details": views.rate(), "proc_total": 0, "proc_used": 0,
        "rates_mode": "basic", "uptime": int((time.time() - api._started) * 1000),
        "run_queue": 0, "processors": 1, "exchange_types": _exchange_types(api),
        "auth_mechanisms": [{"name": "PLAIN", "description": "SASL PLAIN authentication "
                             "mechanism", "enabled": True},
                            {"name": "AMQPLAIN", "description": "QPid AMQPLAIN mechanism",
                             "enabled": True}],
        "applications": [{"name": "embroker", "description": "embroker",
                          "version": __version__}],
        "contexts": _contexts(api, node=False), "log_files": [], "db_dir": "",
        "config_files": [], "cluster_links": [],
        "net_ticktime": 60, "enabled_plugins": ["rabbitmq_management"],
        "mem_calculation_strategy": "none",
        "metrics_gc_queue_length": dict.fromkeys((
            "channel_closed", "channel_consumer_deleted", "connection_closed",
            "consumer_deleted", "exchange_deleted", "node_node_deleted", "queue_deleted",
            "vhost_deleted"), 0),
        "ra_open_file_metrics": {"ra_log_segment_writer": 0, "ra_log_wal": 0},
        "name": views.NODE, "type": "disc", "running": True,
    }


@_route("GET", "whoami")
def _whoami(api: ManagementAPI, call: _Call) -> Any:
    with api.broker.locked():
        user = api.broker.access.users.get(call.user)
        tags = list(user.tags) if user is not None else []
    return {"name": call.user, "tags": tags}


@_route("GET", "extensions")
def _extensions(api: ManagementAPI, call: _Call) -> Any:
    return []


@_route("GET", "auth")
def _auth(api: ManagementAPI, call: _Call) -> Any:
    return {"enable_uaa": False, "uaa_client_id": "", "uaa_location": ""}


@_route("GET", "aliveness-test/{vhost}")
def _aliveness(api: ManagementAPI, call: _Call) -> Any:
    vhost = call.params["vhost"]
    api._need(call, "management", vhost)
    # As RabbitMQ: declare the queue aliveness-test, publish to it and get the message back.
    with api._channel(call, vhost) as channel:
        channel.queue_declare("aliveness-test")
        channel.basic_publish("", "aliveness-test", b"test_message")
        got = channel.basic_get("aliveness-test", no_ack=True)
    if got is None or got.body != b"test_message":
        return Response(503, b'{"status":"failed","reason":"message did not come back"}',
                        [("content-type", "application/json")])
    return {"status": "ok"}


@_route("GET", "health/checks/alarms")
def _health_alarms(api: ManagementAPI, call: _Call) -> Any:
    return _alarm_check(api)


@_route("GET", "health/checks/local-alarms")
def _health_local_alarms(api: ManagementAPI, call: _Call) -> Any:
    return _alarm_check(api)


def _alarm_check(api: ManagementAPI) -> Any:
    with api.broker.locked():
        blocked, reason = api.broker.publishers_blocked, api.broker.blocked_reason
    if blocked:
        body = {"status": "failed", "reason": "resource alarm(s) in effect in the cluster",
                "alarms": [{"node": views.NODE, "resource": "memory", "reason": reason}]}
        return Response(503, json.dumps(body).encode(), [("content-type", "application/json")])
    return {"status": "ok"}


@_route("GET", "health/checks/virtual-hosts")
def _health_vhosts(api: ManagementAPI, call: _Call) -> Any:
    return {"status": "ok"}


@_route("GET", "health/checks/node-is-quorum-critical")
def _health_quorum(api: ManagementAPI, call: _Call) -> Any:
    return {"status": "ok", "reason": "single node cluster"}


@_route("GET", "health/checks/node-is-mirror-sync-critical")
def _health_mirror(api: ManagementAPI, call: _Call) -> Any:
    return {"status": "ok", "reason": "single node cluster"}


@_route("GET", "health/checks/certificate-expiration/{within}/{unit}")
def _health_certificates(api: ManagementAPI, call: _Call) -> Any:
    return {"status": "ok"}


@_route("GET", "health/checks/port-listener/{port}")
def _health_port(api: ManagementAPI, call: _Call) -> Any:
    try:
        port = int(call.params["port"])
    except ValueError:
        raise _bad_request(f"{call.params['port']} is not a port") from None
    ports = {entry["port"] for entry in _listeners(api)}
    if port not in ports:
        body = {"status": "failed", "reason": "No active listener",
                "missing": port, "ports": sorted(ports)}
        return Response(503, json.dumps(body).encode(), [("content-type", "application/json")])
    return {"status": "ok", "port": port}


@_route("GET", "health/checks/protocol-listener/{protocol}")
def _health_protocol(api: ManagementAPI, call: _Call) -> Any:
    protocol = call.params["protocol"]
    known = {entry["protocol"] for entry in _listeners(api)}
    wanted = {"amqp091": "amqp", "amqp": "amqp", "amqp10": "amqp10", "amqp1.0": "amqp10",
              "http": "http"}.get(protocol, protocol)
    if wanted not in known:
        body = {"status": "failed",
                "reason": f"No active listener for protocol {protocol}",
                "missing": protocol, "protocols": sorted(known)}
        return Response(503, json.dumps(body).encode(), [("content-type", "application/json")])
    return {"status": "ok", "protocol": protocol}


# -- vhosts ---------------------------------------------------------------------------------------------

@_route("GET", "vhosts")
def _vhosts(api: ManagementAPI, call: _Call) -> Any:
    broker = api.broker
    with broker.locked():
        unacked = views.unacked_by_queue(broker.connections.values())
        items = [views.vhost_info(broker.vhosts[name], _definitions.vhost_metadata(broker, name),
                                  broker.vhosts[name].tracing, unacked)
                 for name in api._visible(call)]
    return api._listing(call, items)


@_route("GET", "vhosts/{vhost}")
def _vhost_get(api: ManagementAPI, call: _Call) -> Any:
    broker = api.broker
    name = call.params["vhost"]
    with broker.locked():
        api._need(call, "management", name)
        unacked = views.unacked_by_queue(broker.connections.values())
        return views.vhost_info(broker.vhosts[name], _definitions.vhost_metadata(broker, name),
                                broker.vhosts[name].tracing, unacked)


@_route("PUT", "vhosts/{vhost}")
def _vhost_put(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    body = call.body()
    name = call.params["vhost"]
    broker = api.broker
    with broker.locked():
        existed = name in broker.vhosts
        vhost = broker.add_vhost(name)
        # As RabbitMQ: a PUT sets what it says and resets the rest (description, tags,
        # tracing).
        vhost.tracing = _flag(body, "tracing", False)
        _definitions.set_vhost_metadata(broker, name, {
            "description": str(body.get("description", "")),
            "tags": _tags_of(body.get("tags", ""))})
        if not existed and call.user not in [u for u, user in broker.access.users.items()
                                             if user.default]:
            # RabbitMQ gives the user who creates a vhost full permissions on it.
            broker.access.set_permissions(call.user, name, Permissions(".*", ".*", ".*"))
    return Response(204 if existed else 201)


@_route("DELETE", "vhosts/{vhost}")
def _vhost_delete(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    name = call.params["vhost"]
    with api.broker.locked():
        if name not in api.broker.vhosts:
            raise _not_found()
        api.broker.delete_vhost(name)
    return Response(204)


@_route("PUT", "vhosts/{vhost}/start/{node}")
def _vhost_start(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    if call.params["vhost"] not in api.broker.vhosts:
        raise _not_found()
    return Response(204)


@_route("GET", "vhosts/{vhost}/permissions")
def _vhost_permissions(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    name = call.params["vhost"]
    with api.broker.locked():
        if name not in api.broker.vhosts:
            raise _not_found()
        return api._listing(call, [{"vhost": name, "user": user, **p._asdict()}
                                   for user, p in api.broker.list_permissions(name).items()])


@_route("GET", "vhosts/{vhost}/topic-permissions")
def _vhost_topic_permissions(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    name = call.params["vhost"]
    with api.broker.locked():
        if name not in api.broker.vhosts:
            raise _not_found()
        return api._listing(call, [{"vhost": name, "user": user, **e._asdict()}
                                   for user, entries in
                                   api.broker.list_topic_permissions(name).items()
                                   for e in entries])


# -- users and permissions --------------------------------------------------------------------------

def _user_info(user: Any) -> dict[str, Any]:
    from ..model._access import SHA256, HashedPassword, hash_password

    if isinstance(user.password, HashedPassword):
        password_hash, algorithm = str(user.password), user.password.algorithm
    else:
        password_hash, algorithm = hash_password(user.password), SHA256
    return {"name": user.name, "password_hash": password_hash, "hashing_algorithm": algorithm,
            "tags": list(user.tags), "limits": dict(user.limits)}


@_route("GET", "users")
def _users(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    with api.broker.locked():
        items = [_user_info(u) for u in api.broker.access.users.values()]
    return api._listing(call, items)


@_route("GET", "users/without-permissions")
def _users_without(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    broker = api.broker
    with broker.locked():
        return [_user_info(u) for u in broker.access.users.values()
                if not any(broker.access.permissions(u.name, v) for v in broker.vhosts)]


@_route("GET", "users/{user}")
def _user_get(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    with api.broker.locked():
        user = api.broker.access.users.get(call.params["user"])
        if user is None:
            raise _not_found()
        return _user_info(user)


@_route("PUT", "users/{user}")
def _user_put(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    from ..model._access import HashedPassword

    body = call.body()
    name = call.params["user"]
    broker = api.broker
    if "password" in body and "password_hash" in body:
        raise _bad_request("Unsupported input: both password and password_hash given")
    with broker.locked():
        exists = name in broker.access.users
        if not exists and "password" not in body and "password_hash" not in body:
            raise _bad_request("[{key_missing,password_hash}]" if "tags" in body else
                               "[{key_missing,tags}]")
        password: str | None = None
        if "password" in body:
            password = str(body["password"])
        elif "password_hash" in body:
            algorithm = str(body.get("hashing_algorithm",
                                     "rabbit_password_hashing_sha256"))
            try:
                password = HashedPassword(str(body["password_hash"]), algorithm)
            except DefinitionsError as error:
                raise _bad_request(str(error)) from None
        tags = _tags_of(body.get("tags", ""))
        if exists:
            if password is not None:
                broker.change_password(name, password)
            broker.set_user_tags(name, *tags)
        else:
            broker.add_user(name, password or "", tags=tags)
        limits = body.get("limits")
        if isinstance(limits, dict):
            broker.access.users[name].limits = dict(limits)
    return Response(204 if exists else 201)


@_route("DELETE", "users/{user}")
def _user_delete(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    with api.broker.locked():
        if call.params["user"] not in api.broker.access.users:
            raise _not_found()
        api.broker.delete_user(call.params["user"])
    return Response(204)


@_route("POST", "users/bulk-delete")
def _users_bulk_delete(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    names = call.body().get("users")
    if not isinstance(names, list):
        raise _bad_request("[{key_missing,users}]")
    with api.broker.locked():
        for name in names:
            if name in api.broker.access.users:
                api.broker.delete_user(str(name))
    return Response(204)


@_route("GET", "users/{user}/permissions")
def _user_permissions(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    broker = api.broker
    name = call.params["user"]
    with broker.locked():
        if name not in broker.access.users:
            raise _not_found()
        return [{"user": name, "vhost": vhost, **p._asdict()} for vhost in broker.vhosts
                if (p := broker.access.permissions(name, vhost)) is not None]


@_route("GET", "users/{user}/topic-permissions")
def _user_topic_permissions(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    broker = api.broker
    name = call.params["user"]
    with broker.locked():
        if name not in broker.access.users:
            raise _not_found()
        return [{"user": name, "vhost": vhost, **e._asdict()} for vhost in broker.vhosts
                for e in broker.access.topic_permissions(name, vhost)]


@_route("GET", "permissions")
def _permissions(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    broker = api.broker
    with broker.locked():
        return api._listing(call, [
            {"user": user, "vhost": vhost, **p._asdict()} for user in broker.access.users
            for vhost in broker.vhosts if (p := broker.access.permissions(user, vhost))])


@_route("GET", "permissions/{vhost}/{user}")
def _permission_get(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    vhost, user = call.params["vhost"], call.params["user"]
    with api.broker.locked():
        found = api.broker.access.permissions(user, vhost)
        if found is None or user not in api.broker.access.users:
            raise _not_found()
        return {"user": user, "vhost": vhost, **found._asdict()}


@_route("PUT", "permissions/{vhost}/{user}")
def _permission_put(api: ManagementAPI, call: _Call) -> Any:
    return _grant(api, call, ("configure", "write", "read"), api.broker.access.permissions,
                  api.broker.set_permissions)


@_route("DELETE", "permissions/{vhost}/{user}")
def _permission_delete(api: ManagementAPI, call: _Call) -> Any:
    return _revoke(api, call, api.broker.access.permissions, api.broker.clear_permissions)


def _grant(api: ManagementAPI, call: _Call, keys: tuple[str, str, str],
           held: Callable[[str, str], object], grant: Callable[..., None]) -> Response:
    """PUT of a user's permissions or topic permissions in a vhost (``keys``, in the order
    ``grant`` takes them): both must exist (RabbitMQ's ``vhost_or_user_not_found``); 201 for
    new ones, 204 for ones replaced."""
    api._need(call, "administrator")
    vhost, user = call.params["vhost"], call.params["user"]
    body = call.body()
    _require(body, keys)
    broker = api.broker
    with broker.locked():
        if vhost not in broker.vhosts or user not in broker.access.users:
            raise HttpError(400, "bad_request", "vhost_or_user_not_found")
        existed = bool(held(user, vhost))
        try:
            grant(user, *(str(body[key]) for key in keys), vhost=vhost)
        except AccessControlError as error:
            raise _bad_request(str(error)) from None
    return Response(204 if existed else 201)


def _revoke(api: ManagementAPI, call: _Call, held: Callable[[str, str], object],
            revoke: Callable[..., None]) -> Response:
    """DELETE of a user's permissions or topic permissions in a vhost: 404 when there are
    none."""
    api._need(call, "administrator")
    vhost, user = call.params["vhost"], call.params["user"]
    with api.broker.locked():
        if not held(user, vhost):
            raise _not_found()
        revoke(user, vhost=vhost)
    return Response(204)


@_route("GET", "topic-permissions")
def _topic_permissions(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    broker = api.broker
    with broker.locked():
        return api._listing(call, [
            {"user": user, "vhost": vhost, **e._asdict()} for user in broker.access.users
            for vhost in broker.vhosts for e in broker.access.topic_permissions(user, vhost)])


@_route("GET", "topic-permissions/{vhost}/{user}")
def _topic_permission_get(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    vhost, user = call.params["vhost"], call.params["user"]
    with api.broker.locked():
        found = api.broker.access.topic_permissions(user, vhost)
        if not found:
            raise _not_found()
        return [{"user": user, "vhost": vhost, **e._asdict()} for e in found]


@_route("PUT", "topic-permissions/{vhost}/{user}")
def _topic_permission_put(api: ManagementAPI, call: _Call) -> Any:
    return _grant(api, call, ("exchange", "write", "read"), api.broker.access.topic_permissions,
                  api.broker.set_topic_permissions)


@_route("DELETE", "topic-permissions/{vhost}/{user}")
def _topic_permission_delete(api: ManagementAPI, call: _Call) -> Any:
    return _revoke(api, call, api.broker.access.topic_permissions,
                   api.broker.clear_topic_permissions)


# -- exchanges --------------------------------------------------------------------------------------

@_route("GET", "exchanges")
@_route("GET", "exchanges/{vhost}")
def _exchanges(api: ManagementAPI, call: _Call) -> Any:
    with api.broker.locked():
        items = [views.exchange_info(x, call.user) for vh in api._vhosts_for(call)
                 for x in vh.exchanges.values()]
    return api._listing(call, items)


@_route("GET", "exchanges/{vhost}/{name}")
def _exchange_get(api: ManagementAPI, call: _Call) -> Any:
    vhost = call.params["vhost"]
    with api.broker.locked():
        api._need(call, "management", vhost)
        exchange = api.broker.vhosts[vhost].exchanges.get(call.params["name"])
        if exchange is None:
            raise _not_found()
        info = views.exchange_info(exchange, call.user)
    info.update({"incoming": [], "outgoing": []})
    return dict(sorted(info.items()))


@_route("PUT", "exchanges/{vhost}/{name}")
def _exchange_put(api: ManagementAPI, call: _Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    api._need(call, "management", vhost) if vhost in api.broker.vhosts else None
    body = call.body()
    arguments = body.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise _bad_request("arguments must be an object")
    with api._channel(call, vhost) as channel:
        existed = name in channel.vhost.exchanges
        channel.exchange_declare(name, str(body.get("type", "direct")),
                                 durable=_flag(body, "durable", False),
                                 auto_delete=_flag(body, "auto_delete", False),
                                 internal=_flag(body, "internal", False), arguments=arguments)
    return Response(204 if existed else 201)


def _flag(body: Mapping[str, Any], key: str, default: bool) -> bool:
    value = body.get(key, default)
    if isinstance(value, str):
        return value.lower() == "true"
    return bool(value)


@_route("DELETE", "exchanges/{vhost}/{name}")
def _exchange_delete(api: ManagementAPI, call: _Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    with api.broker.locked():
        api._need(call, "management", vhost)
        if name not in api.broker.vhosts[vhost].exchanges:
            raise _not_found()
        with api._channel(call, vhost) as channel:
            channel.exchange_delete(name, if_unused=_truthy(call.request.query.get("if-unused")))
    return Response(204)


@_route("POST", "exchanges/{vhost}/{name}/publish")
def _exchange_publish(api: ManagementAPI, call: _Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    api._need(call, "management", vhost) if vhost in api.broker.vhosts else None
    body = call.body()
    _require(body, ("routing_key", "properties", "payload", "payload_encoding"), ",\n ")
    encoding = body["payload_encoding"]
    payload = body["payload"]
    if encoding == "string":
        data = str(payload).encode("utf-8")
    elif encoding == "base64":
        try:
            data = base64.b64decode(str(payload), validate=True)
        except (binascii.Error, ValueError):
            raise _bad_request("not_base64") from None
    else:
        raise _bad_request(f"Unsupported payload_encoding: {encoding}")
    properties = body["properties"]
    if not isinstance(properties, dict):
        raise _bad_request("properties must be an object")
    try:
        props = _amqp_properties(properties)
    except (TypeError, ValueError) as error:
        raise _bad_request(str(error)) from None
    returned: list[object] = []
    with api.broker.locked():
        if vhost not in api.broker.vhosts:
            raise HttpError(404, "not_found", "vhost_not_found")
        try:
            connection = api.broker.open_connection(vhost, user=call.user, name=(
                f"management API ({call.user})"))
        except NotAllowed as refused:
            raise HttpError(401, "not_authorised", refused.reply_text) from None
        try:
            channel = connection.open_channel(1)
            channel.listener = returned.append  # basic.return of the mandatory publish
            # As RabbitMQ's management: mandatory, and routed unless it comes back; a refusal
            # keeps the channel's close reason ("404 NOT_FOUND - no exchange ...").
            channel.basic_publish(name, str(body["routing_key"]), data, props, mandatory=True)
        except AMQPError as error:
            raise _bad_request(f"{error.reply_code} {error.reply_text}") from None
        finally:
            connection.close()
    return {"routed": not any(isinstance(event, Returned) for event in returned)}


_PROPERTY_TYPES: dict[str, type] = {
    "content_type": str, "content_encoding": str, "headers": dict, "delivery_mode": int,
    "priority": int, "correlation_id": str, "reply_to": str, "expiration": str,
    "message_id": str, "timestamp": int, "type": str, "user_id": str, "app_id": str,
    "cluster_id": str,
}


def _amqp_properties(given: Mapping[str, Any]) -> dict[str, Any]:
    from ..fieldtypes import Timestamp

    props: dict[str, Any] = {}
    for key, value in given.items():
        kind = _PROPERTY_TYPES.get(key)
        if kind is None:
            raise ValueError(f"unknown property: {key}")
        if kind is int:
            value = int(value)
        elif kind is str:
            value = str(value)
        elif not isinstance(value, dict):
            raise ValueError(f"{key} must be an object")
        if key == "timestamp":
            value = Timestamp(value)
        elif key == "headers":
            value = _amqp_table(value)
        props[key] = value
    return props


def _amqp_table(value: Any) -> Any:
    """JSON as RabbitMQ's management makes it an AMQP table (``rabbit_mgmt_format:
    to_amqp_table``): an integer is a ``long``, whatever its size, and a table's keys are in
    order (a JSON object is an Erlang map there)."""
    from ..fieldtypes import Long

    if isinstance(value, dict):
        return {str(k): _amqp_table(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_amqp_table(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return Long(value)
    return value


# -- queues -----------------------------------------------------------------------------------------

@_route("GET", "queues")
@_route("GET", "queues/{vhost}")
def _queues(api: ManagementAPI, call: _Call) -> Any:
    broker = api.broker
    with broker.locked():  # only the reading: the JSON is written after
        unacked = views.unacked_by_queue(broker.connections.values())
        rows = [views.queue_snapshot(q, unacked.get(id(q), (0, 0)))
                for vh in api._vhosts_for(call) for q in vh.queues.values()]
    return api._listing_json(call, rows, _by_vhost_and_name, views.queue_json, views.queue_info)


def _by_vhost_and_name(row: views.QueueSnapshot) -> tuple[str, str]:
    return row.vhost, row.name


@_route("GET", "queues/{vhost}/{name}")
def _queue_get(api: ManagementAPI, call: _Call) -> Any:
    broker = api.broker
    vhost = call.params["vhost"]
    with broker.locked():
        api._need(call, "management", vhost)
        queue = api._queue(vhost, call.params["name"])
        unacked = views.unacked_by_queue(broker.connections.values())
        info = api._queue_info(queue, unacked)
        wire = api._wire()
        details = []
        for consumer in queue.consumers:
            connection = consumer.channel.connection
            name, peer = api._connection_identity(connection, wire)
            details.append(views.consumer_info(consumer, name, peer, connection.user))
    info.update({"consumer_details": details, "deliveries": [], "incoming": []})
    return dict(sorted(info.items()))


@_route("PUT", "queues/{vhost}/{name}")
def _queue_put(api: ManagementAPI, call: _Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    api._need(call, "management", vhost) if vhost in api.broker.vhosts else None
    body = call.body()
    arguments = dict(body.get("arguments") or {})
    if body.get("type") and "x-queue-type" not in arguments:
        arguments["x-queue-type"] = str(body["type"])
    with api._channel(call, vhost) as channel:
        existed = name in channel.vhost.queues
        channel.queue_declare(name, durable=_flag(body, "durable", False),
                              auto_delete=_flag(body, "auto_delete", False),
                              arguments=arguments)
    return Response(204 if existed else 201)


@_route("DELETE", "queues/{vhost}/{name}")
def _queue_delete(api: ManagementAPI, call: _Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    query = call.request.query
    with api.broker.locked():
        api._need(call, "management", vhost)
        api._queue(vhost, name)
        with api._channel(call, vhost) as channel:
            channel.queue_delete(name, if_unused=_truthy(query.get("if-unused")),
                                 if_empty=_truthy(query.get("if-empty")))
    return Response(204)


@_route("DELETE", "queues/{vhost}/{name}/contents")
def _queue_purge(api: ManagementAPI, call: _Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    with api.broker.locked():
        api._need(call, "management", vhost)
        api._queue(vhost, name)
        with api._channel(call, vhost) as channel:
            channel.queue_purge(name)
    return Response(204)


@_route("POST", "queues/{vhost}/{name}/actions")
def _queue_actions(api: ManagementAPI, call: _Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    with api.broker.locked():
        api._need(call, "management", vhost)
        api._queue(vhost, name)
    action = call.body().get("action")
    if action not in ("sync", "cancel_sync"):
        raise _bad_request(f"Unknown action: {action}")
    return Response(204)


@_route("POST", "queues/{vhost}/{name}/get")
def _queue_get_messages(api: ManagementAPI, call: _Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    body = call.body()
    _require(body, ("ackmode", "encoding"))
    ackmode, encoding = body["ackmode"], body["encoding"]
    if ackmode not in ("ack_requeue_true", "ack_requeue_false", "reject_requeue_true",
                       "reject_requeue_false"):
        raise _bad_request(f"Unsupported ackmode: {ackmode}")
    if encoding not in ("auto", "base64"):
        raise _bad_request(f"Unsupported encoding: {encoding}")
    try:
        count = int(body.get("count", 1))
        truncate = int(body["truncate"]) if body.get("truncate") not in (None, "") else None
    except (TypeError, ValueError):
        raise _bad_request("count and truncate must be integers") from None
    requeue = ackmode.endswith("true")
    found: list[dict[str, Any]] = []
    with api.broker.locked():
        api._need(call, "management", vhost)
        api._queue(vhost, name)
        with api._channel(call, vhost) as channel:
            tags = []
            for _ in range(max(count, 0)):
                delivery = channel.basic_get(name)
                if delivery is None:
                    break
                tags.append(delivery.delivery_tag)
                found.append(_got(delivery, encoding, truncate))
            # As RabbitMQ: all of them taken first, then settled together.
            if tags:
                if ackmode.startswith("ack") and not requeue:
                    channel.basic_ack(tags[-1], multiple=True)
                else:
                    channel.basic_nack(tags[-1], multiple=True, requeue=requeue)
    return found


def _got(delivery: Any, encoding: str, truncate: int | None) -> dict[str, Any]:
    body: bytes = delivery.message.body
    size = len(body)
    if truncate is not None:
        body = body[:truncate]
    payload: str
    if encoding == "auto":
        try:
            payload, payload_encoding = body.decode("utf-8"), "string"
        except UnicodeDecodeError:
            payload, payload_encoding = base64.b64encode(body).decode(), "base64"
    else:
        payload, payload_encoding = base64.b64encode(body).decode(), "base64"
    return {"payload_bytes": size, "redelivered": delivery.redelivered,
            "exchange": delivery.exchange, "routing_key": delivery.routing_key,
            "message_count": delivery.message_count,
            "properties": views.json_value(delivery.message.properties),
            "payload": payload, "payload_encoding": payload_encoding}


@_route("GET", "queues/{vhost}/{name}/bindings")
def _queue_bindings(api: ManagementAPI, call: _Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    with api.broker.locked():
        api._need(call, "management", vhost)
        queue = api._queue(vhost, name)
        host = api.broker.vhosts[vhost]
        return [views.default_binding(host, queue),
                *views.bindings_of(host, queue.bindings.values())]


# -- bindings ---------------------------------------------------------------------------------------

def _all_bindings(vhost: VirtualHost) -> list[dict[str, Any]]:
    found = [views.default_binding(vhost, q) for q in vhost.queues.values()]
    for exchange in vhost.exchanges.values():
        if exchange.name:
            found += views.bindings_of(vhost, exchange.bindings.values())
    return found


@_route("GET", "bindings")
@_route("GET", "bindings/{vhost}")
def _bindings(api: ManagementAPI, call: _Call) -> Any:
    with api.broker.locked():
        items = [b for vh in api._vhosts_for(call) for b in _all_bindings(vh)]
    return api._listing(call, items)


@_route("GET", "exchanges/{vhost}/{name}/bindings/source")
def _exchange_bindings_source(api: ManagementAPI, call: _Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    with api.broker.locked():
        api._need(call, "management", vhost)
        host = api.broker.vhosts[vhost]
        exchange = host.exchanges.get(name)
        if exchange is None:
            raise _not_found()
        if name == "":
            return [views.default_binding(host, q) for q in host.queues.values()]
        return views.bindings_of(host, exchange.bindings.values())


@_route("GET", "exchanges/{vhost}/{name}/bindings/destination")
def _exchange_bindings_destination(api: ManagementAPI, call: _Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    with api.broker.locked():
        api._need(call, "management", vhost)
        host = api.broker.vhosts[vhost]
        exchange = host.exchanges.get(name)
        if exchange is None:
            raise _not_found()
        return views.bindings_of(host, exchange.incoming.values())


def _kind(letter: str) -> str:
    if letter == "q":
        return "queue"
    if letter == "e":
        return "exchange"
    raise _not_found()


def _between(api: ManagementAPI, call: _Call) -> list[dict[str, Any]]:
    vhost = call.params["vhost"]
    api._need(call, "management", vhost)
    host = api.broker.vhosts[vhost]
    source, kind = call.params["source"], _kind(call.params["kind"])
    destination = call.params["destination"]
    exchange = host.exchanges.get(source)
    target = (host.queues if kind == "queue" else host.exchanges).get(destination)
    if exchange is None or target is None:
        raise _not_found()
    if source:
        found = [b for b in exchange.bindings.values() if b.destination is target]
    else:
        found = [cast("Queue", target).default_binding] if kind == "queue" else []
    return views.bindings_of(host, found)


@_route("GET", "bindings/{vhost}/e/{source}/{kind}/{destination}")
def _bindings_between(api: ManagementAPI, call: _Call) -> Any:
    with api.broker.locked():
        return _between(api, call)


@_route("POST", "bindings/{vhost}/e/{source}/{kind}/{destination}")
def _binding_post(api: ManagementAPI, call: _Call) -> Any:
    vhost, source = call.params["vhost"], call.params["source"]
    kind, destination = _kind(call.params["kind"]), call.params["destination"]
    body = call.body()
    routing_key = str(body.get("routing_key", ""))
    arguments = body.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise _bad_request("arguments must be an object")
    with api.broker.locked():
        api._need(call, "management", vhost)
        with api._channel(call, vhost) as channel:
            if kind == "queue":
                channel.queue_bind(destination, source, routing_key, arguments)
            else:
                channel.exchange_bind(destination, source, routing_key, arguments)
    location = quote(views.properties_key(routing_key, arguments), safe="")
    return Response(201, b"", [("location", f"{quote(destination, safe='')}/{location}")])


@_route("GET", "bindings/{vhost}/e/{source}/{kind}/{destination}/{props}")
def _binding_get(api: ManagementAPI, call: _Call) -> Any:
    with api.broker.locked():
        for binding in _between(api, call):
            if binding["properties_key"] == call.params["props"]:
                return binding
    raise _not_found()


@_route("DELETE", "bindings/{vhost}/e/{source}/{kind}/{destination}/{props}")
def _binding_delete(api: ManagementAPI, call: _Call) -> Any:
    vhost, source = call.params["vhost"], call.params["source"]
    kind, destination = _kind(call.params["kind"]), call.params["destination"]
    with api.broker.locked():
        match = next((b for b in _between(api, call)
                      if b["properties_key"] == call.params["props"]), None)
        if match is None:
            raise _not_found()
        with api._channel(call, vhost) as channel:
            if kind == "queue":
                channel.queue_unbind(destination, source, match["routing_key"],
                                     _arguments_of(api, vhost, source, destination, match))
            else:
                channel.exchange_unbind(destination, source, match["routing_key"],
                                        _arguments_of(api, vhost, source, destination, match))
    return Response(204)


def _arguments_of(api: ManagementAPI, vhost: str, source: str, destination: str,
                  match: Mapping[str, Any]) -> dict[str, Any]:
    # The binding's own arguments (typed as the model keeps them), found again by its key.
    host = api.broker.vhosts[vhost]
    for binding in host.exchanges[source].bindings.values():
        if binding.destination.name == destination and views.properties_key(
                binding.routing_key, binding.arguments) == match["properties_key"]:
            return dict(binding.arguments)
    return {}


# -- connections, channels, consumers ----------------------------------------------------------------

def _connection_info(api: ManagementAPI, connection: Connection, wire: Mapping[int, Any],
                     who: str) -> dict[str, Any]:
    client = wire.get(id(connection))
    name, (peer_host, peer_port) = api._connection_identity(connection, wire)
    here = _split_peer(_sockname(client.sock)) if client is not None else ("", 0)
    properties = views.json_value(connection.client_properties)
    provided = connection.client_properties.get("connection_name")
    if _is_stream(connection):  # rabbit_stream_reader's ?CREATION_EVENT_KEYS (v3.10.8)
        details = connection.details
        return {
            "auth_mechanism": "PLAIN", "channel_max": 0, "client_properties": properties,
            "connected_at": int(getattr(client, "connected_at", api._started) * 1000),
            "frame_max": details.get("frame_max", 0), "host": here[0], "name": name,
            "node": views.NODE, "peer_cert_issuer": None, "peer_cert_subject": None,
            "peer_cert_validity": None, "peer_host": peer_host, "peer_port": peer_port,
            "port": here[1], "protocol": "stream", "ssl": False, "ssl_cipher": None,
            "ssl_hash": None, "ssl_key_exchange": None, "ssl_protocol": None,
            "timeout": details.get("heartbeat", 0), "user": connection.user,
            "user_who_performed_action": who, "vhost": connection.vhost.name}
    inner = client.conn.inner if client is not None else None
    info: dict[str, Any] = {
        "auth_mechanism": "PLAIN", "channel_max": getattr(inner, "channel_max", 0),
        "channels": len(connection.channels), "client_properties": properties,
        "connected_at": int(getattr(client, "connected_at", api._started) * 1000),
        "frame_max": getattr(inner, "frame_max", 0), "garbage_collection": dict(views._GC),
        "host": here[0], "name": name, "node": views.NODE,
        "peer_cert_issuer": None, "peer_cert_subject": None, "peer_cert_validity": None,
        "peer_host": peer_host, "peer_port": peer_port, "port": here[1],
        "protocol": ("AMQP 0-9-1" if client is None or type(inner).__module__.startswith(
            "embroker.amqp091") else "AMQP 1-0"),
        "recv_cnt": 0, "recv_oct": 0, "recv_oct_details": views.rate(), "reductions": 0,
        "reductions_details": views.rate(), "send_cnt": 0, "send_oct": 0,
        "send_oct_details": views.rate(), "send_pend": 0, "ssl": False, "ssl_cipher": None,
        "ssl_hash": None, "ssl_key_exchange": None, "ssl_protocol": None,
        "state": "blocked" if getattr(inner, "blocked", False) else "running",
        "timeout": getattr(inner, "heartbeat", 0),
        "type": "network" if client is not None else "direct", "user": connection.user,
        "user_who_performed_action": who, "vhost": connection.vhost.name,
    }
    if isinstance(provided, str):
        info["user_provided_name"] = provided
    return info


def _is_stream(connection: Connection) -> bool:
    """Whether ``connection`` came over the stream protocol (which has no AMQP channels)."""
    return connection.details.get("protocol") == "stream"


def _amqp_channels(connection: Connection) -> dict[int, Any]:
    """``connection``'s AMQP channels as RabbitMQ lists them: a stream connection's model
    channel is embroker's own, not one the client opened."""
    return {} if _is_stream(connection) else connection.channels


def _visible_connections(api: ManagementAPI, call: _Call,
                         vhost: str | None = None) -> list[Connection]:
    names = set(api._visible(call)) if vhost is None else {vhost}
    return [c for c in api.broker.connections.values() if c.is_open and c.vhost.name in names
            and ("monitoring" in call.tags or c.user == call.user)]


@_route("GET", "connections")
@_route("GET", "vhosts/{vhost}/connections")
def _connections(api: ManagementAPI, call: _Call) -> Any:
    with api.broker.locked():
        vhost = call.params.get("vhost")
        if vhost is not None:
            api._need(call, "management", vhost)
        wire = api._wire()
        items = [_connection_info(api, c, wire, call.user)
                 for c in _visible_connections(api, call, vhost)]
    return api._listing(call, items)


def _find_connection(api: ManagementAPI, call: _Call) -> tuple[Connection, Mapping[int, Any]]:
    wire = api._wire()
    for connection in _visible_connections(api, call):
        if api._connection_identity(connection, wire)[0] == call.params["name"]:
            return connection, wire
    raise _not_found()


@_route("GET", "connections/{name}")
def _connection_get(api: ManagementAPI, call: _Call) -> Any:
    with api.broker.locked():
        connection, wire = _find_connection(api, call)
        return _connection_info(api, connection, wire, call.user)


@_route("DELETE", "connections/{name}")
def _connection_delete(api: ManagementAPI, call: _Call) -> Any:
    reason = call.request.headers.get("x-reason", "Closed via management plugin")
    with api.broker.locked():
        connection, wire = _find_connection(api, call)
        client = wire.get(id(connection))
        error = ConnectionForced(reason)
        if client is not None and api.server is not None:
            client.conn.close(error)
            api.server._has_output(client)
        else:
            connection.close_by_broker(error)
    return Response(204)


@_route("GET", "connections/{name}/channels")
def _connection_channels(api: ManagementAPI, call: _Call) -> Any:
    with api.broker.locked():
        connection, wire = _find_connection(api, call)
        name, peer = api._connection_identity(connection, wire)
        return [views.channel_info(ch, name, peer, connection.user, call.user)
                for ch in _amqp_channels(connection).values()]


def _channels_of(api: ManagementAPI, call: _Call, vhost: str | None) -> list[dict[str, Any]]:
    wire = api._wire()
    found = []
    for connection in _visible_connections(api, call, vhost):
        name, peer = api._connection_identity(connection, wire)
        found += [views.channel_info(ch, name, peer, connection.user, call.user)
                  for ch in sorted(_amqp_channels(connection).values(), key=lambda c: c.number)]
    return found


@_route("GET", "channels")
@_route("GET", "vhosts/{vhost}/channels")
def _channels(api: ManagementAPI, call: _Call) -> Any:
    with api.broker.locked():
        vhost = call.params.get("vhost")
        if vhost is not None:
            api._need(call, "management", vhost)
        items = _channels_of(api, call, vhost)
    return api._listing(call, items)


@_route("GET", "channels/{name}")
def _channel_get(api: ManagementAPI, call: _Call) -> Any:
    with api.broker.locked():
        wire = api._wire()
        for connection in _visible_connections(api, call):
            name, peer = api._connection_identity(connection, wire)
            for channel in _amqp_channels(connection).values():
                if views.channel_name(name, channel.number) == call.params["name"]:
                    info = views.channel_info(channel, name, peer, connection.user, call.user)
                    info["consumer_details"] = [
                        views.consumer_info(c, name, peer, connection.user)
                        for c in channel.consumers.values()]
                    info.update({"deliveries": [], "publishes": []})
                    return dict(sorted(info.items()))
    raise _not_found()


@_route("GET", "consumers")
@_route("GET", "consumers/{vhost}")
def _consumers(api: ManagementAPI, call: _Call) -> Any:
    with api.broker.locked():
        wire = api._wire()
        items = []
        for vhost in api._vhosts_for(call):
            for queue in vhost.queues.values():
                for consumer in queue.consumers:
                    connection = consumer.channel.connection
                    name, peer = api._connection_identity(connection, wire)
                    items.append(views.consumer_info(consumer, name, peer, connection.user))
    return api._listing(call, items)


# -- definitions ------------------------------------------------------------------------------------

_VHOST_SECTIONS = ("parameters", "policies", "queues", "exchanges", "bindings")


@_route("GET", "definitions")
def _definitions_get(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    with api.broker.locked():
        return api.broker.definitions()


@_route("POST", "definitions")
def _definitions_post(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    return _load(api, call, _definitions_body(call), None)


def _definitions_body(call: _Call) -> dict[str, Any]:
    content_type = call.request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        raise _bad_request("upload the definitions as a JSON body (multipart/form-data is not "
                           "supported by embroker)")
    return call.body()


def _load(api: ManagementAPI, call: _Call, document: dict[str, Any],
          vhost: str | None) -> Any:
    with api.broker.locked():
        try:
            if vhost is None:
                api.broker.load_definitions(document)
            else:
                scoped = {k: [{**item, "vhost": vhost} for item in document.get(k) or []]
                          for k in _VHOST_SECTIONS}
                api.broker.load_definitions(scoped, vhost=vhost)
        except (DefinitionsError, PolicyError, AccessControlError) as error:
            raise _bad_request(str(error)) from None
        except AMQPError as error:
            raise _bad_request(error.text) from None
    return Response(204)


@_route("GET", "definitions/{vhost}")
def _definitions_vhost_get(api: ManagementAPI, call: _Call) -> Any:
    vhost = call.params["vhost"]
    api._need(call, "administrator")
    with api.broker.locked():
        if vhost not in api.broker.vhosts:
            raise _not_found()
        whole = api.broker.definitions()
    out: dict[str, Any] = {"rabbit_version": whole["rabbit_version"]}
    for section in _VHOST_SECTIONS:
        items = [dict(item) for item in whole.get(section, []) if item.get("vhost") == vhost]
        for item in items:
            if section in ("queues", "exchanges", "bindings"):
                item.pop("vhost", None)
            if section == "queues":
                item.pop("type", None)  # (RabbitMQ 3.10's export of one vhost has none)
        out[section] = items
    return out


@_route("POST", "definitions/{vhost}")
def _definitions_vhost_post(api: ManagementAPI, call: _Call) -> Any:
    vhost = call.params["vhost"]
    api._need(call, "administrator")
    if vhost not in api.broker.vhosts:
        raise _not_found()
    return _load(api, call, _definitions_body(call), vhost)


# -- policies, operator policies, limits, parameters ----------------------------------------------------

def _policy_json(policy: Any) -> dict[str, Any]:
    return {"vhost": policy.vhost, "name": policy.name, "pattern": policy.pattern,
            "apply-to": policy.apply_to, "definition": dict(policy.definition),
            "priority": policy.priority}


def _policy_list(api: ManagementAPI, call: _Call, operator: bool) -> Any:
    with api.broker.locked():
        vhost = call.params.get("vhost")
        if vhost is not None:
            api._need(call, "management", vhost)
            names = [vhost]
        else:
            names = api._visible(call)
        items = []
        for name in names:
            policies = api.broker.vhosts[name].policies
            table = policies.operator_policies if operator else policies.policies
            items += [_policy_json(p) for p in table.values()]
    return api._listing(call, items)


def _policy_get(api: ManagementAPI, call: _Call, operator: bool) -> Any:
    vhost = call.params["vhost"]
    with api.broker.locked():
        api._need(call, "management", vhost)
        policies = api.broker.vhosts[vhost].policies
        table = policies.operator_policies if operator else policies.policies
        policy = table.get(call.params["name"])
        if policy is None:
            raise _not_found()
        return _policy_json(policy)


def _policy_put(api: ManagementAPI, call: _Call, operator: bool) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    if operator:
        api._need(call, "administrator")
    body = call.body()
    _require(body, ("pattern", "definition"))
    import warnings

    with api.broker.locked():
        api._need(call, "policymaker", vhost)
        policies = api.broker.vhosts[vhost].policies
        existed = name in (policies.operator_policies if operator else policies.policies)
        setter = api.broker.set_operator_policy if operator else api.broker.set_policy
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                setter(name, body["pattern"], body["definition"],
                       priority=body.get("priority", 0), apply_to=body.get("apply-to", "all"),
                       vhost=vhost)
        except PolicyError as error:
            raise _bad_request(_escaped(str(error)) + "\n") from None
    return Response(204 if existed else 201)


def _escaped(text: str) -> str:
    """As RabbitMQ's management writes a validation error: HTML-escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _policy_delete(api: ManagementAPI, call: _Call, operator: bool) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    if operator:
        api._need(call, "administrator")
    with api.broker.locked():
        api._need(call, "policymaker", vhost)
        try:
            if operator:
                api.broker.clear_operator_policy(name, vhost=vhost)
            else:
                api.broker.clear_policy(name, vhost=vhost)
        except PolicyError:
            raise _not_found() from None
    return Response(204)


for _operator, _path in ((False, "policies"), (True, "operator-policies")):
    def _bind(op: bool) -> None:
        def listing(api: ManagementAPI, call: _Call) -> Any:
            return _policy_list(api, call, op)

        def get(api: ManagementAPI, call: _Call) -> Any:
            return _policy_get(api, call, op)

        def put(api: ManagementAPI, call: _Call) -> Any:
            return _policy_put(api, call, op)

        def delete(api: ManagementAPI, call: _Call) -> Any:
            return _policy_delete(api, call, op)
        path = "operator-policies" if op else "policies"
        _route("GET", path)(listing)
        _route("GET", f"{path}/{{vhost}}")(listing)
        _route("GET", f"{path}/{{vhost}}/{{name}}")(get)
        _route("PUT", f"{path}/{{vhost}}/{{name}}")(put)
        _route("DELETE", f"{path}/{{vhost}}/{{name}}")(delete)
    _bind(_operator)


@_route("GET", "vhost-limits")
@_route("GET", "vhost-limits/{vhost}")
def _vhost_limits(api: ManagementAPI, call: _Call) -> Any:
    with api.broker.locked():
        vhost = call.params.get("vhost")
        names = [vhost] if vhost is not None else api._visible(call)
        if vhost is not None:
            api._need(call, "management", vhost)
        return [{"vhost": name, "value": dict(api.broker.vhosts[name].policies.limits)}
                for name in names if api.broker.vhosts[name].policies.limits]


@_route("PUT", "vhost-limits/{vhost}/{limit}")
def _vhost_limit_put(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    vhost, limit = call.params["vhost"], call.params["limit"]
    body = call.body()
    if "value" not in body:
        raise _bad_request("[{key_missing,value}]")
    with api.broker.locked():
        if vhost not in api.broker.vhosts:
            raise _not_found()
        limits = {**api.broker.vhosts[vhost].policies.limits, limit: body["value"]}
        try:
            api.broker.set_vhost_limits(limits, vhost=vhost)
        except PolicyError as error:
            raise _bad_request(str(error)) from None
    return Response(204)


@_route("DELETE", "vhost-limits/{vhost}/{limit}")
def _vhost_limit_delete(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    vhost, limit = call.params["vhost"], call.params["limit"]
    with api.broker.locked():
        if vhost not in api.broker.vhosts:
            raise _not_found()
        limits = dict(api.broker.vhosts[vhost].policies.limits)
        if limit not in limits:
            raise _not_found()
        del limits[limit]
        api.broker.set_vhost_limits(limits, vhost=vhost)
    return Response(204)


@_route("GET", "parameters")
@_route("GET", "parameters/{component}")
@_route("GET", "parameters/{component}/{vhost}")
def _parameters(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "policymaker")
    with api.broker.locked():
        from ..model._policy import export_parameters

        found = export_parameters(api.broker)
    component, vhost = call.params.get("component"), call.params.get("vhost")
    return [p for p in found if (component is None or p["component"] == component)
            and (vhost is None or p["vhost"] == vhost)
            and p["vhost"] in api._visible(call)]


@_route("GET", "global-parameters")
def _global_parameters(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    return [{"name": "cluster_name",
             "value": str(api.broker.server_properties.get("cluster_name", "embroker"))}]


@_route("GET", "feature-flags")
def _feature_flags(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    return []


# -- the tracing plugin (rabbitmq_tracing): traces and their log files ------------------------------

def _node_param(call: _Call) -> None:
    node = call.params.get("node")
    if node is not None and node != views.NODE:
        raise _not_found()


@_route("GET", "traces")
@_route("GET", "traces/{vhost}")
@_route("GET", "traces/node/{node}")
@_route("GET", "traces/node/{node}/{vhost}")
def _traces(api: ManagementAPI, call: _Call) -> Any:
    """Every trace, whatever the vhost in the path (as RabbitMQ 3.10's rabbit_tracing_wm_traces,
    which does not read it)."""
    api._need(call, "administrator")
    _node_param(call)
    with api.broker.locked():
        return [_trace_info(api, trace) for trace in api.tracing.listed()]


def _trace_info(api: ManagementAPI, trace: Any) -> dict[str, Any]:
    queue = api.broker.vhosts[trace.vhost].queues.get(trace.queue)
    info = None
    if queue is not None:
        info = views.queue_info(queue)
        info.pop("owner_pid_details", None)  # as RabbitMQ's strip_pids
    return cast("dict[str, Any]", trace.info(info))


@_route("GET", "traces/{vhost}/{name}")
@_route("GET", "traces/node/{node}/{vhost}/{name}")
def _trace_get(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    _node_param(call)
    with api.broker.locked():
        trace = api.tracing.get(call.params["vhost"], call.params["name"])
        if trace is None:
            raise _not_found()
        return _trace_info(api, trace)


@_route("PUT", "traces/{vhost}/{name}")
@_route("PUT", "traces/node/{node}/{vhost}/{name}")
def _trace_put(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    _node_param(call)
    body = call.body()
    _require(body, ("format", "pattern"))
    payload = body.get("max_payload_bytes", 0)
    if not isinstance(payload, int) or isinstance(payload, bool):
        raise _bad_request("max_payload_bytes not integer")
    if body["format"] not in ("json", "text"):
        raise _bad_request("format not json or text")
    vhost, name = call.params["vhost"], call.params["name"]
    with api.broker.locked():
        if vhost not in api.broker.vhosts:
            raise _not_found()
        try:
            api.tracing.create(vhost, name, body)
        except TracingError as error:
            raise _bad_request(str(error)) from None
    return Response(201)


@_route("DELETE", "traces/{vhost}/{name}")
@_route("DELETE", "traces/node/{node}/{vhost}/{name}")
def _trace_delete(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    _node_param(call)
    with api.broker.locked():
        if api.tracing.get(call.params["vhost"], call.params["name"]) is None:
            raise _not_found()
        api.tracing.delete(call.params["vhost"], call.params["name"])
    return Response(204)


@_route("GET", "trace-files")
@_route("GET", "trace-files/node/{node}")
def _trace_files(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    _node_param(call)
    with api.broker.locked():
        return api.tracing.files()


@_route("GET", "trace-files/{name}")
@_route("GET", "trace-files/node/{node}/{name}")
def _trace_file(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    _node_param(call)
    with api.broker.locked():
        path = api.tracing.file(call.params["name"])
        if path is None:
            raise _not_found()
        data = path.read_bytes()
    return Response(200, data, [("content-type", "text/plain")])


@_route("DELETE", "trace-files/{name}")
@_route("DELETE", "trace-files/node/{node}/{name}")
def _trace_file_delete(api: ManagementAPI, call: _Call) -> Any:
    api._need(call, "administrator")
    _node_param(call)
    with api.broker.locked():
        path = api.tracing.file(call.params["name"])
        if path is None:
            raise _not_found()
        path.unlink()
    return Response(204)


# -- embroker's own: what the console shows ------------------------------------------------------
# (under /api/embroker/: not RabbitMQ's; read-only)

#: How many exchanges and queues the console's graph shows (the first by name; it says how many
#: more): a page for a person, whose cost must stay small whatever the broker holds.
CONSOLE_OBJECTS = 200
#: How many new routing decisions of its vhost one poll of the console takes (the newest), and
#: how far back in the trace it looks for them.
CONSOLE_DECISIONS = 100
CONSOLE_SCAN = 2000
#: How many ready messages of the chosen queue it shows.
CONSOLE_MESSAGES = 50


@_route("GET", "embroker/console")
def _console(api: ManagementAPI, call: _Call) -> Any:
    """Everything the console shows, in one request per poll: the vhosts, a summary, the
    chosen vhost's exchanges, queues and bindings (at most :data:`CONSOLE_OBJECTS` of each
    kind), connections with their channels, the routing decisions after ``since`` (a count
    of decisions ever recorded) with their explanations and histories, and the ready messages
    of ``queue`` looked at without taking them (``Channel.browse``: read permission, as
    basic.consume)."""
    query = call.request.query
    try:
        since = int(query.get("since", "0"))
    except ValueError:
        raise _bad_request("since must be an integer") from None
    broker = api.broker
    with broker.locked():
        visible = api._visible(call)
        if not visible:
            raise _not_found()
        name = query.get("vhost") or ("/" if "/" in visible else visible[0])
        api._need(call, "management", name)
        vhost = broker.vhosts[name]
        queues = vhost.queues
        exchanges = [x for x in vhost.exchanges.values()
                     if x.name and not x.name.startswith("amq.")]
        exchanges.sort(key=lambda x: x.name)
        shown_x = exchanges[:CONSOLE_OBJECTS]
        shown_q = heapq.nsmallest(CONSOLE_OBJECTS, queues)
        unacked = views.unacked_by_queue(broker.connections.values())
        shown = {*(x.name for x in shown_x), *shown_q}
        bindings = [{"source": b.source.name, "destination": b.destination.name,
                     "destination_type": b.destination.kind, "routing_key": b.routing_key}
                    for x in shown_x for b in x.bindings.values()
                    if b.destination.name in shown]
        ready = sum(q.message_count for q in queues.values())
        wire = api._wire()
        connections = []
        for connection in _visible_connections(api, call):
            client = connection.client_properties
            connections.append({
                "name": str(client.get("connection_name") or
                            api._connection_identity(connection, wire)[0]),
                "client": str(client.get("product", "")), "user": connection.user,
                "vhost": connection.vhost.name,
                "channels": sorted(_amqp_channels(connection))})
        answer: dict[str, Any] = {
            "vhosts": visible, "vhost": name,
            "summary": {"connections": len(connections), "queues": len(queues),
                        "exchanges": len(exchanges),
                        "messages": ready + sum(unacked.get(id(q), (0, 0))[0]
                                                for q in queues.values())},
            "exchanges": [{"name": x.name, "type": x.type} for x in shown_x],
            "queues": [{"name": n, "ready": queues[n].message_count,
                        "unacked": unacked.get(id(queues[n]), (0, 0))[0],
                        "consumers": queues[n].consumer_count} for n in shown_q],
            "bindings": bindings, "connections": connections,
            "trace": _decisions_since(broker, since, name),
        }
        chosen = query.get("queue")
        if chosen:
            try:
                answer["messages"] = _peek(api, call, name, chosen)
            except HttpError as refused:  # (no read permission there, say): the rest stands
                answer["messages_refused"] = refused.reason
    return answer


def _decisions_since(broker: Broker, since: int, vhost: str) -> dict[str, Any]:
    """The decisions of ``vhost`` after ``since`` (at most :data:`CONSOLE_DECISIONS`, the
    newest, among the last :data:`CONSOLE_SCAN` of the trace: another vhost's traffic does
    not crowd them out unless it is that busy)."""
    trace = broker.trace
    total = trace.total
    first = total - len(trace)
    start = max(since, first, total - CONSOLE_SCAN)
    decisions = trace[start - first:] if start - first < len(trace) else []
    mine = [(offset, d) for offset, d in enumerate(decisions)
            if d.vhost == vhost][-CONSOLE_DECISIONS:]
    found = []
    for offset, decision in mine:
        found.append({
            "id": start + offset + 1, "vhost": decision.vhost,
            "exchange": decision.exchange, "routing_keys": list(decision.keys),
            "queues": list(decision.queues), "outcome": str(decision.outcome),
            "explain": str(decision.explain()),
            "history": [str(event) for event in decision.history()],
            "payload": decision.message.body[:200].decode("utf-8", "replace")})
    return {"total": total, "decisions": found}


def _peek(api: ManagementAPI, call: _Call, vhost: str, name: str) -> list[dict[str, Any]]:
    if name not in api.broker.vhosts[vhost].queues:
        return []
    with api._channel(call, vhost) as channel:
        entries = channel.browse(name).take(CONSOLE_MESSAGES)
        return [{"redelivered": e.redelivered, "routing_key": e.message.routing_key,
                 "payload": e.message.body[:2000].decode("utf-8", "replace"),
                 "payload_bytes": len(e.message.body),
                 "history": [str(event) for event in events_of(e.message.history)]}
                for e in entries]
