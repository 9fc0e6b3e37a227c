"""A RabbitMQ node of its own with an amqps port, for TLS comparisons (tests and
benchmarks): a copy of the reference's install with its own node name, ports, config file and
data folder, so the shared reference is left alone. It takes about 10 s to start."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import trustme

#: The DN a client certificate of ``Pki.client(**NAMES)`` gets as its user.
USER = "CN=app-1,OU=testing,O=example"
NAMES: dict[str, Any] = {"common_name": "app-1", "organization_name": "example",
         "organization_unit_name": "testing"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Pki:
    """A throwaway authority and a server certificate for ``localhost``, in a folder open to
    RabbitMQ's user (its scripts run the node as ``rabbitmq``)."""

    def __init__(self) -> None:
        self.where = Path(tempfile.mkdtemp(prefix="embroker-tls-reference-"))
        self.where.chmod(0o777)
        self.ca = trustme.CA()
        self.cacertfile = str(self.where / "ca.pem")
        self.certfile = str(self.where / "server.pem")
        self.keyfile = str(self.where / "server.key")
        self.ca.cert_pem.write_to_path(self.cacertfile)
        leaf = self.ca.issue_cert("localhost", "127.0.0.1")
        leaf.cert_chain_pems[0].write_to_path(self.certfile)
        leaf.private_key_pem.write_to_path(self.keyfile)
        for path in self.where.iterdir():
            path.chmod(0o644)

    def client(self, ca: trustme.CA | None = None, **names: Any) -> ssl.SSLContext:
        """A client context that trusts the authority, with a certificate of ``ca`` (ours by
        default) when ``names`` or ``ca`` are given."""
        context = ssl.create_default_context(cafile=self.cacertfile)
        if ca is not None or names:
            leaf = (ca or self.ca).issue_cert("client", **names)
            path = self.where / f"client-{uuid.uuid4().hex[:8]}.pem"
            leaf.private_key_and_cert_chain_pem.write_to_path(str(path))
            context.load_cert_chain(str(path))
        return context

    def remove(self) -> None:
        shutil.rmtree(self.where, ignore_errors=True)


def available() -> bool:
    return shutil.which("rabbitmq-server") is not None


@contextlib.contextmanager
def tls_node(pki: Pki, *, fail_if_no_peer_cert: bool = False,
             login_from: str = "distinguished_name") -> Iterator[tuple[int, int] | None]:
    """A RabbitMQ node with an amqps port (verify_peer, ``fail_if_no_peer_cert``, EXTERNAL
    offered with ``ssl_cert_login_from``, no loopback users, user :data:`USER` and, for the
    common name, ``app-1``); its (plain, TLS) ports, or ``None`` when it did not start within
    60 s. Stopped after."""
    node = f"embroker-tls-{os.getpid()}-{uuid.uuid4().hex[:6]}@localhost"
    where = pki.where / node.partition("@")[0]  # (each node its own files)
    where.mkdir()
    where.chmod(0o777)
    plain, tls, dist = _free_port(), _free_port(), _free_port()
    (where / "rabbitmq.conf").write_text(
        f"listeners.tcp.default = {plain}\nlisteners.ssl.default = {tls}\n"
        f"ssl_options.cacertfile = {pki.cacertfile}\nssl_options.certfile = {pki.certfile}\n"
        f"ssl_options.keyfile = {pki.keyfile}\nssl_options.verify = verify_peer\n"
        f"ssl_options.fail_if_no_peer_cert = {str(fail_if_no_peer_cert).lower()}\n"
        "auth_mechanisms.1 = PLAIN\nauth_mechanisms.2 = AMQPLAIN\n"
        f"auth_mechanisms.3 = EXTERNAL\nssl_cert_login_from = {login_from}\n"
        "loopback_users = none\n")
    (where / "enabled_plugins").write_text("[rabbitmq_auth_mechanism_ssl].\n")
    for path in where.iterdir():
        path.chmod(0o644)
    env = {**os.environ, "RABBITMQ_NODENAME": node,
           "RABBITMQ_CONFIG_FILE": str(where / "rabbitmq"),
           "RABBITMQ_MNESIA_BASE": str(where / "mnesia"), "RABBITMQ_LOG_BASE": str(where / "log"),
           "RABBITMQ_ENABLED_PLUGINS_FILE": str(where / "enabled_plugins"),
           "RABBITMQ_DIST_PORT": str(dist), "RABBITMQ_PID_FILE": str(where / "pid")}
    process = subprocess.Popen(["rabbitmq-server"], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    ctl = ["rabbitmqctl", "-n", node]
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", tls), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    yield None
                    return
                time.sleep(0.5)
        for user in (USER, NAMES["common_name"]):
            subprocess.run([*ctl, "add_user", user, "unused"], check=True, capture_output=True)
            subprocess.run([*ctl, "set_permissions", user, ".*", ".*", ".*"], check=True,
                           capture_output=True)
        yield plain, tls
    finally:
        subprocess.run([*ctl, "stop"], check=False, capture_output=True, timeout=60)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
