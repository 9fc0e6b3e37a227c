"""History of the statistics: samples taken on the broker's clock, answered as RabbitMQ's
management plugin answers a range (``?lengths_age=60&lengths_incr=5``...).

RabbitMQ's management agent samples every object's statistics each
``collect_statistics_interval`` (5 s) into bounded sliding windows (``exometer_slide``, one per
retention policy's bucket: ``sample_retention_policies``), and the API formats them
(``rabbit_mgmt_stats:format_range/6``, v3.10.8): with no range each ``*_details`` is the rate
between the last two samples; with a range, the samples on a grid of ``incr`` from
``last - age`` to ``last`` (newest first), their average ``avg`` and the average rate
``avg_rate`` over the range.

embroker does the same on the broker's :class:`~embroker.model.Clock`: a timer samples every
object at each multiple of the interval (ManualClock: deterministic), reading the objects from
outside (nothing is counted on the publish path here). What is sampled of each object comes
from one function per kind (:data:`COUNTERS`: :func:`queue_counters`, :func:`channel_counters`,
:func:`connection_counters`, :func:`vhost_counters`, :func:`node_counters`), each returning the
object's current values by name: a counter added there is sampled and answered with no change
to the sampler (its ``*_details`` read it by name: ``History.details``; the count beside them
is what the route passes to :func:`views.stats <embroker.management.views.stats>`'s
``values``). An object that is gone loses its history at the next tick.

Why here and not in ``model/``: the history is what the management plugin keeps (RabbitMQ's
``rabbitmq_management_agent``), not the broker's: the model stays free of it, and the sampler
runs only where a management API does.
"""

from __future__ import annotations

import itertools
import math
import re
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple, final

from . import views
from ._routes import bad_request

if TYPE_CHECKING:
    from ..model import Broker, Channel, Connection, Node, Queue, VirtualHost
    from ..model._clock import Timer
    from ..server import Server

__all__ = ["COUNTERS", "INTERVAL", "MAX_RANGE", "NO_RANGES", "POLICIES", "History", "Range", "Ranges",
           "Sampler", "asked", "channel_counters", "connection_counters", "node_counters",
           "parse_ranges", "queue_counters", "release", "sampler_of", "vhost_counters"]

#: ``collect_statistics_interval`` (seconds): how often every object is sampled.
INTERVAL: Final = 5.0
#: ``rabbitmq_management_agent``'s default ``sample_retention_policies``: (age, incr) seconds of
#: each bucket, per policy.
POLICIES: Final[Mapping[str, tuple[tuple[int, int], ...]]] = {
    "global": ((605, 5), (3660, 60), (29400, 600), (86400, 1800)),
    "basic": ((605, 5), (3600, 60)),
    "detailed": ((605, 5),),
}
#: The most samples a range may ask (``rabbit_mgmt_util``'s ``?MAX_RANGE``: age div incr).
MAX_RANGE: Final = 500

#: Which policy keeps each kind's history (``rabbit_mgmt_data:retention_policy/1``: a queue's,
#: a channel's and a connection's tables are ``basic``, a vhost's and a node's ``global``).
_POLICY_OF = {"queue": "basic", "channel": "basic", "connection": "basic", "vhost": "global",
              "node": "global"}


# -- the seam: what is sampled of each object ----------------------------------------------------

def queue_counters(queue: Queue, unacked: int) -> dict[str, int]:
    """A queue's values by name: its lengths (``queue_msg_stats``) and its message counts
    (``queue_stats``' publish, deliver_get, ack...: :func:`views.counted
    <embroker.management.views.counted>`)."""
    ready = queue.message_count
    return {"messages": ready + unacked, "messages_ready": ready,
            "messages_unacknowledged": unacked, **views.counted(queue.stats)}


def channel_counters(channel: Channel) -> dict[str, int]:
    """A channel's values by name: its message counts."""
    return views.counted(channel.stats)


def connection_counters(connection: Connection) -> dict[str, int]:
    """A connection's values by name: none yet (the model counts no octets: ``recv_oct`` and
    ``send_oct`` go here when it does)."""
    return {}


