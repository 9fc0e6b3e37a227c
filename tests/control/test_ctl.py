"""rabbitmqctl, rabbitmq-diagnostics and rabbitmq-plugins against an embroker node, compared
with what RabbitMQ 3.10.8's own tools printed for the same state (tests/control/golden/,
recorded live by record_golden.py): banners, headers, rows, JSON layout, error texts and
exit codes. Rows are compared as a set: RabbitMQ lists in its tables' hash order, embroker in
creation order. Pids, ports and memory vary from run to run and are masked."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import pytest

from embroker import Broker
from embroker.control._ctl import run
from embroker.control._node import Node
from embroker.control._plugins_cli import main as plugins
from embroker.control._registry import lookup
from embroker.server import Server

GOLDEN = Path(__file__).parent / "golden"
NODE = "rabbit@localhost"


def golden(tool: str, case: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / tool / f"{case}.json").read_text())
    return data


@pytest.fixture(autouse=True)
def _nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBROKER_NODES_DIR", str(tmp_path / "nodes"))
    monkeypatch.setenv("RABBITMQ_NODENAME", NODE)  # (the golden files' node)


def _golden_state(broker: Broker) -> None:
    """The state record_golden.py builds in RabbitMQ (golden/README.md), minus its traffic."""
    broker.add_vhost("ctl-golden", created_by="rmq-cli")
    for user, tags in (("ctl-golden-admin", ["administrator"]), ("ctl-golden-plain", []),
                       ("ctl-golden-multi", ["monitoring", "policymaker"])):
        broker.add_user(user, "pw", tags=tags)
    broker.set_permissions("ctl-golden-admin", ".*", ".*", ".*", vhost="ctl-golden")
    broker.set_permissions("ctl-golden-plain", r"^q\.", r"^ex\.", r"^(q|ex)\.", vhost="ctl-golden")
    broker.set_permissions("ctl-golden-multi", "", "", ".*", vhost="ctl-golden")
    broker.set_topic_permissions("ctl-golden-plain", "ex.topic", r"^a\.", r"^b\.",
                                 vhost="ctl-golden")
    broker.set_topic_permissions("ctl-golden-multi", "amq.topic", ".*", ".*", vhost="ctl-golden")
    connection = broker.open_connection("ctl-golden")
    ch = connection.open_channel(1)
    ch.queue_declare("q.args", durable=True,
                     arguments={"x-max-length": 10, "x-message-ttl": 60000})
    ch.queue_declare("q.quorum", durable=True, arguments={"x-queue-type": "quorum"})
    ch.queue_declare("q.transient", durable=False)
    ch.queue_declare("q.classic", durable=True)
    ch.exchange_declare("ex.topic", "topic", durable=True)
    ch.exchange_declare("ex.fanout", "fanout", durable=False, auto_delete=True)
    ch.queue_bind("q.transient", "ex.fanout", "")
    ch.queue_bind("q.args", "ex.fanout", "any key",
                  arguments={"flag": True, "list": [1, "two"], "table": {"k": "v"}})
    ch.queue_bind("q.classic", "ex.topic", "classic.#")
    ch.exchange_bind("ex.fanout", "ex.topic", "fan.#")
    ch.queue_bind("q.quorum", "ex.topic", "quorum.*", arguments={"n": 7, "x-note": "golden"})
    connection.close()
    client = broker.connect(vhost="ctl-golden").channel()
    for _ in range(3):
        client.basic_publish("", "q.classic", b"m", properties={"delivery_mode": 2})
    for _ in range(2):
        client.basic_publish("", "q.quorum", b"m", properties={"delivery_mode": 2})
    client.basic_qos(prefetch_count=1)  # (a consumer holding one of q.classic's, unacked)
    client.basic_consume("q.classic", lambda *_: None, consumer_tag="ctl-golden-consumer")
    broker.set_policy("p1", r"^q\.", {"max-length": 100}, priority=1, apply_to="queues",
                      vhost="ctl-golden")
    broker.set_operator_policy("op1", r"^q\.args$", {"max-length": 50, "message-ttl": 30000},
                               apply_to="queues", vhost="ctl-golden")
    broker.set_vhost_limits({"max-connections": 10, "max-queues": 20}, vhost="ctl-golden")
    broker.set_user_limits("ctl-golden-admin", {"max-connections": 5, "max-channels": 10})


@pytest.fixture
def node() -> Iterator[Node]:
    broker = Broker()
    _golden_state(broker)
    with Server(broker) as server, Node(broker, server, NODE) as running:
        yield running
        assert server.errors == []


def ctl(*argv: str, tool: str = "rabbitmqctl") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(tool, list(argv), out=out, err=err) if tool != "rabbitmq-plugins" else \
        plugins(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


_VARYING = re.compile(r"<rabbit@[^>]*>|#PID<[^>]*>")


def _lines(text: str) -> tuple[list[str], set[str]]:
    """The lines before the rows (banners, header) and the rows, pids masked."""
    lines = [_VARYING.sub("PID", line) for line in text.splitlines()]
    head = [line for line in lines if line.startswith(("Timeout:", "Listing "))]
    return head, set(lines[len(head):])


# -- listings, each formatter and option, against the golden files ------------------------------

LISTINGS = [
    f"list_{kind}{variant}"
    for kind in ("queues", "exchanges", "bindings", "consumers", "permissions",
                 "topic_permissions", "policies")
    for variant in ("", "_q", "_s", "_no_table_headers", "_table", "_missing_vhost")
] + ["list_queues_cols1", "list_queues_cols2", "list_exchanges_cols1", "list_bindings_cols1",
     "list_queues_local", "list_queues_online", "list_queues_offline", "list_queues_timeout",
     "list_operator_policies", "list_operator_policies_s", "list_parameters",
     "list_parameters_s"]


@pytest.mark.parametrize("case", LISTINGS)
def test_listing_prints_what_rabbitmqctl_prints(node: Node, case: str) -> None:
    expected = golden("rabbitmqctl", case)
    code, out, err = ctl(*expected["argv"][1:])
    assert (code, err) == (expected["exit"], expected["stderr"])
    assert _lines(out) == _lines(expected["stdout"])


JSON_LISTINGS = [f"list_{kind}_json" for kind in ("queues", "exchanges", "bindings",
                                                  "permissions", "topic_permissions")] + [
    "list_queues_cols1_json", "list_queues_cols2_json", "list_exchanges_cols1_json",
    "list_bindings_cols1_json", "list_queues_q_json",
    # (a policy's definition and a parameter's value: a string of JSON, as RabbitMQ keeps them)
    "list_policies_json", "list_policies_q_json", "list_operator_policies_json",
    "list_operator_policies_q_json", "list_parameters_json", "list_parameters_q_json"]


@pytest.mark.parametrize("case", JSON_LISTINGS)
def test_json_formatter_writes_rabbitmqs_layout_and_values(node: Node, case: str) -> None:
    expected = golden("rabbitmqctl", case)
    code, out, _err = ctl(*expected["argv"][1:])
    assert code == expected["exit"]
    assert _json_lines(out) == _json_lines(expected["stdout"])


def _json_lines(text: str) -> tuple[str, str, list[str], list[str]]:
    """The JSON formatter's layout: ``[``, the first row alone, each next one after ``,``,
    ``]``; and the rows (pids masked) in order."""
    lines = [_VARYING.sub("PID", line) for line in text.splitlines()]
    rows = lines[1:-1]
    return (lines[0], lines[-1], [line[:2] for line in rows[:1]] + sorted(
        line[:2] for line in rows[1:]), sorted(line.lstrip(",") for line in rows))


@pytest.mark.parametrize("case", ["list_queues_csv", "list_bindings_csv"])
def test_csv_formatter_quotes_every_field(node: Node, case: str) -> None:
    expected = golden("rabbitmqctl", case)
    code, out, _err = ctl(*expected["argv"][1:])
    assert code == 0
    ours, theirs = out.splitlines(), expected["stdout"].splitlines()
    assert (ours[0], sorted(ours[1:])) == (theirs[0], sorted(theirs[1:]))


def _ours(text: str) -> str:
    """Users are the node's: the reference's list has other work's too (kept out)."""
    return "".join(line for line in text.splitlines(keepends=True)
                   if "ctl-golden" in line or "guest" in line or not re.search(
                       r'^,?\{"user"|^[^\t]+\t\[', line))


