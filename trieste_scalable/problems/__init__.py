"""Built-in benchmark problems on finite candidate sets."""

from .synthetic import PROBLEMS, DiscreteProblem, get_problem, grid_problem, rkhs_problem

__all__ = ["PROBLEMS", "DiscreteProblem", "get_problem", "grid_problem", "rkhs_problem"]
