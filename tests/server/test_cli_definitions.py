"""``python -m embroker serve --definitions FILE``: a definitions file loaded at start, as
RabbitMQ's ``load_definitions`` setting does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pika
import pytest

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


#: Files RabbitMQ's load_definitions cannot load, and the one line embroker says of each.
BAD_FILES = [
    ('{"queues": true}', "queues must be a list of objects, not true"),
    ('{"queues": [{"name": 5}]}', "queues[0].name must be a string, not 5"),
    ('{"policies": [{"vhost": "/", "name": "p", "pattern": "^x", '
     '"definition": {"max-length": "x"}}]}',
     'Validation failed: &lt;&lt;"x"&gt;&gt; is not a valid maximum length (//p)'),
    ('{"queues": [{"name": "q", "vhost": "nowhere"}]}',
     'Please create virtual host "nowhere" prior to importing definitions.'),
    ("[" * 5000, "not a definitions document: nested more than 128 levels deep"),
    ("{nope", "not JSON: Expecting property name enclosed in double quotes: line 1 column 2 "
              "(char 1)"),
]


@pytest.mark.parametrize(("text", "line"), BAD_FILES, ids=[t[:20] for t, _ in BAD_FILES])
def test_a_file_the_model_refuses_is_one_line_and_exit_1(tmp_path: Path, text: str,
                                                        line: str) -> None:
    path = tmp_path / "defs.json"
    path.write_text(text)
    proc = serve(path)
    out, err = proc.communicate(timeout=30)
    assert (proc.returncode, out) == (1, "")
    assert err == f"embroker: cannot load the definitions {path}: {line}\n"


def test_rabbitmq_servers_load_definitions_refused_is_one_line(tmp_path: Path) -> None:
    """rabbitmq-server with ``load_definitions`` in rabbitmq.conf: a file the model refuses
    stops the node before it listens (RabbitMQ's boot fails too: BOOT FAILED in its log), with
    one line on standard error naming the file; an item without vhost is refused as RabbitMQ's
    boot import refuses it (rabbit_definitions:import_raw/1: the whole broker's)."""
    for text, line in (('{"queues": true}', "queues must be a list of objects, not true"),
                       ('{"queues": [{"name": "q"}]}', "Virtual host does not exist and is not "
                                                       "specified in definitions file.")):
        definitions = tmp_path / "defs.json"
        definitions.write_text(text)
        conf = tmp_path / "rabbitmq.conf"
        conf.write_text(f"load_definitions = {definitions}\nlisteners.tcp.default = 0\n"
                        "management.tcp.port = 0\n")
        env = {**os.environ, "RABBITMQ_CONFIG_FILE": str(conf),
               "RABBITMQ_ENABLED_PLUGINS_FILE": str(tmp_path / "none"),
               "RABBITMQ_NODENAME": "defs-refused@localhost",
               "RABBITMQ_LOG_BASE": str(tmp_path / "log"),
               "RABBITMQ_MNESIA_BASE": str(tmp_path / "mnesia")}
        done = subprocess.run([sys.executable, "-m", "embroker.control", "rabbitmq-server"],
                              env=env, capture_output=True, text=True, timeout=60, check=False)
        assert (done.returncode, done.stdout) == (70, "")
        assert done.stderr == (f"embroker: cannot start node defs-refused@localhost: cannot "
                               f"load the definitions {definitions}: {line}\n")
