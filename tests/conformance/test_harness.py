"""The harness itself: normalization, recording, diffs, crashes (with a fake driver, no broker)."""

from __future__ import annotations

import datetime
from typing import Any

from .harness import (
    DEATH_TIME,
    BrokerError,
    Confirm,
    Delivered,
    Err,
    Normalizer,
    QueueDeclareOk,
    Returned,
    Session,
    diff_runs,
    problems,
    run_scenario,
)


class FakeChannel:
    """Answers queue_declare with a server name; any method on 'missing' is a 404."""

    def __init__(self, generated: str) -> None:
        self.generated = generated
        self.pending: list[Returned] = []

    def call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if args and isinstance(args[0], str) and args[0].endswith("missing"):
            raise BrokerError("channel", 404, f"NOT_FOUND - no queue '{args[0]}' in vhost '/'")
        if method == "queue_declare":
            return QueueDeclareOk(args[0] or self.generated, 0, 0)
        if method == "exchange_declare" and kwargs["exchange_type"] == "bogus":
            raise BrokerError("connection", 503, "COMMAND_INVALID - unknown exchange type 'bogus'")
        if method == "basic_publish" and kwargs.get("mandatory"):
            self.pending.append(Returned(312, "NO_ROUTE", args[0], args[1], {}, args[2]))
        return None

    def take_events(self) -> list[Any]:
        out, self.pending = self.pending, []
        return out

    def wait_deliveries(self, n: int, timeout: float) -> list[Any]:
        return []

    def wait_cancels(self, n: int, timeout: float) -> list[str]:
        return []

    def close(self) -> None:
        pass


class FakeConnection:
    def __init__(self, generated: str) -> None:
        self.generated = generated

    def channel(self) -> FakeChannel:
        return FakeChannel(self.generated)

    def close(self) -> None:
        pass


class FakeDriver:
    def __init__(self, label: str = "fake", generated: str = "amq.gen-AAAA") -> None:
        self.label = label
        self.generated = generated
        self.finished: tuple[list[str], list[str]] | None = None

    def connect(self) -> FakeConnection:
        return FakeConnection(self.generated)

    def finish(self, queues: Any, exchanges: Any) -> None:
        self.finished = (list(queues), list(exchanges))


def test_normalizer_removes_the_token_and_numbers_server_names() -> None:
    n = Normalizer("cf123-")
    assert n("no queue 'cf123-q1' in vhost '/'") == "no queue 'q1' in vhost '/'"
    assert n(["amq.gen-XyZ_1-a", "amq.gen-other", "amq.gen-XyZ_1-a"]) == [
        "amq.gen-1", "amq.gen-2", "amq.gen-1"]
    assert n(Err("channel", 404, "cf123-x")) == Err("channel", 404, "x")
    assert n({"cf123-k": b"cf123-v"}) == {"k": b"v"}


def test_normalizer_numbers_consumer_tags_apart_from_queue_names() -> None:
    n = Normalizer("cf123-")
    assert n(["amq.ctag-Ffc3WbDrOf_l3h_G0ZbFsw", "amq.gen-Q1", "amq.ctag-other",
              "attempt to reuse consumer tag 'amq.ctag-Ffc3WbDrOf_l3h_G0ZbFsw'"]) == [
        "amq.ctag-1", "amq.gen-1", "amq.ctag-2", "attempt to reuse consumer tag 'amq.ctag-1'"]


def test_normalizer_replaces_the_time_of_x_death_entries_close_to_now() -> None:
    n = Normalizer("cf123-")
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    long_ago = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)
    death = {"count": 1, "reason": "expired", "queue": "cf123-q", "time": now}
    assert n({"x-death": [death]}) == {"x-death": [{**death, "queue": "q", "time": DEATH_TIME}]}
    assert n({**death, "time": long_ago})["time"] == long_ago, "a wrong time stays visible"
    assert n({"time": now}) == {"time": now}, "only in x-death entries"


