"""Generated sequences of consumer operations, for the stateful differential test.

A *sequence* is a list of up to ``MAX_STEPS`` operations (publish, basic.get, consume, cancel,
ack, nack, reject, recover, qos, channel close, an ack of an unknown tag; :data:`KINDS`) over
three channels of one connection and two queues. :func:`run_sequence` runs one on a broker
through the conformance harness (a :class:`_Walk` on a ``Session``) and returns its transcript:
each step is noted (``note    step 3 -> Consume(ch=0, auto_ack=False)``), then every call with
its outcome (delivery tags, redelivered flags and message counts of basic.get, errors), then the
deliveries each channel received in that step (in arrival order) and both queues' passive
declare-ok (ready messages, consumers).

The sequences the tests run (``test_stateful_differential.py``) are RabbitMQ's golden files
``golden/stateful/<name>.txt`` (their operations are the step notes): the shrunk sequences of
:data:`SEQUENCES`, where embroker and RabbitMQ were seen to differ, and generated ones
(``gen_001``...), which :func:`generate` draws from Hypothesis, derandomized. See ``README.md``.

Waiting for asynchronous deliveries without sleeping: each walk keeps its own account of every
copy of every message (published, ready, unacked on a channel, settled), from what it observed
only. After each step it probes the queues (passive declare); every copy published and neither
ready, unacked nor settled must be on its way to a consumer, so it reads (bounded, at most
``WAIT_SECONDS`` in all) until that many deliveries arrived. The step is done when two probes
in a row agree and the account balances: ``ready + unacked + settled = published`` per queue,
no copy unacked or settled more often than published (checked as expectations, on RabbitMQ
too). Two probes, because a RabbitMQ queue answers a passive declare ahead of acks and publishes
still in its mailbox, and a global-qos limiter tells the queues to resume from its own process.
At the end every consumer is cancelled, every channel closed, both queues drained, and every
body counted: each copy published was settled once or drained once.

Determinism: a channel's consumers all read from the same queue (channels of slots 1 and 2
consume from ``q1``, slot 3 from ``q2``): on RabbitMQ two queues deliver to one channel in no
fixed order, and that channel's delivery tags with them. basic.get may read either queue from
any channel.
"""

from __future__ import annotations

import ast
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from hypothesis import Phase, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from . import golden
from .harness import (
    WAIT_SECONDS,
    ChannelProxy,
    Delivered,
    Msg,
    QueueDeclareOk,
    Scenario,
    Session,
)

QUEUES = ("q1", "q2")
#: The queue each channel slot consumes from (see the module docstring: one queue per channel).
CONSUMES_FROM = ("q1", "q1", "q2")
SLOTS = len(CONSUMES_FROM)
#: Consumers per channel at most (a further Consume step does nothing).
MAX_CONSUMERS = 2
#: Steps in one generated sequence at most.
MAX_STEPS = 25
#: How long one read for awaited deliveries lasts at most, before the queues are probed again.
POLL_SECONDS = 0.005

# --------------------------------------------------------------------------------------------
# Operations. ``ch`` is a channel slot (opened on first use, and again after a close); ``pick``
# chooses among the slot's unacked delivery tags (ascending, modulo their number), -1 meaning
# "tag 0, multiple": everything unacked on the channel.


class Publish(NamedTuple):
    to: str  # "q1" / "q2" through the default exchange, "x": the fanout bound to both
    count: int  # type: ignore[assignment]  # messages (the name is in the recorded steps)


class Get(NamedTuple):
    ch: int
    queue: str
    auto_ack: bool


class Consume(NamedTuple):
    ch: int
    auto_ack: bool


class Cancel(NamedTuple):
    ch: int
    pick: int


class Qos(NamedTuple):
    ch: int
    prefetch: int
    global_qos: bool


class Ack(NamedTuple):
    ch: int
    pick: int
    multiple: bool


class Nack(NamedTuple):
    ch: int
    pick: int
    multiple: bool
    requeue: bool


class Reject(NamedTuple):
    ch: int
    pick: int
    requeue: bool


class Recover(NamedTuple):
    ch: int


class Close(NamedTuple):
    ch: int


