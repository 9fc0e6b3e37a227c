"""The examples use pytest-embroker's own ``broker`` fixture (the marker configures it), not the
plain one of tests/conftest.py that the rest of embroker's suite shares."""

from pytest_embroker.plugin import broker  # noqa: F401
