"""What a campaign searches: the interface campaigns use (:mod:`.campaign_problem`), synthetic
problems on finite candidate sets (:mod:`.synthetic`), screening an enumerated library
(:mod:`.screening`, with your scores: :mod:`.score_table`; MolPAL's measures: :mod:`.top_k`).

The names below but ``PROBLEMS`` load :mod:`.synthetic` (TensorFlow, Trieste) on first use, so
that the command line parses its arguments, and Ray workers import the oracles, without
TensorFlow.
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
