"""``rabbitmq-queues``' golden files (tests/control/golden/rabbitmq-queues/cluster/) against the
reference cluster again, when it is asked for (``EMBROKER_REFERENCE_URL`` and
``EMBROKER_REFERENCE_CLUSTER=1``): the session of :mod:`tests.control.queues_scenario` replayed
on its nodes (their names written as the golden files' ``rabbit-N@localhost``), compared as
tests/control/test_queues_cli.py compares embroker's. About 45 s of the tool's runs; everything
the session made is removed after."""

from __future__ import annotations

import pytest

from tests.control.queues_scenario import replay
from tests.control.record_queues_golden import Reference
from tests.control.test_queues_cli import ELECTED, _masked, _masked_err, golden

from .reference_cluster import ReferenceCluster


@pytest.mark.differential
def test_the_reference_cluster_still_prints_rabbitmq_queues_golden_files(
        reference_cluster: ReferenceCluster) -> None:
    peer = Reference(reference_cluster)
    try:
        found = replay(peer, "cluster")
    finally:
        peer.clean()
    differ = []
    for case, record in found.items():
        expected = golden("cluster", case)
        elected = case in ELECTED
        if (record["exit"], _masked(record["stdout"], elected=elected),
                _masked_err(record["stderr"])) != (
                expected["exit"], _masked(expected["stdout"], elected=elected),
                _masked_err(expected["stderr"])):
            differ.append((case, record["exit"], record["stdout"], record["stderr"]))
    assert differ == []
