"""``python -m embroker serve --plugin NAME``: RabbitMQ's plugins, by RabbitMQ's names."""

from __future__ import annotations

import json
from pathlib import Path

import pika

from tests.cli import interrupt, serve


def test_plugins_are_enabled_and_said(tmp_path: Path) -> None:
    proc = serve("--plugin", "rabbitmq_delayed_message_exchange", "--plugin",
                 "rabbitmq_consistent_hash_exchange")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "plugins: rabbitmq_consistent_hash_exchange, rabbitmq_delayed_message_exchange" \
            in line
        url = line.split("listening on ")[1].split(" ")[0]
        conn = pika.BlockingConnection(pika.URLParameters(url))
        ch = conn.channel()
        ch.exchange_declare("later", "x-delayed-message", arguments={"x-delayed-type": "direct"})
        ch.exchange_declare("ring", "x-consistent-hash")
        conn.close()
    finally:
        _out, err = interrupt(proc)
    assert proc.returncode == 0, err


def test_an_unknown_plugin_is_refused() -> None:
    proc = serve("--plugin", "rabbitmq_delayed_message")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "unknown plugin(s) 'rabbitmq_delayed_message'" in err
    assert out == ""


def test_definitions_that_need_a_plugin_name_it(tmp_path: Path) -> None:
    path = tmp_path / "defs.json"
    path.write_text(json.dumps({"exchanges": [
        {"name": "later", "vhost": "/", "type": "x-delayed-message", "durable": True,
         "arguments": {"x-delayed-type": "direct"}}]}))
    proc = serve("--definitions", str(path))
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "which the plugin rabbitmq_delayed_message_exchange brings" in err
    assert "--plugin rabbitmq_delayed_message_exchange" in err
