"""The STOMP connection with hand-written frames and no socket: each behaviour as RabbitMQ
3.10.8's STOMP plugin shows it (checked live against it: the texts below are its own; the
differential scenarios, tests/stomp/test_differential.py, compare whole sessions)."""

from __future__ import annotations

import pytest

from embroker.model import Broker, ManualClock
from embroker.stomp import StompSettings
from embroker.stomp._mapping import subscription_queue_name

from .wire import Wire, frame


@pytest.fixture
def broker() -> Broker:
    return Broker()


@pytest.fixture
def wire(broker: Broker) -> Wire:
    w = Wire(broker)
    w.connect()
    return w


def _error(frames: list, message: str, detail: str) -> None:
    assert [f.command for f in frames] == ["ERROR"], frames
    assert frames[0].header("message") == message
    assert frames[0].headers[:3] == [("message", message), ("content-type", "text/plain"),
                                     ("version", "1.0,1.1,1.2")]
    assert frames[0].body.decode() == detail


# -- CONNECT ---------------------------------------------------------------------------------


def test_connected_names_the_server_session_heart_beat_and_version(broker: Broker) -> None:
    connected = Wire(broker).connect(version="1.0,1.1")
    names = [name for name, _ in connected.headers]
    assert names == ["server", "session", "heart-beat", "version"]
    assert connected.header("server") == "RabbitMQ/3.10.8"
    assert connected.header("session", "").startswith("session-")
    assert connected.header("version") == "1.1"
    assert connected.header("heart-beat") == "0,0"


def test_a_connect_without_accept_version_speaks_1_0(broker: Broker) -> None:
    w = Wire(broker)
    frames = w.send(frame("CONNECT", "login:guest", "passcode:guest"))
    assert frames[0].header("version") == "1.0"


def test_no_common_version_is_a_version_mismatch_and_the_connection_stays(broker: Broker) -> None:
    w = Wire(broker)
    _error(w.send(frame("CONNECT", "accept-version:2.0")), "Version mismatch",
           "Supported versions are 1.0,1.1,1.2\n")
    assert not w.conn.should_close


def test_a_wrong_password_is_access_refused_for_the_user(broker: Broker) -> None:
    w = Wire(broker)
    _error(w.send(frame("CONNECT", "login:guest", "passcode:nope")), "Bad CONNECT",
           "Access refused for user 'guest'\n")


def test_the_host_header_is_the_vhost_so_a_host_name_is_refused(broker: Broker) -> None:
    """stomp.py 1.1/1.2 sends its host name as ``host``: RabbitMQ takes it as the vhost."""
    w = Wire(broker)
    _error(w.send(frame("CONNECT", "accept-version:1.2", "host:127.0.0.1", "login:guest",
                        "passcode:guest")), "Bad CONNECT",
           "Virtual host '127.0.0.1' access denied")


def test_a_missing_vhost_is_refused_before_the_password_is_checked(broker: Broker) -> None:
    """rabbit_direct:connect/5 checks the vhost (and its connection limit) first."""
    w = Wire(broker)
    _error(w.send(frame("CONNECT", "host:nope", "login:guest", "passcode:bad")), "Bad CONNECT",
           "Virtual host 'nope' access denied")


def test_a_user_at_its_connection_limit_is_denied_the_vhost(broker: Broker) -> None:
    broker.add_user("u", "pw")
    broker.set_permissions("u", ".*", ".*", ".*")
    broker.set_user_limits("u", {"max-connections": 0})
    _error(Wire(broker).send(frame("CONNECT", "login:u", "passcode:pw")), "Bad CONNECT",
           "Virtual host '/' access denied")


def test_a_vhost_at_its_connection_limit_is_denied_before_the_password_is_checked(
        broker: Broker) -> None:
    broker.set_vhost_limits({"max-connections": 0})
    for password in ("guest", "wrong"):
        _error(Wire(broker).send(frame("CONNECT", "login:guest", f"passcode:{password}")),
               "Bad CONNECT", "Virtual host '/' access denied")


