"""Policies, operator policies and virtual host limits, as RabbitMQ 3.10 applies them.

Theory of operation
-------------------
A *policy* sets queue and exchange settings in bulk (``rabbitmqctl set_policy``): a regular
expression searched in the resource's name (``pattern``, anywhere in the name, as Erlang's
``re:run``), ``apply-to`` (``queues``, ``exchanges`` or ``all``), a ``priority`` and a
``definition`` such as ``{"message-ttl": 60000, "dead-letter-exchange": "dlx"}``. An *operator
policy* has the same shape and may set only the limits (``expires``, ``message-ttl``,
``max-length``, ``max-length-bytes``, ``max-in-memory-length``, ``max-in-memory-bytes``,
``delivery-limit``). Both are per virtual host.

Which one applies (``rabbit_policy:match/2``): of the policies of the resource's vhost whose
``apply-to`` takes its kind, that suit its queue type and whose pattern matches its name, the one
with the highest priority; the same, separately, for operator policies. A policy suits a queue
type when its definition has no key the type refuses (``rabbit_queue_type:is_policy_applicable``):
a policy with ``delivery-limit`` never applies to a classic queue, one with ``queue-mode`` or
``ha-mode`` never to a quorum queue, and the next matching policy applies instead. Among policies
of equal priority RabbitMQ takes the first in the order its runtime-parameter table returns them,
a hash order that is neither the names' nor the order they were set in (measured on 3.10.8);
embroker takes the first by name and says so with a :class:`~embroker.errors.PolicyWarning`.

How a queue's settings come out of its ``x-`` arguments and its policies, key by key
(:func:`queue_settings`): first the policy and the operator policy are merged (``rabbit_policy:
get/2``: where both set a key, the lower number wins), then that value meets the queue's own
argument. Which wins depends on the key and the queue type, exactly as RabbitMQ decides it
(``rabbit_amqqueue_process:process_args_policy/1`` for classic queues,
``rabbit_quorum_queue:ra_machine_config/1`` for quorum queues; measured on 3.10.8)::

    key                          classic queue   quorum queue
    message-ttl                  the lower       the lower
    expires                      the lower       the policy
    max-length, -bytes           the lower       the lower
    overflow                     the argument    the policy
    dead-letter-exchange, -key   the argument    the argument
    delivery-limit               (not applied)   the lower

and for exchanges an ``alternate-exchange`` argument wins over the policy's (the default exchange
never has one).

Setting, changing or clearing a policy applies at once to the existing queues and exchanges of
its vhost (``rabbit_policy:update_matched_objects/3``): each resource whose policy or operator
policy changed takes its new settings as RabbitMQ's queue process does (:meth:`Queue.
apply_policies <embroker.model.Queue.apply_policies>`): the ``expires`` countdown starts again,
the dead-letter target changes for what dies from now on, a new message TTL applies to messages
published from now on (those queued keep their deadline), and a length limit that drops below
the queue's length with ``drop-head`` overflow drops the oldest messages at once, dead-lettered as
``maxlen``.

Keys that have no effect in one in-memory node are accepted and kept: ``queue-mode``,
``queue-version``, ``queue-master-locator``, ``queue-leader-locator``, ``initial-cluster-size``,
``max-in-memory-length``, ``max-in-memory-bytes``, ``dead-letter-strategy``, ``max-age`` and
``stream-max-segment-size-bytes`` change nothing a client can observe; the mirroring keys
(``ha-*``) and federation keys (``federation-upstream``...) would, on a cluster, and setting them
warns (:class:`~embroker.errors.PolicyWarning`).

Validation follows RabbitMQ's validators, in their order, with their texts: Erlang prints the
values (``<<"x">> is not a valid overflow value``), which :func:`embroker._erlang.term`
reproduces.

Virtual host limits (``rabbitmqctl set_vhost_limits``): ``max-queues`` refuses a new queue
(406 ``cannot declare queue 'q': queue limit in vhost '/' (5) is reached``), ``max-connections``
a new connection (530 ``access to vhost '/' refused for user 'guest': connection limit (10) is
reached``); a negative limit is no limit.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Union, cast, final

from .. import _erlang
from .. import _regex as _regexes
from .._untrusted import json_loads
from ..errors import DefinitionsError, NotAllowed, PolicyError, PolicyWarning, PreconditionFailed

if TYPE_CHECKING:
    from ._broker import Broker
    from ._exchange import Exchange
    from ._message import Message
    from ._profile import Profile
    from ._queue import Queue
    from ._vhost import VirtualHost

__all__ = [
    "APPLY_TO", "OPERATOR_KEYS", "Policies", "Policy", "PolicyCommands", "QueueSettings",
    "alternate_exchange", "effective_definition", "queue_settings",
    "validate_policy",
]

#: What a policy may apply to.
APPLY_TO: Final = ("all", "exchanges", "queues")
#: ... and on RabbitMQ 3.12 and later (rabbit_policy:apply_to_validation/2).
APPLY_TO_4: Final = (*APPLY_TO, "classic_queues", "quorum_queues", "streams")
_APPLY_TO_TYPE: Final = {"classic": "classic_queues", "quorum": "quorum_queues",
                         "stream": "streams"}

# -- the keys and their validators (rabbit_policies, rabbit_mirror_queue_misc...) -----------------

def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_Check = Callable[[Any], 'str | None']


def _integer(minimum: int | None, what: str, maximum: int | None = None) -> _Check:
    def check(value: Any) -> str | None:
        if _is_int(value) and (minimum is None or value >= minimum) and (
                maximum is None or value <= maximum):
            return None
        return f"{_erlang.term(value)} is not a valid {what}"
    return check


def _string(what: str) -> _Check:
    def check(value: Any) -> str | None:
        return None if isinstance(value, str) else f"{_erlang.term(value)} is not a valid {what}"
    return check


def _one_of(choices: tuple[Any, ...], what: str) -> _Check:
    def check(value: Any) -> str | None:
        ok = any(type(value) is type(c) and value == c for c in choices)
        return None if ok else f"{_erlang.term(value)} is not a valid {what}"
    return check


_MAX_AGE = re.compile(r"([0-9]+)(Y|M|D|h|m|s)")


def _max_age(value: Any) -> str | None:
    # rabbit_amqqueue:check_max_age/1 (RabbitMQ crashes on some bad values: embroker says why).
    match = _MAX_AGE.fullmatch(value) if isinstance(value, str) else None
    if match is not None and int(match.group(1)) > 0:
        return None
    return f"{_erlang.term(value)} is not a valid max age"


#: rabbit_policies: the keys RabbitMQ itself validates, with their checks (in policies).
_BUILTIN: dict[str, _Check] = {
    "alternate-exchange": _string("alternate exchange name"),
    "dead-letter-exchange": _string("dead letter exchange name"),
    "dead-letter-routing-key": _string("dead letter routing key"),
    "dead-letter-strategy": _one_of(("at-most-once", "at-least-once"), "dead letter strategy"),
    "message-ttl": _integer(0, "message TTL"),
    "expires": _integer(1, "queue expiry"),
    "max-length": _integer(0, "maximum length"),
    "max-length-bytes": _integer(0, "maximum length in bytes"),
    "max-in-memory-length": _integer(0, "maximum memory in bytes"),  # sic, as RabbitMQ says
    "max-in-memory-bytes": _integer(0, "maximum memory in bytes"),
    "queue-mode": _one_of(("default", "lazy"), "queue-mode value"),
    "queue-version": _one_of((1, 2), "queue-version value"),
    "overflow": _one_of(("drop-head", "reject-publish", "reject-publish-dlx"), "overflow value"),
    "delivery-limit": _integer(0, "delivery limit"),
    "max-age": _max_age,
    "stream-max-segment-size-bytes": _integer(0, "segment size", 3_000_000_000),
    "queue-leader-locator": _one_of(("client-local", "balanced", "random", "least-leaders"),
                                    "queue leader locator value"),
    "initial-cluster-size": _integer(0, "cluster size"),
}

#: RabbitMQ 4's (v4.1.4 rabbit_policies:validate_policy0/2): ``consumer-timeout`` (3.12) and
#: ``stream-filter-size-bytes`` (3.13) are new, a ``delivery-limit`` may be any integer (negative:
#: no limit).
_BUILTIN_4: dict[str, _Check] = {
    **_BUILTIN,
    "consumer-timeout": _integer(0, "consumer timeout"),
    "delivery-limit": _integer(None, "delivery limit"),
    "stream-filter-size-bytes": _integer(16, "filter size. Valid range is 16-255", 255),
}

#: The keys an operator policy may set (rabbit_policies' operator_policy_validator).
OPERATOR_KEYS: Final = frozenset({"expires", "message-ttl", "max-length", "max-length-bytes",
                                  "max-in-memory-length", "max-in-memory-bytes",
                                  "delivery-limit"})
#: ... on RabbitMQ 4 (v4.1.4 rabbit_policies, rabbit_classic_queue, rabbit_quorum_queue).
_OPERATOR_KEYS_4: Final = OPERATOR_KEYS | {"queue-version", "overflow"}

#: Keys whose policy and operator policy values merge to the lower one (rabbit_policies:
#: merge_policy_value/3).
_LOWER_WINS: Final = OPERATOR_KEYS

_MIRRORING: Final = ("ha-mode", "ha-params", "ha-sync-mode", "ha-sync-batch-size",
                     "ha-promote-on-shutdown", "ha-promote-on-failure")
_FEDERATION: Final = ("federation-upstream", "federation-upstream-set",
                      "federation-upstream-pattern")
_MASTER_LOCATORS: Final = ("min-masters", "client-local", "random")


def _validate_locator(terms: list[tuple[str, Any]]) -> str | None:
    # rabbit_queue_location_validator
    value = terms[0][1]
    if isinstance(value, str) and value in _MASTER_LOCATORS:
        return None
    return f"{_erlang.term(value)} invalid queue-master-locator value"


def _validate_locator_4(permitted: bool) -> Callable[[list[tuple[str, Any]]], str | None]:
    # v4.1.4 rabbit_classic_queue:validate_policy/1: deprecated (queue_master_locator), the
    # leader locators' values
    def validate(terms: list[tuple[str, Any]]) -> str | None:
        if not permitted:
            return "use of deprecated queue-master-locator argument is not permitted"
        value = terms[0][1]
        if isinstance(value, str) and value in _LEADER_LOCATORS_4:
            return None
        return f"{_erlang.term(value)} is not a valid master locator"
    return validate


_LEADER_LOCATORS_4: Final = ("client-local", "balanced", "random", "least-leaders", "min-masters")


def _validate_target_group_size(terms: list[tuple[str, Any]]) -> str | None:
    # v4.1.4 rabbit_quorum_queue:validate_policy/1
    value = terms[0][1]
    if _is_int(value) and value > 0:
        return None
    return f"{_erlang.term(value)} is not a valid qq target count value"


def _validate_with(checks: Mapping[str, _Check]) -> Callable[[list[tuple[str, Any]]], str | None]:
    def validate(terms: list[tuple[str, Any]]) -> str | None:
        for key, value in terms:
            error = checks[key](value)
            if error is not None:
                return error
        return None
    return validate


_validate_builtin = _validate_with(_BUILTIN)


def _validate_mirroring(terms: list[tuple[str, Any]]) -> str | None:
    # rabbit_mirror_queue_misc:validate_policy/1 and the ha_mode modules
    given = dict(terms)
    if "ha-mode" not in given:
        return ("ha-mode must be specified to specify ha-params, ha-sync-mode or "
                "ha-promote-on-shutdown")
    mode = given["ha-mode"]
    if not isinstance(mode, str) or mode not in ("all", "exactly", "nodes"):
        return f"{_erlang.term(mode)} is not a valid ha-mode value"
    params = given.get("ha-params")
    shown = "none" if "ha-params" not in given else _erlang.term(params)
    if mode == "all" and "ha-params" in given:
        return 'ha-mode="all" does not take parameters'
    if mode == "exactly" and not (isinstance(params, int) and _is_int(params) and params > 0):
        return f'ha-mode="exactly" takes an integer, {shown} given'
    if mode == "nodes":
        if not isinstance(params, list):
            return f'ha-mode="nodes" takes a list, {shown} given'
        if not params:
            return 'ha-mode="nodes" list must be non-empty'
        invalid = [p for p in params if not isinstance(p, str)]
        if invalid:
            return f'ha-mode="nodes" takes a list of strings, {_erlang.term(invalid)} was not a string'
    sync = given.get("ha-sync-mode", "manual")
    if sync not in ("manual", "automatic") or not isinstance(sync, str):
        return f'ha-sync-mode must be "manual" or "automatic", got {_erlang.term(sync)}'
    if "ha-sync-batch-size" in given:
        size = given["ha-sync-batch-size"]
        if not (_is_int(size) and size > 0):
            return f"ha-sync-batch-size takes an integer greater than 0, {_erlang.term(size)} given"
    for key in ("ha-promote-on-shutdown", "ha-promote-on-failure"):
        value = given.get(key, "always")
        if not isinstance(value, str) or value not in ("always", "when-synced"):
            return f'{key} must be "always" or "when-synced", got {_erlang.term(value)}'
    return None


def _validate_federation(terms: list[tuple[str, Any]]) -> str | None:
    # rabbit_federation_parameters:validate_policy/1 (the federation plugin's keys)
    if len(terms) >= 2:
        return ("cannot specify federation-upstream, federation-upstream-set or "
                "federation-upstream-pattern together")
    key, value = terms[0]
    what = {"federation-upstream": "upstream name", "federation-upstream-set": "upstream set name",
            "federation-upstream-pattern": "upstream pattern name"}[key]
    if not isinstance(value, str):
        return f"{_erlang.term(value)} is not a valid federation {what}"
    if key == "federation-upstream-pattern":
        try:  # (a policymaker's pattern: within embroker._regex's bounds, as every pattern)
            _regexes.compile_set(value)
        except re.error as exc:
            return (f"could not compile pattern {value} to a regular expression. "
                    f'Error: {{"{exc.msg}",{exc.pos or 0}}}')
    return None


#: The policy validators in the order RabbitMQ runs them (measured on 3.10.8): each takes the
#: definition's terms for its keys, sorted by key.
_VALIDATORS: tuple[tuple[frozenset[str], Callable[[list[tuple[str, Any]]], str | None]], ...] = (
    (frozenset({"queue-master-locator"}), _validate_locator),
    (frozenset(_BUILTIN), _validate_builtin),
    (frozenset(_MIRRORING), _validate_mirroring),
    (frozenset(_FEDERATION), _validate_federation),
)
_OPERATOR_VALIDATORS = ((OPERATOR_KEYS, _validate_builtin),)

_Validators = tuple[tuple[frozenset[str], Callable[[list[tuple[str, Any]]], str | None]], ...]


def _validators_4(operator: bool, locator_permitted: bool) -> _Validators:
    # RabbitMQ 4.1.4: the mirroring validator is gone (classic_queue_mirroring was removed), so
    # ha-* keys are "not recognised policy settings". RabbitMQ runs its validators in its
    # registry's order, which cannot be measured here: embroker keeps 3.10's, with the queue
    # types' validators where their 3.10 counterparts were.
    builtin = _BUILTIN_4 if not operator else {k: _BUILTIN_4[k] for k in _OPERATOR_KEYS_4}
    return (
        (frozenset({"queue-master-locator"}), _validate_locator_4(locator_permitted)),
        (frozenset(builtin), _validate_with(builtin)),
        (frozenset({"target-group-size"}), _validate_target_group_size),
        *(() if operator else ((frozenset(_FEDERATION), _validate_federation),)),
    )

#: Keys accepted and kept with no effect, that setting warns about, and why.
_NO_EFFECT_WARNED: Final = {
    **dict.fromkeys(_MIRRORING, "a single embroker node has no mirrors"),
    **dict.fromkeys(_FEDERATION, "embroker does not federate with other brokers"),
}


def _sorted_terms(definition: Mapping[str, Any]) -> list[tuple[str, Any]]:
    # as RabbitMQ's map of the JSON object lists them: by key, bytewise
    return sorted(definition.items(), key=lambda kv: str(kv[0]).encode())


def _validate_definition(definition: Any, operator: bool, validators: _Validators) -> str | None:
    # rabbit_policy:validation/3
    if not isinstance(definition, Mapping):
        return f"definition must be a dictionary: {_erlang.term(definition)}"
    if not definition:
        return "no policy provided"
    left = _sorted_terms(definition)
    for keys, validate in validators:
        scope = [t for t in left if t[0] in keys]
        if scope:
            error = validate(scope)
            if error is not None:
                return error
            left = [t for t in left if t[0] not in keys]
    if left:
        return f"{_erlang.term(left)} are not recognised policy settings"
    return None


#: A value :func:`policy_errors` is not given (a key missing from a runtime parameter).
MISSING: Final[Any] = object()


def policy_errors(pattern: Any = MISSING, definition: Any = MISSING, priority: Any = MISSING,
                  apply_to: Any = MISSING, *, operator: bool = False,
                  profile: Profile | None = None) -> list[str]:
    """Every reason RabbitMQ refuses a policy's values for, in the order it reports them (the
    definition, then apply-to, the pattern and the priority: ``rabbit_policy``'s validators,
    last first); a value not given (:data:`MISSING`) is not checked.

    ``profile``: the RabbitMQ whose validators apply (3.10's without one).
    """
    errors = []
    if definition is not MISSING:
        if profile is not None and profile.rabbitmq4:
            validators = _validators_4(operator, profile.permits("queue_master_locator"))
        else:
            validators = _OPERATOR_VALIDATORS if operator else _VALIDATORS
        error = _validate_definition(definition, operator, validators)
        if error is not None:
            errors.append(error)
    if apply_to is not MISSING:
        if profile is not None and profile.rabbitmq4:
            if apply_to not in APPLY_TO_4:
                errors.append(f"apply-to '{apply_to}' unrecognised; should be one of: "
                              "'queues', 'classic_queues',  'quorum_queues', 'streams', "
                              "'exchanges', or 'all'")
        elif apply_to not in APPLY_TO:
            errors.append(f"apply-to '{apply_to}' unrecognised; should be 'queues', "
                          "'exchanges' or 'all'")
    if pattern is not MISSING:
        if not isinstance(pattern, str):
            errors.append(f"pattern should be a binary but was {_erlang.term(pattern)}")
        else:
            try:
                _regexes.compile_set(pattern)
            except re.error as exc:
                # RabbitMQ prints PCRE's message and offset; this is Python's.
                errors.append("pattern should be regular expression but is invalid: "
                              f'{{"{exc.msg}",{exc.pos or 0}}}')
    if priority is not MISSING and (not isinstance(priority, (int, float))
                                    or isinstance(priority, bool)):
        errors.append(f"priority should be a number, actually was {_erlang.term(priority)}")
    return errors


def validate_policy(pattern: Any, definition: Any, priority: Any = 0, apply_to: Any = "all", *,
                    operator: bool = False, profile: Profile | None = None) -> None:
    """Refuse a policy RabbitMQ would refuse, with its text: every reason of
    :func:`policy_errors`, a line each (the definition's first, then apply-to's, the
    pattern's and the priority's).

    ``profile``: the RabbitMQ whose validators apply (3.10's without one).

    Raises:
        PolicyError: ``Validation failed`` and RabbitMQ's reason.
    """
    errors = policy_errors(pattern, definition, priority, apply_to, operator=operator,
                           profile=profile)
    if errors:
        raise PolicyError.validation("\n".join(errors))


def limit_errors(definition: Any) -> list[str]:
    """Every reason RabbitMQ refuses a vhost's limits for (``rabbit_vhost_limit``), in its
    order: unknown keys, then ``max-queues``, then ``max-connections``."""
    if not isinstance(definition, Mapping):
        return [f"limits not a list {_erlang.term(definition)}"]
    known = ("max-queues", "max-connections")  # RabbitMQ reports in this order
    errors = []
    unknown = [t for t in _sorted_terms(definition) if t[0] not in known]
    if unknown:
        errors.append(f"Unrecognised terms {_erlang.term(unknown)} in limits")
    for key in known:
        if key in definition and not _is_int(definition[key]):
            errors.append(
                f"{key} should be a number, actually was {_erlang.term(definition[key])}")
    return errors


# -- policies ---------------------------------------------------------------------------------------

@final
@dataclass(frozen=True)
class Policy:
    """A policy or operator policy, as ``rabbitmqctl set_policy`` sets it.

    Attributes:
        name: its name (unique per vhost among policies, and among operator policies).
        pattern: the regular expression searched in resource names.
        definition: the settings (read-only).
        priority: the highest priority among the matching policies applies.
        apply_to: ``"all"``, ``"queues"`` or ``"exchanges"`` (RabbitMQ 4 also
            ``"classic_queues"``, ``"quorum_queues"``, ``"streams"``).
        vhost: the virtual host.
        operator: whether it is an operator policy.
        rabbitmq4: whether it applies and merges as RabbitMQ 4's (the broker's profile).
    """

    name: str
    pattern: str
    definition: Mapping[str, Any]
    priority: int | float = 0
    apply_to: str = "all"
    vhost: str = "/"
    operator: bool = False
    rabbitmq4: bool = False
    _regex: _regexes.Pattern[str] | re.Pattern[str] = field(init=False, repr=False,
                                                            compare=False)
    _not_for: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "definition", MappingProxyType(dict(self.definition)))
        object.__setattr__(self, "_regex", _regexes.compile_set(self.pattern))
        keys = set(self.definition)
        from ._queue_type import QUEUE_TYPES  # (a cycle: a queue type's settings are ours)
        # (a policy with a key a queue type refuses does not apply to a queue of that type)
        object.__setattr__(self, "_not_for", frozenset(
            name for name, queue_type in QUEUE_TYPES.items()
            if keys & queue_type.unsupported_policies(rabbitmq4=self.rabbitmq4)))

    @property
    def kind(self) -> str:
        """``"policy"`` or ``"operator policy"``, as texts name it."""
        return "operator policy" if self.operator else "policy"

    def describe(self) -> str:
        """``"policy 'dlx-all'"``."""
        return f"{self.kind} '{self.name}'"

    @property
    def ignored(self) -> tuple[str, ...]:
        """The keys it sets that embroker keeps but cannot honour (mirroring, federation)."""
        return tuple(k for k in self.definition if k in _NO_EFFECT_WARNED)

    def matches(self, kind: str, name: str, queue_type: str | None = None) -> bool:
        """Whether it applies to the ``kind`` (``"queue"``/``"exchange"``) named ``name`` of
        that queue type (``"classic"``/``"quorum"``), were it the only policy."""
        if self.apply_to != "all" and self.apply_to != kind + "s" and not (
                kind == "queue" and self.apply_to == _APPLY_TO_TYPE.get(queue_type or "")):
            return False
        if queue_type is not None and queue_type in self._not_for:
            return False
        return bool(self._regex.search(name))

    def to_definitions(self) -> dict[str, Any]:
        """As a definitions document lists it (``"apply-to"``, the definition as an object)."""
        return {"vhost": self.vhost, "name": self.name, "pattern": self.pattern,
                "apply-to": self.apply_to, "priority": self.priority,
                "definition": dict(self.definition)}


def _operator_wins(key: str, value: Any, operator_value: Any, rabbitmq4: bool) -> bool:
    # rabbit_policies:merge_policy_value/3 (3.10.8 and v4.1.4)
    if rabbitmq4 and key == "delivery-limit" and (value < 0 or operator_value < 0):
        return bool(operator_value > value)  # one is no limit: the more conservative, the higher
    if key in _LOWER_WINS:
        return bool(operator_value < value)
    if rabbitmq4 and key in ("queue-version", "overflow"):
        return True
    return isinstance(value, bool) and isinstance(operator_value, bool)


def effective_definition(policy: Policy | None, operator_policy: Policy | None) -> dict[str, Any]:
    """The policy's definition merged with the operator policy's (``rabbitmqctl list_queues
    effective_policy_definition``): where both set a key, the lower number wins (RabbitMQ 4: for
    a ``delivery-limit`` where one is negative, the higher; the operator's ``overflow`` and
    ``queue-version``)."""
    merged = dict(policy.definition) if policy is not None else {}
    if operator_policy is not None:
        for key, value in operator_policy.definition.items():
            mine = merged.get(key)
            if mine is None or _operator_wins(key, mine, value, operator_policy.rabbitmq4):
                merged[key] = value
    return dict(sorted(merged.items()))  # RabbitMQ merges the sorted keys


# -- what a queue ends up with -------------------------------------------------------------------

@final
@dataclass(frozen=True)
class QueueSettings:
    """A queue's effective settings: its arguments and policies combined as RabbitMQ does.

    Attributes:
        message_ttl, expires: milliseconds, or ``None``.
        max_length, max_length_bytes: limits on the ready messages, or ``None``.
        overflow: ``"drop-head"`` (the default), ``"reject-publish"`` or
            ``"reject-publish-dlx"``.
        dead_letter_exchange, dead_letter_routing_key: or ``None``.
        delivery_limit: a quorum queue's, or ``None``.
        origins: where each set value came from, by policy key (``"message-ttl"``):
            ``"argument"``, ``"policy 'p'"`` or ``"operator policy 'o'"``.
    """

    message_ttl: int | None = None
    expires: int | None = None
    max_length: int | None = None
    max_length_bytes: int | None = None
    overflow: str = "drop-head"
    dead_letter_exchange: str | None = None
    dead_letter_routing_key: str | None = None
    delivery_limit: int | None = None
    origins: Mapping[str, str] = field(default_factory=dict)

    def origin(self, key: str) -> str | None:
        """Where the value of ``key`` (``"dead-letter-exchange"``) came from, or ``None``."""
        return self.origins.get(key)

    def arguments(self) -> dict[str, Any]:
        """The effective values as the ``x-`` arguments that would give them."""
        return {f"x-{key}": getattr(self, _FIELDS[key]) for key in self.origins}


_FIELDS: Final = {"message-ttl": "message_ttl", "expires": "expires", "max-length": "max_length",
                  "max-length-bytes": "max_length_bytes", "overflow": "overflow",
                  "dead-letter-exchange": "dead_letter_exchange",
                  "dead-letter-routing-key": "dead_letter_routing_key",
                  "delivery-limit": "delivery_limit"}

_LOWER, _ARGUMENT, _POLICY, _RESOLVE = "lower", "argument", "policy", "resolve"

#: Who wins between a queue's argument and its policy value, per key and queue type.
_PRECEDENCE: Final = {
    "classic": {"expires": _LOWER, "dead-letter-exchange": _ARGUMENT,
                "dead-letter-routing-key": _ARGUMENT, "message-ttl": _LOWER,
                "max-length": _LOWER, "max-length-bytes": _LOWER, "overflow": _ARGUMENT},
    "quorum": {"max-length": _LOWER, "overflow": _POLICY, "max-length-bytes": _LOWER,
               "delivery-limit": _LOWER, "expires": _POLICY, "message-ttl": _LOWER,
               "dead-letter-exchange": _ARGUMENT, "dead-letter-routing-key": _ARGUMENT},
}
#: RabbitMQ 4's quorum queue (v4.1.4 rabbit_quorum_queue:gather_policy_config/2): the lower
#: ``expires`` wins, and a ``delivery-limit`` is resolved as ``resolve_delivery_limit/2`` does
#: (the higher when one is negative, else the lower).
_PRECEDENCE_4: Final = {
    "classic": _PRECEDENCE["classic"],
    "quorum": {**_PRECEDENCE["quorum"], "expires": _LOWER, "delivery-limit": _RESOLVE},
}

#: A RabbitMQ 4 quorum queue's delivery limit when nothing sets one (v4.1.4
#: rabbit_quorum_queue's DEFAULT_DELIVERY_LIMIT).
DEFAULT_DELIVERY_LIMIT_4: Final = 20
_DEFAULT_ORIGIN_4: Final = "RabbitMQ 4's default"

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _policy_values(policy: Policy | None, operator_policy: Policy | None,
                   rules: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    # rabbit_policy:get/2 for each key: the policy's value merged with the operator policy's
    # (the lower number where both set one of the keys they merge), and where it came from.
    pdef = policy.definition if policy is not None else _EMPTY
    odef = operator_policy.definition if operator_policy is not None else _EMPTY
    values: dict[str, tuple[Any, str]] = {}
    for key in rules:
        pvalue, ovalue = pdef.get(key), odef.get(key)
        if pvalue is not None and (ovalue is None or not _operator_wins(
                key, pvalue, ovalue, operator_policy.rabbitmq4)):  # type: ignore[union-attr]
            values[key] = (pvalue, policy.describe())  # type: ignore[union-attr]
        elif ovalue is not None:
            values[key] = (ovalue, operator_policy.describe())  # type: ignore[union-attr]
    return values


def _argument_wins(rule: str, argument: Any, policy_value: Any) -> bool:
    if rule == _ARGUMENT:
        return True
    if rule == _LOWER:
        return bool(argument <= policy_value)
    if rule == _RESOLVE:
        if argument < 0 or policy_value < 0:
            return bool(argument >= policy_value)
        return bool(argument <= policy_value)
    return False


def _with_default_limit(settings: QueueSettings) -> QueueSettings:
    if settings.delivery_limit is not None:
        return settings
    return replace(settings, delivery_limit=DEFAULT_DELIVERY_LIMIT_4, origins=MappingProxyType(
        {**settings.origins, "delivery-limit": _DEFAULT_ORIGIN_4}))


#: (policy, operator policy, queue type, RabbitMQ 4) -> (policy values, the settings without
#: arguments): queues under the same policies share them. Keyed by identity, checked against
#: the objects.
_CACHE: dict[tuple[int, int, bool, bool], tuple[Policy | None, Policy | None,
                                                dict[str, tuple[Any, str]], QueueSettings]] = {}
_CACHE_SIZE = 256


def queue_settings(arguments: Mapping[str, Any], policy: Policy | None = None,
                   operator_policy: Policy | None = None, *, quorum: bool = False,
                   rabbitmq4: bool = False) -> QueueSettings:
    """A queue's effective settings from its arguments, policy and operator policy (see the
    module's table), as RabbitMQ 3.10 combines them, or RabbitMQ 4 (``rabbitmq4``: a quorum
    queue's ``expires`` is the lower, its ``delivery-limit`` is 20 unless set, and a negative
    one, no limit, wins over a positive one).

    >>> p = Policy("cap", ".*", {"max-length": 10, "dead-letter-exchange": "dlx"})
    >>> s = queue_settings({"x-max-length": 50, "x-dead-letter-exchange": "mine"}, p)
    >>> s.max_length, s.dead_letter_exchange, s.origin("max-length")
    (10, 'mine', "policy 'cap'")
    >>> s = queue_settings({}, quorum=True, rabbitmq4=True)
    >>> s.delivery_limit, s.origin("delivery-limit")
    (20, "RabbitMQ 4's default")

    Runtime complexity: ``O(a)`` for ``a`` arguments, once the policies' values are known.
    """
    rules = (_PRECEDENCE_4 if rabbitmq4 else _PRECEDENCE)["quorum" if quorum else "classic"]
    defaults = rabbitmq4 and quorum
    key = (id(policy), id(operator_policy), quorum, rabbitmq4)
    cached = _CACHE.get(key)
    if cached is None or cached[0] is not policy or cached[1] is not operator_policy:
        values = _policy_values(policy, operator_policy, rules)
        base = QueueSettings(**{_FIELDS[k]: v for k, (v, _o) in values.items()},
                             origins=MappingProxyType({k: o for k, (_v, o) in values.items()}))
        if defaults:
            base = _with_default_limit(base)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        cached = _CACHE[key] = (policy, operator_policy, values, base)
    values, base = cached[2], cached[3]
    mine = {k[2:]: v for k, v in arguments.items() if k[2:] in rules and k.startswith("x-")}
    if not mine:
        return base
    fields: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for key_name, rule in rules.items():
        argument = mine.get(key_name)
        if key_name == "delivery-limit" and not _is_int(argument):
            argument = None
        pvalue, origin = values.get(key_name, (None, ""))
        if argument is None and pvalue is None:
            continue
        if pvalue is None or (argument is not None and _argument_wins(rule, argument, pvalue)):
            fields[_FIELDS[key_name]], origins[key_name] = argument, "argument"
        else:
            fields[_FIELDS[key_name]], origins[key_name] = pvalue, origin
    settings = QueueSettings(**fields, origins=MappingProxyType(origins))
    return _with_default_limit(settings) if defaults else settings


def alternate_exchange(name: str, arguments: Mapping[str, Any],
                       policy: Policy | None) -> str | None:
    """An exchange's alternate exchange: its argument, else its policy's (never for the
    default exchange, whose routing RabbitMQ does not pass on)."""
    if name == "":
        return None
    value = arguments.get("alternate-exchange")
    if value is None and policy is not None:
        value = policy.definition.get("alternate-exchange")
    return value if isinstance(value, str) else None


def alternate_exchange_origin(exchange: Exchange) -> str:
    """``" (set by policy 'ae')"`` when a policy gave ``exchange`` its alternate exchange."""
    policy = exchange.policy
    if policy is None or "alternate-exchange" in exchange.arguments:
        return ""
    return f" (set by {policy.describe()})"


#: The settings behind each way a message leaves a queue (or is refused by it).
_LIMIT_KEYS: Final = {"expired": ("message-ttl",), "delivery_limit": ("delivery-limit",),
                      "maxlen": ("max-length", "max-length-bytes"),
                      "evicted": ("max-length", "max-length-bytes"),
                      "refused": ("max-length", "max-length-bytes", "overflow")}


def limit_cause(queue: Queue, why: str, message: Message | None = None) -> str | None:
    """The policies behind a queue's limit that acted on a message (``why``: ``expired``,
    ``evicted``, ``maxlen``, ``delivery_limit``, ``refused``), in words (``"max-length 2 from
    operator policy 'cap'"``), or ``None`` when the queue's own arguments decided."""
    if queue.policy is None and queue.operator_policy is None:
        return None
    if why == "expired" and message is not None and "expiration" in message.properties:
        return None  # its own TTL may have been the shorter: no claim
    settings = queue.settings
    parts = []
    for key in _LIMIT_KEYS.get(why, ()):
        origin = settings.origin(key)
        if origin not in (None, "argument"):
            unit = " ms" if key == "message-ttl" else ""
            parts.append(f"{key} {getattr(settings, _FIELDS[key])}{unit} from {origin}")
    return ", ".join(parts) or None


def dead_letter_cause(queue: Queue, reason: str, message: Message) -> str | None:
    """The policies behind a dead-lettering, in words (``"through policy 'dlx-all'"``), or
    ``None`` when the queue's own arguments decided everything."""
    if queue.policy is None and queue.operator_policy is None:
        return None
    settings = queue.settings
    limits = limit_cause(queue, reason, message)
    parts = [limits] if limits else []
    for key in ("dead-letter-exchange", "dead-letter-routing-key"):
        origin = settings.origin(key)
        if origin not in (None, "argument"):
            parts.append(f"through {origin}" if key == "dead-letter-exchange"
                         else f"routing key from {origin}")
    return ", ".join(parts) or None


# -- a virtual host's policies and limits -------------------------------------------------------

Resource = Union["Queue", "Exchange"]


@final
class Policies:
    """The policies, operator policies and limits of one virtual host, and their application.

    Args:
        vhost: the virtual host.
    """

    def __init__(self, vhost: VirtualHost) -> None:
        self.vhost = vhost
        #: Policies by name.
        self.policies: dict[str, Policy] = {}
        #: Operator policies by name.
        self.operator_policies: dict[str, Policy] = {}
        #: ``max-connections`` / ``max-queues``, as set.
        self.limits: dict[str, int] = {}
        self._ordered: tuple[Policy, ...] = ()
        self._operator_ordered: tuple[Policy, ...] = ()
        self._ties: dict[tuple[str, ...], list[str]] = {}

    def __bool__(self) -> bool:
        return bool(self.policies or self.operator_policies)

    # -- matching ---------------------------------------------------------------------------------

    def _first(self, ordered: tuple[Policy, ...], kind: str, name: str,
               queue_type: str | None) -> Policy | None:
        for index, policy in enumerate(ordered):
            if policy.matches(kind, name, queue_type):
                tied = [p.name for p in ordered[index + 1:] if p.priority == policy.priority
                        and p.matches(kind, name, queue_type)]
                if tied:
                    self._ties.setdefault((policy.name, *tied), []).append(
                        f"{kind} '{name}'")
                return policy
        return None

    def match(self, kind: str, name: str, queue_type: str | None = None,
              ) -> tuple[Policy | None, Policy | None]:
        """The policy and operator policy that apply to the ``kind`` (``"queue"`` or
        ``"exchange"``) called ``name`` (a queue of ``queue_type``).

        Runtime complexity: ``O(p)`` regular expression searches, ``p`` the number of policies.
        """
        return (self._first(self._ordered, kind, name, queue_type),
                self._first(self._operator_ordered, kind, name, queue_type))

    def _match_resource(self, resource: Resource) -> tuple[Policy | None, Policy | None]:
        if resource.kind == "queue":
            queue = cast("Queue", resource)
            return self.match("queue", queue.name, queue.type.name)
        return self.match("exchange", resource.name)

    def attach(self, resource: Resource) -> None:
        """Apply the matching policies to a new queue or exchange."""
        if not self:
            return
        policy, operator_policy = self._match_resource(resource)
        if policy is not None or operator_policy is not None:
            resource.apply_policies(policy, operator_policy)
        self._warn_ties()

    def apply(self) -> int:
        """Re-match every queue and exchange and apply what changed, exchanges first (as
        RabbitMQ): returns how many changed.

        Runtime complexity: ``O(n * p)`` for ``n`` resources and ``p`` policies.
        """
        changed = 0
        resources: list[Resource] = [*self.vhost.exchanges.values(), *self.vhost.queues.values()]
        for resource in resources:
            if resource.kind == "queue" and cast("Queue", resource).deleted:
                continue
            policy, operator_policy = self._match_resource(resource)
            if policy == resource.policy and operator_policy == resource.operator_policy:
                continue
            resource.apply_policies(policy, operator_policy)
            changed += 1
        self._warn_ties()
        return changed

    def _warn_ties(self) -> None:
        ties, self._ties = self._ties, {}
        for names, resources in ties.items():
            more = f" (and {len(resources) - 1} more)" if len(resources) > 1 else ""
            quoted = " and ".join(f"'{n}'" for n in names)
            warnings.warn(
                f"policies {quoted} of the same priority all match {resources[0]} in vhost "
                f"'{self.vhost.name}'{more}: RabbitMQ applies one of them by the order of its "
                f"internal table (neither by name nor by age), embroker the first by name, "
                f"'{names[0]}'; give them different priorities", PolicyWarning, stacklevel=4)

    # -- changes ----------------------------------------------------------------------------------

    def _reorder(self) -> None:
        def order(policies: dict[str, Policy]) -> tuple[Policy, ...]:
            return tuple(sorted(policies.values(), key=lambda p: (-p.priority, p.name)))
        self._ordered = order(self.policies)
        self._operator_ordered = order(self.operator_policies)

    def set(self, policy: Policy) -> None:
        """Add or replace a (validated) policy and apply it at once."""
        table = self.operator_policies if policy.operator else self.policies
        table[policy.name] = policy
        events = self.vhost.broker.plugins.events
        if events is not None:
            events.policy_set(policy, self.vhost.name, operator=policy.operator)
        self._reorder()
        if policy.ignored:
            reasons: dict[str, list[str]] = {}
            for key in policy.ignored:
                reasons.setdefault(_NO_EFFECT_WARNED[key], []).append(key)
            for why, keys in reasons.items():
                warnings.warn(
                    f"{policy.describe()} in vhost '{self.vhost.name}': {', '.join(keys)} "
                    f"kept but with no effect ({why})", PolicyWarning, stacklevel=4)
        self.apply()

    def clear(self, name: str, *, operator: bool = False) -> Policy:
        """Remove a policy and apply the change at once; returns it.

        Raises:
            PolicyError: there is no such policy (``Parameter does not exist``).
        """
        table = self.operator_policies if operator else self.policies
        policy = table.pop(name, None)
        if policy is None:
            raise PolicyError("Parameter does not exist")
        events = self.vhost.broker.plugins.events
        if events is not None:
            events.policy_cleared(name, self.vhost.name, operator=operator)
        self._reorder()
        self.apply()
        return policy

    # -- limits -----------------------------------------------------------------------------------

    def set_limits(self, definition: Mapping[str, Any]) -> None:
        """Set ``max-connections`` and ``max-queues`` (``rabbitmqctl set_vhost_limits``): they
        apply to new connections and queues; a negative limit is none.

        Raises:
            PolicyError: as RabbitMQ's validation (a non-integer, an unknown key).
        """
        errors = limit_errors(definition)
        if errors:
            raise PolicyError.validation("\n".join(errors))
        self.limits = dict(definition)

    def _limit(self, key: str) -> int | None:
        limit = self.limits.get(key)
        return limit if limit is not None and limit >= 0 else None

    def check_queue_limit(self, name: str) -> None:
        """Raise PreconditionFailed (406) when a new queue ``name`` would pass ``max-queues``."""
        limit = self._limit("max-queues")
        if limit is not None and len(self.vhost.queues) + 1 > limit:
            raise PreconditionFailed(f"cannot declare queue '{name}': queue limit in vhost "
                                     f"'{self.vhost.name}' ({limit}) is reached")

    def check_connection_limit(self, user: str) -> None:
        """Raise NotAllowed (530) when a new connection would pass ``max-connections``."""
        limit = self._limit("max-connections")
        if limit is None:
            return
        count = sum(1 for c in self.vhost.broker.connections.values()
                    if c.vhost is self.vhost and c.is_open)
        if count >= limit:
            raise NotAllowed(f"access to vhost '{self.vhost.name}' refused for user '{user}': "
                             f"connection limit ({limit}) is reached")


# -- rabbitmqctl's commands on a broker -------------------------------------------------------------

def _definition(value: Mapping[str, Any] | str) -> Any:
    if isinstance(value, str):
        try:
            return json_loads(value)
        except ValueError as exc:
            raise PolicyError(f"JSON decoding error. Reason: {exc}") from None
    return value


class PolicyCommands:
    """``rabbitmqctl``'s policy and limit commands, with its names and arguments (a part of
    :class:`~embroker.model.Broker`). Each applies at once, under the broker's lock."""

    _lock: threading.RLock
    vhosts: dict[str, VirtualHost]
    profile: Profile

    def _policies(self, vhost: str) -> Policies:
        found = self.vhosts.get(vhost)
        if found is None:
            raise PolicyError(f"Virtual host '{vhost}' does not exist")
        return found.policies

    def _set(self, operator: bool, name: str, pattern: str, definition: Mapping[str, Any] | str,
             priority: int | float, apply_to: str, vhost: str) -> Policy:
        settings = _definition(definition)
        profile = self.profile
        validate_policy(pattern, settings, priority, apply_to, operator=operator, profile=profile)
        policy = Policy(name, pattern, settings, priority, apply_to, vhost, operator,
                        profile.rabbitmq4)
        with self._lock:
            self._policies(vhost).set(policy)
        return policy

    def set_policy(self, name: str, pattern: str, definition: Mapping[str, Any] | str, *,
                   priority: int | float = 0, apply_to: str = "all", vhost: str = "/") -> Policy:
        """``rabbitmqctl set_policy [--vhost] [--priority] [--apply-to] NAME PATTERN DEFINITION``:
        add or replace a policy; it applies at once to the matching queues and exchanges.

        Args:
            name: the policy's name in its vhost.
            pattern: a regular expression searched in queue and exchange names.
            definition: the settings, a mapping or JSON text (``{"message-ttl": 60000}``).
            priority: among matching policies the highest applies.
            apply_to: ``"all"``, ``"queues"`` or ``"exchanges"``.
            vhost: the virtual host.

        Raises:
            PolicyError: RabbitMQ would refuse it (``Validation failed`` and its reason).

        Warns:
            PolicyWarning: the definition has keys kept with no effect (mirroring, federation),
                or policies of the same priority match one resource.
        """
        return self._set(False, name, pattern, definition, priority, apply_to, vhost)

    def clear_policy(self, name: str, *, vhost: str = "/") -> None:
        """``rabbitmqctl clear_policy [--vhost] NAME``: remove a policy (applies at once).

        Raises:
            PolicyError: no such policy (``Parameter does not exist``) or vhost.
        """
        with self._lock:
            self._policies(vhost).clear(name)

    def set_operator_policy(self, name: str, pattern: str, definition: Mapping[str, Any] | str,
                            *, priority: int | float = 0, apply_to: str = "all",
                            vhost: str = "/") -> Policy:
        """``rabbitmqctl set_operator_policy``: as :meth:`set_policy`, for the limits an operator
        imposes (``expires``, ``message-ttl``, ``max-length``, ``max-length-bytes``,
        ``max-in-memory-length``, ``max-in-memory-bytes``, ``delivery-limit``): where the
        queue's policy or argument sets one too, the lower value applies.

        Raises:
            PolicyError: RabbitMQ would refuse it.
        """
        return self._set(True, name, pattern, definition, priority, apply_to, vhost)

    def clear_operator_policy(self, name: str, *, vhost: str = "/") -> None:
        """``rabbitmqctl clear_operator_policy [--vhost] NAME``.

        Raises:
            PolicyError: no such operator policy or vhost.
        """
        with self._lock:
            self._policies(vhost).clear(name, operator=True)

    def list_policies(self, vhost: str = "/") -> list[Policy]:
        """``rabbitmqctl list_policies``: the vhost's policies, lowest priority first."""
        with self._lock:
            return sorted(self._policies(vhost).policies.values(), key=lambda p: p.priority)

    def list_operator_policies(self, vhost: str = "/") -> list[Policy]:
        """``rabbitmqctl list_operator_policies``: lowest priority first."""
        with self._lock:
            return sorted(self._policies(vhost).operator_policies.values(),
                          key=lambda p: p.priority)

    def set_vhost_limits(self, definition: Mapping[str, Any] | str, *, vhost: str = "/") -> None:
        """``rabbitmqctl set_vhost_limits [--vhost] DEFINITION``: ``{"max-connections": N,
        "max-queues": N}`` (replacing the previous limits; negative: no limit). Existing
        connections and queues stay; new ones past a limit are refused as RabbitMQ refuses
        them.

        Raises:
            PolicyError: RabbitMQ would refuse it.
        """
        limits = _definition(definition)
        with self._lock:
            self._policies(vhost).set_limits(limits)

    def clear_vhost_limits(self, *, vhost: str = "/") -> None:
        """``rabbitmqctl clear_vhost_limits [--vhost]``."""
        with self._lock:
            self._policies(vhost).limits = {}

    def list_vhost_limits(self, vhost: str = "/") -> dict[str, int]:
        """``rabbitmqctl list_vhost_limits [--vhost]``."""
        with self._lock:
            return dict(self._policies(vhost).limits)


# -- definitions documents ------------------------------------------------------------------------

#: Runtime parameter components embroker honours; any other is refused by default.
_HONOURED = ("operator_policy", "vhost-limits")


def _pairs(value: Any) -> Any:
    # RabbitMQ 3.10 exports an operator policy's definition as a list of [key, value] pairs
    # (and then refuses that list on import): read it as the object it stands for.
    if isinstance(value, list) and all(isinstance(p, list) and len(p) == 2
                                       and isinstance(p[0], str) for p in value):
        return dict(value)
    return value


#: The runtime parameter components of RabbitMQ's plugins that link to other brokers
#: (``rabbitmq_federation``, ``rabbitmq_shovel``): embroker cannot honour them.
UNHONOURED_COMPONENTS: Final = ("federation", "federation-upstream", "federation-upstream-set",
                                "shovel")


def _html(text: str) -> str:
    """``rabbit_misc:escape_html_tags/1``, which RabbitMQ's import applies to a refused
    policy's or parameter's text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _refused(exc: PolicyError, where: str) -> DefinitionsError:
    """A policy or parameter the model refused, as RabbitMQ's import says it: the
    ``Validation failed`` text (which ends its reason with a new line), ``(WHERE)``, escaped."""
    text = str(exc)
    return DefinitionsError(_html(f"{text}\n ({where})" if text.startswith("Validation failed")
                                  else f"{text} ({where})"))


@final
class DefinitionsPlan:
    """The policies and runtime parameters (operator policies, vhost limits) of a definitions
    document as :func:`~._definitions_schema.check` made it: those embroker cannot honour are
    refused before anything is loaded; the rest are set one at a time in RabbitMQ's order, by
    :meth:`apply_policy` and :meth:`apply_parameter`, the limits last (:meth:`apply_limits`).

    Args:
        document: the checked document.
        vhost_of: the name of the vhost an item is in (``None``: it names none, and the
            caller named none either).
        ignore_unsupported: load the rest when the document has runtime parameters embroker
            cannot honour (shovels, federation upstreams...), and list them in :attr:`ignored`;
            by default they are refused.

    Raises:
        DefinitionsError: runtime parameters embroker cannot honour.
    """

    def __init__(self, document: Mapping[str, Any],
                 vhost_of: Callable[[Mapping[str, Any]], str | None],
                 ignore_unsupported: bool) -> None:
        self._vhost_of = vhost_of
        self._queues: list[Mapping[str, Any]] = document.get("queues", [])
        #: The policies, then the runtime parameters embroker honours, in the document's order.
        self.policies: list[Mapping[str, Any]] = document.get("policies", [])
        self.parameters: list[Mapping[str, Any]] = []
        self._limits: list[tuple[str, Any]] = []
        refused = []
        for item in document.get("parameters", []):
            if item["component"] in UNHONOURED_COMPONENTS:
                refused.append(f"{item['component']} '{item['name']}' in vhost "
                               f"'{vhost_of(item)}'")
            else:
                self.parameters.append(item)
        if refused and not ignore_unsupported:
            raise DefinitionsError(
                f"embroker cannot honour these runtime parameters: {', '.join(refused)} "
                "(a test broker has no links to other brokers); remove them, or load the rest "
                "with ignore_unsupported=True (--ignore-unsupported) and see what was left out")
        #: What was left out (``"shovel 'move' in vhost '/'"``).
        self.ignored: list[str] = refused

    def check_queue_limits(self, broker: Broker) -> None:
        """RabbitMQ's check before an import: the new queues must fit the vhosts' existing
        ``max-queues`` (the document's own limits apply only after it is loaded).

        Raises:
            DefinitionsError: with RabbitMQ's text.
        """
        adding: dict[str, set[str]] = {}
        for item in self._queues:
            name, where = item["name"], self._vhost_of(item)
            vhost = broker.vhosts.get(where) if where is not None else None
            if vhost is not None and name not in vhost.queues:
                adding.setdefault(vhost.name, set()).add(name)
        for where, names in adding.items():
            vhost = broker.vhosts[where]
            limit = vhost.policies._limit("max-queues")
            if limit is None:
                continue
            count = len(vhost.queues)
            if count + len(names) > limit:
                raise DefinitionsError(
                    f'Adding {len(names)} queue(s) to virtual host "{where}" would exceed the '
                    f"limit of {limit} queue(s).\n\nThis virtual host currently has {count} "
                    f"queue(s) defined.\n\nImport aborted!")

    def _vhost(self, broker: Broker, where: str | None) -> VirtualHost:
        from ._definitions_schema import no_such_vhost

        vhost = broker.vhosts.get(where) if where is not None else None
        if vhost is None:
            raise no_such_vhost(where)
        return vhost

    def apply_policy(self, broker: Broker, item: Mapping[str, Any]) -> None:
        """Set one policy of the document, as ``rabbit_definitions:add_policy`` does: a name,
        then ``rabbit_policy``'s validation, then the vhost.

        Raises:
            DefinitionsError: RabbitMQ's text (its reason, then ``(vhost/name)``).
        """
        where = self._vhost_of(item)
        name = item.get("name")
        if name is None:
            raise DefinitionsError(f"policy in virtual host '{where or 'undefined'}' has "
                                   "undefined name")
        if "definition" not in item:
            raise DefinitionsError(f"policy '{name}' in virtual host '{where}' has no "
                                   "definition")
        definition = _pairs(item["definition"])
        priority, apply_to = item.get("priority", 0), item.get("apply-to", "all")
        try:
            validate_policy(item.get("pattern"), definition, priority, apply_to,
                            profile=broker.profile)
        except PolicyError as exc:
            raise _refused(exc, f"{where or 'undefined'}/{name}") from None
        self._vhost(broker, where).policies.set(Policy(
            name, item["pattern"], definition, priority, apply_to, str(where), False,
            broker.profile.rabbitmq4))

    def apply_parameter(self, broker: Broker, item: Mapping[str, Any]) -> None:
        """Set one runtime parameter of the document, as ``rabbit_runtime_parameters:set/5``:
        an operator policy at once, a vhost's limits checked now and set by
        :meth:`apply_limits`.

        Raises:
            DefinitionsError: RabbitMQ's text (its reason, then ``(vhost/component/name)``).
        """
        component, name, value = item["component"], item["name"], item["value"]
        where = self._vhost_of(item)
        suffix = f"{where or 'undefined'}/{component}/{name}"
        if component == "policy":
            raise _refused(PolicyError("policies may not be set using this method"), suffix)
        if component not in ("operator_policy", "vhost-limits"):
            raise _refused(PolicyError.validation(f"component {component} not found"), suffix)
        if not isinstance(value, Mapping):
            raise _refused(PolicyError.validation(f"{name} not a list {_erlang.term(value)}"),
                           suffix)
        if component == "vhost-limits":
            limits = _pairs(value)
            errors = limit_errors(limits)
            if errors:
                raise _refused(PolicyError.validation("\n".join(errors)), suffix)
            self._vhost(broker, where)
            self._limits.append((str(where), limits))
            return
        definition = _pairs(value.get("definition"))
        priority, apply_to = value.get("priority", 0), value.get("apply-to", "all")
        try:
            validate_policy(value.get("pattern"), definition, priority, apply_to,
                            operator=True, profile=broker.profile)
        except PolicyError as exc:
            raise _refused(exc, suffix) from None
        self._vhost(broker, where).policies.set(Policy(
            name, value["pattern"], definition, priority, apply_to, str(where), True,
            broker.profile.rabbitmq4))

    def apply_limits(self, broker: Broker) -> None:
        """Set the document's vhost limits (checked by :meth:`apply_parameter`), after its
        queues: RabbitMQ's import declares queues without looking at ``max-queues``."""
        for where, limits in self._limits:
            broker.vhosts[where].policies.set_limits(limits)


def export_policies(broker: Broker) -> list[dict[str, Any]]:
    """The ``policies`` section of a definitions document."""
    return [p.to_definitions() for vhost in broker.vhosts.values()
            for p in vhost.policies.policies.values()]


def export_parameters(broker: Broker) -> list[dict[str, Any]]:
    """The ``parameters`` section: vhost limits and operator policies
    (:meth:`Broker.parameters <embroker.model.Broker.parameters>`), as RabbitMQ writes them,
    except that an operator policy's definition is an object (RabbitMQ 3.10 writes a list of
    pairs that its own import refuses)."""
    return broker.parameters()


def export_vhost_limits(vhost: VirtualHost) -> list[list[Any]]:
    """A vhost's ``limits`` as RabbitMQ's export lists them in ``vhosts`` (pairs; its import
    reads limits from ``parameters`` only)."""
    return [[key, value] for key, value in vhost.policies.limits.items()]
