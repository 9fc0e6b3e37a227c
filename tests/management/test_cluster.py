"""The management API of a cluster (``Broker(nodes=3)``): every node in ``/api/nodes``, each
queue's node, leader, members and online members from its placement, each vhost's
``cluster_state``, as a 3-node RabbitMQ 3.10.8 shows them (recorded live with one node, then
two, stopped by ``rabbitmqctl stop_app``: /work/notes/clustersurf/probe_surfaces.py and
probe_down.py). Nodes stop by :meth:`Node.stop <embroker.model.Node.stop>`; a replicated queue
whose leader is down (no majority left to elect another, which the model does not reach yet) is
made by marking its leader's node not running."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import embroker
from embroker.management import ManagementAPI, Request
from embroker.model import Broker


def _get(broker: Broker, path: str) -> tuple[int, Any]:
    """GET ``path`` (after ``/api``, a query after ``?``) as guest."""
    path, _, query = path.partition("?")
    answer = ManagementAPI(broker)(Request(
        "GET", "/api" + path, dict(urllib.parse.parse_qsl(query)),
        {"authorization": "Basic Z3Vlc3Q6Z3Vlc3Q="}))
    body = answer.content()
    return answer.status, json.loads(body) if body else None


def _cluster() -> Broker:
    """Three nodes; from a connection on the second one, a classic queue, a quorum queue of
    three and one of two members, a stream on every node and one on one node (the live
    recording's queues)."""
    broker = Broker(nodes=3)
    channel = broker.open_connection(node=broker.nodes[1]).open_channel(1)
    channel.queue_declare("c", durable=True)
    channel.queue_declare("qq", durable=True, arguments={"x-queue-type": "quorum"})
    channel.queue_declare("qq2", durable=True, arguments={
        "x-queue-type": "quorum", "x-quorum-initial-group-size": 2})
    channel.queue_declare("st", durable=True, arguments={"x-queue-type": "stream"})
    channel.queue_declare("st1", durable=True, arguments={
        "x-queue-type": "stream", "x-initial-cluster-size": 1})
    return broker


def _queue(broker: Broker, name: str) -> dict[str, Any]:
    status, found = _get(broker, "/queues/%2F/" + name)
    assert status == 200
    return {key: found[key] for key in ("node", "leader", "members", "online", "readers",
                                        "open_files") if key in found}


def test_api_nodes_lists_every_node_and_a_stopped_one_with_only_the_fields_rabbitmq_keeps(
) -> None:
    """rabbit_mgmt_wm_nodes:all_nodes_raw/0: every node of the cluster, a disc node, running
    or not; a node whose RabbitMQ is stopped has no statistics, so only its name, type,
    running and no cluster links (checked live)."""
    broker = Broker(nodes=3)
    status, nodes = _get(broker, "/nodes")
    assert status == 200
    assert [(n["name"], n["type"], n["running"]) for n in nodes] == [
        ("embroker@localhost", "disc", True), ("embroker-2@localhost", "disc", True),
        ("embroker-3@localhost", "disc", True)]
    assert set(nodes[1]) == set(nodes[0])  # (a running node: the figures the one node had)
    broker.nodes[2].stop()
    _status, nodes = _get(broker, "/nodes")
    assert [n["running"] for n in nodes] == [True, True, False]
    assert nodes[2] == {"name": "embroker-3@localhost", "type": "disc", "running": False,
                        "cluster_links": []}


def test_api_nodes_node_finds_any_node_of_the_cluster_and_no_other() -> None:
    broker = Broker(nodes=["rabbit@a", "rabbit@b"])
    broker.nodes[1].stop()
    assert _get(broker, "/nodes/rabbit@b") == (200, {
        "name": "rabbit@b", "type": "disc", "running": False, "cluster_links": []})
    status, found = _get(broker, "/nodes/rabbit@a")
    assert (status, found["name"], found["running"]) == (200, "rabbit@a", True)
    assert _get(broker, "/nodes/rabbit@c")[0] == 404


def test_a_single_node_broker_lists_its_one_node_as_before() -> None:
    broker = Broker()
    _status, nodes = _get(broker, "/nodes")
    assert [(n["name"], n["running"]) for n in nodes] == [("embroker@localhost", True)]
    assert _get(broker, "/nodes/embroker@localhost")[1] == nodes[0]
    assert _get(broker, "/vhosts/%2F")[1]["cluster_state"] == {"embroker@localhost": "running"}


def test_a_queues_node_is_a_classic_queues_home_and_a_replicated_queues_leader() -> None:
    """rabbit_mgmt_format: strip_queue_pids/1 names a classic queue's node after its pid's
    (its home), format_queue_stats({leader, L}) a quorum queue's or stream's after its
    leader; each declared from the second node lives there (checked live)."""
    broker = _cluster()
    second = "embroker-2@localhost"
    assert {name: _queue(broker, name)["node"] for name in ("c", "qq", "qq2", "st", "st1")} == \
        dict.fromkeys(("c", "qq", "qq2", "st", "st1"), second)
    assert set(_queue(broker, "c")) == {"node"}  # (no leader, members or online)
    other = broker.open_connection(node=broker.nodes[2]).open_channel(1)
    other.queue_declare("c3")
    assert _queue(broker, "c3")["node"] == "embroker-3@localhost"


def test_a_quorum_queue_shows_its_leader_members_and_the_members_that_run() -> None:
    """rabbit_quorum_queue.erl info keys: leader (the leader's node while its Ra server is
    alive, else '', which the API writes as null), members (the queue's nodes), online (the
    members whose server is alive, in the members' order), open_files (asked of every
    member). Checked live: after a member's node stopped, online lost it, members and
    open_files kept it; with the leader's node and another stopped, leader was null."""
    broker = _cluster()
    placement = broker.queues["qq"].placement
    members = [m.name for m in placement.members]
    assert placement.leader.name == "embroker-2@localhost"
    assert sorted(members) == ["embroker-2@localhost", "embroker-3@localhost",
                               "embroker@localhost"]
    assert _queue(broker, "qq") == {
        "node": "embroker-2@localhost", "leader": "embroker-2@localhost", "members": members,
        "online": members, "open_files": dict.fromkeys(members, 0)}
    follower = next(m for m in placement.members if m is not placement.leader)
    follower.stop()
    shown = _queue(broker, "qq")
    assert (shown["members"], shown["online"]) == (
        members, [m for m in members if m != follower.name])
    assert shown["open_files"] == dict.fromkeys(members, 0)
    assert len(_queue(broker, "qq2")["members"]) == 2
    broker.queues["qq"].placement.leader.stop()  # (one member of three left: no leader)
    shown = _queue(broker, "qq")
    assert shown["leader"] is None
    assert len(shown["online"]) == 1
    follower.start()  # (a majority again: a leader again)
    shown = _queue(broker, "qq")
    assert shown["leader"] == shown["node"] == broker.queues["qq"].placement.leader.name


def test_a_stream_shows_its_members_online_in_reverse_order_of_name_and_readers_per_member(
) -> None:
    """rabbit_stream_queue.erl info keys: members (the stream's nodes), online (folded from
    the coordinator's map of members onto a list: reverse order of name), readers (asked of
    every member); no leader key. Checked live: online
    [embroker-ref-3, embroker-ref-2, embroker-ref-1]."""
    broker = _cluster()
    members = [m.name for m in broker.queues["st"].placement.members]
    shown = _queue(broker, "st")
    assert shown == {"node": "embroker-2@localhost", "members": members,
                     "online": ["embroker@localhost", "embroker-3@localhost",
                                "embroker-2@localhost"],
                     "readers": dict.fromkeys(members, 0)}
    broker.nodes[2].stop()
    assert _queue(broker, "st")["online"] == ["embroker@localhost", "embroker-2@localhost"]
    assert _queue(broker, "st1") == {"node": "embroker-2@localhost",
                                     "members": ["embroker-2@localhost"],
                                     "online": ["embroker-2@localhost"],
                                     "readers": {"embroker-2@localhost": 0}}


def test_the_listing_of_queues_shows_the_same_placement_as_each_queue() -> None:
    broker = _cluster()
    status, listed = _get(broker, "/queues/%2F")
    assert status == 200
    keys = ("node", "leader", "members", "online", "readers", "open_files")
    for row in listed:
        one = _get(broker, "/queues/%2F/" + urllib.parse.quote(row["name"]))[1]
        assert {k: row[k] for k in keys if k in row} == {k: one[k] for k in keys if k in one}


def test_a_vhosts_cluster_state_names_the_running_nodes_latest_first() -> None:
    """rabbit_vhost:vhost_cluster_state/1 asks rabbit_nodes:all_running(): Mnesia's running
    nodes, the latest to join first; a stopped node is not named (checked live: from
    {n3, n2, n1} to {n2, n1} when n3 stopped)."""
    broker = Broker(nodes=3)
    state = _get(broker, "/vhosts/%2F")[1]["cluster_state"]
    assert list(state.items()) == [("embroker-3@localhost", "running"),
                                   ("embroker-2@localhost", "running"),
                                   ("embroker@localhost", "running")]
    broker.nodes[2].stop()
    assert _get(broker, "/vhosts")[1][0]["cluster_state"] == {
        "embroker-2@localhost": "running", "embroker@localhost": "running"}


def test_a_classic_queue_whose_home_is_stopped_is_listed_down_and_not_found_alone() -> None:
    """Checked live (a durable classic queue homed on a node stopped by stop_app): the
    listing shows its record alone (arguments, auto_delete, durable, exclusive, name, node,
    state down, type, vhost: rabbit_amqqueue:info_down/2), GET of it is 404; back when its
    node starts."""
    broker = _cluster()
    broker.nodes[1].stop()
    _status, listed = _get(broker, "/queues/%2F")
    assert [q for q in listed if q["name"] == "c"] == [{
        "arguments": {}, "auto_delete": False, "durable": True, "exclusive": False,
        "name": "c", "node": "embroker-2@localhost", "state": "down", "type": "classic",
        "vhost": "/"}]
    assert _get(broker, "/queues/%2F/c")[0] == 404
    _status, listed = _get(broker, "/queues?columns=name,state")
    assert {"name": "c", "state": "down"} in listed
    broker.nodes[1].start()
    assert _get(broker, "/queues/%2F/c")[1]["state"] == "running"


# -- the node that answers: the one whose listener the request reached ------------------------

def _http(url: str, path: str) -> tuple[int, Any]:
    """GET ``url`` + ``api/`` + ``path`` over the wire, as guest."""
    request = urllib.request.Request(url + "api/" + path,
                                     headers={"authorization": "Basic Z3Vlc3Q6Z3Vlc3Q="})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as failed:
        return failed.code, json.loads(failed.read())


def test_each_node_listener_answers_as_its_own_node() -> None:
    """The overview's node and its listeners' and contexts' node are the node whose listener
    the request reached (RabbitMQ's management plugin runs on each node and answers as it)."""
    broker = embroker.Broker(nodes=3)
    with broker.serve_nodes(management=True) as servers:
        for server, name in zip(servers, ("embroker@localhost", "embroker-2@localhost",
                                          "embroker-3@localhost"), strict=True):
            status, overview = _http(server.management_url, "overview")
            assert status == 200
            assert overview["node"] == name
            assert {listener["node"] for listener in overview["listeners"]} == {name}
            assert [context["node"] for context in overview["contexts"]] == [name]
            _status, nodes = _http(server.management_url, "nodes")
            assert [bool(n["contexts"]) for n in nodes] == [
                n["name"] == name for n in nodes]  # (the answering node's context alone)


def _answering(broker: Broker, server: Any, path: str) -> tuple[int, Any]:
    answer = ManagementAPI(broker, server)(Request(
        "GET", "/api" + path, {}, {"authorization": "Basic Z3Vlc3Q6Z3Vlc3Q="}))
    return answer.status, json.loads(answer.content())


def test_local_alarms_are_the_answering_node_and_alarms_any_node() -> None:
    """rabbit_mgmt_wm_health_check_local_alarms (v3.10.8): rabbit_alarm:get_local_alarms/1,
    "There are alarms in effect on the node"; ..._alarms: get_alarms/1, every node's, "in the
    cluster"; each alarm names the node that raised it."""
    broker = embroker.Broker(nodes=3)
    with broker.serve_nodes(management=True) as servers:
        broker.set_alarm("disk", node=broker.nodes[1])
        assert _answering(broker, servers[0], "/health/checks/local-alarms") == (
            200, {"status": "ok"})
        assert _answering(broker, servers[1], "/health/checks/local-alarms") == (503, {
            "status": "failed", "reason": "There are alarms in effect on the node",
            "alarms": [{"node": "embroker-2@localhost", "resource": "disk space"}]})
        assert _answering(broker, servers[0], "/health/checks/alarms") == (503, {
            "status": "failed", "reason": "There are alarms in effect in the cluster",
            "alarms": [{"node": "embroker-2@localhost", "resource": "disk space"}]})
        status, _body = _http(servers[1].management_url, "health/checks/local-alarms")
        assert status == 503
        broker.clear_alarm("disk")


def test_api_nodes_shows_each_node_its_own_alarms() -> None:
    broker = Broker(nodes=3)
    broker.set_alarm("memory", node=broker.nodes[2])
    _status, nodes = _get(broker, "/nodes")
    assert [(n["mem_alarm"], n["disk_free_alarm"]) for n in nodes] == [
        (False, False), (False, False), (True, False)]


def test_node_named_paths_answer_for_the_answering_node_alone() -> None:
    """/api/healthchecks/node/{node}, /api/auth/attempts/{node}: the node that answers; another
    node's name is 404, as before."""
    broker = embroker.Broker(nodes=3)
    with broker.serve_nodes(management=True) as servers:
        second = servers[1]
        assert _answering(broker, second, "/healthchecks/node/embroker-2@localhost") == (
            200, {"status": "ok"})
        assert _answering(broker, second, "/healthchecks/node/embroker@localhost")[0] == 404
        assert _answering(broker, second, "/auth/attempts/embroker-2@localhost")[0] == 200


def test_api_nodes_after_a_healed_partition_shows_each_nodes_partitions() -> None:
    """Asked on the first node after the third was cut off and connected again (live on a
    3.10.8 cluster, docs/cluster.md "A network partition"): the third is not running for it, and each
    node lists the nodes it no longer counts."""
    broker = Broker(nodes=3)
    broker.partition([broker.nodes[2]])
    broker.heal()
    status, nodes = _get(broker, "/nodes")
    assert status == 200
    assert [(n["name"], n["running"], n["partitions"]) for n in nodes] == [
        ("embroker@localhost", True, ["embroker-3@localhost"]),
        ("embroker-2@localhost", True, ["embroker-3@localhost"]),
        ("embroker-3@localhost", False, ["embroker@localhost", "embroker-2@localhost"])]
