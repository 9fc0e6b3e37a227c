"""The stream protocol's login is announced as RabbitMQ 3.10.8's stream reader announces it
(rabbit_stream_reader:notify_auth_result/5; checked against RabbitMQ 3.10 with rstream:
``protocol: stream``, the failure's ``error`` the refusal's reason)."""

from __future__ import annotations

from embroker import Broker
from embroker.stream import Code, Fields, Key, StreamConnection, Writer, response_key
from embroker.stream._frames import FrameReader

from ..auth_events import authentication_events as seen
from ..auth_events import watch_authentication as watch


def sasl(broker: Broker, response: bytes, *, loopback: bool = True) -> int:
    conn = StreamConnection(broker, peer="127.0.0.1:5000", loopback=loopback)
    conn.receive_data(Writer(Key.PEER_PROPERTIES).uint32(1).properties({}).frame())
    conn.receive_data(Writer(Key.SASL_HANDSHAKE).uint32(2).frame())
    conn.receive_data(Writer(Key.SASL_AUTHENTICATE).uint32(3).string("PLAIN").bytes_(response)
                      .frame())
    reader = FrameReader(0)
    reader.feed(conn.data_to_send())
    while (frame := reader.next_frame()) is not None:
        if frame[0] == response_key(Key.SASL_AUTHENTICATE):
            fields = Fields(frame[2])
            fields.uint32()
            return fields.uint16()
    raise AssertionError("no SaslAuthenticate response")




def test_a_stream_login_emits_the_success_event() -> None:
    broker, ch, q = watch()
    assert sasl(broker, b"\0guest\0guest") == Code.OK
    ((key, headers),) = seen(ch, q)
    assert key == "user.authentication.success"
    assert (headers["protocol"], headers["name"], headers["auth_mechanism"],
            headers["connection_type"], headers["peer_port"]) == (
        "stream", "guest", "PLAIN", "network", 5000)


def test_a_refused_stream_login_emits_the_failure_event_with_its_reason() -> None:
    broker, ch, q = watch()
    assert sasl(broker, b"\0guest\0nope") == Code.AUTHENTICATION_FAILURE
    ((key, headers),) = seen(ch, q)
    assert key == "user.authentication.failure"
    assert "".join(map(chr, headers["error"])) == "user 'guest' - invalid credentials"
    assert headers["protocol"] == "stream"


def test_a_loopback_only_user_from_elsewhere_is_refused_without_an_event() -> None:
    """rabbit_stream_reader:handle_frame_pre_auth/4, v3.10.8: counted and logged only."""
    broker, ch, q = watch()
    assert sasl(broker, b"\0guest\0guest", loopback=False) == \
        Code.SASL_AUTHENTICATION_FAILURE_LOOPBACK
    assert seen(ch, q) == []
