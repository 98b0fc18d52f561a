"""A prospective campaign (the lab in the loop): ``propose`` and ``tell`` from Python and the
command line pick what ``screen`` picks with the lab's scores as its oracle, and each hostile
file or directory gets a clear refusal with nothing logged (or a failure, logged with its
reason, where the issue says so). Crashes during a tell: ``test_prospective_crashes.py``."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("rdkit")

from trieste_scalable.campaigns.directory.lock import CampaignLock  # noqa: E402
from trieste_scalable.campaigns.prospective.campaign import ProspectiveCampaign  # noqa: E402
from trieste_scalable.campaigns.screen import screen  # noqa: E402
from trieste_scalable.campaigns.spec.defaults import resolved  # noqa: E402
from trieste_scalable.campaigns.spec.library import ProposeSpec  # noqa: E402
from trieste_scalable.cli import main  # noqa: E402
from trieste_scalable.errors import CampaignError, UsageError  # noqa: E402
from trieste_scalable.stores.featurise import score_library  # noqa: E402

from ...util import (
    csv_rows,  # noqa: E402
    write_library,
)

SETTINGS: dict[str, Any] = dict(initial=20, batch_size=20, budget=40, seed=3, quiet=True)


@pytest.fixture
def library(small_library: Any) -> Path:
    return small_library(120)


def _fill(path: Path, scores: Any = None, delimiter: str = ",") -> list[dict[str, str]]:
    """Fill in a proposed batch's score column with QED (or ``scores``), as the lab would."""
    rows = csv_rows(path)
    values = score_library([r["smiles"] for r in rows], "qed") if scores is None else scores
    for row, value in zip(rows, values):
        row["score"] = repr(float(value)) if isinstance(value, float) else str(value)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), delimiter=delimiter)
        writer.writeheader()
        writer.writerows(rows)
    return rows


def _campaign(library: Path, tmp_path: Path, **settings: Any) -> ProspectiveCampaign:
    options = {**SETTINGS, **settings}
    return ProspectiveCampaign.start(library=str(library), logdir=str(tmp_path / "lab"), **options)


@pytest.mark.parametrize("reopened", [True, False], ids=["reopened-each-round", "one-object"])
def test_three_rounds_pick_exactly_what_screen_picks_with_the_lab_as_oracle(
    library: Path, tmp_path: Path, reopened: bool
) -> None:
    """Reopened each round (days apart, new processes: the model is rebuilt from the records)
    or one object throughout (a notebook: its optimizer is kept), the same picks as screen's,
    failed evaluations included."""
    table = tmp_path / "qed.csv"
    library_smiles = library.read_text().split()
    values = score_library(library_smiles, "qed")  # a sixth the lab cannot score: they fail
    scored = ["" if n % 6 == 3 else float(v) for n, v in enumerate(values)]
    table.write_text("smiles,qed\n" + "".join(f"{s},{v}\n" for s, v in zip(library_smiles, scored)))
    screen(
        library=str(library),
        objective=f"table:{table}",
        logdir=str(tmp_path / "screen"),
        **SETTINGS,
    )
    campaign = _campaign(library, tmp_path)
    for batch in range(3):
        proposed = campaign.propose()
        again = campaign.propose()  # asked again before it is told: the same batch
        assert (proposed.batch, again.batch, again.new) == (batch, batch, False)
        assert again.smiles == proposed.smiles and again.path == proposed.path
        rows = csv_rows(proposed.path)
        assert [r["rank"] for r in rows] == [str(n) for n in range(1, 21)]
        assert all(r["score"] == "" for r in rows)
        assert all((r["predicted"] != "") == (batch > 0) for r in rows)
        truth = dict(zip(library_smiles, scored))
        _fill(proposed.path, [truth[r["smiles"]] for r in rows])
        campaign.tell(proposed.path)
        if reopened:
            campaign = ProspectiveCampaign.open(tmp_path / "lab")
    columns = ("batch", "smiles", "observed", "error")
    screened = [tuple(r[c] for c in columns) for r in csv_rows(tmp_path / "screen/evaluations.csv")]
    lab_rows = [tuple(r[c] for c in columns) for r in csv_rows(tmp_path / "lab/evaluations.csv")]
    assert [r[:3] for r in lab_rows] == [r[:3] for r in screened]
    assert sum(bool(r[3]) for r in lab_rows) >= 3  # failures were told (reasons differ)
    with pytest.raises(UsageError, match="reached its budget"):
        campaign.propose()
    for directory in ("screen", "lab"):
        assert (tmp_path / directory / "best_molecules.png").stat().st_size > 0
        assert (tmp_path / directory / "summary.png").stat().st_size > 0


