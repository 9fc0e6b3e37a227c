"""TLS against a RabbitMQ node of the test's own, configured with the same certificates as
embroker (tests/server/tls_node.py): each handshake and login outcome as a client sees it must be
the same on both.

Runs when ``EMBROKER_REFERENCE_URL`` is set and ``rabbitmq-server`` is installed; the node
takes about 10 s to start and is stopped after the module."""

from __future__ import annotations

import datetime
import os
import socket
import ssl
from collections.abc import Iterator

import pika
import pytest
import trustme

from embroker import Broker
from embroker.tls import TLSOptions
from tests.server.private_node import available
from tests.server.tls_node import NAMES, USER, Pki, tls_node

pytestmark = pytest.mark.skipif(
    not os.environ.get("EMBROKER_REFERENCE_URL") or not available(),
    reason="needs EMBROKER_REFERENCE_URL and rabbitmq-server (a RabbitMQ node of its own)")


@pytest.fixture(scope="module")
def pki() -> Iterator[Pki]:
    pki = Pki()
    yield pki
    pki.remove()


#: The two configurations compared: ssl_options.fail_if_no_peer_cert, ssl_cert_login_from.
CONFIGURATIONS = [(False, "distinguished_name"), (True, "common_name")]


@pytest.fixture(scope="module", params=CONFIGURATIONS, ids=["optional-dn", "required-cn"])
def configuration(request: pytest.FixtureRequest, pki: Pki,
                  ) -> Iterator[tuple[bool, str, tuple[int, int]]]:
    fail_if_no_peer_cert, login_from = request.param
    with tls_node(pki, fail_if_no_peer_cert=fail_if_no_peer_cert,
                  login_from=login_from) as ports:
        if ports is None:
            pytest.skip("the TLS reference node did not start")
        yield fail_if_no_peer_cert, login_from, ports


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
        except (pika.exceptions.AMQPConnectionError, ssl.SSLError, ConnectionError):
            # (which alert pika reports depends on timing: RabbitMQ's socket may close before
            # pika reads its alert, a StreamLostError then; the same outcome for the client)
            return "refused in the TLS handshake"
        return "connects"

    names = NAMES
    old = pki.client()
    old.minimum_version = ssl.TLSVersion.TLSv1_2
    old.maximum_version = ssl.TLSVersion.TLSv1_2
    oldest = pki.client()
    oldest.minimum_version = oldest.maximum_version = ssl.TLSVersion.TLSv1_1
    oldest.set_ciphers("DEFAULT:@SECLEVEL=0")
    expired = pki.client()
    leaf = pki.ca.issue_cert("client", common_name="app-1", not_before=datetime.datetime(
        2020, 1, 1), not_after=datetime.datetime(2021, 1, 1))
    leaf.private_key_and_cert_chain_pem.write_to_path(str(pki.where / "expired.pem"))
    expired.load_cert_chain(str(pki.where / "expired.pem"))
    return {
        "plain, no certificate": attempt(pki.client()),
        "plain, an expired certificate": attempt(expired),
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
        configuration: tuple[bool, str, tuple[int, int]], pki: Pki) -> None:
    fail_if_no_peer_cert, login_from, (plain, tls) = configuration
    broker = Broker(users={"guest": "guest", USER: "unused", NAMES["common_name"]: "unused"},
                    loopback_users=(), auth_mechanisms=("PLAIN", "AMQPLAIN", "EXTERNAL"),
                    ssl_cert_login_from=login_from)
    for user in (USER, NAMES["common_name"]):
        broker.set_permissions(user, ".*", ".*", ".*")
    settings = TLSOptions(certfile=pki.certfile, keyfile=pki.keyfile,
                          cacertfile=pki.cacertfile, verify="verify_peer",
                          fail_if_no_peer_cert=fail_if_no_peer_cert)
    theirs = outcomes(tls, pki)
    with broker.serve(tls=settings, tls_port=0) as server:
        ours = outcomes(server.tls_port or 0, pki)
        ours_offered = (mechanisms(server.port, None),
                        mechanisms(server.tls_port or 0, pki.client(**NAMES)))
        assert server.errors == []
    assert ours == theirs
    assert theirs["external, the certificate's DN a user"] == "connects"
    assert theirs["plain, no certificate"] == (
        "refused in the TLS handshake" if fail_if_no_peer_cert else "connects")
    assert theirs["plain, an expired certificate"] == "refused in the TLS handshake"
    if not fail_if_no_peer_cert:
        # (every version but SSL 3 by default: rabbit_ssl_options:fix_ssl_protocol_versions/1)
        assert theirs["TLS 1.1"] == "connects"
    assert ours_offered == (mechanisms(plain, None), mechanisms(tls, pki.client(**NAMES))) == (
        "PLAIN AMQPLAIN", "PLAIN AMQPLAIN EXTERNAL")
