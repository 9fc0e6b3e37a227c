"""RabbitMQ's management UI, served from the operator's copy of its files
(``embroker serve --management-ui DIR``).

embroker ships none of RabbitMQ's files. An operator who knows RabbitMQ's UI names the folders
that hold it — a RabbitMQ installed on the machine has them, ``priv/www`` of each plugin with a
UI part: ``plugins/rabbitmq_management-3.10.8/priv/www`` and, for the Admin > Tracing page that
``/api/extensions`` announces (``tracing.js``), ``plugins/rabbitmq_tracing-3.10.8/priv/www`` —
and the management port serves them at ``/``, as RabbitMQ's does (``rabbit_mgmt_wm_static``
over each extension's ``www``, the first that has a file answering), while embroker's own
console moves to ``/console/``.

Theory of operation
-------------------
The folders are read once, when the UI is made: each must be a trusted folder
(:func:`~embroker._hostfiles.trusted_folder`: no level of its path others can write), every
folder under it must belong to root or the user and be closed to others' writes, and so must
every file, else the whole UI is refused with one line (:class:`~embroker._hostfiles.UntrustedPath`):
a file another user could change would become a page the operator's browser trusts with its
credentials. Symlinks inside are skipped (never followed). What a request may name is the
index made then: a path's dot segments are resolved as cowboy resolves them (``/js/../x``),
a ``..`` above the top names nothing (404), and the result is looked up in the index, never
on the file system by the path's text. A file is opened again per request without following a
symlink and read up to :data:`MAX_FILE_BYTES`. Content types are cowboy's
(``cow_mimetypes:web/1``) for the kinds RabbitMQ's UI holds, checked on 3.10.8.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Final, final

from .._hostfiles import UntrustedPath, trusted_folder

__all__ = ["CONTENT_TYPES", "MAX_FILES", "MAX_FILE_BYTES", "ManagementUI"]

#: The most files the folders may hold together (RabbitMQ 3.10.8's management UI has 86, its
#: tracing plugin's 3): a bound on the walk made at start and on the index.
MAX_FILES: Final = 5000
#: The largest file served (3.10.8's largest is jquery-3.5.1.js, 287 KB); a larger one is left
#: out of the index.
MAX_FILE_BYTES: Final = 4 * 1024 * 1024
#: The content type of each kind of file, as RabbitMQ 3.10.8's management port answered them
#: (cowboy's ``cow_mimetypes:web/1``); any other kind (the templates, ``.ejs``) is
#: ``application/octet-stream``, as there.
CONTENT_TYPES: Final = {
    ".html": "text/html", ".htm": "text/html", ".js": "application/javascript",
    ".css": "text/css", ".ico": "image/x-icon", ".png": "image/png", ".gif": "image/gif",
    ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".svg": "image/svg+xml",
    ".json": "application/json", ".txt": "text/plain", ".woff": "font/woff",
    ".woff2": "font/woff2"}
#: Where a RabbitMQ install keeps each page script of the plugins embroker serves.
_PLUGIN_WWW: Final = {
    "dispatcher.js": "plugins/rabbitmq_management-3.10.8/priv/www",
    "tracing.js": "plugins/rabbitmq_tracing-3.10.8/priv/www (--management-ui again; "
                  "EMBROKER_MANAGEMENT_UI: folders joined by " + os.pathsep + ")"}
_POSIX: Final = hasattr(os, "geteuid") and os.name == "posix"
_OPEN_FLAGS: Final = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                      | getattr(os, "O_CLOEXEC", 0))
_FIX: Final = ("give a copy of the UI that only you or root can change (cp -r it to a folder "
               "of your own)")


def _refused(path: str, st: os.stat_result) -> str | None:
    """What makes a folder or file of the UI untrusted: another user's, or writable by others."""
    if not _POSIX:
        return None
    if st.st_uid not in (0, os.geteuid()):
        return f"belongs to uid {st.st_uid}, neither you nor root"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"can be written by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def resolve(segments: Iterable[str]) -> str | None:
    """The file a path's decoded segments name, relative to the UI's top (``js/main.js``), dot
    segments resolved as cowboy does (``js/../index.html`` is ``index.html``, ``""`` is the
    top); ``None`` when a ``..`` climbs above the top. A segment holding a ``/``, ``\\`` or NUL
    never gets here (the API answers 400 first)."""
    kept: list[str] = []
    for segment in segments:
        if segment in ("", "."):
            continue
        if segment == "..":
            if not kept:
                return None
            kept.pop()
            continue
        kept.append(segment)
    return "/".join(kept)


