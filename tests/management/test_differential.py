"""The management API against RabbitMQ's: each scenario's transcript (statuses, error bodies,
field names and value types of every answer, the values each step names) on embroker equals
RabbitMQ 3.10.8's, recorded in ``golden/`` (and, with ``EMBROKER_REFERENCE_URL``, a fresh run of
RabbitMQ equals the golden file)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from embroker import Broker

from .differential import GOLDEN, RECORD_COMMAND, cleanup, new_target, run
from .record import SETTLE_SECONDS, reference_base
from .scenarios import SCENARIOS

REFERENCE = os.environ.get("EMBROKER_REFERENCE_URL")

#: Where embroker's answers differ from RabbitMQ's on purpose: (scenario, step, path in the
#: transcript entry) -> why. Each path is left out of both sides before comparing.
DELIBERATE: dict[tuple[str, str, str], str] = {
    ("connections_and_consumers", "GET /nodes", "shape.0.config_files"):
        "a broker served in process reads no configuration file (rabbitmq-server's names the "
        "rabbitmq.conf it read: tests/management/test_ui_node.py)",
    ("connections_and_consumers", "GET /nodes", "shape.0.log_files"):
        "a broker served in process has no log of its own (embroker serve names <stderr>, "
        "rabbitmq-server its log file)",
    ("connections_and_consumers", "GET /nodes", "shape.0.cluster_links"):
        "the Erlang distribution links of RabbitMQ's node: none, or one while a CLI tool runs "
        "against it (.ci/run's rabbitmq-plugins, say); embroker has none",
    ("connections_and_consumers", "GET /health/checks/port-listener/1", "body.ports"):
        "the ports each node listens on (RabbitMQ's clustering port 25672, 5672, 15672)",
    ("policies_limits_definitions", "GET /definitions/{vhost}", "values.*.parameters"):
        "RabbitMQ keeps an empty vhost-limits parameter ([]) once its last limit is deleted, "
        "and exports it; embroker forgets it (the operator policy's export is pinned in "
        "test_api.py)",
    ("policies_limits_definitions", "GET /definitions/{vhost}", "shape.parameters"):
        "(the same)",
}


#: Where RabbitMQ 3.10.8 itself fails (a 500 without a body, or its crash report as the reason)
#: or answers with an Erlang term for a reason: (scenario, step) -> the status embroker answers
#: instead, and why. The test checks embroker's status and that it says why in RabbitMQ's error
#: shape, then leaves the status and body out of both sides.
RABBITMQ_FAILS: dict[tuple[str, str], tuple[int, str]] = {
    ("authorization", "GET /connections/username/{mgmt} as mgmt"): (
        401, "a user asking for its own connections by name (RabbitMQ asks is_authorized_user "
        "about a list, which has no user, and fails)"),
    ("authorization", "DELETE /connections/no-such-connection as monitor"): (
        401, "a monitor closing a connection that does not exist: refused as for another "
        "user's (permission before existence), where RabbitMQ fails looking up its user"),
    ("bad_bodies", 'PUT /exchanges/{vhost}/xb {"type": 5}'): (
        400, "RabbitMQ says 'invalid exchange type' for a name that is an Erlang atom already "
        "and 'unknown exchange type' for one that is not: embroker says unknown"),
    ("bad_bodies", 'PUT /permissions/{vhost}/{plain} {"configure": "(", "read": ".*", '
                   '"write": ".*"}'): (
        400, "RabbitMQ's reason is PCRE's error as Erlang terms; embroker's says what "
        "Python's re says"),
    **{("bad_bodies", step): (400, "RabbitMQ fails on the value (a 500, or its crash report)")
       for step in (
           'PUT /queues/{vhost}/qb {"arguments": [1, 2]}',
           'PUT /queues/{vhost}/qb {"arguments": "xy"}',
           'PUT /exchanges/{vhost}/xb {"arguments": 7}',
           'PUT /users/{vhost}-u {"password": null, "tags": ""}',
           'PUT /users/{vhost}-u {"password": 5, "tags": ""}',
           'PUT /users/{vhost}-u {"password": "a", "tags": 5}',
           'PUT /users/{vhost}-u {"limits": {"max-connections": "x"}, "password": "a", '
           '"tags": ""}',
           'POST /exchanges/{vhost}/amq.default/publish {"payload": "x", "payload_encoding": '
           '"string", "properties": [], "routing_key": "q1"}',
           'POST /exchanges/{vhost}/amq.default/publish {"payload": "x", "payload_encoding": '
           '"string", "properties": {"headers": 5}, "routing_key": "q1"}',
           'POST /queues/{vhost}/q1/get {"ackmode": "nope", "count": 1, "encoding": "auto"}',
           'PUT /permissions/{vhost}/{plain} {"configure": 5, "read": ".*", "write": ".*"}',
           'PUT /policies/{vhost}/pb {"definition": [1], "pattern": "x"}',
           'PUT /vhosts/{vhost} {"tags": 5}',
           'POST /bindings/{vhost}/e/amq.direct/q/q1 {"arguments": 5}',
           'POST /users/bulk-delete {"users": "x"}',
           'POST /definitions/{vhost} {"queues": 5}',
           'POST /definitions/{vhost} {"queues": [5]}')},
    # Definitions (issue 44): RabbitMQ 3.10.8 checks nothing of a document before it imports
    # it; embroker's model checks it whole first and refuses it with a text naming the field.
    **{("bad_definitions", f"POST /definitions {body}"): (
        400, "RabbitMQ fails on a section that is no list (a 500 from its import's "
        "length/1 or its queue count), or on a queue that is no object")
       for body in ('{"queues": true}', '{"users": true}', '{"vhosts": true}',
                    '{"permissions": true}', '{"topic_permissions": 5}', '{"exchanges": "x"}',
                    '{"global_parameters": true}', '{"policies": {}}', '{"parameters": 5}',
                    '{"bindings": true}', '{"queues": [5]}')},
    **{("bad_definitions", f"POST /definitions {body}"): (
        400, "RabbitMQ skips an item that is no object (and imports the rest); embroker "
        "refuses the document")
       for body in ('{"exchanges": [5]}', '{"users": [5]}')},
    ("bad_definitions", 'POST /definitions {"queues": [{"name": 5}]}'): (
        400, "RabbitMQ never looks at the name's type (its refusal is the missing vhost); "
        "embroker says the name is no string"),
    **{("bad_definitions", f"POST /definitions {body}"): (
        400, "RabbitMQ's reason is an Erlang term with its text as a list of character codes "
        "(amqp_error, invalid_regexp); embroker's is the text (precondition_failed: ..., as "
        "RabbitMQ's own vhost route words it)")
       for body in ('{"exchanges": [{"name": "x", "type": "nosuchtype", "vhost": "{vhost}"}]}',
                    '{"permissions": [{"configure": "(", "read": ".*", "user": '
                    '"{vhost}-nobody", "vhost": "{vhost}", "write": ".*"}]}',
                    '{"queues": [{"arguments": {"x-max-length": "abc"}, "auto_delete": false, '
                    '"durable": true, "name": "q", "vhost": "{vhost}"}]}')},
    ("bad_definitions", "POST /definitions"): (
        400, "(the same: queue a5's refusal as an Erlang term)"),
    **{("bad_definitions", f"POST /definitions {body}"): (
        400, "a required field missing: RabbitMQ fails where it first uses it (badarg, badkey, "
        "function_clause); embroker names it")
       for body in ('{"permissions": [{"user": "{vhost}-nobody", "vhost": "{vhost}"}]}',
                    '{"users": [{"password": "x", "tags": ""}]}',
                    '{"bindings": [{"destination": "q1", "source": "x", "vhost": "{vhost}"}]}')},
    ("bad_definitions", 'POST /definitions {"users": [{"limits": {"max-connections": "x"}, '
                        '"name": "{vhost}-u", "password": "x", "tags": ""}]}'): (
        400, "RabbitMQ fails on its own limit validation's error (a 500); embroker answers "
        "that validation's text, as PUT /api/users does"),
    ("bad_definitions", 'POST /definitions/{vhost} {"queues": true}'): (
        400, "RabbitMQ fails counting the queues (a 500)"),
    ("bad_definitions", 'POST /definitions/{vhost} {"policies": [{"definition": {"max-length": '
                        '"abc"}, "name": "bp", "pattern": "^x"}]}'): (
        400, "RabbitMQ's vhost route prints the refusal as an Erlang binary (<<\"...\">>, ~p); "
        "embroker's reason is the text in it"),
}


#: Left out of every comparison: RabbitMQ shows the message statistics a queue or channel has
#: had (which come and go with its traffic, sampled every 5 s); embroker keeps none and shows
#: each counter as 0 (its counts of messages are exact instead: test_api.py).
ANYWHERE = ("message_stats",)
VHOST_STATISTICS = ("messages", "messages_details", "messages_ready", "messages_ready_details",
                    "messages_unacknowledged", "messages_unacknowledged_details", "recv_oct",
                    "recv_oct_details", "send_oct", "send_oct_details")
for _scenario in ("topology", "tracing"):
    for _key in VHOST_STATISTICS:
        DELIBERATE[(_scenario, "GET /vhosts/{vhost}", f"shape.{_key}")] = (
            "RabbitMQ shows a new vhost's message counts once its statistics are collected; "
            "embroker's are there at once")
    DELIBERATE[(_scenario, "GET /vhosts/{vhost}", "values.messages")] = "(the same)"
    DELIBERATE[(_scenario, "GET /vhosts/{vhost}", "shape.cluster_state")] = (
        "keyed by the node's name (RabbitMQ's rabbit@HOST, embroker's embroker@localhost)")


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in ANYWHERE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _without(entry: dict[str, Any], path: str) -> None:
    parts = path.split(".")
    target: Any = entry
    for part in parts[:-1]:
        if isinstance(target, list):
            target = target[int(part)] if part.isdigit() and int(part) < len(target) else None
        elif isinstance(target, dict):
            target = target.get(part)
        if target is None:
            return
    if isinstance(target, dict):
        target.pop(parts[-1], None)


def normalised(name: str, transcript: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = _strip(json.loads(json.dumps(transcript)))
    for entry in out:  # a definitions export lists things in RabbitMQ's table order (hashes)
        document = entry.get("values", {}).get("*")
        if entry["step"].startswith("GET /definitions") and isinstance(document, dict):
            for section in ("queues", "exchanges", "bindings", "policies", "parameters"):
                if isinstance(document.get(section), list):
                    document[section].sort(key=lambda item: json.dumps(item, sort_keys=True))
    for (scenario, step, path), _why in DELIBERATE.items():
        if scenario == name:
            for entry in out:
                if entry.get("step") == step:
                    _without(entry, path)
    return out


def golden(name: str) -> list[dict[str, Any]]:
    path = GOLDEN / f"{name}.json"
    if not path.exists():
        pytest.fail(f"no golden file {path.name}: record it with {RECORD_COMMAND} {name}")
    transcript: list[dict[str, Any]] = json.loads(path.read_text())["transcript"]
    return transcript


def lines(transcript: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(entry, sort_keys=True) for entry in transcript]


def differences(expected: Any, got: Any, where: str = "") -> list[str]:
    """What differs between two transcript values, one line per difference (by path)."""
    if isinstance(expected, dict) and isinstance(got, dict):
        found = []
        for key in sorted(set(expected) | set(got)):
            path = f"{where}.{key}" if where else str(key)
            if key not in got:
                found.append(f"{path}: missing (RabbitMQ: {json.dumps(expected[key])[:80]})")
            elif key not in expected:
                found.append(f"{path}: not in RabbitMQ's (embroker: {json.dumps(got[key])[:80]})")
            else:
                found += differences(expected[key], got[key], path)
        return found
    if isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        return [d for i, (e, g) in enumerate(zip(expected, got, strict=True))
                for d in differences(e, g, f"{where}.{i}")]
    if expected != got:
        return [f"{where}: RabbitMQ {json.dumps(expected)[:300]} != embroker "
                f"{json.dumps(got)[:300]}"]
    return []


def _without_failures(name: str, transcript: list[dict[str, Any]], *,
                      ours: bool) -> list[str]:
    """Leave out the status and body of the steps :data:`RABBITMQ_FAILS` names; on embroker's
    side (``ours``), first check them: the status named, and a reason."""
    problems = []
    for entry in transcript:
        expected = RABBITMQ_FAILS.get((name, entry.get("step", "")))
        if expected is None:
            continue
        status, body = entry.pop("status", None), entry.pop("body", None)
        if ours and (status != expected[0] or not isinstance(body, dict) or
                     not body.get("reason")):
            problems.append(f"{entry['step']}: embroker answered {status} {body}, not "
                            f"{expected[0]} with a reason ({expected[1]})")
    return problems


def assert_same(name: str, got: list[dict[str, Any]], expected: list[dict[str, Any]], *,
                ours: bool = True) -> None:
    """``got`` (embroker's transcript, or with ``ours=False`` a fresh one of RabbitMQ's) is
    ``expected``, RabbitMQ's golden one."""
    got, expected = normalised(name, got), normalised(name, expected)
    problems = _without_failures(name, got, ours=ours)
    _without_failures(name, expected, ours=False)
    for index, (want, have) in enumerate(zip(expected, got, strict=False)):
        found = differences(want, have)
        if found:
            problems.append(f"step {index} {want.get('step')}:\n  " + "\n  ".join(found))
    if len(expected) != len(got):
        problems.append(f"{len(expected)} steps in RabbitMQ's transcript, {len(got)} in this one")
    if problems:
        pytest.fail(f"scenario {name} differs from RabbitMQ's:\n" + "\n".join(problems),
                    pytrace=False)


