"""``POST /api/definitions`` and ``POST /api/definitions/{vhost}`` with definitions the model
refuses: a 400 with the model's reason (RabbitMQ's term where its is one), never a 500, and the
broker unchanged. (What RabbitMQ 3.10.8 answers to the same is compared in
golden/bad_definitions.json, test_differential.py.)"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from embroker import Broker
from embroker.server import Server


def post(server: Server, path: str, body: bytes,
         content_type: str = "application/json") -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{server.management_url}api/{path}", data=body, method="POST",
        headers={"content-type": content_type,
                 "authorization": "Basic " + base64.b64encode(b"guest:guest").decode()})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _state(broker: Broker) -> dict[str, Any]:
    document = broker.definitions()
    for user in document["users"]:
        user.pop("password_hash")
    return document


#: (body, the reason on POST /api/definitions, on POST /api/definitions/%2F)
REFUSED: list[tuple[bytes, Any, Any]] = [
    (b'{"queues": true}', "queues must be a list of objects, not true",
     "queues must be a list of objects, not true"),
    (b'{"queues": [{"name": 5}]}', "queues[0].name must be a string, not 5",
     "queues[0].name must be a string, not 5"),
    (b'{"queues": [5]}', "queues[0] must be an object, not 5",
     "queues[0] must be an object, not 5"),
    (b'{"exchanges": [{"name": "x", "type": "direct", "durable": "yes"}]}',
     'exchanges[0].durable must be true or false, not "yes"',
     'exchanges[0].durable must be true or false, not "yes"'),
    (b'{"queues": [{"name": "q", "vhost": "nowhere"}]}', ["no_such_vhost", "nowhere"], None),
    (b'{"queues": [{"name": "q"}]}', ["no_such_vhost", "undefined"], None),
    (b'{"permissions": [{"user": "nobody", "vhost": "/", "configure": "", "write": "", '
     b'"read": ""}]}', ["no_such_user", "nobody"], None),
    (b'{"queues": [{"name": "q", "vhost": "/", "arguments": {"x-max-length": "x"}}]}',
     "precondition_failed: invalid arg 'x-max-length' for queue 'q' in vhost '/': "
     '"expected integer, got longstr"',
     "precondition_failed: invalid arg 'x-max-length' for queue 'q' in vhost '/': "
     '"expected integer, got longstr"'),
    (b"not json", "failed_to_parse_json", "failed_to_parse_json"),
    (b"[]", "failed_to_parse_json", "failed_to_parse_json"),
    (b"null", "failed_to_parse_json", "failed_to_parse_json"),
    (b"[" * 100_000, "failed_to_parse_json", "failed_to_parse_json"),
]


@pytest.mark.parametrize(("body", "whole", "scoped"), REFUSED,
                         ids=[body[:40].decode() for body, _, _ in REFUSED])
def test_a_refused_document_is_a_400_with_the_models_reason(
        served_broker: tuple[Broker, Server], body: bytes, whole: Any, scoped: Any) -> None:
    broker, server = served_broker
    before = _state(broker)
    assert post(server, "definitions", body) == (
        400, {"error": "bad_request", "reason": whole})
    if scoped is not None:
        assert post(server, "definitions/%2F", body) == (
            400, {"error": "bad_request", "reason": scoped})
    assert _state(broker) == before


def test_a_lone_surrogate_in_a_document_is_read_as_the_replacement_character(
        served_broker: tuple[Broker, Server]) -> None:
    """JSON lets a document escape half a surrogate pair (``"\\ud800"``), which no UTF-8
    carries: RabbitMQ 3.10.8's JSON decoder reads it as U+FFFD and imports the queue (checked
    live: ``POST /api/definitions/V`` with a queue ``"q\\ud800x"`` answered 204 and declared
    ``q\ufffdx``), as every JSON body it takes (embroker._untrusted.json_loads)."""
    broker, server = served_broker
    assert post(server, "definitions/%2F", b'{"queues": [{"name": "q\\ud800x"}]}')[0] == 204
    assert "q\ufffdx" in broker.vhosts["/"].queues


def test_a_vhosts_import_reads_the_body_before_it_looks_for_the_vhost(
        served_broker: tuple[Broker, Server]) -> None:
    """As RabbitMQ's (golden bad_definitions): a body that is no JSON is a 400, a good one for
    a vhost that does not exist a 404 ``vhost_not_found``."""
    _broker, server = served_broker
    assert post(server, "definitions/nowhere", b"nope") == (
        400, {"error": "bad_request", "reason": "failed_to_parse_json"})
    assert post(server, "definitions/nowhere", b"{}") == (
        404, {"error": "not_found", "reason": "vhost_not_found"})


def test_an_upload_form_is_refused_with_a_reason(served_broker: tuple[Broker, Server]) -> None:
    """RabbitMQ's console uploads a file as multipart/form-data; embroker's console has no
    such form, and its API takes the JSON body only."""
    _broker, server = served_broker
    status, body = post(server, "definitions", b"--x\r\n\r\n{}\r\n--x--\r\n",
                        "multipart/form-data; boundary=x")
    assert status == 400
    assert "multipart/form-data" in body["reason"]
