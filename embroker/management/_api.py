"""RabbitMQ 3.10's management HTTP API over the broker model.

Theory of operation
-------------------
:class:`ManagementAPI` is the application behind each :class:`~._http.HttpConnection` of a
listener's management port: a request in, a response out, on the listener's loop thread. The
routes are declared in the resource modules, one per resource (``_vhosts``, ``_users``,
``_permissions``, ``_exchanges``, ``_queues``, ``_bindings``, ``_connections``, ``_channels``,
``_consumers``, ``_definitions``, ``_policies``, ``_parameters``, ``_traces``, ``_node``,
``_console``: :mod:`._resources`): each method of each path names its access rule and its
body's schema (:mod:`._routes`). A request goes through RabbitMQ's steps
(``cowboy_rest`` in ``rabbit_mgmt_wm_*``), in its order, here and nowhere else:

1. the route (404 ``Object Not Found``), then the method (405 with ``allow``; OPTIONS is
   answered with ``allow`` and no credentials);
2. the credentials (401 with a challenge), the place (``loopback_users``) and the
   management tags (401 ``not_authorised``): :meth:`AccessControl.management_login
   <embroker.model._access.AccessControl.management_login>`;
3. the method's rule, checked by the model (:meth:`AccessControl.authorize
   <embroker.model._access.AccessControl.authorize>`): RabbitMQ's ``is_authorized_*``, which
   is checked before anything is looked up, so a refused user learns nothing of what exists;
4. the body, read by the method's schema (400 ``bad_request`` with RabbitMQ's reason);
5. the handler: whether what the path names exists (404), then the work.

Before them, the path must decode (cowboy's router: a ``%`` not followed by two hex digits is a
400 with no body), and a path that names no route, the console's files' and the API's alike,
may not hold a NUL, ``/`` or ``\\`` inside a segment (``cowboy_static``: 400, no body; RabbitMQ
3.10.8 answered both so, checked live). The console's files are looked up among the files the
console has, never on the file system by the path's text. With RabbitMQ's own UI
(:class:`~._ui.ManagementUI`, ``--management-ui DIR``), its files answer at ``/`` (and a path
under ``/api/`` that names no route, as RabbitMQ's static handler answers ``/api/index.html``),
and the console, its API calls included, moves under ``/console/``.

Steps 1 to 3 need only the request's headers: :meth:`ManagementAPI.screen` runs them before
the body is read, so a client that may not use a route never gets a byte of its body buffered;
it also says whether the route takes a body at all (a PUT's or a POST's), and the HTTP layer
answers a request whose route takes none without reading its body (``Request.takes_body``).
Steps 2 and 3 are the request's login, counted once as an ``http`` authentication attempt
(``broker.access.attempts``) by the model's access control, as RabbitMQ counts its
``is_authorized``: a request the screen let through is not counted again.

Everything a request changes goes through the model's own operations, the ones AMQP 0-9-1 uses,
as the HTTP user: a declare, delete, bind, publish or get opens a model connection to the vhost
as that user (``broker.open_connection(vhost, user=...)``, as RabbitMQ's management plugin opens
a direct connection) and calls its channel, so the equivalence rules, the permission checks and
the errors are the same as on the wire; the connection is closed before the lock is let go, so
no one sees it. Users, permissions, policies, limits and definitions go through the broker's
``rabbitmqctl`` commands. Which vhosts, connections, channels and messages a request shows a
user is the model's answer too (``visible_vhosts``, ``listed_vhosts``, ``sees_items_of``...),
asked through this class (:meth:`ManagementAPI.listed`, :meth:`ManagementAPI.sees_items_of`...):
this module alone asks the model's access control anything.

What a handler reads, it reads under the broker's lock (``broker.locked()``) into plain values;
most answers are turned into JSON after the lock is let go (the queue listings: their rows are
snapshots), but every request still runs on the listener's thread, so its cost is bounded where
it could grow with what the broker holds (see ``_listing``).
"""

