"""Record RabbitMQ's AMQP 1.0 observations as golden files (needs the reference RabbitMQ with
its ``rabbitmq_amqp1_0`` plugin).

    python -m tests.amqp10.record [NAME...]     scenarios (all when no NAME is given)
    python -m tests.amqp10.record --check        write nothing; exit 1 when a file differs

Each scenario runs ``--runs`` times (2 by default) on the reference (``EMBROKER_REFERENCE_URL``,
or ``--url``) and is written only when the runs agree; the diff from the previous file is
printed. A broker whose server properties say it is embroker is refused, even presenting itself
as RabbitMQ: golden files are RabbitMQ's word.
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
