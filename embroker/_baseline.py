"""A broker's baseline and the fast reset to it (for a broker shared by many tests).

An application whose workers take seconds to start connects them once, to a broker of a wider
scope; each test then starts from the same state with ``broker.reset()`` instead of a new broker.
The baseline (``broker.mark_baseline()``) is the topology at that moment: each virtual host's
exchanges, queues and bindings. A reset

- forgets the trace (routing decisions and the messages' histories) and the incidents (what the
  broker refused or dropped);
- purges every ready message (what workers hold unacknowledged stays theirs), and the messages
  plugin exchanges keep (held by a delayed-message exchange, a recent-history exchange's);
- deletes the exchanges and queues declared since the baseline (their consumers are cancelled,
  as when a queue is deleted) and the bindings added since, and declares again what was deleted;
- lifts a publisher block.

It costs about the size of the topology, not of a new broker and new worker connections.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .model import Broker, Queue, VirtualHost
    from .model._exchange import Exchange

__all__ = ["Baseline", "reset", "take"]


class _ExchangeSpec(NamedTuple):
    name: str
    type: str
    durable: bool
    auto_delete: bool
    internal: bool
    arguments: dict[str, Any]


class _QueueSpec(NamedTuple):
    name: str
    durable: bool
    auto_delete: bool
    arguments: dict[str, Any]
    exclusive: bool


class _BindingSpec(NamedTuple):
    source: str
    kind: str
    destination: str
    routing_key: str
    arguments: dict[str, Any]


class _VhostBaseline(NamedTuple):
    exchanges: dict[str, tuple[Exchange, _ExchangeSpec]]
    queues: dict[str, tuple[Queue, _QueueSpec]]
    bindings: dict[tuple[Any, ...], _BindingSpec]


class Baseline(NamedTuple):
    """A broker's topology at one moment, per virtual host."""

    vhosts: dict[str, _VhostBaseline]


def _vhost_baseline(vhost: VirtualHost) -> _VhostBaseline:
    exchanges = {name: (x, _ExchangeSpec(name, x.type, x.durable, x.auto_delete, x.internal,
                                         dict(x.arguments)))
                 for name, x in vhost.exchanges.items()}
    queues = {name: (q, _QueueSpec(name, q.durable, q.auto_delete, dict(q.arguments),
                                   q.exclusive))
              for name, q in vhost.queues.items()}
    bindings = {}
    for exchange in vhost.exchanges.values():
        for key, binding in exchange.bindings.items():
            bindings[key] = _BindingSpec(exchange.name, binding.destination.kind,
                                         binding.destination.name, binding.routing_key,
                                         dict(binding.arguments))
    return _VhostBaseline(exchanges, queues, bindings)


def take(broker: Broker) -> Baseline:
    """The broker's topology now."""
    with broker.locked():
        return Baseline({name: _vhost_baseline(v) for name, v in broker.vhosts.items()})


def reset(broker: Broker, baseline: Baseline) -> None:
    """Bring ``broker`` back to ``baseline`` (see the module's docstring)."""
    with broker.locked():
        for name, base in baseline.vhosts.items():
            vhost = broker.vhosts.get(name) or broker.add_vhost(name)
            _reset_vhost(vhost, base)
        broker.trace.clear()
        broker.incidents.clear()
        if broker.plugins.delayed is not None:
            broker.plugins.delayed.clear()
        broker.unblock_publishers()


def _reset_vhost(vhost: VirtualHost, base: _VhostBaseline) -> None:
    for name, queue in list(vhost.queues.items()):
        known = base.queues.get(name)
        if (known is None or known[0] is not queue) and not queue.deleted:
            vhost.delete_queue_object(queue)
    for name, exchange in list(vhost.exchanges.items()):
        known_x = base.exchanges.get(name)
        if (known_x is None or known_x[0] is not exchange) and name:
            vhost._delete_exchange(exchange)
    for name, (_x, spec) in list(base.exchanges.items()):
        if name not in vhost.exchanges:
            base.exchanges[name] = (vhost.declare_exchange(
                name, spec.type, durable=spec.durable, auto_delete=spec.auto_delete,
                internal=spec.internal, arguments=spec.arguments), spec)
    for name, (_q, qspec) in list(base.queues.items()):
        if name not in vhost.queues and not qspec.exclusive:  # an exclusive one went with its owner
            vhost.declare_queue(name, None, durable=qspec.durable, auto_delete=qspec.auto_delete,
                                arguments=qspec.arguments)
            base.queues[name] = (vhost.queues[name], qspec)
    for exchange in list(vhost.exchanges.values()):
        for key, binding in list(exchange.bindings.items()):
            if key not in base.bindings:
                vhost._remove_binding(binding)
    for key, bspec in base.bindings.items():
        source = vhost.exchanges.get(bspec.source)
        if source is not None and key not in source.bindings:
            vhost.bind(bspec.source, bspec.kind, bspec.destination, bspec.routing_key,
                       bspec.arguments, None)
    for queue in vhost.queues.values():
        queue.purge()
    for exchange in vhost.exchanges.values():
        exchange.forget_messages()
