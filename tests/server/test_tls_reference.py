"""TLS against a RabbitMQ node of the test's own, configured with the same certificates as
embroker (a copy of the reference's install: its own node name, ports, config file and data
folder, so the shared reference is left alone): each handshake and login outcome as a client
sees it must be the same on both.

Runs when ``EMBROKER_REFERENCE_URL`` is set and ``rabbitmq-server`` is installed; the node
takes about 10 s to start and is stopped after the module."""

from __future__ import annotations

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

import pika
import pytest
import trustme

from embroker import Broker
from embroker.tls import TLSOptions

pytestmark = pytest.mark.skipif(
    not os.environ.get("EMBROKER_REFERENCE_URL") or shutil.which("rabbitmq-server") is None,
    reason="needs EMBROKER_REFERENCE_URL and rabbitmq-server (a RabbitMQ node of its own)")

#: The DN a client certificate of ours gets as its user (checked on both brokers).
USER = "CN=app-1,OU=testing,O=example"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Pki:
    def __init__(self, where: Path) -> None:
        self.ca = trustme.CA()
        self.cacertfile = str(where / "ca.pem")
        self.certfile = str(where / "server.pem")
        self.keyfile = str(where / "server.key")
        self.ca.cert_pem.write_to_path(self.cacertfile)
        leaf = self.ca.issue_cert("localhost", "127.0.0.1")
        leaf.cert_chain_pems[0].write_to_path(self.certfile)
        leaf.private_key_pem.write_to_path(self.keyfile)
        self.where = where

    def client(self, ca: trustme.CA | None = None, **names: str) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.cacertfile)
        if ca is not None or names:
            leaf = (ca or self.ca).issue_cert("client", **names)
            path = self.where / f"client-{uuid.uuid4().hex[:8]}.pem"
            leaf.private_key_and_cert_chain_pem.write_to_path(str(path))
            context.load_cert_chain(str(path))
        return context


@pytest.fixture(scope="module")
def pki() -> Iterator[Pki]:
    # (a folder of its own under the system's temporary one, open to all: RabbitMQ's scripts
    # run the node as the rabbitmq user, who cannot enter pytest's)
    where = Path(tempfile.mkdtemp(prefix="embroker-tls-reference-"))
    where.chmod(0o777)
    pki = Pki(where)
    for path in where.iterdir():
        path.chmod(0o644)
    yield pki
    shutil.rmtree(where, ignore_errors=True)


