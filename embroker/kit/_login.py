"""Login, shared by every protocol (RabbitMQ 3.10.8's ``rabbit_access_control`` as each reader
and ``rabbit_direct`` call it).

Theory of operation
-------------------
A protocol hands :func:`login` the mechanism its client chose and the mechanism's response
(0-9-1's start-ok, 1.0's sasl-init, the stream protocol's SaslAuthenticate), with a
:class:`Client` saying who is asking (where from, over TLS or not, which protocol counts the
attempt and what the event calls it). The response is decoded once, by the mechanism's rule
(:func:`decode_plain`, :func:`decode_amqplain`); the user is checked through the model's one
login entry (:class:`~embroker.model._access.AccessControl`: ``check_login``,
``check_external``, ``login_anonymous``), which counts the attempt; and RabbitMQ's
``user.authentication.success`` / ``.failure`` event is emitted as the reader that would have
served the client emits it. The answer is the user name, or :class:`LoginRefused`, which carries
why (:attr:`LoginRefused.why`) and RabbitMQ's words for the log; each protocol words the refusal
for its client itself (0-9-1's 403, 1.0's sasl-outcome, the stream protocol's response codes).

STOMP's and MQTT's CONNECT carry a user and a password, not a SASL response:
:func:`login_password` is the same login for them. :func:`direct_login` is RabbitMQ's
``rabbit_direct:connect`` event, which 3.10's AMQP 1.0 plugin causes once per session.

No access question is decided here: a user, a password, a certificate and a loopback rule are
the model's to judge.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, final

from ..model._access import certificate_login, login_refusal

if TYPE_CHECKING:
    from ..model import Broker

__all__ = [
    "Client",
    "DirectRefused",
    "LoginRefused",
    "PeerCertificate",
    "certificate_name",
    "decode_amqplain",
    "decode_plain",
    "direct_connect",
    "direct_login",
    "external_check",
    "login",
    "login_anonymous",
    "login_password",
]


class PeerCertificate(Protocol):
    """What a login asks of a TLS connection (the listener's ``TLSSocket``)."""

    def peer_certificate(self) -> dict[str, Any] | None: ...


@final
@dataclass(frozen=True)
class Client:
    """Who is logging in, as the attempt is counted and the event tells of it.

    Attributes:
        protocol: the name the attempt counts under in ``broker.access.attempts``
            (``amqp091``, ``amqp10``, ``stream``, ``stomp``, ``mqtt``).
        event_protocol: the event's ``protocol`` field (``{0,9,1}``, ``stream``: each reader's
            ``i(protocol)``); ``None``: this login emits no event (RabbitMQ 3.10's AMQP 1.0
            SASL, rabbit_amqp1_0_reader:auth_phase_1_0/2, emits none).
        peer_host, peer_port: the client's address (``""``/``0``: unknown; the attempt is
            then counted without a source address, as 1.0's are).
        host, port: the address it connected to, as the event's ``host`` and
            ``connection_name`` give it.
        loopback: whether it came over a loopback interface (``loopback_users``).
        tls: its TLS session when it came over TLS (EXTERNAL's certificate; the event's
            ``ssl``).
        loopback_event: whether refusing a loopback-only user from elsewhere is announced
            (rabbit_reader's ``auth_phase`` does; rabbit_stream_reader, v3.10.8, only counts
            it).
    """

    protocol: str
    event_protocol: str | None = None
    peer_host: str = ""
    peer_port: int = 0
    host: str = ""
    port: int = 0
    loopback: bool = False
    tls: PeerCertificate | None = None
    loopback_event: bool = True


@final
class LoginRefused(Exception):
    """A refused login.

    Attributes:
        mechanism: the mechanism tried (``PLAIN``...).
        why: the model's reason (``"credentials"``, ``"loopback"``, ``"no certificate"``,
            ``"no name"``), ``"invalid"`` (a response its mechanism cannot read) or
            ``"anonymous"`` (ANONYMOUS switched off or refused).
        user: the name it tried (``""``: none known).
        reason: RabbitMQ's words for its log (``user 'bob' - invalid credentials``,
            ``response invalid``); ``str()`` of the exception is ``"<mechanism> login
            refused: <reason>"``, as rabbit_reader's ``auth_fail`` words it. The name is the
            client's: a log line escapes it.
    """

    def __init__(self, mechanism: str, why: str, reason: str, user: str = "") -> None:
        super().__init__(f"{mechanism} login refused: {reason}")
        self.mechanism = mechanism
        self.why = why
        self.reason = reason
        self.user = user


# -- decoding the responses ----------------------------------------------------------------------

def decode_plain(response: bytes) -> tuple[bytes, bytes] | None:
    """The user and password of a SASL PLAIN response, or ``None``: it is not one.

    RabbitMQ 3.10.8's rule (rabbit_auth_mechanism_plain:extract_user_pass/1): a NUL, the user,
    a NUL, the password, nothing after it; so no authorization identity (RFC 4616's
    ``authzid``) is taken, no third NUL, and either field may be empty (a blank password is
    then refused by the model). No character set is asked of the bytes here.

    >>> decode_plain(b"\\x00guest\\x00guest"), decode_plain(b"admin\\x00guest\\x00guest")
    ((b'guest', b'guest'), None)
    """
    if not response.startswith(b"\x00"):
        return None
    parts = response[1:].split(b"\x00")
    if len(parts) != 2:
        return None
    return parts[0], parts[1]


#: The size of each fixed-width field value (rabbit_binary_parser's types, v3.10.8).
_WIDTHS: Final = {ord("t"): 1, ord("b"): 1, ord("B"): 1, ord("s"): 2, ord("U"): 2,
                  ord("u"): 2, ord("I"): 4, ord("i"): 4, ord("f"): 4, ord("l"): 8,
                  ord("L"): 8, ord("d"): 8, ord("T"): 8, ord("D"): 5, ord("V"): 0}
#: How deep tables and arrays may nest in a response (the 0-9-1 codec's bound).
_MAX_NESTING: Final = 100


class _Malformed(Exception):
    pass


def _skip_values(data: bytes, start: int, end: int, depth: int, *, table: bool,
                 found: dict[str, tuple[int, bytes]] | None = None) -> None:
    # Walks a table's entries (or an array's values) from start to end, checking each is
    # whole; at the top level, keeps the first LOGIN and PASSWORD with their type letters.
    if depth > _MAX_NESTING:
        raise _Malformed
    o = start
    while o < end:
        key = b""
        if table:
            k = o + 1 + data[o]
            if k >= end:
                raise _Malformed
            key, o = data[o + 1:k], k
        kind = data[o]
        o += 1
        if kind in _WIDTHS:
            value_end = o + _WIDTHS[kind]
            value_start = o
        elif kind in (ord("S"), ord("x"), ord("F"), ord("A")):
            if o + 4 > end:
                raise _Malformed
            (size,) = struct.unpack_from(">I", data, o)
            value_start, value_end = o + 4, o + 4 + size
            if value_end <= end and kind in (ord("F"), ord("A")):
                _skip_values(data, value_start, value_end, depth + 1, table=kind == ord("F"))
        else:
            raise _Malformed
        if value_end > end:
            raise _Malformed
        if found is not None and key in (b"LOGIN", b"PASSWORD"):
            found.setdefault(key.decode(), (kind, data[value_start:value_end]))
        o = value_end


def decode_amqplain(response: bytes) -> tuple[bytes, bytes] | None:
    """The user and password of an AMQPLAIN response (a 0-9-1 field table's entries, without
    its length), or ``None``: malformed, or no ``LOGIN`` or ``PASSWORD`` long string.

    RabbitMQ 3.10.8's rule (rabbit_auth_mechanism_amqplain:handle_response/2): the first
    ``LOGIN`` and the first ``PASSWORD`` entry count (a repeated one is ignored); they must be
    long strings (``S``). (RabbitMQ's guard asks a string of either one, not both, and a table
    it cannot parse ends its reader; both are refused here as a response it cannot read.)

    >>> decode_amqplain(b"\\x05LOGINS\\x00\\x00\\x00\\x01u\\x08PASSWORDS\\x00\\x00\\x00\\x01p")
    (b'u', b'p')
    """
    found: dict[str, tuple[int, bytes]] = {}
    try:
        _skip_values(response, 0, len(response), 0, table=True, found=found)
    except (_Malformed, IndexError, struct.error):
        return None
    login_, password = found.get("LOGIN"), found.get("PASSWORD")
    if login_ is None or password is None or login_[0] != ord("S") or password[0] != ord("S"):
        return None
    return login_[1], password[1]


_DECODERS: Final[dict[str, Callable[[bytes], tuple[bytes, bytes] | None]]] = {
    "PLAIN": decode_plain, "AMQPLAIN": decode_amqplain}


def _erlang_binary(data: bytes) -> str:
    # How Erlang's ~p shows a binary on one line: <<"text">> when printable, else its bytes.
    if data and all(32 <= b < 127 for b in data):
        return '<<"' + data.decode("ascii").replace("\\", "\\\\").replace('"', '\\"') + '">>'
    return "<<" + ",".join(str(b) for b in data) + ">>"


# -- the login -----------------------------------------------------------------------------------

def login(broker: Broker, mechanism: str, response: bytes, client: Client) -> str:
    """Log ``client`` in with ``mechanism`` (one the protocol offered it) and its
    ``response``; returns the user name. The attempt counts in ``broker.access.attempts``
    under ``client.protocol`` and the event is emitted (when ``client.event_protocol``).

    Mechanisms: ``PLAIN`` and ``AMQPLAIN`` (:func:`decode_plain`, :func:`decode_amqplain`,
    then the user and password), ``EXTERNAL`` (the TLS client certificate's name:
    :func:`external_check`; the response is not read), ``ANONYMOUS`` (:func:`login_anonymous`).

    Raises:
        LoginRefused: any refusal (``why`` ``"invalid"`` for a response the mechanism cannot
            read, or an unknown mechanism; the model's reason otherwise).
    """
    if mechanism == "EXTERNAL":
        name, refused = broker.access.check_external(
            _certificate(client), broker.ssl_cert_login_from, loopback=client.loopback,
            protocol=client.protocol, address=client.peer_host)
        if refused is None:
            _announce(broker, client, mechanism, name)
            return name
        raise _refuse(broker, client, mechanism, name, refused, login_refusal(refused, name))
    if mechanism == "ANONYMOUS":
        return login_anonymous(broker, client)
    decoder = _DECODERS.get(mechanism)
    credentials = decoder(response) if decoder is not None else None
    if credentials is None:
        # (RabbitMQ counts a response it cannot read without a user, and its event names
        # none; a table it cannot parse ends its reader before any event)
        broker.access.attempts.record(client.protocol, False, address=client.peer_host)
        if mechanism == "PLAIN":
            error = f"response {_erlang_binary(response)} invalid"
        elif mechanism == "AMQPLAIN" and _parses(response):
            error = "AMQPLAIN auth info is missing LOGIN or PASSWORD field"
        else:
            error = None
        if error is not None:
            _announce(broker, client, mechanism, "", error=error)
        raise LoginRefused(mechanism, "invalid", "response invalid")
    user, password = credentials
    return _check(broker, client, mechanism, user, password)


def login_password(broker: Broker, user: str, password: str, client: Client,
                   *, mechanism: str = "PLAIN") -> str:
    """A user and password login (STOMP's and MQTT's CONNECT): :func:`login` without a SASL
    response to decode. ``mechanism`` is what the event and a refusal name."""
    return _check(broker, client, mechanism, user.encode("utf-8", "surrogateescape"),
                  password.encode("utf-8", "surrogateescape"))


def _check(broker: Broker, client: Client, mechanism: str, user_bytes: bytes,
           password_bytes: bytes) -> str:
    try:
        user, password = user_bytes.decode("utf-8"), password_bytes.decode("utf-8")
    except UnicodeDecodeError:
        # No user's name or password is other than UTF-8: refused as wrong credentials,
        # named as the client sent it (what cannot be read replaced).
        user = user_bytes.decode("utf-8", "replace")
        broker.access.attempts.record(client.protocol, False, address=client.peer_host,
                                      user=user)
        refused: str | None = "credentials"
        password = "?"
    else:
        refused = broker.access.check_login(user, password, loopback=client.loopback,
                                            protocol=client.protocol, address=client.peer_host)
    if refused is None:
        _announce(broker, client, mechanism, user)
        return user
    raise _refuse(broker, client, mechanism, user, refused,
                  login_refusal(refused, user, password))


def login_anonymous(broker: Broker, client: Client) -> str:
    """SASL ANONYMOUS, which only AMQP 1.0 offers (when ``broker.access.anonymous`` is set):
    3.10's plugin logs in as its ``default_user`` without a password, RabbitMQ 4 with
    ``anonymous_login_user``/``_pass`` (``AccessControl.login_anonymous``, which counts it).

    Raises:
        LoginRefused: ``why`` ``"anonymous"``.
    """
    user = broker.access.login_anonymous(loopback=client.loopback,
                                         rabbitmq4=broker.profile.rabbitmq4)
    if user is None:
        raise LoginRefused("ANONYMOUS", "anonymous", "anonymous login refused")
    _announce(broker, client, "ANONYMOUS", user)
    return user


def external_check(broker: Broker, tls: PeerCertificate | None, *, loopback: bool,
                   protocol: str, address: str = "") -> tuple[str, str | None]:
    """SASL EXTERNAL's decision without an event: the name the TLS client certificate gives
    and why it may not log in in RabbitMQ's words (``user 'CN=x' - invalid credentials``,
    ``connection peer presented no TLS (x.509) certificate``: rabbit_auth_mechanism_ssl), or
    ``None``: it may. Counted as :func:`login` counts it."""
    certificate = tls.peer_certificate() if tls is not None else None
    name, refused = broker.access.check_external(
        certificate, broker.ssl_cert_login_from, loopback=loopback, protocol=protocol,
        address=address)
    return name, None if refused is None else login_refusal(refused, name)


def certificate_name(broker: Broker, tls: PeerCertificate | None) -> str | None:
    """The user name a TLS client certificate gives (``rabbit_ssl:peer_cert_auth_name/1``, by
    the broker's ``ssl_cert_login_from``), or ``None``: no certificate, or no name in it.
    Neither counted nor announced: the login that follows is (STOMP's and MQTT's
    ``ssl_cert_login``)."""
    certificate = tls.peer_certificate() if tls is not None else None
    if certificate is None:
        return None
    return certificate_login(certificate, broker.ssl_cert_login_from) or None


def direct_login(broker: Broker, user: str) -> None:
    """The success event of an internal (direct) connection's login as ``user``:
    ``rabbit_direct:connect/5``'s, with only ``name`` and ``connection_type: direct``. RabbitMQ
    3.10's AMQP 1.0 plugin opens one such connection per session it begins (checked against
    RabbitMQ 3.10: a 1.0 client's SASL login emits nothing, each session one of these)."""
    events = broker.plugins.events
    if events is not None:
        events.authentication(user, {"connection_type": "direct"})


def check_password(broker: Broker, user: str, password: str) -> str | None:
    """Why ``user`` may not log in with ``password`` on the node itself (``"credentials"``,
    ``"loopback"``), or ``None``: it may. RabbitMQ's ``check_user_pass_login`` as its own tools
    and plugins ask it, from the node (loopback), neither counted as a client's attempt nor
    announced: ``rabbitmqctl authenticate_user`` and the tracing plugin's consumer
    (``rabbit_tracing_consumer``, which connects as its configured user)."""
    return broker.access.check_login(user, password, loopback=True)


def _certificate(client: Client) -> dict[str, Any] | None:
    return client.tls.peer_certificate() if client.tls is not None else None


def _parses(response: bytes) -> bool:
    try:
        _skip_values(response, 0, len(response), 0, table=True)
    except (_Malformed, IndexError, struct.error):
        return False
    return True


def _refuse(broker: Broker, client: Client, mechanism: str, user: str, why: str,
            reason: str) -> LoginRefused:
    # The refusal, announced (but a loopback-only user's where the reader does not).
    if why != "loopback" or client.loopback_event:
        _announce(broker, client, mechanism, user, error=reason)
    return LoginRefused(mechanism, why, reason, user)


def _announce(broker: Broker, client: Client, mechanism: str, user: str, *,
              error: str | None = None) -> None:
    # The reader's notify_auth_result: a network login's event (none when the protocol's
    # reader emits none, or nothing listens).
    events = broker.plugins.events
    if events is None or client.event_protocol is None:
        return
    events.authentication(user, {
        "peer_host": client.peer_host, "peer_port": client.peer_port, "host": client.host,
        "port": client.port, "mechanism": mechanism, "protocol": client.event_protocol,
        "ssl": client.tls is not None}, failed=error is not None, error=error)


# -- direct connections: STOMP's and MQTT's ------------------------------------------------------

@final
class DirectRefused(Exception):
    """A direct connection refused (:func:`direct_connect`).

    Attributes:
        why: ``"vhost"`` (no such virtual host) or ``"vhost limit"`` (its connection limit
            is reached): checked before any login, as ``rabbit_direct:connect/5`` checks
            them; ``"credentials"``
            (the login failed), ``"loopback"`` (a loopback-only user from elsewhere),
            ``"access"`` (no access to the virtual host, or the user's connection limit).
        user: the name it tried.
        reason: RabbitMQ's words for its log.
    """

    def __init__(self, why: str, user: str, reason: str) -> None:
        super().__init__(reason)
        self.why = why
        self.user = user
        self.reason = reason


def direct_connect(broker: Broker, vhost: str, client: Client, *, user: str,
                   password: str | None, kind: Any, client_properties: dict[str, Any],
                   name: str | None = None, details: dict[str, Any] | None = None,
                   topic_variables: dict[str, str] | None = None, node: Any = None) -> Any:
    """Open a model connection for a protocol that logs in as RabbitMQ 3.10's STOMP and MQTT
    plugins do, through a direct connection (``amqp_connection:start`` with
    ``#amqp_params_direct{}``, then ``rabbit_access_control:check_user_loopback/2``). The order
    is ``rabbit_direct:connect/5``'s, and it shows in what a client is told:

    1. the virtual host must exist and be under its ``max-connections``, whoever asks (so a
       wrong password to a missing virtual host is refused for the virtual host);
    2. the login, counted under ``client.protocol`` and announced as ``rabbit_direct``
       announces it (``connection_type: direct`` and the name, the failure's reason);
       ``password`` ``None``: the user's name came from its TLS certificate, and only its
       existence is asked (RabbitMQ's ``check_user_login`` with no credentials);
    3. the connection (``Broker.open_connection``: access to the virtual host, the user's
       ``max-connections``);
    4. a loopback-only user from elsewhere is refused last.

    Returns:
        The model connection (``kind``, ``client_properties``, ``name``, ``details``,
        ``topic_variables`` and ``node``, the node its client reached, are
        :meth:`Broker.open_connection`'s).

    Raises:
        DirectRefused: any refusal; ``why`` says which step.
    """
    from ..errors import NotAllowed

    try:
        host = broker.vhost(vhost)
    except NotAllowed as refused:
        raise DirectRefused("vhost", user, refused.text) from None
    try:
        host.policies.check_connection_limit(user)
    except NotAllowed as refused:
        raise DirectRefused("vhost limit", user, refused.text) from None
    if password is None:
        refused_why = None if user in broker.access.users else "credentials"
        broker.access.attempts.record(client.protocol, refused_why is None,
                                      address=client.peer_host, user=user)
    else:
        refused_why = broker.access.check_login(user, password, loopback=True,
                                                protocol=client.protocol,
                                                address=client.peer_host)
    if refused_why is not None:
        reason = login_refusal(refused_why, user, password)
        _announce_direct(broker, user, error=reason)
        raise DirectRefused("credentials", user, reason)
    _announce_direct(broker, user)
    try:
        connection = broker.open_connection(vhost, user=user, client_properties=client_properties,
                                            name=name, details=details, kind=kind,
                                            topic_variables=topic_variables, node=node)
    except NotAllowed as refused:
        raise DirectRefused("access", user, refused.text) from None
    if not broker.access.allowed_from(user, loopback=client.loopback):
        connection.close()
        raise DirectRefused("loopback", user, login_refusal("loopback", user))
    return connection


def _announce_direct(broker: Broker, user: str, *, error: str | None = None) -> None:
    # rabbit_direct:notify_auth_result/3: the name and connection_type direct (and the reason).
    events = broker.plugins.events
    if events is not None:
        events.authentication(user, {"connection_type": "direct"}, failed=error is not None,
                              error=error)
