"""The MQTT packet reader and writers: hand-written bytes for each rule of RabbitMQ 3.10.8's
``rabbit_mqtt_frame``, Hypothesis for the rest (any split, any bytes, in every state)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embroker.model import Broker
from embroker.mqtt import MqttConnection, PacketError, PacketReader
from embroker.mqtt._packet import Connect, Publish, Subscribe, Unsubscribe, publish

from .wire import connect, subscribe, unsubscribe


def _read(data: bytes, max_packet: int = 1 << 20) -> list[object]:
    reader = PacketReader(max_packet)
    reader.feed(data)
    found: list[object] = []
    while (packet := reader.next()) is not None:
        found.append(packet)
    return found


def test_connect_with_will_and_credentials() -> None:
    (packet,) = _read(connect("id", user="u", password="p", keep_alive=30,
                              will=("w/t", b"bye", 1, True)))
    assert isinstance(packet, Connect)
    assert (packet.level, packet.client_id, packet.username, packet.password,
            packet.keep_alive) == (4, "id", "u", "p", 30)
    assert packet.will is not None
    assert (packet.will.topic, packet.will.payload, packet.will.qos, packet.will.retain) == (
        "w/t", b"bye", 1, True)


@pytest.mark.parametrize(("name", "level"), [("MQTT", 3), ("MQIsdp", 4), ("MQTT", 5),
                                             ("XYZ", 4)])
def test_a_protocol_name_and_level_the_plugin_does_not_pair_are_refused(name: str,
                                                                        level: int) -> None:
    with pytest.raises(PacketError, match="protocol_header_corrupt"):
        _read(connect("id", level=level, name=name))


def test_a_connect_longer_than_its_fields_is_refused() -> None:
    data = bytearray(connect("id"))
    data[1] += 1
    with pytest.raises(PacketError):
        _read(bytes(data) + b"x")


def test_publish_reads_its_packet_id_only_above_qos_0() -> None:
    assert _read(publish("a/b", b"x", qos=1, packet_id=7, retain=True, dup=True)) == [
        Publish("a/b", b"x", 1, True, True, 7)]
    assert _read(publish("a/b", b"x")) == [Publish("a/b", b"x")]


def test_subscribe_and_unsubscribe_need_flags_0010() -> None:
    assert _read(subscribe(3, ("a/#", 1), ("b", 2))) == [Subscribe(3, [("a/#", 1), ("b", 2)])]
    assert _read(unsubscribe(4, "a/#")) == [Unsubscribe(4, ["a/#"])]
    bad = bytearray(subscribe(3, ("a", 0)))
    bad[0] = 0x80
    with pytest.raises(PacketError, match="flags"):
        _read(bytes(bad))


@pytest.mark.parametrize("data", [b"\x50\x02\x00\x01", b"\x62\x02\x00\x01", b"\x70\x02\x00\x01",
                                  b"\x20\x02\x00\x00"])
def test_packets_the_plugin_never_reads_are_refused_not_waited_on(data: bytes) -> None:
    with pytest.raises(PacketError):
        _read(data)


def test_a_remaining_length_past_four_bytes_or_the_bound_is_refused() -> None:
    with pytest.raises(PacketError):
        _read(b"\x30\xff\xff\xff\xff\x01")
    with pytest.raises(PacketError, match="bound"):
        _read(b"\x30\x80\x80\x04", max_packet=1024)


def test_a_publish_written_reads_back() -> None:
    data = publish("t", b"p" * 300, qos=1, packet_id=65535)
    assert _read(data) == [Publish("t", b"p" * 300, 1, False, False, 65535)]


@given(st.text(max_size=20), st.binary(max_size=200), st.sampled_from([0, 1]),
       st.booleans(), st.data())
def test_publishes_read_back_whatever_the_split(topic: str, payload: bytes, qos: int,
                                                retain: bool, data: st.DataObject) -> None:
    wire = publish(topic, payload, qos=qos, retain=retain, packet_id=5 if qos else None)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=5)))
    reader = PacketReader()
    got = []
    for start, end in zip([0, *cuts], [*cuts, len(wire)], strict=True):
        reader.feed(wire[start:end])
        while (packet := reader.next()) is not None:
            got.append(packet)
    assert got == [Publish(topic, payload, qos, retain, False, 5 if qos else None)]


@given(st.binary(max_size=300))
def test_any_bytes_give_packets_or_a_packet_error(data: bytes) -> None:
    reader = PacketReader(4096)
    reader.feed(data)
    try:
        while reader.next() is not None:
            pass
    except PacketError:
        pass


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=150)
@given(st.sampled_from(["fresh", "connected", "subscribed"]), st.binary(max_size=200))
def test_any_bytes_in_any_state_leave_the_broker_whole(state: str, data: bytes) -> None:
    broker = Broker()
    conn = MqttConnection(broker, peer="127.0.0.1:1", local="127.0.0.1:1883")
    if state != "fresh":
        conn.receive_data(connect("fuzz"))
    if state == "subscribed":
        conn.receive_data(subscribe(1, ("a/#", 1)) + publish("a/b", b"x", qos=1, packet_id=2))
    conn.data_to_send()
    conn.receive_data(data)
    assert isinstance(conn.data_to_send(), bytes)
    if conn.should_close:
        conn.connection_lost()
        assert not broker.connections
        assert "fuzz" not in broker.client_ids
