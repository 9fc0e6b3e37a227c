"""Definitions ``rabbitmqctl import_definitions`` refuses, and what RabbitMQ 3.10.8's tool prints
for each (``golden/rabbitmqctl/import_definitions_refused_*.json``), replayed on embroker by
test_import_definitions.py.

Record them again with ``python -m tests.control.import_refusals`` (the ``rabbitmqctl`` of a
RabbitMQ 3.10.8 node that may be shared). Each document is refused before it changes anything
on RabbitMQ (rabbit_definitions.erl, v3.10.8: no item here can be created there; vhost
``import-refused-none`` does not exist), so recording, and the live re-check, leave the node as
they found it. Documents go on standard input (no file path in the output), but two cases that
are about the file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parent / "golden" / "rabbitmqctl"
PREFIX = "import_definitions_refused_"
NONE = "import-refused-none"

#: case name -> the document, as the text fed to the tool.
IMPORT_REFUSALS: dict[str, str] = {name: json.dumps(document) for name, document in {
    "queues_true": {"queues": True},
    "users_true": {"users": True},
    "queue_name_number": {"queues": [{"name": 5}]},
    "not_an_object": [],
    "queue_missing_vhost": {"queues": [{"name": "q", "vhost": NONE}]},
    "exchange_type": {"exchanges": [{"name": "import-refused-x", "vhost": "/",
                                     "type": "nosuchtype"}]},
    "permissions_no_user": {"permissions": [{"user": "import-refused-nobody", "vhost": "/",
                                             "configure": ".*", "write": ".*", "read": ".*"}]},
    "users_no_tags": {"users": [{"name": "import-refused-nobody"}]},
    "policy_bad_definition": {"policies": [{"vhost": "/", "name": "import-refused-p",
                                            "pattern": "^x",
                                            "definition": {"max-length": "abc"}}]},
    "policy_missing_vhost": {"policies": [{"vhost": NONE, "name": "p", "pattern": "^x",
                                           "definition": {"max-length": 1}}]},
    "parameter_component": {"parameters": [{"vhost": "/", "component": "nosuch",
                                            "name": "import-refused-n", "value": {}}]},
    "queue_argument": {"queues": [{"name": "import-refused-q", "vhost": "/", "durable": True,
                                   "auto_delete": False,
                                   "arguments": {"x-max-length": "abc"}}]},
}.items()}
IMPORT_REFUSALS["not_json"] = "{not json"


def run_rabbitmqctl(argv: list[str], stdin: bytes | None) -> dict[str, Any]:
    """What RabbitMQ's tool does with ``argv`` (stdin from ``stdin``, or none)."""
    done = subprocess.run(["rabbitmqctl", *argv], input=stdin,
                          stdin=None if stdin is not None else subprocess.DEVNULL,
                          capture_output=True, timeout=120, check=False)
    return {"argv": ["rabbitmqctl", *argv], "exit": done.returncode,
            "stdout": done.stdout.decode(), "stderr": done.stderr.decode()}


def file_cases(folder: Path) -> dict[str, list[str]]:
    """The cases about the file (its path in the output: ``PATH``), made in ``folder``."""
    empty = folder / "empty.json"
    empty.write_text("")
    empty.chmod(0o644)
    return {"zero_sized": ["import_definitions", str(empty)],
            "directory": ["import_definitions", str(folder)]}


def record() -> None:
    for name, document in IMPORT_REFUSALS.items():
        found = run_rabbitmqctl(["import_definitions"], document.encode())
        found.update(stdin=document, notes="Refused before anything changes (import_refusals.py).")
        (GOLDEN / f"{PREFIX}{name}.json").write_text(json.dumps(found, indent=2) + "\n")
    with tempfile.TemporaryDirectory(prefix="import-refused-") as folder:
        Path(folder).chmod(0o755)  # (the Debian wrapper runs the tool as user rabbitmq)
        for name, argv in file_cases(Path(folder)).items():
            found = run_rabbitmqctl(argv, None)
            text = json.dumps(found, indent=2).replace(folder, "PATH")
            (GOLDEN / f"{PREFIX}{name}.json").write_text(
                text[:-1] + ',\n  "notes": "PATH: a temporary folder."\n}\n')


if __name__ == "__main__":
    record()
    sys.exit(0)
