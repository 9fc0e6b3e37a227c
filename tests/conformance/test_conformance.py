"""Every scenario on embroker (in-process and over the wire), against RabbitMQ's transcript.

- ``test_in_process``: the scenario's expectations (``s.expect...``) hold on the in-process client.
- ``test_wire``: pika against embroker's own listener (a fresh broker and port per scenario): the
  expectations hold, the listener recorded no internal error, and the transcript equals the
  in-process one.
- ``test_differential``: each embroker driver's transcript (every call's result or error, every
  message received, returned or confirmed) equals RabbitMQ's, as recorded in the scenario's
  golden file (``golden/<scenario>.txt``; see ``README.md``). Runs without RabbitMQ; a scenario
  without a golden file fails. With the reference (``EMBROKER_REFERENCE_URL``) each golden file
  is also checked against a fresh RabbitMQ run (once per scenario), and the scenario's
  expectations must hold on RabbitMQ.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from . import golden
from .drivers import InProcessDriver, PikaDriver, WireDriver
from .harness import Run, Scenario, diff_runs, problems, run_scenario, wire_only_reason
from .scenarios import all_scenarios

SCENARIOS = all_scenarios()

scenario_param = pytest.mark.parametrize("scenario", list(SCENARIOS.values()), ids=list(SCENARIOS))


def run_in_process(scenario: Scenario) -> Run:
    if why := wire_only_reason(scenario):
        pytest.skip(f"wire only: {why}")
    return run_scenario(scenario, InProcessDriver())


def run_on_wire(scenario: Scenario) -> Run:
    """Run on a fresh embroker listener; fail when the listener had internal errors."""
    driver = WireDriver()
    try:
        run = run_scenario(scenario, driver)
    finally:
        errors = driver.stop()
    if errors:
        pytest.fail(f"the listener recorded {len(errors)} internal error(s): {errors!r}\n\n"
                    f"transcript:\n{run.text()}", pytrace=False)
    return run


#: The embroker drivers compared with RabbitMQ.
CANDIDATES: dict[str, Callable[[Scenario], Run]] = {
    "in-process": run_in_process,
    "wire": run_on_wire,
}


@scenario_param
def test_in_process(scenario: Scenario) -> None:
    run = run_in_process(scenario)
    if msg := problems(run):
        pytest.fail(f"{msg}\n\ntranscript:\n{run.text()}", pytrace=False)


@scenario_param
def test_wire(scenario: Scenario) -> None:
    run = run_on_wire(scenario)
    out = []
    if msg := problems(run):
        out.append(msg)
    if not wire_only_reason(scenario):
        local = run_scenario(scenario, InProcessDriver())
        if diff := diff_runs(local, run):
            out.append(f"transcripts differ (- in-process, + wire):\n{diff}")
    if out:
        pytest.fail("\n\n".join(out) + f"\n\nwire transcript:\n{run.text()}", pytrace=False)


#: Scenarios where embroker does not do what RabbitMQ 3.10 does yet: name -> what differs.
#: Each is a strict xfail (on both drivers): it fails the suite the day embroker agrees, so the
#: entry must then go.
KNOWN_DIVERGENCES: dict[str, str] = {}


#: Reference runs by scenario name: each scenario runs once on RabbitMQ for both candidates.
_reference_runs: dict[str, Run] = {}


def reference_run(name: str, url: str) -> Run:
    if name not in _reference_runs:
        _reference_runs[name] = run_scenario(SCENARIOS[name], PikaDriver(url, label="RabbitMQ"))
    return _reference_runs[name]


def check_golden_against_reference(name: str, expected: list[str], url: str) -> None:
    """Fail when RabbitMQ, now, does not produce the golden file (or the scenario's
    expectations do not hold on it)."""
    ref = reference_run(name, url)
    path = golden.scenario_path(name)
    if msg := problems(ref):
        pytest.fail(f"the scenario itself is wrong about RabbitMQ:\n{msg}\n\n"
                    f"RabbitMQ transcript:\n{ref.text()}", pytrace=False)
    if diff := golden.diff(expected, ref, path, "RabbitMQ now"):
        pytest.fail(f"the golden file disagrees with RabbitMQ (- golden file, + RabbitMQ now):\n"
                    f"{diff}\n\nif the scenario changed, re-record it and review the diff:\n"
                    f"  {golden.RECORD_COMMAND} {name}", pytrace=False)


@pytest.mark.differential
@pytest.mark.parametrize("candidate", list(CANDIDATES))
@pytest.mark.parametrize("name", [golden.param(name, KNOWN_DIVERGENCES) for name in SCENARIOS])
def test_differential(name: str, candidate: str, reference: str | None) -> None:
    path = golden.scenario_path(name)
    expected = golden.read(path)
    if expected is None:
        pytest.fail(golden.missing_message(path, name), pytrace=False)
    if reference is not None:
        check_golden_against_reference(name, expected, reference)
    run = CANDIDATES[candidate](SCENARIOS[name])
    if msg := problems(run):
        pytest.fail(msg, pytrace=False)
    if diff := golden.diff(expected, run, path):
        raise golden.Divergence(f"transcripts differ (- RabbitMQ, + {run.driver_label}):\n{diff}")


def test_every_golden_file_belongs_to_a_scenario() -> None:
    """A scenario renamed or removed leaves no golden file behind."""
    orphans = sorted(p.name for p in golden.GOLDEN_DIR.glob(f"*{golden.SUFFIX}")
                     if p.stem not in SCENARIOS)
    assert not orphans, f"golden files without a scenario (delete them): {orphans}"
