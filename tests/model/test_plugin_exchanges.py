"""The routing plugins' exchanges in the model: what the golden scenarios cannot show (their
explanations, histories, invariants), and properties over generated layouts. The scenarios of
tests/conformance/scenarios_plugins.py pin their routing against RabbitMQ."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embroker import Broker
from embroker._erlterm import jump_consistent_hash, phash2
from embroker.errors import PreconditionFailed
from embroker.model._plugin_exchanges import route_order

PLUGINS = ["rabbitmq_consistent_hash_exchange", "rabbitmq_sharding", "rabbitmq_random_exchange",
           "rabbitmq_recent_history_exchange"]


@pytest.fixture
def broker() -> Broker:
    return Broker(plugins=PLUGINS)


def test_validate_binding__a_key_that_is_no_integer_is_printed_as_erlang_does(
        broker: Broker) -> None:
    """``~p`` of the key's binary: printable latin-1 bytes quoted (a UTF-8 'é' is two of them),
    other bytes as integers."""
    ch = broker.connect().channel()
    ch.exchange_declare("ring", "x-consistent-hash")
    ch.queue_declare("q")
    with pytest.raises(PreconditionFailed) as failed:
        ch.queue_bind("q", "ring", "\x01")
    assert failed.value.text == "The binding key must be an integer: <<1>>"
    ch = broker.connect().channel()
    with pytest.raises(PreconditionFailed) as failed:
        ch.queue_bind("q", "ring", "é")
    assert failed.value.wire_reply_text.encode("utf-8", "surrogateescape") == \
        'PRECONDITION_FAILED - The binding key must be an integer: <<"é">>'.encode()


def test_a_huge_weight_takes_no_time(broker: Broker) -> None:
    """The ring keeps ranges, not one entry per bucket: a weight of 10^23 (RabbitMQ would build
    a list that long) costs nothing, and routes everything to its owner."""
    ch = broker.connect().channel()
    ch.exchange_declare("ring", "x-consistent-hash")
    ch.queue_declare("big")
    ch.queue_declare("small")
    ch.queue_bind("small", "ring", "1")
    ch.queue_bind("big", "ring", str(10**23))
    ch.basic_publish("ring", "k", b"")
    assert broker.trace[-1].queues == ("big",)


def test_explanations_say_how_each_type_chose(broker: Broker) -> None:
    ch = broker.connect().channel()
    for xtype in ("x-modulus-hash", "x-random", "x-recent-history"):
        ch.exchange_declare(xtype, xtype)
        for q in ("a", "b"):
            ch.queue_declare(q)
            ch.queue_bind(q, xtype, q)
    ch.basic_publish("x-modulus-hash", "k", b"")
    assert "phash2 of the routing key 'k' modulo 2 binding(s) is" in broker.trace[-1].explain()
    ch.basic_publish("x-random", "k", b"")
    assert "drew binding" in broker.trace[-1].explain()
    ch.basic_publish("x-recent-history", "k", b"")
    assert "keeps the last 20 message(s) for new bindings" in broker.trace[-1].explain()


def test_a_replayed_message_says_so_in_its_history(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.exchange_declare("last", "x-recent-history")
    ch.basic_publish("last", "k", b"kept")
    decision = broker.trace[-1]
    ch.queue_declare("late")
    ch.queue_bind("late", "last")
    [event] = decision.history()
    assert (event.kind, event.queue, event.exchange) == ("replayed", "late", "last")
    assert "queue 'late': ready, replayed by x-recent-history exchange 'last'" in \
        decision.explain()


def test_route_order_is_rabbitmqs_route_table() -> None:
    """Binding key (bytes), then destination: an exchange before a queue, then by name."""
    broker = Broker(plugins=PLUGINS)
    ch = broker.connect().channel()
    ch.exchange_declare("m", "x-modulus-hash")
    ch.exchange_declare("inner", "fanout")
    for q in ("b", "a"):
        ch.queue_declare(q)
    ch.queue_bind("b", "m", "k")
    ch.queue_bind("a", "m", "k")
    ch.exchange_bind("inner", "m", "k")
    ch.queue_bind("b", "m", "")
    ordered = route_order(broker.exchanges["m"].snapshot())
    assert [(b.routing_key, b.destination.kind, b.destination.name) for b in ordered] == [
        ("", "queue", "b"), ("k", "exchange", "inner"), ("k", "queue", "a"), ("k", "queue", "b")]


weights = st.lists(st.integers(1, 50), min_size=1, max_size=6)
keys = st.lists(st.text(max_size=10), min_size=1, max_size=20)


@settings(max_examples=50, deadline=None)
@given(weights, keys)
def test_consistent_hash_routes_each_message_to_the_owner_of_its_bucket(
        ring: list[int], routing_keys: list[str]) -> None:
    """Each message reaches exactly one queue: the owner of bucket
    jump_consistent_hash(phash2(key), total), buckets given out in binding order."""
    broker = Broker(plugins=PLUGINS)
    ch = broker.connect().channel()
    ch.exchange_declare("ring", "x-consistent-hash")
    owners: list[str] = []
    for i, weight in enumerate(ring):
        ch.queue_declare(f"q{i}")
        ch.queue_bind(f"q{i}", "ring", str(weight))
        owners += [f"q{i}"] * weight
    for key in routing_keys:
        ch.basic_publish("ring", key, b"")
        bucket = jump_consistent_hash(phash2(key.encode("utf-8", "surrogateescape")), len(owners))
        assert broker.trace[-1].queues == (owners[bucket],)
    broker._check()


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "a", "b"]), st.integers(0, 3)), min_size=1,
                max_size=8, unique=True), keys)
def test_modulus_hash_picks_phash2_of_the_keys_modulo_the_bindings(
        layout: list[tuple[str, int]], routing_keys: list[str]) -> None:
    broker = Broker(plugins=PLUGINS)
    ch = broker.connect().channel()
    ch.exchange_declare("m", "x-modulus-hash")
    for key, q in layout:
        ch.queue_declare(f"q{q}")
        ch.queue_bind(f"q{q}", "m", key)
    ordered = sorted(layout, key=lambda kq: (kq[0].encode(), f"q{kq[1]}"))
    for key in routing_keys:
        ch.basic_publish("m", key, b"")
        index = phash2([key.encode("utf-8", "surrogateescape")], 2**27) % len(ordered)
        assert broker.trace[-1].queues == (f"q{ordered[index][1]}",)


# -- x-local-random (RabbitMQ 4.0+, no plugin) ---------------------------------------------------

def test_local_random_is_an_unknown_type_before_rabbitmq_4() -> None:
    """RabbitMQ 3.10 has no x-local-random (rabbit_exchange_type_local_random arrives in
    v4.0.0): its declare fails like any unknown type's."""
    ch = Broker(as_rabbitmq="3.10.8").connect().channel()
    with pytest.raises(Exception, match="unknown exchange type 'x-local-random'"):
        ch.exchange_declare("rpc", "x-local-random")


