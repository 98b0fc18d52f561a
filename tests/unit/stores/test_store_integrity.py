"""A library store is what its shards say (issue 49, cases 1-4): the manifest is checked against
the shards on disk, cache entries are keyed by the hashes computed from the shards' files, and
an empty store is refused as an empty SMILES file is."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from trieste_scalable.cli import main
from trieste_scalable.stores.store import (
    LibraryStore,
    StoreError,
    read_manifest,
    shard_hash,
    write_manifest,
)
from trieste_scalable.stores.store_build import build_store

from ...util import write_library


@pytest.fixture
def store(tmp_path: Path) -> LibraryStore:
    """120 molecules in 4 shards."""
    library = tmp_path / "library.smi"
    write_library(library, 120)
    return build_store([library], tmp_path / "store", "bits", 2, 1024, shard_size=30)


def _copy(store: LibraryStore, edit: Callable[[dict[str, Any], Path], None]) -> Path:
    copy = store.path.with_name("copy")
    shutil.copytree(store.path, copy)
    manifest = read_manifest(copy)
    edit(manifest, copy)
    write_manifest(copy, manifest)
    return copy


def _rehash(manifest: dict[str, Any]) -> None:
    """Make the manifest's ``library_sha256`` agree with its shard entries (a careful editor)."""
    hashes = "".join(entry["sha256"] for entry in manifest["shards"])
    manifest["library_sha256"] = hashlib.sha256(hashes.encode()).hexdigest()


def _swap_entries(manifest: dict[str, Any], copy: Path) -> None:
    shards = manifest["shards"]
    shards[1], shards[2] = shards[2], shards[1]


def _swap_shards(manifest: dict[str, Any], copy: Path) -> None:
    """Swap two shards' files and entries, names kept in order: each row's SMILES stays with
    its fingerprint, but the rows move."""
    for suffix in ("bits.npy", "ids.npy", "smi", "invalid.smi"):
        one, two = copy / f"shard-00001.{suffix}", copy / f"shard-00002.{suffix}"
        one.rename(copy / "swap"), two.rename(one), (copy / "swap").rename(two)
    shards = manifest["shards"]
    one, two = {**shards[2], "name": "shard-00001"}, {**shards[1], "name": "shard-00002"}
    shards[1], shards[2] = one, two


@pytest.mark.parametrize("edit", [_swap_entries, _swap_shards])
@pytest.mark.parametrize("rehashed", [False, True])
def test_a_copy_with_reordered_shards_is_refused_naming_the_manifest(
    store: LibraryStore, edit: Callable[[dict[str, Any], Path], None], rehashed: bool
) -> None:
    copy = _copy(store, lambda m, c: (edit(m, c), _rehash(m) if rehashed else None))
    with pytest.raises(StoreError, match=r"copy/manifest\.json: field shards (lists|says)"):
        LibraryStore(copy)


def test_an_edited_copy_never_shares_the_real_stores_cache_entries(
    store: LibraryStore, tmp_path: Path
) -> None:
    """Case 1's harm: the copy's cache entries read for the real store (rows with another
    molecule's SMILES). A copy whose SMILES were edited and whose manifest was made consistent
    again is another library: its own entries, never the real store's."""
    real_labels, real_packed = list(store.labels()), np.array(store.packed())

    def edit(manifest: dict[str, Any], copy: Path) -> None:
        smi = copy / "shard-00001.smi"
        lines = smi.read_text().splitlines()
        lines[0], lines[1] = lines[1], lines[0]  # two rows' SMILES swapped
        smi.write_text("".join(line + "\n" for line in lines))
        manifest["shards"][1]["sha256"] = shard_hash(copy, "shard-00001")
        _rehash(manifest)

    copy = LibraryStore(_copy(store, edit))
    assert copy.content_hash != store.content_hash
    copy_labels = list(copy.labels())
    assert copy_labels[30:32] == real_labels[31:29:-1]  # the copy's own (edited) SMILES
    fresh = LibraryStore(store.path)
    assert list(fresh.labels()) == real_labels  # not the copy's entries
    np.testing.assert_array_equal(fresh.packed(), real_packed)

    def keep_hash(manifest: dict[str, Any], copy: Path) -> None:  # the exact edit
        edit(manifest, copy)
        manifest["library_sha256"] = read_manifest(store.path)["library_sha256"]

    shutil.rmtree(copy.path)
    with pytest.raises(StoreError, match="field library_sha256 is not the hash"):
        LibraryStore(_copy(store, keep_hash))


def test_a_shard_dropped_from_the_manifest_is_refused(store: LibraryStore) -> None:
    def drop(manifest: dict[str, Any], copy: Path) -> None:
        del manifest["shards"][3]
        _rehash(manifest)

    with pytest.raises(StoreError, match=r"manifest\.json: field shards does not list shard-00003"):
        LibraryStore(_copy(store, drop))


@pytest.mark.parametrize(
    "fingerprint, message",
    [
        (dict(width=256), r"field fingerprint has width 256, but bits fingerprints of 1024 bits"),
        (dict(width=2048, size=2048), r"field shards says shard-00000 holds 30 rows of 2048 bits"),
        (dict(kind="nonsense"), r"field fingerprint .* is not a fingerprint setting"),
    ],
)
def test_an_edited_fingerprint_setting_names_the_manifest_not_a_cache_file(
    store: LibraryStore, tmp_path: Path, fingerprint: dict[str, Any], message: str
) -> None:
    copy = _copy(store, lambda m, c: m["fingerprint"].update(fingerprint))
    with pytest.raises(StoreError, match=f"copy/manifest.json: {message}"):
        LibraryStore(copy)
    logdir = str(tmp_path / "run")
    assert main(["screen", "--library", str(copy), "--logdir", logdir, "--quiet"]) == 2


@pytest.mark.parametrize("content", ["", "not_a_molecule\nC1CC\n"])
def test_an_empty_store_is_refused_at_featurise_and_screen_as_an_empty_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    library, out = tmp_path / "library.smi", tmp_path / "store"
    library.write_text(content)
    assert main(["featurise", str(library), "--out", str(out)]) == 2  # as for screen
    assert f"library '{out}' contains no molecules" in capsys.readouterr().err
    logdir = tmp_path / "run"
    assert main(["screen", "--library", str(out), "--budget", "5", "--logdir", str(logdir)]) == 2
    assert f"library '{out}' contains no molecules" in capsys.readouterr().err
    assert not logdir.exists()
    (tmp_path / "empty.smi").write_text("")
    argv = ["screen", "--library", str(tmp_path / "empty.smi"), "--logdir", str(logdir)]
    assert main(argv) == 2  # the library: a usage error, for a file as for a store
    assert "empty.smi' contains no molecules" in capsys.readouterr().err
