"""Assertions for tests of applications that use RabbitMQ, over an embroker :class:`~embroker.Broker`.

Plain functions over a broker, usable with any test runner (the pytest plugin ``pytest-embroker``
only adds fixtures around them)::

    from embroker import Broker
    from embroker.testing import assert_published, assert_routed, published, queue_messages

    broker = Broker()
    ...                                            # the application publishes
    assert_published(broker, exchange="events", routing_key="order.*", count=1)
    assert_routed(broker, routing_key="order.created", queues=["audit"])
    published(broker, exchange="events").last.body # b'{"id": 1}'
    queue_messages(broker, "audit")                # what the queue holds, without consuming it

Every ``assert_*`` helper raises :class:`AssertionError` saying how many routing decisions
matched, and lists the *similar* ones (same exchange, a routing key that differs by a word...) with
their :meth:`~embroker.RoutingDecision.explain`, so a failing test shows which bindings existed
and why none matched: ``0 matching, 2 similar: ...``.

Routing-key patterns use AMQP topic syntax: ``*`` stands for one word, ``#`` for zero or more
(``"order.*"``, ``"audit.#"``); a compiled :class:`re.Pattern` must match the whole key.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, Union, cast, final, overload
from urllib.parse import quote

from . import _settle, model
from ._settle import SettleTimeout
from .errors import DefinitionsError
from .model import Clock, HeldMessage, ManualClock, Message, MessageEvent, Outcome, RoutingDecision
from .model._exchange import topic_matches
from .model._history import events_of

if TYPE_CHECKING:
    from . import _broker
    from ._reference import ReferenceBroker
    from .model import Broker
    from .server import Server

__all__ = [
    "UNSET", "AnyBroker", "CallList", "Expectation", "Expectations", "NeedsEmbroker", "SettleTimeout",
    "advance", "assert_dead_lettered", "assert_no_leaks", "assert_published", "assert_returned",
    "assert_routed", "assert_routes", "assert_unroutable", "async_wait_until", "check_server",
    "held_messages", "history", "key_matches", "leaks", "make_broker", "published",
    "queue_messages", "route",
    "settle", "url_as", "wait_until", "wait_until_drained",
]

T = TypeVar("T")

#: An embroker broker, or a reference RabbitMQ seen through
#: :class:`~embroker._reference.ReferenceBroker` (``--embroker-reference``).
AnyBroker = Union["Broker", "ReferenceBroker"]
#: A predicate on a routing decision (``where=``).
Predicate = Callable[[RoutingDecision], object]


class NeedsEmbroker(Exception):
    """A helper that needs embroker's internals (its routing model, the virtual clock, a
    message's history) was called on a reference RabbitMQ. The pytest plugin turns it into a
    skip with this reason."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what}: needs embroker's internals, not available with the "
                         "reference RabbitMQ")

#: How many similar decisions a failure message shows (the most recent ones).
SHOWN = 5

KeyPattern = str | re.Pattern[str]


@final
class CallList(list[RoutingDecision]):
    """The routing decisions that matched a query, oldest first (a list, like respx's CallList).

    >>> from embroker import Broker
    >>> broker = Broker()
    >>> broker.connect().channel().basic_publish("amq.topic", "a.b", b"x")
    >>> calls = published(broker, exchange="amq.topic")
    >>> calls.called, calls.call_count, calls.last.routing_key
    (True, 1, 'a.b')
    """

    @property
    def called(self) -> bool:
        """Whether anything matched."""
        return bool(self)

    @property
    def call_count(self) -> int:
        """How many decisions matched."""
        return len(self)

    @property
    def last(self) -> RoutingDecision:
        """The most recent matching decision.

        Raises:
            IndexError: nothing matched.
        """
        if not self:
            raise IndexError("no routing decision matched")
        return self[-1]

    @property
    def messages(self) -> list[Message]:
        """The matching messages (as routed)."""
        return [d.message for d in self]

    @property
    def bodies(self) -> list[bytes]:
        return [d.body for d in self]

    def __repr__(self) -> str:
        return f"<CallList {len(self)} decision(s){': ' if self else ''}{list.__repr__(self)}>"


# -- matching -----------------------------------------------------------------------------------

def key_matches(pattern: KeyPattern, key: str) -> bool:
    """Whether ``key`` matches ``pattern``: topic syntax as a topic exchange matches it (``*``
    one word, ``#`` zero or more), or a compiled regular expression matching the whole key.

    >>> key_matches("order.*", "order.created"), key_matches("order.*", "order.a.b")
    (True, False)
    >>> key_matches("#.created", "created"), key_matches("a.#.b", "a.x.y.b")
    (True, True)
    """
    if isinstance(pattern, re.Pattern):
        return pattern.fullmatch(key) is not None
    return topic_matches(pattern, key)


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<unset>"


#: The default of ``json=``: not matching on JSON (``None`` is the JSON ``null``).
UNSET: Any = _Unset()


def _json_body(decision: RoutingDecision) -> Any:
    try:
        return json.loads(decision.body)
    except ValueError:
        return UNSET


