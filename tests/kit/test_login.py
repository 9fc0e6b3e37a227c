"""The adapter kit's login (embroker.kit._login): each mechanism's response decoded by RabbitMQ
3.10.8's rule, the model's check, the attempt counted and the event emitted."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from embroker import Broker
from embroker.kit import (
    Client,
    LoginRefused,
    decode_amqplain,
    decode_plain,
    direct_login,
    login,
    login_anonymous,
    login_password,
)

from ..auth_events import authentication_events as events
from ..auth_events import watch_authentication as events_broker

LOCAL = Client("amqp091", "{0,9,1}", peer_host="127.0.0.1", peer_port=5000,
               host="127.0.0.1", loopback=True)




def error_text(headers: dict[str, Any]) -> str:
    return "".join(map(chr, headers["error"]))


def amqplain(*entries: tuple[bytes, bytes, bytes]) -> bytes:
    out = b""
    for key, kind, value in entries:
        out += bytes([len(key)]) + key + kind
        out += struct.pack(">I", len(value)) + value if kind in (b"S", b"x") else value
    return out


# -- decoding ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("response", "expected"), [
    (b"\0guest\0guest", (b"guest", b"guest")),
    (b"\0\0", (b"", b"")),
    (b"\0user\0", (b"user", b"")),
    (b"authz\0guest\0guest", None),  # no authzid: the response opens with a NUL
    (b"\0guest\0guest\0", None),  # a third NUL
    (b"\0guest", None),
    (b"", None),
    (b"guest", None),
])
def test_plain_is_decoded_as_rabbitmq_3_10_8_decodes_it(response: bytes,
                                                         expected: object) -> None:
    """rabbit_auth_mechanism_plain:extract_user_pass/1, v3.10.8."""
    assert decode_plain(response) == expected


def test_amqplain_takes_the_first_login_and_password_long_strings() -> None:
    """rabbit_auth_mechanism_amqplain:handle_response/2 (lists:keysearch: the first entry)."""
    response = amqplain((b"LOGIN", b"S", b"u"), (b"X", b"I", b"\0\0\0\1"),
                        (b"PASSWORD", b"S", b"p"), (b"LOGIN", b"S", b"other"))
    assert decode_amqplain(response) == (b"u", b"p")


@pytest.mark.parametrize("response", [
    amqplain((b"LOGIN", b"S", b"u")),  # no PASSWORD
    amqplain((b"LOGIN", b"x", b"u"), (b"PASSWORD", b"x", b"p")),  # not long strings
    amqplain((b"LOGIN", b"S", b"u"), (b"PASSWORD", b"S", b"p"))[:-1],  # truncated
    b"\x05LOGINZ",  # an unknown type
    b"\x09",  # a key running past the end
])
def test_amqplain_without_both_long_strings_is_not_read(response: bytes) -> None:
    assert decode_amqplain(response) is None


# -- each mechanism ------------------------------------------------------------------------------

def test_plain_logs_in_counts_and_announces_success() -> None:
    broker, ch, q = events_broker()
    assert login(broker, "PLAIN", b"\0guest\0guest", LOCAL) == "guest"
    assert broker.access.attempts.by_protocol() == [
        {"protocol": "amqp091", "auth_attempts": 1, "auth_attempts_failed": 0,
         "auth_attempts_succeeded": 1}]
    ((key, headers),) = events(ch, q)
    assert key == "user.authentication.success"
    assert headers == {
        "ssl": False, "auth_mechanism": "PLAIN", "protocol": "{0,9,1}", "peer_port": 5000,
        "peer_host": "{127,0,0,1}", "connection_name": "127.0.0.1:5000 -> 127.0.0.1:0",
        "host": "{127,0,0,1}", "name": "guest", "connection_type": "network"}


def test_a_wrong_password_is_refused_counted_and_announced_with_rabbitmqs_reason() -> None:
    broker, ch, q = events_broker()
    with pytest.raises(LoginRefused) as refused:
        login(broker, "PLAIN", b"\0guest\0nope", LOCAL)
    assert (refused.value.why, refused.value.user) == ("credentials", "guest")
    assert str(refused.value) == "PLAIN login refused: user 'guest' - invalid credentials"
    assert broker.access.attempts.by_protocol()[0]["auth_attempts_failed"] == 1
    ((key, headers),) = events(ch, q)
    assert key == "user.authentication.failure"
    assert error_text(headers) == "user 'guest' - invalid credentials"
    assert next(iter(headers)) == "error"
    assert headers["name"] == "guest"


def test_the_failure_event_gives_the_real_reason() -> None:
    """rabbit_reader:auth_fail/5 announces rabbit_misc:format(Msg, Args): a blank password's or
    a loopback-only user's own text (embroker's 0-9-1 said "invalid credentials" for all)."""
    broker, ch, q = events_broker()
    with pytest.raises(LoginRefused):
        login(broker, "PLAIN", b"\0guest\0guest",
              Client("amqp091", "{0,9,1}", peer_host="10.0.0.1", loopback=False))
    ((_, headers),) = events(ch, q)
    assert error_text(headers) == "user 'guest' can only connect via localhost"


def test_a_response_plain_cannot_read_is_announced_without_a_name() -> None:
    """rabbit_reader:auth_phase/2's protocol_error: counted without a user, the event has no
    ``name`` and RabbitMQ's ``response ~p invalid``."""
    broker, ch, q = events_broker()
    with pytest.raises(LoginRefused) as refused:
        login(broker, "PLAIN", b"authz\0guest\0guest", LOCAL)
    assert (refused.value.why, refused.value.reason) == ("invalid", "response invalid")
    ((key, headers),) = events(ch, q)
    assert key == "user.authentication.failure"
    assert "name" not in headers
    assert error_text(headers) == ("response <<97,117,116,104,122,0,103,117,101,115,116,0,103,"
                                   "117,101,115,116>> invalid")