def vhost_counters(vhost: VirtualHost, unacked: Mapping[int, int]) -> dict[str, int]:
    """A vhost's values by name: the lengths of its queues summed (``vhost_msg_stats``)."""
    ready = pending = 0
    for queue in vhost.queues.values():
        ready += queue.message_count
        pending += unacked.get(id(queue), 0)
    return {"messages": ready + pending, "messages_ready": ready,
            "messages_unacknowledged": pending, **views.counted(vhost.stats)}


def node_counters(broker: Broker, node: Node, server: Server | None) -> dict[str, int]:
    """A node's figures by name (``node_coarse_stats``), as ``/api/nodes`` shows them: the
    message bytes the queues hold as ``mem_used``, the free disk its listener measured; the
    rest (``fd_used``, ``sockets_used``, ``proc_used``...) RabbitMQ reads from Erlang's VM and
    embroker shows 0."""
    figures = {"mem_used": broker.held_bytes()}
    if server is not None:
        figures["disk_free"] = server.disk_free or 0
    return figures


#: The functions above by kind (what :class:`Sampler` calls; kept in one place so that adding
#: a counter changes a function, not the sampler).
COUNTERS: Final[dict[str, Callable[..., dict[str, int]]]] = {
    "queue": queue_counters, "channel": channel_counters,
    "connection": connection_counters, "vhost": vhost_counters, "node": node_counters}


# -- ranges -----------------------------------------------------------------------------------------

@final
class Range(NamedTuple):
    """A range asked in the query (milliseconds on the broker's clock): samples every ``incr``
    from ``first`` to ``last``."""

    first: int
    last: int
    incr: int


@final
class Ranges(NamedTuple):
    """The four ranges a request may ask (``rabbit_mgmt_util:range/1``): ``lengths_*`` for the
    queue lengths, ``msg_rates_*`` for the message statistics, ``data_rates_*`` for a
    connection's octets and the processes' reductions, ``node_stats_*`` for a node's figures."""

    lengths: Range | None = None
    msg_rates: Range | None = None
    data_rates: Range | None = None
    node_stats: Range | None = None


NO_RANGES: Final = Ranges()
_INTEGER = re.compile(r"[+-]?[0-9]+")


def _int(query: Mapping[str, str], name: str) -> int | None:
    # (rabbit_mgmt_util:int/2: list_to_integer, anything else is as if absent)
    text = query.get(name)
    return int(text) if text is not None and _INTEGER.fullmatch(text) else None


