"""Linear-algebra helpers shared by every model: jittered Cholesky, rank-one Cholesky updates,
triangular solves for many right-hand sides, padding to capacity buckets and chunked maps over
candidate sets.

Pure TensorFlow: nothing here imports Trieste or touches a model object.
"""

from __future__ import annotations

from typing import Callable, Protocol, Sequence

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes

from .cores import usable_cores
from .host_tensors import host_tensor, row_slice


class CholeskyError(ValueError):
    """Raised when a matrix is not positive definite even after the largest allowed jitter."""


def jittered_cholesky(
    matrix: tf.Tensor,
    initial_jitter: float = 1e-12,
    max_jitter: float = 1e-2,
    factor: float = 10.0,
) -> tuple[tf.Tensor, float]:
    """Cholesky factor of ``matrix + jitter * mean(diag) * I``, escalating the jitter on failure.

    Must run eagerly (it catches the failure of one attempt and retries); call it between the
    compiled pieces. On CPU a failed factorisation raises, on GPU it returns NaNs: both count as
    failure.

    :param matrix: Symmetric matrix of shape [M, M].
    :param initial_jitter: First relative jitter tried (0 is allowed and tried first if given).
    :param max_jitter: Largest relative jitter before giving up.
    :param factor: Multiplicative escalation of the jitter.
    :return: The lower Cholesky factor [M, M] and the relative jitter that succeeded.
    :raise CholeskyError: If no jitter up to ``max_jitter`` gives a finite factor.
    """
    if not tf.executing_eagerly():
        raise RuntimeError("jittered_cholesky escalates in Python and must be called eagerly")
    matrix = tf.convert_to_tensor(matrix)
    size = tf.shape(matrix)[-1]
    if size == 0:
        return tf.zeros_like(matrix), 0.0
    scale = tf.reduce_mean(tf.abs(tf.linalg.diag_part(matrix)))
    scale = tf.where(scale > 0, scale, tf.ones_like(scale))
    eye = tf.eye(size, dtype=matrix.dtype)
    jitter = initial_jitter
    while jitter <= max_jitter * (1 + 1e-9):
        try:
            chol = tf.linalg.cholesky(matrix + tf.cast(jitter, matrix.dtype) * scale * eye)
            if bool(tf.reduce_all(tf.math.is_finite(chol))):
                return chol, jitter
        except tf.errors.InvalidArgumentError:
            pass
        jitter = jitter * factor if jitter > 0 else 1e-12
    raise CholeskyError(
        f"matrix of size {int(size)} is not positive definite even with relative jitter "
        f"{max_jitter:g}; is the kernel positive semi-definite and are its parameters finite?"
    )


@check_shapes("matrix: [M, M]", "return: [M, M]")
def lower_root_of_inverse(matrix: tf.Tensor) -> tf.Tensor:
    """Lower-triangular :math:`R` with :math:`R R^T = A^{-1}` for a positive definite :math:`A`
    (a whitened q's square root from a precision), with no explicit inverse: :math:`R = J U^{-T}
    J` where :math:`U U^T = J A J` and :math:`J` reverses the order (triangular solves only)."""
    flipped = tf.linalg.cholesky(tf.reverse(matrix, axis=[0, 1]))
    eye = tf.eye(tf.shape(matrix)[0], dtype=matrix.dtype)
    root = tf.linalg.triangular_solve(flipped, eye, lower=True, adjoint=True)  # U^{-T}, upper
    return tf.reverse(root, axis=[0, 1])


def cholesky_with_jitter(matrix: tf.Tensor, jitter: tf.Tensor | float) -> tf.Tensor:
    """Cholesky factor of ``matrix + jitter * I`` [M, M] for an absolute jitter settled
    beforehand (by :func:`jittered_cholesky`, or a fixed floor): graph-safe, for compiled code."""
    eye = tf.eye(tf.shape(matrix)[-1], dtype=matrix.dtype)
    return tf.linalg.cholesky(matrix + tf.cast(jitter, matrix.dtype) * eye)


@check_shapes(
    "chol: [M, M]",
    "vector: [M]",
    "return: [M, M]",
)
def cholesky_rank_one_update(
    chol: tf.Tensor, vector: tf.Tensor, downdate: bool = False
) -> tf.Tensor:
    r"""Cholesky factor of :math:`L L^T \pm v v^T` in O(M^2), without a loop over columns.

    With :math:`p = L^{-1} v` and sign :math:`s = \pm 1`, :math:`L L^T + s v v^T = L (I + s p
    p^T) L^T`, and the Cholesky factor of :math:`I + s p p^T` is known in closed form: with
    :math:`s_k = 1 + s \sum_{i \le k} p_i^2`, :math:`G_{jj} = \sqrt{s_j / s_{j-1}}` and
    :math:`G_{ij} = s\,p_i p_j / \sqrt{s_j s_{j-1}}` for :math:`i > j`. So :math:`L G =
    L\,\mathrm{diag}(G_{jj}) + R\,\mathrm{diag}(q)` with :math:`q_j = s\,p_j/\sqrt{s_j s_{j-1}}`
    and :math:`R_{ik} = \sum_{j > k} L_{ij} p_j` (a reversed cumulative sum). This replaces
    ``tfp.math.cholesky_update``, whose column-by-column graph loop costs tens of times as much
    on a CPU. A downdate requires the result to stay positive definite.
    """
    sign = -1.0 if downdate else 1.0
    p = tf.linalg.triangular_solve(chol, vector[:, None], lower=True)[:, 0]  # [M]
    s = 1.0 + sign * tf.cumsum(p**2)  # s_k, k = 1..M
    s_prev = tf.concat([tf.ones([1], dtype=s.dtype), s[:-1]], axis=0)  # s_{k-1}
    diag = tf.sqrt(s / s_prev)
    q = sign * p / tf.sqrt(s * s_prev)
    tail = tf.cumsum(chol * p[None, :], axis=1, exclusive=True, reverse=True)  # [M, M]
    return chol * diag[None, :] + tail * q[None, :]


