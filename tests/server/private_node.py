"""A RabbitMQ node of its own, for reference tests that stop, reset or alarm a node (which
the shared reference at 5672 must never see): a copy of the reference's install with its own
node name, ports, config file and data folder under /tmp (open to RabbitMQ's user, as its
scripts run the node as ``rabbitmq``). It takes about 10 s to start; stopped after.

(tls_node.py is the same with an amqps port and a certificate authority.)"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
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


def _wait_for(node: PrivateNode, process: subprocess.Popen[bytes], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not node.listening():
        if process.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.5)  # (a real node starting: polled against a deadline)
    return True


@contextlib.contextmanager
def private_node(config: str = "") -> Iterator[PrivateNode | None]:
    """A RabbitMQ node of its own on a free port (``config``: more lines of rabbitmq.conf);
    ``None`` when it did not start within 60 s. Stopped after, its files removed."""
    where = Path(tempfile.mkdtemp(prefix="embroker-private-node-"))
    where.chmod(0o777)
    name = f"embroker-{os.getpid()}-{uuid.uuid4().hex[:6]}@localhost"
    port, dist = _free_port(), _free_port()
    (where / "rabbitmq.conf").write_text(f"listeners.tcp.default = {port}\n"
                                         "loopback_users = none\n" + config)
    (where / "enabled_plugins").write_text("[].\n")
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
        yield node if _wait_for(node, process, 60) else None
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            node.ctl("stop")
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(where, ignore_errors=True)
