"""MQTT 5.0 on an :class:`~._connection.MqttConnection`, as RabbitMQ 3.13.7's plugin serves it
(embroker's RabbitMQ 4 profile only).

Theory of operation
-------------------
Under the profile the connection reads the CONNECT with :mod:`._packet5`; a level-5 client is
read by that codec from then on and its packets go to :data:`PACKETS` here, which reuse the
connection's 3.1.1 machinery (login, the session's queues, confirms) and answer with 5.0
packets (``rabbit_mqtt_processor``):

- CONNECT (``process_connect/5``): an Authentication Method is refused with 0x8C
  (``check_extended_auth/1``); an empty client id is allowed whatever Clean Start says and
  assigned (``ensure_client_id/3``); the Session Expiry Interval (absent: 0; 0xFFFFFFFF: the
  maximum) capped by ``max_session_expiry_interval_seconds`` becomes the queues' ``x-expires``
  (``queue_args/2``; 0: deleted with the connection); Receive Maximum caps the prefetch
  (``prefetch/1``); CONNACK carries :func:`~._packet5.connack_properties`.
- PUBLISH (``process_request(?PUBLISH)``): QoS 2 is refused with DISCONNECT 0x9B; Topic Alias
  (``process_topic_alias_inbound/2``); the properties become AMQP 0-9-1 ones as
  ``mc_mqtt:convert_to(mc_amqpl)`` makes them (:func:`to_amqp_properties`); PUBACK 0x10 when a
  QoS 1 message reached no queue (``process_routing_confirm/3``).
- SUBSCRIBE: reason codes, the same filter with the same options changes nothing, Retain
  Handling, Subscription Identifiers (``maybe_add_subscription_ids/3``). A ``$share/`` filter
  has no clause of its own in 3.13: it is bound as any other filter (CONNACK says Shared
  Subscription Available 0).
- UNSUBSCRIBE: 0x00, or 0x11 when no such subscription existed.
- DISCONNECT: a reason code over 0 sends the will (``process_request(?DISCONNECT)``).
- Deliveries: the AMQP properties become MQTT ones as ``mc_mqtt:convert_from(mc_amqpl)`` does
  (:func:`to_mqtt_properties`).
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ..fieldtypes import Byte
from . import _packet
from ._packet5 import (
    MAX_PACKET_SIZE_AUTHENTICATED,
    TOPIC_ALIAS_MAXIMUM,
    UINT_MAX,
    Connect,
    Disconnect,
    PingReq,
    Properties,
    PubAck,
    Publish,
    ReasonCode,
    Subscribe,
    Subscription,
    Unsubscribe,
    connack_properties,
    disconnect,
    pingresp,
    publish,
    suback,
    unsuback,
)
from ._packet5 import PacketReader as _Reader5
from ._packet5 import connack as connack5
from ._packet5 import puback as puback5

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..model._events import Delivered
    from ._connection import MqttConnection

__all__ = ["PACKETS", "Session", "connack", "deliver", "puback", "to_amqp_properties",
           "to_mqtt_properties"]

#: ``mqtt.max_session_expiry_interval_seconds``'s default (one day).
MAX_SESSION_EXPIRY: Final = 86_400
#: 3.10's CONNACK return codes as 5.0's reason codes (the connection speaks in the former).
_REASONS: Final = {0: 0x00, 1: 0x84, 2: 0x85, 3: 0x88, 4: 0x86, 5: 0x87}
#: Headers the broker's own MQTT machinery sets, not forwarded as User Properties.
_INTERNAL: Final = frozenset({"x-mqtt-publish-qos", "x-mqtt-dup"})


@dataclass(slots=True)
class Session:
    """A level-5 connection's state."""

    session_expiry: int = 0
    receive_maximum: int = 0xFFFF
    #: The client's Maximum Packet Size: larger packets are not sent.
    maximum_packet_size: int = MAX_PACKET_SIZE_AUTHENTICATED
    assigned: str | None = None
    #: The will's AMQP properties (from its properties).
    will: dict[str, Any] | None = None
    aliases: dict[int, str] = field(default_factory=dict)
    #: Topic filter -> its subscription options (with the identifier, if any).
    subscriptions: dict[str, tuple[Subscription, int | None]] = field(default_factory=dict)


# -- properties ---------------------------------------------------------------------------------


