"""Fixtures for the analytics tests: the recorded ground truth, and one local Spark session
shared by every test marked ``spark`` (a session costs ~10 s to start)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data"

#: The vhost the committed recording was made in (the management API's export names none).
RECORDED_VHOST = (DATA / "vhost.txt").read_text().strip()


def spark_missing() -> str | None:
    """Why Spark tests cannot run here, or None."""
    for module in ("pyspark", "pyarrow", "pandas"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -e '.[spark]')"
    from embroker.analytics._spark import AnalyticsError, require_java

    try:
        require_java()
    except AnalyticsError as exc:
        return str(exc)
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reason = None
    for item in items:
        if item.get_closest_marker("spark") is not None:
            reason = reason or spark_missing() or ""
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local Spark session for the whole run: local[1] (tests are small), C1 JIT only
    (starts faster), no UI, one shuffle partition."""
    from embroker.analytics._spark import FAST_START_JAVA_OPTIONS, session

    spark = session(master="local[1]", progress=False, app_name="embroker tests", conf={
        "spark.driver.extraJavaOptions": FAST_START_JAVA_OPTIONS,
        "spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1",
        "spark.driver.memory": "1g"})
    yield spark
    spark.stop()


@pytest.fixture
def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python3`` of a new virtual environment with nothing installed (no pyarrow, pandas or
    embroker): the interpreter a machine's PATH offers when the tool's own environment is not
    activated."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python3"
    found = subprocess.run([str(python), "-c", "import pyarrow"], check=False, capture_output=True)
    assert found.returncode != 0, "the bare environment must not have pyarrow"
    return python


def read_table(spark: Any, location: str | Path) -> list[dict[str, Any]]:
    """A result table as ``analyze`` wrote it (a folder of Parquet parts), read back by Spark
    through its URI, rows in the order written."""
    from embroker.analytics._files import location as as_uri

    return [r.asDict(recursive=True) for r in spark.read.parquet(as_uri(location)).collect()]


def read_routes(spark: Any, out: str | Path) -> list[dict[str, Any]]:
    """``routes.jsonl`` (a folder of JSON-lines parts written by Spark), read back through its
    URI part by part in name order, each part's lines in order: the file's order."""
    import json

    from embroker.analytics._files import join, list_files
    from embroker.analytics._files import location as as_uri

    routes = []
    for part, _size in list_files(spark, join(as_uri(out), "routes.jsonl")):
        routes += [json.loads(r["value"]) for r in spark.read.text(part).collect()]
    return routes


def read_text(spark: Any, location: str | Path) -> str:
    """A small file (the report, the summary) read back by Spark through its URI."""
    from embroker.analytics._files import location as as_uri

    return str(spark.read.text(as_uri(location), wholetext=True).first()["value"])
