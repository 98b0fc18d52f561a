"""Molecular libraries, Morgan fingerprints and a property oracle, all computed with RDKit.

- Libraries: ``moses-20k`` / ``moses-100k`` (the MOSES subset shipped in ``data/``, see
  ``scripts/make_moses_subset.py``), ``enamine-10k`` (MolPAL's Enamine10k, with its
  thymidylate kinase (4UNN) docking scores as the score table ``table:enamine-10k-4unn``),
  ``moses-full`` (all 1.9 M MOSES molecules, from the ``molsets`` package's data files), or any
  ``.smi`` / ``.csv`` file of SMILES (optionally gzipped; a CSV needs a ``smiles`` column, any
  case).
- Fingerprints (:data:`FINGERPRINTS`): Morgan (ECFP-like), atom-pair or topological-torsion bit
  vectors, or their count vectors in unary encoding (one bit per "count >= j", j <=
  ``COUNT_CAP``) so that the Tanimoto kernel on them is MinMax on the counts.
- Objectives (higher is better here; the screening problem negates them because Trieste
  minimises): ``celecoxib-mpo``, ``qed``, ``logp``; see ``OBJECTIVES``.

Per-molecule RDKit calls are Python loops over molecules; they run once per library and their
results are cached on disk (:func:`~trieste_scalable.stores.cache.cached`), never inside the
optimisation loop.
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import logging
import math
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from ..errors import UsageError
from ..files import text_file

_log = logging.getLogger(__name__)

DATA = Path(__file__).resolve().parents[1] / "data"
BUILTIN_LIBRARIES = {"moses-20k": 20_000, "moses-100k": 100_000, "enamine-10k": 10_560}
ENAMINE_10K = DATA / "enamine10k"
"""MolPAL's Enamine10k library and its thymidylate kinase (PDB 4UNN) docking scores (MIT, see its
README and LICENSE)."""
MOSES_FULL = "moses-full"
MOSES_FILES = ("train.csv.gz", "test.csv.gz", "test_scaffolds.csv.gz")
COUNT_CAP = 3
DEFAULT_FINGERPRINT, DEFAULT_RADIUS, DEFAULT_WIDTH = "atom-pair-counts", 2, 2048
"""The one default fingerprint of ``screen``, ``propose`` and ``featurise`` (so a store built
with defaults is the store a campaign's defaults want): atom-pair counts over 2,048 bits
(``benchmarks/molpal_enamine.py``; ``docs/screening.md`` says why); the radius is Morgan's."""
CELECOXIB = "Cc1ccc(cc1)-c1cc(nn1-c1ccc(cc1)S(N)(=O)=O)C(F)(F)F"


def load_smiles(library: str) -> list[str]:
    """The SMILES of a built-in library name, ``moses-full`` or a file path, read line by line
    (a file of millions of molecules is never held as text and rows at once).

    :raise UsageError: If the file does not exist, has no SMILES column or is empty, or
        ``moses-full`` is asked for without the ``molsets`` package.
    """
    if library == "enamine-10k":
        return list(read_smiles(ENAMINE_10K / "library.csv.gz"))
    if library in BUILTIN_LIBRARIES:
        with gzip.open(DATA / "moses_100k.smi.gz", "rt") as handle:
            return handle.read().split()[: BUILTIN_LIBRARIES[library]]
    if library == MOSES_FULL:
        paths = moses_full_files()
    else:
        paths = [Path(library)]
        if not paths[0].is_file():
            choices = sorted([*BUILTIN_LIBRARIES, MOSES_FULL])
            raise UsageError(f"library {library!r} is neither a file nor one of {choices}")
    smiles = [s for path in paths for s in read_smiles(path) if s]
    if not smiles:
        raise UsageError(f"library {library!r} contains no molecules")
    return smiles


def moses_full_files() -> list[Path]:
    """The data files of the whole MOSES set (1,936,962 molecules: train, test and scaffold test)
    in the ``molsets`` package, found without importing it (its own imports need PyTorch and
    more; ``pip install --no-deps molsets`` is enough).

    :raise UsageError: If it is not installed.
    """
    spec = importlib.util.find_spec("moses")
    locations = list(spec.submodule_search_locations or []) if spec else []
    paths = [Path(p) / "dataset" / "data" / name for p in locations[:1] for name in MOSES_FILES]
    if not paths or not all(path.is_file() for path in paths):
        raise UsageError(
            f"library {MOSES_FULL!r} reads the MOSES data files of the molsets package: "
            "install it with `pip install --no-deps molsets` (its dependencies are not needed)"
        )
    return paths


def read_smiles(path: Path) -> Iterator[str]:
    """SMILES of a .smi file (first field of each line) or a CSV's ``smiles`` column (any case),
    optionally gzipped.

    :raise UsageError: Naming the file if it cannot be read (``text_file``) or a
        CSV has no ``smiles`` column.
    """
    with text_file(path, "library") as handle:
        if not path.name.removesuffix(".gz").endswith(".csv"):
            yield from (line.split()[0] for line in handle if line.strip())
            return
        reader = csv.reader(handle)
        header = [name.strip() for name in next(reader, [])]
        lower = [name.lower() for name in header]
        if "smiles" not in lower:
            raise UsageError(f"{path} has no 'smiles' column (columns: {header})")
        column = lower.index("smiles")
        yield from (row[column].strip() for row in reader if len(row) > column)


def parse(smiles: list[str], skip_invalid: bool = False) -> tuple[list, np.ndarray]:
    """RDKit molecules of ``smiles`` and the indices kept.

    :raise UsageError: Listing the first unparseable SMILES, unless ``skip_invalid``.
    """
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]  # stubs miss it
    molecules = [Chem.MolFromSmiles(s) for s in smiles]
    bad = [i for i, m in enumerate(molecules) if m is None]
    if bad and not skip_invalid:
        shown = ", ".join(f"#{i + 1} {smiles[i]!r}" for i in bad[:5])
        raise UsageError(
            f"{len(bad)} SMILES could not be parsed (first: {shown}); fix them or pass "
            "--skip-invalid to leave them out"
        )
    kept = np.array([i for i, m in enumerate(molecules) if m is not None], dtype=np.int64)
    if kept.size == 0:
        raise UsageError("no SMILES in the library could be parsed")
    return [molecules[i] for i in kept], kept


