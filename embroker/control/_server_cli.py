"""``rabbitmq-server`` for embroker: a node started from RabbitMQ's environment and
``rabbitmq.conf`` (:mod:`._config`), found by RabbitMQ's tools under its node name.

As RabbitMQ's script: it runs in the foreground until SIGTERM or SIGINT (or ``rabbitmqctl
stop``), or with ``-detached`` starts the node in a process of its own and returns at once.
The AMQP port is bound before anything else is announced and served as soon as the loop runs,
so a tool that polls it may use it at once. The node logs to its log file
(``RABBITMQ_LOGS``/``log.file``, else ``$RABBITMQ_LOG_BASE/NODE.log``), never to a pipe it was
given: a pipe nobody reads cannot stop it. What it cannot honour of the configuration is named
on stderr, one line per key, before it starts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

from .._broker import Broker
from ..errors import AMQPError, DefinitionsError
from ..server import PortInUse, Server
from ._config import ConfigError, NodeSettings, read_node_settings
from ._node import Node
from ._plugins_cli import DEFAULT_ENABLED_PLUGINS_FILE
from ._registry import NodeNameInUse, lookup

__all__ = ["main"]


def _log_file(settings: NodeSettings, err: IO[str]) -> Path | None:
    """Where the node logs: the configured file when it can be written, else one under the
    temporary folder (said on stderr)."""
    if settings.log_file == "false" or settings.main_log_file == "-":
        return None
    wanted = Path(settings.log_file or settings.main_log_file or
                  Path(settings.log_base) / f"{settings.node_name}.log")
    try:
        wanted.parent.mkdir(parents=True, exist_ok=True)
        with wanted.open("a"):
            pass
        return wanted
    except OSError:
        fallback = Path(tempfile.gettempdir()) / f"embroker-{settings.node_name}.log"
        print(f"embroker: cannot write the log file {wanted}; logging to {fallback}", file=err)
        return fallback


def _data_dir(settings: NodeSettings) -> Path:
    """The node's data folder, for the disk monitor: embroker keeps nothing on disk, so it
    makes no folder; the nearest one that exists on the way to RabbitMQ's is watched."""
    folder = Path(settings.mnesia_dir or Path(settings.mnesia_base) / settings.node_name)
    while not folder.exists() and folder.parent != folder:
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
        if lookup(settings.node_name) is not None:
            print(f"ERROR: node with name \"{settings.node_name.partition('@')[0]}\" is "
                  f"already running on host \"{settings.node_name.partition('@')[2]}\"",
                  file=err)
            return 75
        return _detach(argv, err)
    for line in settings.unsupported:
        print(f"embroker: not honoured: {line}", file=err)
    log_file = _log_file(settings, err)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s [%(levelname)s] %(name)s: %(message)s",
        handlers=[logging.FileHandler(log_file) if log_file is not None
                  else logging.NullHandler()])
    try:
        broker, server = build(settings)
    except PortInUse as exc:
        print(f"embroker: cannot listen: {exc} (held by another broker, a RabbitMQ?); give "
              "the node other ports (RABBITMQ_NODE_PORT, listeners.* in rabbitmq.conf, or "
              "fewer plugins in RABBITMQ_ENABLED_PLUGINS_FILE)", file=err)
        return 75
    except (DefinitionsError, AMQPError, OSError, ValueError) as exc:
        print(f"embroker: cannot start node {settings.node_name}: {exc}", file=err)
        return 70
    node = Node(broker, server, settings.node_name,
                enabled_plugins_file=Path(os.environ.get("RABBITMQ_ENABLED_PLUGINS_FILE")
                                          or DEFAULT_ENABLED_PLUGINS_FILE),
                data_dir=_data_dir(settings),
                config_files=[Path(p) for p in settings.config_files], log_file=log_file,
                plugin_ports={"rabbitmq_management": settings.management_port or 15672,
                              "rabbitmq_stream": settings.stream_listeners[0].port
                              if settings.stream_listeners else 5552})
    try:
        node.start()
    except NodeNameInUse:
        server.stop()
        print(f"ERROR: node with name \"{settings.node_name.partition('@')[0]}\" is already "
              f"running on host \"{settings.node_name.partition('@')[2]}\"", file=err)
        return 75

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
    return 0

