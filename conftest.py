"""Shared pytest configuration: quiet TensorFlow, ``--runslow``, full shape checks, seeding, a
private cache directory, a small library file."""

from __future__ import annotations

import os
from pathlib import Path

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


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's own cache directory (``TRIESTE_SCALABLE_CACHE``): entries written by other
    tests, or by the user, are never read or pruned (a module uses it with
    ``pytestmark = pytest.mark.usefixtures("private_cache")``)."""
    monkeypatch.setenv("TRIESTE_SCALABLE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def small_library(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Write the first ``n`` molecules of the shipped MOSES subset to a ``.smi`` file in the
    test's directory and return its path: ``small_library(120)``."""

    def write(n: int, name: str = "library.smi") -> Path:
        from trieste_scalable.chemistry.molecules import load_smiles

        path = tmp_path / name
        path.write_text("\n".join(load_smiles("moses-20k")[:n]) + "\n")
        return path

    return write


@pytest.fixture(autouse=True)
def _full_shape_checks():  # type: ignore[no-untyped-def]
    """Check shapes inside compiled code too while testing (Trieste does the same)."""
    set_enable_check_shapes(ShapeCheckingState.ENABLED)
    yield
    set_enable_check_shapes(ShapeCheckingState.EAGER_MODE_ONLY)
