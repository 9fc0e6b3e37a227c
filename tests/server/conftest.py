from __future__ import annotations

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
