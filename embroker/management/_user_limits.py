"""Users' limits (``rabbit_mgmt_wm_user_limits``, ``rabbit_mgmt_wm_user_limit``, RabbitMQ
3.10.8): listed by anyone who sees a vhost, every user's (``is_authorized_vhost_visible``), set
and cleared by administrators. The model validates and enforces them
(:meth:`~embroker.model.Broker.set_user_limits`); this module only reads the request and turns
the model's refusal into RabbitMQ's 400."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import AccessControlError
from ..model._access import Rule
from ._http import Response
from ._routes import Call, bad_request, not_found, route
from ._schema import Field, Schema, anything

if TYPE_CHECKING:
    from ._api import ManagementAPI


@route("GET", "user-limits", Rule.VHOST_VISIBLE)
@route("GET", "user-limits/{user}", Rule.VHOST_VISIBLE)
def _user_limits(api: ManagementAPI, call: Call) -> Any:
    name = call.params.get("user")
    with api.broker.locked():
        if name is not None and name not in api.broker.access.users:
            raise not_found()  # (resource_exists: the user)
        limits = api.broker.user_limits(name)
    return [{"user": user, "value": value} for user, value in limits.items()]


@route("PUT", "user-limits/{user}/{limit}", Rule.ADMIN,
       body=Schema({"value": Field(anything, required=True)}))
def _user_limit_put(api: ManagementAPI, call: Call) -> Any:
    name = call.params["user"]
    with api.broker.locked():
        if name not in api.broker.access.users:  # (update_user's {no_such_user, Name})
            raise bad_request(["no_such_user", name])
        try:
            api.broker.set_user_limits(name, {call.params["limit"]: call.body["value"]})
        except AccessControlError as error:
            raise bad_request(str(error)) from None
    return Response(204)


@route("DELETE", "user-limits/{user}/{limit}", Rule.ADMIN)
def _user_limit_delete(api: ManagementAPI, call: Call) -> Any:
    name = call.params["user"]
    with api.broker.locked():
        if name not in api.broker.access.users:
            raise bad_request(["no_such_user", name])
        api.broker.clear_user_limits(name, call.params["limit"])
    return Response(204)
