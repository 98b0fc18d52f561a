"""Rebuild ``trieste_scalable/data/moses_100k.smi.gz`` from the MOSES training set.

The MOSES benchmark set (Polykovskiy et al. 2020, MIT licence, ~1.9 M drug-like molecules from
ZINC) ships inside the ``molsets`` wheel on PyPI. ``molsets`` pins old, heavy dependencies, so
fetch the wheel without them and read only its data file::

    pip download molsets==0.3.1 --no-deps -d /tmp/molsets
    python scripts/make_moses_subset.py /tmp/molsets/molsets-0.3.1-py3-none-any.whl

The subset is 100,000 SMILES drawn uniformly without replacement from ``train.csv.gz`` with
``numpy.random.default_rng(0)``, in the drawn order: the first 20,000 lines are the default
screening library (``moses-20k``), all of them the benchmark library (``moses-100k``).
"""

from __future__ import annotations

import gzip
import io
import sys
import zipfile
from pathlib import Path

import numpy as np

SIZE = 100_000
TARGET = Path(__file__).resolve().parents[1] / "trieste_scalable" / "data" / "moses_100k.smi.gz"


def main(wheel: str) -> None:
    with zipfile.ZipFile(wheel) as archive:
        raw = archive.read("moses/dataset/data/train.csv.gz")
    lines = gzip.decompress(raw).decode().splitlines()
    assert lines[0] == "SMILES", lines[0]
    smiles = np.array(lines[1:])
    chosen = np.random.default_rng(0).choice(smiles.size, size=SIZE, replace=False)
    text = "\n".join(smiles[chosen]) + "\n"
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as handle:
        handle.write(text.encode())
    TARGET.write_bytes(buffer.getvalue())
    print(f"wrote {SIZE} SMILES to {TARGET} ({TARGET.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main(sys.argv[1])
