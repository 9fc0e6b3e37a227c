"""Record RabbitMQ's STOMP observations as golden files (needs the reference RabbitMQ with its
``rabbitmq_stomp`` plugin on 61613 and ``rabbitmq_management`` on 15672).
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
