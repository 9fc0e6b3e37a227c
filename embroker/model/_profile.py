"""Which RabbitMQ the broker is: the version whose behaviour it follows where RabbitMQ's versions
differ, and the state of RabbitMQ 4's *deprecated features*.

embroker follows RabbitMQ 3.10 unless asked for RabbitMQ 4 (``Broker(as_rabbitmq="4.1.x")``,
``serve --as-rabbitmq 4.1.x``). RabbitMQ 4 keeps some 3.x behaviours as deprecated features
(``rabbit_deprecated_features``): *permitted by default* ones behave as in 3.x until the
operator denies them (``deprecated_features.permit.NAME = false`` in rabbitmq.conf;
``Broker(deprecated_features={"NAME": False})`` here), *removed* ones are gone.

>>> Profile.parse("4.1.x").version, Profile.parse("4.1.x").presented_version
((4, 1, 0), '4.1.0')
>>> Profile.parse("3.10.8").permits("amqp_address_v1")
True
>>> Profile.parse("4.1.4", {"amqp_address_v1": False}).permits("amqp_address_v1")
False
>>> Profile.parse("4.1.4").permits("classic_queue_mirroring")
False
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, final

__all__ = ["DEPRECATED_FEATURES", "Profile"]

#: RabbitMQ 4's deprecated features that change what a client sees, with their phase in 4.0 to
#: 4.2 (``-rabbit_deprecated_feature`` in rabbit_amqp_session, rabbit_channel,
#: rabbit_amqqueue, rabbit_mirror_queue_misc, rabbit_queue_location).
DEPRECATED_FEATURES: Final[Mapping[str, str]] = {
    "amqp_address_v1": "permitted_by_default",
    "amqp_filter_set_bug": "permitted_by_default",
    "global_qos": "permitted_by_default",
    "transient_nonexcl_queues": "permitted_by_default",
    "queue_master_locator": "permitted_by_default",
    "classic_queue_mirroring": "removed",
}

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+|x))?$")


@final
@dataclass(frozen=True)
class Profile:
    """The RabbitMQ the broker behaves as.

    Attributes:
        version: ``(major, minor, patch)``: ``(3, 10, 8)`` unless asked otherwise.
        presented_version: the version string clients are told (``"4.1.0"`` for ``"4.1.x"``).
        denied: the deprecated features the operator denied (RabbitMQ 4 only).
    """

    version: tuple[int, int, int] = (3, 10, 8)
    presented_version: str = "3.10.8"
    denied: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, version: str | None,
              deprecated_features: Mapping[str, bool] | None = None) -> Profile:
        """The profile for ``as_rabbitmq`` (``None``: 3.10.8) and ``deprecated_features``.

        Raises:
            ValueError: a version that is not ``X.Y.Z``, ``X.Y.x`` or ``X.Y``, one older than
                3.10, an unknown deprecated feature, or deprecated features for RabbitMQ 3.
        """
        if version is None:
            numbers = (3, 10, 8)
            presented = "3.10.8"
        else:
            match = _VERSION.match(version)
            if match is None:
                raise ValueError(f"as_rabbitmq: {version!r} is not a RabbitMQ version "
                                 "(X.Y.Z, or X.Y.x for a minor version's behaviour)")
            patch = match.group(3)
            numbers = (int(match.group(1)), int(match.group(2)),
                       int(patch) if patch not in (None, "x") else 0)
            presented = ".".join(map(str, numbers))
            if numbers < (3, 10, 0):
                raise ValueError(f"as_rabbitmq: {version!r}: embroker follows RabbitMQ 3.10 "
                                 "and later")
        denied = set()
        for name, permitted in (deprecated_features or {}).items():
            if name not in DEPRECATED_FEATURES:
                raise ValueError(f"unknown deprecated feature {name!r} (RabbitMQ 4's are "
                                 f"{', '.join(sorted(DEPRECATED_FEATURES))})")
            if numbers < (4, 0, 0):
                raise ValueError("deprecated features are RabbitMQ 4's: ask for it with "
                                 "as_rabbitmq='4.1.x'")
            if DEPRECATED_FEATURES[name] == "removed" and permitted:
                raise ValueError(f"deprecated feature {name!r} was removed in RabbitMQ 4: it "
                                 "cannot be permitted")
            if not permitted:
                denied.add(name)
        return cls(numbers, presented, frozenset(denied))

    @property
    def rabbitmq4(self) -> bool:
        """Whether the broker behaves as RabbitMQ 4."""
        return self.version >= (4, 0, 0)

    def at_least(self, major: int, minor: int = 0, patch: int = 0) -> bool:
        return self.version >= (major, minor, patch)

    def refusal(self, feature: str) -> str:
        """What RabbitMQ 4 says when a denied deprecated feature is used (its generated
        ``when_denied`` warning, v4.1.4 rabbit_deprecated_features:generate_warnings1/3), as a
        541 close carries it for ``transient_nonexcl_queues`` and ``queue_master_locator``."""
        return (f"Feature `{feature}` is deprecated.\n"
                "Its use is not permitted per the configuration (overriding the default, which "
                "is permitted):\n"
                f'    "deprecated_features.permit.{feature} = false"\n'
                "Its use will not be permitted by default in a future minor RabbitMQ version and "
                "the feature will be removed from a future major RabbitMQ version; actual "
                "versions to be determined.\n"
                "To continue using this feature when it is not permitted by default, set the "
                "following parameter in your configuration:\n"
                f'    "deprecated_features.permit.{feature} = true"')

    def permits(self, feature: str) -> bool:
        """Whether a deprecated feature's (3.x) behaviour applies: always on RabbitMQ 3; on
        RabbitMQ 4 unless removed or denied."""
        if not self.rabbitmq4:
            return True
        return DEPRECATED_FEATURES[feature] != "removed" and feature not in self.denied
