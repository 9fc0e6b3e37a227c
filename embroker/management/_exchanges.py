"""Exchanges, and publishing to one (``rabbit_mgmt_wm_exchanges``, ``_exchange``,
``_exchange_publish``): the work goes through a model channel as the HTTP user
(:meth:`ManagementAPI.channel`), with the model's permission checks."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import AMQPError
from ..fieldtypes import Long, Timestamp
from ..model._access import Rule
from . import _listing, views
from ._http import Response
from ._routes import Call, bad_request, not_found, route
from ._schema import Field, Schema, boolean, json_object, table, text, text_or_number
from ._steps import Steps

if TYPE_CHECKING:
    from ._api import ManagementAPI


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
    return text_or_number(value)


_EXCHANGE = Schema({"type": Field(_type_name, "direct"), "durable": Field(boolean, False),
                    "auto_delete": Field(boolean, False), "internal": Field(boolean, False),
                    "arguments": Field(table, {})})


@route("PUT", "exchanges/{vhost}/{name}", Rule.VHOST, body=_EXCHANGE)
def _exchange_put(api: ManagementAPI, call: Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    body = call.body
    with api.channel(call, vhost) as channel:
        created = channel.exchange_declare(
            name, body["type"], durable=body["durable"], auto_delete=body["auto_delete"],
            internal=body["internal"], arguments=body["arguments"])
    return Response(201 if created else 204)


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


_PUBLISH = Schema({"routing_key": Field(text_or_number, required=True),
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
    with api.channel(call, vhost) as channel:
        try:
            # As RabbitMQ's management: mandatory, and routed unless it comes back; any
            # refusal is 400 with the channel's close reason ("404 NOT_FOUND - no exchange").
            published = channel.basic_publish(name, body["routing_key"], data, props,
                                              mandatory=True)
        except AMQPError as error:
            raise bad_request(f"{error.reply_code} {error.reply_text}") from None
    return {"routed": not published.returned}


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