class AckUnknown(NamedTuple):
    """basic.ack of a tag the channel does not hold: 406, the channel closes and requeues.
    ``stale``: a tag it held once (already settled), when there is one; else one never sent."""

    ch: int
    stale: bool


Op = Publish | Get | Consume | Cancel | Qos | Ack | Nack | Reject | Recover | Close | AckUnknown

slots = st.integers(0, SLOTS - 1)
picks = st.integers(-1, 7)

#: Each kind of operation, and how many times more often than the rarest it comes: messages,
#: consumers and prefetch limits to work on in most steps; the two that end a channel rarely.
#: (``st.one_of`` drops a strategy object it has already, so each weight unit is built anew.)
KINDS: list[tuple[int, Callable[[], st.SearchStrategy[Op]]]] = [
    (6, lambda: st.builds(Publish, st.sampled_from(("q1", "q2", "x")), st.integers(1, 3))),
    (4, lambda: st.builds(Consume, slots, st.sampled_from((False, False, True)))),
    (4, lambda: st.builds(Qos, slots, st.integers(0, 3), st.booleans())),
    (4, lambda: st.builds(Ack, slots, picks, st.booleans())),
    (2, lambda: st.builds(Get, slots, st.sampled_from(QUEUES), st.booleans())),
    (2, lambda: st.builds(Nack, slots, picks, st.booleans(), st.booleans())),
    (2, lambda: st.builds(Reject, slots, st.integers(0, 7), st.booleans())),
    (2, lambda: st.builds(Recover, slots)),
    (2, lambda: st.builds(Cancel, slots, st.integers(0, 1))),
    (1, lambda: st.builds(Close, slots)),
    (1, lambda: st.builds(AckUnknown, slots, st.booleans())),
]
#: Round by round (P C Q A G N R R C C A, P C Q A ...): Hypothesis favours the first ones.
operation: st.SearchStrategy[Op] = st.one_of(
    [make() for level in range(max(w for w, _ in KINDS)) for w, make in KINDS if w > level])


def show(ops: Sequence[Op]) -> str:
    return "\n".join(f"  {i + 1:2}. {op!r}" for i, op in enumerate(ops))


# --------------------------------------------------------------------------------------------
# The scenario


class _Slot:
    """One channel and what the scenario knows about it."""

    def __init__(self, ch: ChannelProxy) -> None:
        self.ch = ch
        self.consumers: list[str] = []  # consumer tags, oldest first
        self.held: dict[int, tuple[str, bytes]] = {}  # unacked delivery tag -> (queue, body)
        self.issued: list[int] = []  # every delivery tag seen on this channel
        self.deliveries: list[Delivered] = []  # received during the current step


