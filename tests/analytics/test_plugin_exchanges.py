"""Routing analytics over a topology with the plugins' exchange types (issue 23): the router
loads them (the model enables the routing plugins), routes them as a publish would, takes the
header a consistent-hash exchange hashes as one that changes routes, and says what it cannot
see. No Spark here."""

from __future__ import annotations

from typing import Any

import pytest

from embroker import Broker

pytest.importorskip("pyarrow", reason="pyarrow is not installed (the spark extra)")

from embroker.analytics import Router, Topology

DOCUMENT: dict[str, Any] = {
    "exchanges": [
        {"name": "ring", "vhost": "/", "type": "x-consistent-hash", "durable": True,
         "arguments": {}},
        {"name": "by-user", "vhost": "/", "type": "x-consistent-hash", "durable": True,
         "arguments": {"hash-header": "user"}},
        {"name": "by-id", "vhost": "/", "type": "x-consistent-hash", "durable": True,
         "arguments": {"hash-property": "message_id"}},
        {"name": "shards", "vhost": "/", "type": "x-modulus-hash", "durable": True,
         "arguments": {}},
        {"name": "any", "vhost": "/", "type": "x-random", "durable": True, "arguments": {}},
        {"name": "last", "vhost": "/", "type": "x-recent-history", "durable": True,
         "arguments": {}},
        {"name": "later", "vhost": "/", "type": "x-delayed-message", "durable": True,
         "arguments": {"x-delayed-type": "x-modulus-hash"}},
    ],
    "queues": [{"name": f"q{i}", "vhost": "/", "durable": True, "arguments": {}}
               for i in range(4)],
    "bindings": [
        {"source": x, "vhost": "/", "destination": f"q{i}", "destination_type": "queue",
         "routing_key": str(i + 1), "arguments": {}}
        for x in ("ring", "by-user", "by-id", "shards", "any", "last", "later") for i in range(4)
    ],
}


def test_plugin_exchanges_route_as_a_publish_does() -> None:
    router = Router(Topology(DOCUMENT))
    live = Broker(plugins=["rabbitmq_consistent_hash_exchange", "rabbitmq_sharding",
                           "rabbitmq_random_exchange", "rabbitmq_recent_history_exchange",
                           "rabbitmq_delayed_message_exchange"])
    live.load_definitions(DOCUMENT)
    ch = live.connect().channel()
    for key in ("a", "order-17", "x.y", ""):
        for exchange in ("ring", "shards"):
            ch.basic_publish(exchange, key, b"")
            assert router.route("/", exchange, [key], None).queues == live.trace[-1].queues
        headers = {"user": key}
        ch.basic_publish("by-user", "k", b"", {"headers": headers})
        assert router.route("/", "by-user", ["k"], headers).queues == live.trace[-1].queues
    assert len(router.route("/", "last", ["k"], None).queues) == 4
    assert len(router.route("/", "any", ["k"], None).queues) == 1
    assert len(router.route("/", "later", ["k"], None).queues) == 1


def test_the_hashed_header_changes_routes() -> None:
    """Messages that differ only in a header route alike unless some binding looks at it: a
    consistent-hash exchange's hash-header does."""
    assert "user" in Router(Topology(DOCUMENT)).header_names()


def test_what_routing_cannot_see_is_noted() -> None:
    notes = "\n".join(Topology(DOCUMENT).notes)
    assert "hashes the property message_id, which the traffic does not carry" in notes
    assert "exchange 'any' (x-random) draws from a seeded source" in notes
    assert "its replays to new bindings are not modelled" in notes
    assert "exchange 'later' (x-delayed-message) routes as its x-delayed-type x-modulus-hash" \
        in notes
