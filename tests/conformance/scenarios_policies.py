"""Scenarios: policies and operator policies (issue #16).

Each scenario sets its policies with rabbitmqctl's commands through :class:`Admin` (on
embroker the broker's ``set_policy``...; on RabbitMQ the management API or ``rabbitmqctl``: see
``admin.py``), recorded in the transcript as notes. Policy names and patterns carry the run's
unique prefix, so a policy only ever matches the scenario's own queues and exchanges on a shared
RabbitMQ (a pattern is written ``"^q-"`` and set as ``"^<prefix>q-"``); every policy a scenario
set is cleared when it ends, whatever happened.

RabbitMQ applies a policy change to a queue in the queue's own process, and answers a passive
queue.declare ahead of other work (``stat`` is a prioritised call): a length that a policy
change alters is waited for (``wait_ready``), not read at once.

For each key: the policy alone, the argument alone, both (each order of the two values), and
an operator policy on top; then priorities, ties, ``apply-to``, the queue types a policy
suits, a policy changed on a queue that holds messages, and RabbitMQ's validation errors.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

from .harness import BrokerError, ChannelProxy, Msg, QueueDeclareOk, Session
from .scenarios_queue_features import LONG, SHORT, confirming, elapse, ready, wait_gone, wait_ready

# --------------------------------------------------------------------------------------------
# Setting policies


class Admin:
    """rabbitmqctl's policy commands on the broker under test, each recorded as a note with its
    outcome (None, or the refusal as an ``Err`` with scope ``admin``)."""

    def __init__(self, s: Session) -> None:
        self.s = s
        self._set: list[tuple[str, bool]] = []

    def _pattern(self, pattern: str) -> str:
        if not pattern.startswith("^"):
            raise AssertionError(f"scenario bug: pattern {pattern!r} must start with '^' (it "
                                 "could match resources that are not the scenario's)")
        return "^" + self.s.token + pattern[1:]

    def _run(self, command: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        s = self.s
        shown = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
        what = s.normalize(f"{command}({', '.join(shown)})")
        try:
            s.driver.policy_command(command, args, kwargs)  # type: ignore[attr-defined]
            outcome = None
        except BrokerError as e:
            outcome = e.err
        s.note(what, outcome)
        return outcome

    def set_policy(self, base: str, pattern: str, definition: dict[str, Any], *,
                   priority: int = 0, apply_to: str = "all", operator: bool = False) -> Any:
        name = self.s.name(base)
        kwargs: dict[str, Any] = {}
        if priority:
            kwargs["priority"] = priority
        if apply_to != "all":
            kwargs["apply_to"] = apply_to
        command = "set_operator_policy" if operator else "set_policy"
        outcome = self._run(command, (name, self._pattern(pattern), definition), kwargs)
        if outcome is None and (name, operator) not in self._set:
            self._set.append((name, operator))
        return outcome

    def set_operator_policy(self, base: str, pattern: str, definition: dict[str, Any], *,
                            priority: int = 0, apply_to: str = "all") -> Any:
        return self.set_policy(base, pattern, definition, priority=priority, apply_to=apply_to,
                               operator=True)

    def clear_policy(self, base: str, *, operator: bool = False) -> Any:
        name = self.s.name(base)
        command = "clear_operator_policy" if operator else "clear_policy"
        outcome = self._run(command, (name,), {})
        if (name, operator) in self._set:
            self._set.remove((name, operator))
        return outcome

    def clear_operator_policy(self, base: str) -> Any:
        return self.clear_policy(base, operator=True)

    def clear_all(self) -> None:
        """Clear what is still set (not recorded; never raises)."""
        for name, operator in reversed(self._set):
            command = "clear_operator_policy" if operator else "clear_policy"
            with contextlib.suppress(Exception):  # cleaning up is not an observation
                self.s.driver.policy_command(command, (name,), {})  # type: ignore[attr-defined]
        self._set.clear()


def with_admin(scenario: Callable[[Session, Admin], None]) -> Callable[[Session], None]:
    """A scenario that sets policies: it gets an :class:`Admin`, cleared when it ends."""
    @functools.wraps(scenario)
    def run(s: Session) -> None:
        admin = Admin(s)
        try:
            scenario(s, admin)
        finally:
            admin.clear_all()
    return run


# --------------------------------------------------------------------------------------------
# Helpers


def publish(ch: ChannelProxy, q: str, count: int, start: int = 0) -> None:
    """Publish ``m<start>``... to ``q`` through the default exchange (confirm channels record
    each ack or nack)."""
    for i in range(start, start + count):
        ch.basic_publish("", q, b"m%d" % i)


def bodies(s: Session, ch: ChannelProxy, q: str) -> list[bytes]:
    """Drain ``q`` (each get recorded) and return the bodies."""
    return ch.drain(q)


QUORUM = {"x-queue-type": "quorum"}


# --------------------------------------------------------------------------------------------
# Each key: the policy alone, the argument alone, both, an operator policy on top


@with_admin
def scenario_policy_max_length_precedence(s: Session, admin: Admin) -> None:
    """max-length: with a policy and an argument, the lower applies (either way round); an
    operator policy lowers it further, and only where it is the lowest."""
    ch = confirming(s)
    admin.set_policy("cap", "^ml-", {"max-length": 3}, apply_to="queues")
    queues = {"ml-policy": {}, "ml-arg-lower": {"x-max-length": 2},
              "ml-arg-higher": {"x-max-length": 5}, "solo-arg": {"x-max-length": 2}}
    for base, arguments in queues.items():
        ch.queue_declare(s.name(base), arguments=arguments)
        publish(ch, s.name(base), 6)
    s.expect([ready(ch, s.name(b)) for b in queues], [3, 2, 3, 2])
    admin.set_operator_policy("op", "^ml-arg", {"max-length": 1})
    s.expect(wait_ready(s, s.name("ml-arg-higher"), 1), QueueDeclareOk("ml-arg-higher", 1, 0))
    s.expect(wait_ready(s, s.name("ml-arg-lower"), 1), QueueDeclareOk("ml-arg-lower", 1, 0))
    s.expect(bodies(s, ch, s.name("ml-arg-higher")), [b"m5"])
    s.expect(ready(ch, s.name("ml-policy")), 3, "the operator policy does not match it")
    admin.set_operator_policy("op", "^ml-", {"max-length": 4})
    publish(ch, s.name("ml-policy"), 2, 6)
    s.expect(bodies(s, ch, s.name("ml-policy")), [b"m5", b"m6", b"m7"],
             "operator 4 > policy 3: the policy's 3 applies")
    admin.clear_policy("cap")
    publish(ch, s.name("ml-policy"), 6)
    s.expect(wait_ready(s, s.name("ml-policy"), 4), QueueDeclareOk("ml-policy", 4, 0))


@with_admin
def scenario_policy_max_length_bytes_precedence(s: Session, admin: Admin) -> None:
    """max-length-bytes: the lower of policy and argument; an operator policy on top."""
    ch = confirming(s)
    admin.set_policy("cap", "^mlb-", {"max-length-bytes": 6}, apply_to="queues")
    queues = {"mlb-policy": {}, "mlb-arg-lower": {"x-max-length-bytes": 4},
              "mlb-arg-higher": {"x-max-length-bytes": 10}, "solo-arg": {"x-max-length-bytes": 4}}
    for base, arguments in queues.items():
        ch.queue_declare(s.name(base), arguments=arguments)
        publish(ch, s.name(base), 6)
    s.expect([ready(ch, s.name(b)) for b in queues], [3, 2, 3, 2])
    admin.set_operator_policy("op", "^mlb-policy$", {"max-length-bytes": 2})
    s.expect(wait_ready(s, s.name("mlb-policy"), 1), QueueDeclareOk("mlb-policy", 1, 0))
    s.expect(bodies(s, ch, s.name("mlb-policy")), [b"m5"])


@with_admin
def scenario_policy_message_ttl_precedence(s: Session, admin: Admin) -> None:
    """message-ttl: the lower of policy and argument applies; an operator policy's too."""
    ch = confirming(s)
    admin.set_policy("short", "^short-", {"message-ttl": SHORT}, apply_to="queues")
    admin.set_policy("long", "^long-", {"message-ttl": LONG}, apply_to="queues")
    admin.set_operator_policy("op", "^long-op$", {"message-ttl": SHORT})
    queues = {"short-policy": {}, "short-policy-long-arg": {"x-message-ttl": LONG},
              "long-policy": {}, "long-policy-short-arg": {"x-message-ttl": SHORT},
              "long-op": {}, "solo-arg": {"x-message-ttl": SHORT}}
    for base, arguments in queues.items():
        ch.queue_declare(s.name(base), arguments=arguments)
        publish(ch, s.name(base), 1)
    elapse(s, SHORT)
    s.expect([ready(ch, s.name(b)) for b in queues], [0, 0, 1, 0, 0, 0])