def test_amqplain_logs_in() -> None:
    broker, ch, q = events_broker()
    response = amqplain((b"LOGIN", b"S", b"guest"), (b"PASSWORD", b"S", b"guest"))
    assert login(broker, "AMQPLAIN", response, LOCAL) == "guest"
    ((key, headers),) = events(ch, q)
    assert (key, headers["auth_mechanism"]) == ("user.authentication.success", "AMQPLAIN")


def test_amqplain_missing_a_field_is_announced_as_rabbitmq_words_it() -> None:
    broker, ch, q = events_broker()
    with pytest.raises(LoginRefused):
        login(broker, "AMQPLAIN", amqplain((b"LOGIN", b"S", b"guest")), LOCAL)
    ((_, headers),) = events(ch, q)
    assert error_text(headers) == "AMQPLAIN auth info is missing LOGIN or PASSWORD field"


def test_non_utf8_credentials_are_wrong_credentials() -> None:
    broker = Broker()
    with pytest.raises(LoginRefused) as refused:
        login(broker, "PLAIN", b"\0gu\xffest\0guest", LOCAL)
    assert refused.value.why == "credentials"
    assert refused.value.user == "gu\ufffdest"


class _Tls:
    def __init__(self, certificate: dict[str, Any] | None) -> None:
        self.certificate = certificate

    def peer_certificate(self) -> dict[str, Any] | None:
        return self.certificate


def test_external_logs_in_as_the_certificates_name_and_says_ssl() -> None:
    broker, ch, q = events_broker()
    broker.access.users["O=client,CN=host"] = broker.access.users["guest"]
    subject = ((("commonName", "host"),), (("organizationName", "client"),))
    client = Client("stream", "stream", loopback=True, tls=_Tls({"subject": subject}))
    assert login(broker, "EXTERNAL", b"", client) == "O=client,CN=host"
    ((_, headers),) = events(ch, q)
    assert (headers["ssl"], headers["auth_mechanism"], headers["protocol"]) == (
        True, "EXTERNAL", "stream")


