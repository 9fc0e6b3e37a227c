"""RabbitMQ definitions: the JSON ``rabbitmqctl export_definitions`` writes, in and out.

Theory of operation
-------------------
A definitions document lists ``vhosts``, ``users``, ``permissions``, ``topic_permissions``,
``exchanges``, ``queues``, ``bindings``, ``policies``, ``parameters`` and ``global_parameters``.
:func:`load_definitions` applies one to a broker model with the model's own calls (declare
exchanges, then queues, then bindings, with RabbitMQ's checks); :func:`export_definitions` writes
the broker's state back in the same shape, so what it writes loads into RabbitMQ with
``rabbitmqctl import_definitions``.

Users, permissions and topic permissions go to the broker's access control (:mod:`._access`,
which also says how passwords and their hashes are checked); users' tags and limits and vhost
metadata, which embroker does not enforce, are kept and exported again. Policies, operator
policies (the ``operator_policy`` runtime parameters) and vhost limits (``vhost-limits``) load
and apply as in RabbitMQ (``_policy``). Other runtime parameters (federation upstreams,
shovels...) need links to other brokers that a test broker does not have, so a document that
has any is refused with an error that names each, unless the caller asks to load the rest
(``ignore_unsupported``). ``global_parameters`` are set as RabbitMQ sets them
(``cluster_name`` renames the cluster).

As RabbitMQ does, system exchanges (the default exchange and ``amq.*``) are neither imported nor
exported, and exclusive queues are not exported.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

from .._untrusted import json_loads
from ..errors import DefinitionsError
from ..fieldtypes import json_value
from ._access import SHA256, HashedPassword, export_users, hash_password, load_users
from ._names import is_default_exchange, reserved
from ._plugins import PLUGIN_OF_TYPE
from ._policy import DefinitionsPlan, export_parameters, export_policies, export_vhost_limits

if TYPE_CHECKING:
    from ._broker import Broker

__all__ = ["SHA256", "DefinitionsError", "HashedPassword", "export_definitions", "hash_password",
           "load_definitions", "set_vhost_metadata", "vhost_deleted", "vhost_metadata"]

#: The RabbitMQ version whose semantics embroker follows, written as the exporter's version.
RABBITMQ_VERSION = "3.10.8"

@final
class _Extra:
    """What a broker was told that its model does not hold, kept to export it again."""

    def __init__(self) -> None:
        self.vhost_metadata: dict[str, dict[str, Any]] = {}


_extras: weakref.WeakKeyDictionary[Broker, _Extra] = weakref.WeakKeyDictionary()


def _extra(broker: Broker) -> _Extra:
    extra = _extras.get(broker)
    if extra is None:
        extra = _extras[broker] = _Extra()
    return extra


def vhost_metadata(broker: Broker, name: str) -> dict[str, Any]:
    """What a vhost was told of itself (``description``, ``tags``; RabbitMQ's metadata)."""
    found = _extra(broker).vhost_metadata.get(name) or {}
    return {"description": found.get("description", ""), "tags": list(found.get("tags", []))}


def set_vhost_metadata(broker: Broker, name: str, metadata: Mapping[str, Any]) -> None:
    """Keep a vhost's metadata (exported with it, shown by the management API)."""
    _extra(broker).vhost_metadata[name] = dict(metadata)


def vhost_deleted(broker: Broker, name: str) -> None:
    """Forget a deleted vhost's metadata."""
    _extra(broker).vhost_metadata.pop(name, None)


def _read(source: str | os.PathLike[str] | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(source, Mapping):
        return source
    try:
        document = json_loads(Path(source).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DefinitionsError(f"{source}: not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise DefinitionsError(f"{source}: a definitions document is a JSON object")
    return document


def _items(document: Mapping[str, Any], section: str) -> list[dict[str, Any]]:
    items = document.get(section) or []
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise DefinitionsError(f"'{section}' must be a list of objects")
    return items


def _field(item: Mapping[str, Any], name: str, section: str) -> Any:
    try:
        return item[name]
    except KeyError:
        raise DefinitionsError(f"an item of '{section}' has no '{name}': {dict(item)!r}") from None


def load_definitions(broker: Broker, source: str | os.PathLike[str] | Mapping[str, Any], *,
                     vhost: str = "/", ignore_unsupported: bool = False) -> list[str]:
    """Apply a RabbitMQ definitions document to ``broker``.

    Args:
        broker: the broker model to change.
        source: a path to a JSON file, or the parsed document.
        vhost: the virtual host for items that name none (a single-vhost export from the
            management API leaves ``vhost`` out).
        ignore_unsupported: load the rest when runtime parameters embroker cannot honour
            (shovels, federation upstreams) are there, instead of refusing the document.

    Returns:
        The runtime parameters left out, in words (empty unless ``ignore_unsupported``).

    Raises:
        DefinitionsError: the document is malformed, has a policy RabbitMQ would refuse, or
            runtime parameters embroker cannot honour.
        AMQPError: a declaration RabbitMQ would refuse too (e.g. ``PreconditionFailed`` (406)
            for an exchange that exists with another type).
    """
    document = _read(source)
    plan = DefinitionsPlan(document, vhost, ignore_unsupported)
    global_parameters = [(str(_field(item, "name", "global_parameters")), item.get("value"))
                         for item in _items(document, "global_parameters")]
    for name, value in global_parameters:
        if name == "cluster_name" and not isinstance(value, str):
            raise DefinitionsError(f"the global parameter cluster_name should be a string, "
                                   f"not {value!r}")
    extra = _extra(broker)
    with broker._lock:
        plan.check_queue_limits(broker)
        for item in _items(document, "vhosts"):
            name = _field(item, "name", "vhosts")
            broker.add_vhost(name)
            if "metadata" in item:
                extra.vhost_metadata[name] = item["metadata"]
        load_users(broker, document, lambda section: _items(document, section), vhost)
        for name, value in global_parameters:
            broker.set_global_parameter(name, value)
        for item in _items(document, "exchanges"):
            name = _field(item, "name", "exchanges")
            if is_default_exchange(name) or reserved(name):
                continue  # system exchanges: RabbitMQ skips them too
            xtype = _field(item, "type", "exchanges")
            _check_plugin(broker, item, name, xtype)
            broker.add_vhost(item.get("vhost", vhost)).declare_exchange(
                name, xtype, durable=bool(item.get("durable", True)),
                auto_delete=bool(item.get("auto_delete", False)),
                internal=bool(item.get("internal", False)), arguments=item.get("arguments") or {})
        plan.apply_policies(broker)
        for item in _items(document, "queues"):
            arguments = dict(item.get("arguments") or {})
            qtype = item.get("type")
            if qtype and qtype != "classic":
                arguments.setdefault("x-queue-type", qtype)
            broker.add_vhost(item.get("vhost", vhost)).declare_queue(
                _field(item, "name", "queues"), None, durable=bool(item.get("durable", True)),
                auto_delete=bool(item.get("auto_delete", False)), arguments=arguments)
        for item in _items(document, "bindings"):
            kind = item.get("destination_type", "queue")
            if kind not in ("queue", "exchange"):
                raise DefinitionsError(f"unknown destination_type {kind!r} in {item!r}")
            broker.add_vhost(item.get("vhost", vhost)).bind(
                _field(item, "source", "bindings"), kind, _field(item, "destination", "bindings"),
                item.get("routing_key", ""), item.get("arguments") or {}, None)
        plan.apply_limits(broker)
    return plan.ignored


def _check_plugin(broker: Broker, item: Mapping[str, Any], name: str, xtype: Any) -> None:
    """An exchange of a plugin's type (or a delayed-message exchange routing as one) needs the
    plugin: say which, rather than RabbitMQ's bare "unknown exchange type"."""
    for type_name in (xtype, (item.get("arguments") or {}).get("x-delayed-type")):
        plugin = PLUGIN_OF_TYPE.get(type_name) if isinstance(type_name, str) else None
        if plugin is not None and plugin not in broker.plugins:
            where = f"exchange '{name}' in vhost '{item.get('vhost', '/')}'"
            raise DefinitionsError(
                f"{where} has type '{type_name}', which the plugin {plugin} brings: enable it "
                f"(Broker(plugins=['{plugin}']), embroker serve --plugin {plugin}, or "
                f"@pytest.mark.embroker(plugins=['{plugin}']))")


def export_definitions(broker: Broker) -> dict[str, Any]:
    """The broker's vhosts, users, permissions, exchanges, queues, bindings, policies,
    operator policies and vhost limits as a RabbitMQ definitions document (what ``rabbitmqctl
    export_definitions`` writes)."""
    with broker._lock:
        steps = export_steps(broker)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]


#: How many exchanges and queues :func:`export_steps` exports between two yields.
EXPORT_STEP = 200


def export_steps(broker: Broker) -> Generator[None, None, dict[str, Any]]:
    """:func:`export_definitions` in steps: it yields after every :data:`EXPORT_STEP`
    exchanges or queues, and returns the document. Arguments are written as RabbitMQ exports
    them (``rabbit_misc:amqp_table``: :func:`~embroker.fieldtypes.json_value`), so that the
    document is JSON whatever a client put in them. The caller holds the broker's lock while
    it advances the generator (and may let it go between steps: what changes in between is
    exported as it is when its step comes)."""
    extra = _extra(broker)
    users, permissions, topic_permissions = export_users(broker)
    vhosts = [{"name": name, "limits": export_vhost_limits(vh),
               "metadata": extra.vhost_metadata.get(name, {"description": "", "tags": []})}
              for name, vh in broker.vhosts.items()]
    exchanges: list[dict[str, Any]] = []
    queues: list[dict[str, Any]] = []
    bindings: list[dict[str, Any]] = []
    done = 0
    for vname, vh in list(broker.vhosts.items()):
        for exchange in list(vh.exchanges.values()):
            done += 1
            if not done % EXPORT_STEP:
                yield
            if is_default_exchange(exchange.name) or reserved(exchange.name) or \
                    vh.exchanges.get(exchange.name) is not exchange:  # (gone since)
                continue
            exchanges.append({"name": exchange.name, "vhost": vname, "type": exchange.type,
                              "durable": exchange.durable,
                              "auto_delete": exchange.auto_delete,
                              "internal": exchange.internal,
                              "arguments": json_value(exchange.arguments)})
            for binding in list(exchange.bindings.values()):
                bindings.append({"source": exchange.name, "vhost": vname,
                                 "destination": binding.destination.name,
                                 "destination_type": binding.destination.kind,
                                 "routing_key": binding.routing_key,
                                 "arguments": json_value(binding.arguments)})
        for queue in list(vh.queues.values()):
            done += 1
            if not done % EXPORT_STEP:
                yield
            if queue.exclusive or queue.deleted:
                continue
            arguments = dict(queue.arguments)
            # As RabbitMQ writes it: the type, and x-queue-type kept in the arguments
            # (its import reads the type from there).
            qtype = arguments.get("x-queue-type", "classic")
            queues.append({"name": queue.name, "vhost": vname, "durable": queue.durable,
                           "auto_delete": queue.auto_delete, "type": qtype,
                           "arguments": json_value(arguments)})
    policies, parameters = export_policies(broker), export_parameters(broker)
    return {"rabbit_version": RABBITMQ_VERSION, "rabbitmq_version": RABBITMQ_VERSION,
            "product_name": "embroker", "product_version": _embroker_version(),
            "users": users, "vhosts": vhosts, "permissions": permissions,
            "topic_permissions": topic_permissions,
            "parameters": parameters,
            "global_parameters": [{"name": name, "value": value}
                                  for name, value in broker.global_parameters().items()],
            "policies": policies, "queues": queues, "exchanges": exchanges,
            "bindings": bindings}


def _embroker_version() -> str:
    from .._version import __version__

    return __version__
