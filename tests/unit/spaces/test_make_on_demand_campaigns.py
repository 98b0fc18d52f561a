"""``screen --reaction SMARTS --reagents ...``: a campaign over a make-on-demand space, through
the same directory, log, resume and reports as an enumerated library's, and its bad input refused
with exit 2 and nothing written."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rdkit")

from trieste_scalable.campaigns.screen import screen  # noqa: E402
from trieste_scalable.cli import main  # noqa: E402
from trieste_scalable.errors import UsageError  # noqa: E402
from trieste_scalable.spaces.problem import make_on_demand_problem  # noqa: E402
from trieste_scalable.spaces.reaction import AMIDE, QUINAZOLINE, REAGENTS  # noqa: E402

AMINES, ACIDS = REAGENTS / "primary_amines_100.smi.gz", REAGENTS / "carboxylic_acids_100.smi.gz"
FAST = dict(initial=8, budget=16, batch_size=8, quiet=True, objective="qed")


def _rows(logdir: Path) -> list[dict[str, str]]:
    with open(logdir / "evaluations.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_screen_logs_each_product_with_its_reagents_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    logdir = tmp_path / "run"
    done = screen(reaction=AMIDE, reagents=[AMINES, ACIDS], logdir=logdir, **FAST)
    said = capsys.readouterr().out
    assert "24 evaluations told" in said and "busy" not in said  # in this process: no workers
    rows = _rows(logdir)
    assert len(rows) == 24 and not any(row["error"] for row in rows)
    problem = make_on_demand_problem(AMIDE, [AMINES, ACIDS], ("morgan", 2, 64))
    amines, acids = problem.library.reagents
    for row in rows:
        tuple_ = problem.points[[int(row["index"])]][0].astype(int)
        assert row["reagent_primary_amines_100"] == amines.names[tuple_[0]]
        assert row["reagent_carboxylic_acids_100"] == acids.names[tuple_[1]]
        assert row["name"] == f"{amines.names[tuple_[0]]}|{acids.names[tuple_[1]]}"
        assert row["smiles"] == problem.library.product(tuple_)
    assert len({row["smiles"] for row in rows}) == 24  # no product evaluated twice
    assert (logdir / "best_molecules.png").is_file() and (logdir / "summary.png").is_file()
    assert sorted(done.evaluated.tolist()) == sorted(int(row["index"]) for row in rows)

    state = json.loads((logdir / "rule_state.json").read_text())
    pending = state["fields"]["pending"]
    assert pending and all(len(point) == 2 for point in pending)  # tuples, not fingerprints

    screen(
        reaction=AMIDE,
        reagents=[AMINES, ACIDS],
        logdir=logdir,
        resume=True,
        **(FAST | dict(budget=32)),
    )
    again = _rows(logdir)
    assert again[:24] == rows and len(again) == 40
    assert len({row["smiles"] for row in again}) == 40


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(reaction=AMIDE), "--reaction needs --reagents"),
        (dict(reaction=" ", reagents=[AMINES]), "--reaction is empty"),
        (dict(reagents=[AMINES, ACIDS]), "--reagents needs --reaction"),
        (dict(reaction=AMIDE, reagents=[AMINES]), "2 reactant templates but 1 reagent files"),
        (dict(reaction="[C:1]>>", reagents=[AMINES]), "has no product"),
        (dict(reaction="not a smarts", reagents=[AMINES]), "does not parse"),
        (dict(reaction=QUINAZOLINE, reagents=[ACIDS, AMINES, ACIDS]), "matches its reactant"),
        (dict(reaction=AMIDE, reagents=[AMINES, ACIDS], library="x.smi"), "give one"),
        (dict(reaction=AMIDE, reagents=[AMINES, ACIDS], objective="table:x.csv"), "score table"),
        (dict(reaction=AMIDE, reagents=[AMINES, ACIDS], algorithm="mini-ucb"), "repeats"),
        (dict(reaction=AMIDE, reagents=[AMINES, ACIDS], algorithm="random"), "no model"),
        (dict(pool_size=100), "--pool-size sets the pool of a make-on-demand space"),
        (dict(reaction=AMIDE, reagents=[AMINES, ACIDS], pool_starts=0), "--pool-starts must be"),
        (dict(reaction=AMIDE, reagents=[AMINES, ACIDS], pool_random_share=-1.0), "at least 0"),
    ],
)
def test_bad_settings_are_refused_before_anything_is_written(
    tmp_path: Path, settings: dict, message: str
) -> None:
    logdir = tmp_path / "run"
    options = {**FAST, **settings}
    with pytest.raises(UsageError, match=message):
        screen(logdir=logdir, **options)
    assert not logdir.exists()


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "no reagent"),
        ("CCN ethyl\nnot_a_smiles bad\n", "does not parse"),
        ("CCN ethyl\nCCCN ethyl\n", "ethyl"),
    ],
)
def test_the_command_exits_2_on_a_bad_reagent_file(
    tmp_path: Path, capsys: pytest.CaptureFixture, content: str, message: str
) -> None:
    bad, logdir = tmp_path / "amines.smi", tmp_path / "run"
    bad.write_text(content)
    argv = ["screen", "--reaction", AMIDE, "--reagents", str(bad), str(ACIDS)]
    assert main([*argv, "--logdir", str(logdir), "--quiet", "--objective", "qed"]) == 2
    assert message in capsys.readouterr().err and not logdir.exists()


def test_the_problem_names_tuples_by_flat_index_without_enumerating(tmp_path: Path) -> None:
    problem = make_on_demand_problem(
        QUINAZOLINE,
        [
            REAGENTS / f"{n}_ok.smi.gz"
            for n in ("aminobenzoic", "primary_amines", "carboxylic_acids")
        ],
        ("morgan", 2, 64),
    )
    assert len(problem.points) == problem.library.size > 2 * 10**10
    ids = np.array([0, 12_345_678_901, problem.library.size - 1])
    tuples = problem.points[ids]
    assert np.array_equal(problem.indices(tuples), ids)
    with pytest.raises(ValueError, match="not tuples of reagent indices"):
        problem.indices(tuples + 0.5)
    drawn = problem.initial_ids(np.random.default_rng(0), 50)
    assert len(set(drawn.tolist())) == 50
    assert all(problem.labels[int(i)] for i in drawn)  # every product exists
    assert problem.identity_columns()[:2] == ["smiles", "name"]


def _filled(batch: Path) -> list[dict[str, str]]:
    from rdkit import Chem
    from rdkit.Chem import QED

    with open(batch, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["score"] = repr(QED.qed(Chem.MolFromSmiles(row["smiles"])))
    return rows


def _swapped(batch: Path, row: int, column: str, value: str) -> Path:
    """A copy of the filled-in ``batch`` whose ``row`` (0 the first) holds ``value`` in
    ``column``."""
    rows = _filled(batch)
    rows[row][column] = value
    path = batch.with_name("contradicting.csv")
    _write(path, rows)
    return path


def _write(path: Path, rows: list[dict[str, str]]) -> None:
    """``rows`` as a batch file, their keys its header."""
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _ester_space(tmp_path: Path) -> list[str]:
    """The flags of a space where methyl and ethyl acetate make the same amides: 3 amines x 3
    esters = 9 tuples, 6 products."""
    (tmp_path / "amines.smi").write_text("CCN ethyl\nCCCN propyl\nNCc1ccccc1 benzyl\n")
    (tmp_path / "esters.smi").write_text("CC(=O)OC methyl_ac\nCC(=O)OCC ethyl_ac\nCCC(=O)OC pr\n")
    reaction = "[#6:1][NH2:2].[#6:4][C:3](=O)O[#6]>>[#6:1][NH:2][C:3]([#6:4])=O"
    files = [str(tmp_path / "amines.smi"), str(tmp_path / "esters.smi")]
    return ["--reaction", reaction, "--reagents", *files]


def test_a_prospective_campaign_picks_what_screen_picks_with_the_lab_as_oracle(
    tmp_path: Path,
) -> None:
    from trieste_scalable.campaigns.prospective.campaign import ProspectiveCampaign

    sizes = dict(initial=8, budget=16, batch_size=8, quiet=True)
    screen(
        reaction=AMIDE, reagents=[AMINES, ACIDS], logdir=tmp_path / "s", objective="qed", **sizes
    )
    lab = ProspectiveCampaign.start(
        reaction=AMIDE, reagents=[AMINES, ACIDS], logdir=tmp_path / "p", **sizes
    )
    for number in range(3):
        batch = lab.propose()
        assert batch.batch == number
        rows = _filled(batch.path)
        assert all(row["name"].count("|") == 1 for row in rows)  # the chemist's order list
        if number == 1:  # a row whose reagents contradict its SMILES: nothing told
            with pytest.raises(UsageError, match="line 3: its reagent_primary_amines_100 'z'"):
                lab.tell(_swapped(batch.path, 1, "reagent_primary_amines_100", "z"))
            with pytest.raises(UsageError, match="its name 'x' contradicts its SMILES"):
                lab.tell([rows[0] | dict(name="x")])
        lab.tell(rows)
    screened, told = _rows(tmp_path / "s"), _rows(tmp_path / "p")
    assert [r["smiles"] for r in told] == [r["smiles"] for r in screened]
    assert [r["name"] for r in told] == [r["name"] for r in screened]
    with pytest.raises(UsageError, match="--extra"):
        lab.tell([{"smiles": "CCO", "score": "0.5"}], extra=True)
    with pytest.raises(UsageError, match="not proposed") as refused:
        lab.tell([{"smiles": "CCO", "score": "0.5"}])
    assert "--extra" not in str(refused.value)  # hints name only what the campaign accepts


def test_the_pool_rules_settings_come_from_the_specification_and_its_size_is_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--pool-*`` reach the pool rule (``--pool-move-size 0``: every usable reagent), its bound
    is searched with ``--beta``, and each acquisition logs the pool's size."""
    from trieste_scalable.campaigns.spec.defaults import resolved
    from trieste_scalable.campaigns.spec.library import ScreenSpec
    from trieste_scalable.spaces import pool_rule

    spec = ScreenSpec.of(
        reaction=AMIDE, reagents=[AMINES, ACIDS], pool_size=64, pool_move_size=0, beta=3.0
    )
    assert resolved(spec).pool_options() == dict(pool_size=64, move_size=None, beta=3.0)
    logged: list[dict] = []
    monkeypatch.setattr(pool_rule, "write_scalars", lambda _, stats: logged.append(dict(stats)))
    settings = dict(FAST, pool_size=64, pool_starts=2, pool_sweeps=1, pool_random_share=0.5)
    screen(reaction=AMIDE, reagents=[AMINES, ACIDS], logdir=tmp_path / "run", **settings)
    assert len(logged) == 2  # one an acquisition: 16 evaluations in batches of 8
    assert all(64 <= entry["size"] <= 64 + 32 for entry in logged)  # best 64 and 32 random


