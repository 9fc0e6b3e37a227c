"""Generated sequences of consumer operations: embroker observes what RabbitMQ does.

Each sequence of the corpus (``stateful.py``: the shrunk sequences of :data:`SEQUENCES` and
the generated ``gen_NNN`` ones) has RabbitMQ's transcript in ``golden/stateful/<name>.txt``.
``test_stateful_sequence`` runs it on the in-process client and on pika against embroker's
listener and compares each transcript with the golden file; with the reference
(``EMBROKER_REFERENCE_URL``) it also runs the sequence on RabbitMQ (once for both) and checks
the golden file against it. A failure shows the operations, the diff and RabbitMQ's transcript.

New sequences: ``python -m tests.conformance.record --stateful --generate N`` (README.md).
"""

from __future__ import annotations

from typing import Any

import pytest

from . import golden
from .drivers import InProcessDriver, PikaDriver, WireDriver
from .harness import Run, problems, run_scenario
from .stateful import GENERATED, SEQUENCES, corpus, ops_of, scenario, show

CORPUS = corpus()

#: Sequences on which embroker does not do what RabbitMQ 3.10 does yet: name -> what differs.
#: Each is a strict xfail (on both drivers): it fails the suite the day embroker agrees with
#: RabbitMQ, so the entry must then go. Generated sequences that show one of the shrunk
#: divergences name it.
KNOWN_DIVERGENCES: dict[str, str] = {}
#: Generated sequences that diverge, and the sequence above each shrinks to
#: (``python -m tests.conformance.record --stateful --shrink NAME``).
SHRINKS_TO: dict[str, str] = {}
KNOWN_DIVERGENCES |= {name: f"shrinks to {shrunk}: {KNOWN_DIVERGENCES[shrunk]}"
                      for name, shrunk in SHRINKS_TO.items()}


def _run(name: str, driver: Any) -> Run:
    return run_scenario(scenario(CORPUS[name]), driver)


def run_in_process(name: str) -> Run:
    driver = InProcessDriver()
    run = _run(name, driver)
    try:
        driver.broker._check()
    except AssertionError as exc:
        run.failures.append(f"broker._check() failed: {exc}")
    return run


def run_on_wire(name: str) -> Run:
    driver = WireDriver()
    try:
        run = _run(name, driver)
    finally:
        errors = driver.stop()
    if errors:
        run.failures.append(f"the listener recorded {len(errors)} internal error(s): {errors!r}")
    return run


CANDIDATES = {"in-process": run_in_process, "wire": run_on_wire}

#: RabbitMQ's runs by sequence name: each sequence runs once on RabbitMQ for both candidates.
_reference_runs: dict[str, Run] = {}


def check_golden_against_reference(name: str, expected: list[str], url: str) -> None:
    if name not in _reference_runs:
        _reference_runs[name] = _run(name, PikaDriver(url, label="RabbitMQ"))
    ref = _reference_runs[name]
    if msg := problems(ref):
        pytest.fail(f"the walk's own account does not hold on RabbitMQ:\n{msg}\n\n"
                    f"RabbitMQ transcript:\n{ref.text()}", pytrace=False)
    if diff := golden.diff(expected, ref, golden.sequence_path(name), "RabbitMQ now"):
        pytest.fail(f"the golden file disagrees with RabbitMQ (- golden file, + RabbitMQ now):\n"
                    f"{diff}\n\nif the walk changed, re-record and review the diff:\n"
                    f"  {golden.RECORD_COMMAND} --stateful {name}", pytrace=False)


@pytest.mark.differential
@pytest.mark.parametrize("candidate", list(CANDIDATES))
@pytest.mark.parametrize("name", [golden.param(name, KNOWN_DIVERGENCES) for name in CORPUS])
def test_stateful_sequence(name: str, candidate: str, reference: str | None) -> None:
    path = golden.sequence_path(name)
    expected = golden.read(path)
    if expected is None:
        pytest.fail(golden.missing_message(path, f"--stateful {name}"), pytrace=False)
    if reference is not None:
        check_golden_against_reference(name, expected, reference)
    run = CANDIDATES[candidate](name)
    if msg := problems(run):
        pytest.fail(f"{msg}\n\noperations:\n{show(CORPUS[name])}\n\n"
                    f"{run.driver_label} transcript:\n{run.text()}", pytrace=False)
    if diff := golden.diff(expected, run, path):
        raise golden.Divergence(
            f"transcripts differ (- RabbitMQ, + {run.driver_label}):\n{diff}\n\n"
            f"operations:\n{show(CORPUS[name])}\n\nRabbitMQ transcript:\n" + "\n".join(expected))


def test_named_sequences_are_what_their_golden_files_recorded() -> None:
    """A sequence of SEQUENCES edited since it was recorded must be recorded again."""
    stale = [name for name in SEQUENCES
             if (lines := golden.read(golden.sequence_path(name))) is not None
             and ops_of(lines) != SEQUENCES[name]]
    assert not stale, (f"re-record: {golden.RECORD_COMMAND} --stateful {' '.join(stale)}")


def test_every_stateful_golden_file_is_a_sequence() -> None:
    """Golden files are the named sequences and generated ones (``gen_`` and a number)."""
    orphans = sorted(p.name for p in golden.STATEFUL_DIR.glob(f"*{golden.SUFFIX}")
                     if p.stem not in SEQUENCES and not GENERATED.match(p.stem))
    assert not orphans, f"golden files of no sequence (delete them): {orphans}"


def test_the_corpus_runs_at_least_100_generated_sequences() -> None:
    """Issue #11: at least 100 generated sequences, on RabbitMQ too when it is there."""
    generated = [name for name in CORPUS if GENERATED.match(name)]
    assert len(generated) >= 100, (
        f"{len(generated)} generated sequences; add some: "
        f"{golden.RECORD_COMMAND} --stateful --generate 120")