def test_list_users_shows_tags_as_rabbitmq(node: Node) -> None:
    for case in ("list_users", "list_users_json", "list_users_s"):
        expected = golden("rabbitmqctl", case)
        code, out, _err = ctl(*expected["argv"][1:])
        assert code == 0
        if "json" in case:
            ours, theirs = _json_lines(out), _json_lines(_ours(expected["stdout"]))
            assert (ours[0], ours[1], ours[3]) == (theirs[0], theirs[1], theirs[3])
        else:
            assert sorted(out.splitlines()) == sorted(_ours(expected["stdout"]).splitlines())


def test_consumers_and_connections(node: Node) -> None:
    for case in ("list_consumers", "list_consumers_cols1"):
        expected = golden("rabbitmqctl", case)
        assert _lines(ctl(*expected["argv"][1:])[1]) == _lines(expected["stdout"])
    expected = golden("rabbitmqctl", "list_consumers_json")
    assert _json_lines(ctl(*expected["argv"][1:])[1]) == _json_lines(expected["stdout"])
    params = pika.ConnectionParameters("127.0.0.1", node.server.port, "ctl-golden",
                                       pika.PlainCredentials("ctl-golden-admin", "pw"))
    with pika.BlockingConnection(params) as connection:
        connection.channel()
        code, out, _err = ctl("list_connections", "-s")
        assert ("ctl-golden-admin", "127.0.0.1", "running") in [
            tuple(line.split("\t")[i] for i in (0, 1, 3)) for line in out.splitlines()]
        code, out, _err = ctl("list_connections", "pid", "user", "-s")
        pid = next(line.split("\t")[0] for line in out.splitlines() if "ctl-golden" in line)
        code, out, err = ctl("close_connection", pid, "golden test")
        assert (code, out, err) == (0, f"Closing connection {pid}, reason: golden test...\n", "")
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
            connection.process_data_events(1)
        assert (closed.value.reply_code, closed.value.reply_text) == (
            320, "CONNECTION_FORCED - golden test")


# -- errors: texts and exit codes ------------------------------------------------------------

ERRORS = ["list_queues_unknown_column", "list_exchanges_unknown_column",
          "list_bindings_unknown_column", "list_users_unknown_column",
          "wrong_arity_list_queues", "delete_user_missing", "delete_vhost_missing",
          "change_password_missing_user", "set_user_tags_missing_user",
          "set_permissions_missing_user", "set_permissions_missing_vhost",
          "clear_permissions_missing_user", "clear_permissions_missing_vhost",
          "set_topic_permissions_missing_user", "clear_policy_missing",
          "set_policy_bad_json", "set_policy_missing_vhost", "set_policy_bad_apply_to",
          "set_policy_unknown_key", "set_vhost_limits_bad_json", "purge_queue_missing",
          "purge_queue_missing_vhost", "delete_queue_missing",
          "authenticate_user_missing_user", "set_user_limits_missing_user",
          "close_connection_bad_pid", "trace_on", "trace_on_missing_vhost",
          "set_vm_memory_high_watermark_2", "set_disk_free_limit_abc",
          "set_vm_memory_high_watermark_same", "set_disk_free_limit_same",
          "list_user_permissions_missing_user", "list_user_topic_permissions_missing_user",
          "list_user_limits_missing_user", "clear_vhost_limits_missing_vhost",
          "list_vhost_limits_missing_vhost", "unknown_command_close_match",
          "list_user_topic_permissions", "list_user_topic_permissions_ctl-golden-multi",
          "list_vhost_limits_json", "list_user_limits_json", "list_user_limits",
          "list_vhost_limits", "set_parameter_unknown_component", "clear_parameter_missing",
          "wait_missing_pidfile"]


@pytest.mark.parametrize("case", ERRORS)
def test_refusals_have_rabbitmqs_text_and_exit_code(node: Node, case: str) -> None:
    expected = golden("rabbitmqctl", case)
    code, out, err = ctl(*expected["argv"][1:])
    assert (code, out) == (expected["exit"], expected["stdout"])
    if "argument validation" in expected["stderr"]:  # (the usage text after it is ours)
        assert err.split("\n\x1b")[0] == expected["stderr"].split("\n\x1b")[0]
    else:
        assert err == expected["stderr"]


def test_a_node_that_is_not_running_is_exit_69_with_rabbitmqs_first_line() -> None:
    expected = golden("rabbitmqctl", "missing_node_list_queues")
    code, out, err = ctl(*expected["argv"][1:])
    assert (code, out) == (69, "")
    assert err.splitlines()[0] == expected["stderr"].splitlines()[0]


