"""trieste-scalable: scalable GP-based Bayesian optimisation rules and models for Trieste."""

from .log import install as _install_console_logging

__version__ = "0.1.0"

_install_console_logging()