@final
class ManagementUI:
    """The files of a RabbitMQ management UI, from ``folders`` (the first that has a path
    answers it).

    Args:
        folders: each a UI's ``www`` folder: RabbitMQ's ``rabbitmq_management`` plugin's first
            (it has ``index.html``), then those of the other plugins whose pages it loads
            (``rabbitmq_tracing``'s ``tracing.js``).

    Raises:
        UntrustedPath: a folder, or a folder or file under it, that others can change (the
            line names it and what to do).
        ValueError: no folder given, none has ``index.html``, or they hold more than
            :data:`MAX_FILES` files.
    """

    def __init__(self, folders: Iterable[str | os.PathLike[str]]) -> None:
        given = [Path(folder) for folder in folders]
        if not given:
            raise ValueError("no folder given for the management UI")
        #: The folders, as their real paths.
        self.folders = tuple(trusted_folder(folder, fix=_FIX) for folder in given)
        self._files: dict[str, Path] = {}
        self._dirs: set[str] = {""}
        for root in self.folders:
            self._index(root)
        if "index.html" not in self._files:
            raise ValueError(
                f"{given[0]} has no index.html: not a RabbitMQ management UI (give its www "
                "folder, e.g. /usr/lib/rabbitmq/lib/rabbitmq_server-3.10.8/plugins/"
                "rabbitmq_management-3.10.8/priv/www)")

    def _index(self, root: Path) -> None:
        for top, dirs, files in os.walk(root, followlinks=False):
            st = os.lstat(top)
            problem = _refused(top, st)
            if problem is not None:
                raise UntrustedPath(f"{top} {problem}: its pages would run in your browser "
                                    f"with your credentials; {_FIX}")
            relative = Path(top).relative_to(root).as_posix()
            relative = "" if relative == "." else relative
            self._dirs.add(relative)
            dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(top, d)))
            for name in sorted(files):
                path = os.path.join(top, name)
                st = os.lstat(path)
                if not stat.S_ISREG(st.st_mode):  # (a symlink, a FIFO...: never served)
                    continue
                problem = _refused(path, st)
                if problem is not None:
                    raise UntrustedPath(f"{path} {problem}: its content would run in your "
                                        f"browser with your credentials; {_FIX}")
                key = f"{relative}/{name}" if relative else name
                if st.st_size <= MAX_FILE_BYTES:
                    self._files.setdefault(key, Path(path))
                if len(self._files) > MAX_FILES:
                    raise ValueError(f"the management UI's folders hold more than {MAX_FILES} "
                                     "files: not a RabbitMQ management UI")

    def missing(self) -> list[str]:
        """A line for each page script ``/api/extensions`` announces that the folders lack:
        RabbitMQ's UI waits for every one before it starts, so it would stop at its login."""
        from ._node import EXTENSIONS

        return [f"the management UI's folders have no js/{script}, which /api/extensions "
                f"announces: RabbitMQ's UI will not start without it; add {where}"
                for extension in EXTENSIONS
                for script, where in [(extension["javascript"], _PLUGIN_WWW.get(
                    extension["javascript"], "the folder that has it"))]
                if f"js/{script}" not in self]

    def __contains__(self, name: str) -> bool:
        return name in self._files

    def is_folder(self, name: str) -> bool:
        """Whether ``name`` (as :func:`resolve` gives it) is a folder of the UI."""
        return name in self._dirs

    def read(self, name: str) -> tuple[bytes, str] | None:
        """The content of the file ``name`` names (as :func:`resolve` gives it) and its type;
        ``None`` when the UI has no such file, or it is no longer a regular file of at most
        :data:`MAX_FILE_BYTES` bytes."""
        path = self._files.get(name)
        if path is None:
            return None
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES or \
                    _refused(str(path), st) is not None:
                return None
            with os.fdopen(os.dup(fd), "rb") as file:
                data = file.read(MAX_FILE_BYTES + 1)
        except OSError:
            return None
        finally:
            os.close(fd)
        if len(data) > MAX_FILE_BYTES:
            return None
        return data, CONTENT_TYPES.get(path.suffix.lower(), "application/octet-stream")
