"""TTL, dead-lettering, queue expiry and priorities, with time from a ManualClock."""

from __future__ import annotations

import datetime

import pytest

from embroker import Broker, ManualClock
from embroker.client import Channel
from embroker.errors import AccessRefused, PreconditionFailed

from .conftest import bodies


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=1_700_000_000.0)


@pytest.fixture
def broker(clock: ManualClock) -> Broker:  # overrides the plain one: time under control
    return Broker(clock=clock)


def declare_dead_letter_queue(ch: Channel, name: str = "dead") -> None:
    ch.exchange_declare("dlx", "fanout")
    ch.queue_declare(name)
    ch.queue_bind(name, "dlx", "")


# -- message TTL ---------------------------------------------------------------------------


def test_queue_ttl_expires_messages_at_their_time(ch: Channel, broker: Broker,
                                                  clock: ManualClock) -> None:
    ch.queue_declare("q", arguments={"x-message-ttl": 1000})
    ch.basic_publish("", "q", b"early")
    clock.advance(0.5)
    ch.basic_publish("", "q", b"late")
    clock.advance(0.5)
    assert [m.body for m in broker.queues["q"].messages] == [b"late"]
    clock.advance(0.5)
    assert broker.queues["q"].message_count == 0


def test_per_message_ttl_expires_only_at_the_head(ch: Channel, broker: Broker,
                                                  clock: ManualClock) -> None:
    """As RabbitMQ: a longer-lived message at the head holds back shorter-lived ones."""
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"long", {"expiration": "10000"})
    ch.basic_publish("", "q", b"short", {"expiration": "100"})
    clock.advance(1)
    assert broker.queues["q"].message_count == 2
    got = ch.basic_get("q", auto_ack=True)
    assert got is not None
    assert got.body == b"long"
    assert ch.basic_get("q") is None  # 'short' expired as soon as it reached the head


def test_message_ttl_is_the_smaller_of_queue_and_message(ch: Channel, broker: Broker,
                                                         clock: ManualClock) -> None:
    ch.queue_declare("q", arguments={"x-message-ttl": 5000})
    ch.basic_publish("", "q", b"m", {"expiration": "1000"})
    clock.advance(1)
    assert broker.queues["q"].message_count == 0


def test_ttl_zero_reaches_a_waiting_consumer_and_otherwise_expires(
        ch: Channel, broker: Broker) -> None:
    ch.queue_declare("q", arguments={"x-message-ttl": 0})
    ch.basic_publish("", "q", b"nobody waiting")
    assert broker.queues["q"].message_count == 0
    got: list[bytes] = []
    ch.basic_consume("q", lambda c, d, p, body: got.append(body), auto_ack=True)
    ch.basic_publish("", "q", b"delivered")
    assert got == [b"delivered"]


def test_expiration_property_is_kept_on_delivery(ch: Channel) -> None:
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"m", {"expiration": "60000"})
    got = ch.basic_get("q", auto_ack=True)
    assert got is not None
    assert got.properties["expiration"] == "60000"


@pytest.mark.parametrize(("expiration", "reason"), [
    ("soon", "no_integer"),
    ("10x", '{leftover_string,"x"}'),
    ("-1", "{value_negative,-1}"),
])
def test_invalid_expiration_is_refused(ch: Channel, expiration: str, reason: str) -> None:
    ch.queue_declare("q")
    with pytest.raises(PreconditionFailed) as err:
        ch.basic_publish("", "q", b"m", {"expiration": expiration})
    assert err.value.reply_text == f"PRECONDITION_FAILED - invalid expiration '{expiration}': {reason}"


def test_requeued_message_keeps_its_deadline(ch: Channel, broker: Broker,
                                             clock: ManualClock) -> None:
    ch.queue_declare("q", arguments={"x-message-ttl": 1000})
    ch.basic_publish("", "q", b"m")
    got = ch.basic_get("q")
    assert got is not None
    clock.advance(2)
    ch.basic_nack(got.delivery_tag)
    assert broker.queues["q"].message_count == 0


