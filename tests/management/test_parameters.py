"""Runtime parameters, global parameters, topic permissions per exchange, feature flags and
authentication attempts through the management API, as RabbitMQ 3.10.8 answers them
(rabbit_mgmt_wm_parameter, _global_parameter, _topic_permission, _feature_flag_enable,
_auth_attempts): each scenario runs against embroker, and against the reference's management
API when ``EMBROKER_REFERENCE_URL`` is set, and must give the transcript recorded here from
RabbitMQ 3.10.8 (checked live). Names are unique per run and written ``V``/``U``/``G`` in the
transcripts; each run deletes what it made."""

from __future__ import annotations

import json
import os
import re
import urllib.parse
import uuid
from typing import Any

import pika
import pika.exceptions
import pytest

from embroker import Broker, Server
from embroker.errors import DefinitionsError, PolicyError
from embroker.model._access import AuthAttempts

from .record import reference_base
from .test_user_limits import _api

REFERENCE = os.environ.get("EMBROKER_REFERENCE_URL")
NOT_FOUND = [404, {"error": "Object Not Found", "reason": "Not Found"}]


def _both(served: Server) -> list[str]:
    """The management APIs a scenario runs against: embroker's, and the reference's."""
    bases = [served.management_url + "api"]
    if REFERENCE:
        bases.append(reference_base(REFERENCE))
    return bases


def _anonymous(seen: list[Any], names: dict[str, str]) -> list[Any]:
    text = json.dumps(seen)
    for placeholder, name in names.items():
        text = text.replace(name, placeholder)
    found: list[Any] = json.loads(text)
    return found


# -- topic permissions per exchange -------------------------------------------------------------

def _topic_permissions_scenario(base: str) -> list[Any]:
    api = _api(base)
    tag = uuid.uuid4().hex[:8]
    vhost, user = f"tp-v-{tag}", f"tp-u-{tag}"
    names = {"V": vhost, "U": user}
    seen: list[Any] = []
    api("PUT", f"/vhosts/{vhost}", {})
    api("PUT", f"/users/{user}", {"password": "pw", "tags": ""})
    try:
        for method, path, body in [
            ("GET", "/topic-permissions/V/U/amq.topic", None),
            ("DELETE", "/topic-permissions/V/U/amq.topic", None),
            ("PUT", "/topic-permissions/V/U/amq.topic",
             {"exchange": "amq.topic", "write": "^a", "read": ".*"}),
            ("PUT", "/topic-permissions/V/U/amq.topic",
             {"exchange": "amq.topic", "write": "^b", "read": ".*"}),
            # (the body's exchange is the one set, whatever the path names)
            ("PUT", "/topic-permissions/V/U/other",
             {"exchange": "amq.direct", "write": "^c", "read": ".*"}),
            ("PUT", "/topic-permissions/V/U/other", {"write": "^c", "read": ".*"}),
            # (GET answers every topic permission of the user in the vhost)
            ("GET", "/topic-permissions/V/U/nothing", None),
            ("DELETE", "/topic-permissions/V/U/nothing", None),
            ("GET", "/topic-permissions/V/U", None),
            ("DELETE", "/topic-permissions/V/U/amq.topic", None),
            ("GET", "/topic-permissions/V/U/amq.topic", None),
            ("DELETE", "/topic-permissions/V/U/amq.direct", None),
            ("DELETE", "/topic-permissions/V/U/amq.direct", None),
            ("GET", "/topic-permissions/V/U/amq.direct", None),
            ("PUT", "/topic-permissions/no-V/U/amq.topic",
             {"exchange": "amq.topic", "write": "^a", "read": ".*"}),
            ("PUT", "/topic-permissions/V/no-U/amq.topic",
             {"exchange": "amq.topic", "write": "^a", "read": ".*"}),
            ("GET", "/topic-permissions/no-V/U/amq.topic", None),
            ("DELETE", "/topic-permissions/V/no-U/amq.topic", None),
        ]:
            real = re.sub(r"/(no-)?V(?=/)", lambda m: f"/{m.group(1) or ''}{vhost}", path)
            real = re.sub(r"/(no-)?U(?=/|$)", lambda m: f"/{m.group(1) or ''}{user}", real)
            status, answer = api(method, real, body)
            if isinstance(answer, list):  # (RabbitMQ's order is its table's: by exchange here)
                answer = sorted(answer, key=lambda row: row["exchange"])
            seen.append([method, path, body, [status, answer]])
    finally:
        api("DELETE", f"/vhosts/{vhost}")
        api("DELETE", f"/users/{user}")
    return _anonymous(seen, names)


