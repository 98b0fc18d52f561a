"""A virtual-screening campaign as a discrete minimisation problem: candidates are the unique
fingerprints of a molecular library, the objective a built-in property computed once for the
whole library or a score table (:mod:`.score_table`), so recall of the best molecules can be
scored, or an oracle known only where evaluated.

Direction: the user's scores are higher-is-better (the default) or lower-is-better (docking
energies, ``--lower-is-better``); ``values`` are always what Trieste minimises, and
:meth:`ScreeningProblem.user_value` is the one conversion back to the user's units."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf

from ..chemistry.labels import Labels
from ..chemistry.molecules import (
    DEFAULT_FINGERPRINT,
    DEFAULT_RADIUS,
    DEFAULT_WIDTH,
    OBJECTIVES,
    check_fingerprint,
    fingerprint_width,
    load_smiles,
)
from ..errors import UsageError
from ..numerics.bits import PackedRows, aligned_rows, pack_rows, shared_tensor
from ..numerics.rows import first_occurrences
from ..packed_space import PackedSearchSpace
from ..stores.cache import cached
from ..stores.featurise import fingerprint_library, score_library
from ..stores.store import LibraryStore, is_store
from .score_table import is_score_table, table_scores
from .synthetic import DiscreteProblem, values_bytes
from .top_k import TOP_K, top_k_curve, top_k_found


@dataclass(frozen=True)
class ScreeningProblem(DiscreteProblem):
    """Minimise minus a molecular property over a library.

    Molecules with identical fingerprints are indistinguishable to the model, so each unique
    fingerprint is one candidate, labelled with (and scored as) its first molecule. The
    candidates stay bit-packed (``points`` are :class:`~trieste_scalable.numerics.bits.PackedRows`
    in float64, the search space a :class:`~trieste_scalable.packed_space.PackedSearchSpace`
    sharing their memory): a library takes D / 8 bytes a molecule, not 8 D.

    :ivar labels: SMILES of each candidate [A] (held compactly: :class:`.labels.Labels`).
    :ivar higher_is_better: The user's direction: ``values`` are minus the user's scores where
        higher is better, the scores themselves where lower is.
    :ivar source: Where the scores come from, named in a failed evaluation's reason (e.g. the
        score table's path) for a candidate whose value is NaN.
    :ivar num_molecules: Parsed molecules in the library (before fingerprint deduplication).
    :ivar index_keys: The candidates' row index keys (``index_keys``
        [2, A]) if known (a library store's, memory-mapped), so the index reads no candidate's
        bits to be built.
    """

    labels: Labels = field(default_factory=lambda: Labels([]))
    num_molecules: int = 0
    index_keys: Optional[np.ndarray] = field(default=None, repr=False, compare=False)
    higher_is_better: bool = True  # type: ignore[misc]  # a field here, class-wide above
    source: str = ""

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

    def user_value(self, value: float) -> float:
        return -float(value) if self.higher_is_better else float(value)

    @property
    def values_known(self) -> bool:
        """Whether any candidate's value is known up front (a built-in property or a score
        table, NaN where it has no score), so recall can be scored."""
        return bool(np.any(np.isfinite(self.values)))

    def objective(self, seed: int) -> Callable[[int], float]:
        """The noisy value of a candidate by its index; a candidate without a value (a score
        table's unscored molecule) fails with a reason naming it."""
        observe = super().objective(seed)

        def checked(index: int) -> float:
            if np.isnan(self.values[index]):
                raise LookupError(
                    f"{self.source or 'the objective'} has no score for this molecule"
                )
            return observe(index)

        return checked

    def recall_curve(self, evaluated: np.ndarray, fraction: float) -> np.ndarray:
        """Recall of the top ``fraction`` of the scored candidates after each of the
        ``evaluated`` indices [N] (:func:`~.top_k.top_k_curve`)."""
        size = max(1, int(np.ceil(fraction * np.isfinite(self.values).sum())))
        return top_k_curve(self.values, evaluated, size)

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

    takes_extra_molecules = True
    """The chemist's own molecules can be told to its model (``tell --extra``)."""

    def identity_columns(self) -> list[str]:
        return ["smiles"]

    def identity(self, index: int) -> list[str]:
        return [str(self.labels[index])]

    def proposed_index(self, rows: Sequence[Mapping[str, str]]) -> list[Optional[int]]:
        """The candidate whose label is each row's ``smiles`` (a SMILES as the library wrote
        it): what a batch file lists, should a campaign's records lose it."""
        wanted = {row.get("smiles", "") for row in rows}
        index = {label: n for n, label in enumerate(self.labels) if label in wanted}
        return [index.get(row.get("smiles", "")) for row in rows]

    def candidate_name(self, index: int) -> str:
        """A name the reports show beside the candidate's SMILES (none: an enumerated library's
        molecules are known by their SMILES)."""
        return ""

    def identity_matches(self, index: np.ndarray, logged: list[list[str]]) -> np.ndarray:
        return np.array([row == [self.labels[i]] for i, row in zip(index, logged)], dtype=bool)

    def metrics(self, evaluated: np.ndarray) -> dict[str, float]:
        """MolPAL's measures and the recalls; none where the library's scores are unknown."""
        if not self.values_known:
            return {}
        found = top_k_found(self.values, evaluated, TOP_K)
        return {
            "recall_top1pct": self.recall(evaluated, 0.01),
            "recall_top10pct": self.recall(evaluated, 0.1),
            f"top{TOP_K}_smiles": found.smiles,
            f"top{TOP_K}_scores": found.scores,
        }


def screening_problem(
    library: str = "moses-20k",
    objective: Optional[str] = "celecoxib-mpo",
    fingerprint: str = DEFAULT_FINGERPRINT,
    radius: int = DEFAULT_RADIUS,
    size: int = DEFAULT_WIDTH,
    noise_std: float = 0.0,
    skip_invalid: bool = False,
    progress: bool = False,
    higher_is_better: bool = True,
) -> ScreeningProblem:
    """Parse, featurise (cached) and score (cached) a library, in chunks on every core
    (:mod:`.featurise`).

    :param library: A built-in library's name, a SMILES file or a library store's directory
        (:mod:`.store`: featurised already, duplicates removed, checked against its hashes).
    :param objective: A built-in property, a score table (``table:FILE[:COLUMN]``,
        :mod:`.score_table`: NaN where it has no score) or ``None`` for an objective known only
        where it is evaluated (``values`` are then NaN: evaluations come from an oracle).
    :param fingerprint: A kind of :data:`~.molecules.FINGERPRINTS`, ``radius`` (Morgan's) and
        ``size`` (bits, before the unary encoding of counts) its settings.
    :param higher_is_better: The direction of the user's scores (module docstring).
    :raise UsageError: On an unknown objective or fingerprint, an empty library, unparseable
        SMILES or a score table that cannot be used.
    """
    _check_settings(objective, fingerprint, radius, size, noise_std)
    if is_store(library):
        store = LibraryStore(library)
        return _store_problem(store, objective, fingerprint, noise_std, progress, higher_is_better)
    smiles = load_smiles(library)
    key = "\n".join(smiles)
    kept, packed = _fingerprints(
        smiles, key, (fingerprint, radius, size), skip_invalid=skip_invalid, progress=progress
    )
    width = fingerprint_width(fingerprint, size)
    scores = np.full(kept.size, np.nan)
    if objective is not None and not is_score_table(objective):
        name = objective
        scores = cached(
            f"objective-{objective}",
            f"{key}|{skip_invalid}",
            lambda: score_library([smiles[i] for i in kept], name, progress=progress),
            lambda value: value.shape == (kept.size,) and bool(np.all(np.isfinite(value))),
        )
    first = first_occurrences(packed)
    labels = Labels(smiles, kept[first])
    values, source = _values(objective, labels, scores[first], higher_is_better, progress)
    return ScreeningProblem(
        name=f"{objective or 'an oracle'} on {library}",
        # the rows a campaign reads, without the dense matrix, in memory shared with TensorFlow
        # and the search space
        points=PackedRows(shared_tensor(aligned_rows(packed, first)), width, tf.float64),
        values=values,
        noise_std=noise_std,
        labels=labels,
        num_molecules=int(kept.size),
        higher_is_better=higher_is_better,
        source=source,
    )


def _check_settings(
    objective: Optional[str], fingerprint: str, radius: int, size: int, noise_std: float
) -> None:
    """:raise UsageError: On an unknown objective or fingerprint, or a negative noise."""
    if objective is not None and objective not in OBJECTIVES and not is_score_table(objective):
        raise UsageError(
            f"unknown objective {objective!r}: choose from {sorted(OBJECTIVES)} or "
            "table:FILE[:COLUMN]"
        )
    check_fingerprint(fingerprint, radius, size)
    if noise_std < 0:
        raise UsageError(f"noise must be non-negative, got {noise_std}")


def _fingerprints(
    smiles: list[str],
    key: str,
    settings: tuple[str, int, int],
    *,
    skip_invalid: bool,
    progress: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """The indices of the SMILES kept [K] and their packed fingerprints [K, ceil(W / 8)], each
    from the cache or computed (once for both) and cached; ``settings`` are the fingerprint's
    kind, radius and size."""
    fingerprint, radius, size = settings
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
    return kept, packed


def _values(
    objective: Optional[str],
    labels: Labels,
    scores: np.ndarray,
    higher_is_better: bool,
    progress: bool,
) -> tuple[np.ndarray, str]:
    """What Trieste minimises [A] for candidates ``labels`` [A] whose built-in property is
    ``scores`` (NaN for an oracle's), or a score table's values where ``objective`` is one, and
    the values' source (the table) for failed evaluations' reasons."""
    if objective is None:  # minus NaN, the bits a campaign's content hash has always read
        return np.broadcast_to(-np.float64(np.nan), scores.shape), ""
    source = ""
    if objective is not None and is_score_table(objective):
        scores, source = (
            table_scores(objective, list(labels), higher_is_better, progress),
            objective,
        )
    return (-scores if higher_is_better else scores), source


def _store_problem(
    store: LibraryStore,
    objective: Optional[str],
    fingerprint: str,
    noise_std: float,
    progress: bool,
    higher_is_better: bool,
) -> ScreeningProblem:
    """The problem over a library store: its rows memory-mapped from one cached file
    (:meth:`~.store.LibraryStore.packed`) and indexed by their cached, mapped hashes, so the process
    holds only the pages it reads; its SMILES as labels (read a shard at a time); a built-in
    objective's values computed once per store and cached."""
    settings = store.fingerprint
    if settings["kind"] != fingerprint:
        raise UsageError(
            f"{store.path} holds {settings['kind']} fingerprints ({settings['size']} bits, radius "
            f"{settings['radius']}), not {fingerprint}: pass --fingerprint {settings['kind']}"
        )
    store.verify()
    labels = store.labels()
    # an objective known only where it is evaluated: one NaN for every row, not N floats
    scores = np.broadcast_to(np.float64(np.nan), (len(labels),))
    if objective is not None and not is_score_table(objective):
        name = objective
        scores = cached(
            f"objective-{objective}",
            f"store|{store.content_hash}",
            lambda: score_library(labels, name, progress=progress),
            lambda value: value.shape == (len(labels),) and bool(np.all(np.isfinite(value))),
        )
    values, source = _values(objective, labels, scores, higher_is_better, progress)
    return ScreeningProblem(
        name=f"{objective or 'an oracle'} on {store.path.name}",
        points=PackedRows(shared_tensor(store.packed()), settings["width"], tf.float64),
        values=values,
        noise_std=noise_std,
        labels=labels,
        num_molecules=store.num_rows,
        index_keys=store.index_keys(),
        higher_is_better=higher_is_better,
        source=source,
    )


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
