"""A RabbitMQ node of its own, for reference tests that stop, reset or alarm a node (which
the shared reference at 5672 must never see): a copy of the reference's install with its own
node name, ports, config file and data folder under /tmp (open to RabbitMQ's user, as its
scripts run the node as ``rabbitmq``). It takes about 10 s to start; stopped after.

(tls_node.py starts one with an amqps port and a certificate authority through it.)"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def available() -> bool:
    """Whether RabbitMQ is installed here (``rabbitmq-server`` and ``rabbitmqctl``)."""
    return shutil.which("rabbitmq-server") is not None and shutil.which("rabbitmqctl") is not None


@dataclass(frozen=True)
class PrivateNode:
    """A running node of one's own: its name and AMQP port."""

    name: str
    port: int

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/"

    def ctl(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """``rabbitmqctl -n NODE ARGS`` (its output and exit status; not checked)."""
        return subprocess.run(["rabbitmqctl", "-n", self.name, *args], capture_output=True,
                              text=True, timeout=timeout, check=False)

    def listening(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            return False
        return True


def free_port() -> int:
    """A port nothing listens on now (for a node's configuration)."""
    return _free_port()


def _wait_for(port: int, process: subprocess.Popen[bytes], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                return False
        time.sleep(0.5)  # (a real node starting: polled against a deadline)


@contextlib.contextmanager
def private_node(config: str = "", *, plugins: Iterable[str] = (), ready_port: int | None = None,
                 under: Path | None = None, prefix: str = "embroker") -> Iterator[PrivateNode | None]:
    """A RabbitMQ node of its own on a free port; ``None`` when it did not start within 60 s.
    Stopped after, its files removed.

    Args:
        config: more lines of rabbitmq.conf (after its AMQP listener and ``loopback_users =
            none``).
        plugins: what its enabled_plugins file lists.
        ready_port: the port whose listening means the node is up (default its AMQP port: a
            TLS node's amqps port, say).
        under: the folder its own folder goes in (default a new one under /tmp).
        prefix: the start of its node name.
    """
    name = f"{prefix}-{os.getpid()}-{uuid.uuid4().hex[:6]}@localhost"
    if under is None:
        where = Path(tempfile.mkdtemp(prefix="embroker-private-node-"))
    else:
        where = under / name.partition("@")[0]
        where.mkdir()
    where.chmod(0o777)
    port, dist = _free_port(), _free_port()
    (where / "rabbitmq.conf").write_text(f"listeners.tcp.default = {port}\n"
                                         "loopback_users = none\n" + config)
    (where / "enabled_plugins").write_text(f"[{','.join(plugins)}].\n")
    for path in where.iterdir():
        path.chmod(0o644)
    env = {**os.environ, "RABBITMQ_NODENAME": name,
           "RABBITMQ_CONFIG_FILE": str(where / "rabbitmq"),
           "RABBITMQ_MNESIA_BASE": str(where / "mnesia"), "RABBITMQ_LOG_BASE": str(where / "log"),
           "RABBITMQ_ENABLED_PLUGINS_FILE": str(where / "enabled_plugins"),
           "RABBITMQ_DIST_PORT": str(dist), "RABBITMQ_PID_FILE": str(where / "pid")}
    process = subprocess.Popen(["rabbitmq-server"], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    node = PrivateNode(name, port)
    try:
        yield node if _wait_for(ready_port or port, process, 60) else None
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            node.ctl("stop")
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(where, ignore_errors=True)
