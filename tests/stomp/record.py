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
import sys
from collections.abc import Sequence

from tests.conformance import recording

from .differential import GOLDEN, ReferencePeer
from .scenarios import SCENARIOS


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stomp-port", type=int, default=61613)


def main(argv: Sequence[str] | None = None) -> int:
    return recording.main("python -m tests.stomp.record", __doc__, SCENARIOS,
                          peer=lambda args: ReferencePeer(args.url, args.stomp_port),
                          path=GOLDEN.path, comments=GOLDEN.comments, options=_options, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
