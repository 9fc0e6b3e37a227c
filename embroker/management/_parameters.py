"""Parameters, global parameters, feature flags and vhost limits (``rabbit_mgmt_wm_parameters``,
``_parameter``, ``_global_parameters``, ``_global_parameter``, ``_feature_flags``,
``_feature_flag_enable``, ``_limits``, ``_limit``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import PolicyError
from ..model._access import Rule
from . import views
from ._http import Response
from ._routes import Call, HttpError, bad_request, not_found, route
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
    """The vhost parameters (policies only when the path names their component), of the
    vhosts the user is shown."""
    with api.broker.locked():
        shown = [vhost.name for vhost in api.listed(call)]
        found = api.broker.parameters(call.params.get("component"))
    return [p for p in found if p["vhost"] in shown]


@route("GET", "parameters/{component}/{vhost}/{name}", Rule.POLICIES)
def _parameter(api: ManagementAPI, call: Call) -> Any:
    found = api.broker.parameter(call.params["component"], call.params["name"],
                                 vhost=call.params["vhost"])
    if found is None:
        raise not_found()
    return found


_VALUE = Schema({"value": Field(anything, required=True)})


@route("PUT", "parameters/{component}/{vhost}/{name}", Rule.POLICIES, body=_VALUE)
def _parameter_put(api: ManagementAPI, call: Call) -> Any:
    """Set a vhost parameter (rabbit_mgmt_wm_parameter): RabbitMQ's validation error for a
    component embroker does not have (a RabbitMQ without the federation and shovel plugins
    answers the same)."""
    component, name = call.params["component"], call.params["name"]
    with api.broker.locked():
        if call.params["vhost"] not in api.broker.vhosts:
            raise HttpError(404, "not_found", "vhost_not_found")
        vhost = api.vhost(call).name
        existed = api.broker.parameter(component, name, vhost=vhost) is not None
        try:
            api.broker.set_parameter(component, name, call.body["value"], vhost=vhost)
        except PolicyError as error:
            raise bad_request(refusal(error)) from None
    return Response(204 if existed else 201)


@route("DELETE", "parameters/{component}/{vhost}/{name}", Rule.POLICIES)
def _parameter_delete(api: ManagementAPI, call: Call) -> Any:
    """Clear a vhost parameter; a policy is cleared as a policy (RabbitMQ fails here with a
    500: embroker says why)."""
    component, name = call.params["component"], call.params["name"]
    with api.broker.locked():
        if api.broker.parameter(component, name, vhost=call.params["vhost"]) is None:
            raise not_found()
        try:
            api.broker.clear_parameter(component, name, vhost=call.params["vhost"])
        except PolicyError as error:
            raise bad_request(refusal(error)) from None
    return Response(204)


def refusal(error: PolicyError) -> str:
    """A refused runtime parameter as RabbitMQ's management answers it: HTML-escaped, and a
    validation failure (``Validation failed``, its reasons) ending with a new line."""
    text = str(error)
    if error.reason != text:  # (a validation failure)
        text += "\n"
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@route("GET", "global-parameters", Rule.GLOBAL_PARAMETERS)
def _global_parameters(api: ManagementAPI, call: Call) -> Any:
    return [{"name": name, "value": value}
            for name, value in api.broker.global_parameters().items()]


@route("GET", "global-parameters/{name}", Rule.GLOBAL_PARAMETERS)
def _global_parameter(api: ManagementAPI, call: Call) -> Any:
    name = call.params["name"]
    found = api.broker.global_parameters()
    if name not in found:
        raise not_found()
    return {"name": name, "value": found[name]}


@route("PUT", "global-parameters/{name}", Rule.GLOBAL_PARAMETERS, body=_VALUE)
def _global_parameter_put(api: ManagementAPI, call: Call) -> Any:
    name = call.params["name"]
    with api.broker.locked():
        existed = name in api.broker.global_parameters()
        try:
            api.broker.set_global_parameter(name, call.body["value"])
        except PolicyError as error:
            raise bad_request(str(error)) from None
    return Response(204 if existed else 201)


@route("DELETE", "global-parameters/{name}", Rule.GLOBAL_PARAMETERS)
def _global_parameter_delete(api: ManagementAPI, call: Call) -> Any:
    try:
        api.broker.clear_global_parameter(call.params["name"])
    except PolicyError:
        raise not_found() from None
    return Response(204)


@route("GET", "feature-flags", Rule.ADMIN)
def _feature_flags(api: ManagementAPI, call: Call) -> Any:
    return views.feature_flags()


@route("PUT", "feature-flags/{name}/enable", Rule.ADMIN)
def _feature_flag_enable(api: ManagementAPI, call: Call) -> Any:
    """rabbit_mgmt_wm_feature_flag_enable: every flag embroker knows is enabled already (204,
    as RabbitMQ answers for one that is); another is ``unsupported``."""
    if call.params["name"] not in {flag["name"] for flag in views.feature_flags()}:
        raise bad_request("unsupported")
    return Response(204)
