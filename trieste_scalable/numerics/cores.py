"""The CPU cores a process may use, without importing TensorFlow (``featurise`` imports it, and
``trieste_scalable.numerics`` itself imports nothing)."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The CPU cores this process may use (its affinity where the platform has one)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, cores or 1)
