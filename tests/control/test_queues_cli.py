"""``rabbitmq-queues`` against a three-node embroker cluster, compared with what RabbitMQ 3.10.8's
own tool printed on a three-node RabbitMQ cluster for the same session
(:mod:`tests.control.queues_scenario`; golden/rabbitmq-queues/, recorded by
record_queues_golden.py): banners, tables, JSON, refusals and exit codes. The Raft indexes
and terms of ``quorum_status`` vary from run to run (and embroker keeps no Raft log) and are
masked; everything else is compared exactly."""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from embroker import Broker
from embroker.control._ctl import run
from embroker.control._format import pretty_table
from embroker.control._node import Node
from embroker.control._shims import write_shims

from .queues_scenario import CASES, SCENARIO_NODES, Declare, Publish, replay

GOLDEN = Path(__file__).parent / "golden"
#: quorum_status' columns that vary (and that embroker cannot know: it keeps no Raft log).
MASKED = ("Log Index", "Commit Index", "Snapshot Index", "Term")
_CELL = "\x1b(0x\x1b(B"


def golden(scenario: str, case: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (GOLDEN / "rabbitmq-queues" / scenario / f"{case}.json").read_text())
    return data


class Embroker:
    """A broker (of three nodes, or one), a control node per node, as a scenario's cluster."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def declare(self, step: Declare) -> None:
        connection = self.broker.open_connection(step.vhost, node=self.broker.nodes[step.node])
        connection.open_channel(1).queue_declare(step.queue, durable=True,
                                                 arguments=step.arguments)
        connection.close()

    def publish(self, step: Publish) -> None:
        channel = self.broker.open_connection(node=self.broker.nodes[step.node]).open_channel(1)
        for index in range(step.count):
            channel.basic_publish("", step.queue, f"m{index}".encode())

    def add_vhost(self, name: str) -> None:
        self.broker.add_vhost(name)
        self.broker.set_permissions("guest", ".*", ".*", ".*", vhost=name)

    def stop_app(self, node: int) -> None:
        out, err = io.StringIO(), io.StringIO()
        assert run("rabbitmqctl", ["-n", self.broker.nodes[node].name, "stop_app"], out=out,
                   err=err) == 0, err.getvalue()

    def settle(self, seconds: float) -> None:
        """Nothing to wait for: embroker's changes are done when the command answers."""

    def tool(self, node: str, args: tuple[str, ...]) -> tuple[int, str, str]:
        return queues("-n", node, *args)


def queues(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run("rabbitmq-queues", list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Callable[[str], dict[str, dict[str, Any]]]]:
    """Each scenario replayed once on embroker (on first use): each case's record."""
    done: dict[str, Any] = {}
    with pytest.MonkeyPatch.context() as patch, ExitStack() as stack:
        patch.setenv("EMBROKER_NODES_DIR", str(tmp_path_factory.mktemp("nodes")))

        def session(scenario: str) -> dict[str, dict[str, Any]]:
            if scenario not in done:
                names = SCENARIO_NODES[scenario]
                patch.setenv("RABBITMQ_NODENAME", names[0])
                broker = Broker(nodes=len(names))
                servers = stack.enter_context(broker.serve_nodes())
                for server, name in zip(servers, names, strict=True):
                    stack.enter_context(Node(broker, server, name))
                done[scenario] = replay(Embroker(broker), scenario)
            found: dict[str, dict[str, Any]] = done[scenario]
            return found
        yield session


def _masked_table(lines: list[str]) -> list[Any]:
    """A pretty table's text as its rows of cells (the rules dropped), the masked columns'
    values replaced by ``#``, the rows after the titles sorted (a queue's members are in the
    order the nodes joined the cluster, two of them at once in the reference's boot)."""
    rows = [[cell.strip() for cell in line.split(_CELL)[1:-1]] for line in lines
            if line.startswith(_CELL)]
    if not rows:
        return lines
    masked = [index for index, title in enumerate(rows[0])
              if re.sub(r"\x1b\[[01]m", "", title) in MASKED]
    return [rows[0], *sorted([("#" if i in masked else cell) for i, cell in enumerate(row)]
                             for row in rows[1:])]


_STAMP = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} ", re.MULTILINE)
#: RabbitMQ's crash on a stream (case_clause): its queue record, which embroker elides.
_RECORD = re.compile(r'(\{:amqqueue, \{:resource, "[^"]*", :queue, "[^"]*"\}), .*\}(\}\}\}, \[)',
                     re.DOTALL)


