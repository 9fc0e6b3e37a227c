"""Definitions: the export and import of the whole broker or of one vhost
(``rabbit_mgmt_wm_definitions``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import DefinitionsError
from ..model._access import Rule
from ..model._definitions import export_steps, load_definitions
from ..model._definitions_schema import NOT_JSON, read
from . import _steps as steps
from ._http import Response
from ._routes import Call, HttpError, bad_request, route
from ._schema import Schema
from ._steps import Steps

if TYPE_CHECKING:
    from ._api import ManagementAPI

_VHOST_SECTIONS = ("parameters", "policies", "queues", "exchanges", "bindings")
#: A definitions document: the model reads and checks it (``_definitions_schema``), as
#: RabbitMQ's definitions routes decode their body themselves (``failed_to_parse_json``).
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
    """The whole broker's import (``rabbit_definitions:apply_defs/3``): a refusal's reason is
    RabbitMQ's, an Erlang term where its is one (``["no_such_vhost", "v"]``)."""
    _refuse_forms(call)
    try:
        load_definitions(api.broker, call.request.body, vhost=None)
    except DefinitionsError as error:
        raise bad_request(error.reason) from None
    return Response(204)


def _refuse_forms(call: Call) -> None:
    content_type = call.request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        raise bad_request("upload the definitions as a JSON body (multipart/form-data is not "
                          "supported by embroker)")

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
    """A vhost's import (``apply_defs/4``): the body is read first, then the vhost looked up
    (404 ``vhost_not_found``); a refusal's reason is the text of RabbitMQ's
    ``rabbit_definitions:format/1``."""
    _refuse_forms(call)
    name = call.params["vhost"]
    try:
        with api.broker.locked():
            missing = name not in api.broker.vhosts
        if missing:
            read(call.request.body)
            raise HttpError(404, "not_found", "vhost_not_found")
        load_definitions(api.broker, call.request.body, vhost=name, scoped=True)
    except DefinitionsError as error:
        raise bad_request(error.reason if error.reason == NOT_JSON else error.text) from None
    return Response(204)
