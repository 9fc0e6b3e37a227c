"""TLS on the listener's ports (amqps, the stream protocol's, the management API's): each
client's own way of asking for TLS works, a bad handshake costs its connection alone, and the
verify settings act as RabbitMQ's ``ssl_options`` say."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pika
import pytest
import trustme

from embroker import Broker, ManualClock
from embroker.server import Server
from embroker.testing import advance, wait_until
from embroker.tls import TLSOptions


@dataclass(frozen=True)
class Files:
    ca: trustme.CA
    cacertfile: str
    certfile: str
    keyfile: str


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Files:
    ca = trustme.CA()
    leaf = ca.issue_cert("localhost", "127.0.0.1")
    where = tmp_path_factory.mktemp("tls")
    ca.cert_pem.write_to_path(str(where / "ca.pem"))
    leaf.cert_chain_pems[0].write_to_path(str(where / "server.pem"))
    leaf.private_key_pem.write_to_path(str(where / "server.key"))
    return Files(ca, str(where / "ca.pem"), str(where / "server.pem"), str(where / "server.key"))


def options(files: Files, **more: Any) -> TLSOptions:
    return TLSOptions(certfile=files.certfile, keyfile=files.keyfile,
                      cacertfile=files.cacertfile, **more)


@pytest.fixture
def server(files: Files) -> Iterator[Server]:
    with Broker().serve(tls=options(files), tls_port=0, stream_tls_port=0,
                        management_tls_port=0) as srv:
        yield srv
        assert srv.errors == []


#: How pika says a TLS handshake failed (its own error, or ssl's as it is).
REFUSED = (pika.exceptions.AMQPConnectionError, ssl.SSLError, ConnectionError)


def client_context(files: Files) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=files.cacertfile)


def pika_over_tls(files: Files, port: int, context: ssl.SSLContext | None = None,
                  ) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.ConnectionParameters(
        "localhost", port, ssl_options=pika.SSLOptions(context or client_context(files),
                                                       "localhost")))


# -- each client's own way -------------------------------------------------------------------


def test_pika_publishes_and_consumes_over_amqps_with_its_ssl_options(
        server: Server, files: Files) -> None:
    assert server.tls_port is not None
    assert server.tls_url == f"amqps://guest:guest@127.0.0.1:{server.tls_port}/"
    connection = pika_over_tls(files, server.tls_port)
    channel = connection.channel()
    channel.queue_declare("tls")
    big = bytes(range(256)) * 20_000  # (5 MB: many TLS records, a socket that fills up)
    for body in (b"small", big):
        channel.basic_publish("", "tls", body)
    got = []
    for method, _props, body in channel.consume("tls", inactivity_timeout=5):
        assert method is not None
        got.append(body)
        channel.basic_ack(method.delivery_tag)
        if len(got) == 2:
            break
    assert got == [b"small", big]
    connection.close()


def test_aio_pika_connects_with_an_amqps_url_and_its_cafile(server: Server, files: Files) -> None:
    import aio_pika

    async def run() -> bytes:
        url = f"amqps://guest:guest@localhost:{server.tls_port}/?cafile={files.cacertfile}"
        connection = await aio_pika.connect(url)
        async with connection:
            channel = await connection.channel()
            queue = await channel.declare_queue("aio-tls")
            await channel.default_exchange.publish(aio_pika.Message(b"hello"), "aio-tls")
            message = await queue.get(timeout=5)
            await message.ack()
            return message.body

    assert asyncio.run(asyncio.wait_for(run(), 20)) == b"hello"


def test_kombu_sends_and_reads_with_broker_use_ssl(server: Server, files: Files) -> None:
    import kombu

    ssl_options = {"ca_certs": files.cacertfile, "cert_reqs": ssl.CERT_REQUIRED,
                   "server_hostname": "localhost"}
    with kombu.Connection(f"amqp://guest:guest@localhost:{server.tls_port}//",
                          ssl=ssl_options) as connection:
        queue = connection.SimpleQueue("kombu-tls")
        queue.put({"n": 1})
        message = queue.get(timeout=5)
        assert message.payload == {"n": 1}
        message.ack()
        queue.close()


def test_amqpstorm_connects_with_its_ssl_options(server: Server, files: Files) -> None:
    import amqpstorm

    connection = amqpstorm.Connection(
        "localhost", "guest", "guest", port=server.tls_port or 0, ssl=True,
        ssl_options={"context": client_context(files), "server_hostname": "localhost"})
    channel = connection.channel()
    channel.queue.declare("storm-tls")
    channel.basic.publish(b"storm", "storm-tls")
    message = channel.basic.get("storm-tls")
    assert message is not None
    assert message.body == "storm"
    connection.close()


def test_proton_speaks_amqp_1_0_over_amqps_with_its_ssl_domain(
        server: Server, files: Files) -> None:
    from proton import Message, SSLDomain
    from proton.utils import BlockingConnection

    with pika_over_tls(files, server.tls_port or 0) as declaring:
        declaring.channel().queue_declare("proton-tls")
    domain = SSLDomain(SSLDomain.MODE_CLIENT)
    domain.set_trusted_ca_db(files.cacertfile)
    domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
    connection = BlockingConnection(f"amqps://guest:guest@localhost:{server.tls_port}",
                                    ssl_domain=domain, timeout=10)
    try:
        sender = connection.create_sender("/queues/proton-tls")
        sender.send(Message(body="over tls"))
        receiver = connection.create_receiver("/queues/proton-tls")
        assert receiver.receive(timeout=5).body == "over tls"
        receiver.accept()
    finally:
        connection.close()


def test_rstream_publishes_and_reads_over_the_stream_tls_port(
        server: Server, files: Files) -> None:
    from rstream import (
        AMQPMessage,
        Consumer,
        ConsumerOffsetSpecification,
        OffsetType,
        Producer,
        amqp_decoder,
    )

    assert server.stream_tls_port is not None
    port = server.stream_tls_port
    context = client_context(files)

    async def run() -> list[bytes]:
        got: list[bytes] = []
        done = asyncio.Event()
        async with Producer("localhost", port=port, username="guest", password="guest",
                            ssl_context=context) as producer:
            await producer.create_stream("tls-stream")
            await producer.send_wait("tls-stream", AMQPMessage(body=b"s1"))

            async def on_message(message: Any, _context: Any) -> None:
                got.append(bytes(message.body))
                done.set()

            consumer = Consumer("localhost", port=port, username="guest", password="guest",
                                ssl_context=context)
            await consumer.start()
            await consumer.subscribe("tls-stream", on_message, decoder=amqp_decoder,
                                     offset_specification=(
                ConsumerOffsetSpecification(OffsetType.FIRST, None)))
            await asyncio.wait_for(done.wait(), 10)
            await consumer.close()
        return got

    assert asyncio.run(asyncio.wait_for(run(), 30)) == [b"s1"]


def test_the_management_api_answers_over_https(server: Server, files: Files) -> None:
    request = urllib.request.Request(server.management_tls_url + "api/overview")
    request.add_header("Authorization", "Basic Z3Vlc3Q6Z3Vlc3Q=")  # guest:guest
    with urllib.request.urlopen(request, context=client_context(files), timeout=10) as answer:
        assert answer.status == 200
        assert "rabbitmq_version" in json.loads(answer.read())


# -- handshakes that go wrong ----------------------------------------------------------------


def test_a_client_that_does_not_trust_the_certificate_fails_its_handshake_alone(
        server: Server, files: Files) -> None:
    assert server.tls_port is not None
    stranger = ssl.create_default_context()  # (the system's authorities alone)
    with pytest.raises(REFUSED):
        pika_over_tls(files, server.tls_port, stranger)
    fine = pika_over_tls(files, server.tls_port)  # the listener goes on
    fine.channel().queue_declare("after")
    fine.close()


def test_garbage_instead_of_a_handshake_closes_that_socket_alone(
        server: Server, files: Files) -> None:
    assert server.tls_port is not None
    garbage = socket.create_connection(("127.0.0.1", server.tls_port), timeout=5)
    garbage.sendall(b"AMQP\x00\x00\x09\x01" + b"\x16\x03\x01\xff\xff" * 100)
    wait_until(lambda: garbage.recv(4096) == b"")  # (OpenSSL sends no alert for it: the end)
    wait_until(lambda: not server.connections)
    fine = pika_over_tls(files, server.tls_port)
    fine.channel().queue_declare("after-garbage")
    fine.close()
    garbage.close()


def test_a_stalled_handshake_is_closed_after_the_handshake_timeout(files: Files) -> None:
    clock = ManualClock()
    broker = Broker(clock=clock)
    with broker.serve(tls=options(files), tls_port=0) as server:
        assert server.tls_port is not None
        stalled = socket.create_connection(("127.0.0.1", server.tls_port), timeout=5)
        wait_until(lambda: len(server.connections) == 1)
        advance(broker, 10)  # RabbitMQ's handshake_timeout, as for a plain socket
        wait_until(lambda: stalled.recv(1) == b"")
        stalled.close()
        assert server.errors == []


def test_tls_1_1_is_refused_when_the_versions_leave_it_out(files: Files) -> None:
    # (RabbitMQ 3.10 takes it by default, as embroker: test_tls_reference.py)
    old = client_context(files)
    old.minimum_version = ssl.TLSVersion.TLSv1
    old.maximum_version = ssl.TLSVersion.TLSv1_1
    old.set_ciphers("DEFAULT:@SECLEVEL=0")
    settings = options(files, versions=("tlsv1.3", "tlsv1.2"))
    with Broker().serve(tls=settings, tls_port=0) as server, pytest.raises(REFUSED):
        pika_over_tls(files, server.tls_port or 0, old)


# -- verify and fail_if_no_peer_cert ---------------------------------------------------------


def client_with_certificate(files: Files, tmp_path: Path, name: str) -> ssl.SSLContext:
    context = client_context(files)
    leaf = files.ca.issue_cert(name)
    leaf.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "client.pem"))
    context.load_cert_chain(str(tmp_path / "client.pem"))
    return context


@pytest.mark.parametrize(("fail_if_no_peer_cert", "without", "with_one"), [
    (False, "connects", "connects"),
    (True, "refused", "connects"),
])
def test_verify_peer_asks_for_a_certificate_and_fail_if_no_peer_cert_requires_it(
        files: Files, tmp_path: Path, fail_if_no_peer_cert: bool, without: str,
        with_one: str) -> None:
    settings = options(files, verify="verify_peer", fail_if_no_peer_cert=fail_if_no_peer_cert)

    def outcome(listener: Server, context: ssl.SSLContext) -> str:
        try:
            pika_over_tls(files, listener.tls_port or 0, context).close()
        except REFUSED:
            return "refused"
        return "connects"

    with Broker().serve(tls=settings, tls_port=0) as listener:
        assert outcome(listener, client_context(files)) == without
        assert outcome(listener, client_with_certificate(files, tmp_path, "client")) == with_one
        assert listener.errors == []


def test_a_certificate_from_another_authority_is_refused_under_verify_peer(
        files: Files, tmp_path: Path) -> None:
    other = trustme.CA().issue_cert("client")
    other.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "other.pem"))
    context = client_context(files)
    context.load_cert_chain(str(tmp_path / "other.pem"))
    with Broker().serve(tls=options(files, verify="verify_peer"), tls_port=0) as server:
        with pytest.raises(REFUSED):
            pika_over_tls(files, server.tls_port or 0, context)
        assert server.errors == []


def test_a_tls_port_without_settings_is_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="a TLS port needs TLS settings"):
        Broker().serve(tls_port=0)


def test_a_password_protected_key_and_an_ec_key_are_taken(files: Files, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    leaf = files.ca.issue_cert("localhost", key_type=trustme.KeyType.ECDSA)
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
    (tmp_path / "ec.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret")))
    leaf.cert_chain_pems[0].write_to_path(str(tmp_path / "ec.pem"))
    settings = TLSOptions(certfile=str(tmp_path / "ec.pem"), keyfile=str(tmp_path / "ec.key"),
                          password="secret")
    with Broker().serve(tls=settings, tls_port=0) as server:
        pika_over_tls(files, server.tls_port or 0).close()


# -- SASL EXTERNAL (rabbitmq_auth_mechanism_ssl) ---------------------------------------------


def external_login(server: Server, files: Files, context: ssl.SSLContext) -> str:
    """Log in with pika's EXTERNAL credentials; the user name the broker took, or why not."""
    try:
        connection = pika.BlockingConnection(pika.ConnectionParameters(
            "localhost", server.tls_port or 0,
            credentials=pika.credentials.ExternalCredentials(),
            ssl_options=pika.SSLOptions(context, "localhost")))
    except pika.exceptions.ProbableAuthenticationError as exc:
        return f"refused: {exc}"
    except pika.exceptions.AMQPConnectionError as exc:
        return f"failed: {exc!r}"
    try:
        return next(c.user for c in server.connections)
    finally:
        connection.close()


