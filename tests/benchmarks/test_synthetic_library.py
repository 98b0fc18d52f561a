"""The synthetic library: each row its base with exactly `flips` on-bits moved, recomputable in
any chunk, bits turned on in proportion to their frequency; the oracle a smooth function of the
fingerprint, the same in any chunking; a store built from it like any other."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.synthetic_library import (
    TanimotoOracle,
    perturbed_rows,
    synthetic_chunk_map,
)
from trieste_scalable.chemistry.molecules import fingerprints, parse
from trieste_scalable.stores.store_build import build_store

from ..util import moses


@pytest.fixture(scope="module")
def base() -> np.ndarray:
    return np.packbits(fingerprints(parse(moses(300))[0]), axis=1)


def _bits(packed: np.ndarray) -> np.ndarray:
    return np.unpackbits(packed, axis=1, count=1024).astype(bool)


def test_rows_keep_their_bases_bit_count_and_move_exactly_flips_bits(base: np.ndarray) -> None:
    frequency = _bits(base).mean(axis=0)
    rows = np.arange(3000, dtype=np.int64)
    made = _bits(perturbed_rows(base, rows, frequency, flips=4))
    original = _bits(base)[rows % len(base)]
    np.testing.assert_array_equal(made.sum(axis=1), original.sum(axis=1))
    np.testing.assert_array_equal((made & ~original).sum(axis=1), 4)  # 4 on, 4 off
    again = perturbed_rows(base, rows[[2999, 5, 1000]], frequency, flips=4)  # other chunks
    np.testing.assert_array_equal(_bits(again), made[[2999, 5, 1000]])
    assert len(np.unique(made, axis=0)) > 2990  # copies of one base differ
    turned_on = (made & ~original).mean(axis=0)
    off_share = (~original).mean(axis=0)
    expected = frequency * off_share
    assert np.corrcoef(turned_on, expected)[0, 1] > 0.9  # drawn by frequency


def test_the_oracle_is_smooth_and_the_same_in_any_chunking(base: np.ndarray) -> None:
    frequency = _bits(base).mean(axis=0)
    oracle = TanimotoOracle(1024, variance=1.0, seed=3)
    values = oracle(base)
    np.testing.assert_allclose(oracle(base, chunk_size=7), values, rtol=1e-12)
    np.testing.assert_array_equal(TanimotoOracle(1024, 1.0, seed=3)(base[:5]), values[:5])
    near = oracle(perturbed_rows(base, np.arange(300, dtype=np.int64), frequency, flips=2))
    # a GP sample under the Tanimoto kernel: near-identical rows (similarity ~0.9) correlate
    assert np.corrcoef(values, near)[0, 1] > 0.7
    assert 0.3 < values.var() < 3.0  # the kernel's variance, 1, to within sampling error


def test_a_synthetic_store_is_built_and_resumed_like_any_other(
    tmp_path: Path, base: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIESTE_SCALABLE_CACHE", str(tmp_path / "cache"))  # packed() writes there
    names = tmp_path / "synthetic.txt"
    names.write_text("".join(f"synthetic-{i}\n" for i in range(1000)))
    chunk_map = synthetic_chunk_map(base, 1024, flips=4)
    store = build_store(  # the synthetic rows are 1,024 Morgan bits
        [names], tmp_path / "store", "bits", 2, 1024, shard_size=300, chunk_map=chunk_map
    )
    frequency = _bits(base).mean(axis=0)
    expected = perturbed_rows(base, np.arange(1000, dtype=np.int64), frequency, flips=4)
    unique = np.unique(expected, axis=0)
    assert store.num_rows == len(unique) and len(store.manifest["shards"]) == 4
    np.testing.assert_array_equal(np.unique(store.packed(), axis=0), unique)
