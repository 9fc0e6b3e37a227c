"""Every resource module of the management API, one per resource (as RabbitMQ's
``rabbit_mgmt_wm_*`` modules), imported once to register its routes. Two patterns that could
match one path (``users/bulk-delete`` and ``users/{user}``) are in one module, registered in
the order that decides between them (``tests/management/test_routes.py`` says which)."""

from __future__ import annotations

from . import (  # noqa: F401
    _bindings,
    _channels,
    _connections,
    _console,
    _consumers,
    _definitions,
    _exchanges,
    _node,
    _parameters,
    _permissions,
    _policies,
    _queues,
    _traces,
    _user_limits,
    _users,
    _vhosts,
)
