"""Model state that compiled consumers read live.

Trieste builds an acquisition function once, compiles it and afterwards only *updates* it: the
compiled ``__call__`` keeps calling ``model.predict``, whose graph was traced against the model's
state at that time. Tensors held in Python attributes are captured as constants by that trace, so
after ``update`` the function would go on predicting with the old posterior (or mix old factors
with new shapes and return NaN). Trieste's own ``GaussianProcessRegression`` avoids this by
keeping its data in ``tf.Variable``\\ s with dynamic shapes (``_ensure_variable_model_data``);
:class:`LiveTuple` does the same for a whole posterior: a ``NamedTuple`` of tensors kept in
variables whose every dimension is dynamic, so dictionaries, inducing sets and data that grow or
shrink are assigned in place and every compiled reader sees them at its next call.
"""

from __future__ import annotations

from typing import Any, Generic, Optional, TypeVar

import gpflow
import numpy as np
import tensorflow as tf

T = TypeVar("T")
"""A ``NamedTuple`` type whose fields are tensors."""


def dynamic_variable(value: Any) -> tf.Variable:
    """A non-trainable variable holding ``value`` with every dimension dynamic (so it can be
    assigned values of any shape of the same rank)."""
    tensor = tf.convert_to_tensor(value)
    shape = tf.TensorShape([None] * tensor.shape.rank)
    return tf.Variable(tensor, shape=shape, trainable=False, dtype=tensor.dtype)


class LiveTuple(Generic[T]):
    """A ``NamedTuple`` of tensors kept in dynamically shaped variables.

    :meth:`read` returns the tuple with each field read from its variable: in eager mode the
    current values, inside a ``tf.function`` a read of the variable, so the traced graph sees
    later :meth:`assign`\\ s. Copies and pickles carry the values and rebuild the variables with
    dynamic shapes (a pickled ``tf.Variable`` would come back with a fixed shape).

    :param kind: The ``NamedTuple`` type held.
    """

    def __init__(self, kind: type[T]):
        self._kind = kind
        self._variables: Optional[list[tf.Variable]] = None

    @property
    def is_set(self) -> bool:
        return self._variables is not None

    def assign(self, value: T) -> None:
        """Hold ``value`` (eager only: variables are created on the first assignment)."""
        fields = list(value)  # type: ignore[call-overload]
        if self._variables is None:
            self._variables = [dynamic_variable(field) for field in fields]
            return
        for variable, field in zip(self._variables, fields):
            variable.assign(field)

    def read(self) -> T:
        """The held tuple, read live (see the class docstring)."""
        if self._variables is None:
            raise ValueError("nothing has been assigned yet")
        return self._kind(*(tf.convert_to_tensor(v) for v in self._variables))

    def variables(self) -> list[tf.Variable]:
        """The variables themselves (for consumers that keep a reference, e.g. Trieste's
        feature functions keep the inducing points)."""
        if self._variables is None:
            raise ValueError("nothing has been assigned yet")
        return self._variables

    def __getstate__(self) -> dict[str, Any]:
        values = None if self._variables is None else [v.numpy() for v in self._variables]
        return {"kind": self._kind, "values": values}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._kind = state["kind"]
        values: Optional[list[np.ndarray]] = state["values"]
        self._variables = None if values is None else [dynamic_variable(v) for v in values]

    def __deepcopy__(self, memo: dict[int, Any]) -> LiveTuple[T]:
        copied = LiveTuple.__new__(LiveTuple)
        copied.__setstate__(self.__getstate__())
        memo[id(self)] = copied
        return copied


class LiveConstantMean(gpflow.mean_functions.MeanFunction):  # type: ignore[misc]
    """The constant prior mean ``centre + offset`` as a GPflow mean function reading both live
    (a model's centre variable and its prior-mean parameter), so a trajectory or acquisition
    function built before an update uses the updated mean."""

    def __init__(self, centre: tf.Variable, offset: gpflow.Parameter):
        super().__init__()
        self._centre = centre
        self._offset = offset

    def __call__(self, X: tf.Tensor) -> tf.Tensor:
        value = tf.convert_to_tensor(self._centre) + tf.convert_to_tensor(self._offset)
        return tf.ones(tf.concat([tf.shape(X)[:-1], [1]], axis=0), dtype=value.dtype) * value
