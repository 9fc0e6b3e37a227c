"""Routing distinct inputs in Spark's Python workers (the function ``mapInArrow`` runs).

Kept apart from the driver code so that a worker imports only this, the router and the model.
Each worker compiles a topology once (cached by fingerprint) however many tasks it runs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from . import _headers
from ._topology import Router

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["KEY_COLUMNS", "RouteBatches", "output_ddl"]

#: What identifies a routing input (``hkey``: the headers that can change a route).
KEY_COLUMNS = ("vhost", "exchange", "routing_keys", "hkey")

_CACHE: dict[str, Router] = {}


def _cached(router: Router) -> Router:
    key = router.topology.fingerprint
    found = _CACHE.get(key)
    if found is None:
        found = _CACHE[key] = router
    return found


def output_ddl(count: int) -> str:
    """Spark DDL of the routed table for ``count`` routers (suffixes 0, 1...)."""
    cols = ["vhost string", "exchange string", "routing_keys array<string>", "hkey string",
            "phantom array<string>"]
    for i in range(count):
        cols += [f"queues{i} array<string>", f"bindings{i} array<int>",
                 f"exchanges{i} array<string>", f"alternates{i} array<string>",
                 f"error{i} string"]
    return ", ".join(cols)


def _output_schema(count: int) -> pa.Schema:
    import pyarrow as pa

    fields = [("vhost", pa.string()), ("exchange", pa.string()),
              ("routing_keys", pa.list_(pa.string())), ("hkey", pa.string()),
              ("phantom", pa.list_(pa.string()))]
    for i in range(count):
        fields += [(f"queues{i}", pa.list_(pa.string())), (f"bindings{i}", pa.list_(pa.int32())),
                   (f"exchanges{i}", pa.list_(pa.string())),
                   (f"alternates{i}", pa.list_(pa.string())), (f"error{i}", pa.string())]
    return pa.schema(fields)


class RouteBatches:
    """Callable for ``DataFrame.mapInArrow``: routes each row (a distinct routing input) with
    every router. Pickles as the routers' topologies (plain data)."""

    def __init__(self, routers: Sequence[Router]) -> None:
        self.routers = list(routers)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        routers = [_cached(r) for r in self.routers]
        schema = _output_schema(len(routers))
        queue_names = [{v: set(vh.queues) for v, vh in r.broker.vhosts.items()} for r in routers]
        for batch in batches:
            vhosts = batch.column("vhost").to_pylist()
            exchanges = batch.column("exchange").to_pylist()
            keys = batch.column("routing_keys").to_pylist()
            headers = batch.column("headers").to_pylist()
            columns: list[Any] = [pa.array(vhosts, pa.string()), pa.array(exchanges, pa.string()),
                                  pa.array(keys, pa.list_(pa.string())),
                                  batch.column("hkey").cast(pa.string())]
            decoded = [_headers.loads(h) for h in headers]
            phantom = []
            for v, x, k in zip(vhosts, exchanges, keys, strict=True):
                # RabbitMQ's trace names the queue of every key published to the default
                # exchange, whether or not that queue exists.
                if x == "":
                    known = queue_names[0].get(v, set())
                    phantom.append(sorted({q for q in k if q not in known}))
                else:
                    phantom.append([])
            columns.append(pa.array(phantom, pa.list_(pa.string())))
            for router in routers:
                routes = [router.route(v, x, k, h)
                          for v, x, k, h in zip(vhosts, exchanges, keys, decoded, strict=True)]
                columns += [pa.array([list(r.queues) for r in routes], pa.list_(pa.string())),
                            pa.array([list(r.bindings) for r in routes], pa.list_(pa.int32())),
                            pa.array([list(r.exchanges) for r in routes], pa.list_(pa.string())),
                            pa.array([list(r.alternates) for r in routes], pa.list_(pa.string())),
                            pa.array([r.error for r in routes], pa.string())]
            yield pa.RecordBatch.from_arrays(columns, schema=schema)
