"""The WebSocket carrier (embroker._websocket): a protocol served at /ws as RabbitMQ's Web-STOMP
and Web-MQTT plugins serve STOMP and MQTT (rabbit_web_stomp_handler, rabbit_web_mqtt_handler
over cowboy 2.8's cowboy_websocket, v3.10.8), with bytes alone: wsproto's client, or
hand-written requests and frames."""

from __future__ import annotations

import ast
import base64
import hashlib
import struct
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import h11
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Message,
    Ping,
    Pong,
    Request,
    TextMessage,
)

from embroker import Broker, ManualClock
from embroker._transport import SansIOConnection
from embroker._websocket import (
    MAX_PENDING_CONTROL,
    WEB_MQTT,
    WEB_STOMP,
    CloseCode,
    WebSocketCarrier,
    WebSocketOptions,
    over_websocket,
)
from embroker.amqp091 import PROTOCOL_HEADER, ServerConnection, encode_method_frame, methods
from embroker.errors import InternalError

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Recorder:
    """An inner connection that records what it is given and writes what it is told to."""

    subprotocol: str | None = None
    received: list[bytes] = field(default_factory=list)
    outbox: list[bytes] = field(default_factory=list)
    closing: bool = False
    blocked: bool = False
    ticks: int = 0
    errors: list[Exception] = field(default_factory=list)

    def receive_data(self, data: bytes) -> None:
        self.received.append(data)

    def data_to_send(self) -> bytes:
        data = b"".join(self.outbox)
        self.outbox.clear()
        return data

    @property
    def has_output(self) -> bool:
        return bool(self.outbox) or self.closing

    @property
    def should_close(self) -> bool:
        return self.closing

    failure: BaseException | None = None

    def tick(self) -> None:
        self.ticks += 1

    def internal_error(self, error: Exception) -> None:
        self.errors.append(error)
        self.outbox.append(b"internal error")
        self.closing = True


def recording(inners: list[Recorder]) -> Callable[[str | None], Recorder]:
    """A factory of Recorders that keeps each in ``inners``."""
    def make(subprotocol: str | None) -> Recorder:
        inners.append(Recorder(subprotocol))
        return inners[-1]
    return make


class Pair:
    """A carrier over a Recorder, and wsproto's client talking to it."""

    def __init__(self, options: WebSocketOptions | None = None, *,
                 clock: ManualClock | None = None, handshake_timeout: float = 10.0) -> None:
        self.clock = clock or ManualClock()
        self.inners: list[Recorder] = []
        self.carrier = WebSocketCarrier(self._make, options, clock=self.clock.monotonic,
                                        handshake_timeout=handshake_timeout)
        self.client = WSConnection(ConnectionType.CLIENT)

    def _make(self, subprotocol: str | None) -> Recorder:
        inner = Recorder(subprotocol)
        self.inners.append(inner)
        return inner

    @property
    def inner(self) -> Recorder:
        (inner,) = self.inners
        return inner

    def handshake(self, subprotocols: list[str] | None = None, target: str = "/ws") -> list:
        self.carrier.receive_data(self.client.send(Request(
            host="localhost", target=target, subprotocols=subprotocols or [])))
        return self.read()

    def send(self, *events: Event) -> None:
        self.carrier.receive_data(b"".join(self.client.send(event) for event in events))

    def read(self) -> list:
        self.client.receive_data(self.carrier.data_to_send())
        return list(self.client.events())


def opened(options: WebSocketOptions | None = None, **kwargs: object) -> Pair:
    pair = Pair(options, **kwargs)  # type: ignore[arg-type]
    (accepted,) = pair.handshake()
    assert isinstance(accepted, AcceptConnection)
    return pair