def test_the_models_predictions_are_in_the_users_units(library: Path, tmp_path: Path) -> None:
    """Lower is better: the predictions of batch 1 are near the docking-like scores told."""
    campaign = _campaign(library, tmp_path, lower_is_better=True)
    first = campaign.propose()
    _fill(first.path, [-8.0 - 0.1 * n for n in range(20)])
    campaign.tell(first.path)
    predicted = [float(r["predicted"]) for r in csv_rows(campaign.propose().path)]
    assert all(-12.0 < p < -6.0 for p in predicted)


def test_a_screen_of_a_sparse_score_with_a_transform_logs_the_scores_told(
    library: Path, tmp_path: Path
) -> None:
    """A hit probability, 0.001 but for every tenth molecule (0.3 to 0.7): with ``auto`` the
    model sees it transformed, and evaluations.csv and the campaign's dataset keep the table's
    values."""
    smiles = library.read_text().split()
    hits = {
        s: (0.3 + 0.4 * n / len(smiles) if n % 10 == 0 else 0.001) for n, s in enumerate(smiles)
    }
    table = tmp_path / "hits.csv"
    table.write_text("smiles,p\n" + "".join(f"{s},{v!r}\n" for s, v in hits.items()))
    result = screen(
        library=str(library),
        objective=f"table:{table}",
        logdir=str(tmp_path / "sparse"),
        transform="auto",
        **SETTINGS,
    )
    rows = csv_rows(tmp_path / "sparse" / "evaluations.csv")
    assert len(rows) == 60
    expected = np.array([hits[smiles[int(r["index"])]] for r in rows])
    np.testing.assert_allclose([float(r["score"]) for r in rows], expected, rtol=1e-6)  # 6 digits
    told = -result.campaign.dataset.observations.numpy()[:, 0]  # Trieste's: minimised
    np.testing.assert_array_equal(np.sort(told), np.sort(expected))


@pytest.mark.parametrize("transform", ["log", "power", "rank"])
def test_a_transformed_models_predictions_are_in_the_users_units_too(
    library: Path, tmp_path: Path, transform: str
) -> None:
    """A hit rate told (0.001 to 0.002, three hits of 0.5): the model sees it transformed and
    standardised (values near -1 to 3), and the batch file gives medians in the user's units,
    between the worst and 20 % past the best told, and half-widths below the scores' range."""
    campaign = _campaign(library, tmp_path, transform=transform)
    first = campaign.propose()
    scores = [0.5 if n in (2, 9, 15) else 0.001 + 0.00005 * n for n in range(20)]
    _fill(first.path, scores)
    campaign.tell(first.path)
    rows = csv_rows(campaign.propose().path)
    predicted = np.array([float(r["predicted"]) for r in rows])
    uncertainty = np.array([float(r["uncertainty"]) for r in rows])
    assert np.all((predicted >= 0.001 - 1e-9) & (predicted <= 0.6)), predicted
    assert np.all((uncertainty >= 0) & (uncertainty < 0.5)), uncertainty


def test_a_partial_batch_leaves_the_rest_pending_never_proposed_again(
    library: Path, tmp_path: Path
) -> None:
    campaign = _campaign(library, tmp_path)
    first = campaign.propose()
    rows = _fill(first.path)
    campaign.tell([(r["smiles"], r["score"]) for r in rows[:15]])  # five still in the lab
    second = campaign.propose()
    assert second.batch == 1 and second.new
    assert not set(second.smiles) & {r["smiles"] for r in rows[15:]}
    late = campaign.tell([{"SMILES": r["smiles"], "Score": r["score"]} for r in rows[15:]])
    assert late.scores == 5 and late.pending == 20  # the second batch is still in the lab
    assert len(csv_rows(tmp_path / "lab/evaluations.csv")) == 20


