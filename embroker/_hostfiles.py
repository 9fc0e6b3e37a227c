"""Which folders and files of this host embroker may use, and how it opens them: the one home
of "can this folder or file be trusted".

embroker keeps a few files of its own: the node registry (where RabbitMQ's tools find a node
and its cookie), a node's log when the configured one cannot be written, the tracing plugin's
logs, the shims, Spark's scratch files. Some live in shared folders (the temporary folder),
where another local user can make a folder, a file or a symlink before embroker comes, to read
what it writes there, to redirect it onto a file of the user's (a ``.bashrc``), or to pose as a
node. Every place in embroker that makes or reads such a file goes through this module. The
rules are OpenSSH's ``StrictModes`` (and Erlang's refusal of a cookie file others can read):

- A folder is **trusted** when every level of its path, from ``/``, is owned by root or the
  user and cannot be written by group or others; a level others can write is passed on the way
  only when it is sticky (``/tmp``: no one may rename or remove another's entry in it), never
  as the folder used itself. A symlink on the way is followed only when root or the user owns
  it, and the levels it leads to are checked the same way.
- A **private** folder is a trusted one the user owns (not root, for another user); embroker
  makes its own 0700.
- A file is read only when it is a regular file the user owns that others cannot write, opened
  without following a symlink (``O_NOFOLLOW``, ``O_NONBLOCK``: a planted FIFO cannot hang the
  reader); a file is written as a new file (``O_EXCL``, 0600) renamed into place, or appended
  to without following a symlink and only when the user owns it and it has no other name (a
  hard link): a planted link never redirects a write, a planted file never receives one.

A refusal is :class:`UntrustedPath`: one line naming the path, what is wrong with it and what
to do. On a system without POSIX owners and modes (Windows), folders are not checked.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO, Final

__all__ = ["UntrustedPath", "append_file", "private_folder", "read_file", "rewrite_file",
           "temp_file", "temp_folder", "temp_root", "trusted_folder", "user_folder", "write_file"]

#: Symlinks followed on one path at most (the kernel's own limit: ELOOP beyond it).
_MAX_LINKS: Final = 40
#: The most a trusted file read here holds (the registry's files are a few hundred bytes).
READ_LIMIT: Final = 1024 * 1024
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
#: Whether the host has POSIX owners and modes to check.
_POSIX: Final = hasattr(os, "geteuid") and os.name == "posix"


class UntrustedPath(Exception):
    """A folder or file embroker refuses to use (see the module's docstring): its message is
    one line, naming the path, what is wrong and the fix."""


def _uid() -> int:
    return os.geteuid()


def _who(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _refusal(path: str, problem: str, fix: str) -> UntrustedPath:
    return UntrustedPath(f"{path} {problem}: another user may have made it there to read or "
                         f"redirect what embroker writes; {fix}")


def _check_level(path: str, st: os.stat_result, *, final: bool, private: bool,
                 shared: bool, fix: str) -> None:
    """Refuse one level of a folder's path (see the module's docstring)."""
    uid = _uid()
    if not stat.S_ISDIR(st.st_mode):
        raise UntrustedPath(f"{path} is not a folder; {fix}")
    owners = (uid,) if final and private else (0, uid)
    if st.st_uid not in owners:
        raise _refusal(path, f"belongs to {_who(st.st_uid)}, not to you", fix)
    writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if writable and not (st.st_mode & stat.S_ISVTX and (not final or shared)):
        raise _refusal(path, f"can be written by others (mode {stat.S_IMODE(st.st_mode):04o})",
                       fix)


def trusted_folder(path: str | os.PathLike[str], *, private: bool = False,
                   create: bool = False, shared: bool = False,
                   fix: str = "remove it, or choose a folder of your own") -> Path:
    """``path``, checked level by level from ``/`` (see the module's docstring); made, each
    missing level, when ``create`` (0700 when ``private``, else 0755, less the umask).

    Args:
        private: the folder must be the user's own (root's is not enough).
        shared: the folder may be one others can write when it is sticky (the temporary
            folder itself: only files made new, with ``O_EXCL``, are put there).
        fix: what the refusal's line tells the user to do.

    Returns:
        The folder's real path (its symlinks resolved, each checked): use it, not ``path``,
        so that no link on the way is looked up again.

    Raises:
        UntrustedPath: a level is not a folder, belongs to another user, can be written by
            others, or is a symlink another user owns; the folder is missing and ``create``
            is false; it cannot be made.
    """
    given = os.path.abspath(os.fspath(path))
    if not _POSIX:
        if create:
            os.makedirs(given, exist_ok=True)
        return Path(given)
    pending = [part for part in given.split(os.sep) if part]
    current = os.sep
    _check_level(current, os.lstat(current), final=not pending, private=private,
                 shared=shared, fix=fix)
    links = 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, part)
        try:
            st = os.lstat(candidate)
        except FileNotFoundError:
            if not create:
                raise UntrustedPath(f"{candidate} does not exist; {fix}") from None
            try:
                os.mkdir(candidate, 0o700 if private or pending else 0o755)
            except FileExistsError:
                pass  # (made meanwhile: by whom, the check below tells)
            except OSError as exc:
                raise UntrustedPath(f"cannot make the folder {candidate}: "
                                    f"{exc.strerror or exc}; {fix}") from None
            st = os.lstat(candidate)
        except OSError as exc:
            raise UntrustedPath(f"cannot look at {candidate}: {exc.strerror or exc}; "
                                f"{fix}") from None
        if stat.S_ISLNK(st.st_mode):
            if st.st_uid not in (0, _uid()):
                raise _refusal(candidate, f"is a symlink that belongs to {_who(st.st_uid)}",
                               fix)
            links += 1
            if links > _MAX_LINKS:
                raise UntrustedPath(f"{given}: too many symlinks on the way; {fix}")
            target = os.readlink(candidate)
            if os.path.isabs(target):
                current = os.sep
            pending[:0] = [p for p in target.split(os.sep) if p]
            continue
        _check_level(candidate, st, final=not pending, private=private, shared=shared,
                     fix=fix)
        current = candidate
    return Path(current)


def private_folder(path: str | os.PathLike[str], *, create: bool = True,
                   fix: str = "remove it, or choose a folder of your own") -> Path:
    """``path`` as a folder of the user's own, made 0700 when missing (see
    :func:`trusted_folder`)."""
    return trusted_folder(path, private=True, create=create, fix=fix)


def temp_root() -> Path:
    """The system's temporary folder (``TMPDIR``...), checked: sticky or the user's own."""
    return trusted_folder(tempfile.gettempdir(), shared=True,
                          fix="give a temporary folder of your own (TMPDIR)")


def user_folder(*names: str, fix: str | None = None) -> Path:
    """``embroker-UID/NAME/...`` in the temporary folder: the user's own, made 0700 at each
    level. A level another user made first is refused, never used."""
    uid = _uid() if _POSIX else 0
    path = temp_root().joinpath(f"embroker-{uid}", *names)
    return private_folder(path, fix=fix or f"remove it (rm -r {path.parent if names else path}) "
                                              "and try again")


def temp_file(prefix: str, suffix: str = "") -> Path:
    """A new, empty file of the user's alone (0600, made with ``O_EXCL``) in the temporary
    folder."""
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=temp_root())
    os.close(fd)
    return Path(name)


def temp_folder(prefix: str) -> Path:
    """A new folder of the user's alone (0700, a name no one had) in the temporary folder."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=temp_root()))