def test_wait_until_records_only_the_last_probe() -> None:
    def scenario(s: Session) -> None:
        ch = s.channel()
        seen: list[int] = []

        def probe() -> Any:
            seen.append(1)
            return ch.queue_declare(s.name("q"), passive=True)

        r = s.wait_until("q is there", probe, lambda r: len(seen) == 3)
        s.expect(r, QueueDeclareOk("q", 0, 0))
        s.expect(len(seen), 3)
        r = s.wait_until("never", lambda: ch.basic_get(s.name("q")), lambda r: False, timeout=0.02)
        s.expect(r, None, "the last result, on timeout")

    run = run_scenario(scenario, FakeDriver())
    assert not problems(run), problems(run)
    assert [e.line() for e in run.transcript] == [
        "wait    until q is there -> QueueDeclareOk(queue='q', message_count=0, consumer_count=0)",
        "wait    until never -> None",
    ]


def test_session_records_results_errors_returns_and_declared_names() -> None:
    driver = FakeDriver()

    def scenario(s: Session) -> None:
        ch = s.channel()
        s.expect(ch.queue_declare(""), QueueDeclareOk("amq.gen-1", 0, 0))
        ch.queue_declare(s.name("q"))
        ch.exchange_declare(s.name("x"), "direct")
        ch.basic_publish(s.name("x"), "k", b"m", mandatory=True)
        s.expect([r.reply_code for r in ch.returned], [312])
        s.expect_error(ch.queue_declare(s.name("missing"), passive=True), 404,
                       "NOT_FOUND - no queue 'missing' in vhost '/'", scope="channel")
        s.expect(ch.is_open, False)
        s.expect(ch.basic_get("x"), Err("usage", 0, "channel is closed"))

    run = run_scenario(scenario, driver)
    assert not problems(run), problems(run)
    assert [e.line() for e in run.transcript] == [
        "c1.ch1  queue_declare('') -> QueueDeclareOk(queue='amq.gen-1', message_count=0, "
        "consumer_count=0)",
        "c1.ch1  queue_declare('q') -> QueueDeclareOk(queue='q', message_count=0, consumer_count=0)",
        "c1.ch1  exchange_declare('x', exchange_type='direct') -> None",
        "c1.ch1  basic_publish('x', 'k', b'm', mandatory=True) -> None",
        "c1.ch1    <- basic.return -> Returned(reply_code=312, reply_text='NO_ROUTE', exchange='x',"
        " routing_key='k', properties={}, body=b'm')",
        "c1.ch1  queue_declare('missing', passive=True) -> Err(scope='channel', code=404, "
        "text=\"NOT_FOUND - no queue 'missing' in vhost '/'\")",
        "c1.ch1  basic_get('x') -> Err(scope='usage', code=0, text='channel is closed')",
    ]
    assert driver.finished is not None
    queues, exchanges = driver.finished
    assert queues[0] == "amq.gen-AAAA"
    assert queues[1].endswith("q")
    assert exchanges[0].endswith("x")


def test_connection_error_closes_every_channel() -> None:
    def scenario(s: Session) -> None:
        a, b = s.channel(), s.channel()
        s.expect_error(b.exchange_declare("e", "bogus"), 503, scope="connection")
        s.expect((a.is_open, b.is_open, s.conn.is_open), (False, False, False))

    run = run_scenario(scenario, FakeDriver())
    assert not problems(run), problems(run)


def test_failed_expectations_and_diffs_are_readable() -> None:
    def scenario(s: Session) -> None:
        s.expect(s.channel().queue_declare(""), QueueDeclareOk("amq.gen-1", 1, 0), "count")

    ref = run_scenario(scenario, FakeDriver("RabbitMQ"))
    other = run_scenario(scenario, FakeDriver("other", generated="server-q"))
    assert "expected QueueDeclareOk(queue='amq.gen-1', message_count=1" in problems(ref)
    diff = diff_runs(ref, other)
    assert "--- RabbitMQ" in diff
    assert "+++ other" in diff
    assert "-c1.ch1  queue_declare('') -> QueueDeclareOk(queue='amq.gen-1'" in diff
    assert "+c1.ch1  queue_declare('') -> QueueDeclareOk(queue='server-q'" in diff
    assert diff_runs(ref, ref) == ""


