"""A RabbitMQ node of its own with an amqps port, for TLS comparisons (tests and
benchmarks): a copy of the reference's install with its own node name, ports, config file and
data folder, so the shared reference is left alone. It takes about 10 s to start."""

from __future__ import annotations

import contextlib
import shutil
import ssl
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import trustme

from .private_node import free_port, private_node

#: The DN a client certificate of ``Pki.client(**NAMES)`` gets as its user.
USER = "CN=app-1,OU=testing,O=example"
NAMES: dict[str, Any] = {"common_name": "app-1", "organization_name": "example",
         "organization_unit_name": "testing"}


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


@contextlib.contextmanager
def tls_node(pki: Pki, *, fail_if_no_peer_cert: bool = False,
             login_from: str = "distinguished_name") -> Iterator[tuple[int, int] | None]:
    """A RabbitMQ node with an amqps port (verify_peer, ``fail_if_no_peer_cert``, EXTERNAL
    offered with ``ssl_cert_login_from``, no loopback users, user :data:`USER` and, for the
    common name, ``app-1``); its (plain, TLS) ports, or ``None`` when it did not start within
    60 s. Stopped after (a :func:`~tests.server.private_node.private_node`)."""
    tls = free_port()
    config = (
        f"listeners.ssl.default = {tls}\n"
        f"ssl_options.cacertfile = {pki.cacertfile}\nssl_options.certfile = {pki.certfile}\n"
        f"ssl_options.keyfile = {pki.keyfile}\nssl_options.verify = verify_peer\n"
        f"ssl_options.fail_if_no_peer_cert = {str(fail_if_no_peer_cert).lower()}\n"
        "auth_mechanisms.1 = PLAIN\nauth_mechanisms.2 = AMQPLAIN\n"
        f"auth_mechanisms.3 = EXTERNAL\nssl_cert_login_from = {login_from}\n")
    with private_node(config, plugins=["rabbitmq_auth_mechanism_ssl"], ready_port=tls,
                      under=pki.where, prefix="embroker-tls") as node:
        if node is None:
            yield None
            return
        for user in (USER, NAMES["common_name"]):
            for args in (("add_user", user, "unused"), ("set_permissions", user, ".*", ".*",
                                                        ".*")):
                assert node.ctl(*args).returncode == 0, args
        yield node.port, tls