def test_guest_from_elsewhere_is_non_loopback_access_denied(broker: Broker) -> None:
    w = Wire(broker, loopback=False, peer="10.0.0.5:40000")
    _error(w.send(frame("CONNECT", "login:guest", "passcode:guest")), "Bad CONNECT",
           "non-loopback access denied")
    assert not broker.connections


def test_a_connect_without_login_uses_the_default_user(broker: Broker) -> None:
    w = Wire(broker)
    assert w.send(frame("CONNECT"))[0].command == "CONNECTED"
    assert w.conn.user == "guest"


def test_without_a_default_user_a_connect_without_login_is_a_bad_connect(broker: Broker) -> None:
    w = Wire(broker, settings=StompSettings(default_user=None))
    _error(w.send(frame("CONNECT")), "Bad CONNECT", "Missing login or passcode header(s)")


def test_a_frame_before_connect_is_an_illegal_command(broker: Broker) -> None:
    w = Wire(broker)
    _error(w.send(frame("SEND", "destination:/queue/q")), "Illegal command",
           "You must log in using CONNECT first")
    assert not w.conn.should_close


def test_implicit_connect_logs_in_the_default_user_without_connected(broker: Broker) -> None:
    w = Wire(broker, settings=StompSettings(implicit_connect=True))
    frames = w.send(frame("SEND", "destination:/queue/q", "receipt:r", body="x"))
    assert [f.command for f in frames] == ["RECEIPT"]
    assert broker.queues["q"].message_count == 1


def test_hide_server_info_leaves_the_server_header_out(broker: Broker) -> None:
    connected = Wire(broker, settings=StompSettings(hide_server_info=True)).connect()
    assert connected.header("server") is None


def test_the_connection_is_listed_as_stomp_of_its_version(broker: Broker) -> None:
    w = Wire(broker)
    w.connect(version="1.1")
    (model,) = broker.connections.values()
    assert model.kind.protocol == "STOMP 1.1"
    assert model.name == "127.0.0.1:50000 -> 127.0.0.1:61613"
    assert model.client_properties == {"product": "STOMP client"}
    assert sorted(model.channels) == [1]


# -- SEND and SUBSCRIBE ----------------------------------------------------------------------


def test_send_to_a_queue_declares_it_durable_and_delivers_with_rabbitmqs_headers(
        wire: Wire, broker: Broker) -> None:
    wire.send(frame("SEND", "destination:/queue/q", "persistent:true", "content-type:text/x",
                    "a:1", "b:2", "priority:3", "reply-to:foo", "correlation-id:c",
                    body="hi"))
    assert broker.queues["q"].durable
    (message,) = wire.send(frame("SUBSCRIBE", "destination:/queue/q"))
    assert message.command == "MESSAGE"
    assert [name for name, _ in message.headers] == [
        "destination", "message-id", "redelivered", "b", "a", "reply-to", "correlation-id",
        "priority", "persistent", "content-type", "content-length"]
    assert message.header("reply-to") == "/reply-queue/foo"
    assert message.header("message-id", "").startswith("Q_/queue/q@@session-")
    assert message.body == b"hi"


def test_message_id_is_not_allowed_on_send(wire: Wire) -> None:
    _error(wire.send(frame("SEND", "destination:/queue/q", "message-id:x")), "Invalid header",
           "'message-id' is not allowed on 'SEND'.\n")


def test_an_unknown_destination_lists_the_valid_prefixes(wire: Wire) -> None:
    _error(wire.send(frame("SEND", "destination:/foo/x")), "Unknown destination",
           "'/foo/x' is not a valid destination.\nValid destination types are: /temp-queue, "
           "/exchange, /topic, /queue, /amq/queue, /reply-queue/.\n")
    assert not wire.conn.should_close


