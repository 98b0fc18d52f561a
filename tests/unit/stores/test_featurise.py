"""Chunked, multi-process featurisation: bit-packed fingerprints equal the unpacked ones, chunk
boundaries and worker processes change nothing, and unparseable SMILES are reported by their
place in the library."""

from __future__ import annotations

import numpy as np
import pytest

from trieste_scalable.chemistry.molecules import OBJECTIVES, fingerprints, parse
from trieste_scalable.stores import featurise
from trieste_scalable.stores.featurise import fingerprint_library, score_library

from ...util import moses


def _unpacked(packed: np.ndarray, width: int) -> np.ndarray:
    """The 0/1 rows of ``packed``, by NumPy (independent of the package's unpack)."""
    return np.unpackbits(packed, axis=1, count=width)


@pytest.mark.parametrize("kind, width", [("bits", 1024), ("counts", 3 * 512)])
def test_packed_fingerprints_unpack_to_rdkit_fingerprints(kind: str, width: int) -> None:
    smiles = moses(30)
    size = 1024 if kind == "bits" else 512
    kept, packed = fingerprint_library(smiles, kind, size=size)
    assert packed.dtype == np.uint8 and packed.shape == (30, width // 8)
    np.testing.assert_array_equal(kept, np.arange(30))
    dense = fingerprints(parse(smiles)[0], kind, size=size)
    np.testing.assert_array_equal(_unpacked(packed, width), dense)


def test_chunks_and_processes_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    smiles = moses(40)
    smiles[3], smiles[22] = "C1CC", "not_a_molecule"  # one in the first and third chunks
    monkeypatch.setattr(featurise, "CHUNK_SIZE", 7)
    with pytest.raises(ValueError, match=r"2 SMILES .* #4 'C1CC', #23 'not_a_molecule'"):
        fingerprint_library(smiles)
    kept, packed = fingerprint_library(smiles, skip_invalid=True, processes=2)
    np.testing.assert_array_equal(kept, np.setdiff1d(np.arange(40), [3, 22]))
    valid = [smiles[i] for i in kept]
    np.testing.assert_array_equal(_unpacked(packed, 1024), fingerprints(parse(valid)[0]))
    scores = score_library(valid, "qed", processes=2)
    np.testing.assert_allclose(scores, OBJECTIVES["qed"](parse(valid)[0]))
    with pytest.raises(ValueError, match="no SMILES in the library could be parsed"):
        fingerprint_library(["C1CC"] * 9, skip_invalid=True)


def test_chunks_are_cached_so_featurising_resumes_and_prefixes_reuse_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    smiles = moses(40)
    monkeypatch.setattr(featurise, "CHUNK_SIZE", 10)
    kept, packed = fingerprint_library(smiles[:30])  # chunks 1-3 computed and stored
    stored = sorted(featurise.chunk_dir().glob("fingerprint_chunk-*.npz"))
    assert len(stored) == 3
    computed: list[str] = []
    original = featurise.fingerprint_chunk

    def counting(chunk, settings):  # type: ignore[no-untyped-def]
        computed.append(chunk[0])
        return original(chunk, settings)

    monkeypatch.setattr(featurise, "fingerprint_chunk", counting)
    monkeypatch.setattr(counting, "__name__", original.__name__)
    kept_all, packed_all = fingerprint_library(smiles, processes=1)  # grew by one chunk
    assert computed == [smiles[30]]  # only the new chunk
    np.testing.assert_array_equal(packed_all[:30], packed)
    stored[1].write_bytes(b"damaged")  # as an interrupted write would leave it: recomputed
    np.testing.assert_array_equal(fingerprint_library(smiles, processes=1)[1], packed_all)
    assert len(computed) == 2 and computed[1] in smiles[:30:10]
    np.testing.assert_array_equal(_unpacked(packed_all, 1024), fingerprints(parse(smiles)[0]))
    fingerprint_library(smiles, size=512, processes=1)  # other settings: other entries
    assert len(list(featurise.chunk_dir().glob("fingerprint_chunk-*.npz"))) == 8
    assert not list(featurise.chunk_dir().glob("*.tmp*"))


def test_cached_chunks_are_read_without_starting_worker_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Starting the pool costs seconds (each worker imports the package): a warm cache must not
    start one, and a partly warm one hands the pool only the chunks it lacks."""
    smiles = moses(40)
    monkeypatch.setattr(featurise, "CHUNK_SIZE", 10)
    kept, packed = fingerprint_library(smiles[:30], processes=1)
    handed: list[int] = []

    class Pool:  # records what it is given and runs it in-process
        def __init__(self, processes: int, mp_context: object) -> None:
            pass

        def __enter__(self) -> "Pool":
            return self

        def __exit__(self, *args: object) -> None:
            pass

        def map(self, task, chunks, settings):  # type: ignore[no-untyped-def]
            handed.extend(len(chunk) for chunk in chunks)
            return [task(chunk, s) for chunk, s in zip(chunks, settings)]

    monkeypatch.setattr(featurise, "ProcessPoolExecutor", Pool)
    np.testing.assert_array_equal(fingerprint_library(smiles[:30], processes=2)[1], packed)
    assert handed == []  # every chunk from the cache
    smiles[35] = "C1CC"  # the new chunks: one with an invalid SMILES
    kept_all, packed_all = fingerprint_library(smiles + smiles[:7], processes=2, skip_invalid=True)
    assert handed == [10, 7]
    np.testing.assert_array_equal(kept_all, np.setdiff1d(np.arange(47), [35]))
    np.testing.assert_array_equal(packed_all[:30], packed)
    valid = [(smiles + smiles[:7])[i] for i in kept_all]
    np.testing.assert_array_equal(_unpacked(packed_all, 1024), fingerprints(parse(valid)[0]))