@with_admin
def scenario_policy_expires_precedence(s: Session, admin: Admin) -> None:
    """expires: the lower of policy and argument; an operator policy's too. A queue with a
    long expiry from both stays."""
    ch = s.channel()
    admin.set_policy("short", "^short-", {"expires": 30}, apply_to="queues")
    admin.set_policy("long", "^long-", {"expires": LONG}, apply_to="queues")
    admin.set_operator_policy("op", "^long-op$", {"expires": 30})
    for base, arguments in {"short-policy": {}, "short-policy-long-arg": {"x-expires": LONG},
                            "long-policy-short-arg": {"x-expires": 30}, "long-op": {},
                            "long-policy": {}}.items():
        ch.queue_declare(s.name(base), arguments=arguments)
    s.expect(wait_gone(s, s.name("short-policy")), True)
    s.expect(wait_gone(s, s.name("short-policy-long-arg")), True)
    s.expect(wait_gone(s, s.name("long-policy-short-arg")), True)
    s.expect(wait_gone(s, s.name("long-op")), True)
    s.expect(s.queue_exists(s.name("long-policy")), True)


@with_admin
def scenario_policy_overflow_precedence(s: Session, admin: Admin) -> None:
    """overflow: on a classic queue the argument wins over the policy, either way round."""
    ch = confirming(s)
    admin.set_policy("reject", "^reject-", {"overflow": "reject-publish"}, apply_to="queues")
    admin.set_policy("drop", "^drop-", {"overflow": "drop-head"}, apply_to="queues")
    queues: dict[str, dict[str, Any]] = {
        "reject-policy": {"x-max-length": 1},
        "reject-policy-drop-arg": {"x-max-length": 1, "x-overflow": "drop-head"},
        "drop-policy-reject-arg": {"x-max-length": 1, "x-overflow": "reject-publish"}}
    for base, arguments in queues.items():
        ch.queue_declare(s.name(base), arguments=arguments)
        publish(ch, s.name(base), 2)
        s.expect(bodies(s, ch, s.name(base)),
                 [b"m1"] if base == "reject-policy-drop-arg" else [b"m0"], base)


