"""Objectives for the Ray tests, in a module that imports nothing heavy (workers import it)."""

import os
import time

import numpy as np


def bowl(point: np.ndarray) -> float:
    return float(np.sum((point - 0.3) ** 2))


def flaky(point: np.ndarray) -> float:
    """Kills its worker on the bottom-left corner, raises on the rest of the left quarter of
    the square, hangs on the rest of the bottom quarter; a bowl elsewhere."""
    if point[0] < 0.25 and point[1] < 0.25:
        os._exit(1)
    if point[0] < 0.25:
        raise RuntimeError("docking failed")
    if point[1] < 0.25:
        time.sleep(60)
    return bowl(point)


def length_or_fail(smiles: str) -> float:
    """A cheap molecular objective for the command line's ``python:`` oracles: the SMILES's
    length over 100, raising (a failed evaluation, like a docking with no pose) for chlorine."""
    if "Cl" in smiles:
        raise RuntimeError("no pose found")
    time.sleep(0.05)
    return len(smiles) / 100


def always_fails(smiles: str) -> float:
    raise RuntimeError(f"the assay rejected {smiles}")


def slow_for_chlorine(smiles: str) -> float:
    """The SMILES's length over 100, after a minute for chlorine (to run past a --timeout)."""
    time.sleep(60.0 if "Cl" in smiles else 0.05)
    return len(smiles) / 100
