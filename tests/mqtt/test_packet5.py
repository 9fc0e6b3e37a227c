"""The MQTT 5.0 codec: hand-written bytes for each rule of RabbitMQ 3.13's ``rabbit_mqtt_packet``
(each test names the function it follows), round trips, and Hypothesis (any bytes give packets
or a PacketError; any split of written packets reads back)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from embroker.mqtt._packet5 import (
    _PROPERTIES,
    MAX_PACKET_SIZE_AUTHENTICATED,
    MAX_PACKET_SIZE_UNAUTHENTICATED,
    TOPIC_ALIAS_MAXIMUM,
    Connect,
    Disconnect,
    PacketError,
    PacketReader,
    PingReq,
    Properties,
    PubAck,
    Publish,
    Subscribe,
    Subscription,
    Unsubscribe,
    Will,
    connack,
    connack_properties,
    connect_return_code,
    disconnect,
    pingresp,
    puback,
    publish,
    suback,
    unsuback,
    write_properties,
)

#: A level-5 CONNECT: clean start, keep-alive 60, no properties, empty client id.
CONNECT5 = bytes.fromhex("100d 0004 4d515454 05 02 003c 00 0000")
#: The same at level 4 (no property length).
CONNECT4 = bytes.fromhex("100c 0004 4d515454 04 02 003c 0000")


def _pkt(first: int, body_hex: str) -> bytes:
    body = bytes.fromhex(body_hex)
    assert len(body) < 128
    return bytes([first, len(body)]) + body


def _read(data: bytes, reader: PacketReader | None = None) -> list[object]:
    reader = reader or PacketReader()
    reader.feed(data)
    found: list[object] = []
    while (packet := reader.next()) is not None:
        found.append(packet)
    return found


def _after(data: bytes, connect: bytes = CONNECT5) -> list[object]:
    """What follows a CONNECT (level 5 unless told)."""
    return _read(connect + data)[1:]


def _refused(data: bytes, connect: bytes | None = CONNECT5, **bounds: int) -> PacketError:
    reader = PacketReader(**bounds)
    with pytest.raises(PacketError) as caught:
        _read((connect or b"") + data, reader)
    with pytest.raises(PacketError):  # and stays refused
        reader.next()
    return caught.value


# -- CONNECT: rabbit_mqtt_packet.erl, parse/2 and parse_connect/1 ----------------------------


def test_connect_with_properties_will_properties_and_credentials() -> None:
    # rabbit_mqtt_packet.erl, parse_connect/1 and parse_prop/2
    data = _pkt(0x10, "0004 4d515454 05 ee 001e"
                "1e 1100000078 21000a 2700010000 220005 2600016100013126000161000132"
                "0002 6964"
                "23 180000000a 0101 020000003c 03000474657874 08000172 0900 02cafe"
                "   2600016b000176"
                "0003 772f74 0003 627965 0001 75 0002 00ff")
    (packet,) = _read(data)
    assert packet == Connect(
        5, True, 30, "id",
        Properties(session_expiry_interval=120, receive_maximum=10, maximum_packet_size=65536,
                   topic_alias_maximum=5, user_properties=(("a", "1"), ("a", "2"))),
        Will("w/t", b"bye", 1, True,
             Properties(will_delay_interval=10, payload_format_indicator=1,
                        message_expiry_interval=60, content_type="text", response_topic="r",
                        correlation_data=b"\xca\xfe", user_properties=(("k", "v"),))),
        "u", b"\x00\xff")


def test_a_property_given_twice_keeps_the_last_and_user_properties_keep_their_order() -> None:
    # rabbit_mqtt_packet.erl, parse_prop/2 (a map: the last value wins; User-Property a list)
    data = _pkt(0x10, "0004 4d515454 05 02 0000 "
                "18 1100000001 1100000002 26000162000130 26000161000131 0000")
    (packet,) = _read(data)
    assert isinstance(packet, Connect)
    assert packet.properties == Properties(session_expiry_interval=2,
                                           user_properties=(("b", "0"), ("a", "1")))


@pytest.mark.parametrize(("props", "why"), [
    ("02 0500", "unknown identifier 0x05"),
    ("05 2700000000", "Maximum Packet Size 0"),
    ("04 11000000", "value past the property length"),
    ("09 1100000001", "property length past the packet"),
    ("02 2100", "two-byte value cut"),
])
def test_malformed_properties_close_without_a_reply(props: str, why: str) -> None:
    # rabbit_mqtt_packet.erl, parse_props/2 and parse_prop/2 (throw or badmatch), caught by
    # rabbit_mqtt_reader.erl, process_received_bytes/2: the socket closes, nothing sent
    data = _pkt(0x10, "0004 4d515454 05 02 0000 " + props + " 0000")
    assert _refused(data, connect=None).reason_code is None, why


@pytest.mark.parametrize(("name", "level", "ok"), [
    ("4d515454", 5, True), ("4d515454", 4, True), ("4d51497364 70", 3, True),
    ("4d51497364 70", 5, False), ("4d515454", 3, False), ("4d515454", 6, False)])
def test_protocol_name_and_level_must_pair(name: str, level: int, ok: bool) -> None:
    # rabbit_mqtt_packet.erl, protocol_name_approved/2 (?PROTOCOL_NAMES)
    size = len(bytes.fromhex(name))
    props = "00" if level == 5 else ""
    data = _pkt(0x10, f"{size:04x} {name} {level:02x} 02 003c {props} 0000")
    if ok:
        assert [p.level for p in _read(data)] == [level]  # type: ignore[attr-defined]
    else:
        assert _refused(data, connect=None).reason_code is None


def test_the_first_packet_must_be_a_connect_with_flags_0000() -> None:
    # rabbit_mqtt_packet.erl, parse/2 (only <<?CONNECT:4, 0:4>> in state unauthenticated)
    _refused(b"\xc0\x00", connect=None)
    _refused(b"\x11" + CONNECT5[1:], connect=None)
    _refused(b"\x30", connect=None)  # refused on its first byte


def test_a_connect_longer_than_its_fields_or_a_second_connect_is_refused() -> None:
    # rabbit_mqtt_packet.erl, parse_connect/1 ({Password, <<>>} = ...) and parse_packet/4
    # (no clause for CONNECT once the protocol version is known)
    data = bytearray(CONNECT5)
    data[1] += 1
    _refused(bytes(data) + b"x", connect=None)
    _refused(CONNECT5)


def test_a_level_4_connect_and_its_packets_carry_no_properties() -> None:
    # rabbit_mqtt_packet.erl, parse_props/2 (Vsn < 5: no property length)
    (packet,) = _read(CONNECT4)
    assert isinstance(packet, Connect)
    assert (packet.level, packet.properties) == (4, Properties())
    assert _after(_pkt(0x32, "0001 61 0005 7878"), CONNECT4) == [
        Publish("a", b"xx", 1, False, False, 5)]
    _refused(_pkt(0x40, "0005 10"), connect=CONNECT4)  # a reason code only at level 5
    _refused(_pkt(0xE0, "00"), connect=CONNECT4)


# -- PUBLISH, PUBACK: rabbit_mqtt_packet.erl, parse_packet/4 --------------------------------


def test_publish_with_properties_and_a_topic_alias() -> None:
    # rabbit_mqtt_packet.erl, parse_packet/4 (?PUBLISH)
    data = _pkt(0x3B, "0000 0009 0c 230003 0101 26000178000179 6869")
    assert _after(data) == [Publish("", b"hi", 1, True, True, 9, Properties(
        topic_alias=3, payload_format_indicator=1, user_properties=(("x", "y"),)))]
    assert _after(_pkt(0x30, "0001 61 00")) == [Publish("a", b"")]
    assert _after(_pkt(0x34, "0001 61 0002 00 7a")) == [Publish("a", b"z", 2, packet_id=2)]


@pytest.mark.parametrize("body", ["0001 61", "0001 61 03 1100", "0005 61 00"])
def test_a_publish_without_its_property_length_or_fields_is_refused(body: str) -> None:
    # rabbit_mqtt_packet.erl, parse_packet/4 and parse_props/2 (crash, socket closed)
    assert _refused(_pkt(0x30, body)).reason_code is None


def test_a_publish_with_qos_3_is_refused() -> None:
    # rabbit_mqtt_processor.erl, maybe_downgrade_qos/1 (no clause for 3: the process crashes)
    _refused(_pkt(0x36, "0001 61 0001 00"))


def test_puback_reason_code_and_properties_may_be_omitted() -> None:
    # rabbit_mqtt_packet.erl, parse_packet/4 (?PUBACK: <<>>, <<Rc>>, <<Rc, Props>>)
    assert _after(_pkt(0x40, "0007") + _pkt(0x40, "0007 10")
                  + _pkt(0x40, "0007 80 04 1f000162")) == [
        PubAck(7), PubAck(7, 0x10), PubAck(7, 0x80, Properties(reason_string="b"))]
    _refused(_pkt(0x40, "0007 80 00 ff"))
    _refused(_pkt(0x40, "00"))


@pytest.mark.parametrize("first", [0x50, 0x62, 0x70, 0x20, 0x90, 0xB0, 0xD0, 0x00])
def test_packets_the_plugin_never_reads_are_refused(first: int) -> None:
    # rabbit_mqtt_packet.erl, parse_packet/4 (no clause: PUBREC, PUBREL, PUBCOMP, server's)
    assert _refused(_pkt(first, "0001 00 00")).reason_code is None


def test_auth_is_refused_as_soon_as_its_header_is_read() -> None:
    # rabbit_mqtt_packet.erl, parse_packet/4 (throw extended_authentication_unsupported)
    error = _refused(b"\xf0\x10")
    assert "extended_authentication" in error.reason
    assert error.reason_code is None


# -- SUBSCRIBE, UNSUBSCRIBE -----------------------------------------------------------------


def test_subscribe_options_and_subscription_identifier() -> None:
    # rabbit_mqtt_packet.erl, parse_packet/4 (?SUBSCRIBE: Reserved:2, Rh:2, Rap:1, Nl:1, QoS:2)
    data = _pkt(0x82, "0005 03 0b ac02 "
                "0001 61 2d"    # rh 2, rap 1, nl 1, qos 1
                "0001 62 c0"    # reserved bits ignored
                "0002 63")      # an entry cut short: ignored
    assert _after(data) == [Subscribe(5, (
        Subscription("a", 1, no_local=True, retain_as_published=True, retain_handling=2),
        Subscription("b", 0)), Properties(subscription_identifiers=(300,)))]
    assert Subscribe(5, (), Properties(subscription_identifiers=(300,))).subscription_identifier == 300


@pytest.mark.parametrize(("first", "ok"), [(0x82, True), (0x8A, True), (0x83, True),
                                           (0x80, False), (0x84, False), (0x86, False)])
def test_subscribe_needs_only_its_qos_bits_01(first: int, ok: bool) -> None:
    # rabbit_mqtt_packet.erl, parse_packet/4 (1 = Qos: DUP and RETAIN bits not looked at)
    data = _pkt(first, "0001 00 0001 61 00")
    if ok:
        assert _after(data) == [Subscribe(1, (Subscription("a", 0),))]
    else:
        _refused(data)


@pytest.mark.parametrize("options", ["03", "30"])
def test_a_subscription_with_qos_3_or_retain_handling_3_is_refused(options: str) -> None:
    # rabbit_mqtt_processor.erl, process_request/3 (?SUBSCRIBE: maybe_downgrade_qos/1, and
    # the if on Rh has no clause for 3)
    _refused(_pkt(0x82, "0001 00 0001 61 " + options))


def test_unsubscribe_with_properties() -> None:
    # rabbit_mqtt_packet.erl, parse_packet/4 (?UNSUBSCRIBE)
    assert _after(_pkt(0xA2, "0009 07 26000161000162 0001 61 0003 622f63 ff")) == [
        Unsubscribe(9, ("a", "b/c"), Properties(user_properties=(("a", "b"),)))]
    _refused(_pkt(0xA0, "0009 00 0001 61"))


# -- PINGREQ, DISCONNECT --------------------------------------------------------------------


def test_pingreq_has_no_body() -> None:
    # rabbit_mqtt_packet.erl, parse_packet/4 (?PINGREQ: 0 = Length)
    assert _after(b"\xc0\x00\xcf\x00") == [PingReq(), PingReq()]
    _refused(_pkt(0xC0, "00"))


def test_disconnect_reason_code_and_properties() -> None:
    # rabbit_mqtt_packet.erl, parse_packet/4 (?DISCONNECT: Length 0, 1, or more)
    assert _after(b"\xe0\x00" + _pkt(0xE0, "04") + _pkt(0xE0, "00 09 1100000e10 1f000178")) == [
        Disconnect(), Disconnect(4),
        Disconnect(0, Properties(session_expiry_interval=3600, reason_string="x"))]
    _refused(_pkt(0xE0, "00 00 00"))


# -- bounds and lengths ---------------------------------------------------------------------


def test_the_bounds_rabbitmq_3_13_sets() -> None:
    # rabbitmq_mqtt.app env (3.13): max_packet_size_unauthenticated 65536,
    # max_packet_size_authenticated 268435455, topic_alias_maximum 16
    assert (MAX_PACKET_SIZE_UNAUTHENTICATED, MAX_PACKET_SIZE_AUTHENTICATED,
            TOPIC_ALIAS_MAXIMUM) == (65536, 268435455, 16)


def test_a_connect_over_its_bound_closes_without_a_connack() -> None:
    # rabbit_mqtt_packet.erl, check_max_packet_size/2 ({error, connect_packet_too_large});
    # checked on the remaining length, before the body comes
    assert _refused(b"\x10\x81\x01", connect=None, max_unauthenticated=128).reason_code is None
    assert _read(b"\x10\x80\x01", PacketReader(max_unauthenticated=128)) == []


def test_a_packet_over_its_bound_gets_disconnect_0x95_at_level_5() -> None:
    # rabbit_mqtt_packet.erl, check_max_packet_size/2 ({disconnect_reason_code, 0x95});
    # rabbit_mqtt_processor.erl, send_disconnect/2 (level 5 only)
    assert _refused(b"\x30\x81\x01", max_authenticated=128).reason_code == 0x95
    assert _refused(b"\x30\x81\x01", connect=CONNECT4, max_authenticated=128).reason_code is None
    assert _after(b"\x30\x80\x01") == []  # within the bound: waits for the body


def test_a_remaining_length_of_five_bytes_is_refused() -> None:
    # rabbit_mqtt_packet.erl, parse_remaining_len/5 (malformed_remaining_length, before a
    # fifth byte is even read)
    assert "malformed_remaining_length" in _refused(b"\x30\xff\xff\xff\xff").reason


def test_a_variable_byte_integer_in_a_property_may_take_five_bytes_but_not_six() -> None:
    # rabbit_mqtt_packet.erl, parse_variable_byte_integer/3
    data = _pkt(0x82, "0001 06 0b 8180808000 0001 61 00")
    (packet,) = _after(data)
    assert isinstance(packet, Subscribe)
    assert packet.subscription_identifier == 1
    _refused(_pkt(0x82, "0001 07 0b 818080808000 0001 61 00"))


# -- writing: rabbit_mqtt_packet.erl, serialise/4 and serialise_props/2 ----------------------


def test_connack_as_3_13_sends_it() -> None:
    # rabbit_mqtt_processor.erl, process_connect/5 (the properties);
    # rabbit_mqtt_packet.erl, serialise/4 (?CONNACK)
    assert connack(0, False, connack_properties(session_expiry_interval=120)) == bytes.fromhex(
        "2014 0000 11 1100000078 220010 2401 270fffffff 2a00")
    assert connack(0, True, connack_properties(session_expiry_interval=0,
                                               assigned_client_identifier="abc")) == bytes.fromhex(
        "201a 0100 17 1100000000 1200036162 63 220010 2401 270fffffff 2a00")
    assert connack(0x87) == bytes.fromhex("2003 0087 00")  # a failure: no properties
    assert connack(connect_return_code(0x87), level=4) == bytes.fromhex("2002 0005")
    assert [connect_return_code(c) for c in (0, 0x84, 0x85, 0x86, 0x87, 0x97, 0x88, 0x83)] == [
        0, 1, 2, 4, 5, 5, 3, 3]


def test_puback_at_level_5_always_carries_its_reason_code() -> None:
    # rabbit_mqtt_packet.erl, serialise/4 (?PUBACK: the omission clause never matches)
    assert puback(7) == bytes.fromhex("4004 0007 00 00")
    assert puback(7, 0x10) == bytes.fromhex("4004 0007 10 00")
    assert puback(7, level=4) == bytes.fromhex("4002 0007")


def test_suback_unsuback_disconnect_pingresp() -> None:
    # rabbit_mqtt_packet.erl, serialise/4 (?SUBACK, ?UNSUBACK, ?DISCONNECT, ?PINGRESP)
    assert suback(1, [0, 1, 0x87]) == bytes.fromhex("9006 0001 00 00 01 87")
    assert suback(1, [0x80, 1], level=3) == bytes.fromhex("9004 0001 00 01")
    assert suback(1, [0x80, 1], level=4) == bytes.fromhex("9004 0001 80 01")
    assert unsuback(2, [0, 0x11]) == bytes.fromhex("b005 0002 00 00 11")
    assert unsuback(2, level=4) == bytes.fromhex("b002 0002")
    assert disconnect() == b"\xe0\x00"
    assert disconnect(0x8E) == bytes.fromhex("e002 8e 00")
    assert disconnect(0, Properties(reason_string="x")) == bytes.fromhex("e006 00 04 1f000178")
    assert pingresp() == b"\xd0\x00"


def test_publish_with_subscription_identifiers_alias_and_user_properties() -> None:
    # rabbit_mqtt_packet.erl, serialise/4 (?PUBLISH) and serialise_prop/2 (one 0x0B each)
    props = Properties(message_expiry_interval=30, subscription_identifiers=(1, 300),
                       topic_alias=2, user_properties=(("k", "v"),))
    assert publish("a/b", b"hi", qos=1, packet_id=7, properties=props) == bytes.fromhex(
        "321e 0003 612f62 0007 14 020000001e 0b01 0bac02 230002 2600016b000176 6869")
    assert publish("a/b", b"hi", retain=True, level=4) == bytes.fromhex("3107 0003 612f62 6869")
    assert publish("a", b"") == bytes.fromhex("3004 0001 61 00")


def test_binary_data_over_65535_bytes_is_not_written() -> None:
    # rabbit_mqtt_packet.erl, serialise_binary/1 (true = Len =< 16#ffff)
    with pytest.raises(ValueError, match="65535"):
        write_properties(Properties(correlation_data=b"x" * 65536))


def test_every_property_field_has_an_identifier() -> None:
    assert {f.name for f in dataclasses.fields(Properties)} == {
        name for name, _ in _PROPERTIES.values()}


# -- round trips and Hypothesis -------------------------------------------------------------

_TEXT = st.text(st.characters(codec="utf-8"), max_size=8)
_U8 = st.integers(0, 255)
_U16 = st.integers(0, 0xFFFF)
_U32 = st.integers(0, 0xFFFFFFFF)

_PROPS = st.builds(
    Properties,
    payload_format_indicator=st.none() | _U8,
    message_expiry_interval=st.none() | _U32,
    content_type=st.none() | _TEXT,
    response_topic=st.none() | _TEXT,
    correlation_data=st.none() | st.binary(max_size=8),
    subscription_identifiers=st.lists(st.integers(1, 0x0FFFFFFF), max_size=1).map(tuple),
    topic_alias=st.none() | _U16,
    reason_string=st.none() | _TEXT,
    maximum_packet_size=st.none() | st.integers(1, 0xFFFFFFFF),
    user_properties=st.lists(st.tuples(_TEXT, _TEXT), max_size=3).map(tuple),
)


def _split_read(wire: bytes, cuts: list[int]) -> list[object]:
    reader = PacketReader()
    got: list[object] = []
    for start, end in zip([0, *cuts], [*cuts, len(wire)], strict=True):
        reader.feed(wire[start:end])
        while (packet := reader.next()) is not None:
            got.append(packet)
    return got


@given(_TEXT, st.binary(max_size=100), st.sampled_from([0, 1]), st.booleans(), _PROPS,
       st.integers(0, 0xFF), _PROPS, st.data())
def test_written_packets_read_back_whatever_the_split(
        topic: str, payload: bytes, qos: int, retain: bool, props: Properties, code: int,
        other: Properties, data: st.DataObject) -> None:
    packet_id = 5 if qos else None
    wire = (CONNECT5 + publish(topic, payload, qos=qos, retain=retain, packet_id=packet_id,
                               properties=props)
            + puback(9, code, other) + disconnect(code, other))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=6)))
    assert _split_read(wire, cuts)[1:] == [
        Publish(topic, payload, qos, retain, False, packet_id, props),
        PubAck(9, code, other),
        Disconnect(code, other)]


def _subscribe5(packet_id: int, subs: list[Subscription], sub_id: int | None) -> bytes:
    props = write_properties(Properties(subscription_identifiers=(sub_id,) if sub_id else ()))
    body = packet_id.to_bytes(2, "big") + props
    for s in subs:
        name = s.topic_filter.encode()
        body += len(name).to_bytes(2, "big") + name + bytes([
            s.qos | s.no_local << 2 | s.retain_as_published << 3 | s.retain_handling << 4])
    return bytes([0x82]) + _varint(len(body)) + body


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


_SUBS = st.lists(st.builds(Subscription, _TEXT, st.integers(0, 2), st.booleans(), st.booleans(),
                           st.integers(0, 2)), max_size=4)


@given(st.integers(0, 0xFFFF), _SUBS, st.none() | st.integers(1, 0x0FFFFFFF), st.data())
def test_subscribes_read_back_whatever_the_split(packet_id: int, subs: list[Subscription],
                                                 sub_id: int | None,
                                                 data: st.DataObject) -> None:
    wire = CONNECT5 + _subscribe5(packet_id, subs, sub_id)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=4)))
    (packet,) = _split_read(wire, cuts)[1:]
    assert isinstance(packet, Subscribe)
    assert (packet.packet_id, list(packet.subscriptions), packet.subscription_identifier) == (
        packet_id, subs, sub_id)


@given(st.sampled_from([b"", CONNECT5, CONNECT4]), st.binary(max_size=300))
def test_any_bytes_give_packets_or_a_packet_error(connect: bytes, data: bytes) -> None:
    reader = PacketReader(4096, 4096)
    reader.feed(connect + data)
    failure = None
    try:
        while reader.next() is not None:
            pass
    except PacketError as error:
        failure = error
    assert failure is None or failure.reason_code in (None, 0x95)
