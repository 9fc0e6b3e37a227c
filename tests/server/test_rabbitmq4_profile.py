"""The RabbitMQ 4 profile over AMQP 0-9-1 (``Broker(as_rabbitmq="4.1.x")``): the behaviours
RabbitMQ changed between 3.10 and 4.2 that embroker models, each pinned to the RabbitMQ source
it follows (tags of github.com/rabbitmq/rabbitmq-server). There is no RabbitMQ 4 on the
reference machine, so these are not differential: the 3.10 side of each is pinned by the
golden-file conformance scenarios."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import ChannelClosedByBroker, ConnectionClosedByBroker, UnroutableError

from embroker import Broker, ManualClock
from embroker.errors import PolicyError, PolicyWarning, PreconditionFailed
from embroker.testing import advance


@contextmanager
def _pika(broker: Broker) -> Iterator[BlockingChannel]:
    """A pika channel on ``broker``'s listener; the listener must have seen no errors."""
    with broker.serve() as server:
        connection = pika.BlockingConnection(pika.URLParameters(server.url))
        try:
            yield connection.channel()
        finally:
            if connection.is_open:
                connection.close()
        assert server.errors == []


def _collect(into: list[bytes]) -> Callable[..., None]:
    def on_message(_channel: Any, _method: Any, _properties: Any, body: bytes) -> None:
        into.append(body)
    return on_message


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def rabbitmq4(clock: ManualClock) -> Broker:
    return Broker(as_rabbitmq="4.1.x", clock=clock)


@pytest.fixture
def channel(rabbitmq4: Broker) -> Iterator[BlockingChannel]:
    with _pika(rabbitmq4) as ch:
        yield ch


def _reject_until_gone(ch: Any, queue: str, at_most: int = 100) -> int:
    """Take the message and reject it with requeue until it is no longer there: how many times
    it was delivered."""
    for deliveries in range(at_most):
        method, _props, _body = ch.basic_get(queue)
        if method is None:
            return deliveries
        ch.basic_reject(method.delivery_tag, requeue=True)
    raise AssertionError(f"still in {queue} after {at_most} deliveries")


# -- quorum queues' delivery limit -----------------------------------------------------------

def test_a_quorum_queue_dead_letters_a_message_returned_more_than_20_times(channel: Any) -> None:
    """v4.1.4 rabbit_quorum_queue:gather_policy_config/2 (DEFAULT_DELIVERY_LIMIT 20, nothing
    set) and rabbit_fifo:return_one/7 (acquired_count > limit): 21 deliveries, then the DLX."""
    channel.queue_declare("dead")
    channel.queue_declare("work", durable=True, arguments={
        "x-queue-type": "quorum", "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": "dead"})
    channel.basic_publish("", "work", b"poison")
    assert _reject_until_gone(channel, "work") == 21
    _method, props, body = channel.basic_get("dead", auto_ack=True)
    assert body == b"poison"
    assert props.headers["x-first-death-reason"] == "delivery_limit"


def test_rabbitmq_3_10_has_no_default_delivery_limit() -> None:
    broker = Broker()
    ch = broker.connect().channel()
    ch.queue_declare("work", durable=True, arguments={"x-queue-type": "quorum"})
    assert broker.queues["work"].settings.delivery_limit is None


def test_a_negative_delivery_limit_is_none_and_requeues_to_the_back(channel: Any) -> None:
    """v4.1.4 rabbit_fifo:update_config/2 (a negative limit is undefined) and handle_aux/5
    (#return{} with delivery_limit undefined re-enqueues at the back); with a limit (the default
    20) a returned message is the next delivered (the returns queue)."""
    for name, arguments in (("unlimited", {"x-delivery-limit": -1}), ("limited", {})):
        channel.queue_declare(name, durable=True,
                              arguments={"x-queue-type": "quorum", **arguments})
        for body in (b"first", b"second"):
            channel.basic_publish("", name, body)
        method, _props, _body = channel.basic_get(name)
        channel.basic_reject(method.delivery_tag, requeue=True)
    assert [channel.basic_get("unlimited", auto_ack=True)[2] for _ in range(2)] == [
        b"second", b"first"]
    assert [channel.basic_get("limited", auto_ack=True)[2] for _ in range(2)] == [
        b"first", b"second"]


