"""``trieste-scalable cache`` (issue 50): entries listed by library and kind with sizes and last
use; pruned by library, age or total size; an entry a process holds (memory-mapped, as a
running campaign holds its fingerprints) is never removed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from trieste_scalable.cli import main
from trieste_scalable.problems.screening import screening_problem
from trieste_scalable.stores import cache_admin
from trieste_scalable.stores.cache import for_library, library_label

from ...util import write_library


def _library(tmp_path: Path, name: str, first: int) -> str:
    path = tmp_path / name
    write_library(path, first + 60, start=first)
    with for_library(library_label(str(path))):
        screening_problem(str(path), "qed")
    return str(path)


def _entries(tmp_path: Path) -> list[cache_admin.Entry]:
    return [e for e in cache_admin.entries(tmp_path / "cache") if not e.kind.startswith("chunk")]


def test_entries_are_listed_by_library_and_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = _library(tmp_path, "one.smi", 0), _library(tmp_path, "two.smi", 100)
    found = _entries(tmp_path)
    assert {(e.library, e.kind) for e in found} == {
        (library, kind)
        for library in (one, two)
        for kind in ("kept", "packed-fingerprints", "objective-qed")
    }
    assert all(e.size == sum(f.stat().st_size for f in e.files) for e in found)
    assert main(["cache"]) == 0
    out = capsys.readouterr().out
    assert f"cache {tmp_path / 'cache'}:" in out
    assert any(line.startswith(one) and "packed-fingerprints" in line for line in out.splitlines())
    assert "chunk:fingerprint_chunk" in out  # featurising's chunks, shared by libraries


def test_pruning_by_library_keeps_what_a_process_holds_and_the_rest_recomputes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = _library(tmp_path, "one.smi", 0), _library(tmp_path, "two.smi", 100)
    mapped = next(
        e for e in _entries(tmp_path) if e.library == one and e.kind == "packed-fingerprints"
    )
    held = np.load(mapped.files[0], mmap_mode="r")  # as a running campaign maps it
    assert main(["cache", "--prune", "--library", "one.smi", "--dry-run"]) == 0
    assert "would remove 2 entries" in capsys.readouterr().out
    assert len(_entries(tmp_path)) == 6
    assert main(["cache", "--prune", "--library", "one.smi"]) == 0
    out = capsys.readouterr().out
    assert "removed 2 entries" in out and "kept 1 entries that running processes hold" in out
    left = {(e.library, e.kind) for e in _entries(tmp_path)}
    assert left == {(one, "packed-fingerprints")} | {
        (two, kind) for kind in ("kept", "packed-fingerprints", "objective-qed")
    }
    del held
    problem = screening_problem(one, "qed")  # recomputed where removed
    assert len(problem.values) == 60


def test_pruning_by_age_and_by_size_takes_the_least_recently_used(tmp_path: Path) -> None:
    _library(tmp_path, "one.smi", 0)
    _library(tmp_path, "two.smi", 100)
    found = sorted(_entries(tmp_path), key=lambda e: str(e.files[0]))
    now = time.time()
    for age, entry in enumerate(found):  # entry k last used k days ago
        for path in entry.files:
            os.utime(path, (now - age * 86400, now - age * 86400))
    assert main(["cache", "--prune", "--older-than", "3.5"]) == 0
    assert {str(e.files[0]) for e in _entries(tmp_path)} == {str(e.files[0]) for e in found[:4]}
    sizes = [e.size for e in found[:4]]
    chunks = sum(e.size for e in cache_admin.entries(tmp_path / "cache")) - sum(sizes)
    # keep room for the two most recent entries and the chunks (touched now): the 3rd and
    # 4th most recent go, least recently used first
    limit = chunks + sizes[0] + sizes[1]
    assert main(["cache", "--prune", "--max-size", str(limit)]) == 0
    assert {str(e.files[0]) for e in _entries(tmp_path)} == {str(e.files[0]) for e in found[:2]}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--prune"], "--prune needs --library, --older-than or --max-size"),
        (["--prune", "--max-size", "lots"], "--max-size: a size is a number of bytes"),
        (["--prune", "--older-than", "-1"], "--older-than must be a number of days >= 0"),
    ],
)
def test_bad_prune_settings_are_usage_errors_that_remove_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    _library(tmp_path, "one.smi", 0)
    before = _entries(tmp_path)
    assert main(["cache", *argv]) == 2
    assert message in capsys.readouterr().err
    assert _entries(tmp_path) == before


def test_sizes_parse_and_print() -> None:
    assert cache_admin.parse_size("500M") == 500 * 2**20
    assert cache_admin.parse_size("2.5g") == int(2.5 * 2**30)
    assert cache_admin.parse_size("1024") == 1024
    assert cache_admin.human(1536) == "1.5 KB"