@pytest.mark.parametrize(("login_from", "user"), [
    ("distinguished_name", "CN=app-1,OU=testing,O=example"),
    ("common_name", "app-1"),
])
def test_external_logs_in_as_the_client_certificates_name(
        files: Files, tmp_path: Path, login_from: str, user: str) -> None:
    # rabbit_ssl:peer_cert_auth_name/2 (v3.10.8): the subject, last attribute first
    # (rabbit_cert_info:format_rdn_sequence/1), or the common name
    leaf = files.ca.issue_cert("client", common_name="app-1", organization_name="example",
                               organization_unit_name="testing")
    leaf.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "client.pem"))
    context = client_context(files)
    context.load_cert_chain(str(tmp_path / "client.pem"))
    broker = Broker(users={user: "unused", "guest": "guest"},
                    auth_mechanisms=("PLAIN", "AMQPLAIN", "EXTERNAL"),
                    ssl_cert_login_from=login_from)
    broker.set_permissions(user, ".*", ".*", ".*")
    with broker.serve(tls=options(files, verify="verify_peer"), tls_port=0) as server:
        assert external_login(server, files, context) == user
        assert server.errors == []


def test_external_without_a_certificate_or_a_user_is_refused(
        files: Files, tmp_path: Path) -> None:
    leaf = files.ca.issue_cert("client", common_name="nobody")
    leaf.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "client.pem"))
    stranger = client_context(files)
    stranger.load_cert_chain(str(tmp_path / "client.pem"))
    broker = Broker(auth_mechanisms=("PLAIN", "EXTERNAL"), ssl_cert_login_from="common_name")
    with broker.serve(tls=options(files, verify="verify_peer"), tls_port=0) as server:
        refused = "refused: ConnectionClosedByBroker: (403) 'ACCESS_REFUSED - Login was " \
                  "refused using authentication mechanism EXTERNAL. For details see the " \
                  "broker logfile.'"
        assert external_login(server, files, client_context(files)) == refused  # no cert
        assert external_login(server, files, stranger) == refused  # no user "nobody"
        assert server.errors == []