# -- dead-lettering ------------------------------------------------------------------------


def test_rejected_message_is_dead_lettered_with_x_death(ch: Channel, broker: Broker) -> None:
    declare_dead_letter_queue(ch)
    ch.queue_declare("work", arguments={"x-dead-letter-exchange": "dlx"})
    ch.basic_publish("", "work", b"bad", {"headers": {"h": 1}, "expiration": "60000"})
    got = ch.basic_get("work")
    assert got is not None
    ch.basic_reject(got.delivery_tag, requeue=False)
    dead = ch.basic_get("dead", auto_ack=True)
    assert dead is not None
    assert (dead.exchange, dead.routing_key) == ("dlx", "work")
    headers = dead.properties["headers"]
    assert headers["x-death"] == [{
        "count": 1, "reason": "rejected", "queue": "work",
        "time": datetime.datetime.fromtimestamp(1_700_000_000, datetime.timezone.utc),
        "exchange": "", "routing-keys": ["work"], "original-expiration": "60000"}]
    assert (headers["x-first-death-reason"], headers["x-first-death-queue"],
            headers["x-first-death-exchange"]) == ("rejected", "work", "")
    assert headers["h"] == 1
    assert "expiration" not in dead.properties
    assert broker.trace[-1].dead_letter == ("work", "rejected")
    assert "Dead-lettered from queue 'work' (rejected)" in broker.trace[-1].explain()


def test_expired_messages_are_dead_lettered(ch: Channel, broker: Broker,
                                            clock: ManualClock) -> None:
    declare_dead_letter_queue(ch)
    ch.queue_declare("work", arguments={"x-dead-letter-exchange": "dlx", "x-message-ttl": 100})
    ch.basic_publish("", "work", b"m")
    clock.advance(0.1)
    dead = ch.basic_get("dead", auto_ack=True)
    assert dead is not None
    assert dead.properties["headers"]["x-death"][0]["reason"] == "expired"


def test_dropped_head_is_dead_lettered_as_maxlen(ch: Channel) -> None:
    declare_dead_letter_queue(ch)
    ch.queue_declare("work", arguments={"x-dead-letter-exchange": "dlx", "x-max-length": 1})
    ch.basic_publish("", "work", b"old")
    ch.basic_publish("", "work", b"new")
    dead = ch.basic_get("dead", auto_ack=True)
    assert dead is not None
    assert dead.body == b"old"
    assert dead.properties["headers"]["x-death"][0]["reason"] == "maxlen"


def test_reject_publish_dlx_dead_letters_the_refused_message(ch: Channel) -> None:
    declare_dead_letter_queue(ch)
    ch.queue_declare("work", arguments={"x-dead-letter-exchange": "dlx", "x-max-length": 1,
                                        "x-overflow": "reject-publish-dlx"})
    ch.basic_publish("", "work", b"kept")
    ch.basic_publish("", "work", b"refused")
    assert bodies(ch, "work") == [b"kept"]
    assert bodies(ch, "dead") == [b"refused"]


def test_dead_letter_routing_key_replaces_the_keys_and_drops_cc(ch: Channel) -> None:
    ch.exchange_declare("dlx", "direct")
    ch.queue_declare("dead")
    ch.queue_bind("dead", "dlx", "failed")
    ch.queue_declare("work", arguments={"x-dead-letter-exchange": "dlx",
                                        "x-dead-letter-routing-key": "failed"})
    ch.queue_bind("work", "amq.direct", "a")
    ch.basic_publish("amq.direct", "a", b"m", {"headers": {"CC": ["b"]}})
    got = ch.basic_get("work")
    assert got is not None
    ch.basic_nack(got.delivery_tag, requeue=False)
    dead = ch.basic_get("dead", auto_ack=True)
    assert dead is not None
    assert dead.routing_key == "failed"
    headers = dead.properties["headers"]
    assert "CC" not in headers
    assert headers["x-death"][0]["routing-keys"] == ["a", "b"]
    assert headers["x-death"][0]["exchange"] == "amq.direct"


