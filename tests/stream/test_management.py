"""A stream in the management API: its type, and the messages its log keeps (RabbitMQ 3.10
shows them once its statistics come in; embroker at once). Its consumers take nothing, so
nothing is ever unacknowledged in the listing. A stream-protocol connection is listed as
RabbitMQ lists it (protocol ``stream``, no channels)."""

from __future__ import annotations

import base64
import json
import os
import time
import urllib.parse
import urllib.request
from typing import Any

import pika
import pytest

from embroker import Broker
from tests.management.test_api import Api
from tests.stream.test_listener import _closed_without_a_frame
from tests.stream.test_raw_frames import REFERENCE_STREAM_PORT, RawClient


def test_a_stream_shows_its_type_and_what_it_keeps() -> None:
    broker = Broker()
    with broker.serve(management=True) as server:
        connection = pika.BlockingConnection(pika.URLParameters(server.url))
        channel = connection.channel()
        channel.queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
        for body in (b"1", b"2", b"3"):
            channel.basic_publish("", "s", body)
        channel.basic_qos(prefetch_count=10)
        got: list[bytes] = []

        def on_message(ch: object, method: object, _props: object, body: bytes) -> None:
            got.append(body)
            channel.basic_ack(method.delivery_tag)  # type: ignore[attr-defined]

        # (pika rejects the deliveries it holds undispatched when it closes: a stream refuses
        # rejects with 540, as RabbitMQ does, so they are taken and acknowledged first)
        channel.basic_consume("s", on_message, arguments={"x-stream-offset": "first"})
        while len(got) < 3:
            connection.process_data_events(time_limit=1)
        _, queue = Api(server)("GET", "/queues/%2F/s")
        assert (queue["type"], queue["messages"], queue["messages_ready"],
                queue["messages_unacknowledged"], queue["consumers"]) == ("stream", 3, 3, 0, 1)
        assert queue["arguments"] == {"x-queue-type": "stream"}
        assert "backing_queue_status" not in queue
        connection.close()
        assert server.errors == []


#: The keys of a stream connection in RabbitMQ 3.10.8's ``GET /api/connections`` (a raw client
#: on 5552, read 2026-11-24; rabbit_stream_reader's ?CREATION_EVENT_KEYS): no channels, no
#: state, no type, no socket statistics.
RABBITMQ_STREAM_CONNECTION_KEYS = {
    "auth_mechanism", "channel_max", "client_properties", "connected_at", "frame_max", "host",
    "name", "node", "peer_cert_issuer", "peer_cert_subject", "peer_cert_validity", "peer_host",
    "peer_port", "port", "protocol", "ssl", "ssl_cipher", "ssl_hash", "ssl_key_exchange",
    "ssl_protocol", "timeout", "user", "user_who_performed_action", "vhost"}


def _listed(raw: RawClient, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    here = raw.sock.getsockname()
    return next((row for row in rows if row["name"].startswith(f"{here[0]}:{here[1]} ")), None)


def test_a_stream_connection_is_listed_as_rabbitmq_lists_it() -> None:
    broker = Broker()
    with broker.serve(stream_port=0, management=True) as server:
        assert server.stream_port is not None
        raw = RawClient("127.0.0.1", server.stream_port)
        raw.open()
        api = Api(server)
        row = _listed(raw, api("GET", "/connections")[1])
        assert row is not None
        assert set(row) == RABBITMQ_STREAM_CONNECTION_KEYS
        here = raw.sock.getsockname()
        assert {k: row[k] for k in ("name", "protocol", "port", "peer_port", "frame_max",
                                    "timeout", "client_properties", "channel_max")} == {
            "name": f"127.0.0.1:{here[1]} -> 127.0.0.1:{server.stream_port}",
            "protocol": "stream", "port": server.stream_port, "peer_port": here[1],
            "frame_max": 1_048_576, "timeout": 0, "client_properties": {}, "channel_max": 0}
        assert api("GET", "/channels")[1] == []  # (its model channel is embroker's own)
        assert api("GET", "/overview")[1]["object_totals"]["channels"] == 0
        raw.close()
        assert server.errors == []


@pytest.mark.skipif(not os.environ.get("EMBROKER_REFERENCE_URL"),
                    reason="EMBROKER_REFERENCE_URL is not set")
def test_rabbitmq_lists_a_stream_connection_with_these_keys_and_deletes_it_silently() -> None:
    url = urllib.parse.urlsplit(os.environ["EMBROKER_REFERENCE_URL"])
    host = url.hostname or "127.0.0.1"
    raw = RawClient(host, REFERENCE_STREAM_PORT)
    try:
        raw.open()
        auth = base64.b64encode(f"{url.username or 'guest'}:{url.password or 'guest'}"
                                .encode()).decode()
        deadline = time.monotonic() + 30  # (RabbitMQ lists it once its statistics are out)
        row = None
        while row is None and time.monotonic() < deadline:
            request = urllib.request.Request(f"http://{host}:15672/api/connections",
                                             headers={"authorization": "Basic " + auth})
            with urllib.request.urlopen(request, timeout=5) as response:
                row = _listed(raw, json.loads(response.read()))
            if row is None:
                time.sleep(0.5)
        assert row is not None, "RabbitMQ did not list the stream connection within 30 s"
        assert set(row) == RABBITMQ_STREAM_CONNECTION_KEYS
        assert (row["protocol"], row["port"]) == ("stream", REFERENCE_STREAM_PORT)
        delete = urllib.request.Request(
            f"http://{host}:15672/api/connections/" + urllib.parse.quote(row["name"], safe=""),
            method="DELETE", headers={"authorization": "Basic " + auth})
        with urllib.request.urlopen(delete, timeout=5) as response:
            assert response.status == 204
        assert _closed_without_a_frame(raw.sock)  # (what embroker's listener does too)
    finally:
        raw.close()
