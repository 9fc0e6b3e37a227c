"""A real RabbitMQ 3.10 export with policies, operator policies and vhost limits: it loads, the
broker behaves as RabbitMQ did with it, and what embroker exports RabbitMQ imports.

``data/rabbitmq-3.10-policies.json`` was exported from RabbitMQ 3.10.8 with ``rabbitmqctl
export_definitions`` (a vhost ``embroker-shop`` made for it, then deleted; other vhosts cut).
On that RabbitMQ, :func:`probe` saw :data:`RABBITMQ_SAW`, and the management API showed the
policies in :data:`RABBITMQ_POLICIES`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

from embroker import Broker
from embroker.errors import DefinitionsError, PolicyWarning

EXPORTED = Path(__file__).parent / "data" / "rabbitmq-3.10-policies.json"
VHOST = "embroker-shop"

#: What probe() saw on RabbitMQ 3.10.8 with the exported definitions.
RABBITMQ_SAW = {"orders.created": 200, "orders.paid": 100, "orders.dead": 100, "orders.lost": 1,
                "payments": 0, "head": b"c50", "dead": (b"c0", "maxlen")}

#: Queue -> (policy, operator policy, effective policy definition), as RabbitMQ showed them.
RABBITMQ_POLICIES = {
    "orders.created": ("dlx-all", "cap", {"dead-letter-exchange": "dlx", "max-length": 200,
                                          "message-ttl": 60000}),
    "orders.paid": ("dlx-all", "cap", {"dead-letter-exchange": "dlx", "max-length": 200,
                                       "message-ttl": 60000}),
    "orders.dead": ("ha-all", "cap", {"ha-mode": "all", "ha-sync-mode": "automatic",
                                      "max-length": 200, "message-ttl": 3600000}),
    "orders.lost": ("ha-all", "cap", {"ha-mode": "all", "ha-sync-mode": "automatic",
                                      "max-length": 200, "message-ttl": 3600000}),
    "payments": ("quorum-limits", "cap", {"delivery-limit": 3, "max-length": 200,
                                          "message-ttl": 3600000}),
}


def probe(url: str) -> dict[str, Any]:
    """What a client sees of the exported topology: publish to each queue, return a quorum
    queue's message until its delivery limit, count."""
    pika = pytest.importorskip("pika")
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        for i in range(250):
            ch.basic_publish("orders", "order.created", b"c%d" % i)
        for i in range(150):
            ch.basic_publish("orders", "order.paid", b"p%d" % i)
        ch.basic_publish("orders", "nothing", b"lost")
        ch.basic_publish("", "payments", b"pay")
        for _ in range(5):
            method = ch.basic_get("payments")[0]
            if method is None:
                break
            ch.basic_nack(method.delivery_tag, requeue=True)
        counts: dict[str, Any] = {}
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # RabbitMQ dead-letters in the background
            counts = {q: ch.queue_declare(q, passive=True).method.message_count
                      for q in ("orders.created", "orders.paid", "orders.dead", "orders.lost",
                                "payments")}
            if counts["orders.dead"] >= 100:
                break
            time.sleep(0.1)
        head = ch.basic_get("orders.created", auto_ack=True)[2]
        dead = ch.basic_get("orders.dead", auto_ack=True)
        return {**counts, "head": head, "dead": (dead[2], dead[1].headers["x-death"][0]["reason"])}
    finally:
        conn.close()


def load(document: str | Path | dict[str, Any] = EXPORTED) -> Broker:
    """Load with the warnings this export gives: mirroring keys kept with no effect, and two
    policies of priority 0 (``ae`` and ``ha-all``) matching the exchange ``orders`` (RabbitMQ
    applied ``ae``, as embroker does)."""
    broker = Broker()
    with pytest.warns(PolicyWarning) as caught:
        broker.load_definitions(document)
    texts = {str(w.message).split(":")[0] for w in caught}
    assert texts == {"policy 'ha-all' in vhost '" + _vhost_of(document) + "'",
                     "policies 'ae' and 'ha-all' of the same priority all match exchange "
                     "'orders' in vhost '" + _vhost_of(document) + "'"}
    return broker


def _vhost_of(document: str | Path | dict[str, Any]) -> str:
    if isinstance(document, dict):
        return str(document["vhosts"][0]["name"])
    return VHOST