def mechanisms_offered(port: int, context: ssl.SSLContext | None) -> bytes:
    """The mechanisms of connection.start on ``port`` (over TLS with ``context``)."""
    from pamqp import frame

    from embroker.amqp091 import PROTOCOL_HEADER

    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock = context.wrap_socket(raw, server_hostname="localhost") if context else raw
    try:
        sock.sendall(PROTOCOL_HEADER)
        data = b""
        while True:
            data += sock.recv(65536)
            try:
                _size, _channel, start = frame.unmarshal(data)
            except Exception:  # (pamqp: not a whole frame yet)
                continue
            mechanisms: bytes = start.mechanisms.encode() \
                if isinstance(start.mechanisms, str) else start.mechanisms
            return mechanisms
    finally:
        sock.close()


def test_external_is_offered_over_tls_alone_and_only_when_configured(files: Files) -> None:
    # rabbit_auth_mechanism_ssl:should_offer/1: a TLS socket, with a certificate or without
    broker = Broker(auth_mechanisms=("PLAIN", "AMQPLAIN", "EXTERNAL"))
    with broker.serve(tls=options(files), tls_port=0) as server:
        assert mechanisms_offered(server.port, None) == b"PLAIN AMQPLAIN"
        assert mechanisms_offered(server.tls_port or 0, client_context(files)) == \
            b"PLAIN AMQPLAIN EXTERNAL"
    with Broker().serve(tls=options(files), tls_port=0) as server:  # (not by default)
        assert mechanisms_offered(server.tls_port or 0, client_context(files)) == \
            b"PLAIN AMQPLAIN"