@with_admin
def scenario_policy_reject_publish_dlx(s: Session, admin: Admin) -> None:
    """overflow reject-publish-dlx from a policy: the refused message is nacked and
    dead-lettered to the policy's dead-letter exchange."""
    ch = confirming(s)
    dead = s.name("dead")
    ch.queue_declare(dead)
    admin.set_policy("p", "^q$", {"overflow": "reject-publish-dlx", "max-length": 1,
                                  "dead-letter-exchange": "",
                                  "dead-letter-routing-key": dead}, apply_to="queues")
    ch.queue_declare(s.name("q"))
    publish(ch, s.name("q"), 2)
    s.expect(wait_ready(s, dead, 1), QueueDeclareOk("dead", 1, 0))
    m = ch.basic_get(dead, auto_ack=True)
    s.expect(m.body if isinstance(m, Msg) else m, b"m1")


@with_admin
def scenario_policy_dead_letter_exchange_precedence(s: Session, admin: Admin) -> None:
    """dead-letter-exchange: the queue's argument wins over the policy; the policy alone
    dead-letters."""
    ch = confirming(s)
    for base in ("dead-a", "dead-b"):
        ch.exchange_declare(s.name(base.replace("dead", "dlx")), "fanout")
        ch.queue_declare(s.name(base))
        ch.queue_bind(s.name(base), s.name(base.replace("dead", "dlx")))
    admin.set_policy("p", "^q-", {"dead-letter-exchange": s.name("dlx-a")}, apply_to="queues")
    ch.queue_declare(s.name("q-policy"))
    ch.queue_declare(s.name("q-both"), arguments={"x-dead-letter-exchange": s.name("dlx-b")})
    for base in ("q-policy", "q-both"):
        publish(ch, s.name(base), 1)
        m = ch.basic_get(s.name(base))
        if isinstance(m, Msg):
            ch.basic_reject(m.delivery_tag, requeue=False)
    s.expect(wait_ready(s, s.name("dead-a"), 1), QueueDeclareOk("dead-a", 1, 0))
    s.expect(wait_ready(s, s.name("dead-b"), 1), QueueDeclareOk("dead-b", 1, 0))
    m = ch.basic_get(s.name("dead-a"), auto_ack=True)
    s.expect(m.properties["headers"]["x-death"][0]["queue"] if isinstance(m, Msg) else m,
             "q-policy")


