"""Record RabbitMQ's transcripts of the management scenarios as golden files.

    python -m tests.management.record [SCENARIO ...]

against the management API of ``EMBROKER_REFERENCE_URL``'s node (port 15672, the URL's
credentials); refuses a node that is not RabbitMQ.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.parse

from .differential import GOLDEN, RECORD_COMMAND, cleanup, new_target, run
from .scenarios import SCENARIOS

#: RabbitMQ's statistics interval is 5 s: a step that reads counts waits this long on it.
SETTLE_SECONDS = 6.0


def reference_base(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"http://{parts.hostname or '127.0.0.1'}:15672/api"


def record(name: str, url: str) -> list[dict[str, object]]:
    target = new_target(reference_base(url), url, SETTLE_SECONDS)
    try:
        return run(SCENARIOS[name], target)
    finally:
        cleanup(target)


def main(argv: list[str]) -> int:
    url = os.environ.get("EMBROKER_REFERENCE_URL", "amqp://guest:guest@127.0.0.1:5672/")
    target = new_target(reference_base(url), url)
    status, raw, _ = target.call(__import__("tests.management.differential",
                                            fromlist=["Step"]).Step("GET", "/overview"))
    if status != 200 or json.loads(raw).get("product_name") != "RabbitMQ":
        print(f"{target.base} is not RabbitMQ's management API", file=sys.stderr)
        return 1
    for name in argv or [*sorted(SCENARIOS), "tracing_text"]:
        if name == "tracing_text":  # a log file, not a transcript (test_tracing.py)
            from .test_tracing import TEXT_GOLDEN, record_text

            record_text(url)
            print(f"recorded {TEXT_GOLDEN.name}")
            continue
        transcript = record(name, url)
        document = {"recorded_from": "RabbitMQ 3.10.8's management API",
                    "command": RECORD_COMMAND + " " + name, "transcript": transcript}
        (GOLDEN / f"{name}.json").write_text(json.dumps(document, indent=1, sort_keys=True)
                                             + "\n", encoding="utf-8")
        print(f"recorded {name}: {len(transcript)} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