FINGERPRINTS: dict[str, tuple[str, bool]] = {
    "morgan": ("morgan", False),
    "morgan-counts": ("morgan", True),
    "atom-pairs": ("atom-pairs", False),
    "atom-pair-counts": ("atom-pairs", True),
    "torsions": ("torsions", False),
    "torsion-counts": ("torsions", True),
    "bits": ("morgan", False),  # the names of Morgan fingerprints before 2026-11-28
    "counts": ("morgan", True),
}
"""Fingerprint kinds by name: RDKit's generator (Morgan / ECFP, atom pairs, topological
torsions) and whether it counts (unary-encoded, :func:`unary_counts`, so that the Tanimoto
kernel on the bits is the MinMax kernel on the counts) or only flags features."""


def check_fingerprint(kind: str, radius: int, size: int) -> None:
    """:raise UsageError: On an unknown kind, a radius below 1 or a width below 8."""
    if kind not in FINGERPRINTS:
        raise UsageError(f"unknown fingerprint {kind!r}: choose from {', '.join(FINGERPRINTS)}")
    if not (isinstance(radius, int) and radius >= 1):
        raise UsageError(f"the fingerprint radius must be a positive integer, got {radius!r}")
    if not (isinstance(size, int) and size >= 8):
        raise UsageError(f"the fingerprint width must be an integer of at least 8, got {size!r}")


