"""RabbitMQ definitions JSON: a real export loads unchanged, and embroker's export loads into
RabbitMQ (``rabbitmqctl import_definitions``) when a reference RabbitMQ is at hand."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from embroker import Broker
from embroker.model._definitions import (
    EXPORT_STEP,
    DefinitionsError,
    HashedPassword,
    export_steps,
    hash_password,
)

#: Exported from RabbitMQ 3.10.8 with ``rabbitmqctl export_definitions`` (unrelated queues cut).
EXPORTED = Path(__file__).parent / "data" / "rabbitmq-3.10-definitions.json"


def test_a_rabbitmq_export_loads_unchanged() -> None:
    broker = Broker()
    broker.load_definitions(EXPORTED)
    x = broker.exchanges["events"]
    assert (x.type, x.durable, x.alternate_exchange) == ("topic", True, "unrouted")
    assert broker.queues["audit"].arguments == {"x-dead-letter-exchange": "dlx",
                                                "x-message-ttl": 60000}
    ch = broker.connect().channel()
    ch.basic_publish("events", "order.created", b"a")
    ch.basic_publish("events", "x.y", b"b")          # exchange-to-exchange binding
    ch.basic_publish("events", "nothing", b"c")      # alternate exchange
    assert [d.queues for d in broker.trace] == [("audit",), ("lost",), ("lost",)]
    # The hash RabbitMQ exported for guest is the hash of "guest": the plain password stays.
    assert broker.users == {"guest": "guest"}


def test_export_then_load_gives_the_same_definitions(tmp_path: Path) -> None:
    broker = Broker(vhosts=("/", "other"), users={"guest": "guest", "app": "pw"})
    broker.load_definitions(EXPORTED)
    ch = broker.connect("other").channel()
    ch.exchange_declare("h", "headers", durable=True)
    ch.queue_declare("hq", durable=True, arguments={"x-max-priority": 5})
    ch.queue_bind("hq", "h", "", arguments={"x-match": "any", "k": 1})
    ch.queue_declare("mine", exclusive=True)          # exclusive queues are not exported
    exported = broker.definitions()
    assert "mine" not in {q["name"] for q in exported["queues"]}
    path = tmp_path / "defs.json"
    path.write_text(json.dumps(exported))
    again = Broker(vhosts=(), users={})
    again.load_definitions(path)
    second = again.definitions()
    for section in ("vhosts", "exchanges", "queues", "bindings", "permissions"):
        assert second[section] == exported[section], section
    assert again.users["app"] == "pw"
    assert again.users["app"] != "other"
    assert isinstance(again.users["app"], HashedPassword)


def test_the_export_in_steps_leaves_out_what_was_deleted_between_its_steps() -> None:
    """export_steps lets the broker's lock go between steps: an exchange or a queue deleted
    meanwhile is not exported (an exchange declared again under its name came after the
    export listed the vhost's exchanges: neither is)."""
    broker = Broker()
    channel = broker.connect().channel()
    names = [f"n{i:03d}" for i in range(EXPORT_STEP + 50)]
    for name in names:
        channel.exchange_declare(name, "fanout", durable=True)
        channel.queue_declare(name, durable=True)
    steps = export_steps(broker)
    next(steps)  # (the first EXPORT_STEP exchanges are behind it)
    channel.exchange_delete(names[-1])
    channel.queue_delete(names[0])
    channel.exchange_delete(names[-2])
    channel.exchange_declare(names[-2], "direct", durable=True)  # another one, same name
    while True:
        try:
            next(steps)
        except StopIteration as done:
            document = done.value
            break
    exported = {x["name"]: x["type"] for x in document["exchanges"]}
    assert names[-1] not in exported
    assert names[-2] not in exported  # (the one met is gone; the new one came after)
    assert names[0] not in {q["name"] for q in document["queues"]}
    assert len(document["queues"]) == len(names) - 1


def test_hashed_passwords_follow_rabbitmq() -> None:
    stored = HashedPassword(hash_password("s3cret", salt=b"\x01\x02\x03\x04"))
    assert stored == "s3cret"
    assert stored != "guest"
    assert HashedPassword("not base64!") != "x"


def test_runtime_parameters_embroker_cannot_honour_are_refused_by_name() -> None:
    document = {"parameters": [
        {"vhost": "/", "component": "shovel", "name": "move", "value": {"src-uri": "amqp://"}},
        {"vhost": "/", "component": "federation-upstream", "name": "dc2",
         "value": {"uri": "amqp://dc2"}}],
        "queues": [{"name": "q", "vhost": "/", "durable": True}]}
    broker = Broker()
    with pytest.raises(DefinitionsError, match="shovel 'move' in vhost '/', "
                                               "federation-upstream 'dc2' in vhost '/'"):
        broker.load_definitions(document)
    assert "q" not in broker.queues  # nothing loaded
    ignored = broker.load_definitions(document, ignore_unsupported=True)
    assert ignored == ["shovel 'move' in vhost '/'", "federation-upstream 'dc2' in vhost '/'"]
    assert "q" in broker.queues


def test_an_exchange_that_exists_is_left_as_it_is_as_in_rabbitmq() -> None:
    """RabbitMQ 3.10.8's import skips an exchange (or a queue) that exists, whatever the file
    says of it (checked live; see also test_definitions_checks.py)."""
    broker = Broker()
    broker.connect().channel().exchange_declare("events", "direct", durable=True)
    broker.load_definitions(EXPORTED)
    assert broker.exchanges["events"].type == "direct"


def test_items_without_vhost_go_to_the_named_one() -> None:
    broker = Broker(vhosts=("/", "v"))
    broker.load_definitions({"queues": [{"name": "q", "durable": True}]}, vhost="v")
    assert "q" in broker.vhosts["v"].queues


@pytest.mark.skipif(not os.environ.get("EMBROKER_REFERENCE_URL") or not shutil.which("rabbitmqctl"),
                    reason="needs EMBROKER_REFERENCE_URL and rabbitmqctl (the reference RabbitMQ)")
def test_rabbitmq_imports_what_embroker_exports() -> None:
    tag = uuid.uuid4().hex[:8]
    vhost, user = f"embroker-defs-{tag}", f"embroker-defs-{tag}"
    exported = json.loads(EXPORTED.read_text())
    for section in ("exchanges", "queues", "bindings"):
        for item in exported[section]:
            item["vhost"] = vhost
    broker = Broker(vhosts=(vhost,), users={user: "pw"})
    broker.load_definitions({k: exported[k] for k in ("exchanges", "queues", "bindings")})
    document = broker.definitions()

    def ctl(*args: str) -> str:
        return subprocess.run(["rabbitmqctl", "-q", *args], check=True, capture_output=True,
                              text=True, timeout=60).stdout

    # rabbitmqctl may run as the rabbitmq user (no access to pytest's private tmp folder, and
    # its "-" for standard input is refused in 3.10): a readable file in the system tmp.
    fd, path = tempfile.mkstemp(prefix="embroker-defs-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(document, f)
        os.chmod(path, 0o644)
        ctl("import_definitions", path)
        deadline = time.monotonic() + 30  # the import finishes asynchronously
        while "audit" not in (queues := ctl("list_queues", "-p", vhost, "name", "arguments")):
            assert time.monotonic() < deadline, queues
            time.sleep(0.2)
        assert "audit" in queues
        assert "x-dead-letter-exchange" in queues
        bindings = ctl("list_bindings", "-p", vhost, "source_name", "destination_name",
                       "routing_key")
        assert "order.*" in bindings
        assert "x.#" in bindings
        assert "pw" not in ctl("list_users")
        ctl("authenticate_user", user, "pw")  # the exported hash is RabbitMQ's kind
    finally:
        os.unlink(path)
        subprocess.run(["rabbitmqctl", "-q", "delete_vhost", vhost], capture_output=True,
                       timeout=60, check=False)
        subprocess.run(["rabbitmqctl", "-q", "delete_user", user], capture_output=True,
                       timeout=60, check=False)
