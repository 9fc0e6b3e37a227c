"""Policies and operator policies (``rabbit_mgmt_wm_policies``, ``_policy``,
``_operator_policies``, ``_operator_policy``): a vhost's users list them, policymakers change
policies, administrators operator policies."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from ..errors import PolicyError
from ..model._access import Rule
from ._http import Response
from ._routes import Call, bad_request, not_found, route
from ._schema import Field, Schema, anything

if TYPE_CHECKING:
    from ..model._policy import Policy
    from ._api import ManagementAPI


def _policy_json(policy: Policy) -> dict[str, Any]:
    return {"vhost": policy.vhost, "name": policy.name, "pattern": policy.pattern,
            "apply-to": policy.apply_to, "definition": dict(policy.definition),
            "priority": policy.priority}


def _operator(call: Call) -> bool:
    """Whether the path is an operator policy's (``/api/operator-policies/...``)."""
    return call.request.segments[1] == "operator-policies"


def _table(api: ManagementAPI, vhost: str, call: Call) -> dict[str, Policy]:
    policies = api.broker.vhosts[vhost].policies
    return policies.operator_policies if _operator(call) else policies.policies


@route("GET", "policies", Rule.VHOST)
@route("GET", "policies/{vhost}", Rule.VHOST)
@route("GET", "operator-policies", Rule.VHOST)
@route("GET", "operator-policies/{vhost}", Rule.VHOST)
def _policy_list(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        items = [_policy_json(p) for vhost in api.listed(call)
                 for p in _table(api, vhost.name, call).values()]
    return api.listing(call, items)


@route("GET", "policies/{vhost}/{name}", Rule.POLICIES)
@route("GET", "operator-policies/{vhost}/{name}", Rule.ADMIN)
def _policy_get(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        policy = _table(api, api.vhost(call).name, call).get(call.params["name"])
        if policy is None:
            raise not_found()
        return _policy_json(policy)


_POLICY = Schema({"pattern": Field(anything, required=True),
                  "definition": Field(anything, required=True),
                  "priority": Field(anything, 0), "apply-to": Field(anything, "all")})


@route("PUT", "policies/{vhost}/{name}", Rule.POLICIES, body=_POLICY)
@route("PUT", "operator-policies/{vhost}/{name}", Rule.ADMIN, body=_POLICY)
def _policy_put(api: ManagementAPI, call: Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    body = call.body
    broker = api.broker
    with broker.locked():
        existed = name in _table(api, api.vhost(call).name, call)
        setter = broker.set_operator_policy if _operator(call) else broker.set_policy
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


@route("DELETE", "policies/{vhost}/{name}", Rule.POLICIES)
@route("DELETE", "operator-policies/{vhost}/{name}", Rule.ADMIN)
def _policy_delete(api: ManagementAPI, call: Call) -> Any:
    vhost, name = call.params["vhost"], call.params["name"]
    with api.broker.locked():
        api.vhost(call)
        try:
            if _operator(call):
                api.broker.clear_operator_policy(name, vhost=vhost)
            else:
                api.broker.clear_policy(name, vhost=vhost)
        except PolicyError:
            raise not_found() from None
    return Response(204)
