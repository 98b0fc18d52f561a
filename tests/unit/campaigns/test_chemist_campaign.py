"""A chemist's campaign end to end, in this process: their own score table (lower is better,
a fifth of the library unscored) through every rule, reported in their units, and a campaign
that stops on an error keeps its record (Ray: ``integration_tests/test_screen_table_ray.py``)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rdkit")

from trieste_scalable.campaigns.algorithms import builders as algorithms  # noqa: E402
from trieste_scalable.campaigns.algorithms.registry import ALGORITHMS  # noqa: E402
from trieste_scalable.campaigns.screen import screen  # noqa: E402
from trieste_scalable.errors import UsageError  # noqa: E402

from ...util import moses

NUM = 120


@pytest.fixture
def chemist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, dict]:
    """A library, and a table of docking-like scores (lower is better) missing every fifth."""
    monkeypatch.setenv("TRIESTE_SCALABLE_CACHE", str(tmp_path / "cache"))
    library = moses(NUM)
    (tmp_path / "library.smi").write_text("\n".join(library) + "\n")
    rng = np.random.default_rng(7)
    scores = {s: float(np.round(rng.normal(-7.0, 1.0), 1)) for s in library}
    rows = [f"{s},{v}" for i, (s, v) in enumerate(scores.items()) if i % 5 != 2]
    (tmp_path / "dock.csv").write_text("smiles,vina\n" + "\n".join(rows) + "\n")
    unscored = {s for i, s in enumerate(library) if i % 5 == 2}
    return tmp_path, tmp_path / "dock.csv", {"scores": scores, "unscored": unscored}


def _rows(logdir: Path) -> list[dict[str, str]]:
    with open(logdir / "evaluations.csv", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_rule_screens_a_table_missing_a_fifth_without_stalling(
    chemist: tuple[Path, Path, dict], algorithm: str
) -> None:
    root, table, truth = chemist
    logdir = root / algorithm
    one_at_a_time = algorithm == "bkb" or algorithm.startswith("mini")  # a model update each
    budget = 12 if one_at_a_time else 20
    done = screen(
        library=str(root / "library.smi"),
        objective=f"table:{table}",
        lower_is_better=True,
        algorithm=algorithm,
        batch_policy="adaptive",  # the stopping rules: failures must not fill their batches
        initial=10,
        budget=budget,
        batch_size=5,
        seed=1,
        quiet=True,
        logdir=str(logdir),
    )
    rows = _rows(logdir)
    assert len(rows) == 10 + budget  # the whole budget: no rule stalled on its failures
    assert len({row["smiles"] for row in rows}) == 10 + budget  # screening: each molecule once
    failed = [row for row in rows if not row["observed"]]
    assert failed and all("has no score" in row["error"] for row in failed)
    assert {row["smiles"] for row in failed} <= truth["unscored"]
    for row in rows:  # the score column in the chemist's units and direction
        if row["observed"]:
            assert float(row["score"]) == pytest.approx(truth["scores"][row["smiles"]])
    assert done.evaluated.size == 10 + budget - len(failed)


def test_lower_is_better_is_shown_as_it_is(
    chemist: tuple[Path, Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    root, table, truth = chemist
    done = screen(
        library=str(root / "library.smi"),
        objective=f"table:{table}",
        lower_is_better=True,
        initial=10,
        budget=30,
        batch_size=10,
        quiet=True,
        logdir=str(root / "run"),
    )
    out = capsys.readouterr().out
    logged = {r["smiles"]: float(r["score"]) for r in _rows(root / "run") if r["observed"]}
    best = min(logged.values())
    lines = out.split("best molecules found (score, SMILES):\n")[1].splitlines()
    assert float(lines[0].split()[0]) == pytest.approx(best)  # the lowest, not minus it
    assert "of its top 100" in out and (root / "run" / "summary.png").is_file()
    scored = sorted(v for s, v in truth["scores"].items() if s not in truth["unscored"])
    assert best >= scored[0]
    # the measures over the candidates, against the table itself
    ranked = sorted(set(truth["scores"]) - truth["unscored"], key=lambda s: truth["scores"][s])
    top = set(ranked[:100])  # the 96 scored molecules: fewer than 100
    assert done.top_k.smiles == pytest.approx(len(top & set(logged)) / len(top))


def test_a_campaign_stopped_by_an_error_keeps_its_record_and_resumes(
    chemist: tuple[Path, Path, dict], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, table, _ = chemist
    settings = dict(
        library=str(root / "library.smi"),
        objective=f"table:{table}",
        lower_is_better=True,
        initial=12,
        budget=20,
        batch_size=10,
        quiet=True,
        logdir=str(root / "run"),
    )
    original = algorithms.build

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the model could not be built")

    monkeypatch.setattr(algorithms, "build", broken)
    with pytest.raises(RuntimeError, match="could not be built"):
        screen(**settings)
    before = _rows(root / "run")
    assert len(before) == 12  # the initial design's results, kept
    monkeypatch.setattr(algorithms, "build", original)
    screen(**settings, resume=True)
    after = _rows(root / "run")
    assert after[:12] == before and len(after) == 32


def test_screen_takes_the_commands_settings_and_checks_them(chemist: tuple) -> None:
    root, table, _ = chemist
    with pytest.raises(TypeError, match="no setting 'bach_size'"):
        screen(library=str(root / "library.smi"), bach_size=3)
    with pytest.raises(UsageError, match="--batch-policy fixed"):
        screen(library=str(root / "library.smi"), algorithm="mini-ucb", batch_policy="fixed")
    assert not (root / "runs").exists()
