"""A CI job's script, as a new user writes one for RabbitMQ, run over embroker's shims on a
machine whose own RabbitMQ may hold 5672, 15672 and 25672 (issue 44's bar).

The script is plain ``sh``: it starts ``rabbitmq-server -detached``, waits on the pid file,
enables the management plugin at run time on the port its rabbitmq.conf names, provisions a
vhost, a user, permissions and a policy, publishes with a real client, and reads everything back
with the tools before ``rabbitmqctl stop``. Its node name comes from its rabbitmq-env.conf, as a
machine's ``/etc/rabbitmq/rabbitmq-env.conf`` gives one; a second embroker node, of the name the
tools would guess without that file, runs beside it and must hear nothing of the job.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

from embroker import Broker
from embroker.control._env import node_name
from embroker.control._node import Node
from embroker.control._registry import entries, lookup

JOB = r"""
set -eu
rabbitmq-server -detached
rabbitmqctl wait "$RABBITMQ_PID_FILE" --timeout 30
rabbitmqctl await_startup --timeout 30
rabbitmq-plugins enable rabbitmq_management
rabbitmq-diagnostics check_port_listener "$MANAGEMENT_PORT"
rabbitmq-diagnostics -q ping
rabbitmq-diagnostics -q check_running
rabbitmq-diagnostics -q check_local_alarms
rabbitmqctl add_vhost ci
rabbitmqctl add_user ci ci-secret
rabbitmqctl set_user_tags ci administrator
rabbitmqctl set_permissions -p ci ci '.*' '.*' '.*'
rabbitmqctl set_policy -p ci --apply-to queues ttl '^jobs\.' '{"message-ttl": 60000}'
"$PYTHON" -c "$PUBLISH"
echo "== node";        rabbitmq-diagnostics -q status --formatter json
echo "== version";     rabbitmq-diagnostics -q server_version
echo "== listeners";   rabbitmq-diagnostics -q listeners --formatter json
echo "== vhosts";      rabbitmqctl -q list_vhosts --no-table-headers
echo "== users";       rabbitmqctl -q list_users --formatter json
echo "== policies";    rabbitmqctl -q list_policies -p ci --formatter json
echo "== queues";      rabbitmqctl -q list_queues -p ci name messages policy --no-table-headers
echo "== plugins";     rabbitmq-plugins -q list -E -m
echo "== stop";        rabbitmqctl stop
test ! -e "$RABBITMQ_PID_FILE"
if rabbitmq-diagnostics -q ping >/dev/null 2>&1; then echo "still answering"; exit 1; fi
echo "== done"
"""

#: The job's client: publishes through the AMQP port its rabbitmq.conf names, as the ci user.
PUBLISH = textwrap.dedent("""
    import os, pika
    url = f"amqp://ci:ci-secret@127.0.0.1:{os.environ['AMQP_PORT']}/ci"
    with pika.BlockingConnection(pika.URLParameters(url)) as connection:
        channel = connection.channel()
        channel.confirm_delivery()
        channel.queue_declare("jobs.build", durable=True)
        for n in range(3):
            channel.basic_publish("", "jobs.build", f"job {n}".encode())
""")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _sections(output: str) -> dict[str, str]:
    found: dict[str, str] = {}
    name = ""
    for line in output.splitlines(keepends=True):
        if line.startswith("== "):
            name = line[3:].strip()
            found[name] = ""
        elif name:
            found[name] += line
    return found


def _stop_what_the_job_left(nodes: Path) -> None:
    """A job that failed half-way leaves its node running: every node process registered in
    the test's registry but this one is stopped (SIGTERM), whatever its name."""
    for entry in entries(nodes):
        if entry.pid != os.getpid():
            with contextlib.suppress(ProcessLookupError):
                os.kill(entry.pid, signal.SIGTERM)