def test_repeated_deaths_count_up_in_one_entry(ch: Channel, broker: Broker) -> None:
    # work -> (rejected) -> retry (ttl) -> (expired) -> work -> (rejected) ...
    ch.exchange_declare("to-retry", "fanout")
    ch.exchange_declare("to-work", "fanout")
    ch.queue_declare("work", arguments={"x-dead-letter-exchange": "to-retry"})
    ch.queue_bind("work", "to-work", "")
    ch.queue_declare("retry", arguments={"x-dead-letter-exchange": "to-work",
                                         "x-message-ttl": 10})
    ch.queue_bind("retry", "to-retry", "")
    ch.basic_publish("", "work", b"m")
    for _ in range(3):
        got = ch.basic_get("work")
        assert got is not None
        ch.basic_reject(got.delivery_tag, requeue=False)
        broker.clock.advance(0.01)  # type: ignore[attr-defined]
    got = ch.basic_get("work", auto_ack=True)
    assert got is not None
    deaths = got.properties["headers"]["x-death"]
    assert [(d["queue"], d["reason"], d["count"]) for d in deaths] == [
        ("retry", "expired", 3), ("work", "rejected", 3)]
    assert got.properties["headers"]["x-first-death-reason"] == "rejected"


def test_dead_letter_cycle_without_rejection_is_dropped(ch: Channel, broker: Broker,
                                                        clock: ManualClock) -> None:
    ch.exchange_declare("self", "fanout")
    ch.queue_declare("loop", arguments={"x-dead-letter-exchange": "self", "x-message-ttl": 10})
    ch.queue_bind("loop", "self", "")
    ch.basic_publish("", "loop", b"m")
    clock.advance(0.01)
    assert broker.queues["loop"].message_count == 0
    assert broker.trace[-1].dead_letter == ("loop", "expired")
    assert broker.trace[-1].queues == ()


def test_missing_dead_letter_exchange_drops(ch: Channel, broker: Broker) -> None:
    ch.queue_declare("work", arguments={"x-dead-letter-exchange": "nowhere"})
    ch.basic_publish("", "work", b"m")
    got = ch.basic_get("work")
    assert got is not None
    ch.basic_reject(got.delivery_tag, requeue=False)
    assert "the dead-letter exchange does not exist" in broker.trace[-1].explain()


# -- queue expiry --------------------------------------------------------------------------


def test_unused_queue_expires(ch: Channel, broker: Broker, clock: ManualClock) -> None:
    ch.queue_declare("q", arguments={"x-expires": 1000})
    clock.advance(0.9)
    ch.queue_declare("q", passive=True)  # a declare counts as use
    clock.advance(0.9)
    assert "q" in broker.queues
    ch.basic_get("q")  # so does a basic.get, even an empty one
    clock.advance(0.9)
    assert "q" in broker.queues
    clock.advance(0.1)
    assert "q" not in broker.queues


def test_queue_with_a_consumer_does_not_expire(ch: Channel, broker: Broker,
                                               clock: ManualClock) -> None:
    ch.queue_declare("q", arguments={"x-expires": 1000})
    tag = ch.basic_consume("q", lambda *a: None)
    clock.advance(5)
    assert "q" in broker.queues
    ch.basic_cancel(tag)
    clock.advance(1)
    assert "q" not in broker.queues


# -- priorities ----------------------------------------------------------------------------


def test_priority_queue_delivers_highest_first_and_fifo_within(ch: Channel) -> None:
    ch.queue_declare("q", arguments={"x-max-priority": 5})
    for body, priority in ((b"low", 1), (b"none", None), (b"high-1", 5), (b"above-max", 9),
                           (b"high-2", 5)):
        ch.basic_publish("", "q", body, {"priority": priority} if priority is not None else None)
    assert bodies(ch, "q") == [b"high-1", b"above-max", b"high-2", b"low", b"none"]