@with_admin
def scenario_policy_dead_letter_routing_key_precedence(s: Session, admin: Admin) -> None:
    """dead-letter-routing-key: the argument wins over the policy; each key is decided on its
    own (an argument's exchange with the policy's routing key)."""
    ch = confirming(s)
    for base in ("dead-a", "dead-b"):
        ch.queue_declare(s.name(base))
    admin.set_policy("p", "^q-", {"dead-letter-routing-key": s.name("dead-a")},
                     apply_to="queues")
    ch.queue_declare(s.name("q-policy-key"), arguments={"x-dead-letter-exchange": ""})
    ch.queue_declare(s.name("q-both"), arguments={"x-dead-letter-exchange": "",
                                                  "x-dead-letter-routing-key": s.name("dead-b")})
    for base in ("q-policy-key", "q-both"):
        publish(ch, s.name(base), 1)
        m = ch.basic_get(s.name(base))
        if isinstance(m, Msg):
            ch.basic_reject(m.delivery_tag, requeue=False)
    s.expect(wait_ready(s, s.name("dead-a"), 1), QueueDeclareOk("dead-a", 1, 0))
    s.expect(wait_ready(s, s.name("dead-b"), 1), QueueDeclareOk("dead-b", 1, 0))


@with_admin
def scenario_policy_alternate_exchange_precedence(s: Session, admin: Admin) -> None:
    """alternate-exchange: the exchange's argument wins over the policy; the policy alone
    gives one; the default exchange never passes a message on."""
    ch = confirming(s)
    for base in ("ae-a", "ae-b"):
        ch.exchange_declare(s.name(base), "fanout")
        ch.queue_declare(s.name(base.replace("ae", "lost")))
        ch.queue_bind(s.name(base.replace("ae", "lost")), s.name(base))
    admin.set_policy("ae", "^x-", {"alternate-exchange": s.name("ae-a")}, apply_to="exchanges")
    ch.exchange_declare(s.name("x-policy"), "direct")
    ch.exchange_declare(s.name("x-both"), "direct",
                        arguments={"alternate-exchange": s.name("ae-b")})
    ch.basic_publish(s.name("x-policy"), "nowhere", b"p", mandatory=True)
    ch.basic_publish(s.name("x-both"), "nowhere", b"b", mandatory=True)
    s.expect([ready(ch, s.name("lost-a")), ready(ch, s.name("lost-b"))], [1, 1])
    admin.clear_policy("ae")
    ch.basic_publish(s.name("x-policy"), "nowhere", b"returned", mandatory=True)
    s.expect(len(ch.returned), 1, "no alternate exchange once the policy is cleared")


@with_admin
def scenario_policy_quorum_precedence(s: Session, admin: Admin) -> None:
    """A quorum queue decides some keys otherwise: the policy's overflow wins over the
    argument; max-length and delivery-limit the lower; the dead-letter exchange the argument."""
    ch = confirming(s)
    dead = s.name("dead")
    ch.queue_declare(dead)
    admin.set_policy("qq", "^qq-", {"overflow": "drop-head", "max-length": 3,
                                    "delivery-limit": 1, "dead-letter-exchange": "nowhere",
                                    "dead-letter-routing-key": dead}, apply_to="queues")
    q = s.name("qq-q")
    ch.queue_declare(q, durable=True, arguments={**QUORUM, "x-overflow": "reject-publish",
                                                 "x-max-length": 2, "x-delivery-limit": 5,
                                                 "x-dead-letter-exchange": ""})
    publish(ch, q, 3)
    s.expect(wait_ready(s, q, 2), QueueDeclareOk("qq-q", 2, 0),
             "the policy's drop-head, the argument's max-length 2")
    s.expect(wait_ready(s, dead, 1), QueueDeclareOk("dead", 1, 0),
             "m0 dropped, to the argument's dead-letter exchange with the policy's key")
    for _ in range(2):  # the policy's delivery-limit 1: dead-lettered on the second return
        m = ch.basic_get(q)
        if isinstance(m, Msg):
            ch.basic_nack(m.delivery_tag, requeue=True)
    s.expect(wait_ready(s, dead, 2), QueueDeclareOk("dead", 2, 0))
    s.expect(bodies(s, ch, dead), [b"m0", b"m1"])


