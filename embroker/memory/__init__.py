"""In-memory transports: the application's real client library (pika, aio-pika, kombu, Celery)
talking to an embroker broker with no socket and no thread.

The broker's side of each connection is a :class:`MemoryLink` (the same AMQP 0-9-1 connection a
socket gets, fed in the client's thread or event loop); each client library has its adapter:

- :mod:`embroker.memory.pika`: pika's ``BlockingConnection`` and ``SelectConnection``;
- :mod:`embroker.memory.aio`: aiormq's transport factory and aio-pika's connection classes;
- :mod:`embroker.memory.kombu`: kombu's ``embroker://`` transport (py-amqp's protocol code),
  for kombu and Celery;

Faults reach in-memory connections through :class:`MemoryConnection`
(``broker.memory_connections``, and :class:`embroker.faults.Faults`).
"""

from __future__ import annotations

from ._link import MemoryConnection as MemoryConnection
from ._link import MemoryLink as MemoryLink
from ._loop import Deadlock as Deadlock
from ._loop import VirtualLoop as VirtualLoop
from ._urls import kombu_url as kombu_url
from ._urls import memory_url as memory_url

__all__ = ["Deadlock", "MemoryConnection", "MemoryLink", "VirtualLoop", "kombu_url", "memory_url"]
