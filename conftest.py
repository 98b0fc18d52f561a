"""Shared pytest configuration: quiet TensorFlow, ``--runslow``, full shape checks, seeding."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402
from check_shapes import ShapeCheckingState, set_enable_check_shapes  # noqa: E402


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run slow tests")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: use --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _full_shape_checks():  # type: ignore[no-untyped-def]
    """Check shapes inside compiled code too while testing (Trieste does the same)."""
    set_enable_check_shapes(ShapeCheckingState.ENABLED)
    yield
    set_enable_check_shapes(ShapeCheckingState.EAGER_MODE_ONLY)
