"""Strings a client chose, in every JSON the broker writes (embroker._untrusted).

A client can put bytes that are no UTF-8 in its client properties, arguments, headers, message
properties, a published routing key, and (over HTTP, or as the encoding of a surrogate over
AMQP) in names. RabbitMQ 3.10.8's management API writes a table's string value that Erlang
cannot read as UTF-8 as ``"Not UTF-8, base64 is: ..."`` (``rabbit_misc:utf8_safe``) and
everything else through jsx, which writes U+FFFD for each sequence it cannot read; valid UTF-8
with control characters is written as it is, JSON-escaped. What it answered for the scenario
below was recorded from it (:data:`RECORDED`); the scenario runs against it again when
EMBROKER_REFERENCE_URL is set. Before, the same requests gave embroker's 500 for as long as the
object lived, and a JSON trace closed each consumer of such a message with 541.
"""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embroker import Broker, Server
from embroker import amqp091 as a
from embroker.amqp091._frames import encode_message
from embroker.management import ManagementAPI, Request
from embroker.management._routes import ROUTES
from embroker.model._names import NODE
from tests.server.test_connection import Client
from tests.wire_client import RawClient, raw, wait_for

from .record import reference_base

M = a.methods

#: Byte sequences, each put in a client property's key and value (as keys.py of the issue's
#: probe did): stray, overlong, cut-short and 5-byte forms (no UTF-8 for Erlang either), a
#: surrogate's encoding and code points past U+10FFFF (UTF-8 for Erlang, not for JSON), and
#: text that is UTF-8 with control characters, C1 controls, a non-character and a BOM.
SEQUENCES = {"ff": b"\xff\xfe", "surr": b"\xed\xa0\x80", "trunc": b"\xe2\x82x", "trunc2": b"\xe2x",
             "overlong": b"\xc0\x80", "overlong3": b"\xe0\x80\x80", "beyond": b"\xf4\x90\x80\x80",
             "f7": b"\xf7\xbf\xbf\xbf", "5b": b"\xf8\x88\x80\x80\x80", "cont": b"\x80\x80",
             "lead_end": b"\xe2", "nonchar": "\uffff".encode(),
             "surrpair": b"\xed\xa0\x80\xed\xb0\x80", "ctl": b"a\n\x00\x7f\x1b",
             "c1": "\x85\x9b".encode(), "bom": b"\xef\xbb\xbf"}
