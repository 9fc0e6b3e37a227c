"""Every resource module of the management API, imported once to register its routes (in the
order RabbitMQ's ``rabbit_mgmt_dispatcher`` lists them, which decides between two patterns
that could match one path)."""

from __future__ import annotations

from . import (  # noqa: F401
    _configuration,
    _connections,
    _console,
    _node,
    _topology,
    _traces,
    _user_limits,
    _users,
    _vhosts,
)