def test_a_prospective_campaign_proposes_over_the_whole_quinazoline_space(tmp_path: Path) -> None:
    """2.19e10 products: the memory forecast is the space's bounded caches, as screen's, not an
    enumerated library's (which asked for 37,000 GB and refused every real space)."""
    from trieste_scalable.campaigns.prospective.campaign import ProspectiveCampaign

    files = [
        REAGENTS / f"{n}_ok.smi.gz" for n in ("aminobenzoic", "primary_amines", "carboxylic_acids")
    ]
    lab = ProspectiveCampaign.start(
        reaction=QUINAZOLINE, reagents=files, logdir=tmp_path / "p", initial=10, budget=10,
        batch_size=10, quiet=True,
    )  # fmt: skip
    batch = lab.propose()
    assert len(batch.smiles) == 10 and len(set(batch.smiles)) == 10


def test_a_space_of_too_few_products_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Ten amines and ten acids, one of each reactive: 100 tuples, one product. The initial
    design cannot be drawn, which is said with the reaction and the tuples that failed (not
    blamed on the objective after run.json is written)."""
    amines, acids = tmp_path / "amines.smi", tmp_path / "acids.smi"
    amines.write_text(
        "CCN ethylamine\n" + "".join(f"{'C' * n}O alcohol{n}\n" for n in range(1, 10))
    )
    acids.write_text(
        "CC(=O)O acetic\n" + "".join(f"{'C' * n}Cl chloride{n}\n" for n in range(1, 10))
    )
    logdir = tmp_path / "run"
    argv = ["screen", "--reaction", AMIDE, "--reagents", str(amines), str(acids), "--quiet"]
    argv += ["--objective", "qed", "--initial", "4", "--budget", "4", "--logdir", str(logdir)]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "makes too few products" in error and "found 1" in error and "made no product" in error
    assert not logdir.exists()


def test_a_campaign_resumes_with_its_reagent_files_named_another_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started with relative paths, resumed with absolute ones to the same files: the same
    settings (before, ``--resume`` refused them as changed)."""
    import shutil

    for source in (AMINES, ACIDS):
        shutil.copy(source, tmp_path / source.name)
    monkeypatch.chdir(tmp_path)
    relative = [AMINES.name, ACIDS.name]
    screen(reaction=AMIDE, reagents=relative, logdir="run", **FAST)
    absolute = [str(tmp_path / name) for name in relative]
    screen(reaction=AMIDE, reagents=absolute, logdir="run", resume=True, **(FAST | dict(budget=24)))
    assert len(_rows(tmp_path / "run")) == 32


