"""Parameters, global parameters, feature flags and vhost limits (``rabbit_mgmt_wm_parameters``,
``_global_parameters``, ``_feature_flags``, ``_limits``, ``_limit``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import PolicyError
from ..model._access import Rule
from ..model._policy import export_parameters
from ._http import Response
from ._node import cluster_name
from ._routes import Call, bad_request, not_found, route
from ._schema import Field, Schema, anything

if TYPE_CHECKING:
    from ._api import ManagementAPI


@route("GET", "vhost-limits", Rule.VHOST_VISIBLE)
@route("GET", "vhost-limits/{vhost}", Rule.VHOST_VISIBLE)
def _vhost_limits(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        if "vhost" in call.params:
            names = [api.vhost(call).name]
        else:
            names = api.visible(call)
        return [{"vhost": name, "value": dict(api.broker.vhosts[name].policies.limits)}
                for name in names if api.broker.vhosts[name].policies.limits]


@route("PUT", "vhost-limits/{vhost}/{limit}", Rule.ADMIN,
       body=Schema({"value": Field(anything, required=True)}))
def _vhost_limit_put(api: ManagementAPI, call: Call) -> Any:
    limit = call.params["limit"]
    with api.broker.locked():
        vhost = api.vhost(call)
        limits = {**vhost.policies.limits, limit: call.body["value"]}
        try:
            api.broker.set_vhost_limits(limits, vhost=vhost.name)
        except PolicyError as error:  # (RabbitMQ's text ends with a new line, not escaped)
            raise bad_request(str(error) + "\n") from None
    return Response(204)


@route("DELETE", "vhost-limits/{vhost}/{limit}", Rule.ADMIN)
def _vhost_limit_delete(api: ManagementAPI, call: Call) -> Any:
    limit = call.params["limit"]
    with api.broker.locked():
        vhost = api.vhost(call)
        limits = dict(vhost.policies.limits)
        if limit not in limits:
            raise not_found()
        del limits[limit]
        api.broker.set_vhost_limits(limits, vhost=vhost.name)
    return Response(204)


@route("GET", "parameters", Rule.POLICIES)
@route("GET", "parameters/{component}", Rule.POLICIES)
@route("GET", "parameters/{component}/{vhost}", Rule.POLICIES)
def _parameters(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        found = export_parameters(api.broker)
        shown = {vhost.name for vhost in api.listed(call)}
    component = call.params.get("component")
    return [p for p in found if (component is None or p["component"] == component)
            and p["vhost"] in shown]


@route("GET", "global-parameters", Rule.GLOBAL_PARAMETERS)
def _global_parameters(api: ManagementAPI, call: Call) -> Any:
    return [{"name": "cluster_name", "value": cluster_name(api)}]


@route("GET", "feature-flags", Rule.ADMIN)
def _feature_flags(api: ManagementAPI, call: Call) -> Any:
    return []