def test_an_invalid_destination_names_its_type_and_what_followed(wire: Wire) -> None:
    _error(wire.send(frame("SEND", "destination:/queue/a/b")), "Invalid destination",
           "'/a/b' is not a valid queue destination\n")


def test_a_blank_destination_cannot_be_blank(wire: Wire) -> None:
    _error(wire.send(frame("SEND", "destination:")), "Invalid destination",
           "Destination cannot be blank")


def test_a_missing_destination_is_refused_naming_the_command(wire: Wire) -> None:
    _error(wire.send(frame("SUBSCRIBE")), "Missing destination",
           "\"SUBSCRIBE\" must include a 'destination' header\n")


def test_a_temp_queue_is_no_destination_to_subscribe_to(wire: Wire) -> None:
    _error(wire.send(frame("SUBSCRIBE", "destination:/temp-queue/t")), "Invalid destination",
           "'/temp-queue/t' is not a valid destination for 'SUBSCRIBE'\n")


def test_a_missing_amq_queue_ends_the_connection_with_not_found(wire: Wire) -> None:
    _error(wire.send(frame("SUBSCRIBE", "destination:/amq/queue/missing", "id:1")), "not_found",
           "NOT_FOUND - no queue 'missing' in vhost '/'")
    assert wire.conn.should_close


def test_a_send_to_a_missing_exchange_ends_the_connection_with_not_found(wire: Wire) -> None:
    _error(wire.send(frame("SEND", "destination:/exchange/missing/k", body="x")), "not_found",
           "NOT_FOUND - no exchange 'missing' in vhost '/'")
    assert wire.conn.should_close


def test_a_topic_subscription_is_a_queue_bound_to_amq_topic(wire: Wire, broker: Broker) -> None:
    wire.send(frame("SUBSCRIBE", "destination:/topic/a.*", "id:s"))
    (queue,) = [q for q in broker.queues.values() if q.name.startswith("stomp-subscription-")]
    assert (queue.durable, queue.exclusive, queue.auto_delete) == (False, False, True)
    (message,) = wire.send(frame("SEND", "destination:/topic/a.b", body="x"))
    assert message.headers[:2] == [("subscription", "s"), ("destination", "/topic/a.b")]


def test_a_durable_topic_subscription_keeps_its_queue_across_connections(
        broker: Broker) -> None:
    first = Wire(broker)
    first.connect()
    first.send(frame("SUBSCRIBE", "destination:/topic/t", "id:d", "persistent:true",
                     "auto-delete:false"))
    name = subscription_queue_name("t", "d")
    assert broker.queues[name].durable
    first.send(frame("DISCONNECT"))
    first.conn.connection_lost()
    publisher = Wire(broker)
    publisher.connect()
    publisher.send(frame("SEND", "destination:/topic/t", body="while away"))
    second = Wire(broker)
    second.connect()
    (message,) = second.send(frame("SUBSCRIBE", "destination:/topic/t", "id:d",
                                   "persistent:true", "auto-delete:false"))
    assert message.body == b"while away"
    second.send(frame("UNSUBSCRIBE", "id:d", "persistent:true"))
    assert name not in broker.queues


def test_a_durable_subscription_needs_an_id(wire: Wire) -> None:
    _error(wire.send(frame("SUBSCRIBE", "destination:/topic/t", "persistent:true")),
           "Missing Header", "Header 'id' is required for durable subscriptions")


def test_x_queue_name_and_x_arguments_shape_the_subscription_queue(
        wire: Wire, broker: Broker) -> None:
    wire.send(frame("SUBSCRIBE", "destination:/exchange/amq.direct/k", "x-queue-name:mine",
                    "x-max-length:5", "x-queue-type:classic", "id:1"))
    queue = broker.queues["mine"]
    assert queue.arguments == {"x-max-length": 5, "x-queue-type": "classic"}


