"""Users, permissions and topic permissions (``rabbit_mgmt_wm_users``, ``_user``,
``_users_bulk_delete``, ``_permissions_user``, ``_topic_permissions_user``, ``_permissions``,
``_permission``, ``_topic_permissions``, ``_topic_permission``): administrators only."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..errors import AccessControlError, DefinitionsError
from ..model._access import (
    SHA256,
    AccessControl,
    HashedPassword,
    Rule,
    User,
    hash_password,
)
from ._http import Response
from ._routes import Call, HttpError, bad_request, not_found, route
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


def _user(api: ManagementAPI, call: Call) -> User:
    found = api.broker.access.users.get(call.params["user"])
    if found is None:
        raise not_found()
    return found


@route("GET", "users/{user}", Rule.ADMIN)
def _user_get(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        return _user_info(_user(api, call))


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
        api.broker.delete_user(_user(api, call).name)
    return Response(204)


def permission_rows(access: AccessControl, users: Iterable[str], vhosts: Iterable[str], *,
                    topic: bool = False) -> list[dict[str, Any]]:
    """The permissions (or topic permissions) of ``users`` in ``vhosts`` as RabbitMQ's
    management shows them: a row each, ``user`` and ``vhost`` first."""
    vhosts = list(vhosts)
    rows = []
    for user in users:
        for vhost in vhosts:
            if topic:
                entries: Iterable[Any] = access.topic_permissions(user, vhost)
            else:
                granted = access.permissions(user, vhost)
                entries = () if granted is None else (granted,)
            rows += [{"user": user, "vhost": vhost, **entry._asdict()} for entry in entries]
    return rows


@route("GET", "users/{user}/permissions", Rule.ADMIN)
def _user_permissions(api: ManagementAPI, call: Call) -> Any:
    broker = api.broker
    with broker.locked():
        return permission_rows(broker.access, [_user(api, call).name], broker.vhosts)


@route("GET", "users/{user}/topic-permissions", Rule.ADMIN)
def _user_topic_permissions(api: ManagementAPI, call: Call) -> Any:
    broker = api.broker
    with broker.locked():
        return permission_rows(broker.access, [_user(api, call).name], broker.vhosts,
                               topic=True)


@route("GET", "permissions", Rule.ADMIN)
def _permissions(api: ManagementAPI, call: Call) -> Any:
    broker = api.broker
    with broker.locked():
        items = permission_rows(broker.access, broker.access.users, broker.vhosts)
    return api.listing(call, items)


@route("GET", "permissions/{vhost}/{user}", Rule.ADMIN)
def _permission_get(api: ManagementAPI, call: Call) -> Any:
    vhost, user = call.params["vhost"], call.params["user"]
    with api.broker.locked():
        found = permission_rows(api.broker.access, [user], [vhost])
    if not found:
        raise not_found()
    return found[0]


_PERMISSIONS = Schema({key: Field(text, required=True) for key in
                       ("configure", "write", "read")})
_TOPIC_PERMISSIONS = Schema({key: Field(text, required=True) for key in
                             ("exchange", "write", "read")})


@route("PUT", "permissions/{vhost}/{user}", Rule.ADMIN, body=_PERMISSIONS)
def _permission_put(api: ManagementAPI, call: Call) -> Any:
    return _grant(api, call, ("configure", "write", "read"), api.broker.access.permissions,
                  api.broker.set_permissions)


@route("DELETE", "permissions/{vhost}/{user}", Rule.ADMIN)
def _permission_delete(api: ManagementAPI, call: Call) -> Any:
    return _revoke(api, call, api.broker.access.permissions, api.broker.clear_permissions)


def _grant(api: ManagementAPI, call: Call, keys: tuple[str, str, str],
           held: Callable[[str, str], object], grant: Callable[..., None]) -> Response:
    """PUT of a user's permissions or topic permissions in a vhost (``keys``, in the order
    ``grant`` takes them): both must exist (RabbitMQ's ``vhost_or_user_not_found``); 201 for
    new ones, 204 for ones replaced."""
    vhost, user = call.params["vhost"], call.params["user"]
    broker = api.broker
    with broker.locked():
        if vhost not in broker.vhosts or user not in broker.access.users:
            raise HttpError(400, "bad_request", "vhost_or_user_not_found")
        existed = bool(held(user, vhost))
        try:
            grant(user, *(call.body[key] for key in keys), vhost=vhost)
        except AccessControlError as error:
            raise bad_request(str(error)) from None
    return Response(204 if existed else 201)


def _revoke(api: ManagementAPI, call: Call, held: Callable[[str, str], object],
            revoke: Callable[..., None]) -> Response:
    """DELETE of a user's permissions or topic permissions in a vhost: 404 when there are
    none."""
    vhost, user = call.params["vhost"], call.params["user"]
    with api.broker.locked():
        if not held(user, vhost):
            raise not_found()
        revoke(user, vhost=vhost)
    return Response(204)


@route("GET", "topic-permissions", Rule.ADMIN)
def _topic_permissions(api: ManagementAPI, call: Call) -> Any:
    broker = api.broker
    with broker.locked():
        items = permission_rows(broker.access, broker.access.users, broker.vhosts, topic=True)
    return api.listing(call, items)


@route("GET", "topic-permissions/{vhost}/{user}", Rule.ADMIN)
def _topic_permission_get(api: ManagementAPI, call: Call) -> Any:
    vhost, user = call.params["vhost"], call.params["user"]
    with api.broker.locked():
        found = permission_rows(api.broker.access, [user], [vhost], topic=True)
    if not found:
        raise not_found()
    return found


@route("PUT", "topic-permissions/{vhost}/{user}", Rule.ADMIN, body=_TOPIC_PERMISSIONS)
def _topic_permission_put(api: ManagementAPI, call: Call) -> Any:
    return _grant(api, call, ("exchange", "write", "read"),
                  api.broker.access.topic_permissions, api.broker.set_topic_permissions)


@route("DELETE", "topic-permissions/{vhost}/{user}", Rule.ADMIN)
def _topic_permission_delete(api: ManagementAPI, call: Call) -> Any:
    return _revoke(api, call, api.broker.access.topic_permissions,
                   api.broker.clear_topic_permissions)
