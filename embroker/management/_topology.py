"""Exchanges, queues and bindings, publishing and getting messages (``rabbit_mgmt_wm_exchanges``,
``_exchange``, ``_exchange_publish``, ``_queues``, ``_queue``, ``_queue_purge``, ``_queue_get``,
``_queue_actions``, ``_bindings``, ``_binding``): the work goes through a model channel as the
HTTP user (:meth:`ManagementAPI.channel`), with the model's permission checks."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

from ..errors import AMQPError
from ..fieldtypes import Long, Timestamp
from ..model import Returned
from ..model._access import Rule
from . import _listing
from . import _steps as steps
from . import _views as views
from ._http import Response
from ._routes import Call, bad_request, not_found, route
from ._schema import Field, Schema, boolean, integer, json_object, optional, table, text
from ._steps import Steps

if TYPE_CHECKING:
    from ..model import Binding, Queue, VirtualHost
    from ._api import ManagementAPI


# -- exchanges --------------------------------------------------------------------------------------

@route("GET", "exchanges", Rule.VHOST)
@route("GET", "exchanges/{vhost}", Rule.VHOST)
def _exchanges(api: ManagementAPI, call: Call) -> Steps[Response]:
    with api.broker.locked():
        exchanges = [x for vh in api.listed(call) for x in vh.exchanges.values()]
    return (yield from api.listing(call, exchanges, lambda x: views.exchange_info(x, call.user),
                                   locked=True))


@route("GET", "exchanges/{vhost}/{name}", Rule.VHOST)
def _exchange_get(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        exchange = api.vhost(call).exchanges.get(call.params["name"])
        if exchange is None:
            raise not_found()
        info = views.exchange_info(exchange, call.user)
    info.update({"incoming": [], "outgoing": []})
    return dict(sorted(info.items()))


def _type_name(value: Any) -> str:
    """An exchange type's name (a number is its digits: the model says it is no type)."""
    return _routing_key(value)


_EXCHANGE = Schema({"type": Field(_type_name, "direct"), "durable": Field(boolean, False),
                    "auto_delete": Field(boolean, False), "internal": Field(boolean, False),
                    "arguments": Field(table, {})})