def test_add_user_reads_its_password_from_standard_input(node: Node,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """As RabbitMQ's (recorded: add_user_no_password): without a password argument, a line
    of standard input; none there is exit 65 with its text."""
    expected = golden("rabbitmqctl", "add_user_no_password")
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, out, err = ctl(*expected["argv"][1:])
    assert (code, out, err) == (expected["exit"], expected["stdout"], expected["stderr"])
    monkeypatch.setattr(sys, "stdin", io.StringIO("from-stdin\n"))
    assert ctl("add_user", "piped")[0] == 0
    assert node.broker.access.check_login("piped", "from-stdin", loopback=True) is None


def test_users_vhosts_and_permissions_round_trip(node: Node) -> None:
    broker = node.broker
    assert ctl("add_user", "bob", "s3cret")[0] == 0
    assert ctl("add_user", "bob", "s3cret")[:3:2] == (70, 'Error:\nUser "bob" already exists\n')
    assert ctl("authenticate_user", "bob", "s3cret")[1].endswith("Success\n")
    assert ctl("authenticate_user", "bob", "wrong")[0] == 65
    assert ctl("set_user_tags", "bob", "management", "monitoring")[0] == 0
    assert ctl("add_vhost", "v1")[0] == 0
    assert broker.access.permissions("bob", "v1") is None  # (rabbitmqctl grants nothing)
    assert ctl("set_permissions", "-p", "v1", "bob", ".*", "", ".*")[0] == 0
    assert ctl("list_user_permissions", "bob", "-s")[1] == "v1\t.*\t\t.*\n"
    assert ctl("set_vhost_limits", "-p", "v1", '{"max-queues": 3}')[0] == 0
    assert ctl("list_vhost_limits", "-p", "v1", "-q")[1] == '{"max-queues":3}\n'
    assert ctl("set_user_limits", "bob", '{"max-connections": 2}')[0] == 0
    assert ctl("list_user_limits", "--user", "bob", "-q")[1] == '{"max-connections":2}\n'
    assert ctl("delete_vhost", "v1")[0] == 0
    assert "v1" not in broker.vhosts
    assert ctl("delete_user", "bob")[0] == 0
    assert "bob" not in broker.users


def test_definitions_export_and_import(node: Node, tmp_path: Path) -> None:
    path = tmp_path / "defs.json"
    code, out, _err = ctl("export_definitions", str(path))
    assert (code, out) == (0, f'Exporting definitions in JSON to a file at "{path}" ...\n')
    document = json.loads(path.read_text())
    assert {q["name"] for q in document["queues"]} >= {"q.args", "q.classic"}
    fresh = Broker()
    with Server(fresh) as server, Node(fresh, server, "rabbit@fresh"):
        code, out, _err = ctl("-n", "rabbit@fresh", "import_definitions", str(path))
        assert code == 0
        assert out.endswith("can take some time.\n")
        assert "q.args" in fresh.vhost("ctl-golden").queues


# -- the node's application and alarms ---------------------------------------------------------

def test_stop_app_closes_clients_and_start_app_serves_again(node: Node) -> None:
    params = pika.ConnectionParameters("127.0.0.1", node.server.port)
    connection = pika.BlockingConnection(params)
    assert ctl("stop_app") == (0, f"Stopping rabbit application on node {NODE} ...\n", "")
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
        connection.process_data_events(1)
    assert closed.value.reply_code == 320
    assert ctl("reset")[0] == 0
    assert ctl("start_app")[0] == 0
    assert "ctl-golden" not in node.broker.vhosts  # (reset: the broker as constructed)
    with pika.BlockingConnection(params) as again:
        again.channel().queue_declare("after")
    assert ctl("list_queues", "-s")[1] == "after\t0\n"


def test_reset_refused_while_the_app_runs(node: Node) -> None:
    code, _out, err = ctl("reset")
    assert code == 69
    assert "requires the 'rabbit' app to be stopped" in err


def test_memory_alarm_blocks_publishers_and_is_listed(node: Node) -> None:
    params = pika.ConnectionParameters("127.0.0.1", node.server.port)
    with pika.BlockingConnection(params) as connection:
        blocked: list[str] = []
        connection.add_on_connection_blocked_callback(
            lambda _c, frame: blocked.append(frame.method.reason))
        assert ctl("set_vm_memory_high_watermark", "0")[0] == 0
        connection.channel().basic_publish("", "nowhere", b"held")  # (told when it publishes)
        connection.process_data_events(0.5)
        assert blocked == ["low on memory"]
        code, out, err = ctl("check_local_alarms", tool="rabbitmq-diagnostics")
        assert code == 69
        assert "memory" in err
        assert ctl("set_vm_memory_high_watermark", "0.4")[0] == 0
        code, out, _err = ctl("alarms", tool="rabbitmq-diagnostics")
        assert out.endswith("reported no alarms, local or clusterwide\n")


# -- diagnostics and plugins --------------------------------------------------------------------

def test_diagnostics_ping_listeners_and_ports(node: Node) -> None:
    assert ctl("ping", tool="rabbitmq-diagnostics")[1].endswith("Ping succeeded\n")
    _code, out, _err = ctl("listeners", tool="rabbitmq-diagnostics")
    assert f"port: {node.server.port}, protocol: amqp, purpose: AMQP 0-9-1 and AMQP 1.0" in out
    assert ctl("check_port_connectivity", tool="rabbitmq-diagnostics")[0] == 0
    assert ctl("check_port_listener", str(node.server.port), tool="rabbitmq-diagnostics")[0] == 0
    assert ctl("check_running", tool="rabbitmq-diagnostics")[0] == 0


@pytest.mark.parametrize("case", ["ping", "check_running", "is_running", "check_local_alarms",
                                  "alarms", "check_virtual_hosts", "missing_node_ping"])
def test_diagnostics_print_what_rabbitmq_diagnostics_prints(node: Node, case: str) -> None:
    expected = golden("rabbitmq-diagnostics", case)
    code, out, err = ctl(*expected["argv"][1:], tool="rabbitmq-diagnostics")
    assert (code, out) == (expected["exit"], expected["stdout"])
    assert err.split("\n")[0] == expected["stderr"].split("\n")[0]


def test_plugins_list_and_is_enabled(node: Node) -> None:
    code, out, _err = ctl("list", tool="rabbitmq-plugins")
    assert out.splitlines()[:4] == golden("rabbitmq-plugins", "list")["stdout"].splitlines()[:4]
    assert "[E*] rabbitmq_amqp1_0" in out
    expected = golden("rabbitmq-plugins", "is_enabled_not")
    code, out, _err = ctl(*expected["argv"][1:], tool="rabbitmq-plugins")
    assert (code, out) == (69, expected["stdout"])


def test_plugins_enable_and_disable_on_a_running_node(tmp_path: Path) -> None:
    """As RabbitMQ 3.10.8 (checked live on a node of its own with
    rabbitmq_consistent_hash_exchange): enabled, its type can be declared at once; disabled, a
    declare is refused as an "invalid exchange type" while the exchange declared before goes
    on routing; the tool writes the file its environment names, and refuses a node that uses
    another one (exit 65)."""
    path = tmp_path / "enabled_plugins"
    path.write_text("[].\n")
    broker = Broker()
    environ = {**os.environ, "RABBITMQ_ENABLED_PLUGINS_FILE": str(path)}
    # (as rabbitmq-server starts a node whose file lists no plugin: no AMQP 1.0 either)
    with Server(broker, amqp10=False) as server, Node(broker, server, NODE,
                                                      enabled_plugins_file=path):
        out, err = io.StringIO(), io.StringIO()
        assert plugins(["enable", "rabbitmq_consistent_hash_exchange"], out=out, err=err,
                       environ=environ) == 0
        assert out.getvalue().endswith("The following plugins have been enabled:\n"
                                       "  rabbitmq_consistent_hash_exchange\n\n"
                                       "started 1 plugins.\n")
        assert path.read_text() == "[rabbitmq_consistent_hash_exchange].\n"
        channel = broker.connect().channel()
        channel.exchange_declare("hashed", "x-consistent-hash")
        channel.queue_declare("q")
        channel.queue_bind("q", "hashed", "10")
        assert plugins(["disable", "rabbitmq_consistent_hash_exchange"], out=io.StringIO(),
                       err=io.StringIO(), environ=environ) == 0
        channel.basic_publish("hashed", "k", b"still routed")
        assert broker.queues["q"].message_count == 1
        with pytest.raises(Exception, match="invalid exchange type 'x-consistent-hash'"):
            broker.connect().channel().exchange_declare("other", "x-consistent-hash")
        out, err = io.StringIO(), io.StringIO()
        assert plugins(["enable", "rabbitmq_sharding"], out=out, err=err,
                       environ={**os.environ, "RABBITMQ_ENABLED_PLUGINS_FILE": ""}) == 65
        assert err.getvalue() == (
            " Could not update enabled plugins file at /etc/rabbitmq/enabled_plugins: target "
            f"node {NODE} uses a different path ({path})\n")


# -- the shims and rabbitmq-server, as processes ------------------------------------------------

def test_shims_drive_a_node_started_by_rabbitmq_server(tmp_path: Path) -> None:
    """An unmodified shell script, as CI scripts are: it starts rabbitmq-server from
    RabbitMQ's environment, waits for it with rabbitmq-diagnostics, sets it up with
    rabbitmqctl and stops it."""
    bin_dir = tmp_path / "bin"
    subprocess.run([sys.executable, "-m", "embroker", "shims", str(bin_dir)], check=True,
                   capture_output=True)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
           "RABBITMQ_NODENAME": "ci-node", "RABBITMQ_NODE_PORT": "0",
           "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
           "RABBITMQ_CONFIG_FILE": str(tmp_path / "none"),
           "RABBITMQ_LOG_BASE": str(tmp_path / "log"),
           "RABBITMQ_MNESIA_BASE": str(tmp_path / "data"),
           "RABBITMQ_ENABLED_PLUGINS_FILE": str(tmp_path / "enabled_plugins")}
    script = """
set -e
rabbitmq-server -detached
rabbitmqctl await_startup --timeout 20
rabbitmqctl add_vhost ci
rabbitmqctl add_user ci-user ci-pass
rabbitmqctl set_permissions -p ci ci-user '.*' '.*' '.*'
rabbitmqctl list_vhosts -s
rabbitmq-diagnostics -q check_running
rabbitmqctl stop
"""
    result = subprocess.run(["sh", "-c", script], check=False, env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert "/\nci\n" in result.stdout
    assert lookup("ci-node@" + os.uname().nodename.split(".")[0]) is None


def test_serve_names_its_node_and_refuses_a_name_in_use(tmp_path: Path) -> None:
    """``serve --node NAME``: rabbitmqctl reaches it by that name; a second ``serve`` asking
    for the same name gets one line and exit 1 (a default name would be made unique)."""
    command = [sys.executable, "-m", "embroker", "serve", "--port", "0", "--no-management",
               "--quiet", "--node", "named"]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert first.stdout is not None
        assert "node named@" in first.stdout.readline()
        assert ctl("-n", "named", "list_vhosts", "-s") == (0, "/\n", "")
        second = subprocess.run(command, capture_output=True, text=True, timeout=30,
                                check=False)
        assert second.returncode == 1
        assert second.stderr == ("embroker: node name named is taken by another running "
                                 "embroker; give another with --node\n")
    finally:
        first.terminate()
        first.wait(10)


def test_enabling_the_management_plugin_opens_its_listener_at_once(tmp_path: Path) -> None:
    """As RabbitMQ's: rabbitmq-plugins enable rabbitmq_management on a running node starts
    the HTTP API on its port; disable stops it (port 0 here: any free port)."""
    path = tmp_path / "enabled_plugins"
    environ = {**os.environ, "RABBITMQ_ENABLED_PLUGINS_FILE": str(path)}
    broker = Broker()
    with Server(broker) as server, Node(broker, server, NODE, enabled_plugins_file=path,
                                        plugin_ports={"rabbitmq_management": 0,
                                                      "rabbitmq_stream": 0}):
        out = io.StringIO()
        assert plugins(["enable", "rabbitmq_management", "rabbitmq_stream"], out=out,
                       err=io.StringIO(), environ=environ) == 0
        assert out.getvalue().endswith("  rabbitmq_management\n  rabbitmq_stream\n\n"
                                       "started 2 plugins.\n")
        assert server.management_port is not None
        assert server.stream_port is not None
        import urllib.request

        request = urllib.request.Request(f"http://127.0.0.1:{server.management_port}/api/"
                                         "overview", headers={"Authorization":
                                                              "Basic Z3Vlc3Q6Z3Vlc3Q="})
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert json.load(answer)["product_name"]
        listed = ctl("listeners", tool="rabbitmq-diagnostics")[1]
        assert f"port: {server.stream_port}, protocol: stream" in listed
        assert plugins(["disable", "rabbitmq_management"], out=io.StringIO(),
                       err=io.StringIO(), environ=environ) == 0
        assert server.management_port is None
        assert "protocol: http" not in ctl("listeners", tool="rabbitmq-diagnostics")[1]


def test_management_health_checks_report_the_nodes_alarms() -> None:
    """The management API reads the same alarms as rabbitmq-diagnostics: 503 with
    rabbit_alarm:format_as_map/1's resources ("memory", "disk space") and the reasons of
    rabbit_mgmt_wm_health_check_alarms / _local_alarms (v3.10.8 source); /nodes shows the
    disk monitor's limit and alarm."""
    import urllib.error
    import urllib.request

    broker = Broker()
    with broker.serve(management=True) as server:
        base = f"http://127.0.0.1:{server.management_port}/api"

        def get(path: str) -> tuple[int, Any]:
            request = urllib.request.Request(base + path, headers={
                "Authorization": "Basic Z3Vlc3Q6Z3Vlc3Q="})
            try:
                with urllib.request.urlopen(request, timeout=5) as answer:
                    return answer.status, json.load(answer)
            except urllib.error.HTTPError as failed:
                return failed.code, json.load(failed)

        assert get("/health/checks/alarms") == (200, {"status": "ok"})
        server.set_vm_memory_high_watermark(0)
        server.set_disk_free_limit(10**18)
        status, body = get("/health/checks/alarms")
        assert status == 503
        assert body["reason"] == "There are alarms in effect in the cluster"
        assert sorted(a["resource"] for a in body["alarms"]) == ["disk space", "memory"]
        assert get("/health/checks/local-alarms")[1]["reason"] == (
            "There are alarms in effect on the node")
        (about,) = get("/nodes")[1]
        assert (about["disk_free_limit"], about["disk_free_alarm"], about["mem_alarm"]) == (
            10**18, True, True)
        server.set_vm_memory_high_watermark(0.4)
        server.set_disk_free_limit(50_000_000)
        assert get("/health/checks/alarms") == (200, {"status": "ok"})


def test_start_app_restores_the_configured_limits_not_rabbitmqs_defaults(tmp_path: Path) -> None:
    """start_app reads the configuration again (as RabbitMQ's): what set_vm_memory_high_watermark
    and set_disk_free_limit set at run time is gone, rabbitmq.conf's values come back."""
    from embroker.control._config import read_node_settings
    from embroker.control._server_cli import build

    conf = tmp_path / "rabbitmq.conf"
    conf.write_text("vm_memory_high_watermark.relative = 0.6\n"
                    "disk_free_limit.absolute = 1000000\n")
    settings = read_node_settings({"RABBITMQ_CONFIG_FILE": str(conf),
                                   "RABBITMQ_NODE_PORT": "0",
                                   "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
                                   "RABBITMQ_ENABLED_PLUGINS_FILE": str(tmp_path / "none")})
    _broker, server = build(settings)
    with server:
        assert (server.vm_memory_high_watermark, server.disk_free_limit) == (0.6, 1_000_000)
        server.set_vm_memory_high_watermark(0.9)
        server.set_disk_free_limit(2_000_000)
        server.stop_app()
        server.start_app()
        assert (server.vm_memory_high_watermark, server.disk_free_limit) == (0.6, 1_000_000)


def test_wait_for_a_pid_waits_for_the_application_as_rabbitmqctl_says(node: Node) -> None:
    expected = golden("rabbitmqctl", "wait_pid")
    pid = expected["argv"][-1]
    code, out, err = ctl("wait", "--pid", pid)
    assert (code, out, err) == (0, expected["stdout"], "")


def test_close_all_connections_closes_the_vhosts_clients_with_the_reason(node: Node) -> None:
    """(golden close_all_connections: "Closed N connections"; each client gets 320 with the
    reason, as rabbitmqctl close_connection's.)"""
    params = pika.ConnectionParameters("127.0.0.1", node.server.port, "ctl-golden",
                                       pika.PlainCredentials("ctl-golden-admin", "pw"))
    elsewhere = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1",
                                                                  node.server.port))
    with pika.BlockingConnection(params) as connection:
        code, out, err = ctl("close_all_connections", "-p", "ctl-golden", "golden test")
        # (the golden state's consumer, in-process here, and this client)
        assert (code, err) == (0, "")
        assert out == golden("rabbitmqctl", "close_all_connections")["stdout"]
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
            connection.process_data_events(1)
        assert (closed.value.reply_code, closed.value.reply_text) == (
            320, "CONNECTION_FORCED - golden test")
    assert elsewhere.is_open  # (another vhost's)
    elsewhere.close()
    expected = golden("rabbitmqctl", "close_all_connections_none")
    assert ctl(*expected["argv"][1:])[1] == expected["stdout"]


