"""Hostile input, fourth round (the files): every file a campaign reads is read with one error
path that names it and what is wrong (exit 2); Excel's "CSV UTF-8" is read; the cache and
``featurise`` commands refuse what they would silently misread; a rule state's accumulated
information is never negative. (The Python entry point's settings: ``test_specification.py``.)"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from trieste_scalable.acquisition import BatchUCBState, rule_state
from trieste_scalable.chemistry.molecules import read_smiles
from trieste_scalable.cli import main
from trieste_scalable.problems.score_table import TableSpec, read_table
from trieste_scalable.stores.store_build import build_store

from ...util import moses, screen_argv

NUM = 40
BOM = "\ufeff"


@pytest.fixture
def library(tmp_path: Path) -> list[str]:
    smiles = moses(NUM)
    (tmp_path / "library.smi").write_text("\n".join(smiles) + "\n")
    return smiles


def _table(smiles: list[str], header: str = "smiles,vina") -> str:
    rng = np.random.default_rng(0)
    return header + "\n" + "".join(f"{s},{rng.normal(-7, 1):.2f}\n" for s in smiles)


def _screen(tmp_path: Path, objective: str, *extra: str) -> int:
    argv = screen_argv(tmp_path / "library.smi", tmp_path / "run", initial=5, batch_size=5)
    return main([*argv, "--objective", objective, "--budget", "5", *extra])


def test_a_truncated_gzipped_score_table_is_named(
    tmp_path: Path, library: list[str], capsys: pytest.CaptureFixture
) -> None:
    whole = gzip.compress(_table(library).encode())
    table = tmp_path / "scores.csv.gz"
    table.write_bytes(whole[: len(whole) // 2])
    assert _screen(tmp_path, f"table:{table}") == 2
    err = capsys.readouterr().err
    assert f"cannot read score table {table} (truncated:" in err, err
    assert not (tmp_path / "run").exists()


def test_a_truncated_gzipped_library_is_named(tmp_path: Path, library: list[str]) -> None:
    whole = gzip.compress(("\n".join(library) + "\n").encode())
    path = tmp_path / "library.smi.gz"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match=f"cannot read library {path} \\(truncated:"):
        list(read_smiles(path))


def test_excels_csv_utf8_with_a_byte_order_mark_is_read(tmp_path: Path, library: list[str]) -> None:
    table = tmp_path / "scores.csv"
    table.write_text(BOM + _table(library), encoding="utf-8")
    read = read_table(TableSpec(table), higher_is_better=False)
    assert read.column == "vina" and len(read.scores) == NUM
    csv_library = tmp_path / "library.csv"
    csv_library.write_text(
        BOM + "SMILES,id\n" + "".join(f"{s},{i}\n" for i, s in enumerate(library))
    )
    assert list(read_smiles(csv_library)) == library
    assert _screen(tmp_path, f"table:{table}", "--lower-is-better") == 0


def test_a_named_column_without_numbers_says_so(tmp_path: Path, library: list[str]) -> None:
    table = tmp_path / "scores.csv"
    table.write_text("smiles,vina,note\n" + "".join(f"{s},-7.1,ok\n" for s in library))
    with pytest.raises(ValueError, match="column 'note' holds no finite number .*'ok'"):
        read_table(TableSpec(table, "note"), higher_is_better=False)


def test_an_all_nan_column_says_so(tmp_path: Path, library: list[str]) -> None:
    table = tmp_path / "scores.csv"
    table.write_text("smiles,vina\n" + "".join(f"{s},nan\n" for s in library))
    with pytest.raises(ValueError, match="column 'vina' holds numbers, but none finite"):
        read_table(TableSpec(table), higher_is_better=False)


def test_a_score_table_edited_in_place_is_named_on_resume(
    tmp_path: Path, library: list[str], capsys: pytest.CaptureFixture
) -> None:
    table = tmp_path / "scores.csv"
    table.write_text(_table(library))
    assert _screen(tmp_path, f"table:{table}", "--lower-is-better") == 0
    before = (tmp_path / "run" / "evaluations.csv").read_text()
    table.write_text(_table(library).replace(",-", ",-1"))  # every score edited
    assert _screen(tmp_path, f"table:{table}", "--lower-is-better", "--resume") == 1
    err = capsys.readouterr().err
    assert f"the library's content or the score table {table} changed" in err, err
    assert (tmp_path / "run" / "evaluations.csv").read_text() == before


def test_an_emptied_shard_names_the_store_and_the_shard(
    tmp_path: Path, library: list[str], capsys: pytest.CaptureFixture
) -> None:
    store = build_store([tmp_path / "library.smi"], tmp_path / "store", shard_size=20)
    (store.path / "shard-00001.bits.npy").write_bytes(b"")
    argv = ["screen", "--library", str(store.path), "--logdir", str(tmp_path / "run")]
    assert main([*argv, "--budget", "5", "--initial", "5", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{store.path}: shard shard-00001's bits.npy cannot be read" in err, err


def test_featurise_refuses_a_campaign_directory(
    tmp_path: Path, library: list[str], capsys: pytest.CaptureFixture
) -> None:
    campaign = tmp_path / "run"
    campaign.mkdir()
    (campaign / "run.json").write_text("{}")
    assert main(["featurise", str(tmp_path / "library.smi"), "--out", str(campaign)]) == 2
    assert "holds a campaign (run.json)" in capsys.readouterr().err
    assert sorted(p.name for p in campaign.iterdir()) == ["run.json"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--dry-run"], "--dry-run selects what --prune removes: add --prune"),
        (["--max-size", "1G"], "--max-size selects what --prune removes"),
        (["--older-than", "0"], "--older-than selects what --prune removes"),
    ],
)
def test_cache_options_of_prune_need_prune(
    argv: list[str], message: str, capsys: pytest.CaptureFixture
) -> None:
    assert main(["cache", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_cache_path_that_is_a_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "cache-file").write_text("not a directory")
    monkeypatch.setenv("TRIESTE_SCALABLE_CACHE", str(tmp_path / "cache-file"))
    assert main(["cache"]) == 2
    assert "cache-file is a file" in capsys.readouterr().err


def test_exploration_settings_without_fit_are_refused(capsys: pytest.CaptureFixture) -> None:
    assert main(["optimize", "--exploration-rate", "3"]) == 2
    assert "--exploration-rate applies to fitted models: add --fit" in capsys.readouterr().err


def test_a_negative_accumulated_information_is_refused() -> None:
    with pytest.raises(ValueError, match="BatchUCBState.information = -1.0 is negative"):
        BatchUCBState(information=-1.0)
    text = json.dumps({"batch": 1, "type": "BatchUCBState", "fields": {"information": -1.0}})
    with pytest.raises(ValueError, match="information = -1.0 is negative"):
        rule_state.decode(text)
    assert BatchUCBState(information=0.0).information == 0.0