@pytest.fixture(scope="module")
def reference(pki: Pki) -> Iterator[tuple[int, int]]:
    """A RabbitMQ node with an amqps port: verify_peer, no fail_if_no_peer_cert, EXTERNAL
    offered; its (plain, TLS) ports."""
    where = Path(pki.where)
    node = f"embroker-tls-{os.getpid()}@localhost"
    plain, tls, dist = _free_port(), _free_port(), _free_port()
    (where / "rabbitmq.conf").write_text(
        f"listeners.tcp.default = {plain}\nlisteners.ssl.default = {tls}\n"
        f"ssl_options.cacertfile = {pki.cacertfile}\nssl_options.certfile = {pki.certfile}\n"
        f"ssl_options.keyfile = {pki.keyfile}\nssl_options.verify = verify_peer\n"
        "ssl_options.fail_if_no_peer_cert = false\nauth_mechanisms.1 = PLAIN\n"
        "auth_mechanisms.2 = AMQPLAIN\nauth_mechanisms.3 = EXTERNAL\n"
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
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", tls), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None:
                    pytest.skip("the TLS reference node did not start")
                time.sleep(0.5)
        else:
            pytest.skip("the TLS reference node did not start within 60 s")
        ctl = ["rabbitmqctl", "-n", node]
        subprocess.run([*ctl, "add_user", USER, "unused"], check=True, capture_output=True)
        subprocess.run([*ctl, "set_permissions", USER, ".*", ".*", ".*"], check=True,
                       capture_output=True)
        yield plain, tls
    finally:
        subprocess.run(["rabbitmqctl", "-n", node, "stop"], check=False, capture_output=True,
                       timeout=60)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def outcomes(port: int, pki: Pki) -> dict[str, str]:
    """Each scenario, as pika sees it."""
    def attempt(context: ssl.SSLContext, external: bool = False) -> str:
        credentials = pika.credentials.ExternalCredentials() if external \
            else pika.PlainCredentials("guest", "guest")
        try:
            pika.BlockingConnection(pika.ConnectionParameters(
                "localhost", port, credentials=credentials,
                ssl_options=pika.SSLOptions(context, "localhost"))).close()
        except pika.exceptions.ProbableAuthenticationError as exc:
            return f"refused: {exc.args[0]}" if exc.args else "refused"
        except (pika.exceptions.AMQPConnectionError, ssl.SSLError, ConnectionError) as exc:
            text = repr(exc)
            for alert in ("UNKNOWN_CA", "PROTOCOL_VERSION", "CERTIFICATE_REQUIRED"):
                if alert in text:
                    return f"handshake: {alert}"
            return f"failed: {text[:80]}"
        return "connects"

    names = {"common_name": "app-1", "organization_name": "example",
             "organization_unit_name": "testing"}
    old = pki.client()
    old.minimum_version = ssl.TLSVersion.TLSv1_2
    old.maximum_version = ssl.TLSVersion.TLSv1_2
    oldest = pki.client()
    oldest.minimum_version = oldest.maximum_version = ssl.TLSVersion.TLSv1_1
    oldest.set_ciphers("DEFAULT:@SECLEVEL=0")
    return {
        "plain, no certificate": attempt(pki.client()),
        "plain, a certificate": attempt(pki.client(**names)),
        "plain, another authority's certificate": attempt(pki.client(trustme.CA(), **names)),
        "external, the certificate's DN a user": attempt(pki.client(**names), external=True),
        "external, no certificate": attempt(pki.client(), external=True),
        "external, a DN that is no user": attempt(
            pki.client(common_name="nobody"), external=True),
        "TLS 1.2": attempt(old),
        "TLS 1.1": attempt(oldest),
    }


def mechanisms(port: int, context: ssl.SSLContext | None) -> str:
    from pamqp import frame

    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock = context.wrap_socket(raw, server_hostname="localhost") if context else raw
    try:
        sock.sendall(b"AMQP\x00\x00\x09\x01")
        data = b""
        while True:
            data += sock.recv(65536)
            try:
                start = frame.unmarshal(data)[2]
            except Exception:  # (not a whole frame yet)
                continue
            value = start.mechanisms
            return value.decode() if isinstance(value, bytes) else str(value)
    finally:
        sock.close()


def test_tls_handshakes_and_external_logins_as_rabbitmq_3_10_answers_them(
        reference: tuple[int, int], pki: Pki) -> None:
    broker = Broker(users={"guest": "guest", USER: "unused"}, loopback_users=(),
                    auth_mechanisms=("PLAIN", "AMQPLAIN", "EXTERNAL"))
    broker.set_permissions(USER, ".*", ".*", ".*")
    settings = TLSOptions(certfile=pki.certfile, keyfile=pki.keyfile,
                          cacertfile=pki.cacertfile, verify="verify_peer")
    plain, tls = reference
    theirs = outcomes(tls, pki)
    with broker.serve(tls=settings, tls_port=0) as server:
        ours = outcomes(server.tls_port or 0, pki)
        ours_offered = (mechanisms(server.port, None),
                        mechanisms(server.tls_port or 0, pki.client()))
        assert server.errors == []
    assert ours == theirs
    assert theirs["external, the certificate's DN a user"] == "connects"
    # (every version but SSL 3 by default: rabbit_ssl_options:fix_ssl_protocol_versions/1)
    assert theirs["TLS 1.1"] == "connects"
    assert ours_offered == (mechanisms(plain, None), mechanisms(tls, pki.client())) == (
        "PLAIN AMQPLAIN", "PLAIN AMQPLAIN EXTERNAL")
