"""The delayed-message exchange (rabbitmq_delayed_message_exchange), rule by rule.

The reference RabbitMQ has no such plugin, so each rule is pinned to the plugin's source: the
last release for RabbitMQ 3.x, v3.13.0 (``src/rabbit_exchange_type_delayed_message.erl``,
``src/rabbit_delayed_message.erl``, ``src/rabbit_delayed_message_utils.erl``, ``README.md``),
and RabbitMQ's own code it calls (``rabbit_exchange``, ``mc_amqpl``). Each test is named after
the function (or README section) whose rule it pins, and quotes it. Time is a ManualClock:
nothing waits.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator
from typing import Any

import pytest

from embroker import Broker, Channel, ManualClock
from embroker.errors import CommandInvalid, ConnectionClosed, InternalError, PreconditionFailed
from embroker.fieldtypes import (
    Byte,
    Float32,
    Long,
    Short,
    Timestamp,
    UnsignedByte,
    UnsignedInt,
    UnsignedShort,
)
from embroker.model._delayed import ERL_MAX_T
from embroker.testing import held_messages

DELAYED = "rabbitmq_delayed_message_exchange"


@pytest.fixture
def broker() -> Iterator[Broker]:
    broker = Broker(plugins=[DELAYED, "rabbitmq_consistent_hash_exchange"], clock=ManualClock())
    yield broker
    broker._check()


@pytest.fixture
def ch(broker: Broker) -> Channel:
    return broker.connect().channel()


def delayed(ch: Channel, name: str = "d", xtype: str = "direct", **arguments: Any) -> None:
    ch.exchange_declare(name, "x-delayed-message", durable=True,
                        arguments={"x-delayed-type": xtype, **arguments})


def queue(ch: Channel, name: str = "q", exchange: str = "d", key: str = "k") -> None:
    ch.queue_declare(name, durable=True)
    ch.queue_bind(name, exchange, key)


def bodies(ch: Channel, name: str = "q") -> list[bytes]:
    out = []
    while (d := ch.basic_get(name, auto_ack=True)) is not None:
        out.append(d.body)
    return out


def publish(ch: Channel, body: bytes, delay: Any, *, exchange: str = "d", key: str = "k",
            **kwargs: Any) -> None:
    headers = {} if delay is None else {"x-delay": delay}
    ch.basic_publish(exchange, key, body, {"headers": headers}, **kwargs)


# -- declaring: validate/1 --------------------------------------------------------------------

def test_validate__x_delayed_type_is_required(ch: Channel) -> None:
    """rabbit_exchange_type_delayed_message:validate/1: without ``x-delayed-type``,
    ``protocol_error(precondition_failed, "Invalid argument, 'x-delayed-type' must be an existing
    exchange type")``."""
    with pytest.raises(PreconditionFailed) as failed:
        ch.exchange_declare("d", "x-delayed-message")
    assert failed.value.reply_text == ("PRECONDITION_FAILED - Invalid argument, 'x-delayed-type' "
                                       "must be an existing exchange type")


def test_validate__x_delayed_type_must_be_a_binary(broker: Broker) -> None:
    """validate/1 matches ``{_ArgType, Type} when is_binary(Type)``: a number is no type (the
    same 406); a byte array is a binary like a string."""
    ch = broker.connect().channel()
    with pytest.raises(PreconditionFailed, match="'x-delayed-type' must be an existing"):
        ch.exchange_declare("d", "x-delayed-message", arguments={"x-delayed-type": 5})
    ch = broker.connect().channel()
    ch.exchange_declare("d2", "x-delayed-message", arguments={"x-delayed-type": b"fanout"})
    assert broker.exchanges["d2"].routing.type == "fanout"  # type: ignore[attr-defined]


def test_validate__x_delayed_message_cannot_be_its_own_type(ch: Channel) -> None:
    """validate/1: ``{_ArgType, <<"x-delayed-message">>}`` -> "Invalid argument,
    'x-delayed-message' can't be used for 'x-delayed-type'"."""
    with pytest.raises(PreconditionFailed) as failed:
        delayed(ch, xtype="x-delayed-message")
    assert failed.value.reply_text == ("PRECONDITION_FAILED - Invalid argument, "
                                       "'x-delayed-message' can't be used for 'x-delayed-type'")


def test_validate__check_type_refuses_an_unknown_type(broker: Broker) -> None:
    """validate/1 calls rabbit_exchange:check_type/1: ``command_invalid, "unknown exchange type
    '~ts'"`` (a connection error), "invalid" for the empty name; a type whose plugin is off is
    unknown too."""
    with pytest.raises(CommandInvalid) as failed:
        delayed(broker.connect().channel(), xtype="no-such-type")
    assert failed.value.reply_text == "COMMAND_INVALID - unknown exchange type 'no-such-type'"
    with pytest.raises(CommandInvalid, match="invalid exchange type ''"):
        delayed(broker.connect().channel(), xtype="")
    with pytest.raises(CommandInvalid, match="unknown exchange type 'x-random'"):
        delayed(broker.connect().channel(), xtype="x-random")


def test_validate__check_type_from_rabbitmq_3_13_3_is_a_channel_error() -> None:
    """From RabbitMQ 3.13.3 (the plugin's v3.13.0 runs on 3.13.x, its 4.x releases on 4.x),
    rabbit_exchange:check_type/1 raises the same texts as 406 PRECONDITION_FAILED: the
    channel closes, not the connection."""
    broker = Broker(plugins=[DELAYED], as_rabbitmq="4.1.x")
    conn = broker.connect()
    with pytest.raises(PreconditionFailed) as failed:
        delayed(conn.channel(), xtype="no-such-type")
    assert failed.value.reply_text == "PRECONDITION_FAILED - unknown exchange type 'no-such-type'"
    conn.channel()  # the connection is still open


def test_validate__the_delayed_types_own_validate(ch: Channel) -> None:
    """validate/1 ends with ``?EXCHANGE(X):validate(X)``: the delayed type's own checks."""
    with pytest.raises(PreconditionFailed, match="mutually exclusive"):
        delayed(ch, xtype="x-consistent-hash", **{"hash-header": "a", "hash-property": "b"})


def test_validate_binding__is_the_delayed_types(broker: Broker) -> None:
    """validate_binding/2 is ``?EXCHANGE(X):validate_binding(X, B)``."""
    ch = broker.connect().channel()
    delayed(ch, "h", "headers")
    ch.queue_declare("q")
    with pytest.raises(PreconditionFailed, match="Invalid x-match field value"):
        ch.queue_bind("q", "h", "", {"x-match": "some"})
    ch = broker.connect().channel()
    delayed(ch, "c", "x-consistent-hash")
    with pytest.raises(PreconditionFailed, match="The binding key must be an integer"):
        ch.queue_bind("q", "c", "heavy")


def test_without_the_plugin_the_type_is_unknown() -> None:
    """An exchange type exists only when its plugin is enabled."""
    ch = Broker().connect().channel()
    with pytest.raises(CommandInvalid) as failed:
        ch.exchange_declare("d", "x-delayed-message", arguments={"x-delayed-type": "direct"})
    assert failed.value.reply_text == ("COMMAND_INVALID - unknown exchange type "
                                       "'x-delayed-message'")


# -- routing: route/3, delay_message/2 --------------------------------------------------------

def test_route__without_x_delay_the_delayed_type_routes_at_once(broker: Broker,
                                                                ch: Channel) -> None:
    """route/3: ``nodelay`` -> "route the message using proxy module"; the direct type routes
    every routing key (``rabbit_router:match_routing_key(Name, RKs)``), CC ones too."""
    delayed(ch)
    queue(ch)
    queue(ch, "cc", key="other")
    publish(ch, b"now", None)
    ch.basic_publish("d", "k", b"also cc", {"headers": {"CC": ["other"]}})
    assert bodies(ch) == [b"now", b"also cc"]
    assert bodies(ch, "cc") == [b"also cc"]
    assert held_messages(broker) == []


@pytest.mark.parametrize("xtype", ["fanout", "topic", "headers", "x-consistent-hash"])
def test_route__routes_as_its_delayed_type(broker: Broker, ch: Channel, xtype: str) -> None:
    """route/3 calls ``Mod:route(X, Message, Opts)`` of the x-delayed-type's module."""
    delayed(ch, xtype=xtype)
    ch.queue_declare("q")
    key, arguments = {"fanout": ("", None), "topic": ("order.#", None),
                      "headers": ("", {"region": "eu"}),
                      "x-consistent-hash": ("1", None)}[xtype]
    ch.queue_bind("q", "d", key, arguments)
    ch.basic_publish("d", "order.created", b"later", {"headers": {"x-delay": 100,
                                                                  "region": "eu"}})
    assert bodies(ch) == []
    broker.manual_clock.advance(0.1)
    assert bodies(ch) == [b"later"]


@pytest.mark.parametrize("value", [Long(1000), Short(1000), 1000, UnsignedByte(200),
                                   UnsignedShort(1000), UnsignedInt(1000)],
                         ids=["long", "short", "signedint", "unsignedbyte", "unsignedshort",
                              "unsignedint"])
def test_get_delay__integer_types(broker: Broker, ch: Channel, value: int) -> None:
    """rabbit_delayed_message_utils:get_delay/1 with check_int_arg/1: the 3.13 message
    container's ``long, ubyte, short, ushort, int, uint`` (0-9-1 long, unsignedbyte, short,
    unsignedshort, unsignedint, signedint) are the delay as they are."""
    delayed(ch)
    queue(ch)
    publish(ch, b"m", value)
    assert [h.delay for h in held_messages(broker)] == [int(value)]


def test_get_delay__a_signed_byte_is_no_delay(broker: Broker, ch: Channel) -> None:
    """mc_amqpl:from_091(byte, V) is ``{byte, V}``, in neither ?INTEGER_ARG_TYPES nor the
    string or float types of get_delay/1: a 0-9-1 signed byte delays nothing (v3.12.0, for
    RabbitMQ 3.10-3.12, counted ``byte`` among its integer types)."""
    delayed(ch)
    queue(ch)
    publish(ch, b"at once", Byte(100))
    assert bodies(ch) == [b"at once"]


@pytest.mark.parametrize(("value", "delay"), [(1500.9, 1500), (Float32(250.5), 250),
                                              (-3.5, None), (0.7, None)])
def test_get_delay__floats_are_truncated(broker: Broker, ch: Channel, value: float,
                                         delay: int | None) -> None:
    """try_convert_to_int/2: ``?FLOAT_ARG_TYPES`` (double, float) -> ``{ok, trunc(Delay)}``; a
    delay that truncates to 0 or less is no delay."""
    delayed(ch)
    queue(ch)
    publish(ch, b"m", value)
    if delay is None:
        assert bodies(ch) == [b"m"]
    else:
        assert [h.delay for h in held_messages(broker)] == [delay]


@pytest.mark.parametrize(("value", "delay"), [("5000", 5000), (b"5000", 5000), ("+7", 7),
                                              ("007", 7), ("-5", None), ("0", None)])
def test_get_delay__strings_are_converted(broker: Broker, ch: Channel, value: Any,
                                          delay: int | None) -> None:
    """try_convert_to_int/2: ``?STRING_ARG_TYPES`` (utf8, binary: a 0-9-1 longstr or byte
    array) -> ``rabbit_data_coercion:to_integer(Delay)`` (``binary_to_integer``)."""
    delayed(ch)
    queue(ch)
    publish(ch, b"m", value)
    if delay is None:
        assert bodies(ch) == [b"m"]
    else:
        assert [h.delay for h in held_messages(broker)] == [delay]


@pytest.mark.parametrize("value", ["5s", " 5", "5.0", "", "five", b"\x00"])
def test_get_delay__a_string_that_is_no_integer_crashes_the_channel(broker: Broker,
                                                                    value: Any) -> None:
    """``binary_to_integer`` fails with badarg on a string that is no integer: the channel
    process crashes, and RabbitMQ answers a crashed channel with connection.close 541
    INTERNAL_ERROR (rabbit_reader: a non-AMQP exit reason is ``internal_error``). The refusal is
    on the trace."""
    conn = broker.connect()
    ch = conn.channel()
    delayed(ch)
    queue(ch)
    with pytest.raises(InternalError) as failed:
        publish(ch, b"m", value)
    assert failed.value.reply_text == "INTERNAL_ERROR"
    assert broker.trace[-1].outcome == "refused"
    with pytest.raises(ConnectionClosed):
        conn.channel()


@pytest.mark.parametrize("value", [decimal.Decimal("1.5"), None],
                         ids=["decimal", "void"])
def test_get_delay__decimal_and_void_crash_the_channel(broker: Broker, value: Any) -> None:
    """mc:x_header/2 -> mc_amqpl:from_091/2 has no clause for ``decimal`` (function_clause), and
    turns ``void`` into ``null``, which get_delay/1's case cannot match (case_clause): both
    crash the channel, 541 INTERNAL_ERROR."""
    ch = broker.connect().channel()
    delayed(ch)
    queue(ch)
    with pytest.raises(InternalError):
        ch.basic_publish("d", "k", b"m", {"headers": {"x-delay": value}})


@pytest.mark.parametrize("value", [True, datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc),
                                   Timestamp(5000), {"ms": 5000}, [5000]],
                         ids=["bool", "timestamp", "timestamp-int", "table", "array"])
