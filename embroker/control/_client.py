"""The tools' side of the control interface: one call to a node (see :mod:`._service`)."""

from __future__ import annotations

import http.client
import json
import socket
from typing import Any

from ._protocol import COOKIE_HEADER, ControlError
from ._registry import NodeEntry

__all__ = ["NodeUnreachable", "call"]


class NodeUnreachable(Exception):
    """No node answers under that name (not registered, gone, or not answering in time)."""


def call(entry: NodeEntry, operation: str, arguments: dict[str, Any] | None = None, *,
         timeout: float = 60.0) -> Any:
    """Ask the node ``entry`` names to run ``operation``; its result.

    Raises:
        ControlError: the node refused or failed the command (its text and exit code).
        NodeUnreachable: the node did not answer.
    """
    body = json.dumps(arguments or {}).encode()
    connection = http.client.HTTPConnection("127.0.0.1", entry.control_port, timeout=timeout)
    try:
        connection.request("POST", f"/op/{operation}", body, {
            COOKIE_HEADER: entry.cookie, "content-type": "application/json",
            "host": "127.0.0.1"})
        response = connection.getresponse()
        status, payload = response.status, response.read()
    except (OSError, http.client.HTTPException) as exc:
        if isinstance(exc, socket.timeout):
            raise NodeUnreachable(f"node {entry.name} did not answer in {timeout:g} s") from None
        raise NodeUnreachable(f"node {entry.name} does not answer: {exc}") from None
    finally:
        connection.close()
    try:
        answer = json.loads(payload)
    except ValueError:
        raise ControlError(f"the node answered {status} with no JSON", 70) from None
    if not isinstance(answer, dict):
        raise ControlError(f"the node answered {status}: {answer!r}", 70)
    error = answer.get("error")
    if isinstance(error, dict):
        raise ControlError(str(error.get("message")), int(error.get("code", 70)),
                           plain=bool(error.get("plain")))
    if status != 200:
        raise ControlError(f"the node answered {status}", 70)
    return answer.get("result")
