"""The examples in embroker's docstrings run (the codec's are in tests/amqp091)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "embroker._broker", "embroker._erlang", "embroker.client", "embroker.fieldtypes",
    "embroker.testing", "embroker.model._clock", "embroker.model._exchange",
    "embroker.model._names", "embroker.amqp091._confirms", "embroker.model._access",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
