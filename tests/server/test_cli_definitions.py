"""``python -m embroker serve --definitions FILE``: a definitions file loaded at start, as
RabbitMQ's ``load_definitions`` setting does."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pika

from tests import cli

DEFINITIONS = {
    "queues": [{"name": "orders", "vhost": "/", "durable": True, "arguments": {}}],
    "policies": [{"vhost": "/", "name": "cap", "pattern": "^orders$", "apply-to": "queues",
                  "priority": 0, "definition": {"max-length": 1}}],
    "parameters": [{"vhost": "/", "component": "shovel", "name": "move",
                    "value": {"src-uri": "amqp://", "src-queue": "orders"}}],
}


def serve(path: Path, *extra: str) -> subprocess.Popen[str]:
    return cli.serve("--definitions", str(path), *extra)


def test_a_file_with_a_shovel_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "defs.json"
    path.write_text(json.dumps(DEFINITIONS))
    proc = serve(path)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "runtime parameters: shovel 'move' in vhost '/'" in err
    assert "--ignore-unsupported" in err
    assert "Traceback" not in err
    assert out == ""


def test_the_rest_loads_and_applies_with_ignore_unsupported(tmp_path: Path) -> None:
    path = tmp_path / "defs.json"
    path.write_text(json.dumps(DEFINITIONS))
    proc = serve(path, "--ignore-unsupported")
    try:
        assert proc.stdout is not None
        assert proc.stderr is not None
        assert proc.stderr.readline() == f"embroker: ignored from {path}: shovel 'move' in vhost '/'\n"
        line = proc.stdout.readline()
        url = line.split("listening on ")[1].split(" ")[0]
        conn = pika.BlockingConnection(pika.URLParameters(url))
        ch = conn.channel()
        for body in (b"a", b"b", b"c"):
            ch.basic_publish("", "orders", body)
        assert ch.queue_declare("orders", passive=True).method.message_count == 1
        conn.close()
    finally:
        _out, err = cli.interrupt(proc)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_an_unreadable_file_is_one_line(tmp_path: Path) -> None:
    proc = serve(tmp_path / "missing.json")
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert err.startswith(f"embroker: cannot load the definitions {tmp_path / 'missing.json'}: ")
    assert len(err.strip().splitlines()) == 1
