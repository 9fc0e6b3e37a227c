"""``python -m embroker``: the command line."""

from __future__ import annotations

import argparse
import sys

from . import Broker, __version__


def _demo(_args: argparse.Namespace) -> int:
    broker = Broker()
    ch = broker.connect().channel()
    ch.exchange_declare("events", "topic")
    ch.queue_declare("audit")
    ch.queue_bind("audit", "events", "order.*")
    ch.queue_declare("eu-orders")
    ch.queue_bind("eu-orders", "events", "order.*.eu")
    for key in ("order.created", "order.created.eu", "invoice.paid"):
        ch.basic_publish("events", key, b"{}", properties={"content_type": "application/json"})
        print(broker.trace[-1].explain(), end="\n\n")
    print(broker.queues["audit"])
    print(broker.queues["eu-orders"])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m embroker", description=__doc__)
    parser.add_argument("--version", action="version", version=f"embroker {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="route a few messages in-process and explain each")
    demo.set_defaults(run=_demo)
    args = parser.parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
