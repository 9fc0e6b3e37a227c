"""MQTT 5.0 under embroker's RabbitMQ 4 profile, with hand-written packets: each rule as RabbitMQ
3.13.7's plugin has it (``rabbit_mqtt_processor``, ``mc_mqtt``), the function named."""

from __future__ import annotations

import pytest

from embroker.fieldtypes import Long
from embroker.model import Broker, ManualClock
from embroker.mqtt._packet5 import Properties

from .wire import (
    Wire,
    connect,
    connect5,
    disconnect5,
    puback5,
    publish5,
    subscribe5,
    unsubscribe5,
)


@pytest.fixture
def broker() -> Broker:
    return Broker(as_rabbitmq="4.0.5")


@pytest.fixture
def wire(broker: Broker) -> Wire:
    w = Wire(broker)
    [(name, (present, code, _))] = w.send(connect5("c5"))
    assert (name, present, code) == ("CONNACK", False, 0)
    return w


def _amqp_queue(broker: Broker, name: str = "q") -> object:
    conn = broker.open_connection()
    channel = conn.open_channel(1)
    channel.queue_declare(name)
    channel.queue_bind(name, "amq.topic", "#")
    return channel


# -- the profile decides -------------------------------------------------------------------------


def test_without_the_profile_a_level_5_connect_is_closed_without_connack() -> None:
    # (3.10's rabbit_mqtt_frame refuses protocol level 5)
    w = Wire(Broker())
    assert w.send(connect5("c")) == []
    assert w.conn.should_close
    assert w.conn.v5 is None


def test_under_the_profile_a_3_1_1_client_is_answered_as_before(broker: Broker) -> None:
    w = Wire(broker)
    assert w.send(connect("c4")) == [("CONNACK", (False, 0))]
    assert w.conn.v5 is None


# -- CONNECT -------------------------------------------------------------------------------------


def test_connack_carries_3_13s_properties(broker: Broker) -> None:
    # process_connect/5: Maximum QoS 1, Topic Alias Maximum 16, Maximum Packet Size, Shared
    # Subscription Available 0, the Session Expiry Interval granted.
    w = Wire(broker)
    [(_, (present, code, props))] = w.send(connect5("c", properties=Properties(
        session_expiry_interval=60)))
    assert (present, code) == (False, 0)
    assert props.maximum_qos == 1
    assert props.topic_alias_maximum == 16
    assert props.shared_subscription_available == 0
    assert props.session_expiry_interval == 60
    assert props.maximum_packet_size == 268_435_455
    assert props.assigned_client_identifier is None
    assert w.conn.kind.protocol == "MQTT 5.0"


def test_an_empty_client_id_is_assigned_even_without_clean_start(broker: Broker) -> None:
    # ensure_client_id/3: only below level 5 does an empty id need a clean session
    w = Wire(broker)
    [(_, (_, code, props))] = w.send(connect5("", clean=False))
    assert code == 0
    assert props.assigned_client_identifier == w.conn.client_id


def test_extended_authentication_is_refused_with_0x8c(broker: Broker) -> None:
    # check_extended_auth/1
    w = Wire(broker)
    [(_, (_, code, props))] = w.send(connect5("c", properties=Properties(
        authentication_method="SCRAM-SHA-1")))
    assert code == 0x8C
    assert not props
    assert w.conn.should_close


def test_bad_credentials_are_0x86(broker: Broker) -> None:
    # check_user_login/6 -> ?RC_BAD_USER_NAME_OR_PASSWORD
    w = Wire(broker)
    [(_, (present, code, _))] = w.send(connect5("c", user="guest", password="nope"))
    assert (present, code) == (False, 0x86)


def test_session_expiry_is_capped_and_becomes_x_expires(broker: Broker) -> None:
    # process_connect/5 (max_session_expiry_interval_seconds 86400), queue_args/2
    w = Wire(broker)
    [(_, (_, _, props))] = w.send(connect5("s", properties=Properties(
        session_expiry_interval=0xFFFFFFFF)))
    assert props.session_expiry_interval == 86_400
    w.send(subscribe5(1, ("a/b", 1)))
    queue = broker.vhost("/").queues["mqtt-subscription-sqos1"]
    assert queue.arguments["x-expires"] == Long(86_400_000)
    assert not queue.auto_delete


def test_a_session_expiry_of_0_ends_the_session_with_the_connection(broker: Broker) -> None:
    w = Wire(broker)
    w.send(connect5("z"))
    w.send(subscribe5(1, ("a/b", 1)))
    assert broker.vhost("/").queues["mqtt-subscription-zqos1"].auto_delete


