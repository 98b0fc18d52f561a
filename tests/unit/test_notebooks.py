"""The tutorial notebooks (jupytext percent format) run top to bottom as scripts."""

import runpy
from pathlib import Path

import matplotlib
import pytest

NOTEBOOKS = sorted((Path(__file__).parents[2] / "docs" / "notebooks").glob("*.pct.py"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path: Path, capsys: pytest.CaptureFixture) -> None:
    matplotlib.use("Agg")
    namespace = runpy.run_path(str(path), run_name="__main__")  # plt.show() is a no-op (Agg)
    out = capsys.readouterr().out
    assert out.count("best true value") == 2
    # both loops spent exactly the budget, BBKB in batches of its own sizes
    assert sum(namespace["bbkb_sizes"]) == sum(namespace["trieste_sizes"]) == 60
    assert max(namespace["bbkb_sizes"]) <= 10


def test_there_is_a_notebook() -> None:
    assert NOTEBOOKS
