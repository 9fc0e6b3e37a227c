"""Guards on the package seams (issue 45): each rule has one home, and the source shows it.

A protocol package is an adapter (its codec and a table from its frames to ``model.Channel``
operations); what protocols share lives in :mod:`embroker.kit` beside the model, as RabbitMQ
3.10's plugins share ``amqp_client``'s helpers beside ``rabbit_channel``. These tests read the
source (no import, no broker) and name the file and line that breaks a seam.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "embroker"

#: The protocol packages: each imports the model, the kit and the shared helpers (the AMQP 1.0
#: codec, ``amqp10_common``, which the stream protocol's entries are written in), never another.
PROTOCOLS = ("amqp091", "amqp10", "stream", "stomp", "mqtt")

#: The access questions of :class:`embroker.model.AccessControl` and of a connection's grant.
#: Only the model, the kit's one login and the management API's dispatcher ask them.
ACCESS_QUESTIONS = frozenset({
    "login", "check_login", "check_external", "login_anonymous", "management_login",
    "authorize", "check", "check_vhost", "check_topic", "sees_message", "sees_items_of",
    "sees_node", "exchange_declare", "queue_declare", "queue_bind", "basic_publish",
})
#: Where an access question may be asked outside the model.
ASKERS = ("kit/_login.py", "management/_api.py")


def _modules(*folders: str) -> Iterator[tuple[str, ast.Module]]:
    for folder in folders:
        root = PACKAGE / folder
        paths = sorted(root.rglob("*.py")) if root.is_dir() else \
            [root] if root.suffix == ".py" and root.exists() else []
        for path in paths:
            yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(), str(path))


def _imported_packages(name: str, tree: ast.Module) -> Iterator[tuple[int, str]]:
    """The embroker sub-packages ``tree`` imports (absolute or relative), with their lines."""
    package = name.split("/")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "embroker" and len(parts) > 1:
                    yield node.lineno, parts[1]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                parts = [*base, *(node.module or "").split(".")] if node.module else base
                if not parts:  # ``from .. import x``: x names the package
                    for alias in node.names:
                        yield node.lineno, alias.name
                else:
                    yield node.lineno, parts[0]
            elif node.module and node.module.split(".")[0] == "embroker":
                parts = node.module.split(".")
                if len(parts) > 1:
                    yield node.lineno, parts[1]
                else:
                    for alias in node.names:
                        yield node.lineno, alias.name


@pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if (PACKAGE / p).is_dir()])
def test_no_protocol_package_imports_another(protocol: str) -> None:
    others = set(PROTOCOLS) - {protocol}
    found = [f"{name}:{line} imports embroker.{target}"
             for name, tree in _modules(protocol)
             for line, target in _imported_packages(name, tree) if target in others]
    assert not found, "a protocol package imports another (share it through embroker.kit):\n" \
        + "\n".join(found)


def test_the_kit_imports_the_model_and_no_protocol() -> None:
    found = [f"{name}:{line} imports embroker.{target}"
             for name, tree in _modules("kit")
             for line, target in _imported_packages(name, tree)
             if target in PROTOCOLS or target in {"server", "management", "control", "client",
                                                   "memory"}]
    assert not found, "\n".join(found)


def test_no_access_question_is_asked_outside_the_model_the_login_and_the_dispatcher() -> None:
    found = []
    for name, tree in _modules(*(p.name for p in PACKAGE.iterdir())):
        if name.startswith("model/") or name in ASKERS:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ACCESS_QUESTIONS:
                receiver = ast.unparse(node.func.value)
                if receiver == "access" or receiver.endswith(".access"):
                    found.append(f"{name}:{node.lineno} asks {receiver}.{node.func.attr}()")
    assert not found, "an access question asked outside the model's one access code:\n" \
        + "\n".join(found)


def test_the_control_tools_read_the_management_api_through_its_public_names() -> None:
    found = []
    for name, tree in _modules("control"):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module is not None:
                module = node.module if not node.level else \
                    ".".join(["embroker", *node.module.split(".")]) if node.level == 2 else ""
                if module.startswith("embroker.management._"):
                    found.append(f"{name}:{node.lineno} imports {module}")
                if module == "embroker.management":
                    found += [f"{name}:{node.lineno} imports {module}.{alias.name}"
                              for alias in node.names if alias.name.startswith("_")]
    assert not found, "\n".join(found)


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