def test_the_export_loads_with_rabbitmqs_policies() -> None:
    broker = load()
    vhost = broker.vhosts[VHOST]
    seen = {name: (q.policy.name if q.policy else None,
                   q.operator_policy.name if q.operator_policy else None,
                   q.effective_policy_definition) for name, q in vhost.queues.items()}
    assert seen == RABBITMQ_POLICIES
    # RabbitMQ lists ha-all on every exchange, the default and amq.* ones included.
    assert {name: x.policy.name for name, x in vhost.exchanges.items()
            } == {**dict.fromkeys(vhost.exchanges, "ha-all"), "orders": "ae"}
    assert vhost.exchanges["orders"].alternate_exchange == "unrouted"
    assert broker.list_vhost_limits(VHOST) == {"max-connections": 100, "max-queues": 50}
    assert vhost.queues["orders.paid"].effective_arguments == {
        "x-message-ttl": 60000, "x-max-length": 100, "x-dead-letter-exchange": "dlx"}


def test_the_export_behaves_as_it_did_on_rabbitmq() -> None:
    broker = load()
    with broker.serve() as server:
        assert probe(_on(server.url, VHOST)) == RABBITMQ_SAW
    assert server.errors == []


def test_export_then_load_gives_the_same_policies_and_limits(tmp_path: Path) -> None:
    exported = load().definitions()
    operator = [p for p in exported["parameters"] if p["component"] == "operator_policy"]
    assert operator == [{"vhost": VHOST, "component": "operator_policy", "name": "cap",
                         "value": {"apply-to": "queues", "pattern": ".*", "priority": 0,
                                   "definition": {"max-length": 200, "message-ttl": 3600000}}}]
    assert [v["limits"] for v in exported["vhosts"] if v["name"] == VHOST] == [
        [["max-connections", 100], ["max-queues", 50]]]
    path = tmp_path / "defs.json"
    path.write_text(json.dumps(exported))
    again = load(path).definitions()
    for section in ("policies", "parameters", "vhosts", "queues", "exchanges", "bindings"):
        assert again[section] == exported[section], section


def test_an_import_respects_existing_queue_limits_and_sets_its_own_after() -> None:
    broker = Broker()
    broker.set_vhost_limits({"max-queues": 1})
    document = {"queues": [{"name": "a", "vhost": "/"}, {"name": "b", "vhost": "/"}],
                "parameters": [{"vhost": "/", "component": "vhost-limits", "name": "limits",
                                "value": {"max-queues": 1}}]}
    with pytest.raises(DefinitionsError) as caught:
        broker.load_definitions(document)
    assert str(caught.value) == ('Adding 2 queue(s) to virtual host "/" would exceed the limit '
                                 "of 1 queue(s).\n\nThis virtual host currently has 0 queue(s) "
                                 "defined.\n\nImport aborted!")
    fresh = Broker()
    fresh.load_definitions(document)  # its own limit applies once it is loaded
    assert set(fresh.queues) == {"a", "b"}
    assert fresh.list_vhost_limits() == {"max-queues": 1}


def test_a_policy_rabbitmq_would_refuse_stops_the_load() -> None:
    document = {"policies": [{"vhost": "/", "name": "bad", "pattern": ".*",
                              "definition": {"max-length": "ten"}}]}
    with pytest.raises(DefinitionsError) as caught:
        Broker().load_definitions(document)
    assert str(caught.value) == ("Validation failed\n\n&lt;&lt;\"ten\"&gt;&gt; is not a valid "
                                 "maximum length\n (//bad)")  # (RabbitMQ's, escaped as its own)


# -- against the reference RabbitMQ ---------------------------------------------------------------

needs_rabbitmq = pytest.mark.skipif(
    not os.environ.get("EMBROKER_REFERENCE_URL") or not shutil.which("rabbitmqctl"),
    reason="needs EMBROKER_REFERENCE_URL and rabbitmqctl (the reference RabbitMQ)")


def _ctl(*args: str) -> str:
    return subprocess.run(["rabbitmqctl", "-q", *args], check=True, capture_output=True,
                          text=True, timeout=120).stdout


def _on(url: str, vhost: str) -> str:
    """``url`` with its vhost replaced."""
    return urlunsplit(urlsplit(url)._replace(path="/" + quote(vhost, safe="")))


