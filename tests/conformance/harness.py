"""The conformance harness: run one scenario through a driver and record what a client observes.

A *scenario* is a plain function ``def scenario_xxx(s: Session) -> None``. It opens channels with
``s.channel()`` (or more connections with ``s.connection()``), calls pika-like methods on them, and
the session records every call together with its outcome in ``s.transcript``:

- the normalized result (``None``, an ``int`` count, a :class:`QueueDeclareOk`, a :class:`Msg`), or
- the error it raised, as :class:`Err` (``scope`` "channel"/"connection", reply code, reply text);
  the call does not raise, so the scenario goes on (on another channel) after an error.

Messages returned to a publisher (``basic.return``) and publisher confirms (``basic.ack``/``nack``
in confirm mode) are recorded right after the call that caused them, in the order they arrived.
Consumer deliveries and broker-initiated consumer cancels arrive asynchronously on the wire (and
synchronously in-process), so they are only recorded where the scenario asks for them:
``ch.wait_deliveries(n)`` / ``ch.wait_cancels(n)`` wait (boundedly) until ``n`` have arrived and
record them. Names go through ``s.name("q1")``, which makes them unique per run; the transcript
replaces the unique prefix by nothing, server-named queues by ``amq.gen-1``, ``amq.gen-2``... and
server-generated consumer tags by ``amq.ctag-1``..., so transcripts from RabbitMQ and from embroker
compare equal.

A scenario may also state what it expects (``s.expect(...)``, ``s.expect_error(...)``): the
in-process run alone then checks embroker without RabbitMQ, and the reference run checks that the
scenario's author understood RabbitMQ.

Drivers (``drivers.py``) hide how a client talks to a broker; this module knows none of them.
"""

from __future__ import annotations

import contextlib
import datetime
import difflib
import hashlib
import re
import secrets
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, cast

# --------------------------------------------------------------------------------------------
# Observations


class Err(NamedTuple):
    """An error a broker raised: a closed channel or a closed connection."""

    scope: str  # "channel" | "connection" | "usage" (the harness refused: channel already closed)
    code: int
    text: str


class QueueDeclareOk(NamedTuple):
    queue: str
    message_count: int
    consumer_count: int


class Msg(NamedTuple):
    """A message received with basic.get."""

    exchange: str
    routing_key: str
    redelivered: bool
    delivery_tag: int
    message_count: int
    properties: dict[str, Any]
    body: bytes


class Returned(NamedTuple):
    """A message the broker returned to its publisher (basic.return)."""

    reply_code: int
    reply_text: str
    exchange: str
    routing_key: str
    properties: dict[str, Any]
    body: bytes


class Delivered(NamedTuple):
    """A message delivered to a consumer (basic.deliver)."""

    consumer_tag: str
    delivery_tag: int
    redelivered: bool
    exchange: str
    routing_key: str
    properties: dict[str, Any]
    body: bytes


class Confirm(NamedTuple):
    """A publisher confirm: basic.ack (``ack=True``) or basic.nack from the broker."""

    delivery_tag: int
    multiple: bool
    ack: bool


#: What a channel reports right after a call: returned messages and publisher confirms.
Event = Returned | Confirm

#: How long ``wait_deliveries`` / ``wait_cancels`` wait at most, in seconds.
WAIT_SECONDS = 3.0
#: How long ``Session.wait_until`` polls at most, and the pause between two probes.
WAIT_UNTIL_SECONDS = 2.0
POLL_SECONDS = 0.005


class BrokerError(Exception):
    """Raised by drivers for an error the broker reported; carries the :class:`Err`."""

    def __init__(self, scope: str, code: int, text: str) -> None:
        super().__init__(f"{scope} {code} {text}")
        self.err = Err(scope, code, text)


#: The basic properties, in the order of the specification.
PROPERTY_NAMES = (
    "content_type", "content_encoding", "headers", "delivery_mode", "priority", "correlation_id",
    "reply_to", "expiration", "message_id", "timestamp", "type", "user_id", "app_id", "cluster_id",
)

