"""Where RabbitMQ's tools find a running embroker node: the node registry.

RabbitMQ's command-line tools reach a node by its name (``rabbit@host``): epmd on that host
tells them the node's distribution port, and the Erlang cookie in ``~/.erlang.cookie`` lets them
in. embroker's tools do the same with a folder: each running node writes one file there, named
after the node, holding its process id, the address and port of its control interface (where
RabbitMQ's distribution would listen), the secret both sides prove they know before anything
else is said (the node's cookie: :mod:`._handshake`) and the ports it serves.

The folder is ``$EMBROKER_NODES_DIR`` if set, else ``embroker-<uid>/nodes`` under the system's
temporary folder, and it is the user's alone: every level of it is checked
(:mod:`embroker._hostfiles`), a folder another user made or can write is refused with one line
(:class:`~embroker._hostfiles.UntrustedPath`), never used; the files are made 0600 and renamed
into place, and a file the user does not own is ignored as if it were not there. So only the
user who started a node can drive it, as with Erlang's cookie, and no one else can pose as it.
A file whose process is gone is stale: lookups ignore it and the next node of that name
replaces it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, final

from .._hostfiles import UntrustedPath, private_folder, read_file, user_folder, write_file

__all__ = ["NodeEntry", "NodeNameInUse", "UntrustedPath", "entries", "lookup", "nodes_dir",
           "register", "unregister"]


class NodeNameInUse(Exception):
    """A live node already has this name (RabbitMQ: "node with name ... already running")."""


#: What a refusal of the registry's folder tells the user to do.
_FIX = "remove it, or give a folder of your own in EMBROKER_NODES_DIR"


def nodes_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The registry's folder, checked (made 0700 when missing).

    Raises:
        UntrustedPath: it, or a level above it, belongs to another user or others can write it.
    """
    environ = os.environ if environ is None else environ
    given = environ.get("EMBROKER_NODES_DIR")
    if given:
        return private_folder(given, fix=_FIX)
    return user_folder("nodes", fix=_FIX)


@final
@dataclass(frozen=True)
class NodeEntry:
    """One running node, as its registry file holds it."""

    name: str
    pid: int
    control_port: int
    cookie: str
    #: The ports served, by RabbitMQ's listener names (``amqp``, ``amqp/ssl``, ``stream``,
    #: ``http``...), for ``rabbitmq-diagnostics listeners`` and tools that poll a port.
    ports: dict[str, int] = field(default_factory=dict)
    #: The address the tools call the control port on (loopback when it listens on every
    #: interface).
    host: str = "127.0.0.1"

    @staticmethod
    def new_cookie() -> str:
        return secrets.token_urlsafe(24)

    @property
    def alive(self) -> bool:
        """Whether its process still runs."""
        if self.pid == os.getpid():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # another user's process: alive, but not this user's node
            return True
        return True


def _path(name: str, folder: Path) -> Path:
    # A node name is user@host: neither part holds a path separator in RabbitMQ; refuse one.
    if "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(f"not a node name: {name!r}")
    return folder / f"{name}.json"


def _read(path: Path) -> NodeEntry | None:
    """The entry in the file at ``path``; ``None`` when there is none that can be trusted (a
    file another user owns or can write, a symlink: :func:`embroker._hostfiles.read_file`)."""
    content = read_file(path)
    if content is None:
        return None
    try:
        data: dict[str, Any] = json.loads(content)
        return NodeEntry(**data)
    except (ValueError, TypeError):
        return None


def lookup(name: str, folder: Path | None = None) -> NodeEntry | None:
    """The live node of that name, or ``None``."""
    folder = nodes_dir() if folder is None else folder
    try:
        entry = _read(_path(name, folder))
    except ValueError:
        return None
    return entry if entry is not None and entry.alive else None


def entries(folder: Path | None = None) -> Iterator[NodeEntry]:
    """Every live node registered."""
    folder = nodes_dir() if folder is None else folder
    for path in sorted(folder.glob("*.json")):
        entry = _read(path)
        if entry is not None and entry.alive:
            yield entry


def register(entry: NodeEntry, folder: Path | None = None) -> Path:
    """Write ``entry``'s file (atomically, the user's alone).

    Raises:
        NodeNameInUse: a live node of another process has the name.
    """
    folder = nodes_dir() if folder is None else folder
    path = _path(entry.name, folder)
    other = _read(path)
    if other is not None and other.pid != entry.pid and other.alive:
        raise NodeNameInUse(entry.name)
    write_file(path, json.dumps(asdict(entry)).encode())
    return path


def unregister(entry: NodeEntry, folder: Path | None = None) -> None:
    """Remove ``entry``'s file if it is still this entry's (not a later node's of that name)."""
    folder = nodes_dir() if folder is None else folder
    path = _path(entry.name, folder)
    current = _read(path)
    if current is not None and current.pid == entry.pid and \
            current.control_port == entry.control_port:
        with contextlib.suppress(OSError):
            path.unlink()
