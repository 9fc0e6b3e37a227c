"""The RabbitMQ 4 profile over AMQP 1.0: what ``open`` says (rabbit_amqp_reader v4.1.4:
server_properties/0 and handle_connection_frame open), and the v1 addresses RabbitMQ 4 drops
when its ``amqp_address_v1`` deprecated feature is denied (rabbit_amqp_session:
address_v1_permitted/0)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from embroker import Broker

proton = pytest.importorskip("proton")
from proton import Message  # noqa: E402
from proton.utils import BlockingConnection, LinkDetached  # noqa: E402


def test_open_says_rabbitmq_4_with_its_node_and_link_pair_capability() -> None:
    broker = Broker(as_rabbitmq="4.1.x")
    with broker.serve() as server:
        c = BlockingConnection(server.amqp10_url, timeout=5, allowed_mechs="PLAIN")
        try:
            remote = c.conn
            properties = remote.remote_properties
            assert (properties["product"], properties["version"]) == ("RabbitMQ", "4.1.0")
            assert properties["node"] == "rabbit@embroker"  # the Java client needs it
            assert next(iter(properties)) == "node"
            assert remote.remote_container == properties["cluster_name"]
            assert set(remote.remote_offered_capabilities) == {"LINK_PAIR_V1_0",
                                                               "ANONYMOUS-RELAY"}
        finally:
            c.close()


def test_a_rabbitmq_3_profile_offers_no_link_pair() -> None:
    broker = Broker(as_rabbitmq="3.10.8")
    with broker.serve() as server:
        c = BlockingConnection(server.amqp10_url, timeout=5, allowed_mechs="PLAIN")
        try:
            assert list(c.conn.remote_offered_capabilities) == ["ANONYMOUS-RELAY"]
            assert "node" not in c.conn.remote_properties
        finally:
            c.close()


def test_v1_addresses_are_refused_when_amqp_address_v1_is_denied() -> None:
    broker = Broker(as_rabbitmq="4.1.x", deprecated_features={"amqp_address_v1": False})
    broker.connect().channel().queue_declare("q")
    with broker.serve() as server:
        c = BlockingConnection(server.amqp10_url, timeout=5, allowed_mechs="PLAIN")
        try:
            for address in ("/queue/q", "q", "/amq/queue/q", "/exchange/amq.fanout"):
                with pytest.raises(LinkDetached, match=r"amqp:invalid-field.*Attach rejected: "
                                                       r"\{amqp_address_v1_not_permitted,"):
                    c.create_sender(address, name=f"v1-{address}")
            with pytest.raises(LinkDetached, match="amqp_address_v1_not_permitted"):
                c.create_receiver("/queue/q", name="v1-receiver")
            c.create_sender("/queues/q", name="v2").send(Message(body="v2 still works"))
            assert broker.queues["q"].message_count == 1
        finally:
            c.close()


def test_v1_addresses_stay_with_rabbitmq_4_by_default() -> None:
    """amqp_address_v1 is permitted by default in RabbitMQ 4.0 to 4.2."""
    broker = Broker(as_rabbitmq="4.2.x")
    with broker.serve() as server:
        c = BlockingConnection(server.amqp10_url, timeout=5, allowed_mechs="PLAIN")
        try:
            c.create_sender("/queue/declared").send(Message(body="v1"))
            assert broker.queues["declared"].message_count == 1
        finally:
            c.close()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"as_rabbitmq": "4.1.x", "deprecated_features": {"nope": False}},
     "unknown deprecated feature 'nope'"),
    ({"as_rabbitmq": "3.10.8", "deprecated_features": {"global_qos": False}},
     "deprecated features are RabbitMQ 4's"),
    ({"as_rabbitmq": "4.1.x", "deprecated_features": {"classic_queue_mirroring": True}},
     "was removed in RabbitMQ 4"),
    ({"as_rabbitmq": "four"}, "is not a RabbitMQ version"),
])
def test_profile_arguments_are_checked(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Broker(**kwargs)


def test_serve_denies_deprecated_features_on_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "embroker", "serve", "--port", "0", "--as-rabbitmq", "4.1.x",
         "--deny-deprecated-feature", "nope"], capture_output=True, text=True, timeout=60,
        check=False)
    assert done.returncode == 2
    assert "unknown deprecated feature 'nope'" in done.stderr


def test_a_dead_lettered_message_carries_its_history_as_x_opt_deaths() -> None:
    """v4.1.4 mc_amqp:protocol_state_message_annotations/2 and encode_deaths/1: x-opt-deaths
    (an array of maps, newest first; queue and exchange utf8, reason a symbol, count a ulong,
    first-time and last-time timestamps, ttl a uint first when the message had one),
    x-first-death-* and x-last-death-* annotations; first-acquirer false
    (update_header_from_anns/2); the x-death header itself is internal (mc_amqpl:
    is_internal_header/1)."""
    broker = Broker(as_rabbitmq="4.1.x")
    ch = broker.connect().channel()
    ch.queue_declare("dead")
    ch.queue_declare("work", arguments={"x-dead-letter-exchange": "",
                                        "x-dead-letter-routing-key": "dead"})
    ch.basic_publish("", "work", b"m", {"expiration": "60000"})
    delivery = ch.basic_get("work")
    assert delivery is not None
    ch.basic_reject(delivery.delivery_tag, requeue=False)
    with broker.serve() as server:
        c = BlockingConnection(server.amqp10_url, timeout=5, allowed_mechs="PLAIN")
        try:
            message = c.create_receiver("/queues/dead").receive(timeout=5)
        finally:
            c.close()
    annotations = message.annotations
    assert annotations is not None
    assert "x-death" not in annotations
    (death,) = annotations["x-opt-deaths"]
    assert list(death) == ["ttl", "queue", "reason", "count", "first-time", "last-time",
                           "exchange", "routing-keys"]
    assert (death["ttl"], death["queue"], death["reason"], death["count"], death["exchange"],
            list(death["routing-keys"])) == (60000, "work", "rejected", 1, "", ["work"])
    assert type(death["reason"]).__name__ == "symbol"
    assert type(death["count"]).__name__ == "ulong"
    assert type(death["ttl"]).__name__ == "uint"
    assert death["first-time"] == death["last-time"]
    assert (annotations["x-first-death-queue"], annotations["x-last-death-reason"]) == (
        "work", "rejected")
    assert message.first_acquirer is False


@pytest.mark.parametrize(("as_rabbitmq", "frames"),
                         [("4.1.x", []), ("3.10.8", ["Open", "Close"])])
def test_an_open_for_a_missing_vhost_is_answered_as_each_version_does(as_rabbitmq: str,
                                                                      frames: list[str]) -> None:
    """RabbitMQ 4 checks the vhost before it answers the open and closes the socket without a
    frame (rabbit_amqp_reader v4.1.4, check_vhost_exists: a handshake error); RabbitMQ 3.10's
    plugin answers the open and then closes with an error (rabbit_amqp1_0_reader v3.10.8)."""
    from embroker.amqp10 import ServerConnection

    from .helpers import Client

    client = Client(ServerConnection(Broker(as_rabbitmq=as_rabbitmq), loopback=True))
    replies = client.open(hostname="vhost:nope")
    assert [type(r.performative).__name__ for r in replies if not isinstance(r, bytes)
            and not type(r.performative).__name__.startswith("Sasl")] == frames
    assert client.connection.should_close == (not frames)  # 3.10 waits for the close back