def test_a_kept_session_is_present_on_return(broker: Broker) -> None:
    w = Wire(broker)
    w.send(connect5("k", properties=Properties(session_expiry_interval=100)))
    w.send(subscribe5(1, ("a/b", 1)))
    w.send(disconnect5())
    again = Wire(broker)
    [(_, (present, code, _))] = again.send(connect5("k", clean=False, properties=Properties(
        session_expiry_interval=100)))
    assert (present, code) == (True, 0)


def test_a_session_taken_over_gets_disconnect_0x8e(broker: Broker) -> None:
    # (the old connection: send_disconnect(?RC_SESSION_TAKEN_OVER))
    first = Wire(broker)
    first.send(connect5("same"))
    Wire(broker).send(connect5("same"))
    assert first.received() == [("DISCONNECT", 0x8E)]
    assert first.conn.should_close


# -- PUBLISH -------------------------------------------------------------------------------------


def test_puback_is_0x10_when_no_queue_took_the_message(wire: Wire) -> None:
    # process_routing_confirm/3: ?RC_NO_MATCHING_SUBSCRIBERS
    assert wire.send(publish5("no/one", b"x", qos=1, packet_id=7)) == [("PUBACK", (7, 0x10))]


def test_puback_is_0_once_a_queue_confirmed_it(wire: Wire, broker: Broker) -> None:
    _amqp_queue(broker)
    assert wire.send(publish5("a/b", b"x", qos=1, packet_id=8)) == [("PUBACK", (8, 0))]


def test_qos_2_is_refused_with_disconnect_0x9b(wire: Wire) -> None:
    # process_request(?PUBLISH): send_disconnect(?RC_QOS_NOT_SUPPORTED)
    assert wire.send(publish5("a", b"x", qos=2)) == [("DISCONNECT", 0x9B)]
    assert wire.conn.should_close


def test_user_properties_become_sorted_headers_first_name_wins(wire: Wire,
                                                               broker: Broker) -> None:
    # mc_mqtt:convert_to(mc_amqpl): longstr headers, lists:usort by name
    channel = _amqp_queue(broker)
    wire.send(publish5("a/b", b"x", properties=Properties(
        user_properties=(("z", "1"), ("a", "2"), ("z", "3")), content_type="text/plain",
        message_expiry_interval=30)))
    message = channel.basic_get("q", no_ack=True).message  # type: ignore[attr-defined]
    headers = message.headers
    assert headers["z"] == "1"
    assert headers["a"] == "2"
    names = [n for n in headers if not n.startswith("x-mqtt")]
    assert names == sorted(names)
    assert message.properties["content_type"] == "text/plain"
    assert message.properties["expiration"] == "30000"


def test_request_response_properties_go_both_ways(wire: Wire, broker: Broker) -> None:
    # mc_mqtt:convert_to(mc_amqpl) and convert_from(mc_amqpl): Response Topic as
    # x-reply-to-topic, Correlation Data as correlation_id
    wire.send(subscribe5(1, ("req/+", 0)))
    [(_, (topic, payload, _, _, _, props))] = wire.send(publish5("req/1", b"q", properties=Properties(
        response_topic="resp/1", correlation_data=b"abc", user_properties=(("k", "v"),))))
    assert (topic, payload) == ("req/1", b"q")
    assert props.response_topic == "resp/1"
    assert props.correlation_data == b"abc"
    assert props.user_properties == (("k", "v"),)


def test_correlation_data_that_is_no_shortstr_travels_as_a_header(wire: Wire,
                                                                 broker: Broker) -> None:
    channel = _amqp_queue(broker)
    wire.send(publish5("a", b"x", properties=Properties(correlation_data=b"\xff\x00")))
    message = channel.basic_get("q", no_ack=True).message  # type: ignore[attr-defined]
    assert message.headers["x-correlation-id"] == b"\xff\x00"
    assert "correlation_id" not in message.properties


def test_amqp_headers_become_user_properties(wire: Wire, broker: Broker) -> None:
    # mc_mqtt:convert_from(mc_amqpl), amqpl_header_to_user_property/1
    wire.send(subscribe5(1, ("t", 0)))
    channel = broker.open_connection().open_channel(1)
    channel.basic_publish("amq.topic", "t", b"x", {"headers": {"h": "v", "n": 5},
                                                   "content_type": "a/b"})
    [(_, (_, _, _, _, _, props))] = wire.received()
    assert props.user_properties == (("h", "v"), ("n", "5"))
    assert props.content_type == "a/b"


def test_message_expiry_runs_on_the_broker_clock() -> None:
    clock = ManualClock()
    broker = Broker(clock=clock, as_rabbitmq="4.0.5")
    channel = _amqp_queue(broker)
    w = Wire(broker)
    w.send(connect5("e"))
    w.send(publish5("a", b"x", properties=Properties(message_expiry_interval=5)))
    clock.advance(6)
    assert channel.basic_get("q", no_ack=True) is None  # type: ignore[attr-defined]


