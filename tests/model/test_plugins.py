"""Plugins as RabbitMQ has them: an exchange type exists only when its plugin is enabled;
definitions that need a plugin say which; the plugin exchanges round-trip through definitions,
survive restarts as RabbitMQ's do, and reset with a shared broker."""

from __future__ import annotations

from typing import Any

import pytest

from embroker import Broker, DefinitionsError
from embroker.errors import CommandInvalid
from embroker.model._plugins import PLUGIN_OF_TYPE, PLUGINS

ALL = tuple(PLUGINS)


@pytest.mark.parametrize("xtype", sorted(PLUGIN_OF_TYPE))
def test_a_plugin_type_needs_its_plugin(xtype: str) -> None:
    """Without the plugin, RabbitMQ's error: 503 "unknown exchange type 'x-...'"."""
    ch = Broker().connect().channel()
    with pytest.raises(CommandInvalid) as failed:
        ch.exchange_declare("x", xtype, arguments={"x-delayed-type": "direct"})
    assert failed.value.reply_text == f"COMMAND_INVALID - unknown exchange type '{xtype}'"
    broker = Broker(plugins=[PLUGIN_OF_TYPE[xtype]])
    broker.connect().channel().exchange_declare("x", xtype,
                                                arguments={"x-delayed-type": "direct"})
    assert broker.exchanges["x"].type == xtype


def test_a_disabled_plugins_type_is_invalid_not_unknown() -> None:
    """A plugin disabled on a running node leaves its type "invalid", not "unknown" (RabbitMQ
    3.10.8 checked live: tests/control/test_ctl.py drives it through rabbitmq-plugins)."""
    broker = Broker(plugins=["rabbitmq_consistent_hash_exchange"])
    assert broker.plugins.disable("rabbitmq_consistent_hash_exchange")
    with pytest.raises(CommandInvalid) as failed:
        broker.connect().channel().exchange_declare("x", "x-consistent-hash")
    assert failed.value.reply_text == "COMMAND_INVALID - invalid exchange type 'x-consistent-hash'"


def test_the_modulus_hash_comes_with_rabbitmq_sharding() -> None:
    assert PLUGIN_OF_TYPE["x-modulus-hash"] == "rabbitmq_sharding"


def test_unknown_plugins_are_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown plugin.*'rabbitmq_delayed_message'.*embroker "
                                         r"implements rabbitmq_delayed_message_exchange"):
        Broker(plugins=["rabbitmq_delayed_message"])


def test_plugins_are_listed() -> None:
    broker = Broker(plugins=["rabbitmq_sharding", "rabbitmq_random_exchange"])
    assert broker.plugins.enabled == {"rabbitmq_sharding", "rabbitmq_random_exchange"}
    assert "rabbitmq_sharding" in broker.plugins
    assert repr(broker.plugins) == "<Plugins ['rabbitmq_random_exchange', 'rabbitmq_sharding']>"
    assert broker.plugins.delayed is None
    assert broker.plugins.events is None


TOPOLOGY: dict[str, Any] = {
    "exchanges": [
        {"name": "later", "vhost": "/", "type": "x-delayed-message", "durable": True,
         "auto_delete": False, "internal": False, "arguments": {"x-delayed-type": "topic"}},
        {"name": "ring", "vhost": "/", "type": "x-consistent-hash", "durable": True,
         "auto_delete": False, "internal": False, "arguments": {"hash-header": "user"}},
        {"name": "shards", "vhost": "/", "type": "x-modulus-hash", "durable": True,
         "auto_delete": False, "internal": False, "arguments": {}},
        {"name": "any", "vhost": "/", "type": "x-random", "durable": True,
         "auto_delete": False, "internal": False, "arguments": {}},
        {"name": "last", "vhost": "/", "type": "x-recent-history", "durable": True,
         "auto_delete": False, "internal": False, "arguments": {"x-recent-history-length": 5}},
    ],
    "queues": [{"name": "q", "vhost": "/", "durable": True, "auto_delete": False,
                "arguments": {}}],
    "bindings": [
        {"source": "later", "vhost": "/", "destination": "q", "destination_type": "queue",
         "routing_key": "a.#", "arguments": {}},
        {"source": "ring", "vhost": "/", "destination": "q", "destination_type": "queue",
         "routing_key": "10", "arguments": {}},
    ],
}


def test_definitions_round_trip_every_plugin_type() -> None:
    broker = Broker(plugins=ALL)
    broker.load_definitions(TOPOLOGY)
    exported = broker.definitions()
    assert sorted((x["name"], x["type"], x["arguments"]) for x in exported["exchanges"]) == \
        sorted((x["name"], x["type"], x["arguments"]) for x in TOPOLOGY["exchanges"])
    again = Broker(plugins=ALL)
    again.load_definitions(exported)
    assert again.definitions()["bindings"] == exported["bindings"]


