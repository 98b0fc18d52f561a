"""A virtual-screening campaign as a discrete minimisation problem: candidates are the unique
fingerprints of a molecular library, the objective is a property oracle evaluated once for the
whole library (so recall of the best molecules can be scored)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

import numpy as np
import tensorflow as tf

from ..numerics.bits import PackedRows, aligned_rows, pack_rows, shared_tensor
from ..numerics.rows import first_occurrences
from ..packed_space import PackedSearchSpace
from .featurise import fingerprint_library, score_library
from .labels import Labels
from .molecules import OBJECTIVES, cached, fingerprint_width, load_smiles
from .store import LibraryStore, is_store
from .synthetic import DiscreteProblem, values_bytes


@dataclass(frozen=True)
class ScreeningProblem(DiscreteProblem):
    """Minimise minus a molecular property over a library.

    Molecules with identical fingerprints are indistinguishable to the model, so each unique
    fingerprint is one candidate, labelled with (and scored as) its first molecule. The
    candidates stay bit-packed (``points`` are :class:`~trieste_scalable.numerics.bits.PackedRows`
    in float64, the search space a :class:`~trieste_scalable.packed_space.PackedSearchSpace`
    sharing their memory): a library takes D / 8 bytes a molecule, not 8 D.

    :ivar labels: SMILES of each candidate [A] (held compactly: :class:`.labels.Labels`).
    :ivar num_molecules: Parsed molecules in the library (before fingerprint deduplication).
    :ivar index_keys: The candidates' row index keys (:func:`~..numerics.rows.index_keys`
        [2, A]) if known (a library store's, memory-mapped), so the index reads no candidate's
        bits to be built.
    """

    labels: Labels = field(default_factory=lambda: Labels([]))
    num_molecules: int = 0
    index_keys: Optional[np.ndarray] = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        assert isinstance(self.points, PackedRows)
        # one row index for the problem and its search space (one sort of the library)
        object.__setattr__(self, "_index", self.search_space.index())

    @cached_property
    def search_space(self) -> PackedSearchSpace:  # type: ignore[override]
        assert isinstance(self.points, PackedRows)
        return PackedSearchSpace.of_rows(self.points, self.index_keys)

    def indices(self, query_points: tf.Tensor | np.ndarray) -> np.ndarray:
        return self._index(pack_rows(np.asarray(query_points)))

    def recall_curve(self, evaluated: np.ndarray, fraction: float) -> np.ndarray:
        """Recall of the top ``fraction`` after each of the ``evaluated`` indices [N]."""
        size = max(1, int(np.ceil(fraction * len(self.values))))
        top = np.argsort(self.values, kind="stable")[:size]
        first = np.zeros(len(self.values), dtype=bool)
        new = np.zeros(evaluated.size, dtype=bool)
        _, first_seen = np.unique(evaluated, return_index=True)
        new[first_seen] = True  # repeats of a molecule are not new finds
        first[top] = True
        return np.cumsum(new & first[evaluated]) / size

    def recall(self, evaluated: np.ndarray, fraction: float) -> float:
        """Share of the library's top ``fraction`` (by true value) among ``evaluated`` indices."""
        return float(self.recall_curve(evaluated, fraction)[-1]) if evaluated.size else 0.0

    def content_hash(self, legacy: bool = False) -> str:
        """SHA-256 of the candidates' SMILES and scores, in order (``legacy``: see
        :func:`~.synthetic.values_bytes`)."""
        digest = hashlib.sha256()
        for part in self.labels.joined():
            digest.update(part)
        digest.update(values_bytes(self.values, legacy))
        return digest.hexdigest()

    def identity_columns(self) -> list[str]:
        return ["smiles"]

    def identity(self, index: int) -> list[str]:
        return [str(self.labels[index])]

    def identity_matches(self, index: np.ndarray, logged: list[list[str]]) -> np.ndarray:
        return np.array([row == [self.labels[i]] for i, row in zip(index, logged)], dtype=bool)

    def metrics(self, evaluated: np.ndarray) -> dict[str, float]:
        return {
            "recall_top1pct": self.recall(evaluated, 0.01),
            "recall_top10pct": self.recall(evaluated, 0.1),
        }


def screening_problem(
    library: str = "moses-20k",
    objective: Optional[str] = "celecoxib-mpo",
    fingerprint: str = "bits",
    radius: int = 2,
    size: int = 1024,
    noise_std: float = 0.0,
    skip_invalid: bool = False,
    progress: bool = False,
) -> ScreeningProblem:
    """Parse, featurise (cached) and score (cached) a library, in chunks on every core
    (:mod:`.featurise`).

    :param library: A built-in library's name, a SMILES file or a library store's directory
        (:mod:`.store`: featurised already, duplicates removed, checked against its hashes).
    :param objective: A built-in property, or ``None`` for an objective known only where it is
        evaluated (``values`` are then NaN: evaluations come from an oracle on workers).
    :raise ValueError: On an unknown objective, an empty library or unparseable SMILES.
    """
    if objective is not None and objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}: choose from {sorted(OBJECTIVES)}")
    if noise_std < 0:
        raise ValueError(f"noise must be non-negative, got {noise_std}")
    if is_store(library):
        return _store_problem(LibraryStore(library), objective, fingerprint, noise_std, progress)
    smiles = load_smiles(library)
    key = "\n".join(smiles)
    featurised: dict[str, np.ndarray] = {}

    def featurise() -> dict[str, np.ndarray]:
        if not featurised:
            found = fingerprint_library(
                smiles, fingerprint, radius, size, skip_invalid, progress=progress
            )
            featurised.update(kept=found[0], packed=found[1])
        return featurised

    kept = cached(
        "kept",
        f"{key}|{skip_invalid}",
        lambda: featurise()["kept"],
        lambda value: _valid_kept(value, len(smiles)),
    )
    width = fingerprint_width(fingerprint, size)
    packed = cached(
        "packed-fingerprints",
        f"{key}|{skip_invalid}|{fingerprint}|{radius}|{size}",
        lambda: featurise()["packed"],
        lambda value: value.shape == (kept.size, -(-width // 8)) and value.dtype == np.uint8,
        mmap=True,
    )
    scores = np.full(kept.size, np.nan)
    if objective is not None:
        name = objective
        scores = cached(
            f"objective-{objective}",
            f"{key}|{skip_invalid}",
            lambda: score_library([smiles[i] for i in kept], name, progress=progress),
            lambda value: value.shape == (kept.size,) and bool(np.all(np.isfinite(value))),
        )
    first = first_occurrences(packed)
    return ScreeningProblem(
        name=f"{objective or 'an oracle'} on {library}",
        # the rows a campaign reads, without the dense matrix, in memory shared with TensorFlow
        # and the search space
        points=PackedRows(shared_tensor(aligned_rows(packed, first)), width, tf.float64),
        values=-scores[first],
        noise_std=noise_std,
        labels=Labels(smiles, kept[first]),
        num_molecules=int(kept.size),
    )


def _store_problem(
    store: LibraryStore,
    objective: Optional[str],
    fingerprint: str,
    noise_std: float,
    progress: bool,
) -> ScreeningProblem:
    """The problem over a library store: its rows memory-mapped from one cached file
    (:meth:`~.store.LibraryStore.packed`) and indexed by their cached, mapped hashes, so the process
    holds only the pages it reads; its SMILES as labels (read a shard at a time); a built-in
    objective's values computed once per store and cached."""
    settings = store.fingerprint
    if settings["kind"] != fingerprint:
        raise ValueError(
            f"{store.path} holds {settings['kind']} fingerprints ({settings['size']} bits, radius "
            f"{settings['radius']}), not {fingerprint}: pass --fingerprint {settings['kind']}"
        )
    store.verify()
    labels = store.labels()
    # an objective known only where it is evaluated: one NaN for every row, not N floats (minus
    # NaN, the bits a campaign's content hash has always read: -np.full(N, nan))
    values = np.broadcast_to(-np.float64(np.nan), (len(labels),))
    if objective is not None:
        name = objective
        values = -cached(
            f"objective-{objective}",
            f"store|{store.content_hash}",
            lambda: score_library(labels, name, progress=progress),
            lambda value: value.shape == (len(labels),) and bool(np.all(np.isfinite(value))),
        )
    return ScreeningProblem(
        name=f"{objective or 'an oracle'} on {store.path.name}",
        points=PackedRows(shared_tensor(store.packed()), settings["width"], tf.float64),
        values=values,
        noise_std=noise_std,
        labels=labels,
        num_molecules=store.num_rows,
        index_keys=store.index_keys(),
    )


def screening_regulariser(algorithm: str, scale: float) -> float:
    """The noise variance (regulariser) a noise-free screen adds: 1 % of the kernel variance for
    Thompson sampling and random search, the kernel variance itself (BBKB's lambda = kappa^2
    regime, in which its batches grow; with a small lambda every batch has one point) for the
    UCB and MINI rules."""
    return 0.01 * scale if algorithm in ("ts", "random") else scale


def _valid_kept(kept: np.ndarray, num_smiles: int) -> bool:
    """Indices of parsed molecules: strictly increasing integers within the library."""
    return bool(
        kept.ndim == 1
        and kept.size > 0
        and np.issubdtype(kept.dtype, np.integer)
        and kept[0] >= 0
        and kept[-1] < num_smiles
        and np.all(np.diff(kept) > 0)
    )