def test_topic_aliases_in(wire: Wire, broker: Broker) -> None:
    # process_topic_alias_inbound/2
    wire.send(subscribe5(1, ("t/1", 0)))
    wire.received()
    out = wire.send(publish5("t/1", b"a", properties=Properties(topic_alias=3)))
    out += wire.send(publish5("", b"b", properties=Properties(topic_alias=3)))
    assert [p[1][:2] for p in out] == [("t/1", b"a"), ("t/1", b"b")]


def test_an_unknown_alias_is_0x82_and_one_over_the_maximum_0x94(broker: Broker) -> None:
    w = Wire(broker)
    w.send(connect5("a1"))
    assert w.send(publish5("", b"b", properties=Properties(topic_alias=2))) == \
        [("DISCONNECT", 0x82)]
    w = Wire(broker)
    w.send(connect5("a2"))
    assert w.send(publish5("t", b"b", properties=Properties(topic_alias=17))) == \
        [("DISCONNECT", 0x94)]


# -- SUBSCRIBE, UNSUBSCRIBE, PUBACK in, DISCONNECT ------------------------------------------------


def test_suback_grants_qos_2_as_1(wire: Wire) -> None:
    # process_request(?SUBSCRIBE), maybe_downgrade_qos/1
    assert wire.send(subscribe5(4, ("a", 0), ("b", 1), ("c", 2))) == \
        [("SUBACK", (4, [0, 1, 1]))]


def test_a_share_filter_is_bound_as_any_other(wire: Wire) -> None:
    # (process_request(?SUBSCRIBE) has no clause for $share/: CONNACK says none are available)
    assert wire.send(subscribe5(1, ("$share/g/t", 0))) == [("SUBACK", (1, [0]))]
    assert wire.send(publish5("t", b"x")) == []


def test_unsuback_says_when_no_subscription_existed(wire: Wire) -> None:
    # process_request(?UNSUBSCRIBE): ?RC_NO_SUBSCRIPTION_EXISTED
    wire.send(subscribe5(1, ("a", 0)))
    assert wire.send(unsubscribe5(2, "a", "b")) == [("UNSUBACK", (2, [0, 0x11]))]


def test_subscription_identifiers_are_sent_with_deliveries(wire: Wire) -> None:
    # maybe_add_subscription_ids/3
    wire.send(subscribe5(1, ("a/+", 0), properties=Properties(subscription_identifiers=(9,))))
    wire.send(subscribe5(2, ("a/#", 0), properties=Properties(subscription_identifiers=(4,))))
    wire.received()
    wire.conn.receive_data(publish5("a/b", b"x"))
    data = wire.conn.data_to_send()  # (a reader keeps the last identifier only: the bytes)
    assert data.startswith(b"\x30")
    assert b"\x0b\x09\x0b\x04" in data


def test_retain_handling_2_sends_no_retained_message(wire: Wire) -> None:
    # process_request(?SUBSCRIBE): Rh =:= 2 adds nothing to send_retained_messages/2
    wire.send(publish5("r", b"kept", retain=True))
    assert wire.send(subscribe5(1, ("r", 0x20))) == [("SUBACK", (1, [0]))]
    [_, (name, (topic, _, _, retain, _, _))] = wire.send(subscribe5(2, ("r", 0x10 | 1)))
    assert (name, topic, retain) == ("PUBLISH", "r", True)


def test_a_negative_puback_discards_the_delivery(wire: Wire, broker: Broker) -> None:
    wire.send(subscribe5(1, ("q1", 1)))
    packets = wire.send(publish5("q1", b"x", qos=1, packet_id=3))
    [packet_id] = [p[1][4] for p in packets if p[0] == "PUBLISH"]
    wire.send(puback5(packet_id, 0x80))
    assert broker.vhost("/").queues["mqtt-subscription-c5qos1"].message_count == 0


def test_a_disconnect_with_a_reason_code_sends_the_will(broker: Broker) -> None:
    # process_request(?DISCONNECT): SendWill = Rc > ?RC_NORMAL_DISCONNECTION
    channel = _amqp_queue(broker)
    w = Wire(broker)
    w.send(connect5("w", will=("last", b"bye", 0, False, Properties(
        user_properties=(("u", "1"),)))))
    w.send(disconnect5(0x04))
    message = channel.basic_get("q", no_ack=True).message  # type: ignore[attr-defined]
    assert message.body == b"bye"
    assert message.headers["u"] == "1"
    w = Wire(broker)
    w.send(connect5("w2", will=("last", b"bye", 0, False, Properties())))
    w.send(disconnect5(0))
    assert channel.basic_get("q", no_ack=True) is None  # type: ignore[attr-defined]
