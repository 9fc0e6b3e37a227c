from __future__ import annotations

from collections.abc import Iterator

import pytest

from embroker import Broker, model
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


def channel_on(broker: model.Broker, index: int) -> model.Channel:
    """A model channel (number 1) on a new connection to the cluster's node ``index``."""
    return broker.open_connection(node=broker.nodes[index]).open_channel(1)