def test_an_unlimited_quorum_queue_keeps_a_message_past_20_returns(rabbitmq4: Broker) -> None:
    ch = rabbitmq4.connect().channel()
    ch.queue_declare("q", durable=True, arguments={"x-queue-type": "quorum",
                                                   "x-delivery-limit": -1})
    ch.basic_publish("", "q", b"m")
    for _ in range(50):
        delivery = ch.basic_get("q")
        assert delivery is not None
        ch.basic_reject(delivery.delivery_tag, requeue=True)
    assert rabbitmq4.queues["q"].message_count == 1


@pytest.mark.parametrize(("policy", "argument", "limit"), [
    (5, None, 5), (None, 7, 7), (5, 7, 5), (9, 7, 7),
    (-1, 7, 7), (5, -1, 5), (-1, -2, None),
])
def test_policy_and_argument_delivery_limits_resolve_as_rabbitmq_4(
        rabbitmq4: Broker, policy: int | None, argument: int | None, limit: int | None) -> None:
    """v4.1.4 rabbit_quorum_queue:resolve_delivery_limit/2: the higher when either is negative
    (no limit), else the lower; a negative result is no limit."""
    if policy is not None:
        rabbitmq4.set_policy("dl", "^q$", {"delivery-limit": policy}, apply_to="queues")
    args: dict[str, Any] = {"x-queue-type": "quorum"}
    if argument is not None:
        args["x-delivery-limit"] = argument
    rabbitmq4.connect().channel().queue_declare("q", durable=True, arguments=args)
    assert rabbitmq4.queues["q"]._delivery_limit == limit


def test_operator_policy_delivery_limit_merges_negative_aware(rabbitmq4: Broker) -> None:
    """v4.1.4 rabbit_policies:merge_policy_value(<<"delivery-limit">>, ...): max when one is
    negative, else min."""
    rabbitmq4.set_policy("p", "^q", {"delivery-limit": -1}, apply_to="queues")
    rabbitmq4.set_operator_policy("o", "^q", {"delivery-limit": 3}, apply_to="queues")
    rabbitmq4.connect().channel().queue_declare("q1", durable=True,
                                                arguments={"x-queue-type": "quorum"})
    assert rabbitmq4.queues["q1"].settings.delivery_limit == 3
    assert rabbitmq4.queues["q1"].settings.origin("delivery-limit") == "operator policy 'o'"


def test_quorum_queue_expires_takes_the_lower_of_policy_and_argument(rabbitmq4: Broker) -> None:
    """v4.1.4 gather_policy_config/2: expires with fun min/2 (3.10: the policy's)."""
    rabbitmq4.set_policy("e", "^q$", {"expires": 60_000}, apply_to="queues")
    rabbitmq4.connect().channel().queue_declare(
        "q", durable=True, arguments={"x-queue-type": "quorum", "x-expires": 1_000})
    assert rabbitmq4.queues["q"].settings.expires == 1_000
    three = Broker()
    three.set_policy("e", "^q$", {"expires": 60_000}, apply_to="queues")
    three.connect().channel().queue_declare(
        "q", durable=True, arguments={"x-queue-type": "quorum", "x-expires": 1_000})
    assert three.queues["q"].settings.expires == 60_000


# -- policies -------------------------------------------------------------------------------------

def test_mirroring_keys_are_not_recognised_policy_settings(rabbitmq4: Broker) -> None:
    """v4.1.4: rabbit_mirror_queue_misc's validators are gone (classic_queue_mirroring removed),
    so rabbit_policy:validation0/2 reports the keys nobody validated."""
    with pytest.raises(PolicyError, match=r'^Validation failed\n\n\[\{<<"ha-mode">>,<<"all">>\}\] '
                                          r"are not recognised policy settings$"):
        rabbitmq4.set_policy("ha", ".*", {"ha-mode": "all"})
    with pytest.warns(PolicyWarning, match="ha-mode kept but with no effect"):
        Broker().set_policy("ha", ".*", {"ha-mode": "all"})  # 3.10 takes it