def _row(exchange: str, write: str) -> dict[str, str]:
    return {"user": "U", "vhost": "V", "exchange": exchange, "write": write, "read": ".*"}


TOPIC_PERMISSIONS_TRANSCRIPT: list[Any] = [
    ["GET", "/topic-permissions/V/U/amq.topic", None, NOT_FOUND],
    ["DELETE", "/topic-permissions/V/U/amq.topic", None, NOT_FOUND],
    ["PUT", "/topic-permissions/V/U/amq.topic",
     {"exchange": "amq.topic", "write": "^a", "read": ".*"}, [201, None]],
    ["PUT", "/topic-permissions/V/U/amq.topic",
     {"exchange": "amq.topic", "write": "^b", "read": ".*"}, [204, None]],
    ["PUT", "/topic-permissions/V/U/other",
     {"exchange": "amq.direct", "write": "^c", "read": ".*"}, [204, None]],
    ["PUT", "/topic-permissions/V/U/other", {"write": "^c", "read": ".*"},
     [400, {"error": "bad_request", "reason": "[{key_missing,exchange}]"}]],
    ["GET", "/topic-permissions/V/U/nothing", None,
     [200, [_row("amq.direct", "^c"), _row("amq.topic", "^b")]]],
    ["DELETE", "/topic-permissions/V/U/nothing", None, [204, None]],
    ["GET", "/topic-permissions/V/U", None,
     [200, [_row("amq.direct", "^c"), _row("amq.topic", "^b")]]],
    ["DELETE", "/topic-permissions/V/U/amq.topic", None, [204, None]],
    ["GET", "/topic-permissions/V/U/amq.topic", None, [200, [_row("amq.direct", "^c")]]],
    ["DELETE", "/topic-permissions/V/U/amq.direct", None, [204, None]],
    ["DELETE", "/topic-permissions/V/U/amq.direct", None, NOT_FOUND],
    ["GET", "/topic-permissions/V/U/amq.direct", None, NOT_FOUND],
    ["PUT", "/topic-permissions/no-V/U/amq.topic",
     {"exchange": "amq.topic", "write": "^a", "read": ".*"},
     [400, {"error": "bad_request", "reason": "vhost_or_user_not_found"}]],
    ["PUT", "/topic-permissions/V/no-U/amq.topic",
     {"exchange": "amq.topic", "write": "^a", "read": ".*"},
     [400, {"error": "bad_request", "reason": "vhost_or_user_not_found"}]],
    ["GET", "/topic-permissions/no-V/U/amq.topic", None, NOT_FOUND],
    ["DELETE", "/topic-permissions/V/no-U/amq.topic", None, NOT_FOUND],
]


def test_topic_permissions_of_one_exchange_are_served_as_rabbitmq_serves_them(
        served: Server) -> None:
    for base in _both(served):
        assert _topic_permissions_scenario(base) == TOPIC_PERMISSIONS_TRANSCRIPT, base


# -- vhost parameters ----------------------------------------------------------------------------