def test_status_shows_the_nodes_sections_and_figures(node: Node) -> None:
    code, out, _err = ctl("status")
    assert code == 0
    sections = [line for line in out.splitlines() if line.startswith("\x1b[1m")]
    assert sections == [f"\x1b[1m{name}\x1b[0m" for name in (
        "Runtime", "Plugins", "Data directory", "Config files", "Log file(s)", "Alarms",
        "Memory", "Free Disk Space", "Totals", "Listeners")]
    assert f"OS PID: {os.getpid()}" in out
    assert f"Node name: {NODE}" in out
    assert f"port: {node.server.port}, protocol: amqp" in out
    assert "Virtual host count: 2" in out
    assert ctl("status", "--formatter", "json")[1].startswith('{"pid":')


#: What RabbitMQ 3.10.8's rabbitmq-plugins prints on stderr (exit 70) when the stream plugin's
#: listener cannot start on a running node (recorded live on a node of its own, its
#: stream.listeners.tcp.default held by another socket; its file then lists the plugin, which is
#: not running). {ADDRESS} and {PORT} are the listener's.
STREAM_LISTENER_REFUSED = (
    '{{:case_clause, {{:could_not_start, :rabbitmq_stream, {{:rabbitmq_stream, {{{{:shutdown, '
    '{{:failed_to_start_child, :"rabbit_stream_listener_sup_{IP}:{PORT}", {{:shutdown, '
    '{{:failed_to_start_child, {{:ranch_embedded_sup, {{:acceptor, {ADDRESS}, {PORT}}}}}, '
    '{{:shutdown, {{:failed_to_start_child, {{:ranch_listener_sup, {{:acceptor, {ADDRESS}, '
    '{PORT}}}}}, {{:shutdown, {{:failed_to_start_child, :ranch_acceptors_sup, {{:listen_error, '
    '{{:acceptor, {ADDRESS}, {PORT}}}, :eaddrinuse}}}}}}}}}}}}}}}}}}, {{:rabbit_stream, :start, '
    '[:normal, []]}}}}}}}}}}\n\n')


