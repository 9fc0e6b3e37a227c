"""What RabbitMQ's tools print of strings a client chose that are no UTF-8.

RabbitMQ 3.10.8's rabbitmqctl fails on them (``list_queues name arguments`` with a queue argument
``\\xff\\xfe``: exit 70, ``UnicodeConversionError`` with the table formatter and
``function_clause`` with the JSON one; checked live). embroker's tools print them as the
management API writes them (embroker._untrusted): a table's string value that is no UTF-8 as
``"Not UTF-8, base64 is: ..."``, other such bytes (a name holding a surrogate's encoding) as
U+FFFD; so the JSON formatter's rows and an exported definitions file are JSON that a strict
reader takes, and the table formatter's lines are text a terminal can be given.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from embroker import Broker
from embroker import amqp091 as a
from embroker.control._ctl import run
from embroker.control._node import Node
from embroker.server import Server
from tests.management.test_wire_strings import strict_json
from tests.wire_client import RawClient, raw

M = a.methods
NODE = "rabbit@localhost"
FF, SUR = raw(b"\xff\xfe"), raw(b"\xed\xa0\x80")
NOT = "Not UTF-8, base64 is: "


@pytest.fixture(autouse=True)
def _nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBROKER_NODES_DIR", str(tmp_path / "nodes"))
    monkeypatch.setenv("RABBITMQ_NODENAME", NODE)


@pytest.fixture
def client() -> Iterator[RawClient]:
    """A node whose queue ``q-<surrogate>`` has arguments that are no UTF-8, declared by a
    client whose properties are none either (the client stays connected)."""
    broker = Broker()
    with Server(broker) as server, Node(broker, server, NODE), \
            RawClient("127.0.0.1", server.port, {"product": FF, "k" + FF: SUR}) as connected:
        connected.call(M.QueueDeclare(queue="q-" + SUR, durable=True,
                                      arguments={"x-bad": FF, "x-sur": SUR}))
        yield connected
        assert server.errors == []


def ctl(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run("rabbitmqctl", list(argv), out=out, err=err)
    return code, out.getvalue()


def _json_rows(text: str) -> list[dict[str, object]]:
    """The JSON formatter's rows, read strictly (one object a line between ``[`` and ``]``)."""
    lines = text.encode("utf-8").splitlines()  # (strict: no surrogate)
    assert (lines[0], lines[-1]) == (b"[", b"]")
    return [strict_json(line.lstrip(b",")) for line in lines[1:-1]]


@pytest.mark.usefixtures("client")
def test_the_json_formatter_writes_what_the_management_api_writes() -> None:
    code, out = ctl("list_queues", "name", "arguments", "--formatter", "json")
    assert code == 0
    assert _json_rows(out) == [{"name": "q-\ufffd", "arguments": [
        ["x-bad", "longstr", NOT + "//4="], ["x-sur", "longstr", "\ufffd"]]}]
    code, out = ctl("list_connections", "client_properties", "--formatter", "json")
    assert code == 0
    (row,) = _json_rows(out)
    assert ["product", "longstr", NOT + "//4="] in row["client_properties"]  # type: ignore[operator]
    assert ["k\ufffd\ufffd", "longstr", "\ufffd"] in row["client_properties"]  # type: ignore[operator]


@pytest.mark.usefixtures("client")
def test_the_table_formatter_prints_text() -> None:
    code, out = ctl("list_queues", "-q", "name", "arguments")
    assert code == 0
    assert out.encode("utf-8").decode("utf-8").splitlines() == [
        "name\targuments", f'q-\ufffd\t[{{"x-bad","{NOT}//4="}},{{"x-sur","\ufffd"}}]']


@pytest.mark.usefixtures("client")
def test_exported_definitions_are_json(tmp_path: Path) -> None:
    path = tmp_path / "definitions.json"
    assert ctl("export_definitions", str(path))[0] == 0
    document = strict_json(path.read_bytes())
    (queue,) = [q for q in document["queues"] if q["name"].startswith("q-")]
    assert (queue["name"], queue["arguments"]) == ("q-\ufffd", {"x-bad": NOT + "//4=",
                                                                "x-sur": "\ufffd"})
    code, out = ctl("export_definitions", "-")
    assert code == 0
    assert strict_json(out.encode("utf-8"))["queues"] == document["queues"]