def masked_frame(opcode: int, payload: bytes, *, fin: bool = True, mask: bool = True) -> bytes:
    """One client frame, written by hand (RFC 6455 §5.2)."""
    head = bytes([(0x80 if fin else 0) | opcode])
    length = len(payload)
    bit = 0x80 if mask else 0
    if length < 126:
        head += bytes([bit | length])
    elif length < 65536:
        head += bytes([bit | 126]) + struct.pack("!H", length)
    else:
        head += bytes([bit | 127]) + struct.pack("!Q", length)
    if not mask:
        return head + payload
    key = b"\x01\x02\x03\x04"
    return head + key + bytes(byte ^ key[i % 4] for i, byte in enumerate(payload))


def closes(events: list) -> list[int]:
    """The codes of the close frames among ``events``."""
    return [event.code for event in events if isinstance(event, CloseConnection)]


def http_response(data: bytes) -> h11.Response:
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
    client.receive_data(data)
    event = client.next_event()
    assert isinstance(event, h11.Response), data
    return event


HAND_WRITTEN = (b"GET /ws HTTP/1.1\r\nHost: localhost:15674\r\nUpgrade: websocket\r\n"
                b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                b"Sec-WebSocket-Version: 13\r\n")


# -- the handshake --------------------------------------------------------------------------


def test_handshake_chooses_the_kinds_most_preferred_subprotocol_the_client_offers() -> None:
    pair = Pair(WEB_STOMP)
    (accepted,) = pair.handshake(["mqtt", "v10.stomp", "v12.stomp", "v11.stomp"])
    assert isinstance(accepted, AcceptConnection)
    assert accepted.subprotocol == "v12.stomp"
    assert pair.carrier.subprotocol == "v12.stomp"
    assert pair.inner.subprotocol == "v12.stomp"  # the factory is told
    assert pair.carrier.inner is pair.inner


@pytest.mark.parametrize("offered", [[], ["v13.stomp", "chat"]])
def test_a_client_offering_no_known_subprotocol_is_served_without_one(offered: list[str]) -> None:
    """Both plugins serve such a client, and name no subprotocol in the answer."""
    pair = Pair(WEB_STOMP)
    (accepted,) = pair.handshake(offered)
    assert isinstance(accepted, AcceptConnection)
    assert accepted.subprotocol is None
    assert pair.inner.subprotocol is None
    assert pair.client.state is ConnectionState.OPEN


def test_web_mqtt_speaks_mqtt_and_mqttv31() -> None:
    pair = Pair(WEB_MQTT)
    (accepted,) = pair.handshake(["mqttv3.1"])
    assert isinstance(accepted, AcceptConnection)
    assert accepted.subprotocol == "mqttv3.1"