def _parameters_scenario(base: str) -> list[Any]:
    api = _api(base)
    vhost = f"param-v-{uuid.uuid4().hex[:8]}"
    seen: list[Any] = []
    api("PUT", f"/vhosts/{vhost}", {})
    api("PUT", f"/policies/{vhost}/p1", {"pattern": "^x", "definition": {"max-length": 1}})
    try:
        for method, path, body in [
            # a component embroker (and a RabbitMQ without its plugin) does not have
            ("GET", "/parameters/federation-upstream/V/up1", None),
            ("PUT", "/parameters/federation-upstream/V/up1", {"value": {"uri": "amqp://"}}),
            ("PUT", "/parameters/federation-upstream/V/up1", {"valu": 1}),
            ("PUT", "/parameters/federation-upstream/no-V/up1", {"value": 1}),
            ("DELETE", "/parameters/federation-upstream/V/up1", None),
            ("GET", "/parameters/federation-upstream/no-V/up1", None),
            # policies: listed when named, never set or cleared as parameters
            ("PUT", "/parameters/policy/V/p2", {"value": {"pattern": ".*", "definition": {}}}),
            ("GET", "/parameters/policy/V/p1", None),
            ("GET", "/parameters/policy/V", None),
            ("GET", "/parameters/policy/V/p2", None),
            ("DELETE", "/parameters/policy/V/p2", None),
            # the vhost's limits
            ("PUT", "/parameters/vhost-limits/V/limits", {"value": {"max-queues": 5}}),
            ("PUT", "/parameters/vhost-limits/V/limits", {"value": {"max-queues": 6}}),
            ("GET", "/parameters/vhost-limits/V/limits", None),
            ("GET", "/vhost-limits/V", None),
            ("PUT", "/parameters/vhost-limits/V/limits",
             {"value": {"max-queues": 1, "max-connections": "x", "zz": 1}}),
            ("PUT", "/parameters/vhost-limits/V/limits", {"value": 5}),
            ("GET", "/parameters/vhost-limits/V", None),
            ("GET", "/parameters", None),
            ("DELETE", "/parameters/vhost-limits/V/limits", None),
            ("GET", "/vhost-limits/V", None),
            ("DELETE", "/parameters/vhost-limits/V/limits", None),
            # operator policies
            ("PUT", "/parameters/operator_policy/V/op1",
             {"value": {"pattern": "^q", "definition": {"max-lengthz": 3}}}),
            ("PUT", "/parameters/operator_policy/V/op1",
             {"value": {"pattern": "^a", "priority": "x", "apply-to": "nope",
                        "definition": {"max-length": "x"}, "extra": 1}}),
            ("PUT", "/parameters/operator_policy/V/op1", {"value": 7}),
            ("PUT", "/parameters/operator_policy/V/op1",
             {"value": {"pattern": "^a", "priority": 1, "definition": {}}}),
            ("PUT", "/parameters/operator_policy/V/op1",
             {"value": {"pattern": "^q", "definition": {"max-length": 3}, "priority": 2,
                        "apply-to": "queues"}}),
            ("GET", "/parameters/operator_policy/V/op1", None),
            ("GET", "/operator-policies/V/op1", None),
            ("PUT", "/parameters/operator_policy/V/op1",
             {"value": {"pattern": "^q", "definition": {"max-length": 4}, "priority": 2,
                        "apply-to": "queues"}}),
            ("GET", "/parameters/operator_policy/V", None),
            ("DELETE", "/parameters/operator_policy/V/op1", None),
            ("GET", "/operator-policies/V/op1", None),
            ("DELETE", "/parameters/operator_policy/V/op1", None),
        ]:
            real = path.replace("/V", f"/{vhost}").replace("no-V", f"no-{vhost}")
            status, answer = api(method, real, body)
            if path == "/parameters":  # (the node's: this vhost's only)
                answer = [p for p in answer if p["vhost"] == vhost]
            seen.append([method, path, body, [status, answer]])
    finally:
        api("DELETE", f"/vhosts/{vhost}")
    return _anonymous(seen, {"V": vhost})


def _limits(value: dict[str, int]) -> dict[str, Any]:
    return {"vhost": "V", "component": "vhost-limits", "name": "limits", "value": value}


def _policy(component: str, name: str, pattern: str, definition: dict[str, Any],
            priority: int, apply_to: str) -> dict[str, Any]:
    return {"vhost": "V", "component": component, "name": name, "value": {
        "pattern": pattern, "definition": definition, "priority": priority,
        "apply-to": apply_to}}


def _refused(reason: str) -> list[Any]:
    return [400, {"error": "bad_request", "reason": reason}]


