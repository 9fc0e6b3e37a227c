"""rabbitmqctl on a cluster (``Broker(nodes=3)``): ``cluster_status``, and where queues live
and vhosts run in ``list_queues`` and ``list_vhosts``, as RabbitMQ 3.10.8's tools print them
(tests/control/golden/rabbitmqctl/cluster_status*.json for one node; a 3-node cluster recorded
live with one node, then two, stopped: /work/notes/clustersurf/probe_surfaces.py and
probe_down.py). Nodes stop by :meth:`Node.stop <embroker.model.Node.stop>`."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from embroker import Broker
from embroker.control._ctl import run
from embroker.control._node import Node
from embroker.server import Server

GOLDEN = Path(__file__).parent / "golden" / "rabbitmqctl"
NODE = "rabbit@localhost"


@pytest.fixture(autouse=True)
def _nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBROKER_NODES_DIR", str(tmp_path / "nodes"))
    monkeypatch.setenv("RABBITMQ_NODENAME", NODE)


def _served(broker: Broker) -> Iterator[Node]:
    with Server(broker) as server, Node(broker, server, NODE) as node:
        yield node
        assert server.errors == []


@pytest.fixture
def one() -> Iterator[Node]:
    yield from _served(Broker())


@pytest.fixture
def three() -> Iterator[Node]:
    """Three nodes, the tools' node first; from a connection on the second, a classic queue,
    a quorum queue and a stream."""
    broker = Broker(nodes=3)
    channel = broker.open_connection(node=broker.nodes[1]).open_channel(1)
    channel.queue_declare("c", durable=True)
    channel.queue_declare("qq", durable=True, arguments={"x-queue-type": "quorum"})
    channel.queue_declare("st", durable=True, arguments={"x-queue-type": "stream"})
    yield from _served(broker)


def ctl(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run("rabbitmqctl", list(argv), out=out, err=err)
    assert err.getvalue() == ""
    return code, out.getvalue()


def _golden(case: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / f"{case}.json").read_text())
    return data


def _sections(text: str) -> dict[str, list[str]]:
    """cluster_status's text by section (its bold headings), each section's lines."""
    found: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        heading = re.fullmatch(r"\x1b\[1m(.*)\x1b\[0m", line)
        if heading:
            current = heading[1]
            found[current] = []
        elif line and current:
            found[current].append(line)
    return found


def test_cluster_status_of_one_node_prints_rabbitmqs_sections(one: Node) -> None:
    """cluster_status_command.ex (v3.10.8), golden cluster_status: the banner and the same
    sections in the same order; the lines but the cluster's name (the reference's own),
    the Erlang version (embroker has none), the listeners' ports and which listeners, and the
    two statistics flags RabbitMQ leaves disabled (embroker keeps those statistics: enabled,
    as /api/feature-flags says)."""
    expected = _golden("cluster_status")
    code, out = ctl("cluster_status")
    assert code == expected["exit"] == 0
    assert out.splitlines()[0] == expected["stdout"].splitlines()[0]
    ours, theirs = _sections(out), _sections(expected["stdout"])
    assert list(ours) == list(theirs)
    for same in ("Disk Nodes", "Running Nodes", "Maintenance status", "Alarms",
                 "Network Partitions"):
        assert ours[same] == theirs[same], same
    assert ours["Basics"] == ["Cluster name: embroker"]
    assert ours["Versions"] == [f"{NODE}: RabbitMQ 3.10.8 on Erlang none (embroker is Python)"]
    assert [line.split(", state:")[0] for line in ours["Feature flags"]] == [
        line.split(", state:")[0] for line in theirs["Feature flags"]]
    assert f"Node: {NODE}, interface: 127.0.0.1, port: {one.server.port}, protocol: amqp, " \
           "purpose: AMQP 0-9-1 and AMQP 1.0" in ours["Listeners"]


def test_cluster_status_json_has_rabbitmqs_keys_and_shapes(one: Node) -> None:
    expected = json.loads(_golden("cluster_status_json")["stdout"])
    code, out = ctl("cluster_status", "--formatter", "json")
    assert code == 0
    assert out.startswith('{"alarms":[],"cluster_name":')  # (keys in order, compact)
    got = json.loads(out)
    assert list(got) == list(expected)
    for same in ("alarms", "disk_nodes", "maintenance_status", "partitions", "ram_nodes",
                 "running_nodes"):
        assert got[same] == expected[same], same
    assert [{k: v for k, v in flag.items() if k != "state"} for flag in got["feature_flags"]] \
        == [{k: v for k, v in flag.items() if k != "state"} for flag in expected["feature_flags"]]
    assert list(got["listeners"]) == [NODE]
    assert set(got["listeners"][NODE][0]) == set(expected["listeners"][NODE][0])
    assert got["versions"] == {NODE: {"erlang_version": "none (embroker is Python)",
                                      "rabbitmq_name": "RabbitMQ", "rabbitmq_version": "3.10.8"}}


def test_cluster_status_lists_every_node_and_of_the_running_ones_their_versions(
        three: Node) -> None:
    """cluster_status_command.ex: the disc nodes (all), the running nodes (Mnesia's: the
    latest to join first in JSON, sorted in the text), and only of those the versions,
    maintenance status and listeners (each node's own: the cluster's other nodes have none
    of their own yet in embroker); checked live on a 3-node cluster."""
    names = [NODE, "embroker-2@localhost", "embroker-3@localhost"]
    status = json.loads(ctl("cluster_status", "--formatter", "json")[1])
    assert status["disk_nodes"] == names
    assert status["running_nodes"] == names[::-1]
    assert list(status["versions"]) == sorted(names)
    assert status["maintenance_status"] == dict.fromkeys(sorted(names), "not under maintenance")
    assert status["listeners"]["embroker-2@localhost"] == []
    assert {x["node"] for x in status["listeners"][NODE]} == {NODE}
    three.broker.nodes[2].stop()
    status = json.loads(ctl("cluster_status", "--formatter", "json")[1])
    assert status["disk_nodes"] == names
    assert status["running_nodes"] == ["embroker-2@localhost", NODE]
    assert set(status["versions"]) == set(status["listeners"]) == set(
        status["maintenance_status"]) == {NODE, "embroker-2@localhost"}
    sections = _sections(ctl("cluster_status")[1])
    assert sections["Disk Nodes"] == sorted(names)
    assert sections["Running Nodes"] == ["embroker-2@localhost", NODE]
    assert sections["Maintenance status"] == [
        "Node: embroker-2@localhost, status: not under maintenance",
        f"Node: {NODE}, status: not under maintenance"]


def test_cluster_status_names_an_alarm_by_its_node(one: Node) -> None:
    """RabbitMQ's CLI Core.Alarms: alarm_lines/2 and alarm_maps/1."""
    assert ctl("set_vm_memory_high_watermark", "0")[0] == 0
    one.broker.check_resources()
    try:
        assert _sections(ctl("cluster_status")[1])["Alarms"] == [f"Memory alarm on node {NODE}"]
        assert json.loads(ctl("cluster_status", "--formatter", "json")[1])["alarms"] == [
            {"node": NODE, "resource": "memory", "type": "resource_limit"}]
    finally:
        ctl("set_vm_memory_high_watermark", "0.4")


