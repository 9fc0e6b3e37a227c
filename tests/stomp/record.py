"""Record RabbitMQ's STOMP observations as golden files (needs the reference RabbitMQ with its
``rabbitmq_stomp`` plugin on 61613 and ``rabbitmq_management`` on 15672).

    python -m tests.stomp.record [NAME...]     scenarios (all when no NAME is given)
    python -m tests.stomp.record --check        write nothing; exit 1 when a file differs

Each scenario runs ``--runs`` times (2 by default) on the reference (``EMBROKER_REFERENCE_URL``,
or ``--url``) and is written only when the runs agree; the diff from the previous file is
printed. A broker whose server properties say it is embroker is refused, even presenting itself
as RabbitMQ: golden files are RabbitMQ's word.
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import os
import sys
from collections.abc import Sequence

from tests.amqp10.record import server_properties
from tests.conformance import golden

from .differential import ReferencePeer, comments, path
from .scenarios import SCENARIOS

REFERENCE_ENV = "EMBROKER_REFERENCE_URL"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.stomp.record", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="names or shell patterns (default: all)")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on a diff")
    parser.add_argument("--url", default=os.environ.get(REFERENCE_ENV))
    parser.add_argument("--stomp-port", type=int, default=61613)
    args = parser.parse_args(argv)
    if not args.url:
        parser.error(f"recording needs the reference RabbitMQ: set {REFERENCE_ENV} or --url")
    properties = server_properties(args.url)
    if why := golden.refuse_embroker(properties, args.url.rsplit("@", 1)[-1]):
        parser.error(why)
    version = f"{properties.get('product', '?')} {properties.get('version', '?')}"
    names = [n for n in SCENARIOS if not args.names
             or any(fnmatch.fnmatchcase(n, p) for p in args.names)]
    failed = changed = 0
    for name in names:
        runs = [SCENARIOS[name](ReferencePeer(args.url, args.stomp_port))
                for _ in range(args.runs)]
        if any(run != runs[0] for run in runs):
            print(f"{name}: not recorded, RabbitMQ's runs differ:\n" + "\n".join(
                difflib.unified_diff(runs[0], next(r for r in runs if r != runs[0]),
                                     lineterm="")), file=sys.stderr)
            failed += 1
            continue
        if args.check:
            if golden.read(path(name)) != runs[0]:
                print(f"{golden.relative(path(name))} differs from RabbitMQ")
                changed += 1
            continue
        diff = golden.write(path(name), runs[0], comments(name, version))
        if diff:
            print(diff)
            changed += 1
    print(f"{changed} golden file(s) {'differ' if args.check else 'changed'}; "
          f"{failed} not recorded", file=sys.stderr)
    return 1 if failed or (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
