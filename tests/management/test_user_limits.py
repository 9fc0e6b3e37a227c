"""Users' limits (``max-connections``, ``max-channels``) set through the management API's
``/user-limits`` routes, validated and enforced by the model as RabbitMQ 3.10.8 does
(rabbit_auth_backend_internal, rabbit_reader:is_over_user_connection_limit/1 and
create_channel/2, rabbit_mgmt_wm_user_limit(s)); the same scenario runs against the
reference's management API when ``EMBROKER_REFERENCE_URL`` is set and must give the same
transcript. The vhost creator's permissions are checked the same way."""

from __future__ import annotations

import json
import os
import urllib.parse
import uuid
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

import pika
import pika.exceptions
import pytest

from embroker import Broker, Server
from embroker.errors import AccessControlError, NotAllowed
from embroker.model import STREAM

from .record import reference_base
from .test_api import Api as ManagementClient

Api = Callable[..., tuple[int, Any]]


def _api(base: str, user: str = "guest", password: str = "guest") -> Api:
    """test_api's client for the management API at ``base`` (``.../api``)."""
    where = cast(Server, SimpleNamespace(management_url=base.removesuffix("api")))
    return ManagementClient(where, user, password)


def _reference() -> tuple[str, str] | None:
    url = os.environ.get("EMBROKER_REFERENCE_URL")
    return (reference_base(url), url) if url else None


def _amqp(url: str, user: str) -> pika.URLParameters:
    parts = urllib.parse.urlsplit(url)
    return pika.URLParameters(f"amqp://{user}:pw@{parts.hostname}:{parts.port or 5672}/%2F")


def _limits_scenario(base: str, url: str) -> list[Any]:
    """What a client sees of a user's limits: the routes' answers, then pika's connections
    and channels against them; the user's name is written ``U``."""
    api = _api(base)
    user = f"limits-{uuid.uuid4().hex[:8]}"
    seen: list[Any] = []

    def note(*what: Any) -> None:
        seen.append(json.loads(json.dumps(what).replace(user, "U")))

    assert api("PUT", f"/users/{user}", {"password": "pw", "tags": ""})[0] == 201
    connections: list[pika.BlockingConnection] = []
    try:
        api("PUT", f"/permissions/%2F/{user}", {"configure": ".*", "write": ".*", "read": ".*"})
        for limit, body in (("max-connections", {"value": 1}), ("max-channels", {"value": 1}),
                            ("max-channels", {"value": "x"}), ("max-queues", {"value": 1}),
                            ("max-channels", {"valu": 1})):
            note("PUT", limit, body, api("PUT", f"/user-limits/{user}/{limit}", body))
        note("PUT no user", api("PUT", f"/user-limits/no-{user}/max-channels", {"value": 1}))
        note("GET user", api("GET", f"/user-limits/{user}", None))
        note("GET no user", api("GET", f"/user-limits/no-{user}", None))
        note("GET all", [x for x in api("GET", "/user-limits", None)[1] if x["user"] == user])
        note("GET users/U limits", api("GET", f"/users/{user}", None)[1]["limits"])
        exported = api("GET", "/definitions", None)[1]["users"]
        note("definitions", [u["limits"] for u in exported if u["name"] == user])
        first = pika.BlockingConnection(_amqp(url, user))
        connections.append(first)
        first.channel()
        try:
            first.channel()
        except pika.exceptions.ConnectionClosedByBroker as exc:
            note("second channel", exc.reply_code, exc.reply_text)
        second = pika.BlockingConnection(_amqp(url, user))  # (the first one is closed)
        connections.append(second)
        try:
            connections.append(pika.BlockingConnection(_amqp(url, user)))
        except pika.exceptions.ProbableAccessDeniedError as exc:
            note("second connection", str(exc))
        note("PUT 0", api("PUT", f"/user-limits/{user}/max-channels", {"value": 0}))
        try:
            second.channel()
        except pika.exceptions.ConnectionClosedByBroker as exc:
            note("channel at 0", exc.reply_code, exc.reply_text)
        note("DELETE", api("DELETE", f"/user-limits/{user}/max-channels", None))
        note("DELETE unset", api("DELETE", f"/user-limits/{user}/max-channels", None))
        note("GET after", api("GET", f"/user-limits/{user}", None))
        note("DELETE last", api("DELETE", f"/user-limits/{user}/max-connections", None))
        note("GET none", api("GET", f"/user-limits/{user}", None))
    finally:
        for connection in connections:
            if connection.is_open:
                connection.close()
        api("DELETE", f"/users/{user}")
    return seen