def test_priority_queue_requeue_keeps_the_place(ch: Channel) -> None:
    ch.queue_declare("q", arguments={"x-max-priority": 2})
    for body, priority in ((b"a", 2), (b"b", 2), (b"c", 1)):
        ch.basic_publish("", "q", body, {"priority": priority})
    got = ch.basic_get("q")
    assert got is not None
    ch.basic_nack(got.delivery_tag)
    assert bodies(ch, "q") == [b"a", b"b", b"c"]


# -- restart -------------------------------------------------------------------------------


def test_restart_keeps_durable_things_and_persistent_messages(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.exchange_declare("durable-x", "direct", durable=True)
    ch.exchange_declare("transient-x", "direct")
    ch.queue_declare("durable-q", durable=True)
    ch.queue_declare("transient-q")
    ch.queue_bind("durable-q", "durable-x", "k")
    ch.queue_bind("durable-q", "transient-x", "k")
    ch.basic_publish("", "durable-q", b"unacked persistent", {"delivery_mode": 2})
    assert ch.basic_get("durable-q") is not None  # held unacked over the restart
    ch.basic_publish("", "durable-q", b"transient")
    ch.basic_publish("", "durable-q", b"persistent 2", {"delivery_mode": 2})
    broker.restart()
    assert not ch.is_open
    assert broker.connections == {}
    assert "transient-q" not in broker.queues
    assert "transient-x" not in broker.exchanges
    assert [(e.message.body, e.redelivered) for e in broker.queues["durable-q"].entries] == [
        (b"unacked persistent", True), (b"persistent 2", False)]
    assert [b.source.name for b in broker.queues["durable-q"].bindings.values()] == ["durable-x"]


# -- single active consumer ----------------------------------------------------------------


def _collector(tag: str, into: list[tuple[str, bytes, bool]]):
    def callback(channel, delivery, properties, body):
        into.append((tag, body, delivery.redelivered))
    return callback


def test_single_active_consumer_takes_everything_until_it_goes(broker: Broker) -> None:
    """Checked against RabbitMQ 3.10: on the active consumer's channel closing, its unacked
    messages come back first and the next consumer (highest priority, then earliest) gets
    them."""
    admin = broker.connect().channel()
    admin.queue_declare("q", arguments={"x-single-active-consumer": True})
    got: list[tuple[str, bytes, bool]] = []
    a = broker.connect().channel()
    a.basic_qos(prefetch_count=1)
    a.basic_consume("q", _collector("A", got), consumer_tag="A")
    b = broker.connect().channel()
    b.basic_consume("q", _collector("B", got), consumer_tag="B", arguments={"x-priority": 1})
    c = broker.connect().channel()
    c.basic_consume("q", _collector("C", got), consumer_tag="C", arguments={"x-priority": 5})
    for i in range(3):
        admin.basic_publish("", "q", b"m%d" % i)
    for channel in (a, b, c):  # each in-process client runs its callbacks on its own calls
        channel.connection.process_data_events()
    assert got == [("A", b"m0", False)]
    assert admin.queue_declare("q", passive=True).consumer_count == 3
    a.close()
    for channel in (b, c):
        channel.connection.process_data_events()
    assert got[1:] == [("C", b"m0", True), ("C", b"m1", False), ("C", b"m2", False)]


def test_single_active_consumer_queue_refuses_exclusive_consumers(ch: Channel) -> None:
    ch.queue_declare("q", arguments={"x-single-active-consumer": True})
    with pytest.raises(AccessRefused) as err:
        ch.basic_consume("q", lambda *a: None, exclusive=True)
    assert err.value.reply_text == "ACCESS_REFUSED - queue 'q' in vhost '/' in exclusive use"


# -- queue types ---------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "text"), [
    ({"arguments": {"x-queue-type": "quorum"}},
     "invalid property 'non-durable' for queue 'q' in vhost '/'"),
    ({"durable": True, "auto_delete": True, "arguments": {"x-queue-type": "quorum"}},
     "invalid property 'auto-delete' for queue 'q' in vhost '/'"),
    ({"durable": True, "exclusive": True, "arguments": {"x-queue-type": "quorum"}},
     "invalid property 'exclusive-owner' for queue 'q' in vhost '/'"),
    ({"durable": True, "arguments": {"x-queue-type": "quorum", "x-max-priority": 5}},
     "invalid arg 'x-max-priority' for queue 'q' in vhost '/' of queue type rabbit_quorum_queue"),
    ({"arguments": {"x-queue-type": "foo"}},
     "invalid arg 'x-queue-type' for queue 'q' in vhost '/': \"unsupported queue type 'foo'\""),
    ({"arguments": {"x-queue-type": "stream"}},
     "invalid property 'non-durable' for queue 'q' in vhost '/'"),
])
def test_queue_type_rules(ch: Channel, kwargs: dict[str, object], text: str) -> None:
    with pytest.raises(PreconditionFailed) as err:
        ch.queue_declare("q", **kwargs)  # type: ignore[arg-type]
    assert err.value.reply_text == f"PRECONDITION_FAILED - {text}"


