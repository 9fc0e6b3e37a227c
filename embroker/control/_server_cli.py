"""``rabbitmq-server`` for embroker: a node started from RabbitMQ's environment and
``rabbitmq.conf`` (:mod:`._config`), found by RabbitMQ's tools under its node name.

As RabbitMQ's script: it runs in the foreground until SIGTERM or SIGINT (or ``rabbitmqctl
stop``), or with ``-detached`` starts the node in a process of its own and returns at once.
The AMQP port is bound before anything else is announced and served as soon as the loop runs,
so a tool that polls it may use it at once. The node logs to its log file
(``RABBITMQ_LOGS``/``log.file``, else ``$RABBITMQ_LOG_BASE/NODE.log``), never to a pipe it was
given: a pipe nobody reads cannot stop it. What it cannot honour of the configuration is named
on stderr, one line per key, before it starts. A start that fails says why in one line on
stderr and, as RabbitMQ's ``BOOT FAILED`` lines, in the log: with ``-detached`` (no stderr) the
log is where the reason is.

The control port listens where RabbitMQ's distribution would (``RABBITMQ_DIST_PORT``, else the
AMQP port + 20000; on every interface unless ``inet_dist_use_interface`` says otherwise): a port
``RABBITMQ_DIST_PORT`` names must be had; one only implied (25672, the machine's RabbitMQ's)
gives way to a free one, said once, and the registry tells the tools.

``EMBROKER_MANAGEMENT_UI`` (embroker's own variable: RabbitMQ has none) names folders of
RabbitMQ's management UI, joined by ``os.pathsep``, to serve at ``/`` of the management port, as
``embroker serve --management-ui DIR`` does (:mod:`embroker.management._ui`).
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .._broker import Broker
from .._hostfiles import UntrustedPath, append_file, user_folder, write_file
from ..errors import AMQPError, DefinitionsError
from ..server import PortInUse, Server
from ._config import ConfigError, NodeSettings, read_node_settings
from ._ctl import process_alive
from ._node import Node
from ._plugins_cli import DEFAULT_ENABLED_PLUGINS_FILE
from ._registry import NodeNameInUse, lookup

if TYPE_CHECKING:
    from ..management import ManagementAPI, ManagementUI

log = logging.getLogger("embroker.control")

__all__ = ["main"]


def _log_file(settings: NodeSettings, err: IO[str]) -> tuple[Path, IO[str]] | None:
    """Where the node logs, and the file opened for it (``None``: nowhere): the configured file
    (its folder made when missing), never through a symlink nor into a file another user owns
    or has a name for (:func:`embroker._hostfiles.append_file`); when it cannot be written,
    ``embroker-UID/log/NODE.log`` in the temporary folder, a folder of the user's own (said on
    stderr). RabbitMQ 3.10.8 refuses to start then ("failed to open log file at ..."); embroker
    logs where only the user can read and write.

    Raises:
        UntrustedPath: neither can be used.
    """
    if settings.log_file == "false" or settings.main_log_file == "-":
        return None
    wanted = Path(settings.log_file or settings.main_log_file or
                  Path(settings.log_base) / f"{settings.node_name}.log")
    try:
        wanted.parent.mkdir(parents=True, exist_ok=True)
        return wanted, _open_log(wanted)
    except (OSError, UntrustedPath) as exc:
        fallback = user_folder("log") / f"{settings.node_name}.log"
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(f"embroker: cannot write the log file {wanted} ({reason}); logging to "
              f"{fallback}", file=err)
        return fallback, _open_log(fallback)


def _open_log(path: Path) -> IO[str]:
    return io.TextIOWrapper(append_file(path), encoding="utf-8", errors="backslashreplace",
                            line_buffering=True)


def _boot_failed(line: str, err: IO[str]) -> None:
    """Why the node did not start: one line on stderr, and in the log as RabbitMQ's
    ``rabbit_prelaunch_errors:log_message/1`` writes it (``BOOT FAILED``, its underline, the
    reason), each line an error record: a ``-detached`` node has no stderr."""
    print(line, file=err)
    for text in ("", "BOOT FAILED", "===========", line, ""):
        log.error(text)


# -- the pid file (RABBITMQ_PID_FILE) -------------------------------------------------------------

#: file:format_error/1's texts where they are not strerror's, lower-cased.
_ERLANG_REASONS = {errno.EISDIR: "illegal operation on a directory"}


def _reason(exc: OSError) -> str:
    return _ERLANG_REASONS.get(exc.errno or 0, (exc.strerror or str(exc)).lower())


def _pid_in(path: Path) -> int | None:
    """The pid a regular file at ``path`` begins with (not through a link), if any."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        head = os.read(fd, 32).strip()
    except OSError:  # (a folder, say)
        return None
    finally:
        os.close(fd)
    digits = head[:len(head) - len(head.lstrip(b"0123456789"))]
    return int(digits) if digits else None