@pytest.mark.parametrize(("definition", "error"), [
    ({"delivery-limit": -1}, None),
    ({"delivery-limit": "x"}, '<<"x">> is not a valid delivery limit'),
    ({"consumer-timeout": 1000}, None),
    ({"consumer-timeout": -1}, "-1 is not a valid consumer timeout"),
    ({"stream-filter-size-bytes": 15}, "15 is not a valid filter size. Valid range is 16-255"),
    ({"target-group-size": 0}, "0 is not a valid qq target count value"),
    ({"queue-master-locator": "balanced"}, None),
    ({"queue-master-locator": "nope"}, '<<"nope">> is not a valid master locator'),
])
def test_policy_keys_validate_as_rabbitmq_4(rabbitmq4: Broker, definition: dict[str, Any],
                                            error: str | None) -> None:
    """v4.1.4 rabbit_policies:validate_policy0/2, rabbit_quorum_queue:validate_policy/1 and
    rabbit_classic_queue:validate_policy/1."""
    if error is None:
        rabbitmq4.set_policy("p", ".*", definition)
    else:
        with pytest.raises(PolicyError, match=f"^Validation failed\n\n{error}$"):
            rabbitmq4.set_policy("p", ".*", definition)


def test_rabbitmq_3_10_refuses_a_negative_delivery_limit() -> None:
    with pytest.raises(PolicyError, match="-1 is not a valid delivery limit"):
        Broker().set_policy("p", ".*", {"delivery-limit": -1})


def test_queue_master_locator_is_refused_when_its_deprecated_feature_is_denied() -> None:
    """v4.1.4 rabbit_classic_queue:validate_policy/1 with master_locator_permitted() false."""
    broker = Broker(as_rabbitmq="4.1.x", deprecated_features={"queue_master_locator": False})
    with pytest.raises(PolicyError, match="use of deprecated queue-master-locator argument is "
                                          "not permitted"):
        broker.set_policy("p", ".*", {"queue-master-locator": "client-local"})


def test_apply_to_takes_queue_types(rabbitmq4: Broker) -> None:
    """v4.1.4 rabbit_policy:apply_to_validation/2 and matches_queue_type/3 (3.12's
    classic_queues, quorum_queues, streams)."""
    rabbitmq4.set_policy("qq-only", ".*", {"max-length": 1}, apply_to="quorum_queues")
    ch = rabbitmq4.connect().channel()
    ch.queue_declare("classic")
    ch.queue_declare("quorum", durable=True, arguments={"x-queue-type": "quorum"})
    assert rabbitmq4.queues["classic"].policy is None
    assert rabbitmq4.queues["quorum"].policy is not None
    with pytest.raises(PolicyError, match="apply-to 'quorum_queues' unrecognised; should be "
                                          "'queues', 'exchanges' or 'all'"):
        Broker().set_policy("p", ".*", {"max-length": 1}, apply_to="quorum_queues")
    with pytest.raises(PolicyError, match="apply-to 'nope' unrecognised; should be one of: "
                                          "'queues', 'classic_queues',  'quorum_queues', "
                                          "'streams', 'exchanges', or 'all'"):
        rabbitmq4.set_policy("p", ".*", {"max-length": 1}, apply_to="nope")


def test_an_operator_policy_may_set_overflow_and_wins(rabbitmq4: Broker) -> None:
    """v4.1.4 rabbit_policies: overflow is an operator_policy_validator and its merge takes the
    operator's value."""
    rabbitmq4.set_policy("p", "^q$", {"overflow": "drop-head"}, apply_to="queues")
    rabbitmq4.set_operator_policy("o", "^q$", {"overflow": "reject-publish"}, apply_to="queues")
    rabbitmq4.connect().channel().queue_declare("q")
    assert rabbitmq4.queues["q"].settings.overflow == "reject-publish"
    with pytest.raises(PolicyError, match="are not recognised policy settings"):
        Broker().set_operator_policy("o", "^q$", {"overflow": "reject-publish"})


# -- deprecated features --------------------------------------------------------------------

