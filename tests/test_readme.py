"""The README's examples run as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from embroker.testing import published

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    broker: Any = namespace["broker"]
    assert published(broker, routing_key="order.paid").last.queues == ("audit",)
    assert broker.trace[-1].queues == ("shipping",)
    assert [e.kind for e in broker.trace[-1].history()] == ["got"]


def test_the_install_commands_keep_a_path_type_checkers_follow_without_a_deprecated_mode() -> None:
    """setuptools' ``editable_mode=compat`` prints its deprecation warning (and is to go). Both
    projects map their root as the packages' folder (``package-dir``), so that setuptools'
    default editable mode writes the checkout's path in a ``.pth`` file, as compat did, rather
    than an import hook mypy cannot follow (issue 44: mypy in a fresh venv found embroker's
    types after ``pip install -e .`` only so)."""
    root = README.parent
    for text in (README.read_text(), (root / ".ci" / "run").read_text()):
        assert "editable_mode" not in text
        assert "pip install -e . " in text or "pip install -q -e . " in text
    for project in (root / "pyproject.toml", root / "pytest_plugin" / "pyproject.toml"):
        assert '[tool.setuptools]\npackage-dir = {"" = "."}\n' in project.read_text(), project
