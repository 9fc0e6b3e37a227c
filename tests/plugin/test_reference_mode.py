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
    # (the reference has no TLS port with the session's throwaway authority)
    "the amqps_server fixture needs embroker's internals",
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


def test_the_examples_run_in_reference_mode_against_embrokers_own_management_api() -> None:
    """Reference mode needs nothing of RabbitMQ but its AMQP port and management API: pointed at
    ``embroker serve`` (``--embroker-management`` naming the API's port), the same examples pass,
    each in a vhost the plugin makes through embroker's API, decisions from its firehose."""
    serve = subprocess.Popen(
        [sys.executable, "-m", "embroker", "serve", "--port", "0", "--management-port", "0"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert serve.stdout is not None
        line = serve.stdout.readline()
        found = re.search(r"listening on (amqp://\S+/) .*management API and console on "
                          r"(http://\S+/);", line)
        assert found is not None, line + (serve.stderr.read() if serve.poll() is not None else "")
        amqp, management = found[1], found[2] + "api"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider",
             "--embroker-reference", amqp, "--embroker-management", management,
             "tests/examples"],
            cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    finally:
        serve.terminate()
        serve.wait(timeout=30)
    out = done.stdout
    assert done.returncode == 0, out[-4000:]
    assert f"through the management HTTP API ({management})" in out
    summary = re.search(r"(\d+) passed(?:, (\d+) skipped)? in ", out)
    assert summary is not None, out[-2000:]
    assert int(summary[1]) >= 20
    skips = re.findall(r"^SKIPPED \[\d+\] \S+: (.*)$", out, re.M)
    wrong = [reason for reason in skips if not any(a in reason for a in ALLOWED_SKIPS)]
    assert wrong == [], f"examples skipped for other reasons: {wrong}"
