"""``best_molecules.png``: the picture of a screening campaign a chemist reads, an RDKit grid of
the best molecules found with their scores and batches, written to the campaign directory
after every ``screen``, ``tell`` and resume, and the same image to TensorBoard
(``campaign/best_molecules``, at the step of the evaluations told)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

BEST_MOLECULES = "best_molecules.png"
SHOWN = 12
"""Molecules in the grid (three rows of four)."""


@dataclass(frozen=True)
class Found:
    """One evaluated molecule: its SMILES, score (the user's units), batch, whether it was
    an extra molecule (told, not proposed), and its name if it has one (a make-on-demand
    product's reagents, ``A|B|C``)."""

    smiles: str
    score: float
    batch: int
    extra: bool = False
    name: str = ""


def best_molecules(
    found: Sequence[Found], higher_is_better: bool, shown: int = SHOWN
) -> list[Found]:
    """The ``shown`` best of ``found``, best first (ties in the order found)."""
    order = np.argsort([-f.score if higher_is_better else f.score for f in found], kind="stable")
    return [found[int(n)] for n in order[:shown]]


def write_best_molecules(
    logdir: Path, found: Sequence[Found], higher_is_better: bool, step: int
) -> Optional[Path]:
    """Draw the best of ``found`` to ``logdir/best_molecules.png`` and TensorBoard; ``None``
    (nothing written) when nothing was found or RDKit cannot draw (no Pillow)."""
    best = best_molecules(found, higher_is_better)
    if not best:
        return None
    try:
        from rdkit import Chem
        from rdkit.Chem import Draw
    except ImportError:
        return None
    legends = [
        f"{f.name + ': ' if f.name else ''}{f.score:.4g}, batch {f.batch}"
        f"{', extra' if f.extra else ''}"
        for f in best
    ]
    molecules = [Chem.MolFromSmiles(f.smiles) for f in best]
    try:
        image = Draw.MolsToGridImage(
            molecules, molsPerRow=4, subImgSize=(260, 220), legends=legends, returnPNG=False
        )
    except ImportError:  # RDKit draws through Pillow
        return None
    path = Path(logdir) / BEST_MOLECULES
    image.save(path)
    _to_tensorboard(logdir, np.asarray(image.convert("RGB")), step)
    return path


def _to_tensorboard(logdir: Path, pixels: np.ndarray, step: int) -> None:
    import tensorflow as tf

    writer = tf.summary.create_file_writer(str(logdir))
    with writer.as_default():
        tf.summary.image("campaign/best_molecules", pixels[None], step=step)
    writer.close()
