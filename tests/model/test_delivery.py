"""basic.get, consumers, acknowledgements and requeueing."""

from __future__ import annotations

import pytest

from embroker import Broker
from embroker.client import Channel
from embroker.errors import AccessRefused, NotAllowed, NotImplementedAMQP, PreconditionFailed
from embroker.model import Delivery

from .conftest import bodies


def fill(ch: Channel, queue: str, n: int) -> None:
    ch.queue_declare(queue)
    for i in range(n):
        ch.basic_publish("", queue, b"%d" % i)


def test_basic_get_reports_messages_left_and_tags_per_channel(ch: Channel, broker: Broker) -> None:
    fill(ch, "q", 3)
    first, second = ch.basic_get("q"), ch.basic_get("q")
    assert first is not None
    assert second is not None
    assert (first.delivery_tag, first.message_count, first.redelivered) == (1, 2, False)
    assert (second.delivery_tag, second.message_count) == (2, 1)
    other = broker.connect().channel()
    third = other.basic_get("q")
    assert third is not None
    assert third.delivery_tag == 1
    assert other.basic_get("q") is None


def test_requeued_message_goes_back_to_its_place_marked_redelivered(ch: Channel) -> None:
    fill(ch, "q", 4)
    got = [ch.basic_get("q") for _ in range(3)]
    ch.basic_reject(got[1].delivery_tag)
    ch.basic_nack(got[0].delivery_tag)
    entries = [(d.body, d.redelivered) for d in iter(lambda: ch.basic_get("q", auto_ack=True), None)]
    assert entries == [(b"0", True), (b"1", True), (b"3", False)]


def test_nack_without_requeue_drops(ch: Channel, broker: Broker) -> None:
    fill(ch, "q", 2)
    got = ch.basic_get("q")
    assert got is not None
    ch.basic_nack(got.delivery_tag, requeue=False)
    assert bodies(ch, "q") == [b"1"]


def test_ack_multiple_settles_up_to_the_tag(ch: Channel, broker: Broker) -> None:
    fill(ch, "q", 4)
    tags = [ch.basic_get("q").delivery_tag for _ in range(4)]
    ch.basic_ack(tags[2], multiple=True)
    assert ch.model.unacked_tags == [tags[3]]
    ch.basic_ack(0, multiple=True)  # zero with multiple: everything
    assert ch.model.unacked_tags == []
    assert broker.queues["q"].unacked == 0


@pytest.mark.parametrize("multiple", [False, True])
def test_unknown_delivery_tag_is_precondition_failed(ch: Channel, multiple: bool) -> None:
    fill(ch, "q", 1)
    ch.basic_get("q")
    with pytest.raises(PreconditionFailed) as err:
        ch.basic_ack(7, multiple=multiple)
    assert err.value.reply_text == "PRECONDITION_FAILED - unknown delivery tag 7"


def test_double_ack_is_precondition_failed(ch: Channel) -> None:
    fill(ch, "q", 1)
    got = ch.basic_get("q")
    assert got is not None
    ch.basic_ack(got.delivery_tag)
    with pytest.raises(PreconditionFailed):
        ch.basic_ack(got.delivery_tag)


def test_ack_of_an_auto_ack_delivery_is_unknown(ch: Channel) -> None:
    fill(ch, "q", 1)
    got = ch.basic_get("q", auto_ack=True)
    assert got is not None
    with pytest.raises(PreconditionFailed):
        ch.basic_ack(got.delivery_tag)


def test_closing_a_channel_requeues_in_order_as_redelivered(ch: Channel, broker: Broker) -> None:
    fill(ch, "q", 3)
    for _ in range(3):
        ch.basic_get("q")
    ch.close()
    other = broker.connect().channel()
    got = [other.basic_get("q", auto_ack=True) for _ in range(3)]
    assert [(d.body, d.redelivered) for d in got] == [
        (b"0", True), (b"1", True), (b"2", True)]


def test_channel_error_requeues_its_unacked_messages(ch: Channel, broker: Broker) -> None:
    fill(ch, "q", 1)
    ch.basic_get("q")
    with pytest.raises(PreconditionFailed):
        ch.basic_ack(99)
    assert broker.queues["q"].message_count == 1


