"""The router (embroker's model over a definitions document) against RabbitMQ's own records.

The recordings in ``data/`` were made on RabbitMQ 3.10.8 by ``recording.py``: every message's
``routed_queues`` is what RabbitMQ did. No Spark here: this is the code each Spark worker runs.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embroker import Broker
from embroker.analytics import Router, Topology, TopologyError, load_headers
from embroker.analytics._inputs import read_json_lines

from .conftest import DATA, RECORDED_VHOST
from .recording import BINDINGS, MESSAGES

pytest.importorskip("pyarrow", reason="pyarrow is not installed (the spark extra)")


def _log_rows() -> list[dict[str, Any]]:
    return [row for batch in read_json_lines(DATA / "tracing.log") for row in batch.to_pylist()]


def _capture_rows() -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return pq.read_table(DATA / "capture.parquet").to_pylist()


def _routers() -> dict[str, Router]:
    return {
        "rabbitmqctl export": Router(Topology.load(DATA / "definitions.json",
                                                   exchange_types={"audit": "headers"})),
        "management API export": Router(Topology.load(DATA / "definitions-api.json",
                                                      vhost=RECORDED_VHOST)),
    }


def _comparable(router: Router, row: dict[str, Any]) -> list[str]:
    # RabbitMQ's trace names the queue of every key published to the default exchange.
    recorded = sorted(set(row["routed_queues"]))
    if row["exchange"] == "":
        known = {q for _v, q in router.queues()}
        recorded = [q for q in recorded if q in known]
    return recorded


@pytest.mark.parametrize("export", ["rabbitmqctl export", "management API export"])
@pytest.mark.parametrize("recording", ["tracing plugin log", "firehose capture"])
def test_replay_agrees_with_every_route_rabbitmq_recorded(export: str, recording: str) -> None:
    router = _routers()[export]
    rows = _log_rows() if recording == "tracing plugin log" else _capture_rows()
    assert len(rows) == len(MESSAGES)
    differences = []
    for row in rows:
        route = router.route(row["vhost"], row["exchange"], row["routing_keys"],
                             load_headers(row["headers"]))
        assert route.error is None
        if list(route.queues) != _comparable(router, row):
            differences.append((row["line"], row["exchange"], row["routing_keys"], row["headers"],
                                row["routed_queues"], route.queues))
    assert differences == []


def test_the_recording_covers_what_it_claims() -> None:
    rows = _capture_rows()
    router = _routers()["management API export"]
    routes = [router.route(r["vhost"], r["exchange"], r["routing_keys"], load_headers(r["headers"]))
              for r in rows]
    assert any(len(r["routing_keys"]) > 2 for r in rows)  # CC and BCC
    assert any("BCC" not in (load_headers(r["headers"]) or {}) and len(r["routing_keys"]) == 2
               for r in rows)
    assert any(route.alternates == ("regional",) for route in routes)  # AE fired mid-path
    assert any(route.alternates == ("policy-x",) for route in routes)  # AE from a policy
    assert any({"broadcast", "mirror"} <= set(route.exchanges) for route in routes)  # the cycle
    assert any("audit" in route.exchanges for route in routes)  # the internal exchange
    assert sum(1 for r in rows if r["routed_queues"] == []) >= 5  # unroutable and returned
    assert any(r["exchange"] == "" and "ghost" in r["routed_queues"] for r in rows)
    assert {b[0] for b in BINDINGS} >= {"events", "audit", "hx", "broadcast", "mirror"}


def test_a_header_3_and_a_header_of_text_3_route_apart() -> None:
    router = _routers()["management API export"]
    route = router.route(RECORDED_VHOST, "events", ["billing.us.invoice"],
                         {"level": 3, "critical": True})
    assert route.queues == ("audit-critical",)
    route = router.route(RECORDED_VHOST, "events", ["billing.us.invoice"],
                         {"level": "3", "critical": True})
    assert route.queues == ()


def test_the_tracing_log_loses_void_and_byte_arrays_and_they_are_read_back() -> None:
    rows = {r["line"]: r for r in _log_rows()}
    headers = [load_headers(r["headers"]) or {} for r in rows.values()]
    assert {"v": None} in headers  # logged as "undefined"
    assert {"raw": b"\xff\x00"} in headers  # logged as "Not UTF-8, base64 is: /wA="


def test_an_export_without_the_internal_exchange_names_it_and_says_what_to_do() -> None:
    with pytest.raises(TopologyError, match=r"'audit'.*--exchange-type NAME=TYPE"):
        Topology.load(DATA / "definitions.json")


def test_a_missing_definitions_file_and_bad_json_are_clear(tmp_path: Any) -> None:
    with pytest.raises(TopologyError, match="no such definitions file"):
        Topology.load(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"exchanges": [\n  {"name": "x",}\n]}')
    with pytest.raises(TopologyError, match=r"not JSON \(line 2"):
        Topology.load(bad)


def test_an_exchange_argument_wins_over_a_policy_and_higher_priority_wins() -> None:
    document = {
        "exchanges": [{"name": "a", "type": "direct", "arguments": {"alternate-exchange": "own"}},
                      {"name": "b", "type": "direct"}, {"name": "own", "type": "fanout"},
                      {"name": "low", "type": "fanout"}, {"name": "high", "type": "fanout"}],
        "queues": [{"name": q} for q in ("own-q", "low-q", "high-q")],
        "bindings": [{"source": s, "destination": f"{s}-q", "destination_type": "queue",
                      "routing_key": ""} for s in ("own", "low", "high")],
        "policies": [{"name": "p1", "pattern": ".*", "apply-to": "exchanges", "priority": 1,
                      "definition": {"alternate-exchange": "low"}},
                     {"name": "p2", "pattern": "^b$", "apply-to": "all", "priority": 5,
                      "definition": {"alternate-exchange": "high", "max-length": 5}}],
    }
    router = Router(Topology(document))
    assert router.route("/", "a", ["k"], None).queues == ("own-q",)
    assert router.route("/", "b", ["k"], None).queues == ("high-q",)


def test_the_router_pickles_as_data_and_routes_after() -> None:
    router = _routers()["rabbitmqctl export"]
    before = router.route(RECORDED_VHOST, "events", ["orders.eu.shipped"], None)
    data = pickle.dumps(router)
    assert b"embroker.model" not in data  # the definitions travel, not compiled objects
    again = pickle.loads(data)
    assert again.route(RECORDED_VHOST, "events", ["orders.eu.shipped"], None) == before


def test_a_refused_publish_is_reported_not_raised() -> None:
    router = _routers()["management API export"]
    assert router.route(RECORDED_VHOST, "audit", ["k"], None).error == (
        f"ACCESS_REFUSED - cannot publish to internal exchange 'audit' in vhost '{RECORDED_VHOST}'")
    assert "no exchange 'nope'" in (router.route(RECORDED_VHOST, "nope", ["k"], None).error or "")
    assert router.route("elsewhere", "events", ["k"], None).error == (
        "no vhost 'elsewhere' in the definitions")


def test_explain_difference_names_the_binding_that_does_not_match() -> None:
    router = _routers()["management API export"]
    cause = router.explain_difference(RECORDED_VHOST, "hx", [""], {"n": 301}, ["typed-int"])
    assert cause == ("queue 'typed-int' missing: binding exchange 'hx' -> queue 'typed-int' with "
                     "key '' arguments {'n': 300} does not match")
    cause = router.explain_difference(RECORDED_VHOST, "hx", [""], {"n": 300}, [])
    assert "queue 'typed-int' reached in the model through binding 'hx' -> queue 'typed-int'" in cause


# -- the model entry point the router uses ------------------------------------------------------

_words = st.sampled_from(["a", "b", "c", ""])
_keys = st.lists(_words, min_size=0, max_size=4).map(".".join)
_patterns = st.lists(st.sampled_from(["a", "b", "*", "#", ""]), min_size=0, max_size=4).map(".".join)


@settings(max_examples=150, deadline=None)
@given(bindings=st.lists(st.tuples(_patterns, st.sampled_from(["q1", "q2", "q3"])), max_size=6),
       keys=st.lists(_keys, min_size=1, max_size=3),
       headers=st.dictionaries(st.sampled_from(["h", "x-h"]), st.sampled_from([1, "1", True, None]),
                               max_size=2),
       with_ae=st.booleans())
def test_route_keys_agrees_with_a_publish(bindings: list[tuple[str, str]], keys: list[str],
                                          headers: dict[str, Any], with_ae: bool) -> None:
    """VirtualHost.route_keys (what analytics routes with) and a real publish through the
    in-process client reach the same queues, for topic, headers and alternate exchanges."""
    broker = Broker()
    ch = broker.connect().channel()
    ch.exchange_declare("ae", "fanout")
    ch.exchange_declare("t", "topic", arguments={"alternate-exchange": "ae"} if with_ae else None)
    ch.exchange_declare("h", "headers")
    for name in ("q1", "q2", "q3", "ae-q", "h-q"):
        ch.queue_declare(name)
    ch.queue_bind("ae-q", "ae", "")
    ch.exchange_bind("h", "t", "a.#")
    ch.queue_bind("h-q", "h", "", arguments={"x-match": "any", "h": 1})
    for pattern, queue in bindings:
        ch.queue_bind(queue, "t", pattern)
    message_headers = {**headers, "CC": keys[1:]} if len(keys) > 1 else headers
    ch.basic_publish("t", keys[0], b"", properties={"headers": message_headers})
    published = broker.trace[-1].queues
    queues, _matched, _visited = broker.vhost("/").route_keys("t", keys, headers)
    assert tuple(q.name for q in queues) == published
    assert len(broker.trace) == 1  # route_keys left no decision on the trace


def test_route_keys_enqueues_nothing_and_refuses_as_a_publish() -> None:
    broker = Broker()
    ch = broker.connect().channel()
    ch.exchange_declare("x", "fanout")
    ch.queue_declare("q")
    ch.queue_bind("q", "x", "")
    queues, _m, _v = broker.vhost("/").route_keys("x", ["k"], None)
    assert [q.name for q in queues] == ["q"]
    assert broker.queues["q"].message_count == 0
    from embroker.errors import NotFound

    with pytest.raises(NotFound, match="no exchange 'y' in vhost '/'"):
        broker.vhost("/").route_keys("y", ["k"], None)


def test_binding_rows_carry_typed_arguments() -> None:
    router = _routers()["management API export"]
    rows = {(r.source, r.destination): r for r in router.bindings()}
    assert json.loads(rows[("hx", "presence")].arguments) == {"v": None, "x-match": "any"}
    assert rows[("", "orders")].implicit
    assert router.header_names() >= {"level", "critical", "n", "v", "x-tenant"}


def test_a_policy_pattern_is_compiled_as_the_broker_compiles_it() -> None:
    """Within embroker._regex's bounds (500 nested groups: a RecursionError before), and as
    RabbitMQ's PCRE takes it (a lookahead)."""
    def document(pattern: str) -> dict[str, Any]:
        return {"exchanges": [{"name": "amq-x", "type": "direct"}, {"name": "b", "type": "direct"},
                              {"name": "ae", "type": "fanout"}],
                "queues": [{"name": "ae-q"}],
                "bindings": [{"source": "ae", "destination": "ae-q",
                              "destination_type": "queue", "routing_key": ""}],
                "policies": [{"name": "p", "pattern": pattern, "apply-to": "exchanges",
                              "definition": {"alternate-exchange": "ae"}}]}
    router = Router(Topology(document("^(?!amq-)")))
    assert router.route("/", "b", ["k"], None).queues == ("ae-q",)
    assert router.route("/", "amq-x", ["k"], None).queues == ()
    with pytest.raises(TopologyError, match=r"policy 'p' has a pattern embroker cannot compile: "
                                            r"pattern too complex: nesting depth 500"):
        Topology(document("(" * 500 + "a" + ")" * 500))
