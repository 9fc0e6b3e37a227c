"""The console in a real browser: headless Chromium opens it, pika publishes, the decision
appears, a click expands it to its explain() and its message's history, a click on a queue
shows its messages; screenshots are taken (and written to the docs with
``EMBROKER_SCREENSHOTS=docs/img``, the procedure that makes docs/img/console*.png)."""

from __future__ import annotations

import datetime
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
    # Each item is numbered by its decision's id (Chromium numbered a reversed list 16..9).
    ids = browser.evaluate("[...document.querySelectorAll('#trace li')].map(li => li.value)")
    assert ids == [broker.trace.total, broker.trace.total - 1]
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
                     "document.querySelector('#messages .payload').textContent.includes('42')")
    assert broker.queues["shipping"].message_count == 1
    _screenshot(browser, tmp_path, "console-queue.png")
    connection.close()


def _log_in(browser: Browser, user: str, password: str) -> None:
    browser.evaluate(f"document.querySelector('#user').value = {json.dumps(user)}; "
                     f"document.querySelector('#password').value = {json.dumps(password)}; true")
    browser.click("#login button")


def test_the_console_asks_for_a_login_when_guest_cannot_and_says_why_one_is_refused(
        browser: Browser, tmp_path: Path) -> None:
    broker = Broker(users={"ops": "secret", "app": "pw"})
    broker.set_user_tags("ops", "administrator")
    with broker.serve(management=True) as server:
        browser.open(server.management_url)
        browser.wait_for("!document.querySelector('#login').hidden")
        # Empty (guest is no user here), labelled, and no refusal the user did not ask for.
        assert browser.evaluate("[document.querySelector('#user').value, "
                                "document.querySelector('#password').value, "
                                "document.querySelector('label[for=user]').textContent, "
                                "document.querySelector('label[for=password]').textContent, "
                                "document.querySelector('#login-error').textContent]") == [
            "", "", "Username", "Password", ""]
        _screenshot(browser, tmp_path, "console-login.png")
        _log_in(browser, "ops", "wrong")
        assert browser.wait_for("document.querySelector('#login-error').textContent") == (
            "Login refused for 'ops': Login failed")
        _log_in(browser, "app", "pw")  # a user without a management tag
        browser.wait_for("document.querySelector('#login-error').textContent.includes('app')")
        assert browser.evaluate("document.querySelector('#login-error').textContent") == (
            "Login refused for 'app': Not management user")
        _log_in(browser, "ops", "secret")
        browser.wait_for("document.querySelector('#login').hidden && "
                         "document.querySelector('#summary').textContent.includes('queues')")
        assert browser.evaluate("document.querySelector('#who-name').textContent") == "ops"
        assert json.loads(browser.evaluate("JSON.stringify([...document.querySelectorAll("
                                           "'#vhost option')].map(o => o.value))")) == ["/"]
        browser.click("#logout")
        browser.wait_for("!document.querySelector('#login').hidden")
        assert server.errors == []


def test_the_console_logs_in_with_the_credentials_in_its_address(browser: Browser) -> None:
    """http://ops:secret@host:port/ (fetch refuses a URL with credentials: the page asked
    with them and showed nothing but a TypeError)."""
    broker = Broker(users={"ops": "secret"})
    broker.set_user_tags("ops", "administrator")
    with broker.serve(management=True) as server:
        address = server.management_url.removeprefix("http://")
        browser.call("Page.navigate", url=f"http://ops:secret@{address}")
        browser.wait_for("document.querySelector('#summary')?.textContent.includes('queues')")
        assert browser.evaluate("document.querySelector('#who-name').textContent") == "ops"
        assert "Error" not in browser.evaluate("document.querySelector('#status').textContent")
        browser.call("Page.navigate", url=f"http://ops:nope@{address}")
        browser.wait_for("document.querySelector('#login-error')?.textContent")
        assert browser.evaluate("document.querySelector('#login-error').textContent") == (
            "The user in the page's address, 'ops', was refused: Login failed")
        assert server.errors == []


@pytest.fixture
def retry_loop() -> Iterator[tuple[Broker, Server]]:
    """An orders service's topology: a work queue whose rejects go to a retry queue that sends
    them back after 30 s through the default exchange, a queue with a long name."""
    broker = Broker()
    channel = broker.connect().channel()
    channel.exchange_declare("orders", "topic")
    channel.exchange_declare("orders.retry", "fanout")
    channel.queue_declare("orders.work", arguments={"x-dead-letter-exchange": "orders.retry"})
    channel.queue_declare("orders.work.retry-in-30-seconds", arguments={
        "x-message-ttl": 30000, "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": "orders.work"})
    channel.queue_declare(LONG_NAME)
    channel.queue_bind("orders.work", "orders", "order.*")
    channel.queue_bind(LONG_NAME, "orders", "order.#")
    channel.queue_bind("orders.work.retry-in-30-seconds", "orders.retry")
    with broker.serve(management=True) as server:
        yield broker, server
        assert server.errors == []