def collect(into: list[Delivery]):
    def callback(channel: Channel, delivery: Delivery, properties: object, body: bytes) -> None:
        into.append(delivery)
    return callback


def test_consumers_take_turns(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.queue_declare("q")
    a: list[Delivery] = []
    b: list[Delivery] = []
    ch.basic_consume("q", collect(a), auto_ack=True, consumer_tag="a")
    ch.basic_consume("q", collect(b), auto_ack=True, consumer_tag="b")
    for i in range(4):
        ch.basic_publish("", "q", b"%d" % i)
    assert [d.body for d in a] == [b"0", b"2"]
    assert [d.body for d in b] == [b"1", b"3"]


def test_prefetch_limits_unacked_deliveries(broker: Broker) -> None:
    ch = broker.connect().channel()
    fill(ch, "q", 5)
    ch.basic_qos(prefetch_count=2)
    got: list[Delivery] = []
    ch.basic_consume("q", collect(got))
    assert len(got) == 2
    ch.basic_ack(got[0].delivery_tag)
    assert len(got) == 3
    ch.basic_qos(prefetch_count=0)  # a new per-consumer limit applies to new consumers only
    assert len(got) == 3


def _consumers_under_a_global_limit_of_two(broker: Broker) -> tuple[Channel, list[Delivery]]:
    """A channel with prefetch 2 (global) consuming two queues of three messages each."""
    ch = broker.connect().channel()
    fill(ch, "q1", 3)
    fill(ch, "q2", 3)
    ch.basic_qos(prefetch_count=2, global_qos=True)
    got: list[Delivery] = []
    ch.basic_consume("q1", collect(got))
    ch.basic_consume("q2", collect(got))
    return ch, got


def test_global_prefetch_is_shared_by_the_channels_consumers(broker: Broker) -> None:
    ch, got = _consumers_under_a_global_limit_of_two(broker)
    assert len(got) == 2
    ch.basic_ack(0, multiple=True)
    assert len(got) == 4


def test_each_single_ack_gives_the_global_limit_room_for_one_more(broker: Broker) -> None:
    ch, got = _consumers_under_a_global_limit_of_two(broker)
    for held in (3, 4, 5, 6):
        ch.basic_ack(got[held - 3].delivery_tag)
        assert len(got) == held
    assert ch.model.consumer_unacked == 2


def test_an_ack_after_its_queue_was_deleted_settles_only_the_channel(broker: Broker) -> None:
    """As RabbitMQ 3.10.8 does (checked live with pika): the ack is taken, nothing more comes,
    and the same tag again is an unknown delivery tag."""
    ch = broker.connect().channel()
    fill(ch, "q", 2)
    ch.basic_qos(prefetch_count=1)
    got: list[Delivery] = []
    ch.basic_consume("q", collect(got))
    broker.connect().channel().queue_delete("q")
    ch.basic_ack(got[0].delivery_tag)  # no error, and nothing delivered
    assert len(got) == 1
    assert ch.model.consumer_unacked == 0
    with pytest.raises(PreconditionFailed):
        ch.basic_ack(got[0].delivery_tag)


def test_consumer_tags(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.queue_declare("q")
    tag = ch.basic_consume("q", lambda *a: None)
    assert tag.startswith("amq.ctag-")
    ch.basic_consume("q", lambda *a: None, consumer_tag="mine")
    with pytest.raises(NotAllowed) as err:
        ch.basic_consume("q", lambda *a: None, consumer_tag="mine")
    assert err.value.reply_text == "NOT_ALLOWED - attempt to reuse consumer tag 'mine'"
    assert not ch.connection.is_open  # 530 is a connection error


def test_exclusive_consumer(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.queue_declare("q")
    ch.basic_consume("q", lambda *a: None, exclusive=True)
    other = broker.connect().channel()
    with pytest.raises(AccessRefused) as err:
        other.basic_consume("q", lambda *a: None)
    assert err.value.reply_text == "ACCESS_REFUSED - queue 'q' in vhost '/' in exclusive use"


def test_cancel_and_auto_delete_queue(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.queue_declare("q", auto_delete=True)
    tag = ch.basic_consume("q", lambda *a: None)
    ch.basic_cancel("not-a-consumer")  # unknown tags are fine
    assert "q" in broker.queues
    ch.basic_cancel(tag)
    assert "q" not in broker.queues


def test_auto_delete_queue_without_consumers_stays(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.queue_declare("q", auto_delete=True)
    ch.close()
    assert "q" in broker.queues


def test_deleting_a_queue_cancels_its_consumers(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.queue_declare("q")
    tag = ch.basic_consume("q", lambda *a: None)
    broker.connect().channel().queue_delete("q")
    ch.connection.process_data_events()
    assert ch.cancelled == [tag]
    assert ch.model.consumers == {}


def test_recover_requeues_and_requeue_false_is_not_implemented(broker: Broker) -> None:
    ch = broker.connect().channel()
    fill(ch, "q", 2)
    ch.basic_get("q")
    ch.basic_recover()
    assert broker.queues["q"].message_count == 2
    with pytest.raises(NotImplementedAMQP):
        ch.basic_recover(requeue=False)


def test_prefetch_size_is_not_implemented(broker: Broker) -> None:
    with pytest.raises(NotImplementedAMQP) as err:
        broker.connect().channel().basic_qos(prefetch_size=10)
    assert err.value.reply_text == "NOT_IMPLEMENTED - prefetch_size!=0 (10)"


def test_confirms_number_publishes_from_one(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.confirm_delivery()
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"1")
    ch.basic_publish("", "nowhere", b"2")
    assert ch.confirms == [(1, False, True), (2, False, True)]


def test_user_id_must_be_the_authenticated_user(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"", {"user_id": "guest"})
    with pytest.raises(PreconditionFailed) as err:
        ch.basic_publish("", "q", b"", {"user_id": "somebody-else"})
    assert err.value.reply_text == ("PRECONDITION_FAILED - user_id property set to 'somebody-else' "
                                    "but authenticated user was 'guest'")


def test_higher_priority_consumers_get_messages_while_they_have_room(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.queue_declare("q")
    ch.basic_qos(prefetch_count=2)
    high: list[Delivery] = []
    low: list[Delivery] = []
    ch.basic_consume("q", collect(low), arguments={"x-priority": 0})
    ch.basic_consume("q", collect(high), arguments={"x-priority": 10})
    for i in range(5):
        ch.basic_publish("", "q", b"%d" % i)
    assert [d.body for d in high] == [b"0", b"1"]
    assert [d.body for d in low] == [b"2", b"3"]
    ch.basic_ack(high[0].delivery_tag)
    assert [d.body for d in high] == [b"0", b"1", b"4"]


def test_consumer_priority_must_be_an_integer(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.queue_declare("q")
    with pytest.raises(PreconditionFailed) as err:
        ch.basic_consume("q", lambda *a: None, arguments={"x-priority": "high"})
    assert err.value.reply_text == ("PRECONDITION_FAILED - invalid arg 'x-priority' for queue 'q' in "
                                    "vhost '/': \"expected integer, got longstr\"")


def test_a_consumer_that_regains_room_queues_up_behind_the_others(broker: Broker) -> None:
    """Found by the stateful differential test against RabbitMQ 3.10: a consumer passed over
    for lack of room rejoins at the back of the line when it has room again."""
    a_ch = broker.connect().channel()
    a_ch.queue_declare("q")
    a: list[Delivery] = []
    b: list[Delivery] = []
    a_ch.basic_consume("q", collect(a), consumer_tag="a")
    b_ch = broker.connect().channel()
    b_ch.basic_qos(prefetch_count=1)
    b_ch.basic_consume("q", collect(b), consumer_tag="b")
    for i in range(4):
        a_ch.basic_publish("", "q", b"m%d" % i)
    b_ch.connection.process_data_events()
    assert [d.body for d in a] == [b"m0", b"m2", b"m3"]
    assert [d.body for d in b] == [b"m1"]
    b_ch.basic_reject(b[0].delivery_tag)  # b has room again, but goes behind a
    a_ch.connection.process_data_events()
    assert [d.body for d in a] == [b"m0", b"m2", b"m3", b"m1"]
