"""Opening a connection: what the server offers, login and tuning (section 2.2.4).

Pure functions over the handshake's methods; :class:`~embroker.amqp091._connection.ServerConnection`
keeps the state (which method it waits for) and sends the frames.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from ..errors import AccessRefused, AMQPError, CommandInvalid, NotAllowed
from ..model._access import login_refusal
from ._fields import decode_table
from ._frames import FRAME_MIN_SIZE
from ._methods import ConnectionStart, ConnectionStartOk, ConnectionTuneOk

if TYPE_CHECKING:
    from ..model import Broker

__all__ = ["MECHANISMS", "SERVER_CAPABILITIES", "LoginRefused", "Tuning", "authenticate",
           "external_check", "start", "tune"]

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


class PeerCertificate(Protocol):
    """What the handshake asks of a TLS connection (the listener's ``TLSSocket``)."""

    def peer_certificate(self) -> dict[str, Any] | None: ...


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


def parse_credentials(mechanism: str, response: bytes) -> tuple[str, str] | None:
    """The user name and password of a PLAIN (``\\0user\\0password``) or AMQPLAIN (a field
    table with ``LOGIN`` and ``PASSWORD``) response; ``None`` when malformed."""
    if mechanism == "PLAIN":
        parts = response.split(b"\x00")
        if len(parts) != 3:
            return None
        return parts[1].decode("utf-8", "replace"), parts[2].decode("utf-8", "replace")
    if mechanism == "AMQPLAIN":
        try:
            table = decode_table(len(response).to_bytes(4, "big") + response)
        except AMQPError:
            return None
        login, password = table.get("LOGIN"), table.get("PASSWORD")
        if isinstance(login, str) and isinstance(password, str):
            return login, password
    return None


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
                 address: str = "", tls: PeerCertificate | None = None) -> str:
    """Check the credentials of connection.start-ok; returns the user name. The attempt
    counts in the broker's ``access.attempts`` (``amqp091``).

    Args:
        loopback: whether the client came over a loopback interface (``guest`` may only
            log in from there: the broker's ``loopback_users``).
        address: the client's address (``"127.0.0.1"``; ``""``: unknown).
        tls: the connection's TLS session, if it came over TLS (EXTERNAL's certificate).

    Raises:
        CommandInvalid: (503) a mechanism unknown, or known and not offered (RabbitMQ's two
            texts, rabbit_reader:auth_mechanism_to_module/2).
        LoginRefused: its ``error`` a 403 (:func:`login_refused`), its ``reason`` the log's:
            unknown user, blank or wrong password, a loopback-only user from elsewhere; for
            EXTERNAL no certificate, or one whose name is no user.
    """
    mechanism = method.mechanism
    offered = mechanisms(broker, tls)
    if mechanism not in offered:
        known = _KNOWN | ({"EXTERNAL"} if "EXTERNAL" in broker.auth_mechanisms else set())
        if mechanism not in known:
            raise CommandInvalid(f"unknown authentication mechanism '{mechanism}'")
        raise CommandInvalid(f"invalid authentication mechanism '{mechanism}'")
    if mechanism == "EXTERNAL":
        return _external(broker, tls, loopback=loopback, address=address)
    response = method.response if isinstance(method.response, bytes) else \
        str(method.response).encode("utf-8", "surrogateescape")
    credentials = parse_credentials(mechanism, response)
    if credentials is None:  # (RabbitMQ counts a response it cannot read, without a user)
        broker.access.attempts.record("amqp091", False, address=address)
        raise LoginRefused(mechanism, "response invalid")
    name, password = credentials
    refused = broker.access.check_login(name, password, loopback=loopback,
                                        protocol="amqp091", address=address)
    if refused is not None:
        raise LoginRefused(mechanism, login_refusal(refused, name, password))
    return name


def _external(broker: Broker, tls: PeerCertificate | None, *, loopback: bool,
              address: str) -> str:
    # (RabbitMQ's reasons for a refusal go to its log; the client is told login_refused's
    # text, as for PLAIN)
    name, refused = external_check(broker, tls, loopback=loopback, protocol="amqp091",
                                   address=address)
    if refused is not None:
        raise LoginRefused("EXTERNAL", refused)
    return name


def external_login(broker: Broker, tls: PeerCertificate | None, *, loopback: bool,
                   protocol: str, address: str = "") -> str | None:
    """SASL EXTERNAL over a connection's TLS session: the user its client certificate logs in
    as, or ``None`` (``AccessControl.login_external``, ``Broker.ssl_cert_login_from``)."""
    name, refused = external_check(broker, tls, loopback=loopback, protocol=protocol,
                                   address=address)
    return name if refused is None else None


def external_check(broker: Broker, tls: PeerCertificate | None, *, loopback: bool,
                   protocol: str, address: str = "") -> tuple[str, str | None]:
    """:func:`external_login` with the reason of a refusal: the name the certificate gives,
    and why it may not log in in RabbitMQ's words (``user 'CN=x' - invalid credentials``,
    ``connection peer presented no TLS (x.509) certificate``: rabbit_auth_mechanism_ssl,
    :func:`~embroker.model._access.login_refusal`), or ``None``: it may."""
    certificate = tls.peer_certificate() if tls is not None else None
    name, refused = broker.access.check_external(
        certificate, broker.ssl_cert_login_from, loopback=loopback, protocol=protocol,
        address=address)
    return name, None if refused is None else login_refusal(refused, name)


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