def test_resume_without_the_space_is_refused_before_a_library_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--resume`` without ``--reaction``/``--reagents`` names the changed settings at once, not
    after featurising the default library (a minute on MOSES)."""
    from trieste_scalable.campaigns.candidates import factory

    logdir = tmp_path / "run"
    screen(reaction=AMIDE, reagents=[AMINES, ACIDS], logdir=logdir, **FAST)
    read: list[object] = []
    monkeypatch.setattr(factory, "candidates", lambda *a, **k: read.append(a))
    with pytest.raises(UsageError, match="original settings.*reaction"):
        screen(logdir=logdir, resume=True, **FAST)
    assert not read


def test_a_space_that_runs_out_of_products_ends_with_what_it_found(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Methyl and ethyl acetate make the same amides: 9 tuples, 6 products. A budget the
    products cannot fill ends the campaign cleanly (exit 0, said), each molecule evaluated
    once; ``--resume`` with a larger budget then says there is nothing left (before, both
    exited 1 advising ``--resume``)."""
    logdir = tmp_path / "run"
    argv = ["screen", *_ester_space(tmp_path), "--objective", "qed", "--initial", "2"]
    argv += ["--batch-size", "2", "--logdir", str(logdir), "--quiet"]
    assert main([*argv, "--budget", "6"]) == 0
    rows = _rows(logdir)
    assert len(rows) == 6 and len({row["smiles"] for row in rows}) == 6
    assert "ended before its budget" in capsys.readouterr().out
    assert main([*argv, "--budget", "7", "--resume"]) == 0
    assert _rows(logdir) == rows
    assert "ended before its budget, after 0 evaluations" in capsys.readouterr().out


