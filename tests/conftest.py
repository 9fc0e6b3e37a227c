"""Fixtures shared by the test folders: a broker, and a listener on it."""

from collections.abc import Iterator

import pytest

from embroker import Broker
from embroker.server import Server


@pytest.fixture
def broker() -> Broker:
    return Broker()


@pytest.fixture
def server(broker: Broker) -> Iterator[Server]:
    with broker.serve() as server:
        yield server
    assert server.errors == []
    broker._check()

