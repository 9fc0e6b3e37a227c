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
