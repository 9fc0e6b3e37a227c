"""``embroker capture``: record a vhost's publishes from RabbitMQ's firehose, types kept.

Theory of operation
-------------------
With tracing on for a vhost (``rabbitmqctl trace_on -p V``), RabbitMQ publishes a copy of every
message published in it to the internal topic exchange ``amq.rabbitmq.trace`` with the routing
key ``publish.<exchange>`` (``publish.`` for the default exchange), the original body, and
headers that say where it went: ``exchange_name``, ``routing_keys`` (the routing key, then CC
and BCC values), ``properties`` (the original properties, BCC removed, with their AMQP types),
``routed_queues``, ``vhost``, ``connection``, ``channel``, ``user``, ``node``. The broker adds no
time, so the capture stamps each message as it arrives.

The capture declares an exclusive, server-named queue bound with ``publish.#``, consumes it with
automatic acknowledgement, and writes rows of the canonical traffic schema plus the original
properties, the connection and the user to Parquet, in batches. It talks AMQP with embroker's own
codec (no client library), so header values keep the types the codec decodes: booleans,
integers, floats, decimals, timestamps, strings, byte arrays, tables, arrays and void.
"""

from __future__ import annotations

import datetime
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

from .. import __version__
from ..amqp091 import PROTOCOL_HEADER, CommandReader, encode_method_frame
from ..amqp091._methods import (
    BasicConsume,
    BasicDeliver,
    ChannelClose,
    ChannelOpen,
    ConnectionClose,
    ConnectionCloseOk,
    ConnectionOpen,
    ConnectionStartOk,
    ConnectionTune,
    ConnectionTuneOk,
    QueueBind,
    QueueDeclare,
)
from . import _headers

__all__ = ["CaptureError", "FirehoseClient", "capture"]

_PROPERTY_COLUMNS = ("content_type", "content_encoding", "delivery_mode", "priority",
                     "correlation_id", "reply_to", "expiration", "message_id", "timestamp", "type",
                     "user_id", "app_id")


class CaptureError(RuntimeError):
    """The capture cannot go on (connection refused, access refused, ...)."""


class FirehoseClient:
    """A blocking AMQP 0-9-1 client that does just what a capture needs.

    Args:
        url: ``amqp://user:password@host:port/vhost`` (vhost percent-encoded, as pika's).
        timeout: seconds to wait for the broker's answers.
    """

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "amqp":
            raise CaptureError(f"expected an amqp:// URL, not {url!r}")
        self.host = parts.hostname or "localhost"
        self.port = parts.port or 5672
        self.user = urllib.parse.unquote(parts.username or "guest")
        self.password = urllib.parse.unquote(parts.password or "guest")
        path = parts.path[1:] if parts.path.startswith("/") else parts.path
        self.vhost = urllib.parse.unquote(path) if path else "/"
        self.timeout = timeout
        self._reader = CommandReader()
        try:
            self._sock = socket.create_connection((self.host, self.port), timeout=timeout)
        except OSError as exc:
            raise CaptureError(f"cannot connect to {self.host}:{self.port}: "
                               f"{exc.strerror or exc}") from None
        self._pending: list[Any] = []
        self._open = False
        self._handshake()

    def _send(self, channel: int, method: Any) -> None:
        try:
            self._sock.sendall(encode_method_frame(channel, method))
        except OSError as exc:
            raise CaptureError(f"the connection to {self.host}:{self.port} was lost: "
                               f"{exc.strerror or exc}") from None

    def _next(self, deadline: float | None) -> Any:
        while not self._pending:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            self._sock.settimeout(remaining)
            try:
                data = self._sock.recv(1 << 16)
            except TimeoutError:
                return None
            except OSError:
                data = b""  # reset: RabbitMQ drops a connection whose login fails
            if not data:
                raise CaptureError("the broker closed the connection" + (
                    "" if self._open else f" while logging in as '{self.user}': wrong user or "
                    "password?"))
            self._pending.extend(self._reader.feed(data))
        command = self._pending.pop(0)
        method = command.method
        if isinstance(method, ConnectionClose):
            self._send(0, ConnectionCloseOk())
            raise CaptureError(f"the broker closed the connection: {method.reply_code} "
                               f"{method.reply_text}")
        if isinstance(method, ChannelClose):
            raise CaptureError(f"the broker closed the channel: {method.reply_code} "
                               f"{method.reply_text}")
        return command

    def _expect(self, name: str) -> Any:
        command = self._next(time.monotonic() + self.timeout)
        if command is None:
            raise CaptureError(f"no {name} from {self.host}:{self.port} within {self.timeout} s")
        if name != command.method.NAME:
            raise CaptureError(f"expected {name}, got {command.method.NAME}")
        return command.method

    def _handshake(self) -> None:
        self._sock.sendall(PROTOCOL_HEADER)
        self._expect("connection.start")
        response = f"\x00{self.user}\x00{self.password}"
        self._send(0, ConnectionStartOk(
            client_properties={"product": "embroker capture", "version": __version__,
                               "capabilities": {"consumer_cancel_notify": True}},
            mechanism="PLAIN", response=response))
        tune = self._expect("connection.tune")
        assert isinstance(tune, ConnectionTune)
        frame_max = tune.frame_max or 131072
        self._reader.frame_max = frame_max
        self._send(0, ConnectionTuneOk(channel_max=1, frame_max=frame_max, heartbeat=0))
        self._send(0, ConnectionOpen(virtual_host=self.vhost))
        self._open = True  # past the login: a close now is about the vhost or later
        self._expect("connection.open-ok")
        self._send(1, ChannelOpen())
        self._expect("channel.open-ok")

    def subscribe_firehose(self, binding_key: str = "publish.#") -> str:
        """Declare an exclusive queue bound to ``amq.rabbitmq.trace`` and consume it."""
        self._send(1, QueueDeclare(queue="", exclusive=True, auto_delete=True))
        queue: str = self._expect("queue.declare-ok").queue
        self._send(1, QueueBind(queue=queue, exchange="amq.rabbitmq.trace", routing_key=binding_key))
        self._expect("queue.bind-ok")
        self._send(1, BasicConsume(queue=queue, no_ack=True, consumer_tag="embroker-capture"))
        self._expect("basic.consume-ok")
        return queue

    def deliveries(self, deadline: float | None) -> Iterator[Any]:
        """Deliveries until ``deadline`` (monotonic seconds; ``None``: forever)."""
        while True:
            command = self._next(deadline)
            if command is None:
                return
            if isinstance(command.method, BasicDeliver):
                yield command

    def close(self) -> None:
        try:
            self._send(0, ConnectionClose(reply_code=200, reply_text="capture done"))
            self._next(time.monotonic() + 2)
        except (CaptureError, OSError):
            pass
        finally:
            self._sock.close()


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def firehose_row(command: Any, number: int, received: datetime.datetime) -> dict[str, Any] | None:
    """One firehose message to a capture row (``None`` for anything but a publish)."""
    method = command.method
    if not method.routing_key.startswith("publish."):
        return None
    trace = command.properties.get("headers") or {}
    properties = dict(trace.get("properties") or {})
    keys = [_text(k) or "" for k in trace.get("routing_keys") or [method.routing_key[8:]]]
    headers = properties.pop("headers", None)
    routed = trace.get("routed_queues")
    return {"line": number, "vhost": _text(trace.get("vhost")),
           "exchange": _text(trace.get("exchange_name")) or "", "routing_key": keys[0],
           "routing_keys": keys, "headers": _headers.dumps(headers) if headers is not None else None,
           "size": len(command.body or b""), "published_at": received,
           "routed_queues": [_text(q) or "" for q in routed] if isinstance(routed, list) else None,
           "mandatory": None,
           "properties": _headers.dumps(properties) if properties else None,
           "connection": _text(trace.get("connection")), "channel": trace.get("channel"),
           "user": _text(trace.get("user")), "node": _text(trace.get("node"))}


