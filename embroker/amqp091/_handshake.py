"""Opening a connection: what the server offers, login and tuning (section 2.2.4).

Pure functions over the handshake's methods; :class:`~embroker.amqp091._connection.ServerConnection`
keeps the state (which method it waits for) and sends the frames.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from ..errors import AccessRefused, CommandInvalid, NotAllowed
from ..kit import Client, PeerCertificate, login
from ..kit import LoginRefused as KitLoginRefused
from ._frames import FRAME_MIN_SIZE
from ._methods import ConnectionStart, ConnectionStartOk, ConnectionTuneOk

if TYPE_CHECKING:
    from ..model import Broker

# (PeerCertificate is the kit's, named here for the listener's sniffer)
__all__ = ["MECHANISMS", "SERVER_CAPABILITIES", "LoginRefused", "PeerCertificate", "Tuning",
           "authenticate", "start", "tune"]

#: The capabilities announced in connection.start (RabbitMQ 3.10's list).
SERVER_CAPABILITIES: Final = {
    "publisher_confirms": True,
    "exchange_exchange_bindings": True,
    "basic.nack": True,
    "consumer_cancel_notify": True,
    "connection.blocked": True,
    "consumer_priorities": True,
    "authentication_failure_close": True,
    "per_consumer_qos": True,
    "direct_reply_to": True,
}

#: The SASL mechanisms offered by default, in the order of connection.start (RabbitMQ's
#: ``auth_mechanisms``; a broker's own are ``Broker.auth_mechanisms``).
MECHANISMS: Final = ("PLAIN", "AMQPLAIN")
#: The mechanisms RabbitMQ 3.10 knows without plugins (an unknown one is told apart from one
#: known and not offered): rabbit_auth_mechanism_plain, _amqplain, _cr_demo.
_KNOWN: Final = frozenset({"PLAIN", "AMQPLAIN", "RABBIT-CR-DEMO"})


def mechanisms(broker: Broker, tls: PeerCertificate | None) -> tuple[str, ...]:
    """The mechanisms a client is offered (``Broker.offered_mechanisms``)."""
    return broker.offered_mechanisms(tls=tls is not None)


class Tuning(NamedTuple):
    """What connection.tune offers, or what tune-ok settled on."""

    channel_max: int
    frame_max: int
    heartbeat: int


def start(broker: Broker, tls: PeerCertificate | None = None) -> ConnectionStart:
    """The connection.start the server opens with: what the broker says of itself
    (``Broker(server_properties=..., as_rabbitmq=...)``), the capabilities and the
    mechanisms (:func:`mechanisms`)."""
    return ConnectionStart(
        version_major=0, version_minor=9,
        server_properties={**broker.server_properties,
                           "capabilities": dict(SERVER_CAPABILITIES)},
        mechanisms=" ".join(mechanisms(broker, tls)), locales="en_US")


def login_refused(mechanism: str) -> AccessRefused:
    """RabbitMQ's error for bad credentials (sent only to clients that announced the
    ``authentication_failure_close`` capability; the others see the socket close)."""
    return AccessRefused(f"Login was refused using authentication mechanism {mechanism}. "
                         "For details see the broker logfile.")


class LoginRefused(Exception):
    """A refused login: what the client is told (:attr:`error`, :func:`login_refused`'s) and
    what the log says (:attr:`reason`, RabbitMQ's ``auth_fail`` line: ``PLAIN login refused:
    user 'bob' - invalid credentials``; the name is the client's, escaped when logged)."""

    def __init__(self, mechanism: str, reason: str) -> None:
        super().__init__(f"{mechanism} login refused: {reason}")
        self.error = login_refused(mechanism)
        self.reason = f"{mechanism} login refused: {reason}"


def authenticate(broker: Broker, method: ConnectionStartOk, *, loopback: bool = False,
                 address: str = "", port: int = 0, tls: PeerCertificate | None = None) -> str:
    """Check the credentials of connection.start-ok (the kit's :func:`~embroker.kit.login`);
    returns the user name. The attempt counts in the broker's ``access.attempts``
    (``amqp091``) and is announced (``user.authentication.*``, as rabbit_reader's
    ``auth_phase``).

    Args:
        loopback: whether the client came over a loopback interface (``guest`` may only
            log in from there: the broker's ``loopback_users``).
        address, port: the client's address (``"127.0.0.1"``; ``""``: unknown) and port.
        tls: the connection's TLS session, if it came over TLS (EXTERNAL's certificate).

    Raises:
        CommandInvalid: (503) a mechanism unknown, or known and not offered (RabbitMQ's two
            texts, rabbit_reader:auth_mechanism_to_module/2).
        LoginRefused: its ``error`` a 403 (:func:`login_refused`), its ``reason`` the log's:
            a response the mechanism cannot read, unknown user, blank or wrong password, a
            loopback-only user from elsewhere; for EXTERNAL no certificate, or one whose name
            is no user.
    """
    mechanism = method.mechanism
    offered = mechanisms(broker, tls)
    if mechanism not in offered:
        known = _KNOWN | ({"EXTERNAL"} if "EXTERNAL" in broker.auth_mechanisms else set())
        if mechanism not in known:
            raise CommandInvalid(f"unknown authentication mechanism '{mechanism}'")
        raise CommandInvalid(f"invalid authentication mechanism '{mechanism}'")
    response = method.response if isinstance(method.response, bytes) else \
        str(method.response).encode("utf-8", "surrogateescape")
    # (the event's host is the client's, its port 0: what the listener does not say)
    client = Client("amqp091", "{0,9,1}", peer_host=address, peer_port=port, host=address,
                    loopback=loopback, tls=tls)
    try:
        return login(broker, mechanism, response, client)
    except KitLoginRefused as refused:
        # (RabbitMQ's reasons for a refusal go to its log; the client is told
        # login_refused's text)
        raise LoginRefused(mechanism, refused.reason) from None


def tune(offer: Tuning, method: ConnectionTuneOk, *, frame_min: int = FRAME_MIN_SIZE) -> Tuning:
    """What connection.tune-ok settles on, checked as RabbitMQ 3.10 checks it: a channel_max or
    frame_max of 0 ("no limit") is above what was offered, as is anything larger; a frame_max
    below ``frame_min`` (4096; RabbitMQ 4.1's is 8192) is too small.

    Raises:
        NotAllowed: (530) with RabbitMQ's reason. (RabbitMQ only logs it and closes the socket
            3 s later; embroker tells the client why.)
    """
    for name, value, allowed in (("channel_max", method.channel_max, offer.channel_max),
                                 ("frame_max", method.frame_max, offer.frame_max)):
        shown = f"{value} (no limit)" if value == 0 and name == "channel_max" else str(value)
        if allowed and (value == 0 or value > allowed):
            raise NotAllowed(f"failed to negotiate connection parameters: negotiated {name} = "
                             f"{shown} is higher than the maximum allowed value ({allowed})")
    if method.frame_max < frame_min:
        raise NotAllowed(f"failed to negotiate connection parameters: negotiated frame_max = "
                         f"{method.frame_max} is lower than the minimum allowed value "
                         f"({frame_min})")
    return Tuning(method.channel_max, method.frame_max, method.heartbeat)


def has_capability(client_properties: Mapping[str, Any], name: str) -> bool:
    """Whether a client announced ``name`` in its start-ok capabilities."""
    capabilities = client_properties.get("capabilities")
    return isinstance(capabilities, dict) and capabilities.get(name) is True
