"""Reference matchers for property tests: written from the specification and RabbitMQ's observed
behaviour, as simply as possible and independently of embroker's own (the trie in
``embroker.model._exchange``), so that a property test compares two implementations."""

from __future__ import annotations

from functools import cache

__all__ = ["topic_matches"]


def _words(key: str) -> tuple[str, ...]:
    """RabbitMQ's split: ``""`` is no words at all, ``"a."`` is ``("a", "")``."""
    return tuple(key.split(".")) if key else ()


@cache
def _match(pattern: tuple[str, ...], key: tuple[str, ...]) -> bool:
    if not pattern:
        return not key
    head, rest = pattern[0], pattern[1:]
    if head == "#":
        return _match(rest, key) or (bool(key) and _match(pattern, key[1:]))
    if not key:
        return False
    return (head in ("*", key[0])) and _match(rest, key[1:])


def topic_matches(pattern: str, key: str) -> bool:
    """Whether a topic binding key matches a routing key, as RabbitMQ 3.10 decides."""
    return _match(_words(pattern), _words(key))