@pytest.mark.parametrize("plugin", ["rabbitmq_management", "rabbitmq_stream"])
def test_a_plugin_whose_port_is_taken_is_refused_and_the_node_stays_as_it_was(
        tmp_path: Path, plugin: str) -> None:
    """rabbitmq-plugins enable of a listener plugin whose configured port is taken: exit 70
    with RabbitMQ's error, and nothing changes (issue 44): the enabled-plugins file keeps its
    bytes (RabbitMQ's keeps the new list, which the next start would fail on), the exchange
    type enabled in the same call is not, the registry entry is the same, and the node goes on
    serving AMQP and its control port (it used to close every socket and stay alive)."""
    path = tmp_path / "enabled_plugins"
    path.write_text("% the operator's file\n[rabbitmq_sharding].\n")
    environ = {**os.environ, "RABBITMQ_ENABLED_PLUGINS_FILE": str(path)}
    broker = Broker(plugins=("rabbitmq_sharding",))
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        with Server(broker) as server, Node(broker, server, NODE, enabled_plugins_file=path,
                                            plugin_ports={plugin: taken}) as node:
            entry = lookup(NODE)
            out, err = io.StringIO(), io.StringIO()
            code = plugins(["enable", plugin, "rabbitmq_consistent_hash_exchange"], out=out,
                           err=err, environ=environ)
            assert code == 70
            assert out.getvalue().endswith(f"Applying plugin configuration to {NODE}...\n")
            if plugin == "rabbitmq_stream":
                assert err.getvalue() == STREAM_LISTENER_REFUSED.format(
                    IP="127.0.0.1", ADDRESS="{127, 0, 0, 1}", PORT=taken)
            else:
                assert err.getvalue().startswith(
                    "{:case_clause, {:could_not_start, :rabbitmq_management, ")
                assert f"{{:listen_error, {{:acceptor, {{127, 0, 0, 1}}, {taken}}}, " \
                       ":eaddrinuse}" in err.getvalue()
            assert path.read_text() == "% the operator's file\n[rabbitmq_sharding].\n"
            assert broker.plugins.enabled == {"rabbitmq_sharding"}
            assert lookup(NODE) == entry
            assert (server.management_port, server.stream_port) == (None, None)
            with pika.BlockingConnection(pika.URLParameters(server.url)) as connection:
                connection.channel().queue_declare("still-served")
            assert ctl("list_queues", "name", "-s") == (0, "still-served\n", "")
            assert "rabbitmq_consistent_hash_exchange" not in ctl(
                "list", "-e", "-m", tool="rabbitmq-plugins")[1]
            holder.close()  # the port is free now: the same command succeeds
            assert plugins(["enable", plugin], out=io.StringIO(), err=io.StringIO(),
                           environ=environ) == 0
            assert taken in (server.management_port, server.stream_port)
            assert lookup(NODE) != entry  # (its ports: the new listener's)
            assert node.server.errors == []


