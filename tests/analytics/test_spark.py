"""The Spark pipeline: replay, what-if and traffic analyses, checked against RabbitMQ's records
and against the router run message by message in plain Python (the oracle)."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from embroker.analytics import Router, Topology, TrafficError
from embroker.analytics._analyze import analyze

from .conftest import DATA, RECORDED_VHOST, read_routes, read_table, read_text

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def json_log(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The tracing plugin's JSON log replayed through rabbitmqctl's export (shared: several
    tests compare other inputs with it)."""
    out = tmp_path_factory.mktemp("json-log") / "out"
    summary = analyze(DATA / "definitions.json", DATA / "tracing.log", out, spark=spark,
                      exchange_types={"audit": "headers"})
    return out, summary


def test_the_tracing_log_replays_in_agreement_with_every_recorded_route(
        spark: Any, json_log: tuple[Path, dict[str, Any]]) -> None:
    out, summary = json_log
    routes = read_routes(spark, out)
    log = [json.loads(line) for line in (DATA / "tracing.log").read_text().splitlines()]
    published = [n for n, entry in enumerate(log, 1) if entry["type"] == "published"]
    assert [r["line"] for r in routes] == published  # the log's own line numbers, in order
    assert all(r["agrees"] for r in routes), [r for r in routes if not r["agrees"]]
    for route in routes:
        assert route["recorded_queues"] == log[route["line"] - 1]["routed_queues"]
        assert route["queues"] == sorted(route["queues"])
    assert (summary["recorded"], summary["agreeing"], summary["disagreeing"]) == (35, 35, 0)
    assert summary["phantom"] == 2  # default-exchange keys naming no queue ('ghost', 'ghost-queue')
    assert read_table(spark, out / "disagreements.parquet") == []
    unused = {(b["source"], b["destination"], b["routing_key"]) for b in summary["unused_bindings"]}
    assert unused == {("events", "idle", "never.used")}
    queues = {q["queue"]: q["messages"] for q in read_table(spark, out / "queues.parquet")}
    assert (queues["orders"], queues["b1"], queues["typed-ts"]) == (6, 6, 2)
    exchanges = {x["exchange"]: x for x in read_table(spark, out / "exchanges.parquet")}
    assert exchanges["regional"]["to_alternate"] == 1  # the AE that fires mid-path
    assert exchanges["policy-x"]["to_alternate"] == 1  # the AE a policy gives
    assert read_text(spark, out / "report.html").count("<svg") >= 1
    inputs = read_table(spark, out / "inputs.parquet")
    assert sum(i["messages"] for i in inputs) == 35
    shipped = [i for i in inputs if i["routing_keys"] == ["orders.us.shipped"]]
    assert [(i["queues"], i["path"], i["alternates"]) for i in shipped] == [
        (["orders", "shipping-fallback"], ["events", "regional", "regional-ae"], ["regional"])]
    windows = read_table(spark, out / "windows.parquet")
    assert {w["kind"] for w in windows} == {"queue", "exchange", "binding"}
    assert sum(w["messages"] for w in windows if w["kind"] == "queue" and w["name"] == "orders") == 6


