"""The statistics' history: every object sampled on the broker's clock each 5 s, and ranges
answered by RabbitMQ 3.10.8's rules (rabbitmq_management/src/rabbit_mgmt_stats.erl:
format_range/6, average/3, rate_from_last_increment/4; rabbit_mgmt_util.erl: range/3;
rabbitmq_management_agent/src/exometer_slide.erl: to_normalized_list/6; rabbit_mgmt_data.erl:
select_range_sample/2), on a ManualClock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from embroker import Broker, ManualClock
from embroker.management import ManagementAPI
from embroker.management import _samples as samples
from embroker.management._http import Request

from ..clocks import SteppedClock

#: A start on a multiple of an hour: the statistics' ticks fall at 5, 10, 15... seconds, and
#: the minute samples on whole minutes.
START = 1_699_999_200.0
_AUTH = {"authorization": "Basic Z3Vlc3Q6Z3Vlc3Q="}


class Setup:
    def __init__(self) -> None:
        self.clock = ManualClock(start=START)
        self.broker = Broker(clock=self.clock)
        self.api = ManagementAPI(self.broker)
        self.channel = self.broker.connect().channel()

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    def publish(self, queue: str, count: int = 1) -> None:
        for _ in range(count):
            self.channel.basic_publish("", queue, b"x")

    def get(self, path: str, **query: object) -> tuple[int, Any]:
        answer = self.api(Request("GET", "/api" + path, {k: str(v) for k, v in query.items()},
                                  dict(_AUTH)))
        return answer.status, json.loads(answer.content())

    def ok(self, path: str, **query: object) -> Any:
        status, body = self.get(path, **query)
        assert status == 200, body
        return body


@pytest.fixture
def setup() -> Iterator[Setup]:
    made = Setup()
    yield made
    made.api.close()


def _ms(seconds: float) -> int:
    return round((START + seconds) * 1000)


def _series(details: dict[str, Any]) -> list[tuple[float, int]]:
    """(seconds after START, sample), newest first."""
    return [((s["timestamp"] - START * 1000) / 1000, s["sample"]) for s in details["samples"]]


def test_a_queue_length_is_sampled_every_5_seconds_of_the_broker_clock(setup: Setup) -> None:
    setup.channel.queue_declare("q")
    for _ in range(4):  # 1 message at t=1, 2 at 6, 3 at 11, 4 at 16
        setup.advance(1)
        setup.publish("q")
        setup.advance(4)
    setup.advance(1)  # t=21
    details = setup.ok("/queues/%2F/q", lengths_age=20, lengths_incr=5)["messages_details"]
    # lengths on a queue: range_ceil, the last point at or after now (25)
    assert _series(details) == [(25, 4), (20, 4), (15, 3), (10, 2), (5, 1)]


def test_samples_avg_and_avg_rate_follow_rabbit_mgmt_stats_average(setup: Setup) -> None:
    setup.channel.queue_declare("q")
    setup.advance(1)
    setup.publish("q", 2)
    setup.advance(9)   # t=10: ticks at 5 (2)  10 (2)
    setup.publish("q", 4)
    setup.advance(5)   # t=15: tick at 15 (6)
    details = setup.ok("/queues/%2F/q", lengths_age=15, lengths_incr=5)["messages_details"]
    assert _series(details) == [(15, 6), (10, 2), (5, 2), (0, 0)]
    assert details["avg"] == (6 + 2 + 2 + 0) / 4
    assert details["avg_rate"] == (6 - 0) * 1000 / 15000
    # the rate: between the two newest samples, the newest no older than one interval
    assert details["rate"] == (6 - 2) * 1000 / 5000
    assert list(details) == ["avg", "avg_rate", "rate", "samples"]


def test_with_no_range_a_detail_is_the_rate_of_the_last_two_samples(setup: Setup) -> None:
    setup.channel.queue_declare("q")
    setup.advance(5)
    assert setup.ok("/queues/%2F/q")["messages_details"] == {"rate": 0.0}  # one sample
    setup.publish("q", 10)
    setup.advance(5)
    assert setup.ok("/queues/%2F/q")["messages_details"] == {"rate": 2.0}
    setup.advance(5)
    assert setup.ok("/queues/%2F/q")["messages_details"] == {"rate": 0.0}


def test_message_rates_end_at_or_before_now_and_lengths_at_or_after(setup: Setup) -> None:
    """rabbit_mgmt_util: range/1 takes the floor of now to the increment, range_ceil/1 (a
    queue's endpoint) the ceiling for the lengths."""
    setup.channel.queue_declare("q")
    setup.publish("q")  # (a queue nothing passed through shows no message_stats)
    setup.advance(12)
    queue = setup.ok("/queues/%2F/q", lengths_age=10, lengths_incr=5, msg_rates_age=10,
                     msg_rates_incr=5)
    assert [t for t, _ in _series(queue["messages_details"])] == [15, 10, 5]
    assert [t for t, _ in _series(queue["message_stats"]["publish_details"])] == [10, 5, 0]
    vhost = setup.ok("/vhosts/%2F", lengths_age=10, lengths_incr=5)  # a vhost: range/1
    assert [t for t, _ in _series(vhost["messages_details"])] == [10, 5, 0]


def test_a_queue_younger_than_the_range_has_zeros_before_its_first_sample(
        setup: Setup) -> None:
    setup.advance(100)
    setup.channel.queue_declare("q")
    setup.publish("q", 3)
    setup.advance(10)  # t=110: samples at 105, 110
    details = setup.ok("/queues/%2F/q", lengths_age=60, lengths_incr=5)["messages_details"]
    assert len(details["samples"]) == 13
    assert _series(details)[:3] == [(110, 3), (105, 3), (100, 0)]
    assert {sample for _, sample in _series(details)[2:]} == {0}


def test_the_value_before_the_range_fills_its_first_points(setup: Setup) -> None:
    setup.channel.queue_declare("q")
    setup.advance(1)
    setup.publish("q", 7)
    setup.advance(100)  # t=101
    details = setup.ok("/queues/%2F/q", lengths_age=10, lengths_incr=5)["messages_details"]
    assert _series(details) == [(105, 7), (100, 7), (95, 7)]


def test_a_sample_counts_at_the_first_point_at_or_after_it(setup: Setup) -> None:
    """exometer_slide:to_normalized_list/6 rounds each sample's time up to the range's grid
    (the latest sample wins a point) and carries it forward to the points that have none."""
    setup.channel.queue_declare("q")
    setup.advance(1)
    setup.publish("q", 1)
    setup.advance(20)  # t=21
    setup.publish("q", 1)
    setup.advance(9)   # t=30: samples of 1 at 5..20, of 2 at 25 and 30
    details = setup.ok("/vhosts/%2F", lengths_age=21, lengths_incr=7)["messages_details"]
    # the last point: 30 s floored to a multiple of 7 s since the epoch (24 s after START);
    # the samples at 5 and 10 count at 10, 15 at 17, 20 at 24, 25 and 30 after the range;
    # the first point is before the queue's first sample (zero)
    assert _series(details) == [(24, 1), (17, 1), (10, 1), (3, 0)]


def test_a_range_longer_than_605_seconds_reads_the_minute_samples(setup: Setup) -> None:
    """select_range_sample/2: the bucket whose age is the first longer than the range; a
    queue's policy is basic ([{605, 5}, {3600, 60}])."""
    setup.channel.queue_declare("q")
    for _ in range(20):  # one more message each minute
        setup.advance(60)
        setup.publish("q")
    setup.advance(6)  # t=1206: minute samples kept at 5, 65, ... 1205 s
    details = setup.ok("/queues/%2F/q", lengths_age=1200, lengths_incr=60)["messages_details"]
    series = _series(details)
    assert len(series) == 21
    assert all(t % 60 == 0 for t, _ in series)
    assert [sample for _, sample in series] == list(range(20, -1, -1))


@pytest.mark.parametrize(("query", "reason"), [
    ({"lengths_age": 0, "lengths_incr": 5}, "Invalid range parameters: age 0, incr 5"),
    ({"msg_rates_age": 60, "msg_rates_incr": -5}, "Invalid range parameters: age 60, incr -5"),
    ({"data_rates_age": 5010, "data_rates_incr": 10},
     "Invalid range parameters: age 5010, incr 10"),
])
def test_a_range_of_no_positive_age_or_of_more_than_500_samples_is_a_400(
        setup: Setup, query: dict[str, object], reason: str) -> None:
    setup.channel.queue_declare("q")
    assert setup.get("/queues/%2F/q", **query) == (400, {"error": "bad_request",
                                                         "reason": reason})
    assert setup.get("/overview", **query) == (400, {"error": "bad_request", "reason": reason})


@pytest.mark.parametrize("query", [{"lengths_age": 60}, {"lengths_age": "x", "lengths_incr": 5},
                                   {"lengths_age": "6.0", "lengths_incr": 5}])
def test_a_range_half_given_or_not_a_whole_number_is_no_range(
        setup: Setup, query: dict[str, object]) -> None:
    setup.channel.queue_declare("q")
    setup.advance(10)
    assert setup.ok("/queues/%2F/q", **query)["messages_details"] == {"rate": 0.0}


def test_500_samples_are_allowed(setup: Setup) -> None:
    setup.channel.queue_declare("q")
    setup.advance(10)
    details = setup.ok("/queues/%2F/q", lengths_age=500, lengths_incr=1)["messages_details"]
    assert len(details["samples"]) == 501


def test_every_detail_of_the_ui_endpoints_has_samples_when_a_range_is_asked(
        setup: Setup) -> None:
    """The console's charts read ``samples`` of every ``*_details`` (a TypeError without)."""
    setup.channel.queue_declare("q")
    setup.advance(12)
    ranges = {f"{kind}_{part}": value for kind in ("lengths", "msg_rates", "data_rates",
                                                    "node_stats")
              for part, value in (("age", 60), ("incr", 5))}
    connection = setup.ok("/connections")[0]["name"]
    node = setup.ok("/overview")["node"]
    paths = ["/overview", f"/nodes/{node}", f"/connections/{connection}",
             f"/channels/{connection} (1)", "/queues/%2F/q", "/vhosts/%2F"]
    for path in paths:
        answer = setup.ok(path, **ranges)
        found = list(_details(answer))
        assert found, path
        for where, details in found:
            assert len(details["samples"]) == 13, (path, where)


def test_the_listings_answer_ranges_too(setup: Setup) -> None:
    """(rabbit_mgmt_wm_queues, _vhosts, _connections, _channels, _connection_channels: each
    row's history for the ranges asked.)"""
    setup.channel.queue_declare("q1")
    setup.channel.queue_declare("q2")
    setup.publish("q2", 2)
    setup.advance(10)
    ranges = {"lengths_age": 10, "lengths_incr": 5, "msg_rates_age": 10, "msg_rates_incr": 5,
              "data_rates_age": 10, "data_rates_incr": 5}
    queues = setup.ok("/queues", **ranges)
    assert [_series(q["messages_details"]) for q in queues] == [
        [(10, 0), (5, 0), (0, 0)], [(10, 2), (5, 2), (0, 0)]]
    assert len(setup.ok("/queues/%2F", sort="name", **ranges)[1]["message_stats"][
        "publish_details"]["samples"]) == 3
    vhost = setup.ok("/vhosts", **ranges)[0]
    assert _series(vhost["messages_details"]) == [(10, 2), (5, 2), (0, 0)]
    connection = setup.ok("/connections", **ranges)[0]
    assert len(connection["recv_oct_details"]["samples"]) == 3
    assert len(setup.ok("/channels", **ranges)[0]["reductions_details"]["samples"]) == 3
    channels = setup.ok(f"/connections/{connection['name']}/channels", **ranges)
    assert len(channels[0]["message_stats"]["publish_details"]["samples"]) == 3
    assert setup.ok("/queues")[0]["messages_details"] == {"rate": 0.0}
    for path in ("/queues", "/vhosts", "/connections", "/channels"):
        assert setup.get(path, lengths_age=1, lengths_incr=0)[0] == 400


def _details(answer: Any, prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    for key, value in answer.items():
        if key.endswith("_details") and isinstance(value, dict) and "rate" in value:
            yield prefix + key, value
        elif isinstance(value, dict):
            yield from _details(value, f"{prefix}{key}.")


def test_the_overview_sums_the_vhosts_the_user_sees(setup: Setup) -> None:
    broker = setup.broker
    broker.add_vhost("other")
    setup.channel.queue_declare("q")
    other = broker.connect("other").channel()
    other.queue_declare("q")
    setup.publish("q", 2)
    other.basic_publish("", "q", b"x")
    setup.advance(5)
    totals = setup.ok("/overview", lengths_age=5, lengths_incr=5)["queue_totals"]
    assert _series(totals["messages_details"]) == [(5, 3), (0, 0)]
    broker.add_user("u", "pw", tags=["management"])
    broker.set_permissions("u", ".*", ".*", ".*", vhost="other")
    auth = {"authorization": "Basic dTpwdw=="}  # u:pw
    answer = setup.api(Request("GET", "/api/overview",
                               {"lengths_age": "5", "lengths_incr": "5"}, auth))
    mine = json.loads(answer.content())["queue_totals"]
    assert _series(mine["messages_details"]) == [(5, 1), (0, 0)]


def test_the_overview_churn_has_samples_only_with_the_message_rates_range(
        setup: Setup) -> None:
    """rabbit_mgmt_data:overview_data/4 reads the churn for the msg_rates range and
    rabbit_mgmt_db:overview/3 formats it for the lengths range (checked live)."""
    setup.advance(10)
    assert setup.ok("/overview", lengths_age=10, lengths_incr=5)["churn_rates"] == {}
    both = setup.ok("/overview", lengths_age=10, lengths_incr=5, msg_rates_age=10,
                    msg_rates_incr=5)["churn_rates"]
    assert len(both["queue_declared_details"]["samples"]) == 3
    assert setup.ok("/overview", msg_rates_age=10, msg_rates_incr=5)["churn_rates"][
        "queue_declared_details"] == {"rate": 0.0}


def test_a_node_samples_the_memory_its_queues_hold(setup: Setup) -> None:
    setup.channel.queue_declare("q")
    setup.advance(5)
    setup.publish("q", 4)  # 4 bytes
    setup.advance(5)
    node = setup.ok("/overview")["node"]
    answer = setup.ok(f"/nodes/{node}", node_stats_age=5, node_stats_incr=5)
    assert _series(answer["mem_used_details"]) == [(10, 4), (5, 0)]
    assert _series(answer["fd_used_details"]) == [(10, 0), (5, 0)]


def test_a_queue_deleted_and_declared_again_starts_a_new_history(setup: Setup) -> None:
    setup.channel.queue_declare("q")
    setup.publish("q", 5)
    setup.advance(10)
    setup.channel.queue_delete("q")
    setup.advance(5)
    assert setup.api.sampler.ring(setup.broker.vhosts["/"]) is not None
    setup.channel.queue_declare("q")
    setup.advance(5)  # t=20
    details = setup.ok("/queues/%2F/q", lengths_age=10, lengths_incr=5)["messages_details"]
    assert _series(details) == [(20, 0), (15, 0), (10, 0)]


def test_an_object_that_goes_away_drops_its_ring(setup: Setup) -> None:
    sampler = setup.api.sampler
    setup.advance(5)
    before = len(sampler)
    connection = setup.broker.connect()
    connection.channel().queue_declare("q", exclusive=True)
    setup.advance(5)
    assert len(sampler) == before + 3  # the connection, its channel, its queue
    connection.close()
    setup.advance(5)
    assert len(sampler) == before


def test_a_ring_stays_bounded_however_long_the_queue_changes(setup: Setup) -> None:
    setup.channel.queue_declare("q")
    for _ in range(1500):  # more than two hours, a change at every tick
        setup.publish("q")
        setup.advance(5)
    ring = setup.api.sampler.ring(setup.broker.vhosts["/"].queues["q"])
    assert ring is not None
    fine, coarse = ring.buckets
    assert len(fine.slots) <= 610 // 5 + 2
    assert len(coarse.slots) <= 3660 // 60 + 2


def test_an_idle_queue_keeps_one_sample_shared_by_its_slots(setup: Setup) -> None:
    setup.channel.queue_declare("q")
    setup.advance(3600)
    ring = setup.api.sampler.ring(setup.broker.vhosts["/"].queues["q"])
    assert ring is not None
    assert len({id(row) for bucket in ring.buckets for row in bucket.slots}) == 1


def test_a_channels_message_counts_are_sampled_and_answered(setup: Setup) -> None:
    """The model's message counters through the seam (``channel_counters``): a channel's
    publishes between two ticks are its samples' difference."""
    setup.channel.queue_declare("q")
    setup.advance(5)
    setup.publish("q", 10)
    setup.advance(5)
    connection = setup.ok("/connections")[0]["name"]
    answer = setup.ok(f"/channels/{connection} (1)", msg_rates_age=10, msg_rates_incr=5)
    assert answer["message_stats"]["publish"] == 10
    assert answer["message_stats"]["publish_details"]["samples"] == [
        {"sample": 10, "timestamp": _ms(10)}, {"sample": 0, "timestamp": _ms(5)},
        {"sample": 0, "timestamp": _ms(0)}]
    assert answer["message_stats"]["publish_details"]["rate"] == 2.0


def test_the_sampler_stops_with_the_last_api_of_its_broker() -> None:
    broker = Broker(clock=ManualClock(start=START))
    first, second = ManagementAPI(broker), ManagementAPI(broker)
    assert first.sampler is second.sampler
    first.close()
    assert broker.clock.next_deadline() is not None
    second.close()
    second.close()
    assert broker.clock.next_deadline() is None


def test_ticks_fall_on_multiples_of_the_interval_of_the_clock_time() -> None:
    broker = Broker(clock=ManualClock(start=START + 2.5))
    api = ManagementAPI(broker)
    try:
        assert broker.clock.next_deadline() == 2.5
    finally:
        api.close()


def test_a_sample_is_stamped_with_the_multiple_of_5_seconds_nearest_to_it(
        setup: Setup) -> None:
    """(A listener's timer runs a few milliseconds late: its sample still counts for its tick,
    not for the next point of a range.)"""
    setup.advance(5.004)
    assert setup.api.sampler.sample(setup.broker) == _ms(5)
    setup.advance(4.994)  # 9.998
    assert setup.api.sampler.sample(setup.broker) == _ms(10)


def test_a_tick_nobody_ran_is_taken_when_the_history_is_read() -> None:
    clock = SteppedClock(start=START)  # (its timers: nobody runs them, as a broker on the
    # system clock with no listener)
    broker = Broker(clock=clock)
    api = ManagementAPI(broker)
    try:
        broker.connect().channel().queue_declare("q")
        clock.now = 7.6
        answer = api(Request("GET", "/api/queues/%2F/q", {"lengths_age": "5",
                                                           "lengths_incr": "5"}, dict(_AUTH)))
        details = json.loads(answer.content())["messages_details"]
        assert _series(details) == [(10, 0), (5, 0)]  # (taken at 7.6: counts for 5)
        assert clock.next_deadline() == pytest.approx(10.0)
        broker.connect().channel().basic_publish("", "q", b"x")
        clock.now = 31.0  # four ticks missed: one sample, for 30, of what is known now
        answer = api(Request("GET", "/api/queues/%2F/q", {"lengths_age": "10",
                                                           "lengths_incr": "5"}, dict(_AUTH)))
        details = json.loads(answer.content())["messages_details"]
        assert _series(details) == [(35, 1), (30, 1), (25, 0)]
        assert clock.next_deadline() == pytest.approx(35.0)
    finally:
        api.close()


def test_the_statistics_benchmark_runs() -> None:
    """benchmarks/samples.py's workloads, small (the figures are not asserted)."""
    import importlib.util
    import sys
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "benchmarks"
    if str(folder) not in sys.path:  # (its import of processing, as when it runs as a script)
        sys.path.append(str(folder))
    spec = importlib.util.spec_from_file_location("benchmarks_samples", folder / "samples.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _runs, objects = module.tick(10, 2, 2)
    assert objects == 10 + 3 + 3 + 1 + 1  # queues, connections, channels, vhost, node
    assert set(module.ranged_reads(10, 2, 1)) == {"GET /api/queues/%2F/q0 (ranges)",
                                                  "GET /api/overview (ranges)"}
    assert all(workload(2_000) > 0 for _, workload in module.CONDITIONS)
    assert module.memory_per_queue(5, True) > 0


def test_kinds_asked_the_same_range_share_one_history(setup: Setup) -> None:
    setup.channel.queue_declare("q")
    queue = setup.broker.vhosts["/"].queues["q"]
    r = samples.Range(_ms(0), _ms(10), 5000)
    a, b, c = setup.api.sampler.histories([queue], None, r, None)
    assert a is c
    assert a is not b


# -- an idle object's samples, taken lazily -------------------------------------------------------

_STEP = 5000


@given(st.lists(st.tuples(st.integers(0, 1), st.integers(1, 80),
                          st.sampled_from([1, 1, 1, 1, 1, 2, 13, 25]), st.booleans()),
                max_size=40),
       st.sampled_from(["basic", "global"]))
@example([(0, 13, 1, False), (1, 2, 1, False), (1, 1, 25, False)], "basic")  # (a late tick
# after a change the minute bucket has not kept: the slots it missed take the value before)
@settings(max_examples=200, deadline=None)
def test_a_ring_that_notes_repeated_samples_holds_what_adding_each_would_hold(
        runs: list[tuple[int, int, int, bool]], policy: str) -> None:
    """_Ring.add only notes a sample equal to the one before, one tick later, and its buckets
    take the run when read (catch_up): they then hold what adding every sample to them would
    (the slots, their times, the latest sample), whatever the values, the runs of equal ones,
    the missed ticks (a timer late by several intervals) and the reads in between."""
    ring = samples._Ring(object(), policy)
    eager = [samples._Bucket(age, incr) for age, incr in samples.POLICIES[policy]]
    ts = 3_600_000
    for value, repeat, steps, read in runs:
        for tick in range(repeat):
            ts += (steps if tick == 0 else 1) * _STEP
            ring.add(ts, {"messages": value}, _STEP)
            for bucket in eager:
                bucket.add(ts, (value,))
        if read:
            ring.catch_up()
            _assert_same(ring.buckets, eager)
    ring.catch_up()
    _assert_same(ring.buckets, eager)


def _assert_same(lazy: tuple[samples._Bucket, ...], eager: list[samples._Bucket]) -> None:
    for mine, theirs in zip(lazy, eager, strict=True):
        assert (list(mine.slots), mine.base, mine.first, mine.total) == (
            list(theirs.slots), theirs.base, theirs.first, theirs.total)
        assert mine.points(0, 10**12) == theirs.points(0, 10**12)


def test_an_idle_ring_takes_a_tick_without_its_buckets() -> None:
    ring = samples._Ring(object(), "global")
    ring.add(0, {"messages": 1}, _STEP)
    slots = [list(bucket.slots) for bucket in ring.buckets]
    for tick in range(1, 100):
        ring.add(tick * _STEP, {"messages": 1}, _STEP)
    assert [list(bucket.slots) for bucket in ring.buckets] == slots  # (only noted)
    ring.catch_up()
    assert len(ring.buckets[0].slots) == 100