def write_pid_file(path: Path) -> str | None:
    """Write this process's id to ``path`` as RabbitMQ's prelaunch does
    (``rabbit_prelaunch:write_pid_file/1``, v3.10.8: its folders made as
    ``filelib:ensure_dir/1`` makes them, the pid without a newline); ``None``, or the warning
    RabbitMQ logs when it cannot (the node goes on).

    Unlike RabbitMQ's, it is never written through a symbolic link or a hard link (one planted in a
    shared folder would have the node overwrite its target), nor over the file of another
    process that runs (RabbitMQ cannot run two nodes of one name, whose default pid file is
    the same; embroker's node beside the machine's RabbitMQ of that name can).
    """
    try:
        missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
        for folder in reversed(missing):
            folder.mkdir()
        if not path.parent.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
    except OSError as exc:
        return f'Failed to create PID file "{path}" directory: {_reason(exc)}'
    holder = _pid_in(path)
    if holder is not None and holder != os.getpid() and process_alive(holder):
        return (f'Failed to write PID file "{path}": it holds the pid of process {holder}, '
                "which runs")
    try:  # (a new file renamed into place: a planted symlink or hard link is replaced)
        write_file(path, str(os.getpid()).encode(), mode=0o644)
    except OSError as exc:
        return f'Failed to write PID file "{path}": {_reason(exc)}'
    return None


def remove_pid_file(path: Path) -> None:
    """Remove ``path`` if it is this process's pid file (``remove_pid_file/1``)."""
    if _pid_in(path) == os.getpid():
        with contextlib.suppress(OSError):
            path.unlink()


def _start_pid_file(settings: NodeSettings, err: IO[str]) -> Path | None:
    """The node's pid file written (a failure said in one line, as RabbitMQ's warning); the
    file to remove when the node stops (``None``: none, or RABBITMQ_KEEP_PID_FILE_ON_EXIT)."""
    path = Path(settings.pid_file)
    problem = write_pid_file(path)
    if problem is not None:
        logging.getLogger("embroker.control").warning(problem)
        with contextlib.suppress(OSError, ValueError):
            print(f"embroker: {problem}", file=err)
        return None
    return None if settings.keep_pid_file_on_exit else path


def _data_dir(settings: NodeSettings) -> Path:
    """The node's data folder, for the disk monitor: embroker keeps nothing on disk, so it
    makes no folder; the nearest one that exists on the way to RabbitMQ's is watched."""
    folder = Path(settings.mnesia_dir or Path(settings.mnesia_base) / settings.node_name)
    while folder.parent != folder:
        try:
            if folder.is_dir():
                os.statvfs(folder)  # (what the monitor will ask of it)
                return folder
        except OSError:  # (a folder the node cannot read, as RabbitMQ goes on beside one)
            pass
        folder = folder.parent
    return folder


