"""Every scenario on three brokers: in-process embroker, embroker over the wire, RabbitMQ.

- ``test_in_process``: the scenario's expectations (``s.expect...``) hold on the in-process client.
- ``test_wire``: pika against embroker's own listener (a fresh broker and port per scenario): the
  expectations hold, the listener recorded no internal error, and the transcript equals the
  in-process one. Needs no RabbitMQ, so CI without the reference still checks the wire path.
- ``test_differential``: against the reference RabbitMQ (``EMBROKER_REFERENCE_URL``), each embroker
  driver's transcript (every call's result or error, every message received, returned or
  confirmed) must equal RabbitMQ's, and the expectations must hold on RabbitMQ too.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

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


#: The embroker drivers compared with the reference.
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


#: Reference runs by scenario name: each scenario runs once on RabbitMQ for both candidates.
_reference_runs: dict[str, Run] = {}


def reference_run(scenario: Scenario, url: str) -> Run:
    name = scenario.__name__
    if name not in _reference_runs:
        _reference_runs[name] = run_scenario(scenario, PikaDriver(url, label="RabbitMQ"))
    return _reference_runs[name]


@pytest.mark.differential
@pytest.mark.parametrize("candidate", list(CANDIDATES))
@scenario_param
def test_differential(scenario: Scenario, candidate: str, reference_url: str) -> None:
    ref = reference_run(scenario, reference_url)
    if msg := problems(ref):
        pytest.fail(f"the scenario itself is wrong about RabbitMQ:\n{msg}\n\n"
                    f"RabbitMQ transcript:\n{ref.text()}", pytrace=False)
    run = CANDIDATES[candidate](scenario)
    out = []
    if diff := diff_runs(ref, run):
        out.append(f"transcripts differ (- RabbitMQ, + {run.driver_label}):\n{diff}")
    if msg := problems(run):
        out.append(msg)
    if out:
        pytest.fail("\n\n".join(out), pytrace=False)