def _header_matches(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    for key, want in expected.items():
        if key not in actual:
            return False
        value = actual[key]
        if callable(want) and not isinstance(want, type):
            if not want(value):
                return False
        elif value != want:
            return False
    return True


def _criteria(exchange: str | None, routing_key: KeyPattern | None, vhost: str | None,
              body: bytes | str | None, headers: Mapping[str, Any] | None,
              json_: Any = UNSET, where: Predicate | None = None,
              ) -> dict[str, Callable[[RoutingDecision], bool]]:
    checks: dict[str, Callable[[RoutingDecision], bool]] = {}
    if exchange is not None:
        checks[f"exchange={exchange!r}"] = lambda d: d.exchange == exchange
    if routing_key is not None:
        shown = routing_key.pattern if isinstance(routing_key, re.Pattern) else routing_key
        checks[f"routing_key={shown!r}"] = lambda d: any(key_matches(routing_key, k)
                                                         for k in d.keys)
    if vhost is not None:
        checks[f"vhost={vhost!r}"] = lambda d: d.vhost == vhost
    if body is not None:
        raw = body.encode() if isinstance(body, str) else body
        checks[f"body={raw!r}"] = lambda d: d.body == raw
    if json_ is not UNSET:
        checks[f"json={json_!r}"] = lambda d: _json_body(d) == json_
    if headers is not None:
        shown_headers = {k: (getattr(v, "__name__", "<predicate>") if callable(v)
                             and not isinstance(v, type) else v) for k, v in headers.items()}
        checks[f"headers⊇{shown_headers!r}"] = lambda d: _header_matches(headers, d.headers)
    if where is not None:
        checks[f"where={getattr(where, '__name__', 'predicate')}"] = lambda d: bool(where(d))
    return checks


def _decisions(broker: AnyBroker, dead_letters: bool | None = False) -> list[RoutingDecision]:
    if not isinstance(broker, model.Broker) and dead_letters is not False:
        broker.scan_dead_letters()
    # A snapshot (under the broker's lock for an embroker broker; decisions read from RabbitMQ's
    # firehose for a reference one, which have the same attributes).
    found = cast("list[RoutingDecision]", list(broker.trace))
    if dead_letters is None:
        return found
    # A delayed message let go by its exchange is not a publish (its decision's ``released``).
    return [d for d in found if (d.dead_letter is not None) == dead_letters
            and getattr(d, "released", None) is None]


def _similar(decision: RoutingDecision, checks: Mapping[str, Callable[[RoutingDecision], bool]],
             exchange: str | None, routing_key: KeyPattern | None) -> bool:
    if not checks:
        return True
    if any(check(decision) for check in checks.values()):
        return True
    if isinstance(routing_key, str):
        return difflib.SequenceMatcher(None, routing_key, decision.routing_key).ratio() >= 0.6
    return exchange is not None and decision.exchange.startswith(exchange[:3])


def _explained(decision: RoutingDecision) -> list[str]:
    try:
        return decision.explain().splitlines()
    except NeedsEmbroker:
        return [f"routed to {list(decision.queues)}" if decision.queues else decision.outcome]


def _report(headline: str, broker: AnyBroker, candidates: list[RoutingDecision],
            checks: Mapping[str, Callable[[RoutingDecision], bool]], exchange: str | None,
            routing_key: KeyPattern | None, dead_letters: bool | None = False) -> str:
    """The failure message: the headline, then similar decisions (or the most recent ones)
    with what differs and their explanation."""
    pool = _decisions(broker, dead_letters)
    similar = [d for d in pool if _similar(d, checks, exchange, routing_key)]
    lines = [headline]
    matching = len(candidates)
    if similar:
        lines[0] += f" ({matching} matching, {len(similar)} similar"
        lines[0] += f"; the last {SHOWN} shown)" if len(similar) > SHOWN else ")"
        shown = similar[-SHOWN:]
    else:
        lines[0] += f" ({matching} matching, 0 similar among {len(pool)} routing decision(s))"
        shown = pool[-SHOWN:]
        if shown:
            lines.append(f"The most recent of {len(pool)} routing decision(s):")
    if not pool:
        lines.append("No message was published to this broker.")
    for decision in shown:
        differs = [name for name, check in checks.items() if not check(decision)]
        lines.append("")
        lines.append(f"- {decision!r}" + (f"  (differs in {', '.join(differs)})"
                                          if differs else ""))
        lines.extend("  " + line for line in _explained(decision))
    return "\n".join(lines)


def _describe(checks: Mapping[str, Any]) -> str:
    return " ".join(checks) if checks else "(any)"


# -- queries ------------------------------------------------------------------------------------

def published(broker: AnyBroker, *, exchange: str | None = None,
              routing_key: KeyPattern | None = None, vhost: str | None = None,
              body: bytes | str | None = None, json: Any = UNSET,
              headers: Mapping[str, Any] | None = None, where: Predicate | None = None,
              outcome: Outcome | None = None, dead_letters: bool | None = False) -> CallList:
    """The publishes that match, oldest first, from ``broker.trace``.

    Args:
        exchange: the exchange published to (``""`` is the default exchange).
        routing_key: a routing key or topic pattern (``"order.*"``), or a compiled regex;
            CC/BCC keys count too.
        vhost: the virtual host.
        body: the exact body (a str is taken as UTF-8).
        json: the body parsed as JSON equals this (``{"order": 1}`` matches ``b'{"order":1}'``).
        headers: headers the message must have (with these values; others may be there too);
            a value may be a predicate (``{"attempt": lambda n: n > 1}``).
        where: a predicate on the :class:`~embroker.RoutingDecision`.
        outcome: ``"routed"``, ``"unroutable"``, ``"returned"``, ``"overflow"`` or
            ``"refused"``.
        dead_letters: ``False`` (default) for publishes by clients, ``True`` for the broker's
            dead-letter republishes only, ``None`` for both.
    """
    checks = _criteria(exchange, routing_key, vhost, body, headers, json, where)
    if outcome is not None:
        checks[f"outcome={outcome!r}"] = lambda d: d.outcome == outcome
    return CallList(d for d in _decisions(broker, dead_letters)
                    if all(check(d) for check in checks.values()))


def queue_messages(broker: AnyBroker, queue: str, *, vhost: str = "/") -> list[Message]:
    """The ready messages of ``queue`` in delivery order, without consuming them.

    Raises:
        AssertionError: there is no such queue (the message lists the queues there are).
    """
    __tracebackhide__ = True
    if not isinstance(broker, model.Broker):
        return broker.queue_messages(queue, vhost=vhost)
    with broker.locked():
        host = broker.vhosts.get(vhost)
        if host is None:
            raise AssertionError(f"no vhost {vhost!r}; the vhosts are {sorted(broker.vhosts)}")
        found = host.queues.get(queue)
        if found is None:
            raise AssertionError(f"no queue {queue!r} in vhost {vhost!r}; the queues are "
                                 f"{sorted(host.queues)}")
        return found.messages


def route(broker: AnyBroker, exchange: str, routing_key: str, *,
          headers: Mapping[str, Any] | None = None, vhost: str = "/") -> RoutingDecision:
    """Where a message published now to ``exchange`` with ``routing_key`` would go, without
    publishing it (nothing is enqueued and the trace is unchanged). For topology checks. The
    plugins' exchanges act on nothing: a delayed-message exchange routes the message as if its
    delay had run out (nothing is held), a recent-history exchange keeps nothing (an ``x-random``
    exchange still draws from ``broker.plugins.random``).

    Raises:
        NotFound: (404) no such exchange; AccessRefused: (403) it is internal.
        NeedsEmbroker: ``broker`` is a reference RabbitMQ (it cannot route without publishing).
    """
    if not isinstance(broker, model.Broker):
        if vhost != "/":
            raise NeedsEmbroker(f"vhost {vhost!r}: each test has one vhost of the reference")
        return cast("RoutingDecision", broker.route_many(exchange, [(routing_key, headers)])[0])
    properties: dict[str, Any] = {"headers": dict(headers)} if headers else {}
    with broker.locked():
        trace = broker.trace
        host = broker.vhost(vhost)
        try:
            host.route(exchange, Message(exchange, routing_key, properties, b""), dry_run=True)
        finally:
            decision = trace.pop()  # holds no body bytes: the trace's accounting is unchanged
    return decision


def history(broker: AnyBroker, message: Message) -> list[MessageEvent]:
    """What happened to ``message`` (from :func:`queue_messages`, or a delivery's ``.message``
    in-process) since it was routed; see :meth:`embroker.RoutingDecision.history`."""
    if not isinstance(broker, model.Broker):
        raise NeedsEmbroker("a message's history is recorded by embroker's model")
    with broker.locked():
        return events_of(message.history)


# -- assertions ---------------------------------------------------------------------------------

def assert_published(broker: AnyBroker, *, exchange: str | None = None,
                     routing_key: KeyPattern | None = None, count: int | None = None,
                     vhost: str | None = None, body: bytes | str | None = None,
                     json: Any = UNSET, headers: Mapping[str, Any] | None = None,
                     where: Predicate | None = None) -> CallList:
    """Assert that messages matching the arguments (as :func:`published` takes them) were
    published: ``count`` of them, or at least one when ``count`` is ``None``. Returns the
    matching decisions.

    Raises:
        AssertionError: with the similar publishes and their routing explanations.
    """
    __tracebackhide__ = True
    found = published(broker, exchange=exchange, routing_key=routing_key, vhost=vhost,
                      body=body, json=json, headers=headers, where=where)
    if (count is None and found) or len(found) == count:
        return found
    checks = _criteria(exchange, routing_key, vhost, body, headers, json, where)
    want = "at least one" if count is None else str(count)
    raise AssertionError(_report(
        f"expected {want} publish(es) with {_describe(checks)}, found {len(found)}",
        broker, found, checks, exchange, routing_key))


def assert_routed(broker: AnyBroker, *, queues: Iterable[str], exchange: str | None = None,
                  routing_key: KeyPattern | None = None, vhost: str | None = None,
                  body: bytes | str | None = None, json: Any = UNSET,
                  headers: Mapping[str, Any] | None = None, where: Predicate | None = None,
                  exact: bool = True) -> RoutingDecision:
    """Assert that a matching publish reached exactly ``queues`` (any order), or at least those
    when ``exact`` is false. Returns the most recent such decision. A queue that refused the
    message (full) did not take it (see :attr:`~embroker.RoutingDecision.refused`).

    Raises:
        AssertionError: with the matching and similar publishes and why they went elsewhere.
    """
    __tracebackhide__ = True
    wanted = set(queues)
    candidates = published(broker, exchange=exchange, routing_key=routing_key, vhost=vhost,
                           body=body, json=json, headers=headers, where=where)
    for decision in reversed(candidates):
        reached = set(decision.queues)
        if reached == wanted or (not exact and wanted <= reached):
            return decision
    checks = _criteria(exchange, routing_key, vhost, body, headers, json, where)
    how = "exactly" if exact else "at least"
    headline = (f"expected a publish with {_describe(checks)} routed to {how} "
                f"{sorted(wanted)}, but none was")
    report = _report(headline, broker, candidates, checks, exchange, routing_key)
    if candidates:  # how the last publish that matched differs in its queues
        first, _, rest = report.partition("\n")
        report = "\n".join([first, *_queue_difference(broker, candidates[-1], wanted, exact),
                            *([rest] if rest else [])])
    raise AssertionError(report)


def _queue_difference(broker: AnyBroker, decision: RoutingDecision, wanted: set[str],
                      exact: bool) -> list[str]:
    """What the last matching publish did with the queues asked for: those it did not reach,
    whether they exist (and the name meant when one does not), and those it reached
    instead."""
    reached = set(decision.queues)
    lines = ["The last publish that matched:"]
    for name in sorted(wanted - reached):
        why = ""
        if isinstance(broker, model.Broker):
            with broker.locked():
                host = broker.vhosts.get(decision.vhost)
                if host is not None and name not in host.queues:
                    meant = host.suggest("queue", name)
                    why = (f" (there is no queue '{name}' in vhost '{decision.vhost}'"
                           + (f"; did you mean '{meant}'?)" if meant else ")"))
                elif host is not None:
                    why = " (the queue exists; no binding led the message there)"
        lines.append(f"  expected, not reached: '{name}'{why}")
    extra = sorted(reached - wanted)
    if extra and exact:
        lines.append("  reached instead: " + ", ".join(f"'{q}'" for q in extra))
    elif not reached:
        lines.append("  reached no queue")
    return lines


def _assert_outcome(broker: AnyBroker, outcomes: tuple[Outcome, ...], what: str, exchange: str | None,
                    routing_key: KeyPattern | None, vhost: str | None) -> RoutingDecision:
    __tracebackhide__ = True
    candidates = published(broker, exchange=exchange, routing_key=routing_key, vhost=vhost)
    for decision in reversed(candidates):
        if decision.outcome in outcomes:
            return decision
    checks = _criteria(exchange, routing_key, vhost, None, None)
    raise AssertionError(_report(f"expected a publish with {_describe(checks)} to be {what}",
                                 broker, candidates, checks, exchange, routing_key))


def assert_unroutable(broker: AnyBroker, *, exchange: str | None = None,
                      routing_key: KeyPattern | None = None,
                      vhost: str | None = None) -> RoutingDecision:
    """Assert that a matching publish reached no queue (dropped, or returned if mandatory)."""
    __tracebackhide__ = True
    return _assert_outcome(broker, ("unroutable", "returned"), "unroutable (reach no queue)",
                           exchange, routing_key, vhost)


def assert_returned(broker: AnyBroker, *, exchange: str | None = None,
                    routing_key: KeyPattern | None = None,
                    vhost: str | None = None) -> RoutingDecision:
    """Assert that a matching mandatory publish reached no queue and went back to its
    publisher (basic.return)."""
    __tracebackhide__ = True
    if not isinstance(broker, model.Broker):
        raise NeedsEmbroker("whether a publish was mandatory is not in RabbitMQ's firehose")
    return _assert_outcome(broker, ("returned",), "returned to its publisher (mandatory, "
                           "reached no queue)", exchange, routing_key, vhost)


def assert_dead_lettered(broker: AnyBroker, *, queue: str | None = None, reason: str | None = None,
                         routing_key: KeyPattern | None = None, to: Iterable[str] | None = None,
                         vhost: str | None = None) -> RoutingDecision:
    """Assert that a message was dead-lettered: from ``queue``, for ``reason`` (``"rejected"``,
    ``"expired"``, ``"maxlen"``), with ``routing_key`` (the original message's key, or the
    queue's ``x-dead-letter-routing-key``), reaching exactly the queues ``to``.
    Returns the most recent such dead-letter decision."""
    __tracebackhide__ = True
    checks = _criteria(None, routing_key, vhost, None, None)
    if queue is not None:
        checks[f"queue={queue!r}"] = lambda d: d.dead_letter is not None and d.dead_letter[0] == queue
    if reason is not None:
        checks[f"reason={reason!r}"] = lambda d: d.dead_letter is not None and d.dead_letter[1] == reason
    destinations = set(to) if to is not None else None
    if destinations is not None:
        checks[f"to={sorted(destinations)!r}"] = lambda d: set(d.queues) == destinations
    dead = _decisions(broker, dead_letters=True)
    candidates = [d for d in dead if all(check(d) for check in checks.values())]
    if candidates:
        return candidates[-1]
    expected = " ".join(part for part in (
        f"from queue {queue!r}" if queue is not None else "",
        f"for {reason!r}" if reason is not None else "",
        f"with routing key {routing_key!r}" if routing_key is not None else "",
        f"reaching exactly {sorted(destinations)!r}" if destinations is not None else "",
        f"in vhost {vhost!r}" if vhost is not None else "") if part)
    raise AssertionError(_dead_letter_report(
        f"expected a message dead-lettered {expected}".rstrip(), broker, dead, checks, queue))


def _dead_letter_report(headline: str, broker: AnyBroker, dead: list[RoutingDecision],
                        checks: Mapping[str, Callable[[RoutingDecision], bool]],
                        queue: str | None) -> str:
    """assert_dead_lettered's failure: that nothing was dead-lettered (and what reached the
    queue meant: where its messages are now), or what was, from which queue, why and where
    to, and in what it differs from what was expected."""
    if not dead:
        pool = _decisions(broker, dead_letters=False)
        lines = [f"{headline}, and nothing was dead-lettered ({len(pool)} routing decision(s), "
                 "none a dead-letter)"]
        reached = [d for d in pool if queue in d.queues] if queue is not None else []
        shown = (reached or pool)[-SHOWN:]
        if reached:
            lines.append(f"What reached queue {queue!r}:")
        elif shown:
            lines.append(f"The most recent of {len(pool)} routing decision(s):")
        for decision in shown:
            lines.extend(["", f"- {decision!r}"])
            lines.extend("  " + line for line in _explained(decision))
        return "\n".join(lines)
    lines = [f"{headline} (0 matching among {len(dead)} dead-lettered message(s)"
             + (f"; the last {SHOWN} shown)" if len(dead) > SHOWN else ")")]
    for decision in dead[-SHOWN:]:
        assert decision.dead_letter is not None
        source, why = decision.dead_letter[0], decision.dead_letter[1]
        differs = [name.split("=", 1)[0] for name, check in checks.items() if not check(decision)]
        lines.extend(["", f"- dead-lettered from queue {source!r} ({why}) to "
                          f"{sorted(decision.queues)}: {decision!r}"
                          + (f"  (differs in {', '.join(differs)})" if differs else "")])
        lines.extend("  " + line for line in _explained(decision))
    return "\n".join(lines)


def assert_routes(broker: AnyBroker, exchange: str, expected: Mapping[str, Iterable[str]], *,
                  vhost: str = "/") -> None:
    """Assert that each routing key in ``expected`` would reach exactly its queues when published
    to ``exchange`` now (see :func:`route`; nothing is published). For topology checks::

        assert_routes(broker, "events", {"order.created": ["audit", "billing"],
                                         "user.deleted": []})

    On a reference RabbitMQ the keys are published as probes in a scratch copy of the test's
    vhost (nothing reaches its queues).

    Raises:
        AssertionError: listing every key that goes elsewhere, with the explanation.
    """
    __tracebackhide__ = True
    wrong: list[str] = []
    if isinstance(broker, model.Broker):
        decisions = [route(broker, exchange, key, vhost=vhost) for key in expected]
    elif vhost != "/":
        raise NeedsEmbroker(f"vhost {vhost!r}: each test has one vhost of the reference")
    else:
        decisions = cast("list[RoutingDecision]",
                         broker.route_many(exchange, [(key, None) for key in expected]))
    for (key, queues), decision in zip(expected.items(), decisions, strict=True):
        if set(decision.queues) != set(queues):
            wrong.append(f"- routing key {key!r}: expected {sorted(set(queues))}, "
                         f"reaches {sorted(decision.queues)}")
            wrong.extend("  " + line for line in _explained(decision))
    if wrong:
        raise AssertionError(f"{sum(1 for w in wrong if w.startswith('- '))} of {len(expected)} "
                             f"routing key(s) of exchange {exchange!r} go elsewhere:\n"
                             + "\n".join(wrong))


# -- strict expectations (respx-like) ------------------------------------------------------------

@final
class Expectation:
    """One expected kind of publish (see :class:`Expectations`): its criteria, how many times,
    and the publishes it covered."""

    def __init__(self, checks: dict[str, Callable[[RoutingDecision], bool]],
                 count: int | None) -> None:
        self.checks = checks
        self.count = count
        #: The publishes it covered, oldest first.
        self.calls = CallList()

    def matches(self, decision: RoutingDecision) -> bool:
        return all(check(decision) for check in self.checks.values())

    @property
    def met(self) -> bool:
        return bool(self.calls) if self.count is None else len(self.calls) == self.count

    def __repr__(self) -> str:
        want = "at least once" if self.count is None else f"{self.count} time(s)"
        return f"<Expectation {_describe(self.checks)} {want}, seen {len(self.calls)}>"


@final
class Expectations:
    """Strict expectations over what is published, in the manner of respx's strict router: each
    :meth:`expect` says what may be published (and how many times); on leaving the ``with``
    block (or at :meth:`verify`) it fails if an expectation was not met, if something was
    published that no expectation covers (unless ``allow_unexpected``), or, with ``ordered``,
    if the expectations were first met in another order::

        with Expectations(broker, ordered=True) as expect:
            expect.published(exchange="orders", routing_key="order.created", json={"id": 7})
            expect.published(exchange="audit", count=1)
            place_order(7)                               # the code under test

    Only publishes made after the block starts count; the broker's own dead-letter republishes
    count only with ``dead_letters=True``.
    """

    def __init__(self, broker: AnyBroker, *, ordered: bool = False,
                 allow_unexpected: bool = False, dead_letters: bool = False) -> None:
        self.broker = broker
        self.ordered = ordered
        self.allow_unexpected = allow_unexpected
        self.dead_letters = dead_letters
        self.expectations: list[Expectation] = []
        self._start = _trace_position(broker)

    def published(self, *, exchange: str | None = None, routing_key: KeyPattern | None = None,
                  vhost: str | None = None, body: bytes | str | None = None, json: Any = UNSET,
                  headers: Mapping[str, Any] | None = None, where: Predicate | None = None,
                  queues: Iterable[str] | None = None, outcome: Outcome | None = None,
                  count: int | None = None) -> Expectation:
        """Expect publishes matching these criteria (as :func:`published` takes them; ``queues``:
        exactly the queues it must reach): ``count`` of them, or at least one."""
        checks = _criteria(exchange, routing_key, vhost, body, headers, json, where)
        if queues is not None:
            wanted = set(queues)
            checks[f"queues={sorted(wanted)!r}"] = lambda d: set(d.queues) == wanted
        if outcome is not None:
            checks[f"outcome={outcome!r}"] = lambda d: d.outcome == outcome
        expectation = Expectation(checks, count)
        self.expectations.append(expectation)
        return expectation

    expect = published

    def __enter__(self) -> Expectations:
        self._start = _trace_position(self.broker)
        return self

    def __exit__(self, exc_type: object, *exc_info: object) -> None:
        __tracebackhide__ = True
        if exc_type is None:
            self.verify()

    def _new_decisions(self) -> list[RoutingDecision]:
        decisions, lost = _since(self.broker, self._start)
        if lost:
            raise AssertionError(f"{lost} publish(es) made since the expectations began have "
                                 "left the trace (raise trace_limit): cannot check them")
        return [d for d in decisions if self.dead_letters or d.dead_letter is None]

    def verify(self) -> None:
        """Check the expectations against what was published since they began.

        Raises:
            AssertionError: an expectation unmet, a publish nobody expected, or the order.
        """
        __tracebackhide__ = True
        for expectation in self.expectations:
            expectation.calls = CallList()
        unexpected: list[RoutingDecision] = []
        first: dict[int, int] = {}
        for index, decision in enumerate(self._new_decisions()):
            covered = False
            for number, expectation in enumerate(self.expectations):
                if expectation.matches(decision):
                    expectation.calls.append(decision)
                    first.setdefault(number, index)
                    covered = True
            if not covered:
                unexpected.append(decision)
        problems = []
        for expectation in self.expectations:
            if not expectation.met:
                want = "at least once" if expectation.count is None else \
                    f"{expectation.count} time(s)"
                problems.append(f"- expected {want}, seen {len(expectation.calls)}: "
                                f"{_describe(expectation.checks)}")
        if unexpected and not self.allow_unexpected:
            problems.append(f"- {len(unexpected)} publish(es) no expectation covers:")
            for decision in unexpected[-SHOWN:]:
                problems.append(f"    {decision!r}")
                problems.extend(f"      {line}" for line in _explained(decision))
        if self.ordered:
            seen = [number for number in range(len(self.expectations)) if number in first]
            by_time = sorted(seen, key=lambda number: first[number])
            if by_time != seen:
                problems.append("- the expectations were first met in another order: " + ", ".join(
                    _describe(self.expectations[n].checks) for n in by_time))
        if problems:
            count = sum(1 for line in problems if line.startswith("- "))
            raise AssertionError(f"{count} problem(s) with the expected publishes:\n"
                                 + "\n".join(problems))


def _trace_position(broker: AnyBroker) -> int:
    """How many decisions the broker has recorded so far (a bookmark in its trace)."""
    if isinstance(broker, model.Broker):
        return broker.trace.total
    return len(broker.trace)


def _since(broker: AnyBroker, start: int) -> tuple[list[RoutingDecision], int]:
    """The decisions recorded since bookmark ``start``, and how many of them the trace let go."""
    if isinstance(broker, model.Broker):
        with broker.locked():
            total = broker.trace.total
            decisions = broker.trace.snapshot()
        new = total - start
        kept = decisions[-new:] if new else []
        return kept, new - len(kept)
    return cast("list[RoutingDecision]", list(broker.trace)[start:]), 0


# -- strict mode: what a test left behind ---------------------------------------------------------

IN_PROCESS_PRODUCT = "embroker in-process client"


def leaks(broker: Broker, *, unroutable: bool = False, settle_timeout: float = 1.0) -> list[str]:
    """What a test left behind, in words (empty when nothing): client connections still open
    on a running listener, connections of a stopped listener that still hold consumers,
    unacknowledged deliveries, listener errors, and (with ``unroutable``) publishes that
    reached no queue. Settles the broker first (up to ``settle_timeout`` seconds)."""
    from .memory import MemoryLink
    from .server import Server

    problems = []
    try:
        settle(broker, settle_timeout)
    except SettleTimeout as exc:
        problems.append("the broker did not settle: " + "; ".join(exc.reasons))
    with broker.locked():
        servers = broker.transports.of(Server)
        live: set[int] = set()
        for server in servers:
            for carried in server.connections:
                model_connection = carried.model
                if model_connection is not None:
                    live.add(id(model_connection))
                if server.running and carried.is_open:
                    problems.append(f"client connection left open: {carried!r}")
            errors = server.errors  # the last 20, and a count of them all
            kept = list(errors)
            if errors.total > len(kept):
                problems.append(f"{errors.total - len(kept)} earlier listener error(s) not kept "
                                f"({errors.total} in all; the last {len(kept)} follow)")
            problems.extend(f"listener error: {type(e).__name__}: {e}" for e in kept)
        for link in broker.transports.of(MemoryLink):  # in-memory clients
            if link.conn.model is not None:
                live.add(id(link.conn.model))
            if not link.eof:
                problems.append(f"in-memory client connection left open: {link!r}")
        for connection in list(broker.connections.values()):
            in_process = connection.client_properties.get("product") == IN_PROCESS_PRODUCT
            consumers = [tag for ch in connection.channels.values() for tag in ch.consumers]
            if not in_process and id(connection) not in live and consumers:
                problems.append(f"{connection.name} has consumers {consumers} but no running "
                                "listener serves it")
            for channel in connection.channels.values():
                outstanding = channel.outstanding()
                if outstanding:
                    queues = sorted({item.queue.name for item in outstanding})
                    problems.append(f"{len(outstanding)} unacknowledged deliver(ies) on "
                                    f"{connection.name}, channel {channel.number} (from "
                                    f"{', '.join(repr(q) for q in queues)})")
        if unroutable:
            for decision in broker.trace.snapshot():
                if decision.outcome in ("unroutable", "returned"):
                    problems.append(f"unroutable publish: {decision!r}")
    return problems


def assert_no_leaks(broker: Broker, *, unroutable: bool = False) -> None:
    """Raise :class:`AssertionError` listing :func:`leaks` if there are any."""
    __tracebackhide__ = True
    problems = leaks(broker, unroutable=unroutable)
    if problems:
        raise AssertionError(f"the test left {len(problems)} thing(s) behind (strict mode):\n"
                             + "\n".join(f"- {p}" for p in problems))


# -- quiescence ---------------------------------------------------------------------------------

def settle(broker: AnyBroker, timeout: float = 5.0) -> None:
    """``broker.settle(timeout)`` for any broker: wait until nothing is in flight (on a
    reference RabbitMQ: until every publish it traced so far has been read).

    Raises:
        SettleTimeout: (an AssertionError) saying what was still busy.
    """
    __tracebackhide__ = True
    if isinstance(broker, model.Broker):
        _settle.settle(broker, timeout)
    else:
        broker.settle(timeout)


def wait_until_drained(broker: AnyBroker, queue: str, timeout: float = 5.0, *,
                       vhost: str = "/") -> None:
    """Wait until ``queue`` holds nothing ready and nothing unacknowledged (settling the broker
    between looks).

    Raises:
        SettleTimeout: saying what the queue still holds.
    """
    __tracebackhide__ = True
    if isinstance(broker, model.Broker):
        _settle.wait_until_drained(broker, queue, timeout, vhost=vhost)
    else:
        broker.wait_until_drained(queue, timeout, vhost=vhost)


# -- waiting ------------------------------------------------------------------------------------

def wait_until(predicate: Callable[[], T], timeout: float = 5.0, *, interval: float = 0.001,
               message: str | None = None) -> T:
    """Call ``predicate`` until it returns something true or stops raising AssertionError, and
    return that (for applications that consume in other threads). No fixed sleeps: it polls,
    backing off from ``interval`` to 50 ms.

    ``predicate`` may be an assertion helper: ``wait_until(lambda: assert_routed(...))``.

    Raises:
        AssertionError: ``timeout`` seconds passed; says what the predicate last said.
    """
    __tracebackhide__ = True
    deadline = time.monotonic() + timeout
    delay = interval
    while True:
        last_error: AssertionError | None = None
        try:
            result = predicate()
        except AssertionError as exc:
            last_error, result = exc, None
        if last_error is None and result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(_timeout_text(predicate, timeout, message, last_error, result))
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


@overload
async def async_wait_until(predicate: Callable[[], Awaitable[T]], timeout: float = 5.0, *,
                           interval: float = 0.001, message: str | None = None) -> T: ...


@overload
async def async_wait_until(predicate: Callable[[], T], timeout: float = 5.0, *,
                           interval: float = 0.001, message: str | None = None) -> T: ...


async def async_wait_until(predicate: Callable[[], Any], timeout: float = 5.0, *,
                           interval: float = 0.001, message: str | None = None) -> Any:
    """:func:`wait_until` for asyncio tests: yields to the event loop between tries, so the
    application's tasks run. ``predicate`` may be a coroutine function."""
    __tracebackhide__ = True
    deadline = time.monotonic() + timeout
    delay = interval
    while True:
        last_error: AssertionError | None = None
        result: Any = None
        try:
            result = predicate()
            if isinstance(result, Awaitable):
                result = await result
        except AssertionError as exc:
            last_error = exc
        if last_error is None and result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(_timeout_text(predicate, timeout, message, last_error, result))
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)


