"""STOMP: stomp.py against embroker's STOMP listener and against the reference RabbitMQ's STOMP
plugin (127.0.0.1:61613). (Not named stomp.py: run as a script, that would shadow stomp.py.)

Run: python benchmarks/stomp_rates.py [--messages N] [--repeat R] [--quick]

embroker runs as ``Server(Broker(), listeners={"stomp": 0})`` in a process of its own (as
RabbitMQ does: in-process, the listener and stomp.py would share one GIL, and the figure would be
the sum of the two). The client is stomp.py's ``Connection12`` (its receiver thread and this
one), ``vhost="/"``, heart-beats off. Each run uses a fresh embroker and, on both sides, a
uniquely named queue (``/queue/NAME``: durable, as the plugin declares it), deleted after over
0-9-1 (pika); 100-byte bodies:

- send: N SEND frames without receipts, the last with one; timed until that receipt (SEND
  frames are handled in order, so it answers once all N are routed);
- send, receipt each: N/4 SEND frames, each waiting for its receipt (a round trip each);
- subscribe, auto: N messages sent beforehand (not timed), then SUBSCRIBE ``ack:auto``, until
  the N-th MESSAGE;
- subscribe, client-individual, prefetch 100: the same with ``ack:client-individual`` and
  ``prefetch-count:100``, an ACK for each MESSAGE from stomp.py's receiver thread, the last
  with a receipt; timed until that receipt;
- send + subscribe: SUBSCRIBE ``ack:auto`` first, then N SEND frames, until the N-th MESSAGE.

Each line runs ``--repeat`` times (3) on each side, alternating, and shows the fastest run in
messages per second, the ratio embroker / RabbitMQ, and the smallest server CPU per message
(embroker only: the CPU time of the server process's threads over the timed part, from
``/proc/PID/task/*/schedstat``; Linux). ``--quick`` is 2,000 messages, once. If the reference
does not answer on 61613 its column says so. Nothing here is asserted: it prints a table.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import _rates
import pika
import stomp  # type: ignore[import-untyped]
from _rates import Run, Side, timed

BODY = "x" * 100
PREFETCH = 100
TIMEOUT = 120.0
REFERENCE = ("127.0.0.1", 61613)


class _Listener(stomp.ConnectionListener):  # type: ignore[misc]
    """Counts MESSAGE frames (optionally acking each) and signals receipts and the N-th one."""

    def __init__(self) -> None:
        self.receipts: dict[str, threading.Event] = {}
        self.received = 0
        self.expected = 0
        self.all_received = threading.Event()
        self.on_each: Callable[[Any, bool], None] | None = None
        self.errors: list[Any] = []

    def on_receipt(self, frame: Any) -> None:
        self.receipts.setdefault(frame.headers["receipt-id"], threading.Event()).set()

    def on_error(self, frame: Any) -> None:
        self.errors.append(frame)

    def on_message(self, frame: Any) -> None:
        self.received += 1
        last = self.received == self.expected
        if self.on_each is not None:
            self.on_each(frame, last)
        if last:
            self.all_received.set()

    def wait_receipt(self, receipt: str) -> None:
        if not self.receipts.setdefault(receipt, threading.Event()).wait(TIMEOUT):
            raise TimeoutError(f"no receipt {receipt} ({self.errors})")

    def wait_all(self) -> None:
        if not self.all_received.wait(TIMEOUT):
            raise TimeoutError(f"{self.received} of {self.expected} messages ({self.errors})")


@contextlib.contextmanager
def _client(side: Side) -> Iterator[tuple[Any, _Listener, str]]:
    """A connected stomp.py 1.2 client, its listener and a fresh queue destination."""
    conn = stomp.Connection12([("127.0.0.1", side.port)], vhost="/", heartbeats=(0, 0))
    listener = _Listener()
    conn.set_listener("", listener)
    conn.connect("guest", "guest", wait=True)
    name = f"embroker-bench-{uuid.uuid4().hex[:8]}"
    try:
        yield conn, listener, f"/queue/{name}"
        if listener.errors:
            raise RuntimeError(f"ERROR frames: {listener.errors}")
    finally:
        conn.disconnect()
        amqp = pika.BlockingConnection(pika.URLParameters(side.amqp_url))
        amqp.channel().queue_delete(name)
        amqp.close()


def _send(conn: Any, listener: _Listener, destination: str, n: int) -> None:
    """N SEND frames, the last with a receipt; back once it has come."""
    for _ in range(n - 1):
        conn.send(destination, BODY)
    receipt = uuid.uuid4().hex
    conn.send(destination, BODY, headers={"receipt": receipt})
    listener.wait_receipt(receipt)


def send(side: Side, n: int) -> Run:
    with _client(side) as (conn, listener, destination):
        return timed(side, n, lambda: None, lambda: _send(conn, listener, destination, n))


def send_receipt_each(side: Side, n: int) -> Run:
    n = max(1, n // 4)

    def body() -> None:
        for _ in range(n):
            _send(conn, listener, destination, 1)

    with _client(side) as (conn, listener, destination):
        return timed(side, n, lambda: None, body)


def subscribe_auto(side: Side, n: int) -> Run:
    with _client(side) as (conn, listener, destination):
        listener.expected = n

        def body() -> None:
            conn.subscribe(destination, id="s", ack="auto")
            listener.wait_all()

        return timed(side, n, lambda: _send(conn, listener, destination, n), body)


def subscribe_client_individual(side: Side, n: int) -> Run:
    with _client(side) as (conn, listener, destination):
        listener.expected = n
        receipt = uuid.uuid4().hex

        def ack(frame: Any, last: bool) -> None:
            conn.ack(frame.headers["ack"], **({"receipt": receipt} if last else {}))

        listener.on_each = ack

        def body() -> None:
            conn.subscribe(destination, id="s", ack="client-individual",
                           headers={"prefetch-count": str(PREFETCH)})
            listener.wait_receipt(receipt)

        return timed(side, n, lambda: _send(conn, listener, destination, n), body)


def send_and_subscribe(side: Side, n: int) -> Run:
    with _client(side) as (conn, listener, destination):
        listener.expected = n
        subscribed = uuid.uuid4().hex

        def setup() -> None:
            conn.subscribe(destination, id="s", ack="auto", headers={"receipt": subscribed})
            listener.wait_receipt(subscribed)

        def body() -> None:
            for _ in range(n):
                conn.send(destination, BODY)
            listener.wait_all()

        return timed(side, n, setup, body)


LINES: list[tuple[str, Callable[[Side, int], Run]]] = [
    ("send", send),
    ("send, receipt each", send_receipt_each),
    ("subscribe, auto", subscribe_auto),
    (f"subscribe, client-ind., prefetch {PREFETCH}", subscribe_client_individual),
    ("send + subscribe", send_and_subscribe),
]


def main() -> None:
    _rates.main(__doc__, LINES, kind="stomp", reference=REFERENCE,
                client=f"stomp.py {stomp.__version__ if hasattr(stomp, '__version__') else ''} "
                "(STOMP 1.2)", size=len(BODY))


if __name__ == "__main__":
    main()