def test_get_delay__other_types_are_no_delay(broker: Broker, ch: Channel, value: Any) -> None:
    """get_delay/1: any other type is ``{error, nodelay}``: routed at once."""
    delayed(ch)
    queue(ch)
    publish(ch, b"at once", value)
    assert bodies(ch) == [b"at once"]


@pytest.mark.parametrize(("delay", "held"), [(0, False), (-1, False), (1, True),
                                             (ERL_MAX_T, True), (ERL_MAX_T + 1, False),
                                             (2**40, False)])
def test_delay_message__only_delays_of_1_to_erl_max_t(broker: Broker, ch: Channel, delay: int,
                                                       held: bool) -> None:
    """delay_message/2: ``{ok, Delay} when Delay > 0, Delay =< ?ERL_MAX_T`` (4294967295, "Max
    timer delay, per Erlang docs") is held; zero, negative and larger delays route at once."""
    delayed(ch)
    queue(ch)
    publish(ch, b"m", delay)
    assert bool(held_messages(broker)) == held
    assert bodies(ch) == ([] if held else [b"m"])


# -- while held: the publish routed nowhere ---------------------------------------------------

def test_route__a_held_message_is_returned_at_once_to_a_mandatory_publisher(
        broker: Broker, ch: Channel) -> None:
    """route/3 returns ``[]`` for a held message, so the channel finds it unroutable: a
    mandatory one comes back at once, 312 NO_ROUTE (README, Limitations: "the mandatory flag is
    not supported by this exchange"), and it is delivered all the same when due."""
    delayed(ch)
    queue(ch)
    publish(ch, b"m", 1000, mandatory=True)
    [returned] = ch.returned
    assert (returned.reply_code, returned.reply_text, returned.body) == (312, "NO_ROUTE", b"m")
    assert broker.trace[-1].outcome == "held"
    broker.manual_clock.advance(1)
    assert bodies(ch) == [b"m"]
    assert len(ch.returned) == 1, "no return when it is delivered"


