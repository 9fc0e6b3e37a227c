"""`embroker analyze` on a real Spark standalone cluster, and on Spark Connect.

The cluster is Spark's own master and two workers, started from the installed pyspark on free
ports of 127.0.0.1 (:mod:`.cluster`). Its executors run a Python that has pyspark's worker
dependencies and not embroker: embroker reaches them only as the job ships it. The command runs
as a user runs it (a subprocess, no ``PYTHONPATH``), reads and writes through ``file://`` URIs,
and every table it writes is read back through its URI and compared row for row with the same
analysis in local mode.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from embroker.analytics._analyze import analyze

from .cluster import StandaloneCluster, clean_environment, executor_python
from .conftest import DATA, RECORDED_VHOST, read_routes, read_table, read_text

pytestmark = pytest.mark.spark

FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory,
            bare_python: Path) -> Iterator[tuple[StandaloneCluster, Path]]:
    """The cluster, and the Python its executors are told to run (spark.pyspark.python); the
    python3 first on the workers' PATH, Spark's default, is a bare one (no pyarrow)."""
    folder = tmp_path_factory.mktemp("cluster")
    python = executor_python(folder)
    with StandaloneCluster(folder / "spark", workers=2, cores=1, memory="1g",
                           path=(bare_python.parent,), java_options=FAST_JVM) as running:
        yield running, python


def _command(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "embroker", "analyze", *args],
                          check=False, capture_output=True, text=True, timeout=600,
                          env=clean_environment(), cwd=cwd)


def _canonical(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def test_the_executors_python_cannot_import_embroker_on_its_own(
        cluster: tuple[StandaloneCluster, Path]) -> None:
    _running, python = cluster
    alone = subprocess.run([str(python), "-c", "import embroker"], check=False, capture_output=True,
                           text=True, env=clean_environment(), cwd="/")
    assert alone.returncode == 1
    assert "No module named 'embroker'" in alone.stderr
    subprocess.run([str(python), "-c", "import pyarrow, pandas"], check=True, env=clean_environment())


TABLES = ("queues.parquet", "bindings.parquet", "bindings_after.parquet", "exchanges.parquet",
          "routing_keys.parquet", "inputs.parquet", "windows.parquet", "disagreements.parquet",
          "changes.parquet", "changed_routes.parquet")


def test_replay_what_if_and_report_on_a_standalone_cluster_equal_local_mode(
        spark: Any, cluster: tuple[StandaloneCluster, Path], tmp_path: Path) -> None:
    running, python = cluster
    remote_out = (tmp_path / "cluster").as_uri()
    result = _command(
        "--definitions", str(DATA / "definitions-api.json"), "--vhost", RECORDED_VHOST,
        "--traffic", (DATA / "tracing.log").as_uri(),
        "--against", str(DATA / "definitions-new.json"), "--out", remote_out,
        "--master", running.url, "--conf", f"spark.pyspark.python={python}",
        "--conf", f"spark.driver.extraJavaOptions={FAST_JVM}",
        "--conf", f"spark.executor.extraJavaOptions={FAST_JVM}",
        "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.executor.memory=768m",
        cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "35 of 35 recorded routes agree (100.0 %); 6 change destination" in result.stdout
    # Both workers ran executors, and their Python was the one without embroker.
    apps = running.state()["completedapps"]
    assert isinstance(apps, list)
    assert apps

    local_out = tmp_path / "local"
    summary = analyze(DATA / "definitions-api.json", DATA / "tracing.log", local_out, spark=spark,
                      vhost=RECORDED_VHOST, against=DATA / "definitions-new.json")
    for name in TABLES:
        there = read_table(spark, f"{remote_out}/{name}")
        here = read_table(spark, local_out / name)
        assert _canonical(there) == _canonical(here), name
    assert read_routes(spark, remote_out) == read_routes(spark, local_out)
    assert len(read_routes(spark, remote_out)) == 35
    there_summary = json.loads(read_text(spark, f"{remote_out}/summary.json"))
    assert there_summary == json.loads(json.dumps(summary, default=str))

    def undated(html: str) -> str:
        return re.sub(r" · \d{4}-\d\d-\d\d \d\d:\d\d UTC", "", html).replace(
            str(DATA / "tracing.log"), "TRAFFIC")

    assert undated(read_text(spark, f"{remote_out}/report.html")) == undated(
        read_text(spark, local_out / "report.html"))


def test_executors_without_pyarrow_are_named_with_what_they_missed(
        cluster: tuple[StandaloneCluster, Path], bare_python: Path, tmp_path: Path) -> None:
    """Issue 20, item 6: no interpreter chosen, the executors run python3 from their PATH
    (a bare one here); the error names it, says what it lacked and how to choose another,
    instead of a worker's traceback."""
    running, _python = cluster
    result = _command(
        "--definitions", str(DATA / "definitions-api.json"), "--vhost", RECORDED_VHOST,
        "--traffic", (DATA / "capture.parquet").as_uri(), "--out", (tmp_path / "out").as_uri(),
        "--master", running.url, "--conf", f"spark.driver.extraJavaOptions={FAST_JVM}",
        "--conf", f"spark.executor.extraJavaOptions={FAST_JVM}",
        "--conf", "spark.task.maxFailures=1", "--conf", "spark.executor.memory=768m",
        "--conf", "spark.sql.shuffle.partitions=2", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    message = next(line for line in result.stderr.splitlines() if line.startswith("embroker: "))
    assert message.startswith("embroker: Spark's Python workers could not import pyarrow "
                              "(No module named 'pyarrow'). ")
    assert f"They ran {bare_python} (Python {sys.version_info[0]}.{sys.version_info[1]}." in message
    assert "pyarrow missing, pandas missing, embroker " in message  # embroker: the shipped zip
    assert "'python3' from the executors' PATH: Spark's default" in message
    assert "--conf spark.pyspark.python=/path/to/python" in message


@pytest.mark.skipif(importlib.util.find_spec("grpc") is None,
                    reason="Spark Connect client not installed (pip install -e '.[spark-connect]')")
def test_the_command_runs_on_spark_connect(spark: Any, tmp_path: Path, bare_python: Path) -> None:
    """--remote local[1]: pyspark starts a local Spark Connect server and the client drives it;
    the routing function travels to the server's Python workers (the driver's interpreter,
    though a bare python3 comes first on PATH), and the report is written by the server
    (copyFromLocalToFs)."""
    out = (tmp_path / "out").as_uri()
    env = clean_environment()
    env["PATH"] = f"{bare_python.parent}:{env['PATH']}"
    result = subprocess.run(
        [sys.executable, "-m", "embroker", "analyze", "--definitions", str(DATA / "definitions.json"),
         "--exchange-type", "audit=headers", "--traffic", str(DATA / "capture.parquet"), "--out", out,
         "--remote", "local[1]", "--conf", f"spark.driver.extraJavaOptions={FAST_JVM}",
         "--conf", "spark.sql.shuffle.partitions=1"],
        check=False, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    # (on a failure, the lines that say why first: Java's stack traces bury them)
    why = [line for line in result.stderr.splitlines()
           if any(word in line for word in ("Error", "Exception", "bind", "Address"))
           and not line.lstrip().startswith("at ")]
    assert result.returncode == 0, "\n".join(why[:20]) + "\n...\n" + result.stderr[-2000:]
    assert "35 of 35 recorded routes agree (100.0 %)" in result.stdout
    assert "routing each distinct input" in result.stderr  # progress shown
    routes = read_routes(spark, out)
    assert len(routes) == 35
    assert all(r["agrees"] for r in routes)
    assert "Agreement with production" in read_text(spark, f"{out}/report.html")
