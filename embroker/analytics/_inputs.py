"""Traffic inputs, read into one canonical table.

Theory of operation
-------------------
Every input becomes rows of :data:`TRAFFIC_SCHEMA`: where a message was published (vhost,
exchange), every routing key it was routed with (the routing key, then its ``CC`` and ``BCC``
values), its headers as typed JSON text (see :mod:`._headers`), its body size, when it was
published, and — when the recording knows them — the queues RabbitMQ routed it to.

JSON-lines inputs are read here, line by line, so an error names its line; Parquet inputs are
read by Spark directly (see ``_spark.read_traffic``). One JSON-lines file may mix:

* **RabbitMQ tracing-plugin logs** (``rabbitmq_tracing``, JSON format). Only ``"type":
  "published"`` lines are messages (``"received"`` lines are deliveries). What the plugin loses
  is documented in :func:`tracing_headers`; ``routing_keys`` keeps CC and BCC keys, while BCC is
  gone from the headers; the payload may be cut at the trace's ``max_payload_bytes``, so ``size``
  is the logged payload's.
* **plain lines** with ``exchange``, ``routing_key`` (or ``routing_keys``), optional
  ``headers`` (a JSON object, typed or not), ``vhost``, ``size``, ``published_at`` (ISO 8601 or
  seconds), ``routed_queues``, ``mandatory``; ``CC``/``BCC`` headers add routing keys as a
  publish does.

Whether a publish was mandatory (so that reaching no queue means *returned* rather than
*dropped*) is in neither of RabbitMQ's traces; embroker's own trace and plain inputs may say.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _headers

if TYPE_CHECKING:
    import pyarrow as pa

    from ..model import RoutingDecision

__all__ = [
    "TRAFFIC_COLUMNS",
    "TrafficError",
    "export_trace",
    "parse_line",
    "read_json_lines",
    "tracing_headers",
    "traffic_schema",
]

#: The canonical columns, in order.
TRAFFIC_COLUMNS = ("line", "vhost", "exchange", "routing_key", "routing_keys", "headers", "size",
                   "published_at", "routed_queues", "mandatory")

_NOT_UTF8 = "Not UTF-8, base64 is: "
_BATCH = 65_536


class TrafficError(ValueError):
    """Traffic that cannot be read, with the file and line."""


def traffic_schema() -> pa.Schema:
    """The canonical traffic schema as Arrow types."""
    import pyarrow as pa

    return pa.schema([
        ("line", pa.int64()), ("vhost", pa.string()), ("exchange", pa.string()),
        ("routing_key", pa.string()), ("routing_keys", pa.list_(pa.string())),
        ("headers", pa.string()), ("size", pa.int64()),
        ("published_at", pa.timestamp("us", tz="UTC")),
        ("routed_queues", pa.list_(pa.string())), ("mandatory", pa.bool_()),
    ])


def tracing_headers(value: Any) -> Any:
    """A header value as the tracing plugin logged it, back to the closest AMQP value.

    What RabbitMQ 3.10's JSON trace does to headers (seen on the real plugin): integers of every
    width and timestamps become JSON numbers (a timestamp compares as its seconds, so routing
    is unchanged); void becomes the string ``"undefined"`` (read back as void: a header that
    really was the string "undefined" is misread); a byte array that is valid UTF-8 becomes a
    plain string (RabbitMQ compares both as binaries, so routing is unchanged) and any other one
    ``"Not UTF-8, base64 is: ..."`` (decoded back here); decimals are mangled (``1.25`` is
    logged as ``2.125``), so a headers binding on a decimal value cannot be replayed from a log.
    """
    if isinstance(value, str):
        if value == "undefined":
            return None
        if value.startswith(_NOT_UTF8):
            try:
                return base64.b64decode(value[len(_NOT_UTF8):], validate=True)
            except ValueError:
                return value
        return value
    if isinstance(value, dict):
        return {k: tracing_headers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [tracing_headers(v) for v in value]
    return value


def _timestamp(value: Any, where: str) -> datetime.datetime | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise TrafficError(f"{where}: a time must be ISO 8601 text or seconds, not {value!r}")
    if isinstance(value, (int, float)):
        return datetime.datetime.fromtimestamp(value, datetime.timezone.utc)
    if isinstance(value, str):
        try:
            parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise TrafficError(f"{where}: {value!r} is not an ISO 8601 time") from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.timezone.utc)
    raise TrafficError(f"{where}: a time must be ISO 8601 text or seconds, not {value!r}")


def _strings(value: Any, field: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TrafficError(f"{where}: '{field}' must be a list of strings, not {value!r}")
    return value


def parse_line(obj: Any, line: int, default_vhost: str, where: str) -> dict[str, Any] | None:
    """One JSON-lines object to a canonical row (``None`` for a line that is no publish).

    Raises:
        TrafficError: the object is not a message this module knows.
    """
    if not isinstance(obj, dict):
        raise TrafficError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if "routing_keys" in obj and "payload" in obj and "type" in obj:  # rabbitmq_tracing
        if obj["type"] != "published":
            return None
        keys = _strings(obj["routing_keys"], "routing_keys", where)
        if not keys:
            raise TrafficError(f"{where}: 'routing_keys' is empty")
        properties = obj.get("properties") or {}
        headers = properties.get("headers") if isinstance(properties, dict) else None
        if headers is not None and not isinstance(headers, dict):
            raise TrafficError(f"{where}: 'properties.headers' must be an object")
        recorded = obj.get("routed_queues")
        payload = obj.get("payload")
        try:
            size = len(base64.b64decode(payload)) if isinstance(payload, str) else None
        except ValueError:
            raise TrafficError(f"{where}: 'payload' is not base64") from None
        return {"line": line, "vhost": obj.get("vhost", default_vhost),
                "exchange": _exchange(obj.get("exchange"), where), "routing_key": keys[0],
                "routing_keys": keys,
                "headers": _headers.dumps(tracing_headers(headers)) if headers is not None else None,
                "size": size, "published_at": _timestamp(obj.get("timestamp"), where),
                "routed_queues": _strings(recorded, "routed_queues", where)
                if isinstance(recorded, list) else None, "mandatory": None}
    if "exchange" not in obj:
        raise TrafficError(f"{where}: no 'exchange' (expected a rabbitmq_tracing log line or a "
                           "line with exchange, routing_key and headers)")
    headers = obj.get("headers")
    if headers is not None and not isinstance(headers, dict):
        raise TrafficError(f"{where}: 'headers' must be a JSON object, not {headers!r}")
    if "routing_keys" in obj:
        keys = _strings(obj["routing_keys"], "routing_keys", where)
        if not keys:
            raise TrafficError(f"{where}: 'routing_keys' is empty")
    else:
        key = obj.get("routing_key", "")
        if not isinstance(key, str):
            raise TrafficError(f"{where}: 'routing_key' must be a string, not {key!r}")
        keys = [key]
        for name in ("CC", "BCC"):
            if headers and isinstance(headers.get(name), list):
                keys.extend(v for v in headers[name] if isinstance(v, str))
        if headers and "BCC" in headers:
            headers = {k: v for k, v in headers.items() if k != "BCC"}
    size = obj.get("size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool)):
        raise TrafficError(f"{where}: 'size' must be an integer, not {size!r}")
    mandatory = obj.get("mandatory")
    if mandatory is not None and not isinstance(mandatory, bool):
        raise TrafficError(f"{where}: 'mandatory' must be true or false, not {mandatory!r}")
    recorded = obj.get("routed_queues")
    return {"line": line, "vhost": obj.get("vhost") or default_vhost,
            "exchange": _exchange(obj["exchange"], where), "routing_key": obj.get("routing_key", keys[0]),
            "routing_keys": keys,
            "headers": json.dumps(headers, separators=(",", ":"), ensure_ascii=False)
            if headers is not None else None,
            "size": size, "published_at": _timestamp(obj.get("published_at"), where),
            "routed_queues": None if recorded is None else _strings(recorded, "routed_queues", where),
            "mandatory": mandatory}


def _exchange(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TrafficError(f"{where}: 'exchange' must be a string, not {value!r}")
    return value


def read_json_lines(path: str | os.PathLike[str], *, vhost: str = "/") -> Iterator[pa.RecordBatch]:
    """Read a JSON-lines traffic file as canonical Arrow batches.

    Raises:
        TrafficError: missing file, or a bad line (with its 1-based number).
    """
    import pyarrow as pa

    schema = traffic_schema()
    rows: list[dict[str, Any]] = []
    p = Path(path)
    try:
        handle = p.open(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        raise TrafficError(f"{p}: no such traffic file") from None
    except OSError as exc:
        raise TrafficError(f"{p}: cannot read: {exc.strerror or exc}") from None
    with handle:
        for number, text in enumerate(handle, 1):
            if not text.strip():
                continue
            where = f"{p}:{number}"
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise TrafficError(f"{where}: not JSON ({exc.msg} at column {exc.colno})") from None
            row = parse_line(obj, number, vhost, where)
            if row is not None:
                rows.append(row)
            if len(rows) >= _BATCH:
                yield pa.RecordBatch.from_pylist(rows, schema=schema)
                rows = []
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=schema)


def write_parquet(batches: Iterator[pa.RecordBatch], path: str | os.PathLike[str]) -> int:
    """Write canonical batches to one Parquet file; returns the number of rows."""
    import pyarrow.parquet as pq

    count = 0
    with pq.ParquetWriter(str(path), traffic_schema()) as writer:
        for batch in batches:
            writer.write_batch(batch)
            count += batch.num_rows
    return count


def export_trace(decisions: Sequence[RoutingDecision] | Any, path: str | os.PathLike[str], *,
                 published_at: Mapping[int, datetime.datetime] | None = None) -> int:
    """Write embroker's own routing trace (``broker.trace``) as canonical Parquet traffic, with
    the queues embroker routed each message to as ``routed_queues``.

    As RabbitMQ's firehose, only client publishes are kept: refused publishes (no such
    exchange...) and dead-lettered republishes are left out. Headers keep their types.

    Returns:
        the number of messages written.
    """
    import pyarrow as pa

    rows = []
    for number, decision in enumerate(decisions, 1):
        if decision.error is not None or decision.dead_letter is not None:
            continue
        headers = decision.message.properties.get("headers")
        rows.append({"line": number, "vhost": decision.vhost, "exchange": decision.exchange,
                     "routing_key": decision.routing_key, "routing_keys": list(decision.keys),
                     "headers": _headers.dumps(headers) if headers is not None else None,
                     "size": None if decision.body_dropped else len(decision.message.body),
                     "published_at": (published_at or {}).get(number),
                     "routed_queues": list(decision.queues), "mandatory": decision.mandatory})
    batch = pa.RecordBatch.from_pylist(rows, schema=traffic_schema())
    return write_parquet(iter([batch]), path)
