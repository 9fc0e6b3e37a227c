"""Fixtures shared by the management API's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from embroker import Broker
from embroker.server import Server


@pytest.fixture
def served() -> Iterator[Server]:
    """A fresh broker serving its management API (a test module may have its own); its
    listener must have met no error by the end."""
    with Broker().serve(management=True) as server:
        yield server
        assert server.errors == []


@pytest.fixture
def served_broker() -> Iterator[tuple[Broker, Server]]:
    """:func:`served` with its broker: ``(broker, server)``."""
    broker = Broker()
    with broker.serve(management=True) as server:
        yield broker, server
        assert server.errors == []