def build(settings: NodeSettings) -> tuple[Broker, Server]:
    """The broker and listener ``settings`` describe, its definitions loaded.

    Raises:
        PortInUse, DefinitionsError, AMQPError, OSError, ValueError: it cannot start.
    """
    broker = Broker(**settings.broker_kwargs())
    if settings.seeds_default_data:
        user = settings.default_user
        broker.set_user_tags(user, *settings.default_user_tags)
        if settings.default_permissions != (".*", ".*", ".*"):
            broker.set_permissions(user, *settings.default_permissions,
                                   vhost=settings.default_vhost)
    for path in settings.definitions:
        # As RabbitMQ's boot import (rabbit_definitions:import_raw/1): each item names its vhost
        try:
            broker.load_definitions(path, vhost=None)
        except DefinitionsError as exc:
            raise DefinitionsError(f"cannot load the definitions {path}: {exc.line}") from None
    server = Server(broker, **settings.server_kwargs())
    kind, value = settings.vm_memory_high_watermark
    fraction, absolute = (value, None) if kind == "relative" else (None, int(value))
    server.configured_watermark = (fraction, absolute)
    server.set_vm_memory_high_watermark(fraction, absolute=absolute)
    kind, value = settings.disk_free_limit
    server.set_disk_free_limit(int(value) if kind == "absolute" else None,
                               mem_relative=value if kind == "relative" else None)
    server.configured_disk_free_limit = server.disk_free_limit
    return broker, server


def _management_ui(environ: Mapping[str, str]) -> ManagementUI | None:
    """RabbitMQ's own management UI, served at ``/`` of the management port (embroker's
    console moves to ``/console/``) from the folders ``EMBROKER_MANAGEMENT_UI`` names, joined
    by ``os.pathsep`` (embroker's variable: RabbitMQ has none; ``embroker serve
    --management-ui DIR`` is the same); ``None`` when it names none.

    Raises:
        UntrustedPath, ValueError, OSError: a folder that cannot be served (said why).
    """
    given = [part for part in environ.get("EMBROKER_MANAGEMENT_UI", "").split(os.pathsep)
             if part]
    if not given:
        return None
    from ..management import ManagementUI

    return ManagementUI(given)


def _detach(argv: list[str], err: IO[str]) -> int:
    """``-detached``: the node in a new session of its own, its output to nothing."""
    args = [sys.executable, "-m", "embroker.control", "rabbitmq-server",
            *[a for a in argv if a != "-detached"]]
    subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    return 0