def _timeout_text(predicate: Callable[..., Any], timeout: float, message: str | None,
                  error: AssertionError | None, result: object) -> str:
    name = message or getattr(predicate, "__qualname__", repr(predicate))
    last = f"it last failed with:\n{error}" if error is not None else f"it last returned {result!r}"
    return f"condition {name} not met within {timeout}s; {last}"


# -- brokers for tests --------------------------------------------------------------------------

def make_broker(*, topology: str | os.PathLike[str] | Mapping[str, Any] | None = None,
                clock: bool | Clock | None = None, vhosts: Iterable[str] = (),
                users: Mapping[str, str] | None = None,
                policies: Iterable[Mapping[str, Any]] = (),
                operator_policies: Iterable[Mapping[str, Any]] = (),
                ignore_unsupported: bool = False,
                base: str | os.PathLike[str] | None = None,
                plugins: Iterable[str] = (), random_seed: int | None = None,
                nodes: int | Sequence[str] = 1) -> _broker.Broker:
    """A fresh broker configured as ``@pytest.mark.embroker(...)`` says.

    Args:
        topology: a RabbitMQ definitions file (``rabbitmqctl export_definitions``) or dict to
            load; a relative path is looked up under ``base`` first.
        clock: ``True`` for a :class:`~embroker.ManualClock` (``broker.clock.advance(s)``), or a
            clock to use.
        vhosts: virtual hosts to add to ``/``.
        users: users (name: password) to add to guest/guest.
        policies: policies to set, each as a definitions file lists them (``{"name": "dlx",
            "pattern": "^orders", "definition": {...}, "priority": 1, "apply-to": "queues",
            "vhost": "/"}``; ``apply_to`` is accepted for ``apply-to``), after the topology.
        operator_policies: operator policies, in the same form.
        ignore_unsupported: load a topology whose runtime parameters embroker cannot honour
            (shovels, federation upstreams) without them, instead of refusing it.
        base: the folder relative topology paths start from (the test file's folder).
        plugins: RabbitMQ plugins to enable (``["rabbitmq_delayed_message_exchange"]``...).
        random_seed: what ``x-random`` exchanges draw from (``broker.plugins.random.seed``).
        nodes: a cluster of that many nodes, or of nodes with those names (``Broker(nodes=)``).

    Raises:
        DefinitionsError: the topology file does not exist (the message names every full path
            tried), or the model refuses it (malformed, or an item RabbitMQ would refuse too:
            see ``Broker.load_definitions``).
        PolicyError: one of ``policies`` or ``operator_policies`` RabbitMQ would refuse.
    """
    from . import Broker as PublicBroker

    chosen: Clock | None = ManualClock() if clock is True else (clock or None)
    broker = PublicBroker(clock=chosen, vhosts=("/", *[v for v in vhosts if v != "/"]),
                          users={"guest": "guest", **(users or {})}, plugins=plugins,
                          nodes=nodes)
    if random_seed is not None:
        broker.plugins.random.seed(random_seed)
    if topology is not None:
        if not isinstance(topology, Mapping):
            topology = _topology_path(topology, base)
        broker.load_definitions(topology, ignore_unsupported=ignore_unsupported)
    for items, setter in ((policies, broker.set_policy),
                          (operator_policies, broker.set_operator_policy)):
        for item in items:
            known = {"name", "pattern", "definition", "priority", "apply-to", "apply_to", "vhost"}
            if set(item) - known or not {"name", "pattern", "definition"} <= set(item):
                raise TypeError(f"a policy is {{name, pattern, definition[, priority, apply-to, "
                                f"vhost]}}, not {dict(item)!r}")
            setter(item["name"], item["pattern"], item["definition"],
                   priority=item.get("priority", 0),
                   apply_to=item.get("apply-to", item.get("apply_to", "all")),
                   vhost=item.get("vhost", "/"))
    return broker