NOT = "Not UTF-8, base64 is: "
#: What RabbitMQ 3.10.8 showed of those client properties (key: value).
RECORDED_PROPERTIES = {
    "K5b|\ufffd\ufffd\ufffd\ufffd\ufffd|": NOT + "+IiAgIA=", "Kbeyond|\ufffd|": "\ufffd",
    "Kbom|\ufeff|": "\ufeff", "Kc1|\x85\x9b|": "\x85\x9b", "Kcont|\ufffd\ufffd|": NOT + "gIA=",
    "Kctl|a\n\x00\x7f\x1b|": "a\n\x00\x7f\x1b", "Kf7|\ufffd|": "\ufffd",
    "Kff|\ufffd\ufffd|": NOT + "//4=", "Klead_end|\ufffd|": NOT + "4g==",
    "Knonchar|\uffff|": "\uffff", "Koverlong|\ufffd|": NOT + "wIA=",
    "Koverlong3|\ufffd|": NOT + "4ICA", "Ksurr|\ufffd|": "\ufffd",
    "Ksurrpair|\ufffd\ufffd|": "\ufffd\ufffd", "Ktrunc2|\ufffdx|": NOT + "4ng=",
    "Ktrunc|\ufffdx|": NOT + "4oJ4",
}
FF = raw(b"\xff\xfe")  # no UTF-8 anywhere
SUR = raw(b"\xed\xa0\x80")  # UTF-8 for Erlang (a name may hold it), not for JSON
#: The rest of what RabbitMQ 3.10.8 answered to :func:`_scenario` ({tag}: the run's own).
RECORDED = {
    "client_properties": RECORDED_PROPERTIES,
    "get": {"exchange": "wsx-{tag}-\ufffd", "payload": "Ym9kef8=", "payload_encoding": "base64",
            "routing_key": "pub\ufffd\ufffd\ufffd",
            "properties": {"app_id": "\ufffd\ufffd", "content_type": "ct\ufffd\ufffd",
                           "correlation_id": "a\nb", "expiration": "60000",
                           "headers": {"h": NOT + "//4=", "h\ufffd\ufffd": "\ufffd"},
                           "message_id": "\ufffd", "reply_to": "r\ufffd\ufffd",
                           "type": "\ufffd\ufffd", "user_id": "guest"}},
    "consumer": {"arguments": {"x-c": NOT + "//4="}, "consumer_tag": "ct\ufffd",
                 "queue": {"name": "ws-{tag}-\ufffd", "vhost": "/"}},
    "exchange": {"arguments": {"a": NOT + "//4="}, "name": "wsx-{tag}-\ufffd"},
    "binding": {"arguments": {"b": NOT + "//4="}, "destination": "ws-{tag}-\ufffd",
                "properties_key": "rk%ED%A0%80", "routing_key": "rk\ufffd",
                "source": "wsx-{tag}-\ufffd"},
    "queue": {"arguments": {"x-bad": NOT + "//4=", "x-sur": "\ufffd"}, "name": "ws-{tag}-\ufffd"},
    "queue_consumer": {"arguments": {"x-c": NOT + "//4="}, "consumer_tag": "ct\ufffd"},
    "definitions": {
        "queue": {"arguments": {"x-bad": NOT + "//4=", "x-sur": "\ufffd"},
                  "name": "ws-{tag}-\ufffd"},
        "exchange": {"arguments": {"a": NOT + "//4="}, "name": "wsx-{tag}-\ufffd"},
        "binding": {"arguments": {"b": NOT + "//4="}, "routing_key": "rk\ufffd"}},
    "http_queue": [201, {"name": "ws-{tag}-http-\ufffd\ufffdz"}, 204],
}


def strict_json(body: bytes) -> Any:
    """``body`` read as JSON as a strict reader reads it: UTF-8 (no encoded surrogate), and no
    string or key holding a lone surrogate (which ``\\udcff`` escapes would give)."""
    value = json.loads(body.decode("utf-8"))

    def walk(item: Any) -> None:
        if isinstance(item, str):
            assert not any(0xD800 <= ord(c) <= 0xDFFF for c in item), item
        elif isinstance(item, dict):
            for key, inner in item.items():
                walk(key)
                walk(inner)
        elif isinstance(item, list):
            for inner in item:
                walk(inner)
    walk(value)
    return value


