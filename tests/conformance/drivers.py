"""Drivers: how the harness talks to a broker.

- :class:`InProcessDriver`: a fresh ``embroker.Broker()`` per scenario, driven through the
  in-process client (no bytes at all). Its clock is the real one, as RabbitMQ's; the work that
  falls due with time (TTL expiry, queue expiry) runs when the driver calls ``broker.tick()``,
  before every call and wait, as the listener's loop would have run it meanwhile.
- :class:`PikaDriver`: pika's ``BlockingConnection`` to any AMQP URL. The reference RabbitMQ uses
  it (``EMBROKER_REFERENCE_URL``). All pika-specific code lives in this class and its
  connection/channel helpers.
- :class:`WireDriver`: the same :class:`PikaDriver` against embroker's own listener: a fresh
  ``Broker()`` and ``broker.serve()`` per scenario, so the very pika code that talks to RabbitMQ
  talks to embroker over a socket.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import struct
import subprocess
import time
from collections.abc import Iterable
from typing import Any, ClassVar
from urllib.parse import quote, urlsplit, urlunsplit

from .admin import ReferenceAdmin, model_admin
from .harness import (
    PROPERTY_NAMES,
    BrokerError,
    Confirm,
    Delivered,
    Event,
    Msg,
    QueueDeclareOk,
    Returned,
)

REFERENCE_ENV = "EMBROKER_REFERENCE_URL"

#: The plugins the reference RabbitMQ runs with (``.ci/run`` enables them): the embroker
#: drivers' brokers enable the same ones. No delayed-message plugin there: its rules are pinned
#: by tests/model/test_delayed.py instead.
REFERENCE_PLUGINS = ("rabbitmq_consistent_hash_exchange", "rabbitmq_event_exchange",
                     "rabbitmq_random_exchange", "rabbitmq_recent_history_exchange",
                     "rabbitmq_sharding")

# --------------------------------------------------------------------------------------------
# In-process


class InProcessDriver:
    label = "in-process"

    def __init__(self) -> None:
        from embroker import Broker  # imported here: the rest of the harness must not need it

        self.broker = Broker(plugins=REFERENCE_PLUGINS)

    def connect(self) -> _InProcessConnection:
        return _InProcessConnection(self.broker.connect(), self.broker)

    def connect_as(self, user: str, password: str, vhost: str) -> _InProcessConnection:
        """``broker.connect(vhost, user=user)``: checked as ``user``, with no password."""
        from embroker.errors import AMQPError

        try:
            return _InProcessConnection(self.broker.connect(vhost, user=user), self.broker)
        except AMQPError as e:
            raise BrokerError("connection", e.reply_code, e.reply_text) from e

    def admin(self, command: str, args: tuple[str, ...], vhost: str | None) -> None:
        _broker_admin(self.broker, command, args, vhost)

    def finish(self, queues: Iterable[str], exchanges: Iterable[str]) -> None:
        pass  # the broker is thrown away

    def policy_command(self, command: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """A policy command (``set_policy``...: see ``admin.py``) on the broker."""
        model_admin(self.broker, command, args, kwargs)


def _broker_admin(broker: Any, command: str, args: tuple[str, ...], vhost: str | None) -> None:
    """A rabbitmqctl command as embroker's Broker method of the same name."""
    getattr(broker, command)(*args, **({"vhost": vhost} if vhost is not None else {}))


class _InProcessConnection:
    def __init__(self, conn: Any, broker: Any) -> None:
        self.conn = conn
        self.broker = broker

    def channel(self) -> _InProcessChannel:
        return _InProcessChannel(self.conn.channel(), self.broker)

    def close(self) -> None:
        self.conn.close()