def fingerprints(
    molecules: list,
    kind: str = "bits",
    radius: int = 2,
    size: int = 1024,
    *,
    chirality: bool = False,
) -> np.ndarray:
    """Fingerprints of ``kind`` (:data:`FINGERPRINTS`) [N, size], or [N, size * COUNT_CAP] for
    counts (unary); ``radius`` is Morgan's (atom pairs and torsions have none); with
    ``chirality`` stereocentres' tags are features (RDKit's ``includeChirality``), so
    stereoisomers differ."""
    from rdkit.Chem import rdFingerprintGenerator as generators

    check_fingerprint(kind, radius, size)
    family, counts = FINGERPRINTS[kind]
    if family == "morgan":
        generator = generators.GetMorganGenerator(
            radius=radius, fpSize=size, includeChirality=chirality
        )
    elif family == "atom-pairs":
        generator = generators.GetAtomPairGenerator(fpSize=size, includeChirality=chirality)
    else:
        generator = generators.GetTopologicalTorsionGenerator(
            fpSize=size, includeChirality=chirality
        )
    if not counts:
        return np.stack([generator.GetFingerprintAsNumPy(m) for m in molecules]).astype(np.uint8)
    return unary_counts(np.stack([generator.GetCountFingerprintAsNumPy(m) for m in molecules]))


def fingerprint_width(kind: str, size: int) -> int:
    """Columns of :func:`fingerprints` of ``kind`` with ``size`` bits."""
    return size * (COUNT_CAP if FINGERPRINTS.get(kind, ("", False))[1] else 1)


def unary_counts(counts: np.ndarray, cap: int = COUNT_CAP) -> np.ndarray:
    """Unary encoding [N, D * cap]: column block j holds ``counts >= j + 1``."""
    return np.concatenate([counts >= level for level in range(1, cap + 1)], axis=1).astype(np.uint8)


def _desirability(value: float, centre: float, width: float) -> float:
    return math.exp(-0.5 * ((value - centre) / width) ** 2)


def celecoxib_mpo(molecules: list) -> np.ndarray:
    """A GuacaMol-style multi-property objective in [0, 1] (not a GuacaMol task itself): the
    geometric mean of the count-Morgan (radius 2) Tanimoto similarity to celecoxib, a logP
    desirability exp(-(logP - 3.5)^2 / 2), a TPSA desirability exp(-((TPSA - 80) / 20)^2 / 2)
    and QED. Celecoxib itself scores about 0.93."""
    from rdkit import Chem, DataStructs
    from rdkit.Chem import QED, Crippen, rdFingerprintGenerator, rdMolDescriptors

    generator = rdFingerprintGenerator.GetMorganGenerator(radius=2)
    reference = generator.GetCountFingerprint(Chem.MolFromSmiles(CELECOXIB))
    similarity = DataStructs.BulkTanimotoSimilarity(
        reference, [generator.GetCountFingerprint(m) for m in molecules]
    )
    scores = []
    for mol, sim in zip(molecules, similarity):
        parts = (
            sim,
            _desirability(Crippen.MolLogP(mol), 3.5, 1.0),  # type: ignore[attr-defined]
            _desirability(rdMolDescriptors.CalcTPSA(mol), 80.0, 20.0),
            QED.qed(mol),
        )
        scores.append(math.prod(parts) ** 0.25)
    return np.array(scores)


def qed(molecules: list) -> np.ndarray:
    """RDKit's quantitative estimate of drug-likeness, in [0, 1]."""
    from rdkit.Chem import QED

    return np.array([QED.qed(m) for m in molecules])


def logp(molecules: list) -> np.ndarray:
    """Crippen logP (unbounded)."""
    from rdkit.Chem import Crippen

    return np.array([Crippen.MolLogP(m) for m in molecules])  # type: ignore[attr-defined]


OBJECTIVES: dict[str, Callable[[list], np.ndarray]] = {
    "celecoxib-mpo": celecoxib_mpo,
    "qed": qed,
    "logp": logp,
}
