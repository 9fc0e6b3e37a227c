"""MQTT under embroker's RabbitMQ 4 profile: the message as RabbitMQ 3.13+ keep it, subscription
options, outbound topic aliases, the session's expiry at DISCONNECT, delayed wills and client-id
takeover. Each rule as RabbitMQ 4.0.5's plugin has it, the function named
(``deps/rabbitmq_mqtt/src/rabbit_mqtt_processor.erl``, ``deps/rabbit/src/mc_mqtt.erl``,
``deps/rabbitmq_mqtt/src/rabbit_mqtt_retainer.erl``)."""

from __future__ import annotations

from typing import Any

import pytest

from embroker.fieldtypes import Long
from embroker.model import Broker, ManualClock
from embroker.mqtt._packet5 import Properties

from .wire import (
    Wire,
    connect,
    connect5,
    disconnect5,
    publish,
    publish5,
    subscribe,
    subscribe5,
    unsubscribe5,
)

NO_LOCAL, RETAIN_AS_PUBLISHED = 0x04, 0x08


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def broker(clock: ManualClock) -> Broker:
    return Broker(clock=clock, as_rabbitmq="4.0.5")


def _client(broker: Broker, client_id: str, **options: Any) -> Wire:
    w = Wire(broker)
    [(_, (_, code, _))] = w.send(connect5(client_id, **options))
    assert code == 0
    return w


def _published(packets: list[tuple[str, Any]]) -> list[tuple[Any, ...]]:
    return [fields for name, fields in packets if name == "PUBLISH"]


def _amqp_queue(broker: Broker, key: str = "#") -> Any:
    channel = broker.open_connection().open_channel(1)
    channel.queue_declare("q")
    channel.queue_bind("q", "amq.topic", key)
    return channel


# -- the message as RabbitMQ 3.13+ keep it (mc_mqtt) ---------------------------------------------


def test_amqp_consumers_see_no_x_mqtt_headers_under_the_profile(broker: Broker) -> None:
    # mc_mqtt:convert_to(mc_amqpl): delivery mode from the QoS, headers only from User
    # Properties (3.10's x-mqtt-publish-qos and x-mqtt-dup are gone), for every level
    channel = _amqp_queue(broker)
    _client(broker, "five").send(publish5("a/b", b"5", qos=1, packet_id=1))
    four = Wire(broker)
    four.send(connect("four"))
    four.send(publish("a/b", b"4"))
    five = channel.basic_get("q", no_ack=True).message
    assert five.properties == {"delivery_mode": 2}
    four_message = channel.basic_get("q", no_ack=True).message
    assert four_message.properties == {"delivery_mode": 1}


def test_the_delivered_qos_is_the_lower_of_the_delivery_mode_and_the_subscription(
        broker: Broker) -> None:
    # deliver_one_to_client/3: effective_qos(PublisherQos, SubscriberQoS), the publisher's QoS
    # from the durable annotation (mc_mqtt:protocol_state/2)
    sub = _client(broker, "s")
    sub.send(subscribe5(1, ("t", 1)))
    channel = broker.open_connection().open_channel(1)
    channel.basic_publish("amq.topic", "t", b"transient")
    channel.basic_publish("amq.topic", "t", b"persistent", {"delivery_mode": 2})
    [(_, first, qos_first, *_), (_, second, qos_second, *_)] = _published(sub.received())
    assert (first, qos_first) == (b"transient", 0)
    assert (second, qos_second) == (b"persistent", 1)


def test_an_mqtt_subscriber_gets_the_properties_as_published(broker: Broker) -> None:
    # (an MQTT message stays an mc_mqtt message: what the AMQP conversion would lose comes
    # through: the Payload Format Indicator, a content type that is no shortstr, duplicate
    # User Properties in their order)
    sub = _client(broker, "s")
    sub.send(subscribe5(1, ("t", 0)))
    sent = Properties(payload_format_indicator=1, content_type="tëxt/plain",
                      user_properties=(("k", "2"), ("k", "1"), ("a", "0")),
                      correlation_data=b"\xff\x00")
    _client(broker, "p").send(publish5("t", b"x", properties=sent))
    [(_, _, _, _, _, props)] = _published(sub.received())
    assert props == sent


