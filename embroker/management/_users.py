"""Users (``rabbit_mgmt_wm_users``, ``_user``, ``_users_bulk_delete``): administrators only."""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from ..errors import AccessControlError, DefinitionsError
from ..model._access import SHA256, HashedPassword, Rule, User, hash_password
from ._http import Response
from ._routes import Call, bad_request, route
from ._schema import ABSENT, Field, Schema, boolean, json_object, optional, text, text_or_list

if TYPE_CHECKING:
    from ._api import ManagementAPI


def _user_info(user: User) -> dict[str, Any]:
    if isinstance(user.password, HashedPassword):
        password_hash, algorithm = str(user.password), user.password.algorithm
    else:
        password_hash, algorithm = hash_password(user.password), SHA256
    return {"name": user.name, "password_hash": password_hash, "hashing_algorithm": algorithm,
            "tags": list(user.tags), "limits": dict(user.limits)}


@route("POST", "users/bulk-delete", Rule.ADMIN,
       body=Schema({"users": Field(lambda v: [text(name) for name in _list(v)],
                                   required=True)}))
def _users_bulk_delete(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        for name in call.body["users"]:
            if name in api.broker.access.users:
                api.broker.delete_user(name)
    return Response(204)


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise bad_request(["not_a_list", value])
    return value


@route("GET", "users/without-permissions", Rule.ADMIN)
def _users_without(api: ManagementAPI, call: Call) -> Any:
    broker = api.broker
    with broker.locked():
        return [_user_info(u) for u in broker.access.users.values()
                if not any(broker.access.permissions(u.name, v) for v in broker.vhosts)]


@route("GET", "users", Rule.ADMIN)
def _users(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        items = [_user_info(u) for u in api.broker.access.users.values()]
    return api.listing(call, items)


@route("GET", "users/{user}", Rule.ADMIN)
def _user_get(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        return _user_info(api.user(call))


def _base64(value: str) -> str:
    """``rabbit_misc:b64decode_or_throw``."""
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise bad_request(["not_base64", value]) from None
    return value


_USER = Schema({
    "password": Field(text, ABSENT), "password_hash": Field(text, ABSENT),
    "hashing_algorithm": Field(text, SHA256), "tags": Field(text_or_list, ABSENT),
    "limits": Field(optional(json_object)),
    # (RabbitMQ 2.x's way of saying tags: read when "tags" is absent)
    "administrator": Field(boolean, ABSENT),
})


@route("PUT", "users/{user}", Rule.ADMIN, body=_USER)
def _user_put(api: ManagementAPI, call: Call) -> Any:
    """As ``rabbit_auth_backend_internal:put_user/3``: the tags are required; a password or a
    password hash sets the password, neither clears it (the user then logs in by other means
    or not at all), both are refused; the limits are validated."""
    body = call.body
    name = call.params["user"]
    broker = api.broker
    if "tags" not in body:
        if "administrator" not in body:
            raise bad_request("tags_not_present")
        body["tags"] = ["administrator"] if body["administrator"] else []
    if "password" in body and "password_hash" in body:
        raise bad_request("both_password_and_password_hash_are_provided")
    password: str = HashedPassword("")
    if "password" in body:
        password = body["password"]
    elif "password_hash" in body:
        try:
            password = HashedPassword(_base64(body["password_hash"]), body["hashing_algorithm"])
        except DefinitionsError as error:
            raise bad_request(str(error)) from None
    with broker.locked():
        exists = name in broker.access.users
        try:
            if exists:
                if "password" in body or "password_hash" in body:
                    broker.change_password(name, password)
                else:
                    broker.clear_password(name)
                broker.set_user_tags(name, *body["tags"])
            else:
                broker.add_user(name, password, tags=body["tags"])
            if body["limits"] is not None:
                broker.set_user_limits(name, body["limits"])
        except AccessControlError as error:
            raise bad_request(str(error)) from None
    return Response(204 if exists else 201)


@route("DELETE", "users/{user}", Rule.ADMIN)
def _user_delete(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        api.broker.delete_user(api.user(call).name)
    return Response(204)