PARAMETERS_TRANSCRIPT: list[Any] = [
    ["GET", "/parameters/federation-upstream/V/up1", None, NOT_FOUND],
    ["PUT", "/parameters/federation-upstream/V/up1", {"value": {"uri": "amqp://"}},
     _refused("Validation failed\n\ncomponent federation-upstream not found\n")],
    ["PUT", "/parameters/federation-upstream/V/up1", {"valu": 1},
     _refused("[{key_missing,value}]")],
    ["PUT", "/parameters/federation-upstream/no-V/up1", {"value": 1},
     [404, {"error": "not_found", "reason": "vhost_not_found"}]],
    ["DELETE", "/parameters/federation-upstream/V/up1", None, NOT_FOUND],
    ["GET", "/parameters/federation-upstream/no-V/up1", None, NOT_FOUND],
    ["PUT", "/parameters/policy/V/p2", {"value": {"pattern": ".*", "definition": {}}},
     _refused("policies may not be set using this method")],
    ["GET", "/parameters/policy/V/p1", None,
     [200, _policy("policy", "p1", "^x", {"max-length": 1}, 0, "all")]],
    ["GET", "/parameters/policy/V", None,
     [200, [_policy("policy", "p1", "^x", {"max-length": 1}, 0, "all")]]],
    ["GET", "/parameters/policy/V/p2", None, NOT_FOUND],
    ["DELETE", "/parameters/policy/V/p2", None, NOT_FOUND],
    ["PUT", "/parameters/vhost-limits/V/limits", {"value": {"max-queues": 5}}, [201, None]],
    ["PUT", "/parameters/vhost-limits/V/limits", {"value": {"max-queues": 6}}, [204, None]],
    ["GET", "/parameters/vhost-limits/V/limits", None, [200, _limits({"max-queues": 6})]],
    ["GET", "/vhost-limits/V", None, [200, [{"vhost": "V", "value": {"max-queues": 6}}]]],
    ["PUT", "/parameters/vhost-limits/V/limits",
     {"value": {"max-queues": 1, "max-connections": "x", "zz": 1}},
     _refused('Validation failed\n\nUnrecognised terms [{&lt;&lt;"zz"&gt;&gt;,1}] in limits\n'
              'max-connections should be a number, actually was &lt;&lt;"x"&gt;&gt;\n')],
    ["PUT", "/parameters/vhost-limits/V/limits", {"value": 5},
     _refused("Validation failed\n\nlimits not a list 5\n")],
    ["GET", "/parameters/vhost-limits/V", None, [200, [_limits({"max-queues": 6})]]],
    ["GET", "/parameters", None, [200, [_limits({"max-queues": 6})]]],
    ["DELETE", "/parameters/vhost-limits/V/limits", None, [204, None]],
    ["GET", "/vhost-limits/V", None, [200, []]],
    ["DELETE", "/parameters/vhost-limits/V/limits", None, NOT_FOUND],
    ["PUT", "/parameters/operator_policy/V/op1",
     {"value": {"pattern": "^q", "definition": {"max-lengthz": 3}}},
     _refused('Validation failed\n\n[{&lt;&lt;"max-lengthz"&gt;&gt;,3}] are not recognised '
              'policy settings\nKey "priority" not found in op1\n')],
    ["PUT", "/parameters/operator_policy/V/op1",
     {"value": {"pattern": "^a", "priority": "x", "apply-to": "nope",
                "definition": {"max-length": "x"}, "extra": 1}},
     _refused('Validation failed\n\nUnrecognised terms [{&lt;&lt;"extra"&gt;&gt;,1}] in op1\n'
              '&lt;&lt;"x"&gt;&gt; is not a valid maximum length\napply-to \'nope\' '
              "unrecognised; should be 'queues', 'exchanges' or 'all'\npriority should be a "
              'number, actually was &lt;&lt;"x"&gt;&gt;\n')],
    ["PUT", "/parameters/operator_policy/V/op1", {"value": 7},
     _refused("Validation failed\n\nop1 not a list 7\n")],
    ["PUT", "/parameters/operator_policy/V/op1",
     {"value": {"pattern": "^a", "priority": 1, "definition": {}}},
     _refused("Validation failed\n\nno policy provided\n")],
    ["PUT", "/parameters/operator_policy/V/op1",
     {"value": {"pattern": "^q", "definition": {"max-length": 3}, "priority": 2,
                "apply-to": "queues"}}, [201, None]],
    ["GET", "/parameters/operator_policy/V/op1", None,
     [200, _policy("operator_policy", "op1", "^q", {"max-length": 3}, 2, "queues")]],
    ["GET", "/operator-policies/V/op1", None,
     [200, {"vhost": "V", "name": "op1", "pattern": "^q", "apply-to": "queues",
            "definition": {"max-length": 3}, "priority": 2}]],
    ["PUT", "/parameters/operator_policy/V/op1",
     {"value": {"pattern": "^q", "definition": {"max-length": 4}, "priority": 2,
                "apply-to": "queues"}}, [204, None]],
    ["GET", "/parameters/operator_policy/V", None,
     [200, [_policy("operator_policy", "op1", "^q", {"max-length": 4}, 2, "queues")]]],
    ["DELETE", "/parameters/operator_policy/V/op1", None, [204, None]],
    ["GET", "/operator-policies/V/op1", None, NOT_FOUND],
    ["DELETE", "/parameters/operator_policy/V/op1", None, NOT_FOUND],
]


