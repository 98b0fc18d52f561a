"""The part every rule that wraps another shares (:class:`~.exploration_share.ExplorationShare`,
:class:`~trieste_scalable.spaces.pool_rule.MakeOnDemandPoolRule`): the wrapped rule, its ``State``
type, and its points transformed inside its ``State`` function when it keeps one."""

from __future__ import annotations

from typing import Any, Callable

from trieste.acquisition.rule import AcquisitionRule
from trieste.types import TensorType


class WrapsRule:
    """A rule around ``self._rule`` (set by the subclass)."""

    _rule: AcquisitionRule

    @property
    def rule(self) -> AcquisitionRule:
        """The wrapped rule."""
        return self._rule

    @property
    def state_type(self) -> type:
        """The wrapped rule's ``State`` value type (``AttributeError`` if it keeps none)."""
        return self._rule.state_type  # type: ignore[attr-defined, no-any-return]


def transformed(result: Any, transform: Callable[[TensorType], TensorType]) -> Any:
    """The wrapped rule's ``acquire`` ``result`` with its points [B, D] replaced by
    ``transform`` of them: directly, or inside its ``State`` function (the state passes
    through untouched)."""
    if not callable(result):
        return transform(result)

    def state_func(state: Any) -> tuple[Any, TensorType]:
        new_state, points = result(state)
        return new_state, transform(points)

    return state_func
