"""The node's control interface: what RabbitMQ's tools ask a running node, over loopback HTTP.

RabbitMQ's tools call functions in the node over Erlang distribution and format the answers
themselves. embroker's node serves a small HTTP/1.1 interface on a loopback port of the
listener's own loop (``Server.serve_control``), parsed by the management API's bounded
:class:`~embroker.management.HttpConnection`: ``POST /op/NAME`` with a JSON object of
arguments, answered ``200`` with ``{"result": ...}`` or ``{"error": {...}}``. The tools format
the answer (:mod:`._ctl`).

Authorization is the node's cookie, as with Erlang's: before a byte of HTTP, the tool and the
node each prove they know it, and the node proves its name (:mod:`._handshake`, on the
listener's side ``Server.serve_control``); a connection that does not is closed having run
nothing. The cookie is in the node's registry file, which only the user who started the node
can read (:mod:`._registry`). Whoever holds it may do everything, as whoever holds an Erlang
cookie may. A request is still screened from its headers alone (method, path, operation)
before a byte of its body is kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, final

from ..errors import AccessControlError, AMQPError, PolicyError
from ..management import Request, Response, Work
from ._protocol import ControlError

if TYPE_CHECKING:
    from ._node import Node

__all__ = ["ControlService"]

def _json(status: int, value: Any) -> Response:
    return Response(status, json.dumps(value, separators=(",", ":")).encode(),
                    [("content-type", "application/json")])


@final
class ControlService:
    """The application of the control port (see the module's docstring)."""

    def __init__(self, node: Node,
                 operations: dict[str, Callable[[Node, dict[str, Any]], Any]]) -> None:
        self.node = node
        self._operations = operations

    def screen(self, request: Request) -> Response | None:
        """Refuse from the headers alone: another method, another path, no such operation
        (the tool proved it knows the cookie before its first request: :mod:`._handshake`)."""
        segments = request.segments
        if request.method != "POST" or len(segments) != 2 or segments[0] != "op":
            return _json(404, {"error": {"message": "no such route", "code": 70,
                                         "plain": False}})
        if segments[1] not in self._operations:
            return _json(404, {"error": {"message": f"no operation {segments[1]!r} here",
                                         "code": 64, "plain": False}})
        return None

    def __call__(self, request: Request) -> Response | Work:
        refused = self.screen(request) if not request.screened else None
        if refused is not None:
            return refused
        operation = self._operations[request.segments[1]]
        try:
            arguments = json.loads(request.body or b"{}")
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            return _json(400, {"error": {"message": "the arguments are no JSON object",
                                         "code": 64, "plain": False}})
        return _answer(lambda: operation(self.node, arguments))


def _failure(exc: Exception) -> Response | None:
    """A failure as the tools print it (``None``: not a refusal but a bug, raised on)."""
    if isinstance(exc, ControlError):
        return _json(200, {"error": exc.as_json()})
    if isinstance(exc, AMQPError):  # the model refused: its text, as RabbitMQ's CLI shows it
        return _json(200, {"error": ControlError(exc.reply_text).as_json()})
    if isinstance(exc, PolicyError):  # (its text is rabbitmqctl's: "Validation failed"...)
        text = str(exc)
        return _json(200, {"error": ControlError(
            text + "\n" if text.startswith("Validation") else text, 69).as_json()})
    if isinstance(exc, AccessControlError):  # a user or permission change refused
        return _json(200, {"error": ControlError(str(exc), 69).as_json()})
    return None


_REFUSALS = (ControlError, AMQPError, PolicyError, AccessControlError)


def _answer(run: Callable[[], Any]) -> Response | Work:
    """The response to an operation: its result, or its failure as the tools print it. An
    operation that is a generator is worked out in steps (:class:`_Stepped`)."""
    try:
        result = run()
    except _REFUSALS as exc:
        refused = _failure(exc)
        assert refused is not None
        return refused
    if isinstance(result, Generator):
        return _Stepped(result)
    return _json(200, {"result": result})


@final
class _Stepped:
    """An operation worked out in steps, one per turn of the listener's loop (the management
    API's :class:`~embroker.management.Work`): a long listing never holds the loop."""

    def __init__(self, steps: Generator[None, None, Any]) -> None:
        self._steps = steps

    def step(self) -> Response | None:
        try:
            next(self._steps)
        except StopIteration as done:
            return _json(200, {"result": done.value})
        except _REFUSALS as exc:
            refused = _failure(exc)
            assert refused is not None
            return refused
        return None

    def close(self) -> None:
        self._steps.close()