def test_handshake_from_hand_written_bytes_answers_101_with_the_rfc_accept_key() -> None:
    inners: list[Recorder] = []
    carrier = WebSocketCarrier(recording(inners), WEB_STOMP)
    carrier.receive_data(HAND_WRITTEN + b"Sec-WebSocket-Protocol: v10.stomp, v11.stomp\r\n\r\n")
    answer = carrier.data_to_send()
    head = answer.split(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"http/1.1 101 ")
    # RFC 6455 §1.3's own example: this key's answer is s3pPLMBiTxaQ9kYGzzhZRbK+xOo=
    expected = base64.b64encode(hashlib.sha1(
        b"dGhlIHNhbXBsZSBub25jZQ==258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    assert expected == b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    assert b"sec-websocket-accept: " + expected.lower() in head
    assert b"sec-websocket-protocol: v11.stomp" in head
    assert b"upgrade: websocket" in head
    assert len(inners) == 1
    assert not carrier.should_close


def test_handshake_fed_a_byte_at_a_time() -> None:
    pair = Pair()
    for byte in HAND_WRITTEN + b"\r\n":
        pair.carrier.receive_data(bytes([byte]))
    assert pair.carrier.data_to_send().startswith(b"HTTP/1.1 101 ")
    assert len(pair.inners) == 1


def test_the_query_string_is_no_part_of_the_path() -> None:
    pair = Pair()
    (accepted,) = pair.handshake(target="/ws?token=1")
    assert isinstance(accepted, AcceptConnection)


def test_frames_sent_with_the_request_are_carried() -> None:
    inners: list[Recorder] = []
    carrier = WebSocketCarrier(recording(inners))
    carrier.receive_data(HAND_WRITTEN + b"\r\n" + masked_frame(2, b"early"))
    assert inners[0].received == [b"early"]


@pytest.mark.parametrize("request_bytes", [
    HAND_WRITTEN.replace(b"/ws", b"/stomp") + b"\r\n",
    b"GET /other HTTP/1.1\r\nHost: x\r\n\r\n",  # no upgrade either: the router answers first
    b"GET / HTTP/1.0\r\n\r\n",
])
def test_another_path_is_404_and_closes(request_bytes: bytes) -> None:
    inners: list[Recorder] = []
    carrier = WebSocketCarrier(recording(inners))
    carrier.receive_data(request_bytes)
    assert http_response(carrier.data_to_send()).status_code == 404
    assert carrier.should_close
    assert not inners
    carrier.receive_data(HAND_WRITTEN + b"\r\n")  # nothing more is read
    assert carrier.data_to_send() == b""


@pytest.mark.parametrize("request_bytes", [
    b"GET /ws HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /ws HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
    HAND_WRITTEN.replace(b"Upgrade: websocket", b"Upgrade: h2c") + b"\r\n",
    HAND_WRITTEN.replace(b"Connection: Upgrade", b"Connection: keep-alive") + b"\r\n",
])
def test_a_request_that_is_no_upgrade_is_426_naming_the_upgrade(request_bytes: bytes) -> None:
    """cowboy_websocket 2.8 over HTTP/1.1: 426 with connection: upgrade, upgrade: websocket."""
    carrier = WebSocketCarrier(Recorder)
    carrier.receive_data(request_bytes)
    response = http_response(carrier.data_to_send())
    assert response.status_code == 426
    assert (b"upgrade", b"websocket") in response.headers
    assert (b"connection", b"upgrade") in [(k, v.lower()) for k, v in response.headers]
    assert carrier.should_close


@pytest.mark.parametrize("request_bytes", [
    HAND_WRITTEN.replace(b"HTTP/1.1", b"HTTP/1.0") + b"\r\n",
    HAND_WRITTEN.replace(b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", b"") + b"\r\n",
    HAND_WRITTEN.replace(b"Version: 13", b"Version: 8") + b"\r\n",
    HAND_WRITTEN + b"Content-Length: 3\r\n\r\nabc",
    HAND_WRITTEN.replace(b"Host: localhost:15674", b"Host: \xff\xfe") + b"\r\n",  # no name
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\r\n\r\n",  # a TLS hello: no HTTP
])
def test_a_broken_upgrade_is_400(request_bytes: bytes) -> None:
    carrier = WebSocketCarrier(Recorder)
    carrier.receive_data(request_bytes)
    assert http_response(carrier.data_to_send()).status_code == 400
    assert carrier.should_close
    assert carrier.inner is None


def test_an_oversized_request_head_is_refused_before_it_is_all_read() -> None:
    carrier = WebSocketCarrier(Recorder)
    carrier.receive_data(HAND_WRITTEN)
    carrier.receive_data(b"X-Padding: " + b"a" * 8_200)  # no end of the head yet
    assert http_response(carrier.data_to_send()).status_code == 431
    assert carrier.should_close
    assert carrier.inner is None


def test_a_client_that_closes_before_its_request_is_closed_silently() -> None:
    carrier = WebSocketCarrier(Recorder)
    carrier.receive_data(HAND_WRITTEN)
    carrier.receive_data(b"")
    assert carrier.should_close
    assert carrier.data_to_send() == b""


# -- messages -------------------------------------------------------------------------------


def test_binary_messages_both_ways() -> None:
    pair = opened()
    pair.send(BytesMessage(data=b"\x01\x00hello"))
    assert pair.inner.received == [b"\x01\x00hello"]
    pair.inner.outbox.append(b"\xff\xfeworld")
    assert pair.carrier.has_output
    (message,) = pair.read()
    assert isinstance(message, BytesMessage)
    assert message.data == b"\xff\xfeworld"


def test_text_frames_when_configured_and_text_from_the_client_as_utf8() -> None:
    pair = opened(WEB_STOMP)
    pair.send(TextMessage(data="CONNECT\nhost:/\n\n\x00é"))
    assert pair.inner.received == ["CONNECT\nhost:/\n\n\x00é".encode()]
    pair.inner.outbox.append("CONNECTED\nversion:1.2\n\n\x00ü".encode())
    (message,) = pair.read()
    assert isinstance(message, TextMessage)
    assert message.data == "CONNECTED\nversion:1.2\n\n\x00ü"


def test_text_mode_sends_bytes_that_are_no_utf8_in_a_binary_frame() -> None:
    pair = opened(WEB_STOMP)
    pair.inner.outbox.append(b"\xff\x00")
    (message,) = pair.read()
    assert isinstance(message, BytesMessage)
    assert message.data == b"\xff\x00"


def test_text_mode_holds_a_character_split_between_two_writes() -> None:
    pair = opened(WEB_STOMP)
    euro = "€".encode()
    pair.inner.outbox.append(b"a" + euro[:2])
    (first,) = pair.read()
    pair.inner.outbox.append(euro[2:] + b"b")
    (second,) = pair.read()
    assert (first.data, second.data) == ("a", "€b")


def test_a_message_in_several_frames_reaches_the_inner_connection_whole() -> None:
    pair = opened()
    pair.send(BytesMessage(data=b"ab", message_finished=False),
              BytesMessage(data=b"cd", message_finished=False))
    assert pair.inner.received == []
    pair.send(BytesMessage(data=b"ef", message_finished=True))
    assert pair.inner.received == [b"abcdef"]


def test_a_ping_between_fragments_is_answered_and_the_message_kept() -> None:
    pair = opened()
    pair.send(BytesMessage(data=b"ab", message_finished=False), Ping(payload=b"p1"),
              BytesMessage(data=b"cd"))
    assert pair.inner.received == [b"abcd"]
    assert pair.read() == [Pong(payload=b"p1")]


def test_several_messages_in_one_read_each_reach_the_inner_connection() -> None:
    pair = opened()
    pair.carrier.receive_data(masked_frame(2, b"one") + masked_frame(1, b"two")
                              + masked_frame(2, b"three"))
    assert pair.inner.received == [b"one", b"two", b"three"]


def test_frames_fed_a_byte_at_a_time() -> None:
    pair = opened()
    for byte in masked_frame(2, b"x" * 300) + masked_frame(9, b"hi"):
        pair.carrier.receive_data(bytes([byte]))
    assert pair.inner.received == [b"x" * 300]
    assert pair.read() == [Pong(payload=b"hi")]


def test_an_empty_message_gives_the_inner_connection_nothing() -> None:
    """(b"" would tell it its peer closed.)"""
    pair = opened()
    pair.send(BytesMessage(data=b""))
    assert pair.inner.received == []


def test_pings_are_answered_with_their_payload_and_pongs_ignored() -> None:
    pair = opened()
    pair.send(Ping(payload=b"are you there"), Pong(payload=b"unasked"))
    assert pair.read() == [Pong(payload=b"are you there")]
    assert pair.inner.received == []


def test_unread_pongs_past_the_bound_stop_the_reading() -> None:
    pair = opened()
    assert not pair.carrier.blocked
    while pair.carrier._out_size <= MAX_PENDING_CONTROL:
        pair.send(Ping(payload=b"p" * 125))
    assert pair.carrier.blocked
    pair.carrier.data_to_send()
    assert not pair.carrier.blocked


def test_blocked_and_tick_pass_through() -> None:
    pair = opened()
    pair.inner.blocked = True
    assert pair.carrier.blocked
    pair.carrier.tick()
    assert pair.inner.ticks == 1


# -- bounds ---------------------------------------------------------------------------------


def test_an_oversized_message_gets_1009_and_the_inner_connection_sees_none_of_it() -> None:
    pair = opened(WebSocketOptions(max_message=100))
    pair.send(BytesMessage(data=b"a" * 100))  # at the bound: carried
    assert pair.inner.received == [b"a" * 100]
    pair.send(BytesMessage(data=b"b" * 101))
    assert pair.inner.received == [b"a" * 100, b""]  # told its peer left, nothing of the message
    assert closes(pair.read()) == [1009]
    assert pair.carrier.should_close
    assert pair.carrier.close_code == CloseCode.MESSAGE_TOO_BIG


def test_an_oversized_message_in_fragments_is_refused_when_it_passes_the_bound() -> None:
    pair = opened(WebSocketOptions(max_message=100))
    pair.send(BytesMessage(data=b"a" * 60, message_finished=False))
    pair.send(BytesMessage(data=b"a" * 60, message_finished=False))
    assert pair.inner.received == [b""]
    assert closes(pair.read()) == [1009]


def test_an_oversized_frame_is_refused_before_its_payload_is_all_read() -> None:
    pair = opened(WebSocketOptions(max_message=1000))
    frame = masked_frame(2, b"z" * 100_000)
    pair.carrier.receive_data(frame[:2000])
    assert pair.carrier.should_close
    assert closes(pair.read()) == [1009]
    assert pair.inner.received == [b""]


# -- closing --------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [1000, 1001, 4000])
def test_a_client_close_is_answered_with_its_code_and_the_inner_told(code: int) -> None:
    pair = opened()
    pair.send(CloseConnection(code=code, reason="bye"))
    assert pair.inner.received == [b""]
    (close,) = pair.read()
    assert isinstance(close, CloseConnection)
    assert close.code == code
    assert pair.carrier.should_close
    pair.inner.outbox.append(b"too late")
    assert pair.carrier.data_to_send() == b""


def test_the_inner_connection_closing_sends_its_last_bytes_then_close_1000() -> None:
    pair = opened(WEB_STOMP)
    pair.inner.outbox.append(b"ERROR\n\n\x00")
    pair.inner.closing = True
    events = pair.read()
    assert events == [TextMessage(data="ERROR\n\n\x00"),
                      CloseConnection(code=1000, reason="STOMP died")]
    assert pair.carrier.should_close
    assert pair.inner.received == []  # it ended itself: not told again


def test_an_unmasked_client_frame_is_a_protocol_error_1002() -> None:
    pair = opened()
    pair.carrier.receive_data(masked_frame(2, b"x", mask=False))
    assert pair.read() == [CloseConnection(code=1002, reason="")]
    assert pair.inner.received == [b""]
    assert pair.carrier.should_close


def test_a_text_message_that_is_no_utf8_is_1007() -> None:
    pair = opened()
    pair.carrier.receive_data(masked_frame(1, b"\xff\xfe"))
    (close,) = pair.read()
    assert close.code == 1007
    assert pair.inner.received == [b""]


def test_the_transport_ending_tells_the_inner_connection_once() -> None:
    pair = opened()
    pair.carrier.receive_data(b"")
    pair.carrier.connection_lost()
    assert pair.inner.received == [b""]
    assert pair.carrier.should_close


def test_an_internal_error_is_the_inner_connections_then_1011() -> None:
    pair = opened()
    pair.carrier.internal_error(InternalError("bug"))
    assert len(pair.inner.errors) == 1
    events = pair.read()
    assert events[0] == BytesMessage(data=b"internal error")
    assert closes(events) == [1011]


def test_an_internal_error_before_the_handshake_is_500() -> None:
    carrier = WebSocketCarrier(Recorder)
    carrier.receive_data(HAND_WRITTEN)
    carrier.internal_error(InternalError("bug"))
    assert http_response(carrier.data_to_send()).status_code == 500
    assert carrier.should_close


# -- time -----------------------------------------------------------------------------------


def test_handshake_timeout_closes_a_silent_client_without_an_answer() -> None:
    clock = ManualClock()
    carrier = WebSocketCarrier(Recorder, clock=clock.monotonic, handshake_timeout=10.0)
    clock.advance(9.9)
    carrier.tick()
    assert not carrier.should_close
    clock.advance(0.1)
    carrier.tick()
    assert carrier.should_close
    assert carrier.data_to_send() == b""


def test_handshake_timeout_answers_a_partial_request_408() -> None:
    clock = ManualClock()
    carrier = WebSocketCarrier(Recorder, clock=clock.monotonic, handshake_timeout=10.0)
    carrier.receive_data(HAND_WRITTEN)
    clock.advance(10.0)
    carrier.tick()
    assert http_response(carrier.data_to_send()).status_code == 408
    assert carrier.should_close


def test_the_handshake_timeout_ends_with_the_handshake() -> None:
    pair = opened(WebSocketOptions(idle_timeout=None), handshake_timeout=1.0)
    pair.clock.advance(3600)
    pair.carrier.tick()
    assert not pair.carrier.should_close


def test_an_idle_client_is_closed_1000_after_the_idle_timeout() -> None:
    pair = opened(WebSocketOptions(idle_timeout=60.0))
    pair.clock.advance(59)
    pair.send(Ping(payload=b""))  # input: the idle time starts again
    pair.read()
    pair.clock.advance(59)
    pair.carrier.tick()
    assert not pair.carrier.should_close
    pair.clock.advance(1)
    pair.carrier.tick()
    assert closes(pair.read()) == [1000]
    assert pair.inner.received == [b""]


# -- the factory and the options -----------------------------------------------------------


def test_over_websocket_wraps_a_factory_and_tells_it_the_subprotocol() -> None:
    made: list[tuple[str | None, str, bool]] = []

    def factory(subprotocol: str | None, peer: str, *, loopback: bool) -> Recorder:
        made.append((subprotocol, peer, loopback))
        return Recorder(subprotocol)

    make = over_websocket(factory, WEB_MQTT, handshake_timeout=5.0)
    carrier = make("127.0.0.1:5000", loopback=True)
    assert made == []  # not before the handshake
    client = WSConnection(ConnectionType.CLIENT)
    carrier.receive_data(client.send(Request(host="x", target="/ws", subprotocols=["mqtt"])))
    assert made == [("mqtt", "127.0.0.1:5000", True)]


@pytest.mark.parametrize("bad", [{"path": "ws"}, {"frame": "json"}, {"max_message": 0}])
def test_options_refuse_what_cannot_be_served(bad: dict) -> None:
    with pytest.raises(ValueError, match=r"."):
        WebSocketOptions(**bad)


def test_the_carrier_imports_no_protocol_package_and_wsproto_only_when_used() -> None:
    tree = ast.parse((ROOT / "embroker" / "_websocket.py").read_text())
    imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names}
    for package in ("amqp091", "amqp10", "stream", "management"):
        assert not any(package in name.split(".") for name in imported), package
    code = "import sys, embroker._websocket; print('wsproto' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=ROOT)
    assert result.stdout.strip() == "False"


# -- any bytes ------------------------------------------------------------------------------


def _client_frames() -> st.SearchStrategy[bytes]:
    """Frames a client could send, well-formed or not."""
    well_formed = st.builds(
        lambda opcode, payload, fin: masked_frame(opcode, payload, fin=fin),
        st.sampled_from([0, 1, 2, 8, 9, 10, 3, 11]), st.binary(max_size=200), st.booleans())
    return st.one_of(well_formed, st.binary(max_size=64))


def _assert_clean(carrier: WebSocketCarrier, client: WSConnection) -> None:
    """What the carrier wrote parses, and a close is a close frame."""
    client.receive_data(carrier.data_to_send())
    events = list(client.events())
    assert client.state in (ConnectionState.OPEN, ConnectionState.REMOTE_CLOSING)
    assert all(not isinstance(event, CloseConnection) or
               client.state is ConnectionState.REMOTE_CLOSING for event in events)
    if carrier.should_close and carrier.close_code is not None:
        assert isinstance(events[-1], CloseConnection)
        assert events[-1].code == carrier.close_code
    assert all(isinstance(event, (Message, Pong, CloseConnection)) for event in events)


@settings(max_examples=300, deadline=None)
@given(st.lists(_client_frames(), max_size=8), st.data())
def test_any_frames_after_the_handshake_end_in_a_clean_close_or_are_carried(
        frames: list[bytes], data: st.DataObject) -> None:
    pair = opened(WebSocketOptions(max_message=300))
    stream = b"".join(frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=4)))
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        if stream[start:end]:
            pair.carrier.receive_data(stream[start:end])
    _assert_clean(pair.carrier, pair.client)
    assert all(len(piece) <= 300 for piece in pair.inner.received)
    assert pair.inner.received.count(b"") <= 1


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=300),
                 st.builds(lambda head, tail: HAND_WRITTEN[:head] + tail,
                           st.integers(0, len(HAND_WRITTEN)), st.binary(max_size=100))),
       st.booleans())