def to_amqp_properties(properties: Properties) -> dict[str, Any]:
    """A PUBLISH's properties as AMQP 0-9-1 ones (``mc_mqtt:convert_to(mc_amqpl)``): Content
    Type if ASCII and at most 255 bytes; User Properties as longstr headers (names over 255
    bytes dropped; the first of equal names kept, the table sorted); Response Topic as
    ``x-reply-to-topic`` (as a routing key); Correlation Data as ``correlation_id`` if it is a
    valid shortstr, else the ``x-correlation-id`` header; Message Expiry Interval as
    ``expiration`` in milliseconds."""
    out: dict[str, Any] = {}
    content_type = properties.content_type
    if content_type is not None and content_type.isascii() and len(content_type) <= 255:
        out["content_type"] = content_type
    headers: dict[str, Any] = {}
    for name, value in properties.user_properties:
        if len(name.encode("utf-8", "surrogateescape")) <= 255 and name not in headers:
            headers[name] = value
    if properties.response_topic is not None:
        headers.setdefault("x-reply-to-topic",
                           properties.response_topic.replace("/", ".").replace("+", "*"))
    correlation = properties.correlation_data
    if correlation is not None:
        if len(correlation) <= 255 and _utf8_no_null(correlation):
            out["correlation_id"] = correlation.decode()
        else:
            headers.setdefault("x-correlation-id", correlation)
    if properties.message_expiry_interval is not None:
        out["expiration"] = str(properties.message_expiry_interval * 1000)
    if headers:
        out["headers"] = dict(sorted(headers.items()))
    return out


def _utf8_no_null(data: bytes) -> bool:
    # mc_util:is_valid_shortstr/1
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\x00" not in data


def _text(value: Any) -> str | None:
    # mc_mqtt:amqpl_field_to_utf8_string_pair/1: UTF-8 strings, numbers and booleans
    if isinstance(value, bytes):
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return None if "\x00" in text else text
    if isinstance(value, str):
        return None if "\x00" in value else value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(int(value)) if isinstance(value, int) else str(value)
    return None


def to_mqtt_properties(amqp: dict[str, Any]) -> Properties:
    """A message's AMQP 0-9-1 properties as a PUBLISH's (``mc_mqtt:convert_from(mc_amqpl)``):
    the inverse of :func:`to_amqp_properties`; every other header a UTF-8 string, number or
    boolean becomes a User Property (the broker's ``x-mqtt-*`` headers excepted)."""
    headers = dict(amqp.get("headers") or {})
    response = headers.pop("x-reply-to-topic", None)
    correlation = amqp.get("correlation_id")
    if isinstance(correlation, str):
        correlation_data: bytes | None = correlation.encode()
    else:
        kept = headers.pop("x-correlation-id", None)
        correlation_data = kept.encode() if isinstance(kept, str) else kept \
            if isinstance(kept, bytes) else None
    pairs = []
    for name, value in headers.items():
        text = _text(value)
        if name not in _INTERNAL and text is not None:
            pairs.append((name, text))
    expiration = amqp.get("expiration")
    content_type = amqp.get("content_type")
    reply = _text(response)
    return Properties(
        content_type=content_type if isinstance(content_type, str) else None,
        response_topic=None if reply is None else _to_mqtt(reply),
        correlation_data=correlation_data, user_properties=tuple(pairs),
        message_expiry_interval=int(expiration) // 1000
        if isinstance(expiration, str) and expiration.isdigit() else None)


# -- answers ------------------------------------------------------------------------------------


def _send(conn: MqttConnection, data: bytes) -> bool:
    # send/4: a packet over the client's Maximum Packet Size is not sent.
    session = conn.v5
    if session is not None and len(data) > session.maximum_packet_size:
        return False
    conn._write(data)
    return True


def connack(conn: MqttConnection, code: int, present: bool) -> None:
    """CONNACK (``send_conn_ack/6``): properties on success only."""
    session = conn.v5
    assert session is not None
    reason = _REASONS.get(code, code)
    if reason:
        _send(conn, connack5(reason))
        return
    _send(conn, connack5(0, present, connack_properties(
        session_expiry_interval=session.session_expiry,
        assigned_client_identifier=session.assigned, topic_alias_maximum=TOPIC_ALIAS_MAXIMUM,
        maximum_packet_size=MAX_PACKET_SIZE_AUTHENTICATED)))


def puback(conn: MqttConnection, packet_id: int, code: int) -> bytes:
    return puback5(packet_id, code)


# -- packets ------------------------------------------------------------------------------------


