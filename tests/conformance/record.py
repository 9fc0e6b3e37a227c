"""Record RabbitMQ's transcripts as golden files (needs the reference RabbitMQ).

    python -m tests.conformance.record [NAME...]          scenarios (all when no NAME is given)
    python -m tests.conformance.record --stateful [NAME...]  the stateful test's sequences
    python -m tests.conformance.record --stateful --generate 120
                                                 add generated sequences up to 120 of them
    python -m tests.conformance.record --check [...]       write nothing, show what would change
    python -m tests.conformance.record --stateful --shrink gen_017
                     print a shrunk sequence where RabbitMQ and embroker differ (for SEQUENCES)

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
from typing import Any

from . import golden, stateful
from .drivers import REFERENCE_ENV, InProcessDriver, PikaDriver, safe_url
from .harness import Run, diff_runs, problems, run_scenario
from .scenarios import all_scenarios


def server_properties(url: str) -> dict[str, Any]:
    """The server properties of a fresh connection to ``url``."""
    conn = PikaDriver(url).connect()
    try:
        return dict(conn.conn._impl.server_properties)
    finally:
        conn.close()


def rabbitmq_version(url: str) -> str:
    """``RabbitMQ 3.10.8``, from the server properties of a fresh connection."""
    props = server_properties(url)
    return f"{props.get('product', '?')} {props.get('version', '?')}"


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


def sequence_comments(name: str, version: str) -> list[str]:
    kind = "generated" if stateful.GENERATED.match(name) else "shrunk: stateful.SEQUENCES"
    return [f"{version}'s transcript of the stateful test's sequence {name} ({kind}).",
            "Its operations are the 'step' notes. embroker is compared with it offline",
            "(tests/conformance/test_stateful_differential.py).",
            f"Re-record: {golden.RECORD_COMMAND} --stateful {name}"]


def new_sequences(corpus: dict[str, list[stateful.Op]], total: int) -> dict[str, list[stateful.Op]]:
    """Generated sequences not in ``corpus`` yet, named ``gen_NNN`` after the last, so that
    there are ``total`` generated ones (derandomized: the same ones on every machine for a
    given Hypothesis version and corpus)."""
    have = [name for name in corpus if stateful.GENERATED.match(name)]
    need = total - len(have)
    if need <= 0:
        return {}
    known = list(corpus.values())
    examples = total
    while True:
        fresh = [ops for ops in stateful.generate(examples) if ops not in known]
        if len(fresh) >= need or examples > 16 * total:
            break
        examples *= 2
    last = max((int(name.removeprefix("gen_")) for name in have), default=0)
    return {f"gen_{last + i:03d}": ops for i, ops in enumerate(fresh[:need], 1)}


def record_sequences(names: Sequence[str], url: str, runs: int, check: bool,
                     generate_to: int) -> int:
    corpus = stateful.corpus()
    selected = select(names, list(corpus), "sequence") if names or not generate_to else []
    if generate_to:
        added = new_sequences(corpus, generate_to)
        print(f"{len(added)} new generated sequence(s)", file=sys.stderr)
        corpus.update(added)
        selected += list(added)
    version = rabbitmq_version(url)
    failed = changed = 0
    for name in selected:
        run, why = record_one(name, functools.partial(
            run_scenario, stateful.scenario(corpus[name]), PikaDriver(url, label="RabbitMQ")),
            runs)
        if run is None:
            print(f"{why}\n\noperations:\n{stateful.show(corpus[name])}", file=sys.stderr)
            failed += 1
            continue
        changed += report(golden.sequence_path(name), run.lines(),
                          sequence_comments(name, version), check)
    return summary(failed, changed, check)


def shrink_sequences(names: Sequence[str], url: str) -> int:
    """Print, for each sequence, a shrunk one on which RabbitMQ and in-process embroker differ."""
    corpus = stateful.corpus()
    for name in select(names, list(corpus), "sequence"):
        def differ(ops: list[stateful.Op]) -> str:
            ref = run_scenario(stateful.scenario(ops), PikaDriver(url, label="RabbitMQ"))
            return diff_runs(ref, run_scenario(stateful.scenario(ops), InProcessDriver()))

        if not differ(corpus[name]):
            print(f"{name}: RabbitMQ and embroker agree")
            continue
        def log(line: str, n: str = name) -> None:
            print(f"{n}: {line}", file=sys.stderr)

        ops = stateful.shrink(corpus[name], lambda ops: bool(differ(ops)), log=log)
        print(f"{name} shrunk to {len(ops)} steps:\n    {ops!r}\n{differ(ops)}\n")
    return 0


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
    parser.add_argument("--shrink", action="store_true",
                        help="with --stateful: write nothing; print a shrunk sequence where "
                             "RabbitMQ and embroker (in-process) differ, for each NAME")
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
    if why := golden.refuse_embroker(server_properties(args.url), safe_url(args.url)):
        parser.error(why)
    if (args.generate or args.shrink) and not args.stateful:
        parser.error("--generate and --shrink go with --stateful")
    if args.generate and args.check:
        parser.error("--generate writes files: not with --check")
    if args.shrink:
        return shrink_sequences(args.names, args.url)
    if args.stateful:
        return record_sequences(args.names, args.url, args.runs, args.check, args.generate)
    return record_scenarios(args.names, args.url, args.runs, args.check)


if __name__ == "__main__":
    sys.exit(main())