def returns_until_gone(ch: ChannelProxy, q: str) -> int:
    """basic.get and nack (requeue) the one message of ``q`` until it is gone: how many times
    it was got (a delivery limit L lets it be got L + 1 times)."""
    for count in range(8):
        m = ch.basic_get(q)
        if not isinstance(m, Msg):
            return count
        ch.basic_nack(m.delivery_tag, requeue=True)
    return 8


@with_admin
def scenario_policy_delivery_limit_precedence(s: Session, admin: Admin) -> None:
    """delivery-limit (quorum queues): the lower of policy and argument, either way round; an
    operator policy's too."""
    ch = confirming(s)
    admin.set_policy("three", "^three-", {"delivery-limit": 3}, apply_to="queues")
    admin.set_policy("one", "^one-", {"delivery-limit": 1}, apply_to="queues")
    admin.set_operator_policy("op", "^three-op$", {"delivery-limit": 1})
    queues = {"three-policy": {}, "three-policy-arg-1": {"x-delivery-limit": 1},
              "one-policy-arg-3": {"x-delivery-limit": 3}, "three-op": {},
              "solo-arg": {"x-delivery-limit": 2}}
    for base, arguments in queues.items():
        ch.queue_declare(s.name(base), durable=True, arguments={**QUORUM, **arguments})
        publish(ch, s.name(base), 1)
    s.expect([returns_until_gone(ch, s.name(b)) for b in queues], [4, 2, 2, 2, 3])


# --------------------------------------------------------------------------------------------
# Which policy applies


@with_admin
def scenario_policy_highest_priority_applies(s: Session, admin: Admin) -> None:
    """Of the matching policies, the one with the highest priority applies, alone (their
    definitions are not merged); changing priorities or clearing one re-decides at once."""
    ch = confirming(s)
    q = s.name("q-1")
    admin.set_policy("low", "^q-", {"max-length": 1}, priority=1)
    admin.set_policy("high", "^q-1$", {"max-length": 2}, priority=2)
    ch.queue_declare(q)
    publish(ch, q, 3)
    s.expect(ready(ch, q), 2)
    admin.set_policy("low", "^q-", {"max-length": 1}, priority=3)
    s.expect(wait_ready(s, q, 1), QueueDeclareOk("q-1", 1, 0))
    admin.clear_policy("low")
    publish(ch, q, 2, 3)
    s.expect(wait_ready(s, q, 2), QueueDeclareOk("q-1", 2, 0))
    s.expect(bodies(s, ch, q), [b"m3", b"m4"])


@with_admin
def scenario_policy_equal_priorities_one_applies(s: Session, admin: Admin) -> None:
    """Two matching policies of the same priority: one of them applies, never both merged
    (which one is left to RabbitMQ's table order: the scenario records only that it is one)."""
    ch = confirming(s)
    q = s.name("q")
    admin.set_policy("a", "^q$", {"max-length": 1}, priority=5)
    admin.set_policy("b", "^q$", {"overflow": "reject-publish"}, priority=5)
    ch.queue_declare(q)
    with s.quietly():
        publish(ch, q, 3)
        count = ready(ch, q)
        nacks = sum(1 for c in ch.confirms if not c.ack)
    outcome = {(1, 0): "a", (3, 0): "b", (1, 2): "a and b merged"}.get((count, nacks), "?")
    s.note("one of the two policies applies, alone", outcome in ("a", "b"))
    s.expect(outcome in ("a", "b"), True, f"one policy applies, not both ({outcome})")


@with_admin
def scenario_policy_apply_to(s: Session, admin: Admin) -> None:
    """apply-to: "queues" leaves exchanges of the same names alone, "exchanges" queues, "all"
    both."""
    ch = confirming(s)
    ae, lost = s.name("ae"), s.name("lost")
    ch.exchange_declare(ae, "fanout")
    ch.queue_declare(lost)
    ch.queue_bind(lost, ae)
    definition = {"alternate-exchange": ae, "max-length": 1}
    admin.set_policy("queues", "^n-queues$", definition, apply_to="queues")
    admin.set_policy("exchanges", "^n-exchanges$", definition, apply_to="exchanges")
    admin.set_policy("all", "^n-all$", definition)
    for base in ("n-queues", "n-exchanges", "n-all"):
        ch.exchange_declare(s.name(base), "direct")
        ch.queue_declare(s.name(base))
        publish(ch, s.name(base), 2)
        ch.basic_publish(s.name(base), "nowhere", b"unroutable")
    s.expect([ready(ch, s.name(b)) for b in ("n-queues", "n-exchanges", "n-all")], [1, 2, 1])
    s.expect(ready(ch, lost), 2)