def test_route__a_held_message_is_confirmed_at_once(broker: Broker, ch: Channel) -> None:
    """A held message routed nowhere, so the publisher's confirm comes at once (an ack); the
    delivery itself (``rabbit_queue_type:deliver(Qs, Msg2, #{}, stateless)``) confirms nothing."""
    delayed(ch)
    queue(ch)
    ch.confirm_delivery()
    publish(ch, b"m", 1000)
    assert ch.confirms == [(1, False, True)]
    broker.manual_clock.advance(1)
    assert ch.confirms == [(1, False, True)]
    assert bodies(ch) == [b"m"]


def test_route__a_held_message_goes_to_the_alternate_exchange_at_once(broker: Broker,
                                                                      ch: Channel) -> None:
    """rabbit_exchange:route/3 gives the exchange's alternate exchange a message it routed
    nowhere (``process_alternate``): a held message goes there at once, and is delivered through
    the bindings when due."""
    ch.exchange_declare("ae", "fanout")
    ch.queue_declare("unrouted")
    ch.queue_bind("unrouted", "ae")
    delayed(ch, **{"alternate-exchange": "ae"})
    queue(ch)
    publish(ch, b"m", 1000)
    assert bodies(ch, "unrouted") == [b"m"]
    broker.manual_clock.advance(1)
    assert bodies(ch) == [b"m"]
    assert bodies(ch, "unrouted") == []


