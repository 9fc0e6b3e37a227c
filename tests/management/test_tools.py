"""Real tools against embroker's management API: pyrabbit2, and rabbitmqadmin as RabbitMQ's own
management plugin serves it (fetched from the reference: embroker ships no copy)."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from embroker import Broker, Server

REFERENCE = os.environ.get("EMBROKER_REFERENCE_URL")


@pytest.fixture
def server() -> Iterator[Server]:
    broker = Broker()
    with broker.serve(management=True) as served:
        yield served
        assert served.errors == []


def test_pyrabbit2_declares_lists_publishes_and_gets(server: Server) -> None:
    from pyrabbit2.api import Client

    client = Client(f"127.0.0.1:{server.management_port}", "guest", "guest")
    assert client.is_alive()
    client.create_vhost("app")
    client.create_exchange("app", "events", "topic")
    client.create_queue("app", "audit", durable=True)
    client.create_binding("app", "events", "audit", "order.*")
    assert client.publish("app", "events", "order.created", "hello") is True
    assert client.get_queue_depth("app", "audit") == 1
    assert [q["name"] for q in client.get_queues("app")] == ["audit"]
    got = client.get_messages("app", "audit", count=1, requeue=True)
    assert got[0]["payload"] == "hello"
    client.purge_queue("app", "audit")
    assert client.get_queue_depth("app", "audit") == 0
    assert "app" in client.get_vhost_names()
    client.delete_vhost("app")
    assert "app" not in client.get_vhost_names()


@pytest.fixture(scope="module")
def rabbitmqadmin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not REFERENCE:
        pytest.skip("rabbitmqadmin is fetched from the reference RabbitMQ's management plugin "
                    "(/cli/rabbitmqadmin): needs EMBROKER_REFERENCE_URL")
    host = urllib.parse.urlsplit(REFERENCE).hostname or "127.0.0.1"
    with urllib.request.urlopen(f"http://{host}:15672/cli/rabbitmqadmin", timeout=10) as answer:
        script = answer.read()
    path = tmp_path_factory.mktemp("rabbitmqadmin") / "rabbitmqadmin"
    path.write_bytes(script)
    return path


def admin(script: Path, server: Server, *args: str) -> str:
    done = subprocess.run([sys.executable, str(script), "--port", str(server.management_port),
                           *args], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


def test_rabbitmqadmin_declares_lists_publishes_gets_and_exports(
        server: Server, rabbitmqadmin: Path, tmp_path: Path) -> None:
    admin(rabbitmqadmin, server, "declare", "queue", "name=jobs", "durable=true")
    admin(rabbitmqadmin, server, "declare", "exchange", "name=work", "type=direct")
    admin(rabbitmqadmin, server, "declare", "binding", "source=work", "destination=jobs",
          "routing_key=j")
    assert "Message published" in admin(rabbitmqadmin, server, "publish", "exchange=work",
                                         "routing_key=j", "payload=hi")
    listed = admin(rabbitmqadmin, server, "-f", "tsv", "list", "queues", "name", "messages")
    assert "jobs\t1" in listed
    assert "hi" in admin(rabbitmqadmin, server, "get", "queue=jobs", "ackmode=ack_requeue_true")
    exported = tmp_path / "defs.json"
    admin(rabbitmqadmin, server, "export", str(exported))
    assert '"jobs"' in exported.read_text()
    admin(rabbitmqadmin, server, "purge", "queue", "name=jobs")
    admin(rabbitmqadmin, server, "delete", "queue", "name=jobs")
    assert "jobs" not in admin(rabbitmqadmin, server, "list", "queues", "name")
    for listing in ("connections", "channels", "consumers", "exchanges", "bindings", "vhosts",
                    "users", "permissions", "policies", "nodes"):
        admin(rabbitmqadmin, server, "list", listing)
    assert "embroker" in admin(rabbitmqadmin, server, "show", "overview")