def test_propose_on_a_space_that_ran_out_of_products_says_the_campaign_is_over(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The same 6 products of 9 tuples, proposed and told: the next ``propose`` exits 2 saying
    nothing is left, and writes nothing (before, it exited 1 advising ``--resume``)."""
    logdir = tmp_path / "run"
    argv = ["propose", *_ester_space(tmp_path), "--initial", "2", "--batch-size", "4"]
    argv += ["--budget", "7", "--logdir", str(logdir), "--quiet"]
    told = 0
    for batch in range(3):
        assert main(argv) == 0
        path = logdir / f"batch_{batch:03d}.csv"
        rows = _filled(path)
        _write(path, rows)
        assert main(["tell", str(logdir), str(path)]) == 0
        told += len(rows)
        if told == 6:
            break
    assert told == 6
    capsys.readouterr()
    before = sorted(path.name for path in logdir.iterdir())
    assert main(argv) == 2
    said = capsys.readouterr().err
    assert "nothing is left to propose" in said and "6 evaluations" in said
    assert sorted(path.name for path in logdir.iterdir()) == before


def test_a_lost_in_flight_journal_is_rebuilt_from_the_batch_files_reagent_columns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``in_flight.json`` deleted after batch 1 was proposed: the next ``propose`` finds batch
    1's products by their reagent columns, says so, proposes batch 1 again as it was, and its
    scores are then told (before, its molecules were stranded: told, they were "not
    proposed")."""
    from trieste_scalable.campaigns.prospective.campaign import ProspectiveCampaign

    sizes = dict(initial=8, budget=16, batch_size=8, quiet=True)
    lab = ProspectiveCampaign.start(
        reaction=AMIDE, reagents=[AMINES, ACIDS], logdir=tmp_path / "p", **sizes
    )
    lab.tell(_filled(lab.propose().path))
    second = lab.propose()
    (tmp_path / "p" / "in_flight.json").unlink()
    with caplog.at_level("WARNING"):
        again = lab.propose()
    assert again.batch == 1 and again.smiles == second.smiles and not again.new
    assert any("pending again" in record.getMessage() for record in caplog.records)
    told = lab.tell(_filled(again.path))
    assert len(_rows(tmp_path / "p")) == 16 and told is not None


def test_a_resume_that_changes_which_radicals_are_read_is_refused_with_the_flag_to_give(
    tmp_path: Path,
) -> None:
    """``--keep-radicals`` may differ on resume only where it reads the same space (the space's
    hash is checked): a campaign that kept a radical amine is refused without the flag, named in
    the hint, and resumes with it; one whose files hold no radical resumes either way."""
    from trieste_scalable.errors import CampaignError

    (tmp_path / "amines.smi").write_text("N[C]1CCc2ccccc21 rad\nCCN ethyl\nCCCN propyl\n")
    (tmp_path / "acids.smi").write_text("CC(=O)O acetic\nCCC(=O)O propionic\n")
    files = [tmp_path / "amines.smi", tmp_path / "acids.smi"]
    sizes = dict(initial=2, batch_size=2, quiet=True, objective="qed")
    screen(
        reaction=AMIDE, reagents=files, keep_radicals=True, logdir=tmp_path / "r", budget=1, **sizes
    )
    with pytest.raises(CampaignError, match="resume with --keep-radicals"):
        screen(
            reaction=AMIDE, reagents=files, logdir=tmp_path / "r", resume=True, budget=2, **sizes
        )
    screen(
        reaction=AMIDE, reagents=files, keep_radicals=True, logdir=tmp_path / "r", resume=True,
        budget=2, **sizes,
    )  # fmt: skip
    assert len(_rows(tmp_path / "r")) == 4
    plain = [AMINES, ACIDS]
    screen(reaction=AMIDE, reagents=plain, logdir=tmp_path / "s", budget=2, **sizes)
    screen(
        reaction=AMIDE,
        reagents=plain,
        keep_radicals=True,
        logdir=tmp_path / "s",
        resume=True,
        budget=4,
        **sizes,
    )
    assert len(_rows(tmp_path / "s")) == 6
