"""Definitions, policies, operator policies, limits and parameters (``rabbit_mgmt_wm_definitions``,
``_policies``, ``_policy``, ``_operator_policies``, ``_operator_policy``, ``_limits``,
``_limit``, ``_parameters``, ``_global_parameters``, ``_feature_flags``)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from ..errors import AccessControlError, AMQPError, DefinitionsError, PolicyError
from ..model._access import Rule
from ..model._definitions import export_steps
from ..model._policy import export_parameters
from . import _steps as steps
from ._http import Response
from ._node import cluster_name
from ._routes import Call, bad_request, not_found, route
from ._schema import Field, Schema, anything
from ._steps import Steps

if TYPE_CHECKING:
    from ..model._policy import Policy
    from ._api import ManagementAPI

_VHOST_SECTIONS = ("parameters", "policies", "queues", "exchanges", "bindings")
_DOCUMENT = Schema({}, whole=True)


@route("GET", "definitions", Rule.ADMIN)
def _definitions_get(api: ManagementAPI, call: Call) -> Steps[Response]:
    """The export in steps (the model's, a bounded number of objects each), then its JSON."""
    whole = yield from steps.locked(export_steps(api.broker), api.broker.locked())
    body = yield from steps.document(whole)
    return api.reply_json(body)


@route("POST", "definitions", Rule.ADMIN, body=_DOCUMENT)
def _definitions_post(api: ManagementAPI, call: Call) -> Any:
    _refuse_forms(call)
    return _load(api, call.body, None)


def _refuse_forms(call: Call) -> None:
    content_type = call.request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        raise bad_request("upload the definitions as a JSON body (multipart/form-data is not "
                          "supported by embroker)")


def _load(api: ManagementAPI, document: dict[str, Any], vhost: str | None) -> Any:
    with api.broker.locked():
        try:
            if vhost is None:
                api.broker.load_definitions(document)
            else:
                api.broker.load_definitions(_scoped(document, vhost), vhost=vhost)
        except (DefinitionsError, PolicyError, AccessControlError) as error:
            raise bad_request(str(error)) from None
        except AMQPError as error:
            raise bad_request(error.text) from None
    return Response(204)


def _scoped(document: dict[str, Any], vhost: str) -> dict[str, Any]:
    """A vhost's definitions with each item's ``vhost`` set to the path's."""
    scoped: dict[str, Any] = {}
    for section in _VHOST_SECTIONS:
        items = document.get(section) or []
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise bad_request(f"'{section}' must be a list of objects")
        scoped[section] = [{**item, "vhost": vhost} for item in items]
    return scoped


@route("GET", "definitions/{vhost}", Rule.ADMIN)
def _definitions_vhost_get(api: ManagementAPI, call: Call) -> Steps[Any]:
    with api.broker.locked():
        vhost = api.vhost(call).name
    whole = yield from steps.locked(export_steps(api.broker), api.broker.locked())
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


@route("POST", "definitions/{vhost}", Rule.ADMIN, body=_DOCUMENT)
def _definitions_vhost_post(api: ManagementAPI, call: Call) -> Any:
    _refuse_forms(call)
    with api.broker.locked():
        vhost = api.vhost(call).name
    return _load(api, call.body, vhost)


# -- policies and operator policies -----------------------------------------------------------

def _policy_json(policy: Policy) -> dict[str, Any]:
    return {"vhost": policy.vhost, "name": policy.name, "pattern": policy.pattern,
            "apply-to": policy.apply_to, "definition": dict(policy.definition),
            "priority": policy.priority}


def _table(api: ManagementAPI, vhost: str, operator: bool) -> dict[str, Policy]:
    policies = api.broker.vhosts[vhost].policies
    return policies.operator_policies if operator else policies.policies


def _policy_list(api: ManagementAPI, call: Call, operator: bool) -> Any:
    with api.broker.locked():
        items = [_policy_json(p) for vhost in api.listed(call)
                 for p in _table(api, vhost.name, operator).values()]
    return api.listing(call, items)


def _policy_get(api: ManagementAPI, call: Call, operator: bool) -> Any:
    with api.broker.locked():
        policy = _table(api, api.vhost(call).name, operator).get(call.params["name"])
        if policy is None:
            raise not_found()
        return _policy_json(policy)


_POLICY = Schema({"pattern": Field(anything, required=True),
                  "definition": Field(anything, required=True),
                  "priority": Field(anything, 0), "apply-to": Field(anything, "all")})


def _policy_put(api: ManagementAPI, call: Call, operator: bool) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    body = call.body
    broker = api.broker
    with broker.locked():
        existed = name in _table(api, api.vhost(call).name, operator)
        setter = broker.set_operator_policy if operator else broker.set_policy
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                setter(name, body["pattern"], body["definition"], priority=body["priority"],
                       apply_to=body["apply-to"], vhost=vhost)
        except PolicyError as error:
            raise bad_request(_escaped(str(error)) + "\n") from None
    return Response(204 if existed else 201)


def _escaped(text: str) -> str:
    """As RabbitMQ's management writes a validation error: HTML-escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _policy_delete(api: ManagementAPI, call: Call, operator: bool) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    with api.broker.locked():
        api.vhost(call)
        try:
            if operator:
                api.broker.clear_operator_policy(name, vhost=vhost)
            else:
                api.broker.clear_policy(name, vhost=vhost)
        except PolicyError:
            raise not_found() from None
    return Response(204)


def _register_policies(path: str, operator: bool, rule: Rule) -> None:
    """The routes of ``policies`` (policymakers) or ``operator-policies`` (administrators)."""
    def listing(api: ManagementAPI, call: Call) -> Any:
        return _policy_list(api, call, operator)

    def get(api: ManagementAPI, call: Call) -> Any:
        return _policy_get(api, call, operator)

    def put(api: ManagementAPI, call: Call) -> Any:
        return _policy_put(api, call, operator)

    def delete(api: ManagementAPI, call: Call) -> Any:
        return _policy_delete(api, call, operator)
    route("GET", path, Rule.VHOST)(listing)
    route("GET", f"{path}/{{vhost}}", Rule.VHOST)(listing)
    route("GET", f"{path}/{{vhost}}/{{name}}", rule)(get)
    route("PUT", f"{path}/{{vhost}}/{{name}}", rule, body=_POLICY)(put)
    route("DELETE", f"{path}/{{vhost}}/{{name}}", rule)(delete)


_register_policies("policies", False, Rule.POLICIES)
_register_policies("operator-policies", True, Rule.ADMIN)


# -- limits, parameters, feature flags --------------------------------------------------------

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