#: What RabbitMQ 3.10.8 answered (checked live).
LIMITS_TRANSCRIPT = [
    ["PUT", "max-connections", {"value": 1}, [204, None]],
    ["PUT", "max-channels", {"value": 1}, [204, None]],
    ["PUT", "max-channels", {"value": "x"}, [400, {
        "error": "bad_request", "reason": 'max-channels should be a number, actually was <<"x">>'}]],
    ["PUT", "max-queues", {"value": 1}, [400, {
        "error": "bad_request", "reason": 'Unrecognised terms [{<<"max-queues">>,1}] in user-limits'}]],
    ["PUT", "max-channels", {"valu": 1}, [400, {
        "error": "bad_request", "reason": "[{key_missing,value}]"}]],
    ["PUT no user", [400, {"error": "bad_request", "reason": ["no_such_user", "no-U"]}]],
    ["GET user", [200, [{"user": "U", "value": {"max-channels": 1, "max-connections": 1}}]]],
    ["GET no user", [404, {"error": "Object Not Found", "reason": "Not Found"}]],
    ["GET all", [{"user": "U", "value": {"max-channels": 1, "max-connections": 1}}]],
    ["GET users/U limits", {"max-channels": 1, "max-connections": 1}],
    ["definitions", [{"max-channels": 1, "max-connections": 1}]],
    ["second channel", 530, "NOT_ALLOWED - number of channels opened for user 'U' has reached "
     "the maximum allowed user limit of (1)"],
    ["second connection", "ConnectionClosedByBroker: (530) \"NOT_ALLOWED - connection refused "
     "for user 'U': user connection limit (1) is reached\""],
    ["PUT 0", [204, None]],
    ["channel at 0", 530, "NOT_ALLOWED - number of channels opened for user 'U' has reached "
     "the maximum allowed user limit of (0)"],
    ["DELETE", [204, None]],
    ["DELETE unset", [204, None]],
    ["GET after", [200, [{"user": "U", "value": {"max-connections": 1}}]]],
    ["DELETE last", [204, None]],
    ["GET none", [200, []]],
]


def test_user_limits_are_set_validated_and_enforced_as_rabbitmq_does(served: Server) -> None:
    got = _limits_scenario(served.management_url + "api", served.url)
    reference = _reference()
    if reference is not None:
        assert _limits_scenario(*reference) == got
    assert got == LIMITS_TRANSCRIPT


def test_a_stream_connection_is_not_refused_by_the_user_connection_limit() -> None:
    """rabbit_stream_reader (v3.10.8 and v4.1.0: "FIXME enforce connection limit") checks
    no user limit; a 0-9-1 connection of the same user is refused."""
    broker = Broker()
    broker.add_user("u", "pw")
    broker.set_permissions("u", ".*", ".*", ".*")
    broker.set_user_limits("u", {"max-connections": 0})
    broker.open_connection("/", user="u", kind=STREAM)
    with pytest.raises(NotAllowed, match="user connection limit \\(0\\) is reached"):
        broker.open_connection("/", user="u")


def test_user_limits_are_added_to_and_cleared_one_by_one_in_the_model() -> None:
    broker = Broker()
    broker.add_user("u", "pw")
    broker.set_user_limits("u", {"max-connections": 5})
    broker.set_user_limits("u", {"max-channels": -1})  # (negative: no limit)
    assert broker.user_limits() == {"u": {"max-connections": 5, "max-channels": -1}}
    assert broker.user_limit("u", "max-channels") is None
    broker.clear_user_limits("u", "max-connections")
    assert broker.user_limits("u") == {"u": {"max-channels": -1}}
    broker.clear_user_limits("u")
    assert broker.user_limits() == {}
    with pytest.raises(AccessControlError, match="should be a number"):
        broker.set_user_limits("u", {"max-channels": True})


def _creator_scenario(base: str) -> list[Any]:
    """An administrator other than guest creates a vhost: who then has permissions in it."""
    api = _api(base)
    creator = f"creator-{uuid.uuid4().hex[:8]}"
    vhost = f"created-{uuid.uuid4().hex[:8]}"
    seen: list[Any] = []
    api("PUT", f"/users/{creator}", {"password": "pw", "tags": "administrator"})
    try:
        seen.append(_api(base, creator, "pw")("PUT", f"/vhosts/{vhost}", {})[0])
        status, rows = api("GET", f"/vhosts/{vhost}/permissions", None)
        seen.append([status, sorted((r["user"].replace(creator, "C"), r["configure"], r["write"],
                                     r["read"]) for r in rows)])
        seen.append(_api(base, "guest")("PUT", f"/vhosts/{vhost}-g", {})[0])
        status, rows = api("GET", f"/vhosts/{vhost}-g/permissions", None)
        seen.append([status, sorted(r["user"].replace(creator, "C") for r in rows)])
    finally:
        api("DELETE", f"/vhosts/{vhost}")
        api("DELETE", f"/vhosts/{vhost}-g")
        api("DELETE", f"/users/{creator}")
    return json.loads(json.dumps(seen))


def test_the_creator_of_a_vhost_gets_full_permissions_as_rabbitmq_gives_them(
        served: Server) -> None:
    got = _creator_scenario(served.management_url + "api")
    reference = _reference()
    if reference is not None:
        assert _creator_scenario(reference[0]) == got
    # (RabbitMQ 3.10.8, checked live: the creator alone, not guest)
    assert got == [201, [200, [["C", ".*", ".*", ".*"]]], 201, [200, ["guest"]]]
