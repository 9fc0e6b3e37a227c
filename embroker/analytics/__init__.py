"""Routing analytics: replay recorded RabbitMQ traffic through a topology with embroker's model,
on Spark (the ``spark`` extra: ``pip install 'embroker[spark]'``, Python 3.11+, Java 17 or 21).

Importing this package needs neither pyspark nor pyarrow; the functions that run Spark import it
when called. The router (:class:`Router`, :class:`Topology`) is pure Python over the model.
"""

from __future__ import annotations

from ._analyze import analyze
from ._headers import dumps as dump_headers
from ._headers import loads as load_headers
from ._inputs import TrafficError, export_trace
from ._topology import Route, Router, Topology, TopologyError

__all__ = ["Route", "Router", "Topology", "TopologyError", "TrafficError", "analyze",
           "dump_headers", "export_trace", "load_headers"]
