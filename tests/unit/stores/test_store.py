"""The sharded library store: the unique fingerprints of a library, in order, whatever the shard
layout; invalid SMILES listed; a build cut anywhere finishes to the same store with no shard
written twice; damaged shards and manifests named; screening a store equals screening its
SMILES file."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pytest

from trieste_scalable.chemistry.molecules import (
    DEFAULT_FINGERPRINT,
    DEFAULT_RADIUS,
    DEFAULT_WIDTH,
    fingerprints,
    parse,
)
from trieste_scalable.numerics.bits import shareable
from trieste_scalable.numerics.rows import index_keys, row_hashes
from trieste_scalable.problems.screening import screening_problem
from trieste_scalable.stores.featurise import fingerprint_chunk
from trieste_scalable.stores.store import (
    MANIFEST,
    LibraryStore,
    StoreError,
    read_manifest,
    shard_hash,
    write_manifest,
)
from trieste_scalable.stores.store_build import build_store

from ...util import moses


@pytest.fixture(scope="module")
def library() -> list[str]:
    """60 molecules with repeats (within and across any shard layout) and two invalid lines."""
    smiles = moses(50)
    smiles += smiles[3:8] + smiles[40:43]  # repeats of earlier molecules
    smiles[10], smiles[55] = "not_a_molecule", "C1CC"
    return smiles + ["CCO", "OCC"]  # the same molecule written twice


def _expected(smiles: list[str]) -> tuple[list[str], np.ndarray, list[int]]:
    """First occurrences of each fingerprint (the default, ``screen``'s), by RDKit and a dict
    (independent of the store)."""
    invalid = [i for i, s in enumerate(smiles) if not _parses(s)]
    kept, rows, seen = [], [], set()
    for i, s in enumerate(smiles):
        if i in invalid:
            continue
        row = np.packbits(
            fingerprints(parse([s])[0], DEFAULT_FINGERPRINT, DEFAULT_RADIUS, DEFAULT_WIDTH), axis=1
        )[0]
        if row.tobytes() not in seen:
            seen.add(row.tobytes())
            kept.append(s)
            rows.append(row)
    return kept, np.stack(rows), invalid


def _parses(smiles: str) -> bool:
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]
    return Chem.MolFromSmiles(smiles) is not None


def _write(path: Path, smiles: Sequence[str]) -> Path:
    path.write_text("".join(s + "\n" for s in smiles))
    return path


@pytest.mark.parametrize("shard_size", [7, 25, 1000])
def test_a_store_holds_the_unique_fingerprints_in_order_whatever_its_shards(
    tmp_path: Path, library: list[str], shard_size: int
) -> None:
    source = _write(tmp_path / "library.smi", library)
    store = build_store([source], tmp_path / "store", shard_size=shard_size)
    kept, rows, invalid = _expected(library)
    assert store.num_rows == len(kept) < len(library) - len(invalid)
    assert len(store.manifest["shards"]) == -(-len(library) // shard_size)
    np.testing.assert_array_equal(store.packed(), rows)
    assert list(store.labels()) == kept
    ids = np.concatenate([shard.ids for shard in store.shards()])
    np.testing.assert_array_equal(ids, np.arange(len(kept)))
    listed = [
        line.split("\t")
        for path in sorted((tmp_path / "store").glob("*.invalid.smi"))
        for line in path.read_text().splitlines()
    ]
    assert listed == [[str(i), library[i]] for i in invalid]
    store.verify()


def test_sources_are_read_in_order_smi_and_csv(tmp_path: Path, library: list[str]) -> None:
    first = _write(tmp_path / "a.smi", library[:30])
    second = tmp_path / "b.csv"
    second.write_text("id,SMILES\n" + "".join(f"{i},{s}\n" for i, s in enumerate(library[30:])))
    store = build_store([first, second], tmp_path / "store", shard_size=20)
    assert list(store.labels()) == _expected(library)[0]


class _Killed(Exception):
    pass


def _dying_after(calls: int) -> Any:
    count = [0]

    def chunk_map(chunks: Sequence[Sequence[str]], settings: tuple) -> Any:
        count[0] += 1
        if count[0] > calls + 1:  # shard `calls` is started, then the next: killed there
            raise _Killed
        parts = [fingerprint_chunk(chunk, settings) for chunk in chunks]
        return lambda: parts

    return chunk_map


@pytest.mark.parametrize("cut_after", [0, 1, 3])
def test_a_build_cut_anywhere_finishes_to_the_same_store_without_rewriting_a_shard(
    tmp_path: Path, library: list[str], cut_after: int
) -> None:
    source = _write(tmp_path / "library.smi", library)
    whole = build_store([source], tmp_path / "whole", shard_size=9)
    with pytest.raises(_Killed):
        build_store([source], tmp_path / "cut", shard_size=9, chunk_map=_dying_after(cut_after))
    listed = json.loads((tmp_path / "cut" / MANIFEST).read_text())["shards"]
    assert len(listed) == cut_after
    # a shard cut mid-write: its files are there, the manifest does not list it
    (tmp_path / "cut" / f"shard-{cut_after:05d}.bits.npy").write_bytes(b"half")
    (tmp_path / "cut" / f"shard-{cut_after:05d}.bits.123.tmp.npy").write_bytes(b"half")
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "cut").glob("shard-*")}
    finished = build_store([source], tmp_path / "cut", shard_size=9)
    assert finished.content_hash == whole.content_hash
    assert finished.manifest["shards"] == whole.manifest["shards"]
    for shard in listed:  # never written twice
        for path in (tmp_path / "cut").glob(f"{shard['name']}.*"):
            assert path.stat().st_mtime_ns == before[path.name]
    assert not list((tmp_path / "cut").glob("*.tmp.*"))


def test_a_damaged_shard_is_named(tmp_path: Path, library: list[str]) -> None:
    source = _write(tmp_path / "library.smi", library)
    build_store([source], tmp_path / "store", shard_size=20)
    smi = tmp_path / "store" / "shard-00001.smi"
    smi.write_text(smi.read_text().replace("C", "N", 1))
    with pytest.raises(StoreError, match="shard shard-00001 does not match its hash"):
        LibraryStore(tmp_path / "store").verify()
    with pytest.raises(StoreError, match="shard-00001 does not match its hash"):
        build_store([source], tmp_path / "store", shard_size=20)
    with pytest.raises(ValueError, match="shard-00001 does not match its hash"):
        screening_problem(str(tmp_path / "store"))
    (tmp_path / "store" / "shard-00002.ids.npy").unlink()
    with pytest.raises(StoreError, match="shard shard-00002 is missing its ids.npy"):
        LibraryStore(tmp_path / "store")


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda m: "{not json", "is damaged"),
        (lambda m: json.dumps({**m, "format": 99}), "format 99, this version reads 1"),
        (lambda m: json.dumps({**m, "shards": [{"rows": "x"}]}), "is damaged"),
        (lambda m: json.dumps({**m, "complete": False}), "is not complete"),
    ],
)
def test_a_damaged_manifest_is_named(
    tmp_path: Path, library: list[str], damage: Any, message: str
) -> None:
    source = _write(tmp_path / "library.smi", library)
    build_store([source], tmp_path / "store", shard_size=20)
    manifest = tmp_path / "store" / MANIFEST
    manifest.write_text(damage(json.loads(manifest.read_text())))
    with pytest.raises(StoreError, match=message):
        LibraryStore(tmp_path / "store")


def test_a_store_of_other_sources_or_settings_is_not_extended(
    tmp_path: Path, library: list[str]
) -> None:
    source = _write(tmp_path / "library.smi", library)
    build_store([source], tmp_path / "store", shard_size=20)
    with pytest.raises(StoreError, match="other sources or settings"):
        build_store([source], tmp_path / "store", shard_size=10)
    with pytest.raises(StoreError, match="does not exist"):
        build_store([tmp_path / "missing.smi"], tmp_path / "other")
    with pytest.raises(StoreError, match="not a library store"):
        LibraryStore(tmp_path)


def test_screening_a_store_equals_screening_its_file(tmp_path: Path, library: list[str]) -> None:
    valid = [s for s in library if _parses(s)]
    source = _write(tmp_path / "library.smi", valid)
    from_file = screening_problem(str(source))
    build_store([source], tmp_path / "store", shard_size=13)
    from_store = screening_problem(str(tmp_path / "store"))
    np.testing.assert_array_equal(np.asarray(from_store.points), np.asarray(from_file.points))
    np.testing.assert_array_equal(from_store.values, from_file.values)
    assert list(from_store.labels) == list(from_file.labels)
    with pytest.raises(ValueError, match=f"pass --fingerprint {DEFAULT_FINGERPRINT}"):
        screening_problem(str(tmp_path / "store"), fingerprint="counts")
    unknown = screening_problem(str(tmp_path / "store"), objective=None)
    assert unknown.values.shape == from_store.values.shape and np.all(np.isnan(unknown.values))
    assert unknown.values.strides == (0,)  # one NaN for every row, not N floats
    as_before = dataclasses.replace(unknown, values=-np.full(len(unknown.values), np.nan))
    assert unknown.content_hash() == as_before.content_hash()  # logged campaigns still resume


def test_a_stores_rows_are_one_cached_file_mapped_and_shared(
    tmp_path: Path, library: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    store = build_store([_write(tmp_path / "library.smi", library)], tmp_path / "s", shard_size=7)
    expected = np.concatenate([np.array(shard.bits) for shard in store.shards()])
    packed = store.packed()
    assert isinstance(packed, np.memmap) and shareable(packed)  # TensorFlow shares its pages
    np.testing.assert_array_equal(packed, expected)
    np.testing.assert_array_equal(store.index_keys(), index_keys(row_hashes(expected)))
    (entry,) = (tmp_path / "cache").glob("store-packed-*.npy")
    assert entry.stat().st_size == 128 + expected.nbytes  # written once, header and rows
    damaged = bytearray(entry.read_bytes())
    damaged[-1] ^= 1
    entry.write_bytes(bytes(damaged))
    np.testing.assert_array_equal(LibraryStore(tmp_path / "s").packed(), expected)
    assert "is damaged" in capsys.readouterr().err  # and rewritten
    np.testing.assert_array_equal(LibraryStore(tmp_path / "s").packed(), expected)
    assert capsys.readouterr().err == ""


def test_a_stores_labels_are_mapped_from_the_cache_and_a_bad_smi_is_named(
    tmp_path: Path, library: list[str]
) -> None:
    store = build_store([_write(tmp_path / "library.smi", library)], tmp_path / "s", shard_size=9)
    labels = store.labels()
    assert list(labels) == _expected(library)[0]
    entries = sorted(p.name.split("-")[1] for p in (tmp_path / "cache").glob("store-*.npy"))
    assert entries == ["label", "smiles"]  # one file of bytes, one of offsets, both mapped
    assert list(LibraryStore(tmp_path / "s").labels()) == list(labels)  # read from the cache
    for entry in (tmp_path / "cache").glob("store-*"):
        entry.unlink()
    shard = tmp_path / "s" / "shard-00001.smi"
    shard.write_text("".join(line + "\n" for line in shard.read_text().splitlines()[1:]))
    with pytest.raises(StoreError, match="shard shard-00001 does not match its hash"):
        LibraryStore(tmp_path / "s").labels()
    manifest = read_manifest(tmp_path / "s")  # hashes recomputed over the edit: still refused
    manifest["shards"][1]["sha256"] = shard_hash(tmp_path / "s", "shard-00001")
    hashes = "".join(entry["sha256"] for entry in manifest["shards"])
    manifest["library_sha256"] = hashlib.sha256(hashes.encode()).hexdigest()
    write_manifest(tmp_path / "s", manifest)
    with pytest.raises(StoreError, match="shard-00001 has not one SMILES a row"):
        LibraryStore(tmp_path / "s").labels()


def test_featurise_refuses_bad_settings_and_missing_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trieste_scalable.cli import main

    out = str(tmp_path / "store")
    assert main(["featurise", str(tmp_path / "missing.smi"), "--out", out]) != 0
    assert "does not exist" in capsys.readouterr().err
    assert main(["featurise", str(tmp_path / "x.smi"), "--out", out, "--shard-size", "0"]) == 2
    assert "--shard-size must be positive" in capsys.readouterr().err


def test_featurise_defaults_build_the_store_screens_defaults_want_with_the_same_rule(
    tmp_path: Path, library: list[str]
) -> None:
    from trieste_scalable.campaigns.spec.defaults import resolved
    from trieste_scalable.campaigns.spec.library import ScreenSpec
    from trieste_scalable.cli import main

    source = _write(tmp_path / "library.smi", [s for s in library if _parses(s)])
    out = tmp_path / "store"
    assert main(["featurise", str(source), "--out", str(out), "--quiet"]) == 0
    stored = LibraryStore(out).fingerprint
    in_process = resolved(ScreenSpec(library=str(source), logdir=str(tmp_path / "a")))
    on_store = resolved(ScreenSpec(library=str(out), logdir=str(tmp_path / "b")))
    for spec in (in_process, on_store):
        assert (spec.fingerprint, spec.radius, spec.fingerprint_width) == (
            stored["kind"],
            stored["radius"],
            stored["size"],
        )
    assert stored["kind"] == "atom-pair-counts" and stored["size"] == 2048
    assert in_process.algorithm == on_store.algorithm == "gp-bucb"  # and one default rule
    assert in_process.dictionary_size == on_store.dictionary_size == 1000
    np.testing.assert_array_equal(
        np.asarray(screening_problem(str(out)).points),
        np.asarray(screening_problem(str(source)).points),
    )
