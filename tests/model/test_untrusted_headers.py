"""Every header and property the broker interprets is untrusted client input: any type and size
is handled without raising, and nothing is lost (issue #10). What RabbitMQ 3.10 does with each
shape is pinned against the reference in conformance/scenarios_queue_deadletter.py
(scenario_dlx_untrusted_x_death_shapes); this file covers the shapes where RabbitMQ's own queue
crashes, and the in-process side."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embroker import Broker, ManualClock
from embroker.client import Channel
from embroker.errors import PreconditionFailed


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def dl_broker(clock: ManualClock) -> Broker:
    broker = Broker(clock=clock)
    ch = broker.connect().channel()
    ch.queue_declare("dead")
    ch.queue_declare("src", arguments={"x-dead-letter-exchange": "",
                                       "x-dead-letter-routing-key": "dead",
                                       "x-message-ttl": 100})
    return broker


def _dead(broker: Broker) -> list[Any]:
    return [m.headers["x-death"] for m in broker.queues["dead"].messages]


#: x-death values that crash RabbitMQ 3.10's queue (and lose its messages there); embroker
#: dead-letters them with a count of 1, keeping stray elements after the entries.
CRASHING = {
    "count is a string": ([{"queue": "src", "reason": "expired", "count": "x"}], 1),
    "count is a decimal": ([{"queue": "src", "reason": "expired",
                             "count": decimal.Decimal("1.5")}], 1),
    "count is a bool": ([{"queue": "src", "reason": "expired", "count": True}], 1),
    "count is a table": ([{"queue": "src", "reason": "expired", "count": {"n": 1}}], 1),
}


@pytest.mark.parametrize(("x_death", "count"), CRASHING.values(), ids=list(CRASHING))
def test_a_count_of_another_type_restarts_at_one_and_loses_nothing(
        dl_broker: Broker, clock: ManualClock, x_death: list[Any], count: int) -> None:
    ch = dl_broker.connect().channel()
    ch.basic_publish("", "src", b"bad", {"headers": {"x-death": x_death}})
    ch.basic_publish("", "src", b"good")
    clock.advance(0.1)
    deaths = _dead(dl_broker)
    assert [m.body for m in dl_broker.queues["dead"].messages] == [b"bad", b"good"]
    assert deaths[0] == [{"count": count, "queue": "src", "reason": "expired"}]
    dl_broker._check()


def test_array_elements_that_are_not_tables_stay_after_the_entries(
        dl_broker: Broker, clock: ManualClock) -> None:
    ch = dl_broker.connect().channel()
    ch.basic_publish("", "src", b"m", {"headers": {"x-death": [
        "a", {"queue": "src", "reason": "expired", "count": 3}, 7, None]}})
    clock.advance(0.1)
    (deaths,) = _dead(dl_broker)
    assert deaths == [{"count": 4, "queue": "src", "reason": "expired"}, "a", 7, None]


def test_a_count_at_the_64_bit_limit_wraps_as_rabbitmq_encodes_it(
        dl_broker: Broker, clock: ManualClock) -> None:
    ch = dl_broker.connect().channel()
    ch.basic_publish("", "src", b"m", {"headers": {"x-death": [
        {"queue": "src", "reason": "expired", "count": 2**63 - 1}]}})
    clock.advance(0.1)
    assert _dead(dl_broker)[0][0]["count"] == -(2**63)


def test_rejected_messages_with_malformed_x_death_are_dead_lettered(dl_broker: Broker) -> None:
    ch = dl_broker.connect().channel()
    for value in ("x", [1, 2], [{"queue": "src", "reason": "rejected", "count": "n"}], {"a": 1}):
        ch.basic_publish("", "src", b"m", {"headers": {"x-death": value}})
    for _ in range(4):
        got = ch.basic_get("src")
        assert got is not None
        ch.basic_reject(got.delivery_tag, requeue=False)
    assert len(dl_broker.queues["dead"].messages) == 4
    dl_broker._check()


field_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False)
    | st.text(max_size=8) | st.binary(max_size=8)
    | st.datetimes(min_value=datetime.datetime(1970, 1, 2), timezones=st.just(datetime.timezone.utc)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=4),
    max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(x_death=field_values, cc=field_values, reason_reject=st.booleans())
def test_any_x_death_and_cc_value_is_dead_lettered_without_raising(
        x_death: Any, cc: Any, reason_reject: bool) -> None:
    clock = ManualClock()
    broker = Broker(clock=clock)
    ch = broker.connect().channel()
    ch.queue_declare("dead")
    ch.queue_declare("src", arguments={"x-dead-letter-exchange": "", "x-message-ttl": 100,
                                       "x-dead-letter-routing-key": "dead"})
    headers = {"x-death": x_death}
    if isinstance(cc, list):
        headers["CC"] = cc
    ch.basic_publish("", "src", b"m", {"headers": headers})
    if reason_reject:
        got = ch.basic_get("src")
        assert got is not None
        ch.basic_reject(got.delivery_tag, requeue=False)
    else:
        clock.advance(0.1)
    (message,) = broker.queues["dead"].messages
    assert isinstance(message.headers["x-death"], list)
    broker._check()


def test_cc_and_bcc_that_are_not_arrays_are_refused_and_elements_not_strings_ignored(
        broker: Broker, ch: Channel) -> None:
    ch.queue_declare("a")
    ch.queue_declare("b")
    ch.basic_publish("", "a", b"m", {"headers": {"CC": ["b", 5, None, {"x": 1}], "BCC": []}})
    assert [len(broker.queues[q].messages) for q in ("a", "b")] == [1, 1]
    with pytest.raises(PreconditionFailed, match='unacceptable_type_in_header,"BCC",longstr'):
        ch.basic_publish("", "a", b"m", {"headers": {"BCC": "b"}})


def test_ten_thousand_cc_keys_route_once_each(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("a")
    ch.basic_publish("", "nowhere", b"m", {"headers": {"CC": ["a"] * 10_000}})
    assert len(broker.queues["a"].messages) == 1


@pytest.mark.parametrize(("expiration", "reason"), [
    ("", "no_integer"), ("-1", "{value_negative,-1}"), (" 5", "no_integer"),
    ("1e3", '{leftover_string,"e3"}'),
    ("99999999999999999999", "{value_too_large,\n" + " " * 44 + "99999999999999999999}"),
])
def test_malformed_expirations_are_refused_with_rabbitmq_reasons(
        ch: Channel, expiration: str, reason: str) -> None:
    ch.queue_declare("q")
    with pytest.raises(PreconditionFailed) as err:
        ch.basic_publish("", "q", b"m", {"expiration": expiration})
    assert err.value.text == f"invalid expiration '{expiration}': {reason}"


def test_a_client_supplied_x_delivery_count_is_replaced_by_the_quorum_queue(
        broker: Broker, ch: Channel) -> None:
    ch.queue_declare("qq", durable=True, arguments={"x-queue-type": "quorum"})
    ch.basic_publish("", "qq", b"m", {"headers": {"x-delivery-count": "lots"}})
    got = ch.basic_get("qq")
    assert got is not None
    assert got.properties["headers"]["x-delivery-count"] == 0
    ch.basic_nack(got.delivery_tag, requeue=True)
    again = ch.basic_get("qq")
    assert again is not None
    assert again.properties["headers"]["x-delivery-count"] == 1


def test_priorities_above_the_maximum_count_as_the_maximum(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("p", arguments={"x-max-priority": 5})
    for body, priority in ((b"low", 1), (b"huge", 255), (b"five", 5)):
        ch.basic_publish("", "p", body, {"priority": priority})
    assert [m.body for m in broker.queues["p"].messages] == [b"huge", b"five", b"low"]


@pytest.mark.parametrize(("properties", "error"), [
    ({"headers": {"n": 2**70}}, ValueError),
    ({"headers": {"o": object()}}, TypeError),
    ({"priority": 300}, ValueError),
    ({"message_id": "x" * 300}, ValueError),
    ({"headers": {"k" * 300: 1}}, ValueError),
])
def test_in_process_publish_refuses_what_the_wire_cannot_carry(
        broker: Broker, ch: Channel, properties: dict[str, Any], error: type[Exception]) -> None:
    ch.queue_declare("q")
    with pytest.raises(error, match="cannot be sent over AMQP 0-9-1"):
        ch.basic_publish("", "q", b"m", properties)
    assert broker.queues["q"].messages == []
    assert ch.is_open  # a programming error in the test, not a channel error