def main(argv: list[str] | None = None, *, out: IO[str] | None = None,
         err: IO[str] | None = None) -> int:
    """Run ``rabbitmq-server``; its exit code."""
    argv = sys.argv[1:] if argv is None else argv
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        settings = read_node_settings(os.environ)
    except ConfigError as exc:
        print(f"embroker: {exc}", file=err)
        return 78  # (EX_CONFIG, as RabbitMQ's prelaunch exits on a bad configuration)
    if "-detached" in argv:
        try:
            running = lookup(settings.node_name)
        except UntrustedPath as exc:
            print(f"embroker: the node registry cannot be trusted: {exc}", file=err)
            return 77
        if running is not None:
            print(f"ERROR: node with name \"{settings.node_name.partition('@')[0]}\" is "
                  f"already running on host \"{settings.node_name.partition('@')[2]}\"",
                  file=err)
            return 75
        return _detach(argv, err)
    for line in settings.unsupported:
        print(f"embroker: not honoured: {line}", file=err)
    try:
        logged = _log_file(settings, err)
    except UntrustedPath as exc:
        print(f"embroker: cannot log: {exc}", file=err)
        return 77
    log_file = logged[0] if logged is not None else None
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s [%(levelname)s] %(name)s: %(message)s",
        handlers=[logging.StreamHandler(logged[1]) if logged is not None
                  else logging.NullHandler()])
    try:
        ui = _management_ui(os.environ)
    except (UntrustedPath, ValueError, OSError) as exc:
        _boot_failed(f"embroker: cannot serve the management UI (EMBROKER_MANAGEMENT_UI): "
                     f"{exc}", err)
        return 78
    for line in ui.missing() if ui is not None else ():
        print(f"embroker: {line}", file=err)
    try:
        broker, server = build(settings)
    except PortInUse as exc:
        _boot_failed(f"embroker: cannot listen: {exc} (held by another broker, a RabbitMQ?); "
                     "give the node other ports (RABBITMQ_NODE_PORT, listeners.* in "
                     "rabbitmq.conf, or fewer plugins in RABBITMQ_ENABLED_PLUGINS_FILE)", err)
        return 75
    except (DefinitionsError, AMQPError, OSError, ValueError) as exc:
        _boot_failed(f"embroker: cannot start node {settings.node_name}: {exc}", err)
        return 70
    node = Node(broker, server, settings.node_name,
                enabled_plugins_file=Path(os.environ.get("RABBITMQ_ENABLED_PLUGINS_FILE")
                                          or DEFAULT_ENABLED_PLUGINS_FILE),
                data_dir=_data_dir(settings),
                config_files=[Path(p) for p in settings.config_files], log_file=log_file,
                plugin_ports=settings.plugin_ports,
                plugin_tls_ports=settings.plugin_tls_ports,
                dist=(settings.dist_interface, settings.dist_port, settings.dist_port_given))

    def setup(api: ManagementAPI) -> None:  # (what /api/nodes names; RabbitMQ's UI at /)
        api.config_files = tuple(os.path.abspath(p) for p in settings.config_files)
        api.log_files = (str(log_file),) if log_file is not None else ()
        api.ui = ui

    node.management_setup = setup
    if server.management is not None:
        setup(server.management)
    try:
        node.start()
    except NodeNameInUse:
        server.stop()
        _boot_failed(f"ERROR: node with name \"{settings.node_name.partition('@')[0]}\" is "
                     f"already running on host \"{settings.node_name.partition('@')[2]}\"", err)
        return 75
    except PortInUse as exc:  # (RABBITMQ_DIST_PORT named it: RabbitMQ's own refusal, and why)
        server.stop()
        _boot_failed(f"ERROR: could not bind to distribution port {exc.port} on host "
                     f"{settings.node_name.partition('@')[2]}: it is in use (by a RabbitMQ "
                     "node?); choose another RABBITMQ_DIST_PORT, or unset it for a free port",
                     err)
        return 75
    except UntrustedPath as exc:
        server.stop()
        _boot_failed(f"embroker: the node registry cannot be trusted: {exc}", err)
        return 77
    if node.dist_moved is not None:
        moved = (f"embroker: port {node.dist_moved} (the Erlang distribution's, where "
                 "rabbitmqctl reaches a RabbitMQ node) is in use, perhaps by RabbitMQ: node "
                 f"{settings.node_name}'s control port is {node.control_port} instead, which "
                 "the node registry tells the tools (RABBITMQ_DIST_PORT=N chooses)")
        print(moved, file=err)
        log.warning(moved)

    pid_file = _start_pid_file(settings, err)

    def stop_node() -> None:  # (rabbitmqctl stop: the file goes before the node is down)
        if pid_file is not None:
            remove_pid_file(pid_file)
        server.stop()

    node.on_stop = stop_node

    def stop(*_: object) -> None:
        threading.Thread(target=server.stop, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    ports = ", ".join(f"{name} {port}" for name, port in node._ports().items())
    with contextlib.suppress(OSError, ValueError):  # (a few lines: they fit in any pipe)
        print(f"  ##  ##      embroker as RabbitMQ node {settings.node_name}\n"
              f"  ##  ##      listening on {server.host}: {ports}\n"
              f"  ##########  Logs: {log_file or '(none)'}\n"
              f"  ######  ##\n  ##########  Starting broker... completed", file=out,
              flush=True)
    try:
        server.serve_forever()
    finally:
        node.close()
        if pid_file is not None:
            remove_pid_file(pid_file)
    return 0

