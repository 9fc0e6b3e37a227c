"""Parsing recorded logs in Spark's Python workers (the function ``mapInArrow`` runs over the
lines of JSON-lines logs, or the records of the tracing plugin's text format).

Each row comes numbered (``line``: across the input's files in name order; ``file_line``:
within its file) with the URI of its file; a row that cannot be read is kept with its error
(file and line named), so the driver reports the first one without any per-message data.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["PARSED_DDL", "ParseBatches"]

#: The parsed table: the canonical traffic columns, then where each row came from.
PARSED_DDL = ("line long, vhost string, exchange string, routing_key string, "
              "routing_keys array<string>, headers string, size long, published_at timestamp, "
              "routed_queues array<string>, mandatory boolean, error string, file string, "
              "file_line long")


def _schema() -> pa.Schema:
    import pyarrow as pa

    from ._inputs import traffic_schema

    return pa.schema([*traffic_schema(), ("error", pa.string()), ("file", pa.string()),
                      ("file_line", pa.int64())])


class ParseBatches:
    """Callable for ``DataFrame.mapInArrow`` over ``(line, file_line, file, value)``:
    ``kind`` is ``"json"`` (one message per line) or ``"text"`` (one record of the tracing
    plugin's text format per row)."""

    def __init__(self, kind: str, vhost: str) -> None:
        if kind not in ("json", "text"):
            raise ValueError(f"unknown log kind {kind!r}")
        self.kind = kind
        self.vhost = vhost

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from ._files import display
        from ._inputs import TrafficError, parse_line
        from ._tracetext import parse_record

        schema = _schema()
        shown: dict[str, str] = {}
        for batch in batches:
            rows: list[dict[str, Any]] = []
            for line, file_line, file, value in zip(
                    batch.column("line").to_pylist(), batch.column("file_line").to_pylist(),
                    batch.column("file").to_pylist(), batch.column("value").to_pylist(), strict=True):
                name = shown.get(file)
                if name is None:
                    name = shown[file] = display(file)
                where = f"{name}:{file_line}"
                try:
                    if self.kind == "text":
                        row = parse_record(value, line, self.vhost, where)
                    elif not value.strip():
                        continue
                    else:
                        try:
                            obj = json.loads(value)
                        except json.JSONDecodeError as exc:
                            raise TrafficError(f"{where}: not JSON ({exc.msg} at column "
                                               f"{exc.colno})") from None
                        row = parse_line(obj, line, self.vhost, where)
                except TrafficError as exc:
                    rows.append({"line": line, "error": str(exc), "file": file,
                                 "file_line": file_line})
                    continue
                if row is not None:
                    row.update(error=None, file=file, file_line=file_line)
                    rows.append(row)
            yield pa.RecordBatch.from_pylist(rows, schema=schema)