def test_tx__held_when_the_transaction_commits(broker: Broker, ch: Channel) -> None:
    """A transaction routes its publishes at commit: that is when they are held."""
    delayed(ch)
    queue(ch)
    ch.tx_select()
    publish(ch, b"rolled back", 1000)
    ch.tx_rollback()
    assert held_messages(broker) == []
    publish(ch, b"committed", 1000)
    broker.manual_clock.advance(0.5)
    ch.tx_commit()
    [held] = held_messages(broker)
    assert held.due == 1.5


# -- when due: handle_info/2, route/3 ---------------------------------------------------------

def test_handle_info__delivered_when_due_in_due_order(broker: Broker, ch: Channel) -> None:
    """internal_delay_message/4 keys each message on its due millisecond, the index table is an
    ordered_set and maybe_delay_first/0 starts the timer for its first key: the earliest due
    goes first, whatever the order they came in; nothing goes before it is due."""
    delayed(ch)
    queue(ch)
    for delay in (5000, 1000, 3000):
        publish(ch, str(delay).encode(), delay)
    clock = broker.manual_clock
    clock.advance(0.999)
    assert bodies(ch) == []
    clock.advance(0.001)
    assert bodies(ch) == [b"1000"]
    clock.advance(10)
    assert bodies(ch) == [b"3000", b"5000"]