def test_vhost_parameters_are_served_for_embrokers_components_as_rabbitmq_serves_them(
        served: Server) -> None:
    for base in _both(served):
        assert _parameters_scenario(base) == PARAMETERS_TRANSCRIPT, base


def test_a_vhost_parameter_rabbitmq_fails_on_is_refused_with_the_reason(
        served: Server) -> None:
    """RabbitMQ 3.10.8 answers 500 (checked live) to clearing a policy as a parameter, and
    to vhost-limits under another name than ``limits`` (which it keeps, and lists); embroker
    answers 400 and says why."""
    api = _api(served.management_url + "api")
    api("PUT", "/policies/%2F/p1", {"pattern": "^x", "definition": {"max-length": 1}})
    assert list(api("DELETE", "/parameters/policy/%2F/p1", None)) == _refused(
        "policies may not be cleared using this method")
    assert list(api("PUT", "/parameters/vhost-limits/%2F/other", {"value": {"max-queues": 1}})) == \
        _refused("a vhost's limits are the vhost-limits parameter named 'limits', not 'other'")
    assert api("GET", "/policies/%2F/p1", None)[0] == 200


# -- global parameters ---------------------------------------------------------------------------

def _global_parameters_scenario(base: str) -> list[Any]:
    api = _api(base)
    name = f"embroker_test_{uuid.uuid4().hex[:8]}"
    seen: list[Any] = []
    try:
        steps: list[tuple[str, Any]] = [
            ("GET", None), ("DELETE", None),
            ("PUT", {"value": {"a": [1, {"b": None}], "c": {}}}), ("GET", None),
            ("PUT", {"value": "text"}), ("GET", None),
            ("PUT", {"value": {}}), ("GET", None),  # (an empty object is an empty proplist)
            ("PUT", {"name": "x"}),
            ("PUT", {"value": None}), ("GET", None),
            ("DELETE", None), ("DELETE", None), ("GET", None),
        ]
        for method, body in steps:
            seen.append([method, body, list(api(method, f"/global-parameters/{name}", body))])
        status, listed = api("GET", "/global-parameters", None)
        seen.append(["GET all", status, sorted(p["name"] for p in listed)])
        seen.append(["GET cluster_name", list(api("GET", "/global-parameters/cluster_name",
                                                  None))])
        status, found = api("GET", "/global-parameters/internal_cluster_id", None)
        seen.append(["GET internal_cluster_id", status, sorted(found),
                     found["value"].startswith("rabbitmq-cluster-id-") and
                     len(found["value"]) == len("rabbitmq-cluster-id-") + 22])
    finally:
        api("DELETE", f"/global-parameters/{name}")
    return _anonymous(seen, {"G": name})


