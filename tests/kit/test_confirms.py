"""The kit's coalescing of publish outcomes: 0-9-1's ``multiple`` confirms and 1.0's ranges."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from embroker.amqp10 import serial_add
from embroker.kit import coalesce, runs

ACCEPTED, REJECTED = object(), object()


def _follows(last: int, delivery_id: int) -> bool:
    return delivery_id == serial_add(last, 1)


def test_a_range_of_accepted_deliveries_crosses_the_serial_wrap() -> None:
    top = 2**32 - 1
    outcomes = [(top - 1, ACCEPTED), (top, ACCEPTED), (0, ACCEPTED), (1, REJECTED)]
    assert runs(outcomes, follows=_follows, joins=lambda o: o is ACCEPTED) == [
        (top - 1, 0, ACCEPTED), (1, 1, REJECTED)]


def test_outcomes_that_do_not_join_stay_one_per_delivery_even_when_equal() -> None:
    outcomes = [(5, REJECTED), (6, REJECTED)]
    assert runs(outcomes, follows=_follows, joins=lambda o: o is ACCEPTED) == [
        (5, 5, REJECTED), (6, 6, REJECTED)]


def test_a_gap_in_delivery_ids_starts_a_new_range() -> None:
    assert runs([(1, ACCEPTED), (3, ACCEPTED)], follows=_follows,
                joins=lambda o: o is ACCEPTED) == [(1, 1, ACCEPTED), (3, 3, ACCEPTED)]


@given(st.lists(st.booleans(), max_size=40))
def test_ranges_cover_each_delivery_once_in_order(accepted: list[bool]) -> None:
    outcomes = [(i, ACCEPTED if ok else REJECTED) for i, ok in enumerate(accepted)]
    covered = [(i, state) for first, last, state in runs(
        outcomes, follows=_follows, joins=lambda o: o is ACCEPTED)
        for i in range(first, last + 1)]
    assert covered == outcomes


@given(st.lists(st.booleans(), max_size=40))
def test_coalesced_confirms_settle_each_publish_once_with_its_outcome(accepted: list[bool]) -> None:
    outcomes = [(tag, ok) for tag, ok in enumerate(accepted, start=1)]
    settled: dict[int, bool] = {}
    for tag, multiple, ack in coalesce(outcomes):
        tags = [t for t, _ in outcomes if t <= tag and t not in settled] if multiple else [tag]
        for t in tags:
            assert t not in settled
            settled[t] = ack
    assert settled == dict(outcomes)
