"""Built-in benchmark problems on finite candidate sets.

The names below load :mod:`.synthetic` (TensorFlow, Trieste) on first use, so that
``trieste_scalable.problems.molecules`` stays light: the oracles of a distributed campaign import
it on every Ray worker.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .synthetic import PROBLEMS, DiscreteProblem, get_problem, grid_problem, rkhs_problem

__all__ = ["PROBLEMS", "DiscreteProblem", "get_problem", "grid_problem", "rkhs_problem"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import synthetic

        return getattr(synthetic, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
