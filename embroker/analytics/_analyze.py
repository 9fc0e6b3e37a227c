"""The analyses over replayed traffic, and the files ``embroker analyze`` writes.

Everything here aggregates the grouped, routed table of :func:`._spark.replay` (one row per
routing input, recorded queues and time window) in Spark; the results are small (bounded by the
topology's size or the number of distinct inputs) and come back to the driver, which writes each
as one Parquet file and feeds the report. Only ``routes.jsonl`` is per message.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _headers
from ._route import KEY_COLUMNS
from ._topology import Router, mismatch_details

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from ._spark import Replay

__all__ = ["analyze", "analyze_replay", "write_routes"]

#: How many disagreeing or changed routing inputs are explained one by one.
MAX_EXPLAINED = 2000


def _arrow(df: DataFrame) -> pa.Table:
    return df.toArrow()


def _write(table: pa.Table, path: Path) -> None:
    import pyarrow.parquet as pq

    pq.write_table(table, str(path))


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def analyze(definitions: str | os.PathLike[str], traffic: str | os.PathLike[str],
            out: str | os.PathLike[str], *, against: str | os.PathLike[str] | None = None,
            vhost: str = "/", exchange_types: dict[str, str] | None = None,
            spark: SparkSession | None = None, master: str | None = None,
            remote: str | None = None, conf: dict[str, str] | None = None,
            progress: Callable[[str], None] = lambda _m: None,
            spark_progress: bool = False) -> dict[str, Any]:
    """What ``embroker analyze`` does: replay ``traffic`` through ``definitions`` (and
    ``against``), write ``out/report.html``, ``out/routes.jsonl``, the Parquet tables and
    ``out/summary.json``, and return the summary.

    Args:
        spark: a session to use (kept open); without one, a session is started (``master``,
            ``remote``, ``conf``; local[*] by default) and stopped at the end.

    Raises:
        TopologyError: a definitions file that cannot be read or loaded.
        TrafficError: missing traffic, a bad line (with its number), vhosts the definitions
            do not define.
        AnalyticsError: no pyspark or no Java.
    """
    from ._spark import require_spark

    require_spark()
    from ._report import render_report
    from ._spark import prepare_traffic, read_traffic, replay, session
    from ._topology import Topology

    types = dict(exchange_types or {})
    routers = [Router(Topology.load(definitions, vhost=vhost, exchange_types=types))]
    if against is not None:
        routers.append(Router(Topology.load(against, vhost=vhost, exchange_types=types)))
    for router in routers:
        router.bindings()  # compile now: a topology the model refuses fails before Spark starts
    target = Path(out)
    clean_dir(target)
    progress(f"reading {traffic}")
    traffic_path = prepare_traffic(traffic, vhost=vhost, work_dir=target / "_input")
    own = spark is None
    if spark is None:
        progress(f"starting Spark ({'Spark Connect ' + remote if remote else master or 'local[*]'})")
        spark = session(master=master, remote=remote, conf=conf, progress=spark_progress)
    try:
        df = read_traffic(spark, traffic_path, vhost=vhost)
        rep = replay(spark, df, routers, progress=progress)
        summary = analyze_replay(spark, rep, target, progress=progress)
        progress("writing routes.jsonl")
        write_routes(df, rep, target)
        (target / "report.html").write_text(render_report(summary, traffic=str(traffic)),
                                            encoding="utf-8")
        rep.release()
    finally:
        if own:
            spark.stop()
    return summary


def analyze_replay(spark: SparkSession, rep: Replay, out: Path, *,
                   progress: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    """Compute every analysis, write its Parquet file under ``out``, and return the summary
    the report is made from (also written as ``summary.json``)."""
    import pyspark.sql.functions as F

    routed = rep.totals
    before = rep.routers[0]
    after = rep.routers[1] if len(rep.routers) > 1 else None
    summary: dict[str, Any] = {"inputs": rep.inputs, "window_seconds": rep.window,
                               "topology": before.topology.name,
                               "notes": list(before.topology.notes)}
    if after is not None:
        summary["against"] = after.topology.name
        summary["against_notes"] = list(after.topology.notes)

    progress("totals and agreement with the recorded queues")
    recorded = F.col("routed_queues").isNotNull()
    totals = routed.agg(
        F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"),
        F.sum(F.when(recorded, F.col("messages")).otherwise(0)).alias("recorded"),
        F.sum(F.when(F.col("agrees"), F.col("messages")).otherwise(0)).alias("agreeing"),
        F.sum(F.when(~F.col("agrees"), F.col("messages")).otherwise(0)).alias("disagreeing"),
        F.sum(F.when(F.size("phantom") > 0, F.col("messages")).otherwise(0)).alias("phantom"),
        F.sum(F.when(F.col("error0").isNotNull(), F.col("messages")).otherwise(0)).alias("refused"),
        F.sum(F.when(F.col("error0").isNull() & (F.size("queues0") == 0), F.col("messages"))
              .otherwise(0)).alias("unroutable"),
        F.sum(F.when(F.col("error0").isNull() & (F.size("queues0") == 0) & F.col("mandatory"),
                     F.col("messages")).otherwise(0)).alias("returned"),
        F.sum(F.when(F.size("alternates0") > 0, F.col("messages")).otherwise(0)).alias("via_alternate"),
    ).first()
    assert totals is not None
    summary.update({k: totals[k] or 0 for k in ("messages", "bytes", "recorded", "agreeing",
                                                "disagreeing", "phantom", "refused",
                                                "unroutable", "returned", "via_alternate")})

    # -- queues, bindings and exchanges: one aggregation, joined with the topology here ----------
    progress("traffic per queue, binding, exchange, routing key and time window")
    usage = _usage(routed, len(rep.routers))
    queues_t = _queue_table(before, usage, after)
    _write(queues_t, out / "queues.parquet")
    summary["queues"] = _rows(queues_t)

    bindings_t = _binding_table(before, usage, 0)
    _write(bindings_t, out / "bindings.parquet")
    summary["unused_bindings"] = [r for r in _rows(bindings_t)
                                  if r["messages"] == 0 and not r["implicit"]]
    summary["bindings"] = len([r for r in _rows(bindings_t) if not r["implicit"]])
    if after is not None:
        b_after = _binding_table(after, usage, 1)
        _write(b_after, out / "bindings_after.parquet")
        summary["unused_bindings_after"] = [r for r in _rows(b_after)
                                            if r["messages"] == 0 and not r["implicit"]]

    exchanges_t = _exchange_table(before, usage)
    _write(exchanges_t, out / "exchanges.parquet")
    summary["unused_exchanges"] = [r for r in _rows(exchanges_t) if r["messages"] == 0
                                   and r["exchange"] != "" and not r["exchange"].startswith("amq.")]
    summary["unused_queues"] = [r for r in summary["queues"] if r["messages"] == 0]

    keys_t = _arrow(routed.groupBy("vhost", "exchange", "routing_key")
                    .agg(F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"))
                    .orderBy(F.desc("messages"), "vhost", "exchange", "routing_key"))
    _write(keys_t, out / "routing_keys.parquet")
    summary["hot_keys"] = _rows(keys_t.slice(0, 20))
    summary["distinct_keys"] = keys_t.num_rows

    if rep.window:
        timed = rep.routed.filter(F.col("window_start").isNotNull())
        per_kind = [timed.select("window_start", "vhost", F.lit(kind).alias("kind"),
                                 F.explode(F.col(column).cast("array<string>")).alias("name"),
                                 "messages", "bytes")
                    for kind, column in (("queue", "queues0"), ("exchange", "exchanges0"),
                                         ("binding", "bindings0"))]
        windows_t = _arrow(per_kind[0].unionByName(per_kind[1]).unionByName(per_kind[2])
                           .groupBy("window_start", "vhost", "kind", "name")
                           .agg(F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"))
                           .orderBy("window_start", "vhost", "kind", "name"))
        _write(windows_t, out / "windows.parquet")
        summary["windows"] = [{"window_start": r["window_start"].isoformat(), "vhost": r["vhost"],
                               "queue": r["name"], "messages": r["messages"], "bytes": r["bytes"]}
                              for r in _rows(windows_t) if r["kind"] == "queue"]

    inputs_t = _arrow(routed.groupBy(*KEY_COLUMNS, "headers", "queues0", "bindings0", "exchanges0",
                                     "alternates0", "error0")
                      .agg(F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"),
                           F.min("example_line").alias("example_line"))
                      .drop("hkey")
                      .withColumnsRenamed({"queues0": "queues", "bindings0": "bindings",
                                           "exchanges0": "path", "alternates0": "alternates",
                                           "error0": "error"})
                      .orderBy(F.desc("messages")))
    _write(inputs_t, out / "inputs.parquet")

    # -- disagreements with the recording -------------------------------------------------------
    progress("explaining disagreements with the recorded queues")
    summary["disagreements"] = _disagreements(routed, before, out)

    # -- what-if --------------------------------------------------------------------------------
    if after is not None:
        progress("comparing the two topologies")
        summary.update(_what_if(routed, out))
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n",
                                      encoding="utf-8")
    return summary


#: What :func:`_usage` counts: (kind, column of the routed table).
_USAGE = (("queue", "queues"), ("binding", "bindings"), ("exchange", "exchanges"),
          ("alternate", "alternates"))

Usage = dict[tuple[str, str, str], tuple[int, int]]


def _usage(routed: DataFrame, routers: int) -> Usage:
    """Messages and bytes per (kind + router index, vhost, name) for queues, bindings,
    exchanges passed through and exchanges that handed on to their alternate exchange, in one
    Spark job."""
    import pyspark.sql.functions as F

    parts = []
    for i in range(routers):
        for kind, column in _USAGE:
            if i and kind in ("exchange", "alternate"):
                continue
            parts.append(routed.select(F.lit(f"{kind}{i}").alias("kind"), "vhost",
                                       F.explode(F.col(f"{column}{i}").cast("array<string>"))
                                       .alias("name"), "messages", "bytes"))
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part)
    table = _arrow(union.groupBy("kind", "vhost", "name")
                   .agg(F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes")))
    return {(r["kind"], r["vhost"], r["name"]): (r["messages"], r["bytes"]) for r in _rows(table)}


def _queue_table(before: Router, usage: Usage, after: Router | None) -> pa.Table:
    import pyarrow as pa

    names = sorted(set(before.queues()) | set(after.queues() if after else ()))
    rows = []
    for vhost, queue in names:
        m, b = usage.get(("queue0", vhost, queue), (0, 0))
        row: dict[str, Any] = {"vhost": vhost, "queue": queue, "messages": m, "bytes": b}
        if after is not None:
            m1, b1 = usage.get(("queue1", vhost, queue), (0, 0))
            row.update(messages_after=m1, bytes_after=b1)
        rows.append(row)
    rows.sort(key=lambda r: (-r["messages"], r["vhost"], r["queue"]))
    fields = [("vhost", pa.string()), ("queue", pa.string()), ("messages", pa.int64()),
              ("bytes", pa.int64())]
    if after is not None:
        fields += [("messages_after", pa.int64()), ("bytes_after", pa.int64())]
    return pa.Table.from_pylist(rows, schema=pa.schema(fields))


def _binding_table(router: Router, usage: Usage, i: int) -> pa.Table:
    import pyarrow as pa

    rows = []
    for b in router.bindings():
        m, n = usage.get((f"binding{i}", b.vhost, str(b.id)), (0, 0))
        rows.append({**b._asdict(), "messages": m, "bytes": n})
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("id", pa.int32()), ("vhost", pa.string()), ("source", pa.string()),
        ("destination", pa.string()), ("destination_type", pa.string()),
        ("routing_key", pa.string()), ("arguments", pa.string()), ("implicit", pa.bool_()),
        ("messages", pa.int64()), ("bytes", pa.int64())]))


def _exchange_table(router: Router, usage: Usage) -> pa.Table:
    import pyarrow as pa

    rows: list[dict[str, Any]] = []
    for vhost, name, xtype in router.exchanges():
        m, b = usage.get(("exchange0", vhost, name), (0, 0))
        rows.append({"vhost": vhost, "exchange": name, "type": xtype, "messages": m, "bytes": b,
                     "to_alternate": usage.get(("alternate0", vhost, name), (0, 0))[0]})
    rows.sort(key=lambda r: (-r["messages"], r["vhost"], r["exchange"]))
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("vhost", pa.string()), ("exchange", pa.string()), ("type", pa.string()),
        ("messages", pa.int64()), ("bytes", pa.int64()), ("to_alternate", pa.int64())]))


def _example(row: dict[str, Any]) -> dict[str, Any]:
    return {"line": row["example_line"], "vhost": row["vhost"], "exchange": row["exchange"],
            "routing_keys": row["routing_keys"], "headers": row["headers"]}


def _disagreements(routed: DataFrame, router: Router, out: Path) -> list[dict[str, Any]]:
    import pyarrow as pa
    import pyspark.sql.functions as F

    rows = _rows(_arrow(
        routed.filter(~F.col("agrees"))
        .groupBy(*KEY_COLUMNS, "headers", "routed_queues", "queues0")
        .agg(F.sum("messages").alias("messages"), F.min("example_line").alias("example_line"))
        .orderBy(F.desc("messages")).limit(MAX_EXPLAINED)))
    causes: dict[str, dict[str, Any]] = {}
    for row in rows:
        headers = _headers.loads(row["headers"])
        cause = router.explain_difference(row["vhost"], row["exchange"], row["routing_keys"],
                                          headers, row["routed_queues"])
        entry = causes.get(cause)
        if entry is None:
            missing = sorted(set(row["routed_queues"]) - set(row["queues0"]))
            details = [d for q in missing for d in mismatch_details(
                router, row["vhost"], row["exchange"], row["routing_keys"], headers, q)]
            entry = causes[cause] = {
                "cause": cause, "messages": 0, "inputs": 0, **_example(row),
                "recorded_queues": row["routed_queues"], "model_queues": row["queues0"],
                "details": details}
        entry["messages"] += row["messages"]
        entry["inputs"] += 1
    result = sorted(causes.values(), key=lambda e: -e["messages"])
    schema = pa.schema([("cause", pa.string()), ("messages", pa.int64()), ("inputs", pa.int64()),
                        ("line", pa.int64()), ("vhost", pa.string()), ("exchange", pa.string()),
                        ("routing_keys", pa.list_(pa.string())), ("headers", pa.string()),
                        ("recorded_queues", pa.list_(pa.string())),
                        ("model_queues", pa.list_(pa.string())), ("details", pa.list_(pa.string()))])
    _write(pa.Table.from_pylist(result, schema=schema), out / "disagreements.parquet")
    return result


def _what_if(routed: DataFrame, out: Path) -> dict[str, Any]:
    import pyspark.sql.functions as F

    changed = routed.filter((F.col("queues0") != F.col("queues1"))
                            | (F.coalesce("error0", F.lit("")) != F.coalesce("error1", F.lit(""))))
    totals = changed.agg(
        F.sum("messages").alias("changed"),
        F.sum(F.when((F.size("queues0") > 0) & (F.size("queues1") == 0), F.col("messages"))
              .otherwise(0)).alias("new_unroutable"),
        F.sum(F.when((F.size("queues0") == 0) & (F.size("queues1") > 0), F.col("messages"))
              .otherwise(0)).alias("now_routed")).first()
    assert totals is not None
    gained = (changed.select("vhost", F.explode(F.array_except("queues1", "queues0")).alias("queue"),
                             "messages", "bytes")
              .groupBy("vhost", "queue").agg(F.sum("messages").alias("gained"),
                                            F.sum("bytes").alias("gained_bytes")))
    lost = (changed.select("vhost", F.explode(F.array_except("queues0", "queues1")).alias("queue"),
                           "messages", "bytes")
            .groupBy("vhost", "queue").agg(F.sum("messages").alias("lost"),
                                          F.sum("bytes").alias("lost_bytes")))
    per_queue = _arrow(gained.join(lost, ["vhost", "queue"], "full").fillna(0)
                       .orderBy(F.desc(F.col("gained") + F.col("lost")), "vhost", "queue"))
    _write(per_queue, out / "changes.parquet")
    routes = _arrow(changed.groupBy(*KEY_COLUMNS, "queues0", "queues1", "error0", "error1")
                    .agg(F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"),
                         F.min("example_line").alias("example_line"),
                         F.first("headers").alias("headers"),
                         F.first("routing_key").alias("routing_key"))
                    .withColumnRenamed("queues0", "queues_before")
                    .withColumnRenamed("queues1", "queues_after")
                    .withColumnRenamed("error0", "error_before").withColumnRenamed("error1", "error_after")
                    .drop("hkey").orderBy(F.desc("messages")))
    _write(routes, out / "changed_routes.parquet")
    return {"changed": totals["changed"] or 0, "new_unroutable": totals["new_unroutable"] or 0,
            "now_routed": totals["now_routed"] or 0, "queue_changes": _rows(per_queue),
            "changed_routes": _rows(routes.slice(0, 20)), "changed_inputs": routes.num_rows}


def write_routes(traffic: DataFrame, rep: Replay, out: Path) -> int:
    """Write ``out/routes.jsonl``: per message, in line order, ``line``, ``queues``, and when the
    input recorded them ``recorded_queues`` and ``agrees`` (and with a second topology
    ``queues_after``/``changed``; ``error`` when the model refuses the publish; ``returned``
    for a mandatory message that reaches no queue, when the input says it was mandatory).
    Returns the number of lines."""
    import pyspark.sql.functions as F

    from ._spark import _hkey

    names: set[str] = set()
    for router in rep.routers:
        names |= router.header_names()
    # Everything but the line number is the same for every message of a group: write it once
    # per group as JSON text, and per message only join it back and put the line in front.
    fields = [F.col("queues0").alias("queues"), F.col("routed_queues").alias("recorded_queues"),
              F.col("agrees")]
    if len(rep.routers) > 1:
        fields += [F.col("queues1").alias("queues_after"),
                   (F.col("queues0") != F.col("queues1")).alias("changed")]
    fields.append(F.col("error0").alias("error"))
    fields.append(F.when(F.col("error0").isNull() & (F.size("queues0") == 0) & F.col("mandatory"),
                         F.lit(True)).alias("returned"))
    rest = F.expr("substr(rest, 2)")
    fragments = (rep.totals.select(*KEY_COLUMNS, "routed_queues", "mandatory",
                                   F.to_json(F.struct(*fields), {"ignoreNullFields": "true"}).alias("rest"))
                 .withColumn("rest", rest).alias("f"))
    messages = traffic.withColumn("hkey", _hkey(sorted(names))).alias("m")
    on = [F.col(f"m.{c}") == F.col(f"f.{c}") for c in KEY_COLUMNS]
    on.append(F.col("m.routed_queues").eqNullSafe(F.col("f.routed_queues")))
    on.append(F.col("m.mandatory").eqNullSafe(F.col("f.mandatory")))
    joined = messages.join(F.broadcast(fragments) if rep.inputs <= 500_000 else fragments, on)
    text = joined.select(F.col("m.line").alias("_line"),
                         F.concat(F.lit('{"line":'), F.col("m.line").cast("string"), F.lit(","),
                                  F.col("f.rest")).alias("value"))
    parts = out / "_routes"
    # Each input partition holds a run of consecutive lines and a broadcast join keeps their
    # order, so sorting within partitions and ordering the files by their first line gives
    # the whole file in line order without a shuffle; if the runs overlap (the routes were not
    # broadcast), sort globally.
    ordered = _write_parts(text.sortWithinPartitions("_line").select("value"), parts)
    if ordered is None:
        ordered = _write_parts(text.orderBy("_line").select("value"), parts)
        assert ordered is not None
    count = 0
    with (out / "routes.jsonl").open("wb") as target:
        for part in ordered:
            with part.open("rb") as source:
                for chunk in iter(lambda s=source: s.read(1 << 20), b""):  # type: ignore[misc]
                    target.write(chunk)
                    count += chunk.count(b"\n")
    shutil.rmtree(parts)
    return count


_LINE = re.compile(rb'^\{"line":(-?\d+)')


def _write_parts(df: DataFrame, parts: Path) -> list[Path] | None:
    """Write ``df`` as text parts; return them ordered by line when their line ranges do not
    overlap, else ``None``."""
    if parts.exists():
        shutil.rmtree(parts)
    df.write.text(str(parts.resolve()))
    ranges = []
    for part in parts.glob("part-*"):
        if part.stat().st_size == 0:
            continue
        with part.open("rb") as handle:
            first = _LINE.match(handle.readline())
            handle.seek(max(0, part.stat().st_size - 65536))
            last = _LINE.match(handle.read().rstrip(b"\n").rsplit(b"\n", 1)[-1])
        if first is None or last is None:
            return None
        ranges.append((int(first[1]), int(last[1]), part))
    ranges.sort()
    for (_a, end, _p), (begin, _b, _q) in itertools.pairwise(ranges):
        if begin <= end:
            return None
    return [part for _a, _b, part in ranges]


def clean_dir(out: Path) -> None:
    """Create ``out``, removing what an earlier run left in it."""
    out.mkdir(parents=True, exist_ok=True)
    for name in os.listdir(out):
        if name.endswith((".parquet", ".jsonl", ".json", ".html")) or name == "_routes":
            target = out / name
            shutil.rmtree(target) if target.is_dir() else target.unlink()
