"""Compiling the numerics once per kernel and dtype.

Every compiled function has an input signature with dynamic dimensions, so it is traced exactly
once however the dictionary, data and candidate counts change over a run (Trieste #178/#191 are
the retracing bugs this avoids). The kernel is captured, so hyperparameter changes need no
retrace. Compiled functions cannot be deep-copied or pickled: owners rebuild them instead.

AutoGraph is off: the numerics loop with explicit ``tf.while_loop`` and branch on Python values
only, and converting the source of everything a function calls was most of a first call's
cost (BBKB's first acquisition on 20,000 molecules: 0.95 s of AST conversion in 2.2 s).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import tensorflow as tf


def compiler(kernel: Any) -> Callable[..., Any]:
    """``compile_(fn, *signature)``: ``fn`` with the kernel bound, compiled once for
    ``signature``."""

    def compile_(fn: Callable[..., Any], *signature: Any) -> Any:
        return tf.function(partial(fn, kernel), input_signature=list(signature), autograph=False)

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