@pytest.fixture
def management() -> Iterator[tuple[str, str]]:
    broker = Broker()
    with broker.serve(management=True) as server:
        yield server.management_url + "api", server.url
        assert server.errors == []


@pytest.mark.differential
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_matches_rabbitmq(name: str, management: tuple[str, str]) -> None:
    base, url = management
    target = new_target(base, url)
    try:
        transcript = run(SCENARIOS[name], target)
    finally:
        cleanup(target)
    assert_same(name, transcript, golden(name))


@pytest.mark.differential
@pytest.mark.skipif(not REFERENCE, reason="needs a reference RabbitMQ (EMBROKER_REFERENCE_URL)")
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_golden_file_is_what_rabbitmq_answers(name: str) -> None:
    assert REFERENCE is not None
    target = new_target(reference_base(REFERENCE), REFERENCE, SETTLE_SECONDS)
    recorded = golden(name)
    want = normalised(name, recorded)

    def as_recorded(index: int, entry: dict[str, Any]) -> bool:
        """RabbitMQ's statistics have caught up: this step's answer is the recorded one."""
        return index < len(want) and not differences(want[index],
                                                     normalised(name, [entry])[0])

    try:
        transcript = run(SCENARIOS[name], target, expected=as_recorded)
    finally:
        cleanup(target)
    assert_same(name, transcript, recorded, ours=False)