class Http:
    """A management API at ``base`` as guest: (status, the strictly read JSON or None)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.auth = "Basic " + base64.b64encode(b"guest:guest").decode()

    def __call__(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.base + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"authorization": self.auth, "content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                data = response.read()
                return response.status, strict_json(data) if data else None
        except urllib.error.HTTPError as error:
            data = error.read()
            return error.code, data[:300]


def _quoted(name: str) -> str:
    return urllib.parse.quote(name.encode("utf-8", "surrogateescape"), safe="")


def _only(item: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: item[k] for k in keys if k in item}


def _scenario(host: str, port: int, api: Http) -> dict[str, Any]:
    """Objects holding such strings, made over AMQP 0-9-1 and over HTTP, and what the API
    shows of them (the run's tag written ``{tag}``)."""
    tag = uuid.uuid4().hex[:8]
    properties: dict[str, Any] = {"tag": tag}
    for label, data in SEQUENCES.items():
        properties[f"K{label}|{raw(data)}|"] = raw(data)
    queue, exchange = f"ws-{tag}-" + SUR, f"wsx-{tag}-" + SUR
    seen: dict[str, Any] = {}
    with RawClient(host, port, properties) as client:
        client.call(M.ExchangeDeclare(exchange=exchange, type="fanout", arguments={"a": FF}))
        client.call(M.QueueDeclare(queue=queue, arguments={"x-bad": FF, "x-sur": SUR}))
        try:
            client.call(M.QueueBind(queue=queue, exchange=exchange, routing_key="rk" + SUR,
                                    arguments={"b": FF}))
            client.confirm()
            client.publish(exchange, "pub" + FF + SUR, b"body\xff", {
                "headers": {"h": FF, "h" + FF: SUR}, "content_type": "ct" + FF,
                "message_id": SUR, "correlation_id": "a\nb", "reply_to": "r" + FF,
                "app_id": FF, "type": FF, "user_id": "guest", "expiration": "60000"})
            client.next()  # (its confirm)
            status, got = api("POST", f"/queues/%2F/{_quoted(queue)}/get", {
                "count": 1, "ackmode": "ack_requeue_true", "encoding": "auto"})
            assert status == 200, got
            seen["get"] = _only(got[0], "exchange", "payload", "payload_encoding",
                                "routing_key", "properties")
            client.call(M.BasicConsume(queue=queue, consumer_tag="ct" + SUR,
                                       arguments={"x-c": FF}))
            seen.update(_listed(api, tag))
            status, detail = api("GET", f"/queues/%2F/{_quoted(queue)}")
            assert status == 200, detail
            seen["queue_consumer"] = _only(detail["consumer_details"][0], "arguments",
                                           "consumer_tag")
            status, definitions = api("GET", "/definitions")
            assert status == 200, definitions
            seen["definitions"] = {
                "queue": _only(_mine(definitions["queues"], tag), "arguments", "name"),
                "exchange": _only(_mine(definitions["exchanges"], tag), "arguments", "name"),
                "binding": _only(_mine([b for b in definitions["bindings"] if b["source"]],
                                       tag), "arguments", "routing_key")}
        finally:
            client.call(M.QueueDelete(queue=queue))
            client.call(M.ExchangeDelete(exchange=exchange))
    http_queue = f"/queues/%2F/ws-{tag}-http-%FF%FEz"
    created, _ = api("PUT", http_queue, {})
    shown = api("GET", http_queue)[1]
    seen["http_queue"] = [created, _only(shown, "name"), api("DELETE", http_queue)[0]]
    text = json.dumps(seen).replace(tag, "{tag}")
    return dict(json.loads(text))


def _mine(items: list[dict[str, Any]], tag: str) -> dict[str, Any]:
    (found,) = [item for item in items if tag in json.dumps(item)]
    return found


def _listed(api: Http, tag: str) -> dict[str, Any]:
    """What the listings show of the scenario's objects, once RabbitMQ's statistics have them
    (they lag by its interval)."""
    def look() -> dict[str, Any] | None:
        found: dict[str, Any] = {}
        for path in ("connections", "consumers", "exchanges", "bindings", "queues"):
            status, items = api("GET", "/" + path)
            assert status == 200, items
            mine = [item for item in items if tag in json.dumps(item)]
            if path == "connections":
                mine = [item["client_properties"] for item in mine]
                if mine:
                    found["client_properties"] = {k: v for k, v in mine[0].items()
                                                  if k != "tag"}
            elif path == "bindings":
                found["binding"] = next(
                    ({**_only(b, "arguments", "destination", "routing_key", "source"),
                      "properties_key": b["properties_key"].partition("~")[0]}
                     for b in mine if b["source"]), None)
            elif mine:
                keys = {"consumers": ("arguments", "consumer_tag", "queue"),
                        "exchanges": ("arguments", "name"),
                        "queues": ("arguments", "name")}[path]
                found[path[:-1]] = _only(mine[0], *keys)
        complete = {"client_properties", "consumer", "exchange", "binding", "queue"}
        return found if complete <= {k for k, v in found.items() if v} else None
    found = wait_for(look, timeout=15)
    assert found, "the listings never showed the scenario's objects"
    return found


def test_strings_that_are_no_utf8_are_written_as_rabbitmq_writes_them(
        served_broker: tuple[Broker, Server]) -> None:
    _broker, server = served_broker
    assert _scenario("127.0.0.1", server.port, Http(server.management_url + "api")) == RECORDED
    reference = os.environ.get("EMBROKER_REFERENCE_URL")
    if reference:
        parts = urllib.parse.urlsplit(reference)
        assert _scenario(parts.hostname or "127.0.0.1", parts.port or 5672,
                         Http(reference_base(reference))) == RECORDED


# -- any bytes in every string a client sets, and every GET route --------------------------------

def _readable(pieces: list[bytes]) -> bytes:
    return b"".join(pieces)


#: Bytes for a string only RabbitMQ's UTF-8 check lets through (a name over AMQP 0-9-1): text
#: with control characters, and the encodings Erlang reads that JSON cannot (surrogates, code
#: points past U+10FFFF).
READABLE_BYTES = st.lists(st.one_of(
    st.text(max_size=4).map(lambda t: t.encode()), st.sampled_from(
        [b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf7\xbf\xbf\xbf", b"\n",
         b"\x1b[31m", b"\x00", "\u202e".encode()])), min_size=1, max_size=4).map(_readable)
#: Any bytes: random, the sequences above, or text.
ANY_BYTES = st.one_of(st.binary(min_size=1, max_size=10), st.sampled_from(list(SEQUENCES.values())),
                      READABLE_BYTES)


@st.composite
def _client_strings(draw: st.DrawFn) -> dict[str, bytes]:
    fields = {name: draw(ANY_BYTES, label=name) for name in (
        "property_key", "property", "nested", "argument_key", "argument", "binding_argument",
        "consumer_argument", "header_key", "header", "message_property", "published_key",
        "http_queue", "http_argument", "vhost", "vhost_description", "user", "user_tag",
        "policy", "policy_value", "parameter", "parameter_value")}
    fields.update({name: draw(READABLE_BYTES, label=name) for name in (
        "queue", "exchange", "binding_key", "consumer_tag")})
    return fields


def _call(api: ManagementAPI, method: str, path: str, body: Any = None,
          query: dict[str, str] | None = None) -> tuple[int, Any]:
    """A request to ``api`` as guest (``query``: its parameters, decoded): its status, and its
    JSON read strictly when it is JSON."""
    data = b"" if body is None else json.dumps(body).encode()  # (\\udcff escapes: JSON allows)
    answer = api(Request(method, path, query or {}, dict(_AUTH), data))
    # (a health check that fails is a 503, the API listening on no port here: no error)
    assert answer.status < 500 or (answer.status == 503 and "/health" in path), (
        method, path, answer.status, answer.body[:300])
    if (answer.header("content-type") or "").startswith("application/json") and answer.body:
        return answer.status, strict_json(answer.body)
    return answer.status, None


_AUTH = {"authorization": "Basic " + base64.b64encode(b"guest:guest").decode()}
_FIXED_PARAMS = {"node": NODE, "within": "1", "unit": "days", "port": "5672",
                 "protocol": "amqp", "component": "federation-upstream", "kind": "q"}


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("traces")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(strings=_client_strings())
def test_any_bytes_in_any_string_a_client_sets_leave_every_route_answering_json(
        trace_dir: Path, strings: dict[str, bytes]) -> None:
    """Client properties (keys, values, nested), queue and exchange names, arguments, a binding
    key, a consumer tag, headers, message properties and a published routing key over AMQP
    0-9-1; a queue, its arguments, a vhost, a user and its tags, a policy and a global
    parameter over HTTP (names in the path, values as JSON with ``\\udcff`` escapes, which JSON
    allows): then every GET route of the management API, the console's poll and a /get answer
    with JSON that a strict reader takes, and a JSON trace writes such lines without closing
    the consumer."""
    s = {name: raw(data) for name, data in strings.items()}
    broker = Broker()
    api = ManagementAPI(broker, trace_dir=trace_dir)
    try:
        _fill(api, broker, s)
        _every_get_route(api, s)
    finally:
        api.tracing.close()


def _fill(api: ManagementAPI, broker: Broker, s: dict[str, str]) -> None:
    trace = f"strings-{uuid.uuid4().hex[:8]}"
    assert _call(api, "PUT", f"/api/traces/%2F/{trace}", {"format": "json",
                                                          "pattern": "#"})[0] == 201
    client = Client(broker)
    client.handshake(properties={s["property_key"]: s["property"], "product": s["property"],
                                 "nested": {"t": {"x": s["nested"]}, "a": [s["nested"], 1]}})
    client.open_channel()
    queue, exchange = "q-" + s["queue"], "x-" + s["exchange"]
    for method in (
            M.ExchangeDeclare(exchange=exchange, type="topic",
                              arguments={s["argument_key"]: s["argument"]}),
            M.QueueDeclare(queue=queue, arguments={s["argument_key"]: s["argument"],
                                                   "x-dead-letter-exchange": exchange}),
            M.QueueBind(queue=queue, exchange=exchange, routing_key="#"),
            M.QueueBind(queue=queue, exchange=exchange, routing_key="k" + s["binding_key"],
                        arguments={"b": s["binding_argument"]}),
            M.BasicConsume(queue=queue, consumer_tag="c" + s["consumer_tag"],
                           arguments={"x-c": s["consumer_argument"]})):
        (answer,) = client.call(1, method)
        assert not isinstance(answer, M.ConnectionClose | M.ChannelClose), answer
    shortstrs = dict.fromkeys(("content_type", "content_encoding", "correlation_id", "reply_to",
                               "message_id", "type", "app_id", "cluster_id"),
                              s["message_property"])
    message = encode_message(1, M.BasicPublish(exchange=exchange,
                                                routing_key=s["published_key"]), b"\xff",
                             131072, properties={**shortstrs, "headers": {
                                 s["header_key"]: s["header"], "t": {"x": [s["header"]]}}})
    (delivered,) = client.send(message)  # (to the queue's consumer, the trace writing it)
    assert isinstance(delivered.method, M.BasicDeliver), delivered
    client.call(1, M.BasicCancel(consumer_tag="c" + s["consumer_tag"]))
    assert client.send(message) == []  # (one more, left ready for /get)
    assert not client.server.should_close  # (no 541)
    for line in (api.tracing.directory / f"{trace}.log").read_bytes().splitlines():
        strict_json(line)
    _call(api, "PUT", "/api/queues/%2F/" + _quoted(s["http_queue"]),
          {"arguments": {s["http_argument"]: s["http_argument"]}})
    _call(api, "PUT", "/api/vhosts/" + _quoted(s["vhost"]),
          {"description": s["vhost_description"], "tags": [s["vhost_description"]]})
    _call(api, "PUT", "/api/users/" + _quoted(s["user"]),
          {"password": "pw", "tags": [s["user_tag"], "management"]})
    _call(api, "PUT", "/api/permissions/%2F/" + _quoted(s["user"]),
          {"configure": ".*", "write": ".*", "read": ".*"})
    _call(api, "PUT", "/api/policies/%2F/" + _quoted(s["policy"]),
          {"pattern": "^nothing$", "definition": {"dead-letter-exchange": s["policy_value"]}})
    _call(api, "PUT", "/api/global-parameters/" + _quoted(s["parameter"]),
          {"value": {s["parameter_value"]: [s["parameter_value"]]}})
    with broker.locked():
        assert queue in broker.vhosts["/"].queues


def _every_get_route(api: ManagementAPI, s: dict[str, str]) -> None:
    queue, exchange = "q-" + s["queue"], "x-" + s["exchange"]
    status, connections = _call(api, "GET", "/api/connections")
    assert status == 200
    assert connections
    status, channels = _call(api, "GET", "/api/channels")
    assert status == 200
    assert channels
    status, bindings = _call(api, "GET", f"/api/queues/%2F/{_quoted(queue)}/bindings")
    props = next(b["properties_key"] for b in bindings if b["arguments"])
    params = {**_FIXED_PARAMS, "vhost": "/", "user": s["user"], "username": "guest",
              "source": exchange, "destination": queue, "props": props,
              "exchange": exchange}
    names = {"queues": queue, "exchanges": exchange, "connections": connections[0]["name"],
             "channels": channels[0]["name"], "policies": s["policy"],
             "global-parameters": s["parameter"], "traces": "none", "trace-files": "none.log"}
    for route in ROUTES:
        if "GET" not in route.methods:
            continue
        for vhost in ("/", s["vhost"]) if "{vhost}" in route.parts else ("/",):
            values = {**params, "vhost": vhost, "name": names.get(
                route.parts[0] if route.parts[0] != "vhosts" else "", "none")}
            path = "/api/" + "/".join(
                _quoted(values[part[1:-1]]) if part.startswith("{") else part
                for part in route.parts)
            status, _ = _call(api, "GET", path)
            if route.pattern in _MUST_ANSWER and vhost == "/":
                assert status == 200, (route.pattern, status)
    status, console = _call(api, "GET", "/api/embroker/console",
                            query={"vhost": "/", "queue": queue})
    assert status == 200
    assert console["messages"], console
    status, got = _call(api, "POST", f"/api/queues/%2F/{_quoted(queue)}/get", {
        "count": 5, "ackmode": "ack_requeue_true", "encoding": "auto"})
    assert status == 200
    assert got, got


#: Routes that must answer 200 for the objects made (the others may be 404: no such trace...).
_MUST_ANSWER = frozenset({
    "connections", "connections/{name}", "connections/{name}/channels", "channels",
    "channels/{name}", "consumers", "consumers/{vhost}", "queues", "queues/{vhost}",
    "queues/{vhost}/{name}", "queues/{vhost}/{name}/bindings", "exchanges",
    "exchanges/{vhost}", "exchanges/{vhost}/{name}", "exchanges/{vhost}/{name}/bindings/source",
    "bindings", "bindings/{vhost}", "bindings/{vhost}/e/{source}/{kind}/{destination}",
    "bindings/{vhost}/e/{source}/{kind}/{destination}/{props}", "definitions",
    "definitions/{vhost}", "users", "users/{user}", "vhosts", "permissions", "policies",
    "policies/{vhost}", "policies/{vhost}/{name}", "global-parameters",
    "global-parameters/{name}", "overview", "traces", "whoami"})


# -- a JSON trace ----------------------------------------------------------------------------------

#: The records RabbitMQ 3.10.8's tracing plugin wrote (format json) for the message of
#: :func:`_traced`: its properties as a table (``amqp_table``: a string that is no UTF-8 in
#: base64, even a message id), names and routing keys through jsx (U+FFFD).
RECORDED_TRACE = [
    {"channel": 1, "exchange": "amq.fanout", "payload": "eA==", "properties": {
        "headers": {"h": NOT + "//4=", "h\ufffd\ufffd": "\ufffd"}, "message_id": NOT + "//4=",
        "type": "\ufffd"}, "queue": queue, "routed_queues": routed,
     "routing_keys": ["k\ufffd\ufffd\ufffd"], "type": kind, "user": "guest", "vhost": "{vhost}"}
    for queue, routed, kind in (("none", ["q\ufffd"], "published"),
                                ("q\ufffd", "none", "received"))]


def _traced(host: str, port: int, api: Http) -> list[Any]:
    """A message holding such strings, traced (JSON) in a vhost of its own, and consumed: the
    trace's records (the connection, node and time left out)."""
    tag = uuid.uuid4().hex[:8]
    vhost, trace = f"wire-strings-{tag}", f"wire-strings-{tag}"
    assert api("PUT", f"/vhosts/{vhost}", {})[0] == 201
    try:
        api("PUT", f"/permissions/{vhost}/guest", {"configure": ".*", "write": ".*",
                                                    "read": ".*"})
        assert api("PUT", f"/traces/{vhost}/{trace}", {"format": "json", "pattern": "#"})[0] \
            == 201
        with RawClient(host, port, vhost=vhost) as client:
            client.call(M.QueueDeclare(queue="q" + SUR))
            client.call(M.QueueBind(queue="q" + SUR, exchange="amq.fanout"))
            client.publish("amq.fanout", "k" + FF + SUR, b"x", {
                "headers": {"h": FF, "h" + FF: SUR}, "message_id": FF, "type": SUR})
            client.call(M.BasicConsume(queue="q" + SUR, consumer_tag="c", no_ack=True))
            assert isinstance(client.next().method, M.BasicDeliver)
            # (the consumer's channel is still open: RabbitMQ's answers its next method)
            assert client.call(M.BasicQos(prefetch_count=1)) == M.BasicQosOk()

            def records() -> list[Any]:
                request = urllib.request.Request(f"{api.base}/trace-files/{trace}.log",
                                                 headers={"authorization": api.auth})
                with urllib.request.urlopen(request, timeout=10) as response:
                    lines = response.read().splitlines()
                return [strict_json(line) for line in lines] if len(lines) == 2 else []
            found = wait_for(records)  # (RabbitMQ's plugin writes its records a little later)
    finally:
        api("DELETE", f"/traces/{vhost}/{trace}")
        api("DELETE", f"/trace-files/{trace}.log")
        api("DELETE", f"/vhosts/{vhost}")
    text = json.dumps([{k: v for k, v in record.items()
                        if k not in ("connection", "node", "timestamp")} for record in found])
    return list(json.loads(text.replace(vhost, "{vhost}")))


def test_a_json_trace_writes_such_a_message_as_rabbitmq_and_its_consumer_goes_on(
        served_broker: tuple[Broker, Server]) -> None:
    """(Before, writing the record failed, and the consumer's connection was closed with 541
    for each message, which was requeued.)"""
    _broker, server = served_broker
    assert _traced("127.0.0.1", server.port, Http(server.management_url + "api")) == \
        RECORDED_TRACE
    reference = os.environ.get("EMBROKER_REFERENCE_URL")
    if reference:
        parts = urllib.parse.urlsplit(reference)
        assert _traced(parts.hostname or "127.0.0.1", parts.port or 5672,
                       Http(reference_base(reference))) == RECORDED_TRACE


# -- JSON in ---------------------------------------------------------------------------------------

def test_a_lone_surrogate_escape_in_a_body_is_read_as_rabbitmq_reads_it(
        served_broker: tuple[Broker, Server]) -> None:
    """JSON allows ``"\\ud800"``, which no UTF-8 can carry: RabbitMQ's decoder (jsx) reads it as
    U+FFFD (checked live: a queue argument ``"a\\ud800b"`` is shown as ``"a\\ufffdb"``, an
    escaped pair as its character). Before, embroker kept the lone surrogate, and a message
    published over HTTP with one in its properties closed every AMQP 0-9-1 connection it was
    delivered to with 541."""
    _broker, server = served_broker
    api = Http(server.management_url + "api")
    body = (b'{"properties":{"message_id":"a\\ud800","headers":{"h\\uDCFF":"\\ud83d\\ude00"}},'
            b'"routing_key":"q","payload":"x","payload_encoding":"string"}')
    assert api("PUT", "/queues/%2F/q", {})[0] == 201
    request = urllib.request.Request(
        f"{api.base}/exchanges/%2F/amq.default/publish", method="POST", data=body,
        headers={"authorization": api.auth, "content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.loads(response.read()) == {"routed": True}
    with RawClient("127.0.0.1", server.port) as client:
        got = client.call(M.BasicGet(queue="q", no_ack=True))
    assert isinstance(got.method, M.BasicGetOk), got
    assert got.properties == {"message_id": "a\ufffd", "headers": {"h\ufffd": "\U0001f600"}}
    request = urllib.request.Request(
        f"{api.base}/queues/%2F/r", method="PUT", data=b'{"arguments":{"x-a":"a\\ud800b"}}',
        headers={"authorization": api.auth, "content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 201
    assert api("GET", "/queues/%2F/r")[1]["arguments"] == {"x-a": "a\ufffdb"}
