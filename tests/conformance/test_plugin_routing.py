"""The routing plugins' exchanges against RabbitMQ, generated and counted.

- ``test_hashing_routes_like_rabbitmq``: Hypothesis generates a binding layout (weights for
  ``x-consistent-hash``, binding keys, duplicates and an exchange destination for
  ``x-modulus-hash``) and routing keys, CC keys and header values; the same scenario runs on
  RabbitMQ and in-process, and every message must land in the same queue on both. Needs the
  reference (``EMBROKER_REFERENCE_URL``).
- ``x-random`` picks uniformly at random, RabbitMQ from its process's seed, embroker from
  ``broker.plugins.random`` (seeded): their choices cannot be compared message by message, only
  as distributions. 4000 messages over destinations of probabilities p (a queue bound twice
  counts twice, as in RabbitMQ) give counts of mean 4000p and standard deviation
  sqrt(4000 p (1-p)) (at most 31); each count must lie within 6 standard deviations of its
  mean. For embroker the counts are fixed by the seed (the test cannot flake); for RabbitMQ a
  count outside happens with probability below 2e-9, so a run of the 4 counts fails by chance
  with probability below 1e-8.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embroker import Broker

from .drivers import InProcessDriver, PikaDriver
from .harness import Msg, Session, diff_runs, problems, run_scenario

# -- hashing, generated -------------------------------------------------------------------------

words = st.text(alphabet="ab.-_é1", max_size=12)
header_values = st.one_of(words, st.integers(-(2**40), 2**40), st.booleans(),
                          st.lists(st.integers(0, 9), max_size=3), st.none())


def hashing_scenario(kind: str, layout: list[tuple[str, int]], keys: list[str],
                     ccs: list[list[str]], header_list: list[Any]):
    def scenario(s: Session) -> None:
        ch = s.channel()
        arguments = {"hash-header": "h"} if kind == "x-consistent-hash-header" else None
        x = s.name("x")
        ch.exchange_declare(x, "x-consistent-hash" if kind.startswith("x-consistent") else kind,
                            arguments=arguments)
        inner = s.name("inner")
        ch.exchange_declare(inner, "fanout")
        queues = []
        for i, (key, queue_index) in enumerate(layout):
            q = s.name(f"q{queue_index}")
            if q not in queues:
                ch.queue_declare(q, exclusive=True)
                queues.append(q)
            if i == len(layout) - 1 and kind == "x-modulus-hash":
                ch.exchange_bind(inner, x, key)
            else:
                ch.queue_bind(q, x, key)
        q_inner = s.name("q-inner")
        ch.queue_declare(q_inner, exclusive=True)
        ch.queue_bind(q_inner, inner)
        queues.append(q_inner)
        with s.quietly():
            for i, key in enumerate(keys):
                headers: dict[str, Any] = {}
                if ccs[i % len(ccs)]:
                    headers["CC"] = ccs[i % len(ccs)]
                value = header_list[i % len(header_list)]
                if value is not None:
                    headers["h"] = value
                ch.basic_publish(x, key, str(i).encode(), {"headers": headers} if headers else None)
        for q in queues:
            got = []
            with s.quietly():
                while isinstance(m := ch.basic_get(q, auto_ack=True), Msg):
                    got.append(m.body)
            s.note(f"in {s.normalize(q)}", got)
    return scenario


@st.composite
def layouts(draw: st.DrawFn, kind: str) -> list[tuple[str, int]]:
    n = draw(st.integers(1, 6))
    if kind.startswith("x-consistent"):
        weights = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
        return [(str(w), i) for i, w in enumerate(weights)]
    return draw(st.lists(st.tuples(words, st.integers(0, n - 1)), min_size=n, max_size=2 * n,
                         unique=True))


@pytest.mark.differential
@pytest.mark.parametrize("kind", ["x-consistent-hash", "x-consistent-hash-header",
                                  "x-modulus-hash"])
@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_hashing_routes_like_rabbitmq(kind: str, data: st.DataObject, reference_url: str) -> None:
    layout = data.draw(layouts(kind))
    keys = data.draw(st.lists(words, min_size=10, max_size=40))
    ccs = data.draw(st.lists(st.lists(words, max_size=2), min_size=1, max_size=4))
    header_list = data.draw(st.lists(header_values, min_size=1, max_size=5))
    scenario = hashing_scenario(kind, layout, keys, ccs, header_list)
    ours = run_scenario(scenario, InProcessDriver())
    theirs = run_scenario(scenario, PikaDriver(reference_url, label="RabbitMQ"))
    assert not problems(ours), problems(ours)
    assert not problems(theirs), problems(theirs)
    diff = diff_runs(theirs, ours)
    assert not diff, f"RabbitMQ (-) and embroker (+) route differently:\n{diff}"


# -- x-random, counted ---------------------------------------------------------------------------

MESSAGES = 4000
#: Destinations: q1 bound twice, q2 and q3 once, and a fanout exchange (to q4) once.
PROBABILITIES = {"q1": 2 / 5, "q2": 1 / 5, "q3": 1 / 5, "q4": 1 / 5}
SIGMAS = 6


def _random_layout(ch: Any, name: Any) -> None:
    x, inner = name("rnd"), name("inner")
    ch.exchange_declare(x, "x-random")
    ch.exchange_declare(inner, "fanout")
    for q in PROBABILITIES:
        ch.queue_declare(name(q))
    ch.queue_bind(name("q1"), x, "a")
    ch.queue_bind(name("q1"), x, "b")
    ch.queue_bind(name("q2"), x, "")
    ch.queue_bind(name("q3"), x, "c")
    ch.exchange_bind(inner, x, "d")
    ch.queue_bind(name("q4"), inner)


def check_counts(counts: dict[str, int], who: str) -> None:
    assert sum(counts.values()) == MESSAGES, f"{who}: every message in exactly one queue"
    for q, p in PROBABILITIES.items():
        mean, sd = MESSAGES * p, math.sqrt(MESSAGES * p * (1 - p))
        assert abs(counts[q] - mean) <= SIGMAS * sd, (
            f"{who}: {q} got {counts[q]} of {MESSAGES} messages, expected {mean:.0f} +- "
            f"{SIGMAS * sd:.0f}: {counts}")


def embroker_counts(seed: int | None = None) -> dict[str, int]:
    broker = Broker(plugins=["rabbitmq_random_exchange"])
    if seed is not None:
        broker.plugins.random.seed(seed)
    ch = broker.connect().channel()
    _random_layout(ch, lambda n: n)
    for i in range(MESSAGES):
        ch.basic_publish("rnd", "any", str(i).encode())
    return {q: broker.queues[q].message_count for q in PROBABILITIES}


def test_random_exchange_distribution_on_embroker() -> None:
    """Uniform over the destinations (a queue bound twice twice as likely), and the same counts
    on every run: the draws come from ``broker.plugins.random``, seeded."""
    counts = embroker_counts()
    check_counts(counts, "embroker")
    assert embroker_counts() == counts, "the default seed gives the same draws every time"
    other = embroker_counts(seed=12345)
    check_counts(other, "embroker, seed 12345")
    assert other != counts
    assert embroker_counts(seed=12345) == other


@pytest.mark.differential
def test_random_exchange_distribution_on_rabbitmq(reference_url: str) -> None:
    """RabbitMQ's x-random over the same destinations: its counts within 6 standard deviations
    of their means (a chance failure below 1e-8), as embroker's are."""
    import secrets

    import pika

    token = f"rnd{secrets.token_hex(4)}-"

    def name(base: str) -> str:
        return token + base

    conn = pika.BlockingConnection(pika.URLParameters(reference_url))
    try:
        ch = conn.channel()
        _random_layout(ch, name)
        for i in range(MESSAGES):
            ch.basic_publish(name("rnd"), "any", str(i).encode())
        # queue.purge is ordered after the channel's publishes: its count is exact.
        counts = {q: ch.queue_purge(name(q)).method.message_count for q in PROBABILITIES}
        for q in PROBABILITIES:
            ch.queue_delete(name(q))
        ch.exchange_delete(name("rnd"))
        ch.exchange_delete(name("inner"))
    finally:
        conn.close()
    check_counts(counts, "RabbitMQ")
    check_counts(embroker_counts(), "embroker")
