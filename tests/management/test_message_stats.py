"""``message_stats`` after a scripted workload (publish with confirms, mandatory returns,
unroutable drops, gets with and without acks, a requeue and its redelivery, an empty get,
consumers with and without acks) on channels, exchanges, queues and the vhost: embroker's
equal RabbitMQ 3.10.8's, recorded in ``golden/message_stats.json`` by
``python -m tests.management.message_stats`` (issue #50, part 3).

Differences on purpose: none. Two of 3.10.8's own are followed: its API shows
``drop_unroutable`` and ``get_empty`` as 0 whatever happened (the golden file has both events),
and an object shows a group of counts only once something counted in it. embroker's counts
are current when read; RabbitMQ's lag by up to its statistics interval (5 s).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from embroker import Broker

from .message_stats import GOLDEN, Api, run

REFERENCE = os.environ.get("EMBROKER_REFERENCE_URL")


@pytest.fixture
def served() -> Iterator[tuple[str, str]]:
    broker = Broker()
    with broker.serve(management=True) as server:
        yield server.management_url + "api", server.url


def test_message_stats_are_what_rabbitmq_shows_after_the_workload(
        served: tuple[str, str]) -> None:
    base, url = served
    assert run(base, url, settle=False) == json.loads(GOLDEN.read_text())


def test_the_overview_sums_the_vhosts(served: tuple[str, str]) -> None:
    import pika

    base, url = served
    api = Api(base)
    api.call("PUT", "/vhosts/other", {})
    api.call("PUT", "/permissions/other/guest", {"configure": ".*", "write": ".*", "read": ".*"})
    for vhost in ("%2F", "other"):
        connection = pika.BlockingConnection(pika.URLParameters(f"{url.rstrip('/')}/{vhost}"))
        channel = connection.channel()
        channel.queue_declare("q")
        channel.basic_publish("", "q", b"x")
        assert channel.basic_get("q", auto_ack=True)[0] is not None
        connection.close()
    overview = api.call("GET", "/overview")["message_stats"]
    assert (overview["publish"], overview["get_no_ack"], overview["deliver_get"]) == (2, 2, 2)
    assert overview["disk_reads"] == overview["disk_writes"] == 0
    assert api.call("GET", "/vhosts/other")["message_stats"]["publish"] == 1


@pytest.mark.skipif(not REFERENCE, reason="EMBROKER_REFERENCE_URL is not set")
def test_golden_file_is_what_rabbitmq_shows() -> None:
    assert REFERENCE is not None
    from urllib.parse import urlsplit

    host = urlsplit(REFERENCE).hostname or "127.0.0.1"
    assert run(f"http://{host}:15672/api", REFERENCE, settle=True) == json.loads(
        GOLDEN.read_text())
