"""Random bodies and path segments to every route of the management API: each is answered, and
none with a 500 (a 500 is a bug of embroker's; bad input is a 400 with a reason)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embroker import Broker
from embroker.management import (
    ManagementAPI,
    Request,
    _resources,  # noqa: F401  (the routes, registered)
)
from embroker.management._routes import ROUTES, Route

_AUTH = {"authorization": "Basic " + base64.b64encode(b"guest:guest").decode()}

#: What each path parameter names in the fixture broker: something that exists, so the handler
#: gets as far as the body (``kind``: a binding's destination kind).
_EXISTING = {"vhost": "/", "name": "q", "user": "guest", "source": "x", "kind": "q",
             "destination": "q", "props": "~", "node": "embroker@localhost",
             "component": "federation-upstream", "limit": "max-queues", "within": "1",
             "unit": "days", "port": "5672", "protocol": "amqp", "username": "guest",
             "exchange": "amq.topic"}


def _json() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                                     allow_infinity=False) | \
        st.text(max_size=8)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) |
                        st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)


def _bodies(route: Route) -> st.SearchStrategy[bytes]:
    """A body for ``route``: random JSON, or an object with the keys the route's schemas read
    and random values, or bytes that are no JSON."""
    keys = sorted({key for method in route.methods.values() if method.body is not None
                   for key in method.body.fields})
    typed = st.fixed_dictionaries({}, optional={key: _json() for key in keys}) if keys else \
        st.dictionaries(st.text(max_size=8), _json(), max_size=3)
    encoded = typed.map(lambda v: json.dumps(v).encode())
    return st.one_of(encoded, encoded, encoded, _json().map(lambda v: json.dumps(v).encode()),
                     st.binary(max_size=20))


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("traces")


def _fresh_api(trace_dir: Path) -> ManagementAPI:
    """A broker of its own for each request: a random DELETE (of guest, of '/') must not turn
    the requests after it into refusals that never reach their handler."""
    broker = Broker()
    channel = broker.connect().channel()
    channel.exchange_declare("x", "direct")
    channel.queue_declare("q")
    channel.queue_bind("q", "x", "")
    return ManagementAPI(broker, trace_dir=trace_dir)


def _path(route: Route, segments: dict[str, str]) -> str:
    return "/api/" + "/".join(quote(segments.get(part[1:-1], _EXISTING[part[1:-1]]), safe="")
                              if part.startswith("{") else part for part in route.parts)


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.pattern)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_random_bodies_and_segments_to_every_route_are_never_answered_500(
        trace_dir: Path, route: Route, data: st.DataObject) -> None:
    methods = sorted(route.methods)
    with_body = [m for m in methods if route.methods[m].body is not None]
    biased = bool(with_body) and data.draw(st.integers(0, 3), label="bias") > 0
    method = data.draw(st.sampled_from(with_body if biased else methods), label="method")
    params = [part[1:-1] for part in route.parts if part.startswith("{")]
    random_segments: dict[str, str] = {}
    if params:
        random_segments = data.draw(st.dictionaries(st.sampled_from(params),
                                                    st.text(min_size=1, max_size=6),
                                                    max_size=len(params)), label="segments")
    path = _path(route, random_segments)
    body = data.draw(_bodies(route), label="body") if method in ("PUT", "POST") else b""
    api = _fresh_api(trace_dir)
    try:
        response = api(Request(method, path, {}, dict(_AUTH), body))
    finally:
        api.tracing.close()
    assert response.status != 500, (method, path, body, response.body)
    assert response.status != 401, (method, path, body, response.body)  # (guest: everything)
    assert response.status < 500 or response.status == 503, response
    if response.status >= 400 and response.body:
        answer = json.loads(response.body)
        assert answer.get("reason"), answer  # a refusal says why
