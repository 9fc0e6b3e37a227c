"""Which interpreter Spark's Python workers run (issue 20, item 6).

Spark starts its Python workers with ``PYSPARK_PYTHON``, else ``python3`` from ``PATH``; a
virtual environment used through its interpreter path (pipx, an IDE, a CI runner: never
activated) then gets workers without pyarrow. These tests put first on ``PATH`` a ``python3``
that has none (a bare virtual environment), as such a user's machine does. What a cluster's
executors are told when theirs lacks it: test_cluster.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from embroker.analytics._spark import _output_to, worker_python

from .conftest import DATA

ROOT = Path(__file__).resolve().parents[2]


def test_local_workers_run_the_drivers_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert worker_python() == sys.executable
    assert worker_python("local[2]") == sys.executable
    assert worker_python("local[2,3]") == sys.executable
    assert worker_python(remote="local[1]") == sys.executable


def test_a_cluster_keeps_the_executors_own_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert worker_python("spark://127.0.0.1:7077") is None
    assert worker_python("yarn") is None
    assert worker_python("local-cluster[1,1,1024]") is None  # executors of their own
    assert worker_python(remote="sc://spark.example:15002") is None


def test_the_users_pyspark_python_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/py/bin/python")
    assert worker_python("local[2]") is None  # Spark reads it itself


def test_spark_pyspark_python_wins_and_is_applied(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark reads spark.pyspark.python in spark-submit only; a session made in a running
    Python ignores it, so embroker applies it (before PYSPARK_PYTHON, as Spark documents)."""
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/py/bin/python")
    conf = {"spark.pyspark.python": "/opt/other/bin/python"}
    assert worker_python("local[2]", conf=conf) == "/opt/other/bin/python"
    assert worker_python("spark://h:7077", conf=conf) == "/opt/other/bin/python"


def _analyze(tmp_path: Path, python3_dir: Path, *where: str) -> subprocess.CompletedProcess[str]:
    """``embroker analyze`` run as pipx or an IDE runs a tool: the virtual environment's
    interpreter by its path, nothing activated, another ``python3`` first on PATH (and a
    temporary folder of its own, to see what it leaves there)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join([str(python3_dir), env.get("PATH", "")])
    (tmp_path / "tmp").mkdir()
    env["TMPDIR"] = str(tmp_path / "tmp")
    return subprocess.run(
        [sys.executable, "-m", "embroker", "analyze", "--definitions", str(DATA / "definitions.json"),
         "--exchange-type", "audit=headers", "--traffic", str(DATA / "capture.parquet"),
         "--out", str(tmp_path / "out"), *where, "--conf",
         "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"],
        check=False, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)


@pytest.mark.spark
def test_analyze_from_a_venv_that_is_not_activated_routes_in_its_own_interpreter(
        tmp_path: Path, bare_python: Path) -> None:
    result = _analyze(tmp_path, bare_python.parent, "--master", "local[1]")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "35 of 35 recorded routes agree (100.0 %)" in result.stdout
    # Issue 35, item 7: the terminal shows embroker's progress lines, whole, and nothing of
    # Java's, log4j's or Spark's stage bars (they went to a log, deleted after a good run).
    lines = result.stderr.splitlines()
    assert lines[0].endswith("] starting Spark (local[1])")
    assert all(re.fullmatch(r"\[ *\d+\.\ds\] [^\r\x1b]+", line) for line in lines), lines
    assert list((tmp_path / "tmp").glob("embroker-analyze-*")) == []


@pytest.mark.spark
def test_analyze_verbose_shows_sparks_own_output_without_the_loopback_warning(
        tmp_path: Path, bare_python: Path) -> None:
    """--verbose: Java's and log4j's lines are the user's to see; local mode binds Spark to
    127.0.0.1, so none of them is Spark's 'hostname resolves to a loopback address'."""
    result = _analyze(tmp_path, bare_python.parent, "--master", "local[1]", "--verbose")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "log4j" in result.stderr
    assert "resolves to a loopback address" not in result.stderr
    assert "\r" not in result.stderr  # (no stage bars where standard error is no terminal)


def test_what_processes_started_meanwhile_write_goes_to_the_log_for_good(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """_output_to: Spark's JVM, started in the block, keeps writing to the log after it, and
    this process's own lines go where they went before."""
    log = tmp_path / "spark.log"
    with _output_to(log):
        child = subprocess.Popen(
            [sys.executable, "-c", "import sys; print('started', flush=True); "
             "sys.stdin.readline(); print('log4j later', file=sys.stderr)"],
            stdin=subprocess.PIPE, text=True)
    print("[ 0.1s] a progress line", file=sys.stderr, flush=True)
    child.communicate("go\n", timeout=30)
    out, err = capfd.readouterr()
    assert (out, err) == ("", "[ 0.1s] a progress line\n")
    assert log.read_text() == "started\nlog4j later\n"


@pytest.mark.parametrize(("outcome", "code", "kept"), [
    ("spark failed", 2, True), ("bad traffic", 2, False), ("done", 0, False)])
def test_sparks_log_is_named_when_spark_fails_and_deleted_otherwise(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        outcome: str, code: int, kept: bool) -> None:
    """The command's side of Spark's own output (no Spark needed: ``analyze`` stands in,
    writing to the log it is given as Spark's JVM would)."""
    import tempfile

    import embroker.analytics._analyze as analyze_module
    from embroker.__main__ import main
    from embroker.analytics._inputs import TrafficError
    from embroker.analytics._spark import AnalyticsError

    logs: list[Path] = []

    def analyze(*_args: Any, spark_log: Path, **_kwargs: Any) -> dict[str, Any]:
        logs.append(spark_log)
        spark_log.write_text("WARN Utils: what Java said\n")
        if outcome == "spark failed":
            raise AnalyticsError("Spark's Python workers could not import pyarrow")
        if outcome == "bad traffic":
            raise TrafficError("traffic.log: line 1 is not JSON")
        return {"recorded": 0, "messages": 1, "inputs": 1}

    monkeypatch.setattr(analyze_module, "analyze", analyze)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["analyze", "--definitions", "d.json", "--traffic", "t.log", "--out",
                 str(tmp_path / "out")]) == code
    err = capsys.readouterr().err
    (log,) = logs
    assert log.parent == tmp_path
    assert log.exists() is kept
    assert (str(log) in err) is kept
    assert "what Java said" not in err
