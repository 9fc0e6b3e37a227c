"""``embroker shims DIR``: RabbitMQ's tools under their own names, running embroker's.

Each shim is a small ``sh`` script that runs this interpreter (its absolute path: the shims
work from a virtual environment that is not activated, as pipx and CI runners use one) with
``-m embroker.control TOOL``, passing its arguments on unchanged. Put the folder first on ``PATH`` and
scripts, test suites and tools that shell out to ``rabbitmqctl`` reach embroker's nodes.

The folder is checked as any folder embroker writes in (:mod:`embroker._hostfiles`): one
another user owns or can write is refused with one line (whoever can write it could swap a
shim for a script of theirs, run the next time the user runs ``rabbitmqctl``). Each shim is
written as a new file and renamed into place: a symlink already there is replaced, never
followed (the file it points to is left as it was).
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from .._hostfiles import UntrustedPath, trusted_folder, write_file

__all__ = ["TOOLS", "UntrustedPath", "write_shims"]

#: The tools a shim is written for.
TOOLS = ("rabbitmqctl", "rabbitmq-diagnostics", "rabbitmq-queues", "rabbitmq-plugins",
         "rabbitmq-server")


def write_shims(folder: str | os.PathLike[str], *, python: str | None = None) -> list[Path]:
    """Write the shims into ``folder`` (made if missing); their paths.

    Raises:
        UntrustedPath: ``folder`` (or a folder above it) belongs to another user or others can
            write it.
        OSError: a shim cannot be written.
    """
    target = trusted_folder(folder, create=True,
                            fix="choose a folder of your own, that only you can write")
    interpreter = shlex.quote(python or sys.executable)
    written = []
    for tool in TOOLS:
        path = target / tool
        write_file(path, f'#!/bin/sh\n# {tool}, run by embroker (embroker shims)\n'
                         f'exec {interpreter} -m embroker.control {tool} "$@"\n'.encode(),
                   mode=0o755)
        written.append(Path(folder) / tool)
    return written
