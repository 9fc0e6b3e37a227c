"""Item 7's sweep: where RabbitMQ 3.10.8's management API answers an empty value, as ``[]``
(Erlang's empty proplist), ``{}``, ``null``, ``""``, or leaves the field out, embroker answers
the same, for fresh objects of each kind. The expected answers were recorded from RabbitMQ
3.10.8 (checked live); with ``EMBROKER_REFERENCE_URL`` the same scenario runs against the
reference too. Values that are RabbitMQ's runtime's (rates, memory, pids, times, the node's
name) are not compared; ``message_stats``, which embroker always shows and RabbitMQ only once
a queue had traffic, is left out (test_differential.ANYWHERE)."""

from __future__ import annotations

import os
import time
import urllib.parse
import uuid
from typing import Any

from embroker import Broker

from .record import reference_base
from .test_user_limits import _api

REFERENCE = os.environ.get("EMBROKER_REFERENCE_URL")
#: Left out: statistics that come and go with traffic, and rates.
_IGNORED = ("message_stats",)


def _empties(value: Any, path: str = "") -> dict[str, Any]:
    """Every empty value in ``value`` by its dotted path (lists by their first item)."""
    found: dict[str, Any] = {}
    if isinstance(value, dict):
        if not value:
            found[path] = {}
        for key, item in value.items():
            if key not in _IGNORED and not key.endswith("_details"):
                found.update(_empties(item, f"{path}.{key}" if path else key))
    elif isinstance(value, list):
        if not value:
            found[path] = []
        elif isinstance(value[0], (dict, list)):
            found.update(_empties(value[0], f"{path}.0"))
    elif value is None or value == "":
        found[path] = value
    return found


#: Fields RabbitMQ shows only from some moment on: ``idle_since`` once the queue's process has
#: gone idle (embroker always shows it: docs/management.md).
_TIMED = ("idle_since",)


def _fields(value: dict[str, Any]) -> list[str]:
    return sorted(k for k in value if k not in _IGNORED + _TIMED and not k.endswith("_details"))


def _has_statistics(queue: dict[str, Any]) -> bool:
    """RabbitMQ's statistics for a queue arrive in two parts, each on its own timer: the
    message counts (``messages``) and the queue's own items (``policy``, ``state``...). A CI
    run once read a queue between the two."""
    return "messages" in queue and "policy" in queue


def _queues_scenario(base: str) -> dict[str, Any]:
    api = _api(base)
    vhost = f"empty-{uuid.uuid4().hex[:8]}"
    where = urllib.parse.quote(vhost, safe="")
    api("PUT", f"/vhosts/{where}", {})
    try:
        for name, arguments in (("classic", {}), ("quorum", {"x-queue-type": "quorum"}),
                                ("stream", {"x-queue-type": "stream"})):
            api("PUT", f"/queues/{where}/{name}", {"durable": True, "arguments": arguments})
        seen: dict[str, Any] = {}
        deadline = time.monotonic() + 30  # (RabbitMQ's statistics come every 5 s)
        for name in ("classic", "quorum", "stream"):
            while True:
                queue = api("GET", f"/queues/{where}/{name}", None)[1]
                if _has_statistics(queue) or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            seen[name] = {"fields": _fields(queue), "empty": _empties(queue)}
        while True:
            listed = api("GET", f"/queues/{where}", None)[1]
            if all(map(_has_statistics, listed)) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        seen["listed"] = {q["name"]: _empties(q) for q in listed}
        document = api("GET", f"/definitions/{where}", None)[1]
        seen["exported queues"] = {q["name"]: _empties(q) for q in document.pop("queues")}
        seen["definitions"] = _empties(document)
        return seen
    finally:
        api("DELETE", f"/vhosts/{where}")


_CLASSIC_EMPTIES: dict[str, Any] = {"arguments": {}, "effective_policy_definition": {},
                    "exclusive_consumer_tag": None, "head_message_timestamp": None,
                    "operator_policy": None, "policy": None, "recoverable_slaves": None,
                    "single_active_consumer_tag": None}
_QUORUM_EMPTIES: dict[str, Any] = {"effective_policy_definition": {}, "operator_policy": None, "policy": None,
                   "single_active_consumer_ctag": None}
_STREAM_EMPTIES: dict[str, Any] = {"effective_policy_definition": {}, "operator_policy": None, "policy": None}
#: A single queue's GET adds its traffic (none yet); ``consumer_details`` is there only once the
#: queue has had a consumer (RabbitMQ's statistics have a row for it only then).
_SINGLE: dict[str, Any] = {"deliveries": [], "incoming": []}

#: RabbitMQ 3.10.8's answers (recorded live).
QUEUES = {
    "classic": {"fields": [
        "arguments", "auto_delete", "backing_queue_status", "consumer_capacity",
        "consumer_utilisation", "consumers", "deliveries", "durable",
        "effective_policy_definition", "exclusive", "exclusive_consumer_tag",
        "garbage_collection", "head_message_timestamp", "incoming", "memory",
        "message_bytes", "message_bytes_paged_out", "message_bytes_persistent",
        "message_bytes_ram", "message_bytes_ready", "message_bytes_unacknowledged", "messages",
        "messages_paged_out", "messages_persistent", "messages_ram", "messages_ready",
        "messages_ready_ram", "messages_unacknowledged", "messages_unacknowledged_ram", "name",
        "node", "operator_policy", "policy", "recoverable_slaves", "reductions",
        "single_active_consumer_tag", "state", "type", "vhost"],
        "empty": {**_CLASSIC_EMPTIES, **_SINGLE}},
    "quorum": {"fields": [
        "arguments", "auto_delete", "consumer_capacity",
        "consumer_utilisation", "consumers", "deliveries", "durable",
        "effective_policy_definition", "exclusive", "garbage_collection", "incoming", "leader",
        "members", "memory", "message_bytes", "message_bytes_dlx", "message_bytes_persistent",
        "message_bytes_ram", "message_bytes_ready", "message_bytes_unacknowledged", "messages",
        "messages_dlx", "messages_persistent", "messages_ram", "messages_ready",
        "messages_unacknowledged", "name", "node", "online", "open_files", "operator_policy",
        "policy", "reductions", "single_active_consumer_ctag", "state", "type", "vhost"],
        "empty": {**_QUORUM_EMPTIES, **_SINGLE}},
    "stream": {"fields": [
        "arguments", "auto_delete", "consumers", "deliveries", "durable",
        "effective_policy_definition", "exclusive", "garbage_collection", "incoming",
        "members", "memory", "messages", "messages_ready", "messages_unacknowledged", "name",
        "node", "online", "operator_policy", "policy", "readers", "reductions", "state",
        "type", "vhost"],
        "empty": {**_STREAM_EMPTIES, **_SINGLE}},
    "listed": {"classic": _CLASSIC_EMPTIES, "quorum": _QUORUM_EMPTIES,
               "stream": _STREAM_EMPTIES},
    "exported queues": {"classic": {"arguments": {}}, "quorum": {}, "stream": {}},
    "definitions": {"bindings": [], "exchanges": [], "parameters": [], "policies": []},
}


def _check(got: dict[str, Any]) -> None:
    assert got == QUEUES


def test_empty_values_of_queues_of_each_type_are_rabbitmqs() -> None:
    broker = Broker()
    with broker.serve(management=True) as server:
        _check(_queues_scenario(server.management_url + "api"))
        assert server.errors == []
    if REFERENCE:
        _check(_queues_scenario(reference_base(REFERENCE)))
