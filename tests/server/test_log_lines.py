"""Text a client chose reaches the log escaped, one call one line (embroker._untrusted.log_text).

Before, a login name with a line feed was logged as it came: an unauthenticated peer could write
a line of its choosing into the broker's log (``bob\\n2026-01-01 [INFO] ...``), and an ANSI
escape could repaint the terminal of whoever read it. Each protocol's refused login is logged
as RabbitMQ 3.10.8 logs it (``PLAIN login refused: user 'bob' - invalid credentials``:
rabbit_reader's ``auth_fail``, the AMQP 1.0 reader's ``~s login refused: ~s``, the stream
reader's warning, rabbit_mgmt_util's ``HTTP access denied: user '~s' - ~s``), with the name's
control characters, separators, bidirectional controls and bytes that are no UTF-8 escaped.
"""

from __future__ import annotations

import base64
import logging
import socket
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pika
import pytest
import trustme

from embroker import Broker
from embroker import amqp091 as a
from embroker.amqp10 import FRAME_SASL, SASL_HEADER, SaslInit, Symbol, encode_frame
from embroker.server import Server
from embroker.stream import Key
from embroker.testing import wait_until
from tests.server import test_tls as tls
from tests.stream.test_connection import Peer
from tests.wire_client import RawClient

M = a.methods

#: A login name that, logged raw, forges a line and repaints a terminal.
HOSTILE = "bob\r\n2026-01-01 00:00:00.000 [info] <0.1.0> \x1b[31mroot logged in\x1b[0m\u202e"
#: How it must appear in the log.
ESCAPED = ("bob\\r\\n2026-01-01 00:00:00.000 [info] <0.1.0> \\x1b[31mroot logged in\\x1b[0m"
           "\\u202e")

#: One that fits a certificate's common name (64 characters at most).
HOSTILE_CN = "bob\r\n2026-01-01 [info] \x1b[31mroot\x1b[0m"
ESCAPED_CN = "bob\\r\\n2026-01-01 [info] \\x1b[31mroot\\x1b[0m"


@pytest.fixture(autouse=True)
def info_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="embroker")


def lines(caplog: pytest.LogCaptureFixture, needle: str) -> list[str]:
    """The log records that mention ``needle``; each must be one line of plain text."""
    found = [r.getMessage() for r in caplog.records if needle in r.getMessage()]
    for message in found:
        assert not any(c in message for c in "\r\n\x1b\u202e"), message
    return found


