# ruff: noqa: E501  (a recording script: its case tables read best a line each)
"""Record what RabbitMQ 3.10.8's ``rabbitmq-queues`` prints on a three-node cluster, as golden
files (tests/control/golden/rabbitmq-queues/<case>.json, the keys of record_golden.py's).

Run from the repository's root, with RabbitMQ 3.10.8 installed (tests/cluster/reference_cluster.py
starts the cluster: its nodes are named ``rabbit-1@localhost``, ``rabbit-2@localhost`` and
``rabbit-3@localhost`` here, so that the files need no renaming and tables keep their widths):

    python -m tests.control.record_queues_golden

The cases run in order on one evolving state, each case's ``notes`` saying what it is; the
cluster is killed and its files removed at the end. What varies between runs: the quorum
queues' Raft indexes, terms and machine version in ``quorum_status`` (compared masked).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pika

from tests.cluster.reference_cluster import ReferenceCluster, start_cluster

GOLDEN = Path(__file__).resolve().parent / "golden" / "rabbitmq-queues"
N1, N2, N3 = "rabbit-1@localhost", "rabbit-2@localhost", "rabbit-3@localhost"
MISSING_NODE = "nosuch@localhost"


def declare(cluster: ReferenceCluster, node: int, name: str, vhost: str = "/", arguments: dict[str, Any] | None = None) -> None:
    params = pika.ConnectionParameters("127.0.0.1", cluster.node(node).amqp_port, vhost,
                                       pika.PlainCredentials("guest", "guest"))
    with pika.BlockingConnection(params) as connection:
        channel = connection.channel()
        channel.queue_declare(name, durable=True, arguments=arguments)


def publish(cluster: ReferenceCluster, node: int, queue: str, count: int) -> None:
    params = pika.ConnectionParameters("127.0.0.1", cluster.node(node).amqp_port, "/",
                                       pika.PlainCredentials("guest", "guest"))
    with pika.BlockingConnection(params) as connection:
        channel = connection.channel()
        channel.confirm_delivery()
        for index in range(count):
            channel.basic_publish("", queue, f"m{index}".encode())


def main() -> int:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    cluster = start_cluster(3, prefix="rabbit")
    try:
        def case(name: str, node: str, *args: str, notes: str = "", tool: str = "rabbitmq-queues") -> None:
            started = time.monotonic()
            done = cluster.ctl(node, *args, check=False, tool=tool)
            argv = [tool, "-n", node, *args]
            (GOLDEN / f"{name}.json").write_text(json.dumps({
                "argv": argv, "exit": done.returncode, "stdout": done.stdout,
                "stderr": done.stderr, "notes": notes}, indent=2, ensure_ascii=False) + "\n")
            print(f"{name}: exit {done.returncode} ({time.monotonic() - started:.1f} s)", flush=True)

        cluster.ctl(0, "add_vhost", "qv")
        cluster.ctl(0, "set_permissions", "-p", "qv", "guest", ".*", ".*", ".*")
        declare(cluster, 0, "qq3", arguments={"x-queue-type": "quorum"})
        declare(cluster, 0, "qq1", arguments={"x-queue-type": "quorum", "x-quorum-initial-group-size": 1})
        declare(cluster, 0, "qq1", "qv", arguments={"x-queue-type": "quorum", "x-quorum-initial-group-size": 1})
        declare(cluster, 0, "cq")
        declare(cluster, 0, "sq", arguments={"x-queue-type": "stream"})
        publish(cluster, 0, "qq3", 3)
        state = ("State: on rabbit-1 (declared there): qq3 (quorum, 3 members, 3 messages), qq1 (quorum, "
                 "group size 1), cq (classic), sq (stream); vhost qv: qq1 (quorum, group size 1).")

        case("quorum_status", N1, "quorum_status", "qq3", notes=state)
        case("quorum_status_json", N1, "quorum_status", "qq3", "--formatter", "json", notes=state)
        case("quorum_status_quiet", N1, "-q", "quorum_status", "qq3", notes=state)
        case("quorum_status_one_member", N1, "quorum_status", "qq1", notes=state)
        case("quorum_status_vhost", N1, "quorum_status", "--vhost", "qv", "qq1", notes=state)
        case("quorum_status_missing", N1, "quorum_status", "nosuchq", notes=state)
        case("quorum_status_missing_vhost", N1, "quorum_status", "-p", "nosuchvhost", "qq3", notes=state)
        case("quorum_status_classic", N1, "quorum_status", "cq", notes=state)
        case("quorum_status_stream", N1, "quorum_status", "sq", notes=state)
        case("quorum_status_no_args", N1, "quorum_status", notes=state)
        case("quorum_status_from_other_node", N3, "quorum_status", "qq3", notes=state)

        case("add_member_classic", N1, "add_member", "cq", N2, notes=state)
        case("add_member_missing", N1, "add_member", "nosuchq", N2, notes=state)
        case("add_member_stream", N1, "add_member", "sq", N2, notes=state)
        case("add_member_unknown_node", N1, "add_member", "qq1", MISSING_NODE, notes=state)
        case("add_member_already_member", N1, "add_member", "qq3", N2, notes=state)
        case("add_member_one_argument", N1, "add_member", "qq1", notes=state)
        case("add_member", N1, "add_member", "qq1", N2, notes=state)
        case("add_member_json", N1, "add_member", "--formatter", "json", "qq1", N3, notes=state + " qq1 has rabbit-2 too.")
        case("quorum_status_after_add", N1, "quorum_status", "qq1", notes="qq1 has members on the three nodes (added rabbit-2 then rabbit-3).")
        case("delete_member", N1, "delete_member", "qq1", N3, notes="qq1 on the three nodes.")
        case("delete_member_not_member", N1, "delete_member", "qq1", N3, notes="qq1 on rabbit-1 and rabbit-2.")
        case("delete_member_unknown_node", N1, "delete_member", "qq1", MISSING_NODE, notes="qq1 on rabbit-1 and rabbit-2.")
        case("delete_member_classic", N1, "delete_member", "cq", N1, notes=state)
        case("delete_member_missing", N1, "delete_member", "nosuchq", N1, notes=state)
        case("delete_member_stream", N1, "delete_member", "sq", N1, notes=state)
        case("delete_member_leader", N1, "delete_member", "qq1", N1, notes="qq1 on rabbit-1 (its leader) and rabbit-2: the leader's member removed.")
        case("quorum_status_after_delete", N1, "quorum_status", "qq1", notes="qq1 on rabbit-2 alone.")
        case("delete_member_last", N1, "delete_member", "qq1", N2, notes="qq1 on rabbit-2 alone.")
        case("delete_member_vhost", N1, "delete_member", "-p", "qv", "qq1", N1, notes="qv's qq1 on rabbit-1 alone.")

        state = ("State: qq3 on the three nodes, led by rabbit-1; qq1 on rabbit-2 alone; qv's qq1 on rabbit-1 alone; "
                 "cq, sq as before.")
        case("check_if_node_is_quorum_critical", N1, "check_if_node_is_quorum_critical", notes=state)
        case("check_if_node_is_quorum_critical_json", N1, "check_if_node_is_quorum_critical", "--formatter", "json", notes=state)
        case("check_if_node_is_quorum_critical_silent", N1, "-s", "check_if_node_is_quorum_critical", notes=state)
        case("check_if_node_is_quorum_critical_fails", N2, "check_if_node_is_quorum_critical", notes=state)
        case("check_if_node_is_quorum_critical_fails_json", N2, "check_if_node_is_quorum_critical", "--formatter", "json", notes=state)
        case("check_if_node_is_mirror_sync_critical", N1, "check_if_node_is_mirror_sync_critical", notes=state)
        case("check_if_node_is_mirror_sync_critical_json", N1, "check_if_node_is_mirror_sync_critical", "--formatter", "json", notes=state)

        case("grow_bad_strategy", N1, "grow", N3, "some", notes=state)
        case("grow_one_argument", N1, "grow", N3, notes=state)
        case("grow_unknown_node", N1, "grow", MISSING_NODE, "all", notes=state)
        case("grow_even_none", N1, "grow", N1, "even", notes=state)
        case("grow_patterns", N1, "grow", N1, "all", "--vhost-pattern", "^/$", "--queue-pattern", "^qq1$", notes=state)
        case("grow_even", N1, "grow", N3, "even", notes=state + " Then qq1 on rabbit-2 and rabbit-1.")
        case("grow_errors_only", N1, "grow", N2, "all", "--errors-only", notes="qq1 on rabbit-2, -1, -3; qv's qq1 on rabbit-1.")
        case("grow_all", N1, "grow", N3, "all", notes="qv's qq1 on rabbit-1 and rabbit-2 (grown by grow_errors_only).")
        case("grow_json", N1, "grow", N3, "all", "--formatter", "json", notes="every quorum queue has a member on rabbit-3 already.")

        declare(cluster, 2, "qq-on3", arguments={"x-queue-type": "quorum", "x-quorum-initial-group-size": 1})
        state = ("State: qq3 and qq1 on the three nodes; qv's qq1 on the three nodes; qq-on3 (group size 1, declared "
                 "on rabbit-3) on rabbit-3 alone.")
        case("shrink_errors_only", N1, "shrink", N3, "--errors-only", notes=state)
        case("shrink_again", N1, "shrink", N3, notes="qq-on3 on rabbit-3 alone; every other quorum queue without a member there.")
        case("shrink_unknown_node", N1, "shrink", MISSING_NODE, notes="nothing has a member there.")
        case("shrink_json", N1, "shrink", N2, "--formatter", "json", notes="qq3, qq1, qv's qq1 on rabbit-1 and rabbit-2.")

        case("rebalance_stream", N1, "rebalance", "stream", notes="")
        case("rebalance_no_args", N1, "rebalance", notes="")
        case("rebalance_classic", N1, "rebalance", "classic", notes="cq is not mirrored.")
        for name in ("qa", "qb", "qc", "qd"):
            declare(cluster, 0, name, arguments={"x-queue-type": "quorum"})
        state = ("State: qq3, qq1, qv's qq1 on rabbit-1 alone; qq-on3 on rabbit-3 alone; qa, qb, qc, qd on the three "
                 "nodes, declared on rabbit-1 (which leads them).")
        case("rebalance_quorum", N1, "rebalance", "quorum", notes=state)
        time.sleep(2)
        case("quorum_status_after_rebalance", N1, "quorum_status", "qa", notes="after rebalance_quorum")
        case("rebalance_all", N1, "rebalance", "all", "--queue-pattern", "^q[a-d]$", notes="after rebalance_quorum")
        case("rebalance_json", N1, "rebalance", "quorum", "--formatter", "json", notes="after rebalance_all")

        cluster.stop_app(2)
        state = "rabbit-3 stopped (stop_app). qa..qd on the three nodes; qq-on3 on rabbit-3 alone."
        case("quorum_status_member_down", N1, "quorum_status", "qa", notes=state)
        case("check_if_node_is_quorum_critical_node_down", N1, "check_if_node_is_quorum_critical", notes=state)
        case("add_member_stopped_node", N1, "add_member", "qq1", N3, notes=state)
        case("grow_stopped_node", N1, "grow", N3, "all", notes=state)
        case("quorum_status_on_stopped_node", N3, "quorum_status", "qa", notes=state)
        case("help", N1, "help", notes="")
    finally:
        cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
