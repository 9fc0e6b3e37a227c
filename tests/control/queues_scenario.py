# ruff: noqa: E501  (a scenario: its steps read best a line each)
"""``rabbitmq-queues`` sessions, step by step (one on a three-node cluster, one on a node alone): what
record_queues_golden.py runs on RabbitMQ 3.10.8's nodes to record the golden files
(golden/rabbitmq-queues/) and test_queues_cli.py runs on embroker's to compare with them.

The nodes are ``rabbit-1@localhost``, ``rabbit-2@localhost`` and ``rabbit-3@localhost`` (the
reference cluster's prefix is ``rabbit``), so that the files need no renaming and tables keep
their widths. Each case's ``notes`` say the state it ran in.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

N1, N2, N3 = NODES = ("rabbit-1@localhost", "rabbit-2@localhost", "rabbit-3@localhost")
MISSING_NODE = "nosuch@localhost"
QUORUM: dict[str, Any] = {"x-queue-type": "quorum"}
ONE: dict[str, Any] = {"x-queue-type": "quorum", "x-quorum-initial-group-size": 1}


@dataclass(frozen=True)
class Case:
    """A recorded command line: ``rabbitmq-queues -n NODE ARGS``."""

    name: str
    node: str
    args: tuple[str, ...]
    notes: str = ""


@dataclass(frozen=True)
class Declare:
    """A durable queue declared through a client of node ``node`` (0, 1, 2)."""

    node: int
    queue: str
    arguments: dict[str, Any] = field(default_factory=dict)
    vhost: str = "/"


@dataclass(frozen=True)
class Publish:
    node: int
    queue: str
    count: int


@dataclass(frozen=True)
class Vhost:
    """A vhost guest may use."""

    name: str


@dataclass(frozen=True)
class StopApp:
    node: int


@dataclass(frozen=True)
class Settle:
    """Time for the reference's Raft to settle (a leadership transfer): nothing on embroker."""

    seconds: float


Step = Case | Declare | Publish | Vhost | StopApp | Settle