def _shims_env(tmp_path: Path, conf: str = "", name: str = "ci") -> dict[str, str]:
    """The shims first on PATH, and RabbitMQ's variables that keep a node started by the shimmed
    rabbitmq-server away from the machine's own RabbitMQ files and ports."""
    bin_dir = tmp_path / "bin"
    if not bin_dir.exists():
        subprocess.run([sys.executable, "-m", "embroker", "shims", str(bin_dir)], check=True,
                       capture_output=True)
    (tmp_path / "rabbitmq.conf").write_text(conf)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "RABBITMQ_NODENAME": f"{name}-{os.getpid()}@localhost", "RABBITMQ_NODE_PORT": "0",
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_CONFIG_FILE": str(tmp_path / "rabbitmq.conf"),
            "RABBITMQ_CONF_ENV_FILE": str(tmp_path / "rabbitmq-env.conf"),
            "RABBITMQ_LOG_BASE": str(tmp_path / "log"),
            "RABBITMQ_MNESIA_BASE": str(tmp_path / "data"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(tmp_path / "enabled_plugins")}


def _tool(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=60,
                          check=False)


@contextlib.contextmanager
def _node_then_management(env: dict[str, str], tmp_path: Path) -> Iterator[None]:
    """A CI job's start: ``rabbitmq-server -detached`` with no plugin, then ``rabbitmq-plugins
    enable rabbitmq_management`` on the running node; ``rabbitmqctl stop`` after, which must
    succeed."""
    (tmp_path / "enabled_plugins").write_text("[].\n")
    assert _tool(env, "rabbitmq-server", "-detached").returncode == 0
    try:
        assert _tool(env, "rabbitmqctl", "await_startup", "--timeout", "20").returncode == 0
        enabled = _tool(env, "rabbitmq-plugins", "enable", "rabbitmq_management")
        assert enabled.returncode == 0, enabled.stderr
        yield
    finally:
        stopped = _tool(env, "rabbitmqctl", "stop")
    assert stopped.returncode == 0, stopped.stderr


def test_rabbitmq_server_enables_a_plugin_at_run_time_on_its_configured_port(
        tmp_path: Path) -> None:
    """A CI job's steps (issue 44): rabbitmq-server -detached with management.tcp.port and
    stream.listeners.tcp.default in rabbitmq.conf and no plugin; rabbitmq-plugins enable
    rabbitmq_management listens on the configured port (not 15672); enabling rabbitmq_stream,
    whose port another socket holds, is exit 70 and the node goes on: the tools reach it and
    rabbitmqctl stop stops it."""
    with socket.socket() as free, socket.socket() as holder:
        free.bind(("127.0.0.1", 0))
        management = free.getsockname()[1]
        free.close()
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        stream = holder.getsockname()[1]
        env = _shims_env(tmp_path, f"management.tcp.port = {management}\n"
                                   f"stream.listeners.tcp.default = {stream}\n")
        with _node_then_management(env, tmp_path):
            listeners = _tool(env, "rabbitmq-diagnostics", "listeners").stdout
            assert f"port: {management}, protocol: http" in listeners
            refused = _tool(env, "rabbitmq-plugins", "enable", "rabbitmq_stream")
            assert refused.returncode == 70
            assert ":eaddrinuse" in refused.stderr
            assert (tmp_path / "enabled_plugins").read_text() == "[rabbitmq_management].\n"
            assert _tool(env, "rabbitmqctl", "list_vhosts", "-s").stdout == "/\n"
            assert "protocol: stream" not in _tool(env, "rabbitmq-diagnostics",
                                                   "listeners").stdout
        assert lookup(env["RABBITMQ_NODENAME"]) is None


def test_stop_returns_once_the_node_is_down_whatever_its_process_does() -> None:
    """rabbitmqctl stop without a pid file returns once the node is down (RabbitMQ's rpc to
    rabbit:stop_and_halt returns as the node goes): its ports closed, its name free. It does
    not wait for the process to end (issue 44: 1.2-1.7 s; the whole timeout for a process
    that lives on, as this test's own, or one whose parent has not reaped it yet)."""
    broker = Broker()
    server = broker.serve()
    Node(broker, server, NODE).start()
    done: list[tuple[int, str, str]] = []
    waiting = threading.Thread(target=lambda: done.append(ctl("stop", "--timeout", "600")),
                               daemon=True)
    waiting.start()
    waiting.join(30)  # (a bound on a hang, not a timing: it returns at once)
    assert done == [(0, f"Stopping and halting node {NODE} ...\n", "")]
    assert not server.running
    assert lookup(NODE) is None
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=5)
    assert ctl("stop", "--idempotent") == (
        0, f"Stopping and halting node {NODE} ...\nNode {NODE} is no longer running\n", "")


# -- help and version ---------------------------------------------------------------------------

USAGES = [("rabbitmqctl", case) for case in ("help", "usage_help_flag", "no_command",
                                             "usage_h_flag", "unknown_command")] + [
    (tool, case) for tool in ("rabbitmq-diagnostics", "rabbitmq-plugins")
    for case in ("usage_help", "usage_help_flag", "usage_no_command", "unknown_command")]


def _listed(usage: str) -> dict[str, tuple[str, str]]:
    """The commands a usage lists: each one's section and description."""
    found, section = {}, ""
    for line in usage.splitlines():
        heading = re.fullmatch(r"\x1b\[1m(.*)\x1b\[0m:", line)
        if heading:
            section = heading[1]
        elif line.startswith("   ") and section:
            name, _, description = line.strip().partition(" ")
            found[name] = (section, description.strip())
    return found


@pytest.mark.parametrize(("tool", "case"), USAGES)
def test_usage_is_rabbitmqs_where_and_with_the_exit_code_it_has(tool: str, case: str) -> None:
    """``--help`` and ``help``: the usage on stdout, exit 0; no command, ``-h`` alone or an
    unknown command: on stderr, exit 64 (issue 44: --help was exit 64). Its lines are RabbitMQ's:
    the tool's usage line, each command embroker has in RabbitMQ's section with its description,
    the closing line."""
    expected = golden(tool, case)
    code, out, err = ctl(*expected["argv"][1:], tool=tool)
    assert (code, bool(out), bool(err)) == (expected["exit"], bool(expected["stdout"]),
                                            bool(expected["stderr"]))
    ours, theirs = out or err, expected["stdout"] or expected["stderr"]
    assert ours.splitlines()[:7] == theirs.splitlines()[:7]
    assert ours.splitlines()[-1] == theirs.splitlines()[-1]
    listed, recorded = _listed(ours), _listed(theirs)
    assert {"help", "version"} <= set(listed)
    assert {name: listed[name] for name in listed if name in recorded} == {
        name: recorded[name] for name in listed if name in recorded}
    assert set(listed) - set(recorded) <= {"await_startup"}  # (embroker's diagnostics has it)


@pytest.mark.parametrize(("tool", "case"), [
    ("rabbitmqctl", "version"), ("rabbitmqctl", "usage_version_flag"),
    ("rabbitmqctl", "usage_version_json"), ("rabbitmqctl", "usage_help_version"),
    ("rabbitmqctl", "usage_help_unknown"), ("rabbitmq-diagnostics", "usage_version"),
    ("rabbitmq-plugins", "usage_version")])
def test_version_is_the_tools_own_as_rabbitmq_prints_it(tool: str, case: str) -> None:
    """``version`` (and ``--version``): the CLI tools' version, 3.10.8, without asking a node
    (issue 44: missing)."""
    expected = golden(tool, case)
    code, out, err = ctl(*expected["argv"][1:], tool=tool)
    assert (code, err) == (expected["exit"], expected["stderr"])
    if case.startswith("usage_help"):
        assert out.split("\n\n")[:2] == expected["stdout"].split("\n\n")[:2]
    else:
        assert out == expected["stdout"]


