"""A walk through RabbitMQ's own management UI in headless Chromium, as an operator goes: log
in, the Overview, Connections, Channels, Exchanges and Queues pages, a queue's page (publish a
message, get it back, purge), Admin (the users). What it collects, for one broker and another
to be compared: the JavaScript errors (exceptions, the UI's own "Uncaught error" lines and its
debug box), the requests that failed (a status of 400 or more, a load that failed), and what
each page rendered: its headings, its tables' columns, and the rows of what the walk made
itself, numbers masked (counts and rates are timing: RabbitMQ's statistics come every 5 s).

Every wait asks the page for a condition (the UI's own: its template rendered, no request
outstanding, its status line written) within the browser's deadline; nothing sleeps a fixed
time.
"""

from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cdp import Browser

#: Where a RabbitMQ install keeps its plugins (Debian's package, RabbitMQ's generic unix one).
PLUGIN_DIRS = ("/usr/lib/rabbitmq/lib/rabbitmq_server-3.10.8/plugins",
               "/usr/lib/rabbitmq/plugins", "/opt/rabbitmq/plugins")
#: The plugins whose www folders the UI needs: the management UI, then the tracing page's.
UI_PLUGINS = ("rabbitmq_management", "rabbitmq_tracing")


def rabbitmq_www(scratch: Path) -> list[Path] | None:
    """The www folders of RabbitMQ 3.10.8's management and tracing plugins on this machine, a
    plugin kept as a ``.ez`` archive (a zip) extracted into ``scratch`` (the caller's own
    folder); ``None`` when they are not here."""
    for plugins in map(Path, PLUGIN_DIRS):
        found: list[Path] = []
        for name in UI_PLUGINS:
            folder = plugins / f"{name}-3.10.8" / "priv" / "www"
            archive = plugins / f"{name}-3.10.8.ez"
            if folder.is_dir():
                found.append(folder)
            elif archive.is_file():
                with zipfile.ZipFile(archive) as ez:
                    prefix = f"{name}-3.10.8/priv/www/"
                    members = [m for m in ez.namelist() if m.startswith(prefix)
                               and ".." not in m.split("/")]
                    ez.extractall(scratch / name, members)
                found.append(scratch / name / prefix)
        if len(found) == len(UI_PLUGINS):
            return found
    return None


