"""Score tables as objectives (``table:FILE[:COLUMN]``) and MolPAL's top-k measures, each against
an independent computation."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rdkit")

from rdkit import Chem  # noqa: E402

from trieste_scalable.problems.score_table import TableSpec, read_table, table_scores  # noqa: E402
from trieste_scalable.problems.screening import screening_problem  # noqa: E402
from trieste_scalable.problems.top_k import top_k_found  # noqa: E402

from ...util import moses


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIESTE_SCALABLE_CACHE", str(tmp_path / "cache"))


def _randomised(smiles: str, seed: int) -> str:
    """Another SMILES of the same molecule (RDKit's random atom order)."""
    return Chem.MolToSmiles(Chem.MolFromSmiles(smiles), doRandom=True, canonical=False)


def test_a_table_is_matched_by_canonical_smiles_with_its_gaps_and_repeats(tmp_path: Path) -> None:
    library = moses(40)
    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(-8.0, 1.0, size=40), 1)
    lines = ["name\tSMILES\tscore\tother"]
    for i, s in enumerate(library):
        if i % 5 == 4:  # a fifth of the library has no score
            continue
        lines.append(f"m{i}\t{_randomised(s, i)}\t{scores[i]}\t7")
    lines.append(f"again\t{library[0]}\t{scores[0] + 1.0}\t7")  # worse (lower is better): ignored
    lines.append(f"again\t{library[1]}\t{scores[1] - 1.0}\t7")  # better: kept
    lines.append(f"empty\t{library[2]}\t\t7")  # no score: ignored beside the scored row
    lines.append("bad\tnot-a-molecule\t-12.0\t7")
    table = tmp_path / "scores.tsv.gz"
    with gzip.open(table, "wt") as handle:
        handle.write("\n".join(lines) + "\n")

    found = table_scores(f"table:{table}", library, higher_is_better=False)
    expected = scores.copy()
    expected[1] -= 1.0
    expected[4::5] = np.nan
    np.testing.assert_array_equal(found, expected)
    read = read_table(TableSpec.parse(f"table:{table}"), higher_is_better=False)
    assert read.column == "score" and len(read.notes) == 3
    # higher is better: the repeat of molecule 0 now wins, that of molecule 1 loses
    higher = table_scores(f"table:{table}", library, higher_is_better=True)
    assert higher[0] == scores[0] + 1.0 and higher[1] == scores[1]
    # a named column
    assert np.all(table_scores(f"table:{table}:other", library, True)[np.isfinite(expected)] == 7)


def test_bad_tables_are_refused_naming_the_file(tmp_path: Path) -> None:
    library = moses(5)
    cases = {
        "no_smiles.csv": ("name,score\na,1\n", "no 'smiles' column"),
        "no_numbers.csv": ("smiles,name\nCCO,a\n", "no numeric column"),
        "other_library.csv": ("smiles,score\nCCO,1\n", "scores none of the library"),
        "empty.csv": ("", "is empty"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=message):
            table_scores(f"table:{tmp_path / name}", library, True)
    (tmp_path / "ok.csv").write_text(f"smiles,score\n{library[0]},1\n")
    with pytest.raises(ValueError, match="no column 'energy'"):
        table_scores(f"table:{tmp_path / 'ok.csv'}:energy", library, True)
    with pytest.raises(ValueError, match="is not a file"):
        TableSpec.parse(f"table:{tmp_path / 'missing.csv'}")


def test_the_screening_problem_keeps_the_users_direction_in_one_place(tmp_path: Path) -> None:
    library = moses(30)
    (tmp_path / "lib.smi").write_text("\n".join(library) + "\n")
    scores = np.linspace(-10.0, -5.0, 30)
    rows = [f"{s},{v}" for i, (s, v) in enumerate(zip(library, scores)) if i != 3]
    (tmp_path / "t.csv").write_text("smiles,dock\n" + "\n".join(rows) + "\n")
    spec = f"table:{tmp_path / 't.csv'}"
    lower = screening_problem(str(tmp_path / "lib.smi"), spec, higher_is_better=False)
    higher = screening_problem(str(tmp_path / "lib.smi"), spec, higher_is_better=True)
    index = [lower.labels.index(s) for s in library]  # type: ignore[attr-defined]
    user = np.array([lower.user_value(v) for v in lower.values[index]])
    np.testing.assert_array_equal(user[np.arange(30) != 3], scores[np.arange(30) != 3])
    np.testing.assert_array_equal(lower.values, -higher.values)  # Trieste minimises either
    assert [higher.user_value(v) for v in higher.values[index][:2]] == list(scores[:2])
    assert np.isnan(lower.values[index[3]]) and lower.values_known
    with pytest.raises(LookupError, match="has no score"):
        lower.objective(0)(index[3])


def _top_k_by_hand(values: np.ndarray, evaluated: np.ndarray, k: int) -> tuple[float, float]:
    """MolPAL's definitions written out: SMILES in both top-k sets, and the multiset
    intersection of the true top-k scores with the k best evaluated scores."""
    scored = [i for i in range(len(values)) if np.isfinite(values[i])]
    true = sorted(scored, key=lambda i: (values[i], i))[:k]
    seen = sorted({int(i) for i in evaluated if np.isfinite(values[i])}, key=lambda i: values[i])
    best = [values[i] for i in seen[:k]]
    common = sum((Counter(values[true].tolist()) & Counter(best)).values())
    return len(set(true) & set(evaluated.tolist())) / k, common / k


def test_top_k_found_matches_molpals_definitions_with_ties_and_gaps() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        values = np.round(rng.normal(size=300), 1)  # 0.1 resolution: many ties
        values[rng.choice(300, 30, replace=False)] = np.nan
        evaluated = rng.choice(300, 60, replace=True)
        found = top_k_found(values, evaluated, k=25)
        smiles, scores = _top_k_by_hand(values, evaluated, 25)
        assert found.smiles == pytest.approx(smiles) and found.scores == pytest.approx(scores)
    everything = top_k_found(values, np.arange(300), k=25)
    assert everything.smiles == everything.scores == 1.0


def test_the_shipped_table_is_named_for_its_target_and_the_old_name_still_reads() -> None:
    """MolPAL's Enamine10k scores are against thymidylate kinase (PDB 4UNN), not AmpC: the table
    is ``table:enamine-10k-4unn``; the misnomer reads the same file, with a warning."""
    right = TableSpec.parse("table:enamine-10k-4unn")
    assert right.path.name == "4unn_scores.csv.gz" and right.path.is_file()
    with pytest.warns(DeprecationWarning, match="thymidylate kinase, PDB 4UNN, not AmpC"):
        assert TableSpec.parse("table:enamine-10k-ampc") == right
    from trieste_scalable.campaigns.spec.library import ScreenSpec

    with pytest.warns(DeprecationWarning):  # a campaign logged with the old name resumes
        old = ScreenSpec(objective="table:enamine-10k-ampc", lower_is_better=True)
    assert old == ScreenSpec(objective="table:enamine-10k-4unn", lower_is_better=True)
