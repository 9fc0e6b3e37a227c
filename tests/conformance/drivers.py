"""Drivers: how the harness talks to a broker.

- :class:`InProcessDriver`: a fresh ``embroker.Broker()`` per scenario, driven through the
  in-process client (no bytes at all).
- :class:`PikaDriver`: pika's ``BlockingConnection`` to any AMQP URL. The reference RabbitMQ uses
  it (``EMBROKER_REFERENCE_URL``); so will embroker's own socket listener. All pika-specific code
  lives in this class and its connection/channel helpers.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .harness import (
    PROPERTY_NAMES,
    BrokerError,
    Msg,
    QueueDeclareOk,
    Returned,
)

REFERENCE_ENV = "EMBROKER_REFERENCE_URL"

# --------------------------------------------------------------------------------------------
# In-process


class InProcessDriver:
    label = "in-process"

    def __init__(self) -> None:
        from embroker import Broker  # imported here: the rest of the harness must not need it

        self.broker = Broker()

    def connect(self) -> _InProcessConnection:
        return _InProcessConnection(self.broker.connect())

    def finish(self, queues: Iterable[str], exchanges: Iterable[str]) -> None:
        pass  # the broker is thrown away


class _InProcessConnection:
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def channel(self) -> _InProcessChannel:
        return _InProcessChannel(self.conn.channel())

    def close(self) -> None:
        self.conn.close()


class _InProcessChannel:
    def __init__(self, ch: Any) -> None:
        self.ch = ch
        self._seen_returns = 0

    def call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        from embroker.errors import AMQPError

        try:
            result = getattr(self.ch, method)(*args, **kwargs)
        except AMQPError as e:
            raise BrokerError("connection" if e.hard else "channel", e.reply_code,
                              e.reply_text) from e
        if method == "queue_declare":
            return QueueDeclareOk(result.queue, result.message_count, result.consumer_count)
        if method == "basic_get":
            if result is None:
                return None
            return Msg(result.exchange, result.routing_key, result.redelivered,
                       result.delivery_tag, result.message_count, dict(result.properties),
                       result.body)
        if method in ("queue_purge", "queue_delete"):
            return result
        return None

    def take_returned(self) -> list[Returned]:
        new = self.ch.returned[self._seen_returns:]
        self._seen_returns += len(new)
        return [Returned(r.reply_code, r.reply_text, r.exchange, r.routing_key,
                         dict(r.properties), r.body) for r in new]

    def close(self) -> None:
        self.ch.close()


# --------------------------------------------------------------------------------------------
# pika, against any URL


def _install_pika_float_support() -> None:
    """Make pika send and receive floats faithfully.

    pika 1.x refuses to encode a float (UnsupportedAMQPFieldException) and decodes a double
    ('d') or a float ('f') through ``long()``, so 1.5 arrives as 1 (and displays as ``1L``).
    Both are patched here, for every table (headers, arguments) at any depth: tables and arrays
    look ``encode_value``/``decode_value`` up as module globals. Nothing else changes.
    """
    import pika.data

    if getattr(pika.data.encode_value, "_embroker_float", False):
        return
    original_encode, original_decode = pika.data.encode_value, pika.data.decode_value

    def encode_value(pieces: list[bytes], value: Any) -> int:
        if isinstance(value, float):
            pieces.append(struct.pack(">cd", b"d", value))
            return 9
        return original_encode(pieces, value)

    def decode_value(encoded: bytes, offset: int) -> tuple[Any, int]:
        kind = encoded[offset:offset + 1]
        if kind == b"d":
            return struct.unpack_from(">d", encoded, offset + 1)[0], offset + 9
        if kind == b"f":
            return struct.unpack_from(">f", encoded, offset + 1)[0], offset + 5
        return original_decode(encoded, offset)

    encode_value._embroker_float = True  # type: ignore[attr-defined]
    pika.data.encode_value = encode_value
    pika.data.decode_value = decode_value


def safe_url(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class PikaDriver:
    """pika.BlockingConnection to ``url``; deletes what a scenario declared when it ends."""

    def __init__(self, url: str, label: str | None = None) -> None:
        _install_pika_float_support()
        # Every expected channel.close would otherwise be logged as a warning by pika.
        logging.getLogger("pika").setLevel(logging.ERROR)
        self.url = url
        self.label = label or f"pika {safe_url(url)}"

    def _parameters(self) -> Any:
        import pika

        params = pika.URLParameters(self.url)
        params.connection_attempts = 1
        params.socket_timeout = 5
        params.blocked_connection_timeout = 10
        return params

    def connect(self) -> _PikaConnection:
        import pika

        return _PikaConnection(pika.BlockingConnection(self._parameters()))

    def finish(self, queues: Iterable[str], exchanges: Iterable[str]) -> None:
        import pika

        with contextlib.suppress(Exception):
            conn = pika.BlockingConnection(self._parameters())
            try:
                ch = conn.channel()
                for method, names in (("queue_delete", queues), ("exchange_delete", exchanges)):
                    for name in names:
                        try:
                            getattr(ch, method)(name)
                        except pika.exceptions.ChannelClosed:
                            ch = conn.channel()
            finally:
                with contextlib.suppress(Exception):
                    conn.close()

    @staticmethod
    def check_reachable(url: str) -> str | None:
        """None when ``url`` answers; else why not."""
        try:
            conn = PikaDriver(url).connect()
        except Exception as exc:
            return repr(exc)  # pika's str() of a connection error is often empty
        conn.close()
        return None


class _PikaConnection:
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def channel(self) -> _PikaChannel:
        return _PikaChannel(self.conn, self.conn.channel())

    def close(self) -> None:
        if self.conn.is_open:
            self.conn.close()


def _properties_to_dict(props: Any) -> dict[str, Any]:
    if props is None:
        return {}
    return {n: getattr(props, n) for n in PROPERTY_NAMES if getattr(props, n) is not None}


class _PikaChannel:
    #: Methods pika sends without waiting for a reply: errors (and basic.return) arrive later.
    ASYNC_METHODS = frozenset({"basic_publish", "basic_ack", "basic_nack", "basic_reject"})

    def __init__(self, conn: Any, ch: Any) -> None:
        self.conn = conn
        self.ch = ch
        self._returned: list[Returned] = []
        ch.add_on_return_callback(self._on_return)

    def _on_return(self, _ch: Any, method: Any, props: Any, body: bytes) -> None:
        self._returned.append(Returned(method.reply_code, method.reply_text, method.exchange,
                                       method.routing_key, _properties_to_dict(props), body))

    def _sync(self) -> None:
        """A harmless round trip: every earlier method has been handled when it returns."""
        self.ch.exchange_declare("amq.direct", passive=True)
        self.conn.process_data_events(time_limit=0)  # dispatch basic.return callbacks

    def call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        import pika
        import pika.exceptions as px

        try:
            if method == "basic_publish":
                props = kwargs.pop("properties", None)
                kwargs["properties"] = pika.BasicProperties(**props) if props else None
            result = getattr(self.ch, method)(*args, **kwargs)
            if method in self.ASYNC_METHODS:
                self._sync()
        except px.ChannelClosedByBroker as e:
            raise BrokerError("channel", e.reply_code, e.reply_text) from e
        except px.ConnectionClosedByBroker as e:
            raise BrokerError("connection", e.reply_code, e.reply_text) from e

        if method == "queue_declare":
            m = result.method
            return QueueDeclareOk(m.queue, m.message_count, m.consumer_count)
        if method == "basic_get":
            m, props, body = result
            if m is None:
                return None
            return Msg(m.exchange, m.routing_key, m.redelivered, m.delivery_tag,
                       m.message_count, _properties_to_dict(props), body)
        if method in ("queue_purge", "queue_delete"):
            return result.method.message_count
        return None

    def take_returned(self) -> list[Returned]:
        out, self._returned = self._returned, []
        return out

    def close(self) -> None:
        if self.ch.is_open:
            self.ch.close()


# --------------------------------------------------------------------------------------------
# The reference

_reachability: dict[str, str | None] = {}


def reference_url_or_skip_reason() -> tuple[str | None, str | None]:
    """(url, None) when the reference RabbitMQ is configured and answers; else (None, reason)."""
    url = os.environ.get(REFERENCE_ENV)
    if not url:
        return None, (f"{REFERENCE_ENV} is not set: differential tests need a reference RabbitMQ,"
                      f" e.g. {REFERENCE_ENV}=amqp://guest:guest@127.0.0.1:5672/")
    if url not in _reachability:
        _reachability[url] = PikaDriver.check_reachable(url)
    why = _reachability[url]
    if why is not None:
        return None, f"{REFERENCE_ENV}={safe_url(url)} is set but RabbitMQ does not answer: {why}"
    return url, None
