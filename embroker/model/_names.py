"""Names: server-generated ones, the reserved ones, and how RabbitMQ names a resource in texts."""

from __future__ import annotations

import base64
import os

__all__ = ["REPLY_TO", "random_name", "resource"]

#: The pseudo-queue of direct reply-to.
REPLY_TO = "amq.rabbitmq.reply-to"


def random_name(prefix: str) -> str:
    """A name like RabbitMQ's server-generated ones: ``prefix`` and 22 URL-safe characters
    (``amq.gen-...`` for queues, ``amq.ctag-...`` for consumer tags)."""
    return prefix + base64.urlsafe_b64encode(os.urandom(16)).decode("ascii").rstrip("=")


def resource(kind: str, name: str, vhost: str) -> str:
    """How RabbitMQ's reply texts name a resource (``rabbit_misc:rs/1``).

    >>> resource("queue", "jobs", "/")
    "queue 'jobs' in vhost '/'"
    """
    return f"{kind} '{name}' in vhost '{vhost}'"