def _masked_err(text: str) -> list[str]:
    """stderr's lines with what varies masked: a node's log line's time, a crash's queue
    record, their order (the queues a check lists come in RabbitMQ's hash order)."""
    return sorted(_RECORD.sub(r"\1, ...\2", _STAMP.sub("HH:MM:SS.mmm ", text)).split("\n"))


def _elected(rows: list[Any]) -> list[Any]:
    """quorum_status' rows with the running members' Raft State as ``member`` and how many
    lead (which member Ra elects after a leader's node stops is whichever times out first);
    rebalance's tally as its totals (which node ends with which queues depends on the order
    of RabbitMQ's queue list)."""
    if rows and isinstance(rows[0], list) and "Node name" in "".join(rows[0]):
        return [sum(int(row[1]) for row in rows[1:]), sum(int(row[2]) for row in rows[1:])]
    if not rows or not isinstance(rows[0], list) or "Raft State" not in "".join(rows[0]):
        return rows
    state = next(i for i, title in enumerate(rows[0]) if "Raft State" in title)
    leaders = sum(1 for row in rows[1:] if row[state] == "leader")
    return [rows[0], *([*row[:state], "member" if row[state] in ("leader", "follower")
                        else row[state], *row[state + 1:]] for row in rows[1:]),
            f"leaders: {leaders}"]


def _masked(text: str, *, elected: bool = False) -> Any:
    """``text`` with what varies masked: JSON's masked keys, a pretty table's masked columns
    (and who leads after an election, when ``elected``), the order of a tab-separated
    table's rows (RabbitMQ lists queues in its tables' hash order)."""
    stripped = text.strip()
    if stripped.startswith(("[", "{")):
        try:
            value = json.loads(stripped)
        except ValueError:
            pass
        else:
            if elected and isinstance(value, dict) and "value" in value:  # (rebalance's)
                return [sum(row[1][1] for row in value["value"]),
                        sum(row[2][1] for row in value["value"])]
            rows = value if isinstance(value, list) else [value]
            return sorted((json.dumps({k: ("#" if k in MASKED else v) for k, v in row.items()})
                           if isinstance(row, dict) else json.dumps(row)) for row in rows)
    lines = text.split("\n")
    banner = [line for line in lines if line and not line.startswith("\x1b(0")]
    table = _masked_table(lines)
    return banner[:2] + sorted(banner[2:]), _elected(table) if elected else table


#: The cases after a leader's node stopped (Ra elects any running member) or a rebalance
#: (which member takes a queue depends on the order RabbitMQ lists its queues: its tables' hash
#: order, which differs from run to run).
ELECTED = ("quorum_status_member_down", "quorum_status_after_rebalance", "rebalance_quorum",
           "rebalance_all", "rebalance_json")
#: What embroker's rabbitmq-queues has not: RabbitMQ's help lists them, embroker's does not.
MISSING_COMMANDS = ("autocomplete", "peek", "stream_status", "reclaim_quorum_memory")
RECORDED = [scenario for scenario in CASES if (GOLDEN / "rabbitmq-queues" / scenario).is_dir()]


@pytest.mark.differential
@pytest.mark.parametrize(("scenario", "case"), [
    (scenario, case) for scenario in RECORDED for case in sorted(CASES[scenario])
    if case != "help"])
def test_rabbitmq_queues_prints_what_rabbitmq_printed(
        scenario: str, case: str, sessions: Callable[[str], dict[str, dict[str, Any]]]) -> None:
    expected, found = golden(scenario, case), sessions(scenario)[case]
    assert found["argv"] == expected["argv"]
    elected = case in ELECTED
    assert (found["exit"], _masked(found["stdout"], elected=elected),
            _masked_err(found["stderr"])) == (
        expected["exit"], _masked(expected["stdout"], elected=elected),
        _masked_err(expected["stderr"]))


@pytest.mark.parametrize("scenario", RECORDED)
def test_every_golden_file_is_a_case_of_its_scenario(scenario: str) -> None:
    assert sorted(p.stem for p in (GOLDEN / "rabbitmq-queues" / scenario).glob("*.json")) == \
        sorted(CASES[scenario])