class _Walk:
    """Runs the operations on one session, keeping the account of every message copy."""

    def __init__(self, s: Session) -> None:
        self.s = s
        self.q = {name: s.name(name) for name in QUEUES}
        self.x = s.name("x")
        self.main = s.channel()  # publishes, probes and the final drain
        self.main.exchange_declare(self.x, "fanout", auto_delete=True)
        for q in self.q.values():
            self.main.queue_declare(q, exclusive=True)
            self.main.queue_bind(q, self.x)
        self.slots: list[_Slot | None] = [None] * SLOTS
        self.consumer_queue: dict[str, tuple[str, bool]] = {}  # tag -> (queue, auto_ack)
        self.published: dict[str, Counter[bytes]] = {q: Counter() for q in QUEUES}
        self.settled: dict[str, Counter[bytes]] = {q: Counter() for q in QUEUES}
        self.seq = 0
        self.ctags = 0

    # -- channels -----------------------------------------------------------------------------
    def slot(self, i: int) -> _Slot:
        slot = self.slots[i]
        if slot is None or not slot.ch.is_open:
            self._forget(i)
            slot = self.slots[i] = _Slot(self.s.conn.channel())
            self.s.note(f"{slot.ch.label} opened (slot {i + 1})", None)
        return slot

    def _forget(self, i: int) -> None:
        """The slot's channel is gone: its unacked messages went back to their queues."""
        slot = self.slots[i]
        if slot is not None:
            slot.held.clear()
            for tag in slot.consumers:
                self.consumer_queue.pop(tag, None)
            self.slots[i] = None

    def _pick(self, slot: _Slot, pick: int) -> int | None:
        tags = sorted(slot.held)
        return tags[pick % len(tags)] if tags else None

    def _settle_tags(self, slot: _Slot, tag: int, multiple: bool, dropped: bool) -> None:
        """Tags up to ``tag`` (all for tag 0) leave the channel: settled, or back to the queue."""
        done = [t for t in slot.held if (t <= tag or tag == 0)] if multiple else [tag]
        for t in done:
            queue, body = slot.held.pop(t)
            if dropped:
                self.settled[queue][body] += 1

    def _seen(self, slot: _Slot, tag: int) -> None:
        slot.issued.append(tag)

    # -- steps --------------------------------------------------------------------------------
    def step(self, op: Op) -> None:
        getattr(self, f"_{type(op).__name__.lower()}")(op)
        for i, slot in enumerate(self.slots):
            if slot is not None and not slot.ch.is_open:  # closed by the broker
                self._forget(i)
        self.settle()

    def _publish(self, op: Publish) -> None:
        for _ in range(op.count):
            self.seq += 1
            body = b"m%d" % self.seq
            targets: tuple[str, ...]
            if op.to == "x":
                self.main.basic_publish(self.x, "", body)
                targets = QUEUES
            else:
                self.main.basic_publish("", self.q[op.to], body)
                targets = (op.to,)
            for q in targets:
                self.published[q][body] += 1

    def _get(self, op: Get) -> None:
        slot = self.slot(op.ch)
        m = slot.ch.basic_get(self.q[op.queue], auto_ack=op.auto_ack)
        if isinstance(m, Msg):
            self._seen(slot, m.delivery_tag)
            if op.auto_ack:
                self.settled[op.queue][m.body] += 1
            else:
                slot.held[m.delivery_tag] = (op.queue, m.body)

    def _consume(self, op: Consume) -> None:
        slot = self.slot(op.ch)
        if len(slot.consumers) >= MAX_CONSUMERS:
            return
        self.ctags += 1
        queue = CONSUMES_FROM[op.ch]
        tag = self.s.name(f"k{self.ctags}")
        # Known before the call: on the in-process client, deliveries come with consume-ok.
        self.consumer_queue[tag] = (queue, op.auto_ack)
        if slot.ch.basic_consume(self.q[queue], auto_ack=op.auto_ack, consumer_tag=tag) == tag:
            slot.consumers.append(tag)
        else:
            del self.consumer_queue[tag]

    def _cancel(self, op: Cancel) -> None:
        slot = self.slot(op.ch)
        if slot.consumers:
            tag = slot.consumers.pop(op.pick % len(slot.consumers))
            slot.ch.basic_cancel(tag)
            self.consumer_queue.pop(tag, None)

    def _qos(self, op: Qos) -> None:
        self.slot(op.ch).ch.basic_qos(prefetch_count=op.prefetch, global_qos=op.global_qos)

    def _ack(self, op: Ack) -> None:
        slot = self.slot(op.ch)
        tag, multiple = (0, True) if op.pick < 0 else (self._pick(slot, op.pick), op.multiple)
        if tag is None:
            return
        if slot.ch.basic_ack(tag, multiple=multiple) is None:
            self._settle_tags(slot, tag, multiple, dropped=True)

    def _nack(self, op: Nack) -> None:
        slot = self.slot(op.ch)
        tag, multiple = (0, True) if op.pick < 0 else (self._pick(slot, op.pick), op.multiple)
        if tag is None:
            return
        if slot.ch.basic_nack(tag, multiple=multiple, requeue=op.requeue) is None:
            self._settle_tags(slot, tag, multiple, dropped=not op.requeue)

    def _reject(self, op: Reject) -> None:
        slot = self.slot(op.ch)
        tag = self._pick(slot, op.pick)
        if tag is None:
            return
        if slot.ch.basic_reject(tag, requeue=op.requeue) is None:
            self._settle_tags(slot, tag, False, dropped=not op.requeue)

    def _recover(self, op: Recover) -> None:
        slot = self.slot(op.ch)
        if slot.ch.basic_recover(requeue=True) is None:
            slot.held.clear()

    def _close(self, op: Close) -> None:
        slot = self.slots[op.ch]
        if slot is not None and slot.ch.is_open:
            self.s.note(f"{slot.ch.label} close", None)
            slot.ch.close()
        self._forget(op.ch)

    def _ackunknown(self, op: AckUnknown) -> None:
        slot = self.slot(op.ch)
        stale = [t for t in slot.issued if t not in slot.held]
        tag = min(stale) if op.stale and stale else max(slot.issued, default=0) + 1
        slot.ch.basic_ack(tag)  # 406: the channel closes (step() forgets it)

    # -- waiting for deliveries -----------------------------------------------------------------
    def _probe(self) -> list[Any]:
        with self.s.quietly():
            return [self.main.queue_declare(self.q[q], passive=True) for q in QUEUES]

    def _collect(self, expected: int = 0) -> None:
        """Take the deliveries that arrived. With ``expected`` > 0, first read (on pika; at
        most ``POLL_SECONDS``) until that many arrived on the first channel with a consumer:
        the frames of every channel of the connection are read meanwhile."""
        live = [slot for slot in self.slots if slot is not None and slot.ch.is_open]
        with self.s.quietly():
            waiter = next((slot for slot in live if slot.consumers), None)
            for slot in live:
                if slot is waiter and expected > 0:
                    got = slot.ch.wait_deliveries(expected, timeout=POLL_SECONDS)
                else:
                    got = slot.ch.wait_deliveries(1_000, timeout=0)
                if isinstance(got, list):
                    for d in got:
                        self._delivered(slot, d)

    def _delivered(self, slot: _Slot, d: Delivered) -> None:
        slot.deliveries.append(d)
        self._seen(slot, d.delivery_tag)
        queue, auto_ack = self.consumer_queue.get(d.consumer_tag, ("?", False))
        if queue == "?":
            self.s.expect(d.consumer_tag, "a consumer of this channel", "delivery to whom?")
        elif auto_ack:
            self.settled[queue][d.body] += 1
        else:
            slot.held[d.delivery_tag] = (queue, d.body)

    def _unaccounted(self, probe: list[Any]) -> dict[str, int]:
        """Per queue: copies published and neither ready, unacked nor settled (in flight)."""
        out = {}
        for q, r in zip(QUEUES, probe, strict=True):
            ready = r.message_count if isinstance(r, QueueDeclareOk) else 0
            held = sum(1 for slot in self.slots if slot is not None
                       for queue, _ in slot.held.values() if queue == q)
            out[q] = (sum(self.published[q].values()) - ready - held
                      - sum(self.settled[q].values()))
        return out

    def settle(self) -> None:
        """Read deliveries until the account balances on two probes in a row (or timeout);
        record them per channel, then the queues' state."""
        deadline = time.monotonic() + WAIT_SECONDS
        previous = None
        while True:
            probe = self._probe()
            self._collect()
            missing = self._unaccounted(probe)
            in_flight = sum(n for n in missing.values() if n > 0)
            if ((not in_flight and probe == previous) or time.monotonic() >= deadline
                    or not all(isinstance(r, QueueDeclareOk) for r in probe)):
                break
            self._collect(in_flight)
            previous = probe
        for slot in self.slots:
            if slot is not None and slot.deliveries:
                self.s.note(f"{slot.ch.label} delivered", slot.deliveries)
                slot.deliveries = []
        self.s.note("queues", probe)
        self.s.expect(missing, dict.fromkeys(QUEUES, 0),
                      "per queue, published - ready - unacked - settled (copies in flight)")
        self._check_no_duplicates()

    def _check_no_duplicates(self) -> None:
        for q in QUEUES:
            held = Counter(body for slot in self.slots if slot is not None
                           for queue, body in slot.held.values() if queue == q)
            over = (held + self.settled[q]) - self.published[q]
            self.s.expect(dict(over), {}, f"copies of {q} unacked or settled more than published")

    # -- the end --------------------------------------------------------------------------------
    def finish(self) -> None:
        """Cancel every consumer, close every channel (their unacked messages go back to queues
        nobody consumes from), drain both queues, and count every body."""
        for i, slot in enumerate(self.slots):
            while slot is not None and slot.consumers:
                self._cancel(Cancel(i, 0))
        self.settle()
        for i in range(SLOTS):
            self._close(Close(i))
        self.settle()
        for q in QUEUES:
            drained = Counter(self.main.drain(self.q[q]))
            self.s.expect(dict(drained + self.settled[q]), dict(self.published[q]),
                          f"{q}: drained + settled = published, body by body")