def test_external_without_a_certificate_is_refused_and_announced_without_a_name() -> None:
    broker, ch, q = events_broker()
    with pytest.raises(LoginRefused) as refused:
        login(broker, "EXTERNAL", b"", Client("amqp091", "{0,9,1}", tls=_Tls(None)))
    assert refused.value.why == "no certificate"
    ((_, headers),) = events(ch, q)
    assert "name" not in headers
    assert error_text(headers) == "connection peer presented no TLS (x.509) certificate"


def test_anonymous_logs_in_as_the_default_user_and_can_be_switched_off() -> None:
    broker = Broker()
    client = Client("amqp10", loopback=True)
    assert login(broker, "ANONYMOUS", b"", client) == "guest"
    broker.access.anonymous = None
    with pytest.raises(LoginRefused) as refused:
        login_anonymous(broker, client)
    assert refused.value.why == "anonymous"


def test_an_unknown_mechanism_is_refused() -> None:
    with pytest.raises(LoginRefused) as refused:
        login(Broker(), "RABBIT-CR-DEMO", b"guest", LOCAL)
    assert refused.value.why == "invalid"


def test_a_user_and_password_pair_logs_in_as_plain_does() -> None:
    broker, ch, q = events_broker()
    stomp = Client("stomp", "STOMP", loopback=True)
    assert login_password(broker, "guest", "guest", stomp) == "guest"
    with pytest.raises(LoginRefused):
        login_password(broker, "guest", "", stomp)
    (_, success), (_, failure) = events(ch, q)
    assert success["protocol"] == "STOMP"
    assert error_text(failure).startswith("user 'guest' attempted to log in with a blank")
    assert broker.access.attempts.by_protocol()[0]["protocol"] == "stomp"


def test_a_login_without_an_event_protocol_announces_nothing() -> None:
    """RabbitMQ 3.10's AMQP 1.0 SASL login emits no event (rabbit_amqp1_0_reader)."""
    broker, ch, q = events_broker()
    login(broker, "PLAIN", b"\0guest\0guest", Client("amqp10", loopback=True))
    assert events(ch, q) == []


def test_a_loopback_refusal_is_not_announced_where_the_reader_does_not() -> None:
    """rabbit_stream_reader:handle_frame_pre_auth/4, v3.10.8: a loopback-only user from
    elsewhere is counted and logged, not announced."""
    broker, ch, q = events_broker()
    with pytest.raises(LoginRefused) as refused:
        login(broker, "PLAIN", b"\0guest\0guest",
              Client("stream", "stream", loopback=False, loopback_event=False))
    assert refused.value.why == "loopback"
    assert events(ch, q) == []


def test_a_direct_login_is_announced_with_its_name_only() -> None:
    """rabbit_direct:connect/5's notify_auth_result (as RabbitMQ 3.10 showed it for an AMQP 1.0
    session: ``{name: guest, connection_type: direct}``)."""
    broker, ch, q = events_broker()
    direct_login(broker, "guest")
    assert events(ch, q) == [("user.authentication.success",
                              {"name": "guest", "connection_type": "direct"})]


@given(mechanism=st.sampled_from(["PLAIN", "AMQPLAIN", "EXTERNAL", "ANONYMOUS", "OTHER"]),
       response=st.binary(max_size=64))
def test_any_bytes_as_a_response_only_ever_give_a_user_or_the_typed_refusal(
        mechanism: str, response: bytes) -> None:
    broker = Broker(plugins=["rabbitmq_event_exchange"])
    broker.access.anonymous = None
    try:
        user = login(broker, mechanism, response, LOCAL)
    except LoginRefused:
        return
    assert user == "guest"  # (only guest's own credentials could log in)
