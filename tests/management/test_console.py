"""The console in a real browser: headless Chromium opens it, pika publishes, the decision
appears, a click expands it to its explain() and its message's history, a click on a queue
shows its messages; screenshots are taken (and written to the docs with
``EMBROKER_SCREENSHOTS=docs/img``, the procedure that makes docs/img/console*.png)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest

from embroker import Broker, Server

from .cdp import Browser, chromium

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def browser() -> Iterator[Browser]:
    executable = chromium()
    if executable is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run does)")
    with Browser(executable) as opened:
        yield opened


@pytest.fixture
def served() -> Iterator[tuple[Broker, Server]]:
    broker = Broker()
    channel = broker.connect().channel()
    channel.exchange_declare("orders", "topic")
    channel.exchange_declare("audit", "fanout")
    for queue, exchange, key in (("billing", "orders", "order.paid"),
                                 ("shipping", "orders", "order.*"),
                                 ("audit-log", "audit", "")):
        channel.queue_declare(queue)
        channel.queue_bind(queue, exchange, key)
    channel.exchange_bind("audit", "orders", "#")
    with broker.serve(management=True) as server:
        yield broker, server
        assert server.errors == []


def _screenshot(browser: Browser, tmp_path: Path, name: str) -> None:
    shots = os.environ.get("EMBROKER_SCREENSHOTS")
    data = browser.screenshot((Path(shots) if shots else tmp_path) / name)
    assert data.startswith(PNG)


def test_a_publish_shows_up_in_the_console_and_expands_to_its_explanation(
        browser: Browser, served: tuple[Broker, Server], tmp_path: Path) -> None:
    broker, server = served
    browser.open(server.management_url)
    browser.wait_for("document.querySelectorAll('#graph .queue').length === 3")
    assert browser.evaluate("document.querySelector('#graph').textContent").count("ready") == 3

    connection = pika.BlockingConnection(pika.URLParameters(
        server.url + "?client_properties={'connection_name':'checkout-service'}"))
    channel = connection.channel()
    channel.confirm_delivery()
    channel.basic_publish("orders", "order.paid", b'{"order": 42, "total": "19.99"}')
    channel.basic_publish("orders", "refund.asked", b'{"order": 41}')
    method, _properties, _body = channel.basic_get("billing")
    assert method is not None
    channel.basic_ack(method.delivery_tag)

    # The decisions appear, newest first, and the connection with its client name.
    browser.wait_for("document.querySelectorAll('#trace li').length === 2")
    summaries = browser.evaluate(
        "[...document.querySelectorAll('#trace summary')].map(s => s.textContent)")
    assert "refund.asked" in summaries[0]
    assert "order.paid" in summaries[1]
    assert "billing" in summaries[1]
    browser.wait_for("document.querySelector('#connections').textContent"
                     ".includes('checkout-service')")

    # A click on the decision opens it: explain() and what happened to the message.
    browser.click("#trace li:last-child summary")
    browser.wait_for("document.querySelector('#trace li:last-child details').open")
    decision = next(d for d in broker.trace if d.keys == ("order.paid",))
    explain = browser.evaluate("document.querySelector('#trace li:last-child .explain')"
                               ".textContent")
    assert explain == str(decision.explain())
    history = browser.evaluate("document.querySelector('#trace li:last-child .history')"
                               ".textContent")
    assert history == "\n".join(str(event) for event in decision.history())
    assert "billing" in history  # got and acknowledged from billing
    _screenshot(browser, tmp_path, "console.png")

    # A click on a queue shows its ready messages, looked at and left there.
    browser.click("#graph .queue[data-queue='shipping']")
    browser.wait_for("document.querySelector('#queue-name').textContent === 'shipping' && "
                     "document.querySelector('#messages').textContent.includes('42')")
    assert broker.queues["shipping"].message_count == 1
    _screenshot(browser, tmp_path, "console-queue.png")
    connection.close()


def test_the_console_asks_for_a_login_when_guest_cannot(
        browser: Browser, tmp_path: Path) -> None:
    broker = Broker(users={"ops": "secret"})
    broker.set_user_tags("ops", "administrator")
    with broker.serve(management=True) as server:
        browser.open(server.management_url)
        browser.wait_for("!document.querySelector('#login').hidden")
        browser.evaluate("document.querySelector('#user').value = 'ops'; "
                         "document.querySelector('#password').value = 'secret'; true")
        browser.click("#login button")
        browser.wait_for("document.querySelector('#login').hidden && "
                         "document.querySelector('#summary').textContent.includes('queues')")
        assert json.loads(browser.evaluate("JSON.stringify([...document.querySelectorAll("
                                           "'#vhost option')].map(o => o.value))")) == ["/"]
        assert server.errors == []
