"""Queues: listing, declaring, deleting, purging, getting messages and mirroring's actions
(``rabbit_mgmt_wm_queues``, ``_queue``, ``_queue_purge``, ``_queue_get``, ``_queue_actions``):
the work goes through a model channel as the HTTP user (:meth:`ManagementAPI.channel`), with
the model's permission checks."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, cast

from .._untrusted import json_bytes
from ..model._access import Rule
from . import _listing, _samples, views
from . import _steps as steps
from ._http import Response
from ._routes import Call, bad_request, not_found, route
from ._schema import Field, Schema, boolean, integer, optional, table, text
from ._steps import Steps

if TYPE_CHECKING:
    from ..model import Queue
    from ._api import ManagementAPI


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
        ranges = _samples.asked(call, broker, ceil_lengths=True)
    if ranges != _samples.NO_RANGES:  # (each queue's history: rabbit_mgmt_wm_queues)
        return (yield from api.listing(call, queues, lambda q: _with_history(
            api, q, unacked.get(id(q), (0, 0)), ranges), locked=True))
    if any(option in call.request.query for option in _listing.OPTIONS):
        return (yield from api.listing(call, queues, lambda q: views.queue_info(
            q, unacked.get(id(q), (0, 0))), locked=True))
    queues = yield from steps.sort(queues, lambda q: (q.vhost.name, q.name))

    def json_of(queue: Queue) -> bytes | None:
        if queue.deleted:
            return None
        return json_bytes(views.queue_json(views.queue_snapshot(
            queue, unacked.get(id(queue), (0, 0)))))
    parts = yield from steps.each(queues, json_of, broker.locked())
    return api.reply_parts(steps.array_parts([p for p in parts if p is not None]))


@route("GET", "queues/{vhost}/{name}", Rule.VHOST)
def _queue_get(api: ManagementAPI, call: Call) -> Any:
    """One queue; one whose home node is stopped has no statistics to show and is not found
    (checked live on a 3-node RabbitMQ 3.10.8: the listing names it, down, and this is 404)."""
    broker = api.broker
    with broker.locked():
        queue = api.queue(call)
        if queue.down:
            raise not_found()
        unacked = views.unacked_by_queue(broker.connections.values())
        # (rabbit_mgmt_wm_queue: range_ceil, the lengths' range ends at or after now)
        ranges = _samples.asked(call, broker, ceil_lengths=True)
        info = _with_history(api, queue, unacked.get(id(queue), (0, 0)), ranges)
        wire = api.wire()
        details = []
        for consumer in queue.consumers:
            connection = consumer.channel.connection
            name, peer = api.identity(connection, wire)
            details.append(views.consumer_info(consumer, name, peer, connection.user))
    info.update({"consumer_details": details, "deliveries": [], "incoming": []})
    return dict(sorted(info.items()))


def _with_history(api: ManagementAPI, queue: Queue, unacked: tuple[int, int],
                  ranges: _samples.Ranges) -> dict[str, Any]:
    """:func:`views.queue_info` with the queue's history for ``ranges`` (under the lock)."""
    lengths, msg_rates, data_rates = api.sampler.histories(
        [queue], ranges.lengths, ranges.msg_rates, ranges.data_rates)
    return views.queue_info(queue, unacked, lengths=lengths, msg_rates=msg_rates,
                            data_rates=data_rates)


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
        declared = channel.queue_declare(name, durable=body["durable"],
                                         auto_delete=body["auto_delete"], arguments=arguments)
    return Response(201 if declared.created else 204)


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
            # (rabbit_mgmt_format:amqp_props: a proplist, which is [] when empty)
            "properties": _properties(delivery.message.properties)
            if delivery.message.properties else [],
            "payload": payload, "payload_encoding": payload_encoding}



def _properties(properties: dict[str, Any]) -> dict[str, Any]:
    """A message's properties as RabbitMQ's /get shows them (``rabbit_mgmt_format:
    basic_properties``): the headers as a table (``amqp_table``: a value that is no UTF-8 as
    ``"Not UTF-8, base64 is: ..."``), the other properties as they are (a string's bytes that
    are no UTF-8 become U+FFFD as the JSON is written, as jsx writes them)."""
    return {name: value if isinstance(value, str) else views.json_value(value)
            for name, value in properties.items()}