def test_the_message_expiry_interval_sent_is_what_is_left_of_it(broker: Broker,
                                                                 clock: ManualClock) -> None:
    # mc_mqtt:protocol_state/2 [MQTT-3.3.2-6]: the received value minus the time waited
    _amqp_queue(broker, "nobody")
    sub = _client(broker, "s", clean=False, properties=Properties(session_expiry_interval=60))
    sub.send(subscribe5(1, ("t", 1)))
    sub.send(disconnect5())
    _client(broker, "p").send(publish5("t", b"x", qos=1, packet_id=1, properties=Properties(
        message_expiry_interval=30)))
    clock.advance(12.5)
    back = Wire(broker)
    packets = back.send(connect5("s", clean=False, properties=Properties(
        session_expiry_interval=60)))
    [(_, _, _, _, _, props)] = _published(packets)
    assert props.message_expiry_interval == 17


# -- subscription options ------------------------------------------------------------------------


def test_no_local_keeps_a_clients_own_publishes_from_it(broker: Broker) -> None:
    # drop_local/2 [MQTT-3.8.3-3]: its queue is taken from the routed queues, so a QoS 1
    # publish that reached nothing else is acknowledged 0x10 (process_routing_confirm/3)
    w = _client(broker, "me")
    w.send(subscribe5(1, ("t/+", 1 | NO_LOCAL)))
    assert w.send(publish5("t/1", b"x", qos=1, packet_id=5)) == [("PUBACK", (5, 0x10))]
    other = _client(broker, "other")
    other.send(publish5("t/1", b"y"))
    [(topic, payload, *_)] = _published(w.received())
    assert (topic, payload) == ("t/1", b"y")


def test_no_local_drops_a_queue_only_when_every_filter_reaching_it_says_so(
        broker: Broker) -> None:
    # drop_local/2: the queue stays when any matching binding's subscription lacks No Local
    w = _client(broker, "me")
    w.send(subscribe5(1, ("t/#", NO_LOCAL), ("t/1", 0)))
    [(_, payload, *_)] = _published(w.send(publish5("t/1", b"x")))
    assert payload == b"x"
    assert _published(w.send(publish5("t/2", b"y"))) == []


def test_retain_as_published_keeps_the_retain_flag(broker: Broker) -> None:
    # retain/3: RETAIN as published only through a Retain As Published subscription
    kept = _client(broker, "kept")
    kept.send(subscribe5(1, ("r", RETAIN_AS_PUBLISHED)))
    plain = _client(broker, "plain")
    plain.send(subscribe5(1, ("r", 0)))
    kept.received(), plain.received()
    _client(broker, "p").send(publish5("r", b"x", retain=True))
    [(_, _, _, retain_kept, *_)] = _published(kept.received())
    [(_, _, _, retain_plain, *_)] = _published(plain.received())
    assert (retain_kept, retain_plain) == (True, False)


def test_retained_messages_keep_their_properties_but_get_no_subscription_identifier(
        broker: Broker, clock: ManualClock) -> None:
    # send_retained_message/3 (no maybe_add_subscription_ids/3); rabbit_mqtt_retainer: the
    # Message Expiry Interval is what is left, and the message is gone once it has run out
    _client(broker, "p").send(publish5("r", b"x", retain=True, properties=Properties(
        message_expiry_interval=10, user_properties=(("k", "v"),))))
    clock.advance(4)
    sub = _client(broker, "s")
    packets = sub.send(subscribe5(1, ("r", 0), properties=Properties(
        subscription_identifiers=(7,))))
    [(_, _, _, retain, _, props)] = _published(packets)
    assert retain
    assert props.message_expiry_interval == 6
    assert props.user_properties == (("k", "v"),)
    assert props.subscription_identifiers == ()
    clock.advance(6)
    assert _published(_client(broker, "late").send(subscribe5(1, ("r", 0)))) == []


# -- outbound topic aliases ----------------------------------------------------------------------


def test_topic_aliases_out_up_to_the_clients_maximum(broker: Broker) -> None:
    # process_topic_alias_outbound/3: a new topic gets the next alias while the client's Topic
    # Alias Maximum allows (none for a one-byte topic), a known one is sent as its alias alone
    sub = _client(broker, "s", properties=Properties(topic_alias_maximum=1))
    sub.send(subscribe5(1, ("#", 0)))
    publisher = _client(broker, "p")
    for topic in ("a/b", "a/b", "c", "d/e"):
        publisher.send(publish5(topic, b"x"))
    sent = [(topic, props.topic_alias) for topic, _, _, _, _, props in
            _published(sub.received())]
    assert sent == [("a/b", 1), ("", 1), ("c", None), ("d/e", None)]


