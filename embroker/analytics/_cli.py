"""The ``analyze`` and ``capture`` commands of ``python -m embroker`` (imports Spark only when run)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["add_commands", "run_analyze", "run_capture"]


def _exchange_type(text: str) -> tuple[str, str]:
    name, sep, xtype = text.partition("=")
    if not sep or not name or not xtype:
        raise argparse.ArgumentTypeError(f"expected NAME=TYPE, got {text!r}")
    return name, xtype


def add_commands(commands: Any) -> None:
    """Add ``analyze`` and ``capture`` to the command line's subparsers."""
    analyze = commands.add_parser(
        "analyze", help="replay recorded traffic through a topology on Spark (the spark extra)",
        description="Route recorded traffic (rabbitmq_tracing logs in the JSON or text format, "
                    "an `embroker capture` Parquet file, or plain Parquet/JSON lines with "
                    "exchange, routing_key and headers) through a RabbitMQ definitions file with "
                    "embroker's routing model, and compare with where RabbitMQ routed it and, "
                    "with --against, with another topology. Writes DIR/report.html, "
                    "DIR/summary.json, DIR/routes.jsonl and Parquet tables. --traffic and --out "
                    "are paths or URIs as Spark reads them (file://, hdfs://, s3a://, gs://, "
                    "abfss://...).")
    analyze.add_argument("--definitions", required=True, metavar="DEFS.json",
                         help="RabbitMQ definitions (rabbitmqctl export_definitions or the "
                              "management API's export)")
    analyze.add_argument("--traffic", required=True, metavar="PATH",
                         help="traffic: a log (JSON lines or the tracing plugin's text format; "
                              ".gz and other codecs by extension), a folder or glob of them "
                              "(rotated logs), a .parquet file, or a folder of Parquet "
                              "(partitioned by date too)")
    analyze.add_argument("--against", metavar="NEW-DEFS.json",
                         help="a second topology: what changes if the traffic went through it")
    analyze.add_argument("--out", required=True, metavar="DIR",
                         help="where Spark writes the results (a folder: path or URI)")
    analyze.add_argument("--vhost", default="/",
                         help="the vhost of definitions items and messages that name none (default /)")
    analyze.add_argument("--exchange-type", action="append", type=_exchange_type, default=[],
                         metavar="NAME=TYPE",
                         help="type of an exchange the definitions bind but do not declare "
                              "(RabbitMQ 3.10 leaves internal exchanges out of its export); repeatable")
    where = analyze.add_mutually_exclusive_group()
    where.add_argument("--master", metavar="URL",
                       help="Spark master (default: local[*], embedded: nothing to start)")
    where.add_argument("--remote", metavar="sc://HOST:PORT",
                       help="a Spark Connect server (or local[N] to start one here)")
    analyze.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                         help="a Spark setting (repeatable)")
    shown = analyze.add_mutually_exclusive_group()
    shown.add_argument("--quiet", action="store_true", help="no progress display")
    shown.add_argument("--verbose", action="store_true",
                       help="Spark's own output too (Java's and log4j's lines, its stage bars), "
                            "which otherwise goes to a log file named only if the run fails")
    analyze.set_defaults(run=run_analyze)

    capture = commands.add_parser(
        "capture", help="record a vhost's publishes from RabbitMQ's firehose to Parquet",
        description="Bind an exclusive queue to amq.rabbitmq.trace and write every message "
                    "published in the vhost (exchange, routing keys with CC/BCC, headers with "
                    "their AMQP types, properties, body size, routed queues, arrival time) to a "
                    "Parquet file that `embroker analyze --traffic` reads. Tracing must be on "
                    "for the vhost (rabbitmqctl trace_on -p VHOST), or pass --enable-tracing "
                    "on the broker's machine.")
    capture.add_argument("--url", default="amqp://guest:guest@127.0.0.1:5672/",
                         help="the broker (amqp://user:password@host:port/vhost)")
    capture.add_argument("--vhost", help="the vhost to capture (default: the URL's, else /)")
    capture.add_argument("--out", required=True, metavar="TRAFFIC.parquet")
    capture.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    capture.add_argument("--count", type=int, metavar="N", help="stop after N messages")
    capture.add_argument("--enable-tracing", action="store_true",
                         help="run rabbitmqctl trace_on -p VHOST first and trace_off at the end")
    capture.add_argument("--quiet", action="store_true", help="no progress display")
    capture.set_defaults(run=run_capture)


