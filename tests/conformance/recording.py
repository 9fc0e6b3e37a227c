"""The recorder every protocol's golden files share: run scenarios on the reference RabbitMQ,
keep a scenario's lines when its runs agree, write (or ``--check``) its golden file.

A protocol's ``record`` module is its scenarios, how a reference peer is made from the
command line, and where its files go: :func:`main` does the rest (``tests.amqp10.record``,
``tests.stomp.record``).
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pika

from . import golden

REFERENCE_ENV = "EMBROKER_REFERENCE_URL"

#: How a recorder is used, after what its protocol's module says of it (``{prog}``: its
#: command).
USAGE = """
    {prog} [NAME...]     scenarios (all when no NAME is given)
    {prog} --check        write nothing; exit 1 when a file differs

Each scenario runs ``--runs`` times (2 by default) on the reference (``EMBROKER_REFERENCE_URL``,
or ``--url``) and is written only when the runs agree; the diff from the previous file is
printed. A broker whose server properties say it is embroker is refused, even presenting itself
as RabbitMQ: golden files are RabbitMQ's word.
"""


def server_properties(url: str) -> dict[str, Any]:
    """What the broker at AMQP ``url`` says of itself (connection.start's properties)."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        return {k: v.decode() if isinstance(v, bytes) else v
                for k, v in conn._impl.server_properties.items()}
    finally:
        conn.close()


def main(prog: str, description: str | None, scenarios: Mapping[str, Callable[[Any], list[str]]],
         *, peer: Callable[[argparse.Namespace], Any], path: Callable[[str], Path],
         comments: Callable[[str, str], list[str]],
         options: Callable[[argparse.ArgumentParser], None] = lambda parser: None,
         argv: Sequence[str] | None = None) -> int:
    """Record (or check) the golden files of ``scenarios``: the command :data:`USAGE` says.

    Args:
        prog, description: the command's name and what its help says first.
        scenarios: each scenario by name: a function of a peer, its lines.
        peer: a reference peer made from the parsed arguments (``args.url`` and the
            protocol's ``options``).
        path, comments: each scenario's golden file, and the comment lines that head it
            (given the scenario's name and the reference's product and version).
        options: adds the protocol's own arguments (its port...).

    Returns:
        The exit status: 1 when a scenario's runs differ (or, with ``--check``, a file does).
    """
    parser = argparse.ArgumentParser(prog=prog, description=(description or "").rstrip("\n")
                                     + "\n" + USAGE.format(prog=prog),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="names or shell patterns (default: all)")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on a diff")
    parser.add_argument("--url", default=os.environ.get(REFERENCE_ENV))
    options(parser)
    args = parser.parse_args(argv)
    if not args.url:
        parser.error(f"recording needs the reference RabbitMQ: set {REFERENCE_ENV} or --url")
    properties = server_properties(args.url)
    if why := golden.refuse_embroker(properties, args.url.rsplit("@", 1)[-1]):
        parser.error(why)
    version = f"{properties.get('product', '?')} {properties.get('version', '?')}"
    names = [n for n in scenarios if not args.names
             or any(fnmatch.fnmatchcase(n, p) for p in args.names)]
    failed = changed = 0
    for name in names:
        runs = [scenarios[name](peer(args)) for _ in range(args.runs)]
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
