"""Unmodified tools that start ``rabbitmq-server`` and shell out to ``rabbitmqctl``, run over
embroker's shims (``embroker shims DIR``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

#: A test module as a pytest-rabbitmq user writes one: its ``rabbitmq_proc`` fixture starts
#: ``rabbitmq-server`` (RABBITMQ_NODE_PORT, RABBITMQ_NODENAME, RABBITMQ_MNESIA_BASE...) under
#: mirakuru, waits for the AMQP port, and cleans up between tests with ``rabbitmqctl
#: list_exchanges name`` and ``list_queues name``, parsing their output.
PYTEST_RABBITMQ_SUITE = '''
def test_publish_through_a_topology(rabbitmq, rabbitmq_proc):
    channel = rabbitmq.channel()
    channel.exchange_declare("orders", "topic")
    channel.queue_declare("audit")
    channel.queue_bind("audit", "orders", "order.*")
    channel.basic_publish("orders", "order.created", b"{}")
    assert channel.queue_declare("audit", passive=True).method.message_count == 1
    assert "audit" in rabbitmq_proc.list_queues()
    assert "orders" in rabbitmq_proc.list_exchanges()


def test_the_next_test_starts_clean(rabbitmq, rabbitmq_proc):
    assert "audit" not in rabbitmq_proc.list_queues()
    assert "orders" not in rabbitmq_proc.list_exchanges()
'''


def test_pytest_rabbitmq_runs_unchanged_over_the_shims(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    subprocess.run([sys.executable, "-m", "embroker", "shims", str(bin_dir)], check=True,
                   capture_output=True)
    (tmp_path / "test_app.py").write_text(textwrap.dedent(PYTEST_RABBITMQ_SUITE))
    # (RABBITMQ_CONFIG_FILE: none, so that a machine's /etc/rabbitmq/rabbitmq.conf, whose
    # listeners win over RABBITMQ_NODE_PORT for RabbitMQ too (checked live), stays out)
    env = {**os.environ, "EMBROKER_NODES_DIR": str(tmp_path / "nodes"),
           "RABBITMQ_CONFIG_FILE": str(tmp_path / "no-config")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:embroker",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_app.py"),
         f"--rabbitmq-server={bin_dir / 'rabbitmq-server'}",
         f"--rabbitmq-ctl={bin_dir / 'rabbitmqctl'}"],
        check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