def test_a_duplicated_subscription_id_ends_the_connection(wire: Wire) -> None:
    wire.send(frame("SUBSCRIBE", "destination:/queue/q", "id:1"))
    _error(wire.send(frame("SUBSCRIBE", "destination:/queue/q", "id:1")),
           "Duplicated subscription identifier", "A subscription identified by 'T_1' already "
           "exists.")
    assert wire.conn.should_close


def test_unsubscribe_of_no_subscription_names_the_description(wire: Wire) -> None:
    _error(wire.send(frame("UNSUBSCRIBE", "id:9")), "No subscription found",
           "UNSUBSCRIBE must refer to an existing subscription.\nSubscription to "
           "\"id='9'\" not found.\n")


def test_a_deleted_queue_cancels_the_subscription_with_an_error_frame(
        wire: Wire, broker: Broker) -> None:
    wire.send(frame("SUBSCRIBE", "destination:/queue/q", "id:7"))
    broker.open_connection().open_channel(1).queue_delete("q")
    _error(wire.frames(), "Server cancelled subscription",
           "The server has canceled a subscription.\nNo more messages will be delivered for "
           "\"id='7'\".\n")
    assert wire.frames() == []
    assert not wire.conn.should_close


def test_a_temp_queue_reply_to_is_a_queue_of_the_connection(wire: Wire, broker: Broker) -> None:
    responder = Wire(broker)
    responder.connect()
    responder.send(frame("SUBSCRIBE", "destination:/queue/requests"))
    (request,) = wire.send(frame("SEND", "destination:/queue/requests",
                                 "reply-to:/temp-queue/answers", body="ask")) or \
        responder.frames()
    reply_to = request.header("reply-to", "")
    assert reply_to.startswith("/reply-queue/amq.gen-")
    (reply,) = responder.send(frame("SEND", f"destination:{reply_to}", body="answer")) or \
        wire.frames()
    assert reply.header("subscription") == "/temp-queue/answers"
    assert reply.body == b"answer"


# -- acknowledgements, receipts, transactions ------------------------------------------------


def _deliveries(wire: Wire, n: int, ack: str) -> list:
    wire.send(frame("SUBSCRIBE", "destination:/queue/q", "id:1", f"ack:{ack}"))
    return [wire.send(frame("SEND", "destination:/queue/q", body=str(i)))[0] for i in range(n)]


def test_client_ack_is_cumulative_and_1_2_acks_by_the_ack_header(
        wire: Wire, broker: Broker) -> None:
    messages = _deliveries(wire, 3, "client")
    assert messages[1].header("ack") == messages[1].header("message-id")
    wire.send(frame("ACK", f"id:{messages[1].header('ack')}"))
    assert broker.queues["q"].unacked == 1  # (the third)


def test_client_individual_ack_settles_one(wire: Wire, broker: Broker) -> None:
    messages = _deliveries(wire, 3, "client-individual")
    wire.send(frame("ACK", f"id:{messages[1].header('ack')}"))
    assert broker.queues["q"].unacked == 2


def test_nack_requeues_by_default_and_drops_with_requeue_false(
        wire: Wire, broker: Broker) -> None:
    messages = _deliveries(wire, 2, "client-individual")
    (again,) = wire.send(frame("NACK", f"id:{messages[0].header('ack')}"))
    assert (again.body, again.header("redelivered")) == (b"0", "true")
    wire.send(frame("NACK", f"id:{messages[1].header('ack')}", "requeue:false"))
    assert broker.queues["q"].unacked == 1  # (the first, delivered again)


def test_an_ack_without_its_header_names_the_header_of_the_version(broker: Broker) -> None:
    w = Wire(broker)
    w.connect(version="1.1")
    _error(w.send(frame("ACK")), "Missing header",
           "\"ACK\" must include the \"message-id\" header\n")
    _error(w.send(frame("ACK", "message-id:nonsense")), "Invalid header",
           "\"ACK\" must include a valid \"message-id\" header\n")
    _error(w.send(frame("ACK", "message-id:T_x@@s@@1")), "Subscription not found",
           "Message with id \"T_x@@s@@1\" has no subscription")


