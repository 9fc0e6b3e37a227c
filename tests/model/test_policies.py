"""Policies, operator policies and vhost limits in the model (issue #16).

What RabbitMQ does is pinned by the differential scenarios (``tests/conformance/
scenarios_policies.py``); these tests pin the same rules offline, with a manual clock, plus what
only embroker shows (a queue's settings and where each came from, warnings, explanations).
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from typing import Any

import pytest

from embroker import Broker, ManualClock
from embroker._erlang import term as erlang_term
from embroker.client import Channel
from embroker.errors import (
    DefinitionsError,
    NackError,
    NotAllowed,
    PolicyError,
    PolicyWarning,
    PreconditionFailed,
)
from embroker.model._policy import Policy, queue_settings

from .conftest import bodies


@pytest.fixture
def clocked() -> Broker:
    return Broker(clock=ManualClock())


def fill(ch: Channel, queue: str, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        ch.basic_publish("", queue, b"m%d" % i)


# -- precedence, key by key ---------------------------------------------------------------------

# (key, policy value, argument value, classic result, quorum result)
PRECEDENCE = [
    ("message-ttl", 100, 200, 100, 100), ("message-ttl", 200, 100, 100, 100),
    ("expires", 100, 200, 100, 100), ("expires", 200, 100, 100, 200),
    ("max-length", 3, 5, 3, 3), ("max-length", 5, 3, 3, 3),
    ("max-length-bytes", 3, 5, 3, 3), ("max-length-bytes", 5, 3, 3, 3),
    ("overflow", "reject-publish", "drop-head", "drop-head", "reject-publish"),
    ("dead-letter-exchange", "policy-dlx", "arg-dlx", "arg-dlx", "arg-dlx"),
    ("dead-letter-routing-key", "policy-key", "arg-key", "arg-key", "arg-key"),
    ("delivery-limit", 1, 3, None, 1), ("delivery-limit", 3, 1, None, 1),
]


@pytest.mark.parametrize(("key", "policy_value", "argument", "classic", "quorum"), PRECEDENCE)
def test_argument_and_policy_combine_per_key_as_rabbitmq(key: str, policy_value: Any,
                                                        argument: Any, classic: Any,
                                                        quorum: Any) -> None:
    policy = Policy("p", ".*", {key: policy_value})
    field = key.replace("-", "_")
    for is_quorum, expected in ((False, classic), (True, quorum)):
        settings = queue_settings({f"x-{key}": argument}, policy, quorum=is_quorum)
        assert getattr(settings, field) == expected, (key, is_quorum)
        alone = queue_settings({}, policy, quorum=is_quorum)
        if key != "delivery-limit" or is_quorum:
            assert getattr(alone, field) == policy_value
            assert alone.origin(key) == "policy 'p'"
        assert getattr(queue_settings({f"x-{key}": argument}, quorum=is_quorum), field) == (
            argument if key != "delivery-limit" or is_quorum else None)


@pytest.mark.parametrize("key", ["message-ttl", "expires", "max-length", "max-length-bytes",
                                 "delivery-limit"])
def test_an_operator_policy_takes_the_lowest_of_policy_and_argument(key: str) -> None:
    field = key.replace("-", "_")
    operator = Policy("op", ".*", {key: 50}, operator=True)
    for policy_value, argument, expected, origin in (
            (100, None, 50, "operator policy 'op'"), (10, None, 10, "policy 'p'"),
            (100, 20, 20, "argument"), (100, 70, 50, "operator policy 'op'")):
        arguments = {} if argument is None else {f"x-{key}": argument}
        settings = queue_settings(arguments, Policy("p", ".*", {key: policy_value}), operator,
                                  quorum=key == "delivery-limit")
        assert (getattr(settings, field), settings.origin(key)) == (expected, origin)
    assert getattr(queue_settings({}, None, operator, quorum=True), field) == 50


def test_a_queue_shows_its_policies_and_effective_arguments(broker: Broker, ch: Channel) -> None:
    broker.set_policy("dlx-all", "^orders\\.", {"dead-letter-exchange": "dlx",
                                                "message-ttl": 60000}, apply_to="queues")
    broker.set_operator_policy("cap", ".*", {"max-length": 1000, "message-ttl": 30000})
    ch.queue_declare("orders.new", arguments={"x-max-length": 10})
    q = broker.queues["orders.new"]
    assert (q.policy.name, q.operator_policy.name) == ("dlx-all", "cap")
    assert q.effective_arguments == {"x-message-ttl": 30000, "x-max-length": 10,
                                     "x-dead-letter-exchange": "dlx"}
    assert q.effective_policy_definition == {"dead-letter-exchange": "dlx", "max-length": 1000,
                                             "message-ttl": 30000}
    assert q.settings.origin("message-ttl") == "operator policy 'cap'"
    assert q.settings.origin("max-length") == "argument"
    assert q.arguments == {"x-max-length": 10}  # as declared


# -- which policy applies ---------------------------------------------------------------------------

def test_the_highest_priority_applies_alone(broker: Broker, ch: Channel) -> None:
    broker.set_policy("low", "^q", {"max-length": 1, "message-ttl": 5000}, priority=1)
    broker.set_policy("high", "^q1$", {"max-length": 2}, priority=2)
    ch.queue_declare("q1")
    ch.queue_declare("q2")
    assert broker.queues["q1"].effective_arguments == {"x-max-length": 2}  # not merged
    assert broker.queues["q2"].policy.name == "low"


def test_equal_priorities_pick_the_first_name_and_warn(broker: Broker, ch: Channel) -> None:
    broker.set_policy("b", "^q$", {"max-length": 2}, priority=5)
    broker.set_policy("a", "^q$", {"max-length": 1}, priority=5)
    with pytest.warns(PolicyWarning, match="policies 'a' and 'b' of the same priority all "
                                           "match queue 'q' in vhost '/'"):
        ch.queue_declare("q")
    assert broker.queues["q"].policy.name == "a"


def test_apply_to_and_queue_types(broker: Broker, ch: Channel) -> None:
    broker.set_policy("quorum-only", ".*", {"delivery-limit": 2, "max-length": 1}, priority=3,
                      apply_to="queues")
    broker.set_policy("classic-only", ".*", {"queue-mode": "lazy", "max-length": 2}, priority=2)
    broker.set_policy("exchanges", ".*", {"alternate-exchange": "ae"}, priority=9,
                      apply_to="exchanges")
    ch.queue_declare("c")
    ch.queue_declare("qq", durable=True, arguments={"x-queue-type": "quorum"})
    ch.exchange_declare("x")
    assert broker.queues["c"].policy.name == "classic-only"
    assert broker.queues["qq"].policy.name == "quorum-only"
    assert broker.exchanges["x"].policy.name == "exchanges"
    assert broker.exchanges["x"].alternate_exchange == "ae"


def test_the_default_exchange_takes_a_policy_but_no_alternate_exchange(broker: Broker,
                                                                       ch: Channel) -> None:
    broker.set_policy("ae", ".*", {"alternate-exchange": "ae"}, apply_to="exchanges")
    assert broker.exchanges[""].policy is not None
    assert broker.exchanges[""].alternate_exchange is None
    assert broker.exchanges["amq.direct"].alternate_exchange == "ae"


def test_an_alternate_exchange_argument_wins(broker: Broker, ch: Channel) -> None:
    ch.exchange_declare("x", arguments={"alternate-exchange": "mine"})
    broker.set_policy("ae", "^x$", {"alternate-exchange": "theirs"})
    assert broker.exchanges["x"].alternate_exchange == "mine"


# -- applied at once ------------------------------------------------------------------------------

def test_a_lowered_max_length_drops_and_dead_letters_at_once(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("dead")
    ch.queue_declare("q", arguments={"x-dead-letter-exchange": "",
                                     "x-dead-letter-routing-key": "dead"})
    fill(ch, "q", 5)
    broker.set_policy("cap", "^q$", {"max-length": 2})
    assert bodies(ch, "dead") == [b"m0", b"m1", b"m2"]
    assert broker.trace[-1].dead_letter == ("q", "maxlen")
    assert broker.trace[-1].cause == "max-length 2 from policy 'cap'"
    broker.clear_policy("cap")
    fill(ch, "q", 3, 5)
    assert bodies(ch, "q") == [b"m3", b"m4", b"m5", b"m6", b"m7"]


def test_reject_publish_keeps_messages_over_a_lowered_limit(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("q", arguments={"x-overflow": "reject-publish"})
    fill(ch, "q", 5)
    broker.set_policy("cap", "^q$", {"max-length": 2})
    assert len(broker.queues["q"]) == 5
    ch.confirm_delivery()
    with pytest.raises(NackError):
        ch.basic_publish("", "q", b"refused")
    assert ch.confirms[-1][2] is False
    broker.clear_policy("cap")
    broker.set_policy("cap", "^q$", {"max-length": 2, "overflow": "drop-head"})
    assert len(broker.queues["q"]) == 5, "the argument's reject-publish wins"


def test_max_length_and_reject_publish_set_together_drop_first(broker: Broker,
                                                               ch: Channel) -> None:
    """RabbitMQ applies the length limit with the overflow the queue had so far (drop-head),
    then the new overflow."""
    ch.queue_declare("q")
    fill(ch, "q", 5)
    broker.set_policy("p", "^q$", {"max-length": 2, "overflow": "reject-publish"})
    assert len(broker.queues["q"]) == 2
    fill(ch, "q", 1)
    assert len(broker.queues["q"]) == 2


def test_a_quorum_queue_takes_max_length_and_reject_publish_set_together_without_dropping(
        broker: Broker, ch: Channel) -> None:
    """A quorum queue applies its new configuration alone (RabbitMQ 3.10.8 rabbit_fifo:apply/3
    on update_config, then checkout/4's evaluate_limit under the new overflow): the messages
    over the lowered limit stay, where a classic queue drops them first (the test above)."""
    ch.queue_declare("q", durable=True, arguments={"x-queue-type": "quorum"})
    fill(ch, "q", 5)
    broker.set_policy("p", "^q$", {"max-length": 2, "overflow": "reject-publish"})
    assert len(broker.queues["q"]) == 5


def test_a_new_ttl_applies_to_new_messages_only(clocked: Broker) -> None:
    ch = clocked.connect().channel()
    ch.queue_declare("q")
    fill(ch, "q", 1)
    clocked.set_policy("ttl", "^q$", {"message-ttl": 1000})
    fill(ch, "q", 1, 1)
    clocked.clock.advance(2)  # type: ignore[attr-defined]
    assert len(clocked.queues["q"]) == 2, "the first message has no deadline and holds back m1"
    assert ch.basic_get("q", auto_ack=True).body == b"m0"
    assert ch.basic_get("q", auto_ack=True) is None


def test_expires_from_a_policy_counts_from_when_it_was_set(clocked: Broker) -> None:
    ch = clocked.connect().channel()
    ch.queue_declare("q")
    clocked.clock.advance(10)  # type: ignore[attr-defined]
    clocked.set_policy("exp", "^q$", {"expires": 5000})
    clocked.clock.advance(4.9)  # type: ignore[attr-defined]
    assert "q" in clocked.queues
    clocked.clock.advance(0.2)  # type: ignore[attr-defined]
    assert "q" not in clocked.queues


def test_any_policy_change_restarts_the_expires_countdown(clocked: Broker) -> None:
    """As RabbitMQ's queue re-reads every setting when its policy changes (measured: a queue
    with x-expires 1.5 s given a max-length policy after 1 s went at 2.5 s)."""
    ch = clocked.connect().channel()
    ch.queue_declare("q", arguments={"x-expires": 1500})
    clocked.clock.advance(1)  # type: ignore[attr-defined]
    clocked.set_policy("cap", "^q$", {"max-length": 100})
    clocked.clock.advance(1)  # type: ignore[attr-defined]
    assert "q" in clocked.queues
    clocked.clock.advance(0.6)  # type: ignore[attr-defined]
    assert "q" not in clocked.queues


def test_clearing_an_expires_policy_stops_the_countdown(clocked: Broker) -> None:
    ch = clocked.connect().channel()
    clocked.set_policy("exp", "^q$", {"expires": 1000})
    ch.queue_declare("q")
    clocked.clear_policy("exp")
    clocked.clock.advance(5)  # type: ignore[attr-defined]
    assert "q" in clocked.queues


def test_explanations_name_the_policies(clocked: Broker) -> None:
    ch = clocked.connect().channel()
    ch.exchange_declare("dlx", "fanout")
    ch.queue_declare("dead")
    ch.queue_bind("dead", "dlx")
    clocked.set_policy("dlx-all", ".*", {"dead-letter-exchange": "dlx"}, priority=1)
    clocked.set_operator_policy("short", "^q$", {"message-ttl": 100})
    ch.queue_declare("q")
    fill(ch, "q", 1)
    clocked.clock.advance(1)  # type: ignore[attr-defined]
    decision = clocked.trace[-1]
    assert decision.cause == "message-ttl 100 ms from operator policy 'short', through policy 'dlx-all'"
    assert decision.explain().startswith(
        "Dead-lettered from queue 'q' (expired, message-ttl 100 ms from operator policy 'short', "
        "through policy 'dlx-all') and republished to exchange 'dlx'")
    ch.exchange_declare("events", "topic")
    ch.exchange_declare("unrouted", "fanout")
    clocked.set_policy("ae", "^events$", {"alternate-exchange": "unrouted"}, priority=2)
    ch.basic_publish("events", "nothing", b"x")
    assert ("passed on to its alternate exchange 'unrouted' (set by policy 'ae')"
            in clocked.trace[-1].explain())


def test_arguments_alone_explain_nothing_more(broker: Broker, ch: Channel) -> None:
    ch.queue_declare("dead")
    ch.queue_declare("q", arguments={"x-dead-letter-exchange": "",
                                     "x-dead-letter-routing-key": "dead"})
    fill(ch, "q", 1)
    m = ch.basic_get("q")
    ch.basic_reject(m.delivery_tag, requeue=False)
    assert broker.trace[-1].cause is None
    assert "(rejected) and republished" in broker.trace[-1].explain()


def test_mirroring_and_federation_keys_are_kept_with_a_warning(broker: Broker) -> None:
    with pytest.warns(PolicyWarning) as caught:
        policy = broker.set_policy("ha", ".*", {"ha-mode": "all", "ha-sync-mode": "automatic",
                                                "federation-upstream-set": "all"})
    texts = sorted(str(w.message) for w in caught)
    assert texts == [
        "policy 'ha' in vhost '/': federation-upstream-set kept but with no effect (embroker "
        "does not federate with other brokers)",
        "policy 'ha' in vhost '/': ha-mode, ha-sync-mode kept but with no effect (a single "
        "embroker node has no mirrors)"]
    assert policy.ignored == ("ha-mode", "ha-sync-mode", "federation-upstream-set")
    assert broker.list_policies()[0].definition["ha-mode"] == "all"


def test_applying_to_many_queues_changes_only_what_changed(broker: Broker, ch: Channel) -> None:
    for i in range(20):
        ch.queue_declare(f"q{i}")
    vhost = broker.vhosts["/"]
    broker.set_policy("p", "^q1", {"max-length": 5})
    assert vhost.policies.apply() == 0, "nothing changed since"
    broker.set_policy("p", "^q1", {"max-length": 5})  # the same policy again: no change
    assert sum(q.policy is not None for q in broker.queues.values()) == 11
    broker._check()


# -- commands and validation -------------------------------------------------------------------

def test_commands_take_json_text_and_list_by_priority(broker: Broker) -> None:
    broker.set_policy("b", "^b", '{"max-length": 1}', priority=2, apply_to="queues")
    broker.set_policy("a", "^a", {"message-ttl": 1}, priority=1)
    assert [p.name for p in broker.list_policies()] == ["a", "b"]
    assert broker.list_policies()[1].to_definitions() == {
        "vhost": "/", "name": "b", "pattern": "^b", "apply-to": "queues", "priority": 2,
        "definition": {"max-length": 1}}
    broker.set_operator_policy("o", ".*", {"expires": 1000})
    assert [p.describe() for p in broker.list_operator_policies()] == ["operator policy 'o'"]
    broker.clear_operator_policy("o")
    assert broker.list_operator_policies() == []


@pytest.mark.parametrize(("call", "text"), [
    (lambda b: b.set_policy("p", ".*", {"message-ttl": -1}),
     "Validation failed\n\n-1 is not a valid message TTL"),
    (lambda b: b.set_policy("p", ".*", {"overflow": "x", "zzz": 1}),
     'Validation failed\n\n<<"x">> is not a valid overflow value'),
    (lambda b: b.set_policy("p", ".*", {"zzz": 1, "aaa": True}),
     'Validation failed\n\n[{<<"aaa">>,true},{<<"zzz">>,1}] are not recognised policy settings'),
    (lambda b: b.set_policy("p", 5, {"max-length": 1}),
     "Validation failed\n\npattern should be a binary but was 5"),
    (lambda b: b.set_policy("p", ".*", {"max-length": 1}, priority="high"),
     'Validation failed\n\npriority should be a number, actually was <<"high">>'),
    (lambda b: b.set_operator_policy("p", ".*", {"dead-letter-exchange": "x"}),
     'Validation failed\n\n[{<<"dead-letter-exchange">>,<<"x">>}] are not recognised policy '
     "settings"),
    (lambda b: b.set_policy("p", ".*", "{not json"),
     "JSON decoding error. Reason: Expecting property name enclosed in double quotes: "
     "line 1 column 2 (char 1)"),
    (lambda b: b.clear_policy("never"), "Parameter does not exist"),
    (lambda b: b.set_policy("p", ".*", {"max-length": 1}, vhost="nowhere"),
     "Virtual host 'nowhere' does not exist"),
    (lambda b: b.set_vhost_limits({"max-queues": "x"}),
     'Validation failed\n\nmax-queues should be a number, actually was <<"x">>'),
    (lambda b: b.set_vhost_limits({"max-queues": "x", "foo": 1}),
     # (every reason, as RabbitMQ 3.10.8's API answered /parameters/vhost-limits: checked live)
     'Validation failed\n\nUnrecognised terms [{<<"foo">>,1}] in limits\n'
     'max-queues should be a number, actually was <<"x">>'),
])
def test_refusals_carry_rabbitmqctl_texts(call: Any, text: str) -> None:
    broker = Broker()
    with pytest.raises(PolicyError) as caught:
        call(broker)
    assert str(caught.value) == text
    assert broker.list_policies() == []


def test_an_invalid_pattern_is_refused() -> None:
    with pytest.raises(PolicyError) as caught:
        Broker().set_policy("p", "^(x", {"max-length": 1})
    assert caught.value.reason == ('pattern should be regular expression but is invalid: '
                                   '{"missing ), unterminated subpattern",1}')


#: 500 nested groups: Python's parser recursed until RecursionError (issue 44).
NESTED = "(" * 500 + "a" + ")" * 500
TOO_DEEP = "pattern too complex: nesting depth 500 exceeds the maximum of 50"


def test_a_pattern_too_costly_to_compile_is_refused_as_an_invalid_one() -> None:
    """RabbitMQ's refusal of an invalid pattern, with embroker's bound as the reason and its
    position (PCRE's place for the offset); the same in a federation-upstream-pattern."""
    broker = Broker()
    with pytest.raises(PolicyError) as caught:
        broker.set_policy("p", NESTED, {"max-length": 1})
    assert caught.value.reason == ("pattern should be regular expression but is invalid: "
                                   f'{{"{TOO_DEEP}",50}}')
    with pytest.raises(PolicyError) as caught:
        broker.set_operator_policy("p", "x{65536}", {"max-length": 1})
    assert caught.value.reason == ("pattern should be regular expression but is invalid: "
                                   '{"number too big in {} quantifier",7}')
    with pytest.raises(PolicyError) as caught:
        broker.set_policy("p", ".*", {"federation-upstream-pattern": NESTED})
    assert caught.value.reason == (f"could not compile pattern {NESTED} to a regular "
                                   f'expression. Error: {{"{TOO_DEEP}",50}}')
    assert broker.list_policies() == []
    assert broker.list_operator_policies() == []


def test_definitions_with_a_pattern_too_costly_are_refused_with_the_bound() -> None:
    for document in ({"policies": [{"vhost": "/", "name": "p", "pattern": NESTED,
                                    "definition": {"max-length": 1}}]},
                     {"users": [{"name": "u", "password": "pw", "tags": ""}],
                      "permissions": [{"user": "u", "vhost": "/", "configure": NESTED,
                                       "write": ".*", "read": ".*"}]},
                     {"users": [{"name": "u", "password": "pw", "tags": ""}],
                      "topic_permissions": [{"user": "u", "vhost": "/", "exchange": "amq.topic",
                                             "write": ".*", "read": NESTED}]}):
        with pytest.raises(DefinitionsError, match=TOO_DEEP.replace("(", "\\(")):
            Broker().load_definitions(document)


@pytest.mark.parametrize(("value", "printed"), [
    (1000.0, "1.0e3"), (1.5, "1.5"), (100.5, "100.5"), (123456.0, "123456.0"), (0.1, "0.1"),
    (1e-05, "1.0e-5"), (1e22, "1.0e22"), (12345678.9, "12345678.9"), (0.001, "0.001"),
    (100.0, "100.0"), (10.0, "10.0"), (-2.5, "-2.5"), (0.0, "0.0"),
    ("x", '<<"x">>'), ('a"b', '<<"a\\"b">>'), ([65, 66], '"AB"'), ([1, 2], "[1,2]"),
    ({"b": [1], "a": None}, '#{<<"a">> => null,<<"b">> => [1]}'), (True, "true"), ([], "[]"),
])
def test_values_print_as_erlang_prints_them(value: Any, printed: str) -> None:
    assert erlang_term(value) == printed


def test_a_wide_list_prints_one_element_per_line() -> None:
    pairs = [("a", 1), ("b" * 55, 2)]
    assert erlang_term(pairs) == '[{<<"a">>,1},\n {<<"' + "b" * 55 + '">>,2}]'
    assert "\n" not in erlang_term([("a", 1), ("b" * 54, 2)])


@pytest.mark.skipif(shutil.which("erl") is None, reason="needs Erlang (erl) as the oracle")
def test_floats_print_as_erlang_itself_prints_them(tmp_path: Any) -> None:
    import random

    rng = random.Random(16)
    values = [rng.choice([1, -1]) * rng.random() * 10 ** rng.randint(-12, 25) for _ in range(200)]
    values += [float(10 ** k) for k in range(-6, 24)] + [float(n) for n in range(0, 2000, 97)]
    def literal(v: float) -> str:  # Erlang wants a point in every float
        mantissa, e, exponent = repr(v).partition("e")
        return (mantissa if "." in mantissa else mantissa + ".0") + e + exponent
    script = "io:format(\"~p~n\", [[" + ",".join(literal(v) for v in values) + "]]), halt()."
    out = subprocess.run(["erl", "-noshell", "-eval", script], capture_output=True, text=True,
                         timeout=60, check=True, cwd=tmp_path).stdout  # a crash dump goes there
    erlang = [x.strip() for x in out.replace("\n", "").strip("[]").split(",")]
    assert erlang == [erlang_term(v) for v in values]


# -- vhost limits ------------------------------------------------------------------------------------

def test_max_queues_refuses_new_queues_only(broker: Broker) -> None:
    broker.set_vhost_limits({"max-queues": 1})
    ch = broker.connect().channel()
    ch.queue_declare("q1")
    ch.queue_declare("q1")
    ch.queue_declare("q1", passive=True)
    with pytest.raises(PreconditionFailed) as caught:
        ch.queue_declare("q2")
    assert caught.value.reply_text == ("PRECONDITION_FAILED - cannot declare queue 'q2': queue "
                                       "limit in vhost '/' (1) is reached")
    broker.set_vhost_limits({"max-queues": -1})
    broker.connect().channel().queue_declare("q2")
    assert broker.list_vhost_limits() == {"max-queues": -1}


def test_max_connections_refuses_new_connections() -> None:
    broker = Broker()
    broker.set_vhost_limits('{"max-connections": 1}')
    first = broker.connect()
    with pytest.raises(NotAllowed) as caught:
        broker.connect()
    assert caught.value.reply_text == ("NOT_ALLOWED - access to vhost '/' refused for user "
                                       "'guest': connection limit (1) is reached")
    first.close()
    broker.connect()
    broker.clear_vhost_limits()
    assert broker.list_vhost_limits() == {}


def test_max_connections_over_the_wire() -> None:
    pika = pytest.importorskip("pika")
    broker = Broker()
    broker.set_vhost_limits({"max-connections": 0})
    with broker.serve() as server, pytest.raises(pika.exceptions.ProbableAccessDeniedError,
                                                 match="connection limit \\(0\\) is reached"):
        pika.BlockingConnection(pika.URLParameters(server.url))
    assert server.errors == []


def test_policy_warnings_can_be_silenced(broker: Broker) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", PolicyWarning)
        broker.set_policy("ha", ".*", {"ha-mode": "all"})


def test_a_policy_pattern_is_matched_in_linear_time_or_by_re_for_lookarounds() -> None:
    """A policymaker's pattern meets every queue name declared: ^(a+)+$ against 40 a's and a
    "!" (2^40 steps of re) is linear on embroker._regex; RabbitMQ's idiom ^(?!amq\\.).*
    (a lookahead) still applies (re)."""
    broker = Broker()
    broker.set_policy("catastrophic", "^(a+)+$", {"max-length": 1}, apply_to="queues")
    broker.set_policy("not-amq", "^(?!amq\\.).*", {"message-ttl": 1000}, apply_to="queues",
                      priority=-1)
    channel = broker.connect().channel()
    channel.queue_declare("a" * 40 + "!")
    channel.queue_declare("aaaa")
    assert broker.queues["aaaa"].policy.name == "catastrophic"
    assert broker.queues["a" * 40 + "!"].policy.name == "not-amq"
