"""The event exchange's connection and channel events, shape for shape with RabbitMQ.

Their values differ from broker to broker (addresses, ports, pids, times), so they are not in
a golden transcript: these tests compare the header names, in order, and the type of each
value. Against the reference each pika connection names itself (``connection_name``) so that
its events can be told from other clients'. The administrative events (users, permissions,
policies, limits) are compared with what RabbitMQ 3.10.8 wrote for ``rabbitmqctl``'s commands,
measured once (``RABBITMQ_SHAPES``).
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import pika
import pika.exceptions
import pytest

from embroker import Broker
from embroker.model._event_exchange import CLI_USER

#: Header names and value types of events RabbitMQ 3.10.8 published for rabbitmqctl's commands
#: (``user_who_performed_action`` ``rmq-cli``), in the order they came.
RABBITMQ_SHAPES: dict[str, list[tuple[str, str]]] = {
    "user.created": [("user_who_performed_action", "str"), ("name", "str")],
    "user.deleted": [("user_who_performed_action", "str"), ("name", "str")],
    "user.tags.set": [("user_who_performed_action", "str"), ("tags", "list"), ("name", "str")],
    "user.password.changed": [("user_who_performed_action", "str"), ("name", "str")],
    "user.password.cleared": [("user_who_performed_action", "str"), ("name", "str")],
    "permission.created": [("user_who_performed_action", "str"), ("read", "str"),
                           ("write", "str"), ("configure", "str"), ("vhost", "str"),
                           ("user", "str")],
    "permission.deleted": [("user_who_performed_action", "str"), ("vhost", "str"),
                           ("user", "str")],
    "topic.permission.created": [("user_who_performed_action", "str"), ("read", "str"),
                                 ("write", "str"), ("exchange", "str"), ("vhost", "str"),
                                 ("user", "str")],
    "topic.permission.deleted": [("user_who_performed_action", "str"), ("vhost", "str"),
                                 ("user", "str")],
    "policy.set": [("apply-to", "str"), ("priority", "int"), ("definition", "dict"),
                   ("pattern", "str"), ("user_who_performed_action", "str"), ("vhost", "str"),
                   ("name", "str")],
    "policy.cleared": [("user_who_performed_action", "str"), ("vhost", "str"), ("name", "str")],
    "vhost.created": [("tags", "list"), ("description", "str"),
                      ("user_who_performed_action", "str"), ("cluster_state", "dict"),
                      ("tracing", "bool"), ("metadata", "str"), ("default_queue_type", "str"),
                      ("name", "str")],
}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    return {str: "str", bytes: "str", list: "list", dict: "dict", float: "float"}.get(
        type(value), type(value).__name__)


def shape(headers: dict[str, Any]) -> list[tuple[str, str]]:
    return [(k, _kind(v)) for k, v in headers.items() if k != "timestamp_in_ms"]


def test_admin_events_have_rabbitmqs_shapes() -> None:
    broker = Broker(plugins=["rabbitmq_event_exchange"])
    ch = broker.connect().channel()
    q = ch.queue_declare("", exclusive=True).queue
    ch.queue_bind(q, "amq.rabbitmq.event", "#")
    broker.add_vhost("pv")
    broker.add_user("pu", "pw")
    broker.set_permissions("pu", ".*", "c", "w", vhost="pv")
    broker.set_topic_permissions("pu", "amq.topic", "w.*", "r.*", vhost="pv")
    broker.clear_topic_permissions("pu", vhost="pv")
    broker.set_user_tags("pu", "monitoring", "x")
    broker.change_password("pu", "pw2")
    broker.clear_password("pu")
    broker.clear_permissions("pu", vhost="pv")
    broker.set_policy("pol", "^q", {"max-length": 5}, priority=3, apply_to="queues", vhost="pv")
    broker.clear_policy("pol", vhost="pv")
    broker.delete_user("pu")
    seen: dict[str, dict[str, Any]] = {}
    while (d := ch.basic_get(q, auto_ack=True)) is not None:
        seen.setdefault(d.routing_key, d.properties["headers"])
    for event, expected in RABBITMQ_SHAPES.items():
        assert event in seen, f"no {event}"
        assert shape(seen[event]) == expected, event
        assert seen[event]["user_who_performed_action"] == CLI_USER
    assert seen["user.tags.set"]["tags"] == ["monitoring", "x"]
    assert seen["policy.set"]["definition"] == {"max-length": 5}
    assert seen["permission.created"]["configure"] == ".*"


def _network_events(url: str, token: str, wait: float) -> dict[str, dict[str, Any]]:
    """Open and close a named connection and a channel on ``url``, and return their events
    (connection.created/closed, channel.created/closed) as a listener on the same broker saw
    them."""
    listener = pika.BlockingConnection(pika.URLParameters(url))
    try:
        lch = listener.channel()
        q = lch.queue_declare("", exclusive=True).method.queue
        for key in ("connection.*", "channel.*"):
            lch.queue_bind(q, "amq.rabbitmq.event", key)
        parameters = pika.URLParameters(url)
        parameters.client_properties = {"connection_name": token}
        conn = pika.BlockingConnection(parameters)
        conn.channel().close()
        conn.close()
        deadline = time.monotonic() + wait
        found: dict[str, dict[str, Any]] = {}
        pids: set[str] = set()
        while time.monotonic() < deadline and len(found) < 4:
            method, properties, _body = lch.basic_get(q, auto_ack=True)
            if method is None:
                time.sleep(0.02)
                continue
            headers = dict(properties.headers or {})
            mine = (any(token in str(v) for v in headers.get("client_properties", []))
                    or headers.get("connection") in pids or headers.get("pid") in pids)
            if mine:
                pids.add(headers.get("pid", ""))
                found.setdefault(method.routing_key, headers)
        return found
    finally:
        listener.close()


def test_connection_and_channel_events_shapes_on_embroker() -> None:
    """Over the wire: the headers RabbitMQ 3.10.8 writes for a network connection and its
    channel, in its order (the names are pinned here from a probe of 3.10.8; a client that
    names its connection gets ``user_provided_name`` too)."""
    broker = Broker(plugins=["rabbitmq_event_exchange"])
    with broker.serve() as server:
        found = _network_events(server.url, "shape-" + secrets.token_hex(3), 5.0)
    assert sorted(found) == ["channel.closed", "channel.created", "connection.closed",
                             "connection.created"]
    assert [k for k, _ in shape(found["channel.closed"])] == ["user_who_performed_action", "pid"]
    assert [k for k, _ in shape(found["connection.closed"])] == [
        "client_properties", "node", "pid", "name", "user_provided_name"]
    assert [k for k, _ in shape(found["channel.created"])] == [
        "user_who_performed_action", "vhost", "user", "number", "connection", "name", "pid"]
    assert [k for k, _ in shape(found["connection.created"])] == [
        "user_who_performed_action", "node", "connected_at", "client_properties", "channel_max",
        "frame_max", "timeout", "vhost", "user", "protocol", "ssl_hash", "ssl_cipher",
        "ssl_key_exchange", "ssl_protocol", "auth_mechanism", "peer_cert_validity",
        "peer_cert_issuer", "peer_cert_subject", "ssl", "peer_host", "host", "peer_port",
        "port", "name", "pid", "type", "user_provided_name"]


@pytest.mark.differential
def test_connection_and_channel_events_match_rabbitmq(reference_url: str) -> None:
    """The same connection and channel on RabbitMQ and on embroker: the same events, with the
    same header names in the same order and values of the same types."""
    token = "shape-" + secrets.token_hex(3)
    theirs = _network_events(reference_url, token, 10.0)
    broker = Broker(plugins=["rabbitmq_event_exchange"])
    with broker.serve() as server:
        ours = _network_events(server.url, token, 5.0)
    assert sorted(theirs) == sorted(ours)
    for event in theirs:
        assert shape(ours[event]) == shape(theirs[event]), event


#: user.authentication.* as RabbitMQ 3.10.8 published them for pika's logins (PLAIN): the
#: failure's ``error`` is an Erlang char list, an array of longs.
AUTHENTICATION_SHAPES = {
    "user.authentication.success": [
        ("ssl", "bool"), ("auth_mechanism", "str"), ("protocol", "str"), ("peer_port", "int"),
        ("peer_host", "str"), ("connection_name", "str"), ("host", "str"), ("name", "str"),
        ("connection_type", "str")],
    "user.authentication.failure": [
        ("error", "list"), ("ssl", "bool"), ("auth_mechanism", "str"), ("protocol", "str"),
        ("peer_port", "int"), ("peer_host", "str"), ("connection_name", "str"), ("host", "str"),
        ("name", "str"), ("connection_type", "str")],
}


def test_authentication_events_have_rabbitmqs_shapes() -> None:
    broker = Broker(plugins=["rabbitmq_event_exchange"])
    ch = broker.connect().channel()
    q = ch.queue_declare("", exclusive=True).queue
    ch.queue_bind(q, "amq.rabbitmq.event", "user.authentication.*")
    with broker.serve() as server:
        pika.BlockingConnection(pika.URLParameters(server.url)).close()
        bad = server.url.replace("guest:guest@", "guest:nope@")
        with pytest.raises(pika.exceptions.ProbableAuthenticationError):
            pika.BlockingConnection(pika.URLParameters(bad))
    seen = {}
    while (d := ch.basic_get(q, auto_ack=True)) is not None:
        seen[d.routing_key] = d.properties["headers"]
    for event, expected in AUTHENTICATION_SHAPES.items():
        assert shape(seen[event]) == expected, event
    failure = seen["user.authentication.failure"]
    assert "".join(map(chr, failure["error"])) == "user 'guest' - invalid credentials"
    assert (failure["name"], failure["peer_host"]) == ("guest", "{127,0,0,1}")