def _queues(*columns: str) -> dict[str, dict[str, Any]]:
    out = ctl("list_queues", *columns, "--formatter", "json")[1]
    return {row["name"]: row for row in json.loads(out)}


def test_list_queues_shows_where_each_queue_lives(three: Node) -> None:
    """rabbit_amqqueue:emit_info_local/3 (each node lists the queues local to it: a classic
    queue's pid on its home, a quorum queue's on its leader); rabbit_quorum_queue.erl and
    rabbit_stream_queue.erl info keys: leader, members, online (a stream's in reverse order
    of name), and no pid for a stream. Checked live."""
    second = "embroker-2@localhost"
    qq = [m.name for m in three.broker.queues["qq"].placement.members]
    st = [m.name for m in three.broker.queues["st"].placement.members]
    rows = _queues("name", "pid", "leader", "members", "online")
    assert {k: rows["c"][k] for k in ("leader", "members", "online")} == dict.fromkeys(
        ("leader", "members", "online"), "")
    assert {k: rows["qq"][k] for k in ("leader", "members", "online")} == {
        "leader": second, "members": qq, "online": qq}
    assert {k: rows["st"][k] for k in ("pid", "leader", "members", "online")} == {
        "pid": "", "leader": second, "members": st,
        "online": sorted(st, reverse=True)}
    table = ctl("list_queues", "name", "pid", "leader", "members", "online")[1]
    assert f"c\t<{second}." in table
    assert f"qq\t<{second}." in table
    assert f"st\t\t{second}\t[{', '.join(st)}]\t[{', '.join(sorted(st, reverse=True))}]" in table
    follower = next(n for n in three.broker.nodes[2:] if n.name in qq)
    follower.stop()
    assert _queues("name", "online")["qq"]["online"] == [n for n in qq if n != follower.name]


