"""Runs Walters' reagent-level Thompson sampling (GitHub ``PatWalters/TS``), his code unchanged, for
``benchmarks/make_on_demand.py``: it is imported from the checkout given with ``--ts-dir`` and run
in that checkout's Python (``--walters-python`` of the benchmark), never copied here.

Writes one JSON object to standard output: the reagent names of every product evaluated, in the
order evaluated (warm-up first), the evaluations his evaluator counted, and the mean score of the
best 100 distinct products found.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import tempfile
from pathlib import Path


class Similarity:
    """Walters' ``FPEvaluator`` objective (Morgan, his generator's defaults, Tanimoto to a query
    molecule), with the counter his sampler reads; or ``qed``, or ``surrogates.py``'s
    ``docking``, ``activity``, ``hits`` or ``rare_hits`` (the benchmark's own, learnt from
    shipped data)."""

    def __init__(self, objective: str, query: str):
        from rdkit import Chem, DataStructs
        from rdkit.Chem import QED, rdFingerprintGenerator

        self.objective, self.num_evaluations = objective, 0
        self._generator = rdFingerprintGenerator.GetMorganGenerator()
        self._reference = self._generator.GetFingerprint(Chem.MolFromSmiles(query))
        self._tanimoto, self._qed = DataStructs.TanimotoSimilarity, QED.qed

    @property
    def counter(self) -> int:
        return self.num_evaluations

    def evaluate(self, molecule) -> float:  # type: ignore[no-untyped-def]
        self.num_evaluations += 1
        if self.objective == "qed":
            return float(self._qed(molecule))
        if self.objective in ("docking", "activity", "hits", "rare_hits"):
            import surrogates  # beside this file: numpy and RDKit only

            return float(getattr(surrogates, self.objective)([molecule])[0])
        return float(self._tanimoto(self._reference, self._generator.GetFingerprint(molecule)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ts-dir", required=True)
    parser.add_argument("--reaction", required=True)
    parser.add_argument("--reagents", nargs="+", required=True)
    parser.add_argument("--objective", default="similarity")
    parser.add_argument("--query", required=True)
    parser.add_argument("--evaluations", type=int, required=True)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sys.path.insert(0, args.ts_dir)
    import numpy as np
    from thompson_sampling import ThompsonSampler

    random.seed(args.seed)
    np.random.seed(args.seed)
    with tempfile.TemporaryDirectory() as plain:  # his reader takes plain .smi files
        files = []
        for path in map(Path, args.reagents):
            target = Path(plain) / path.name.removesuffix(".gz")
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt") as source:
                target.write_text(source.read())
            files.append(str(target))
        sampler = ThompsonSampler(mode="maximize")
        sampler.set_hide_progress(True)
        evaluator = Similarity(args.objective, args.query)
        sampler.set_evaluator(evaluator)
        sampler.read_reagents(reagent_file_list=files, num_to_select=None)
        sampler.set_reaction(args.reaction)
        warm = sampler.warm_up(num_warmup_trials=args.warmup)
        cycles = max(args.evaluations - evaluator.counter, 0)
        found = sampler.search(num_cycles=cycles) if cycles else []
    rows = warm + found
    names = [name for _, _, name in rows]
    best = sorted({name: float(score) for score, _, name in rows}.values(), reverse=True)
    best100_mean = sum(best[:100]) / max(1, len(best[:100]))
    json.dump(
        {"names": names, "evaluations": evaluator.counter, "best100_mean": best100_mean},
        sys.stdout,
    )


if __name__ == "__main__":
    main()