def test_the_tools_version_is_the_default_profiles() -> None:
    from embroker.control._help import CLI_VERSION
    from embroker.model._profile import Profile

    assert Profile().presented_version == CLI_VERSION


def test_global_parameters_print_their_value_as_json_text(node: Node) -> None:
    """(golden list_global_parameters*: the value is JSON text in every formatter; the
    reference's internal_cluster_id row is its own.)"""
    node.broker.set_global_parameter("ctl-golden-gp", {"colour": "blue", "n": 1})
    for case in ("list_global_parameters", "list_global_parameters_json"):
        expected = golden("rabbitmqctl", case)
        code, out, _err = ctl(*expected["argv"][1:])
        assert code == 0
        ours, theirs = ({line.lstrip(",") for line in text.splitlines()
                         if "internal_cluster_id" not in line}
                        for text in (out, expected["stdout"]))
        assert ours == theirs


@pytest.mark.parametrize(("as_rabbitmq", "version"), [(None, "3.10.8"), ("4.1.x", "4.1.0")])
def test_server_version_is_the_rabbitmq_version_of_the_profile(as_rabbitmq: str | None,
                                                             version: str) -> None:
    """rabbitmq-diagnostics server_version says the RabbitMQ version the node behaves as (its
    profile's, as its AMQP server properties do with --as-rabbitmq), not embroker's (issue 44:
    a script expecting 3.10.x read embroker's version); status shows both."""
    from embroker._version import __version__

    broker = Broker(as_rabbitmq=as_rabbitmq)
    with Server(broker) as server, Node(broker, server, NODE):
        for case in ("server_version", "server_version_json"):
            expected = golden("rabbitmq-diagnostics", case)
            code, out, err = ctl(*expected["argv"][1:], tool="rabbitmq-diagnostics")
            assert (code, out, err) == (0, expected["stdout"].replace("3.10.8", version), "")
        status = ctl("status")[1]
        assert f"RabbitMQ version: {version}\n" in status
        assert f"embroker version: {__version__}\n" in status
        assert re.search(rf"\[  \] rabbitmq_sharding +{version}\n",
                         ctl("list", tool="rabbitmq-plugins")[1])


def test_list_connections_shows_amqp_091_connections_with_rabbitmqs_protocol_term() -> None:
    """``protocol`` is the tuple {0,9,1} (table and csv) and [0,9,1] (json), not "AMQP 0-9-1"
    (issue 44; golden list_connections_cols1*, the held pika connection). As RabbitMQ 3.10.8's
    (checked live: a proton connection with a sender and an rstream producer open at once),
    list_connections lists AMQP 0-9-1 connections alone: AMQP 1.0 ones are
    list_amqp10_connections', stream ones list_stream_connections'."""
    import asyncio

    from proton.utils import BlockingConnection as ProtonConnection
    from rstream import Producer

    broker = Broker()
    broker.add_vhost("ctl-golden")
    broker.add_user("ctl-golden-admin", "pw", tags=["administrator"])
    broker.set_permissions("ctl-golden-admin", ".*", ".*", ".*", vhost="ctl-golden")
    with Server(broker, stream_port=0) as server, Node(broker, server, NODE):
        params = pika.ConnectionParameters(
            "127.0.0.1", server.port, "ctl-golden", pika.PlainCredentials("ctl-golden-admin", "pw"),
            client_properties={"connection_name": "ctl-golden-conn"})
        amqp10 = ProtonConnection(f"amqp://guest:guest@127.0.0.1:{server.port}",
                                  allowed_mechs="PLAIN")
        amqp10.create_sender("/exchange/amq.fanout")
        with pika.BlockingConnection(params) as connection:
            connection.channel()

            async def listed_with_a_stream_producer() -> list[tuple[int, str, str]]:
                async with Producer("127.0.0.1", server.stream_port or 0,
                                    username="guest", password="guest"):
                    return [ctl(*golden("rabbitmqctl", case)["argv"][1:]) for case in
                            ("list_connections_cols1", "list_connections_cols1_json")]

            (code, table, _err), (_code, as_json, _err2) = asyncio.run(
                listed_with_a_stream_producer())
        amqp10.close()
    assert code == 0
    name = re.compile(r"127\.0\.0\.1:\d+ -> 127\.0\.0\.1:\d+")
    assert name.sub("NAME", table) == name.sub(
        "NAME", golden("rabbitmqctl", "list_connections_cols1")["stdout"])
    assert name.sub("NAME", as_json) == name.sub(
        "NAME", golden("rabbitmqctl", "list_connections_cols1_json")["stdout"])
    assert '"protocol":[0,9,1]' in as_json