from __future__ import annotations

import base64
import binascii
import functools
import logging
import re
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, final
from urllib.parse import quote

from .._untrusted import json_bytes, json_dumps, log_text
from .._version import __version__
from ..errors import AccessRefused, AMQPError, NotAllowed, NotFound
from ..model._access import NO_ITEM, ManagementRefused, Rule, User
from . import _listing, _samples, _steps
from ._http import Request, Response
from ._routes import Call, HttpError, Method, bad_request, find, not_found
from ._steps import Steps
from ._tracing import Tracing
from ._ui import ManagementUI, resolve

if TYPE_CHECKING:
    from ..model import Broker, Channel, Connection, Node, Queue, VirtualHost
    from ..server import Server, WireConnection

__all__ = ["ManagementAPI"]

#: Refused logins (``HTTP access denied: ...``, as RabbitMQ warns of them).
log = logging.getLogger("embroker.management")

_STATIC = Path(__file__).with_name("console")
_CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                  ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml",
                  ".png": "image/png"}
CHALLENGE = ("www-authenticate", 'Basic realm="RabbitMQ Management"')
_JSON = [("content-type", "application/json"), ("cache-control", "no-cache")]
#: A ``%`` not followed by two hex digits: a path cowboy's router cannot decode.
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
#: What ``cowboy_static`` refuses inside a segment of a path it serves (``validate_reserved``).
_RESERVED = ("\0", "/", "\\")


def _bad_request() -> Response:
    """RabbitMQ's answer to a path it cannot take (cowboy's 400, with no body)."""
    return Response(400, b"")


def _segments(request: Request) -> list[str] | None:
    """The path's segments, percent-decoded; ``None`` for a path that does not decode."""
    return None if _BAD_ESCAPE.search(request.path) else request.segments


def _reserved(segments: list[str]) -> bool:
    """Whether a segment holds what no file's name may (``cowboy_static``'s 400)."""
    return any(c in segment for segment in segments for c in _RESERVED)


@functools.cache
def _console_files() -> dict[str, Path]:
    """The console's files by their path under it (``"index.html"``, ``"console.js"``): what
    a path may name, looked up here rather than on the file system by the path's text."""
    root = _STATIC.resolve()
    return {path.relative_to(root).as_posix(): path for path in sorted(root.rglob("*"))
            if path.is_file() and not path.is_symlink()}


