"""Golden files: RabbitMQ's transcripts, recorded once, so that checks run without RabbitMQ.

A golden file is a transcript (one :meth:`Entry.line` per line, as the harness prints it, after
its normalisation) that the reference RabbitMQ produced, with ``#`` comment lines on top:

- ``golden/<scenario>.txt``: one per scenario of ``scenarios_*.py``;
- ``golden/stateful/<sequence>.txt``: one per sequence of the stateful differential test (its
  operations are in the transcript, one ``note    step N -> Op(...)`` line before each step).

Offline the tests compare what embroker observes with these files; with the reference
(``EMBROKER_REFERENCE_URL``) they also check each file against a fresh RabbitMQ run. Re-record
with :data:`RECORD_COMMAND` (``python -m tests.conformance.record``; see ``README.md``).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from .harness import Run

GOLDEN_DIR = Path(__file__).parent / "golden"
STATEFUL_DIR = GOLDEN_DIR / "stateful"
RECORD_COMMAND = "python -m tests.conformance.record"
SUFFIX = ".txt"


def scenario_path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}{SUFFIX}"


def sequence_path(name: str) -> Path:
    return STATEFUL_DIR / f"{name}{SUFFIX}"


def relative(path: Path) -> str:
    """``path`` relative to the repository root, for messages."""
    try:
        return str(path.relative_to(Path(__file__).parents[2]))
    except ValueError:
        return str(path)


def read(path: Path) -> list[str] | None:
    """The transcript lines of a golden file (comments left out); None when there is none."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return [line for line in text.splitlines() if not line.startswith("#")]


def render(lines: Sequence[str], comments: Sequence[str]) -> str:
    """The text of a golden file: the comments (``# `` added), then the transcript lines."""
    for line in lines:
        if "\n" in line or "\r" in line or line.startswith("#"):
            raise ValueError(f"a transcript line a golden file cannot hold: {line!r}")
    return "".join(f"# {c}\n" if c else "#\n" for c in comments) + "".join(f"{x}\n" for x in lines)


def write(path: Path, lines: Sequence[str], comments: Sequence[str]) -> str:
    """Write a golden file; return the unified diff from the previous one ('' when unchanged)."""
    new = render(lines, comments)
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if new == old:
        return ""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new, encoding="utf-8")
    return "\n".join(difflib.unified_diff(
        old.splitlines(), new.splitlines(), fromfile=f"a/{relative(path)}",
        tofile=f"b/{relative(path)}", lineterm="", n=3))


def missing_message(path: Path, record_args: str) -> str:
    return (f"no golden file {relative(path)}: record RabbitMQ's transcript with\n"
            f"  EMBROKER_REFERENCE_URL=amqp://guest:guest@127.0.0.1:5672/ "
            f"{RECORD_COMMAND} {record_args}\nand commit it")


def diff(golden: Sequence[str], run: Run, path: Path, label: str | None = None) -> str:
    """A unified diff of a golden file and a run ('' when they are equal)."""
    lines = run.lines()
    if list(golden) == lines:
        return ""
    return "\n".join(difflib.unified_diff(
        list(golden), lines, fromfile=f"RabbitMQ, recorded ({relative(path)})",
        tofile=label or run.driver_label, lineterm="", n=3))


class Divergence(AssertionError):
    """embroker's transcript differs from RabbitMQ's: what a known divergence's strict xfail
    expects. Any other failure of such a test (a stale golden file, an internal error) is not
    one, and fails it."""


def param(name: str, known_divergences: dict[str, str]) -> Any:
    """``name`` as a test parameter: a strict xfail (raising :class:`Divergence` only) when it
    is a known divergence, so that it fails the suite the day embroker agrees with RabbitMQ."""
    if name in known_divergences:
        return pytest.param(name, marks=pytest.mark.xfail(
            strict=True, raises=Divergence, reason=known_divergences[name]))
    return name


def says_embroker(properties: dict[str, Any]) -> bool:
    """Whether a broker's server properties say it is embroker, even presenting itself as
    RabbitMQ (``--as-rabbitmq`` changes its product and version; its information and cluster
    name still say embroker): such a broker is never recorded as the reference."""
    return any("embroker" in (value.decode(errors="replace") if isinstance(value, bytes)
                              else value).lower()
               for value in properties.values() if isinstance(value, (str, bytes)))


def refuse_embroker(properties: dict[str, Any], where: str) -> str | None:
    """Why ``where`` cannot be recorded from (it is embroker), or None."""
    if not says_embroker(properties):
        return None
    said = next(v for v in properties.values()
                if isinstance(v, (str, bytes)) and "embroker" in str(v).lower())
    return (f"{where} is embroker (its server properties say {said!r}), not RabbitMQ: golden "
            "files are recorded from RabbitMQ only")