@with_admin
def scenario_policy_delivery_limit_not_for_classic_queues(s: Session, admin: Admin) -> None:
    """A policy with a key a queue type refuses does not apply to such queues at all, and the
    next matching one does: delivery-limit is for quorum queues only."""
    ch = confirming(s)
    admin.set_policy("quorum-only", "^q-", {"max-length": 1, "delivery-limit": 3}, priority=1)
    admin.set_policy("fallback", "^q-", {"max-length": 2})
    ch.queue_declare(s.name("q-classic"))
    ch.queue_declare(s.name("q-quorum"), durable=True, arguments=QUORUM)
    for base in ("q-classic", "q-quorum"):
        publish(ch, s.name(base), 3)
    s.expect(wait_ready(s, s.name("q-classic"), 2), QueueDeclareOk("q-classic", 2, 0))
    s.expect(wait_ready(s, s.name("q-quorum"), 1), QueueDeclareOk("q-quorum", 1, 0))


@with_admin
def scenario_policy_queue_mode_and_mirroring_not_for_quorum_queues(s: Session,
                                                                   admin: Admin) -> None:
    """queue-mode and the mirroring keys are for classic queues only: a policy with one does
    not apply to a quorum queue (the next matching policy does). On a classic queue they are
    accepted and change nothing a client sees."""
    ch = confirming(s)
    admin.set_policy("lazy", "^q-", {"max-length": 1, "queue-mode": "lazy"}, priority=2)
    admin.set_policy("mirrored", "^q-", {"max-length": 2, "ha-mode": "all"}, priority=1)
    admin.set_policy("fallback", "^q-", {"max-length": 3})
    ch.queue_declare(s.name("q-classic"))
    ch.queue_declare(s.name("q-quorum"), durable=True, arguments=QUORUM)
    for base in ("q-classic", "q-quorum"):
        publish(ch, s.name(base), 4)
    s.expect(wait_ready(s, s.name("q-classic"), 1), QueueDeclareOk("q-classic", 1, 0))
    s.expect(wait_ready(s, s.name("q-quorum"), 3), QueueDeclareOk("q-quorum", 3, 0))
    admin.clear_policy("lazy")
    publish(ch, s.name("q-classic"), 3, 4)
    s.expect(bodies(s, ch, s.name("q-classic")), [b"m5", b"m6"], "ha-mode all: max-length 2")


@with_admin
def scenario_policy_applies_to_exclusive_queues(s: Session, admin: Admin) -> None:
    """Policies apply to exclusive and auto-delete queues like any other."""
    ch = confirming(s)
    admin.set_policy("cap", "^q-", {"max-length": 1})
    ch.queue_declare(s.name("q-exclusive"), exclusive=True)
    ch.queue_declare(s.name("q-auto"), auto_delete=True)
    for base in ("q-exclusive", "q-auto"):
        publish(ch, s.name(base), 2)
    s.expect([ready(ch, s.name("q-exclusive")), ready(ch, s.name("q-auto"))], [1, 1])


# --------------------------------------------------------------------------------------------
# A policy that changes on a queue holding messages


@with_admin
def scenario_policy_lowered_max_length_drops_queued_messages(s: Session, admin: Admin) -> None:
    """A length limit lowered under a queue's length: with drop-head overflow the oldest
    messages go at once, dead-lettered (maxlen); clearing the policy lifts the limit."""
    ch = confirming(s)
    q, dead = s.name("q"), s.name("dead")
    ch.queue_declare(dead)
    ch.queue_declare(q, arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dead})
    publish(ch, q, 5)
    admin.set_policy("cap", "^q$", {"max-length": 2})
    s.expect(wait_ready(s, q, 2), QueueDeclareOk("q", 2, 0))
    s.expect(wait_ready(s, dead, 3), QueueDeclareOk("dead", 3, 0))
    m = ch.basic_get(dead, auto_ack=True)
    s.expect(m.properties["headers"]["x-death"][0]["reason"] if isinstance(m, Msg) else m,
             "maxlen")
    s.expect(bodies(s, ch, dead), [b"m1", b"m2"])
    publish(ch, q, 1, 5)
    s.expect(bodies(s, ch, q), [b"m4", b"m5"])
    admin.clear_policy("cap")
    publish(ch, q, 3, 6)
    s.expect(wait_ready(s, q, 3), QueueDeclareOk("q", 3, 0))