def test_the_pretty_table_formatter_draws_rabbitmqs_boxes() -> None:
    # RabbitMQ.CLI.Formatters.PrettyTable (stdout_formatter, cell padding {0, 1})
    recorded = json.loads((GOLDEN / "rabbitmqctl" / "list_users_pretty_table.json").read_text())
    table = recorded["stdout"].split("\n", 1)[1]
    rows = [[cell.strip() for cell in line.split(_CELL)[1:-1]]
            for line in table.split("\n") if line.startswith(_CELL)]
    assert pretty_table([re.sub(r"\x1b\[[01]m", "", c) for c in rows[0]], rows[1:]) == table


def test_the_shims_include_rabbitmq_queues(tmp_path: Path) -> None:
    written = write_shims(tmp_path / "bin", python="/usr/bin/python3")
    assert tmp_path / "bin" / "rabbitmq-queues" in written
    assert "-m embroker.control rabbitmq-queues" in (tmp_path / "bin" / "rabbitmq-queues").read_text()
    assert os.access(tmp_path / "bin" / "rabbitmq-queues", os.X_OK)


@pytest.fixture
def three(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Broker]:
    """A cluster of three embroker nodes, each reachable by ``-n``."""
    monkeypatch.setenv("EMBROKER_NODES_DIR", str(tmp_path / "nodes"))
    monkeypatch.setenv("RABBITMQ_NODENAME", SCENARIO_NODES["cluster"][0])
    broker = Broker(nodes=3)
    with broker.serve_nodes() as servers, ExitStack() as stack:
        for server, name in zip(servers, SCENARIO_NODES["cluster"], strict=True):
            stack.enter_context(Node(broker, server, name))
        yield broker


def test_embroker_queues_is_rabbitmq_queues(three: Broker, capsys: pytest.CaptureFixture[str]
                                            ) -> None:
    from embroker.__main__ import main

    Embroker(three).declare(Declare(0, "q", {"x-queue-type": "quorum"}))
    assert main(["queues", "-n", SCENARIO_NODES["cluster"][1], "delete_member", "q",
                 SCENARIO_NODES["cluster"][1]]) == 0
    assert capsys.readouterr().out == (
        f"Removing a replica of queue q on node {SCENARIO_NODES['cluster'][1]}...\n")
    assert three.nodes[1] not in three.vhost("/").queues["q"].placement.members


def test_rabbitmq_diagnostics_has_quorum_status_and_the_two_checks(three: Broker) -> None:
    # quorum_status_command.ex, check_if_node_is_*_critical_command.ex: scopes [:diagnostics, :queues]
    Embroker(three).declare(Declare(0, "q", {"x-queue-type": "quorum"}))
    out, err = io.StringIO(), io.StringIO()
    for argv in (["quorum_status", "q"], ["check_if_node_is_quorum_critical"],
                 ["check_if_node_is_mirror_sync_critical"]):
        assert run("rabbitmq-diagnostics", argv, out=out, err=err) == 0, err.getvalue()
    assert run("rabbitmqctl", ["quorum_status", "q"], out=out, err=err) == 64  # (not its)


def test_quorum_status_shows_a_new_leader_after_its_node_stops(three: Broker) -> None:
    # rabbit_quorum_queue:status/2 on a member whose Ra server is gone: its error's name
    Embroker(three).declare(Declare(0, "q", {"x-queue-type": "quorum"}))
    three.nodes[0].stop()
    code, out, _ = queues("-n", SCENARIO_NODES["cluster"][1], "quorum_status", "q",
                          "--formatter", "json")
    assert code == 0
    states = {row["Node Name"]: (row["Raft State"], row["Term"]) for row in json.loads(out)}
    assert states[SCENARIO_NODES["cluster"][0]] == ("noproc", "")
    assert sorted(v for k, v in states.items() if k != SCENARIO_NODES["cluster"][0]) == [
        ("follower", 2), ("leader", 2)]


@pytest.mark.differential
@pytest.mark.skipif("cluster" not in RECORDED, reason="no golden files of the cluster")
def test_help_lists_rabbitmqs_commands_but_the_ones_embroker_has_not(
        sessions: Callable[[str], dict[str, dict[str, Any]]]) -> None:
    expected, found = golden("cluster", "help"), sessions("cluster")["help"]
    missing = re.compile(r"^   (" + "|".join(MISSING_COMMANDS) + r") |.*Operations")
    kept = "\n".join(line for line in expected["stdout"].split("\n") if not missing.match(line))
    assert found["stdout"] == re.sub(r"\n\n\n+", "\n\n", kept)  # (a section gone: its blanks)
    assert (found["exit"], found["stderr"]) == (expected["exit"], expected["stderr"])