def _import(document: dict[str, Any], vhost: str) -> None:
    # rabbitmqctl may run as the rabbitmq user: a readable file in the system tmp folder.
    fd, path = tempfile.mkstemp(prefix="embroker-policies-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(document, f)
        os.chmod(path, 0o644)
        _ctl("import_definitions", path)
        deadline = time.monotonic() + 60  # the import finishes asynchronously
        while ("payments" not in _ctl("list_queues", "-p", vhost, "name")
               or "unrouted\torders.lost" not in _ctl("list_bindings", "-p", vhost,
                                                        "source_name", "destination_name")):
            assert time.monotonic() < deadline, "the import did not finish"
            time.sleep(0.2)
    finally:
        os.unlink(path)


@needs_rabbitmq
def test_rabbitmq_imports_what_embroker_exports_and_behaves_the_same() -> None:
    """embroker loads RabbitMQ's export; its own export imports into RabbitMQ (RabbitMQ 3.10.8
    cannot import its own: it writes an operator policy's definition as pairs, then refuses
    them), and then RabbitMQ and embroker agree on what each queue's policies are and on what
    clients see.

    The vhost keeps the export's name: two of its policies (``ae`` and ``ha-all``, priority 0)
    both match the exchange ``orders``, and which one RabbitMQ applies depends on a hash of the
    vhost's and the policies' names (under another vhost name it is sometimes ``ha-all``, and
    unroutable messages are then dropped instead of going to ``unrouted``)."""
    vhost = VHOST
    if vhost in _ctl("list_vhosts", "--no-table-headers").split():
        pytest.skip(f"vhost {vhost!r} exists on the reference RabbitMQ (another run?)")
    broker = load()
    exported = broker.definitions()
    mine = {k: [i for i in v if i.get("vhost", i.get("name")) == vhost]
            for k, v in exported.items() if k in ("vhosts", "policies", "parameters", "queues",
                                                   "exchanges", "bindings")}
    try:
        _import({**mine, "permissions": [{"user": "guest", "vhost": vhost, "configure": ".*",
                                          "write": ".*", "read": ".*"}]}, vhost)
        listed = _ctl("list_queues", "-p", vhost, "--no-table-headers", "name", "policy")
        assert dict(line.split("\t") for line in listed.strip().splitlines()) == {
            name: policy for name, (policy, _op, _def) in RABBITMQ_POLICIES.items()}
        assert "cap" in _ctl("list_operator_policies", "-p", vhost)
        assert json.loads(_ctl("list_vhost_limits", "-p", vhost, "--no-table-headers")) == {
            "max-connections": 100, "max-queues": 50}
        assert probe(_on(os.environ["EMBROKER_REFERENCE_URL"], vhost)) == RABBITMQ_SAW
        with broker.serve() as server:
            assert probe(_on(server.url, vhost)) == RABBITMQ_SAW
    finally:
        subprocess.run(["rabbitmqctl", "-q", "delete_vhost", vhost], capture_output=True,
                       timeout=120, check=False)


@needs_rabbitmq
def test_vhost_limits_refuse_as_rabbitmq_refuses() -> None:
    """max-queues and max-connections on a throwaway vhost of the reference and on embroker:
    the same errors."""
    pika = pytest.importorskip("pika")
    vhost = f"embroker-limits-{uuid.uuid4().hex[:8]}"

    def outcomes(url: str) -> list[str]:
        seen = []
        first = pika.BlockingConnection(pika.URLParameters(url))
        ch = first.channel()
        ch.queue_declare("q1")
        ch.queue_declare("q1", passive=True)
        try:
            ch.queue_declare("q2")
        except pika.exceptions.ChannelClosedByBroker as exc:
            seen.append(f"{exc.reply_code} {exc.reply_text}")
        try:
            pika.BlockingConnection(pika.URLParameters(url)).close()
        except pika.exceptions.ProbableAccessDeniedError as exc:
            seen.append(str(exc.args[0]) if exc.args else repr(exc))
        first.close()
        return seen

    try:
        _ctl("add_vhost", vhost)
        _ctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
        _ctl("set_vhost_limits", "-p", vhost, '{"max-queues": 1, "max-connections": 1}')
        on_rabbitmq = outcomes(_on(os.environ["EMBROKER_REFERENCE_URL"], vhost))
    finally:
        subprocess.run(["rabbitmqctl", "-q", "delete_vhost", vhost], capture_output=True,
                       timeout=120, check=False)
    broker = Broker(vhosts=("/", vhost))
    broker.set_vhost_limits({"max-queues": 1, "max-connections": 1}, vhost=vhost)
    with broker.serve() as server:
        on_embroker = outcomes(_on(server.url, vhost))
    assert on_embroker == on_rabbitmq
    assert len(on_rabbitmq) == 2
