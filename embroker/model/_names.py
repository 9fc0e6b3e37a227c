"""Names: server-generated ones, the reserved ones, and how RabbitMQ names a resource in texts.

The names RabbitMQ sets apart live here, and every surface asks here: the ``amq.`` prefix it
keeps for its own exchanges and server-named queues (:func:`reserved`), carriage returns and
line feeds (:func:`has_cr_lf`, refused or stripped), and the default exchange, whose name is
empty (:func:`is_default_exchange`). What is refused is the same on every surface; how the
refusal is worded is each surface's own, as in RabbitMQ: AMQP 0-9-1 says ``queue name 'amq.x'
contains reserved prefix 'amq.*'`` (``rabbit_channel``), RabbitMQ 4's AMQP 1.0 management node
``queue 'amq.x' in vhost '/' starts with reserved prefix 'amq.'`` (``rabbit_amqp_management``),
the stream protocol ``'amq.x' is not a correct name for a stream`` (``rabbit_stream_manager``).
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import hmac
import os
from collections.abc import Iterable

__all__ = [
    "NODE",
    "REPLY_TO",
    "RESERVED_PREFIX",
    "has_cr_lf",
    "is_default_exchange",
    "is_reply_name",
    "nearest",
    "random_name",
    "reply_name",
    "reserved",
    "resource",
    "without_cr_lf",
]

#: :func:`nearest` compares a name with this many candidates at most (the closest in length).
NEAREST_CANDIDATES = 500

#: The node's name, as RabbitMQ's APIs, traces and tools show it (one node): its host part is
#: what the stream protocol advertises by default (``rabbit_stream:hostname_from_node/0``).
NODE = "embroker@localhost"

#: The prefix of the names RabbitMQ keeps for itself (``amq.direct``, ``amq.gen-...``).
RESERVED_PREFIX = "amq."

#: The pseudo-queue of direct reply-to.
REPLY_TO = "amq.rabbitmq.reply-to"

# RabbitMQ's reply-to names carry the requesting channel's pid, which RabbitMQ 4.2 decodes to
# route a reply (v4.2.9 rabbit_volatile_queue): embroker's carry a tag of their key instead,
# so that a name it issued is told from one a client made up, without remembering any.
_REPLY_SECRET = os.urandom(16)


def _reply_tag(key: str) -> str:
    digest = hmac.new(_REPLY_SECRET, key.encode("ascii"), hashlib.sha256).digest()[:12]
    return base64.urlsafe_b64encode(digest).decode("ascii")


def reply_name() -> str:
    """A new direct reply-to address: ``amq.rabbitmq.reply-to.TAG.KEY``."""
    key = random_name("")
    return f"{REPLY_TO}.{_reply_tag(key)}.{key}"


def is_reply_name(name: str) -> bool:
    """Whether ``name`` is a reply-to address this process issued (RabbitMQ 4.2: one whose pid
    decodes), whether or not its requester is still there.

    >>> is_reply_name(reply_name()), is_reply_name("amq.rabbitmq.reply-to.made.up")
    (True, False)
    """
    tag, _, key = name[len(REPLY_TO) + 1:].partition(".")
    return (name.startswith(REPLY_TO + ".") and key.isascii()
            and hmac.compare_digest(tag, _reply_tag(key)))


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


def nearest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``name`` was most likely meant to be (a typo: ``"order"`` for
    ``"orders"``, ``"Jobs"`` for ``"jobs"``), or ``None``: for the hints of errors and
    explanations, never for what the broker does.

    Bounded: at most :data:`NEAREST_CANDIDATES` candidates of a length near ``name``'s are
    compared (difflib's ratio, 0.75 at least), so a vhost of thousands of names costs
    milliseconds, not a tenth of a second.

    >>> nearest("order", ["orders", "invoices"]), nearest("x", ["orders"])
    ('orders', None)
    """
    folded = name.casefold()
    slack = max(2, len(name) // 4)
    near: list[str] = []
    for candidate in candidates:
        if candidate == name:
            continue
        if candidate.casefold() == folded:
            return candidate
        if abs(len(candidate) - len(name)) <= slack:
            near.append(candidate)
    if len(near) > NEAREST_CANDIDATES:
        near.sort(key=lambda c: abs(len(c) - len(name)))
        del near[NEAREST_CANDIDATES:]
    found = difflib.get_close_matches(name, near, n=1, cutoff=0.75)
    return found[0] if found else None


def reserved(name: str) -> bool:
    """Whether ``name`` carries the reserved prefix (declares and deletes of it are refused)."""
    return name.startswith(RESERVED_PREFIX)


def has_cr_lf(name: str) -> bool:
    """Whether ``name`` holds a carriage return or a line feed."""
    return "\r" in name or "\n" in name


def without_cr_lf(name: str) -> str:
    """``name`` without its carriage returns and line feeds (``rabbit_stream_utils``)."""
    return name.replace("\r", "").replace("\n", "")


def is_default_exchange(name: str) -> bool:
    """Whether ``name`` is the default exchange's (the empty name)."""
    return name == ""