def test_global_qos_denied_limits_each_consumer() -> None:
    """v4.1.4 rabbit_channel:handle_method(#'basic.qos'{global = true}) with
    is_global_qos_permitted() false: handled as global = false, no error."""
    for denied, delivered in ((False, [b"0"]), (True, [b"0", b"1"])):
        broker = Broker(as_rabbitmq="4.1.x",
                        deprecated_features={"global_qos": False} if denied else {})
        with _pika(broker) as ch:
            ch.basic_qos(prefetch_count=1, global_qos=True)
            got: list[bytes] = []
            for i in range(2):
                ch.queue_declare(f"q{i}")
                ch.basic_publish("", f"q{i}", str(i).encode())
                ch.basic_consume(f"q{i}", _collect(got))
            ch.connection.process_data_events(time_limit=0.2)
            assert sorted(got) == delivered


WHEN_DENIED = (
    "INTERNAL_ERROR - Feature `transient_nonexcl_queues` is deprecated.\n"
    "Its use is not permitted per the configuration (overriding the default, which is "
    "permitted):\n"
    '    "deprecated_features.permit.transient_nonexcl_queues = false"\n'
    "Its use will not be permit...")


def test_a_transient_non_exclusive_queue_is_refused_with_541_when_denied() -> None:
    """v4.1.4 rabbit_amqqueue:declare/7 (is_queue_args_combination_permitted/1 false): 541 with
    rabbit_deprecated_features' when_denied text, cut to 255 characters as
    rabbit_binary_generator:amqp_exception_explanation/2 cuts it (checked with OTP's io_lib)."""
    broker = Broker(as_rabbitmq="4.1.x",
                    deprecated_features={"transient_nonexcl_queues": False})
    with _pika(broker) as ch:
        ch.queue_declare("durable", durable=True)
        ch.queue_declare("exclusive", exclusive=True)
        with pytest.raises(ConnectionClosedByBroker) as caught:
            ch.queue_declare("transient")
        assert (caught.value.reply_code, caught.value.reply_text) == (541, WHEN_DENIED)
    assert "transient" not in broker.queues


def test_transient_non_exclusive_queues_are_permitted_by_default(channel: Any) -> None:
    channel.queue_declare("transient")


# -- dead-lettering: x-death ------------------------------------------------------------------

def _dead_lettering(ch: Any) -> None:
    ch.queue_declare("dead")
    ch.queue_declare("work", arguments={"x-dead-letter-exchange": "",
                                        "x-dead-letter-routing-key": "dead"})


def _reject(ch: Any, queue: str) -> None:
    method, _props, _body = ch.basic_get(queue)
    ch.basic_reject(method.delivery_tag, requeue=False)


def test_x_death_is_written_as_rabbitmq_4_writes_it(channel: Any, clock: ManualClock) -> None:
    """v4.1.4 mc:record_death/4 and mc_amqpl:death_table/7: original-expiration first, then
    count, reason, queue, time, exchange, routing-keys (the routing key and CC, never BCC);
    x-first-death-* and x-last-death-* (longstr)."""
    _dead_lettering(channel)
    channel.queue_bind("work", "amq.direct", "k")
    channel.queue_bind("work", "amq.direct", "cc")
    channel.basic_publish("amq.direct", "k", b"m", pika.BasicProperties(
        expiration="60000", headers={"CC": ["cc"], "BCC": ["k"]}))
    _reject(channel, "work")
    _method, props, _body = channel.basic_get("dead", auto_ack=True)
    headers = props.headers
    assert [list(d) for d in headers["x-death"]] == [[
        "original-expiration", "count", "reason", "queue", "time", "exchange", "routing-keys"]]
    death = headers["x-death"][0]
    assert (death["original-expiration"], death["count"], death["reason"], death["queue"],
            death["exchange"], death["routing-keys"]) == (
        "60000", 1, "rejected", "work", "amq.direct", ["k", "cc"])
    assert isinstance(death["time"], datetime.datetime)
    for which in ("first", "last"):
        assert (headers[f"x-{which}-death-reason"], headers[f"x-{which}-death-queue"],
                headers[f"x-{which}-death-exchange"]) == ("rejected", "work", "amq.direct")