def test_list_vhosts_cluster_state_is_a_list_of_running_nodes_as_rabbitmq_prints_it(
        three: Node) -> None:
    """rabbit_vhost:vhost_cluster_state/1 (the running nodes, the latest to join first) is a
    list of {Node, State}: the table formatter prints it as such, a node name quoted where an
    atom must be, and the JSON formatter as an object (checked live:
    ``[{'embroker-ref-2e5e-3@localhost', running}, ...]``; golden list_vhosts_cols1 for one
    node: ``[{rabbit@localhost, running}]``)."""
    table = ctl("list_vhosts", "name", "cluster_state")[1]
    assert table.splitlines()[-1] == ("/\t[{'embroker-3@localhost', running}, "
                                      "{'embroker-2@localhost', running}, "
                                      "{rabbit@localhost, running}]")
    rows = json.loads(ctl("list_vhosts", "name", "cluster_state", "--formatter", "json")[1])
    assert list(rows[0]["cluster_state"].items()) == [
        ("embroker-3@localhost", "running"), ("embroker-2@localhost", "running"),
        (NODE, "running")]
    three.broker.nodes[1].stop()
    assert ctl("list_vhosts", "name", "cluster_state")[1].splitlines()[-1] == (
        "/\t[{'embroker-3@localhost', running}, {rabbit@localhost, running}]")


def test_list_vhosts_cluster_state_of_one_node_is_the_golden_ones(one: Node) -> None:
    case = _golden("list_vhosts_cols1")  # (columns: name, tracing, cluster_state, ...)

    def states(text: str) -> list[str]:
        return [line.split("\t")[2] for line in text.splitlines() if line.startswith("/\t")]

    assert states(ctl(*case["argv"][1:])[1]) == states(case["stdout"]) == [
        "[{rabbit@localhost, running}]"]


def test_list_queues_shows_a_queue_whose_home_is_stopped_as_down_and_filters_by_where(
        three: Node) -> None:
    """list_queues_command.ex: --offline lists the down queues (rabbit_amqqueue:
    emit_info_down/4: DOWN_KEYS, the others ''), --online those on running nodes, --local
    those this node homes or leads, neither both (the down first). Checked live: a durable
    classic queue homed on a stopped node, ``dq	rabbit_classic_queue	down	<pid>``, its
    messages ''."""
    second = "embroker-2@localhost"
    three.broker.open_connection().open_channel(1).queue_declare("here")
    three.broker.nodes[1].stop()  # (qq and st: led by a running member now)
    rows = _queues("name", "type", "state", "pid", "messages", "leader", "members", "online")
    assert list(rows) == ["c", "qq", "st", "here"]
    assert {k: v for k, v in rows["c"].items() if k != "pid"} == {
        "name": "c", "type": "rabbit_classic_queue", "state": "down", "messages": "",
        "leader": "", "members": "", "online": ""}
    assert f"c\trabbit_classic_queue\tdown\t<{second}." in ctl(
        "list_queues", "name", "type", "state", "pid")[1]
    assert list(_queues("name", "--offline")) == ["c"]
    assert list(_queues("name", "--online")) == ["qq", "st", "here"]
    led_here = [name for name in ("qq", "st")
                if three.broker.queues[name].placement.leader.name == NODE]
    assert list(_queues("name", "--local")) == [*led_here, "here"]


def test_cluster_status_needs_the_nodes_application_running(one: Node) -> None:
    """RequiresRabbitAppRunning (rabbitmqctl.ex: format_validation_error(
    :rabbit_app_is_stopped)); checked live: on a node after stop_app, exit 64."""
    one.server.stop_app()
    out, err = io.StringIO(), io.StringIO()
    assert run("rabbitmqctl", ["cluster_status"], out=out, err=err) == 64
    assert (out.getvalue(), err.getvalue()) == ("", (
        "Error: this command requires the 'rabbit' app to be running on the target node. "
        "Start it with 'rabbitmqctl start_app'.\n"))
    one.server.start_app()
    assert ctl("cluster_status")[0] == 0


