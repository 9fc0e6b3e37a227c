"""`embroker analyze` as a command, on Spark Connect and on a cluster master, both local.

Each starts its own Spark (a Connect server, or a master with an executor JVM), so these run as
subprocesses, about a minute each.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import DATA, RECORDED_VHOST

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


def _analyze(tmp_path: Path, *where: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    result = subprocess.run(
        [sys.executable, "-m", "embroker", "analyze", "--definitions", str(DATA / "definitions.json"),
         "--exchange-type", "audit=headers", "--traffic", str(DATA / "capture.parquet"),
         "--out", str(out), *where, "--conf",
         "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"],
        check=False, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    return result, out


def _check(result: subprocess.CompletedProcess[str], out: Path) -> None:
    assert result.returncode == 0, result.stderr[-3000:]
    assert "35 of 35 recorded routes agree (100.0 %)" in result.stdout
    routes = [json.loads(line) for line in (out / "routes.jsonl").read_text().splitlines()]
    assert len(routes) == 35
    assert all(r["agrees"] for r in routes)
    assert "routing each distinct input" in result.stderr  # progress shown
    assert (out / "report.html").exists()


@pytest.mark.skipif(importlib.util.find_spec("grpc") is None,
                    reason="Spark Connect client not installed (pip install -e '.[spark-connect]')")
def test_the_command_runs_on_spark_connect(tmp_path: Path) -> None:
    """--remote local[1]: pyspark starts a local Spark Connect server and the client drives it;
    the routing function travels to the server's Python workers."""
    result, out = _analyze(tmp_path, "--remote", "local[1]")
    _check(result, out)


def test_the_command_runs_on_a_cluster_master(tmp_path: Path) -> None:
    """--master local-cluster[1,1,1024]: a master and an executor in its own JVM, as on a
    cluster; embroker reaches the executor's Python workers as a shipped zip."""
    result, out = _analyze(tmp_path, "--master", "local-cluster[1,1,1024]")
    _check(result, out)


def test_a_bad_line_fails_before_spark_starts(tmp_path: Path) -> None:
    bad = tmp_path / "bad.log"
    bad.write_text('{"exchange": "x", "routing_key": "k"}\n{"exchange": \n')
    result = subprocess.run(
        [sys.executable, "-m", "embroker", "analyze", "--definitions", str(DATA / "definitions-api.json"),
         "--vhost", RECORDED_VHOST, "--traffic", str(bad), "--out", str(tmp_path / "out")],
        check=False, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 2
    assert f"embroker: {bad}:2: not JSON" in result.stderr
    assert "starting Spark" not in result.stderr
