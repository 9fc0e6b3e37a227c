"""The golden-file machinery itself: files, diffs, sequences read back, shrinking (no broker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import golden
from .harness import Entry, Err, Normalizer, Run
from .record import select
from .stateful import (
    SEQUENCES,
    Ack,
    Consume,
    Nack,
    Op,
    Publish,
    Qos,
    Recover,
    generate,
    ops_of,
    parse_op,
    shrink,
)


def _run(*lines: tuple[str, str, object]) -> Run:
    return Run("candidate", [Entry(*line) for line in lines], [], None)


def test_a_golden_file_reads_back_as_the_lines_written_without_its_comments(tmp_path: Path) -> None:
    path = tmp_path / "s.txt"
    run = _run(("c1.ch1", "queue_purge('q')", 3), ("note", "done", None))
    assert golden.write(path, run.lines(), ["recorded", ""]) != ""
    assert path.read_text().startswith("# recorded\n#\nc1.ch1  queue_purge('q') -> 3\n")
    assert golden.read(path) == run.lines()
    assert golden.diff(golden.read(path) or [], run, path) == ""


def test_writing_the_same_golden_file_again_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.txt"
    golden.write(path, ["c1.ch1  x() -> None"], ["c"])
    assert golden.write(path, ["c1.ch1  x() -> None"], ["c"]) == ""
    diff = golden.write(path, ["c1.ch1  x() -> 1"], ["c"])
    assert "-c1.ch1  x() -> None" in diff
    assert "+c1.ch1  x() -> 1" in diff


def test_a_missing_golden_file_reads_as_none_and_its_message_names_the_record_command(
        tmp_path: Path) -> None:
    path = tmp_path / "nothing.txt"
    assert golden.read(path) is None
    assert "python -m tests.conformance.record --stateful x" in golden.missing_message(
        path, "--stateful x")


def test_a_golden_diff_shows_recorded_against_observed(tmp_path: Path) -> None:
    path = tmp_path / "s.txt"
    diff = golden.diff(["c1.ch1  queue_purge('q') -> 3"], _run(("c1.ch1", "queue_purge('q')", 4)),
                       path)
    assert "--- RabbitMQ, recorded" in diff
    assert "+++ candidate" in diff
    assert "-c1.ch1  queue_purge('q') -> 3" in diff
    assert "+c1.ch1  queue_purge('q') -> 4" in diff


def test_a_line_a_golden_file_cannot_hold_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot hold"):
        golden.render(["# looks like a comment"], [])


def test_tables_compare_as_sets_of_fields_and_render_sorted() -> None:
    n = Normalizer("tok-")
    a, b = n({"b": 1, "a": {"y": 2, "x": 1}}), n({"a": {"x": 1, "y": 2}, "b": 1})
    assert repr(a) == repr(b) == "{'a': {'x': 1, 'y': 2}, 'b': 1}"
    assert n(["b", "a"]) == ["b", "a"], "lists keep their order"


def test_an_operation_reads_back_from_its_step_note() -> None:
    op = Nack(ch=1, pick=-1, multiple=True, requeue=False)
    assert parse_op(repr(op)) == op
    lines = [_run(("note", f"step {i}", o)).lines()[0]
             for i, o in enumerate([Publish("q1", 2), op], 1)]
    assert ops_of(["c1.ch1  basic_qos() -> None", *lines]) == [Publish("q1", 2), op]


@pytest.mark.parametrize("text", ["print('x')", "Publish(to=open('f'), count=1)", "Err(1)"])
def test_only_literal_operations_are_read_back(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 (ast.s ValueErrors too)
        parse_op(text)


def test_steps_out_of_order_are_refused() -> None:
    with pytest.raises(ValueError, match="out of order"):
        ops_of(["note    step 2 -> Recover(ch=0)"])


def test_shrink_keeps_only_the_steps_and_arguments_the_failure_needs() -> None:
    ops: list[Op] = [Publish("x", 3), Qos(0, 2, True), Consume(0, True), Ack(0, 3, True),
                     Recover(1)]

    def fails(candidate: list[Op]) -> bool:
        return any(isinstance(op, Qos) and op.global_qos for op in candidate) and any(
            isinstance(op, Publish) for op in candidate)

    assert shrink(ops, fails) == [Publish("q1", 0), Qos(0, 0, True)]


def test_generation_is_the_same_every_time() -> None:
    first = generate(5)
    assert first == generate(5)
    assert all(len(ops) >= 1 for ops in first)


def test_every_named_sequence_round_trips_through_its_step_notes() -> None:
    for name, ops in SEQUENCES.items():
        lines = [_run(("note", f"step {i}", op)).lines()[0] for i, op in enumerate(ops, 1)]
        assert ops_of(lines) == ops, name


def test_record_selects_names_and_patterns_in_their_order() -> None:
    available = ["queue_purge", "queue_delete", "exchange_bind"]
    assert select(["queue_*"], available, "scenario") == ["queue_purge", "queue_delete"]
    assert select([], available, "scenario") == available
    with pytest.raises(SystemExit, match="no scenario called nope"):
        select(["nope"], available, "scenario")


def test_an_error_renders_as_its_repr_in_a_golden_line() -> None:
    run = _run(("c1.ch1", "queue_purge('missing')", Err("channel", 404, "NOT_FOUND - x")))
    assert run.lines() == [
        "c1.ch1  queue_purge('missing') -> Err(scope='channel', code=404, text='NOT_FOUND - x')"]


def test_record_refuses_embroker_even_presenting_itself_as_rabbitmq(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Golden files are RabbitMQ's word: the recorder refuses a broker whose server properties
    say embroker, whether its product says so or only its information (``--as-rabbitmq``)."""
    from embroker import Broker

    from .record import main

    for broker in (Broker(), Broker(as_rabbitmq="3.10.8")):
        with broker.serve() as server:
            with pytest.raises(SystemExit) as refused:
                main(["--url", server.url, "--check", "queue_purge"])
            assert refused.value.code == 2
            assert "is embroker" in capsys.readouterr().err
    assert not golden.says_embroker({"product": "RabbitMQ", "version": "3.10.8",
                                     "cluster_name": "rabbit@vm", "information": b"Licensed"})
