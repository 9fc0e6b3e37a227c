"""The reference cluster fixture: three RabbitMQ nodes of one's own in one cluster (issue 48's
oracle, :mod:`tests.cluster.reference_cluster`), started once for the package and only when asked
for: ``EMBROKER_REFERENCE_URL`` set (a RabbitMQ is installed here) and
``EMBROKER_REFERENCE_CLUSTER=1`` (it takes about 8 s to start and three more Erlang VMs)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from .reference_cluster import (
    ReferenceCluster,
    ReferenceClusterUnavailable,
    find_rabbitmq_home,
    start_cluster,
)

#: Why the cluster's tests are skipped, or None when they run.
SKIP_REASON = (
    "set EMBROKER_REFERENCE_URL and EMBROKER_REFERENCE_CLUSTER=1 to start a 3-node RabbitMQ cluster"
    if not (os.environ.get("EMBROKER_REFERENCE_URL") and os.environ.get("EMBROKER_REFERENCE_CLUSTER") == "1")
    else "no RabbitMQ installed here" if find_rabbitmq_home() is None
    else None)


@pytest.fixture(scope="package")
def reference_cluster_session() -> Iterator[ReferenceCluster]:
    """The cluster of this package's tests: started on first use, killed and removed after its
    last test (three idle Erlang VMs would slow every test after them)."""
    if SKIP_REASON is not None:
        pytest.skip(SKIP_REASON)
    try:
        cluster = start_cluster()
    except ReferenceClusterUnavailable as exc:  # opted in: a failure, not a skip
        pytest.fail(f"the reference cluster did not start: {exc}")
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def reference_cluster(reference_cluster_session: ReferenceCluster) -> Iterator[ReferenceCluster]:
    """The package's cluster for one test, every node's app running again after it."""
    yield reference_cluster_session
    reference_cluster_session.restore()
