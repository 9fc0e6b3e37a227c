"""An exchange's snapshot of its bindings (what the trace keeps of each exchange a message
passed) is its bindings in order, and a change copies only the piece it touched: a publish
after each bind no longer copies every binding (issue #49's scale: 1.8 ms and 800 KB a publish
at 100,000 bindings, docs/scale.md)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from embroker.model import Broker
from embroker.model._exchange import _PIECE, Binding, Bindings, Exchange


def _exchange() -> tuple[Broker, Exchange]:
    broker = Broker()
    vhost = broker.vhosts["/"]
    vhost.declare_exchange("x", "direct")
    return broker, vhost.exchanges["x"]


def _bind(broker: Broker, exchange: Exchange, key: str) -> Binding:
    vhost = broker.vhosts["/"]
    if "q" not in vhost.queues:
        vhost.declare_queue("q", None)
    queue = vhost.queues["q"]
    binding = Binding(exchange, queue, key, {})
    exchange.add_binding(binding)
    return binding


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 700)), max_size=1500))
def test_a_snapshot_is_the_bindings_in_the_order_they_were_made(
        changes: list[tuple[bool, int]]) -> None:
    broker, exchange = _exchange()
    keys: dict[int, tuple[object, ...]] = {}
    for add, number in changes:
        if add and number not in keys:
            keys[number] = _bind(broker, exchange, f"k{number}").key
        elif not add and number in keys:
            assert exchange.remove_binding(keys.pop(number)) is not None
        if number % 7 == 0:
            snapshot = exchange.snapshot()
            assert snapshot == tuple(exchange.bindings.values())
    snapshot = exchange.snapshot()
    assert list(snapshot) == list(exchange.bindings.values())
    assert len(snapshot) == len(exchange.bindings)
    if snapshot:
        assert snapshot[0] is next(iter(exchange.bindings.values()))
        assert snapshot[-1] is list(exchange.bindings.values())[-1]
    assert len(exchange._pieces) <= 2 * len(exchange.bindings) // _PIECE + 2


def test_a_change_copies_only_the_piece_it_touched() -> None:
    broker, exchange = _exchange()
    for number in range(10 * _PIECE):
        _bind(broker, exchange, f"k{number}")
    before = exchange.snapshot()
    _bind(broker, exchange, "one-more")
    after = exchange.snapshot()
    assert len(after) == len(before) + 1
    assert after._pieces[:10] == before._pieces[:10]
    assert all(a is b for a, b in zip(after._pieces[:10], before._pieces[:10], strict=True))
    exchange.remove_binding(next(iter(exchange.bindings)))  # the first piece changes
    again = exchange.snapshot()
    assert again._pieces[0] is not after._pieces[0]
    assert all(a is b for a, b in zip(again._pieces[1:], after._pieces[1:], strict=True))
    assert exchange.snapshot() is again  # shared until the next change


def test_a_decision_keeps_the_bindings_it_saw() -> None:
    broker = Broker()
    ch = broker.open_connection("/").open_channel(1)
    ch.exchange_declare("f", "fanout")
    for name in ("a", "b"):
        ch.queue_declare(name)
        ch.queue_bind(name, "f", "")
    ch.basic_publish("f", "", b"x")
    ch.queue_declare("c")
    ch.queue_bind("c", "f", "")
    ch.basic_publish("f", "", b"y")
    first, second = broker.trace[-2], broker.trace[-1]
    assert [b.destination.name for b in first.matched] == ["a", "b"]
    assert [b.destination.name for b in second.matched] == ["a", "b", "c"]
    assert "has 2 binding(s)" in first.explain()
    assert "has 3 binding(s)" in second.explain()
    assert isinstance(second.matched, Bindings)
