"""The project's own examples (and so the docs' examples, which are those files) run against the
reference RabbitMQ with ``--embroker-reference``, skipping only what truly needs embroker's
internals: the virtual clock and ``explain()``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = os.environ.get("EMBROKER_REFERENCE_URL")

#: The only reasons an example may skip in reference mode: embroker's virtual clock, its
#: explanations, and faults injected by its listener (RabbitMQ has no way to drop a delivery's
#: connection or to nack a publish on demand).
ALLOWED_SKIPS = (
    "the virtual clock (clock=True) needs embroker's internals",
    "explain() tells embroker's routing model",
    "injecting faults (embroker_faults) needs embroker's internals",
)


@pytest.mark.skipif(not REFERENCE, reason="needs a reference RabbitMQ (EMBROKER_REFERENCE_URL)")
def test_the_examples_run_against_rabbitmq() -> None:
    assert REFERENCE is not None
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "--embroker-reference", REFERENCE, "tests/examples"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    out = done.stdout
    assert done.returncode == 0, out[-4000:]
    summary = re.search(r"(\d+) passed(?:, (\d+) skipped)? in ", out)
    assert summary is not None, out[-2000:]
    assert int(summary[1]) >= 20  # the examples ran, they did not all skip
    skips = re.findall(r"^SKIPPED \[\d+\] \S+: (.*)$", out, re.M)
    assert skips, "some examples need the virtual clock or explain(): they should have skipped"
    wrong = [reason for reason in skips if not any(a in reason for a in ALLOWED_SKIPS)]
    assert wrong == [], f"examples skipped for other reasons: {wrong}"
