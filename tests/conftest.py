"""Fixtures of the unit tests (``conftest.py`` at the root has those integration tests share)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _own_cache(private_cache: Path) -> Path:
    """Every unit test has its own cache directory: no entry of another test's, or of the
    user's, is read or pruned."""
    return private_cache
