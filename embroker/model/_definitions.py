"""RabbitMQ definitions: the JSON ``rabbitmqctl export_definitions`` writes, in and out.

Theory of operation
-------------------
A definitions document lists ``vhosts``, ``users``, ``permissions``, ``topic_permissions``,
``exchanges``, ``queues``, ``bindings``, ``policies``, ``parameters`` and ``global_parameters``.
:func:`load_definitions` applies one to a broker model with the model's own calls (declare
exchanges, then queues, then bindings, with RabbitMQ's checks); :func:`export_definitions` writes
the broker's state back in the same shape, so what it writes loads into RabbitMQ with
``rabbitmqctl import_definitions``.

What embroker does not model is kept, not lost: users' tags, permissions, topic permissions and
vhost metadata are remembered per broker and exported again. Policies, operator policies (the
``operator_policy`` runtime parameters) and vhost limits (``vhost-limits``) load and apply as in
RabbitMQ (``_policy``). Other runtime parameters (federation upstreams, shovels...) need links to
other brokers that a test broker does not have, so a document that has any is refused with an
error that names each, unless the caller asks to load the rest (``ignore_unsupported``).
``global_parameters`` (the cluster name) are ignored.

As RabbitMQ does, system exchanges (the default exchange and ``amq.*``) are neither imported nor
exported, and exclusive queues are not exported.

User passwords: RabbitMQ exports a salted hash (``rabbit_password_hashing_sha256``: base64 of a
4-byte salt followed by SHA-256(salt + password)); embroker checks a password against such a
hash, and exports a plain password it was given as a hash of that kind.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

from ..errors import DefinitionsError
from ._policy import DefinitionsPlan, export_parameters, export_policies, export_vhost_limits

if TYPE_CHECKING:
    from ._broker import Broker

__all__ = ["DefinitionsError", "HashedPassword", "export_definitions", "load_definitions"]

#: The hashing algorithm RabbitMQ 3.x uses by default, and the only one embroker writes.
SHA256 = "rabbit_password_hashing_sha256"
_ALGORITHMS = {SHA256: hashlib.sha256, "rabbit_password_hashing_sha512": hashlib.sha512,
               "rabbit_password_hashing_md5": hashlib.md5}

#: The RabbitMQ version whose semantics embroker follows, written as the exporter's version.
RABBITMQ_VERSION = "3.10.8"

_FULL_ACCESS = {"configure": ".*", "write": ".*", "read": ".*"}


@final
class HashedPassword(str):
    """A password known only by its RabbitMQ hash: compares equal to the passwords it matches.

    >>> stored = HashedPassword(hash_password("s3cret"))
    >>> stored == "s3cret", stored != "wrong"
    (True, True)
    """

    algorithm: str

    def __new__(cls, password_hash: str, algorithm: str = SHA256) -> HashedPassword:
        if algorithm not in _ALGORITHMS:
            raise DefinitionsError(f"unknown hashing_algorithm {algorithm!r}")
        self = super().__new__(cls, password_hash)
        self.algorithm = algorithm
        return self

    def matches(self, password: str) -> bool:
        try:
            raw = base64.b64decode(str(self), validate=True)
        except ValueError:
            return False
        salt, digest = raw[:4], raw[4:]
        return _ALGORITHMS[self.algorithm](salt + password.encode()).digest() == digest

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HashedPassword):
            return str.__eq__(self, other)
        return isinstance(other, str) and self.matches(other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__

    def __repr__(self) -> str:
        return f"HashedPassword({str(self)!r})"


def hash_password(password: str, salt: bytes | None = None) -> str:
    """RabbitMQ's ``rabbit_password_hashing_sha256`` hash of ``password`` (random salt)."""
    salt = os.urandom(4) if salt is None else salt
    return base64.b64encode(salt + hashlib.sha256(salt + password.encode()).digest()).decode()


@final
class _Extra:
    """What a broker was told that its model does not hold, kept to export it again."""

    def __init__(self) -> None:
        self.tags: dict[str, list[str]] = {}
        self.limits: dict[str, Any] = {}
        self.permissions: dict[tuple[str, str], dict[str, str]] = {}
        self.topic_permissions: list[dict[str, Any]] = []
        self.vhost_metadata: dict[str, dict[str, Any]] = {}


_extras: weakref.WeakKeyDictionary[Broker, _Extra] = weakref.WeakKeyDictionary()


def _extra(broker: Broker) -> _Extra:
    extra = _extras.get(broker)
    if extra is None:
        extra = _extras[broker] = _Extra()
    return extra


