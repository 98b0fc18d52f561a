"""A campaign that would not fit in memory says so before its first batch, with the setting
that would fit, and writes nothing."""

from pathlib import Path

import pytest

from trieste_scalable.campaigns.candidates import memory_estimate
from trieste_scalable.campaigns.candidates.memory_estimate import (
    BASELINE,
    CHUNK,
    MARGIN,
    ROW_COPIES,
    available_memory,
    check_memory,
    estimate,
)
from trieste_scalable.campaigns.spec.defaults import resolved
from trieste_scalable.campaigns.spec.library import ScreenSpec
from trieste_scalable.cli import main
from trieste_scalable.errors import UsageError

from ...util import write_library


def _spec(tmp_path: Path, **settings) -> ScreenSpec:  # type: ignore[no-untyped-def]
    return resolved(ScreenSpec(library="moses-20k", logdir=str(tmp_path / "run"), **settings))


def test_the_parts_are_the_arrays_a_campaign_holds() -> None:
    found = estimate(num_candidates=1000, width=64, evaluations=300, model_points=100)
    assert found.library == 1000 * 8  # packed bits
    assert found.evaluated_rows == ROW_COPIES * 300 * 64 * 8  # float64 rows
    assert found.model == 8 * (4 * 100**2 + 6 * 300 * 100)
    assert found.scoring == 8 * CHUNK * (64 + 4 * 100)
    parts = found.library + found.evaluated_rows + found.model + found.scoring
    assert found.total == pytest.approx(MARGIN * (BASELINE + parts))
    assert estimate(1000, 64, 300, 5000).model == 8 * (4 * 300**2 + 6 * 300 * 300)  # m <= n


def test_an_exact_gp_too_big_is_refused_naming_the_dictionary_that_fits(tmp_path: Path) -> None:
    """MolPAL's HTS protocol over 10^6 molecules of 1,024 bits on a machine with 8 GB free: the
    exact GP does not fit, a dictionary of 1,000 (the default) does, one of 2,000 does not."""
    bits = dict(fingerprint="morgan", fingerprint_width=1024)
    spec = _spec(tmp_path, initial=4000, budget=20_000, batch_size=4000, inducing=24_000, **bits)
    assert (
        estimate(10**6, 1024, 24_000, 2000).total > 8e9 >= estimate(10**6, 1024, 24_000, 1000).total
    )
    with pytest.raises(UsageError, match=r"model, .* GB\), but 8.0 GB is available; it would fit "
                       r"with --inducing 1000"):  # fmt: skip
        check_memory(spec, 1_000_000, available=8e9)
    fits = _spec(tmp_path, initial=4000, budget=20_000, batch_size=4000, **bits)  # the default
    assert check_memory(fits, 1_000_000, available=8e9).total < 8e9


def test_a_library_too_big_for_any_dictionary_names_the_other_remedies(tmp_path: Path) -> None:
    spec = _spec(tmp_path, initial=4000, budget=20_000, batch_size=4000)
    with pytest.raises(UsageError, match="largest part: library.*--scoring-actors"):
        check_memory(spec, 10**9, available=8e9)


def test_screen_refuses_before_its_first_batch_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    library = tmp_path / "library.smi"
    write_library(library, 300)
    monkeypatch.setattr(memory_estimate, "available_memory", lambda: 1e9)
    logdir = tmp_path / "run"
    args = ["screen", "--library", str(library), "--logdir", str(logdir), "--quiet"]
    assert main(args + ["--budget", "100", "--initial", "20"]) == 2
    assert "would need about" in capsys.readouterr().err
    assert not (logdir / "evaluations.csv").exists()


def test_available_memory_reads_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemAvailable:   2000000 kB\n")
    assert available_memory(meminfo) == 2000000 * 1024
    assert available_memory(tmp_path / "missing") is None


def test_packed_evaluations_take_a_bit_an_entry_and_bounded_blocks() -> None:
    """A make-on-demand campaign's Nyström GP keeps its evaluations packed and reads them a chunk
    at a time: at 100,000 evaluations of 6,144 bits and a dictionary of 1,000, rows and model
    take less than at 10,000 the dense way."""
    from trieste_scalable.campaigns.candidates.memory_estimate import PIVOT_CANDIDATES
    from trieste_scalable.models import PivotedCholeskyDictionary

    assert PivotedCholeskyDictionary(10).candidates == PIVOT_CANDIDATES
    packed = estimate(200_000, 6144, 100_000, 1000, packed=True)
    assert packed.evaluated_rows == ROW_COPIES * 100_000 * 768
    assert packed.model == 8 * (4 * 1000**2 + 6 * CHUNK * 1000 + 1000 * 16_000)
    dense = estimate(200_000, 6144, 10_000, 1000)
    assert packed.evaluated_rows + packed.model < dense.evaluated_rows + dense.model
    small = estimate(200_000, 6144, 10_000, 1000, packed=True)
    assert packed.total < 1.2 * small.total  # ten times the evaluations
