"""The benchmarks that reach into the broker's internals still run: each workload of
``benchmarks/processing.py`` (a ``ServerConnection`` fed bytes directly) and
``benchmarks/listener_turns.py`` (the listener's loop turned from this thread) with a few
messages; and those of ``benchmarks/stomp_rates.py`` (stomp.py) and ``benchmarks/mqtt_rates.py``
(paho-mqtt) against an in-process STOMP or MQTT listener. The workloads check their own
outcome (every message queued, delivered or acked); the figures themselves are not asserted."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
if str(BENCHMARKS) not in sys.path:  # (their shared _rates, as when they run as scripts)
    sys.path.append(str(BENCHMARKS))


def _benchmark(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


processing = _benchmark("processing")
listener_turns = _benchmark("listener_turns")
stomp_rates = _benchmark("stomp_rates")
mqtt_rates = _benchmark("mqtt_rates")
scale = _benchmark("scale")


@pytest.mark.parametrize("workload", [workload for _, workload in processing.LINES],
                         ids=[label for label, _ in processing.LINES])
def test_processing_workload_runs_and_checks_its_outcome(
        workload: Callable[[int], float]) -> None:
    assert workload(30) > 0


@pytest.mark.parametrize("name", ["publish", "confirms", "consume"])
def test_listener_turns_workload_runs_and_checks_its_outcome(name: str) -> None:
    assert getattr(listener_turns, name)(30) > 0


@pytest.mark.parametrize("floor", [floor for _, floor in listener_turns.FLOORS],
                         ids=[label for label, _ in listener_turns.FLOORS])
def test_listener_turns_machine_figure_runs(
        floor: Callable[[int], float]) -> None:
    assert floor(30) >= 0  # (the round trips check each answer they read)


@pytest.mark.parametrize("workload", [workload for _, workload in stomp_rates.LINES],
                         ids=[label for label, _ in stomp_rates.LINES])
def test_stomp_rates_workload_runs_and_checks_its_outcome(workload: Callable[..., Any]) -> None:
    from embroker import Broker
    from embroker.server import Server

    with Server(Broker(), listeners={"stomp": 0}) as server:
        port = server.listener_port("stomp")
        assert port is not None
        run = workload(stomp_rates.Side(port, server.url), 30)
        assert run.seconds > 0  # (each waits for its receipt or its last message)
        assert server.errors == []


@pytest.mark.parametrize("workload", [workload for _, workload in mqtt_rates.LINES],
                         ids=[label for label, _ in mqtt_rates.LINES])
def test_mqtt_rates_workload_runs_and_checks_its_outcome(workload: Callable[..., Any]) -> None:
    from embroker import Broker
    from embroker.server import Server

    broker = Broker()
    with Server(broker, listeners={"mqtt": 0}) as server:
        port = server.listener_port("mqtt")
        assert port is not None
        run = workload(mqtt_rates.Side(port, server.url), 30)
        assert run.seconds > 0  # (each waits for its PUBACKs or its last message)
        assert server.errors == []
    assert not [name for name in broker.queues if name.startswith(("mqtt-", "embroker-bench"))]


def test_cluster_benchmark_stops_and_starts_a_node_with_its_queues() -> None:
    from benchmarks import cluster

    broker, run = cluster.cluster(9, 2)
    run()
    assert all(node.running for node in broker.nodes)
    assert not [q for q in broker.vhosts["/"].queues.values() if q.down]
    assert broker.queues["q0"].message_count + broker.queues["q0"].unacked == 2


def test_scale_lines_run_in_process_and_over_tcp(monkeypatch: pytest.MonkeyPatch) -> None:
    """``benchmarks/scale.py``'s lines at small sizes: in-process (a publish whose message does
    not reach its queue raises), and over TCP against an in-process listener (each waits for
    its round trip or its last confirm, and a channel closed by an error raises), cleaning up
    what they declared."""
    import os

    from embroker import Broker
    from embroker.server import Server

    monkeypatch.setattr(scale, "SETTLE", 0.0)
    monkeypatch.setattr(scale, "IDLE", 0.01)
    assert scale.bindings_in_process(50, 1, 20)[0] > 0
    assert scale.churn_in_process(50, 1, changing=True)[0] > 0
    assert scale.queues_in_process(20, 1, 20)[0] > 0
    broker = Broker()
    with Server(broker, heartbeat=0) as server:
        target = scale.Target("embroker", server.port, 0, os.getpid(), lambda: 0)
        assert scale.bindings_tcp(target, 50, 20)[0] > 0
        assert scale.queues_tcp(target, 20, 20)[0] > 0
        assert scale.connections_run(target, 5)[0] == 5
        assert server.errors == []
    assert not [name for name in broker.queues if name.startswith("scale-")]
