from __future__ import annotations

from collections.abc import Iterator

import pytest

from embroker import Broker
from embroker.client import Channel


@pytest.fixture
def broker() -> Iterator[Broker]:
    broker = Broker()
    yield broker
    broker._check()


@pytest.fixture
def ch(broker: Broker) -> Channel:
    return broker.connect().channel()


def bodies(ch: Channel, queue: str) -> list[bytes]:
    """Drain a queue with basic.get (auto-ack) and return the bodies in order."""
    out = []
    while (delivery := ch.basic_get(queue, auto_ack=True)) is not None:
        out.append(delivery.body)
    return out
