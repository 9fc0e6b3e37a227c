"""Testing an application's TLS setup with pytest-embroker's TLS fixtures (docs/tls.md): a
broker with an amqps port, a throwaway certificate authority, and client certificates for
SASL EXTERNAL logins. Each client is set up as its own documentation says."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable

import pika
from pytest_embroker.plugin import ClientCertificate, TLSFiles

from embroker import Broker, Server
from embroker.testing import assert_published


def test_pika_publishes_over_amqps(amqps_server: Server, broker: Broker,
                                   tls_client_context: ssl.SSLContext) -> None:
    parameters = pika.ConnectionParameters(
        "localhost", amqps_server.tls_port,
        ssl_options=pika.SSLOptions(tls_client_context, "localhost"))
    with pika.BlockingConnection(parameters) as connection:
        connection.channel().basic_publish("", "orders", b"paid")
    assert_published(broker, routing_key="orders", body=b"paid")


def test_aio_pika_connects_with_the_url_and_its_ca(amqps_url: str, broker: Broker,
                                                   embroker_tls: TLSFiles) -> None:
    import aio_pika

    async def send() -> None:
        async with await aio_pika.connect(f"{amqps_url}?cafile={embroker_tls.cacertfile}") as c:
            channel = await c.channel()
            await channel.default_exchange.publish(aio_pika.Message(b"hi"), "greetings")

    asyncio.run(asyncio.wait_for(send(), 20))
    assert_published(broker, routing_key="greetings", body=b"hi")


def test_kombu_and_celery_use_broker_use_ssl(amqps_server: Server, broker: Broker,
                                             embroker_tls: TLSFiles) -> None:
    import kombu

    broker_use_ssl = {"ca_certs": embroker_tls.cacertfile, "cert_reqs": ssl.CERT_REQUIRED,
                      "server_hostname": "localhost"}  # (Celery: app.conf.broker_use_ssl)
    url = f"amqp://guest:guest@localhost:{amqps_server.tls_port}//"
    with kombu.Connection(url, ssl=broker_use_ssl) as connection:
        connection.SimpleQueue("tasks").put({"task": "charge"})
    assert_published(broker, routing_key="tasks", json={"task": "charge"})


def test_an_external_login_by_client_certificate(
        amqps_server: Server, broker: Broker, embroker_tls: TLSFiles,
        tls_client_certificate: Callable[[str], ClientCertificate]) -> None:
    broker.auth_mechanisms = ("PLAIN", "AMQPLAIN", "EXTERNAL")  # (RabbitMQ's auth_mechanisms)
    certificate = tls_client_certificate("billing")
    broker.add_user(certificate.user, "unused")  # (EXTERNAL asks for no password)
    broker.set_permissions(certificate.user, ".*", ".*", ".*")
    parameters = pika.ConnectionParameters(
        "localhost", amqps_server.tls_port,
        credentials=pika.credentials.ExternalCredentials(),
        ssl_options=pika.SSLOptions(certificate.context(embroker_tls), "localhost"))
    with pika.BlockingConnection(parameters):
        assert [c.user for c in amqps_server.connections] == [certificate.user]