@with_admin
def scenario_policy_overflow_order_when_applied(s: Session, admin: Admin) -> None:
    """As RabbitMQ's queue applies a policy, a new length limit is enforced with the overflow
    the queue had so far, and then the new overflow: a policy bringing max-length and
    reject-publish together still drops the oldest messages at once; under reject-publish a
    lowered limit keeps them (and refuses publishes); going back to drop-head drops."""
    ch = confirming(s)
    q1, q2 = s.name("q-1"), s.name("q-2")
    ch.queue_declare(q1)
    publish(ch, q1, 5)
    admin.set_policy("p1", "^q-1$", {"max-length": 2, "overflow": "reject-publish"})
    s.expect(wait_ready(s, q1, 2), QueueDeclareOk("q-1", 2, 0))
    ch.queue_declare(q2, arguments={"x-overflow": "reject-publish"})
    publish(ch, q2, 5)
    admin.set_policy("p2", "^q-2$", {"max-length": 2})
    publish(ch, q2, 1, 5)
    s.expect(ready(ch, q2), 5, "reject-publish keeps what is there")
    admin.set_policy("p1", "^q-1$", {"max-length": 1, "overflow": "reject-publish"})
    s.expect(wait_ready(s, q1, 2), QueueDeclareOk("q-1", 2, 0))
    admin.set_policy("p1", "^q-1$", {"max-length": 1})
    s.expect(wait_ready(s, q1, 1), QueueDeclareOk("q-1", 1, 0))
    s.expect(bodies(s, ch, q1), [b"m4"])


@with_admin
def scenario_policy_message_ttl_change_keeps_queued_deadlines(s: Session, admin: Admin) -> None:
    """A new message TTL applies to messages published from then on: those already queued
    keep theirs (none, or a long one), and a message stays behind an unexpiring head."""
    ch = confirming(s)
    q1, q2 = s.name("q-1"), s.name("q-2")
    ch.queue_declare(q1)
    ch.queue_declare(q2, arguments={"x-message-ttl": LONG})
    publish(ch, q1, 1)
    publish(ch, q2, 1)
    admin.set_policy("short", "^q-", {"message-ttl": SHORT})
    publish(ch, q1, 1, 1)
    elapse(s, SHORT)
    s.expect([ready(ch, q1), ready(ch, q2)], [2, 1])
    s.expect(bodies(s, ch, q1), [b"m0"], "m1 expired behind m0: it goes once m0 is taken")
    publish(ch, q1, 1, 2)
    elapse(s, SHORT)
    s.expect(ready(ch, q1), 0)


@with_admin
def scenario_policy_dead_letter_exchange_change_redirects(s: Session, admin: Admin) -> None:
    """A dead-letter exchange set, changed or cleared by a policy applies to messages that die
    from then on, queued ones included."""
    ch = confirming(s)
    q = s.name("q")
    for base in ("dead-a", "dead-b"):
        ch.queue_declare(s.name(base))
    ch.queue_declare(q)
    publish(ch, q, 3)
    admin.set_policy("dlx", "^q$", {"dead-letter-exchange": "",
                                    "dead-letter-routing-key": s.name("dead-a")})
    for target in ("dead-a", "dead-b", None):
        if target == "dead-b":
            admin.set_policy("dlx", "^q$", {"dead-letter-exchange": "",
                                            "dead-letter-routing-key": s.name("dead-b")})
        elif target is None:
            admin.clear_policy("dlx")
        m = ch.basic_get(q)
        if isinstance(m, Msg):
            ch.basic_reject(m.delivery_tag, requeue=False)
    s.expect(wait_ready(s, s.name("dead-a"), 1), QueueDeclareOk("dead-a", 1, 0))
    s.expect(wait_ready(s, s.name("dead-b"), 1), QueueDeclareOk("dead-b", 1, 0))
    s.expect([bodies(s, ch, s.name("dead-a")), bodies(s, ch, s.name("dead-b"))],
             [[b"m0"], [b"m1"]])


@with_admin
def scenario_policy_operator_policy_changes_apply_at_once(s: Session, admin: Admin) -> None:
    """An operator policy set on queues holding messages applies at once (a lower max-length
    drops), and clearing it lifts its limit."""
    ch = confirming(s)
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-max-length": 4})
    publish(ch, q, 4)
    admin.set_operator_policy("cap", "^q$", {"max-length": 2})
    s.expect(wait_ready(s, q, 2), QueueDeclareOk("q", 2, 0))
    admin.clear_operator_policy("cap")
    publish(ch, q, 3, 4)
    s.expect(bodies(s, ch, q), [b"m3", b"m4", b"m5", b"m6"])


