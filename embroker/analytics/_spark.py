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

import contextlib
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._route import KEY_COLUMNS, RouteBatches, output_ddl
from ._topology import Router

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["AnalyticsError", "Replay", "explain_worker_failure", "group_traffic", "read_traffic", "replay",
           "session", "worker_python"]

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


#: Spark's local masters: ``local``, ``local[N]``, ``local[*]``, ``local[N,F]`` (retries).
#: Not ``local-cluster[...]``: its executors are JVMs of their own, as on a cluster.
_LOCAL_MASTER = re.compile(r"local(\[(\d+|\*)(,\d+)?\])?")


def _is_local(master: str | None, remote: str | None) -> bool:
    """Whether Spark runs in local mode: the Python workers are children of this driver (a
    local master, or a local Spark Connect server)."""
    if remote is not None:
        return remote.startswith("local")
    return master is None or _LOCAL_MASTER.fullmatch(master) is not None


def worker_python(master: str | None = None, remote: str | None = None,
                  conf: dict[str, str] | None = None) -> str | None:
    """The interpreter embroker starts Spark's Python workers with, or ``None`` to leave
    Spark's choice.

    Spark starts its Python workers with ``PYSPARK_PYTHON``, else ``python3`` from ``PATH`` —
    not with the driver's interpreter, so a virtual environment used through its own
    interpreter path (pipx, an IDE, a CI runner: never activated) gets workers without pyarrow.
    And ``spark.pyspark.python`` is read by ``spark-submit`` alone: a session made inside a
    running Python ignores it. So, in this order:

    1. ``spark.pyspark.python`` in ``conf``: that (Spark's documented precedence);
    2. ``PYSPARK_PYTHON`` set: ``None`` (Spark uses it);
    3. local mode (:func:`_is_local`): the driver's own interpreter;
    4. a cluster or a remote Spark Connect server: ``None`` — the executors' interpreter is
       theirs to choose; when it lacks something, :func:`explain_worker_failure` says which
       one ran and what it missed.
    """
    chosen = (conf or {}).get("spark.pyspark.python")
    if chosen:
        return chosen
    if os.environ.get("PYSPARK_PYTHON"):
        return None
    if _is_local(master, remote):
        return sys.executable
    return None


@contextlib.contextmanager
def _environment(name: str, value: str | None) -> Iterator[None]:
    """``os.environ[name] = value`` while the block runs (nothing when ``value`` is None)."""
    if value is None:
        yield
        return
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before