LONG_NAME = "orders.analytics.europe-west.replica-2.events-of-the-invoicing-service-v2"


def test_the_graph_draws_dead_letter_routes_the_default_exchange_and_whole_labels(
        browser: Browser, retry_loop: tuple[Broker, Server], tmp_path: Path) -> None:
    _broker, server = retry_loop
    browser.open(server.management_url)
    browser.wait_for("document.querySelectorAll('#graph .queue').length === 3")
    # The retry loop: work -> orders.retry -> work.retry -> (AMQP default) -> work.
    labels = browser.evaluate("[...document.querySelectorAll('#graph .edge-label')]"
                              ".map(t => t.querySelector('title')?.textContent ?? t.textContent)")
    assert "dead letters" in labels
    assert "dead letters → orders.work" in labels
    assert browser.evaluate("document.querySelectorAll('#graph path.dead-letter').length") == 2
    assert browser.evaluate("document.querySelector('#graph [data-exchange=\"\"]')"
                            ".textContent").startswith("(AMQP default) (direct)")
    assert browser.evaluate("document.querySelectorAll('#graph path.default-route').length") == 1
    # Every label inside its box, the drawing inside its panel: a name too long for it is cut
    # with an ellipsis, and whole in the node's title.
    cut = browser.evaluate("""[...document.querySelectorAll('#graph g')].filter(g => {
        const r = g.querySelector('rect').getBBox();
        return [...g.querySelectorAll('text')].some(t => {
            const b = t.getBBox(); return b.x + b.width > r.x + r.width; }); })
        .map(g => g.textContent)""")
    assert cut == []
    assert browser.evaluate("document.querySelector('#graph').getBoundingClientRect().right <= "
                            "document.querySelector('#topology-panel').getBoundingClientRect()"
                            ".right")
    node = f"#graph [data-queue='{LONG_NAME}']"
    assert browser.evaluate(f"document.querySelector(\"{node} title\").textContent") == LONG_NAME
    shown = browser.evaluate(f"document.querySelector(\"{node} text\").textContent")
    assert LONG_NAME.startswith(shown.removesuffix("…"))
    _screenshot(browser, tmp_path, "console-graph.png")


def test_the_queue_panel_shows_headers_as_rabbitmq_does_and_unacked_messages_with_their_consumer(
        browser: Browser, retry_loop: tuple[Broker, Server], tmp_path: Path) -> None:
    _broker, server = retry_loop
    connection = pika.BlockingConnection(pika.URLParameters(
        server.url + "?client_properties={'connection_name':'order-worker'}"))
    channel = connection.channel()
    headers = {"attempt": 2, "sent": datetime.datetime(2026, 1, 2, 3, 4, 5),
               "trail": {"from": "checkout", "ids": [7, 8]}}
    for body in (b'{"order": 1}', b'{"order": 2}'):
        channel.basic_publish("orders", "order.paid", body,
                              pika.BasicProperties(headers=headers, content_type="application/json"))
    method, _properties, _body = channel.basic_get("orders.work")  # held, not acknowledged
    assert method is not None
    browser.open(server.management_url)
    browser.wait_for("document.querySelectorAll('#graph .queue').length === 3")
    browser.click("#graph .queue[data-queue='orders.work']")
    browser.wait_for("document.querySelectorAll('#messages .message').length === 2")
    text = browser.evaluate("document.querySelector('#messages').innerText")
    assert "Long(" not in text
    assert "datetime" not in text
    ready, held = browser.evaluate("[...document.querySelectorAll('#messages .message')]"
                                   ".map(m => m.innerText)")
    assert "1767323045" in ready  # a timestamp is its seconds, as RabbitMQ's UI shows it
    assert "checkout" in ready
    assert "application/json" in ready
    assert '{"order": 2}' in ready
    assert held.startswith("delivery tag 1 on channel 1 of order-worker, taken by basic.get")
    assert '{"order": 1}' in held
    _screenshot(browser, tmp_path, "console-messages.png")
    connection.close()


