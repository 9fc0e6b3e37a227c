"""Connection kinds (embroker.model.ConnectionKind): each kind's rules, read from its flags and
never from a protocol's name, so that a kind made in a test is limited, held by alarms and
listed as its flags say with no other edit (RabbitMQ 3.10.8: rabbit_reader's user limits and
alarm blocking, rabbit_amqp1_0_reader's and rabbit_stream_reader's)."""

from __future__ import annotations

import pytest

from embroker import Broker
from embroker.errors import NotAllowed
from embroker.management import ManagementAPI, connection_info
from embroker.model import (
    AMQP_091,
    AMQP_10,
    DIRECT,
    STREAM,
    AlarmBlocking,
    ConnectionKind,
    Delivery,
)

EVENTS = "rabbitmq_event_exchange"
#: A protocol that does not exist: made here, registered nowhere.
TOY = ConnectionKind("toy", "TOY 1.0", "{'TOY',\"1.0\"}", user_connection_limit=True,
                     tracked_channels=False, alarm_blocking=AlarmBlocking.READING,
                     alarms=frozenset({"memory"}))


def _limited_broker(limit: str) -> Broker:
    broker = Broker(plugins=[EVENTS])
    broker.add_user("u", "pw")
    broker.set_permissions("u", ".*", ".*", ".*")
    broker.set_user_limits("u", {limit: 0})
    return broker


@pytest.mark.parametrize(("kind", "protocol", "user_limit", "tracked", "blocking", "alarms"), [
    (AMQP_091, "AMQP 0-9-1", True, True, AlarmBlocking.PUBLISHERS, {"disk", "memory"}),
    (AMQP_10, "AMQP 1-0", True, False, AlarmBlocking.PUBLISHERS, {"disk", "memory"}),
    (STREAM, "stream", False, False, AlarmBlocking.READING, {"disk"}),
    (DIRECT, "Direct 0-9-1", True, True, AlarmBlocking.NONE, set()),
])
def test_each_kind_carries_the_rules_rabbitmq_applies_to_its_protocol(
        kind: ConnectionKind, protocol: str, user_limit: bool, tracked: bool,
        blocking: AlarmBlocking, alarms: set[str]) -> None:
    assert (kind.protocol, kind.user_connection_limit, kind.tracked_channels,
            kind.alarm_blocking, set(kind.alarms)) == (protocol, user_limit, tracked, blocking,
                                                       alarms)


@pytest.mark.parametrize("kind", [AMQP_091, AMQP_10, DIRECT, TOY])
def test_the_users_max_connections_refuses_a_kind_that_counts_against_it(
        kind: ConnectionKind) -> None:
    broker = _limited_broker("max-connections")
    with pytest.raises(NotAllowed, match="user connection limit \\(0\\) is reached"):
        broker.open_connection("/", user="u", kind=kind)


def test_the_users_max_connections_lets_a_stream_connection_open() -> None:
    """rabbit_stream_reader (v3.10.8, v4.1.0) checks no user connection limit."""
    broker = _limited_broker("max-connections")
    assert broker.open_connection("/", user="u", kind=STREAM).kind is STREAM


@pytest.mark.parametrize(("kind", "refused"), [(AMQP_091, True), (DIRECT, True),
                                               (AMQP_10, False), (STREAM, False), (TOY, False)])
def test_the_users_max_channels_counts_only_the_channels_of_a_tracked_kind(
        kind: ConnectionKind, refused: bool) -> None:
    broker = _limited_broker("max-channels")
    connection = broker.open_connection("/", user="u", kind=kind)
    assert connection.has_tracked_channels is refused
    if refused:
        with pytest.raises(NotAllowed, match="reached the maximum allowed user limit of \\(0\\)"):
            connection.open_channel(1)
    else:
        assert connection.open_channel(1).number == 1


def test_an_unchecked_connection_tracks_no_channels_whatever_its_kind() -> None:
    broker = Broker()
    assert not broker.open_connection("/", kind=AMQP_091).has_tracked_channels


def test_alarms_hold_each_kind_as_its_flags_say() -> None:
    """0-9-1 and 1.0 are held (when they publish) by either alarm, the stream protocol only by
    the disk alarm, an in-process connection by none; the toy kind by the memory alarm."""
    broker = Broker()
    kinds = (AMQP_091, AMQP_10, STREAM, DIRECT, TOY)
    assert [broker.holds(k) for k in kinds] == [False] * 5
    broker.set_alarm("memory")
    assert [broker.holds(k) for k in kinds] == [True, True, False, False, True]
    broker.set_alarm("disk")
    assert [broker.holds(k) for k in kinds] == [True, True, True, False, True]
    broker.clear_alarm("memory")
    assert [broker.holds(k) for k in kinds] == [True, True, True, False, False]
    broker.clear_alarm("disk")
    assert [broker.holds(k) for k in kinds] == [False] * 5


def test_a_test_blocking_publishers_holds_the_kinds_held_when_they_publish_only() -> None:
    broker = Broker()
    broker.block_publishers("low on memory")
    assert [broker.holds(k) for k in (AMQP_091, AMQP_10, STREAM, DIRECT, TOY)] == \
        [True, True, False, False, False]
    broker.unblock_publishers()
    assert not broker.holds(AMQP_091)


def test_a_new_kind_is_listed_and_announced_with_its_own_protocol_names() -> None:
    broker = Broker(plugins=[EVENTS])
    ch = broker.connect().channel()
    q = ch.queue_declare("", exclusive=True).queue
    ch.queue_bind(q, "amq.rabbitmq.event", "connection.created")
    connection = broker.open_connection("/", user="guest", kind=TOY,
                                        details={"peer_host": "127.0.0.1", "peer_port": 1})
    api = ManagementAPI(broker)
    try:
        with broker.locked():
            assert connection_info(api, connection, {}, "guest")["protocol"] == "TOY 1.0"
    finally:
        api.close()
    delivery = ch.basic_get(q, auto_ack=True)
    assert isinstance(delivery, Delivery)
    assert delivery.properties["headers"]["protocol"] == "{'TOY',\"1.0\"}"


def test_an_amqp_10_connection_is_not_marked_by_a_client_property() -> None:
    broker = Broker()
    connection = broker.open_connection("/", user="guest", kind=AMQP_10,
                                        client_properties={"container_id": "c"})
    assert connection.client_properties == {"container_id": "c"}
    assert connection.kind is AMQP_10
