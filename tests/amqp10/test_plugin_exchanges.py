"""The plugins' exchanges through AMQP 1.0 addresses (proton): a target names any exchange,
whatever its type (RabbitMQ 4's ``/exchanges/X/K``, 3.x's ``/exchange/X/K``), and a v1
``/exchange/X/K`` source binds a private queue to it with that key."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from embroker import Broker, ManualClock
from embroker.testing import held_messages

proton = pytest.importorskip("proton")
from proton import Message  # noqa: E402

PLUGINS = ["rabbitmq_delayed_message_exchange", "rabbitmq_consistent_hash_exchange",
           "rabbitmq_sharding", "rabbitmq_recent_history_exchange"]


@pytest.fixture
def broker() -> Iterator[Broker]:
    broker = Broker(plugins=PLUGINS, clock=ManualClock())
    yield broker
    broker._check()


@pytest.mark.parametrize("address", ["/exchanges/later/k", "/exchange/later/k"])
def test_a_delayed_message_over_amqp_1_0(proton_connect, broker: Broker, address: str) -> None:
    """``x-delay`` as a message annotation is the 0-9-1 header; the message is held, and a 1.0
    consumer gets it with ``x-delay`` negated when it is due. Held, it reached no queue *now*:
    the 1.0 layer (RabbitMQ 4's rule for an unroutable transfer) settles it ``released``."""
    ch = broker.connect().channel()
    ch.exchange_declare("later", "x-delayed-message", arguments={"x-delayed-type": "direct"})
    ch.queue_declare("q")
    ch.queue_bind("q", "later", "k")
    c = proton_connect()
    from proton.utils import SendException

    with pytest.raises(SendException) as released:
        c.create_sender(address).send(Message(body="soon", annotations={"x-delay": 2000}))
    assert released.value.state == proton.Delivery.RELEASED
    assert [h.delay for h in held_messages(broker)] == [2000]
    assert broker.trace[-1].outcome == "held"
    broker.manual_clock.advance(2)
    receiver = c.create_receiver("/queues/q", credit=1)
    m = receiver.receive(timeout=5)
    receiver.accept()
    assert m.body == "soon"
    assert m.annotations["x-delay"] == -2000


def test_hashing_exchanges_as_targets_route_as_over_0_9_1(proton_connect,
                                                         broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.exchange_declare("ring", "x-consistent-hash")
    ch.exchange_declare("shards", "x-modulus-hash")
    for i in range(3):
        ch.queue_declare(f"q{i}")
        ch.queue_bind(f"q{i}", "ring", str(i + 1))
        ch.queue_bind(f"q{i}", "shards", "")
    c = proton_connect()
    for exchange in ("ring", "shards"):
        for key in ("a", "order-17", "x.y.z"):
            c.create_sender(f"/exchanges/{exchange}/{key}").send(Message(body=key))
            over_1_0 = broker.trace[-1].queues
            ch.basic_publish(exchange, key, b"")
            assert broker.trace[-1].queues == over_1_0


def test_a_v1_source_on_a_recent_history_exchange_gets_its_history(proton_connect,
                                                                   broker: Broker) -> None:
    """``/exchange/X/K`` as a source binds a private queue to X with K: a recent-history
    exchange replays its last messages to it."""
    ch = broker.connect().channel()
    ch.exchange_declare("last", "x-recent-history", arguments={"x-recent-history-length": 2})
    for body in (b"one", b"two", b"three"):
        ch.basic_publish("last", "k", body)
    c = proton_connect()
    receiver = c.create_receiver("/exchange/last/any", credit=10)
    got = []
    for _ in range(2):
        m = receiver.receive(timeout=5)
        got.append(bytes(m.body))
        receiver.accept()
    assert got == [b"two", b"three"]
