"""``screen``/``propose --space FILE ...``: campaigns over a vendor's catalog of several reactions
(two of Chemspace's sample, a3 and a80, 87,074 products; and with a reaction SMARTS added), with
reaction and synthon columns in the log and the batch files, resume, and bad input refused with
nothing written; the catalog problem's flat indices, names and metrics."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rdkit")

from trieste_scalable.campaigns.screen import screen  # noqa: E402
from trieste_scalable.cli import main  # noqa: E402
from trieste_scalable.errors import UsageError  # noqa: E402
from trieste_scalable.spaces.catalog_problem import CatalogProblem  # noqa: E402
from trieste_scalable.spaces.catalog_space import CatalogSpace  # noqa: E402
from trieste_scalable.spaces.reaction import AMIDE, REAGENTS, ReactionLibrary  # noqa: E402
from trieste_scalable.spaces.reagents import read_reagents  # noqa: E402
from trieste_scalable.spaces.synthons import CHEMSPACE_SAMPLE, read_synthon_files  # noqa: E402

AMINES, ACIDS = REAGENTS / "primary_amines_100.smi.gz", REAGENTS / "carboxylic_acids_100.smi.gz"
FAST = dict(initial=8, budget=16, batch_size=8, quiet=True)


@pytest.fixture(scope="module")
def synthons(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """a3 (19 x 174 = 3,306 products) and a80 (1 x 283 x 296 = 83,768) of the sample."""
    with gzip.open(CHEMSPACE_SAMPLE, "rt") as handle:
        rows = [line for line in handle if not line.startswith("#")]
    kept = [line for line in rows[1:] if line.rstrip().endswith((",a3", ",a80"))]
    path = tmp_path_factory.mktemp("catalog") / "two_reactions.csv"
    path.write_text(rows[0] + "".join(kept))
    return path


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _filled(batch: Path) -> list[dict[str, str]]:
    from rdkit import Chem
    from rdkit.Chem import QED

    rows = _rows(batch)
    for row in rows:
        row["score"] = repr(QED.qed(Chem.MolFromSmiles(row["smiles"])))
    return rows


def _problem(synthons: Path, *extra: ReactionLibrary) -> CatalogProblem:
    libraries = [*read_synthon_files([synthons]).values(), *extra]
    return CatalogProblem("catalog", CatalogSpace(libraries, ("morgan", 2, 64)))


def test_a_screen_logs_each_product_with_its_reaction_and_synthons_and_resumes(
    synthons: Path,
) -> None:
    logdir = synthons.parent / "screen"
    screen(space=[synthons], logdir=logdir, objective="qed", **FAST)
    rows = _rows(logdir / "evaluations.csv")
    assert len(rows) == 24 and not any(row["error"] for row in rows)
    problem = _problem(synthons)
    reactions = read_synthon_files([synthons])
    columns = int(problem.search_space.dimension) - 1
    for row in rows:
        point = problem.points[[int(row["index"])]][0]
        library = reactions[row["reaction"]]
        blocks = [row[f"synthon_{k + 1}"] for k in range(len(library.counts))]
        assert point[0] == ["a3", "a80"].index(row["reaction"])
        assert blocks == library.reagent_names(point[1 : 1 + len(library.counts)].astype(int))
        assert all(row[f"synthon_{k + 1}"] == "" for k in range(len(library.counts), columns))
        assert row["name"] == "|".join([*blocks, row["reaction"]])
        assert row["smiles"] == library.product(point[1 : 1 + len(library.counts)].astype(int))
    assert len({row["smiles"] for row in rows}) == 24
    assert (logdir / "best_molecules.png").is_file()

    more = FAST | dict(budget=32, resume=True)
    screen(space=[synthons], logdir=logdir, objective="qed", **more)
    again = _rows(logdir / "evaluations.csv")
    assert again[:24] == rows and len(again) == 40 and len({r["smiles"] for r in again}) == 40


def test_a_prospective_campaign_over_a_catalog_and_a_reaction_checks_what_is_told(
    synthons: Path,
) -> None:
    """A catalog of a3, a80 and Walters' amide space: batch files name reaction and synthons;
    a row whose reaction or synthon contradicts its SMILES is refused, naming the line; a lost
    ``in_flight.json`` is rebuilt from the batch file's columns."""
    from trieste_scalable.campaigns.prospective.campaign import ProspectiveCampaign

    logdir = synthons.parent / "lab"
    lab = ProspectiveCampaign.start(
        space=[synthons], reaction=AMIDE, reagents=[AMINES, ACIDS], logdir=logdir, **FAST
    )
    first = lab.propose()
    rows = _filled(first.path)
    assert {row["reaction"] for row in rows} <= {"a3", "a80", "reaction"}
    bad = dict(rows[0])
    bad["reaction"] = "a80" if rows[0]["reaction"] != "a80" else "a3"
    with pytest.raises(UsageError, match="its reaction '.*' contradicts its SMILES"):
        lab.tell([bad, *rows[1:]])
    bad = dict(rows[1]) | {"synthon_1": "nonesuch"}
    with pytest.raises(UsageError, match="its synthon_1 'nonesuch' contradicts its SMILES"):
        lab.tell([rows[0], bad, *rows[2:]])
    lab.tell(rows)
    second = lab.propose()
    (logdir / "in_flight.json").unlink()
    again = lab.propose()
    assert again.batch == 1 and again.smiles == second.smiles and not again.new
    lab.tell(_filled(again.path))
    assert len(_rows(logdir / "evaluations.csv")) == 16


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(library="x.smi"), "--library and --space both name the library"),
        (dict(algorithm="random"), "--space: random has no model"),
        (dict(objective="table:x.csv"), "score table"),
        (dict(reaction=AMIDE), "--reaction needs --reagents"),
        (
            dict(space=None, reaction=AMIDE, reagents=[AMINES, ACIDS], pool_similar=8),
            "--pool-similar searches synthon files: it needs --space",
        ),
    ],
)
def test_bad_settings_are_refused_before_anything_is_written(
    synthons: Path, settings: dict, message: str
) -> None:
    logdir = synthons.parent / "refused"
    with pytest.raises(UsageError, match=message):
        screen(**({"space": [synthons], "logdir": logdir, "objective": "qed"} | FAST | settings))
    assert not logdir.exists()


