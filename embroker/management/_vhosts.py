"""Virtual hosts (``rabbit_mgmt_wm_vhosts``, ``_vhost``, ``_vhost_restart``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..model import _definitions
from ..model._access import Rule
from . import _samples, views
from . import _steps as steps
from ._http import Response
from ._routes import Call, route
from ._schema import Field, Schema, boolean, text, text_or_list
from ._steps import Steps

if TYPE_CHECKING:
    from ._api import ManagementAPI


@route("GET", "vhosts", Rule.ANY)
def _vhosts(api: ManagementAPI, call: Call) -> Steps[Response]:
    broker = api.broker
    lock = broker.locked()
    with lock:
        unacked = views.unacked_by_queue(broker.connections.values())
        names = api.visible(call)
        ranges = _samples.asked(call, broker)
    asked = ranges if ranges != _samples.NO_RANGES else None
    rows = yield from steps.each(names, lambda name: _info(api, name, unacked, asked)
                                 if name in broker.vhosts else None, lock)
    return (yield from api.listing(call, [row for row in rows if row is not None]))  # (few)


def _info(api: ManagementAPI, name: str, unacked: dict[int, tuple[int, int]],
          ranges: _samples.Ranges | None = None) -> dict[str, Any]:
    broker = api.broker
    vhost = broker.vhosts[name]
    if ranges is None:
        return views.vhost_info(vhost, _definitions.vhost_metadata(broker, name), vhost.tracing,
                                unacked)
    lengths, msg_rates, data_rates = api.sampler.histories(
        [vhost], ranges.lengths, ranges.msg_rates, ranges.data_rates)
    return views.vhost_info(vhost, _definitions.vhost_metadata(broker, name), vhost.tracing,
                            unacked, lengths=lengths, msg_rates=msg_rates,
                            data_rates=data_rates)


@route("GET", "vhosts/{vhost}", Rule.ADMIN)
def _vhost_get(api: ManagementAPI, call: Call) -> Any:
    broker = api.broker
    with broker.locked():
        name = api.vhost(call).name
        return _info(api, name, views.unacked_by_queue(broker.connections.values()),
                     _samples.asked(call, broker))


def _description(value: Any) -> str:
    """(RabbitMQ keeps a number as it is; embroker keeps its text.)"""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return text(value)


_VHOST = Schema({"description": Field(_description, ""), "tags": Field(text_or_list, []),
                 "tracing": Field(boolean, False)})


@route("PUT", "vhosts/{vhost}", Rule.ADMIN, body=_VHOST)
def _vhost_put(api: ManagementAPI, call: Call) -> Any:
    name = call.params["vhost"]
    broker = api.broker
    with broker.locked():
        existed = name in broker.vhosts
        vhost = broker.add_vhost(name, created_by=call.user)
        # As RabbitMQ: a PUT sets what it says and resets the rest (description, tags,
        # tracing).
        vhost.tracing = call.body["tracing"]
        _definitions.set_vhost_metadata(broker, name, {"description": call.body["description"],
                                                       "tags": call.body["tags"]})
    return Response(204 if existed else 201)


@route("DELETE", "vhosts/{vhost}", Rule.ADMIN)
def _vhost_delete(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        api.broker.delete_vhost(api.vhost(call).name)
    return Response(204)


@route("POST", "vhosts/{vhost}/start/{node}", Rule.ADMIN)
def _vhost_start(api: ManagementAPI, call: Call) -> Any:
    """(A vhost of embroker never stops: starting one that exists does nothing.)"""
    with api.broker.locked():
        api.vhost(call)
    return Response(204)