def capture_schema() -> Any:
    import pyarrow as pa

    from ._inputs import traffic_schema

    base = traffic_schema()
    return pa.schema([*base, ("properties", pa.string()), ("connection", pa.string()),
                      ("channel", pa.int64()), ("user", pa.string()), ("node", pa.string())])


def _rabbitmqctl(action: str, vhost: str) -> None:
    try:
        subprocess.run(["rabbitmqctl", action, "-p", vhost], check=True, capture_output=True,
                       text=True, timeout=60)
    except FileNotFoundError:
        raise CaptureError("--enable-tracing runs rabbitmqctl, which is not on PATH; turn tracing "
                           f"on where the broker runs: rabbitmqctl trace_on -p {vhost}") from None
    except subprocess.CalledProcessError as exc:
        raise CaptureError(f"rabbitmqctl {action} -p {vhost} failed: "
                           f"{(exc.stderr or exc.stdout).strip()}") from None


def capture(url: str, out: str, *, duration: float | None = None, count: int | None = None,
            enable_tracing: bool = False, ready: Callable[[], None] | None = None,
            progress: Callable[[int, float], None] | None = None) -> int:
    """Capture publishes in the URL's vhost into a Parquet file; returns how many.

    Stops after ``duration`` seconds, after ``count`` messages, or on Ctrl-C, whichever comes
    first. With ``enable_tracing`` it runs ``rabbitmqctl trace_on -p V`` first and
    ``trace_off`` at the end (only where the broker runs); otherwise tracing must be on already.
    ``ready`` is called once the capture queue is consuming.

    Raises:
        CaptureError: cannot connect, log in, or turn tracing on.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    client = FirehoseClient(url)
    schema = capture_schema()
    written = 0
    try:
        if enable_tracing:
            _rabbitmqctl("trace_on", client.vhost)
        client.subscribe_firehose()
        if ready is not None:
            ready()
        start = time.monotonic()
        deadline = None if duration is None else start + duration
        rows: list[dict[str, Any]] = []
        last_report = 0.0
        with pq.ParquetWriter(out, schema) as writer:
            try:
                while count is None or written + len(rows) < count:
                    step = time.monotonic() + 0.5
                    until = step if deadline is None else min(step, deadline)
                    for command in client.deliveries(until):
                        row = firehose_row(command, written + len(rows) + 1,
                                           datetime.datetime.now(datetime.timezone.utc))
                        if row is not None:
                            rows.append(row)
                        if count is not None and written + len(rows) >= count:
                            break
                        if len(rows) >= 10_000:
                            break
                    if rows:
                        writer.write_batch(pa.RecordBatch.from_pylist(rows, schema=schema))
                        written += len(rows)
                        rows = []
                    now = time.monotonic()
                    if progress is not None and now - last_report >= 0.5:
                        progress(written, now - start)
                        last_report = now
                    if deadline is not None and now >= deadline:
                        break
            except KeyboardInterrupt:
                pass
            if rows:
                writer.write_batch(pa.RecordBatch.from_pylist(rows, schema=schema))
                written += len(rows)
        if progress is not None:
            progress(written, time.monotonic() - start)
    finally:
        if enable_tracing:
            try:
                _rabbitmqctl("trace_off", client.vhost)
            except CaptureError as exc:
                print(f"embroker capture: {exc}", file=sys.stderr)
        client.close()
    return written
