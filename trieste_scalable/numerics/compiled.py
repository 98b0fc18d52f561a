"""The DTC functions compiled once per kernel and dtype.

Every function has an input signature with dynamic dimensions, so it is traced exactly once
however the dictionary, data and candidate counts change over a run (Trieste #178/#191 are the
retracing bugs this avoids). The kernel is captured, so hyperparameter changes need no retrace.
Compiled functions cannot be deep-copied or pickled: owners rebuild this object instead.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import tensorflow as tf

from . import dtc, replicated, svgp
from .evidence import sgpr_evidence
from .linalg import cholesky_rank_one_update, cholesky_rank_one_updates


class CompiledDTC:
    """Compiled DTC numerics for one kernel.

    :param kernel: A GPflow-style kernel.
    :param dtype: The dtype of every tensor argument.
    :param jit_compile: Compile the candidate-scoring functions with XLA.
    """

    def __init__(self, kernel: dtc.Kernel, dtype: tf.DType, jit_compile: bool = False):
        matrix = tf.TensorSpec([None, None], dtype)
        vector = tf.TensorSpec([None], dtype)
        scalar = tf.TensorSpec([], dtype)
        posterior = dtc.DTCPosterior(matrix, vector, matrix, matrix, vector, scalar, scalar)
        self.kernel = kernel
        compile_ = _compiler(kernel, jit_compile)
        self.masked_gram = compile_(dtc.masked_gram, matrix, vector)
        self.embed = compile_(dtc.embed, matrix, matrix, vector, matrix)
        self.marginals = compile_(dtc.marginals, posterior, matrix, xla=True)
        self.covariance = compile_(dtc.covariance, posterior, matrix)
        self.variance = compile_(
            dtc.variance, matrix, matrix, vector, matrix, matrix, scalar, xla=True
        )
        self.local_terms = compile_(dtc.local_terms, posterior, matrix, matrix, xla=True)
        self.data_factor = compile_(
            dtc.data_factor, matrix, vector, vector, matrix, vector, matrix, scalar, scalar
        )
        self.extension_row = compile_(
            dtc.extension_row, matrix, matrix, vector, matrix, tf.TensorSpec([], tf.int32)
        )
        self.rank_one = tf.function(cholesky_rank_one_updates, input_signature=[matrix, matrix])
        self.evidence = compile_(
            sgpr_evidence, matrix, vector, matrix, vector, vector, scalar, scalar, scalar, scalar
        )
        self.exact_evidence = compile_(
            replicated.log_marginal_likelihood, matrix, vector, vector, scalar, scalar, scalar
        )

    def tracing_counts(self) -> dict[str, int]:
        """Traces of each compiled function so far (tests assert these stay at one)."""
        return _tracing_counts(self)


class CompiledReplicated:
    """Compiled numerics of the exact replicated-input GP for one kernel (traced once each)."""

    def __init__(self, kernel: dtc.Kernel, dtype: tf.DType, jit_compile: bool = False):
        matrix = tf.TensorSpec([None, None], dtype)
        vector = tf.TensorSpec([None], dtype)
        scalar = tf.TensorSpec([], dtype)
        posterior = replicated.ReplicatedPosterior(matrix, matrix, vector, scalar)
        self.kernel = kernel
        compile_ = _compiler(kernel, jit_compile)
        self.noisy_gram = compile_(replicated.noisy_gram, matrix, vector, scalar)
        self.marginals = compile_(replicated.marginals, posterior, matrix, xla=True)
        self.covariance = compile_(replicated.covariance, posterior, matrix)
        self.append_input = compile_(replicated.append_input, matrix, matrix, matrix, scalar)
        self.log_marginal_likelihood = compile_(
            replicated.log_marginal_likelihood, matrix, vector, vector, scalar, scalar, scalar
        )
        self.information_gain = compile_(replicated.information_gain, matrix, vector, scalar)
        self.weights = tf.function(replicated.weights, input_signature=[matrix, vector, scalar])
        self.downdate = tf.function(
            partial(cholesky_rank_one_update, downdate=True), input_signature=[matrix, vector]
        )

    def tracing_counts(self) -> dict[str, int]:
        """Traces of each compiled function so far (tests assert these stay at one)."""
        return _tracing_counts(self)


def _compiler(kernel: dtc.Kernel, jit_compile: bool) -> Callable[..., Any]:
    """``compile_(fn, *signature, xla=False)``: ``fn`` with the kernel bound, compiled once for
    ``signature`` (with XLA if both ``xla`` and ``jit_compile``)."""

    def compile_(fn: Callable[..., Any], *signature: Any, xla: bool = False) -> Any:
        return tf.function(
            partial(fn, kernel), input_signature=list(signature), jit_compile=xla and jit_compile
        )

    return compile_


def _tracing_counts(owner: object) -> dict[str, int]:
    return {
        name: fn.experimental_get_tracing_count()
        for name, fn in vars(owner).items()
        if hasattr(fn, "experimental_get_tracing_count")
    }


class CompiledSVGP:
    """Compiled whitened-SVGP numerics for one kernel (each traced once, dynamic shapes)."""

    def __init__(self, kernel: dtc.Kernel, dtype: tf.DType, jit_compile: bool = False):
        matrix = tf.TensorSpec([None, None], dtype)
        vector = tf.TensorSpec([None], dtype)
        scalar = tf.TensorSpec([], dtype)
        posterior = svgp.WhitenedPosterior(matrix, vector, matrix, vector, matrix, scalar)
        self.kernel = kernel
        compile_ = _compiler(kernel, jit_compile)
        self.masked_gram = compile_(dtc.masked_gram, matrix, vector)
        self.optimal_q = compile_(
            svgp.optimal_q, matrix, vector, matrix, matrix, vector, vector, scalar, scalar
        )
        self.marginals = compile_(svgp.marginals, posterior, matrix, xla=True)
        self.covariance = compile_(svgp.covariance, posterior, matrix)
        self.project = compile_(svgp.project, posterior, matrix, vector, matrix, scalar)
        self.elbo = compile_(svgp.elbo, posterior, matrix, vector, vector, scalar, scalar)
        self.greedy_selection = compile_(
            svgp.greedy_variance_selection, matrix, tf.TensorSpec([], tf.int32)
        )
        self.evidence = compile_(
            sgpr_evidence, matrix, vector, matrix, vector, vector, scalar, scalar, scalar, scalar
        )
        self.exact_evidence = compile_(
            replicated.log_marginal_likelihood, matrix, vector, vector, scalar, scalar, scalar
        )

    def tracing_counts(self) -> dict[str, int]:
        """Traces of each compiled function so far (tests assert these stay at one)."""
        return _tracing_counts(self)
