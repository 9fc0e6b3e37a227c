"""The cluster scenarios (:mod:`tests.cluster.differential`) against their golden files, recorded
from a three-node RabbitMQ 3.10.8 cluster: embroker's cluster always; the reference again when it
is asked for (``EMBROKER_REFERENCE_URL`` and ``EMBROKER_REFERENCE_CLUSTER=1``), which also
rewrites a golden file with ``EMBROKER_RECORD=1``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .differential import QUEUES, SCENARIOS, EmbrokerCluster, ReferencePeer, run
from .reference_cluster import ReferenceCluster

GOLDEN = Path(__file__).resolve().parent / "golden"


def _golden(name: str) -> list[str]:
    return (GOLDEN / f"{name}.txt").read_text().splitlines()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_embroker_sees_what_the_reference_cluster_showed(name: str) -> None:
    assert run(SCENARIOS[name], EmbrokerCluster()) == _golden(name)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_reference_cluster_still_shows_it(name: str,
                                             reference_cluster: ReferenceCluster) -> None:
    peer = ReferencePeer(reference_cluster)
    try:
        lines = run(SCENARIOS[name], peer)
    finally:
        peer.close(QUEUES[name])
    if os.environ.get("EMBROKER_RECORD") == "1":
        GOLDEN.mkdir(exist_ok=True)
        (GOLDEN / f"{name}.txt").write_text("\n".join(lines) + "\n")
    assert lines == _golden(name)


def test_every_golden_file_has_its_scenario() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.txt")) == sorted(SCENARIOS)
