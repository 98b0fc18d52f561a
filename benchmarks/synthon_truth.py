"""The truth of Chemspace's synthon sample (10 reactions, 995,916 products): every product
enumerated once, in the catalog's flat order (reactions as ``read_synthon_files`` reads them, each
in C order of its counts), scored by each objective of ``benchmarks/synthon_spaces.py``, and
each product's molecule (the flat index of the first product with its canonical SMILES), cached
under the cache directory.

Objectives (maximised): ``similarity``, Morgan Tanimoto to a query product; ``qed``, RDKit's
drug-likeness; ``docking``, a surrogate of a docking score: ridge regression on Morgan counts
(radius 2, 2,048 bits) fitted to MolPAL's 10,449 Vina scores against thymidylate kinase (4UNN,
kcal/mol, shipped), its prediction negated; ``hit``, a sparse one (issue 83's kind): the
probability of a hit, logistic in that surrogate, :math:`1 / (1 + e^{-(d - 15.985) / 1.028})`,
centre and width chosen so that over the sample its median is 5e-4 and its 99.9th percentile
0.046, as the activity classifier's are over Walters' quinazoline subset (its true top 100 are
the docking surrogate's). A product without a compound scores ``-inf``.

Run: ``.venv/bin/python benchmarks/synthon_truth.py`` (about 15 minutes on 2 cores, once).
"""

from __future__ import annotations

import os
import time
from functools import lru_cache
from multiprocessing import Pool

import numpy as np
import surrogates

from trieste_scalable.spaces.synthons import CHEMSPACE_SAMPLE, read_synthon_files
from trieste_scalable.stores.cache import cache_dir

OBJECTIVES = ("similarity", "qed", "docking", "hit")
HIT_CENTRE, HIT_WIDTH = 15.985, 1.028
QUERY = "Cc1ccc(NC(=O)C2CCN2c2ccncc2C)cc1"
"""The similarity objective's query: a product of reaction a7 (``19678|297943|160714|a7``)."""


def scores(smiles: list[str]) -> dict[str, np.ndarray]:
    """Each objective's scores [N] of canonical SMILES."""
    from rdkit import Chem, DataStructs
    from rdkit.Chem import QED, rdFingerprintGenerator

    molecules = [Chem.MolFromSmiles(s) for s in smiles]
    generator = rdFingerprintGenerator.GetMorganGenerator()
    reference = generator.GetFingerprint(Chem.MolFromSmiles(QUERY))
    found = [generator.GetFingerprint(m) for m in molecules]
    docking = surrogates.docking(molecules)
    return {
        "similarity": np.array(DataStructs.BulkTanimotoSimilarity(reference, found)),
        "qed": np.array([QED.qed(m) for m in molecules]),
        "docking": docking,
        "hit": hit(docking),
    }


def hit(docking: np.ndarray) -> np.ndarray:
    """The ``hit`` objective of docking surrogate scores (module docstring)."""
    return 1.0 / (1.0 + np.exp(-(docking - HIT_CENTRE) / HIT_WIDTH))


@lru_cache(maxsize=1)
def reactions() -> list:
    return list(read_synthon_files([CHEMSPACE_SAMPLE]).values())


def _chunk(job: tuple[int, int, int]) -> tuple[list, dict[str, np.ndarray]]:
    r, start, stop = job
    library = reactions()[r]
    tuples = np.stack(np.unravel_index(np.arange(start, stop), library.counts), axis=1)
    made = library.products(tuples)
    ok = [i for i, s in enumerate(made) if s is not None]
    found = scores([made[i] for i in ok])
    out = {}
    for name in OBJECTIVES:
        column = np.full(len(made), -np.inf)
        column[ok] = found[name]
        out[name] = column
    return made, out


def truth() -> dict[str, np.ndarray]:
    """``{objective: scores [995,916]}`` and ``molecule``: each product's first flat index with
    its SMILES [995,916] (-1 where no compound), computed once and cached."""
    path = cache_dir() / "synthon-sample-truth.npz"
    if path.is_file():
        cached = dict(np.load(path))
        cached.setdefault("hit", hit(cached["docking"]))  # a function of the docking column
        return cached
    jobs = []
    for r, library in enumerate(reactions()):
        jobs += [(r, s, min(s + 20_000, library.size)) for s in range(0, library.size, 20_000)]
    started = time.perf_counter()
    with Pool(os.cpu_count() or 1) as pool:
        done = pool.map(_chunk, jobs)
    smiles = [s for made, _ in done for s in made]
    first: dict[str, int] = {}
    molecule = np.array(
        [-1 if s is None else first.setdefault(s, i) for i, s in enumerate(smiles)], np.int64
    )
    result = {n: np.concatenate([found[n] for _, found in done]) for n in OBJECTIVES}
    result["molecule"] = molecule
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **result)
    print(f"enumerated {len(smiles):,} products in {time.perf_counter() - started:.0f} s ({path})")
    return result


if __name__ == "__main__":
    found = truth()
    print(f"molecules: {len(np.unique(found['molecule'][found['molecule'] >= 0])):,}")
    for name in OBJECTIVES:
        values = found[name][np.isfinite(found[name])]
        top = np.sort(values)[::-1]
        print(
            f"{name}: median {np.median(values):.4f}, 100th best {top[99]:.4f}, best {top[0]:.4f}"
        )
