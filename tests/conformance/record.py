"""Record RabbitMQ's transcripts as golden files (needs the reference RabbitMQ).

    python -m tests.conformance.record [NAME...]          scenarios (all when no NAME is given)
    python -m tests.conformance.record --stateful [NAME...]  the stateful test's sequences
    python -m tests.conformance.record --stateful --generate 120
                                                 add generated sequences up to 120 of them
    python -m tests.conformance.record --check [...]       write nothing, show what would change

NAMEs are scenario (or sequence) names, or shell patterns (``'queue_*'``). Each one runs
``--runs`` times (2 by default) on the reference (``EMBROKER_REFERENCE_URL``, or ``--url``); it
is written only when every run gave the same transcript and the scenario's own expectations
held, and the diff from the previous golden file is printed. Review the diff, run the tests,
commit the files. Exit status 1 when something could not be recorded (or, with ``--check``,
when a golden file differs from RabbitMQ).
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import functools
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from . import golden
from .drivers import REFERENCE_ENV, PikaDriver, safe_url
from .harness import Run, diff_runs, problems, run_scenario
from .scenarios import all_scenarios


def rabbitmq_version(url: str) -> str:
    """``RabbitMQ 3.10.8``, from the server properties of a fresh connection."""
    conn = PikaDriver(url).connect()
    try:
        props = conn.conn._impl.server_properties
        return f"{props.get('product', '?')} {props.get('version', '?')}"
    finally:
        conn.close()


def select(names: Sequence[str], available: Sequence[str], what: str) -> list[str]:
    """The available names matching any of ``names`` (all when empty), in their order."""
    if not names:
        return list(available)
    unknown = [n for n in names if not fnmatch.filter(available, n)]
    if unknown:
        raise SystemExit(f"no {what} called {', '.join(unknown)}")
    return [a for a in available if any(fnmatch.fnmatchcase(a, n) for n in names)]


def record_one(label: str, run_once: Callable[[], Run], runs: int) -> tuple[Run | None, str]:
    """Run ``runs`` times; (the run, '') when all agree and hold, else (None, why not)."""
    first = run_once()
    if msg := problems(first):
        return None, f"{label}: not recorded, the run on RabbitMQ has problems:\n{msg}\n\n" \
                     f"transcript:\n{first.text()}"
    for i in range(2, runs + 1):
        again = run_once()
        if diff := diff_runs(first, again):
            return None, (f"{label}: not recorded, RabbitMQ's transcript is not deterministic "
                          f"(run 1 and run {i} differ):\n{diff}")
    return first, ""


def scenario_comments(name: str, module: str, version: str) -> list[str]:
    return [f"{version}'s transcript of the conformance scenario {name} ({module}.py).",
            "embroker is compared with it offline (tests/conformance/test_conformance.py).",
            f"Re-record: {golden.RECORD_COMMAND} {name}"]


def record_scenarios(names: Sequence[str], url: str, runs: int, check: bool) -> int:
    scenarios = all_scenarios()
    version = rabbitmq_version(url)
    failed = changed = 0
    for name in select(names, list(scenarios), "scenario"):
        scenario = scenarios[name]
        run, why = record_one(name, functools.partial(
            run_scenario, scenario, PikaDriver(url, label="RabbitMQ")), runs)
        if run is None:
            print(why, file=sys.stderr)
            failed += 1
            continue
        module = scenario.__module__.rpartition(".")[2]
        changed += report(golden.scenario_path(name), run.lines(),
                          scenario_comments(name, module, version), check)
    return summary(failed, changed, check)


def report(path: Path, lines: list[str], comments: list[str], check: bool) -> int:
    """Write (or, with ``check``, compare) one golden file; print its diff; 1 when it changed."""
    if check:
        old = golden.read(path)
        if old == lines:
            return 0
        print(f"{golden.relative(path)} differs from RabbitMQ:" if old is not None
              else f"{golden.relative(path)} is missing")
        if old is not None:
            print("\n".join(difflib.unified_diff(old, lines, "golden", "RabbitMQ", lineterm="")))
        return 1
    diff = golden.write(path, lines, comments)
    if diff:
        print(diff)
    return 1 if diff else 0


def summary(failed: int, changed: int, check: bool) -> int:
    verb = "differ" if check else "changed"
    print(f"{changed} golden file(s) {verb}; {failed} not recorded", file=sys.stderr)
    return 1 if failed or (check and changed) else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.conformance.record", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="names or shell patterns (default: all)")
    parser.add_argument("--stateful", action="store_true",
                        help="the stateful differential test's sequences, not the scenarios")
    parser.add_argument("--generate", type=int, metavar="N", default=0,
                        help="with --stateful: add derandomized generated sequences until "
                             "there are N generated ones")
    parser.add_argument("--runs", type=int, default=2,
                        help="runs on RabbitMQ that must agree before a file is written")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on a diff")
    parser.add_argument("--url", default=os.environ.get(REFERENCE_ENV),
                        help=f"the reference RabbitMQ (default: ${REFERENCE_ENV})")
    args = parser.parse_args(argv)
    if not args.url:
        parser.error(f"recording needs the reference RabbitMQ: set {REFERENCE_ENV} or --url")
    if why := PikaDriver.check_reachable(args.url):
        parser.error(f"the reference {safe_url(args.url)} does not answer: {why}")
    if args.stateful:
        from .stateful_record import record_sequences
        return record_sequences(args.names, args.url, args.runs, args.check, args.generate)
    if args.generate:
        parser.error("--generate goes with --stateful")
    return record_scenarios(args.names, args.url, args.runs, args.check)


if __name__ == "__main__":
    sys.exit(main())
