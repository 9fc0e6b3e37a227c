"""embroker, its command line and the router work where the spark extra is not installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_BLOCK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyspark", "pyarrow", "pandas"):
            raise ImportError(f"No module named {name!r}")
sys.meta_path.insert(0, Block())
"""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _BLOCK + code], check=False, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)


def test_the_core_and_the_router_import_without_the_spark_extra() -> None:
    result = _run("""
import embroker, embroker.__main__, embroker.analytics
from embroker.analytics import Router, Topology
print(Router(Topology({"queues": [{"name": "q"}]})).route("/", "", ["q"], None).queues)
print(sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "pyarrow", "pandas")))
""")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "('q',)\n[]\n"


def test_analyze_without_the_extra_says_what_to_install() -> None:
    result = _run("""
from embroker.__main__ import main
sys.exit(main(["analyze", "--definitions", "tests/analytics/data/definitions-api.json",
               "--traffic", "tests/analytics/data/tracing.log", "--out", "/nonexistent/x"]))
""")
    assert result.returncode == 2
    assert "embroker: pyspark, pyarrow, pandas not installed: pip install 'embroker[spark]'" in result.stderr
