"""The management API's route table: each path's methods, each method's rule and handler.

Theory of operation
-------------------
A resource module (``_queues.py``, ``_users.py``...) registers its handlers with
:func:`route`, one decorator per method of a path, and the decorator line answers "who may do
this?": it names one :class:`~embroker.model._access.Rule` of RabbitMQ's vocabulary
(``is_authorized_vhost``, ``is_authorized_admin``...), as each ``rabbit_mgmt_wm_*`` module's
``is_authorized/2`` does, and, for a method that takes a body, the body's
:class:`~._schema.Schema`. Which methods take a body at all is declared here too
(:data:`BODY_METHODS`: a PUT or a POST, as RabbitMQ's handlers read one): the HTTP layer
answers any other request without reading its body (``Request.takes_body``). The vhost a
rule looks at is the one the path names (or, for a path that names none, the one the route's
``vhost`` function reads from the request); the item a
:attr:`~embroker.model._access.Rule.OWNER` rule looks at is the one its ``owner`` function
finds. The dispatcher (:meth:`ManagementAPI.__call__
<embroker.management._api.ManagementAPI>`) alone runs RabbitMQ's order for every request
(``cowboy_rest``): the route, the method, the credentials, the rule (the model's
:meth:`~embroker.model._access.AccessControl.authorize`), the body, then the handler, which
answers whether the resource exists and does the work. No handler checks an access rule
itself: what a listing shows a user is asked of the model through the dispatcher's
:class:`~embroker.management._api.ManagementAPI` (``listed``, ``sees_items_of``...).
``tests/management/test_routes.py`` walks the table against RabbitMQ's, and fails when a
module other than the dispatcher calls the access checks.

A handler returns a JSON-able value (answered 200), a :class:`~._http.Response`, or raises
:class:`HttpError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, final

from ..model._access import Rule
from ._http import Request

if TYPE_CHECKING:
    from ._api import ManagementAPI
    from ._schema import Schema

__all__ = ["BODY_METHODS", "ROUTES", "Call", "HttpError", "Method", "Route", "bad_request", "find",
           "not_found", "route"]

#: Methods a route may have besides OPTIONS (HEAD goes with GET).
METHODS: Final = ("GET", "PUT", "POST", "DELETE")
#: The methods whose handlers take a body: RabbitMQ's read one on PUT and POST alone
#: (``cowboy_rest``'s ``content_types_accepted``); a GET's, a DELETE's or an OPTIONS' body is
#: never read (the HTTP layer answers such a request without it: ``Request.takes_body``).
BODY_METHODS: Final = frozenset({"PUT", "POST"})


class HttpError(Exception):
    """An answer other than success: status, RabbitMQ's ``error`` and ``reason`` (a text, or
    a JSON value where RabbitMQ's reason is an Erlang term: ``["not_boolean", "yes"]``)."""

    def __init__(self, status: int, error: str, reason: Any, *,
                 headers: list[tuple[str, str]] | None = None, empty: bool = False) -> None:
        super().__init__(reason)
        self.status = status
        self.error = error
        self.reason = reason
        self.headers = headers or []
        self.empty = empty


def not_found() -> HttpError:
    """RabbitMQ's 404 for a path that names nothing (``Object Not Found``)."""
    return HttpError(404, "Object Not Found", "Not Found")


def bad_request(reason: Any) -> HttpError:
    """RabbitMQ's 400 (``bad_request``) with ``reason``."""
    return HttpError(400, "bad_request", reason)


@final
@dataclass
class Call:
    """One authorised request: who asks, the route's parameters and the body as its schema read
    it (``{}`` for a method without one)."""

    request: Request
    user: str
    params: dict[str, str]
    body: dict[str, Any] = field(default_factory=dict)


Handler = Callable[["ManagementAPI", Call], Any]
#: For :attr:`Rule.OWNER`: the user of the item the path names, or ``NO_ITEM``.
Owner = Callable[["ManagementAPI", Call], object]
#: For a rule that looks at a vhost, on a path that names none: the vhost the request is
#: about (the console's, from its query), or ``None``.
Scope = Callable[["ManagementAPI", Call], "str | None"]
#: The rules that look at the vhost of the request.
VHOST_RULES: Final = frozenset({Rule.VHOST, Rule.VHOST_VISIBLE, Rule.POLICIES})


@final
@dataclass(frozen=True)
class Method:
    """One method of a route: who may use it, whether it takes a body and read by what schema,
    what answers it."""

    rule: Rule
    handler: Handler
    body: Schema | None = None
    owner: Owner | None = None
    vhost: Scope | None = None
    #: Whether it takes a body at all (a PUT or a POST: :data:`BODY_METHODS`); a request
    #: without one is answered with its body unread.
    takes_body: bool = False


@final
class Route:
    """A path pattern (``queues/{vhost}/{name}``) and its methods."""

    __slots__ = ("methods", "parts")

    def __init__(self, pattern: str) -> None:
        self.parts = tuple(pattern.strip("/").split("/"))
        self.methods: dict[str, Method] = {}

    @property
    def pattern(self) -> str:
        return "/".join(self.parts)

    def match(self, segments: list[str]) -> dict[str, str] | None:
        if len(segments) != len(self.parts):
            return None
        params: dict[str, str] = {}
        for part, segment in zip(self.parts, segments, strict=True):
            if part.startswith("{"):
                params[part[1:-1]] = segment
            elif part != segment:
                return None
        return params

    @property
    def allow(self) -> str:
        """The ``allow`` header: RabbitMQ's ``allowed_methods`` in its order."""
        methods = ["HEAD", "GET"] if "GET" in self.methods else []
        methods += [m for m in METHODS[1:] if m in self.methods]
        return ", ".join([*methods, "OPTIONS"])

    def __repr__(self) -> str:
        return f"<Route /api/{self.pattern} {sorted(self.methods)}>"


#: Every route, in the order they were registered (literal segments are tried before
#: parameters only by that order: ``users/bulk-delete`` is registered before ``users/{user}``).
ROUTES: list[Route] = []


def route(method: str, pattern: str, rule: Rule, *, body: Schema | None = None,
          owner: Owner | None = None, vhost: Scope | None = None
          ) -> Callable[[Handler], Handler]:
    """Register the decorated function as ``method`` of ``pattern`` (under ``/api/``), used
    by those ``rule`` lets through, with ``body`` read by that schema (``owner``: the item's
    user, for :attr:`Rule.OWNER`; ``vhost``: the vhost ``rule`` looks at, for a path that
    names none)."""
    assert method in METHODS, method
    assert body is None or method in BODY_METHODS, f"{method} /api/{pattern} takes no body"
    assert isinstance(rule, Rule), pattern
    assert (rule is Rule.OWNER) == (owner is not None), pattern
    parts = tuple(pattern.strip("/").split("/"))
    assert vhost is None or (rule in VHOST_RULES and "{vhost}" not in parts), pattern

    def register(handler: Handler) -> Handler:
        found = next((r for r in ROUTES if r.parts == parts), None)
        if found is None:
            found = Route(pattern)
            ROUTES.append(found)
        assert method not in found.methods, f"{method} /api/{pattern} registered twice"
        found.methods[method] = Method(rule, handler, body, owner, vhost,
                                       takes_body=method in BODY_METHODS)
        return handler
    return register


def find(segments: list[str]) -> tuple[Route, dict[str, str]] | None:
    """The route that ``segments`` (after ``/api/``) names, and its parameters."""
    for candidate in ROUTES:
        params = candidate.match(segments)
        if params is not None:
            return candidate, params
    return None