@contextlib.contextmanager
def _output_to(log: str | os.PathLike[str] | None) -> Iterator[None]:
    """This process's standard output and error go to ``log`` while the block runs, for the
    processes started meanwhile to keep (Spark's JVM writes its own lines to them, its log4j
    lines and its Python workers' too); nothing changes when ``log`` is None."""
    if log is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        with open(log, "ab") as file:
            os.dup2(file.fileno(), 1)
            os.dup2(file.fileno(), 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, before in zip((1, 2), saved, strict=True):
            os.dup2(before, fd)
            os.close(before)


def session(*, master: str | None = None, remote: str | None = None,
            conf: dict[str, str] | None = None, app_name: str = "embroker analyze",
            progress: bool = True, log: str | os.PathLike[str] | None = None) -> SparkSession:
    """A Spark session: embedded ``local[*]`` by default, a cluster with ``master``, or Spark
    Connect with ``remote`` (``sc://host:port``, or ``local[N]`` to start a local Connect
    server). Python workers on this machine run with the driver's interpreter unless
    ``spark.pyspark.python`` or ``PYSPARK_PYTHON`` says otherwise (:func:`worker_python`).

    ``progress`` shows Spark's stage bars; ``log`` is a file for what the processes Spark
    starts here write (its JVM, a local Connect server, their Python workers: Java's and
    log4j's lines), which otherwise go to this process's terminal. In local mode Spark binds
    to 127.0.0.1 unless ``SPARK_LOCAL_IP`` says otherwise (not to the machine's first
    interface, with a warning that the host name resolves to a loopback address).

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
            # The server writes the report and the summary (copyFromLocalToFs), locally here.
            settings["spark.sql.artifact.copyFromLocalToFs.allowDestLocal"] = "true"
        builder = builder.remote(remote)
    else:
        require_java()
        builder = builder.master(master or "local[*]")
        settings.update({"spark.ui.showConsoleProgress": "true" if progress else "false",
                         "spark.ui.enabled": "false"})
        if (master or "local").startswith("local"):  # one machine: a bigger driver, fewer tasks
            settings.update({"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "8"})
        if _is_local(master, None):
            # The Python workers import this embroker, wherever the driver found it (executors
            # of local-cluster get the shipped package, as on a cluster).
            here = str(Path(__file__).resolve().parents[2])
            settings["spark.executorEnv.PYTHONPATH"] = os.pathsep.join(
                filter(None, [here, os.environ.get("PYTHONPATH")]))
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    # The workers' interpreter is read from the environment when the context (or the local
    # Connect server's JVM) starts, and only then.
    loopback = "127.0.0.1" if _is_local(master, remote) and not os.environ.get(
        "SPARK_LOCAL_IP") else None
    with _environment("PYSPARK_PYTHON", worker_python(master, remote, conf)), \
            _environment("SPARK_LOCAL_IP", loopback), _output_to(log):
        spark = builder.getOrCreate()
    # Python workers elsewhere (a cluster's executors, a Connect server) need embroker to
    # route: send it, with its two dependencies, as a zip of pure-Python packages.
    if remote is not None:
        spark.addArtifacts(str(_package_zip()), pyfile=True)
    elif not _is_local(master, None):
        spark.sparkContext.addPyFile(str(_package_zip()))
    return spark


#: What the Python workers need besides pyspark itself (embroker is shipped by the job).
WORKER_NEEDS = ("pyarrow", "pandas")

_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")
_CANNOT_RUN = re.compile(r'Cannot run program "([^"]+)"(?:[^\n]*?error=\d+, ([^\n]+))?')


def _probe() -> Callable[[Any], str]:
    """A function that tells, run in a Python worker, which interpreter runs it and which of
    the modules the routing needs it can import. Made inside a function so that cloudpickle
    sends it by value: it must run where embroker cannot be imported."""

    def probe(_row: Any) -> str:
        import importlib
        import json
        import platform
        import socket
        import sys

        modules: dict[str, str | None] = {}
        for name in ("pyarrow", "pandas", "embroker"):
            try:
                module = importlib.import_module(name)
            except Exception:
                modules[name] = None
            else:
                modules[name] = str(getattr(module, "__version__", "") or "found")
        return json.dumps({"executable": sys.executable, "version": platform.python_version(),
                           "host": socket.gethostname(), "modules": modules})

    return probe


def probe_workers(spark: SparkSession) -> dict[str, Any] | None:
    """Run :func:`_probe` in one Python worker (a plain, non-Arrow UDF: it needs neither
    pyarrow nor pandas); ``None`` when even that fails (the interpreter does not start)."""
    import json

    import pyspark.sql.functions as F

    try:
        probe = F.udf(_probe(), "string", useArrow=False)
        row = spark.range(1, numPartitions=1).select(probe("id").alias("p")).first()
    except Exception:
        return None
    return None if row is None else dict(json.loads(row["p"]))


def _interpreter_origin(spark: SparkSession) -> str:
    """Where the workers' interpreter came from, as far as the driver can tell."""
    try:
        conf = spark.conf.get("spark.pyspark.python", None)
    except Exception:
        conf = None
    if conf:
        return f"spark.pyspark.python={conf}"
    if os.environ.get("PYSPARK_PYTHON"):
        return f"PYSPARK_PYTHON={os.environ['PYSPARK_PYTHON']} (the driver's environment)"
    try:
        configured = spark.sparkContext.pythonExec
    except Exception:  # Spark Connect: the server chooses
        return ("chosen by the Spark Connect server: its PYSPARK_PYTHON, else python3 from its "
                "PATH")
    if configured == sys.executable:
        return "the driver's interpreter"
    return (f"'{configured}' from the executors' PATH: Spark's default, as neither "
            "spark.pyspark.python nor PYSPARK_PYTHON is set")


def explain_worker_failure(spark: SparkSession, error: BaseException) -> AnalyticsError | None:
    """An :class:`AnalyticsError` saying which interpreter Spark's Python workers ran and what
    it missed, when ``error`` is a Spark job that failed because a worker could not import a
    module (or its interpreter could not start); ``None`` for any other error."""
    if not type(error).__module__.startswith(("pyspark", "py4j")):
        return None
    text = str(error)
    missing = _MISSING_MODULE.search(text)
    cannot = _CANNOT_RUN.search(text)
    if missing is None and cannot is None:
        return None
    origin = _interpreter_origin(spark)
    fix = ("Give the executors an interpreter that has pyspark's worker dependencies ("
           + ", ".join(WORKER_NEEDS) + "; embroker itself is shipped by the job): --conf "
           "spark.pyspark.python=/path/to/python, or PYSPARK_PYTHON in the executors' environment.")
    if missing is None:
        assert cannot is not None
        reason = f" ({cannot[2]})" if cannot[2] else ""
        return AnalyticsError(f"Spark could not start its Python workers with '{cannot[1]}'"
                              f"{reason}; the interpreter is {origin}. {fix}")
    module = missing[1]
    found = probe_workers(spark)
    if found is None:
        ran = f"The interpreter is {origin}."
    else:
        have = ", ".join(f"{name} {version}" if version else f"{name} missing"
                         for name, version in found["modules"].items())
        ran = (f"They ran {found['executable']} (Python {found['version']} on {found['host']}: "
               f"{have}); that is {origin}.")
    return AnalyticsError(f"Spark's Python workers could not import {module} (No module named "
                          f"'{module}'). {ran} {fix}")


def _package_zip() -> Path:
    import zipfile

    import sortedcontainers
    import typing_extensions

    import embroker

    from .._hostfiles import temp_folder

    target = temp_folder("embroker-py-") / "embroker_for_spark.zip"
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

_PARQUET = re.compile(r"\.(parquet|pq)$")
_TEXT_SEPARATOR_START = "=" * 20


def traffic_kind(spark: SparkSession, path: str, files: Sequence[tuple[str, int]]) -> str:
    """``"parquet"``, ``"json"`` (JSON lines: the tracing plugin's JSON format, or plain
    lines) or ``"text"`` (the tracing plugin's text format): Parquet by the files' names, the
    others by the first lines of the first file (gzip and other codecs are read by extension,
    as Spark does).

    Raises:
        TrafficError: Parquet mixed with other files, or a file of neither log format.
    """
    from ._files import display
    from ._inputs import TrafficError

    parquet = [f for f, _n in files if _PARQUET.search(f)]
    if parquet and len(parquet) < len(files):
        other = next(f for f, _n in files if not _PARQUET.search(f))
        raise TrafficError(f"{display(path)}: Parquet files mixed with others ({display(other)}); "
                           "give a folder of one kind")
    if parquet:
        return "parquet"
    first = files[0][0]
    for row in spark.read.text(first).limit(8).collect():
        text = row["value"].strip()
        if not text:
            continue
        if text.startswith("{"):
            return "json"
        if text.startswith(_TEXT_SEPARATOR_START):
            return "text"
        raise TrafficError(f"{display(first)}: neither JSON lines nor the tracing plugin's text "
                           f"format (it begins {text[:60]!r})")
    raise TrafficError(f"{display(first)}: empty")


def _numbered_records(spark: SparkSession, path: str, kind: str) -> DataFrame:
    """The lines (``json``) or text-format records (``text``) of every file under ``path``,
    numbered in executors: ``file_line`` within the file, ``line`` across the files in name
    order.

    How, without the driver reading anything per line: a split of a file is read whole by one
    task, in order, so ``monotonically_increasing_id`` minus its smallest value in the split
    is the position in the split; a small table (one row per split: its first id and count)
    gives the lines before each split in its file, and per file the lines of the files before
    it; a broadcast join puts them together.
    """
    import pyspark.sql.functions as F
    from pyspark.sql.window import Window

    from ._tracetext import SEPARATOR

    reader = spark.read.option("recursiveFileLookup", "true")
    if kind == "text":
        reader = reader.option("lineSep", SEPARATOR)
    records = reader.text(path).select(
        "value", F.col("_metadata.file_path").alias("file"),
        F.col("_metadata.file_block_start").alias("_block"))
    if kind == "text":  # the empty text before a file's first separator is no record
        records = records.filter(F.col("value") != "")
    records = records.withColumn("_id", F.monotonically_increasing_id())
    splits = records.groupBy("file", "_block").agg(F.min("_id").alias("_first"),
                                                   F.count(F.lit(1)).alias("_n"))
    before = Window.partitionBy("file").orderBy("_block").rowsBetween(Window.unboundedPreceding, -1)
    splits = splits.withColumn("_before", F.coalesce(F.sum("_n").over(before), F.lit(0)))
    splits = splits.join(_offsets(splits.groupBy("file").agg(F.sum("_n").alias("_span"))), "file")
    file_line = F.col("_id") - F.col("_first") + F.col("_before") + 1
    return (records.join(F.broadcast(splits), ["file", "_block"])
            .select((file_line + F.col("_offset")).alias("line"), file_line.alias("file_line"),
                    "file", "value"))


def _offsets(spans: DataFrame) -> DataFrame:
    """``(file, _span)`` (one row per file) to ``(file, _offset)``: the spans of the files
    before it in name order, added up (a join of the small table with itself)."""
    import pyspark.sql.functions as F

    a, b = spans.alias("a"), spans.alias("b")
    return (a.join(F.broadcast(b), F.col("b.file") < F.col("a.file"), "left")
            .groupBy(F.col("a.file").alias("file"))
            .agg(F.coalesce(F.sum("b._span"), F.lit(0)).alias("_offset")))


def parse_logs(spark: SparkSession, path: str, kind: str, *, vhost: str, work: str) -> DataFrame:
    """Parse JSON-lines or text-format logs in executors into canonical Parquet at ``work``
    and read it back.

    Raises:
        TrafficError: the first line (in line order) that cannot be read, with its file and
            line.
    """
    import pyspark.sql.functions as F

    from ._inputs import TrafficError
    from ._parse import PARSED_DDL, ParseBatches

    parsed = _numbered_records(spark, path, kind).mapInArrow(ParseBatches(kind, vhost), PARSED_DDL)
    parsed.write.mode("overwrite").parquet(work)
    table = spark.read.parquet(work)
    bad = (table.filter(F.col("error").isNotNull()).orderBy("line").select("error").limit(1)
           .collect())
    if bad:
        raise TrafficError(bad[0]["error"])
    return table.drop("error", "file", "file_line")


def read_traffic(spark: SparkSession, path: str | os.PathLike[str], *, vhost: str = "/",
                 work: str | None = None) -> DataFrame:
    """Traffic as a DataFrame of the canonical columns (see ``_inputs``), from any path or URI
    Spark reads (see ``_files``): a Parquet file or folder (partitioned folders too, e.g.
    ``date=2026-11-24/``), or JSON-lines or text-format logs — a file, a folder of them
    (rotated, gzipped: ``*.log.gz``) or a glob. Logs are parsed in executors into Parquet at
    ``work`` (:func:`parse_logs`); Parquet is read as it is, with ``line`` the 1-based row
    number (counted across a folder's files in name order) unless the files have their own.

    Raises:
        TrafficError: nothing at ``path``, a bad line (its file and number), a Parquet file
            without the needed columns.
    """
    import pyspark.sql.functions as F

    from ._files import display, join, list_files, location
    from ._inputs import TrafficError

    source = location(path)
    try:
        files = list_files(spark, source)
    except FileNotFoundError:
        raise TrafficError(f"{display(source)}: no such traffic file or folder") from None
    kind = traffic_kind(spark, source, files)
    if kind != "parquet":
        if work is None:
            work = join(source.rstrip("/") + ".embroker", "traffic.parquet")
        return parse_logs(spark, source, kind, vhost=vhost, work=work)
    raw = spark.read.option("mergeSchema", "true").parquet(source)
    names = set(raw.columns)
    if "exchange" not in names:
        raise TrafficError(f"{display(source)}: no 'exchange' column (columns: "
                           f"{', '.join(sorted(names))})")
    if "routing_key" not in names and "routing_keys" not in names:
        raise TrafficError(f"{display(source)}: no 'routing_key' or 'routing_keys' column")
    own = (F.col("line") if "line" in names else F.col("_metadata.row_index") + 1).cast("long")
    base = raw.select("*", own.alias("_own"), F.col("_metadata.file_path").alias("_file"))
    if len(files) > 1:
        spans = base.groupBy(F.col("_file").alias("file")).agg(F.max("_own").alias("_span"))
        base = base.join(F.broadcast(_offsets(spans).withColumnRenamed("file", "_file")), "_file")
        line = F.col("_own") + F.col("_offset")
    else:
        line = F.col("_own")
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