#: What clears a terminal's line and puts the cursor at its start.
CLEAR_LINE = "\r\x1b[K"


def _spark_log() -> Path:
    """A new file for Spark's own output, the user's alone in the temporary folder
    (:func:`embroker._hostfiles.temp_file`; deleted after a run that succeeds)."""
    from .._hostfiles import temp_file

    return temp_file("embroker-analyze-", ".spark.log")


def _kept(log: Path | None) -> str:
    """Where Spark's own output is, for a failed run (empty if it wrote none)."""
    if log is None or not log.exists() or log.stat().st_size == 0:
        return ""
    return f"\n(Spark's own output, Java's and log4j's lines: {log}; --verbose shows it)"


def _fail(message: str) -> int:
    print(f"embroker: {message}", file=sys.stderr)
    return 2


def run_analyze(args: argparse.Namespace) -> int:
    from ._analyze import analyze
    from ._files import display, join, location
    from ._inputs import TrafficError
    from ._spark import AnalyticsError
    from ._topology import TopologyError

    start = time.monotonic()
    # Spark's stage bars redraw a line of the terminal ("\r"): a progress line clears it first.
    bars = args.verbose and sys.stderr.isatty()

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"{CLEAR_LINE if bars else ''}[{time.monotonic() - start:6.1f}s] {message}",
                  file=sys.stderr, flush=True)

    conf = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep:
            return _fail(f"--conf expects KEY=VALUE, got {item!r}")
        conf[key] = value
    log = None if args.verbose else _spark_log()
    kept = ""  # (Spark's own output is kept when Spark failed, not when the input was wrong)
    try:
        summary = analyze(args.definitions, args.traffic, args.out, against=args.against,
                          vhost=args.vhost, exchange_types=dict(args.exchange_type),
                          master=args.master, remote=args.remote, conf=conf,
                          progress=progress, spark_progress=bars, spark_log=log)
    except (TopologyError, TrafficError) as exc:
        return _fail(str(exc))
    except AnalyticsError as exc:
        kept = _kept(log)
        return _fail(str(exc) + kept)
    except BaseException:  # (a traceback, or ^C: Spark's output may say more)
        kept = _kept(log)
        if kept:
            print(kept.strip(), file=sys.stderr)
        raise
    finally:
        if log is not None and not kept:
            log.unlink(missing_ok=True)
    recorded = summary["recorded"]
    line = f"{summary['messages']:,} messages, {summary['inputs']:,} distinct routing inputs"
    if recorded:
        line += (f"; {summary['agreeing']:,} of {recorded:,} recorded routes agree"
                 f" ({100.0 * summary['agreeing'] / recorded:.1f} %)")
    if args.against:
        line += f"; {summary['changed']:,} change destination with {args.against}"
    print(line)
    print(f"report: {display(join(location(args.out), 'report.html'))} "
          f"({time.monotonic() - start:.1f} s)")
    return 0


def run_capture(args: argparse.Namespace) -> int:
    import urllib.parse

    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return _fail("capture writes Parquet: pip install 'embroker[spark]' (or pyarrow)")
    from ._capture import CaptureError, capture

    url = args.url
    if args.vhost is not None:
        parts = urllib.parse.urlsplit(url)
        url = urllib.parse.urlunsplit(parts._replace(path="/" + urllib.parse.quote(args.vhost, safe="")))
    if args.duration is None and args.count is None and not args.quiet:
        print("capturing until Ctrl-C (or give --duration S / --count N)", file=sys.stderr)

    def progress(count: int, elapsed: float) -> None:
        if not args.quiet:
            print(f"\r{count:,} messages captured in {elapsed:.0f} s", end="", file=sys.stderr, flush=True)

    try:
        count = capture(url, args.out, duration=args.duration, count=args.count,
                        enable_tracing=args.enable_tracing, progress=progress)
    except CaptureError as exc:
        return _fail(str(exc))
    if not args.quiet:
        print(file=sys.stderr)
    print(f"{count:,} messages written to {args.out}")
    if count == 0:
        print("embroker: nothing was published, or tracing is off for the vhost "
              "(rabbitmqctl trace_on -p VHOST, or --enable-tracing)", file=sys.stderr)
    return 0
