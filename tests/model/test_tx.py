"""Transactions and their interplay with confirms."""

from __future__ import annotations

import pytest

from embroker import Broker
from embroker.client import Channel
from embroker.errors import NotFound, PreconditionFailed


def test_publishes_wait_for_commit(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q")
    ch.tx_select()
    ch.basic_publish("", "q", b"1")
    ch.basic_publish("", "nowhere", b"2", mandatory=True)
    assert broker.queues["q"].message_count == 0
    assert ch.returned == []
    ch.tx_commit()
    assert broker.queues["q"].message_count == 1
    assert [r.body for r in ch.returned] == [b"2"]  # returns are sent at commit


def test_rollback_discards_publishes_and_keeps_acked_messages_unacked(
        broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"1")
    ch.tx_select()
    got = ch.basic_get("q")
    assert got is not None
    ch.basic_ack(got.delivery_tag)
    ch.basic_publish("", "q", b"2")
    ch.tx_rollback()
    assert broker.queues["q"].message_count == 0
    assert ch.model.unacked_tags == [got.delivery_tag]
    ch.basic_ack(got.delivery_tag)
    ch.tx_commit()
    assert broker.queues["q"].unacked == 0


def test_unknown_tag_in_a_transaction_fails_at_once(ch: Channel) -> None:
    ch.tx_select()
    with pytest.raises(PreconditionFailed, match="unknown delivery tag 3"):
        ch.basic_ack(3)


def test_publish_to_missing_exchange_in_a_transaction_fails_at_once(ch: Channel) -> None:
    ch.tx_select()
    with pytest.raises(NotFound):
        ch.basic_publish("nope", "k", b"")


@pytest.mark.parametrize("method", ["tx_commit", "tx_rollback"])
def test_commit_or_rollback_without_select(ch: Channel, method: str) -> None:
    with pytest.raises(PreconditionFailed) as err:
        getattr(ch, method)()
    assert err.value.reply_text == "PRECONDITION_FAILED - channel is not transactional"


def test_tx_and_confirm_do_not_mix(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.tx_select()
    with pytest.raises(PreconditionFailed, match="cannot switch from tx to confirm mode"):
        ch.confirm_delivery()
    ch = broker.connect().channel()
    ch.confirm_delivery()
    with pytest.raises(PreconditionFailed, match="cannot switch from confirm to tx mode"):
        ch.tx_select()


def test_closing_a_channel_with_held_acks_requeues_them(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"1")
    ch.tx_select()
    got = ch.basic_get("q")
    assert got is not None
    ch.basic_ack(got.delivery_tag)
    ch.close()
    assert [e.redelivered for e in broker.queues["q"].entries] == [True]
