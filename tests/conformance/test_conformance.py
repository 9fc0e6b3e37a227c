"""Every scenario: on embroker alone, and embroker against the reference RabbitMQ.

A scenario's expectations (``s.expect...``) must hold on both; against the reference, the
transcripts (every call's result or error, every message received or returned) must be equal.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .drivers import InProcessDriver, PikaDriver
from .harness import Driver, Scenario, diff_runs, problems, run_scenario
from .scenarios import all_scenarios

SCENARIOS = all_scenarios()

#: The embroker drivers compared with the reference (the socket listener + pika will join).
CANDIDATES: dict[str, Callable[[], Driver]] = {
    "in-process": InProcessDriver,
}

scenario_param = pytest.mark.parametrize("scenario", list(SCENARIOS.values()), ids=list(SCENARIOS))


@scenario_param
def test_in_process(scenario: Scenario) -> None:
    run = run_scenario(scenario, InProcessDriver())
    if msg := problems(run):
        pytest.fail(f"{msg}\n\ntranscript:\n{run.text()}", pytrace=False)


@pytest.mark.differential
@pytest.mark.parametrize("candidate", list(CANDIDATES))
@scenario_param
def test_differential(scenario: Scenario, candidate: str, reference_url: str) -> None:
    ref = run_scenario(scenario, PikaDriver(reference_url, label="RabbitMQ"))
    if msg := problems(ref):
        pytest.fail(f"the scenario itself is wrong about RabbitMQ:\n{msg}\n\n"
                    f"RabbitMQ transcript:\n{ref.text()}", pytrace=False)
    run = run_scenario(scenario, CANDIDATES[candidate]())
    out = []
    if diff := diff_runs(ref, run):
        out.append(f"transcripts differ (- RabbitMQ, + {run.driver_label}):\n{diff}")
    if msg := problems(run):
        out.append(msg)
    if out:
        pytest.fail("\n\n".join(out), pytrace=False)
