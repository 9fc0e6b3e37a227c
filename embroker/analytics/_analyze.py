"""The analyses over replayed traffic, and the files ``embroker analyze`` writes.

Everything here aggregates the grouped, routed table of :func:`._spark.replay` (one row per
routing input, recorded queues and time window) in Spark, and every result table is written by
Spark's writers where ``--out`` points (any filesystem Spark has: see ``_files``). What comes
back to the driver is bounded by the topology's size, never by the traffic's: traffic per
queue, binding and exchange (joined there with the topology), the busiest routing keys and the
first :data:`MAX_EXPLAINED` disagreeing inputs (explained one by one), and counts. Tables that
can grow with the traffic — routing keys, routing inputs, changed routes, ``routes.jsonl`` —
go from the executors to storage and nowhere else.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _headers
from ._files import join
from ._route import KEY_COLUMNS
from ._topology import Router, mismatch_details

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from ._spark import Replay

__all__ = ["OUTPUTS", "analyze", "analyze_replay", "write_routes"]

#: How many disagreeing or changed routing inputs are explained one by one.
MAX_EXPLAINED = 2000

#: What ``analyze`` writes in ``--out`` (what an earlier run wrote there is removed first).
OUTPUTS = ("report.html", "summary.json", "routes.jsonl", "queues.parquet", "bindings.parquet",
           "bindings_after.parquet", "exchanges.parquet", "routing_keys.parquet",
           "inputs.parquet", "windows.parquet", "disagreements.parquet", "changes.parquet",
           "changed_routes.parquet")


def _write_table(df: DataFrame, path: str) -> None:
    """A result table, written by Spark where ``path`` points (one file when small)."""
    df.write.mode("overwrite").parquet(path)


def _write_small(spark: SparkSession, table: pa.Table, path: str) -> None:
    """A table made on the driver (bounded by the topology), written by Spark as one file."""
    from pyspark.sql.pandas.types import from_arrow_schema

    df = (spark.createDataFrame(table) if table.num_rows
          else spark.createDataFrame([], schema=from_arrow_schema(table.schema)))
    _write_table(df.coalesce(1), path)


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def _collect(df: DataFrame) -> list[dict[str, Any]]:
    """Rows of a bounded result as dictionaries."""
    return [row.asDict(recursive=True) for row in df.collect()]


def analyze(definitions: str | os.PathLike[str], traffic: str | os.PathLike[str],
            out: str | os.PathLike[str], *, against: str | os.PathLike[str] | None = None,
            vhost: str = "/", exchange_types: dict[str, str] | None = None,
            spark: SparkSession | None = None, master: str | None = None,
            remote: str | None = None, conf: dict[str, str] | None = None,
            progress: Callable[[str], None] = lambda _m: None,
            spark_progress: bool = False,
            spark_log: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """What ``embroker analyze`` does: replay ``traffic`` through ``definitions`` (and
    ``against``), write ``out/report.html``, ``out/routes.jsonl``, the Parquet tables and
    ``out/summary.json``, and return the summary.

    Args:
        spark: a session to use (kept open); without one, a session is started (``master``,
            ``remote``, ``conf``; local[*] by default) and stopped at the end.
        progress: called with a line for each phase.
        spark_progress: Spark's stage bars on this process's standard error.
        spark_log: a file for the output of the processes a session started here runs
            (Java's and log4j's lines, the Python workers'); without one, the terminal.

    Raises:
        TopologyError: a definitions file that cannot be read or loaded.
        TrafficError: missing traffic, a bad line (with its number), vhosts the definitions
            do not define.
        AnalyticsError: no pyspark or no Java; Spark's Python workers cannot import what
            the routing needs (the message names their interpreter and what it missed).
    """
    from ._spark import require_spark

    require_spark()
    from ._files import display, location, write_file
    from ._report import render_report
    from ._spark import explain_worker_failure, read_traffic, replay, session
    from ._topology import Topology

    types = dict(exchange_types or {})
    routers = [Router(Topology.load(definitions, vhost=vhost, exchange_types=types))]
    if against is not None:
        routers.append(Router(Topology.load(against, vhost=vhost, exchange_types=types)))
    for router in routers:
        router.bindings()  # compile now: a topology the model refuses fails before Spark starts
    target = location(out)
    source = location(traffic)
    own = spark is None
    if spark is None:
        progress(f"starting Spark ({'Spark Connect ' + remote if remote else master or 'local[*]'})")
        spark = session(master=master, remote=remote, conf=conf, progress=spark_progress,
                        log=spark_log)
    try:
        clean_outputs(spark, target)
        progress(f"reading {display(source)}")
        df = read_traffic(spark, source, vhost=vhost, work=join(target, "_input/traffic.parquet"))
        rep = replay(spark, df, routers, progress=progress)
        summary = analyze_replay(spark, rep, target, progress=progress)
        progress("writing routes.jsonl")
        write_routes(df, rep, target, messages=summary["messages"])
        write_file(spark, join(target, "report.html"),
                   render_report(summary, traffic=display(source)).encode("utf-8"))
        rep.release()
    except Exception as exc:
        explained = explain_worker_failure(spark, exc)
        if explained is not None:
            raise explained from exc
        raise
    finally:
        if own:
            spark.stop()
    return summary


def analyze_replay(spark: SparkSession, rep: Replay, out: str, *,
                   progress: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    """Compute every analysis, write its Parquet table in ``out`` (a folder Spark writes:
    a path or a URI), and return the summary the report is made from (also written as
    ``summary.json``).

    Raises:
        TrafficError: the traffic has no message.
    """
    import pyspark.sql.functions as F

    from ._files import write_file
    from ._inputs import TrafficError

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
    if not summary["messages"]:
        raise TrafficError("the traffic has no published message to replay")

    # -- queues, bindings and exchanges: one aggregation, joined with the topology here ----------
    progress("traffic per queue, binding, exchange, routing key and time window")
    usage = _usage(routed, len(rep.routers))
    queues_t = _queue_table(before, usage, after)
    _write_small(spark, queues_t, join(out, "queues.parquet"))
    summary["queues"] = _rows(queues_t)

    bindings_t = _binding_table(before, usage, 0)
    _write_small(spark, bindings_t, join(out, "bindings.parquet"))
    summary["unused_bindings"] = [r for r in _rows(bindings_t)
                                  if r["messages"] == 0 and not r["implicit"]]
    summary["bindings"] = len([r for r in _rows(bindings_t) if not r["implicit"]])
    if after is not None:
        b_after = _binding_table(after, usage, 1)
        _write_small(spark, b_after, join(out, "bindings_after.parquet"))
        summary["unused_bindings_after"] = [r for r in _rows(b_after)
                                            if r["messages"] == 0 and not r["implicit"]]

    exchanges_t = _exchange_table(before, usage)
    _write_small(spark, exchanges_t, join(out, "exchanges.parquet"))
    summary["unused_exchanges"] = [r for r in _rows(exchanges_t) if r["messages"] == 0
                                   and r["exchange"] != "" and not r["exchange"].startswith("amq.")]
    summary["unused_queues"] = [r for r in summary["queues"] if r["messages"] == 0]

    keys = (routed.groupBy("vhost", "exchange", "routing_key")
            .agg(F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"))
            .orderBy(F.desc("messages"), "vhost", "exchange", "routing_key"))
    _write_table(keys, join(out, "routing_keys.parquet"))
    summary["hot_keys"] = _collect(keys.limit(20))
    summary["distinct_keys"] = keys.count()

    if rep.window:
        timed = rep.routed.filter(F.col("window_start").isNotNull())
        per_kind = [timed.select("window_start", "vhost", F.lit(kind).alias("kind"),
                                 F.explode(F.col(column).cast("array<string>")).alias("name"),
                                 "messages", "bytes")
                    for kind, column in (("queue", "queues0"), ("exchange", "exchanges0"),
                                         ("binding", "bindings0"))]
        windows = (per_kind[0].unionByName(per_kind[1]).unionByName(per_kind[2])
                   .groupBy("window_start", "vhost", "kind", "name")
                   .agg(F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"))
                   .orderBy("window_start", "vhost", "kind", "name")).cache()
        _write_table(windows, join(out, "windows.parquet"))
        # Bounded: at most ~48 windows (or one a week) times the topology's queues.
        summary["windows"] = _collect(
            windows.filter(F.col("kind") == "queue")
            .select(F.date_format("window_start", "yyyy-MM-dd'T'HH:mm:ss'+00:00'").alias("window_start"),
                    "vhost", F.col("name").alias("queue"), "messages", "bytes"))
        windows.unpersist()

    _write_table(routed.groupBy(*KEY_COLUMNS, "headers", "queues0", "bindings0", "exchanges0",
                                "alternates0", "error0")
                 .agg(F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"),
                      F.min("example_line").alias("example_line"))
                 .drop("hkey")
                 .withColumnsRenamed({"queues0": "queues", "bindings0": "bindings",
                                      "exchanges0": "path", "alternates0": "alternates",
                                      "error0": "error"})
                 .orderBy(F.desc("messages")), join(out, "inputs.parquet"))

    # -- disagreements with the recording -------------------------------------------------------
    progress("explaining disagreements with the recorded queues")
    summary["disagreements"] = _disagreements(spark, routed, before, out)

    # -- what-if --------------------------------------------------------------------------------
    if after is not None:
        progress("comparing the two topologies")
        summary.update(_what_if(routed, out))
    write_file(spark, join(out, "summary.json"),
               (json.dumps(summary, indent=1, default=str) + "\n").encode("utf-8"))
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
    rows = union.groupBy("kind", "vhost", "name").agg(F.sum("messages").alias("messages"),
                                                      F.sum("bytes").alias("bytes")).collect()
    return {(r["kind"], r["vhost"], r["name"]): (r["messages"], r["bytes"]) for r in rows}


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


def _disagreements(spark: SparkSession, routed: DataFrame, router: Router,
                   out: str) -> list[dict[str, Any]]:
    import pyarrow as pa
    import pyspark.sql.functions as F

    rows = _collect(
        routed.filter(~F.col("agrees"))
        .groupBy(*KEY_COLUMNS, "headers", "routed_queues", "queues0")
        .agg(F.sum("messages").alias("messages"), F.min("example_line").alias("example_line"))
        .orderBy(F.desc("messages")).limit(MAX_EXPLAINED))
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
    _write_small(spark, pa.Table.from_pylist(result, schema=schema), join(out, "disagreements.parquet"))
    return result


def _what_if(routed: DataFrame, out: str) -> dict[str, Any]:
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
    # Per queue: bounded by the topologies' queues.
    per_queue = (gained.join(lost, ["vhost", "queue"], "full").fillna(0)
                 .orderBy(F.desc(F.col("gained") + F.col("lost")), "vhost", "queue")).coalesce(1)
    _write_table(per_queue, join(out, "changes.parquet"))
    # Per changed routing input: as many as the traffic has; only the first 20 come here.
    routes = (changed.groupBy(*KEY_COLUMNS, "queues0", "queues1", "error0", "error1")
              .agg(F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"),
                   F.min("example_line").alias("example_line"),
                   F.first("headers").alias("headers"),
                   F.first("routing_key").alias("routing_key"))
              .withColumnRenamed("queues0", "queues_before")
              .withColumnRenamed("queues1", "queues_after")
              .withColumnRenamed("error0", "error_before").withColumnRenamed("error1", "error_after")
              .drop("hkey").orderBy(F.desc("messages"), "example_line"))
    _write_table(routes, join(out, "changed_routes.parquet"))
    return {"changed": totals["changed"] or 0, "new_unroutable": totals["new_unroutable"] or 0,
            "now_routed": totals["now_routed"] or 0,
            "queue_changes": _collect(per_queue),
            "changed_routes": _collect(routes.limit(20)), "changed_inputs": routes.count()}


def write_routes(traffic: DataFrame, rep: Replay, out: str, *, messages: int = 1) -> int:
    """Write ``out/routes.jsonl``, a folder of JSON-lines parts written by Spark: per message,
    in line order (the parts in name order), ``line``, ``queues``, and when the input recorded
    them ``recorded_queues`` and ``agrees`` (and with a second topology
    ``queues_after``/``changed``; ``error`` when the model refuses the publish; ``returned``
    for a mandatory message that reaches no queue, when the input says it was mandatory).
    Returns the bytes written.

    Raises:
        AnalyticsError: Spark wrote nothing although there were ``messages``.
    """
    import pyspark.sql.functions as F

    from ._files import display, list_files
    from ._spark import AnalyticsError, _hkey

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
    per_message = traffic.withColumn("hkey", _hkey(sorted(names))).alias("m")
    on = [F.col(f"m.{c}") == F.col(f"f.{c}") for c in KEY_COLUMNS]
    on.append(F.col("m.routed_queues").eqNullSafe(F.col("f.routed_queues")))
    on.append(F.col("m.mandatory").eqNullSafe(F.col("f.mandatory")))
    joined = per_message.join(F.broadcast(fragments) if rep.inputs <= 500_000 else fragments, on)
    text = joined.select(F.col("m.line").alias("_line"),
                         F.concat(F.lit('{"line":'), F.col("m.line").cast("string"), F.lit(","),
                                  F.col("f.rest")).alias("value"))
    target = join(out, "routes.jsonl")
    # Line order across the part files (part-00000 holds the first lines): a range-partitioned
    # sort in the executors; the driver sees none of it.
    text.orderBy("_line").select("value").write.mode("overwrite").text(target)
    written = sum(size for _path, size in list_files(text.sparkSession, target))
    if written == 0 and messages:
        raise AnalyticsError(f"{display(target)}: Spark wrote nothing for {messages:,} messages")
    return written


def clean_outputs(spark: SparkSession, out: str) -> None:
    """Remove what an earlier run wrote in ``out`` (nothing else), where this can be done from
    here: over Spark Connect, each output is replaced as it is written, and an output this run
    does not write (``changes.parquet`` without ``--against``) stays."""
    from ._files import remove

    for name in OUTPUTS:
        if not remove(spark, join(out, name)):
            return