# --------------------------------------------------------------------------------------------
# RabbitMQ's validation


@with_admin
def scenario_policy_validation_errors(s: Session, admin: Admin) -> None:
    """Every key's bad values, unknown keys, a bad apply-to, keys an operator policy may not
    set: refused with RabbitMQ's reasons (which print values as Erlang terms)."""
    bad: list[dict[str, Any]] = [
        {"message-ttl": -1}, {"message-ttl": "1000"}, {"message-ttl": 1.5}, {"message-ttl": None},
        {"expires": 0}, {"max-length": -1}, {"max-length": True}, {"max-length-bytes": "a"},
        {"overflow": "drop-tail"}, {"queue-mode": "eager"}, {"queue-version": 3},
        {"delivery-limit": -2}, {"dead-letter-exchange": 5},
        {"dead-letter-routing-key": True}, {"alternate-exchange": ["a"]},
        {"dead-letter-exchange": {"a": 1}}, {"queue-master-locator": "nearest"},
        {"dead-letter-strategy": "never"}, {"queue-leader-locator": "x"},
        {"initial-cluster-size": -1}, {"stream-max-segment-size-bytes": -1},
        {"max-in-memory-length": -1}, {"max-in-memory-bytes": -1},
        {"ha-params": 2}, {"ha-mode": "some"}, {"ha-mode": "exactly", "ha-params": "2"},
        {"ha-mode": "exactly"}, {"ha-mode": "all", "ha-params": 1},
        {"ha-mode": "nodes", "ha-params": []}, {"ha-mode": "nodes", "ha-params": [1]},
        {"ha-mode": "nodes", "ha-params": "a"}, {"ha-mode": "all", "ha-sync-mode": "x"},
        {"ha-mode": "all", "ha-sync-batch-size": 0},
        {"ha-mode": "all", "ha-promote-on-shutdown": "x"},
        {"ha-mode": "all", "ha-promote-on-failure": "x"},
        {"unknown-key": 1}, {"zzz": 1, "aaa": [1, 2]}, {},
        {"max-length": -1, "message-ttl": -1, "overflow": "x"},
        {"ha-mode": "bogus", "message-ttl": -1}, {"queue-master-locator": "x", "max-length": -1},
        {"max-length": 1, "zzz": 1, "ha-mode": "bogus"},
        {"max-length": 10, "message-ttl": 1e3},
    ]
    for definition in bad:
        admin.set_policy("bad", "^nothing$", definition)
    admin.set_policy("bad", "^nothing$", {"max-length": 1}, apply_to="things")
    admin.set_operator_policy("bad", "^nothing$", {"overflow": "drop-head"})
    admin.set_operator_policy("bad", "^nothing$", {"message-ttl": -5})
    admin.clear_policy("never-set")
    admin.clear_operator_policy("never-set")
    for good in ({"queue-master-locator": "min-masters"}, {"max-age": "7D"},
                 {"queue-version": 2}, {"dead-letter-strategy": "at-least-once"},
                 {"ha-mode": "exactly", "ha-params": 2, "ha-sync-mode": "automatic"}):
        admin.set_policy("good", "^nothing$", good)


@with_admin
def scenario_policy_quorum_reject_publish_admits_one_over(s: Session, admin: Admin) -> None:
    """reject-publish and the limit from a policy, or from an operator policy: a quorum queue
    still takes one message over its limit before it refuses (as with arguments)."""
    ch = confirming(s)
    admin.set_policy("p", "^qq-policy$", {"overflow": "reject-publish", "max-length": 2},
                     apply_to="queues")
    admin.set_operator_policy("o", "^qq-op$", {"max-length": 2}, apply_to="queues")
    admin.set_policy("p2", "^qq-op$", {"overflow": "reject-publish"}, apply_to="queues")
    for base in ("qq-policy", "qq-op"):
        q = s.name(base)
        ch.queue_declare(q, durable=True, arguments=QUORUM)
        outcomes = []
        for i in range(4):
            before = len(ch.confirms)
            ch.basic_publish("", q, b"m%d" % i)
            confirm = ch.confirms[before:]
            outcomes.append(bool(confirm) and confirm[-1].ack)
        s.expect(outcomes, [True, True, True, False], base)
        s.expect(wait_ready(s, q, 3), QueueDeclareOk(base, 3, 0))
