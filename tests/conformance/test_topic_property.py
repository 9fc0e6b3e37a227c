"""Topic routing, generated: embroker and RabbitMQ route every (pattern, key) alike.

Each example binds many patterns (one queue each) to one topic exchange, publishes many keys and
records which queue got which key. Words come from a tiny alphabet with empty words, ``*`` and
``#``, where the edge cases are. A small matcher written from RabbitMQ's observed behaviour
(``topic_matches``) is the oracle for the in-process run; the differential run also checks it
against RabbitMQ, so the oracle itself stays honest.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ..oracles import topic_matches
from .drivers import InProcessDriver, PikaDriver
from .harness import Session, diff_runs, problems, run_scenario


def _join(words: list[str]) -> str:
    return ".".join(words)


patterns = st.lists(st.lists(st.sampled_from(["a", "b", "", "*", "#"]), max_size=4).map(_join),
                    min_size=1, max_size=12, unique=True)
keys = st.lists(st.lists(st.sampled_from(["a", "b", "", "a", "b", "*"]), max_size=4).map(_join),
                min_size=1, max_size=12, unique=True)


def topic_scenario(pattern_list: list[str], key_list: list[str]):
    def scenario_topic_generated(s: Session) -> None:
        ch = s.channel()
        x = s.name("x")
        ch.exchange_declare(x, "topic")
        queues = []
        for i, pattern in enumerate(pattern_list):
            q = s.name(f"q{i}")
            ch.queue_declare(q, exclusive=True)
            ch.queue_bind(q, x, pattern)
            queues.append(q)
        for j, key in enumerate(key_list):
            ch.basic_publish(x, key, str(j).encode())
        for pattern, q in zip(pattern_list, queues, strict=True):
            got = [key_list[int(b)] for b in ch.drain(q)]
            want = [k for k in key_list if topic_matches(pattern, k)]
            s.expect(got, want, f"pattern {pattern!r}")

    return scenario_topic_generated


@settings(max_examples=100, deadline=None)
@given(patterns, keys)
def test_topic_routing_in_process(pattern_list: list[str], key_list: list[str]) -> None:
    run = run_scenario(topic_scenario(pattern_list, key_list), InProcessDriver())
    assert not (msg := problems(run)), msg


@pytest.mark.differential
@settings(max_examples=100, deadline=None)
@given(patterns, keys)
def test_topic_routing_differential(reference_url: str, pattern_list: list[str],
                                    key_list: list[str]) -> None:
    scenario = topic_scenario(pattern_list, key_list)
    ref = run_scenario(scenario, PikaDriver(reference_url, label="RabbitMQ"))
    assert not (msg := problems(ref)), f"the oracle disagrees with RabbitMQ:\n{msg}"
    run = run_scenario(scenario, InProcessDriver())
    assert not (diff := diff_runs(ref, run)), f"transcripts differ:\n{diff}"


@pytest.mark.parametrize(("pattern", "key", "expected"), [
    ("#", "", True), ("*", "", False), ("", "", True), ("", "a", False), ("a.*", "a.", True),
    ("#.*", "", False), ("a.#.b", "a.b", True), ("*.*", "a..b", False), ("a..b", "a..b", True),
    ("#.#", "", True), ("a.#", "a", True), ("#.b", "b", True), ("*", "*", True),
])
def test_topic_oracle_examples(pattern: str, key: str, expected: bool) -> None:
    """The oracle on cases the scenarios saw RabbitMQ decide (RABBITMQ_NOTES.md)."""
    assert topic_matches(pattern, key) is expected