def test_an_ack_of_an_unknown_tag_ends_the_connection(wire: Wire) -> None:
    wire.send(frame("SUBSCRIBE", "destination:/queue/q", "id:1", "ack:client-individual"))
    _error(wire.send(frame("ACK", "id:T_1@@s@@99")), "precondition_failed",
           "PRECONDITION_FAILED - unknown delivery tag 99")


def test_a_send_receipt_follows_the_confirm_and_puts_the_channel_in_confirm_mode(
        wire: Wire) -> None:
    frames = wire.send(frame("SEND", "destination:/queue/q", "receipt:r1", body="x"))
    assert [(f.command, f.headers) for f in frames] == [("RECEIPT", [("receipt-id", "r1")])]
    assert wire.conn.channel is not None
    assert wire.conn.channel.confirm_mode


def test_a_frames_deliveries_follow_its_receipt_and_send_receipts_its_confirms(wire: Wire) -> None:
    frames = wire.send(frame("SEND", "destination:/queue/q", "receipt:a", body="1")
                       + frame("SUBSCRIBE", "destination:/queue/q", "receipt:b")
                       + frame("SEND", "destination:/queue/q", "receipt:c", body="2"))
    # (a frame's deliveries follow its receipt; a SEND's receipt follows its confirm)
    assert [(f.command, f.header("receipt-id") or f.body.decode()) for f in frames] == [
        ("RECEIPT", "b"), ("MESSAGE", "1"), ("MESSAGE", "2"), ("RECEIPT", "a"),
        ("RECEIPT", "c")]


def test_a_transaction_holds_sends_and_acks_until_commit(wire: Wire, broker: Broker) -> None:
    messages = _deliveries(wire, 1, "client-individual")
    wire.send(frame("BEGIN", "transaction:t"))
    wire.send(frame("SEND", "destination:/queue/other", "transaction:t", "receipt:s",
                    body="held"))
    wire.send(frame("ACK", f"id:{messages[0].header('ack')}", "transaction:t"))
    assert broker.queues["other"].message_count == 0
    assert broker.queues["q"].unacked == 1
    frames = wire.send(frame("COMMIT", "transaction:t", "receipt:c"))
    assert [f.header("receipt-id") for f in frames] == ["c", "s"]
    assert (broker.queues["other"].message_count, broker.queues["q"].unacked) == (1, 0)


def test_abort_forgets_the_sends_and_leaves_the_acks_unacknowledged(
        wire: Wire, broker: Broker) -> None:
    messages = _deliveries(wire, 1, "client-individual")
    wire.send(frame("BEGIN", "transaction:t"))
    wire.send(frame("SEND", "destination:/queue/other", "transaction:t", body="held"))
    wire.send(frame("ACK", f"id:{messages[0].header('ack')}", "transaction:t"))
    wire.send(frame("ABORT", "transaction:t"))
    assert broker.queues["other"].message_count == 0
    wire.send(frame("ACK", f"id:{messages[0].header('ack')}"))
    assert broker.queues["q"].unacked == 0


def test_a_refused_send_in_a_transaction_ends_the_connection_at_commit_after_its_receipt(
        wire: Wire) -> None:
    wire.send(frame("BEGIN", "transaction:t"))
    assert wire.send(frame("SEND", "destination:/exchange/missing/k", "transaction:t")) == []
    frames = wire.send(frame("COMMIT", "transaction:t", "receipt:c"))
    assert [f.command for f in frames] == ["RECEIPT", "ERROR"]
    assert frames[1].body == b"NOT_FOUND - no exchange 'missing' in vhost '/'"


def test_an_unknown_or_missing_transaction_is_refused(wire: Wire) -> None:
    _error(wire.send(frame("COMMIT", "transaction:nope")), "Bad transaction",
           "Invalid transaction identifier: \"nope\"\n")
    _error(wire.send(frame("BEGIN")), "Missing transaction",
           "\"BEGIN\" must include a 'transaction' header\n")


