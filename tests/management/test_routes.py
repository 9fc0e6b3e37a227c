"""The management API's route table against RabbitMQ 3.10.8's: each path's methods and, per
method, the rule that decides who may use it (``rabbit_mgmt_dispatcher`` and each
``rabbit_mgmt_wm_*`` module's ``allowed_methods/2`` and ``is_authorized/2``; the tracing
plugin's ``rabbit_tracing_wm_*``), transcribed here by hand from the source so that the table in
``embroker/management`` is checked against it, not against itself."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import embroker.management
from embroker.management import _resources  # noqa: F401  (the routes, registered)
from embroker.management._routes import METHODS, ROUTES, VHOST_RULES, find
from embroker.model._access import MANAGEMENT_TAGS, Rule

ANY, ADMIN, MONITOR = Rule.ANY, Rule.ADMIN, Rule.MONITOR
VHOST, VISIBLE, POLICIES = Rule.VHOST, Rule.VHOST_VISIBLE, Rule.POLICIES
GLOBAL, OWNER, PUBLIC = Rule.GLOBAL_PARAMETERS, Rule.OWNER, Rule.PUBLIC


def _all(rule: Rule, *methods: str) -> dict[str, Rule]:
    return dict.fromkeys(methods, rule)


#: RabbitMQ 3.10.8: path (its own parameter names) -> method -> rule (HEAD goes with GET).
RABBITMQ: dict[str, dict[str, Rule]] = {
    "/overview": _all(ANY, "GET"),
    "/cluster-name": {"GET": ANY, "PUT": ADMIN},
    "/nodes": _all(MONITOR, "GET"),
    "/nodes/:node": _all(MONITOR, "GET"),
    "/nodes/:node/memory": _all(MONITOR, "GET"),
    "/nodes/:node/memory/relative": _all(MONITOR, "GET"),
    "/nodes/:node/memory/ets": _all(MONITOR, "GET"),
    "/nodes/:node/memory/ets/relative": _all(MONITOR, "GET"),
    "/nodes/:node/memory/ets/:filter": _all(MONITOR, "GET"),
    "/nodes/:node/memory/ets/:filter/relative": _all(MONITOR, "GET"),
    "/extensions": _all(ANY, "GET"),
    "/all-configuration": _all(ADMIN, "GET", "POST"),
    "/definitions": _all(ADMIN, "GET", "POST"),
    "/definitions/:vhost": _all(ADMIN, "GET", "POST"),
    "/parameters": _all(POLICIES, "GET"),
    "/parameters/:component": _all(POLICIES, "GET"),
    "/parameters/:component/:vhost": _all(POLICIES, "GET"),
    "/parameters/:component/:vhost/:name": _all(POLICIES, "GET", "PUT", "DELETE"),
    "/global-parameters": _all(GLOBAL, "GET"),
    "/global-parameters/:name": _all(GLOBAL, "GET", "PUT", "DELETE"),
    "/policies": _all(VHOST, "GET"),
    "/policies/:vhost": _all(VHOST, "GET"),
    "/policies/:vhost/:name": _all(POLICIES, "GET", "PUT", "DELETE"),
    "/operator-policies": _all(VHOST, "GET"),
    "/operator-policies/:vhost": _all(VHOST, "GET"),
    "/operator-policies/:vhost/:name": _all(ADMIN, "GET", "PUT", "DELETE"),
    "/vhost-limits/:vhost/:name": _all(ADMIN, "PUT", "DELETE"),
    "/vhost-limits": _all(VISIBLE, "GET"),
    "/vhost-limits/:vhost": _all(VISIBLE, "GET"),
    "/connections": _all(ANY, "GET"),
    "/connections/:connection": _all(OWNER, "GET", "DELETE"),
    "/connections/username/:username": _all(OWNER, "GET", "DELETE"),
    "/connections/:connection/channels": _all(OWNER, "GET"),
    "/channels": _all(ANY, "GET"),
    "/channels/:channel": _all(OWNER, "GET"),
    "/consumers": _all(ANY, "GET"),
    "/consumers/:vhost": _all(ANY, "GET"),
    "/exchanges": _all(VHOST, "GET"),
    "/exchanges/:vhost": _all(VHOST, "GET"),
    "/exchanges/:vhost/:exchange": _all(VHOST, "GET", "PUT", "DELETE"),
    "/exchanges/:vhost/:exchange/publish": _all(VHOST, "POST"),
    "/exchanges/:vhost/:exchange/bindings/source": _all(VHOST, "GET"),
    "/exchanges/:vhost/:exchange/bindings/destination": _all(VHOST, "GET"),
    "/queues": _all(VHOST, "GET"),
    "/queues/:vhost": _all(VHOST, "GET"),
    "/queues/:vhost/:queue": _all(VHOST, "GET", "PUT", "DELETE"),
    "/queues/:vhost/:destination/bindings": _all(VHOST, "GET"),
    "/queues/:vhost/:queue/contents": _all(VHOST, "DELETE"),
    "/queues/:vhost/:queue/get": _all(VHOST, "POST"),
    "/queues/:vhost/:queue/actions": _all(ADMIN, "POST"),
    "/bindings": _all(VHOST, "GET"),
    "/bindings/:vhost": _all(VHOST, "GET"),
    "/bindings/:vhost/e/:source/:dtype/:destination": _all(VHOST, "GET", "POST"),
    "/bindings/:vhost/e/:source/:dtype/:destination/:props": _all(VHOST, "GET", "DELETE"),
    "/vhosts": _all(ANY, "GET"),
    "/vhosts/:vhost": _all(ADMIN, "GET", "PUT", "DELETE"),
    "/vhosts/:vhost/start/:node": _all(ADMIN, "POST"),
    "/vhosts/:vhost/permissions": _all(ADMIN, "GET"),
    "/vhosts/:vhost/topic-permissions": _all(ADMIN, "GET"),
    "/vhosts/:vhost/connections": _all(VHOST, "GET"),
    "/vhosts/:vhost/channels": _all(VHOST, "GET"),
    "/users/bulk-delete": _all(ADMIN, "POST"),
    "/users/without-permissions": _all(ADMIN, "GET"),
    "/users": _all(ADMIN, "GET"),
    "/users/:user": _all(ADMIN, "GET", "PUT", "DELETE"),
    "/users/:user/permissions": _all(ADMIN, "GET"),
    "/users/:user/topic-permissions": _all(ADMIN, "GET"),
    "/user-limits/:user/:name": _all(ADMIN, "PUT", "DELETE"),
    "/user-limits": _all(VISIBLE, "GET"),
    "/user-limits/:user": _all(VISIBLE, "GET"),
    "/feature-flags": _all(ADMIN, "GET"),
    "/feature-flags/:name/enable": _all(ADMIN, "PUT"),
    "/whoami": _all(ANY, "GET"),
    "/permissions": _all(ADMIN, "GET"),
    "/permissions/:vhost/:user": _all(ADMIN, "GET", "PUT", "DELETE"),
    "/topic-permissions": _all(ADMIN, "GET"),
    "/topic-permissions/:vhost/:user": _all(ADMIN, "GET", "PUT", "DELETE"),
    "/topic-permissions/:vhost/:user/:exchange": _all(ADMIN, "GET", "PUT", "DELETE"),
    "/aliveness-test/:vhost": _all(VHOST, "GET"),
    "/healthchecks/node": _all(ANY, "GET"),
    "/healthchecks/node/:node": _all(ANY, "GET"),
    "/health/checks/alarms": _all(ANY, "GET"),
    "/health/checks/local-alarms": _all(ANY, "GET"),
    "/health/checks/certificate-expiration/:within/:unit": _all(ANY, "GET"),
    "/health/checks/port-listener/:port": _all(ANY, "GET"),
    "/health/checks/protocol-listener/:protocol": _all(ANY, "GET"),
    "/health/checks/virtual-hosts": _all(ANY, "GET"),
    "/health/checks/node-is-mirror-sync-critical": _all(ANY, "GET"),
    "/health/checks/node-is-quorum-critical": _all(ANY, "GET"),
    "/reset": _all(ADMIN, "DELETE"),
    "/reset/:node": _all(ADMIN, "DELETE"),
    "/rebalance/queues": _all(ADMIN, "POST"),
    "/auth": _all(PUBLIC, "GET"),
    "/auth/attempts/:node": _all(MONITOR, "GET", "DELETE"),
    "/auth/attempts/:node/source": _all(MONITOR, "GET", "DELETE"),
    # rabbitmq_tracing (rabbit_tracing_mgmt:dispatcher/0)
    "/traces": _all(ADMIN, "GET"),
    "/traces/node/:node": _all(ADMIN, "GET"),
    "/traces/:vhost": _all(ADMIN, "GET"),
    "/traces/node/:node/:vhost": _all(ADMIN, "GET"),
    "/traces/:vhost/:name": _all(ADMIN, "GET", "PUT", "DELETE"),
    "/traces/node/:node/:vhost/:name": _all(ADMIN, "GET", "PUT", "DELETE"),
    "/trace-files": _all(ADMIN, "GET"),
    "/trace-files/node/:node": _all(ADMIN, "GET"),
    "/trace-files/:name": _all(ADMIN, "GET", "DELETE"),
    "/trace-files/node/:node/:name": _all(ADMIN, "GET", "DELETE"),
}

#: RabbitMQ's routes embroker does not serve (answered 404), and why.
NOT_SERVED = {
    "/nodes/:node/memory": "the Erlang VM's memory breakdown (its allocators, ETS tables, "
                           "binaries, code, atoms...): a Python process has none of these to "
                           "measure",
    "/nodes/:node/memory/relative": "(the same)",
    "/nodes/:node/memory/ets": "(the same: Erlang's ETS tables)",
    "/nodes/:node/memory/ets/relative": "(the same)",
    "/nodes/:node/memory/ets/:filter": "(the same)",
    "/nodes/:node/memory/ets/:filter/relative": "(the same)",
}

#: embroker's own routes (not RabbitMQ's), and their rules.
EMBROKER = {"/embroker/console": {"GET": VHOST}}  # (the vhost its query names)


def _shape(pattern: str) -> str:
    return re.sub(r"(:\w+|\{\w+\})", "{}", pattern.strip("/"))


def test_every_route_and_method_has_rabbitmqs_rule() -> None:
    ours = {_shape(r.pattern): {m: method.rule for m, method in r.methods.items()}
            for r in ROUTES}
    theirs = {_shape(path): rules for path, rules in {**RABBITMQ, **EMBROKER}.items()
              if path not in NOT_SERVED}
    assert ours == theirs


@pytest.mark.parametrize("path", sorted(NOT_SERVED))
def test_a_route_embroker_does_not_serve_is_rabbitmqs(path: str) -> None:
    assert path in RABBITMQ
    assert _shape(path) not in {_shape(r.pattern) for r in ROUTES}


def test_every_route_and_method_names_a_rule() -> None:
    """Each method of each route says who may use it: a rule of the vocabulary, with what the
    rule looks at (the item's owner for OWNER; a vhost for a path naming none only with a rule
    that looks at one), and a handler; a body only for PUT and POST."""
    assert ROUTES
    for route in ROUTES:
        assert route.methods, route
        for verb, method in route.methods.items():
            where = f"{verb} /api/{route.pattern}"
            assert verb in METHODS, where
            assert isinstance(method.rule, Rule), where
            assert callable(method.handler), where
            assert (method.rule is Rule.OWNER) == (method.owner is not None), where
            if method.vhost is not None:
                assert method.rule in VHOST_RULES, where
                assert "{vhost}" not in route.parts, where
            if method.body is not None:
                assert verb in ("PUT", "POST"), where


def _first_difference(a: tuple[str, ...], b: tuple[str, ...]) -> int | None:
    """Where a literal of one pattern meets a parameter of the other, if they can match one
    path (``None``: they cannot)."""
    if len(a) != len(b):
        return None
    first = None
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y and not (x.startswith("{") or y.startswith("{")):
            return None
        if first is None and x.startswith("{") != y.startswith("{"):
            first = i
    return first


def test_a_path_two_patterns_match_goes_to_the_one_with_the_literal() -> None:
    """``users/bulk-delete`` is not the user called bulk-delete, ``connections/username/x``
    not the channels of a connection called username: of two patterns that can match one path,
    the one with a literal where the other has a parameter is tried first, whichever module
    registers them."""
    pairs = 0
    for i, earlier in enumerate(ROUTES):
        for later in ROUTES[i + 1:]:
            at = _first_difference(earlier.parts, later.parts)
            if at is not None:
                pairs += 1
                assert not earlier.parts[at].startswith("{"), (earlier, later)
                path = [p if not p.startswith("{") else "x" for p in earlier.parts]
                found = find(path)
                assert found is not None, path
                assert found[0] is earlier, path
    assert pairs >= 3


#: What the model's access control answers, asked only by the dispatcher (``_api.py``):
#: whether a user may use a route, may do something in a vhost, or is shown an item.
#: (``login`` is not here: the tracing plugin's tracer logs in as its own user, as a client.)
ACCESS_CHECKS = frozenset({
    "authorize", "check", "check_vhost", "check_topic", "management_login",
    "management_tags", "login_vhosts", "visible_vhosts", "listed_vhosts", "sees_items_of",
    "sees_message", "sees_node", "allowed_from"})
DISPATCHER = "_api.py"


def _access_questions(tree: ast.AST) -> list[str]:
    """Calls of the access checks (``x.authorize(...)``; ``broker.access.<check>(...)``) and
    tag tests (``"monitoring" in tags``) in a module."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            held = node.value  # (``broker.access.x``, or ``access = broker.access`` first)
            through_access = (isinstance(held, ast.Attribute) and held.attr == "access") or \
                (isinstance(held, ast.Name) and held.id == "access")
            if node.attr in ACCESS_CHECKS and (through_access or node.attr == "authorize"):
                found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and \
                node.left.value in MANAGEMENT_TAGS:
            right = node.comparators[0]
            name = right.attr if isinstance(right, ast.Attribute) else getattr(right, "id", "")
            if "tags" in name:
                found.append(f"line {node.lineno}: {node.left.value!r} in {name}")
    return found


def test_only_the_dispatcher_asks_the_access_checks() -> None:
    """No handler decides an access question: the rule is the route's, checked by the
    dispatcher, and what a listing shows a user is the model's answer asked through the
    dispatcher's ``ManagementAPI`` (``listed``, ``sees_items_of``...)."""
    folder = Path(embroker.management.__file__).parent
    modules = sorted(folder.glob("*.py"))
    assert folder / DISPATCHER in modules
    asked = {path.name: _access_questions(ast.parse(path.read_text(encoding="utf-8")))
             for path in modules if path.name != DISPATCHER}
    assert {name: found for name, found in asked.items() if found} == {}
    assert _access_questions(ast.parse((folder / DISPATCHER).read_text(encoding="utf-8")))