def test_a_ci_jobs_script_runs_over_the_shims_with_the_tools_and_the_server_agreeing(
        tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    subprocess.run([sys.executable, "-m", "embroker", "shims", str(bin_dir)], check=True,
                   capture_output=True)
    amqp, management = _free_port(), _free_port()
    (tmp_path / "rabbitmq.conf").write_text(
        f"listeners.tcp.default = {amqp}\nmanagement.tcp.port = {management}\n")
    (tmp_path / "rabbitmq-env.conf").write_text("NODENAME=ci@localhost\n")
    (tmp_path / "enabled_plugins").write_text("[].\n")
    nodes = tmp_path / "nodes"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "EMBROKER_NODES_DIR": str(nodes),
           "RABBITMQ_CONFIG_FILE": str(tmp_path / "rabbitmq.conf"),
           "RABBITMQ_CONF_ENV_FILE": str(tmp_path / "rabbitmq-env.conf"),
           "RABBITMQ_ENABLED_PLUGINS_FILE": str(tmp_path / "enabled_plugins"),
           "RABBITMQ_MNESIA_BASE": str(tmp_path / "mnesia"),
           "RABBITMQ_LOG_BASE": str(tmp_path / "log"),
           "RABBITMQ_PID_FILE": str(tmp_path / "run" / "rabbit.pid"),
           "PYTHON": sys.executable, "PUBLISH": PUBLISH, "AMQP_PORT": str(amqp),
           "MANAGEMENT_PORT": str(management)}
    for variable in ("RABBITMQ_NODENAME", "RABBITMQ_NODE_PORT", "RABBITMQ_DIST_PORT"):
        env.pop(variable, None)

    # The node the tools would reach if they ignored rabbitmq-env.conf: an embroker of the
    # default name, in the same registry. The job must not touch it.
    decoy_name = node_name({})
    decoy_broker = Broker()
    os.environ["EMBROKER_NODES_DIR"], saved = str(nodes), os.environ.get("EMBROKER_NODES_DIR")
    try:
        with decoy_broker.serve() as decoy_server, \
                Node(decoy_broker, decoy_server, decoy_name):
            job = subprocess.run(["sh", "-c", JOB], env=env, capture_output=True, text=True,
                                 timeout=180, check=False, cwd=tmp_path)
            decoy_vhosts = set(decoy_broker.vhosts)
            decoy_users = set(decoy_broker.access.users)
    finally:
        if saved is None:
            os.environ.pop("EMBROKER_NODES_DIR")
        else:
            os.environ["EMBROKER_NODES_DIR"] = saved
        _stop_what_the_job_left(nodes)
    log = "".join(p.read_text() for p in (tmp_path / "log").glob("*.log"))
    assert job.returncode == 0, f"{job.stdout}\n{job.stderr}\n-- the node's log:\n{log}"
    sections = _sections(job.stdout)
    assert "done" in sections

    status = json.loads(sections["node"])
    assert status["node"] == "ci@localhost"
    assert sections["version"].strip() == "3.10.8"
    listeners = {(item["protocol"], item["port"]) for item in json.loads(sections["listeners"])}
    assert {("amqp", amqp), ("http", management)} <= listeners
    assert sorted(sections["vhosts"].split()) == ["/", "ci"]
    users = {item["user"]: item["tags"] for item in json.loads(sections["users"])}
    assert users["ci"] == ["administrator"]
    (policy,) = json.loads(sections["policies"])
    assert (policy["name"], policy["pattern"], json.loads(policy["definition"])) == \
        ("ttl", r"^jobs\.", {"message-ttl": 60000})
    assert sections["queues"].split() == ["jobs.build", "3", "ttl"]
    assert sections["plugins"].split() == ["rabbitmq_management"]
    assert sections["stop"] == "Stopping and halting node ci@localhost ...\n"
    assert (tmp_path / "enabled_plugins").read_text().strip() == "[rabbitmq_management]."

    # The decoy heard nothing, and is still the only node registered.
    assert "ci" not in decoy_vhosts
    assert "ci" not in decoy_users
    assert lookup("ci@localhost", nodes) is None
