"""The examples in embroker's docstrings run: every module whose source has a line that opens
with a ``>>>`` prompt is found and run here (one runner, so a module cannot be forgotten), and each run must
find examples."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import embroker

ROOT = Path(embroker.__file__).parent
#: A doctest prompt: ``>>>`` first on its line (not Erlang's ``>>`` inside a pattern).
PROMPT = re.compile(r"^\s*>>> ", re.MULTILINE)


def modules_with_examples() -> list[str]:
    names = []
    for info in pkgutil.walk_packages([str(ROOT)], prefix="embroker."):
        relative = info.name.removeprefix("embroker.").replace(".", "/")
        source = ROOT / (relative + "/__init__.py" if info.ispkg else relative + ".py")
        if PROMPT.search(source.read_text(encoding="utf-8")):
            names.append(info.name)
    return sorted(names)


MODULES = modules_with_examples()


def test_the_modules_known_to_have_examples_are_found() -> None:
    """The discovery itself (a runner that finds nothing must not pass for one that ran)."""
    assert {"embroker.testing", "embroker.amqp10_common._types", "embroker.amqp10._selector",
            "embroker.analytics._topology", "embroker.analytics._headers",
            "embroker.amqp091._frames", "embroker.model._policy"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has a '>>>' prompt but doctest found no example"
    assert result.failed == 0