def test_handle_info__one_millisecond_in_arrival_order_then_by_exchange(
        broker: Broker, ch: Channel) -> None:
    """The key is ``#delay_key{timestamp, exchange}``: messages due at the same millisecond in
    one exchange go in the order they came (a bag), and at the same millisecond the exchanges
    go in Erlang's term order of their records (by name here)."""
    delayed(ch, "b")
    delayed(ch, "a")
    ch.queue_declare("q")
    ch.queue_bind("q", "a", "k")
    ch.queue_bind("q", "b", "k")
    publish(ch, b"b1", 100, exchange="b")
    publish(ch, b"a1", 100, exchange="a")
    publish(ch, b"b2", 100, exchange="b")
    broker.manual_clock.advance(0.1)
    assert bodies(ch) == [b"a1", b"b1", b"b2"]


def test_route__with_the_bindings_of_that_moment(broker: Broker, ch: Channel) -> None:
    """rabbit_delayed_message:route/3 calls ``rabbit_exchange:route(Ex, Msg2)`` when the delay
    runs out: the bindings then decide, not those at publish."""
    delayed(ch)
    ch.queue_declare("early")
    ch.queue_declare("late")
    ch.queue_bind("early", "d", "k")
    publish(ch, b"m", 1000)
    ch.queue_unbind("early", "d", "k")
    ch.queue_bind("late", "d", "k")
    broker.manual_clock.advance(1)
    assert bodies(ch, "early") == []
    assert bodies(ch, "late") == [b"m"]


