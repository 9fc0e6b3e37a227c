"""pytest-embroker: fixtures over :mod:`embroker.testing` (the plugin is :mod:`pytest_embroker.plugin`)."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
