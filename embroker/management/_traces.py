"""The tracing plugin's traces and their log files (``rabbit_tracing_wm_traces``, ``_trace``,
``_files``, ``_file``): administrators only. The traces themselves are :mod:`._tracing`'s."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..model._access import Rule
from . import views
from ._http import BODY_SLICE, Response
from ._routes import Call, bad_request, not_found, route
from ._schema import ABSENT, Field, Schema, anything
from ._steps import Steps
from ._tracing import TracingError

if TYPE_CHECKING:
    from ._api import ManagementAPI

_TRACE = Schema({"format": Field(anything, required=True),
                 "pattern": Field(anything, required=True),
                 "max_payload_bytes": Field(anything, ABSENT),
                 "tracer_connection_username": Field(anything, ABSENT),
                 "tracer_connection_password": Field(anything, ABSENT)})


def _node_param(api: ManagementAPI, call: Call) -> None:
    node = call.params.get("node")
    if node is not None and node != api.node.name:
        raise not_found()


@route("GET", "traces", Rule.ADMIN)
@route("GET", "traces/{vhost}", Rule.ADMIN)
@route("GET", "traces/node/{node}", Rule.ADMIN)
@route("GET", "traces/node/{node}/{vhost}", Rule.ADMIN)
def _traces(api: ManagementAPI, call: Call) -> Any:
    """Every trace, whatever the vhost in the path (as RabbitMQ 3.10's rabbit_tracing_wm_traces,
    which does not read it)."""
    _node_param(api, call)
    with api.broker.locked():
        return [_trace_info(api, trace) for trace in api.tracing.listed()]


def _trace_info(api: ManagementAPI, trace: Any) -> dict[str, Any]:
    queue = api.broker.vhosts[trace.vhost].queues.get(trace.queue)
    info = None
    if queue is not None:
        info = views.queue_info(queue)
        info.pop("owner_pid_details", None)  # as RabbitMQ's strip_pids
    return cast("dict[str, Any]", trace.info(info))


@route("GET", "traces/{vhost}/{name}", Rule.ADMIN)
@route("GET", "traces/node/{node}/{vhost}/{name}", Rule.ADMIN)
def _trace_get(api: ManagementAPI, call: Call) -> Any:
    _node_param(api, call)
    with api.broker.locked():
        trace = api.tracing.get(call.params["vhost"], call.params["name"])
        if trace is None:
            raise not_found()
        return _trace_info(api, trace)


@route("PUT", "traces/{vhost}/{name}", Rule.ADMIN, body=_TRACE)
@route("PUT", "traces/node/{node}/{vhost}/{name}", Rule.ADMIN, body=_TRACE)
def _trace_put(api: ManagementAPI, call: Call) -> Any:
    _node_param(api, call)
    body = call.body
    payload = body.get("max_payload_bytes", 0)
    if not isinstance(payload, int) or isinstance(payload, bool):
        raise bad_request("max_payload_bytes not integer")
    if body["format"] not in ("json", "text"):
        raise bad_request("format not json or text")
    vhost, name = call.params["vhost"], call.params["name"]
    with api.broker.locked():
        if vhost not in api.broker.vhosts:
            raise not_found()
        try:
            api.tracing.create(vhost, name, body)
        except TracingError as error:
            raise bad_request(str(error)) from None
    return Response(201)


@route("DELETE", "traces/{vhost}/{name}", Rule.ADMIN)
@route("DELETE", "traces/node/{node}/{vhost}/{name}", Rule.ADMIN)
def _trace_delete(api: ManagementAPI, call: Call) -> Any:
    _node_param(api, call)
    with api.broker.locked():
        if api.tracing.get(call.params["vhost"], call.params["name"]) is None:
            raise not_found()
        api.tracing.delete(call.params["vhost"], call.params["name"])
    return Response(204)


@route("GET", "trace-files", Rule.ADMIN)
@route("GET", "trace-files/node/{node}", Rule.ADMIN)
def _trace_files(api: ManagementAPI, call: Call) -> Any:
    _node_param(api, call)
    with api.broker.locked():
        return api.tracing.files()


@route("GET", "trace-files/{name}", Rule.ADMIN)
@route("GET", "trace-files/node/{node}/{name}", Rule.ADMIN)
def _trace_file(api: ManagementAPI, call: Call) -> Steps[Response]:
    """The log read a slice a step, the broker's lock not held (a log grows without bound)."""
    path = _trace_path(api, call)
    parts = []
    with path.open("rb") as log:
        while part := log.read(BODY_SLICE):
            parts.append(part)
            yield
    return Response(200, headers=[("content-type", "text/plain")], parts=parts)


@route("DELETE", "trace-files/{name}", Rule.ADMIN)
@route("DELETE", "trace-files/node/{node}/{name}", Rule.ADMIN)
def _trace_file_delete(api: ManagementAPI, call: Call) -> Any:
    _trace_path(api, call).unlink(missing_ok=True)
    return Response(204)


def _trace_path(api: ManagementAPI, call: Call) -> Path:
    """The log file the request names (404 if none), found under the lock, used outside it."""
    _node_param(api, call)
    with api.broker.locked():
        path = api.tracing.file(call.params["name"])
    if path is None:
        raise not_found()
    return path