def test_a_crash_is_recorded_and_reported() -> None:
    def scenario(s: Session) -> None:
        s.channel().queue_declare(s.name("q"))
        raise ValueError(f"boom in {s.name('q')}")

    run = run_scenario(scenario, FakeDriver())
    assert run.transcript[-1].line() == "CRASH   ValueError -> 'boom in q'"
    assert "scenario crashed on fake" in problems(run)
    assert "ValueError" in (run.crash or "")


def test_long_bodies_are_shortened_in_lines_but_compared_in_full() -> None:
    def scenario(body: bytes):
        return lambda s: s.channel().basic_publish("", "q", body)

    a = run_scenario(scenario(b"x" * 1000), FakeDriver("a"))
    b = run_scenario(scenario(b"x" * 999 + b"y"), FakeDriver("b"))
    assert len(a.lines()[0]) < 200
    assert diff_runs(a, b), "the digest shows the bodies differ"


class ConsumingChannel(FakeChannel):
    """basic_consume answers a server-generated tag and delivers 'm0', 'm1' at once; confirm
    mode acks every publish."""

    def __init__(self) -> None:
        super().__init__("amq.gen-AAAA")
        self.deliveries: list[Delivered] = []
        self.seq: int | None = None

    def call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if method == "basic_consume":
            tag = kwargs.get("consumer_tag") or "amq.ctag-Zz_9"
            self.deliveries += [Delivered(tag, i + 1, False, "", args[0], {}, b"m%d" % i)
                                for i in range(2)]
            return tag
        if method == "confirm_delivery":
            self.seq = 0
            return None
        result = super().call(method, args, kwargs)
        if method == "basic_publish" and self.seq is not None:
            self.seq += 1
            self.pending.append(Confirm(self.seq, False, True))  # type: ignore[arg-type]
        return result

    def wait_deliveries(self, n: int, timeout: float) -> list[Any]:
        out, self.deliveries = self.deliveries[:n], self.deliveries[n:]
        return out


class ConsumingDriver(FakeDriver):
    def connect(self) -> Any:
        conn = FakeConnection(self.generated)
        conn.channel = ConsumingChannel  # type: ignore[method-assign]
        return conn


def test_deliveries_are_recorded_where_the_scenario_waits_and_confirms_after_the_publish() -> None:
    def scenario(s: Session) -> None:
        ch = s.channel()
        tag = ch.basic_consume(s.name("q"))
        s.expect(tag, "amq.ctag-1")
        s.expect([d.body for d in ch.wait_deliveries(1)], [b"m0"])
        s.expect(len(ch.wait_deliveries(5)), 1, "fewer than asked: what arrived")
        ch.confirm_delivery()
        ch.basic_publish("", s.name("nowhere"), b"x", mandatory=True)
        s.expect([tuple(c) for c in ch.confirms], [(1, False, True)])

    run = run_scenario(scenario, ConsumingDriver())
    assert not problems(run), problems(run)
    assert run.lines() == [
        "c1.ch1  basic_consume('q') -> 'amq.ctag-1'",
        "c1.ch1  wait_deliveries(1) -> [Delivered(consumer_tag='amq.ctag-1', delivery_tag=1, "
        "redelivered=False, exchange='', routing_key='q', properties={}, body=b'm0')]",
        "c1.ch1  wait_deliveries(5) -> [Delivered(consumer_tag='amq.ctag-1', delivery_tag=2, "
        "redelivered=False, exchange='', routing_key='q', properties={}, body=b'm1')]",
        "c1.ch1  confirm_delivery() -> None",
        "c1.ch1  basic_publish('', 'nowhere', b'x', mandatory=True) -> None",
        "c1.ch1    <- basic.return -> Returned(reply_code=312, reply_text='NO_ROUTE', exchange='',"
        " routing_key='nowhere', properties={}, body=b'x')",
        "c1.ch1    <- basic.ack -> Confirm(delivery_tag=1, multiple=False, ack=True)",
    ]