def test_classic_queue_redeclared_with_explicit_classic_type(ch: Channel) -> None:
    ch.queue_declare("q")
    ch.queue_declare("q", arguments={"x-queue-type": "classic"})
    with pytest.raises(PreconditionFailed, match="inequivalent arg 'x-queue-type'"):
        ch.queue_declare("q", arguments={"x-queue-type": "quorum"})


def test_quorum_delivery_count_and_limit(ch: Channel) -> None:
    """As RabbitMQ 3.10: every delivery carries x-delivery-count; past the limit the message
    is dead-lettered with reason delivery_limit."""
    declare_dead_letter_queue(ch)
    ch.queue_declare("qq", durable=True, arguments={
        "x-queue-type": "quorum", "x-delivery-limit": 2, "x-dead-letter-exchange": "dlx"})
    ch.basic_publish("", "qq", b"m0", {"headers": {"h": 1}})
    counts = []
    for _ in range(3):
        got = ch.basic_get("qq")
        assert got is not None
        counts.append((got.redelivered, got.properties["headers"]["x-delivery-count"]))
        ch.basic_nack(got.delivery_tag)
    assert counts == [(False, 0), (True, 1), (True, 2)]
    assert ch.basic_get("qq") is None
    dead = ch.basic_get("dead", auto_ack=True)
    assert dead is not None
    headers = dead.properties["headers"]
    assert headers["x-death"][0]["reason"] == "delivery_limit"
    assert "x-delivery-count" not in headers
    assert headers["h"] == 1


def test_server_named_quorum_queue_is_refused(ch: Channel) -> None:
    with pytest.raises(PreconditionFailed, match="Cannot declare a server-named queue for type "
                                                 "rabbit_quorum_queue"):
        ch.queue_declare("", durable=True, arguments={"x-queue-type": "quorum"})


# -- direct reply-to -----------------------------------------------------------------------


def test_direct_reply_to_round_trip(broker: Broker) -> None:
    client = broker.connect().channel()
    replies: list[tuple[str, int, str, bytes]] = []
    tag = client.basic_consume(
        "amq.rabbitmq.reply-to",
        lambda c, d, p, body: replies.append((d.consumer_tag, d.delivery_tag, d.routing_key, body)),
        auto_ack=True)
    server = broker.connect().channel()
    server.queue_declare("rpc")
    client.basic_publish("", "rpc", b"request",
                         {"reply_to": "amq.rabbitmq.reply-to", "correlation_id": "c1"})
    request = server.basic_get("rpc", auto_ack=True)
    assert request is not None
    address = request.properties["reply_to"]
    assert address.startswith("amq.rabbitmq.reply-to.")
    assert server.queue_declare(address, passive=True).consumer_count == 1
    server.basic_publish("", address, b"reply", {"correlation_id": "c1"}, mandatory=True)
    client.connection.process_data_events()  # the client's callbacks run on its own calls
    assert replies == [(tag, 1, address, b"reply")]
    assert [r.reply_text for r in server.returned] == ["NO_ROUTE"]  # RabbitMQ returns it too
    client.close()
    server.basic_publish("", address, b"too late")  # the requester is gone: dropped
    client.connection.process_data_events()
    assert replies == [(tag, 1, address, b"reply")]