def _diagnostics(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run("rabbitmq-diagnostics", list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_check_local_alarms_sees_its_own_node_and_alarms_every_node(three: Node) -> None:
    """rabbitmq-diagnostics check_local_alarms asks rabbit_alarm:get_local_alarms/0 (the
    target node's alone); alarms asks get_alarms/0 (every node's, each named by its node:
    RabbitMQ's CLI Core.Alarms alarm_lines/2); cluster_status lists every running node's."""
    broker = three.broker
    broker.set_alarm("disk", node=broker.nodes[1])
    try:
        code, out, _err = _diagnostics("check_local_alarms")
        assert code == 0
        assert out.strip().endswith(f"Node {NODE} reported no local alarms")
        assert _diagnostics("alarms")[1].splitlines()[-1] == (
            "disk alarm on node embroker-2@localhost")
        assert json.loads(ctl("cluster_status", "--formatter", "json")[1])["alarms"] == [
            {"node": "embroker-2@localhost", "resource": "disk", "type": "resource_limit"}]
        broker.set_alarm("memory", node=broker.nodes[0])
        code, _out, err = _diagnostics("check_local_alarms")
        assert code == 69
        assert f"Node {NODE} reported an alarm: memory" in err
    finally:
        broker.clear_alarm("disk")
        broker.clear_alarm("memory")


def test_cluster_status_after_a_healed_partition_lists_it_as_rabbitmq_does(three: Node) -> None:
    """A node cut off and connected again (``ignore``): the tools' node counts only its side
    as running and lists, for each of them, the node it cannot communicate with (live on a
    3.10.8 cluster, docs/cluster.md "A network partition": "Node probe1@localhost cannot communicate
    with probe3@localhost")."""
    broker = three.broker
    broker.partition([broker.nodes[2]])
    broker.heal()
    code, out = ctl("cluster_status")
    assert code == 0
    sections = _sections(out)
    assert sections["Running Nodes"] == sorted(n.name for n in broker.nodes[:2])
    assert sections["Network Partitions"] == [
        f"Node {node.name} cannot communicate with {broker.nodes[2].name}"
        for node in sorted(broker.nodes[:2], key=lambda n: n.name)]
    broker.nodes[2].stop()
    broker.nodes[2].start()
    assert _sections(ctl("cluster_status")[1])["Network Partitions"] == ["(none)"]


def test_join_cluster_needs_the_app_stopped_and_a_member_of_its_own_cluster_is_joined(
        three: Node) -> None:
    """join_cluster_command.ex (v3.10.8, live): a running node is refused before the banner
    (64, the usage); a member of its own cluster: "The node is already a member of this
    cluster", 0. A node of another embroker process: 69, and why."""
    out, err = io.StringIO(), io.StringIO()
    code = run("rabbitmqctl", ["join_cluster", three.broker.nodes[1].name], out=out, err=err)
    assert code == 64
    assert err.getvalue().startswith(
        "Error: this command requires the 'rabbit' app to be stopped on the target node. "
        "Stop it with 'rabbitmqctl stop_app'.\nArguments given:\n\tjoin_cluster ")
    assert "join_cluster [--disc|--ram] <existing_cluster_member>" in err.getvalue()
    assert out.getvalue() == ""
    assert ctl("stop_app")[0] == 0
    assert ctl("join_cluster", three.broker.nodes[1].name) == (0, (
        f"Clustering node {NODE} with {three.broker.nodes[1].name}\n"
        "The node is already a member of this cluster\n"))
    out, err = io.StringIO(), io.StringIO()
    assert run("rabbitmqctl", ["join_cluster", "rabbit@elsewhere"], out=out, err=err) == 69
    assert "embroker's nodes form a cluster within one process" in err.getvalue()


def test_forget_cluster_node_removes_a_stopped_node_its_classic_queues_and_members(
        three: Node) -> None:
    """forget_cluster_node_command.ex (v3.10.8, live): a running node is refused ("RabbitMQ on
    node N must be stopped with 'rabbitmqctl -n N stop_app' before it can be removed", 69);
    a stopped one leaves the cluster: its durable classic queues go (forget_all_durable), its
    quorum members too (the tool's rabbit_quorum_queue:shrink_all/1; no stream's)."""
    broker = three.broker
    second = broker.nodes[1]
    out, err = io.StringIO(), io.StringIO()
    assert run("rabbitmqctl", ["forget_cluster_node", second.name], out=out, err=err) == 69
    assert err.getvalue() == (f"Error:\nRabbitMQ on node {second.name} must be stopped with "
                              f"'rabbitmqctl -n {second.name} stop_app' before it can be "
                              "removed\n")
    second.stop()
    assert ctl("forget_cluster_node", second.name) == (
        0, f"Removing node {second.name} from the cluster\n")
    assert second not in broker.nodes
    assert "c" not in broker.queues  # (homed on it)
    assert second not in broker.queues["qq"].placement.members
    assert second in broker.queues["st"].placement.members  # (the tool shrinks no stream)
    with pytest.raises(RuntimeError, match="inconsistent_cluster"):
        second.start()
    assert ctl("stop_app")[0] == 0
    err = io.StringIO()
    assert run("rabbitmqctl", ["reset"], out=io.StringIO(), err=err) == 69
    assert "cannot reset one node alone" in err.getvalue()  # (its cluster would lose it)
