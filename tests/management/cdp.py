"""A small client of the Chrome DevTools Protocol: headless Chromium driven over its websocket,
for tests that click in a page as a person would.

:class:`Browser` starts Debian's ``chromium`` headless in a profile of its own (flags that work
without a display, a sandbox or a network), finds its DevTools port in the profile's
``DevToolsActivePort`` file, and opens a websocket (wsproto, sans-IO, over a plain socket) to
its first page. :meth:`Browser.call` sends one command and returns its result; events that come
meanwhile are kept in :attr:`Browser.events`, in order, for a test that enabled a domain to read
(``Runtime.exceptionThrown``, ``Network.loadingFailed``...). Everything waits within a deadline
and raises ``TimeoutError`` past it: nothing here measures time.
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)

#: The flags that work here: no display, no sandbox (root in a container), no network of its own.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars")


def chromium() -> str | None:
    """The path of Debian's chromium, if installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """Headless Chromium with one page, at ``width`` x ``height`` CSS pixels.

    Use as a context manager; the browser and its profile go at the end.
    """

    def __init__(self, executable: str, *, width: int = 1366, height: int = 860,
                 timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="embroker-chromium-")
        self._process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self._profile}",
             "--remote-debugging-port=0", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            port = self._devtools_port()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list",
                                        timeout=timeout) as answer:
                pages = [t for t in json.load(answer) if t["type"] == "page"]
            path = "/" + pages[0]["webSocketDebuggerUrl"].split("/", 3)[3]
            self._sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
            self._ws = WSConnection(ConnectionType.CLIENT)
            self._sock.sendall(self._ws.send(Request(host=f"127.0.0.1:{port}", target=path)))
            self._next_id = 0
            self._pending: list[Any] = []
            #: The DevTools events received so far (``{"method": ..., "params": ...}``).
            self.events: list[dict[str, Any]] = []
            self._text: list[str] = []
            while not any(isinstance(e, AcceptConnection) for e in self._pending):
                self._receive()
                if any(isinstance(e, RejectConnection) for e in self._pending):
                    raise RuntimeError("chromium refused the DevTools websocket")
            self._pending.clear()
            self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                      deviceScaleFactor=1, mobile=False)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        sock = getattr(self, "_sock", None)
        if sock is not None:
            sock.close()
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=10)
        # Chromium's helper processes may still write to the profile for a moment.
        for _ in range(20):
            shutil.rmtree(self._profile, ignore_errors=True)
            if not Path(self._profile).exists():
                break
            time.sleep(0.1)

    def _devtools_port(self) -> int:
        active = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                assert self._process.stderr is not None
                raise RuntimeError("chromium exited: " + self._process.stderr.read().decode(
                    "utf-8", "replace")[-2000:])
            if active.is_file():
                first = active.read_text().split("\n", 1)[0].strip()
                if first.isdigit():
                    return int(first)
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its DevTools port")

    # -- the websocket -------------------------------------------------------------------------

    def _receive(self) -> None:
        data = self._sock.recv(1 << 20)
        if not data:
            raise ConnectionError("chromium closed the DevTools websocket")
        self._ws.receive_data(data)
        for event in self._ws.events():
            if isinstance(event, TextMessage):
                self._text.append(event.data)
                if event.message_finished:
                    self._pending.append(json.loads("".join(self._text)))
                    self._text.clear()
            elif isinstance(event, Ping):
                self._sock.sendall(self._ws.send(event.response()))
            elif isinstance(event, CloseConnection):
                raise ConnectionError(f"chromium closed the websocket: {event.reason}")
            else:
                self._pending.append(event)

    def call(self, method: str, **params: Any) -> Any:
        """Send a DevTools command and return its ``result`` (``RuntimeError`` for an error)."""
        self._next_id += 1
        ident = self._next_id
        message = json.dumps({"id": ident, "method": method, "params": params})
        self._sock.sendall(self._ws.send(TextMessage(data=message)))
        while True:
            for i, item in enumerate(self._pending):
                if isinstance(item, dict) and item.get("id") == ident:
                    del self._pending[i]
                    if "error" in item:
                        raise RuntimeError(f"{method}: {item['error']}")
                    return item.get("result")
            self.events += [p for p in self._pending if isinstance(p, dict) and "id" not in p]
            self._pending = [p for p in self._pending if isinstance(p, dict) and "id" in p]
            self._receive()

    # -- what a test does ----------------------------------------------------------------------

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited if a promise)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete' && location.href.startsWith("
                      + json.dumps(url) + ")")

    def wait_for(self, expression: str) -> Any:
        """Ask the page until ``expression`` is truthy (``TimeoutError`` past the deadline)."""
        deadline = time.monotonic() + self.timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"the page never had {expression}")
            time.sleep(0.1)

    def click(self, selector: str) -> None:
        """Click the middle of the element ``selector`` names, as a mouse does (pressed and
        released there), after scrolling it into view."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); "
            "if (!e) return null; e.scrollIntoView({block: 'center'}); "
            "const r = e.getBoundingClientRect(); "
            "return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        if box is None:
            raise LookupError(f"no element {selector} to click")
        x, y = box
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)

    def screenshot(self, path: Path) -> bytes:
        """Write what the page shows as a PNG at ``path``; returns its bytes."""
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        path.write_bytes(data)
        return data
