"""Dictionary (inducing-point) policies for :class:`~trieste_scalable.models.NystromGPR`.

A policy picks the dictionary among the unique evaluated inputs at every ``update`` (a batch
boundary). It is injected into the model and owns its random generator, so dictionaries are
reproducible from a seed and independent of TensorFlow's global seed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable, Literal, Optional

import numpy as np
import tensorflow as tf

from ..numerics.binary_products import SPARSE_MAX_DENSITY, OnBits, binary_products_route
from ..numerics.bits import PackedRows, gather_rows
from ..numerics.dtc import CompiledDTC
from ..numerics.host_tensors import host_tensor
from ..numerics.linalg import chunked_map
from ..numerics.sizes import CHUNK_SIZE


class DictionaryPolicy(ABC):
    """Chooses which unique evaluated inputs form the dictionary."""

    #: Whether the dictionary always holds every evaluated input (then the posterior is exact,
    #: and in-batch hallucinated points join the dictionary too).
    exact: bool = False

    #: Whether the dictionary is a random draw, so that one holding every input is chance, not
    #: the policy's promise (GP-BUCB's stopping rule, which needs it exact, refuses such a policy).
    draws_at_random: bool = False

    #: Whether ``choose`` reads the batch-start variances (the model computes them, a
    #: prediction at every evaluated input, only for a policy that does).
    reads_variances: bool = True

    def select(self, counts: np.ndarray, batch_start_variances: np.ndarray) -> np.ndarray:
        """Indices of the unique inputs to keep; never empty if there is at least one input.

        :param counts: Evaluations of each unique input [n].
        :param batch_start_variances: Ridge-leverage variance of each unique input under the
            posterior of the batch that just ended (old dictionary, old data) [n].
        :return: Sorted indices into the unique inputs.
        """
        if counts.shape != batch_start_variances.shape or counts.ndim != 1:
            raise ValueError(
                f"counts and variances must be vectors of one length, got {counts.shape} and "
                f"{batch_start_variances.shape}"
            )
        if counts.size == 0:
            return np.zeros([0], dtype=np.int64)
        return self._select(counts, batch_start_variances)

    @abstractmethod
    def _select(self, counts: np.ndarray, batch_start_variances: np.ndarray) -> np.ndarray:
        """Template method: the selection itself, for a non-empty input."""

    def choose(
        self,
        inputs: np.ndarray | tf.Tensor,
        counts: np.ndarray,
        batch_start_variances: np.ndarray,
        ops: CompiledDTC,
    ) -> np.ndarray:
        """What the model calls: ``select``, for policies that need only the counts and
        variances; a policy that reads the inputs themselves (their kernel) overrides it.

        :param inputs: The unique evaluated inputs [n, D] (a tensor is used as it is).
        :param ops: The model's compiled numerics (its kernel's).
        """
        return self.select(counts, batch_start_variances)

    def is_exact(self, num_selected: int, num_inputs: int) -> bool:
        """Whether a dictionary of ``num_selected`` of ``num_inputs`` inputs makes the posterior
        exact, so in-batch points join it (``exact`` for the policies that decide it once)."""
        return self.exact

    def inputs_drawn_among(self, num_inputs: int) -> Optional[int]:
        """How many of ``num_inputs`` (the first) the draw reads, where it reads only them and
        the kernel (then a model whose data grew by appending keeps its dictionary while this
        number stays); ``None``: the policy draws at every update."""
        return None


class ExactDictionary(DictionaryPolicy):
    """Keep every evaluated input: the Nystrom posterior is then the exact GP posterior.

    This is how GP-BUCB runs, and what a Trieste user gets from an exact GPR, with a cost that
    depends on the number of unique inputs rather than evaluations.
    """

    exact = True
    reads_variances = False

    def _select(self, counts: np.ndarray, batch_start_variances: np.ndarray) -> np.ndarray:
        return np.arange(counts.size)

    def __repr__(self) -> str:
        return "ExactDictionary()"


class RidgeLeverageSampler(DictionaryPolicy):
    r"""Posterior-variance (ridge-leverage-score) sampling, BKB's and BBKB's resparsification.

    Each unique input :math:`i` with :math:`n_i` evaluations enters independently with
    probability :math:`p_i = \min(1, \bar q\,\tilde\sigma^2_{fb}(x_i))` per evaluation (BBKB
    Algorithm 1, lines 12-15, with the batch-start variances). Repeats combine either exactly,
    :math:`1 - (1 - p_i)^{n_i}` (``"exact"``, the distribution of the set under one draw per
    evaluation), or as the authors' code does, :math:`\min(1, n_i \bar q \tilde\sigma^2)`
    (``"union"``). BKB and BBKB share this rule, so BBKB with
    :math:`\\tilde C = 1` reproduces BKB.

    If no input is drawn, the one with the largest probability is kept (an empty
    dictionary would leave the posterior at the prior). A draw that keeps every input makes
    the posterior exact, and then the batch's hallucinated points join the dictionary as
    GP-BUCB's do (:meth:`is_exact`).
    """

    draws_at_random = True

    def __init__(
        self,
        oversampling: float = 2.0,
        repeats: Literal["exact", "union"] = "exact",
        seed: Optional[int] = None,
    ):
        """
        :param oversampling: :math:`\\bar q > 0` (the papers' experiments use 2).
        :param repeats: How repeated evaluations combine, ``"exact"`` or ``"union"``.
        :param seed: Seed of the policy's own random generator; by default one drawn from
            NumPy's global generator, so ``np.random.seed`` reproduces a run as it does
            Trieste's.
        """
        if not oversampling > 0:
            raise ValueError(f"oversampling must be positive, got {oversampling}")
        if repeats not in ("exact", "union"):
            raise ValueError(f"repeats must be 'exact' or 'union', got {repeats!r}")
        self.oversampling = float(oversampling)
        self.repeats = repeats
        self._rng = np.random.default_rng(seed if seed is not None else np.random.randint(2**31))

    def inclusion_probabilities(
        self, counts: np.ndarray, batch_start_variances: np.ndarray
    ) -> np.ndarray:
        """Probability [n] that each unique input enters the dictionary."""
        per_draw = np.clip(self.oversampling * batch_start_variances, 0.0, 1.0)
        if self.repeats == "union":
            return np.minimum(1.0, per_draw * counts)
        return 1.0 - (1.0 - per_draw) ** counts

    def _select(self, counts: np.ndarray, batch_start_variances: np.ndarray) -> np.ndarray:
        probabilities = self.inclusion_probabilities(counts, batch_start_variances)
        chosen = np.flatnonzero(self._rng.uniform(size=probabilities.shape) < probabilities)
        if chosen.size == 0:
            chosen = np.array([int(np.argmax(probabilities))])
        return chosen

    def is_exact(self, num_selected: int, num_inputs: int) -> bool:
        """Whether the draw kept every input. Frozen for a batch, a full dictionary would see a
        hallucinated point only through its projection on the evaluated points' span, where a
        point far from them barely lowers its own variance, so the next pick repeats it or
        lands beside it (in Trieste's noise-free loops, where the draw nearly always keeps
        every point, BBKB on ScaledBranin met Trieste's criterion at 1 of 5 seeds that way, at
        4 of 5 with the points joining: ``benchmarks/trieste_criterion.py``)."""
        return num_selected == num_inputs

    def __repr__(self) -> str:
        return f"RidgeLeverageSampler(oversampling={self.oversampling}, repeats={self.repeats!r})"


Columns = Callable[[tf.Tensor], tf.Tensor]
"""The kernel columns [n, b] of a draw's inputs against anchors [b, D]."""


def _prior_and_columns(ops: CompiledDTC, inputs: PackedRows) -> tuple[tf.Tensor, Columns]:
    """The prior variances [n] of packed ``inputs`` and their :data:`Columns`.

    With a binary Tanimoto kernel on a CPU (the sparse route of
    :mod:`~trieste_scalable.numerics.binary_products`), each chunk of inputs is unpacked once
    for the whole draw and kept as its on-bits, which each block of pivots multiplies: unpacked
    again for every block, the inputs were a third of a draw's time (at 10,000 evaluations, 16,000
    inputs unpacked ten times: ``benchmarks/results/design_measurements.md``). A chunk with more
    than :data:`~trieste_scalable.numerics.binary_products.SPARSE_MAX_DENSITY` of its bits on is
    unpacked for every block instead, as every chunk is elsewhere."""

    def unpacked(start: int) -> tf.Tensor:
        return inputs[start : start + CHUNK_SIZE]

    read_on_bits, on_bits_columns = ops.on_bits, ops.on_bits_columns
    if read_on_bits is None or on_bits_columns is None or binary_products_route() != "sparse":
        prior = chunked_map(lambda x: ops.kernel(x, full_cov=False), inputs, CHUNK_SIZE)[0]
        return prior, lambda anchors: chunked_map(
            lambda x: ops.kernel_columns(x, anchors), inputs, CHUNK_SIZE
        )[0]
    priors, parts = [], []
    for start in range(0, len(inputs), CHUNK_SIZE):
        chunk = unpacked(start)
        priors.append(ops.kernel(chunk, full_cov=False))
        on = read_on_bits(chunk)
        sparse = int(tf.shape(on.rows.indices)[0]) <= SPARSE_MAX_DENSITY * int(tf.size(chunk))
        parts.append(on if sparse else start)

    def columns(anchors: tf.Tensor) -> tf.Tensor:
        return tf.concat(
            [
                on_bits_columns(part, anchors)
                if isinstance(part, OnBits)
                else ops.kernel_columns(unpacked(part), anchors)
                for part in parts
            ],
            axis=0,
        )

    return tf.concat(priors, axis=0), columns


_SEEDS = 2**31 - 1
"""Stateless seeds are int32 pairs: their parts are taken modulo this."""


class PivotedCholeskyDictionary(DictionaryPolicy):
    """At most ``size`` inputs: every input while there are no more (the posterior is then
    exact, and so are its in-batch updates: GP-BUCB's), else ``size`` drawn by block randomly
    pivoted Cholesky (:mod:`~trieste_scalable.numerics.pivoted_cholesky`), each block with
    probabilities proportional to the prior variance the pivots drawn before leave unexplained.

    So the posterior over n evaluations costs what an exact GP over ``size`` points does, and the
    rules that read it (GP-BUCB's hallucinated batches) cost in proportion to ``size`` a
    candidate, whatever n; the data all enter through the DTC projection (eqs. 1-2).

    Past ``size`` inputs, the pivots are drawn among the first :meth:`drawn_among` of them, a
    number that grows by ``growth`` (1,000, 1,050, 1,102, ... at ``size`` 1,000), seeded by it:
    a model whose data grew by appending keeps its dictionary until that number changes
    (``NystromGPR.update`` then skips the draw, most of an update's
    cost at 10,000 evaluations: batches of 100 draw every fifth batch there), and a rerun, or a
    resumed campaign, draws the same dictionaries. The inputs evaluated since the last draw, at
    most a twenty-first of them at the default growth, enter through the projection only, until
    the next; batches larger than that growth draw at every update, as before.

    Over packed inputs (:class:`~trieste_scalable.numerics.bits.PackedRows`, a campaign's
    fingerprints), the kernel columns are computed a chunk of inputs at a time, and the pivots
    are drawn among at most ``candidates`` times ``size`` inputs, a uniform draw seeded as the
    pivots are (all of them below that): the pivots' rows, ``size`` floats an input, are then
    bounded however many evaluations there are (128 MB at ``size`` 1,000, where 100,000
    evaluations would take 800 MB). Which inputs are pivots is then a heuristic beyond that
    point; every input still enters the posterior through the projection.

    :param size: m, the dictionary's size.
    :param block: Pivots a block.
    :param seed: Seed of the draws.
    :param candidates: Over packed inputs, the inputs the pivots are drawn among, per pivot.
    :param growth: The factor by which the inputs drawn among grow between draws (> 1).
    """

    reads_variances = False

    def __init__(
        self, size: int, block: int = 100, seed: int = 0, candidates: int = 16, growth: float = 1.05
    ):
        checked = (("dictionary size", size), ("block", block), ("candidates", candidates))
        for name, value in checked:
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"the {name} must be a positive integer, got {value!r}")
        if not (np.isfinite(growth) and growth > 1):
            raise ValueError(f"growth must be finite and > 1, got {growth!r}")
        self.size, self.block, self.seed, self.candidates = size, block, seed, candidates
        self.growth = float(growth)

    def drawn_among(self, num: int) -> int:
        """How many of ``num`` inputs (the first) the pivots are drawn among: all while there are
        at most ``size``, else the largest of ``size``, ``int(size * growth)``, ... (each term
        ``int`` of the last times ``growth``) not above ``num``."""
        among = min(num, self.size)
        while num > self.size and max(int(among * self.growth), among + 1) <= num:
            among = max(int(among * self.growth), among + 1)
        return among

    def inputs_drawn_among(self, num_inputs: int) -> Optional[int]:
        """:meth:`drawn_among` past ``size`` inputs; ``None`` up to it (every input is kept)."""
        return self.drawn_among(num_inputs) if num_inputs > self.size else None

    def choose(
        self,
        inputs: np.ndarray | tf.Tensor | PackedRows,
        counts: np.ndarray,
        batch_start_variances: np.ndarray,
        ops: CompiledDTC,
    ) -> np.ndarray:
        if inputs.shape[0] != counts.shape[0]:
            raise ValueError(f"{inputs.shape[0]} inputs but {counts.shape[0]} counts")
        if counts.size <= self.size:
            return np.arange(counts.size)
        num = self.drawn_among(counts.size)
        if isinstance(inputs, PackedRows):
            return self._choose_packed(
                PackedRows(inputs.bits[:num], inputs.width, inputs.dtype), ops
            )
        points = tf.convert_to_tensor(inputs)[:num]  # a tensor given is not copied
        residual = ops.kernel(points, full_cov=False)
        rows = tf.zeros([self.size, num], dtype=points.dtype)
        picked = []
        for start in range(0, self.size, self.block):
            count = min(self.block, self.size - start)
            seed = self._seed_of(num, start)
            rows, residual, chosen = ops.pivot_block(points, rows, residual, start, count, seed)
            picked.append(chosen.numpy())
        return np.sort(np.concatenate(picked))

    def _choose_packed(self, inputs: PackedRows, ops: CompiledDTC) -> np.ndarray:
        """:meth:`choose` among packed inputs (class docstring): the same draws as among their
        dense rows where there are at most ``candidates * size`` of them."""
        num = len(inputs)
        among = np.arange(num)
        if num > self.candidates * self.size:
            rng = np.random.default_rng([self.seed, num])
            among = np.sort(rng.choice(num, self.candidates * self.size, replace=False))
            num_bytes = int(inputs.bits.shape[1])
            bits = gather_rows(inputs.bits, host_tensor(among), num_bytes)
            inputs = PackedRows(bits, inputs.width, inputs.dtype)
        residual, columns_of = _prior_and_columns(ops, inputs)
        rows = tf.zeros([self.size, len(among)], dtype=inputs.dtype)
        picked = []
        for start in range(0, self.size, self.block):
            count = min(self.block, self.size - start)
            chosen = ops.draw_pivots(residual, count, self._seed_of(num, start))
            columns = columns_of(inputs.gather(chosen))
            rows, residual = ops.add_pivots(columns, rows, residual, start, chosen)
            picked.append(chosen.numpy())
        return np.sort(among[np.concatenate(picked)])

    def _seed_of(self, num: int, start: int) -> tf.Tensor:
        """The stateless seed [2] of the block starting at pivot ``start`` among ``num``
        inputs."""
        draw = (num * self.size + start) % _SEEDS
        return host_tensor([self.seed % _SEEDS, draw], tf.int32)

    def _select(self, counts: np.ndarray, batch_start_variances: np.ndarray) -> np.ndarray:
        raise TypeError("PivotedCholeskyDictionary chooses from the inputs: call choose")

    def is_exact(self, num_selected: int, num_inputs: int) -> bool:
        return num_selected == num_inputs

    def __repr__(self) -> str:
        return (
            f"PivotedCholeskyDictionary(size={self.size}, block={self.block}, growth={self.growth})"
        )