def test_a_client_x_death_header_is_not_interpreted(channel: Any) -> None:
    """v4.0.1 release notes: RabbitMQ 4 no longer reads x-death from a (re-)published message;
    its own history, empty for it, replaces the header when the message dies."""
    _dead_lettering(channel)
    forged = {"x-death": [{"count": 41, "reason": "rejected", "queue": "work",
                           "exchange": "", "routing-keys": ["work"]}],
              "x-first-death-queue": "elsewhere"}
    channel.basic_publish("", "work", b"m", pika.BasicProperties(headers=forged))
    method, props, _body = channel.basic_get("work")
    assert props.headers["x-death"][0]["count"] == 41  # an ordinary header until it dies
    channel.basic_reject(method.delivery_tag, requeue=False)
    _method, props, _body = channel.basic_get("dead", auto_ack=True)
    assert [(d["count"], d["queue"]) for d in props.headers["x-death"]] == [(1, "work")]
    assert props.headers["x-first-death-queue"] == "work"


def test_the_broker_history_counts_a_repeated_death_and_moves_it_first(
        rabbitmq4: Broker, clock: ManualClock) -> None:
    """v4.1.4 mc:record_death/4: a repeated (queue, reason) counts up, keeps its first time and
    moves to the front; mc:is_cycle_v2/2 lets a cycle with a rejection in it go round."""
    ch = rabbitmq4.connect().channel()
    ch.queue_declare("a", arguments={"x-dead-letter-exchange": "",
                                     "x-dead-letter-routing-key": "b"})
    ch.queue_declare("b", arguments={"x-dead-letter-exchange": "",
                                     "x-dead-letter-routing-key": "a", "x-message-ttl": 1000})
    ch.basic_publish("", "a", b"m")
    for _ in range(2):
        delivery = ch.basic_get("a")
        assert delivery is not None
        ch.basic_reject(delivery.delivery_tag, requeue=False)  # a -> b
        advance(rabbitmq4, 2)  # b -> a (expired)
    delivery = ch.basic_get("a")
    assert delivery is not None
    deaths = delivery.message.headers["x-death"]
    assert [(d["queue"], d["reason"], d["count"]) for d in deaths] == [
        ("b", "expired", 2), ("a", "rejected", 2)]
    assert deaths[0]["time"] < datetime.datetime.fromtimestamp(clock.time(),
                                                                tz=datetime.timezone.utc)
    headers = delivery.message.headers
    assert (headers["x-first-death-queue"], headers["x-last-death-queue"]) == ("a", "b")


def test_a_forged_x_death_plays_no_part_in_cycle_detection(clock: ManualClock) -> None:
    """v4.1.4 rabbit_dead_letter:detect_cycles/3 and mc:is_death_cycle/2 look in the broker's
    history: a client's x-death claiming the message already expired in the target queue drops
    it on RabbitMQ 3.10 (rabbit_dead_letter:is_cycle/2 read the header), not on RabbitMQ 4."""
    forged = {"x-death": [{"queue": "target", "reason": "expired", "count": 1}]}
    for version, arrived in ((None, 0), ("4.1.x", 1)):
        broker = Broker(as_rabbitmq=version, clock=clock)
        ch = broker.connect().channel()
        ch.queue_declare("target")
        ch.queue_declare("src", arguments={"x-dead-letter-exchange": "",
                                           "x-dead-letter-routing-key": "target",
                                           "x-message-ttl": 1000})
        ch.basic_publish("", "src", b"m", {"headers": forged})
        advance(broker, 2)
        assert broker.queues["target"].message_count == arrived


def test_a_message_expiring_back_into_its_own_queue_is_a_cycle(rabbitmq4: Broker) -> None:
    """v4.1.4 rabbit_dead_letter:publish/5 records the death before detect_cycles/3 looks."""
    ch = rabbitmq4.connect().channel()
    ch.queue_declare("loop", arguments={"x-dead-letter-exchange": "", "x-message-ttl": 1000})
    ch.basic_publish("", "loop", b"m")
    advance(rabbitmq4, 2)
    assert rabbitmq4.queues["loop"].message_count == 0


# -- others ---------------------------------------------------------------------------------------

def test_an_unknown_exchange_type_closes_the_channel_with_406(channel: Any) -> None:
    """v3.13.3 rabbit_exchange:check_type/1: precondition_failed (3.10: command_invalid, 503,
    closing the connection)."""
    with pytest.raises(ChannelClosedByBroker) as caught:
        channel.exchange_declare("x", "nope")
    assert (caught.value.reply_code, caught.value.reply_text) == (
        406, "PRECONDITION_FAILED - unknown exchange type 'nope'")
    assert channel.connection.is_open


