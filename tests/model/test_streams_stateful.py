"""Generated sequences on a stream with retention: publishes (single and batches), consumers
from every kind of offset, acks, cancels, the clock moving; after each step the broker's
invariants hold (``broker._check()``: contiguous offsets, positions for exactly the
consumers) and what each consumer got is the log's truth: increasing offsets, each message the
one published at its offset. (Offsets with no message are osiris' tracking snapshots, one at the
start of each segment.)"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from embroker import Broker
from embroker.client import Channel
from embroker.model import ManualClock
from embroker.model._stream import StreamLog


class StreamMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock()
        self.broker = Broker(clock=self.clock)
        self.ch = self.broker.connect().channel()
        self.ch.queue_declare("s", durable=True, arguments={
            "x-queue-type": "stream", "x-max-age": "30s", "x-max-length-bytes": 600,
            "x-stream-max-segment-size-bytes": 200})
        self.published: dict[int, bytes] = {}  # by offset
        self.readers: list[tuple[Channel, list[tuple[int, int, bytes]]]] = []
        self.acked: dict[int, set[int]] = {}  # id(channel) -> tags settled
        self.count = 0

    def _body(self) -> bytes:
        self.count += 1
        return b"m%d-" % self.count + b"x" * (self.count % 50)

    @rule(n=st.integers(1, 3))
    def publish(self, n: int) -> None:
        for _ in range(n):
            body = self._body()
            self.ch.basic_publish("", "s", body)
            self.published[self._log().next_offset - 1] = body

    @rule(n=st.integers(1, 4))
    def publish_chunk(self, n: int) -> None:
        from embroker.model._message import Message

        bodies = [self._body() for _ in range(n)]
        first = self.ch.model.stream_publish("s", tuple(Message("", "s", {}, b) for b in bodies))
        self.published.update(zip(itertools.count(first), bodies, strict=False))

    @precondition(lambda self: len(self.readers) < 4)
    @rule(offset=st.one_of(st.sampled_from(["first", "last", "next", "10s"]),
                           st.integers(-2, 40)), prefetch=st.integers(1, 5))
    def consume(self, offset: Any, prefetch: int) -> None:
        ch = self.broker.connect().channel()
        got: list[tuple[int, int, bytes]] = []
        ch.basic_qos(prefetch_count=prefetch)
        ch.basic_consume("s", lambda _c, d, p, body: got.append(
            (d.delivery_tag, p["headers"]["x-stream-offset"], body)),
            arguments={"x-stream-offset": offset})
        ch.connection.process_data_events()
        self.readers.append((ch, got))

    @precondition(lambda self: bool(self.readers))
    @rule(which=st.integers(0, 3), multiple=st.booleans())
    def ack(self, which: int, multiple: bool) -> None:
        ch, got = self.readers[which % len(self.readers)]
        acked = self.acked.setdefault(id(ch), set())
        tags = [t for t, _o, _b in got if t not in acked]
        if not tags:
            return
        if multiple:
            ch.basic_ack(tags[-1], multiple=True)
            acked.update(tags)
        else:
            ch.basic_ack(tags[-1])
            acked.add(tags[-1])
        ch.connection.process_data_events()

    @precondition(lambda self: bool(self.readers))
    @rule(which=st.integers(0, 3))
    def close(self, which: int) -> None:
        ch, _got = self.readers.pop(which % len(self.readers))
        ch.connection.close()

    @rule(seconds=st.sampled_from([1, 5, 20, 40]))
    def advance(self, seconds: int) -> None:
        self.clock.advance(seconds)

    def _log(self) -> StreamLog:
        log = self.broker.queues["s"].stream
        assert log is not None
        return log

    @invariant()
    def sound(self) -> None:
        self.broker._check()
        log = self._log()
        assert all(o < log.next_offset for o in self.published)
        kept = [b for o, b in sorted(self.published.items()) if o >= log.first_offset]
        assert [m.body for m in log.messages()] == kept
        for ch, got in self.readers:
            ch.connection.process_data_events()
            offsets = [o for _t, o, _b in got]
            assert offsets == sorted(set(offsets)), "each offset once, in order"
            assert all(self.published[o] == b for _t, o, b in got)
            for a, b in itertools.pairwise(offsets):
                # nothing is skipped, but what retention removed before it was read
                between = range(max(a + 1, log.first_offset), b)
                assert all(o not in self.published for o in between), (a, b, log.first_offset)


TestStreamMachine = StreamMachine.TestCase
TestStreamMachine.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
