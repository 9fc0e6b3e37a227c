"""The pytest plugin: fixtures and the ``embroker`` marker over :mod:`embroker.testing`.

Fixtures: ``broker`` (a fresh in-memory broker per test, configured by the marker),
``amqp_server`` / ``amqp_url`` (a loopback listener on it, started when asked for and stopped
after the test; ``amqp10_url`` is the same listener's URL for AMQP 1.0 clients),
``amqp_channel`` (an in-process channel). With ``--embroker-reference URL`` (or
the ``embroker_reference`` ini option) ``amqp_url`` is that URL and the fixtures that need
embroker's internals skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.register_assert_rewrite("embroker.testing")

from embroker import Broker, Channel, Server  # noqa: E402
from embroker.testing import check_server, make_broker  # noqa: E402

__all__ = ["amqp10_url", "amqp_channel", "amqp_server", "amqp_url", "broker", "embroker_config",
           "embroker_reference"]

_MARKER_HELP = (
    "embroker(topology=None, clock=None, vhosts=(), users=None, policies=(), "
    "operator_policies=(), ignore_unsupported=False): configure this test's broker: "
    "a RabbitMQ definitions file to load (relative to the test file), clock=True for a "
    "ManualClock, extra vhosts, extra users {name: password}, policies and operator policies "
    "to set ({name, pattern, definition, priority, apply-to, vhost}), and whether to load a "
    "topology without the runtime parameters embroker cannot honour")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("embroker")
    group.addoption("--embroker-reference", metavar="URL", default=None,
                    help="run the tests against this RabbitMQ: amqp_url is URL, and fixtures "
                         "that need embroker's internals (broker, amqp_channel...) skip")
    parser.addini("embroker_reference", "like --embroker-reference URL", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_HELP)


def pytest_report_header(config: pytest.Config) -> str | None:
    url = _reference(config)
    return f"embroker: reference RabbitMQ at {url} (embroker-only fixtures skip)" if url else None


def _reference(config: pytest.Config) -> str | None:
    value = config.getoption("embroker_reference") or config.getini("embroker_reference")
    return str(value) if value else None


def _skip_in_reference(request: pytest.FixtureRequest, what: str) -> None:
    url = _reference(request.config)
    if url:
        pytest.skip(f"{what} needs embroker's internals: not available with the reference "
                    f"RabbitMQ ({url})")


@pytest.fixture
def embroker_reference(request: pytest.FixtureRequest) -> str | None:
    """The reference RabbitMQ URL, or ``None`` when the tests run on embroker."""
    return _reference(request.config)


@pytest.fixture
def embroker_config(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The keyword arguments of the ``embroker`` markers on this test (closest last wins);
    override it to configure every broker of a folder."""
    config: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("embroker"))):
        if marker.args:
            raise pytest.UsageError("@pytest.mark.embroker takes keyword arguments only")
        config.update(marker.kwargs)
    return config


@pytest.fixture
def broker(request: pytest.FixtureRequest, embroker_config: dict[str, Any]) -> Broker:
    """A fresh in-memory :class:`~embroker.Broker` for this test (see the ``embroker`` marker)."""
    _skip_in_reference(request, "the broker fixture")
    return make_broker(base=request.path.parent, **embroker_config)


@pytest.fixture
def amqp_server(request: pytest.FixtureRequest, broker: Broker) -> Iterator[Server]:
    """A loopback listener on ``broker`` for this test; raises the listener's errors after it."""
    with broker.serve() as server:
        yield server
    check_server(server)


@pytest.fixture
def amqp_url(request: pytest.FixtureRequest) -> str:
    """An AMQP URL for real clients: this test's listener, or the reference RabbitMQ."""
    url = _reference(request.config)
    if url:
        return url
    server: Server = request.getfixturevalue("amqp_server")
    return server.url


@pytest.fixture
def amqp10_url(request: pytest.FixtureRequest) -> str:
    """An AMQP URL for AMQP 1.0 clients (proton: ``amqp://USER:PASSWORD@HOST:PORT``): this
    test's listener, which serves 0-9-1 and 1.0 on one port, or the reference RabbitMQ."""
    url = _reference(request.config)
    if url:
        return url.rstrip("/")
    server: Server = request.getfixturevalue("amqp_server")
    return server.amqp10_url


@pytest.fixture
def amqp_channel(broker: Broker) -> Iterator[Channel]:
    """An in-process channel on ``broker`` (pika's method names, no socket)."""
    connection = broker.connect()
    yield connection.channel()
    if connection.is_open:
        connection.close()