def test_the_firehose_capture_replays_in_agreement(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = analyze(DATA / "definitions-api.json", DATA / "capture.parquet", out, spark=spark,
                      vhost=RECORDED_VHOST)
    routes = read_routes(spark, out)
    assert [r["line"] for r in routes] == list(range(1, 36))
    assert all(r["agrees"] for r in routes)
    assert summary["agreeing"] == 35


def _synthetic(tmp_path: Path, count: int = 3000) -> tuple[Path, list[dict[str, Any]]]:
    rng = random.Random(7)
    rows = []
    for n in range(count):
        exchange = rng.choice(["events", "hx", "", "events"])
        key = rng.choice(["orders.eu.created", "orders.us.shipped", "users.x.y", "billing.eu.x",
                          "all.z", "mirror.q", "orders", "b1", "nope"])
        headers = rng.choice([None, {"level": 3, "critical": True}, {"level": "3", "critical": True},
                              {"n": 300}, {"n": "300"}, {"n": 300.0, "other": n},
                              {"region": "eu", "unrelated": n}, {"v": None}])
        rows.append({"exchange": exchange, "routing_key": key, "headers": headers,
                     "vhost": RECORDED_VHOST, "size": n % 17})
    path = tmp_path / "synthetic.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path, rows


def test_routing_distinct_inputs_gives_what_routing_every_message_gives(spark: Any, tmp_path: Path) -> None:
    """Grouping by the headers that matter (typed: 3 and "3" apart) then joining back is the
    same as routing each message in Python."""
    path, rows = _synthetic(tmp_path)
    router = Router(Topology.load(DATA / "definitions-api.json", vhost=RECORDED_VHOST))
    out = tmp_path / "out"
    summary = analyze(DATA / "definitions-api.json", path, out, spark=spark, vhost=RECORDED_VHOST)
    expected = [list(router.route(r["vhost"], r["exchange"], [r["routing_key"]], r["headers"]).queues)
                for r in rows]
    assert [r["queues"] for r in read_routes(spark, out)] == expected
    per_queue = Counter(q for queues in expected for q in queues)
    counted = {q["queue"]: q["messages"] for q in read_table(spark, out / "queues.parquet") if q["messages"]}
    assert counted == dict(per_queue)
    # Per-message header values no binding looks at ("other", "unrelated") do not multiply the
    # routing inputs: at most 3 exchanges x 9 keys x 8 header sets.
    assert summary["inputs"] <= 3 * 9 * 8


def test_what_if_counts_gains_losses_and_new_unroutables(spark: Any, tmp_path: Path) -> None:
    path, rows = _synthetic(tmp_path, 1000)
    before = json.loads((DATA / "definitions-api.json").read_text())
    after = json.loads(json.dumps(before))
    after["bindings"] = [b for b in after["bindings"]
                         if not (b["source"] == "events" and b["destination"] == "orders")
                         and b["source"] != "unrouted"]
    after["bindings"].append({"source": "events", "destination": "eu", "destination_type": "queue",
                              "routing_key": "users.#", "arguments": {}})
    new = tmp_path / "after.json"
    new.write_text(json.dumps(after))
    out = tmp_path / "out"
    summary = analyze(DATA / "definitions-api.json", path, out, against=new, spark=spark,
                      vhost=RECORDED_VHOST)
    r0 = Router(Topology(before, vhost=RECORDED_VHOST))
    r1 = Router(Topology(after, vhost=RECORDED_VHOST))
    gained: Counter[str] = Counter()
    lost: Counter[str] = Counter()
    changed = unroutable = 0
    for r in rows:
        q0 = set(r0.route(r["vhost"], r["exchange"], [r["routing_key"]], r["headers"]).queues)
        q1 = set(r1.route(r["vhost"], r["exchange"], [r["routing_key"]], r["headers"]).queues)
        gained.update(q1 - q0)
        lost.update(q0 - q1)
        changed += q0 != q1
        unroutable += bool(q0) and not q1
    assert (summary["changed"], summary["new_unroutable"]) == (changed, unroutable)
    table = {r["queue"]: (r["gained"], r["lost"]) for r in read_table(spark, out / "changes.parquet")}
    assert table == {q: (gained[q], lost[q]) for q in set(gained) | set(lost)}
    assert changed > 0
    assert unroutable > 0
    routes = read_routes(spark, out)
    assert sum(r["changed"] for r in routes) == changed
    assert read_table(spark, out / "changed_routes.parquet")[0]["messages"] >= 1


def test_a_disagreement_is_explained_by_the_binding_that_differs(spark: Any, tmp_path: Path) -> None:
    """Production routed by a topology the definitions no longer have: the report groups the
    disagreeing messages by cause."""
    defs = json.loads((DATA / "definitions-api.json").read_text())
    defs["bindings"] = [b for b in defs["bindings"] if b["destination"] != "audit-critical"]
    changed = tmp_path / "defs.json"
    changed.write_text(json.dumps(defs))
    out = tmp_path / "out"
    summary = analyze(changed, DATA / "tracing.log", out, spark=spark, vhost=RECORDED_VHOST)
    assert summary["disagreeing"] == 3
    (cause,) = read_table(spark, out / "disagreements.parquet")
    assert cause["cause"] == ("queue 'audit-critical' missing: no binding from the exchanges on the "
                              "path ('audit', 'events') leads to it")
    assert cause["messages"] == 3
    lines = {r["line"] for r in read_routes(spark, out) if r.get("agrees") is False}
    assert cause["line"] == min(lines)


def test_plain_parquet_without_line_numbers_counts_rows(spark: Any, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "traffic"
    folder.mkdir()
    pq.write_table(pa.table({"exchange": ["events"] * 2, "routing_key": ["orders.eu.created", "x.y"]}),
                   folder / "a.parquet")
    pq.write_table(pa.table({"exchange": ["hx", "dead-end", "dead-end"], "routing_key": ["", "k", "k"],
                             "headers": [json.dumps({"n": 300}), None, None],
                             "mandatory": [False, True, False]}), folder / "b.parquet")
    out = tmp_path / "out"
    summary = analyze(DATA / "definitions-api.json", folder, out, spark=spark)
    assert read_routes(spark, out) == [
        {"line": 1, "queues": ["eu", "orders"]}, {"line": 2, "queues": ["unrouted-q"]},
        {"line": 3, "queues": ["typed-int"]}, {"line": 4, "queues": [], "returned": True},
        {"line": 5, "queues": []}]
    assert (summary["unroutable"], summary["returned"]) == (2, 1)


def test_traffic_in_a_vhost_the_definitions_lack_is_refused_by_name(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(TrafficError, match=rf"vhost\(s\) the definitions do not define: "
                                           rf"'{RECORDED_VHOST}' \(35 messages\)"):
        analyze(DATA / "definitions-api.json", DATA / "tracing.log", tmp_path / "out", spark=spark)


def test_report_renders_in_a_real_browser(spark: Any, tmp_path: Path, chromium: str) -> None:
    import subprocess

    out = tmp_path / "out"
    analyze(DATA / "definitions-api.json", DATA / "tracing.log", out, spark=spark,
            vhost=RECORDED_VHOST)
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--hide-scrollbars", "--window-size=1200,1400"]
    blank = tmp_path / "blank.html"
    blank.write_text("<!doctype html><title>blank</title>")
    sizes = {}
    for name, page in (("report", out / "report.html"), ("blank", blank)):
        shot = tmp_path / f"{name}.png"
        result = subprocess.run([*flags, f"--user-data-dir={tmp_path / ('profile-' + name)}",
                                 f"--screenshot={shot}", page.resolve().as_uri()],
                                check=False, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        sizes[name] = shot.stat().st_size
    # Text, cards and charts do not compress like an empty page: the browser drew the report.
    assert sizes["report"] > 10 * sizes["blank"], sizes
    dumped = subprocess.run([*flags, f"--user-data-dir={tmp_path / 'profile-dom'}", "--dump-dom",
                             (out / "report.html").resolve().as_uri()],
                            check=False, capture_output=True, text=True, timeout=120)
    assert "Agreement with production" in dumped.stdout
    assert "The model routes all 35 recorded messages" in dumped.stdout


def test_a_bad_line_is_named_by_its_file_and_line(spark: Any, tmp_path: Path) -> None:
    """Lines are parsed in the executors; the first bad one (in line order) is reported with
    its file and line, and nothing is analysed."""
    bad = tmp_path / "bad.log"
    bad.write_text('{"exchange": "x", "routing_key": "k"}\n\n{"exchange": \n{"exchange": 5}\n')
    with pytest.raises(TrafficError, match=rf"^{bad}:3: not JSON \(Expecting value at column 14\)$"):
        analyze(DATA / "definitions-api.json", bad, tmp_path / "out", spark=spark, vhost=RECORDED_VHOST)


def _queues_per_message(spark: Any, out: Path) -> list[tuple[list[str], list[str] | None]]:
    return [(r["queues"], r.get("recorded_queues")) for r in read_routes(spark, out)]


def test_the_text_format_log_replays_as_the_json_log_does(
        spark: Any, tmp_path: Path, json_log: tuple[Path, dict[str, Any]]) -> None:
    """The tracing plugin's text format (recorded with the JSON log, of the same messages):
    every record published is a message, in order, and agrees with its recorded queues."""
    summary = analyze(DATA / "definitions.json", DATA / "tracing-text.log", tmp_path / "text",
                      spark=spark, exchange_types={"audit": "headers"})
    assert (summary["messages"], summary["agreeing"], summary["disagreeing"]) == (35, 35, 0)
    assert _queues_per_message(spark, tmp_path / "text") == _queues_per_message(spark, json_log[0])
    # The text format keeps the headers' AMQP types, which the JSON log loses: the routing
    # inputs differ where a type does (a byte 3 and a JSON number 3), the routes do not.
    assert summary["queues"] == json_log[1]["queues"]
    # Records are numbered as they come in the file, deliveries ("Message received") included.
    text = (DATA / "tracing-text.log").read_text().split("=" * 80)[1:]
    published = [n for n, record in enumerate(text, 1) if "Message published" in record]
    assert [r["line"] for r in read_routes(spark, tmp_path / "text")] == published


def test_a_folder_of_rotated_and_gzipped_logs_replays_as_one_log(
        spark: Any, tmp_path: Path, json_log: tuple[Path, dict[str, Any]]) -> None:
    """rotated/: the JSON log cut as logrotate leaves it (trace.log, trace.log.1,
    trace.log.2.gz); lines are counted across the files in name order."""
    summary = analyze(DATA / "definitions.json", DATA / "rotated", tmp_path / "rotated",
                      spark=spark, exchange_types={"audit": "headers"})
    assert (summary["messages"], summary["agreeing"]) == (35, 35)
    assert (read_table(spark, tmp_path / "rotated" / "queues.parquet")
            == read_table(spark, json_log[0] / "queues.parquet"))
    routes = read_routes(spark, tmp_path / "rotated")
    assert [r["line"] for r in routes] == sorted(r["line"] for r in routes)
    assert len({r["line"] for r in routes}) == 35
    assert sorted(map(str, _queues_per_message(spark, tmp_path / "rotated"))) == sorted(
        map(str, _queues_per_message(spark, json_log[0])))


def test_a_gzipped_text_format_log_is_read(spark: Any, tmp_path: Path) -> None:
    import gzip

    log = tmp_path / "trace.log.gz"
    log.write_bytes(gzip.compress((DATA / "tracing-text.log").read_bytes()))
    summary = analyze(DATA / "definitions.json", log, tmp_path / "out", spark=spark,
                      exchange_types={"audit": "headers"})
    assert (summary["messages"], summary["agreeing"]) == (35, 35)


def test_a_capture_partitioned_by_date_replays_with_lines_kept_apart(spark: Any, tmp_path: Path) -> None:
    """capture-by-date/date=.../: a firehose capture laid out by date, as daily captures are
    (the committed day, and the same capture copied as the day before); each day's file numbers
    its messages from 1, and the days' lines follow each other in name order."""
    import shutil

    days = tmp_path / "days"
    shutil.copytree(DATA / "capture-by-date", days)
    (day,) = days.iterdir()
    shutil.copytree(day, days / "date=2026-11-23")
    summary = analyze(DATA / "definitions-api.json", days, tmp_path / "out", spark=spark,
                      vhost=RECORDED_VHOST)
    assert (summary["messages"], summary["agreeing"]) == (70, 70)
    assert [r["line"] for r in read_routes(spark, tmp_path / "out")] == list(range(1, 71))


def test_inputs_and_outputs_go_through_another_hadoop_filesystem(
        spark: Any, tmp_path: Path, json_log: tuple[Path, dict[str, Any]]) -> None:
    """viewfs:// (Hadoop's mount-table filesystem, with local folders mounted in it) stands for
    a filesystem that is not the driver's: the traffic is listed and read, and every output
    written, through Spark alone — the same results as with local paths."""
    import hashlib

    table = "embroker" + hashlib.sha1(str(tmp_path).encode()).hexdigest()[:8]
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set(f"fs.viewfs.mounttable.{table}.link./data", DATA.as_uri())
    conf.set(f"fs.viewfs.mounttable.{table}.link./results", tmp_path.as_uri())
    out = f"viewfs://{table}/results/out"
    summary = analyze(DATA / "definitions.json", f"viewfs://{table}/data/tracing.log", out,
                      spark=spark, exchange_types={"audit": "headers"})
    local, local_summary = json_log
    assert summary == local_summary
    for name in ("queues.parquet", "bindings.parquet", "exchanges.parquet", "inputs.parquet",
                 "routing_keys.parquet", "windows.parquet", "disagreements.parquet"):
        assert read_table(spark, f"{out}/{name}") == read_table(spark, local / name), name
    assert read_routes(spark, out) == read_routes(spark, local)
    assert json.loads(read_text(spark, f"{out}/summary.json"))["messages"] == 35
    assert "Routing analysis" in read_text(spark, f"{out}/report.html")
    assert (tmp_path / "out" / "report.html").is_file()  # where the mount table points


def test_traffic_that_cannot_be_read_is_refused_by_name(spark: Any, tmp_path: Path) -> None:
    def refused(traffic: Path) -> str:
        with pytest.raises(TrafficError) as caught:
            analyze(DATA / "definitions-api.json", traffic, tmp_path / "out", spark=spark,
                    vhost=RECORDED_VHOST)
        return str(caught.value)

    assert refused(tmp_path / "nowhere") == f"{tmp_path / 'nowhere'}: no such traffic file or folder"
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "a.parquet").write_bytes((DATA / "capture.parquet").read_bytes())
    (mixed / "b.log").write_text((DATA / "tracing.log").read_text())
    assert refused(mixed) == (f"{mixed}: Parquet files mixed with others ({mixed / 'b.log'}); "
                              "give a folder of one kind")
    csv = tmp_path / "traffic.csv"
    csv.write_text("exchange,routing_key\nevents,a.b\n")
    assert refused(csv) == (f"{csv}: neither JSON lines nor the tracing plugin's text format "
                            "(it begins 'exchange,routing_key')")
    deliveries = tmp_path / "deliveries.log"
    log = [json.loads(line) for line in (DATA / "tracing.log").read_text().splitlines()]
    deliveries.write_text("".join(json.dumps(e) + "\n" for e in log if e["type"] == "received"))
    assert refused(deliveries) == "the traffic has no published message to replay"
