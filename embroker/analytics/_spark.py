"""The Spark side: a session, traffic as a DataFrame, routing and the analyses.

Theory of operation
-------------------
Real traffic has few distinct routing inputs, so routing is done per distinct input, never per
message:

1. messages are grouped in the JVM by what can change a route — vhost, exchange, every routing
   key, and only those headers some headers-exchange binding looks at (``hkey``: a typed JSON
   object of just those, so ``3`` and ``"3"`` stay apart) — together with the recorded queues
   and a time window (:func:`group_traffic`);
2. the distinct routing inputs go through ``mapInArrow`` to the Python workers, where
   embroker's model routes each once with every topology (:class:`._route.RouteBatches`);
3. the routes are joined back to the groups, and every analysis (agreement, what-if, traffic per
   binding, queue, exchange, routing key and window) is a Spark aggregation of that table;
4. ``routes.jsonl`` alone goes back to messages: the input joined with the (small, broadcast)
   routes, sorted by line.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ._route import KEY_COLUMNS, RouteBatches, output_ddl
from ._topology import Router

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["AnalyticsError", "Replay", "group_traffic", "read_traffic", "replay", "session"]

#: JVM options for short jobs: C1 only starts a session markedly faster (tests use them).
FAST_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

_WINDOWS = (1, 10, 60, 600, 3600, 6 * 3600, 86400, 7 * 86400)


class AnalyticsError(RuntimeError):
    """The analysis cannot run (no Java, no pyspark, bad input), with what to do."""


def require_spark() -> None:
    """Raise :class:`AnalyticsError` when pyspark, pyarrow, pandas or Java is missing."""
    missing = []
    for module in ("pyspark", "pyarrow", "pandas"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise AnalyticsError(f"{', '.join(missing)} not installed: pip install 'embroker[spark]' "
                             "(Python 3.11 or later)")


def require_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    if not (java_home and Path(java_home, "bin", "java").exists()) and shutil.which("java") is None:
        raise AnalyticsError("Spark needs Java 17 or 21, and none was found (no java on PATH, "
                             "no JAVA_HOME): install one, e.g. apt-get install "
                             "openjdk-17-jre-headless")


def session(*, master: str | None = None, remote: str | None = None,
            conf: dict[str, str] | None = None, app_name: str = "embroker analyze",
            progress: bool = True) -> SparkSession:
    """A Spark session: embedded ``local[*]`` by default, a cluster with ``master``, or Spark
    Connect with ``remote`` (``sc://host:port``, or ``local[N]`` to start a local Connect
    server).

    Raises:
        AnalyticsError: pyspark or Java missing.
    """
    require_spark()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    # Cached tables may be re-partitioned by adaptive execution (else 200 shuffle partitions
    # stay 200 tasks however little data there is).
    settings = {"spark.sql.session.timeZone": "UTC",
                "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true"}
    if remote is not None:
        if remote.startswith("local"):
            require_java()
            settings["spark.sql.shuffle.partitions"] = "8"
        builder = builder.remote(remote)
    else:
        require_java()
        builder = builder.master(master or "local[*]")
        settings.update({"spark.ui.showConsoleProgress": "true" if progress else "false",
                         "spark.ui.enabled": "false"})
        if (master or "local").startswith("local"):  # one machine: a bigger driver, fewer tasks
            settings.update({"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "8"})
            # The Python workers import this embroker, wherever the driver found it.
            here = str(Path(__file__).resolve().parents[2])
            settings["spark.executorEnv.PYTHONPATH"] = os.pathsep.join(
                filter(None, [here, os.environ.get("PYTHONPATH")]))
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # Python workers elsewhere (a cluster's executors, a Connect server) need embroker to
    # route: send it, with its two dependencies, as a zip of pure-Python packages.
    if remote is not None:
        spark.addArtifacts(str(_package_zip()), pyfile=True)
    elif master is not None and not re.fullmatch(r"local(\[[0-9*]+\])?", master):
        spark.sparkContext.addPyFile(str(_package_zip()))
    return spark


def _package_zip() -> Path:
    import tempfile
    import zipfile

    import sortedcontainers
    import typing_extensions

    import embroker

    target = Path(tempfile.mkdtemp(prefix="embroker-py-")) / "embroker_for_spark.zip"
    with zipfile.ZipFile(target, "w") as archive:
        for module in (embroker, sortedcontainers):
            root = Path(module.__file__ or "").parent
            for path in root.rglob("*.py"):
                archive.write(path, path.relative_to(root.parent))
            for path in root.rglob("py.typed"):
                archive.write(path, path.relative_to(root.parent))
        te = Path(typing_extensions.__file__ or "")
        archive.write(te, te.name)
    return target


# -- reading traffic -----------------------------------------------------------------------------


def _is_parquet(path: Path) -> bool:
    if path.is_dir():
        return any(path.glob("*.parquet"))
    return path.suffix in (".parquet", ".pq")


def prepare_traffic(path: str | os.PathLike[str], *, vhost: str = "/",
                    work_dir: str | os.PathLike[str] | None = None) -> Path:
    """A JSON-lines file parsed (errors name the line) into canonical Parquet under
    ``work_dir``; Parquet is returned as it is. Needs no Spark.

    Raises:
        TrafficError: missing file or a bad line.
    """
    from ._inputs import TrafficError, read_json_lines, write_parquet

    source = Path(path)
    if not source.exists():
        raise TrafficError(f"{source}: no such traffic file")
    if _is_parquet(source):
        return source
    work = Path(work_dir) if work_dir is not None else Path(f"{source}.embroker")
    work.mkdir(parents=True, exist_ok=True)
    target = work / "traffic.parquet"
    write_parquet(read_json_lines(source, vhost=vhost), target)
    return target


def read_traffic(spark: SparkSession, path: str | os.PathLike[str], *, vhost: str = "/",
                 work_dir: str | os.PathLike[str] | None = None) -> DataFrame:
    """Traffic as a DataFrame of the canonical columns (see ``_inputs``).

    JSON-lines files are parsed here (errors name the line) into Parquet under ``work_dir``;
    Parquet files and folders are read by Spark directly, with ``line`` the 1-based row number
    (counted across a folder's files in name order).

    Raises:
        TrafficError: missing file or a bad line.
    """
    import pyarrow.parquet as pq
    import pyspark.sql.functions as F

    from ._inputs import TrafficError

    source = prepare_traffic(path, vhost=vhost, work_dir=work_dir)

    files = sorted(source.glob("*.parquet")) if source.is_dir() else [source]
    offsets, total = [], 0
    for file in files:
        offsets.append((file.name, total))
        total += pq.read_metadata(file).num_rows
    raw = spark.read.option("mergeSchema", "true").parquet(*[str(f.resolve()) for f in files])
    names = set(raw.columns)
    if "exchange" not in names:
        raise TrafficError(f"{source}: no 'exchange' column (columns: {', '.join(sorted(names))})")
    if "routing_key" not in names and "routing_keys" not in names:
        raise TrafficError(f"{source}: no 'routing_key' or 'routing_keys' column")
    base = raw.select("*", F.col("_metadata.row_index").alias("_row"),
                      F.regexp_extract(F.col("_metadata.file_path"), "[^/]+$", 0).alias("_file"))
    if len(files) > 1:
        starts = spark.createDataFrame(offsets, "_file string, _start long")
        base = base.join(F.broadcast(starts), "_file", "left")
        line = F.col("_row") + F.coalesce(F.col("_start"), F.lit(0)) + 1
    else:
        line = F.col("_row") + 1
    if "line" in names:  # canonical files (JSON lines read here, captures) carry their own
        line = F.col("line")
    types = dict(raw.dtypes)
    keys = (F.coalesce(F.col("routing_keys"), F.array(F.col("routing_key")))
            if "routing_keys" in names and "routing_key" in names
            else F.col("routing_keys") if "routing_keys" in names else F.array(F.col("routing_key")))
    key = F.col("routing_key") if "routing_key" in names else F.element_at(F.col("routing_keys"), 1)
    if "headers" not in names:
        headers: Column = F.lit(None).cast("string")
    elif types["headers"] == "string":
        headers = F.col("headers")
    else:
        headers = F.to_json(F.col("headers"))
    size_col = next((c for c in ("size", "body_size") if c in names), None)
    when_col = next((c for c in ("published_at", "timestamp") if c in names), None)
    when: Column = F.lit(None).cast("timestamp")
    if when_col is not None:
        when = (F.timestamp_seconds(F.col(when_col)) if types[when_col] in ("bigint", "int", "double")
                else F.col(when_col).cast("timestamp"))
    return base.select(
        line.cast("long").alias("line"),
        (F.coalesce(F.col("vhost"), F.lit(vhost)) if "vhost" in names else F.lit(vhost)).alias("vhost"),
        F.coalesce(F.col("exchange"), F.lit("")).alias("exchange"),
        key.alias("routing_key"), keys.alias("routing_keys"), headers.alias("headers"),
        (F.col(size_col).cast("long") if size_col else F.lit(None).cast("long")).alias("size"),
        when.alias("published_at"),
        (F.col("routed_queues") if "routed_queues" in names
         else F.lit(None).cast("array<string>")).alias("routed_queues"),
        (F.col("mandatory").cast("boolean") if "mandatory" in names
         else F.lit(None).cast("boolean")).alias("mandatory"))


# -- grouping and routing ----------------------------------------------------------------------


def _hkey(names: Sequence[str]) -> Column:
    """The headers that can change a route, as a typed JSON object of just those (members in
    name order; ``""`` when no binding looks at any header). It is both the grouping key and
    the headers the router gets: the headers exchange looks at nothing else."""
    import json

    import pyspark.sql.functions as F

    if not names:
        return F.lit("")
    parsed = F.try_parse_json(F.col("headers"))
    members = []
    for name in sorted(names):
        path = "$['" + name.replace("\\", "\\\\").replace("'", "\\'") + "']"
        value = F.to_json(F.try_variant_get(parsed, path, "variant"))
        members.append(F.when(value.isNotNull(),
                              F.concat(F.lit(json.dumps(name, ensure_ascii=False) + ":"), value)))
    return F.concat(F.lit("{"), F.concat_ws(",", *members), F.lit("}"))


def window_seconds(spark_df: DataFrame) -> int | None:
    """A time window that cuts the traffic's span into at most ~48 windows (``None`` when the
    traffic has no times)."""
    import pyspark.sql.functions as F

    row = spark_df.agg(F.min("published_at").alias("a"), F.max("published_at").alias("b")).first()
    if row is None or row["a"] is None:
        return None
    span = (row["b"] - row["a"]).total_seconds()
    for seconds in _WINDOWS:
        if span / seconds <= 48:
            return seconds
    return _WINDOWS[-1]


def group_traffic(traffic: DataFrame, routers: Sequence[Router], window: int | None) -> DataFrame:
    """Messages grouped by routing input, recorded queues and time window."""
    import pyspark.sql.functions as F

    names: set[str] = set()
    for router in routers:
        names |= router.header_names()
    start = (F.timestamp_seconds(F.floor(F.unix_timestamp("published_at") / window) * window)
             if window else F.lit(None).cast("timestamp"))
    return (traffic.withColumn("hkey", _hkey(sorted(names)))
            .withColumn("window_start", start)
            # Only fixed-width aggregates here (a first() of a string would turn the hash
            # aggregation into a sort of every message); routing_key depends on routing_keys.
            .groupBy(*KEY_COLUMNS, "routing_key", "routed_queues", "mandatory", "window_start")
            .agg(F.count(F.lit(1)).alias("messages"),
                 F.sum(F.coalesce("size", F.lit(0))).alias("bytes"),
                 F.min("line").alias("example_line"))
            .withColumn("headers", F.when(F.col("hkey") != "", F.col("hkey"))))


def route_inputs(groups: DataFrame, routers: Sequence[Router]) -> DataFrame:
    """Each distinct routing input of ``groups`` routed with every router (``queues0``...)."""
    distinct = groups.select(*KEY_COLUMNS, "headers").distinct()
    return distinct.mapInArrow(RouteBatches(routers), output_ddl(len(routers)))


# -- the replay ----------------------------------------------------------------------------------


@dataclass
class Replay:
    """Grouped, routed traffic and the facts the report shows."""

    routed: DataFrame  # groups joined with their routes, per time window
    totals: DataFrame  # the same without the time windows (what most analyses read)
    inputs: int  # distinct routing inputs
    window: int | None
    routers: list[Router]
    cached: list[DataFrame]

    def release(self) -> None:
        """Let Spark drop the cached tables."""
        for df in self.cached:
            df.unpersist()


def replay(spark: SparkSession, traffic: DataFrame, routers: Sequence[Router], *,
           progress: Callable[[str], None] = lambda _m: None) -> Replay:
    """Group, route and join back (see the module docstring); the results are cached.

    Raises:
        TrafficError: the traffic has vhosts the first topology does not define.
    """
    import pyspark.sql.functions as F

    from ._inputs import TrafficError

    progress("finding the time span")
    window = window_seconds(traffic)
    groups = group_traffic(traffic, routers, window).cache()
    progress("grouping messages by routing input")
    seen = {r["vhost"]: r["n"] for r in groups.groupBy("vhost").agg(F.sum("messages").alias("n")).collect()}
    known = set(routers[0].topology.vhosts)
    unknown = {v: n for v, n in seen.items() if v not in known}
    if unknown:
        groups.unpersist()
        listed = ", ".join(f"'{v}' ({n:,} messages)" for v, n in sorted(unknown.items()))
        raise TrafficError(
            f"the traffic has vhost(s) the definitions do not define: {listed}; the definitions "
            f"define {', '.join(repr(v) for v in sorted(known))} (--vhost names the vhost of a "
            "single-vhost export)")
    routes = route_inputs(groups, routers).cache()
    progress("routing each distinct input with embroker's model")
    inputs = routes.count()
    routed = groups.join(F.broadcast(routes) if inputs <= 500_000 else routes, list(KEY_COLUMNS))
    recorded = F.array_sort(F.array_except(F.col("routed_queues"), F.col("phantom")))
    routed = routed.withColumn(
        "agrees", F.when(F.col("routed_queues").isNull(), F.lit(None))
        .otherwise(recorded == F.array_sort(F.col("queues0")))).cache()
    keep = [c for c in routed.columns
            if c not in ("window_start", "messages", "bytes", "example_line")]
    totals = (routed.groupBy(*keep)
              .agg(F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"),
                   F.min("example_line").alias("example_line"))
              .cache()) if window else routed
    return Replay(routed, totals, inputs, window, list(routers), [groups, routes, routed, totals])
