"""A topology (a RabbitMQ definitions document) and the router compiled from it.

Theory of operation
-------------------
Routing is embroker's model and nothing else: a :class:`Router` loads the definitions into a
model :class:`~embroker.model.Broker` with ``Broker.load_definitions`` (the same loader a test
uses) and asks each virtual host where a message goes with ``VirtualHost.route_keys``, which
walks exchange-to-exchange bindings and alternate exchanges exactly as a publish does, without
enqueuing or tracing anything. No routing rule is written again here.

What this module adds is the preparation a *production* export needs before the model can load
it, because RabbitMQ 3.10's export is lossy and often carries what embroker does not model:

* internal exchanges are left out of ``exchanges`` while bindings from and to them are kept;
  their types must be given (``exchange_types``), or loading stops with a clear error naming
  them;
* policies may give exchanges their alternate exchange (``alternate-exchange`` in a policy's
  definition; the exchange's own argument wins, then the matching policy of highest priority);
  that is folded into the exchange's arguments, and every other policy key, and runtime
  parameters, which change no routing, are set aside (listed in :attr:`Topology.notes`);
* a void binding argument (a headers binding that asks only for a header to be present) is
  exported as the string ``"undefined"``; it is read back as void;
* queue arguments and types are set aside (routing does not depend on them; dead-lettering and
  expiry are not replayed);
* bindings to exclusive queues are exported, the queues are not: such bindings are set aside;
* items of a single-vhost export name no vhost: they get the one given.

A :class:`Router` pickles as the prepared document (plain data) and compiles itself on first
use, so a Spark executor receives a few hundred kilobytes and builds its model once.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, final

from .. import _regex
from ..errors import AMQPError
from ..model import Binding, Broker, Exchange, Queue
from ..model._definitions import DefinitionsError
from ..model._exchange import EXCHANGE_TYPES as _BUILTIN_TYPES
from ..model._plugins import PLUGIN_OF_TYPE
from ..model._vhost import STANDARD_EXCHANGES

__all__ = ["Route", "Router", "Topology", "TopologyError"]

_BUILTIN = frozenset({"", "amq.rabbitmq.trace", *(name for name, _t in STANDARD_EXCHANGES)})

# -- the plugins' exchange types (issue 23) ---------------------------------------------------------
# A production export may declare exchanges of the routing plugins' types: the model routes them
# with the plugins enabled. What routing cannot see is said in the topology's notes.

#: The plugins the model enables to load a document (every routing plugin; not the event
#: exchange, which publishes no traffic of its own here).
_ROUTING_PLUGINS = sorted(set(PLUGIN_OF_TYPE.values()))
#: Every exchange type a document may use.
EXCHANGE_TYPES = {**_BUILTIN_TYPES, **dict.fromkeys(PLUGIN_OF_TYPE)}


def _plugin_notes(item: Mapping[str, Any], notes: list[str]) -> None:
    arguments = item.get("arguments") or {}
    xtype = item.get("type")
    if xtype == "x-delayed-message":
        xtype = arguments.get("x-delayed-type")
    name = item.get("name")
    if xtype == "x-consistent-hash" and "hash-property" in arguments:
        notes.append(f"exchange '{name}' (x-consistent-hash) hashes the property "
                     f"{arguments['hash-property']}, which the traffic does not carry: it routes "
                     "as if it were absent")
    elif xtype == "x-random":
        notes.append(f"exchange '{name}' (x-random) draws from a seeded source: one queue per "
                     "message, as RabbitMQ, though not RabbitMQ's draw")
    elif xtype == "x-recent-history":
        notes.append(f"exchange '{name}' (x-recent-history) routes to every binding; its "
                     "replays to new bindings are not modelled")


def _hash_headers(broker: Broker) -> set[str]:
    """The headers consistent-hash exchanges hash (``hash-header``): they change routes."""
    names = set()
    for vhost in broker.vhosts.values():
        for exchange in vhost.exchanges.values():
            header = exchange.arguments.get("hash-header")
            routing = getattr(exchange, "routing", exchange)  # a delayed exchange's type
            if routing.type == "x-consistent-hash" and isinstance(header, str):
                names.add(header)
    return names


class TopologyError(ValueError):
    """A definitions document that cannot be used for routing, with what to do about it."""


@final
class Topology:
    """A RabbitMQ definitions document prepared for routing.

    Args:
        document: the parsed definitions (``rabbitmqctl export_definitions`` or the management
            API's export, for all vhosts or one).
        vhost: the virtual host of items that name none (a single-vhost export).
        exchange_types: types of exchanges the document binds but does not declare (RabbitMQ
            3.10 leaves internal exchanges out of its export), by name.
        name: where the document came from, for messages.

    Raises:
        TopologyError: malformed, or binds exchanges of unknown type.
    """

    def __init__(self, document: Mapping[str, Any], *, vhost: str = "/",
                 exchange_types: Mapping[str, str] | None = None, name: str = "definitions") -> None:
        if not isinstance(document, Mapping):
            raise TopologyError(f"{name}: a definitions document is a JSON object")
        self.name = name
        self.default_vhost = vhost
        #: What preparing the document changed or set aside, in words.
        self.notes: list[str] = []
        self.document = self._prepare(dict(document), dict(exchange_types or {}))
        text = json.dumps(self.document, sort_keys=True, default=str)
        #: Identifies the prepared document (a router cache key).
        self.fingerprint = hashlib.sha256(text.encode()).hexdigest()[:16]

    @classmethod
    def load(cls, source: str | os.PathLike[str] | Mapping[str, Any], *, vhost: str = "/",
             exchange_types: Mapping[str, str] | None = None) -> Topology:
        """Read a definitions file (or take a parsed document) and prepare it.

        Raises:
            TopologyError: missing file, not JSON, or unusable (see :class:`Topology`).
        """
        if isinstance(source, Mapping):
            return cls(source, vhost=vhost, exchange_types=exchange_types)
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise TopologyError(f"{path}: no such definitions file") from None
        except OSError as exc:
            raise TopologyError(f"{path}: cannot read: {exc.strerror or exc}") from None
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TopologyError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: "
                                f"{exc.msg})") from None
        return cls(document, vhost=vhost, exchange_types=exchange_types, name=str(path))

    # -- preparation ---------------------------------------------------------------------------

    def _items(self, document: Mapping[str, Any], section: str) -> list[dict[str, Any]]:
        items = document.get(section) or []
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise TopologyError(f"{self.name}: '{section}' must be a list of objects")
        return [{**item, "vhost": item.get("vhost", self.default_vhost)} for item in items]

    def _prepare(self, document: dict[str, Any], exchange_types: dict[str, str]) -> dict[str, Any]:
        exchanges = self._items(document, "exchanges")
        queues = self._items(document, "queues")
        bindings = self._items(document, "bindings")
        policies = self._items(document, "policies")
        vhosts = {item.get("name") for item in self._items(document, "vhosts")}
        for section in (exchanges, queues, bindings):
            vhosts.update(item["vhost"] for item in section)
        if not vhosts:
            vhosts = {self.default_vhost}
        declared = {(x["vhost"], x.get("name")) for x in exchanges}
        for name, xtype in exchange_types.items():
            if xtype not in EXCHANGE_TYPES:
                raise TopologyError(f"exchange type {xtype!r} given for '{name}' is not one of "
                                    f"{', '.join(sorted(EXCHANGE_TYPES))}")
        missing: dict[tuple[str, str], list[str]] = {}
        for item in bindings:
            ends = [item.get("source")]
            if item.get("destination_type", "queue") == "exchange":
                ends.append(item.get("destination"))
            for end in ends:
                if isinstance(end, str) and end not in _BUILTIN and (item["vhost"], end) not in declared:
                    missing.setdefault((item["vhost"], end), []).append(
                        f"{item.get('source')} -> {item.get('destination')}")
        unknown = sorted({name for (_v, name) in missing if name not in exchange_types})
        if unknown:
            raise TopologyError(
                f"{self.name}: bindings use exchange(s) the definitions do not declare: "
                + ", ".join(f"'{n}'" for n in unknown)
                + ". RabbitMQ 3.10 leaves internal exchanges out of its export; give each one's "
                "type (--exchange-type NAME=TYPE, or exchange_types={NAME: TYPE})")
        for (vhost, name) in sorted(missing):
            exchanges.append({"name": name, "vhost": vhost, "type": exchange_types[name],
                              "durable": True, "auto_delete": False, "internal": True,
                              "arguments": {}})
            self.notes.append(f"exchange '{name}' in vhost '{vhost}' is bound but not exported; "
                              f"taken as an internal {exchange_types[name]} exchange")
        queue_names = {(q["vhost"], q.get("name")) for q in queues}
        orphans = [b for b in bindings if b.get("destination_type", "queue") == "queue"
                   and (b["vhost"], b.get("destination")) not in queue_names]
        if orphans:
            bindings = [b for b in bindings if not any(b is o for o in orphans)]
            self.notes.append(f"{len(orphans)} binding(s) to queues the export leaves out (exclusive "
                              "queues: " + ", ".join(sorted({f"'{b.get('destination')}'" for b in orphans}))
                              + ") set aside")
        voids = 0
        for item in bindings:
            arguments = item.get("arguments") or {}
            if any(v == "undefined" for k, v in arguments.items() if k != "x-match"):
                item["arguments"] = {k: None if v == "undefined" and k != "x-match" else v
                                     for k, v in arguments.items()}
                voids += 1
        if voids:
            self.notes.append(f"{voids} binding(s) have an argument exported as \"undefined\": "
                              "RabbitMQ's export of a void value, read back as void (the header "
                              "need only be present)")
        for item in exchanges:
            self._apply_policies(item, policies)
            arguments = item.get("arguments") or {}
            if item.get("type") == "x-delayed-message" and arguments.get("x-delayed-type") in EXCHANGE_TYPES:
                item["type"] = arguments["x-delayed-type"]
                self.notes.append(f"exchange '{item.get('name')}' (x-delayed-message) routes as its "
                                  f"x-delayed-type {item['type']}; the delay is not modelled")
            _plugin_notes(item, self.notes)
        stripped = 0
        for item in queues:
            if item.get("arguments") or item.get("type") not in (None, "classic"):
                stripped += 1
            item["arguments"], item["type"] = {}, "classic"
        if stripped:
            self.notes.append(f"arguments and types of {stripped} queue(s) set aside: they change "
                              "no routing (dead-lettering and expiry are not replayed)")
        if policies:
            self.notes.append(f"{len(policies)} polic{'y' if len(policies) == 1 else 'ies'} read for "
                              "alternate exchanges; other policy keys change no routing")
        for aside in ("parameters", "global_parameters"):
            if document.get(aside):
                self.notes.append(f"{len(document[aside])} {aside} set aside "
                                  "(they change no routing)")
        names = sorted(v for v in vhosts if isinstance(v, str))
        return {"vhosts": [{"name": v} for v in names], "exchanges": exchanges,
                "queues": queues, "bindings": bindings}

    def _apply_policies(self, exchange: dict[str, Any], policies: list[dict[str, Any]]) -> None:
        arguments = dict(exchange.get("arguments") or {})
        if "alternate-exchange" in arguments:
            return  # the exchange's own argument wins over any policy
        best: dict[str, Any] | None = None
        for policy in policies:
            if policy["vhost"] != exchange["vhost"] or policy.get("apply-to", "all") not in (
                    "all", "exchanges"):
                continue
            definition = policy.get("definition") or {}
            if "alternate-exchange" not in definition:
                continue
            try:  # (as the broker compiles a policy's pattern: within embroker._regex's bounds)
                pattern = _regex.compile_set(str(policy.get("pattern", "")))
            except _regex.error as exc:
                raise TopologyError(f"{self.name}: policy '{policy.get('name')}' has a pattern "
                                    f"embroker cannot compile: {exc}") from None
            if not pattern.search(str(exchange.get("name"))):
                continue
            if best is None or policy.get("priority", 0) > best.get("priority", 0):
                best = policy
        if best is not None:
            arguments["alternate-exchange"] = best["definition"]["alternate-exchange"]
            exchange["arguments"] = arguments
            self.notes.append(f"policy '{best.get('name')}' gives exchange '{exchange.get('name')}' "
                              f"the alternate exchange '{arguments['alternate-exchange']}'")

    # -- views ---------------------------------------------------------------------------------

    @property
    def vhosts(self) -> list[str]:
        return [v["name"] for v in self.document["vhosts"]]

    def broker(self) -> Broker:
        """A fresh model broker holding this topology.

        Raises:
            TopologyError: the model refuses the document (a declaration RabbitMQ would
                refuse too), with the model's reason.
        """
        broker = Broker(vhosts=(), trace_limit=1, plugins=_ROUTING_PLUGINS)
        try:
            broker.load_definitions(self.document)
        except (DefinitionsError, AMQPError) as exc:
            raise TopologyError(f"{self.name}: {exc}") from None
        return broker


class Route(NamedTuple):
    """Where one message goes under a topology.

    Attributes:
        queues: the queues it reaches, sorted.
        bindings: ids of every binding it matched along its path (see :meth:`Router.bindings`).
        exchanges: the exchanges it passed through, in the order they were visited.
        alternates: the exchanges that passed it on to their alternate exchange.
        error: why RabbitMQ would refuse the publish (no such exchange or vhost, internal
            exchange), or ``None``.
    """

    queues: tuple[str, ...]
    bindings: tuple[int, ...]
    exchanges: tuple[str, ...]
    alternates: tuple[str, ...]
    error: str | None


class BindingRow(NamedTuple):
    """One binding of the topology, with the id routes refer to."""

    id: int
    vhost: str
    source: str
    destination: str
    destination_type: str
    routing_key: str
    arguments: str
    #: True for the default exchange's binding of each queue (implicit in RabbitMQ).
    implicit: bool


@final
class Router:
    """embroker's routing model over one topology; picklable as plain data.

    >>> router = Router(Topology({"exchanges": [{"name": "x", "type": "topic"}],
    ...     "queues": [{"name": "q"}], "bindings": [{"source": "x", "destination": "q",
    ...     "destination_type": "queue", "routing_key": "a.*"}]}))
    >>> router.route("/", "x", ["a.b"], None).queues
    ('q',)
    """

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self._broker: Broker | None = None
        self._ids: dict[int, int] = {}
        self._rows: list[BindingRow] = []

    def __getstate__(self) -> dict[str, Any]:
        return {"topology": self.topology}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["topology"])

    def _compiled(self) -> Broker:
        if self._broker is None:
            broker = self.topology.broker()
            rows: list[BindingRow] = []
            ids: dict[int, int] = {}
            for vname, vhost in broker.vhosts.items():
                for exchange in vhost.exchanges.values():
                    for binding in exchange.bindings.values():
                        ids[id(binding)] = len(rows)
                        rows.append(_row(len(rows), vname, binding, implicit=False))
                for queue in vhost.queues.values():
                    binding = queue.default_binding
                    ids[id(binding)] = len(rows)
                    rows.append(_row(len(rows), vname, binding, implicit=True))
            self._broker, self._ids, self._rows = broker, ids, rows
        return self._broker

    @property
    def broker(self) -> Broker:
        """The model broker this router routes with."""
        return self._compiled()

    def bindings(self) -> list[BindingRow]:
        """Every binding, explicit ones first per vhost, then each queue's implicit binding to
        the default exchange; a binding's position is its id."""
        self._compiled()
        return list(self._rows)

    def queues(self) -> list[tuple[str, str]]:
        """Every queue as ``(vhost, name)``."""
        return [(v, q) for v, vh in self._compiled().vhosts.items() for q in vh.queues]

    def exchanges(self) -> list[tuple[str, str, str]]:
        """Every exchange as ``(vhost, name, type)``, the built-in ones included."""
        return [(v, x.name, x.type) for v, vh in self._compiled().vhosts.items()
                for x in vh.exchanges.values()]

    def header_names(self) -> frozenset[str]:
        """Header names some headers-exchange binding looks at: the only headers that can
        change a route (messages that differ in other headers route alike)."""
        names: set[str] = set()
        for row in self.bindings():
            if row.arguments != "{}":
                names.update(json.loads(row.arguments))
        names.discard("x-match")
        names |= _hash_headers(self._compiled())
        return frozenset(names)

    def route(self, vhost: str, exchange: str, keys: Sequence[str],
              headers: Mapping[str, Any] | None) -> Route:
        """Route one message: published to ``exchange`` in ``vhost`` with ``keys`` (the routing
        key, then CC and BCC values) and ``headers``. Never raises for a refused publish: the
        reason is in :attr:`Route.error`."""
        broker = self._compiled()
        vh = broker.vhosts.get(vhost)
        if vh is None:
            return Route((), (), (), (), f"no vhost '{vhost}' in the definitions")
        try:
            queues, matched, visited = vh.route_keys(exchange, keys, headers)
        except AMQPError as exc:
            return Route((), (), (), (), exc.reply_text)
        ids = self._ids
        return Route(tuple([q.name for q in queues]), tuple([ids[id(b)] for b in matched]),
                     tuple([x.name for x, _b, _ae in visited]),
                     tuple([x.name for x, _b, ae in visited if ae]), None)

    def explain_difference(self, vhost: str, exchange: str, keys: Sequence[str],
                           headers: Mapping[str, Any] | None, recorded: Iterable[str]) -> str:
        """Why the model's route differs from the queues RabbitMQ recorded, in words that
        group alike disagreements (no message-specific values other than names)."""
        route = self.route(vhost, exchange, keys, headers)
        if route.error is not None:
            return f"the model refuses the publish: {route.error}"
        vh = self._compiled().vhosts[vhost]
        recorded_set, model_set = set(recorded), set(route.queues)
        rows = self._rows
        reasons: list[str] = []
        visited = [vh.exchanges[name] for name in route.exchanges]
        for name in sorted(recorded_set - model_set):
            queue = vh.queues.get(name)
            if queue is None:
                reasons.append(f"queue '{name}' is not in the definitions")
                continue
            reasons.append(_why_not(queue, visited, keys, headers))
        for name in sorted(model_set - recorded_set):
            via = [rows[i] for i in route.bindings
                   if rows[i].destination == name and rows[i].destination_type == "queue"]
            what = ", ".join(f"binding {_describe(r)}" for r in via) or "a binding"
            reasons.append(f"queue '{name}' reached in the model through {what}; "
                           "RabbitMQ did not route there")
        return "; ".join(reasons) or "same queues"


def _row(index: int, vhost: str, binding: Binding, *, implicit: bool) -> BindingRow:
    return BindingRow(index, vhost, binding.source.name, binding.destination.name,
                      binding.destination.kind, binding.routing_key,
                      json.dumps(_plain(binding.arguments), sort_keys=True), implicit)


def _plain(value: Any) -> Any:
    from ._headers import to_json_value

    return copy.deepcopy(to_json_value(value))


def _describe(row: BindingRow) -> str:
    args = f" {row.arguments}" if row.arguments != "{}" else ""
    return (f"'{row.source}' -> {row.destination_type} '{row.destination}' "
            f"key '{row.routing_key}'{args}")


def _why_not(queue: Queue, visited: list[Exchange], keys: Sequence[str],
             headers: Mapping[str, Any] | None) -> str:
    on_path = {x.name for x in visited}
    into = [b for b in queue.bindings.values() if b.source.name in on_path]
    if not into:
        sources = sorted({b.source.name for b in queue.bindings.values()})
        return (f"queue '{queue.name}' missing: no binding from the exchanges on the path "
                f"({', '.join(repr(n) for n in sorted(on_path))}) leads to it"
                + (f" (it is bound from {', '.join(repr(s) for s in sources)})" if sources else ""))
    return (f"queue '{queue.name}' missing: "
            + "; ".join(f"binding {b.describe()} does not match" for b in into))


def mismatch_details(router: Router, vhost: str, exchange: str, keys: Sequence[str],
                     headers: Mapping[str, Any] | None, queue: str) -> list[str]:
    """For one message, why each binding into ``queue`` from an exchange on its path does not
    match it (the model's own words)."""
    route = router.route(vhost, exchange, keys, headers)
    vh = router.broker.vhosts.get(vhost)
    if vh is None or queue not in vh.queues:
        return []
    details = []
    for binding in vh.queues[queue].bindings.values():
        if binding.source.name in route.exchanges:
            for key in keys:
                why = binding.source.mismatch(binding, key, headers)
                if why:
                    details.append(f"{binding.describe()}: {why}")
    return details
