"""Fingerprints of molecules outside a library (a prospective campaign's extra molecules, which
the chemist made and told with ``--extra``), as the library's rows are: the same kind, radius
and width, dense."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from ..chemistry.molecules import fingerprint_width
from ..numerics.bits import unpack_bits
from .featurise import fingerprint_library


def fingerprint_rows(smiles: Sequence[str], settings: tuple[str, int, int]) -> np.ndarray:
    """The fingerprints [N, D] (float64) of ``smiles`` with ``settings`` (kind, radius, width),
    in this process.

    :raise ValueError: If a SMILES does not parse.
    """
    kind, radius, size = settings
    width = fingerprint_width(kind, size)
    if not smiles:
        return np.zeros((0, width))
    _, packed = fingerprint_library(list(smiles), kind, radius, size, processes=1)
    return unpack_bits(tf.constant(packed), width, tf.float64).numpy()
