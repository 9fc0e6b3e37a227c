"""Definitions: the export and import of the whole broker or of one vhost
(``rabbit_mgmt_wm_definitions``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import AccessControlError, AMQPError, DefinitionsError, PolicyError
from ..model._access import Rule
from ..model._definitions import export_steps
from . import _steps as steps
from ._http import Response
from ._routes import Call, bad_request, route
from ._schema import Schema
from ._steps import Steps

if TYPE_CHECKING:
    from ._api import ManagementAPI

_VHOST_SECTIONS = ("parameters", "policies", "queues", "exchanges", "bindings")
_DOCUMENT = Schema({}, whole=True)


@route("GET", "definitions", Rule.ADMIN)
@route("GET", "all-configuration", Rule.ADMIN)  # (its old name: the same module in 3.10.8)
def _definitions_get(api: ManagementAPI, call: Call) -> Steps[Response]:
    """The export in steps (the model's, a bounded number of objects each), then its JSON."""
    whole = yield from steps.locked(export_steps(api.broker), api.broker.locked())
    body = yield from steps.document(whole)
    return api.reply_json(body)


@route("POST", "definitions", Rule.ADMIN, body=_DOCUMENT)
@route("POST", "all-configuration", Rule.ADMIN, body=_DOCUMENT)
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