SOLVE_PARTS_MIN_COLUMNS = 256
"""Right-hand sides per part below which :func:`solve_lower` solves them in one piece."""


def _solve_parts() -> int:
    """Parts :func:`solve_lower` splits its right-hand sides into: one per CPU core this process
    may use (at most 8), or one where a GPU takes the solve."""
    if tf.config.list_logical_devices("GPU"):
        return 1
    return min(usable_cores(), 8)


@check_shapes("lower: [M, M]", "rhs: [M, N]", "return: [M, N]")
def solve_lower(lower: tf.Tensor, rhs: tf.Tensor) -> tf.Tensor:
    """:math:`L^{-1} B` for a lower-triangular ``lower`` and many columns ``rhs``.

    TensorFlow's CPU kernel solves one system on about one core, and spreads a batch of systems
    over all of them: with the columns split into one batch member per core (when there are
    at least 256 a member), the solve runs faster and gives the same columns (measured:
    ``benchmarks/results/design_measurements.md``).
    """
    parts = _solve_parts()
    num = tf.shape(rhs)[1]
    if parts == 1:
        return tf.linalg.triangular_solve(lower, rhs, lower=True)

    def split() -> tf.Tensor:
        size = -(-num // parts)
        padded = tf.pad(rhs, [[0, 0], [0, size * parts - num]])
        members = tf.transpose(tf.reshape(padded, [-1, parts, size]), [1, 0, 2])  # [P, M, K]
        solved = tf.linalg.triangular_solve(lower[None], members, lower=True)
        return tf.reshape(tf.transpose(solved, [1, 0, 2]), [-1, size * parts])[:, :num]

    return tf.cond(
        num >= parts * SOLVE_PARTS_MIN_COLUMNS,
        split,
        lambda: tf.linalg.triangular_solve(lower, rhs, lower=True),
    )


class SliceableRows(Protocol):
    """Rows [N, D] that slice to dense tensors: a tensor, or packed rows
    (:class:`~trieste_scalable.numerics.bits.PackedRows`)."""

    @property
    def shape(self) -> tf.TensorShape: ...

    def __getitem__(self, rows: slice) -> tf.Tensor: ...


def chunked_map(
    fn: Callable[[tf.Tensor], Sequence[tf.Tensor] | tf.Tensor],
    points: tf.Tensor | SliceableRows,
    chunk_size: int,
) -> list[tf.Tensor]:
    """Apply ``fn`` to ``points`` in chunks of ``chunk_size`` rows and concatenate the results.

    Every chunk has exactly ``chunk_size`` rows (the last one is padded by repeating its final
    row, and the padding is cut off the output), so a compiled ``fn`` is traced once. Peak memory
    is that of one chunk, not of the whole candidate set. The loop is over chunks, never over
    individual candidates.

    :param fn: Maps [chunk_size, D] to a tensor or a sequence of tensors with leading dim
        chunk_size.
    :param points: Inputs [N, D]; packed rows are unpacked one chunk at a time.
    :param chunk_size: Rows per call.
    :return: The list of outputs of ``fn``, each concatenated to leading dim N.
    """
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    num_points = points.shape[0]
    if not num_points:  # none, or a dynamic number inside a graph: one call
        outputs = fn(points)
        return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    pieces: list[list[tf.Tensor]] = []
    size = min(chunk_size, num_points)
    # slices and padding through host_tensors: eager slicing with Python numbers leaks (1 KB a
    # slice, 6 KB a tf.repeat), and a campaign maps chunks hundreds of times an ask
    for start in range(0, num_points, size):
        chunk = row_slice(points, start, min(start + size, num_points))
        valid = int(chunk.shape[0])
        if valid < size:  # the last row repeated
            chunk = tf.gather(chunk, host_tensor(np.minimum(np.arange(size), valid - 1)))
        outputs = fn(chunk)
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        pieces.append([out if valid == size else row_slice(out, 0, valid) for out in outputs])
    return [tf.concat([piece[i] for piece in pieces], axis=0) for i in range(len(pieces[0]))]


def pad_rows(values: np.ndarray | tf.Tensor, capacity: int, fill: float = 0.0) -> tf.Tensor:
    """Pad the leading dimension of ``values`` to ``capacity`` with ``fill``."""
    values = tf.convert_to_tensor(values)
    missing = capacity - int(values.shape[0])
    if missing < 0:
        raise ValueError(f"cannot pad {int(values.shape[0])} rows into capacity {capacity}")
    paddings = [[0, missing]] + [[0, 0]] * (len(values.shape) - 1)
    return tf.pad(values, paddings, constant_values=fill)