@pytest.mark.parametrize(
    "content, message",
    [
        ("CC[U] e1 1 r1\n", "it needs two or more"),
        ("CC[U],e1,1,r1\nC(=O)[Np],x,2,r1\n", "line 1: the link atom [U]"),
        ("CC[U],e1,1,r1\nC(=O)[U],x,2,r1\nC(,y,2,r1\n", "line 3: the SMILES 'C('"),
        ("just,three,fields\n", "line 1: 3 fields"),
    ],
)
def test_the_command_exits_2_on_a_bad_synthon_file_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture, content: str, message: str
) -> None:
    bad, logdir = tmp_path / "bad.txt", tmp_path / "run"
    bad.write_text(content)
    argv = ["screen", "--space", str(bad), "--logdir", str(logdir), "--quiet", "--objective", "qed"]
    assert main(argv) == 2
    said = capsys.readouterr().err
    assert str(bad) in said and message in said and not logdir.exists()


def test_the_problem_names_products_by_flat_index_across_reactions(synthons: Path) -> None:
    amide = ReactionLibrary(AMIDE, [read_reagents(AMINES), read_reagents(ACIDS)])
    problem = _problem(synthons, amide)
    rows = problem.points
    assert len(rows) == 3306 + 83768 + amide.size
    edges = np.array([0, 3305, 3306, 3306 + 83767, 3306 + 83768, len(rows) - 1])
    points = rows[edges]
    np.testing.assert_array_equal(points[:, 0], [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(problem.indices(points), edges)
    np.testing.assert_array_equal(points[1], [0, 18, 173, 0])  # a3: two components, padded
    np.testing.assert_array_equal(points[3], [1, 0, 282, 295])
    assert problem.search_space.reaction_ids == ("a3", "a80", "reaction")
    for bad in ([[3, 0, 0, 0]], [[0, 0, 0, 1]], [[0, 0.5, 0, 0]], [[2, 100, 0, 0]]):
        with pytest.raises(ValueError, match="not points of the catalog"):
            problem.indices(np.array(bad, dtype=float))

    identity = problem.identity(int(edges[-1]))
    assert problem.identity_columns()[2:] == ["reaction", "synthon_1", "synthon_2", "synthon_3"]
    assert identity[2:] == ["reaction", *amide.reagent_names([99, 99]), ""]
    assert identity[1] == problem.candidate_name(int(edges[-1]))
    found = problem.proposed_index(
        [dict(zip(problem.identity_columns(), problem.identity(int(i)))) for i in edges]
        + [{"reaction": "a9"}, {"reaction": "a3", "synthon_1": "x"}]
    )
    assert found == [*edges.tolist(), None, None]
    assert problem.identity_matches(edges[:2], [identity, problem.identity(3305)]).tolist() == [
        False,
        True,
    ]
    metrics = problem.metrics(edges)
    assert {k: v for k, v in metrics.items() if k.startswith("evaluated")} == {
        "evaluated_by_reaction/a3": 2.0,
        "evaluated_by_reaction/a80": 2.0,
        "evaluated_by_reaction/reaction": 2.0,
    }
    assert problem.content_hash() != _problem(synthons).content_hash()
