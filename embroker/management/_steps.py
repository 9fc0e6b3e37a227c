"""Answers worked out in steps, so that no request holds the listener's thread for long.

Theory of operation
-------------------
Every request of the management API runs on the listener's one thread, which the AMQP clients
share: a request that works for 200 ms delays every AMQP client by 200 ms. So a handler whose
work grows with what the broker holds (a listing of every queue, a definitions export, a
filter or a sort over thousands of rows) is a generator: it does its work in steps of at most
about :data:`STEP_SECONDS` each, ``yield``\\s between them, and ``return``\\s its answer. The
HTTP connection asks for one step per turn of the listener's loop (:class:`Pending`), so the
AMQP clients' bytes are read and answered between two steps; a handler's steps take the
broker's lock each for itself, never across a ``yield``.

:func:`each` is the one way to do work in steps: it calls a function on every item of a
sequence, yielding whenever a step has run for :data:`STEP_SECONDS`; :func:`sort` sorts in
steps (runs of :data:`RUN` sorted by C, merged in steps); :func:`encode` writes a list's JSON
in steps. A handler that is no generator answers at once (its work is small whatever the broker
holds).

What stays indivisible, and so bounds a step from below: one item's work (a queue's snapshot,
one row's JSON), a C sort of :data:`RUN` rows, and the final join of the JSON text (about
1 ms per 4 MB here).
"""

from __future__ import annotations

import heapq
import itertools
import json
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Final, TypeVar

from .._untrusted import json_bytes

__all__ = ["RUN", "STEP_SECONDS", "Steps", "array_parts", "document", "dumps", "each", "encode",
           "locked", "sort"]

#: How long one step of a request may hold the listener's thread (seconds).
STEP_SECONDS: Final = 0.001
#: How many rows one step sorts (C's sort: about 0.3 ms for 2,000 rows of a key tuple here).
RUN: Final = 2000

_T = TypeVar("_T")
_U = TypeVar("_U")
#: A handler's work in steps: yields between steps, returns its result.
Steps = Generator[None, None, _T]


def each(items: Iterable[_T], work: Callable[[_T], _U],
         lock: AbstractContextManager[object] | None = None) -> Steps[list[_U]]:
    """``[work(item) for item in items]`` in steps (under ``lock`` during each step)."""
    out: list[_U] = []
    append = out.append
    source = iter(items)
    clock = time.perf_counter
    while True:
        with lock if lock is not None else nullcontext():
            deadline = clock() + STEP_SECONDS
            for item in source:  # (the clock after every item: one may cost milliseconds,
                append(work(item))  # a regular expression near its size limit, say)
                if clock() > deadline:
                    break
            else:
                return out  # (all done within this step: no yield)
        yield


def sort(items: list[_T], key: Callable[[_T], Any], *, reverse: bool = False,
         lock: AbstractContextManager[object] | None = None) -> Steps[list[_T]]:
    """``sorted(items, key=key, reverse=reverse)`` in steps: the keys in steps (under
    ``lock``), runs of :data:`RUN` sorted one a step, then merged in steps (stable, as
    ``sorted``)."""
    sign = -1 if reverse else 1  # (equal keys keep their order either way, as sorted's)
    keyed = yield from each(range(len(items)), lambda i: (key(items[i]), sign * i), lock)
    runs = []
    for start in range(0, len(keyed), RUN):
        runs.append(sorted(keyed[start:start + RUN], reverse=reverse))
        yield
    if len(runs) <= 1:
        return [items[sign * i] for _key, i in (runs[0] if runs else [])]
    merged = heapq.merge(*runs, reverse=reverse)
    return (yield from each(merged, lambda pair: items[sign * pair[1]]))


def encode(rows: Sequence[Any], to_json: Callable[[Any], str] | None = None,
           lock: AbstractContextManager[object] | None = None) -> Steps[list[bytes]]:
    """The JSON text of the list ``rows`` (each row's by ``to_json``, else ``json.dumps``;
    under ``lock``), in steps. (Each row's bytes are made in its step, by
    :func:`~embroker._untrusted.json_bytes`: the last step only joins bytes, a copy, where
    joining text and encoding it took 16 ms for 9 MB here.)"""
    dump = to_json or dumps
    parts = yield from each(rows, lambda row: json_bytes(dump(row)), lock)
    return array_parts(parts)


def array_parts(parts: list[bytes]) -> list[bytes]:
    """The JSON array of elements whose JSON texts are ``parts``, as pieces to send in turn
    (never joined whole: a 9 MB join took 3-8 ms of the loop here)."""
    if not parts:
        return [b"[]"]
    out = [b"[", parts[0]]
    for part in itertools.islice(parts, 1, None):
        out.append(b",")
        out.append(part)
    out.append(b"]")
    return out


def dumps(value: Any) -> str:
    """``value``'s JSON text, as the API writes it (to bytes with
    :func:`~embroker._untrusted.json_bytes`, which writes what a client chose and is no UTF-8
    as RabbitMQ does)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def locked(work: Steps[_T], lock: AbstractContextManager[object]) -> Steps[_T]:
    """``work`` (a model generator that yields between its own steps, counted, not timed),
    each of its steps under ``lock``, as many as fit in :data:`STEP_SECONDS` before a
    yield."""
    clock = time.perf_counter
    while True:
        with lock:
            deadline = clock() + STEP_SECONDS
            try:
                next(work)  # (one at least, however short the steps)
                while clock() < deadline:
                    next(work)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
        yield


def document(value: dict[str, Any]) -> Steps[bytes]:
    """The JSON text of an object whose lists may be long (a definitions document): each
    list written in steps (:func:`encode`)."""
    parts = []
    for key, item in value.items():
        text = b"".join((yield from encode(item))) if isinstance(item, list) else \
            json_bytes(dumps(item))
        parts.append(json_bytes(dumps(key)) + b":" + text)
    return b"{" + b",".join(parts) + b"}"