@final
class ManagementAPI:
    """RabbitMQ's management HTTP API and the console, for one listener's broker.

    Args:
        broker: the broker to show and change.
        server: the listener that serves it (its connections and ports).
        rabbitmqadmin: a copy of RabbitMQ's ``rabbitmqadmin`` script to serve at
            ``/cli/rabbitmqadmin`` (embroker ships none; without one that path says where to
            get it).
        trace_dir: where the tracing plugin's logs go (a temporary directory by default).
        ui: RabbitMQ's management UI to serve at ``/`` (the console moves to ``/console/``).
    """

    def __init__(self, broker: Broker, server: Server | None = None, *,
                 rabbitmqadmin: str | Path | None = None,
                 trace_dir: str | Path | None = None, ui: ManagementUI | None = None) -> None:
        from . import _resources  # noqa: F401  (registers the routes)

        self.broker = broker
        self.server = server
        self.rabbitmqadmin = Path(rabbitmqadmin) if rabbitmqadmin is not None else None
        self.server_header = f"embroker/{__version__}"
        self._started = time.time()
        #: The tracing plugin's traces (``/api/traces``) and their logs (``/api/trace-files``),
        #: in ``trace_dir`` (by default a temporary directory, removed with the listener).
        self.tracing = Tracing(broker, trace_dir,
                               node=server.node if server is not None else None)
        #: RabbitMQ's UI served at ``/`` (``None``: the console is there).
        self.ui = ui
        #: What ``/api/nodes`` names as the node's configuration files and logs (RabbitMQ's
        #: ``rabbit:config_files/0`` and ``rabbit:log_locations/0``): set by whoever starts the
        #: node (``rabbitmq-server``: the rabbitmq.conf files read and the log file;
        #: ``embroker serve``: none, and ``<stderr>``, where it logs).
        self.config_files: tuple[str, ...] = ()
        self.log_files: tuple[str, ...] = ()
        #: The statistics' history (:mod:`._samples`), sampled on the broker's clock.
        with broker.locked():
            self.sampler = _samples.sampler_of(broker)
            if server is not None:
                self.sampler.servers[server.node.name] = server
        self._sampling = True

    @property
    def node(self) -> Node:
        """The node that answers (RabbitMQ's: the one whose listener the request reached): the
        server's node (:attr:`Server.node <embroker.server.Server.node>`), else the first."""
        return self.server.node if self.server is not None else self.broker.nodes[0]

    def close(self) -> None:
        """Stop the traces and the sampling (the listener stops)."""
        with self.broker.locked():
            self.tracing.close()
            if self._sampling:
                self._sampling = False
                _samples.release(self.sampler)

    # -- the entry points ---------------------------------------------------------------------

    def __call__(self, request: Request) -> Response:
        """Answer a whole request (the body read), every step of it at once: for callers that
        are not the listener's loop, which uses :meth:`begin`."""
        answer = self.begin(request)
        if isinstance(answer, Pending):
            answer = answer.run()
        if answer.parts is not None:  # (one body, for a caller that wants it whole)
            answer = Response(answer.status, answer.content(), answer.headers)
        return answer

    def begin(self, request: Request) -> Response | Pending:
        """Answer a whole request (the body read), or begin to: a handler that works in steps
        (:mod:`._steps`) is :class:`Pending`, whose steps the caller takes one at a time."""
        placed = self._place(request)
        if isinstance(placed, Response):
            return placed
        ui, segments = placed
        if ui:
            return self._ui_file(request, segments)
        if not segments or segments[0] != "api":
            return self._static(request, segments)
        try:
            admitted = self._admit(request, segments[1:])
            if isinstance(admitted, Response):
                return admitted
            method, call = admitted
            if method.body is not None:
                call.body = method.body.read(request.body)
            result = method.handler(self, call)
        except HttpError as error:
            return self._error(error, segments)
        if isinstance(result, Generator):
            return Pending(self, result, segments)
        return self._answer(result)

    def _answer(self, result: Any) -> Response:
        if isinstance(result, Response):
            return result
        return self.reply(result)

    def screen(self, request: Request) -> Response | None:
        """The answer to a request that its headers alone decide (no such route, a method the
        route does not have, credentials that fail, a rule that refuses the user), given
        before its body is read; ``None``: read the body and answer through
        :meth:`__call__`. (``request.body`` is empty.) A request let through is told whether
        its route takes a body (``request.takes_body``): a PUT or a POST of the API; the
        console's files and every other method take none, and the HTTP layer answers them
        without reading one."""
        placed = self._place(request)
        if isinstance(placed, Response):
            return placed
        ui, segments = placed
        if ui or not segments or segments[0] != "api":
            if request.method in ("GET", "HEAD"):
                request.takes_body = False
                return None
            return self._ui_file(request, segments) if ui else self._static(request, segments)
        try:
            admitted = self._admit(request, segments[1:])
        except HttpError as error:
            return self._error(error, segments)
        if isinstance(admitted, Response):
            return admitted
        request.screened = True
        request.takes_body = admitted[0].takes_body
        return None

    def _place(self, request: Request) -> tuple[bool, list[str]] | Response:
        """Whether the path names a file of RabbitMQ's UI, and its segments (the console's and
        the API's under ``/console/`` when that UI is served, without it); or the answer: a
        path that does not decode, ``/console`` (to ``/console/``: its files are relative)."""
        segments = _segments(request)
        if segments is None:
            return _bad_request()
        if self.ui is None or segments[:1] == ["api"]:
            return False, segments
        if segments[:1] != ["console"]:
            return True, segments
        if segments == ["console"] and not request.path.endswith("/"):
            return Response(301, b"", [("location", "/console/")])
        return False, segments[1:]

    def _admit(self, request: Request, segments: list[str]) -> Response | tuple[Method, Call]:
        """Steps 1 to 3 of the module's documentation: the method to run and its call, or the
        answer (OPTIONS, 405)."""
        found = find(segments)
        if found is None:  # (RabbitMQ's static handler's answer: its last route is "/[...]")
            if self.ui is not None and request.method in ("GET", "HEAD"):
                return self._ui_file(request, ["api", *segments])
            if _reserved(segments):
                raise HttpError(400, "", "", empty=True)
            raise not_found()
        route, params = found
        verb = "GET" if request.method == "HEAD" else request.method
        if verb == "OPTIONS":
            return Response(200, b"", [("allow", route.allow)])
        method = route.methods.get(verb)
        if method is None:
            return Response(405, b"", [("allow", route.allow)])
        if params.get("name") == "amq.default" and segments[0] == "exchanges":
            params["name"] = ""  # RabbitMQ's name for the default exchange in paths
        if params.get("source") == "amq.default":
            params["source"] = ""
        if method.rule is Rule.PUBLIC:
            return method, Call(request, "", params)
        call = Call(request, self._authenticate(request), params)
        self._authorize(method, call)
        return method, call

    def _authenticate(self, request: Request) -> str:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "basic":
            raise HttpError(401, "", "", headers=[CHALLENGE], empty=True)
        try:
            name, sep, password = base64.b64decode(token.strip(), validate=True).decode(
                "utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            name, sep, password = "", "", ""
        with self.broker.locked():
            try:
                if not sep:
                    raise ManagementRefused("Login failed", challenge=True)
                self.broker.access.management_login(name, password, loopback=request.loopback,
                                                     address=split_peer(request.peer)[0])
            except ManagementRefused as refused:
                if sep:  # (as rabbit_mgmt_util:is_authorized/6 warns, the name escaped)
                    log.warning("HTTP access denied: user '%s' - %s", log_text(name),
                                "invalid credentials" if refused.challenge else refused.reason)
                if refused.challenge:
                    raise HttpError(401, "not_authorized", refused.reason,
                                    headers=[CHALLENGE]) from None
                raise HttpError(401, "not_authorised", refused.reason) from None
        return name

    def _authorize(self, method: Method, call: Call) -> None:
        """Step 3: the model's answer to whether ``call``'s user may use ``method`` (the vhost
        its rule looks at is the path's, or the one the method's ``vhost`` names; the item's
        user, for :attr:`Rule.OWNER`).

        Raises:
            HttpError: 401 ``not_authorised`` with RabbitMQ's reason.
        """
        with self.broker.locked():
            owner = method.owner(self, call) if method.owner is not None else NO_ITEM
            vhost = method.vhost(self, call) if method.vhost is not None else \
                call.params.get("vhost")
            try:
                self.broker.access.authorize(call.user, method.rule, vhost=vhost,
                                             vhosts=self.broker.vhosts, owner=owner,
                                             delete=call.request.method == "DELETE",
                                             address=None if call.request.screened else
                                             split_peer(call.request.peer)[0])
            except ManagementRefused as refused:
                raise HttpError(401, "not_authorised", refused.reason) from None

    # -- answers --------------------------------------------------------------------------------

    def reply(self, value: Any) -> Response:
        """A 200 answer with ``value`` as JSON, as RabbitMQ writes it."""
        return self.reply_json(json_bytes(_steps.dumps(value)))

    @staticmethod
    def reply_json(body: bytes) -> Response:
        """A 200 answer with ``body``, JSON text already."""
        return Response(200, body, list(_JSON))

    @staticmethod
    def reply_parts(parts: list[bytes]) -> Response:
        """A 200 answer whose JSON text is ``parts``, in order (sent without a join)."""
        return Response(200, headers=list(_JSON), parts=parts)

    def _error(self, error: HttpError, segments: list[str]) -> Response:
        if segments[1:2] == ["embroker"]:
            # embroker's own paths (the console's) ask for no credentials: a browser would
            # answer a challenge with its own login dialog, over the page's.
            error.headers = [h for h in error.headers if h != CHALLENGE]
        if error.empty:
            return Response(error.status, b"", error.headers)
        body = json_dumps({"error": error.error, "reason": error.reason},
                          separators=(",", ":")).encode()
        return Response(error.status, body, [("content-type", "application/json"),
                                             *error.headers])

    # -- the console and other static answers ---------------------------------------------------

    def _static(self, request: Request, segments: list[str]) -> Response:
        if request.method not in ("GET", "HEAD"):
            return Response(405, b"", [("allow", "HEAD, GET, OPTIONS")])
        if _reserved(segments):
            return _bad_request()
        if segments == ["cli", "rabbitmqadmin"]:
            return self._rabbitmqadmin()
        name = "/".join(segments) or "index.html"
        if segments == ["cli"]:
            name = "cli.html"
        path = _console_files().get(name)
        if path is None:
            return self._error(not_found(), segments)
        content_type = _CONTENT_TYPES.get(path.suffix, "application/octet-stream")
        return Response(200, path.read_bytes(), [("content-type", content_type),
                                                 ("cache-control", "no-cache")])

    def _ui_file(self, request: Request, segments: list[str]) -> Response:
        """A file of RabbitMQ's UI (:mod:`._ui`), as RabbitMQ's static handler answers: a
        folder with an ``index.html`` is a redirect to it (``/cli`` -> ``/cli/index.html``),
        another folder 403, a path that names no file 404 (checked on 3.10.8)."""
        assert self.ui is not None
        if request.method not in ("GET", "HEAD"):
            return Response(405, b"", [("allow", "HEAD, GET, OPTIONS")])
        if _reserved(segments):
            return _bad_request()
        name = resolve(segments)
        if name is None:
            return self._error(not_found(), segments)
        if name == "cli/rabbitmqadmin" and (self.rabbitmqadmin is not None or name not in
                                            self.ui):
            return self._rabbitmqadmin()
        if name and self.ui.is_folder(name):
            if f"{name}/index.html" in self.ui:
                return Response(301, b"", [("location", f"/{quote(name)}/index.html")])
            return Response(403, b"")
        found = self.ui.read(name or "index.html")
        if found is None:
            return self._error(not_found(), segments)
        content, content_type = found
        return Response(200, content, [("content-type", content_type),
                                       ("cache-control", "no-cache")])

    def _rabbitmqadmin(self) -> Response:
        if self.rabbitmqadmin is not None and self.rabbitmqadmin.is_file():
            return Response(200, self.rabbitmqadmin.read_bytes(),
                            [("content-type", "text/x-python; charset=utf-8")])
        text = ("embroker does not ship rabbitmqadmin, RabbitMQ's command line tool (it is "
                "RabbitMQ's code, under its licence).\n\nGet it from a RabbitMQ node with the "
                "management plugin (http://NODE:15672/cli/rabbitmqadmin) or from "
                "RabbitMQ's repository (deps/rabbitmq_management/bin/rabbitmqadmin), and run it "
                "against embroker:\n\n    rabbitmqadmin --port PORT list queues\n\nTo serve "
                "your copy here, start embroker with --rabbitmqadmin PATH.\n")
        return Response(404, text.encode(), [("content-type", "text/plain; charset=utf-8")])

    # -- what the handlers share (under the broker's lock unless said) ---------------------------

    # What a listing shows a user is the model's answer (``AccessControl``'s filters, RabbitMQ's
    # ``filter_vhost``, ``filter_user``...), asked here for the handlers, never decided by them.

    def visible(self, call: Call) -> list[str]:
        """The vhosts whose existence ``call``'s user is shown (``list_visible_vhosts``)."""
        return self.broker.access.visible_vhosts(call.user, self.broker.vhosts)

    def listed(self, call: Call) -> list[VirtualHost]:
        """The vhosts a listing of queues, exchanges, bindings or policies covers: the one the
        path names (404 if there is none), else every one ``filter_vhost`` shows the user."""
        name = call.params.get("vhost")
        if name is not None and name not in self.broker.vhosts:
            raise not_found()
        shown = self.broker.access.listed_vhosts(call.user, self.broker.vhosts)
        if name is not None:
            shown = [name] if name in shown else []
        return [self.broker.vhosts[v] for v in shown]

    def listed_connections(self, call: Call) -> list[Connection]:
        """The open connections a listing shows ``call``'s user (``filter_conn_ch_list``): the
        path's vhost's (404 if there is none) or every vhost's, then its own unless it is a
        monitoring user."""
        vhost = call.params.get("vhost")
        if vhost is not None:
            self.vhost(call)
        return [c for c in self.broker.connections.values() if c.is_open
                and (vhost is None or c.vhost.name == vhost)
                and self.sees_items_of(call, c.user)]

    def sees_items_of(self, call: Call, owner: str) -> bool:
        """Whether ``call``'s user is shown the connections, channels and consumers of user
        ``owner`` (``filter_user``)."""
        return self.broker.access.sees_items_of(call.user, owner)

    def sees_message(self, call: Call, vhost: str, queues: Iterable[str]) -> bool:
        """Whether ``call``'s user is shown what a message that reached ``queues`` of
        ``vhost`` carried (:meth:`AccessControl.sees_message
        <embroker.model._access.AccessControl.sees_message>`)."""
        return self.broker.access.sees_message(call.user, vhost, queues)

    def sees_node(self, call: Call) -> bool:
        """Whether ``call``'s user is shown the node's details in the overview
        (``rabbit_mgmt_util:is_monitor``)."""
        return self.broker.access.sees_node(call.user)

    def vhost(self, call: Call) -> VirtualHost:
        """The vhost the path names (404 if there is none)."""
        found = self.broker.vhosts.get(call.params["vhost"])
        if found is None:
            raise not_found()
        return found

    def user(self, call: Call) -> User:
        """The user the path names (404 if there is none)."""
        found = self.broker.access.users.get(call.params["user"])
        if found is None:
            raise not_found()
        return found

    def queue(self, call: Call) -> Queue:
        """The queue the path names (404 if it or its vhost does not exist)."""
        found = self.vhost(call).queues.get(call.params["name"])
        if found is None:
            raise not_found()
        return found

    @contextmanager
    def channel(self, call: Call, vhost: str, *, whole_reasons: bool = False
                ) -> Iterator[Channel]:
        """A channel of a model connection to ``vhost`` as the HTTP user (under the broker's
        lock, closed before it is let go): what RabbitMQ's direct connection is. The model's
        refusals become RabbitMQ's answers: a connection refused is 401 ``Access refused.``;
        a refused operation is 401 ``Access refused.`` too, 404 for what does not exist, 400
        for the rest (``rabbit_mgmt_util:direct_request``, declares, deletes, binds), or, with
        ``whole_reasons``, each with the channel's whole close reason
        (``rabbit_mgmt_util:with_channel``: the aliveness test, publishing, getting)."""
        with self.broker.locked():
            if vhost not in self.broker.vhosts:
                raise HttpError(404, "not_found", "vhost_not_found")
            try:
                connection = self.broker.open_connection(
                    vhost, user=call.user, client_properties={"product": "management API"},
                    name=f"management API ({call.user})",
                    node=self.server.node if self.server is not None else None)
            except NotAllowed:
                raise HttpError(401, "not_authorised", "Access refused.") from None
            try:
                yield connection.open_channel(1)
            except AccessRefused as error:
                raise HttpError(401, "not_authorised", error.reply_text if whole_reasons
                                else "Access refused.") from None
            except NotFound as error:
                raise HttpError(404, "not_found", error.reply_text if whole_reasons
                                else error.text) from None
            except AMQPError as error:
                raise bad_request(f"{error.reply_code} {error.reply_text}" if whole_reasons
                                  else error.text) from None
            finally:
                connection.close()

    def listing(self, call: Call, rows: list[Any],
                to_dict: Callable[[Any], dict[str, Any]] | None = None,
                locked: bool = False) -> Steps[Response]:
        """``rows`` (dicts, or objects ``to_dict`` makes them, under the broker's lock when
        ``locked``) with RabbitMQ's list options of the request applied (:mod:`._listing`),
        as JSON, in steps."""
        lock = self.broker.locked() if locked else None
        if to_dict is not None and not any(o in call.request.query for o in _listing.OPTIONS):
            # (no option: each row's JSON in its step, in RabbitMQ's default order)
            if rows and "name" in _run_locked(lock, to_dict, rows[0]):
                rows = yield from _steps.sort(
                    rows, lambda r: _listing.by_vhost_and_name(to_dict(r)), lock=lock)
            return self.reply_parts((yield from _steps.encode(rows, lambda r: _steps.dumps(
                to_dict(r)), lock)))
        found = yield from _listing.apply(call.request.query, rows, to_dict, lock)
        if isinstance(found, dict):  # a page
            page = yield from _steps.encode(found.pop("items"))
            return self.reply_parts([json_dumps(found, separators=(",", ":"))[:-1].encode(),
                                     b',"items":', *page, b"}"])
        return self.reply_parts((yield from _steps.encode(found)))

    def wire(self) -> dict[int, WireConnection]:
        """The connections the listener carries (AMQP and stream), by ``id`` of their model
        connection (under the broker's lock)."""
        return self.server.wire_connections() if self.server is not None else {}

    def identity(self, connection: Connection,
                 wire: Mapping[int, WireConnection]) -> tuple[str, tuple[str, int]]:
        """A connection's name as RabbitMQ's management shows it (``peer -> here``) and its
        peer's address."""
        carried = wire.get(id(connection))
        if carried is None:
            return f"{connection.name} (in-process)", ("", 0)
        host, port = split_peer(carried.peer)
        here = split_peer(carried.local)
        return f"{carried.peer} -> {here[0]}:{here[1]}", (host, port)


@final
class Pending:
    """A request whose handler works in steps (:mod:`._steps`): :meth:`step` runs one (at
    most about ``STEP_SECONDS``) and gives the answer once there is one."""

    __slots__ = ("_api", "_segments", "_steps")

    def __init__(self, api: ManagementAPI, steps: Steps[Any], segments: list[str]) -> None:
        self._api = api
        self._steps = steps
        self._segments = segments

    def step(self) -> Response | None:
        """One step; the answer when the handler is done (an error answer too), else
        ``None``. Any other exception is a bug (the listener answers 500)."""
        try:
            next(self._steps)
        except StopIteration as done:
            return self._api._answer(done.value)
        except HttpError as error:
            return self._api._error(error, self._segments)
        return None

    def run(self) -> Response:
        """Every step at once."""
        while True:
            answer = self.step()
            if answer is not None:
                return answer

    def close(self) -> None:
        """Give up (the client went away): the handler stops where it is."""
        self._steps.close()


def _run_locked(lock: Any, function: Callable[[Any], Any], argument: Any) -> Any:
    if lock is None:
        return function(argument)
    with lock:
        return function(argument)


def split_peer(peer: str) -> tuple[str, int]:
    host, _, port = peer.rpartition(":")
    return host.strip("[]"), int(port) if port.isdigit() else 0