def test_disconnect_sends_its_receipt_then_ends(wire: Wire, broker: Broker) -> None:
    frames = wire.send(frame("DISCONNECT", "receipt:bye"))
    assert [(f.command, f.header("receipt-id")) for f in frames] == [("RECEIPT", "bye")]
    assert wire.conn.should_close
    assert not broker.connections


def test_an_unknown_command_is_a_bad_command(wire: Wire) -> None:
    _error(wire.send(frame("FOO")), "Bad command", "Could not interpret command \"FOO\"\n")


# -- permissions, in RabbitMQ's order --------------------------------------------------------


@pytest.fixture
def limited(broker: Broker) -> Wire:
    broker.add_user("u", "pw")
    broker.set_permissions("u", "^st_.*", "^st_.*", "^$")
    broker.set_topic_permissions("u", "amq.topic", "^a\\..*", "^a\\..*")
    w = Wire(broker)
    w.connect("u", "pw")
    return w


def test_subscribe_without_read_permission_is_access_refused(limited: Wire) -> None:
    _error(limited.send(frame("SUBSCRIBE", "destination:/queue/st_q")), "access_refused",
           "ACCESS_REFUSED - access to queue 'st_q' in vhost '/' refused for user 'u'")


def test_a_topic_subscription_asks_the_topic_read_permission_first(limited: Wire,
                                                                   broker: Broker) -> None:
    _error(limited.send(frame("SUBSCRIBE", "destination:/topic/b.c")), "access_refused",
           "access to topic 'b.c' in exchange 'amq.topic' in vhost '/' refused for user 'u'")
    assert not [q for q in broker.queues if q.startswith("stomp-subscription-")]


def test_a_permitted_topic_still_needs_configure_on_the_subscription_queue(
        limited: Wire) -> None:
    frames = limited.send(frame("SUBSCRIBE", "destination:/topic/a.c"))
    assert frames[0].header("message") == "access_refused"
    assert frames[0].body.decode().startswith(
        "ACCESS_REFUSED - access to queue 'stomp-subscription-")


def test_send_without_write_permission_on_the_exchange_is_access_refused(limited: Wire) -> None:
    _error(limited.send(frame("SEND", "destination:/topic/b.c", body="x")), "access_refused",
           "ACCESS_REFUSED - access to exchange 'amq.topic' in vhost '/' refused for user 'u'")


# -- the broker's side -----------------------------------------------------------------------


def test_a_publisher_is_not_read_once_it_sends_under_an_alarm(wire: Wire, broker: Broker) -> None:
    wire.conn.publishers_blocked("low on memory")
    wire.send(frame("SUBSCRIBE", "destination:/queue/q"))
    assert not wire.conn.blocked
    wire.send(frame("SEND", "destination:/queue/q", body="x"))
    assert wire.conn.blocked
    wire.conn.publishers_unblocked()
    assert not wire.conn.blocked


def test_a_forced_close_is_the_channel_dying_of_its_connections_closing(wire: Wire,
                                                                   broker: Broker) -> None:
    (model,) = broker.connections.values()
    from embroker.errors import ConnectionForced

    model.close_by_broker(ConnectionForced("test close"))
    # (the plugin's channel dies of its connection's closing; checked live: the management
    # API's DELETE of a STOMP connection with X-Reason "test close")
    _error(wire.frames(), "AMQP channel died",
           'Reason: {shutdown,\n            {connection_closing,{server_initiated_close,320,'
           '"test close"}}}')
    assert wire.conn.should_close


def test_heart_beats_run_on_the_broker_clock() -> None:
    clock = ManualClock()
    broker = Broker(clock=clock)
    w = Wire(broker)
    connected = w.connect(extra="heart-beat:2000,3000\n")
    assert connected.header("heart-beat") == "3000,2000"
    clock.advance(3)
    w.conn.tick()
    assert w.conn.data_to_send() == b"\n"
    clock.advance(0.9)
    w.conn.tick()
    assert not w.conn.should_close
    clock.advance(0.1)
    w.conn.tick()
    assert w.conn.should_close  # (nothing from the client for two of its intervals)