def test_swap_delay_header__x_delay_becomes_minus_the_delay(broker: Broker, ch: Channel) -> None:
    """swap_delay_header/1: "set the x-delay header to -Delay, so it won't be re-delayed and the
    header can still be passed down via e2e"; an annotation of the 3.13 message container, a
    long in 0-9-1 headers, which are then sorted by name (mc_amqpl:protocol_state/2's usort;
    v3.12.0's ``set_table_value`` sorted too). The rest of the message is as published."""
    delayed(ch)
    queue(ch)
    ch.basic_publish("d", "k", b"m", {"headers": {"z": 1, "x-delay": 1500, "a": "first"},
                                      "content_type": "text/plain", "delivery_mode": 2})
    broker.manual_clock.advance(1.5)
    got = ch.basic_get("q", auto_ack=True)
    assert got is not None
    assert got.properties["headers"] == {"a": "first", "x-delay": -1500, "z": 1}
    assert list(got.properties["headers"]) == ["a", "x-delay", "z"]
    assert isinstance(got.properties["headers"]["x-delay"], Long)
    assert (got.exchange, got.routing_key, got.properties["content_type"],
            got.properties["delivery_mode"]) == ("d", "k", "text/plain", 2)


def test_swap_delay_header__not_held_again_downstream(broker: Broker, ch: Channel) -> None:
    """Through an exchange-to-exchange binding into another delayed-message exchange, the
    swapped (negative) x-delay routes at once."""
    delayed(ch, "first", "fanout")
    delayed(ch, "second", "fanout")
    ch.exchange_bind("second", "first")
    ch.queue_declare("q")
    ch.queue_bind("q", "second")
    publish(ch, b"m", 1000, exchange="first")
    broker.manual_clock.advance(1)
    assert bodies(ch) == [b"m"]
    assert held_messages(broker) == []


def test_route__a_deleted_exchange_has_no_bindings_but_its_alternate_exchange(
        broker: Broker, ch: Channel) -> None:
    """A held message keeps its exchange record (``#delay_key{exchange = Ex}``); when due,
    ``rabbit_exchange:route(Ex, ...)`` finds the bindings by name: none once the exchange is
    deleted, so only the record's alternate exchange (looked up by name) can take it. Deleting
    the exchange drops nothing (delete/2 only proxies to the delayed type)."""
    ch.exchange_declare("ae", "fanout")
    ch.queue_declare("unrouted")
    ch.queue_bind("unrouted", "ae")
    delayed(ch, **{"alternate-exchange": "ae"})
    queue(ch)
    publish(ch, b"m", 1000)
    assert bodies(ch, "unrouted") == [b"m"]
    ch.exchange_delete("d")
    assert len(held_messages(broker)) == 1
    broker.manual_clock.advance(1)
    assert bodies(ch) == []
    assert bodies(ch, "unrouted") == [b"m"]


def test_dead_lettering_through_a_delayed_exchange_holds_the_copy(broker: Broker,
                                                                  ch: Channel) -> None:
    """Dead-lettering routes with ``rabbit_exchange:route``: a dead-letter exchange of type
    x-delayed-message holds a copy that has an x-delay (retry with back-off, no consumer
    involved)."""
    delayed(ch, "retry")
    ch.queue_declare("work", arguments={"x-dead-letter-exchange": "retry"})
    ch.queue_bind("work", "retry", "work")
    ch.basic_publish("", "work", b"job", {"headers": {"x-delay": 2000}})
    got = ch.basic_get("work")
    assert got is not None
    ch.basic_reject(got.delivery_tag, requeue=False)
    assert [h.delay for h in held_messages(broker)] == [2000]
    assert bodies(ch, "work") == []
    broker.manual_clock.advance(2)
    [again] = [ch.basic_get("work", auto_ack=True)]
    assert again is not None
    assert again.properties["headers"]["x-delay"] == -2000
    assert again.properties["headers"]["x-death"][0]["reason"] == "rejected"


# -- restarts: README, Limitations ------------------------------------------------------------

