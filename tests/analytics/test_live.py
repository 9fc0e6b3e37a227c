"""Record the ground truth again on the reference RabbitMQ and replay it.

Runs when ``EMBROKER_REFERENCE_URL`` is set, the management API answers on 127.0.0.1:15672 with
the tracing plugin enabled, and ``rabbitmqctl`` is here (``capture --enable-tracing`` uses it).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from embroker.analytics import Router, Topology, load_headers
from embroker.analytics._inputs import read_json_lines

from . import recording
from .conftest import DATA

pytest.importorskip("pyarrow", reason="pyarrow is not installed (the spark extra)")
pytest.importorskip("amqpstorm", reason="amqpstorm is not installed (the test dependency group)")


def _reference() -> tuple[str, int]:
    url = os.environ.get("EMBROKER_REFERENCE_URL")
    if not url:
        pytest.skip("EMBROKER_REFERENCE_URL is not set")
    if not recording.management_answers():
        pytest.skip("RabbitMQ's management API does not answer on 127.0.0.1:15672 "
                    "(rabbitmq-plugins enable rabbitmq_management rabbitmq_tracing)")
    try:
        recording.api("GET", "/traces")  # 404 without rabbitmq_tracing
    except OSError:
        pytest.skip("the rabbitmq_tracing plugin is not enabled")
    if shutil.which("rabbitmqctl") is None:
        pytest.skip("rabbitmqctl is not on PATH")
    parts = urllib.parse.urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 5672


def _rows(folder: Path) -> dict[str, list[dict[str, Any]]]:
    import pyarrow.parquet as pq

    from embroker.analytics._tracetext import SEPARATOR, parse_record

    records = (folder / "tracing-text.log").read_text(encoding="utf-8").split(SEPARATOR)
    return {"log": [r for b in read_json_lines(folder / "tracing.log") for r in b.to_pylist()],
            "text": [r for n, text in enumerate(records) if (r := parse_record(text, n, "/", str(n)))],
            "capture": pq.read_table(folder / "capture.parquet").to_pylist()}


def test_a_fresh_recording_replays_in_agreement_and_matches_the_committed_one(tmp_path: Path) -> None:
    host, port = _reference()
    paths = recording.record(tmp_path, amqp_host=host, amqp_port=port)
    vhost = paths["vhost.txt"].read_text().strip()
    routers = [Router(Topology.load(paths["definitions.json"], exchange_types={"audit": "headers"})),
               Router(Topology.load(paths["definitions-api.json"], vhost=vhost))]
    fresh = _rows(tmp_path)
    for router in routers:
        known = {q for _v, q in router.queues()}
        for rows in fresh.values():
            assert len(rows) == len(recording.MESSAGES)
            for row in rows:
                route = router.route(row["vhost"], row["exchange"], row["routing_keys"],
                                     load_headers(row["headers"]))
                recorded = sorted(q for q in set(row["routed_queues"])
                                  if row["exchange"] != "" or q in known)
                assert list(route.queues) == recorded, row
    committed = _rows(DATA)
    for kind in ("log", "text", "capture"):
        assert [r["routed_queues"] for r in fresh[kind]] == [r["routed_queues"] for r in committed[kind]]
        assert [r["headers"] for r in fresh[kind]] == [r["headers"] for r in committed[kind]]


def test_the_capture_command_records_typed_headers(tmp_path: Path) -> None:
    import amqpstorm
    import pyarrow.parquet as pq

    from embroker.__main__ import main

    host, port = _reference()
    vhost = f"embroker-capture-{os.getpid()}"
    quoted = urllib.parse.quote(vhost, safe="")
    recording.api("PUT", f"/vhosts/{quoted}")
    try:
        recording.api("PUT", f"/permissions/{quoted}/guest",
                      {"configure": ".*", "write": ".*", "read": ".*"})
        out = tmp_path / "capture.parquet"
        codes: list[int] = []
        worker = threading.Thread(target=lambda: codes.append(main([
            "capture", "--url", f"amqp://guest:guest@{host}:{port}/", "--vhost", vhost,
            "--out", str(out), "--count", "2", "--duration", "30", "--enable-tracing", "--quiet"])))
        worker.start()
        connection = amqpstorm.Connection(host, "guest", "guest", port=port, virtual_host=vhost)
        channel = connection.channel()
        channel.queue.declare("q")
        deadline = time.monotonic() + 30
        while worker.is_alive() and time.monotonic() < deadline:  # until the capture has 2
            amqpstorm.Message.create(channel, b"x", properties={"headers": {"n": 3, "s": "3"}}).publish("q")
            time.sleep(0.2)
        worker.join(35)
        connection.close()
        assert codes == [0]
        rows = pq.read_table(out).to_pylist()
        assert len(rows) == 2
        assert all(r["routed_queues"] == ["q"] and r["vhost"] == vhost for r in rows)
        # amqpstorm (pamqp) sends 3 as a byte ('b'): the capture keeps the wire's type.
        assert json.loads(rows[0]["headers"]) == {"n": {"$byte": 3}, "s": "3"}
        assert recording.api("GET", f"/vhosts/{quoted}")["tracing"] is False  # turned off again
    finally:
        recording.api("DELETE", f"/vhosts/{quoted}")