@route("PUT", "exchanges/{vhost}/{name}", Rule.VHOST, body=_EXCHANGE)
def _exchange_put(api: ManagementAPI, call: Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    body = call.body
    with api.channel(call, vhost) as channel:
        existed = name in channel.vhost.exchanges
        channel.exchange_declare(name, body["type"], durable=body["durable"],
                                 auto_delete=body["auto_delete"], internal=body["internal"],
                                 arguments=body["arguments"])
    return Response(204 if existed else 201)


@route("DELETE", "exchanges/{vhost}/{name}", Rule.VHOST)
def _exchange_delete(api: ManagementAPI, call: Call) -> Any:
    name = call.params["name"]
    with api.broker.locked():
        vhost = api.vhost(call)
        if name not in vhost.exchanges:
            raise not_found()
        with api.channel(call, vhost.name) as channel:
            channel.exchange_delete(name, if_unused=_listing.truthy(call.request.query.get("if-unused")))
    return Response(204)


def _payload_text(value: Any) -> str:
    if not isinstance(value, str):
        raise bad_request("payload_not_string")
    return value


def _routing_key(value: Any) -> str:
    """(RabbitMQ takes a number as its digits.)"""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise bad_request(["not_a_string", value])
    return value if isinstance(value, str) else str(value)


_PUBLISH = Schema({"routing_key": Field(_routing_key, required=True),
                   "properties": Field(json_object, required=True),
                   "payload": Field(_payload_text, required=True),
                   "payload_encoding": Field(text, required=True)},
                  missing_separator=",\n ")


@route("POST", "exchanges/{vhost}/{name}/publish", Rule.VHOST, body=_PUBLISH)
def _exchange_publish(api: ManagementAPI, call: Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    body = call.body
    encoding, payload = body["payload_encoding"], body["payload"]
    if encoding == "string":
        data = payload.encode("utf-8")
    elif encoding == "base64":
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise bad_request(["not_base64", payload]) from None
    else:
        raise bad_request(["unsupported_encoding", encoding])
    props = _amqp_properties(body["properties"])
    returned: list[object] = []
    with api.channel(call, vhost) as channel:
        channel.listener = returned.append  # basic.return of the mandatory publish
        try:
            # As RabbitMQ's management: mandatory, and routed unless it comes back; any
            # refusal is 400 with the channel's close reason ("404 NOT_FOUND - no exchange").
            channel.basic_publish(name, body["routing_key"], data, props, mandatory=True)
        except AMQPError as error:
            raise bad_request(f"{error.reply_code} {error.reply_text}") from None
    return {"routed": not any(isinstance(event, Returned) for event in returned)}


#: The basic properties a publish may give, and what each must be.
_INT_PROPERTIES = ("delivery_mode", "priority", "timestamp")
_TEXT_PROPERTIES = ("content_type", "content_encoding", "correlation_id", "reply_to",
                    "expiration", "message_id", "type", "user_id", "app_id", "cluster_id")


def _amqp_properties(given: Mapping[str, Any]) -> dict[str, Any]:
    """The basic properties of a publish's ``properties`` (``rabbit_mgmt_format``): an
    integer property must be an integer (``["not_int", "priority"]``; the channel checks its
    value, as ``delivery_mode``'s), ``headers`` an object, the others text; an unknown one is
    ignored, as RabbitMQ ignores it.

    Raises:
        HttpError: 400.
    """
    props: dict[str, Any] = {}
    for key, value in given.items():
        if key in _INT_PROPERTIES:
            if isinstance(value, bool) or not isinstance(value, int):
                raise bad_request(["not_int", key])
            limit = 1 << (64 if key == "timestamp" else 8)
            if not 0 <= value < limit and key != "delivery_mode":
                raise bad_request(["not_int", key])
            props[key] = Timestamp(value) if key == "timestamp" else value
        elif key in _TEXT_PROPERTIES:
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise bad_request(["not_a_string", key])
            props[key] = str(value)
        elif key == "headers":
            if not isinstance(value, dict):
                raise bad_request(["not_a_table", key])
            props[key] = _amqp_table(value)
    return props


def _amqp_table(value: Any) -> Any:
    """JSON as RabbitMQ's management makes it an AMQP table (``rabbit_mgmt_format:
    to_amqp_table``): an integer is a ``long``, whatever its size, and a table's keys are in
    order (a JSON object is an Erlang map there)."""
    if isinstance(value, dict):
        return {str(k): _amqp_table(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_amqp_table(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        if not -(1 << 63) <= value < 1 << 63:
            raise bad_request(["not_int", value])
        return Long(value)
    return value


# -- queues -----------------------------------------------------------------------------------------

@route("GET", "queues", Rule.VHOST)
@route("GET", "queues/{vhost}", Rule.VHOST)
def _queues(api: ManagementAPI, call: Call) -> Steps[Response]:
    """Every queue the user may list (a queue deleted between two steps is left out), each
    one's JSON written in its step from a snapshot read under the lock (with no list option:
    :func:`views.queue_json`, several times faster than ``json.dumps``)."""
    broker = api.broker
    with broker.locked():
        unacked = views.unacked_by_queue(broker.connections.values())
        queues = [q for vh in api.listed(call) for q in vh.queues.values()]
    if any(option in call.request.query for option in _listing.OPTIONS):
        return (yield from api.listing(call, queues, lambda q: views.queue_info(
            q, unacked.get(id(q), (0, 0))), locked=True))
    queues = yield from steps.sort(queues, lambda q: (q.vhost.name, q.name))

    def json_of(queue: Queue) -> bytes | None:
        if queue.deleted:
            return None
        return views.queue_json(views.queue_snapshot(
            queue, unacked.get(id(queue), (0, 0)))).encode()
    parts = yield from steps.each(queues, json_of, broker.locked())
    return api.reply_parts(steps.array_parts([p for p in parts if p is not None]))


@route("GET", "queues/{vhost}/{name}", Rule.VHOST)
def _queue_get(api: ManagementAPI, call: Call) -> Any:
    broker = api.broker
    with broker.locked():
        queue = api.queue(call)
        unacked = views.unacked_by_queue(broker.connections.values())
        info = views.queue_info(queue, unacked.get(id(queue), (0, 0)))
        wire = api.wire()
        details = []
        for consumer in queue.consumers:
            connection = consumer.channel.connection
            name, peer = api.identity(connection, wire)
            details.append(views.consumer_info(consumer, name, peer, connection.user))
    info.update({"consumer_details": details, "deliveries": [], "incoming": []})
    return dict(sorted(info.items()))


_QUEUE = Schema({"durable": Field(boolean, False), "auto_delete": Field(boolean, False),
                 "arguments": Field(table, {}), "type": Field(optional(text))})


@route("PUT", "queues/{vhost}/{name}", Rule.VHOST, body=_QUEUE)
def _queue_put(api: ManagementAPI, call: Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    body = call.body
    arguments = dict(body["arguments"])
    if body["type"] and "x-queue-type" not in arguments:
        arguments["x-queue-type"] = body["type"]
    with api.channel(call, vhost) as channel:
        existed = name in channel.vhost.queues
        channel.queue_declare(name, durable=body["durable"], auto_delete=body["auto_delete"],
                              arguments=arguments)
    return Response(204 if existed else 201)


@route("DELETE", "queues/{vhost}/{name}", Rule.VHOST)
def _queue_delete(api: ManagementAPI, call: Call) -> Any:
    query = call.request.query
    with api.broker.locked():
        queue = api.queue(call)
        with api.channel(call, call.params["vhost"]) as channel:
            channel.queue_delete(queue.name, if_unused=_listing.truthy(query.get("if-unused")),
                                 if_empty=_listing.truthy(query.get("if-empty")))
    return Response(204)


@route("DELETE", "queues/{vhost}/{name}/contents", Rule.VHOST)
def _queue_purge(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        queue = api.queue(call)
        with api.channel(call, call.params["vhost"]) as channel:
            channel.queue_purge(queue.name)
    return Response(204)


def _action(value: Any) -> str:
    if value not in ("sync", "cancel_sync"):
        raise bad_request(["unknown", value])
    return cast("str", value)


@route("POST", "queues/{vhost}/{name}/actions", Rule.ADMIN,
       body=Schema({"action": Field(_action, required=True)}))
def _queue_actions(api: ManagementAPI, call: Call) -> Any:
    """(Mirroring's actions: a queue of embroker has no mirrors to sync.)"""
    with api.broker.locked():
        api.queue(call)
    return Response(204)


def _choice(*allowed: str, reason: str) -> Any:
    def read(value: Any) -> str:
        if value not in allowed:
            raise bad_request(reason.format(value=value))
        return cast("str", value)
    return read


_GET = Schema({
    # (RabbitMQ 3.10.8 fails on another ackmode: 500 without a body)
    "ackmode": Field(_choice("ack_requeue_true", "ack_requeue_false", "reject_requeue_true",
                             "reject_requeue_false", reason="Unsupported ackmode: {value}"),
                     required=True),
    "encoding": Field(_choice("auto", "base64",
                              reason="Unsupported encoding. Please use auto or base64."),
                      required=True),
    "count": Field(integer, 1), "truncate": Field(optional(integer)),
})


@route("POST", "queues/{vhost}/{name}/get", Rule.VHOST, body=_GET)
def _queue_get_messages(api: ManagementAPI, call: Call) -> Any:
    body = call.body
    ackmode, encoding = body["ackmode"], body["encoding"]
    requeue = ackmode.endswith("true")
    found: list[dict[str, Any]] = []
    with api.broker.locked():
        queue = api.queue(call)
        with api.channel(call, call.params["vhost"], whole_reasons=True) as channel:
            tags = []
            for _ in range(max(body["count"], 0)):
                delivery = channel.basic_get(queue.name)
                if delivery is None:
                    break
                tags.append(delivery.delivery_tag)
                found.append(_got(delivery, encoding, body["truncate"]))
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
        body = body[:max(truncate, 0)]
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


@route("GET", "queues/{vhost}/{name}/bindings", Rule.VHOST)
def _queue_bindings(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        queue = api.queue(call)
        host = api.vhost(call)
        return [views.default_binding(host, queue),
                *views.bindings_of(host, queue.bindings.values())]


# -- bindings ---------------------------------------------------------------------------------------

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


_BINDING = Schema({"routing_key": Field(_routing_key, ""), "arguments": Field(table, {})})


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
