"""Compiling the numerics once per kernel and dtype.

Every compiled function has an input signature with dynamic dimensions, so it is traced exactly
once however the dictionary, data and candidate counts change over a run (Trieste #178/#191 are
the retracing bugs this avoids). The kernel is captured, so hyperparameter changes need no
retrace. Compiled functions cannot be deep-copied or pickled: owners rebuild them instead.

Each is called through its concrete function (:class:`Compiled`): a ``tf.function`` call binds
and casts every tensor of its structured arguments against the signature before dispatch, about
twice the cost of calling the concrete function, and a batch rule makes several calls per pick
(measured: ``benchmarks/results/design_measurements.md``).

AutoGraph is off: the numerics loop with explicit ``tf.while_loop`` and branch on Python values
only, and converting the source of everything a function calls was most of a first call's
cost.
"""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf


class Compiled:
    """``fn`` compiled for ``signature``, traced on the first call (not before: a model builds
    more functions than a run uses) and then called through its concrete function.

    :param fn: Takes the arguments of ``signature``, positionally.
    :param signature: The input signature (structures of ``tf.TensorSpec``).
    """

    def __init__(self, fn: Callable[..., Any], signature: list[Any]):
        self._function = tf.function(fn, input_signature=signature, autograph=False)
        self._concrete: Any = None

    def __call__(self, *args: Any) -> Any:
        if self._concrete is None:
            self._concrete = self._function.get_concrete_function()
        return self._concrete(*args)

    def experimental_get_tracing_count(self) -> int:
        """Traces so far (0 or 1), under ``tf.function``'s name for it."""
        return int(self._function.experimental_get_tracing_count())


def compiler(kernel: Any) -> Callable[..., Compiled]:
    """``compile_(fn, *signature)``: ``fn`` with the kernel bound, compiled once for
    ``signature``."""

    def compile_(fn: Callable[..., Any], *signature: Any) -> Compiled:
        # positional only: a concrete function is not called with a partial's keywords
        return Compiled(lambda *args: fn(kernel, *args), list(signature))

    return compile_


def specs(dtype: tf.DType) -> tuple[tf.TensorSpec, tf.TensorSpec, tf.TensorSpec]:
    """Matrix, vector and scalar signatures with dynamic dimensions."""
    return (
        tf.TensorSpec([None, None], dtype),
        tf.TensorSpec([None], dtype),
        tf.TensorSpec([], dtype),
    )


def sets_spec(dtype: tf.DType) -> tf.TensorSpec:
    """The signature of a batch of sets of rows [S, B, D], every dimension dynamic."""
    return tf.TensorSpec([None, None, None], dtype)


class CompiledFunctions:
    """Base of the per-model collections of compiled functions."""

    def tracing_counts(self) -> dict[str, int]:
        """Traces of each compiled function so far (tests assert these stay at one)."""
        return {
            name: fn.experimental_get_tracing_count()
            for name, fn in vars(self).items()
            if hasattr(fn, "experimental_get_tracing_count")
        }
