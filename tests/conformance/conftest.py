"""Fixtures for the conformance tests: the reference RabbitMQ, when there is one.

``EMBROKER_REFERENCE_URL`` unset: no reference; the golden files stand for RabbitMQ and the
tests that need a live RabbitMQ skip. Set: it must answer, or every test that uses it fails
(a configured reference that is down is a broken setup, not a reason to check less).
"""

from __future__ import annotations

import pytest

from .drivers import reference_url_or_problem


@pytest.fixture(scope="session")
def reference() -> str | None:
    """The AMQP URL of the reference RabbitMQ, or None when none is configured; fails when
    one is configured (``EMBROKER_REFERENCE_URL``) and does not answer."""
    url, problem = reference_url_or_problem()
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    return url


@pytest.fixture(scope="session")
def reference_url(reference: str | None) -> str:
    """The reference's URL, for tests that only make sense against it: skipped without one."""
    if reference is None:
        pytest.skip(f"no reference RabbitMQ ({REFERENCE_HINT})")
    return reference


REFERENCE_HINT = "set EMBROKER_REFERENCE_URL, e.g. amqp://guest:guest@127.0.0.1:5672/"