def _topology_path(topology: str | os.PathLike[str],
                   base: str | os.PathLike[str] | None) -> Path:
    path = Path(topology)
    tried = []
    if base is not None and not path.is_absolute():
        tried.append((Path(base) / path).resolve())
    tried.append(path.resolve())
    for candidate in tried:
        if candidate.is_file():
            return candidate
    raise DefinitionsError(f"topology file {str(topology)!r} not found: tried "
                           + " and ".join(str(t) for t in dict.fromkeys(tried)))


def check_server(server: Server) -> None:
    """Raise the first unexpected error the listener's thread met (a bug in embroker), so a test
    sees it instead of a hung client.

    Raises:
        AssertionError: chained to the server thread's exception.
    """
    __tracebackhide__ = True
    with server.broker.locked():
        total, kept = server.errors.total, list(server.errors)
    if total:
        shown = f" (the last {len(kept)} kept)" if total > len(kept) else ""
        raise AssertionError(f"the embroker listener met {total} unexpected error(s){shown}: "
                             f"{kept!r}") from kept[0]


def url_as(server: Server | ReferenceBroker, user: str, password: str, *, vhost: str = "/",
           configure: str = ".*", write: str = ".*", read: str = ".*",
           tags: Iterable[str] = ()) -> str:
    """The AMQP URL of ``server`` as another user: the user is made (or given this password, if
    it exists), ``vhost`` too when missing, and the user's permissions there are set to the
    three regular expressions (RabbitMQ's: ``"^$"`` or ``""`` grants nothing, ``".*"``
    everything); ``tags`` (``"administrator"``, ``"management"``...) are set when given.

    >>> from embroker import Broker
    >>> with Broker().serve() as server:
    ...     url_as(server, "checkout", "s3cret", vhost="shop", write="^orders$")
    'amqp://checkout:s3cret@127.0.0.1:.../shop'

    On a reference RabbitMQ (``--embroker-reference``), the user is made in the node for the
    test, with its permissions in the test's vhost, and deleted after the test; a user the
    node had already is refused (``ValueError``), and another vhost than ``/`` is
    :class:`NeedsEmbroker` (each test has one vhost of the node).

    Raises:
        embroker.errors.AccessControlError: a permission that is no regular expression.
    """
    from ._reference import ReferenceBroker

    tags = tuple(tags)
    if isinstance(server, ReferenceBroker):
        return server.user_url(user, password, vhost=vhost, permissions=(configure, write, read),
                               tags=tags)
    broker = server.broker
    with broker.locked():
        if user in broker.users:
            broker.change_password(user, password)
        else:
            broker.add_user(user, password)
        if tags:
            broker.set_user_tags(user, *tags)
        broker.add_vhost(vhost)
        broker.set_permissions(user, configure, write, read, vhost=vhost)
    address = server.url.rstrip("/").rpartition("@")[2]
    path = "" if vhost == "/" else quote(vhost, safe="")
    return f"amqp://{quote(user, safe='')}:{quote(password, safe='')}@{address}/{path}"