def test_no_topic_alias_out_without_the_clients_maximum(broker: Broker) -> None:
    sub = _client(broker, "s")
    sub.send(subscribe5(1, ("#", 0)))
    _client(broker, "p").send(publish5("a/b", b"x"))
    [(topic, _, _, _, _, props)] = _published(sub.received())
    assert (topic, props.topic_alias) == ("a/b", None)


# -- the session ---------------------------------------------------------------------------------


def test_a_disconnect_changes_the_session_queues_expiry(broker: Broker) -> None:
    # process_request(?DISCONNECT): update_session_expiry_interval/2, capped at 86400 s
    w = _client(broker, "s", properties=Properties(session_expiry_interval=60))
    w.send(subscribe5(1, ("a", 1)))
    w.send(disconnect5(0, Properties(session_expiry_interval=0xFFFFFFF0)))
    queue = broker.vhost("/").queues["mqtt-subscription-sqos1"]
    assert queue.arguments["x-expires"] == Long(86_400_000)


def test_a_disconnect_cannot_give_a_session_that_connect_did_not(broker: Broker) -> None:
    # process_request(?DISCONNECT): a non-zero interval after CONNECT's 0 is ignored
    w = _client(broker, "s")
    w.send(subscribe5(1, ("a", 1)))
    w.send(disconnect5(0, Properties(session_expiry_interval=100)))
    assert "mqtt-subscription-sqos1" not in broker.vhost("/").queues


def test_a_kept_session_takes_the_new_connects_expiry(broker: Broker) -> None:
    # handle_clean_start/3: maybe_update_session_expiry_interval/2 on the existing queue
    w = _client(broker, "s", properties=Properties(session_expiry_interval=60))
    w.send(subscribe5(1, ("a", 1)))
    w.send(disconnect5())
    again = Wire(broker)
    [(_, (present, code, _))] = again.send(connect5("s", clean=False, properties=Properties(
        session_expiry_interval=120)))
    assert (present, code) == (True, 0)
    queue = broker.vhost("/").queues["mqtt-subscription-sqos1"]
    assert queue.arguments["x-expires"] == Long(120_000)


def test_a_kept_sessions_subscriptions_come_back_with_their_options(broker: Broker) -> None:
    # init_subscriptions/2: the options kept with the bindings (binding_args_for_proto_ver/3)
    w = _client(broker, "s", properties=Properties(session_expiry_interval=60))
    w.send(subscribe5(1, ("t/+", 1 | NO_LOCAL), properties=Properties(
        subscription_identifiers=(3,))))
    w.send(disconnect5())
    again = Wire(broker)
    again.send(connect5("s", clean=False, properties=Properties(session_expiry_interval=60)))
    assert again.send(publish5("t/1", b"own", qos=1, packet_id=1)) == [("PUBACK", (1, 0x10))]
    _client(broker, "p").send(publish5("t/1", b"other"))
    [(_, payload, _, _, _, props)] = _published(again.received())
    assert (payload, props.subscription_identifiers) == (b"other", (3,))


def test_a_kept_sessions_subscriptions_can_be_unsubscribed(broker: Broker) -> None:
    # init_subscriptions/2: the subscriptions come back from the queue's bindings
    w = _client(broker, "s", properties=Properties(session_expiry_interval=60))
    w.send(subscribe5(1, ("a/+", 1)))
    w.send(disconnect5())
    again = Wire(broker)
    again.send(connect5("s", clean=False, properties=Properties(session_expiry_interval=60)))
    assert again.send(unsubscribe5(2, "a/+")) == [("UNSUBACK", (2, [0]))]
    assert broker.vhost("/").queues["mqtt-subscription-sqos1"].bindings == {}


# -- wills ---------------------------------------------------------------------------------------


def _will(delay: int) -> tuple[str, bytes, int, bool, Properties]:
    return ("gone", b"bye", 0, False, Properties(will_delay_interval=delay,
                                                 user_properties=(("w", "1"),)))


