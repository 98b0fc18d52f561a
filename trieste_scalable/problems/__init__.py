"""Built-in benchmark problems on finite candidate sets.

The names below but ``PROBLEMS`` load :mod:`.synthetic` (TensorFlow, Trieste) on first use,
so that ``trieste_scalable.problems.molecules`` stays light (the oracles of a distributed campaign
import it on every Ray worker) and the command line parses its arguments without TensorFlow.
"""

from typing import TYPE_CHECKING, Any

PROBLEMS = ("rkhs8", "rkhs3", "grid3", "hartmann6", "shekel4")
"""The built-in synthetic problems' names (:func:`~.synthetic.get_problem`)."""

if TYPE_CHECKING:
    from .synthetic import DiscreteProblem, get_problem, grid_problem, rkhs_problem

__all__ = ["PROBLEMS", "DiscreteProblem", "get_problem", "grid_problem", "rkhs_problem"]


def __getattr__(name: str) -> Any:
    if name in __all__:  # PROBLEMS is defined here, so never looked up through this
        from . import synthetic

        return getattr(synthetic, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