def _on_connect(conn: MqttConnection, packet: Connect) -> None:
    session = conn.v5
    assert session is not None
    if conn.model is not None:  # (a second CONNECT: the reader's codec does not read one)
        return
    conn.level = 5
    props = packet.properties
    if props.authentication_method is not None:  # check_extended_auth/1
        _send(conn, connack5(ReasonCode.BAD_AUTHENTICATION_METHOD))
        raise _end("extended_authentication_unsupported")
    asked = props.session_expiry_interval or 0
    session.session_expiry = MAX_SESSION_EXPIRY if asked == UINT_MAX else \
        min(asked, MAX_SESSION_EXPIRY)
    if props.receive_maximum is not None:
        session.receive_maximum = props.receive_maximum
    if props.maximum_packet_size is not None:
        session.maximum_packet_size = props.maximum_packet_size
    client_id = packet.client_id
    if not client_id:  # ensure_client_id/3
        client_id = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        session.assigned = client_id
    will = None
    if packet.will is not None:
        w = packet.will
        will = _packet.Will(w.topic, w.payload, w.qos, w.retain)
        session.will = to_amqp_properties(w.properties)
    password = None if packet.password is None else \
        packet.password.decode("utf-8", "surrogateescape")
    conn._on_connect(_packet.Connect(5, packet.clean_start, packet.keep_alive, client_id, will,
                                     packet.username, password))
    if conn.state.value == "connected":
        assert isinstance(conn._reader, _Reader5)
        conn._reader.max_authenticated = MAX_PACKET_SIZE_AUTHENTICATED


def _on_publish(conn: MqttConnection, packet: Publish) -> None:
    session = conn.v5
    assert session is not None
    if packet.qos == 2:  # (process_request(?PUBLISH): QoS 2 is not supported at level 5)
        _send(conn, disconnect(ReasonCode.QOS_NOT_SUPPORTED))
        raise _end("QoS 2 at level 5")
    topic, props = packet.topic, packet.properties
    alias = props.topic_alias
    if alias is not None:  # process_topic_alias_inbound/2
        if not 0 < alias <= TOPIC_ALIAS_MAXIMUM:
            _send(conn, disconnect(ReasonCode.TOPIC_ALIAS_INVALID))
            raise _end(f"invalid Topic Alias {alias}")
        if topic:
            session.aliases[alias] = topic
        elif alias in session.aliases:
            topic = session.aliases[alias]
        else:
            _send(conn, disconnect(ReasonCode.PROTOCOL_ERROR))
            raise _end(f"unknown Topic Alias {alias}")
    conn._publish(Publish(topic, packet.payload, packet.qos, packet.retain, packet.dup,
                          packet.packet_id, props), extra=to_amqp_properties(props))


def _on_puback(conn: MqttConnection, packet: PubAck) -> None:
    tag = conn._awaiting.pop(packet.packet_id, None)
    if tag is not None and conn.channel is not None:
        if packet.reason_code >= 0x80:  # (a refusal discards it: no requeue)
            conn.channel.basic_reject(tag, requeue=False)
        else:
            conn.channel.basic_ack(tag)


def _on_subscribe(conn: MqttConnection, packet: Subscribe) -> None:
    session = conn.v5
    channel = conn.channel
    assert session is not None
    assert channel is not None
    codes: list[int] = []
    retained: list[tuple[str, int]] = []
    ident = packet.subscription_identifier
    for sub in packet.subscriptions:
        qos = min(sub.qos, 1)  # maybe_downgrade_qos/1
        options = (Subscription(sub.topic_filter, qos, sub.no_local, sub.retain_as_published,
                                 sub.retain_handling), ident)
        old = session.subscriptions.get(sub.topic_filter)
        if old == options:  # (the same filter with the same options changes nothing)
            codes.append(qos)
            if sub.retain_handling == 0:
                retained.append((sub.topic_filter, qos))
            continue
        queue = conn._ensure_queue(qos)
        channel.queue_bind(queue, conn.settings.exchange, _to_amqp(sub.topic_filter))
        if old is not None and old[0].qos != qos:  # maybe_delete_old_subscription/3
            channel.queue_unbind(conn._queue_names()[old[0].qos], conn.settings.exchange,
                                 _to_amqp(sub.topic_filter))
        session.subscriptions[sub.topic_filter] = options
        conn._subscriptions[sub.topic_filter] = [qos]
        codes.append(qos)
        if sub.retain_handling < 2:
            retained.append((sub.topic_filter, qos))
    _send(conn, suback(packet.packet_id, codes))
    assert conn.vhost is not None
    store = conn.broker.vhost(conn.vhost).retained
    for topic_filter, granted in retained:  # send_retained_messages/2
        kept = store.fetch(topic_filter)
        if kept is None:
            continue
        qos = min(granted, kept.qos, 1)
        packet_id = None
        if qos:
            packet_id = conn._next_id
            conn._next_id = 1 if packet_id >= 0xFFFF else packet_id + 1
        _send(conn, publish(kept.topic, kept.payload, qos=qos, retain=True,
                            packet_id=packet_id, properties=_ids(session, kept.topic)))