GLOBAL_PARAMETERS_TRANSCRIPT: list[Any] = [
    ["GET", None, NOT_FOUND],
    ["DELETE", None, NOT_FOUND],
    ["PUT", {"value": {"a": [1, {"b": None}], "c": {}}}, [201, None]],
    ["GET", None, [200, {"name": "G", "value": {"a": [1, {"b": None}], "c": {}}}]],
    ["PUT", {"value": "text"}, [204, None]],
    ["GET", None, [200, {"name": "G", "value": "text"}]],
    ["PUT", {"value": {}}, [204, None]],
    ["GET", None, [200, {"name": "G", "value": []}]],
    ["PUT", {"name": "x"}, _refused("[{key_missing,value}]")],
    ["PUT", {"value": None}, [204, None]],
    ["GET", None, [200, {"name": "G", "value": None}]],
    ["DELETE", None, [204, None]],
    ["DELETE", None, NOT_FOUND],
    ["GET", None, NOT_FOUND],
    # (the cluster's name is a global parameter only once it is set: the reference's is not)
    ["GET all", 200, ["internal_cluster_id"]],
    ["GET cluster_name", NOT_FOUND],
    ["GET internal_cluster_id", 200, ["name", "value"], True],
]


def test_global_parameters_are_kept_listed_and_cleared_as_rabbitmq_does(
        served: Server) -> None:
    for base in _both(served):
        assert _global_parameters_scenario(base) == GLOBAL_PARAMETERS_TRANSCRIPT, base


def test_the_cluster_name_is_the_cluster_name_global_parameter() -> None:
    """``PUT /api/cluster-name`` and ``PUT /api/global-parameters/cluster_name`` set one
    thing, which clients are told (``server_properties``); clearing it gives the broker's
    own name back (rabbit_nodes:cluster_name/0). (Not run against the reference: its name is
    shared by everything that uses it.)"""
    broker = Broker()
    with broker.serve(management=True) as server:
        api = _api(server.management_url + "api")
        assert list(api("GET", "/cluster-name", None)) == [200, {"name": "embroker"}]
        assert api("PUT", "/cluster-name", {"name": "one"})[0] == 204
        assert list(api("GET", "/global-parameters/cluster_name", None)) == [
            200, {"name": "cluster_name", "value": "one"}]
        assert api("PUT", "/global-parameters/cluster_name", {"value": "two"})[0] == 204
        assert list(api("GET", "/cluster-name", None)) == [200, {"name": "two"}]
        assert broker.server_properties["cluster_name"] == "two"
        assert api("GET", "/overview", None)[1]["cluster_name"] == "two"
        assert list(api("PUT", "/global-parameters/cluster_name", {"value": 5})) == _refused(
            "cluster_name should be a string, actually was 5")
        assert api("DELETE", "/global-parameters/cluster_name", None)[0] == 204
        assert list(api("GET", "/cluster-name", None)) == [200, {"name": "embroker"}]
        assert broker.server_properties["cluster_name"] == "embroker"
        assert server.errors == []


def test_global_parameters_go_out_and_come_back_with_definitions() -> None:
    """Exported as RabbitMQ's ``global_parameters`` (its ``internal_cluster_id`` among them)
    and set again on import; ``cluster_name`` renames the cluster."""
    broker = Broker()
    broker.set_global_parameter("tool_setting", {"depth": 2})
    broker.set_global_parameter("cluster_name", "exported")
    document = broker.definitions()
    assert {p["name"]: p["value"] for p in document["global_parameters"]} == {
        "internal_cluster_id": broker.global_parameters()["internal_cluster_id"],
        "tool_setting": {"depth": 2}, "cluster_name": "exported"}
    other = Broker()
    other.load_definitions(document)
    assert other.global_parameters() == broker.global_parameters()
    assert other.cluster_name == other.server_properties["cluster_name"] == "exported"
    with pytest.raises(DefinitionsError, match="cluster_name should be a string"):
        Broker().load_definitions({"global_parameters": [{"name": "cluster_name",
                                                          "value": 1}]})