def test_rstream_logs_in_with_external_over_the_stream_tls_port(
        files: Files, tmp_path: Path) -> None:
    # rabbit_stream_reader (v3.10.8) offers the node's auth_mechanisms, EXTERNAL over TLS
    from rstream import Producer
    from rstream.constants import SlasMechanism

    user = "CN=streamer,OU=testing,O=example"
    broker = Broker(users={user: "unused"}, auth_mechanisms=("PLAIN", "AMQPLAIN", "EXTERNAL"))
    broker.set_permissions(user, ".*", ".*", ".*")
    leaf = files.ca.issue_cert("client", common_name="streamer", organization_name="example",
                               organization_unit_name="testing")
    leaf.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "client.pem"))
    context = client_context(files)
    context.load_cert_chain(str(tmp_path / "client.pem"))

    async def run(port: int) -> bool:
        async with Producer("localhost", port=port, username="", password="",
                            ssl_context=context,
                            sasl_configuration_mechanism=SlasMechanism.MechanismExternal,
                            ) as producer:
            await producer.create_stream("by-certificate")
            return bool(await producer.stream_exists("by-certificate"))

    with broker.serve(tls=options(files, verify="verify_peer"), stream_tls_port=0) as server:
        assert asyncio.run(asyncio.wait_for(run(server.stream_tls_port or 0), 20))
        assert server.errors == []