def test_bad_scores_are_failed_evaluations_with_their_reasons(
    library: Path, tmp_path: Path
) -> None:
    campaign = _campaign(library, tmp_path)
    first = campaign.propose()
    scores: list[Any] = [0.5 + 0.01 * n for n in range(16)] + ["", "n/a", "nan", "inf"]
    _fill(first.path, scores)
    told = campaign.tell(first.path)
    assert (told.scores, told.failed) == (16, 4)
    errors = [r["error"] for r in csv_rows(tmp_path / "lab/evaluations.csv")][16:]
    assert errors == [
        "no score given",
        "score 'n/a' is not a number",
        "score 'nan' is not finite",
        "score 'inf' is not finite",
    ]
    second = campaign.propose()  # the failed ones are never proposed again
    assert not set(second.smiles) & set(first.smiles)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda text: text.replace(",score", ",value"), "no smiles and score columns"),
        (lambda text: text.replace(",", "|"), "no smiles and score columns"),
        (lambda text: text + text.splitlines()[3] + "\n", "repeats the molecule of line 4"),
        (lambda text: text + "not-a-molecule,,,,,,1.0\n", "does not parse"),
        (lambda text: text + "CCCCCCCCCCCCCCO,,,,,,1.0\n", "was not proposed by this campaign"),
        (lambda text: "", "is empty"),
    ],
    ids=[
        "no-score-column",
        "wrong-delimiter",
        "duplicated-row",
        "unparseable",
        "not-proposed",
        "empty",
    ],
)
def test_a_hostile_batch_file_is_refused_naming_the_row_and_nothing_is_logged(
    library: Path, tmp_path: Path, damage: Any, message: str
) -> None:
    campaign = _campaign(library, tmp_path)
    path = campaign.propose().path
    _fill(path)
    path.write_text(damage(path.read_text()))
    before = (tmp_path / "lab/evaluations.csv").read_bytes()
    with pytest.raises(UsageError, match=message):
        campaign.tell(path)
    assert (tmp_path / "lab/evaluations.csv").read_bytes() == before
    assert not (tmp_path / "lab/extra_molecules.csv").exists()


def test_smiles_spelled_otherwise_match_and_tsv_and_semicolons_are_read(
    library: Path, tmp_path: Path
) -> None:
    from rdkit import Chem

    campaign = _campaign(library, tmp_path)
    first = campaign.propose()
    rows = _fill(first.path)
    spelled = [Chem.MolToSmiles(Chem.MolFromSmiles(r["smiles"]), doRandom=True) for r in rows]
    lines = ["Smiles;Score"] + [f"{s};{r['score']}" for s, r in zip(spelled[:10], rows)]
    (tmp_path / "semicolons.csv").write_text("\ufeff" + "\n".join(lines) + "\n")  # Excel's BOM
    assert campaign.tell(tmp_path / "semicolons.csv").scores == 10
    tabs = ["score\tsmiles"] + [f"{r['score']}\t{s}" for s, r in zip(spelled[10:], rows[10:])]
    (tmp_path / "rest.tsv").write_text("\n".join(tabs) + "\n")
    assert campaign.tell(tmp_path / "rest.tsv").scores == 10
    logged = csv_rows(tmp_path / "lab/evaluations.csv")
    assert [r["smiles"] for r in logged] == [r["smiles"] for r in rows]  # the library's spelling


def test_a_molecule_told_twice_is_refused(library: Path, tmp_path: Path) -> None:
    campaign = _campaign(library, tmp_path)
    path = campaign.propose().path
    _fill(path)
    campaign.tell(path)
    with pytest.raises(UsageError, match="told already"):
        campaign.tell(path)
    assert len(csv_rows(tmp_path / "lab/evaluations.csv")) == 20


def test_extra_molecules_are_logged_marked_and_told_to_the_model(
    library: Path, tmp_path: Path
) -> None:
    campaign = _campaign(library, tmp_path)
    path = campaign.propose().path
    rows = _fill(path)
    made = [("CCCCCCCCCCCCCCO", "0.95"), ("c1ccccc1CCN", "0.9")]  # not in the library
    with pytest.raises(UsageError, match="needs a score"):
        campaign.tell([("CCO", "")], extra=True)
    told = campaign.tell([(r["smiles"], r["score"]) for r in rows] + made, extra=True)
    assert (told.scores, told.extra) == (20, 2)
    extras = csv_rows(tmp_path / "lab/extra_molecules.csv")
    assert [(r["smiles"], r["score"]) for r in extras] == made
    second = campaign.propose()  # the model is built on 22 molecules
    assert second.batch == 1 and len(second.smiles) == 20
    with pytest.raises(UsageError, match="told already"):
        campaign.tell([made[0]], extra=True)