@pytest.mark.parametrize("missing", ["rabbitmq_delayed_message_exchange",
                                     "rabbitmq_consistent_hash_exchange", "rabbitmq_sharding",
                                     "rabbitmq_random_exchange",
                                     "rabbitmq_recent_history_exchange"])
def test_definitions_that_need_a_plugin_name_it(missing: str) -> None:
    broker = Broker(plugins=[p for p in ALL if p != missing])
    with pytest.raises(DefinitionsError, match=f"which the plugin {missing} brings: enable it"):
        broker.load_definitions(TOPOLOGY)


def test_definitions_name_the_plugin_of_a_delayed_type() -> None:
    """A delayed-message exchange routing as a plugin's type needs that plugin too."""
    broker = Broker(plugins=["rabbitmq_delayed_message_exchange"])
    with pytest.raises(DefinitionsError, match="type 'x-random', which the plugin "
                                               "rabbitmq_random_exchange brings"):
        broker.load_definitions({"exchanges": [
            {"name": "d", "type": "x-delayed-message", "arguments": {"x-delayed-type": "x-random"}}]})


def test_definitions_refuse_what_the_plugin_refuses() -> None:
    broker = Broker(plugins=ALL)
    with pytest.raises(DefinitionsError, match=r"^precondition_failed: .*x-recent-history-length"):
        broker.load_definitions({"exchanges": [
            {"name": "r", "type": "x-recent-history",
             "arguments": {"x-recent-history-length": 0}}]})


def test_restart_rebuilds_the_hash_ring_in_route_table_order() -> None:
    """rabbit_exchange_type_consistent_hash:recover/0 re-adds a durable exchange's bindings in
    ``lists:usort`` order (by binding key, then destination): a ring built in another order
    comes back sorted."""
    broker = Broker(plugins=["rabbitmq_consistent_hash_exchange"])
    ch = broker.connect().channel()
    ch.exchange_declare("ring", "x-consistent-hash", durable=True)
    for name, weight in (("b", "5"), ("a", "3"), ("c", "10")):
        ch.queue_declare(name, durable=True)
        ch.queue_bind(name, "ring", weight)
    ring = broker.exchanges["ring"]
    assert ring.buckets() == [("queue", "b", 0, 5), ("queue", "a", 5, 3),  # type: ignore[attr-defined]
                              ("queue", "c", 8, 10)]
    broker.restart()
    assert broker.exchanges["ring"].buckets() == [  # type: ignore[attr-defined]
        ("queue", "c", 0, 10), ("queue", "a", 10, 3), ("queue", "b", 13, 5)]


def test_restart_forgets_recent_history() -> None:
    """The recent-history table is ram_copies: a restart empties it (the durable exchange
    stays)."""
    broker = Broker(plugins=["rabbitmq_recent_history_exchange"])
    ch = broker.connect().channel()
    ch.exchange_declare("last", "x-recent-history", durable=True)
    ch.basic_publish("last", "k", b"kept")
    broker.restart()
    ch = broker.connect().channel()
    ch.queue_declare("q")
    ch.queue_bind("q", "last")
    assert ch.basic_get("q") is None


def test_reset_drops_held_and_kept_messages() -> None:
    from embroker import ManualClock

    broker = Broker(plugins=ALL, clock=ManualClock())
    ch = broker.connect().channel()
    ch.exchange_declare("later", "x-delayed-message", arguments={"x-delayed-type": "fanout"})
    ch.exchange_declare("last", "x-recent-history")
    ch.queue_declare("q")
    ch.queue_bind("q", "later")
    broker.mark_baseline()
    ch.basic_publish("later", "", b"held", {"headers": {"x-delay": 1000}})
    ch.basic_publish("last", "", b"kept")
    broker.reset()
    assert broker.plugins.delayed is not None
    assert len(broker.plugins.delayed) == 0
    broker.manual_clock.advance(2)
    ch.queue_bind("q", "last")
    assert ch.basic_get("q") is None


def test_random_is_deterministic_under_a_seed() -> None:
    def spread(seed: int | None) -> list[str]:
        broker = Broker(plugins=["rabbitmq_random_exchange"])
        if seed is not None:
            broker.plugins.random.seed(seed)
        ch = broker.connect().channel()
        ch.exchange_declare("any", "x-random")
        for q in ("a", "b", "c"):
            ch.queue_declare(q)
            ch.queue_bind(q, "any")
        for i in range(20):
            ch.basic_publish("any", "", str(i).encode())
        return [d.queues[0] for d in broker.trace if d.exchange == "any"]

    assert spread(None) == spread(None)
    assert spread(7) == spread(7)
    assert spread(7) != spread(None)