def test_local_random_draws_one_classic_queue_reproducibly() -> None:
    """rabbit_exchange_type_local_random v4.1.4 route/3: one of the bound local queues, drawn
    uniformly (here from the broker's seeded source: the same draws on every run)."""
    draws = []
    for _ in range(2):
        broker = Broker(as_rabbitmq="4.1.x")
        ch = broker.connect().channel()
        ch.exchange_declare("rpc", "x-local-random")
        for q in ("a", "b", "c"):
            ch.queue_declare(q)
            ch.queue_bind(q, "rpc", "")
        for i in range(30):
            ch.basic_publish("rpc", "any key", str(i).encode())
        chosen = [record.queues for record in broker.trace[-30:]]
        assert all(len(queues) == 1 for queues in chosen)
        assert {queues[0] for queues in chosen} == {"a", "b", "c"}
        assert "drew queue" in broker.trace[-1].explain()
        draws.append(chosen)
    assert draws[0] == draws[1]


def test_local_random_with_one_queue_routes_to_it() -> None:
    broker = Broker(as_rabbitmq="4.1.x")
    ch = broker.connect().channel()
    ch.exchange_declare("rpc", "x-local-random")
    ch.queue_declare("only")
    ch.queue_bind("only", "rpc", "")
    ch.basic_publish("rpc", "", b"x")
    assert broker.trace[-1].queues == ("only",)


@pytest.mark.parametrize(("destination", "key", "text"), [
    ("classic", "k", "Non empty binding 'k' key not permitted"),
    ("quorum", "", "Queue type rabbit_quorum_queue not valid for this exchange type"),
    ("exchange", "", "Destination not found"),
])
def test_local_random_refuses_bindings_as_rabbitmq_4_does(destination: str, key: str,
                                                          text: str) -> None:
    """rabbit_exchange_type_local_random v4.1.4 validate_binding/2: an empty key and a classic
    queue, else ``binding_invalid``, which the channel answers with 406 PRECONDITION_FAILED."""
    broker = Broker(as_rabbitmq="4.1.x")
    ch = broker.connect().channel()
    ch.exchange_declare("rpc", "x-local-random")
    if destination == "exchange":
        ch.exchange_declare("downstream", "fanout")
        bind = lambda: ch.exchange_bind("downstream", "rpc", key)  # noqa: E731
    else:
        ch.queue_declare(destination, durable=True, arguments={"x-queue-type": destination})
        bind = lambda: ch.queue_bind(destination, "rpc", key)  # noqa: E731
    with pytest.raises(PreconditionFailed) as refused:
        bind()
    assert refused.value.text == text