def test_directories_that_are_not_this_campaigns_are_refused(library: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="holds no campaign"):
        ProspectiveCampaign.open(tmp_path / "nowhere")
    screen(library=str(library), objective="qed", logdir=str(tmp_path / "screen"), **SETTINGS)
    with pytest.raises(UsageError, match="a campaign of screen, not a prospective one"):
        ProspectiveCampaign.open(tmp_path / "screen")
    campaign = _campaign(library, tmp_path)
    campaign.propose()
    with pytest.raises(UsageError, match=r"changed: seed: 3 -> 4"):
        _campaign(library, tmp_path, seed=4)
    write_library(library, 320, start=200)  # another library
    with pytest.raises(CampaignError, match="library's content"):
        ProspectiveCampaign.open(tmp_path / "lab")


def test_a_tell_while_another_holds_the_directory_is_refused_then_one_wins(
    library: Path, tmp_path: Path
) -> None:
    campaign = _campaign(library, tmp_path)
    path = campaign.propose().path
    _fill(path)
    with CampaignLock(tmp_path / "lab"):  # another tell of the same file, in progress
        with pytest.raises(CampaignError, match="in use by another campaign"):
            campaign.tell(path)
    campaign.tell(path)
    with pytest.raises(UsageError, match="told already"):
        campaign.tell(path)
    assert len(csv_rows(tmp_path / "lab/evaluations.csv")) == 20


def test_the_command_line_runs_a_campaign_from_the_directorys_settings(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logdir = str(tmp_path / "lab")
    first = ["propose", "--library", str(library), "--logdir", logdir, "--initial", "10"]
    assert main([*first, "--batch-size", "10", "--budget", "20", "--quiet"]) == 0
    path = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert path == tmp_path / "lab" / "batch_000.csv"
    rows = _fill(path)
    outsider = tmp_path / "outsider.csv"
    outsider.write_text("smiles,score\n" + f"{rows[0]['smiles']},1\nCCCCCCCCCCCCCCO,2\n")
    assert main(["tell", logdir, str(outsider)]) == 2  # one row was not proposed
    assert "outsider.csv, line 3" in capsys.readouterr().err
    assert len(csv_rows(tmp_path / "lab/evaluations.csv")) == 0
    assert main(["tell", logdir, str(path)]) == 0
    assert main(["propose", "--logdir", logdir]) == 0  # the directory's own settings
    assert capsys.readouterr().out.strip().endswith("batch_001.csv")
    assert main(["propose", "--logdir", logdir, "--seed", "1"]) == 2
    assert "seed: 0 -> 1" in capsys.readouterr().err
    assert main(["tell", str(tmp_path / "nowhere"), str(path)]) == 2


def test_propose_resolves_as_screen_does(tmp_path: Path) -> None:
    spec = resolved(ProposeSpec(logdir=str(tmp_path / "lab")))
    assert (spec.algorithm, spec.batch_size, spec.batch_policy) == ("gp-bucb", 100, "fixed")
    assert spec.fingerprint_settings == ("atom-pair-counts", 2, 2048)
    with pytest.raises(TypeError, match="propose\\(\\) has no setting 'objective'"):
        ProposeSpec.of(objective="qed")


def test_the_best_molecules_picture_reaches_tensorboard(library: Path, tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    screen(library=str(library), objective="qed", logdir=str(tmp_path / "screen"), **SETTINGS)
    events = EventAccumulator(str(tmp_path / "screen"), size_guidance={"tensors": 0}).Reload()
    (image,) = events.Tensors("campaign/best_molecules")  # TF2's image summary: PNG strings
    width, height, png = image.tensor_proto.string_val
    assert image.step == 60 and int(width) > 500 and int(height) > 300
    assert png.startswith(b"\x89PNG")


def test_the_summary_panels_match_independent_computations() -> None:
    """The running mean of the best N against sorting each prefix; the top-k share curve's last
    point against MolPAL's SMILES measure (:func:`~trieste_scalable.problems.top_k.top_k_found`)."""
    import numpy as np

    from trieste_scalable.campaigns.reporting.screening_summary import running_best_mean
    from trieste_scalable.problems.top_k import top_k_curve, top_k_found

    rng = np.random.default_rng(0)
    values = rng.normal(size=300)
    expected = [np.sort(values[:m])[:10].mean() for m in range(10, 301)]
    np.testing.assert_allclose(running_best_mean(values, 10), expected, rtol=1e-12)
    library = np.round(rng.normal(size=2000), 1)  # ties, as docking scores have
    library[::50] = np.nan  # unscored molecules
    evaluated = rng.choice(2000, 600, replace=True)
    curve = top_k_curve(library, evaluated)
    assert np.all(np.diff(curve) >= 0) and curve[0] >= 0
    assert curve[-1] == pytest.approx(top_k_found(library, evaluated).smiles, abs=1e-12)