def _file_refusal(st: os.stat_result) -> str | None:
    """What is wrong with an opened file for reading or appending, if anything: not a regular
    file, another user's, writable by others, or a file with other names (a hard link another
    user made to one of the user's files, in a folder of theirs)."""
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if not _POSIX:
        return None
    if st.st_uid != _uid():
        return f"belongs to {_who(st.st_uid)}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"can be written by others (mode {stat.S_IMODE(st.st_mode):04o})"
    if st.st_nlink != 1:
        return f"has {st.st_nlink} names (hard links)"
    return None


def read_file(path: str | os.PathLike[str], *, limit: int = READ_LIMIT) -> bytes | None:
    """The content of the file at ``path`` when it can be trusted: a regular file (not a
    symlink, not a FIFO) the user owns that others cannot write, of at most ``limit`` bytes;
    ``None`` otherwise (missing included): a planted file is ignored, as if it were not
    there."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if _file_refusal(st) is not None or st.st_size > limit:
            return None
        with os.fdopen(os.dup(fd), "rb") as file:
            return file.read(limit + 1)[:limit]
    except OSError:
        return None
    finally:
        os.close(fd)


def write_file(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o600) -> None:
    """Replace the file at ``path`` with ``data``: written to a new file (``O_EXCL``) in the
    same folder, then renamed into place, so that a symlink at ``path`` is replaced, never
    followed. Check the folder first (:func:`trusted_folder`).

    Raises:
        OSError: it cannot be written.
    """
    target = Path(path)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            if mode != 0o600:
                os.fchmod(file.fileno(), mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def rewrite_file(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o644) -> None:
    """Write ``data`` over the file a user named (an enabled-plugins file, an export), in
    place: the file keeps its owner and mode, as a tool of the node's user that shares it
    expects (``/etc/rabbitmq/enabled_plugins``, which the machine's RabbitMQ reads too); a
    missing one is made ``mode``. Never through a symlink, nor into a file that has other
    names (a hard link another user planted to one of the user's files), nor into anything
    but a regular file.

    Raises:
        UntrustedPath: ``path`` is a symlink, a hard link, or not a regular file.
        OSError: it cannot be written.
    """
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | _NOFOLLOW | _CLOEXEC | _NONBLOCK, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refusal(name, "is a symlink", "remove it, or choose another file") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refusal(name, "is not a regular file", "choose another file")
        if st.st_nlink != 1:
            raise _refusal(name, f"has {st.st_nlink} names (hard links)",
                           "remove it, or choose another file")
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def append_file(path: str | os.PathLike[str], *, mode: int = 0o600) -> BinaryIO:
    """The file at ``path`` opened for appending (made ``mode`` when missing), without
    following a symlink, and only when it is a regular file the user owns.

    Raises:
        UntrustedPath: ``path`` is a symlink, or a file another user owns or others can write.
        OSError: it cannot be opened.
    """
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC |
                     _NONBLOCK, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refusal(name, "is a symlink", "remove it, or choose another file") from None
        raise
    try:
        problem = _file_refusal(os.fstat(fd))
        if problem is not None:
            raise _refusal(name, problem, "remove it, or choose another file")
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "ab")
    except BaseException:
        os.close(fd)
        raise
