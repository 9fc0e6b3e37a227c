"""Fixtures for the conformance tests: the reference RabbitMQ, when there is one."""

from __future__ import annotations

import pytest

from .drivers import reference_url_or_skip_reason


@pytest.fixture(scope="session")
def reference_url() -> str:
    """The AMQP URL of the reference RabbitMQ (EMBROKER_REFERENCE_URL); skips when unusable."""
    url, why = reference_url_or_skip_reason()
    if url is None:
        pytest.skip(why or "no reference")
    return url