class _InProcessChannel:
    """Deliveries, returns and broker cancels reach the in-process client synchronously: they
    are there when the call that caused them returns (or after ``process_data_events`` for
    those another connection caused)."""

    def __init__(self, ch: Any, broker: Any) -> None:
        self.ch = ch
        self.broker = broker
        self._seen_returns = 0
        self._seen_confirms = 0
        self._seen_cancels = 0
        self._deliveries: list[Delivered] = []

    def call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        from embroker.errors import AMQPError, ConnectionClosed, NackError, UnroutableError

        if method == "flow":
            raise NotImplementedError("the in-process client has no channel.flow")
        self.broker.tick()  # what the listener's loop would have run by now
        if method == "basic_consume":
            args = (args[0], self._on_message)
        kwargs = dict(kwargs)
        no_wait = kwargs.pop("no_wait", False)  # no replies in-process: only the result goes
        try:
            result = getattr(self.ch, method)(*args, **kwargs)
        except (UnroutableError, NackError):  # (pika's raising on a return or a nack: both
            result = None                     # are events here, as on the wire)
        except AMQPError as e:
            raise BrokerError("connection" if e.hard else "channel", e.reply_code,
                              e.wire_reply_text) from e
        except ConnectionClosed as e:  # the broker closed it meanwhile (a deleted user...)
            if e.reason is None:
                raise
            raise BrokerError("connection", e.reason.reply_code, e.reason.wire_reply_text) from e
        if no_wait:
            return None
        if method == "queue_declare":
            return QueueDeclareOk(result.queue, result.message_count, result.consumer_count)
        if method == "basic_get":
            if result is None:
                return None
            return Msg(result.exchange, result.routing_key, result.redelivered,
                       result.delivery_tag, result.message_count, dict(result.properties),
                       result.body)
        if method in ("queue_purge", "queue_delete", "basic_consume"):
            return result
        return None

    def _on_message(self, _ch: Any, delivery: Any, properties: dict[str, Any],
                    body: bytes) -> None:
        self._deliveries.append(Delivered(delivery.consumer_tag, delivery.delivery_tag,
                                          delivery.redelivered, delivery.exchange,
                                          delivery.routing_key, dict(properties), body))

    def take_events(self) -> list[Event]:
        """Returns, then confirms: the in-process client keeps them in two lists, so their
        relative order is not observable here (it is on the wire)."""
        returned = self.ch.returned[self._seen_returns:]
        self._seen_returns += len(returned)
        confirms = self.ch.confirms[self._seen_confirms:]
        self._seen_confirms += len(confirms)
        events: list[Event] = [Returned(r.reply_code, r.reply_text, r.exchange, r.routing_key,
                                        dict(r.properties), r.body) for r in returned]
        events += [Confirm(tag, multiple, ack) for tag, multiple, ack in confirms]
        return events

    def _settle(self, ready: Any, timeout: float) -> None:
        """Run what is due and the pending callbacks; while ``ready()`` is false and a timer of
        the broker falls due within ``timeout`` (a message expiring into a dead-letter queue
        with a consumer...), wait for it. Without pending timers nothing more can come."""
        clock, deadline = self.broker.clock, time.monotonic() + timeout
        while True:
            self.broker.tick()
            self.ch.connection.process_data_events()  # what other connections caused
            due = clock.next_deadline()
            if ready() or due is None:
                return
            pause = due - clock.monotonic()
            if time.monotonic() + pause > deadline:
                return
            time.sleep(max(pause, 0.0) + 0.001)

    def wait_deliveries(self, n: int, timeout: float) -> list[Delivered]:
        self._settle(lambda: len(self._deliveries) >= n, timeout)
        out, self._deliveries = self._deliveries[:n], self._deliveries[n:]
        return out

    def wait_cancels(self, n: int, timeout: float) -> list[str]:
        self._settle(lambda: len(self.ch.cancelled) >= self._seen_cancels + n, timeout)
        new = self.ch.cancelled[self._seen_cancels:self._seen_cancels + n]
        self._seen_cancels += len(new)
        return list(new)

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
        self._admin: ReferenceAdmin | None = None

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

    def connect_as(self, user: str, password: str, vhost: str) -> _PikaConnection:
        """Connect to the same broker as ``user``; a refusal (login, vhost) is a BrokerError."""
        import pika
        import pika.exceptions as px

        parts = urlsplit(self.url)
        netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{parts.netloc.rpartition('@')[2]}"
        url = urlunsplit(parts._replace(netloc=netloc, path="/" + quote(vhost, safe="")))
        params = pika.URLParameters(url)
        params.connection_attempts = 1
        params.socket_timeout = 5
        try:
            return _PikaConnection(pika.BlockingConnection(params))
        except px.AMQPConnectionError as e:
            # pika keeps the broker's connection.close only as text: "(530) 'NOT_ALLOWED - ...'".
            found = re.search(r"\((\d+)\) (['\"])(.*)\2", str(e.args[0]) if e.args else "")
            if found is None:
                raise
            raise BrokerError("connection", int(found.group(1)), found.group(3)) from e

    def admin(self, command: str, args: tuple[str, ...], vhost: str | None) -> None:
        """``rabbitmqctl command [-p vhost] args...``: the reference must be this machine's
        RabbitMQ (run as a user rabbitmqctl works for); without rabbitmqctl the scenario skips."""
        ctl = shutil.which("rabbitmqctl")
        if ctl is None:
            import pytest

            pytest.skip("this scenario manages users, and rabbitmqctl is not on PATH")
        command_line = [ctl, "-q", command, *(["-p", vhost] if vhost else []), "--", *args]
        done = subprocess.run(command_line, capture_output=True, text=True, timeout=120,
                              check=False)
        if done.returncode:
            raise RuntimeError(f"{' '.join(command_line)} failed: {done.stderr or done.stdout}")

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

    def policy_command(self, command: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """A policy command (``set_policy``...) on the broker behind the URL (see
        ``admin.py``)."""
        if self._admin is None:
            self._admin = ReferenceAdmin(self.url)
        self._admin.call(command, args, kwargs)

    @staticmethod
    def check_reachable(url: str, attempts: int = 2, pause: float = 2.0) -> str | None:
        """None when ``url`` answers (within ``attempts`` tries, ``pause`` seconds apart: a
        busy machine may miss one handshake); else why not."""
        why = ""
        for attempt in range(attempts):
            if attempt:
                time.sleep(pause)
            try:
                conn = PikaDriver(url).connect()
            except Exception as exc:
                why = repr(exc)  # pika's str() of a connection error is often empty
                continue
            conn.close()
            return None
        return why


class WireDriver(PikaDriver):
    """pika against embroker's own listener: a fresh ``Broker()`` and ``serve()`` per driver.

    Call :meth:`stop` when the scenario is over; it returns the listener's unexpected errors
    (``server.errors``), which a test should find empty.
    """

    def __init__(self) -> None:
        from embroker import Broker

        self.broker = Broker(plugins=REFERENCE_PLUGINS)
        self.server = self.broker.serve()  # 127.0.0.1, a free port: never 5672
        super().__init__(self.server.url, label="embroker wire")

    def finish(self, queues: Iterable[str], exchanges: Iterable[str]) -> None:
        pass  # the broker is thrown away

    def admin(self, command: str, args: tuple[str, ...], vhost: str | None) -> None:
        _broker_admin(self.broker, command, args, vhost)

    def policy_command(self, command: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        model_admin(self.broker, command, args, kwargs)

    def stop(self) -> list[BaseException]:
        self.server.stop()
        return list(self.server.errors)


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
    """A pika ``BlockingChannel``, with what the harness needs that pika's blocking API hides.

    - Returned messages, publisher confirms (with the broker's delivery tag and ``multiple``),
      consumer deliveries and broker cancels (``add_on_cancel_callback``) are captured on pika's
      underlying ``pika.channel.Channel`` as their frames are read, in arrival order.
    - pika makes up consumer tags itself (``ctag1.<uuid>``) and refuses, before sending anything,
      a tag it already has on the channel, and a cancel of a tag it does not know. The broker is
      what is under test, so basic.consume and basic.cancel are sent as they are (an empty tag
      asks the broker for one) and the consumer is registered with pika on consume-ok, before
      the deliveries that follow it are read. These use pika 1.x internals (``_rpc``,
      ``_consumer_infos``...), in :meth:`_consume` and :meth:`_cancel` only.
    """

    #: Methods pika sends without waiting for a reply: errors (and basic.return) arrive later.
    ASYNC_METHODS = frozenset({"basic_publish", "basic_ack", "basic_nack", "basic_reject"})

    def __init__(self, conn: Any, ch: Any) -> None:
        self.conn = conn
        self.ch = ch
        self._events: list[Event] = []
        self._deliveries: list[Delivered] = []
        self._cancels: list[str] = []
        self._confirming = False
        ch._impl.add_on_return_callback(self._on_return)
        ch._impl.add_on_cancel_callback(self._on_cancel)

    # -- frames as they are read -------------------------------------------------------------
    def _on_return(self, _ch: Any, method: Any, props: Any, body: bytes) -> None:
        self._events.append(Returned(method.reply_code, method.reply_text, method.exchange,
                                     method.routing_key, _properties_to_dict(props), body))

    def _on_confirm(self, frame: Any) -> None:
        import pika.spec

        m = frame.method
        self._events.append(Confirm(m.delivery_tag, m.multiple, isinstance(m, pika.spec.Basic.Ack)))

    def _on_cancel(self, frame: Any) -> None:
        """basic.cancel from the broker (pika's add_on_cancel_callback)."""
        self._cancels.append(frame.method.consumer_tag)

    def _on_consumer_event(self, evt: Any) -> None:
        if hasattr(evt, "method_frame"):  # _ConsumerCancellationEvt: see _on_cancel
            self.ch._consumer_infos.pop(evt.method_frame.method.consumer_tag, None)
            return
        m = evt.method  # _ConsumerDeliveryEvt
        self._deliveries.append(Delivered(m.consumer_tag, m.delivery_tag, m.redelivered,
                                          m.exchange, m.routing_key,
                                          _properties_to_dict(evt.properties), evt.body))

    # -- calls --------------------------------------------------------------------------------
    def _sync(self) -> None:
        """A harmless round trip: every earlier method has been handled when it returns."""
        self.ch.exchange_declare("amq.direct", passive=True)

    def _consume(self, queue: str, auto_ack: bool = False, exclusive: bool = False,
                 consumer_tag: str | None = None, arguments: dict[str, Any] | None = None) -> str:
        import pika.spec
        from pika.adapters.blocking_connection import _ConsumerInfo

        impl, tags = self.ch._impl, []

        def on_consume_ok(frame: Any) -> None:
            tag = frame.method.consumer_tag
            info = _ConsumerInfo(tag, auto_ack=auto_ack,
                                 alternate_event_sink=self._on_consumer_event)
            info.state = _ConsumerInfo.ACTIVE
            self.ch._consumer_infos[tag] = info
            impl._consumers[tag] = self.ch._on_consumer_message_delivery
            if auto_ack:
                impl._consumers_with_noack.add(tag)
            tags.append(tag)

        # BlockingChannel signals this result on every consume-ok; the with-block resets it.
        with self.ch._basic_consume_ok_result:
            impl._rpc(pika.spec.Basic.Consume(queue=queue, consumer_tag=consumer_tag or "",
                                              no_ack=auto_ack, exclusive=exclusive,
                                              arguments=arguments or {}),
                      on_consume_ok, [pika.spec.Basic.ConsumeOk])
            self.ch._flush_output(lambda: bool(tags))
        return str(tags[0])

    def _cancel(self, consumer_tag: str) -> None:
        import pika.spec

        impl, done = self.ch._impl, []

        def on_cancel_ok(_frame: Any) -> None:
            impl._cleanup_consumer_ref(consumer_tag)
            self.ch._consumer_infos.pop(consumer_tag, None)
            done.append(True)

        impl._rpc(pika.spec.Basic.Cancel(consumer_tag=consumer_tag), on_cancel_ok,
                  [pika.spec.Basic.CancelOk])
        self.ch._flush_output(lambda: bool(done))

    #: The methods with a no-wait flag: harness method -> (pika.spec request, its reply, the
    #: names of the harness method's positional arguments).
    NO_WAIT: ClassVar[dict[str, tuple[str, str, tuple[str, ...]]]] = {
        "exchange_declare": ("Exchange.Declare", "Exchange.DeclareOk", ("exchange",)),
        "exchange_delete": ("Exchange.Delete", "Exchange.DeleteOk", ("exchange",)),
        "exchange_bind": ("Exchange.Bind", "Exchange.BindOk",
                          ("destination", "source", "routing_key")),
        "exchange_unbind": ("Exchange.Unbind", "Exchange.UnbindOk",
                            ("destination", "source", "routing_key")),
        "queue_declare": ("Queue.Declare", "Queue.DeclareOk", ("queue",)),
        "queue_bind": ("Queue.Bind", "Queue.BindOk", ("queue", "exchange", "routing_key")),
        "queue_purge": ("Queue.Purge", "Queue.PurgeOk", ("queue",)),
        "queue_delete": ("Queue.Delete", "Queue.DeleteOk", ("queue",)),
        "basic_cancel": ("Basic.Cancel", "Basic.CancelOk", ("consumer_tag",)),
        "confirm_delivery": ("Confirm.Select", "Confirm.SelectOk", ()),
    }

    def _no_wait(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Send ``method`` with no-wait (pika's blocking API cannot), then channel.flow(true) as
        a round trip: a reply to the method would have come before flow-ok. None, or the names
        of the replies that came all the same."""
        import functools

        import pika.spec

        request_name, reply_name, positional = self.NO_WAIT[method]
        request, reply = (functools.reduce(getattr, name.split("."), pika.spec)
                          for name in (request_name, reply_name))
        fields = dict(zip(positional, args, strict=False)) | kwargs
        if "exchange_type" in fields:
            fields["type"] = fields.pop("exchange_type")
        if method == "queue_bind" and fields.get("routing_key") is None:
            fields["routing_key"] = fields["queue"]  # as pika's queue_bind
        impl, replies = self.ch._impl, []

        def on_reply(frame: Any) -> None:
            replies.append(frame.method.NAME)

        impl.callbacks.add(impl.channel_number, reply, on_reply, one_shot=False)
        try:
            impl._send_method(request(nowait=True, **fields))
            self.ch.flow(True)
        finally:
            impl.callbacks.remove(impl.channel_number, reply, on_reply)
        if method == "basic_cancel":  # what pika does on cancel-ok
            impl._cleanup_consumer_ref(fields["consumer_tag"])
            self.ch._consumer_infos.pop(fields["consumer_tag"], None)
        return replies or None

    def call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        import pika
        import pika.exceptions as px

        try:
            if kwargs.get("no_wait"):
                return self._no_wait(method, args,
                                     {k: v for k, v in kwargs.items() if k != "no_wait"})
            if method == "basic_consume":
                return self._consume(*args, **kwargs)
            if method == "basic_cancel":
                return self._cancel(*args, **kwargs)
            if method == "basic_publish":
                props = kwargs.pop("properties", None)
                kwargs["properties"] = pika.BasicProperties(**props) if props else None
            try:
                # In confirm mode BlockingChannel.basic_publish waits for the ack or nack.
                result = getattr(self.ch, method)(*args, **kwargs)
            except (px.UnroutableError, px.NackError):
                result = None  # the return and the confirm are in self._events
            if method == "confirm_delivery":
                impl = self.ch._impl
                for reply in (pika.spec.Basic.Ack, pika.spec.Basic.Nack):
                    impl.callbacks.add(impl.channel_number, reply, self._on_confirm, False)
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
        if method == "flow":
            return result
        return None

    def take_events(self) -> list[Event]:
        out, self._events = self._events, []
        return out

    def _wait(self, ready: Any, timeout: float) -> None:
        """Read frames until ``ready()`` or ``timeout`` seconds passed (never a fixed sleep)."""
        import pika.exceptions as px

        deadline = time.monotonic() + timeout
        try:
            while not ready() and self.ch.is_open:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.conn.process_data_events(time_limit=min(left, 0.01))
        except px.ConnectionClosedByBroker as e:
            raise BrokerError("connection", e.reply_code, e.reply_text) from e
        reason = self.ch._closing_reason
        if self.ch.is_closed and isinstance(reason, px.ChannelClosedByBroker):
            raise BrokerError("channel", reason.reply_code, reason.reply_text)

    def wait_deliveries(self, n: int, timeout: float) -> list[Delivered]:
        self._wait(lambda: len(self._deliveries) >= n, timeout)
        out, self._deliveries = self._deliveries[:n], self._deliveries[n:]
        return out

    def wait_cancels(self, n: int, timeout: float) -> list[str]:
        self._wait(lambda: len(self._cancels) >= n, timeout)
        out, self._cancels = self._cancels[:n], self._cancels[n:]
        return out

    def close(self) -> None:
        if self.ch.is_open:
            self.ch.close()


# --------------------------------------------------------------------------------------------
# The reference

_reachability: dict[str, str | None] = {}


def reference_url_or_problem() -> tuple[str | None, str | None]:
    """The reference RabbitMQ: ``(url, None)`` when ``EMBROKER_REFERENCE_URL`` is set and
    answers, ``(None, None)`` when it is not set, ``(None, why)`` when it is set and does not
    answer (a broken setup: the tests that use it fail rather than skip)."""
    url = os.environ.get(REFERENCE_ENV)
    if not url:
        return None, None
    if url not in _reachability:
        _reachability[url] = PikaDriver.check_reachable(url)
    why = _reachability[url]
    if why is not None:
        return None, (f"{REFERENCE_ENV}={safe_url(url)} is set but RabbitMQ does not answer: "
                      f"{why}\n(unset {REFERENCE_ENV} to run the golden-file checks alone)")
    return url, None
