"""The scenario registry: every ``scenario_*`` function of the ``scenarios_*`` modules."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from .harness import Scenario


def all_scenarios() -> dict[str, Scenario]:
    """Scenario name (without the ``scenario_`` prefix) -> function, in source order."""
    found: dict[str, Scenario] = {}
    package = __name__.rpartition(".")[0]
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda i: i.name):
        if not info.name.startswith("scenarios_"):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for attr, value in vars(module).items():
            if attr.startswith("scenario_") and callable(value):
                name = attr.removeprefix("scenario_")
                if name in found:
                    raise AssertionError(f"two scenarios are called {name!r}")
                found[name] = value
    return found
