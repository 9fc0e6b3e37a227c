"""RabbitMQ 3.10.8's own management UI (its files from the RabbitMQ on this machine: embroker
ships none) in headless Chromium against embroker, walked as an operator walks it
(:mod:`.uiwalk`: log in, Overview, Connections, Channels, Exchanges, Queues, a queue's page
with publish, get and purge, Admin), and compared with the same walk on the reference's
management plugin, recorded in ``golden/ui_walk.json``: the same headings and table columns on
every page, the same rows for what the walk made (numbers masked: they are timing), the same
popups and messages, no JavaScript error and no failed request (the charts drawn from the
history a range asks, the rates from the message statistics: issue 50's parts 2 and 3). With
``EMBROKER_REFERENCE_URL`` the reference is walked too and must match the golden file
(``EMBROKER_UI_RECORD=1`` writes it instead).
"""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest

from embroker import Broker
from embroker.management._ui import ManagementUI

from .cdp import Browser, chromium
from .uiwalk import UIWalker, Walk, masked, rabbitmq_www

REFERENCE = os.environ.get("EMBROKER_REFERENCE_URL")
GOLDEN = Path(__file__).with_name("golden") / "ui_walk.json"

@pytest.fixture
def browser() -> Iterator[Browser]:
    executable = chromium()
    if executable is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run does)")
    with Browser(executable, timeout=30) as opened:
        yield opened


@pytest.fixture
def www(tmp_path: Path) -> list[Path]:
    found = rabbitmq_www(tmp_path)
    if found is None:
        pytest.skip("RabbitMQ 3.10.8's management UI is not on this machine (its plugins' "
                    "priv/www; embroker ships none of RabbitMQ's files)")
    return found


def _walk(browser: Browser, base: str, amqp_url: str, name: str) -> Walk:
    """The walk of RabbitMQ's UI at ``base``, with a connection of the test's own open (named
    ``name``, as is the queue the walk makes)."""
    parameters = pika.URLParameters(amqp_url)
    parameters.client_properties = {"connection_name": name}
    connection = pika.BlockingConnection(parameters)
    try:
        connection.channel()
        walker = UIWalker(browser, base)
        walker.login()
        walker.pages(name, name)
        walker.queue_page(name)
        return walker.finish()
    finally:
        connection.close()


def test_rabbitmqs_ui_walks_through_embroker_as_through_rabbitmq(
        browser: Browser, www: list[Path]) -> None:
    name = f"embroker-ui-{uuid.uuid4().hex[:8]}"
    broker = Broker()
    with broker.serve(management=True) as server:
        assert server.management is not None
        server.management.ui = ManagementUI(www)
        walk = _walk(browser, server.management_url, server.url, name)
        assert server.errors == []
    golden = json.loads(GOLDEN.read_text())
    assert walk.failed == []
    assert walk.errors == []
    assert masked(walk, name) == golden["walk"]
    assert walk.rows["guest"][2] == "/"  # (masked as shared: the reference's other vhosts)
    assert name not in broker.vhosts["/"].queues  # (the walk deleted it through the UI)


@pytest.mark.skipif(not REFERENCE, reason="EMBROKER_REFERENCE_URL is not set")
def test_the_golden_walk_is_the_references(browser: Browser) -> None:
    """The reference's own UI, walked the same way: no error, no failed request, and what
    ``golden/ui_walk.json`` holds."""
    assert REFERENCE is not None
    host = urllib.parse.urlsplit(REFERENCE).hostname or "127.0.0.1"
    base = f"http://{host}:15672/"
    name = f"embroker-ui-{uuid.uuid4().hex[:8]}"
    try:
        walk = _walk(browser, base, REFERENCE, name)
    finally:
        _delete_queue(base, name)
    assert (walk.errors, walk.failed) == ([], [])
    shown = {"walk": masked(walk, name)}
    if os.environ.get("EMBROKER_UI_RECORD"):
        GOLDEN.write_text(json.dumps(shown, indent=1, sort_keys=True) + "\n")
    assert shown == json.loads(GOLDEN.read_text())


def _delete_queue(base: str, name: str) -> None:
    request = urllib.request.Request(
        f"{base}api/queues/%2F/{name}", method="DELETE",
        headers={"authorization": "Basic " + base64.b64encode(b"guest:guest").decode()})
    try:
        urllib.request.urlopen(request, timeout=10).close()
    except urllib.error.HTTPError as error:  # (404: the walk deleted it)
        if error.code != 404:
            raise