def test_amqp091_a_refused_login_name_is_escaped(server: Server,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(pika.exceptions.ProbableAuthenticationError):
        pika.BlockingConnection(pika.ConnectionParameters(
            "127.0.0.1", server.port, credentials=pika.PlainCredentials(HOSTILE, "pw")))
    wait_until(lambda: lines(caplog, " ended: "))
    (line,) = lines(caplog, " ended: ")
    assert line.endswith(f"ended: PLAIN login refused: user '{ESCAPED}' - invalid credentials")


def test_amqp091_client_texts_are_escaped(server: Server,
                                          caplog: pytest.LogCaptureFixture) -> None:
    """The connection name, a missing queue's name in the broker's close, the client's own
    close reason."""
    with RawClient("127.0.0.1", server.port, {"connection_name": HOSTILE}) as client:
        client.call(M.QueueDeclare(queue="q\n" + HOSTILE, passive=True))  # (404: closed)
        client.send(1, M.ChannelCloseOk())
        client.send(2, M.ChannelOpen())
        client.next()
        client.call(M.ChannelClose(reply_code=200, reply_text=HOSTILE, class_id=0,
                                   method_id=0), channel=2)
        client.call(M.ConnectionClose(reply_code=320, reply_text=HOSTILE, class_id=0,
                                      method_id=0), channel=0)
    wait_until(lambda: lines(caplog, " ended: "))
    caplog.set_level(logging.DEBUG, logger="embroker")
    (closed,) = lines(caplog, "closed by the broker")
    assert f"('{ESCAPED}', user 'guest', vhost '/')" in closed
    assert "channel 1 closed by the broker: 404 NOT_FOUND - no queue 'q" in closed
    assert closed.endswith(f"{ESCAPED}' in vhost '/'")
    (ended,) = lines(caplog, " ended: ")
    assert ended.endswith(f"ended: closed by the client (connection.close 320 '{ESCAPED}')")


def test_amqp10_a_refused_login_name_is_escaped(server: Server,
                                                caplog: pytest.LogCaptureFixture) -> None:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(SASL_HEADER)
    sock.sendall(encode_frame(0, SaslInit(Symbol("PLAIN"), b"\0" + HOSTILE.encode() + b"\0pw"),
                              kind=FRAME_SASL))
    while sock.recv(65536):  # (the outcome, then the socket closes)
        pass
    sock.close()
    wait_until(lambda: lines(caplog, " ended"))
    (line,) = lines(caplog, " ended")
    assert line.endswith(f": PLAIN login refused: user '{ESCAPED}' - invalid credentials")


def test_stream_a_refused_login_name_is_escaped(caplog: pytest.LogCaptureFixture) -> None:
    peer = Peer(Broker())
    peer.send(peer.request(Key.PEER_PROPERTIES).properties({"product": "test"}).frame())
    peer.send(peer.request(Key.SASL_HANDSHAKE).frame())
    peer.send(peer.request(Key.SASL_AUTHENTICATE).string("PLAIN")
              .bytes_(b"\0" + HOSTILE.encode() + b"\0pw").frame())
    (line,) = lines(caplog, "login refused")
    assert line.endswith(f"PLAIN login refused: user '{ESCAPED}' - invalid credentials")


def test_management_a_refused_login_name_is_escaped(caplog: pytest.LogCaptureFixture) -> None:
    hostile = HOSTILE.replace(":", ".")  # (basic auth's name ends at its first colon)
    with Broker().serve(management=True) as server:
        token = base64.b64encode(f"{hostile}:pw".encode()).decode()
        request = urllib.request.Request(server.management_url + "api/overview",
                                         headers={"authorization": f"Basic {token}"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=5)
        assert refused.value.code == 401
    (line,) = lines(caplog, "HTTP access denied")
    assert line == f"HTTP access denied: user '{ESCAPED.replace(':', '.')}' - invalid " \
        "credentials"


def test_a_name_that_is_no_utf8_is_logged_as_its_bytes(server: Server,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    with RawClient("127.0.0.1", server.port,
                   {"connection_name": "a" + b"\xff\xfe".decode("utf-8", "surrogateescape")}):
        pass
    wait_until(lambda: lines(caplog, " ended: "))
    (line,) = lines(caplog, " ended: ")
    assert "('a\\xff\\xfe', user 'guest', vhost '/')" in line
    line.encode("utf-8")  # (text a log file takes)


# -- SASL EXTERNAL: the name taken from the certificate, and why it was refused --------------------

def _external(server: Server, context: ssl.SSLContext) -> None:
    with pytest.raises(pika.exceptions.ProbableAuthenticationError):
        pika.BlockingConnection(pika.ConnectionParameters(
            "localhost", server.tls_port or 0,
            credentials=pika.credentials.ExternalCredentials(),
            ssl_options=pika.SSLOptions(context, "localhost")))


def test_a_refused_external_login_is_logged_with_the_name_tried_and_why(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """As rabbit_auth_mechanism_ssl and rabbit_reader log it (v3.10.8): the user name the
    certificate gave and ``invalid credentials``, or ``connection peer presented no TLS (x.509)
    certificate``. (Before: "authentication refused for unreadable credentials".)"""
    ca = trustme.CA()
    files = tls.Files(ca, str(tmp_path / "ca.pem"), str(tmp_path / "server.pem"),
                      str(tmp_path / "server.key"))
    server_leaf = ca.issue_cert("localhost", "127.0.0.1")
    ca.cert_pem.write_to_path(files.cacertfile)
    server_leaf.cert_chain_pems[0].write_to_path(files.certfile)
    server_leaf.private_key_pem.write_to_path(files.keyfile)
    contexts = {}
    for label, common_name in (("stranger", "nobody"), ("hostile", HOSTILE_CN)):
        leaf = ca.issue_cert("client", common_name=common_name)
        leaf.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / f"{label}.pem"))
        contexts[label] = tls.client_context(files)
        contexts[label].load_cert_chain(str(tmp_path / f"{label}.pem"))
    broker = Broker(auth_mechanisms=("PLAIN", "EXTERNAL"), ssl_cert_login_from="common_name")
    with broker.serve(tls=tls.options(files, verify="verify_peer"), tls_port=0) as server:
        for context in (tls.client_context(files), contexts["stranger"], contexts["hostile"]):
            _external(server, context)
        wait_until(lambda: len(lines(caplog, " ended: ")) == 3)
    assert sorted(line.partition(" ended: ")[2] for line in lines(caplog, " ended: ")) == [
        "EXTERNAL login refused: connection peer presented no TLS (x.509) certificate",
        f"EXTERNAL login refused: user '{ESCAPED_CN}' - invalid credentials",
        "EXTERNAL login refused: user 'nobody' - invalid credentials"]


def test_an_unexpected_errors_message_is_escaped_and_its_frames_follow(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A bug's message may quote a client (a name it failed on): its line is escaped, and the
    traceback's frames (embroker's own lines) follow it."""
    from embroker.model import Channel

    def declare(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError(HOSTILE)
    monkeypatch.setattr(Channel, "queue_declare", declare)
    broker = Broker()
    with broker.serve() as server, RawClient("127.0.0.1", server.port) as client:
        client.call(M.QueueDeclare(queue="q"))  # (541: the bug closes this connection)
        wait_until(lambda: server.errors)
        server.errors.clear()
    (record,) = [r for r in caplog.records if r.getMessage().startswith("unexpected error")]
    first, *frames = record.getMessage().splitlines()
    assert first.endswith(f": RuntimeError: {ESCAPED}")
    assert frames[0] == "Traceback (most recent call last):"
    assert frames[-1].strip() == "raise RuntimeError(HOSTILE)"
