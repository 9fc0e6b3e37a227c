"""``embroker shims DIR``: RabbitMQ's tools under their own names, running embroker's.

Each shim is a small ``sh`` script that runs this interpreter (its absolute path: the shims
work from a virtual environment that is not activated, as pipx and CI runners use one) with
``-m embroker.control TOOL``, passing its arguments on unchanged. Put the folder first on ``PATH`` and
scripts, test suites and tools that shell out to ``rabbitmqctl`` reach embroker's nodes.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path

__all__ = ["TOOLS", "write_shims"]

#: The tools a shim is written for.
TOOLS = ("rabbitmqctl", "rabbitmq-diagnostics", "rabbitmq-plugins", "rabbitmq-server")


def write_shims(folder: str | os.PathLike[str], *, python: str | None = None) -> list[Path]:
    """Write the shims into ``folder`` (made if missing); their paths."""
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    interpreter = shlex.quote(python or sys.executable)
    written = []
    for tool in TOOLS:
        path = target / tool
        path.write_text(f'#!/bin/sh\n# {tool}, run by embroker (embroker shims)\n'
                        f'exec {interpreter} -m embroker.control {tool} "$@"\n')
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        written.append(path)
    return written
