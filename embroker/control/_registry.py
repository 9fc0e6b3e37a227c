"""Where RabbitMQ's tools find a running embroker node: the node registry.

RabbitMQ's command-line tools reach a node by its name (``rabbit@host``): epmd on that host
tells them the node's distribution port, and the Erlang cookie in ``~/.erlang.cookie`` lets them
in. embroker's tools do the same with a folder: each running node writes one file there, named
after the node, holding its process id, the loopback port of its control interface, the secret
that port asks for (the node's cookie) and the ports it serves. The folder is the user's alone
(mode 0700, files 0600), so only the user who started a node can drive it, as with Erlang's
cookie.

The folder is ``$EMBROKER_NODES_DIR`` if set, else ``embroker-<uid>/nodes`` under the system's
temporary folder. A file whose process is gone is stale: lookups ignore it and the next node of
that name replaces it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, final

__all__ = ["NodeEntry", "NodeNameInUse", "default_node_name", "entries", "lookup",
           "nodes_dir", "qualify", "register", "short_host", "unregister"]


class NodeNameInUse(Exception):
    """A live node already has this name (RabbitMQ: "node with name ... already running")."""


def short_host() -> str:
    """This machine's short host name, the host part of RabbitMQ's default node name."""
    return socket.gethostname().split(".")[0] or "localhost"


def qualify(name: str, *, longnames: bool = False) -> str:
    """A node name as RabbitMQ's tools complete it: ``rabbit`` -> ``rabbit@<host>`` (the short
    host name, or the full one with ``longnames``)."""
    if "@" in name:
        return name
    host = socket.getfqdn() if longnames else short_host()
    return f"{name}@{host}"


def default_node_name(environ: Mapping[str, str] | None = None) -> str:
    """``RABBITMQ_NODENAME`` completed with this host, else ``rabbit@<host>``."""
    environ = os.environ if environ is None else environ
    return qualify(environ.get("RABBITMQ_NODENAME") or "rabbit",
                   longnames=environ.get("RABBITMQ_USE_LONGNAME", "").lower() == "true")


def nodes_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The registry's folder (made, the user's alone, when missing)."""
    environ = os.environ if environ is None else environ
    given = environ.get("EMBROKER_NODES_DIR")
    if given:
        folder = Path(given)
    else:
        uid = os.getuid() if hasattr(os, "getuid") else 0
        folder = Path(tempfile.gettempdir()) / f"embroker-{uid}" / "nodes"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


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
    try:
        data: dict[str, Any] = json.loads(path.read_text())
        return NodeEntry(**data)
    except (OSError, ValueError, TypeError):
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
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as file:  # mkstemp's file is 0600 already
            json.dump(asdict(entry), file)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
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