def test_the_default_max_message_size_is_16_mib(rabbitmq4: Broker) -> None:
    """v4.1.4 deps/rabbit/Makefile: {max_message_size, 16777216} (3.10: 134217728)."""
    assert rabbitmq4.max_message_size == 16 * 1024 * 1024
    assert Broker().max_message_size == 128 * 1024 * 1024
    ch = rabbitmq4.connect().channel()
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"x" * (16 * 1024 * 1024))
    with pytest.raises(PreconditionFailed, match="message size 16777217 is larger than "
                                                 "configured max size 16777216"):
        ch.basic_publish("", "q", b"x" * (16 * 1024 * 1024 + 1))


def test_a_declared_queue_stores_its_type(channel: Any, rabbitmq4: Broker) -> None:
    """v4.1.4 rabbit_amqqueue:augment_declare_args/5: x-queue-type (the node's default,
    classic) joins the arguments of a queue declared without one; a redeclare without it is
    equivalent."""
    channel.queue_declare("q")
    channel.queue_declare("q")
    channel.queue_declare("q", arguments={"x-queue-type": "classic"})
    assert rabbitmq4.queues["q"].arguments == {"x-queue-type": "classic"}


def test_basic_get_shows_no_delivery_count_before_a_return(channel: Any) -> None:
    """v3.12.0 release notes and v4.1.4 rabbit_fifo_client:add_delivery_count_header/2: no
    x-delivery-count until the message came back (3.10's basic.get showed 0)."""
    channel.queue_declare("qq", durable=True, arguments={"x-queue-type": "quorum"})
    channel.basic_publish("", "qq", b"m")
    method, props, _body = channel.basic_get("qq")
    assert props.headers is None
    channel.basic_reject(method.delivery_tag, requeue=True)
    _method, props, _body = channel.basic_get("qq", auto_ack=True)
    assert props.headers == {"x-delivery-count": 1}


def test_a_mandatory_direct_reply_is_not_returned_from_rabbitmq_4_2() -> None:
    """v4.2.0 release notes and v4.2.9 rabbit_volatile_queue: a reply-to address the broker
    issued is a queue target, routed even when its requester has gone; a made-up one is not
    (3.10 returned every mandatory reply, see the conformance scenarios)."""
    broker = Broker(as_rabbitmq="4.2.x")
    with _pika(broker) as ch:
        ch.confirm_delivery()
        ch.queue_declare("rpc")
        replies: list[bytes] = []
        ch.basic_consume("amq.rabbitmq.reply-to", _collect(replies),
                         auto_ack=True)
        ch.basic_publish("", "rpc", b"q", pika.BasicProperties(reply_to="amq.rabbitmq.reply-to"))
        _method, props, _body = ch.basic_get("rpc", auto_ack=True)
        ch.basic_publish("", props.reply_to, b"answer", mandatory=True)
        ch.connection.process_data_events(time_limit=0.1)
        assert replies == [b"answer"]
        with pytest.raises(UnroutableError):
            ch.basic_publish("", "amq.rabbitmq.reply-to.made.up", b"x", mandatory=True)


def test_a_frame_max_below_8192_is_refused_from_rabbitmq_4_1() -> None:
    """v4.1.4 rabbit_framing.hrl (FRAME_MIN_SIZE 8192) and rabbit_reader:
    validate_negotiated_integer_value/3 (3.10: 4096)."""
    for version, frame_max, refused in (("4.1.x", 8191, True), ("4.1.x", 8192, False),
                                        ("4.0.x", 4096, False)):
        with Broker(as_rabbitmq=version).serve() as server:
            params = pika.URLParameters(server.url)
            params.frame_max = frame_max
            if refused:
                with pytest.raises(pika.exceptions.AMQPConnectionError,
                                   match=r"\(530\) 'NOT_ALLOWED - .*negotiated frame_max = 8191 "
                                         r"is lower than the minimum allowed value \(8192\)"):
                    pika.BlockingConnection(params)
            else:
                pika.BlockingConnection(params).close()
