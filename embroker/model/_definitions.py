"""RabbitMQ definitions: the JSON ``rabbitmqctl export_definitions`` writes, in and out.

Theory of operation
-------------------
A definitions document lists ``vhosts``, ``users``, ``permissions``, ``topic_permissions``,
``exchanges``, ``queues``, ``bindings``, ``policies``, ``parameters`` and ``global_parameters``.
:func:`load_definitions` is the one import every route takes (``Broker.load_definitions``, the
management API's ``POST /api/definitions[/VHOST]``, ``rabbitmqctl import_definitions``,
``embroker serve --definitions``, ``rabbitmq-server``'s ``load_definitions``, the pytest
marker's ``topology``): it reads the document and checks it whole (:mod:`._definitions_schema`:
what a document may hold, and its bounds), then applies it with the model's own calls in
RabbitMQ's order and with RabbitMQ's checks, and raises :class:`DefinitionsError` alone (the
model's refusals become one, with RabbitMQ's texts). :func:`export_definitions` writes the
broker's state back in the same shape, so what it writes loads into RabbitMQ with
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

import os
import stat
import weakref
from collections.abc import Callable, Generator, Mapping
from typing import TYPE_CHECKING, Any, Union, final

from ..errors import AccessControlError, AMQPError, DefinitionsError, PolicyError, PreconditionFailed
from ..fieldtypes import json_value
from ._access import (
    SHA256,
    HashedPassword,
    export_users,
    hash_password,
    load_permissions,
    load_user,
)
from ._definitions_schema import MAX_BYTES, check, no_such_vhost, parse
from ._names import is_default_exchange, reserved
from ._plugins import PLUGIN_OF_TYPE
from ._policy import DefinitionsPlan, export_parameters, export_policies, export_vhost_limits

if TYPE_CHECKING:
    from ._broker import Broker
    from ._vhost import VirtualHost

__all__ = ["SHA256", "DefinitionsError", "HashedPassword", "export_definitions", "hash_password",
           "load_definitions", "read_file", "set_vhost_metadata", "vhost_deleted",
           "vhost_metadata"]

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


#: What a source of definitions may be: a path (of a file, or of a folder of files), the
#: document's bytes, or the parsed document.
Source = Union[str, "os.PathLike[str]", bytes, bytearray, Mapping[str, Any]]


def read_file(path: str | os.PathLike[str]) -> Any:
    """The JSON value of the file at ``path``, bounded (a folder, a FIFO or a device is not
    a file; one over :data:`MAX_BYTES` is refused from its size).

    Raises:
        DefinitionsError: it cannot be read, or is too big, or not JSON.
    """
    where = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as file:
            info = os.fstat(file.fileno())
            regular = stat.S_ISREG(info.st_mode)
            raw = file.read(MAX_BYTES + 1) if regular and info.st_size <= MAX_BYTES else b""
    except OSError as exc:
        raise DefinitionsError(f"cannot read {where}: {exc.strerror or exc}") from None
    except ValueError as exc:  # (a path with a NUL, or that cannot be a file name)
        raise DefinitionsError(f"cannot read {where!r}: {exc}") from None
    if not regular:
        raise DefinitionsError(f"cannot read {where}: not a file")
    if info.st_size > MAX_BYTES:
        raise DefinitionsError(f"a definitions document has at most {MAX_BYTES} bytes; this "
                               f"one has {info.st_size}")
    return parse(raw)


def load_definitions(broker: Broker, source: Source, *, vhost: str | None = "/",
                     ignore_unsupported: bool = False, scoped: bool = False) -> list[str]:
    """Apply a RabbitMQ definitions document to ``broker``, as RabbitMQ 3.10.8's import does.

    The document is checked whole first (:mod:`._definitions_schema`): one that is malformed
    changes nothing. Then its sections are applied in RabbitMQ's order (users, vhosts,
    permissions, topic permissions, exchanges, global parameters, policies, runtime parameters,
    queues, bindings; the vhost limits last), each item through the model's own operations.
    An item the model refuses ends the import as RabbitMQ's ends: the sections before stay, the
    other items of its section are still applied when RabbitMQ applies them concurrently (all
    but global parameters, policies and runtime parameters, which are set one after the other
    up to the refused one), the sections after are not.

    As RabbitMQ's import: an exchange or a queue that exists is left as it is (no equivalence
    check), a queue or an exchange named ``amq.*`` (and the default exchange) is skipped, and a
    binding whose source or destination does not exist, or whose arguments its exchange
    refuses, is not made.

    Args:
        broker: the broker model to change.
        source: a path to a JSON file (or to a folder of them, loaded in name order), the
            document's bytes, or the parsed document.
        vhost: the virtual host of items that name none (a single-vhost export from the
            management API leaves ``vhost`` out); ``None``: an item must name its vhost, as
            in RabbitMQ's import of a whole broker.
        ignore_unsupported: load the rest when runtime parameters embroker cannot honour
            (shovels, federation upstreams) are there, instead of refusing the document.
        scoped: the definitions of the vhost ``vhost`` alone (``POST /api/definitions/VHOST``,
            RabbitMQ's ``apply_defs/4``): only its exchanges, queues, bindings, policies and
            runtime parameters are read, each in that vhost whatever its ``vhost`` says.

    Returns:
        The runtime parameters left out, in words (empty unless ``ignore_unsupported``).

    Raises:
        DefinitionsError: the only error: what is wrong, RabbitMQ's text where its import has
            one (see :class:`~embroker.errors.DefinitionsError`).
    """
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        ignored = []
        for name in sorted(os.listdir(source)):  # (rabbit_definitions_import_local_filesystem)
            path = os.path.join(source, name)
            try:
                ignored += _load(broker, read_file(path), vhost, ignore_unsupported, scoped)
            except DefinitionsError as exc:
                raise DefinitionsError(f"{path}: {exc.text}", reason=exc.reason) from None
        return ignored
    if isinstance(source, (str, os.PathLike)):
        document = read_file(source)
    elif isinstance(source, (bytes, bytearray)):
        document = parse(bytes(source))
    else:
        document = source
    return _load(broker, document, vhost, ignore_unsupported, scoped)


def _refusal(exc: Exception) -> DefinitionsError:
    """What the model refused, as a definitions error with RabbitMQ's text: an AMQP error as
    ``rabbit_definitions:format/1`` writes it (``precondition_failed: ...``)."""
    if isinstance(exc, DefinitionsError):
        return exc
    if isinstance(exc, AMQPError):
        return DefinitionsError(f"{exc.reply_name.lower()}: {exc.text}")
    return DefinitionsError(str(exc))


#: What the model's operations refuse an item with.
_REFUSALS = (DefinitionsError, AMQPError, PolicyError, AccessControlError)


@final
class _Import:
    """One document being applied: where its items go, and RabbitMQ's two ways of applying a
    section (``concurrent_for_all``, ``sequential_for_all``)."""

    def __init__(self, broker: Broker, document: dict[str, Any], vhost: str | None,
                 scoped: bool) -> None:
        self.broker = broker
        self.document = document
        self.default = vhost
        self.scoped = scoped

    def vhost_name(self, item: Mapping[str, Any]) -> str | None:
        return self.default if self.scoped else item.get("vhost", self.default)

    def vhost(self, item: Mapping[str, Any]) -> VirtualHost:
        name = self.vhost_name(item)
        found = self.broker.vhosts.get(name) if name is not None else None
        if found is None:
            raise no_such_vhost(name)
        return found

    def each(self, section: str, apply: Callable[[dict[str, Any]], object]) -> None:
        """Apply every item, then refuse with the first refusal (a section RabbitMQ imports
        concurrently: one bad item does not keep the others out)."""
        first: DefinitionsError | None = None
        for item in self.document.get(section, []):
            try:
                apply(item)
            except _REFUSALS as exc:
                first = first or _refusal(exc)
        if first is not None:
            raise first

    def one_by_one(self, items: list[Mapping[str, Any]],
                   apply: Callable[[Mapping[str, Any]], object]) -> None:
        """Apply the items in order up to the first refused (RabbitMQ's sequential
        sections)."""
        for item in items:
            try:
                apply(item)
            except _REFUSALS as exc:
                raise _refusal(exc) from None


def _load(broker: Broker, raw: Any, vhost: str | None, ignore_unsupported: bool,
          scoped: bool) -> list[str]:
    if scoped and vhost is None:
        raise ValueError("a vhost's own definitions need the vhost")
    document = check(raw, scoped=scoped)
    run = _Import(broker, document, vhost, scoped)
    plan = DefinitionsPlan(document, run.vhost_name, ignore_unsupported)
    global_parameters = document.get("global_parameters", [])
    for item in global_parameters:
        if item["name"] == "cluster_name" and not isinstance(item["value"], str):
            raise DefinitionsError(f"the global parameter cluster_name should be a string, "
                                   f"not {item['value']!r}")
    version = document.get("rabbitmq_version", document.get("rabbit_version"))
    with broker._lock:
        if not scoped:
            run.each("users", lambda item: load_user(broker, item, version))
            run.each("vhosts", lambda item: _load_vhost(broker, item))
        plan.check_queue_limits(broker)
        if not scoped:
            run.each("permissions", lambda item: load_permissions(
                broker, item, run.vhost_name(item)))
            run.each("topic_permissions", lambda item: load_permissions(
                broker, item, run.vhost_name(item)))
        run.each("exchanges", lambda item: _load_exchange(run, item))
        run.one_by_one(global_parameters, lambda item: broker.set_global_parameter(
            item["name"], item["value"]))
        run.one_by_one(plan.policies, lambda item: plan.apply_policy(broker, item))
        run.one_by_one(plan.parameters, lambda item: plan.apply_parameter(broker, item))
        run.each("queues", lambda item: _load_queue(run, item))
        run.each("bindings", lambda item: _load_binding(run, item))
        plan.apply_limits(broker)
    return plan.ignored


def _load_vhost(broker: Broker, item: Mapping[str, Any]) -> None:
    """``rabbit_definitions:add_vhost/2``: the vhost, its description, tags and default queue
    type (top-level or in ``metadata``), and its tracing."""
    name = item["name"]
    vhost = broker.add_vhost(name)
    metadata = item.get("metadata", {})
    if "metadata" in item or "description" in item or "tags" in item:
        kept = {"description": item.get("description", metadata.get("description", "")),
                "tags": item.get("tags", metadata.get("tags", []))}
        if "default_queue_type" in metadata:
            kept["default_queue_type"] = metadata["default_queue_type"]
        _extra(broker).vhost_metadata[name] = kept
    if "tracing" in item:
        vhost.tracing = item["tracing"]


def _load_exchange(run: _Import, item: Mapping[str, Any]) -> None:
    """``rabbit_definitions:add_exchange_int/3``: the default exchange and ``amq.*`` skipped,
    an existing one left as it is."""
    name = item["name"]
    if is_default_exchange(name) or reserved(name):
        return
    vhost = run.vhost(item)
    if name in vhost.exchanges:
        return
    _check_plugin(run.broker, item, name, item["type"])
    vhost.declare_exchange(name, item["type"], durable=item.get("durable", True),
                           auto_delete=item.get("auto_delete", False),
                           internal=item.get("internal", False),
                           arguments=item.get("arguments", {}))


def _load_queue(run: _Import, item: Mapping[str, Any]) -> None:
    """``rabbit_definitions:add_queue_int/3``: ``amq.*`` skipped, an existing one left as it
    is; its type from ``type`` when its arguments do not say."""
    name = item["name"]
    if reserved(name):
        return
    vhost = run.vhost(item)
    if name in vhost.queues:
        return
    arguments = dict(item.get("arguments", {}))
    qtype = item.get("type")
    if qtype and qtype != "classic":
        arguments.setdefault("x-queue-type", qtype)
    vhost.declare_queue(name, None, durable=item.get("durable", True),
                        auto_delete=item.get("auto_delete", False), arguments=arguments)


def _load_binding(run: _Import, item: Mapping[str, Any]) -> None:
    """``rabbit_definitions:add_binding_int/4``: ``rabbit_binding:add/3``, whose errors (a
    source or destination that does not exist, arguments the exchange refuses) RabbitMQ's
    import does not look at: such a binding is not made, silently."""
    name = run.vhost_name(item)
    vhost = run.broker.vhosts.get(name) if name is not None else None
    kind = item.get("destination_type", "queue")
    source, destination = item["source"], item["destination"]
    if vhost is None or source not in vhost.exchanges or destination not in (
            vhost.queues if kind == "queue" else vhost.exchanges):
        return
    try:
        vhost.bind(source, kind, destination, item.get("routing_key", ""),
                   item.get("arguments", {}), None)
    except PreconditionFailed:
        return


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
