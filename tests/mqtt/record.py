"""Record RabbitMQ's MQTT observations as golden files (needs the reference RabbitMQ with its
``rabbitmq_mqtt`` plugin -- on 1884 here, as a mosquitto holds 1883 -- and
``rabbitmq_management`` on 15672).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tests.conformance import recording

from .differential import GOLDEN, ReferencePeer
from .scenarios import SCENARIOS


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mqtt-port", type=int, default=1884,
                        help="the reference's MQTT port (default 1884: not 1883, a mosquitto's)")


def main(argv: Sequence[str] | None = None) -> int:
    return recording.main("python -m tests.mqtt.record", __doc__, SCENARIOS,
                          peer=lambda args: ReferencePeer(args.url, args.mqtt_port),
                          path=GOLDEN.path, comments=GOLDEN.comments, options=_options, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