def held_messages(broker: AnyBroker) -> list[HeldMessage]:
    """The messages the broker's delayed-message exchanges hold, the earliest due first: each
    with its due time (broker clock, seconds), delay (ms), vhost, exchange and message.

    Raises:
        AssertionError: the delayed-message plugin is not enabled.
        NeedsEmbroker: ``broker`` is a reference RabbitMQ.
    """
    __tracebackhide__ = True
    if not isinstance(broker, model.Broker):
        raise NeedsEmbroker("held_messages() reads embroker's delayed-message exchanges")
    store = broker.plugins.delayed
    if store is None:
        raise AssertionError("the delayed-message plugin is not enabled: make the broker with "
                             "plugins=['rabbitmq_delayed_message_exchange'] (@pytest.mark."
                             "embroker(plugins=[...]))")
    return store.held()


def advance(broker: AnyBroker, seconds: float) -> None:
    """Move a broker's :class:`~embroker.ManualClock` forward under the broker's lock (safe while
    a listener serves clients), running the expiries and dead-lettering that fall due.

    Raises:
        TypeError: the broker's clock is not a ManualClock (``@pytest.mark.embroker(clock=True)``).
        NeedsEmbroker: ``broker`` is a reference RabbitMQ (its time cannot be moved).
    """
    if not isinstance(broker, model.Broker):
        raise NeedsEmbroker("advance() moves embroker's virtual clock")
    clock = broker.clock
    if not isinstance(clock, ManualClock):
        raise TypeError(f"advance() needs a ManualClock, and this broker's clock is {clock!r}: "
                        "make the broker with clock=True (@pytest.mark.embroker(clock=True))")
    with broker.locked():
        clock.advance(seconds)