def _read(source: str | os.PathLike[str] | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(source, Mapping):
        return source
    try:
        document = json.loads(Path(source).read_text(encoding="utf-8"))
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
    extra = _extra(broker)
    with broker._lock:
        plan.check_queue_limits(broker)
        for item in _items(document, "vhosts"):
            name = _field(item, "name", "vhosts")
            broker.add_vhost(name)
            if "metadata" in item:
                extra.vhost_metadata[name] = item["metadata"]
        for item in _items(document, "users"):
            _load_user(broker, extra, item)
        for item in _items(document, "permissions"):
            key = (_field(item, "user", "permissions"), item.get("vhost", vhost))
            extra.permissions[key] = {k: str(item.get(k, "")) for k in _FULL_ACCESS}
        extra.topic_permissions.extend(_items(document, "topic_permissions"))
        for item in _items(document, "exchanges"):
            name = _field(item, "name", "exchanges")
            if name == "" or name.startswith("amq."):
                continue  # system exchanges: RabbitMQ skips them too
            broker.add_vhost(item.get("vhost", vhost)).declare_exchange(
                name, _field(item, "type", "exchanges"), durable=bool(item.get("durable", True)),
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


def _load_user(broker: Broker, extra: _Extra, item: Mapping[str, Any]) -> None:
    name = _field(item, "name", "users")
    if "password" in item:
        broker.users[name] = str(item["password"])
    else:
        stored = HashedPassword(str(item.get("password_hash", "")),
                                item.get("hashing_algorithm", SHA256))
        known = broker.users.get(name)
        # Keep a known plain password that the hash confirms (guest/guest, typically): the
        # listener's URL can then carry it.
        broker.users[name] = known if known is not None and stored.matches(known) else stored
    tags = item.get("tags", [])
    extra.tags[name] = tags.split(",") if isinstance(tags, str) and tags else list(tags or [])
    if item.get("limits"):
        extra.limits[name] = item["limits"]


def export_definitions(broker: Broker) -> dict[str, Any]:
    """The broker's vhosts, users, permissions, exchanges, queues, bindings, policies,
    operator policies and vhost limits as a RabbitMQ definitions document (what ``rabbitmqctl
    export_definitions`` writes).

    Users keep full access to every vhost unless permissions were loaded for them (that is what
    embroker enforces: it does not check permissions).
    """
    extra = _extra(broker)
    with broker._lock:
        users = []
        for name, password in broker.users.items():
            if isinstance(password, HashedPassword):
                password_hash, algorithm = str(password), password.algorithm
            else:
                password_hash, algorithm = hash_password(password), SHA256
            default_tags = ["administrator"] if name == "guest" else []
            users.append({"name": name, "password_hash": password_hash,
                          "hashing_algorithm": algorithm,
                          "tags": extra.tags.get(name, default_tags),
                          "limits": extra.limits.get(name, {})})
        vhosts = [{"name": name, "limits": export_vhost_limits(vh),
                   "metadata": extra.vhost_metadata.get(name, {"description": "", "tags": []})}
                  for name, vh in broker.vhosts.items()]
        permissions = [{"user": user, "vhost": vname,
                        **extra.permissions.get((user, vname), _FULL_ACCESS)}
                       for user in broker.users for vname in broker.vhosts]
        exchanges, queues, bindings = [], [], []
        for vname, vh in broker.vhosts.items():
            for exchange in vh.exchanges.values():
                if exchange.name == "" or exchange.name.startswith("amq."):
                    continue
                exchanges.append({"name": exchange.name, "vhost": vname, "type": exchange.type,
                                  "durable": exchange.durable,
                                  "auto_delete": exchange.auto_delete,
                                  "internal": exchange.internal,
                                  "arguments": dict(exchange.arguments)})
                for binding in exchange.bindings.values():
                    bindings.append({"source": exchange.name, "vhost": vname,
                                     "destination": binding.destination.name,
                                     "destination_type": binding.destination.kind,
                                     "routing_key": binding.routing_key,
                                     "arguments": dict(binding.arguments)})
            for queue in vh.queues.values():
                if queue.exclusive:
                    continue
                arguments = dict(queue.arguments)
                # As RabbitMQ writes it: the type, and x-queue-type kept in the arguments
                # (its import reads the type from there).
                qtype = arguments.get("x-queue-type", "classic")
                queues.append({"name": queue.name, "vhost": vname, "durable": queue.durable,
                               "auto_delete": queue.auto_delete, "type": qtype,
                               "arguments": arguments})
        policies, parameters = export_policies(broker), export_parameters(broker)
    return {"rabbit_version": RABBITMQ_VERSION, "rabbitmq_version": RABBITMQ_VERSION,
            "product_name": "embroker", "product_version": _embroker_version(),
            "users": users, "vhosts": vhosts, "permissions": permissions,
            "topic_permissions": list(extra.topic_permissions),
            "parameters": parameters, "global_parameters": [],
            "policies": policies, "queues": queues, "exchanges": exchanges,
            "bindings": bindings}


def _embroker_version() -> str:
    from .._version import __version__

    return __version__