def test_restart__held_messages_survive(broker: Broker, ch: Channel) -> None:
    """README: "Delayed messages are stored in a Mnesia table ... with a single disk replica on
    the current node. They will survive a node restart" (disc_copies tables, whatever the
    message's delivery mode)."""
    delayed(ch)
    queue(ch)
    publish(ch, b"transient, still held", 1000)
    broker.restart()
    ch = broker.connect().channel()
    assert len(held_messages(broker)) == 1
    broker.manual_clock.advance(1)
    assert bodies(ch) == [b"transient, still held"]


def test_restart__a_non_durable_exchange_is_gone_with_its_bindings(broker: Broker) -> None:
    """The held messages survive, a non-durable exchange does not: when due they find no
    bindings, unless the exchange was declared and bound again meanwhile."""
    ch = broker.connect().channel()
    ch.exchange_declare("d", "x-delayed-message", arguments={"x-delayed-type": "direct"})
    ch.queue_declare("q", durable=True)
    ch.queue_bind("q", "d", "k")
    publish(ch, b"lost", 1000)
    publish(ch, b"found", 2000)
    broker.restart()
    ch = broker.connect().channel()
    assert "d" not in broker.exchanges
    broker.manual_clock.advance(1)
    assert bodies(ch) == []
    ch.exchange_declare("d", "x-delayed-message", arguments={"x-delayed-type": "direct"})
    ch.queue_bind("q", "d", "k")
    broker.manual_clock.advance(1)
    assert bodies(ch) == [b"found"]


# -- what embroker shows ----------------------------------------------------------------------

def test_explain_says_held_until(broker: Broker, ch: Channel) -> None:
    delayed(ch)
    queue(ch)
    publish(ch, b"m", 5000)
    decision = broker.trace[-1]
    assert decision.outcome == "held"
    assert decision.held == (("d", 5.0, 5000),)
    text = decision.explain()
    assert "held until +5 s by x-delayed-message exchange 'd' (x-delay 5000)" in text
    assert "now: held, waiting for its delay to run out" in text
    broker.manual_clock.advance(5)
    text = decision.explain()
    assert "now: released by x-delayed-message exchange 'd' and routed again, reaching 'q'" in text
    released = broker.trace[-1]
    assert released.released == ("d", 5000)
    assert released.queues == ("q",)
    assert released.explain().startswith(
        "Released after its x-delay of 5000 ms by x-delayed-message exchange 'd' and published "
        "again to exchange 'd'")


def test_history_holds_then_releases(broker: Broker, ch: Channel) -> None:
    delayed(ch)
    queue(ch)
    publish(ch, b"m", 250)
    decision = broker.trace[-1]
    broker.manual_clock.advance(0.25)
    kinds = [e.kind for e in decision.history()]
    assert kinds == ["held", "released"]
    held, released = decision.history()
    assert (held.exchange, held.until) == ("d", 0.25)
    assert released.decision is broker.trace[-1]
    got = ch.basic_get("q", auto_ack=True)
    assert got is not None
    assert [e.kind for e in broker.history(got.message)] == ["got"]


def test_held_messages_helper(broker: Broker, ch: Channel) -> None:
    delayed(ch)
    queue(ch)
    publish(ch, b"late", 3000)
    publish(ch, b"soon", 1000)
    held = held_messages(broker)
    assert [(h.exchange, h.delay, h.due, h.message.body) for h in held] == [
        ("d", 1000, 1.0, b"soon"), ("d", 3000, 3.0, b"late")]
    assert "held by exchange 'd' in vhost '/' until 1 s (x-delay 1000)" in str(held[0])
    with pytest.raises(AssertionError, match="delayed-message plugin is not enabled"):
        held_messages(Broker())


def test_testing_route_holds_nothing(broker: Broker, ch: Channel) -> None:
    """testing.route() routes a delayed-message exchange as if the delay had run out, and holds
    nothing."""
    from embroker.testing import route

    delayed(ch)
    queue(ch)
    decision = route(broker, "d", "k", headers={"x-delay": 1000})
    assert decision.queues == ("q",)
    assert held_messages(broker) == []