def _on_unsubscribe(conn: MqttConnection, packet: Unsubscribe) -> None:
    session = conn.v5
    channel = conn.channel
    assert session is not None
    assert channel is not None
    codes = []
    for topic_filter in packet.topic_filters:
        old = session.subscriptions.pop(topic_filter, None)
        conn._subscriptions.pop(topic_filter, None)
        if old is None:
            codes.append(ReasonCode.NO_SUBSCRIPTION_EXISTED)
            continue
        channel.queue_unbind(conn._queue_names()[old[0].qos], conn.settings.exchange,
                             _to_amqp(topic_filter))
        codes.append(ReasonCode.SUCCESS)
    _send(conn, unsuback(packet.packet_id, [int(c) for c in codes]))


def _on_pingreq(conn: MqttConnection, packet: PingReq) -> None:
    _send(conn, pingresp())


def _on_disconnect(conn: MqttConnection, packet: Disconnect) -> None:
    # process_request(?DISCONNECT): a reason code over 0 sends the will.
    if packet.reason_code > 0:
        conn._send_will()
    conn._will = None
    conn._end()


# -- deliveries ---------------------------------------------------------------------------------


def _matches(topic_filter: str, topic: str) -> bool:
    filter_words, words = topic_filter.split("/"), topic.split("/")
    for i, word in enumerate(filter_words):
        if word == "#":
            return True
        if i >= len(words) or (word != "+" and word != words[i]):
            return False
    return len(filter_words) == len(words)


def _ids(session: Session, topic: str) -> Properties | None:
    ids = tuple(ident for f, (_, ident) in session.subscriptions.items()
                if ident is not None and _matches(f, topic))
    return Properties(subscription_identifiers=ids) if ids else None


def deliver(conn: MqttConnection, event: Delivered) -> None:
    """A delivery to a level-5 client (``deliver_one_to_client/3``)."""
    session = conn.v5
    channel = conn.channel
    assert session is not None
    assert channel is not None
    headers = event.message.headers
    dup = event.redelivered or headers.get("x-mqtt-dup") is True
    qos0 = event.consumer_tag == conn._consumers.get(0)
    published = headers.get("x-mqtt-publish-qos")
    delivery_qos = 0 if qos0 else (1 if not isinstance(published, Byte)
                                   else min(int(published), 1))
    topic = _to_mqtt(event.routing_key)
    props = to_mqtt_properties(event.message.properties)
    ids = _ids(session, topic)
    if ids is not None:
        props = Properties(**{**{k: getattr(props, k) for k in props.__slots__},
                              "subscription_identifiers": ids.subscription_identifiers})
    packet_id = conn._next_id if delivery_qos else None
    data = publish(topic, event.message.body, qos=delivery_qos, dup=dup and bool(delivery_qos),
                   packet_id=packet_id, properties=props)
    if len(data) > session.maximum_packet_size:  # (dropped: its delivery discarded)
        if not qos0:
            channel.basic_reject(event.delivery_tag, requeue=False)
        return
    (conn._deferred.append if conn._handling else conn._write)(data)
    if delivery_qos == 0 or packet_id is None:
        if not qos0:
            channel.basic_ack(event.delivery_tag)
        return
    conn._awaiting[packet_id] = event.delivery_tag
    conn._next_id = 1 if packet_id >= 0xFFFF else packet_id + 1


def _to_amqp(topic: str) -> str:
    return topic.replace("/", ".").replace("+", "*")


def _to_mqtt(key: str) -> str:
    return key.replace("*", "+").replace(".", "/")


def _end(reason: str) -> Exception:
    from ._connection import _End
    return _End(reason)


#: Each level-5 packet's handler.
PACKETS: Final[dict[type, Callable[[MqttConnection, Any], None]]] = {
    Connect: _on_connect,
    Publish: _on_publish,
    PubAck: _on_puback,
    Subscribe: _on_subscribe,
    Unsubscribe: _on_unsubscribe,
    PingReq: _on_pingreq,
    Disconnect: _on_disconnect,
}