def _steps() -> Iterator[Step]:
    yield Vhost("qv")
    yield Declare(0, "qq3", QUORUM)
    yield Declare(0, "qq1", ONE)
    yield Declare(0, "qq1", ONE, "qv")
    yield Declare(0, "cq")
    yield Declare(0, "sq", {"x-queue-type": "stream"})
    yield Publish(0, "qq3", 3)
    state = ("State: on rabbit-1 (declared there): qq3 (quorum, 3 members, 3 messages), qq1 (quorum, "
             "group size 1), cq (classic), sq (stream); vhost qv: qq1 (quorum, group size 1).")
    yield Case("quorum_status", N1, ("quorum_status", "qq3"), state)
    yield Case("quorum_status_json", N1, ("quorum_status", "qq3", "--formatter", "json"), state)
    yield Case("quorum_status_quiet", N1, ("-q", "quorum_status", "qq3"), state)
    yield Case("quorum_status_one_member", N1, ("quorum_status", "qq1"), state)
    yield Case("quorum_status_vhost", N1, ("quorum_status", "--vhost", "qv", "qq1"), state)
    yield Case("quorum_status_missing", N1, ("quorum_status", "nosuchq"), state)
    yield Case("quorum_status_missing_vhost", N1, ("quorum_status", "-p", "nosuchvhost", "qq3"), state)
    yield Case("quorum_status_classic", N1, ("quorum_status", "cq"), state)
    yield Case("quorum_status_stream", N1, ("quorum_status", "sq"), state)
    yield Case("quorum_status_no_args", N1, ("quorum_status",), state)
    yield Case("quorum_status_from_other_node", N3, ("quorum_status", "qq3"), state)

    yield Case("add_member_classic", N1, ("add_member", "cq", N2), state)
    yield Case("add_member_missing", N1, ("add_member", "nosuchq", N2), state)
    yield Case("add_member_stream", N1, ("add_member", "sq", N2), state)
    yield Case("add_member_unknown_node", N1, ("add_member", "qq1", MISSING_NODE), state)
    yield Case("add_member_already_member", N1, ("add_member", "qq3", N2), state)
    yield Case("add_member_one_argument", N1, ("add_member", "qq1"), state)
    yield Case("add_member", N1, ("add_member", "qq1", N2), state)
    yield Case("add_member_json", N1, ("add_member", "--formatter", "json", "qq1", N3), state + " qq1 has rabbit-2 too.")
    yield Case("quorum_status_after_add", N1, ("quorum_status", "qq1"), "qq1 has members on the three nodes (added rabbit-2 then rabbit-3).")
    yield Case("delete_member", N1, ("delete_member", "qq1", N3), "qq1 on the three nodes.")
    yield Case("delete_member_not_member", N1, ("delete_member", "qq1", N3), "qq1 on rabbit-1 and rabbit-2.")
    yield Case("delete_member_unknown_node", N1, ("delete_member", "qq1", MISSING_NODE), "qq1 on rabbit-1 and rabbit-2.")
    yield Case("delete_member_classic", N1, ("delete_member", "cq", N1), state)
    yield Case("delete_member_missing", N1, ("delete_member", "nosuchq", N1), state)
    yield Case("delete_member_stream", N1, ("delete_member", "sq", N1), state)
    yield Case("delete_member_leader", N1, ("delete_member", "qq1", N1), "qq1 on rabbit-1 (its leader) and rabbit-2: the leader's member removed.")
    yield Settle(2)
    yield Case("quorum_status_after_delete", N1, ("quorum_status", "qq1"), "qq1 on rabbit-2 alone.")
    yield Case("delete_member_last", N1, ("delete_member", "qq1", N2), "qq1 on rabbit-2 alone.")
    yield Case("delete_member_vhost", N1, ("delete_member", "-p", "qv", "qq1", N1), "qv's qq1 on rabbit-1 alone.")

    state = ("State: qq3 on the three nodes, led by rabbit-1; qq1 on rabbit-2 alone; qv's qq1 on rabbit-1 alone; "
             "cq, sq as before.")
    yield Case("check_if_node_is_quorum_critical", N1, ("check_if_node_is_quorum_critical",), state)
    yield Case("check_if_node_is_quorum_critical_json", N1, ("check_if_node_is_quorum_critical", "--formatter", "json"), state)
    yield Case("check_if_node_is_quorum_critical_silent", N1, ("-s", "check_if_node_is_quorum_critical"), state)
    yield Case("check_if_node_is_quorum_critical_fails", N2, ("check_if_node_is_quorum_critical",), state)
    yield Case("check_if_node_is_quorum_critical_fails_json", N2, ("check_if_node_is_quorum_critical", "--formatter", "json"), state)
    yield Case("check_if_node_is_quorum_critical_fails_silent", N2, ("-s", "check_if_node_is_quorum_critical"), state)
    yield Case("check_if_node_is_mirror_sync_critical", N1, ("check_if_node_is_mirror_sync_critical",), state)
    yield Case("check_if_node_is_mirror_sync_critical_json", N1, ("check_if_node_is_mirror_sync_critical", "--formatter", "json"), state)

    yield Case("grow_bad_strategy", N1, ("grow", N3, "some"), state)
    yield Case("grow_one_argument", N1, ("grow", N3), state)
    yield Case("grow_unknown_node", N1, ("grow", MISSING_NODE, "all"), state)
    yield Case("grow_even_none", N1, ("grow", N1, "even"), state)
    yield Case("grow_patterns", N1, ("grow", N1, "all", "--vhost-pattern", "^/$", "--queue-pattern", "^qq1$"), state)
    yield Case("grow_even", N1, ("grow", N3, "even"), state + " Then qq1 on rabbit-2 and rabbit-1.")
    yield Case("grow_errors_only", N1, ("grow", N2, "all", "--errors-only"), "qq1 on rabbit-2, -1, -3; qv's qq1 on rabbit-1.")
    yield Case("grow_all", N1, ("grow", N3, "all"), "qv's qq1 on rabbit-1 and rabbit-2 (grown by grow_errors_only).")
    yield Case("grow_json", N1, ("grow", N3, "all", "--formatter", "json"), "every quorum queue has a member on rabbit-3 already.")

    yield Declare(2, "qq-on3", ONE)
    state = ("State: qq3 and qq1 on the three nodes; qv's qq1 on the three nodes; qq-on3 (group size 1, declared "
             "on rabbit-3) on rabbit-3 alone.")
    yield Case("shrink_errors_only", N1, ("shrink", N3, "--errors-only"), state)
    yield Case("shrink_again", N1, ("shrink", N3), "qq-on3 on rabbit-3 alone; every other quorum queue without a member there.")
    yield Case("shrink_unknown_node", N1, ("shrink", MISSING_NODE), "nothing has a member there.")
    yield Case("shrink_json", N1, ("shrink", N2, "--formatter", "json"), "qq3, qq1, qv's qq1 on rabbit-1 and rabbit-2.")

    yield Case("rebalance_stream", N1, ("rebalance", "stream"))
    yield Case("rebalance_no_args", N1, ("rebalance",))
    yield Case("rebalance_classic", N1, ("rebalance", "classic"), "cq is not mirrored.")
    for name in ("qa", "qb", "qc", "qd"):
        yield Declare(0, name, QUORUM)
    state = ("State: qq3, qq1, qv's qq1 on rabbit-1 alone; qq-on3 on rabbit-3 alone; qa, qb, qc, qd on the three "
             "nodes, declared on rabbit-1 (which leads them).")
    yield Case("rebalance_quorum", N1, ("rebalance", "quorum"), state)
    yield Settle(2)
    yield Case("quorum_status_after_rebalance", N1, ("quorum_status", "qa"), "after rebalance_quorum")
    yield Case("rebalance_all", N1, ("rebalance", "all", "--queue-pattern", "^q[a-d]$"), "after rebalance_quorum")
    yield Case("rebalance_json", N1, ("rebalance", "quorum", "--formatter", "json"), "after rebalance_all")

    yield StopApp(2)
    state = "rabbit-3 stopped (stop_app). qa..qd on the three nodes; qq-on3 on rabbit-3 alone."
    yield Case("quorum_status_member_down", N1, ("quorum_status", "qa"), state)
    yield Case("check_if_node_is_quorum_critical_node_down", N1, ("check_if_node_is_quorum_critical",), state)
    yield Case("add_member_stopped_node", N1, ("add_member", "qq1", N3), state)
    yield Case("grow_stopped_node", N1, ("grow", N3, "all"), state)
    yield Case("quorum_status_on_stopped_node", N3, ("quorum_status", "qa"), state)
    yield Case("help", N1, ("help",))