def _refuses_amqp10(port: int) -> bool:
    """Whether the port answers an AMQP 1.0 header with 0-9-1's (RabbitMQ without the plugin)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"AMQP\x03\x01\x00\x00")
        return sock.recv(8) == b"AMQP\x00\x00\x09\x01"


def test_rabbitmq_server_serves_amqp10_as_its_enabled_plugins_file_says(tmp_path: Path) -> None:
    """Under rabbitmq-server the enabled-plugins file decides, as in RabbitMQ 3.10 (issue 44:
    an empty file listed rabbitmq_amqp1_0 as [E*] and rabbitmq-plugins enable/disable wrote it
    away): none, and a 1.0 client gets the 0-9-1 header back; enabled on the running node, the
    next 1.0 client is served; disabled, refused again. (embroker serve serves 1.0 by default:
    the node fixture's listing has it [E*].)"""
    from proton.utils import BlockingConnection as ProtonConnection

    from embroker.control._config import read_node_settings
    from embroker.control._server_cli import build

    path = tmp_path / "enabled_plugins"
    path.write_text("[].\n")
    environ = {"RABBITMQ_CONFIG_FILE": str(tmp_path / "none"), "RABBITMQ_NODE_PORT": "0",
               "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1", "RABBITMQ_ENABLED_PLUGINS_FILE": str(path),
               "RABBITMQ_CONF_ENV_FILE": str(tmp_path / "none-env")}
    broker, server = build(read_node_settings(environ))
    tool_environ = {**os.environ, **environ}
    with server, Node(broker, server, NODE, enabled_plugins_file=path):
        assert "[  ] rabbitmq_amqp1_0 " in ctl("list", tool="rabbitmq-plugins")[1]
        assert _refuses_amqp10(server.port)
        out = io.StringIO()
        assert plugins(["enable", "rabbitmq_amqp1_0"], out=out, err=io.StringIO(),
                       environ=tool_environ) == 0
        assert out.getvalue().endswith("The following plugins have been enabled:\n"
                                       "  rabbitmq_amqp1_0\n\nstarted 1 plugins.\n")
        assert path.read_text() == "[rabbitmq_amqp1_0].\n"
        assert "[E*] rabbitmq_amqp1_0 " in ctl("list", tool="rabbitmq-plugins")[1]
        ProtonConnection(f"amqp://guest:guest@127.0.0.1:{server.port}",
                         allowed_mechs="PLAIN").close()
        out = io.StringIO()
        assert plugins(["disable", "rabbitmq_amqp1_0"], out=out, err=io.StringIO(),
                       environ=tool_environ) == 0
        assert out.getvalue().endswith("The following plugins have been disabled:\n"
                                       "  rabbitmq_amqp1_0\n\nstopped 1 plugins.\n")
        assert path.read_text() == "[].\n"
        assert _refuses_amqp10(server.port)
        assert server.errors == []


# -- patterns a client chose: bounded before they are compiled (issue 44) ------------------------

#: 500 nested groups: Python's parser recursed until RecursionError (the node answered 500, the
#: tool exit 70).
NESTED = "(" * 500 + "a" + ")" * 500
TOO_DEEP = "pattern too complex: nesting depth 500 exceeds the maximum of 50"


@pytest.mark.parametrize("argv", [
    ["set_policy", "-p", "ctl-golden", "p", "PATTERN", '{"max-length": 1}'],
    ["set_operator_policy", "-p", "ctl-golden", "p", "PATTERN", '{"max-length": 1}'],
    ["set_permissions", "-p", "ctl-golden", "ctl-golden-plain", "PATTERN", ".*", ".*"],
    ["set_topic_permissions", "-p", "ctl-golden", "ctl-golden-plain", "amq.topic", "PATTERN",
     ".*"]], ids=lambda argv: argv[0])
def test_a_pattern_too_costly_to_compile_is_refused_as_a_bad_one_naming_the_bound(
        node: Node, argv: list[str]) -> None:
    """The command refuses it as it refuses a syntax error (``(``: exit 69, as RabbitMQ
    3.10.8's, golden/rabbitmqctl/set_permissions_bad_regex.json), the bound in words; the
    node goes on (``node`` checks its errors), nothing is set."""
    bad = ctl(*[a if a != "PATTERN" else "(" for a in argv])
    code, out, err = ctl(*[a if a != "PATTERN" else NESTED for a in argv])
    assert (code, bad[0]) == (69, 69)
    assert out.startswith("Setting ")
    assert err.startswith("Error:\n")
    assert TOO_DEEP in err
    broker = node.broker
    assert [p.name for p in broker.list_policies("ctl-golden")] == ["p1"]
    assert [p.name for p in broker.list_operator_policies("ctl-golden")] == ["op1"]
    assert broker.access.permissions("ctl-golden-plain", "ctl-golden").configure == r"^q\."


def test_definitions_with_a_pattern_too_costly_are_refused_as_with_a_bad_one(
        node: Node, tmp_path: Path) -> None:
    refusals = []
    for pattern in ("(", NESTED):
        path = tmp_path / "defs.json"
        path.write_text(json.dumps({"policies": [
            {"vhost": "ctl-golden", "name": "p9", "pattern": pattern, "apply-to": "all",
             "definition": {"max-length": 1}, "priority": 0}]}))
        refusals.append(ctl("import_definitions", str(path)))
    (bad_code, _, _), (code, _, err) = refusals
    assert code == bad_code != 0
    assert TOO_DEEP in err
    assert "p9" not in [p.name for p in node.broker.list_policies("ctl-golden")]


def test_plugins_list_matches_its_pattern_as_the_broker_does_and_refuses_a_bad_one(
        node: Node) -> None:
    """``rabbitmq-plugins list PATTERN`` takes what RabbitMQ's Elixir regex takes (a
    lookahead); a pattern that does not compile is exit 70 after the banner, as RabbitMQ
    3.10.8's (checked live: ``Error:\\n{:badmatch, {:error, {'missing )', 1}}}``, PCRE's
    text), and a pattern too costly is refused the same way, naming the bound."""
    code, out, _err = ctl("list", "-m", "^(?!rabbitmq_st)rabbitmq_s", tool="rabbitmq-plugins")
    assert (code, out.splitlines()[1:]) == (0, ["rabbitmq_sharding"])
    code, out, err = ctl("list", "(", tool="rabbitmq-plugins")
    assert (code, out, err) == (70, 'Listing plugins with pattern "(" ...\n',
                                "Error:\n{:badmatch, {:error, "
                                "{'missing ), unterminated subpattern', 0}}}\n")
    code, out, err = ctl("list", NESTED, tool="rabbitmq-plugins")
    assert (code, err) == (70, f"Error:\n{{:badmatch, {{:error, {{'{TOO_DEEP}', 50}}}}}}\n")


def test_export_definitions_into_a_planted_symlink_is_refused(node: Node, tmp_path: Path) -> None:
    """``rabbitmqctl export_definitions /tmp/defs.json``: a symlink another user planted at
    that name is refused (it wrote the export, password hashes included, over the link's
    target), and a file the tool makes holds them for the user alone."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "defs.json").symlink_to(victim)
    code, _out, err = ctl("export_definitions", str(tmp_path / "defs.json"))
    assert code == 70
    assert "is a symlink" in err
    assert victim.read_text() == "precious\n"
    assert ctl("export_definitions", str(tmp_path / "mine.json"))[0] == 0
    assert stat.S_IMODE((tmp_path / "mine.json").stat().st_mode) == 0o600


def test_a_plugin_configured_over_tls_alone_listens_over_tls_alone(tmp_path: Path) -> None:
    """``management.ssl.port`` and no ``management.tcp.port``: rabbitmq-plugins enable on the
    running node opens the HTTPS port and no plain one (it opened a plain 15672); disable
    closes it."""
    import ssl
    import urllib.request

    import trustme

    from embroker.tls import TLSOptions

    ca = trustme.CA()
    leaf = ca.issue_cert("localhost", "127.0.0.1")
    leaf.cert_chain_pems[0].write_to_path(str(tmp_path / "server.pem"))
    leaf.private_key_pem.write_to_path(str(tmp_path / "server.key"))
    path = tmp_path / "enabled_plugins"
    path.write_text("[].\n")
    environ = {**os.environ, "RABBITMQ_ENABLED_PLUGINS_FILE": str(path)}
    broker = Broker()
    tls = TLSOptions(certfile=str(tmp_path / "server.pem"), keyfile=str(tmp_path / "server.key"))
    with Server(broker, tls=tls) as server, \
            Node(broker, server, NODE, enabled_plugins_file=path,
                 plugin_ports={"rabbitmq_management": None},
                 plugin_tls_ports={"rabbitmq_management": 0}):
        assert plugins(["enable", "rabbitmq_management"], out=io.StringIO(),
                       err=io.StringIO(), environ=environ) == 0
        assert server.management_port is None
        assert server.management_tls_port is not None
        context = ssl.create_default_context(cafile=None)
        ca.configure_trust(context)
        request = urllib.request.Request(f"https://127.0.0.1:{server.management_tls_port}"
                                         "/api/overview")
        request.add_header("Authorization", "Basic Z3Vlc3Q6Z3Vlc3Q=")
        with urllib.request.urlopen(request, context=context, timeout=10) as answer:
            assert answer.status == 200
        entry = lookup(NODE)
        assert entry is not None
        assert "https" in entry.ports
        assert plugins(["disable", "rabbitmq_management"], out=io.StringIO(),
                       err=io.StringIO(), environ=environ) == 0
        assert server.management_port is None
        assert server.management_tls_port is None
        assert server.errors == []
