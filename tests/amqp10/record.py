"""Record RabbitMQ's AMQP 1.0 observations as golden files (needs the reference RabbitMQ with
its ``rabbitmq_amqp1_0`` plugin).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tests.conformance import recording

from .differential import GOLDEN, ReferencePeer
from .scenarios import SCENARIOS


def main(argv: Sequence[str] | None = None) -> int:
    return recording.main("python -m tests.amqp10.record", __doc__, SCENARIOS,
                          peer=lambda args: ReferencePeer(args.url), path=GOLDEN.path,
                          comments=GOLDEN.comments, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