# --------------------------------------------------------------------------------------------
# Driver interface


class DriverChannel(Protocol):
    def call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Perform one channel method; return its result in the types above.

        Raises:
            BrokerError: the broker closed the channel or the connection.
        """

    def take_events(self) -> list[Event]:
        """The messages returned and the confirms received since the last call, in the order
        they arrived (publishes are synchronous: see drivers)."""

    def wait_deliveries(self, n: int, timeout: float) -> list[Delivered]:
        """Wait until ``n`` deliveries not yet taken have arrived (at most ``timeout`` seconds);
        return the first ``n`` of them (fewer on timeout), oldest first.

        Raises:
            BrokerError: the broker closed the channel or the connection meanwhile.
        """

    def wait_cancels(self, n: int, timeout: float) -> list[str]:
        """The same for basic.cancel sent by the broker: the consumer tags, oldest first."""

    def close(self) -> None: ...


class DriverConnection(Protocol):
    def channel(self) -> DriverChannel: ...

    def close(self) -> None: ...


class Driver(Protocol):
    #: Shown in failure messages ("in-process", "reference amqp://127.0.0.1:5672/").
    label: str

    def connect(self) -> DriverConnection: ...

    def finish(self, queues: Iterable[str], exchanges: Iterable[str]) -> None:
        """Delete what a scenario declared (after its connections are closed); never raises."""


class UserDriver(Driver, Protocol):
    """A driver that can also manage users (:meth:`Session.admin`, :meth:`Session.connect_as`)."""

    def connect_as(self, user: str, password: str, vhost: str) -> DriverConnection:
        """Connect as another user.

        Raises:
            BrokerError: the broker refused the login or the vhost.
        """

    def admin(self, command: str, args: tuple[str, ...], vhost: str | None) -> None:
        """Run a ``rabbitmqctl`` command on the broker (``add_user``, ``set_permissions``...);
        raises when it fails (a scenario's own mistake)."""


def _user_driver(driver: Driver) -> UserDriver:
    if not (hasattr(driver, "connect_as") and hasattr(driver, "admin")):
        raise TypeError(f"the driver {driver.label} cannot manage users")
    return cast(UserDriver, driver)


# --------------------------------------------------------------------------------------------
# Normalization

#: Server-generated names: queues (``amq.gen-``) and consumer tags (``amq.ctag-``).
_SERVER_NAMED = re.compile(r"(amq\.(?:gen|ctag)-)[A-Za-z0-9_\-]+")

#: What the ``time`` of an ``x-death`` entry becomes in a transcript (a broker's wall clock).
DEATH_TIME = "<time>"
#: How far from this process's clock an ``x-death`` time may be and still count as "now".
DEATH_TIME_TOLERANCE = datetime.timedelta(minutes=10)


def _is_death_entry(value: dict[Any, Any]) -> bool:
    """An ``x-death`` entry: a table with a ``reason``, a ``queue`` and a timestamp ``time``."""
    return "reason" in value and "queue" in value and isinstance(value.get("time"),
                                                                  datetime.datetime)


class Normalizer:
    """Rewrites recorded values so that runs against different brokers compare equal."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.server_names: dict[str, str] = {}

    def _server_name(self, match: re.Match[str]) -> str:
        raw, prefix = match.group(0), match.group(1)
        if raw not in self.server_names:
            n = sum(1 for v in self.server_names.values() if v.startswith(prefix)) + 1
            self.server_names[raw] = f"{prefix}{n}"
        return self.server_names[raw]

    def text(self, value: str) -> str:
        return _SERVER_NAMED.sub(self._server_name, value.replace(self.token, ""))

    def __call__(self, value: Any) -> Any:
        if isinstance(value, int) and type(value) not in (int, bool):
            return int(value)  # pika decodes 64-bit integers as its own ``long`` subclass
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bytes):
            token = self.token.encode()
            return value.replace(token, b"") if token in value else value
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # NamedTuple
            return type(value)(*(self(v) for v in value))
        if isinstance(value, tuple):
            return tuple(self(v) for v in value)
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, dict):
            if _is_death_entry(value):
                return {self(k): self._death_time(v) if k == "time" else self(v)
                        for k, v in value.items()}
            return {self(k): self(v) for k, v in value.items()}
        return value

    @staticmethod
    def _death_time(value: datetime.datetime) -> Any:
        """An ``x-death`` time close to now becomes :data:`DEATH_TIME`; any other stays as it
        is (so a wrong one shows in the diff)."""
        now = datetime.datetime.now(datetime.timezone.utc)
        when = value if value.tzinfo is not None else value.replace(tzinfo=datetime.timezone.utc)
        return DEATH_TIME if abs(now - when) <= DEATH_TIME_TOLERANCE else value


def _call_repr(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{method}({', '.join(parts)})"


# --------------------------------------------------------------------------------------------
# Session and proxies


class Entry(NamedTuple):
    """One line of a transcript: who did what, and what came of it."""

    who: str  # "c1.ch1", "c2", "note"
    what: str  # the call, normalized ("queue_declare('q1', durable=True)")
    outcome: Any  # the normalized result, or Err

    def line(self) -> str:
        return _shorten(f"{self.who:<7} {self.what} -> {self.outcome!r}")


_LONG_BYTES = re.compile(r"""b(['"])(.{60})(?:\\.|(?!\1).){140,}?\1""")


def _shorten(line: str) -> str:
    """Abbreviate long bytes literals in a transcript line (with a digest, so diffs show)."""
    def short(m: re.Match[str]) -> str:
        digest = hashlib.sha1(m.group(0).encode()).hexdigest()[:8]
        return f"b{m.group(1)}{m.group(2)}...{m.group(1)}<{len(m.group(0))} chars, {digest}>"
    return _LONG_BYTES.sub(short, line)


class ChannelProxy:
    """A channel as the scenario sees it: pika-like methods, each call recorded."""

    def __init__(self, session: Session, conn: ConnectionProxy, impl: DriverChannel, label: str):
        self._s = session
        self._conn = conn
        self._impl = impl
        self.label = label
        self.is_open = True
        #: Every message returned to this channel (raw, not normalized).
        self.returned: list[Returned] = []
        #: Every publisher confirm received on this channel (raw).
        self.confirms: list[Confirm] = []

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        s = self._s
        what = s.normalize(_call_repr(method, args, kwargs))
        if not self.is_open:
            outcome: Any = Err("usage", 0, "channel is closed")
            s._record(self.label, what, outcome)
            return outcome
        try:
            result = self._impl.call(method, args, kwargs)
        except BrokerError as e:
            result = e.err
            if e.err.scope == "connection":
                self._conn._closed_by_broker()
            else:
                self.is_open = False
        s._track(method, args, kwargs, result)
        s._record(self.label, what, s.normalize(result))
        if self.is_open:
            self._record_events()
        return result

    def _record_events(self) -> None:
        for event in self._impl.take_events():
            if isinstance(event, Returned):
                self.returned.append(event)
                self._s._record(self.label, "  <- basic.return", self._s.normalize(event))
            else:
                self.confirms.append(event)
                self._s._record(self.label, f"  <- basic.{'ack' if event.ack else 'nack'}",
                                self._s.normalize(event))

    def _wait(self, what: str, n: int, timeout: float = WAIT_SECONDS) -> Any:
        s = self._s
        if not self.is_open:
            outcome: Any = Err("usage", 0, "channel is closed")
            s._record(self.label, what, outcome)
            return outcome
        take = self._impl.wait_deliveries if what.startswith("wait_deliveries") \
            else self._impl.wait_cancels
        result: Any
        try:
            result = take(n, timeout)
        except BrokerError as e:
            result = e.err
            if e.err.scope == "connection":
                self._conn._closed_by_broker()
            else:
                self.is_open = False
        s._record(self.label, what, s.normalize(result))
        return result

    def wait_deliveries(self, n: int, *, timeout: float = WAIT_SECONDS) -> Any:
        """Wait until ``n`` more messages were delivered to this channel's consumers; record and
        return them (a list of :class:`Delivered`; shorter when they do not come in time).
        ``timeout=0`` takes only what has already arrived."""
        return self._wait(f"wait_deliveries({n})", n, timeout)

    def wait_cancels(self, n: int) -> Any:
        """Wait until the broker cancelled ``n`` more of this channel's consumers (basic.cancel
        from the broker: its queue was deleted); record and return their tags."""
        return self._wait(f"wait_cancels({n})", n)

    # The in-process client's contract (and pika's BlockingChannel's names).
    def exchange_declare(self, exchange: str, exchange_type: str = "direct", *, passive: bool = False,
                         durable: bool = False, auto_delete: bool = False, internal: bool = False,
                         arguments: dict[str, Any] | None = None) -> Any:
        kw: dict[str, Any] = {"exchange_type": exchange_type}
        kw.update(_non_default(passive=passive, durable=durable, auto_delete=auto_delete,
                               internal=internal, arguments=arguments))
        return self._call("exchange_declare", exchange, **kw)

    def exchange_delete(self, exchange: str, *, if_unused: bool = False) -> Any:
        return self._call("exchange_delete", exchange, **_non_default(if_unused=if_unused))

    def exchange_bind(self, destination: str, source: str, routing_key: str = "",
                      arguments: dict[str, Any] | None = None) -> Any:
        return self._call("exchange_bind", destination, source, routing_key,
                          **_non_default(arguments=arguments))

    def exchange_unbind(self, destination: str, source: str, routing_key: str = "",
                        arguments: dict[str, Any] | None = None) -> Any:
        return self._call("exchange_unbind", destination, source, routing_key,
                          **_non_default(arguments=arguments))

    def queue_declare(self, queue: str = "", *, passive: bool = False, durable: bool = False,
                      exclusive: bool = False, auto_delete: bool = False,
                      arguments: dict[str, Any] | None = None) -> Any:
        return self._call("queue_declare", queue, **_non_default(
            passive=passive, durable=durable, exclusive=exclusive, auto_delete=auto_delete,
            arguments=arguments))

    def queue_bind(self, queue: str, exchange: str, routing_key: str | None = None,
                   arguments: dict[str, Any] | None = None) -> Any:
        return self._call("queue_bind", queue, exchange, routing_key,
                          **_non_default(arguments=arguments))

    def queue_unbind(self, queue: str, exchange: str, routing_key: str | None = None,
                     arguments: dict[str, Any] | None = None) -> Any:
        return self._call("queue_unbind", queue, exchange, routing_key,
                          **_non_default(arguments=arguments))

    def queue_purge(self, queue: str) -> Any:
        return self._call("queue_purge", queue)

    def queue_delete(self, queue: str, *, if_unused: bool = False, if_empty: bool = False) -> Any:
        return self._call("queue_delete", queue,
                          **_non_default(if_unused=if_unused, if_empty=if_empty))

    def basic_publish(self, exchange: str, routing_key: str, body: bytes,
                      properties: dict[str, Any] | None = None, *, mandatory: bool = False) -> Any:
        return self._call("basic_publish", exchange, routing_key, body,
                          **_non_default(properties=properties, mandatory=mandatory))

    def basic_get(self, queue: str, *, auto_ack: bool = False) -> Any:
        return self._call("basic_get", queue, **_non_default(auto_ack=auto_ack))

    def basic_ack(self, delivery_tag: int = 0, *, multiple: bool = False) -> Any:
        return self._call("basic_ack", delivery_tag, **_non_default(multiple=multiple))

    def basic_nack(self, delivery_tag: int = 0, *, multiple: bool = False,
                   requeue: bool = True) -> Any:
        kw = _non_default(multiple=multiple)
        if not requeue:
            kw["requeue"] = False
        return self._call("basic_nack", delivery_tag, **kw)

    def basic_reject(self, delivery_tag: int, *, requeue: bool = True) -> Any:
        return self._call("basic_reject", delivery_tag, **({} if requeue else {"requeue": False}))

    def basic_consume(self, queue: str, *, auto_ack: bool = False, exclusive: bool = False,
                      consumer_tag: str | None = None,
                      arguments: dict[str, Any] | None = None) -> Any:
        """Start a consumer (``consumer_tag`` None or ``""``: the broker makes one up); returns
        the consumer tag. Its deliveries are collected: see :meth:`wait_deliveries`."""
        return self._call("basic_consume", queue, **_non_default(
            auto_ack=auto_ack, exclusive=exclusive, consumer_tag=consumer_tag,
            arguments=arguments))

    def basic_cancel(self, consumer_tag: str) -> Any:
        return self._call("basic_cancel", consumer_tag)

    def basic_qos(self, *, prefetch_size: int = 0, prefetch_count: int = 0,
                  global_qos: bool = False) -> Any:
        kw = {"prefetch_size": prefetch_size, "prefetch_count": prefetch_count,
              "global_qos": global_qos}
        return self._call("basic_qos", **{k: v for k, v in kw.items() if v})

    def basic_recover(self, *, requeue: bool = True) -> Any:
        return self._call("basic_recover", requeue=requeue)

    def tx_select(self) -> Any:
        return self._call("tx_select")

    def tx_commit(self) -> Any:
        return self._call("tx_commit")

    def tx_rollback(self) -> Any:
        return self._call("tx_rollback")

    def confirm_delivery(self) -> Any:
        """confirm.select; then every publish waits for its basic.ack/nack, recorded after it."""
        return self._call("confirm_delivery")

    def flow(self, active: bool) -> Any:
        """channel.flow; returns the ``active`` of flow-ok (wire drivers only: see wire_only)."""
        return self._call("flow", active)

    def close(self) -> None:
        if self.is_open:
            self.is_open = False
            with contextlib.suppress(Exception):  # closing is not an observation
                self._impl.close()

    # Conveniences built on the recorded methods.
    def drain(self, queue: str, *, ack: bool = True) -> list[bytes]:
        """basic.get until the queue is empty (each get recorded); return the bodies."""
        bodies: list[bytes] = []
        for _ in range(10_000):
            m = self.basic_get(queue, auto_ack=ack)
            if not isinstance(m, Msg):
                return bodies
            bodies.append(m.body)
        raise AssertionError(f"queue {queue!r} does not run dry")


def _non_default(**kwargs: Any) -> dict[str, Any]:
    """Keep only the keyword arguments that differ from their default (False / None)."""
    return {k: v for k, v in kwargs.items() if v is not None and v is not False}


class ConnectionProxy:
    def __init__(self, session: Session, impl: DriverConnection, label: str) -> None:
        self._s = session
        self._impl = impl
        self.label = label
        self.is_open = True
        self.channels: list[ChannelProxy] = []

    def channel(self) -> ChannelProxy:
        label = f"{self.label}.ch{len(self.channels) + 1}"
        if not self.is_open:
            raise AssertionError(f"scenario bug: {self.label} is closed, cannot open {label}")
        ch = ChannelProxy(self._s, self, self._impl.channel(), label)
        self.channels.append(ch)
        return ch

    def _closed_by_broker(self) -> None:
        self.is_open = False
        for ch in self.channels:
            ch.is_open = False

    def close(self) -> None:
        if self.is_open:
            self._closed_by_broker()
            with contextlib.suppress(Exception):
                self._impl.close()


@dataclass
class Session:
    """What a scenario drives: connections, channels, unique names and the transcript."""

    driver: Driver
    token: str = field(default_factory=lambda: f"cf{secrets.token_hex(4)}-")
    transcript: list[Entry] = field(default_factory=list)
    #: Expectations that did not hold, as readable lines.
    failures: list[str] = field(default_factory=list)
    connections: list[ConnectionProxy] = field(default_factory=list)
    declared_queues: list[str] = field(default_factory=list)
    declared_exchanges: list[str] = field(default_factory=list)
    added_users: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.normalize = Normalizer(self.token)
        self._default: ConnectionProxy | None = None
        self._quiet = 0

    # Names ------------------------------------------------------------------------------------
    def name(self, base: str) -> str:
        """A name unique to this run; the transcript shows it as ``base``."""
        return f"{self.token}{base}"

    # Connections and channels -------------------------------------------------------------------
    def connection(self) -> ConnectionProxy:
        """Open a new connection (the first one is also the default connection)."""
        conn = ConnectionProxy(self, self.driver.connect(), f"c{len(self.connections) + 1}")
        self.connections.append(conn)
        return conn

    def connect_as(self, user: str, password: str, vhost: str = "/") -> ConnectionProxy | Err:
        """Open a connection as ``user`` (recorded); the :class:`Err` when the broker refuses."""
        label = f"c{len(self.connections) + 1}"
        what = self.normalize(_call_repr("connect", (user,), {"vhost": vhost} if vhost != "/" else {}))
        try:
            impl = _user_driver(self.driver).connect_as(user, password, vhost)
        except BrokerError as e:
            self._record(label, what, self.normalize(e.err))
            return e.err
        conn = ConnectionProxy(self, impl, label)
        self.connections.append(conn)
        self._record(label, what, None)
        return conn

    def admin(self, command: str, *args: str, vhost: str | None = None) -> None:
        """Run ``rabbitmqctl command [-p vhost] args...`` (RabbitMQ), or the Broker method of that
        name (embroker); recorded. Users added are deleted when the scenario ends."""
        _user_driver(self.driver).admin(command, args, vhost)
        if command == "add_user":
            self.added_users.append(args[0])
        elif command == "delete_user" and args[0] in self.added_users:
            self.added_users.remove(args[0])
        self._record("admin", self.normalize(_call_repr(command, args, {"vhost": vhost} if vhost else {})),
                     None)

    @property
    def conn(self) -> ConnectionProxy:
        if self._default is None:
            self._default = self.connection()
        return self._default

    def channel(self) -> ChannelProxy:
        """Open a new channel on the default connection."""
        return self.conn.channel()

    # Recording --------------------------------------------------------------------------------
    def _record(self, who: str, what: str, outcome: Any) -> None:
        if not self._quiet:
            self.transcript.append(Entry(who, what, outcome))

    @contextlib.contextmanager
    def quietly(self) -> Iterator[None]:
        """Calls made inside are performed but not recorded (see :meth:`wait_until`)."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def wait_until(self, what: str, probe: Callable[[], Any], done: Callable[[Any], bool],
                   timeout: float = WAIT_UNTIL_SECONDS) -> Any:
        """Call ``probe()`` (unrecorded) until ``done(result)`` holds or ``timeout`` seconds
        passed; record the last result once, as ``wait_until(what)``, and return it.

        For states that come with time (a TTL ran out, a queue expired): how many probes it
        took differs from broker to broker and run to run, the final state must not. The probe
        should not change what it observes (a passive queue.declare, not a basic.get).
        """
        deadline = time.monotonic() + timeout
        while True:
            with self.quietly():
                result = probe()
            if done(result) or time.monotonic() >= deadline:
                break
            time.sleep(POLL_SECONDS)
        self._record("wait", f"until {what}", self.normalize(result))
        return result

    def note(self, what: str, value: Any) -> None:
        """Record an observation that is not the result of one call."""
        self._record("note", what, self.normalize(value))

    def _track(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        if kwargs.get("passive"):
            return
        if method == "queue_declare":
            if kwargs.get("exclusive") and isinstance(result, QueueDeclareOk):
                return  # goes with its connection
            name = result.queue if isinstance(result, QueueDeclareOk) else args[0]
            if name and name not in self.declared_queues:
                self.declared_queues.append(name)
        elif method == "exchange_declare":
            name = args[0]
            if name and not name.startswith("amq.") and name not in self.declared_exchanges:
                self.declared_exchanges.append(name)

    # Expectations -----------------------------------------------------------------------------
    def expect(self, actual: Any, expected: Any, what: str = "") -> bool:
        """Check that ``actual`` (raw; normalized here) equals ``expected`` (written normalized)."""
        got = self.normalize(actual)
        if got == expected:
            return True
        where = self.transcript[-1].line() if self.transcript else "(start)"
        self.failures.append(
            f"expected {expected!r}, got {got!r}" + (f" ({what})" if what else "")
            + f"\n      after: {where}")
        return False

    def expect_error(self, outcome: Any, code: int, text: str | None = None, *,
                     scope: str | None = None, what: str = "") -> bool:
        """Check that a call failed with ``code`` (and ``text``, ``scope`` when given)."""
        got = self.normalize(outcome)
        ok = (isinstance(got, Err) and got.code == code
              and (text is None or got.text == text) and (scope is None or got.scope == scope))
        if not ok:
            want = Err(scope or "*", code, text if text is not None else "*")
            return self.expect(got, want, what or "error")
        return True

    def expect_ok(self, outcome: Any, what: str = "") -> bool:
        if isinstance(outcome, Err):
            return self.expect(outcome, "no error", what)
        return True

    def expect_bodies(self, ch: ChannelProxy, queue: str, bodies: list[bytes]) -> bool:
        """Drain ``queue`` (acking) and check the bodies received, in order."""
        return self.expect(ch.drain(queue), bodies, f"messages in {self.normalize(queue)}")

    # Helpers that open a throwaway channel (so an error does not close the caller's). ----------
    def exchange_exists(self, exchange: str) -> bool:
        r = self.channel().exchange_declare(exchange, passive=True)
        return not isinstance(r, Err)

    def queue_exists(self, queue: str) -> bool:
        r = self.channel().queue_declare(queue, passive=True)
        return not isinstance(r, Err)

    # End --------------------------------------------------------------------------------------
    def close(self) -> None:
        for conn in self.connections:
            conn.close()
        for user in self.added_users:
            with contextlib.suppress(Exception):
                _user_driver(self.driver).admin("delete_user", (user,), None)
        self.driver.finish(self.declared_queues, self.declared_exchanges)


Scenario = Callable[[Session], None]


def wire_only(reason: str) -> Callable[[Scenario], Scenario]:
    """Mark a scenario that only a wire driver can run: the in-process client has no such call.

    The in-process tests skip it with ``reason``; the wire and reference runs still compare.
    """
    def mark(scenario: Scenario) -> Scenario:
        scenario.wire_only = reason  # type: ignore[attr-defined]
        return scenario
    return mark


def wire_only_reason(scenario: Scenario) -> str | None:
    return getattr(scenario, "wire_only", None)


@dataclass
class Run:
    driver_label: str
    transcript: list[Entry]
    failures: list[str]
    crash: str | None  # the traceback, when the scenario raised

    def lines(self) -> list[str]:
        return [e.line() for e in self.transcript]

    def text(self) -> str:
        return "\n".join(self.lines())


def run_scenario(scenario: Scenario, driver: Driver) -> Run:
    """Run ``scenario`` on ``driver``; never raises for what the scenario or the broker did."""
    s = Session(driver)
    crash = None
    try:
        scenario(s)
    except Exception as exc:
        crash = traceback.format_exc()
        s._record("CRASH", type(exc).__name__, s.normalize(str(exc)))
    finally:
        try:
            s.close()
        except Exception:
            crash = (crash or "") + "\nwhile cleaning up:\n" + traceback.format_exc()
    return Run(driver.label, s.transcript, s.failures, crash)


def diff_runs(expected: Run, actual: Run) -> str:
    """A unified diff of two transcripts ('' when they are equal)."""
    if expected.transcript == actual.transcript:
        return ""
    return "\n".join(difflib.unified_diff(
        expected.lines(), actual.lines(), fromfile=expected.driver_label,
        tofile=actual.driver_label, lineterm="", n=3))


def problems(run: Run) -> str:
    """Expectation failures and crash of a run, as text ('' when there are none)."""
    out = []
    if run.failures:
        out.append(f"expectations that do not hold on {run.driver_label}:")
        out.extend(f"  - {f}" for f in run.failures)
    if run.crash:
        out.append(f"scenario crashed on {run.driver_label}:\n{run.crash}")
    return "\n".join(out)