SHARED = "rabbit@localhost"
#: The single node's queues (on the shared reference node: names of their own, removed after).
SINGLE_QUEUES = ("queues-golden-qq", "queues-golden-cq", "queues-golden-sq")


def _single_steps() -> Iterator[Step]:
    """The refusals and outputs a node alone shows, recorded on the shared reference node
    ``rabbit@localhost`` (no cluster needed). Its other queues are not ours: the cases that
    would list them (``shrink``, an unfiltered ``rebalance``) are the cluster's alone."""
    qq, cq, sq = SINGLE_QUEUES
    yield Declare(0, qq, QUORUM)
    yield Declare(0, cq)
    yield Declare(0, sq, {"x-queue-type": "stream"})
    state = f"State on the node alone: {qq} (quorum, empty), {cq} (classic), {sq} (stream)."
    yield Case("quorum_status", SHARED, ("quorum_status", qq), state)
    yield Case("quorum_status_json", SHARED, ("quorum_status", qq, "--formatter", "json"), state)
    yield Case("quorum_status_missing", SHARED, ("quorum_status", "queues-golden-missing"), state)
    yield Case("quorum_status_missing_vhost", SHARED, ("quorum_status", "-p", "queues-golden-nosuchvhost", qq), state)
    yield Case("quorum_status_classic", SHARED, ("quorum_status", cq), state)
    yield Case("quorum_status_stream", SHARED, ("quorum_status", sq), state + " RabbitMQ's function crashes (case_clause) on a stream.")
    yield Case("add_member_classic", SHARED, ("add_member", cq, SHARED), state)
    yield Case("add_member_missing", SHARED, ("add_member", "queues-golden-missing", SHARED), state)
    yield Case("add_member_stream", SHARED, ("add_member", sq, SHARED), state + " RabbitMQ's function crashes (case_clause) on a stream.")
    yield Case("add_member_unknown_node", SHARED, ("add_member", qq, MISSING_NODE), state)
    yield Case("add_member_already_member", SHARED, ("add_member", qq, SHARED), state)
    yield Case("delete_member_last", SHARED, ("delete_member", qq, SHARED), state)
    yield Case("delete_member_not_member", SHARED, ("delete_member", qq, MISSING_NODE), state)
    yield Case("delete_member_classic", SHARED, ("delete_member", cq, SHARED), state)
    yield Case("delete_member_missing", SHARED, ("delete_member", "queues-golden-missing", SHARED), state)
    yield Case("check_if_node_is_quorum_critical", SHARED, ("check_if_node_is_quorum_critical",), state)
    yield Case("check_if_node_is_quorum_critical_json", SHARED, ("check_if_node_is_quorum_critical", "--formatter", "json"), state)
    yield Case("check_if_node_is_mirror_sync_critical", SHARED, ("check_if_node_is_mirror_sync_critical",), state)
    yield Case("check_if_node_is_mirror_sync_critical_json", SHARED, ("check_if_node_is_mirror_sync_critical", "--formatter", "json"), state)
    yield Case("grow_already_member", SHARED, ("grow", SHARED, "all", "--queue-pattern", "^queues-golden-"), state)
    yield Case("grow_bad_strategy", SHARED, ("grow", SHARED, "some"), state)
    yield Case("rebalance_quorum", SHARED, ("rebalance", "quorum", "--queue-pattern", "^queues-golden-"), state)
    yield Case("rebalance_json", SHARED, ("rebalance", "quorum", "--queue-pattern", "^queues-golden-", "--formatter", "json"), state)
    yield Case("rebalance_stream", SHARED, ("rebalance", "stream"), state)
    yield Case("rebalance_no_args", SHARED, ("rebalance",), state)
    yield Case("shrink_no_args", SHARED, ("shrink",), state)


