"""Permissions and topic permissions: all of them, a user's, a vhost's, and one user's in one
vhost (``rabbit_mgmt_wm_permissions``, ``_permission``, ``_permissions_user``,
``_permissions_vhost``, ``_topic_permissions``, ``_topic_permission``,
``_topic_permissions_user``, ``_topic_permissions_vhost``): administrators only."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..errors import AccessControlError
from ..model._access import AccessControl, Rule
from ._http import Response
from ._routes import Call, HttpError, bad_request, not_found, route
from ._schema import Field, Schema, text

if TYPE_CHECKING:
    from ._api import ManagementAPI


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
        return permission_rows(broker.access, [api.user(call).name], broker.vhosts)


@route("GET", "users/{user}/topic-permissions", Rule.ADMIN)
def _user_topic_permissions(api: ManagementAPI, call: Call) -> Any:
    broker = api.broker
    with broker.locked():
        return permission_rows(broker.access, [api.user(call).name], broker.vhosts,
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
@route("GET", "topic-permissions/{vhost}/{user}/{exchange}", Rule.ADMIN)
def _topic_permission_get(api: ManagementAPI, call: Call) -> Any:
    vhost, user = call.params["vhost"], call.params["user"]
    with api.broker.locked():
        found = permission_rows(api.broker.access, [user], [vhost], topic=True)
    if not found:
        raise not_found()
    return found


@route("PUT", "topic-permissions/{vhost}/{user}", Rule.ADMIN, body=_TOPIC_PERMISSIONS)
@route("PUT", "topic-permissions/{vhost}/{user}/{exchange}", Rule.ADMIN, body=_TOPIC_PERMISSIONS)
def _topic_permission_put(api: ManagementAPI, call: Call) -> Any:
    return _grant(api, call, ("exchange", "write", "read"),
                  api.broker.access.topic_permissions, api.broker.set_topic_permissions)


@route("DELETE", "topic-permissions/{vhost}/{user}", Rule.ADMIN)
def _topic_permission_delete(api: ManagementAPI, call: Call) -> Any:
    return _revoke(api, call, api.broker.access.topic_permissions,
                   api.broker.clear_topic_permissions)


@route("DELETE", "topic-permissions/{vhost}/{user}/{exchange}", Rule.ADMIN)
def _topic_permission_delete_exchange(api: ManagementAPI, call: Call) -> Any:
    """The user's topic permissions on one exchange (none there: 204 all the same, as long as
    the user has some in the vhost). With the exchange in the path, GET answers all of the
    user's topic permissions in the vhost and PUT sets the body's exchange, as
    rabbit_mgmt_wm_topic_permission (one module for both paths) does."""
    exchange = call.params["exchange"]
    return _revoke(api, call, api.broker.access.topic_permissions,
                   lambda user, vhost: api.broker.clear_topic_permissions(
                       user, exchange, vhost=vhost))


@route("GET", "vhosts/{vhost}/permissions", Rule.ADMIN)
def _vhost_permissions(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        access = api.broker.access
        items = permission_rows(access, access.users, [api.vhost(call).name])
    return api.listing(call, items)


@route("GET", "vhosts/{vhost}/topic-permissions", Rule.ADMIN)
def _vhost_topic_permissions(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        access = api.broker.access
        items = permission_rows(access, access.users, [api.vhost(call).name], topic=True)
    return api.listing(call, items)
