"""RabbitMQ's own AMQP 1.0 Python client's test suite, run against embroker as RabbitMQ 4.

    python tools/upstream_amqp_client.py --source DIR --python PY [--as-rabbitmq 4.1.x]
        [-- PYTEST ARGS...]

``DIR`` is a checkout of github.com/rabbitmq/rabbitmq-amqp-python-client (its ``tests/``), and
``PY`` an interpreter that has that checkout's client version installed with its test
dependencies (``pytest pytest-asyncio requests pyjwt pika``) and embroker. The suite expects a
RabbitMQ 4 on ``localhost:5672`` with its management API on ``localhost:15672``: this script
serves embroker (``Broker(as_rabbitmq=...)``, the management API when embroker has it) on free
ports, copies the tests to a temporary directory with those two addresses replaced by the
served ones (nothing else of the suite is changed, and the checkout itself is untouched), and
runs them with the tests that need what embroker does not model deselected, each with its reason
(:data:`NOT_MODELLED`). It prints pytest's summary and exits with pytest's status.

Not run in CI: the suite is not on PyPI (its sdist has no tests) and CI reaches PyPI alone.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from embroker import Broker

#: Tests the suite has that need what embroker does not model, by pytest node id prefix (under
#: ``tests/``), with the reason. A prefix names a file or a test; parametrized ids match too.
_TLS = ("TLS: embroker listens in plain TCP only (the suite connects to RabbitMQ's TLS "
        "listener on 5671 with its test certificates)")
_OAUTH = ("OAuth 2: RabbitMQ's rabbitmq_auth_backend_oauth2 (JWT access tokens as passwords, "
          "refreshed on an open connection) is not modelled")
_LISTED_AT_ONCE = (
    "the test deletes every connection GET /api/connections lists while its stream consumer "
    "reads. RabbitMQ lists a connection once its statistics are emitted (1.9 s after it "
    "opened, measured on 3.10.8 here), so the consumer's connection, opened a moment before, "
    "is not closed there; embroker lists connections at once and closes it too, and the "
    "client's recovery of a stream consumer then raises AttributeError ('StreamConsumerOptions'"
    " object has no attribute 'offset', consumer.py of client 0.6.0)")
NOT_MODELLED: dict[str, str] = {
    "test_streams.py::test_stream_reconnection": _LISTED_AT_ONCE,
    "asyncio/test_streams.py::test_stream_reconnection_async": _LISTED_AT_ONCE,
    "test_connection.py::test_connection_ssl": _TLS,
    "asyncio/test_connection.py::test_async_connection_ssl": _TLS,
    "test_publisher.py::test_publish_ssl": _TLS,
    "asyncio/test_publisher.py::test_publish_ssl": _TLS,
    "test_connection.py::test_connection_oauth": _OAUTH,
    "asyncio/test_connection.py::test_async_connection_oauth": _OAUTH,
}
_ADDRESSES = re.compile(r"localhost:(5672|15672)\b")


@contextmanager
def _served(version: str) -> Iterator[tuple[int, int]]:
    broker = Broker(as_rabbitmq=version)
    with broker.serve(port=0, management=True) as server:
        assert server.management_port is not None
        yield server.port, server.management_port


def _copy_tests(source: Path, into: Path, amqp_port: int, management_port: int) -> None:
    shutil.copytree(source / "tests", into / "tests")
    ports = {"5672": str(amqp_port), "15672": str(management_port)}
    for path in (into / "tests").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        changed = _ADDRESSES.sub(lambda m: f"localhost:{ports[m.group(1)]}", text)
        # pika connects to the default port unless told (tests/test_amqp_091.py)
        changed = changed.replace('pika.ConnectionParameters("localhost", ',
                                  f'pika.ConnectionParameters("localhost", {amqp_port}, ')
        if changed != text:
            path.write_text(changed, encoding="utf-8")
    (into / "pyproject.toml").write_text('[tool.pytest.ini_options]\nasyncio_mode = "auto"\n')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True,
                        help="a checkout of rabbitmq-amqp-python-client")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter with the client and its test dependencies")
    parser.add_argument("--as-rabbitmq", default="4.2.x",
                        help="the RabbitMQ version embroker presents (the suite tests 4.2's "
                        "direct reply-to)")
    parser.add_argument("pytest_args", nargs="*", help="more arguments for pytest (after --)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, _served(args.as_rabbitmq) as (port, mgmt):
        _copy_tests(args.source, Path(tmp), port, mgmt)
        print(f"embroker as RabbitMQ {args.as_rabbitmq} on port {port}, its management API on "
              f"port {mgmt}")
        for node, reason in NOT_MODELLED.items():
            print(f"deselected: {node}: {reason}")
        deselect = [f"--deselect=tests/{node}" for node in NOT_MODELLED]
        paths = [] if any(a.startswith("tests") for a in args.pytest_args) else ["tests"]
        done = subprocess.run(
            [args.python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE",
             *deselect, *args.pytest_args, *paths], cwd=tmp, check=False)
        return done.returncode


if __name__ == "__main__":
    sys.exit(main())