def test_a_delayed_will_waits_in_its_queue_until_the_delay_is_over(broker: Broker,
                                                                    clock: ManualClock) -> None:
    # maybe_send_will/2: mqtt-will-<client id>, x-expires the session, dead-lettered to the
    # exchange with the will's topic once its per-message TTL (the delay) runs out
    channel = _amqp_queue(broker, "gone")
    w = Wire(broker)
    w.send(connect5("w", properties=Properties(session_expiry_interval=60), will=_will(10)))
    w.conn.receive_data(b"")  # (the client vanished)
    queue = broker.vhost("/").queues["mqtt-will-w"]
    assert {k: queue.arguments[k] for k in ("x-expires", "x-dead-letter-exchange",
                                            "x-dead-letter-routing-key")} == \
        {"x-expires": Long(60_000), "x-dead-letter-exchange": "amq.topic",
         "x-dead-letter-routing-key": "gone"}
    assert channel.basic_get("q", no_ack=True) is None
    clock.advance(10)
    broker.tick()
    message = channel.basic_get("q", no_ack=True).message
    assert message.body == b"bye"
    assert message.headers["w"] == "1"


def test_a_connect_with_the_client_id_cancels_a_delayed_will(broker: Broker,
                                                             clock: ManualClock) -> None:
    # clear_will_msg/1: every CONNECT deletes mqtt-will-<client id>
    channel = _amqp_queue(broker, "gone")
    w = Wire(broker)
    w.send(connect5("w", properties=Properties(session_expiry_interval=60), will=_will(10)))
    w.conn.receive_data(b"")
    _client(broker, "w")
    assert "mqtt-will-w" not in broker.vhost("/").queues
    clock.advance(10)
    broker.tick()
    assert channel.basic_get("q", no_ack=True) is None


def test_a_will_delay_without_a_session_is_no_delay(broker: Broker) -> None:
    # maybe_send_will/2: the delay needs a Session Expiry Interval over 0
    channel = _amqp_queue(broker, "gone")
    w = Wire(broker)
    w.send(connect5("w", will=_will(10)))
    w.conn.receive_data(b"")
    assert channel.basic_get("q", no_ack=True).message.body == b"bye"


def test_a_connection_taken_over_sends_its_will_under_the_profile(broker: Broker) -> None:
    # register_client_id/4, rabbit_mqtt_reader's {duplicate_id, SendWill}: 3.10 sent none
    channel = _amqp_queue(broker, "gone")
    first = Wire(broker)
    first.send(connect("same", will=("gone", b"old", 0, False)))
    _client(broker, "same")
    assert channel.basic_get("q", no_ack=True).message.body == b"old"


def test_no_will_on_takeover_by_a_kept_session_with_a_delayed_will(broker: Broker) -> None:
    # register_client_id/4: SendWill is false when the new CONNECT keeps the session
    # (Clean Start 0) with a Will Delay Interval over 0
    channel = _amqp_queue(broker, "gone")
    first = Wire(broker)
    first.send(connect5("same", will=("gone", b"old", 0, False, Properties())))
    _client(broker, "same", clean=False, properties=Properties(session_expiry_interval=60),
            will=_will(5))
    assert channel.basic_get("q", no_ack=True) is None


def test_client_ids_are_per_vhost_under_the_profile(broker: Broker) -> None:
    # register_client_id/4: the pg group is {VHost, ClientId}
    broker.add_vhost("other")
    broker.set_permissions("guest", ".*", ".*", ".*", vhost="other")
    here = _client(broker, "same")
    there = Wire(broker)
    there.send(connect5("same", user="other:guest", password="guest"))
    assert not here.conn.should_close
    assert not there.conn.should_close


def test_a_retained_message_that_ran_out_is_gone_for_a_3_1_1_subscriber_too(
        broker: Broker, clock: ManualClock) -> None:
    # (rabbit_mqtt_retainer's timer deletes it whoever subscribes next)
    _client(broker, "p").send(publish5("r", b"x", retain=True, properties=Properties(
        message_expiry_interval=5)))
    clock.advance(5)
    four = Wire(broker)
    four.send(connect("four"))
    assert four.send(subscribe(1, ("r", 0))) == [("SUBACK", (1, [0]))]
    assert broker.vhost("/").retained.fetch("r") is None


def test_a_connect_that_may_not_delete_the_delayed_will_is_not_authorised(
        broker: Broker) -> None:
    # clear_will_msg/1: configure permission on mqtt-will-<id>, asked only when it exists
    # (?RC_NOT_AUTHORIZED)
    w = Wire(broker)
    w.send(connect5("w", properties=Properties(session_expiry_interval=60), will=_will(10)))
    w.conn.receive_data(b"")
    broker.add_user("limited", "pw")
    broker.set_permissions("limited", "^$", ".*", ".*")
    again = Wire(broker)
    [(_, (_, code, _))] = again.send(connect5("w", user="limited", password="pw"))
    assert code == 0x87
    assert "mqtt-will-w" in broker.vhost("/").queues