#: Shrunk sequences on which embroker and RabbitMQ 3.10 were seen to differ, replayed on every
#: run (the generated ones need not come across them again). What RabbitMQ does:
SEQUENCES: dict[str, list[Op]] = {
    # A consumer passed over for lack of room (prefetch 1) leaves the rotation and rejoins it
    # behind the others when an ack gives it room: m4 goes to k2.
    "prefetch_passed_over_consumer_rejoins_behind": [
        Qos(0, 1, False), Consume(0, False), Consume(1, False), Publish("q1", 3),
        Ack(0, 0, False), Publish("q1", 1)],
    # The same for a channel's global limit: its consumers rejoin in the order they were
    # passed over (k2, then k1), so m3 goes to k2.
    "global_qos_passed_over_consumers_rejoin_in_that_order": [
        Publish("q1", 1), Consume(1, False), Qos(1, 1, True), Publish("q1", 2),
        Consume(1, False), Ack(1, 0, False), Reject(1, 0, False)],
    # A channel whose global limit is reached delivers nothing, to auto-ack consumers either
    # (they only do not count towards the limit): m2 stays ready.
    "global_qos_reached_holds_auto_ack_consumers_too": [
        Qos(0, 1, True), Publish("q1", 2), Consume(0, False), Consume(0, True)],
    # basic.recover requeues the channel's messages in groups, basic.get ones first, then
    # one group per consumer tag in byte order, each group delivered before the next is
    # requeued: m1 and m3 (k1's) come back before m2 (k2's).
    "recover_requeues_per_consumer_tag": [
        Consume(0, False), Consume(0, False), Publish("q1", 3), Recover(0)],
    # The same under a per-consumer prefetch of 2: k1's group (m1, m2) is requeued while k2
    # still holds m3 and m4, so it goes back to k1; then k2's group to k2.
    "recover_requeues_per_consumer_tag_under_prefetch": [
        Qos(0, 2, False), Consume(0, False), Publish("q1", 4), Consume(0, False), Recover(0)],
    # The same for basic.nack(multiple, requeue).
    "nack_multiple_requeues_per_consumer_tag": [
        Consume(0, False), Consume(0, False), Publish("q1", 3), Nack(0, -1, True, True)],
    # basic.qos with global=false lifts the channel's global limit (the new per-consumer
    # limit is for later consumers): k1 gets m2 and m3 at once.
    "qos_not_global_lifts_the_global_limit": [
        Publish("q1", 3), Qos(0, 1, True), Consume(0, False), Qos(0, 2, False)],
    # A global limit set while the channel holds an unacked basic.get message counts it, and
    # acking it does not free the room: k1 gets nothing.
    "global_qos_counts_unacked_gets_held_before_it": [
        Publish("q1", 2), Get(0, "q1", False), Qos(0, 1, True), Ack(0, 0, False),
        Consume(0, False)],
}


