"""Bindings: of a vhost, of an exchange (as source or destination), of a queue, and between two
(``rabbit_mgmt_wm_bindings``, ``_binding``): the work goes through a model channel as the HTTP
user (:meth:`ManagementAPI.channel`), with the model's permission checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

from ..model._access import Rule
from . import views
from ._http import Response
from ._routes import Call, not_found, route
from ._schema import Field, Schema, table, text_or_number
from ._steps import Steps

if TYPE_CHECKING:
    from ..model import Binding, Queue, VirtualHost
    from ._api import ManagementAPI


@route("GET", "bindings", Rule.VHOST)
@route("GET", "bindings/{vhost}", Rule.VHOST)
def _bindings(api: ManagementAPI, call: Call) -> Steps[Response]:
    lock = api.broker.locked()
    with lock:  # each vhost's: its queues' default bindings, then its exchanges' bindings
        rows: list[tuple[VirtualHost, Binding]] = []
        for vh in api.listed(call):
            rows += [(vh, q.default_binding) for q in vh.queues.values()]
            rows += [(vh, b) for x in vh.exchanges.values() if x.name
                     for b in x.bindings.values()]
    return (yield from api.listing(call, rows, _binding_row, locked=True))


def _binding_row(row: tuple[VirtualHost, Binding]) -> dict[str, Any]:
    return views.bindings_of(row[0], (row[1],))[0]


@route("GET", "exchanges/{vhost}/{name}/bindings/source", Rule.VHOST)
def _exchange_bindings_source(api: ManagementAPI, call: Call) -> Any:
    name = call.params["name"]
    with api.broker.locked():
        host = api.vhost(call)
        exchange = host.exchanges.get(name)
        if exchange is None:
            raise not_found()
        if name == "":
            return [views.default_binding(host, q) for q in host.queues.values()]
        return views.bindings_of(host, exchange.bindings.values())


@route("GET", "exchanges/{vhost}/{name}/bindings/destination", Rule.VHOST)
def _exchange_bindings_destination(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        host = api.vhost(call)
        exchange = host.exchanges.get(call.params["name"])
        if exchange is None:
            raise not_found()
        return views.bindings_of(host, exchange.incoming.values())


@route("GET", "queues/{vhost}/{name}/bindings", Rule.VHOST)
def _queue_bindings(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        queue = api.queue(call)
        host = api.vhost(call)
        return [views.default_binding(host, queue),
                *views.bindings_of(host, queue.bindings.values())]


def _kind(letter: str) -> str:
    if letter == "q":
        return "queue"
    if letter == "e":
        return "exchange"
    raise not_found()


def _between(api: ManagementAPI, call: Call) -> list[dict[str, Any]]:
    host = api.vhost(call)
    source, kind = call.params["source"], _kind(call.params["kind"])
    destination = call.params["destination"]
    exchange = host.exchanges.get(source)
    target = (host.queues if kind == "queue" else host.exchanges).get(destination)
    if exchange is None or target is None:
        raise not_found()
    if source:
        found = [b for b in exchange.bindings.values() if b.destination is target]
    else:
        found = [cast("Queue", target).default_binding] if kind == "queue" else []
    return views.bindings_of(host, found)


@route("GET", "bindings/{vhost}/e/{source}/{kind}/{destination}", Rule.VHOST)
def _bindings_between(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        return _between(api, call)


_BINDING = Schema({"routing_key": Field(text_or_number, ""), "arguments": Field(table, {})})


@route("POST", "bindings/{vhost}/e/{source}/{kind}/{destination}", Rule.VHOST, body=_BINDING)
def _binding_post(api: ManagementAPI, call: Call) -> Any:
    vhost, source = call.params["vhost"], call.params["source"]
    kind, destination = _kind(call.params["kind"]), call.params["destination"]
    routing_key, arguments = call.body["routing_key"], call.body["arguments"]
    with api.channel(call, vhost) as channel:
        if kind == "queue":
            channel.queue_bind(destination, source, routing_key, arguments)
        else:
            channel.exchange_bind(destination, source, routing_key, arguments)
    location = quote(views.properties_key(routing_key, arguments), safe="")
    return Response(201, b"", [("location", f"{quote(destination, safe='')}/{location}")])


@route("GET", "bindings/{vhost}/e/{source}/{kind}/{destination}/{props}", Rule.VHOST)
def _binding_get(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        for binding in _between(api, call):
            if binding["properties_key"] == call.params["props"]:
                return binding
    raise not_found()


@route("DELETE", "bindings/{vhost}/e/{source}/{kind}/{destination}/{props}", Rule.VHOST)
def _binding_delete(api: ManagementAPI, call: Call) -> Any:
    vhost, source = call.params["vhost"], call.params["source"]
    kind, destination = _kind(call.params["kind"]), call.params["destination"]
    with api.broker.locked():
        match = next((b for b in _between(api, call)
                      if b["properties_key"] == call.params["props"]), None)
        if match is None:
            raise not_found()
        arguments = _arguments_of(api.broker.vhosts[vhost], source, destination, match)
        with api.channel(call, vhost) as channel:
            if kind == "queue":
                channel.queue_unbind(destination, source, match["routing_key"], arguments)
            else:
                channel.exchange_unbind(destination, source, match["routing_key"], arguments)
    return Response(204)


def _arguments_of(host: VirtualHost, source: str, destination: str,
                  match: Mapping[str, Any]) -> dict[str, Any]:
    # The binding's own arguments (typed as the model keeps them), found again by its key.
    for binding in host.exchanges[source].bindings.values():
        if binding.destination.name == destination and views.properties_key(
                binding.routing_key, binding.arguments) == match["properties_key"]:
            return dict(binding.arguments)
    return {}