def test_runtime_parameters_in_the_model_are_refused_with_every_reason() -> None:
    broker = Broker()
    with pytest.raises(PolicyError) as caught:
        broker.set_parameter("operator_policy", "op", {"definition": {"max-length": 3}})
    assert str(caught.value) == ('Validation failed\n\nKey "pattern" not found in op\n'
                                 'Key "priority" not found in op')
    with pytest.raises(PolicyError, match="Parameter does not exist"):
        broker.clear_parameter("vhost-limits", "limits")
    with pytest.raises(PolicyError, match="component shovel not found"):
        broker.set_parameter("shovel", "s", {"src-uri": "amqp://"})
    broker.set_parameter("vhost-limits", "limits", {"max-connections": 2})
    assert broker.list_vhost_limits() == {"max-connections": 2}
    assert broker.parameters() == [{"vhost": "/", "component": "vhost-limits",
                                    "name": "limits", "value": {"max-connections": 2}}]


# -- feature flags -----------------------------------------------------------------------------

#: RabbitMQ 3.10.8's (checked live). The reference lists the management agent's two flags
#: ``disabled``: its plugin was enabled after the node first started, and a flag a plugin
#: brings later stays off until enabled (a node that starts with the plugin enables it).
#: embroker counts both metrics (``get_empty``, ``drop_unroutable`` in its statistics), so
#: they are enabled there.
FEATURE_FLAGS = [
    ("classic_mirrored_queue_version", "Support setting version for classic mirrored queues",
     "", "rabbit"),
    ("drop_unroutable_metric", "Count unroutable publishes to be dropped in stats", "",
     "rabbitmq_management_agent"),
    ("empty_basic_get_metric", "Count AMQP `basic.get` on empty queues in stats", "",
     "rabbitmq_management_agent"),
    ("implicit_default_bindings",
     "Default bindings are now implicit, instead of being stored in the database", "",
     "rabbit"),
    ("maintenance_mode_status", "Maintenance mode status", "", "rabbit"),
    ("quorum_queue", "Support queues of type `quorum`",
     "https://www.rabbitmq.com/quorum-queues.html", "rabbit"),
    ("stream_queue", "Support queues of type `stream`", "https://www.rabbitmq.com/stream.html",
     "rabbit"),
    ("user_limits", "Configure connection and channel limits for a user", "", "rabbit"),
    ("virtual_host_metadata", "Virtual host metadata (description, tags, etc)", "", "rabbit"),
]


def _feature_flags_scenario(base: str) -> list[Any]:
    api = _api(base)
    status, flags = api("GET", "/feature-flags", None)
    seen: list[Any] = [status, sorted([f["name"], f["desc"], f["doc_url"], f["provided_by"]]
                                      for f in flags),
                       sorted(map(list, {(f["stability"], f["provided_by"] == "rabbit"
                                          and f["state"]) for f in flags}), key=str)]
    for name in ("quorum_queue", "no_such_flag"):  # (never a flag that is off: it would stay on)
        seen.append([name, list(api("PUT", f"/feature-flags/{name}/enable", {}))])
    return seen


def test_feature_flags_are_rabbitmqs_and_enabling_one_is_answered_as_there(
        served: Server) -> None:
    for base in _both(served):
        assert _feature_flags_scenario(base) == [
            200, [list(flag) for flag in FEATURE_FLAGS],
            [["stable", "enabled"], ["stable", False]],
            ["quorum_queue", [204, None]],
            ["no_such_flag", _refused("unsupported")]], base
    api = _api(served.management_url + "api")
    assert {f["state"] for f in api("GET", "/feature-flags", None)[1]} == {"enabled"}


# -- authentication attempts ------------------------------------------------------------------

def _attempts_scenario(base: str, amqp_url: str) -> list[Any]:
    """What a monitor reads of the attempts: the rows' fields, the protocols, and that a
    failed HTTP login and an AMQP login were counted (the reference's counts are the whole
    node's, so only increases are compared)."""
    api = _api(base)
    node = api("GET", "/nodes", None)[1][0]["name"]
    where = f"/auth/attempts/{urllib.parse.quote(node, safe='')}"
    before = {r["protocol"]: r for r in api("GET", where, None)[1]}
    _api(base, "guest", "wrong")("GET", "/overview", None)
    parts = urllib.parse.urlsplit(amqp_url)
    pika.BlockingConnection(pika.ConnectionParameters(
        parts.hostname, parts.port, "/", pika.PlainCredentials("guest", "guest"))).close()
    status, rows = api("GET", where, None)
    after = {r["protocol"]: r for r in rows}

    def grew(protocol: str, field: str) -> bool:
        return bool(after[protocol][field] > before.get(protocol, {}).get(field, 0))

    return [status, sorted({tuple(sorted(r)) for r in rows}),
            grew("http", "auth_attempts_failed"), grew("http", "auth_attempts_succeeded"),
            grew("amqp091", "auth_attempts_succeeded"),
            all(r["auth_attempts"] == r["auth_attempts_failed"] + r["auth_attempts_succeeded"]
                for r in rows),
            list(api("GET", f"{where}/source", None)),
            list(api("GET", "/auth/attempts/nobody@nowhere", None)),
            list(api("GET", "/auth/attempts/nobody@nowhere/source", None))]


