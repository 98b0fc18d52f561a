"""trieste-scalable: scalable GP-based Bayesian optimisation rules and models for Trieste."""

from ._moved import install

__version__ = "0.1.0"

install()  # the modules' old import paths, with a DeprecationWarning (_moved.py)
