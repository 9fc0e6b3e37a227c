"""What an AMQP 1.0 login announces, as RabbitMQ 3.10 does (checked against it with
python-qpid-proton): its SASL login emits no ``user.authentication.*`` event
(rabbit_amqp1_0_reader:auth_phase_1_0/2, v3.10.8); each session it begins opens a direct
connection, whose login emits ``user.authentication.success`` with the name alone
(rabbit_amqp1_0_session_process:init/1 -> rabbit_direct:connect/5)."""

from __future__ import annotations

from embroker.amqp10 import ServerConnection
from embroker.amqp10_common._definitions import SaslInit, SaslOutcome
from embroker.amqp10_common._frames import FRAME_SASL, SASL_HEADER, encode_frame
from embroker.amqp10_common._types import Symbol

from ..auth_events import authentication_events as seen
from ..auth_events import watch_authentication as watch
from .helpers import Client


def test_each_session_of_a_1_0_connection_emits_a_direct_login_event() -> None:
    broker, ch, q = watch()
    client = Client(ServerConnection(broker, loopback=True))
    client.open()
    assert seen(ch, q) == []  # the SASL login itself announces nothing
    client.begin(0)
    client.begin(1)
    assert seen(ch, q) == [("user.authentication.success",
                            {"name": "guest", "connection_type": "direct"})] * 2


def test_a_refused_1_0_login_emits_no_event_and_is_counted() -> None:
    broker, ch, q = watch()
    client = Client(ServerConnection(broker, loopback=True))
    client.send(SASL_HEADER)
    client.send(encode_frame(0, SaslInit(Symbol("PLAIN"), b"\0guest\0nope"), kind=FRAME_SASL))
    assert client.received()[-1].performative == SaslOutcome(code=1)
    assert seen(ch, q) == []
    assert broker.access.attempts.by_protocol()[0]["auth_attempts_failed"] == 1
