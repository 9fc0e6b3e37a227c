"""embroker: an embedded AMQP 0-9-1 broker with RabbitMQ's semantics, for tests."""

from __future__ import annotations

__version__ = "0.1.0"
