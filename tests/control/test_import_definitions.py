"""``rabbitmqctl import_definitions`` with definitions the model refuses: the exit code and text
RabbitMQ 3.10.8's tool gives (recorded: golden/rabbitmqctl/import_definitions_refused_*.json,
import_refusals.py), or, where RabbitMQ prints its crash or an Erlang term, the model's one
clear text with RabbitMQ's exit code; re-checked against the real tool when
``EMBROKER_REFERENCE_URL`` is set."""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from embroker import Broker
from embroker.control._ctl import run
from embroker.control._node import Node
from embroker.server import Server

from .import_refusals import IMPORT_REFUSALS, PREFIX, file_cases, run_rabbitmqctl

GOLDEN = Path(__file__).parent / "golden" / "rabbitmqctl"
NODE = "rabbit@localhost"

#: What RabbitMQ's tool prints byte for byte, embroker's too.
SAME = ("queue_missing_vhost", "policy_missing_vhost", "policy_bad_definition",
        "parameter_component")
#: Where embroker's text differs on purpose: case -> (embroker's exit code, its text, why).
DELIBERATE: dict[str, tuple[int, str, str]] = {
    "queues_true": (69, "queues must be a list of objects, not true",
                    "RabbitMQ prints its crash: function_clause and a stack trace"),
    "users_true": (69, "users must be a list of objects, not true",
                   "RabbitMQ prints its crash: badarg and a stack trace"),
    "queue_name_number": (69, "queues[0].name must be a string, not 5",
                          "RabbitMQ never looks at the name's type: it says the item's vhost "
                          "(none) does not exist, exit 65"),
    "not_an_object": (70, "a definitions document is a JSON object, not []",
                      "RabbitMQ prints the Erlang term {:badmap, []}"),
    "exchange_type": (69, "command_invalid: unknown exchange type 'nosuchtype'",
                      "RabbitMQ prints the Erlang term {:amqp_error, ...}"),
    "queue_argument": (69, "precondition_failed: invalid arg 'x-max-length' for queue "
                           "'import-refused-q' in vhost '/': \"expected integer, got longstr\"",
                       "RabbitMQ prints the Erlang term {:amqp_error, ...}"),
    "permissions_no_user": (69, "User 'import-refused-nobody' does not exist",
                            "RabbitMQ prints the Erlang term {:no_such_user, ...}"),
    "users_no_tags": (69, "users[0] ('import-refused-nobody') has no 'tags'",
                      "RabbitMQ prints the atom tags_not_present"),
    "not_json": (65, "Failed to deserialise input (format: JSON) (error: not JSON: Expecting "
                     "property name enclosed in double quotes: line 1 column 2 (char 1))",
                 "the decoder's own words: Elixir's {:unexpected_token, ...}, Python's"),
}


def golden(case: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((GOLDEN / f"{case}.json").read_text())
    return found


@pytest.fixture(autouse=True)
def _nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBROKER_NODES_DIR", str(tmp_path / "nodes"))
    monkeypatch.setenv("RABBITMQ_NODENAME", NODE)


@pytest.fixture
def node() -> Iterator[Node]:
    broker = Broker()
    with Server(broker) as server, Node(broker, server, NODE) as running:
        yield running
        assert server.errors == []


def ctl(*argv: str, stdin: str | None = None,
        monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    out, err = io.StringIO(), io.StringIO()
    code = run("rabbitmqctl", list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _state(broker: Any) -> dict[str, Any]:
    document = broker.definitions()
    for user in document["users"]:
        user.pop("password_hash")
    return document


def test_every_recorded_case_is_pinned() -> None:
    assert set(SAME) | set(DELIBERATE) == set(IMPORT_REFUSALS)


@pytest.mark.parametrize("case", sorted(IMPORT_REFUSALS))
def test_a_refused_document_is_refused_as_rabbitmqctl_refuses_it(
        node: Node, case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = golden(PREFIX + case)
    assert expected["stdin"] == IMPORT_REFUSALS[case]
    before = _state(node.broker)
    code, out, err = ctl("import_definitions", stdin=IMPORT_REFUSALS[case],
                         monkeypatch=monkeypatch)
    assert out == expected["stdout"]  # (the banner)
    if case in SAME:
        assert (code, err) == (expected["exit"], expected["stderr"])
    else:
        exit_code, text, _why = DELIBERATE[case]
        assert (code, err) == (exit_code, f"Error:\n{text}\n")
    assert _state(node.broker) == before


@pytest.mark.parametrize("case", ["zero_sized", "directory"])
def test_a_file_that_is_no_document_is_refused_as_rabbitmqctl_refuses_it(
        node: Node, case: str, tmp_path: Path) -> None:
    argv = file_cases(tmp_path)[case]
    expected = golden(PREFIX + case)
    code, out, err = ctl(*argv)
    folder = str(tmp_path)
    assert (code, out.replace(folder, "PATH"), err.replace(folder, "PATH")) == (
        expected["exit"], expected["stdout"], expected["stderr"])


def test_a_missing_file_and_an_item_without_vhost_are_refused_as_rabbitmqctl_does(
        node: Node, tmp_path: Path) -> None:
    """(golden import_definitions_missing_file, import_definitions_missing_vhost_field)"""
    expected = golden("import_definitions_missing_file")
    assert ctl(*expected["argv"][1:]) == (expected["exit"], expected["stdout"],
                                          expected["stderr"])
    expected = golden("import_definitions_missing_vhost_field")
    path = tmp_path / "vhost_only.json"
    path.write_text(json.dumps({"queues": [{"name": "q.imported2", "durable": True,
                                            "auto_delete": False, "arguments": {}}]}))
    recorded = expected["argv"][-1]
    code, out, err = ctl("import_definitions", str(path))
    assert (code, out.replace(str(path), recorded), err) == (
        expected["exit"], expected["stdout"], expected["stderr"])


@pytest.mark.skipif(not os.environ.get("EMBROKER_REFERENCE_URL") or not shutil.which("rabbitmqctl"),
                    reason="needs EMBROKER_REFERENCE_URL and rabbitmqctl (the reference RabbitMQ)")
def test_the_recorded_answers_are_rabbitmqctls() -> None:
    for case, document in IMPORT_REFUSALS.items():
        expected = golden(PREFIX + case)
        found = run_rabbitmqctl(["import_definitions"], document.encode())
        assert (found["exit"], found["stdout"], found["stderr"]) == (
            expected["exit"], expected["stdout"], expected["stderr"]), case
    # (a folder the Debian wrapper's user rabbitmq can read: not pytest's, which is private)
    with tempfile.TemporaryDirectory(prefix="import-refused-") as name:
        folder = Path(name)
        folder.chmod(0o755)
        for case, argv in file_cases(folder).items():
            expected = golden(PREFIX + case)
            found = run_rabbitmqctl(argv, None)
            assert (found["exit"], found["stdout"].replace(name, "PATH"),
                    found["stderr"].replace(name, "PATH")) == (
                expected["exit"], expected["stdout"], expected["stderr"]), case