# --------------------------------------------------------------------------------------------
# Running a sequence


def scenario(ops: Sequence[Op]) -> Scenario:
    """The sequence as a harness scenario: each step noted, then done; at the end, the walk's
    final account (see :meth:`_Walk.finish`)."""
    def run(s: Session) -> None:
        walk = _Walk(s)
        for i, op in enumerate(ops, 1):
            s.note(f"step {i}", op)
            walk.step(op)
        walk.finish()
    return run


# --------------------------------------------------------------------------------------------
# The corpus: golden files, named and generated

OP_TYPES: dict[str, type[Any]] = {t.__name__: t for t in (
    Publish, Get, Consume, Cancel, Qos, Ack, Nack, Reject, Recover, Close, AckUnknown)}
#: A step note in a transcript line.
STEP_LINE = re.compile(r"^note +step (\d+) -> (.*)$")
#: The names of generated sequences: ``gen_`` and a number.
GENERATED = re.compile(r"^gen_\d+$")


def parse_op(text: str) -> Op:
    """``Consume(ch=0, auto_ack=False)`` -> the operation (literal arguments only)."""
    node = ast.parse(text, mode="eval").body
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in OP_TYPES):
        raise ValueError(f"not an operation: {text!r}")
    args = [ast.literal_eval(a) for a in node.args]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    op: Op = OP_TYPES[node.func.id](*args, **kwargs)
    return op


