"""Answers in steps (embroker/management/_steps.py): the same answers as at once, each step
short, and the broker's lock free between two steps, so that the listener serves its AMQP
clients between the steps of a long listing or export."""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from embroker import Broker
from embroker.management import ManagementAPI, Request
from embroker.management import _steps as steps
from embroker.management._api import Pending

_AUTH = {"authorization": "Basic " + base64.b64encode(b"guest:guest").decode()}


@pytest.fixture
def tiny_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps as short as they go: a yield at every look at the clock, runs of 3 rows."""
    monkeypatch.setattr(steps, "STEP_SECONDS", 0.0)
    monkeypatch.setattr(steps, "RUN", 3)


def _count(work: steps.Steps[Any]) -> tuple[int, Any]:
    yields = 0
    while True:
        try:
            next(work)
        except StopIteration as done:
            return yields, done.value
        yields += 1


@pytest.mark.usefixtures("tiny_steps")
@given(st.lists(st.integers(), max_size=200))
def test_each_in_steps_is_a_comprehension(items: list[int]) -> None:
    yields, found = _count(steps.each(items, lambda i: i * 2))
    assert found == [i * 2 for i in items]
    assert yields == len(items)  # (a look at the clock after every item: tiny steps)


@pytest.mark.usefixtures("tiny_steps")
@given(st.lists(st.tuples(st.integers(0, 5), st.integers()), max_size=60), st.booleans())
def test_sort_in_steps_is_sorted_and_stable(items: list[tuple[int, int]],
                                            reverse: bool) -> None:
    _yields, found = _count(steps.sort(items, lambda pair: pair[0], reverse=reverse))
    assert found == sorted(items, key=lambda pair: pair[0], reverse=reverse)


@pytest.fixture
def busy() -> tuple[Broker, ManagementAPI]:
    broker = Broker()
    channel = broker.connect().channel()
    channel.exchange_declare("x", "topic")
    for i in range(300):
        channel.exchange_declare(f"x{i:03d}", "fanout")
        channel.queue_declare(f"q{i:03d}", durable=i % 2 == 0)
        channel.queue_bind(f"q{i:03d}", "x", f"k.{i}")
        channel.basic_publish("", f"q{i:03d}", b"m", {"delivery_mode": 2})
    return broker, ManagementAPI(broker)


def _lock_is_free(broker: Broker) -> bool:
    got: list[bool] = []

    def take() -> None:
        lock = broker._lock
        got.append(lock.acquire(timeout=2))
        if got[-1]:
            lock.release()
    thread = threading.Thread(target=take)
    thread.start()
    thread.join()
    return got == [True]


@pytest.mark.usefixtures("tiny_steps")
@pytest.mark.parametrize("path", ["/api/queues", "/api/queues?sort=messages&columns=name",
                                  "/api/queues?page=2&page_size=50&name=q1&columns=name",
                                  "/api/exchanges", "/api/bindings", "/api/definitions"])
def test_a_long_answer_comes_in_steps_with_the_lock_free_between(
        busy: tuple[Broker, ManagementAPI], path: str) -> None:
    broker, api = busy
    target, _, query = path.partition("?")
    request = Request("GET", target, dict(p.split("=") for p in query.split("&") if p),
                      dict(_AUTH))
    pending = api.begin(request)
    assert isinstance(pending, Pending)
    answer, taken = None, 0
    while answer is None:
        answer = pending.step()
        taken += 1
        if taken % 25 == 0:
            assert _lock_is_free(broker)
    assert taken > 10
    assert answer.status == 200
    at_once = api(request)
    if target == "/api/definitions":  # (passwords are salted anew: compare the rest)
        mine, theirs = json.loads(answer.content()), json.loads(at_once.body)
        for document in (mine, theirs):
            for user in document["users"]:
                user.pop("password_hash")
        assert mine == theirs
        assert len(mine["queues"]) == 300
    else:
        assert answer.content() == at_once.body
