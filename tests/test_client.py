"""The in-process client where it behaves as pika's BlockingChannel does (confirms raising on a
returned or nacked message), and the names it suggests when a name is missing."""

from __future__ import annotations

import pytest

from embroker import Broker
from embroker.errors import NackError, NotFound, UnroutableError


@pytest.fixture
def broker() -> Broker:
    broker = Broker()
    channel = broker.connect().channel()
    channel.exchange_declare("orders", "topic")
    channel.queue_declare("orders-work")
    channel.queue_bind("orders-work", "orders", "order.*")
    return broker


def test_a_mandatory_publish_that_comes_back_raises_unroutable_under_confirms(
        broker: Broker) -> None:
    """pika's BlockingChannel.basic_publish raises UnroutableError in confirm mode."""
    channel = broker.connect().channel()
    returned = []
    channel.add_on_return_callback(lambda _ch, message: returned.append(message))
    channel.confirm_delivery()
    with pytest.raises(UnroutableError) as raised:
        channel.basic_publish("orders", "invoice.paid", b"{}", mandatory=True)
    assert [m.routing_key for m in raised.value.messages] == ["invoice.paid"]
    assert [m.routing_key for m in returned] == ["invoice.paid"]  # (the callbacks ran too)
    channel.basic_publish("orders", "invoice.paid", b"{}")  # not mandatory: dropped, no error
    channel.basic_publish("orders", "order.created", b"{}", mandatory=True)  # routed


def test_a_nacked_publish_raises_nack_under_confirms(broker: Broker) -> None:
    channel = broker.connect().channel()
    channel.queue_declare("full", arguments={"x-max-length": 0, "x-overflow": "reject-publish"})
    channel.confirm_delivery()
    with pytest.raises(NackError):
        channel.basic_publish("", "full", b"x")
    assert channel.is_open


def test_without_confirms_a_returned_message_goes_to_the_callbacks_only(broker: Broker) -> None:
    channel = broker.connect().channel()
    channel.basic_publish("orders", "invoice.paid", b"{}", mandatory=True)
    assert [m.reply_text for m in channel.returned] == ["NO_ROUTE"]


def test_a_missing_name_is_followed_by_the_name_meant(broker: Broker) -> None:
    channel = broker.connect().channel()
    with pytest.raises(NotFound) as raised:
        channel.basic_publish("order", "order.created", b"{}")
    assert raised.value.reply_text == "NOT_FOUND - no exchange 'order' in vhost '/'"  # (RabbitMQ's)
    assert getattr(raised.value, "__notes__", []) == ["did you mean exchange 'orders'?"]
    channel = broker.connect().channel()
    with pytest.raises(NotFound) as raised:
        channel.queue_declare("Orders-Work", passive=True)
    assert raised.value.__notes__ == ["did you mean queue 'orders-work'?"]  # type: ignore[attr-defined]
    channel = broker.connect().channel()
    with pytest.raises(NotFound) as raised:
        channel.queue_declare("payments", passive=True)
    assert not hasattr(raised.value, "__notes__")  # nothing near


def test_explain_names_the_exchange_or_queue_meant(broker: Broker) -> None:
    channel = broker.connect().channel()
    with pytest.raises(NotFound):
        channel.basic_publish("order", "order.created", b"{}")
    assert "refused: 404 NOT_FOUND - no exchange 'order' in vhost '/'; did you mean 'orders'?" \
        in broker.trace[-1].explain()
    broker.connect().channel().basic_publish("", "orders-wrk", b"x", mandatory=True)
    explained = broker.trace[-1].explain()
    assert "there is no queue 'orders-wrk'; did you mean 'orders-work'?" in explained
    assert "did you mean" not in broker.trace[-1].explain(suggest=False)
