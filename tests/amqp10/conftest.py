"""Fixtures for the AMQP 1.0 tests: proton (skipped cleanly when it is not installed)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from embroker import Broker
from embroker.server import Server


@pytest.fixture
def server(broker: Broker) -> Iterator[Server]:
    with broker.serve() as server:
        yield server
    assert server.errors == []
    broker._check()


@pytest.fixture
def proton_connect(server: Server):
    """Open proton BlockingConnections to the listener (closed after the test)."""
    utils = pytest.importorskip("proton.utils")
    opened = []

    def connect(url: str | None = None, **kwargs):
        kwargs.setdefault("timeout", 5)
        kwargs.setdefault("allowed_mechs", "PLAIN ANONYMOUS")
        connection = utils.BlockingConnection(url or server.amqp10_url, **kwargs)
        opened.append(connection)
        return connection

    yield connect
    for connection in opened:
        with contextlib.suppress(Exception):
            connection.close()


@pytest.fixture
def connection(server: Server) -> Iterator[Any]:
    """A dialled connection of RabbitMQ's own AMQP 1.0 client to the listener (the test's
    ``broker`` must present itself as RabbitMQ 4: the client refuses any other)."""
    client = pytest.importorskip("rabbitmq_amqp_python_client")
    environment = client.Environment(server.amqp10_url + "/")
    connection = environment.connection()
    connection.dial()
    yield connection
    environment.close()
