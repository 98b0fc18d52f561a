"""trieste-scalable: scalable GP-based Bayesian optimisation rules and models for Trieste."""

__version__ = "0.1.0"