def test_a_client_that_never_logs_in_is_dropped_at_the_login_timeout() -> None:
    clock = ManualClock()
    w = Wire(Broker(clock=clock))
    clock.advance(9.9)
    w.conn.tick()
    assert not w.conn.should_close
    clock.advance(0.1)
    w.conn.tick()
    assert w.conn.should_close
    assert w.frames() == []


def test_a_frame_that_cannot_be_parsed_gets_an_error_frame_then_the_end(broker: Broker) -> None:
    """RabbitMQ 3.10 closes without a word; embroker says why first."""
    w = Wire(broker)
    _error(w.send(b"CONNECT\nno colon here\n\n\x00"), "Invalid frame",
           "Could not parse frame: header_no_value: 'no colon here'\n")
    assert w.conn.should_close


def test_a_frame_past_the_login_bound_is_refused_before_login(broker: Broker) -> None:
    w = Wire(broker)
    frames = w.send(b"CONNECT\nlogin:guest\n\n" + b"x" * (65 * 1024))
    assert frames[0].header("message") == "Invalid frame"
    assert w.conn.should_close


class _Tls:
    """A TLS session's peer certificate, as the listener's TLSSocket gives it."""

    def __init__(self, certificate: dict | None) -> None:
        self.certificate = certificate

    def peer_certificate(self) -> dict | None:
        return self.certificate


def test_ssl_cert_login_logs_in_as_the_certificates_name_without_login(broker: Broker) -> None:
    broker.add_user("O=client,CN=host", "unused")
    broker.set_permissions("O=client,CN=host", ".*", ".*", ".*")
    subject = ((("commonName", "host"),), (("organizationName", "client"),))
    w = Wire(broker, settings=StompSettings(ssl_cert_login=True), tls=_Tls({"subject": subject}))
    assert w.send(frame("CONNECT", "accept-version:1.2", "host:/"))[0].command == "CONNECTED"
    assert w.conn.user == "O=client,CN=host"


def test_ssl_cert_login_with_a_login_header_uses_the_password(broker: Broker) -> None:
    subject = ((("commonName", "host"),),)
    w = Wire(broker, settings=StompSettings(ssl_cert_login=True), tls=_Tls({"subject": subject}))
    _error(w.send(frame("CONNECT", "login:guest", "passcode:nope")), "Bad CONNECT",
           "Access refused for user 'guest'\n")


def test_a_stream_is_read_from_the_offset_the_subscription_names(wire: Wire,
                                                                 broker: Broker) -> None:
    setup = broker.open_connection().open_channel(1)
    setup.queue_declare("log", durable=True, arguments={"x-queue-type": "stream"})
    for body in (b"a", b"b", b"c"):
        setup.basic_publish("", "log", body)
    frames = wire.send(frame("SUBSCRIBE", "destination:/amq/queue/log", "id:1",
                             "ack:client-individual", "prefetch-count:10",
                             "x-stream-offset:offset=1"))
    assert [f.body for f in frames] == [b"b", b"c"]


def test_ssl_cert_login_without_a_certificate_falls_back_to_the_default_user(
        broker: Broker) -> None:
    w = Wire(broker, settings=StompSettings(ssl_cert_login=True), tls=_Tls(None))
    assert w.send(frame("CONNECT"))[0].command == "CONNECTED"
    assert w.conn.user == "guest"


def test_a_forced_close_before_login_ends_the_connection_without_a_frame(broker: Broker) -> None:
    from embroker.errors import ConnectionForced

    w = Wire(broker)
    w.conn.close(ConnectionForced("shutdown"))
    assert w.frames() == []
    assert w.conn.should_close