@pytest.fixture
def regions() -> Iterator[tuple[Broker, Server]]:
    """A queue bound twice to one topic exchange (one binding per region), whose dead letters
    go to an exchange drawn well above it, and an exchange-to-exchange binding; no connection
    left open."""
    broker = Broker()
    connection = broker.connect()
    channel = connection.channel()
    channel.exchange_declare("dlx", "fanout")
    channel.exchange_declare("events", "topic")
    channel.exchange_declare("archive", "fanout")
    channel.queue_declare("orders", arguments={"x-dead-letter-exchange": "dlx"})
    channel.queue_bind("orders", "events", "eu.orders.*")
    channel.queue_bind("orders", "events", "us.orders.*")
    channel.queue_declare("dead")
    channel.queue_bind("dead", "dlx")
    channel.queue_declare("audit")
    channel.queue_bind("audit", "archive")
    channel.queue_declare("billing")
    channel.queue_bind("billing", "events", "*.billing")
    channel.exchange_bind("archive", "events", "#")
    channel.basic_publish("", "orders", b"one order")
    connection.close()
    with broker.serve(management=True) as server:
        yield broker, server
        assert server.errors == []


#: The edge labels of the graph, each with its box (SVG coordinates: the paths' own).
LABELS = """[...document.querySelectorAll('#graph .edge-label')].map(t => {
    const b = t.getBBox();
    return {text: t.textContent, x: b.x, y: b.y, right: b.x + b.width, bottom: b.y + b.height};
})"""


def test_two_bindings_of_one_queue_have_labels_apart_and_dead_letters_cross_no_label(
        browser: Browser, regions: tuple[Broker, Server], tmp_path: Path) -> None:
    _broker, server = regions
    browser.open(server.management_url)
    browser.wait_for("document.querySelectorAll('#graph .queue').length === 4")
    labels = browser.evaluate(LABELS)
    assert {"eu.orders.*", "us.orders.*", "dead letters", "#"} <= {label["text"] for label in labels}
    overlapping = [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1:]
                   if a["x"] < b["right"] and b["x"] < a["right"]
                   and a["y"] < b["bottom"] and b["y"] < a["bottom"]]
    assert overlapping == []
    # Every point of each dead-letter edge (a point a pixel) is outside every label's box.
    crossed = browser.evaluate("""(() => {
        const labels = """ + LABELS + """;
        const crossed = [];
        for (const path of document.querySelectorAll('#graph path.dead-letter')) {
            for (let at = 0; at <= path.getTotalLength(); at += 1) {
                const p = path.getPointAtLength(at);
                for (const l of labels) {
                    if (l.text !== 'dead letters' && p.x > l.x && p.x < l.right &&
                            p.y > l.y && p.y < l.bottom) crossed.push(l.text);
                }
            }
        }
        return [...new Set(crossed)];
    })()""")
    assert crossed == []
    _screenshot(browser, tmp_path, "console-regions.png")


def test_the_page_is_drawn_with_the_data_when_it_says_it_is_loaded(
        browser: Browser, regions: tuple[Broker, Server], tmp_path: Path) -> None:
    """What the page shows at its load event, when a screenshot tool takes its picture: every
    panel has something in it (the graph, the connections, and in the trace and the queue's
    panel a line saying what will show there), and "1 connection" in the singular."""
    _broker, server = regions
    consumer = pika.BlockingConnection(pika.URLParameters(server.url))
    channel = consumer.channel()
    channel.basic_consume("dead", lambda *_: None)
    browser.call("Page.enable")  # (the script below runs in each new document only with it)
    browser.call("Page.addScriptToEvaluateOnNewDocument", source="""
        addEventListener('load', () => {
            const panel = (id) => [...document.querySelector(id).children]
                .filter(e => e.tagName !== 'H2').map(e => e.textContent).join('').trim();
            window.atLoad = {
                visible: getComputedStyle(document.querySelector('main')).visibility,
                queues: document.querySelectorAll('#graph .queue').length,
                summary: document.querySelector('#summary').textContent,
                panels: ['#topology-panel', '#queue-panel', '#trace-panel',
                         '#connections-panel'].map(id => [id, panel(id)]),
            };
        });""")
    browser.open(server.management_url)
    _screenshot(browser, tmp_path, "console-at-load.png")
    at_load = browser.wait_for("window.atLoad")
    assert at_load["visible"] == "visible"
    assert at_load["queues"] == 4
    assert at_load["summary"] == "1 connection, 4 queues, 1 message"
    assert [panel for panel, text in at_load["panels"] if not text] == []
    texts = dict(at_load["panels"])
    assert "Click a queue" in texts["#queue-panel"]
    assert "routed" in texts["#trace-panel"]  # (the publish made before the page opened)
    assert browser.evaluate("document.querySelector('#graph [data-queue=dead] .counts')"
                            ".textContent") == "0 ready, 0 unacked, 1 consumer"
    consumer.close()
