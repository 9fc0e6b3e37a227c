"""A random walk over publish, get, consume, ack, nack, reject, recover, cancel, qos and channel
close, checking the broker's invariants after every step and that no message is lost or
duplicated."""

from __future__ import annotations

from collections import Counter

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from embroker import Broker
from embroker.client import Channel
from embroker.model import Delivery

QUEUES = ("q1", "q2")


class BrokerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.broker = Broker(trace_limit=10)
        self.conn = self.broker.connect()
        admin = self.conn.channel()
        admin.exchange_declare("x", "fanout")
        for q in QUEUES:
            admin.queue_declare(q)
        admin.queue_bind("q1", "x")
        admin.queue_bind("q2", "x", arguments={"n": 1})
        self.channels: list[Channel] = []
        self.seq = 0
        self.published: Counter[bytes] = Counter()  # body -> copies routed
        self.settled: Counter[bytes] = Counter()  # body -> copies acked or dropped
        self.held: dict[tuple[int, int], bytes] = {}  # (channel id, tag) -> body

    def _channel(self, index: int) -> Channel | None:
        live = [c for c in self.channels if c.is_open]
        return live[index % len(live)] if live else None

    def _on_message(self, channel: Channel, delivery: Delivery, _props: object, body: bytes) -> None:
        self.held[(id(channel), delivery.delivery_tag)] = body

    @rule()
    def open_channel(self) -> None:
        if len(self.channels) < 4:
            self.channels.append(self.conn.channel())

    @rule(to_exchange=st.booleans())
    def publish(self, to_exchange: bool) -> None:
        self.seq += 1
        body = b"%d" % self.seq
        ch = self.conn.channel()
        if to_exchange:
            ch.basic_publish("x", "", body)
            self.published[body] += 2
        else:
            ch.basic_publish("", "q1", body)
            self.published[body] += 1
        ch.close()

    @precondition(lambda self: self.channels)
    @rule(i=st.integers(0, 3), queue=st.sampled_from(QUEUES), auto_ack=st.booleans())
    def get(self, i: int, queue: str, auto_ack: bool) -> None:
        ch = self._channel(i)
        if ch is None:
            return
        got = ch.basic_get(queue, auto_ack=auto_ack)
        if got is not None:
            if auto_ack:
                self.settled[got.body] += 1
            else:
                self.held[(id(ch), got.delivery_tag)] = got.body

    @precondition(lambda self: self.channels)
    @rule(i=st.integers(0, 3), queue=st.sampled_from(QUEUES), prefetch=st.integers(0, 3))
    def consume(self, i: int, queue: str, prefetch: int) -> None:
        ch = self._channel(i)
        if ch is None or len(ch.model.consumers) > 1:
            return
        ch.basic_qos(prefetch_count=prefetch)
        ch.basic_consume(queue, self._on_message)

    @precondition(lambda self: self.channels)
    @rule(i=st.integers(0, 3))
    def cancel(self, i: int) -> None:
        ch = self._channel(i)
        if ch is not None and ch.model.consumers:
            ch.basic_cancel(next(iter(ch.model.consumers)))

    def _mine(self, ch: Channel) -> list[int]:
        return sorted(tag for (cid, tag) in self.held if cid == id(ch))

    @precondition(lambda self: self.held)
    @rule(i=st.integers(0, 3), pick=st.integers(0, 100), multiple=st.booleans(),
          how=st.sampled_from(["ack", "nack", "reject", "drop"]))
    def settle(self, i: int, pick: int, multiple: bool, how: str) -> None:
        ch = self._channel(i)
        if ch is None or not self._mine(ch):
            return
        tags = self._mine(ch)
        tag = tags[pick % len(tags)]
        done = [t for t in tags if t <= tag] if multiple and how != "reject" else [tag]
        if how == "ack":
            ch.basic_ack(tag, multiple=multiple)
        elif how == "nack":
            ch.basic_nack(tag, multiple=multiple, requeue=True)
        elif how == "reject":
            ch.basic_reject(tag, requeue=True)
        else:
            ch.basic_nack(tag, multiple=multiple, requeue=False)
        for t in done:
            body = self.held.pop((id(ch), t))
            if how in ("ack", "drop"):
                self.settled[body] += 1

    @precondition(lambda self: self.channels)
    @rule(i=st.integers(0, 3))
    def recover(self, i: int) -> None:
        ch = self._channel(i)
        if ch is not None:
            before = [k for k in self.held if k[0] == id(ch)]
            ch.basic_recover()  # may redeliver at once, to this channel's consumers too
            for key in before:
                del self.held[key]

    @precondition(lambda self: self.channels)
    @rule(i=st.integers(0, 3))
    def close_channel(self, i: int) -> None:
        ch = self._channel(i)
        if ch is not None:
            before = [k for k in self.held if k[0] == id(ch)]
            ch.close()
            for key in before:
                del self.held[key]

    @invariant()
    def broker_invariants(self) -> None:
        self.conn.process_data_events()
        self.broker._check()

    @invariant()
    def no_message_lost_or_duplicated(self) -> None:
        ready = Counter(m.body for q in QUEUES for m in self.broker.queues[q].messages)
        unacked = Counter(self.held.values())
        assert ready + unacked + self.settled == self.published
        for ch in self.channels:
            if ch.is_open:
                for consumer in ch.model.consumers.values():
                    if consumer.prefetch:
                        assert consumer.unacked <= consumer.prefetch


TestBrokerMachine = BrokerMachine.TestCase
TestBrokerMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
