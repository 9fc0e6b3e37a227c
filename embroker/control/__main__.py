"""``python -m embroker.control TOOL ARGS``: what the shims run (``embroker shims``). Only the
tools' light modules are imported on the way, not the broker: a ``rabbitmqctl`` call costs
little more than Python's start."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    tool, arguments = (argv[0], argv[1:]) if argv else ("", [])
    if tool == "rabbitmq-server":
        from ._server_cli import main as server_main

        return server_main(arguments)
    if tool == "rabbitmq-plugins":
        from ._plugins_cli import main as plugins_main

        return plugins_main(arguments)
    if tool in ("rabbitmqctl", "rabbitmq-diagnostics", "rabbitmq-queues"):
        from ._ctl import run

        return run(tool, arguments)
    print("usage: python -m embroker.control rabbitmqctl|rabbitmq-diagnostics|"
          "rabbitmq-queues|rabbitmq-plugins|rabbitmq-server ARGS", file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