@dataclass
class Walk:
    """What the walk collected."""

    #: page -> its headings and the columns of its tables.
    pages: dict[str, Any] = field(default_factory=dict)
    #: what the walk made, as the pages showed it (numbers masked).
    rows: dict[str, Any] = field(default_factory=dict)
    #: the popups the UI showed, in order.
    popups: list[str] = field(default_factory=list)
    #: the messages "Get messages" showed.
    messages: list[dict[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def _mask(text: str) -> str:
    return re.sub(r"\d+(\.\d+)?", "N", text)


#: A page's headings and its tables' columns, in order.
_SHAPE = """(() => {
  const main = document.querySelector('#main');
  const text = e => e.textContent.replace(/\\s+/g, ' ').trim();
  return {headings: [...main.querySelectorAll('h1, h2')].map(text),
          tables: [...main.querySelectorAll('table.list')].map(t =>
              [...t.querySelectorAll(t.tHead ? 'thead th' : 'th')].map(text))};
})()"""


def _row(containing: str) -> str:
    """The cells of the first row of a list whose text holds ``containing``."""
    return ("(() => { const text = e => e.textContent.replace(/\\s+/g, ' ').trim(); "
            "const row = [...document.querySelectorAll('#main table.list tbody tr')]"
            f".find(r => text(r).includes({json.dumps(containing)})); "
            "return row ? [...row.querySelectorAll('td')].map(text) : null; })()")


class UIWalker:
    """Walks RabbitMQ's UI at ``base`` (``http://127.0.0.1:PORT/``) in ``browser``."""

    def __init__(self, browser: Browser, base: str) -> None:
        self.browser = browser
        self.base = base
        self.walk = Walk()

    def _ready(self, template: str) -> None:
        """Wait for the UI to have rendered ``template`` into its main box (the marker
        :meth:`_go` left there replaced) with every request answered. (Not its status line: a
        chart that fails to draw stops the UI before it writes that line.)"""
        self.browser.wait_for(
            f"typeof current_template !== 'undefined' && current_template === '{template}' "
            "&& outstanding_reqs.length === 0 && document.querySelector('#main') !== null "
            "&& document.querySelector('#main').children.length > 0 "
            "&& document.getElementById('uiwalk-marker') === null")

    def _go(self, hash_: str, template: str) -> None:
        self.browser.evaluate("$('#main').append('<i id=\"uiwalk-marker\"></i>'), true")
        self.browser.evaluate(f"location.hash = {json.dumps(hash_)}")
        self._ready(template)

    def _popup(self) -> str:
        text = self.browser.wait_for(
            "(() => { const p = document.querySelector('.form-popup-info, "
            ".form-popup-warn'); return p && p.textContent.trim(); })()")
        self.browser.evaluate("$('.form-popup-info, .form-popup-warn').remove(), true")
        self.walk.popups.append(re.sub(r"\s+", " ", str(text)).replace(" Close", ""))
        return str(text)

    def login(self, user: str = "guest", password: str = "guest") -> None:
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.browser.call(f"{domain}.enable")
        self.browser.call("Page.navigate", url=self.base)
        self.browser.wait_for("document.querySelector('input[name=username]') !== null")
        self.browser.evaluate(
            f"document.querySelector('input[name=username]').value = {json.dumps(user)};"
            f"document.querySelector('input[name=password]').value = {json.dumps(password)};"
            "window.confirm = () => true;"
            "document.querySelector('#login input[type=submit]').click(); true")
        self._ready("overview")
        self.walk.pages["overview"] = self.browser.evaluate(_SHAPE)

    def pages(self, queue: str, connection: str) -> None:
        """The everyday pages; ``connection`` names the caller's connection (each waits for
        its row: RabbitMQ lists a connection when its statistics come), ``queue`` the queue
        made here, through the UI's form (its row waited for with its figures)."""
        self._go("#/connections", "connections")
        self.browser.wait_for(_row(connection))
        self.walk.pages["connections"] = self.browser.evaluate(_SHAPE)
        self.walk.rows["connection"] = self.browser.evaluate(_row(connection))
        for hash_, template in (("#/channels", "channels"), ("#/exchanges", "exchanges")):
            self._go(hash_, template)
            self.walk.pages[template] = self.browser.evaluate(_SHAPE)
        self.walk.rows["amq.topic"] = self.browser.evaluate(_row("amq.topic"))
        self._go("#/queues", "queues")
        self.browser.evaluate(
            "(() => { const form = [...document.querySelectorAll('#main form')].find(f => "
            "f.getAttribute('action') === '#/queues' && f.getAttribute('method') === 'put');"
            f"form.querySelector('input[name=name]').value = {json.dumps(queue)};"
            "form.querySelector('input[type=submit]').click(); return true; })()")
        row = _row(queue)
        self.browser.wait_for(f"(() => {{ const row = {row}; return row && "
                              "!row.join(' ').includes('NaN'); })()")
        self.walk.pages["queues"] = self.browser.evaluate(_SHAPE)
        self.walk.rows["queue"] = self.browser.evaluate(row)
        self._go("#/users", "users")
        self.walk.pages["users"] = self.browser.evaluate(_SHAPE)
        self.walk.rows["guest"] = self.browser.evaluate(_row("guest"))

    def queue_page(self, queue: str) -> None:
        """Publish to ``queue`` from its page, get the message back, purge it."""
        self._go(f"#/queues/%2F/{queue}", "queue")
        self.walk.pages["queue"] = self.browser.evaluate(_SHAPE)
        self.browser.evaluate(
            "(() => { const form = document.querySelector('form[action=\"#/exchanges/publish\"]');"
            "form.querySelector('textarea[name=payload]').value = 'hello from the UI';"
            "form.querySelector('input[type=submit]').click(); return true; })()")
        self._popup()
        self.browser.evaluate(
            "(() => { const form = document.querySelector('form[action=\"#/queues/get\"]');"
            "form.querySelector('select[name=ackmode]').value = 'ack_requeue_true';"
            "form.querySelector('input[type=submit]').click(); return true; })()")
        got = self.browser.wait_for(
            "(() => { const text = e => e.textContent.replace(/\\s+/g, ' ').trim();"
            "const tables = [...document.querySelectorAll('#msg-wrapper table.facts')];"
            "return tables.length ? tables.map(t => Object.fromEntries("
            "[...t.querySelectorAll('tr')].map(r => [text(r.querySelector('th')), "
            "text(r.querySelector('td'))]))) : null; })()")
        self.walk.messages = got
        self.browser.evaluate(
            "(() => { const form = [...document.querySelectorAll('form[action=\"#/queues\"]')]"
            ".find(f => f.querySelector('input[name=mode][value=purge]'));"
            "form.querySelector('input[type=submit]').click(); return true; })()")
        self._popup()
        self.browser.evaluate(
            "(() => { const form = [...document.querySelectorAll('form[action=\"#/queues\"]')]"
            ".find(f => f.querySelector('input[name=mode][value=delete]'));"
            "form.querySelector('input[type=submit]').click(); return true; })()")
        self._ready("queues")

    def finish(self) -> Walk:
        """Gather the errors and failed requests seen along the walk."""
        self.browser.evaluate("true")  # (the events sent meanwhile are read with its answer)
        debug = self.browser.evaluate("document.querySelector('#debug') ? "
                                      "document.querySelector('#debug').textContent : ''")
        if debug and debug.strip():
            self.walk.errors.append("debug box: " + debug.strip().splitlines()[0])
        for event in self.browser.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                text = details.get("exception", {}).get("description") or details.get("text")
                frames = details.get("stackTrace", {}).get("callFrames", [])
                where = f" ({frames[0]['url'].rsplit('/', 1)[-1]}: {frames[0]['functionName']})" \
                    if frames else ""
                self.walk.errors.append("exception: " + str(text).splitlines()[0] + where)
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error",
                                                                                 "log"):
                text = " ".join(str(a.get("value", a.get("description", "")))
                                for a in params.get("args", []))
                if params["type"] == "error" or text.startswith("Uncaught error"):
                    self.walk.errors.append("console: " + text.splitlines()[0])
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                entry = params["entry"]
                if entry.get("source") != "network":  # (the failed requests say them)
                    self.walk.errors.append("log: " + entry.get("text", ""))
            elif method == "Network.responseReceived":
                response = params["response"]
                if response["status"] >= 400:
                    self.walk.failed.append(f"{response['status']} "
                                            f"{_path(response['url'], self.base)}")
            elif method == "Network.loadingFailed" and not params.get("canceled"):
                self.walk.failed.append(f"failed {params.get('errorText')}")
        return self.walk


def _path(url: str, base: str) -> str:
    path = url[len(base.rstrip("/")):] if url.startswith(base.rstrip("/")) else url
    return re.sub(r"\?.*", "", path)


#: Cells of the rows that are timing whatever their text: a queue's state (RabbitMQ shows it
#: idle once it has been for a while, running before).
TIMING_CELLS = {("queue", 3)}
#: Cells that hold what others do on a shared reference: the vhosts guest may use (another
#: test's vhost), amq.topic's rates in and out (another test's traffic).
SHARED_CELLS = {("guest", 2), ("amq.topic", 3), ("amq.topic", 4)}


def masked(walk: Walk, *names: str) -> dict[str, Any]:
    """What two walks must agree on: ``names`` (the walk's own, unique) as ``<name>``, numbers
    masked (counts, rates, ports, dates)."""
    def mask(value: Any) -> Any:
        if isinstance(value, str):
            for name in names:
                value = value.replace(name, "<name>")
            return _mask(value)
        if isinstance(value, list):
            return [mask(v) for v in value]
        if isinstance(value, dict):
            return {k: mask(v) for k, v in value.items()}
        return value
    rows = mask(walk.rows)
    for cells, shown in ((TIMING_CELLS, "<timing>"), (SHARED_CELLS, "<shared>")):
        for row, index in cells:
            if isinstance(rows.get(row), list) and index < len(rows[row]):
                rows[row][index] = shown
    return {"pages": mask(walk.pages), "rows": rows, "popups": walk.popups,
            "messages": mask(walk.messages)}