def test_authentication_attempts_are_counted_per_protocol_as_rabbitmq_counts_them(
        served: Server) -> None:
    expected = [200, [("auth_attempts", "auth_attempts_failed", "auth_attempts_succeeded",
                       "protocol")], True, True, True, True, [200, []], NOT_FOUND, NOT_FOUND]
    got = _attempts_scenario(served.management_url + "api", served.url)
    assert json.loads(json.dumps(got)) == json.loads(json.dumps(expected))
    if REFERENCE:
        reference = _attempts_scenario(reference_base(REFERENCE), REFERENCE)
        assert json.loads(json.dumps(reference)) == json.loads(json.dumps(expected))


def test_authentication_attempts_are_exact_and_reset_by_a_monitor() -> None:
    broker = Broker()
    broker.add_user("watcher", "pw", tags=["monitoring"])
    with broker.serve(management=True) as server:
        base = server.management_url + "api"
        where = "/auth/attempts/embroker%40localhost"
        with pytest.raises(pika.exceptions.ProbableAuthenticationError):
            pika.BlockingConnection(pika.URLParameters(
                server.url.replace("guest:guest", "guest:wrong")))
        pika.BlockingConnection(pika.URLParameters(server.url)).close()
        _api(base, "nobody", "pw")("GET", "/overview", None)
        _api(base, "watcher", "pw")("GET", "/vhosts/%2F", None)  # (not an administrator)
        status, rows = _api(base, "watcher", "pw")("GET", where, None)
        assert status == 200
        assert {r["protocol"]: (r["auth_attempts"], r["auth_attempts_failed"],
                                r["auth_attempts_succeeded"]) for r in rows} == {
            "amqp091": (2, 1, 1), "http": (3, 2, 1)}
        assert list(_api(base, "watcher", "pw")("DELETE", where, None)) == [204, None]
        # (the reading request's own login counts before it reads, as RabbitMQ's)
        assert list(_api(base, "watcher", "pw")("GET", where, None)) == [200, [
            {"protocol": "http", "auth_attempts": 1, "auth_attempts_failed": 0,
             "auth_attempts_succeeded": 1}]]
        assert server.errors == []


def test_authentication_attempts_by_source_are_kept_only_when_tracked_and_bounded() -> None:
    attempts = AuthAttempts()
    attempts.record("amqp091", True, address="10.0.0.1", user="u")
    assert attempts.by_source() == []
    attempts.track_sources = True
    attempts.record("amqp091", False, address="10.0.0.1", user="u")
    attempts.record("amqp10", True)  # (RabbitMQ 3.10's AMQP 1.0: no address, no user)
    assert attempts.by_source() == [
        {"remote_address": "10.0.0.1", "username": "u", "protocol": "amqp091",
         "auth_attempts": 1, "auth_attempts_failed": 1, "auth_attempts_succeeded": 0}]
    for n in range(AuthAttempts.MAX_SOURCES + 5):
        attempts.record("stream", True, address=f"10.1.{n // 256}.{n % 256}", user="u")
    assert len(attempts.by_source()) == AuthAttempts.MAX_SOURCES
    assert attempts.by_protocol()[-1] == {
        "protocol": "stream", "auth_attempts": AuthAttempts.MAX_SOURCES + 5,
        "auth_attempts_failed": 0, "auth_attempts_succeeded": AuthAttempts.MAX_SOURCES + 5}
