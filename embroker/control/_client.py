"""The tools' side of the control interface: one call to a node (see :mod:`._service`), made
only once the node proved it is the node named and knows its cookie (:mod:`._handshake`)."""

from __future__ import annotations

import http.client
import json
import socket
import time
from typing import Any

from ._handshake import HandshakeFailed, Retry, open_channel
from ._protocol import ControlError
from ._registry import NodeEntry

__all__ = ["NodeUnreachable", "call"]


class NodeUnreachable(Exception):
    """No node answers under that name (not registered, gone, not answering in time, or not
    proving it is that node): ``reason`` says which, when it is more than "not registered"."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


def _channel(entry: NodeEntry, timeout: float) -> socket.socket:
    """A connection on which ``entry``'s node proved itself; tried again (at once, then after
    a few milliseconds) while the node drops it unauthenticated for others' (idle sockets
    held on its port), until ``timeout``."""
    deadline = time.monotonic() + timeout
    pause = 0.0
    while True:
        try:
            return open_channel(entry.host, entry.control_port, entry.name, entry.cookie,
                                timeout=max(0.001, deadline - time.monotonic()))
        except Retry as exc:
            if time.monotonic() + pause >= deadline:
                raise NodeUnreachable(f"node {entry.name} is busy", str(exc)) from None
        except HandshakeFailed as exc:
            raise NodeUnreachable(f"node {entry.name} did not prove itself", str(exc)) from None
        except TimeoutError:
            raise NodeUnreachable(f"node {entry.name} did not answer in {timeout:g} s",
                                  f"no answer on port {entry.control_port} in {timeout:g} s"
                                  ) from None
        except OSError as exc:
            raise NodeUnreachable(f"node {entry.name} does not answer: {exc}",
                                  f"port {entry.control_port}: {exc.strerror or exc}") from None
        time.sleep(pause)
        pause = min(0.1, pause * 2 or 0.002)


def call(entry: NodeEntry, operation: str, arguments: dict[str, Any] | None = None, *,
         timeout: float = 60.0) -> Any:
    """Ask the node ``entry`` names to run ``operation``; its result. The arguments are sent
    only after the node proved it is that node (:mod:`._handshake`).

    Raises:
        ControlError: the node refused or failed the command (its text and exit code).
        NodeUnreachable: the node did not answer, or could not prove it is the node.
    """
    body = json.dumps(arguments or {}).encode()
    connection = http.client.HTTPConnection(entry.host, entry.control_port, timeout=timeout)
    try:
        connection.sock = _channel(entry, timeout)
        connection.request("POST", f"/op/{operation}", body, {
            "content-type": "application/json", "host": "127.0.0.1"})
        response = connection.getresponse()
        status, payload = response.status, response.read()
    except (OSError, http.client.HTTPException) as exc:
        if isinstance(exc, TimeoutError):
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
