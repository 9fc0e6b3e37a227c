"""The examples in the codec's docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["_assembly", "_fields", "_frames", "_method", "_properties", "_spec"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"embroker.amqp091.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