def test_a_flood_of_half_open_handshakes_does_not_stop_the_listener(files: Files) -> None:
    clock = ManualClock()
    broker = Broker(clock=clock)
    with broker.serve(tls=options(files), tls_port=0) as server:
        port = server.tls_port or 0
        half_open = []
        for index in range(100):  # half say nothing, half send a ClientHello's first bytes
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            if index % 2:
                sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
            half_open.append(sock)
        wait_until(lambda: len(server.connections) == 100)
        fine = pika_over_tls(files, port)  # served meanwhile
        fine.channel().queue_declare("during-the-flood")
        advance(broker, 10)  # the handshake timeout: each half-open one goes
        wait_until(lambda: len(server.connections) == 1)
        fine.close()
        for sock in half_open:
            sock.close()
        assert server.errors == []


def test_proton_logs_in_with_external_over_amqps(files: Files, tmp_path: Path) -> None:
    from proton import SSLDomain
    from proton.utils import BlockingConnection

    user = "CN=proton-app,OU=testing,O=example"
    broker = Broker(users={user: "unused"}, auth_mechanisms=("PLAIN", "AMQPLAIN", "EXTERNAL"))
    broker.set_permissions(user, ".*", ".*", ".*")
    broker.connect().channel().queue_declare("by-certificate")
    leaf = files.ca.issue_cert("client", common_name="proton-app", organization_name="example",
                               organization_unit_name="testing")
    leaf.cert_chain_pems[0].write_to_path(str(tmp_path / "client.pem"))
    leaf.private_key_pem.write_to_path(str(tmp_path / "client.key"))
    domain = SSLDomain(SSLDomain.MODE_CLIENT)
    domain.set_trusted_ca_db(files.cacertfile)
    domain.set_credentials(str(tmp_path / "client.pem"), str(tmp_path / "client.key"), None)
    domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
    with broker.serve(tls=options(files, verify="verify_peer"), tls_port=0) as server:
        connection = BlockingConnection(f"amqps://localhost:{server.tls_port}",
                                        ssl_domain=domain, allowed_mechs="EXTERNAL",
                                        timeout=10)
        try:
            connection.create_sender("/queues/by-certificate")
            assert [c.user for c in server.connections] == [user]
        finally:
            connection.close()
        assert server.errors == []


@pytest.mark.parametrize("encoding", ["pkcs1", "pkcs8"])
def test_an_rsa_key_in_either_pem_encoding_and_a_certificate_file_with_its_chain_are_taken(
        files: Files, tmp_path: Path, encoding: str) -> None:
    from cryptography.hazmat.primitives import serialization

    intermediate = files.ca.create_child_ca(key_type=trustme.KeyType.RSA)
    leaf = intermediate.issue_cert("localhost", key_type=trustme.KeyType.RSA)
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
    form = serialization.PrivateFormat.TraditionalOpenSSL if encoding == "pkcs1" \
        else serialization.PrivateFormat.PKCS8
    pem = key.private_bytes(serialization.Encoding.PEM, form, serialization.NoEncryption())
    assert pem.startswith(b"-----BEGIN RSA PRIVATE KEY" if encoding == "pkcs1"
                          else b"-----BEGIN PRIVATE KEY")
    (tmp_path / "server.key").write_bytes(pem)
    (tmp_path / "chain.pem").write_bytes(b"".join(p.bytes() for p in leaf.cert_chain_pems))
    assert len(leaf.cert_chain_pems) == 2  # (the leaf, then the intermediate it came from)
    settings = TLSOptions(certfile=str(tmp_path / "chain.pem"),
                          keyfile=str(tmp_path / "server.key"))
    with Broker().serve(tls=settings, tls_port=0) as server:
        pika_over_tls(files, server.tls_port or 0).close()  # (trusts the root alone)
        assert server.errors == []


