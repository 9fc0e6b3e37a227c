"""A short string of a method without content must be UTF-8 as RabbitMQ reads it.

RabbitMQ 3.10.8's generated decoder calls ``rabbit_binary_parser:assert_utf8/1`` on every
shortstr of a method that carries no content (``codegen.py``: "We skip the check on
content-bearing methods for speed"), which reads it with Erlang's ``xmerl_ucs:from_utf8/1``: a
sequence that is cut short, overlong, or led by a byte that leads nothing is a connection error,
``501 FRAME_ERROR - Malformed UTF-8 in shortstr`` with no class or method; the encoding of a
surrogate (``\\xed\\xa0\\x80``) or of a code point past U+10FFFF (up to 0x1FFFFF) passes. So a
queue, exchange or vhost name, a consumer tag or a binding key holds no byte that is no UTF-8,
while a published routing key and the message properties may (they come with content).
Checked live on this run when EMBROKER_REFERENCE_URL is set; the outcomes below were read from
it.
"""

from __future__ import annotations

import os
import urllib.parse
import uuid

import pytest

from embroker import Broker
from embroker import amqp091 as a
from embroker.amqp091._frames import decode_method
from embroker.amqp091._methods import METHOD_CLASSES
from embroker.amqp091._spec import METHODS
from embroker.errors import FrameError
from embroker.server import Server
from tests.server.test_connection import Client
from tests.wire_client import RawClient, raw

M = a.methods

#: Bytes xmerl_ucs refuses: a stray byte, overlong forms, a sequence cut short, a 5-byte form.
MALFORMED = {"ff": b"\xff", "continuation": b"\x80", "overlong-2": b"\xc0\x80",
             "overlong-3": b"\xe0\x80\x80", "cut-short": b"\xe2\x82", "cut-by-ascii": b"\xe2x",
             "5-bytes": b"\xf8\x88\x80\x80\x80"}
#: Bytes it reads (Python's UTF-8 codec refuses the first three): a surrogate's encoding, code
#: points past U+10FFFF, and ordinary text with control characters.
READABLE = {"surrogate": b"\xed\xa0\x80", "past-10ffff": b"\xf4\x90\x80\x80",
            "1fffff": b"\xf7\xbf\xbf\xbf", "text": "é\u2028".encode(), "controls": b"a\x00\x1b"}

MALFORMED_CLOSE = M.ConnectionClose(reply_code=501,
                                    reply_text="FRAME_ERROR - Malformed UTF-8 in shortstr",
                                    class_id=0, method_id=0)


def _declare(client: Client, name: str) -> object:
    client.handshake()
    client.open_channel()
    (answer,) = client.call(1, M.QueueDeclare(queue=name, exclusive=True))
    return answer


@pytest.mark.parametrize("data", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_queue_name_closes_the_connection_with_501(data: bytes) -> None:
    client = Client(Broker())
    assert _declare(client, raw(b"q-" + data)) == MALFORMED_CLOSE
    assert client.server.should_close


@pytest.mark.parametrize("data", READABLE.values(), ids=READABLE.keys())
def test_a_name_erlang_reads_as_utf8_is_taken(data: bytes) -> None:
    broker = Broker()
    name = raw(b"q-" + data)
    answer = _declare(Client(broker), name)
    assert isinstance(answer, M.QueueDeclareOk)
    assert answer.queue == name
    assert name in broker.vhosts["/"].queues


def _methods_with_short_strings() -> list[tuple[str, str]]:
    return [(spec.name, argument.attribute) for spec in METHODS if not spec.content
            for argument in spec.arguments if argument.type == "shortstr"]


@pytest.mark.parametrize(("method", "attribute"), _methods_with_short_strings(),
                         ids=lambda x: x)
def test_every_short_string_of_a_method_without_content_is_checked(method: str,
                                                                   attribute: str) -> None:
    spec = next(s for s in METHODS if s.name == method)
    cls = METHOD_CLASSES[spec.index]
    sent = cls(**{attribute: raw(b"\xff")})
    with pytest.raises(FrameError) as refused:
        decode_method(sent.encode())
    assert (refused.value.reply_text, refused.value.class_id, refused.value.method_id) == (
        "FRAME_ERROR - Malformed UTF-8 in shortstr", 0, 0)
    readable = cls(**{attribute: raw(b"\xed\xa0\x80")})
    assert decode_method(readable.encode()) == readable


def test_a_published_routing_key_and_properties_are_not_checked(server: Server) -> None:
    """(Content-bearing methods and content headers skip the check in RabbitMQ.)"""
    bad = raw(b"\xff\xfe")
    with RawClient("127.0.0.1", server.port) as client:
        client.call(M.QueueDeclare(queue="q"))
        client.call(M.QueueBind(queue="q", exchange="amq.fanout"))
        client.publish("amq.fanout", "rk" + bad, b"x", {"message_id": bad, "type": bad})
        client.call(M.BasicConsume(queue="q", consumer_tag="c", no_ack=True))
        delivery = client.next()
    assert delivery.method.routing_key == "rk" + bad
    assert (delivery.properties["message_id"], delivery.properties["type"]) == (bad, bad)


def _outcome(host: str, port: int, data: bytes, tag: str) -> str:
    with RawClient(host, port) as client:
        answer = client.call(M.QueueDeclare(queue=raw(f"shortstr-{tag}-".encode() + data),
                                            exclusive=True))
    return "ok" if isinstance(answer, M.QueueDeclareOk) else f"{answer.reply_code} " \
        f"{answer.reply_text} {answer.class_id}/{answer.method_id}"


def test_the_outcomes_are_rabbitmqs(server: Server) -> None:
    cases = {**MALFORMED, **READABLE}
    expected = {label: "ok" if label in READABLE else
                "501 FRAME_ERROR - Malformed UTF-8 in shortstr 0/0" for label in cases}
    tag = uuid.uuid4().hex[:8]
    assert {label: _outcome("127.0.0.1", server.port, data, tag)
            for label, data in cases.items()} == expected
    reference = os.environ.get("EMBROKER_REFERENCE_URL")
    if reference:
        parts = urllib.parse.urlsplit(reference)
        assert {label: _outcome(parts.hostname or "127.0.0.1", parts.port or 5672, data, tag)
                for label, data in cases.items()} == expected