def test_any_bytes_before_the_handshake_are_answered_in_http_or_awaited(
        data: bytes, bytewise: bool) -> None:
    carrier = WebSocketCarrier(Recorder)
    for piece in ([data[i:i + 1] for i in range(len(data))] if bytewise else [data]):
        if piece:
            carrier.receive_data(piece)
    out = carrier.data_to_send()
    if carrier.inner is None:
        assert carrier.should_close == bool(out)
        if out:
            assert 400 <= http_response(out).status_code < 500
    else:
        assert out.startswith(b"HTTP/1.1 101 ")


# -- end to end: AMQP 0-9-1 over WebSocket -------------------------------------------------


def test_amqp091_over_websocket_to_a_real_server_connection() -> None:
    broker = Broker()
    made: list[ServerConnection] = []

    def amqp(subprotocol: str | None) -> SansIOConnection:
        made.append(ServerConnection(broker, peer="ws:1", loopback=True))
        # (its internal_error takes a ConnectionException and its tick returns its next
        # deadline: mypy does not count it a SansIOConnection, though it serves as one)
        return cast("SansIOConnection", made[-1])

    carrier = WebSocketCarrier(amqp, WebSocketOptions(subprotocols=("amqp",)))
    client = WSConnection(ConnectionType.CLIENT)
    carrier.receive_data(client.send(Request(host="localhost", target="/ws",
                                             subprotocols=["amqp"])))

    def exchange(*frames: bytes) -> bytes:
        carrier.receive_data(b"".join(client.send(BytesMessage(data=frame)) for frame in frames))
        client.receive_data(carrier.data_to_send())
        return b"".join(bytes(event.data) for event in client.events()
                        if isinstance(event, BytesMessage))

    client.receive_data(carrier.data_to_send())
    assert isinstance(next(client.events()), AcceptConnection)
    start = exchange(PROTOCOL_HEADER)  # hand-written bytes through the carrier
    assert start[:3] == b"\x01\x00\x00"  # a method frame on channel 0...
    assert start[7:11] == b"\x00\x0a\x00\x0a"  # ...connection.start
    exchange(encode_method_frame(0, methods.ConnectionStartOk(
        client_properties={}, mechanism="PLAIN", response="\0guest\0guest", locale="en_US")),
        encode_method_frame(0, methods.ConnectionTuneOk(channel_max=10, frame_max=131072,
                                                        heartbeat=0)))
    opened_ok = exchange(encode_method_frame(0, methods.ConnectionOpen(virtual_host="/")))
    assert opened_ok[7:11] == b"\x00\x0a\x00\x29"  # connection.open-ok
    assert len(broker.connections) == 1
    exchange(encode_method_frame(1, methods.ChannelOpen()),
             encode_method_frame(1, methods.QueueDeclare(queue="over-ws")))
    assert "over-ws" in broker.queues
    carrier.receive_data(client.send(CloseConnection(code=1000)))
    assert carrier.should_close
    assert broker.connections == {}