def _range(query: Mapping[str, str], prefix: str, now_ms: int, ceil: bool) -> Range | None:
    age, incr = _int(query, f"{prefix}_age"), _int(query, f"{prefix}_incr")
    if age is None or incr is None:
        return None
    if not (age > 0 and incr > 0 and age // incr <= MAX_RANGE):
        raise bad_request(f"Invalid range parameters: age {age}, incr {incr}")
    age, incr = age * 1000, incr * 1000
    last = now_ms // incr * incr
    if ceil and last != now_ms:
        last += incr
    return Range(last - age, last, incr)


def parse_ranges(query: Mapping[str, str], now: float, *, ceil_lengths: bool = False
                 ) -> Ranges:
    """The ranges ``query`` asks at ``now`` (seconds since the epoch, the broker's clock),
    each ending on a multiple of its ``incr`` at or before ``now`` (``rabbit_mgmt_util:range/1``)
    or, for the lengths with ``ceil_lengths``, at or after it (``range_ceil/1``: a queue's, a
    connection's and a node's endpoints, so that lengths match the counts shown beside them).
    An age or increment that is not a whole positive number, or more than :data:`MAX_RANGE`
    samples, is a 400 (``Invalid range parameters: age A, incr I``)."""
    if not any(key.endswith(("_age", "_incr")) for key in query):
        return NO_RANGES
    now_ms = int(now * 1000)
    return Ranges(_range(query, "lengths", now_ms, ceil_lengths),
                  _range(query, "msg_rates", now_ms, False),
                  _range(query, "data_rates", now_ms, False),
                  _range(query, "node_stats", now_ms, False))


# -- the rings --------------------------------------------------------------------------------------

Values = dict[str, int]
_Row = tuple[int, ...]


@final
class _Bucket:
    """One retention bucket of one object (``exometer_slide``): a sample kept at most every
    ``incr`` ms, in a ring of slots ``incr`` apart covering ``size`` ms and one more (what came
    before the window). A slot holds the object's values in its ring's order of names; a slot
    equal to the one before holds the same tuple (a run of equal samples costs a reference per
    slot, as the slide's "drop" entries cost nothing), and ticks that were missed are filled
    with the value before them (as the slide carries it forward)."""

    __slots__ = ("base", "first", "incr", "size", "slots", "total")

    def __init__(self, age: int, incr: int) -> None:
        self.incr = incr * 1000
        self.size = (age + incr) * 1000
        self.slots: deque[_Row] = deque(maxlen=self.size // self.incr + 2)
        self.base = 0  # the time of slots[0]
        self.first: int | None = None  # the first sample's time
        self.total: _Row | None = None  # the latest sample, kept or not

    @property
    def last(self) -> int | None:
        """The time of the last kept sample."""
        return self.base + (len(self.slots) - 1) * self.incr if self.slots else None

    def add(self, ts: int, row: _Row) -> None:
        self.total = row
        slots = self.slots
        if not slots:
            self.base = self.first = ts
            slots.append(row)
            return
        incr = self.incr
        last = self.base + (len(slots) - 1) * incr
        if ts - last < incr:
            return
        previous = slots[-1]
        if row == previous:
            row = previous
        gap = (ts - last) // incr
        if gap == 1:  # (every tick but a missed one)
            if len(slots) == slots.maxlen:
                self.base += incr
            slots.append(row)
            return
        slots.extend([previous] * min(gap - 1, slots.maxlen or 0))
        slots.append(row)
        self.base = last + gap * incr - (len(slots) - 1) * incr

    def carry(self, ts: int) -> None:
        """Take the samples equal to the last one (:attr:`total`) that came at every tick up to
        ``ts`` and were not added (:meth:`_Ring.add`): a slot for each time a slot was due,
        each that row, as adding each would have made."""
        slots, row = self.slots, self.total
        if not slots or row is None:
            return
        incr = self.incr
        last = self.base + (len(slots) - 1) * incr
        gap = (ts - last) // incr
        if gap <= 0:
            return
        previous = slots[-1]
        if row == previous:
            row = previous
        slots.extend([row] * min(gap, slots.maxlen or 0))
        self.base = last + gap * incr - (len(slots) - 1) * incr

    def points(self, start: int, end: int) -> tuple[tuple[int, _Row] | None,
                                                    list[tuple[int, _Row]]]:
        """The samples from ``start`` to ``end`` (oldest first), and the newest one before
        ``start`` (``exometer_slide:to_list_from/3``)."""
        slots, base, incr = self.slots, self.base, self.incr
        if not slots:
            return None, []
        low = max(0, -(-(start - base) // incr))
        high = min(len(slots) - 1, (end - base) // incr)
        before = min(low, len(slots))
        prev = (base + (before - 1) * incr, slots[before - 1]) if before else None
        found = [(base + k * incr, row)
                 for k, row in enumerate(itertools.islice(slots, low, high + 1), low)]
        # (maybe_add_last_sample: the latest sample not kept, once its time would have come)
        last, total = base + (len(slots) - 1) * incr, self.total
        if total is not None and slots[-1] != total and end >= last + incr >= start:
            found.append((last + incr, total))
        return prev, found


@final
class _Ring:
    """An object's history: one bucket per age of its policy, each holding the values of the
    names its counters gave (in that order)."""

    __slots__ = ("at", "buckets", "kept", "names", "obj", "policy", "row", "seen")

    def __init__(self, obj: object, policy: str) -> None:
        self.obj = obj
        self.policy = policy
        self.names: tuple[str, ...] | None = None
        self.buckets = tuple(_Bucket(age, incr) for age, incr in POLICIES[policy])
        self.seen = 0
        #: The last sample's values, its time, and the time of the last one the buckets took:
        #: a sample equal to the one before, one tick later, is only noted (``at``), and the
        #: buckets take the run of them when they are read or before the next change
        #: (:meth:`catch_up`). An idle object costs a comparison a tick.
        self.row: _Row = ()
        self.at = self.kept = 0

    def add(self, ts: int, values: Values, step: int) -> None:
        """Take the sample of time ``ts`` (ms), ``step`` ms after the sampler's tick before."""
        names = tuple(values)
        row = tuple(values.values())
        if names == self.names:
            if row == self.row and ts - self.at == step:
                self.at = ts
                return
            self.catch_up()
        else:
            # (its counters name other values, or in another order: a history of those starts)
            self.names = names
            self.buckets = tuple(_Bucket(age, incr) for age, incr in POLICIES[self.policy])
        self.row = row
        self.at = self.kept = ts
        for bucket in self.buckets:
            bucket.add(ts, row)

    def catch_up(self) -> None:
        """Give the buckets the samples :meth:`add` only noted."""
        if self.at != self.kept:
            for bucket in self.buckets:
                bucket.carry(self.at)
            self.kept = self.at

    def bucket_for(self, span: int) -> _Bucket:
        # rabbit_mgmt_data:select_range_sample/2: the smallest age longer than the range,
        # else the longest.
        for bucket in self.buckets:
            if bucket.size - bucket.incr > span:
                return bucket
        return self.buckets[-1]

    def values(self, row: _Row) -> Values:
        return dict(zip(self.names or (), row, strict=True))


def _grid(first: int, last: int, incr: int) -> range:
    return range(first, last + 1, incr)


_ZERO: Values = {}


def _normalized(ring: _Ring | None, bucket: _Bucket | None, first: int, last: int, incr: int,
                pad: bool) -> dict[int, Values]:
    """One object's samples on the grid ``first, first + incr, ...`` up to ``last`` rounded up
    to it, each sample on the grid point at or after it (the latest wins), carried forward to
    the points with none, and before its first one: what came before the range, zeros when the
    object did not exist yet (``exometer_slide:to_normalized_list/6``)."""
    end = first + incr * -(-(last - first) // incr)
    if ring is None or bucket is None or bucket.total is None:
        return dict.fromkeys(_grid(first, end, incr), _ZERO) if pad else {}
    prev, samples = bucket.points(first, last + incr)
    made: dict[int, Values] = {}  # (one dict per distinct row)

    def values(row: _Row) -> Values:
        found = made.get(id(row))
        if found is None:
            found = made[id(row)] = ring.values(row)
        return found

    lookup: dict[int, _Row] = {}
    for ts, row in samples:
        lookup[first + incr * -(-(ts - first) // incr)] = row
    out: dict[int, Values] = {}
    carried: Values | None = None
    for t in _grid(first, end, incr):
        found = lookup.get(t)
        if found is not None:
            carried = values(found)
        if carried is not None:
            out[t] = carried
    if not pad:
        return out
    if samples:
        oldest = first + incr * -(-(samples[0][0] - first) // incr)
        before: Values | None = None
        if prev is not None:
            before = values(prev[1])
        elif bucket.first is not None and first < bucket.first:
            before = _ZERO
        if before is not None:
            for t in range(oldest - incr, first - 1, -incr):
                out[t] = before
    else:
        total = values(bucket.total)
        for t in _grid(first, end, incr):
            out[t] = total
    return out


@final
class History:
    """The statistics of one object (or the sum of several: a user's vhosts on the overview) as
    the API shows them for one range (or none): :meth:`details` is a ``*_details`` object."""

    __slots__ = ("_interval", "_range", "_rates", "_samples")

    def __init__(self, rings: Iterable[_Ring | None], range_: Range | None, now: float,
                 interval: float = INTERVAL) -> None:
        self._range = range_
        self._interval = int(interval * 1000)
        rings = list(rings)
        self._samples: list[tuple[int, Values]] = []
        self._rates: dict[str, float] = {}
        if range_ is None:
            self._instant(rings, int(now * 1000))
        else:
            self._ranged(rings, range_)

    def _instant(self, rings: list[_Ring | None], now_ms: int) -> None:
        # format_no_range: the rate between the last two samples of the smallest bucket
        # (summed), if the last is no older than the previous interval.
        present = [ring for ring in rings if ring is not None]
        lasts = [last for ring in present if (last := ring.buckets[0].last) is not None]
        if not lasts:
            return
        newest = max(lasts)
        interval = self._interval
        if newest < now_ms // interval * interval - interval:
            return
        fine = present[0].buckets[0]
        first, step = newest - fine.size, fine.incr
        summed = _sum([_normalized(ring, ring.buckets[0], first, newest, step, pad=False)
                       for ring in present])
        if newest not in summed or newest - step not in summed:
            return
        self._rates = _rates(summed[newest], summed[newest - step], step)

    def _ranged(self, rings: list[_Ring | None], r: Range) -> None:
        span = r.last - r.first
        summed = _sum([_normalized(ring, ring.bucket_for(span) if ring is not None else None,
                                   r.first, r.last, r.incr, pad=True) for ring in rings])
        self._samples = [(t, summed[t]) for t in sorted(summed) if r.first <= t <= r.last]
        if len(self._samples) >= 2:
            (t2, v2), (t1, v1) = self._samples[-2:]
            if t1 >= r.last - self._interval:
                self._rates = _rates(v1, v2, t1 - t2)

    @property
    def ranged(self) -> bool:
        return self._range is not None

    def details(self, name: str) -> dict[str, Any]:
        """``name``'s ``*_details``: ``{"rate": r}``, and with a range ``samples`` (newest
        first), ``avg_rate`` and ``avg`` (``rabbit_mgmt_stats:format_rate/6``; the two averages
        only with two samples or more)."""
        rate = self._rates.get(name, 0.0)
        if self._range is None:
            return {"rate": rate}
        samples = self._samples
        found: dict[str, Any] = {}
        if len(samples) > 1:
            newest, oldest = samples[-1], samples[0]
            found["avg"] = sum(v.get(name, 0) for _, v in samples) / len(samples)
            found["avg_rate"] = (newest[1].get(name, 0) - oldest[1].get(name, 0)) * 1000 \
                / (newest[0] - oldest[0])
        found["rate"] = rate
        found["samples"] = [{"sample": v.get(name, 0), "timestamp": t}
                            for t, v in reversed(samples)]
        return found


def _sum(series: list[dict[int, Values]]) -> dict[int, Values]:
    if len(series) == 1:
        return series[0]
    out: dict[int, Values] = {}
    for one in series:
        for t, values in one.items():
            into = out.get(t)
            if into is None:
                out[t] = dict(values)
            else:
                for name, value in values.items():
                    into[name] = into.get(name, 0) + value
    return out


def _rates(newer: Values, older: Values, elapsed: int) -> dict[str, float]:
    return {name: (value - older.get(name, 0)) * 1000 / elapsed
            for name, value in newer.items()}


# -- the sampler ------------------------------------------------------------------------------------

@final
class Sampler:
    """Samples every queue, channel, connection, vhost and node of ``broker`` at each multiple
    of ``interval`` seconds of its clock (a timer on it), into a bounded ring per object."""

    def __init__(self, broker: Broker, interval: float = INTERVAL) -> None:
        self._broker = weakref.ref(broker)
        self.interval = interval
        self._step = round(interval * 1000)
        self._rings: dict[int, _Ring] = {}
        self._tick = 0
        self._timer: Timer | None = None
        self._target = 0  # the time (ms) the timer's tick is for
        self.stopped = False
        #: How many management APIs use it (:func:`release`).
        self.users = 0
        #: The listener serving each node, by node name (its disk figures).
        self.servers: weakref.WeakValueDictionary[str, Server] = weakref.WeakValueDictionary()
        self._schedule()

    def _schedule(self, after: int | None = None) -> None:
        """Wake at the next multiple of the interval on the clock's time (after the tick
        ``after``, in ms, when one was just taken)."""
        broker = self._broker()
        if broker is None:
            return
        clock = broker.clock
        now = clock.time()
        step = self._step
        target = (math.floor(now * 1000 / step) + 1) * step
        if after is not None and after + step > now * 1000:
            target = after + step
        self._target = target
        self._timer = clock.call_at(clock.monotonic() + (target / 1000 - now), self._run)

    def stop(self) -> None:
        """Sample no more."""
        self.stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _run(self) -> None:
        self._timer = None
        broker = self._broker()
        if broker is None or self.stopped:
            return
        # Stamped with the tick's own multiple of the interval (a timer that fires a little
        # early or late on the clock's time), or, when it ran late by more than an interval,
        # the latest multiple that passed: the values are now's.
        step = self._step
        late = math.floor(broker.clock.time() * 1000 / step) * step
        self._schedule(self.sample(broker, at=max(self._target, late)))

    def sample(self, broker: Broker, at: int | None = None) -> int:
        """Take one sample of every object now (the timer's work; under the broker's lock),
        stamped ``at`` (ms), by default the multiple of the interval nearest to the clock's
        time; returns the stamp."""
        step = self._step
        ts = at if at is not None else round(broker.clock.time() * 1000 / step) * step
        self._tick += 1
        tick = self._tick
        counters = COUNTERS
        unacked: dict[int, int] = {}
        for connection in broker.connections.values():
            for channel in connection.channels.values():
                for delivery in channel.outstanding():
                    key = id(delivery.queue)
                    unacked[key] = unacked.get(key, 0) + 1
                self._add(channel, "channel", ts, tick, counters["channel"](channel))
            self._add(connection, "connection", ts, tick, counters["connection"](connection))
        for vhost in broker.vhosts.values():
            for queue in vhost.queues.values():
                self._add(queue, "queue", ts, tick,
                          counters["queue"](queue, unacked.get(id(queue), 0)))
            self._add(vhost, "vhost", ts, tick, counters["vhost"](vhost, unacked))
        for node in broker.nodes:
            if node.running:
                self._add(node, "node", ts, tick,
                          counters["node"](broker, node, self.servers.get(node.name)))
        rings = self._rings
        for key in [key for key, ring in rings.items() if ring.seen != tick]:
            del rings[key]  # gone
        return ts

    def _add(self, obj: object, kind: str, ts: int, tick: int, values: Values) -> None:
        ring = self._rings.get(id(obj))
        if ring is None or ring.obj is not obj:
            ring = self._rings[id(obj)] = _Ring(obj, _POLICY_OF[kind])
        ring.seen = tick
        ring.add(ts, values, self._step)

    def ring(self, obj: object) -> _Ring | None:
        ring = self._rings.get(id(obj))
        if ring is None or ring.obj is not obj:
            return None
        ring.catch_up()
        return ring

    def history(self, objs: Iterable[object], range_: Range | None) -> History:
        """What ``objs`` (summed) show for ``range_`` (``None``: no range, the instant rate)."""
        broker = self._broker()
        if broker is None:
            return History([], range_, 0.0, self.interval)
        clock = broker.clock
        timer = self._timer
        if timer is not None and timer.deadline <= clock.monotonic():
            # Nobody ran the clock's timers (a broker with no listener on the system clock):
            # the tick that is due is taken now.
            timer.cancel()
            self._run()
        return History([self.ring(obj) for obj in objs], range_, clock.time(), self.interval)

    def histories(self, objs: Iterable[object], *ranges: Range | None) -> list[History]:
        """:meth:`history` of ``objs`` for each of ``ranges``, made once for equal ranges (no
        range for several kinds: one instant rate)."""
        objs = list(objs)
        made: dict[Range | None, History] = {}
        found = []
        for range_ in ranges:
            history = made.get(range_)
            if history is None:
                history = made[range_] = self.history(objs, range_)
            found.append(history)
        return found

    def __len__(self) -> int:
        return len(self._rings)


_SAMPLERS: weakref.WeakKeyDictionary[Broker, Sampler] = weakref.WeakKeyDictionary()
_SAMPLERS_LOCK = threading.Lock()  # (brokers of other threads start theirs too)


def sampler_of(broker: Broker) -> Sampler:
    """``broker``'s sampler (one per broker, whatever the number of nodes that serve the API),
    started by the first management API that asks (under the broker's lock)."""
    with _SAMPLERS_LOCK:
        found = _SAMPLERS.get(broker)
        if found is None or found.stopped:
            found = _SAMPLERS[broker] = Sampler(broker)
        found.users += 1
        return found


def release(sampler: Sampler) -> None:
    """A management API that asked :func:`sampler_of` stops: the last one stops the sampler."""
    sampler.users -= 1
    if sampler.users <= 0:
        sampler.stop()


def asked(call: Any, broker: Broker, *, ceil_lengths: bool = False) -> Ranges:
    """The ranges ``call``'s query asks, at the broker clock's time (:func:`parse_ranges`)."""
    return parse_ranges(call.request.query, broker.clock.time(), ceil_lengths=ceil_lengths)
