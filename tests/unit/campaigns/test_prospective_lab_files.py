"""A prospective campaign against the lab's files in the shapes spreadsheets write and against
campaign directories edited by hand (issue 71): each case is read as the lab meant it, or
refused naming the file, line and cell with nothing logged, and no record a typo or a deleted
file leaves ever strands the campaign (a job numbered twice, a pending molecule proposed again,
a molecule neither logged nor pending). ``test_prospective.py`` has the campaign itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rdkit")

from trieste_scalable.campaigns.prospective.campaign import ProspectiveCampaign  # noqa: E402
from trieste_scalable.campaigns.prospective.tell import checked_tell, filled_rows  # noqa: E402
from trieste_scalable.cli import main  # noqa: E402
from trieste_scalable.errors import CampaignError, UsageError  # noqa: E402

from ...util import csv_rows  # noqa: E402

SETTINGS: dict[str, Any] = dict(initial=10, batch_size=10, budget=30, seed=5, quiet=True)


@pytest.fixture
def library(small_library: Any) -> Path:
    return small_library(80)


@pytest.fixture
def campaign(library: Path, tmp_path: Path) -> ProspectiveCampaign:
    return ProspectiveCampaign.start(library=str(library), logdir=str(tmp_path / "lab"), **SETTINGS)


def _write(path: Path, header: str, lines: list[str], newline: str = "\n") -> Path:
    path.write_text(newline.join([header, *lines]) + newline)
    return path


def _scores(campaign: ProspectiveCampaign, batch: int) -> list[str]:
    return [r["smiles"] for r in csv_rows(campaign.logdir / f"batch_{batch:03d}.csv")]


def _logged(campaign: ProspectiveCampaign) -> list[dict[str, str]]:
    return csv_rows(campaign.logdir / "evaluations.csv")


def _tell_all(campaign: ProspectiveCampaign, batch: int, base: float = 0.1) -> None:
    smiles = _scores(campaign, batch)
    campaign.tell([(s, base + 0.01 * n) for n, s in enumerate(smiles)])


# --- the six cases that stranded a campaign -------------------------------------------------


def test_decimal_commas_of_a_semicolon_file_are_read_as_numbers(
    campaign: ProspectiveCampaign, tmp_path: Path
) -> None:
    smiles = _scores(campaign, campaign.propose().batch)
    lines = [f"{s};0,{8791 + n}" for n, s in enumerate(smiles)]
    told = campaign.tell(_write(tmp_path / "excel.csv", "smiles;score", lines))
    assert (told.scores, told.failed) == (10, 0)
    logged = [float(r["score"]) for r in _logged(campaign)]
    assert logged == pytest.approx([0.8791 + 1e-4 * n for n in range(10)], abs=1e-12)


def test_a_decimal_comma_in_a_comma_separated_file_refuses_the_file(
    campaign: ProspectiveCampaign, tmp_path: Path
) -> None:
    smiles = _scores(campaign, campaign.propose().batch)
    path = _write(tmp_path / "b.csv", "smiles,score", [f"{smiles[0]},0.5", f'{smiles[1]},"0,5"'])
    with pytest.raises(UsageError, match=r"b.csv, line 3: score '0,5' .*decimal comma"):
        campaign.tell(path)
    assert _logged(campaign) == []


@pytest.mark.parametrize("value", ["1e308", "-1e308", "2e150"])
def test_a_score_beyond_the_models_range_is_refused_naming_line_and_value(
    campaign: ProspectiveCampaign, tmp_path: Path, value: str
) -> None:
    smiles = _scores(campaign, campaign.propose().batch)
    lines = [f"{s},{value if n == 3 else 0.5}" for n, s in enumerate(smiles)]
    with pytest.raises(UsageError, match=f"line 5: score '{value}' is beyond"):
        campaign.tell(_write(tmp_path / "b.csv", "smiles,score", lines))
    assert _logged(campaign) == []


def test_the_largest_score_accepted_still_lets_the_campaign_propose(
    campaign: ProspectiveCampaign,
) -> None:
    """The bound refused above is one the model copes with: 1e150 is told and the next batch
    comes (1e308 stopped every propose with a CheckNumerics error)."""
    smiles = _scores(campaign, campaign.propose().batch)
    campaign.tell([(s, 1e150 if n == 0 else 0.1 * n) for n, s in enumerate(smiles)])
    assert campaign.propose().batch == 1


def test_a_header_naming_the_score_twice_is_refused_naming_both(
    campaign: ProspectiveCampaign, tmp_path: Path
) -> None:
    smiles = _scores(campaign, campaign.propose().batch)
    path = _write(tmp_path / "b.csv", "smiles,score, Score ", [f"{s},,0.5" for s in smiles])
    with pytest.raises(UsageError, match=r"names score twice, 'score' \(column 2\) and ' Score "):
        campaign.tell(path)
    assert _logged(campaign) == []


def test_cr_only_line_ends_are_read_and_a_malformed_file_is_named(
    campaign: ProspectiveCampaign, tmp_path: Path
) -> None:
    smiles = _scores(campaign, campaign.propose().batch)
    lines = [f"{s},0.{n + 1}" for n, s in enumerate(smiles)]
    huge = _write(tmp_path / "huge.csv", "smiles,score", [lines[0] + "9" * 200_000])
    with pytest.raises(UsageError, match="cannot read the filled-in batch .*huge.csv .*limit"):
        campaign.tell(huge)
    assert main(["tell", str(campaign.logdir), str(huge)]) == 2
    told = campaign.tell(_write(tmp_path / "mac.csv", "smiles,score", lines, newline="\r"))
    assert (told.scores, told.failed) == (10, 0)


def test_in_flight_deleted_by_hand_never_numbers_a_job_twice(
    campaign: ProspectiveCampaign, capsys: pytest.CaptureFixture[str]
) -> None:
    _tell_all(campaign, campaign.propose().batch)
    pending = campaign.propose()
    ids = [int(r["id"]) for r in csv_rows(pending.path)]
    (campaign.logdir / "in_flight.json").unlink()
    again = ProspectiveCampaign.open(campaign.logdir).propose()
    assert (again.batch, again.new, again.smiles) == (1, False, pending.smiles)
    assert "did not list 10 proposed molecules" in capsys.readouterr().err
    _tell_all(campaign, 1)
    third = campaign.propose()
    jobs = [int(r["job"]) for r in _logged(campaign)]
    new_ids = [int(r["id"]) for r in csv_rows(third.path)]
    assert sorted(jobs) == list(range(20)) and ids == list(range(10, 20))
    assert min(new_ids) == 20 and not set(new_ids) & set(jobs)


def test_in_flight_deleted_after_every_tell_numbers_on_from_the_log(
    campaign: ProspectiveCampaign,
) -> None:
    _tell_all(campaign, campaign.propose().batch)
    (campaign.logdir / "in_flight.json").unlink()
    second = ProspectiveCampaign.open(campaign.logdir).propose()
    assert second.new and [int(r["id"]) for r in csv_rows(second.path)] == list(range(10, 20))


def test_a_deleted_rule_state_keeps_pending_and_failed_molecules_out_of_the_next_batch(
    campaign: ProspectiveCampaign,
) -> None:
    first = campaign.propose()
    campaign.tell([(s, "n/a" if n < 2 else 0.1 * n) for n, s in enumerate(first.smiles)])
    second = campaign.propose()
    campaign.tell([(s, 0.5 + 0.01 * n) for n, s in enumerate(second.smiles[:4])])
    for state in campaign.logdir.glob("rule_state_*.json"):
        state.unlink()
    third = ProspectiveCampaign.open(campaign.logdir).propose()
    assert third.new and len(third.smiles) == 10
    assert not set(third.smiles) & set(second.smiles[4:])  # still in the lab
    assert not set(third.smiles) & set(first.smiles[:2])  # failed
    assert not set(third.smiles) & set(first.smiles + second.smiles)


# --- what was questionable, decided -----------------------------------------------------------


@pytest.mark.parametrize(
    "score, refused",
    [
        ("-7.5 kcal/mol", True),
        ("1_000", True),
        ("\u0660.\u0665", True),  # Arabic-Indic digits, which Python's float() reads
        ("#DIV/0!", False),  # Excel's error values: failed evaluations
        ("failed", False),
    ],
    ids=["units", "underscore", "arabic-indic", "excel-error", "word"],
)
def test_a_score_with_digits_that_is_no_number_refuses_the_file_and_words_fail(
    campaign: ProspectiveCampaign, tmp_path: Path, score: str, refused: bool
) -> None:
    smiles = _scores(campaign, campaign.propose().batch)
    path = _write(tmp_path / "b.csv", "smiles,score", [f"{smiles[0]},0.5", f"{smiles[1]},{score}"])
    if refused:
        with pytest.raises(UsageError, match=r"line 3: score .* is not a number as a spreadsheet"):
            campaign.tell(path)
        assert _logged(campaign) == []
    else:
        assert campaign.tell(path).failed == 1
        assert _logged(campaign)[1]["error"] == f"score {score!r} is not a number"


def test_a_unicode_minus_is_a_minus(campaign: ProspectiveCampaign, tmp_path: Path) -> None:
    smiles = _scores(campaign, campaign.propose().batch)
    campaign.tell(_write(tmp_path / "b.csv", "smiles,score", [f"{smiles[0]},\u22127.5"]))
    assert float(_logged(campaign)[0]["score"]) == -7.5


def test_a_smiles_cell_with_text_after_a_space_is_refused(
    campaign: ProspectiveCampaign, tmp_path: Path
) -> None:
    smiles = _scores(campaign, campaign.propose().batch)
    path = _write(tmp_path / "b.csv", "smiles,score", [f"{smiles[0]} junk,0.5"])
    with pytest.raises(UsageError, match="line 2: SMILES .* holds a space"):
        campaign.tell(path)
    assert _logged(campaign) == []


@pytest.mark.parametrize("score", [b"0.5", True], ids=["bytes", "bool"])
def test_a_score_from_python_of_another_type_raises_type_error(
    campaign: ProspectiveCampaign, score: Any
) -> None:
    smiles = _scores(campaign, campaign.propose().batch)
    with pytest.raises(TypeError, match="row 1: the score .* neither a number nor text"):
        campaign.tell([(smiles[0], score)])
    assert _logged(campaign) == []


def test_the_same_tell_after_a_crash_left_its_journal_says_it_is_logged(
    campaign: ProspectiveCampaign, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    smiles = _scores(campaign, campaign.propose().batch)
    path = _write(
        tmp_path / "b.csv", "smiles,score", [f"{s},0.{n + 1}" for n, s in enumerate(smiles)]
    )
    rows, where = filled_rows(path)
    campaign.records.telling.write(checked_tell(campaign.records, rows, where, False))  # killed
    assert main(["tell", str(campaign.logdir), str(path)]) == 0
    assert "had been interrupted; it is logged now" in capsys.readouterr().err
    assert len(_logged(campaign)) == 10
    assert main(["tell", str(campaign.logdir), str(path)]) == 2  # a second time: told already
    assert "told already" in capsys.readouterr().err


def test_a_failed_or_mistyped_score_is_corrected_and_the_model_uses_it(
    campaign: ProspectiveCampaign, tmp_path: Path
) -> None:
    first = campaign.propose()
    campaign.tell([(s, "n/a" if n == 0 else 0.1 * n) for n, s in enumerate(first.smiles)])
    with pytest.raises(UsageError, match="told already .*--correct"):
        campaign.tell([(first.smiles[0], 0.7)])
    fixes = _write(
        tmp_path / "fix.csv", "smiles,score", [f"{first.smiles[0]},0.7", f"{first.smiles[1]},5"]
    )
    assert main(["tell", str(campaign.logdir), str(fixes), "--correct"]) == 0
    logged = ProspectiveCampaign.open(campaign.logdir).records.logged()
    assert list(logged.observed[:3]) == pytest.approx([-0.7, -5.0, -0.2])  # minimised
    assert [r["score"] for r in csv_rows(campaign.logdir / "corrections.csv")] == ["0.7", "5"]
    second = ProspectiveCampaign.open(campaign.logdir).propose()
    predicted = {r["smiles"]: float(r["predicted"]) for r in csv_rows(second.path)}
    assert max(predicted.values()) < 5.0 and len(predicted) == 10
    for bad, message in [
        ([(second.smiles[0], 0.5)], "not told yet"),
        ([(first.smiles[2], "")], "a correction needs a score"),
        ([(first.smiles[2], "1 mM")], "not a number as a spreadsheet"),
    ]:
        with pytest.raises(UsageError, match=message):
            campaign.tell(bad, correct=True)
    assert len(csv_rows(campaign.logdir / "corrections.csv")) == 2


def test_after_a_correction_one_object_proposes_what_a_reopened_campaign_does(
    campaign: ProspectiveCampaign, tmp_path: Path
) -> None:
    """A campaign object keeps its optimizer between batches; a correction makes it rebuild the
    model on the corrected scores, as a campaign reopened from the records does."""
    import shutil

    first = campaign.propose()
    campaign.tell([(s, 0.1 * n) for n, s in enumerate(first.smiles)])
    second = campaign.propose()
    campaign.tell([(s, 0.2 + 0.1 * n) for n, s in enumerate(second.smiles)])
    campaign.tell([(first.smiles[0], 3.0)], correct=True)  # the worst told was the best
    shutil.copytree(campaign.logdir, tmp_path / "copy")
    kept = campaign.propose()
    reopened = ProspectiveCampaign.open(tmp_path / "copy").propose()
    assert kept.smiles == reopened.smiles and kept.batch == reopened.batch == 2


def test_an_all_failed_initial_design_names_a_way_forward(
    campaign: ProspectiveCampaign,
) -> None:
    first = campaign.propose()
    campaign.tell([(s, "n/a") for s in first.smiles])
    with pytest.raises(CampaignError, match="--extra"):
        campaign.propose()
    campaign.tell([("CCCCCCCCCCCCCCO", 0.9)], extra=True)  # a known active, made outside
    assert campaign.propose().new


def test_a_new_batch_size_or_budget_is_kept_for_the_next_batches(
    campaign: ProspectiveCampaign, capsys: pytest.CaptureFixture[str]
) -> None:
    logdir = str(campaign.logdir)
    _tell_all(campaign, campaign.propose().batch)
    assert main(["propose", "--logdir", logdir, "--batch-size", "15", "--budget", "45"]) == 0
    assert "batch size 10 -> 15, budget 30 -> 45: kept" in capsys.readouterr().err
    saved = json.loads((campaign.logdir / "run.json").read_text())
    assert (saved["batch_size"], saved["budget"]) == (15, 45)
    _tell_all(campaign, 1)
    assert main(["propose", "--logdir", logdir]) == 0
    assert len(csv_rows(campaign.logdir / "batch_002.csv")) == 15
    _tell_all(campaign, 2)
    assert main(["propose", "--logdir", logdir]) == 0  # 30 of 45 after the initial design
    _tell_all(campaign, 3)
    assert main(["propose", "--logdir", logdir]) == 2
    assert "reached its budget (45" in capsys.readouterr().err


def test_a_relative_library_is_kept_absolute_so_tell_works_from_anywhere(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["propose", "--library", library.name, "--logdir", "lab", "--initial", "10", "--quiet"]
    assert main([*argv, "--batch-size", "10", "--budget", "20"]) == 0
    assert json.loads((tmp_path / "lab/run.json").read_text())["library"] == str(library)
    smiles = [r["smiles"] for r in csv_rows(tmp_path / "lab/batch_000.csv")]
    path = _write(tmp_path / "b.csv", "smiles,score", [f"{s},0.5" for s in smiles[:3]])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["tell", str(tmp_path / "lab"), str(path)]) == 0
    assert len(csv_rows(tmp_path / "lab/evaluations.csv")) == 3


def test_a_relative_library_of_an_older_campaign_is_made_absolute(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    ProspectiveCampaign.start(library=library.name, logdir="lab", **SETTINGS).propose()
    saved = tmp_path / "lab/run.json"
    older = {**json.loads(saved.read_text()), "library": library.name}  # as they were kept
    saved.write_text(json.dumps(older))
    assert main(["propose", "--logdir", "lab", "--quiet"]) == 0
    assert json.loads(saved.read_text())["library"] == str(library)


def test_a_log_line_cut_by_hand_puts_its_molecule_back_to_pending(
    campaign: ProspectiveCampaign,
) -> None:
    first = campaign.propose()
    _tell_all(campaign, first.batch)
    log = campaign.logdir / "evaluations.csv"
    log.write_text(log.read_text()[:-5])  # the last line, cut
    second = ProspectiveCampaign.open(campaign.logdir).propose()
    assert second.batch == 1 and first.smiles[-1] not in second.smiles
    jobs, _ = campaign.journal.read()
    assert [j.job for j in jobs if j.batch == 0] == [9]
    campaign.tell([(first.smiles[-1], 0.3)])  # told again, logged once
    assert [r["smiles"] for r in _logged(campaign)].count(first.smiles[-1]) == 1
