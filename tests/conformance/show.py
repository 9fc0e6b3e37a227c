"""Print scenario transcripts: ``python -m tests.conformance.show [-d DRIVER] [NAME...]``.

DRIVER is ``reference`` (EMBROKER_REFERENCE_URL, the default), ``in-process``, ``wire`` (pika
against a fresh embroker listener), or an AMQP URL.
NAMEs are scenario names or substrings of them (all scenarios when none is given).
"""

from __future__ import annotations

import argparse
import os

from .drivers import REFERENCE_ENV, InProcessDriver, PikaDriver, WireDriver
from .harness import Driver, problems, run_scenario
from .scenarios import all_scenarios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-d", "--driver", default="reference")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()

    def make() -> Driver:
        if args.driver == "in-process":
            return InProcessDriver()
        if args.driver == "wire":
            return WireDriver()
        url = os.environ[REFERENCE_ENV] if args.driver == "reference" else args.driver
        return PikaDriver(url, label="RabbitMQ" if args.driver == "reference" else None)

    for name, scenario in all_scenarios().items():
        if args.names and not any(n in name for n in args.names):
            continue
        driver = make()
        try:
            run = run_scenario(scenario, driver)
        finally:
            if isinstance(driver, WireDriver) and (errors := driver.stop()):
                print(f"listener errors: {errors!r}")
        print(f"== {name}")
        print(run.text())
        if msg := problems(run):
            print(msg)
        print()


if __name__ == "__main__":
    main()
