"""A guard on the transport core's seam (issue 45, item 5), to join ``tests/test_layers.py``
(on main) at the merge: the listener and the transport core import no protocol package at
module level; the protocols register their port kinds (``embroker/_builtin_ports.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "embroker"

#: The protocol packages the transport core must not import (the management API is served
#: as a port kind too).
_PROTOCOLS_AND_MANAGEMENT = ("amqp091", "amqp10", "amqp10_common", "stream", "stomp", "mqtt",
                             "management")
#: The transport core: the port kinds and their policy, and the listener (and any module
#: split from it: ``_listener*.py``).
_TRANSPORT_CORE = ("_transport.py", "server.py")


def _outside_functions(node: ast.AST) -> list[ast.AST]:
    """``node`` and what it holds, but the bodies of functions (run when called)."""
    found, pending = [], [node]
    while pending:
        current = pending.pop()
        found.append(current)
        if not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(current))
    return found


def test_the_transport_core_imports_no_protocol() -> None:
    found = []
    paths = [PACKAGE / name for name in _TRANSPORT_CORE] + sorted(PACKAGE.glob("_listener*.py"))
    for path in paths:
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:  # (module level: a function may import a protocol it serves)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue  # (annotations only)
            for inner in _outside_functions(node):
                if isinstance(inner, ast.ImportFrom):
                    names = [(inner.module or "").split(".")[0]] if inner.module else \
                        [alias.name for alias in inner.names]
                    if inner.module and inner.module.startswith("embroker."):
                        names = [inner.module.split(".")[1]]
                elif isinstance(inner, ast.Import):
                    names = [a.name.split(".")[1] for a in inner.names
                             if a.name.startswith("embroker.")]
                else:
                    continue
                found += [f"{path.name}:{inner.lineno} imports embroker.{name}"
                          for name in names if name in _PROTOCOLS_AND_MANAGEMENT]
    assert not found, "the transport core imports a protocol (register a PortKind from the " \
        "protocol's side instead):\n" + "\n".join(found)