def ops_of(lines: Iterable[str]) -> list[Op]:
    """The operations of a recorded sequence: its step notes, numbered from 1."""
    ops: list[Op] = []
    for line in lines:
        if m := STEP_LINE.match(line):
            if int(m.group(1)) != len(ops) + 1:
                raise ValueError(f"step {m.group(1)} out of order: {line!r}")
            ops.append(parse_op(m.group(2)))
    return ops


def generated_names() -> list[str]:
    """The generated sequences that have a golden file, in order."""
    names = [p.stem for p in golden.STATEFUL_DIR.glob(f"gen_*{golden.SUFFIX}")
             if GENERATED.match(p.stem)]
    return sorted(names, key=lambda n: int(n.removeprefix("gen_")))


def corpus() -> dict[str, list[Op]]:
    """Every sequence the tests run: :data:`SEQUENCES`, then the generated ones (whose
    operations are in their golden files)."""
    out = {name: list(ops) for name, ops in SEQUENCES.items()}
    for name in generated_names():
        lines = golden.read(golden.sequence_path(name)) or []
        out[name] = ops_of(lines)
    return out


# --------------------------------------------------------------------------------------------
# Generating and shrinking sequences

#: How sequences are generated: ``MAX_STEPS`` steps each, from a fixed seed (the same
#: sequences for a given Hypothesis version, however this module's source changes).
SETTINGS = settings(stateful_step_count=MAX_STEPS, deadline=None, database=None,
                    phases=[Phase.generate])
SEED = 20240611


def generate(examples: int) -> list[list[Op]]:
    """The sequences Hypothesis generates in ``examples`` examples of a state machine with one
    rule (a step of :data:`operation`), derandomized; duplicates and empty ones left out."""
    found: list[list[Op]] = []

    class Recorder(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.ops: list[Op] = []

        @rule(op=operation)
        def step(self, op: Op) -> None:
            self.ops.append(op)

        def teardown(self) -> None:
            if self.ops and self.ops not in found:
                found.append(self.ops)

    run_state_machine_as_test(seed(SEED)(Recorder),
                              settings=settings(SETTINGS, max_examples=examples))
    return found


def _simpler(op: Op) -> list[Op]:
    """Variants of ``op`` with one argument simpler (smaller numbers, False, "q1")."""
    out: list[Op] = []
    for field, value in op._asdict().items():
        if isinstance(value, bool):
            candidates: list[Any] = [False] if value else []
        elif isinstance(value, int):
            candidates = sorted({v for v in (0, 1, value - 1) if 0 <= v < value})
        elif isinstance(value, str):
            candidates = ["q1"] if value != "q1" else []
        else:
            candidates = []
        out += [op._replace(**{field: c}) for c in candidates]
    return out


def shrink(ops: Sequence[Op], fails: Callable[[list[Op]], bool],
           log: Callable[[str], None] = lambda _: None) -> list[Op]:
    """A shorter, simpler sequence on which ``fails`` still holds: greedy, dropping chunks of
    steps (halves, then smaller), then single steps, then simplifying arguments, until nothing
    more can go. ``fails(list(ops))`` must hold to begin with."""
    current = list(ops)
    changed = True
    while changed:
        changed = False
        size = max(len(current) // 2, 1)
        while size >= 1:
            i = 0
            while i < len(current):
                candidate = current[:i] + current[i + size:]
                if candidate and fails(candidate):
                    current = candidate
                    changed = True
                    log(f"{len(current)} steps")
                else:
                    i += size
            size //= 2
        for i in range(len(current)):
            for variant in _simpler(current[i]):
                candidate = [*current[:i], variant, *current[i + 1:]]
                if fails(candidate):
                    current = candidate
                    changed = True
                    log(f"step {i + 1} -> {variant!r}")
                    break
    return current