def test_pikas_asyncio_adapter_connects_with_its_ssl_options(
        server: Server, files: Files) -> None:
    from pika.adapters.asyncio_connection import AsyncioConnection

    async def run() -> bool:
        loop = asyncio.get_running_loop()
        opened: asyncio.Future[bool] = loop.create_future()
        connection = AsyncioConnection(
            pika.ConnectionParameters("localhost", server.tls_port, ssl_options=pika.SSLOptions(
                client_context(files), "localhost")),
            on_open_callback=lambda _c: opened.set_result(True),
            on_open_error_callback=lambda _c, exc: opened.set_exception(exc),
            custom_ioloop=loop)
        result = await asyncio.wait_for(opened, 10)
        connection.close()
        return result

    assert asyncio.run(run())


def test_aio_pika_presents_a_client_certificate_from_its_url(files: Files,
                                                             tmp_path: Path) -> None:
    import aio_pika

    leaf = files.ca.issue_cert("client", common_name="aio")
    leaf.cert_chain_pems[0].write_to_path(str(tmp_path / "client.pem"))
    leaf.private_key_pem.write_to_path(str(tmp_path / "client.key"))
    settings = options(files, verify="verify_peer", fail_if_no_peer_cert=True)

    async def run(port: int) -> None:
        url = (f"amqps://guest:guest@localhost:{port}/?cafile={files.cacertfile}"
               f"&certfile={tmp_path / 'client.pem'}&keyfile={tmp_path / 'client.key'}")
        connection = await aio_pika.connect(url)
        await connection.close()

    with Broker().serve(tls=settings, tls_port=0) as server:
        asyncio.run(asyncio.wait_for(run(server.tls_port or 0), 20))  # (refused without it)
        assert server.errors == []


def test_a_stream_reader_that_reads_nothing_over_tls_holds_a_bounded_backlog(
        files: Files) -> None:
    # The stream connection pauses its readers while its output waits unwritten (2 MiB): over
    # TLS too, since the TLS session takes no plaintext while ciphertext waits for the socket.
    from embroker.stream import MAX_UNSENT, FrameReader, Key
    from tests.stream.test_raw_frames import RawClient

    broker = Broker()
    channel = broker.connect().channel()
    channel.queue_declare("big-stream", durable=True, arguments={"x-queue-type": "stream"})
    for _ in range(400):  # 40 MB in chunks of 100 KB
        channel.basic_publish("", "big-stream", b"x" * 100_000)
    with broker.serve(tls=options(files), stream_tls_port=0) as server:
        raw = socket.create_connection(("127.0.0.1", server.stream_tls_port or 0), timeout=5)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        client = RawClient.__new__(RawClient)  # (its frames, over a TLS socket)
        client.sock = client_context(files).wrap_socket(raw, server_hostname="localhost")
        client.reader, client.correlation = FrameReader(0), 0
        client.open()
        client.sock.sendall(client.request(Key.SUBSCRIBE).uint8(1).string("big-stream")
                            .uint16(1).uint16(1000).properties({}).frame())

        def backlog() -> int:  # (on the loop's thread)
            (held,) = server._http_clients.values()  # (the stream client)
            return len(held.wbuf) + (len(held.tls.unsent) if held.tls is not None else 0)

        wait_until(lambda: server._on_loop(backlog) > MAX_UNSENT // 2)
        for _ in range(20):  # (the loop goes on turning: the backlog stays where it is)
            assert server._on_loop(backlog) <= MAX_UNSENT + 2 * 200_000
        client.sock.close()
        assert server.errors == []


def test_the_console_s_own_https_origin_is_answered_over_https(server: Server,
                                                                files: Files) -> None:
    """A page of the console served over HTTPS sends ``Origin: https://HOST:PORT`` with what
    its script sends: answered (before: 403, only ``http://`` origins were the console's); a
    page of another site is still refused."""
    base = server.management_tls_url
    assert server.management_tls_port is not None
    origin = f"https://localhost:{server.management_tls_port}"

    def put(origin: str) -> int:
        request = urllib.request.Request(
            base.replace("127.0.0.1", "localhost") + "api/vhosts/from-the-console",
            data=b"{}", method="PUT", headers={
                "Authorization": "Basic Z3Vlc3Q6Z3Vlc3Q=", "Origin": origin,
                "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, context=client_context(files),
                                        timeout=10) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as error:
            return error.code
    assert put(origin) == 201
    assert "from-the-console" in server.broker.vhosts
    assert put("https://evil.example") == 403
    assert put(f"http://localhost:{server.management_tls_port}") == 403