#: Each session, in order: ``cluster`` (three nodes of one's own) and ``single`` (the shared
#: reference node).
SCENARIOS: dict[str, tuple[Step, ...]] = {"cluster": tuple(_steps()),
                                          "single": tuple(_single_steps())}
#: The nodes of each session.
SCENARIO_NODES = {"cluster": NODES, "single": (SHARED,)}
#: The cases of each session, by name.
CASES = {scenario: {step.name: step for step in steps if isinstance(step, Case)}
         for scenario, steps in SCENARIOS.items()}


class Cluster(Protocol):
    """Three nodes a scenario drives (the reference's or embroker's)."""

    def declare(self, step: Declare) -> None: ...

    def publish(self, step: Publish) -> None: ...

    def add_vhost(self, name: str) -> None: ...

    def stop_app(self, node: int) -> None: ...

    def settle(self, seconds: float) -> None: ...

    def tool(self, node: str, args: tuple[str, ...]) -> tuple[int, str, str]:
        """``rabbitmq-queues -n NODE ARGS``: its exit code, stdout and stderr."""


def replay(cluster: Cluster, scenario: str = "cluster") -> dict[str, dict[str, Any]]:
    """Run session ``scenario`` on ``cluster``: each case's golden record (argv, exit,
    stdout, stderr, notes)."""
    found: dict[str, dict[str, Any]] = {}
    for step in SCENARIOS[scenario]:
        if isinstance(step, Case):
            code, out, err = cluster.tool(step.node, step.args)
            found[step.name] = {"argv": ["rabbitmq-queues", "-n", step.node, *step.args],
                                "exit": code, "stdout": out, "stderr": err, "notes": step.notes}
        elif isinstance(step, Declare):
            cluster.declare(step)
        elif isinstance(step, Publish):
            cluster.publish(step)
        elif isinstance(step, Vhost):
            cluster.add_vhost(step.name)
        elif isinstance(step, StopApp):
            cluster.stop_app(step.node)
        else:
            cluster.settle(step.seconds)
    return found