def _consume_replies_with_acks(ch: Channel) -> None:
    ch.basic_consume("amq.rabbitmq.reply-to", lambda *a: None)


def _publish_reply_to_without_consumer(ch: Channel) -> None:
    ch.basic_publish("", "x", b"", {"reply_to": "amq.rabbitmq.reply-to"})


def _consume_replies_twice(ch: Channel) -> None:
    ch.basic_consume("amq.rabbitmq.reply-to", lambda *a: None, auto_ack=True)
    ch.basic_consume("amq.rabbitmq.reply-to", lambda *a: None, auto_ack=True)


@pytest.mark.parametrize(("action", "text"), [
    (_consume_replies_with_acks, "reply consumer cannot acknowledge"),
    (_publish_reply_to_without_consumer, "fast reply consumer does not exist"),
    (_consume_replies_twice, "reply consumer already set"),
])
def test_direct_reply_to_misuse(ch: Channel, action, text: str) -> None:
    with pytest.raises(PreconditionFailed) as err:
        action(ch)
    assert err.value.reply_text == f"PRECONDITION_FAILED - {text}"


def test_quorum_without_limit_returns_to_the_back_and_consumers_first_see_no_count(
        broker: Broker) -> None:
    """Checked against RabbitMQ 3.10 (tests/conformance/scenarios_queue_types.py)."""
    ch = broker.connect().channel()
    ch.queue_declare("qq", durable=True, arguments={"x-queue-type": "quorum"})
    for i in range(3):
        ch.basic_publish("", "qq", b"m%d" % i)
    first = [ch.basic_get("qq"), ch.basic_get("qq")]
    for got in first:
        assert got is not None
        ch.basic_nack(got.delivery_tag)
    seen: list[tuple[bytes, object]] = []
    ch.basic_consume("qq", lambda c, d, p, body: seen.append(
        (body, (p.get("headers") or {}).get("x-delivery-count"))), auto_ack=True)
    assert seen == [(b"m2", None), (b"m0", 1), (b"m1", 1)]


@pytest.mark.parametrize("closing", ["channel", "connection"])
def test_quorum_without_limit_returns_a_closed_channels_deliveries_first(
        broker: Broker, closing: str) -> None:
    """A consumer whose channel closes is down for the quorum queue: its deliveries go to
    rabbit_fifo's returns, served before the ready messages, delivery limit or not (v3.10.8
    rabbit_fifo: handle_down, return_all/5, take_next_msg/1; a nack or reject without a limit
    appends them instead: the test above). Seen live on 3.10.8 (channel and connection close:
    m1 redelivered, then m2) and in tests/cluster/golden/clients/pika_with_an_address_list.txt."""
    ch = broker.connect().channel()
    ch.queue_declare("qq", durable=True, arguments={"x-queue-type": "quorum"})
    ch.basic_publish("", "qq", b"m1")
    ch.basic_publish("", "qq", b"m2")
    consumer = broker.connect().channel()
    consumer.basic_qos(prefetch_count=1)
    consumer.basic_consume("qq", lambda *_: None)
    assert broker.queues["qq"].unacked == 1
    if closing == "channel":
        consumer.close()
    else:
        consumer.connection.close()
    got = [ch.basic_get("qq", auto_ack=True) for _ in range(2)]
    assert [(g.message.body, g.redelivered) for g in got if g is not None] == [
        (b"m1", True), (b"m2", False)]
